"""Exact, incremental token counts of a streaming completion.

Input: `ChatChunk` items or deltas (chunks go through `DeltaDecoder`). Output: a
running `TokenCount` for a choice after each delta that adds text to it (text,
reasoning, refusal or tool-call arguments), and from `close()` one count with
`final=True` per choice seen, in choice order.

Invariants:

- Exact: every count equals `len(encode(text so far))` for each kind of text,
  and the final one `len(encode(whole text))`. Tool calls are separate texts:
  `tool_arguments` is the sum over a choice's calls.
- Linear: tiktoken cuts text into pieces with a regular expression before its
  byte-pair encoding, and no token crosses a piece boundary. Appending text can
  change only the last pieces (two at most for tiktoken's published patterns:
  `"a'" + "s"` merges `"a"` and `"'"` into `"a's"` under o200k), so each text
  keeps the count of its settled pieces plus a tail of the last two, and only
  the tail is split and counted again.
- A running count can shrink when a fragment merges with the text before it:
  under cl100k `" internationa"` is three tokens, `" international"` one.
- Text is counted as ordinary text: `<|endoftext|>` in the output is not a
  special token (tiktoken's `encode_ordinary`).

These are local counts of the completion. The provider's own `Usage` (which
alone knows the prompt and any hidden tokens) rides along on `TokenCount.usage`
once it arrives.
"""

from __future__ import annotations

import importlib
import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Protocol, TypeAlias

from ..models import (
    DELTA_CLASSES,
    ChatChunk,
    Delta,
    Finish,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    TokenCount,
    ToolCallDelta,
    Usage,
)
from .deltas import DeltaDecoder
from .tools import CallSlot, ToolCallMatcher

__all__ = ["DEFAULT_ENCODING", "EncodingSpec", "TokenCounter", "resolve_encoding"]

#: The encoding used when none is given (GPT-4o and later models).
DEFAULT_ENCODING = "o200k_base"

_INSTALL_HINT = 'pip install "rxstream[tokens]"'

# How many trailing regex pieces stay open. Checked exhaustively on short texts
# for the r50k, cl100k and o200k patterns (tests/core/test_tokens.py): appending
# never changes a piece before the last two. (`add` has a fast path for two.)
_OPEN_PIECES = 2

# Pieces up to this length have their count remembered; longer ones rarely repeat.
_CACHE_PIECE_CHARS = 32
_CACHE_ENTRIES = 65_536


class TiktokenEncoding(Protocol):
    """The part of `tiktoken.Encoding` the counter uses."""

    name: str
    _pat_str: str

    def encode_ordinary(self, text: str) -> list[int]: ...  # pragma: no cover


#: What `TokenCounter` and `count_tokens` accept as an encoding.
EncodingSpec: TypeAlias = "TiktokenEncoding | str | Callable[[str], Sequence[int]] | None"


def resolve_encoding(
    encoding: EncodingSpec = None,
) -> TiktokenEncoding | Callable[[str], Sequence[int]]:
    """Turn an encoding spec into a tiktoken `Encoding` or a plain callable.

    Args:
        encoding: a tiktoken `Encoding`; an encoding name (`"o200k_base"`) or a
            model name (`"gpt-4o"`); any callable `str -> list[int]`; or None
            for `DEFAULT_ENCODING`. A name is looked up with tiktoken, which may
            load (and on first use download) its data file.

    Returns:
        The `Encoding` or the callable, ready to count with.

    Raises:
        ImportError: a name was given and tiktoken is not installed.
        ValueError: tiktoken knows no encoding or model by that name.
        TypeError: `encoding` is none of the above.

    >>> resolve_encoding(str.split)("two words")
    ['two', 'words']
    """
    if encoding is None:
        encoding = DEFAULT_ENCODING
    if isinstance(encoding, str):
        return _encoding_by_name(encoding)
    if _is_tiktoken(encoding):
        return encoding
    if callable(encoding):
        return encoding
    raise TypeError(
        "encoding must be a tiktoken Encoding, an encoding or model name, a callable "
        f"str -> list[int], or None; got {type(encoding).__name__}"
    )


def _encoding_by_name(name: str) -> TiktokenEncoding:
    try:
        import tiktoken
    except ImportError as exc:
        raise ImportError(
            f"counting tokens with the encoding {name!r} needs tiktoken: {_INSTALL_HINT} "
            "(or pass any callable str -> list[int] as the encoding)"
        ) from exc
    if name in tiktoken.list_encoding_names():
        return tiktoken.get_encoding(name)
    try:
        return tiktoken.encoding_for_model(name)
    except KeyError:
        raise ValueError(
            f"unknown encoding or model name {name!r}; tiktoken knows the encodings "
            f"{sorted(tiktoken.list_encoding_names())!r}"
        ) from None


