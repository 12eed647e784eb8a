"""How short texts split under one encoding, remembered: the counter's lookups.

Input: a text (an open tail plus a fragment). Output: its `_Split`: the
tokens of its settled pieces, its open pieces (the text's end that text
appended later may still change), and their tokens. `_PieceCounts` holds
the byte-pair count of each piece.

Invariants:

- A split is a function of the text alone: what is remembered is what would
  be computed, so the memory never changes a count, only its cost.
- Bounded: pieces and texts up to 32 characters are remembered, up to a fixed
  number of entries; a full memory of splits starts again empty.
- At most the last two pieces stay open (`_OPEN_PIECES`), one when the last
  starts with a space after a non-space (it splits the same alone).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeAlias

# How many trailing regex pieces stay open. Checked exhaustively on short texts
# for the r50k, cl100k and o200k patterns (tests/core/tokens/test_counter.py): appending
# never changes a piece before the last two. (`add` has a fast path for two.)
_OPEN_PIECES = 2

# Pieces up to this length have their count remembered; longer ones rarely repeat.
_CACHE_PIECE_CHARS = 32
_CACHE_ENTRIES = 65_536

# Texts (a tail and a fragment) up to this length have their split remembered, this
# many at most (a few megabytes per encoding).
_CACHE_SPLIT_CHARS = 32
_CACHE_SPLITS = 32_768


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
