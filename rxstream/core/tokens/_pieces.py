"""Where a tiktoken pattern cuts text: its regex split, and the places no piece spans.

Input: text, and a tiktoken pattern (`Encoding._pat_str`). Output: the text's
pieces (`_splitters(pattern)`: the `regex` module's split, and the same split
done faster by the stdlib `re` for ASCII text), and the last place in a text
where it may be cut and each side counted alone (`_last_boundary`, and
`_has_boundary`, under `_boundaries(pattern)`).

Invariants:

- The ASCII split equals the `regex` split on every ASCII text (a pattern it
  cannot follow keeps the `regex` split).
- At a boundary, the text before it splits the same alone whatever follows,
  and no piece spans it (a space after a non-space, for every pattern; more
  places between ASCII classes for tiktoken's published patterns). Checked
  exhaustively on short texts by tests/core/tokens/test_pieces.py.
- Pure: no state, no I/O; the `regex` module is imported on first use.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

from ..._encodings import CL100K_PAT, O200K_PAT, R50K_PAT

# The ASCII characters: the stdlib split keeps each class's members among them (and the
# counter looks up the Unicode category only of the others).
_ASCII = frozenset(map(chr, range(128)))


# The one place no tiktoken pattern (r50k, cl100k, o200k) lets a piece span: a
# space after a non-space (" world" starts a piece), and the text before it splits
# the same alone (tests/core/tokens/test_counter.py checks both exhaustively on short
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
# splits the same alone, whatever comes before or after (tests/core/tokens/test_pieces.py
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
_SMALL_THEN_CAPITAL = re.compile(r"[A-Z][a-z]")  # o200k's: a small letter, then a capital
_BOUNDARIES: dict[str, _Boundaries] = {
    R50K_PAT: _Boundaries(*_CLASS_CUTS),  # also p50k's
    CL100K_PAT: _Boundaries(*_CLASS_CUTS),
    O200K_PAT: _Boundaries(*_CLASS_CUTS, _SMALL_THEN_CAPITAL),
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