def _is_tiktoken(encoding: object) -> bool:
    return hasattr(encoding, "encode_ordinary") and isinstance(
        getattr(encoding, "_pat_str", None), str
    )


class _PieceCounts(dict[str, int]):
    """Token count of each regex piece, computed on first sight."""

    __slots__ = ("_encode_piece",)

    def __init__(self, encode_piece: Callable[[str], list[int]]) -> None:
        super().__init__()
        self._encode_piece = encode_piece

    def __missing__(self, piece: str) -> int:
        count = len(self._encode_piece(piece))
        if len(piece) <= _CACHE_PIECE_CHARS and len(self) < _CACHE_ENTRIES:
            self[piece] = count
        return count


class _TextCount(Protocol):
    def add(self, fragment: str) -> int: ...  # pragma: no cover

    def finish(self) -> int: ...  # pragma: no cover


class _PieceTextCount:
    """One growing text under a tiktoken encoding: settled count + open pieces."""

    __slots__ = ("_carry", "_count", "_encode", "_fallback", "_findall", "_settled", "_tail")

    def __init__(
        self,
        findall: Callable[[str], list[str]],
        counts: _PieceCounts,
        encode: Callable[[str], Sequence[int]],
    ) -> None:
        self._findall = findall
        self._count = counts.__getitem__
        self._encode = encode
        self._settled = 0
        self._tail = ""
        # A high surrogate ending a fragment waits for its low half, as tiktoken
        # joins surrogate pairs before encoding.
        self._carry = ""
        self._fallback: _BoundaryTextCount | None = None

    def add(self, fragment: str) -> int:
        if self._carry or not fragment.isascii():
            if self._fallback is not None:
                return self._fallback.add(self._take_carry() + fragment)
            if self._carry or not _is_utf8(fragment):
                fragment = self._repair(fragment)
            if "Cn" in map(unicodedata.category, fragment):
                # A character newer than this Python's Unicode tables: the `regex`
                # module and tiktoken's own engine may class it differently, so
                # from here on count with tiktoken itself.
                self._fallback = _BoundaryTextCount(self._encode, settled=self._settled)
                return self._fallback.add(self._tail + fragment)
        elif self._fallback is not None:
            return self._fallback.add(fragment)
        pieces = self._findall(self._tail + fragment)
        count = self._count
        if len(pieces) == 3:  # usual with two pieces open (_OPEN_PIECES): one settles
            first, last_but_one, last = pieces
            self._settled += count(first)
            self._tail = last_but_one + last
            return self._settled + count(last_but_one) + count(last)
        if len(pieces) > _OPEN_PIECES:
            self._settled += sum(map(count, pieces[:-_OPEN_PIECES]))
            del pieces[:-_OPEN_PIECES]
            self._tail = "".join(pieces)
        else:
            self._tail += fragment
        return self._settled + sum(map(count, pieces))

    def finish(self) -> int:
        if self._fallback is not None:
            return (
                self._fallback.add(self._take_carry()) if self._carry else self._fallback.finish()
            )
        if self._carry:
            self._carry = ""
            return self.add("\ufffd")  # a lone half, as tiktoken counts it
        return self._settled + sum(map(self._count, self._findall(self._tail)))

    def _take_carry(self) -> str:
        carry, self._carry = self._carry, ""
        return carry

    def _repair(self, fragment: str) -> str:
        fragment = self._take_carry() + fragment
        if fragment and "\ud800" <= fragment[-1] <= "\udbff":
            self._carry, fragment = fragment[-1], fragment[:-1]
        # tiktoken's own fix-up: pairs become one character, lone halves U+FFFD.
        return fragment.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# The one place no tiktoken pattern (r50k, cl100k, o200k) lets a piece span: a
# space after a non-space (" world" starts a piece). Tokenizers that pre-split
# at whitespace the same way count the two sides independently. (Not a line
# start: r50k splits "\n\nHi" as "\n", "\n", "Hi".)
_BOUNDARY = re.compile(r"(?<=\S) ")


