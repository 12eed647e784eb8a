"""The running token count of one growing text (an answer, a tool call's arguments).

Input: the text's fragments, in order (`add`), then its end (`finish`).
Output: after each fragment, the count of the text so far; from `finish`,
the count of the whole text, equal to `len(encode_ordinary(text))`.

Invariants:

- Exact while the unsettled tail is short (`TAIL_LIMIT` characters): only the
  tail's open pieces are split again, mostly by a lookup (`_splits`); text
  before a boundary (`_pieces`) settles and is never read again.
- Linear: a tail that runs on past `TAIL_LIMIT` without a boundary is
  re-split only when it has doubled or a boundary ends the run; meanwhile the
  running count estimates it (`long` is True). Each piece is byte-pair
  encoded once, when it settles or at the end.
- Surrogates are repaired as tiktoken repairs them; a character this
  Python's Unicode tables do not know hands the text over to
  `_BoundaryTextCount`, which counts with tiktoken itself.
- `_PieceTextCount` counts under a tiktoken encoding (its pattern's pieces);
  `_BoundaryTextCount` under any callable `str -> tokens`, re-encoding from
  the last space that follows a non-space.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from typing import Protocol

from ._pieces import _ASCII, _SPACES, _Boundaries, _has_boundary, _last_boundary
from ._splits import _OPEN_PIECES, _PieceCounts, _Splits

#: Longest unsettled tail (in characters) that is re-read on every fragment;
#: past it the running count is estimated (`TokenCount.estimated`) until a
#: break settles the text.
TAIL_LIMIT = 128

# Past this many pieces to settle at once, one encode of their text beats a
# lookup (or an encode) per piece.
_BULK_PIECES = 64

# Fragments up to this length take the hot path of `_PieceTextCount.add` (streams send
# a few characters at a time; `TokenCounter.feed_all` tries it on any fragment).
_HOT_CHARS = 32


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