class _BoundaryTextCount:
    """One growing text under a plain callable: re-encode from the last safe boundary."""

    __slots__ = ("_encode", "_settled", "_tail", "_tail_count")

    def __init__(self, encode: Callable[[str], Sequence[int]], *, settled: int = 0) -> None:
        self._encode = encode
        self._settled = settled
        self._tail = ""
        self._tail_count = 0

    def add(self, fragment: str) -> int:
        start = len(self._tail)
        text = self._tail + fragment
        cut = -1
        for match in _BOUNDARY.finditer(text, max(start, 1)):
            cut = match.start()
        if cut == start:
            self._settled += self._tail_count
            text = fragment
        elif cut > 0:
            self._settled += len(self._encode(text[:cut]))
            text = text[cut:]
        self._tail = text
        self._tail_count = len(self._encode(text))
        return self._settled + self._tail_count

    def finish(self) -> int:
        return self._settled + self._tail_count


def _text_count_factory(
    encoding: TiktokenEncoding | Callable[[str], Sequence[int]],
) -> Callable[[], _TextCount]:
    if _is_tiktoken(encoding):
        enc: TiktokenEncoding = encoding  # type: ignore[assignment]  # checked above
        # One piece's byte-pair encoding, without the regex split: what tiktoken
        # runs on each piece of a whole text.
        encode_piece = getattr(enc, "_encode_single_piece", None) or getattr(
            enc, "encode_single_piece", None
        )
        try:
            # tiktoken depends on `regex` (the stdlib `re` lacks \p{L} and `++`).
            regex = importlib.import_module("regex")
        except ImportError:  # pragma: no cover
            regex = None
        if regex is None or not callable(encode_piece):  # pragma: no cover
            return lambda: _BoundaryTextCount(enc.encode_ordinary)
        findall = regex.compile(enc._pat_str).findall
        counts = _PieceCounts(encode_piece)
        return lambda: _PieceTextCount(findall, counts, enc.encode_ordinary)
    encode: Callable[[str], Sequence[int]] = encoding  # type: ignore[assignment]
    return lambda: _BoundaryTextCount(encode)


class _Call:
    __slots__ = ("count", "text")

    def __init__(self, text: _TextCount) -> None:
        self.text = text
        self.count = 0


class _Choice:
    """Counts of one choice, one growing text per kind and per tool call."""

    __slots__ = (
        "calls",
        "matcher",
        "new_text",
        "reasoning",
        "reasoning_n",
        "refusal",
        "refusal_n",
        "text",
        "text_n",
        "tools_n",
    )

    def __init__(self, new_text: Callable[[], _TextCount]) -> None:
        self.new_text = new_text
        self.text = new_text()
        self.reasoning = new_text()
        self.refusal = new_text()
        self.text_n = self.reasoning_n = self.refusal_n = self.tools_n = 0
        # Fragments find their call as in ToolCallAccumulator, through the same matcher.
        self.matcher = ToolCallMatcher()
        self.calls: dict[CallSlot, _Call] = {}

    def call(self, delta: ToolCallDelta) -> _Call:
        slot, _ = self.matcher.match(delta)
        call = self.calls.get(slot)
        if call is None:
            call = self.calls[slot] = _Call(self.new_text())
        return call

    def finish(self) -> None:
        self.text_n = self.text.finish()
        self.reasoning_n = self.reasoning.finish()
        self.refusal_n = self.refusal.finish()
        for call in self.calls.values():
            call.count = call.text.finish()
        self.tools_n = sum(call.count for call in self.calls.values())


class TokenCounter:
    """Count the tokens of a streaming completion, exactly and incrementally.

    Args:
        encoding: a tiktoken `Encoding`, an encoding name (`"o200k_base"`,
            `"cl100k_base"`) or a model name (`"gpt-4o"`), or any callable
            `str -> list[int]`; None means `"o200k_base"`. Names need tiktoken
            (`pip install "rxstream[tokens]"`) and are resolved here, which may
            make tiktoken load or download its data file. A plain callable is
            re-run on the text from the last space that follows a non-space,
            which is exact for tokenizers that never let a token span such a
            place (tiktoken's and GPT-2-style ones; text without spaces then
            costs more, as it is re-run whole).

    Returns (from `feed`): a running `TokenCount` for the delta's choice after
    each delta that adds text (deltas adding none give nothing); from `close()`,
    one `TokenCount(final=True)` per choice seen, in choice order (choice 0
    alone when the stream had no content). After a `Usage` delta, every count
    carries it in `.usage`.

    Raises:
        ImportError: a name was given and tiktoken is not installed.
        ValueError: an unknown encoding or model name.
        TypeError: `encoding`, or a fed item, is of the wrong type.
        RuntimeError: fed after `close()` or after raising.

    A running count may shrink when a fragment merges with the text before it
    (`" internationa"` is three cl100k tokens, `" international"` one). Local
    counts cover only the completion's text; the provider's `Usage` (which
    knows the prompt) arrives at the end, if the request asked for it.

    >>> counter = TokenCounter(str.split)          # one "token" per word
    >>> counter.feed(TextDelta("Hello wor"))[0].text
    2
    >>> counter.feed(TextDelta("ld again"))[0].text
    3
    >>> counter.close()[0].final
    True
    """

    def __init__(self, encoding: EncodingSpec = None) -> None:
        self._new_text = _text_count_factory(resolve_encoding(encoding))
        self._choices: dict[int, _Choice] = {}
        self._usage: Usage | None = None
        self._decoder: DeltaDecoder | None = None
        self._state = "open"

    def feed(self, item: ChatChunk | Delta) -> list[TokenCount]:
        """Count one chunk or delta; return the running counts it changed.

        >>> [count] = TokenCounter(str.split).feed(TextDelta("a b", choice=1))
        >>> count.text, count.choice, count.final
        (2, 1, False)
        """
        if self._state != "open":
            raise RuntimeError(f"TokenCounter cannot be fed after it {self._state}")
        try:
            if isinstance(item, ChatChunk):
                return [c for d in self._decoded().feed(item) for c in self._count(d)]
            return self._count(item)
        except BaseException:
            self._state = "raised"
            raise

    def close(self) -> list[TokenCount]:
        """End the stream: one final count per choice seen, in choice order.

        >>> [count] = TokenCounter(str.split).close()
        >>> count.total, count.choice, count.final
        (0, 0, True)
        """
        if self._state != "open":
            raise RuntimeError(f"TokenCounter cannot be closed after it {self._state}")
        self._state = "closed"
        if self._decoder is not None:
            for delta in self._decoder.close():
                self._count(delta)
        if not self._choices:
            self._choice(0)
        out = []
        for n in sorted(self._choices):
            choice = self._choices[n]
            choice.finish()
            out.append(self._snapshot(n, choice, final=True))
        return out

    def _decoded(self) -> DeltaDecoder:
        if self._decoder is None:
            self._decoder = DeltaDecoder()
        return self._decoder

    def _choice(self, n: int) -> _Choice:
        choice = self._choices.get(n)
        if choice is None:
            choice = self._choices[n] = _Choice(self._new_text)
        return choice

    def _count(self, delta: Delta) -> list[TokenCount]:
        # Dispatch on the exact class: this runs once per fragment.
        kind = type(delta)
        if kind is TextDelta or kind is ReasoningDelta or kind is RefusalDelta:
            fragment: str = delta.text  # type: ignore[union-attr,assignment]
            if not fragment:
                return []
            n = delta.choice
            choice = self._choices.get(n) or self._choice(n)
            if kind is TextDelta:
                choice.text_n = choice.text.add(fragment)
            elif kind is ReasoningDelta:
                choice.reasoning_n = choice.reasoning.add(fragment)
            else:
                choice.refusal_n = choice.refusal.add(fragment)
        elif kind is ToolCallDelta:
            n = delta.choice
            choice = self._choices.get(n) or self._choice(n)
            call = choice.call(delta)  # type: ignore[arg-type]
            if not delta.arguments:  # type: ignore[union-attr]
                return []
            count = call.text.add(delta.arguments)  # type: ignore[union-attr]
            choice.tools_n += count - call.count
            call.count = count
        elif kind is Finish:
            self._choice(delta.choice)
            return []
        elif kind is Usage:
            self._usage = delta  # type: ignore[assignment]
            return []
        elif isinstance(delta, DELTA_CLASSES):
            return []  # citations, server tools, reasoning state, metadata: no local text
        else:
            raise TypeError(
                f"TokenCounter takes ChatChunk or delta items, got {type(delta).__name__}"
            )
        return [
            TokenCount(
                choice.text_n,
                choice.reasoning_n,
                choice.refusal_n,
                choice.tools_n,
                self._usage,
                False,
                n,
            )
        ]

    def _snapshot(self, n: int, choice: _Choice, *, final: bool) -> TokenCount:
        return TokenCount(
            choice.text_n,
            choice.reasoning_n,
            choice.refusal_n,
            choice.tools_n,
            self._usage,
            final,
            n,
        )
