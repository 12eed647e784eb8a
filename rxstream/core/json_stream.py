"""An incremental JSON reader: text fragments of one document in, what became visible out.

Input: `str` fragments of one JSON document (RFC 8259), cut anywhere.
Output (from `feed` and `close`): `JSONEvent` items, in document order:

- `JSONOpened(path, kind)`: an object, an array or a string value opened and is
  still open at the end of the fragment (`kind` is `"object"`, `"array"` or
  `"string"`);
- `JSONGrew(path, text)`: an open string value grew by `text` (decoded; never
  half an escape, never the first half of a surrogate pair);
- `JSONCompleted(path, value, was_open)`: a value closed at `path` (an array
  element when the last step of `path` is an `int`); `was_open` says whether
  it was reported open before.

A `path` is a tuple of object keys (`str`) and array indexes (`int`); `()` is
the top value. A value that arrives whole within one fragment may be reported
by one `JSONCompleted` alone, its insides in its value (that is how a fragment
holding many small values stays cheap); a consumer treats a completed container
it never saw open as that whole value arriving at once.

Invariants:

- Exact against `json.loads` for every complete document: the same value
  (duplicate keys: the last wins, in the first one's place; big integers; floats
  as `float()` reads them), and refused iff `json.loads` refuses it, except that
  `NaN`, `Infinity` and `-Infinity` are refused too (strict JSON, which
  `json.loads` accepts by default), and nesting deeper than `max_depth`.
- Strict at the first character that cannot continue a JSON document: trailing
  commas, leading zeros, control characters and bad escapes in strings (at the
  escape, not at the closing quote), a lone `-`, text after the top value.
  The error is `JSONStreamError`, with the offset and the JSON Pointer.
- Never shows a number, `true`/`false`/`null` or an escape before it is
  complete: a number ends at the character after it (`,`, `]`, `}`,
  whitespace), or at `close()` for a top-level number.
- Linear in the input whatever the fragment sizes: what is kept between
  fragments is the parse stack and at most a few characters (a cut literal or
  escape); a number or string cut by a fragment goes on from where it stopped.
  Runs of plain string characters and digits are matched by regular
  expressions, and a container or string that may be whole in the fragment (its
  closing character is there) is read by the standard library's C scanner
  (what `json.loads` reads with); a failed attempt (a value cut by the
  fragment's end) is charged against a budget of twice the fragment, so the
  scanner never reads a character more than a bounded number of times.
  A skimmed array's elements (`skim=`) are delimited by compiled patterns that
  step from bracket to brace to quote, and each is decoded once; after one is
  refused, skimming stops for good, so its text is read again only once. The
  fragments of a skimmed element are held (not scanned) until as many closing
  characters as it has open levels have arrived, one of them of its own kind
  (`holds()`), then scanned together.
  Without events (`events=False`), a run of whole members or elements of the
  open container is decoded by one call of the standard decoder: one pattern
  (or one scan per container element) delimits it, the decoder checks it, and
  what it refuses is read the usual way; the changed snapshots, values and
  errors are those of the usual reading.

The partial value (`snapshot()`) holds the completed scalars and the open
containers, and the open string with its text so far; `null` and a missing key
stay different (a key appears once its value has begun: a container or string
at once, a scalar when complete). The containers are built in place;
`snapshot()` copies only the open ones (shallowly: closed values are shared,
they never change again), so one snapshot costs `snapshot_size()`: the
entries of the open containers plus the length of the open string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.scanner import make_scanner
from typing import Any, Literal, NoReturn, TypeAlias

from .._fast import constructor
from ..errors import JSONStreamError
from ..models import JSON
from ._machine import FAILED, OPEN, MachineBase

__all__ = [
    "MAX_DEPTH",
    "JSONCompleted",
    "JSONEvent",
    "JSONGrew",
    "JSONOpened",
    "JSONStreamParser",
    "Path",
    "pointer",
]

#: A place in a document: object keys and array indexes from the top.
Path: TypeAlias = tuple[str | int, ...]

#: The deepest nesting the reader follows (json.loads stops near 1,000 too).
MAX_DEPTH = 1000


@dataclass(frozen=True, slots=True)
class JSONOpened:
    """An object, array or string value opened at `path`, still open at the fragment's end."""

    path: Path
    kind: Literal["object", "array", "string"]


@dataclass(frozen=True, slots=True)
class JSONGrew:
    """The open string value at `path` grew by `text` (decoded)."""

    path: Path
    text: str


@dataclass(frozen=True, slots=True)
class JSONCompleted:
    """A value closed at `path`; `value` is it whole.

    `was_open` is True when a `JSONOpened` reported it earlier (it was read
    piece by piece), False when it arrived whole (a scalar always does).
    """

    path: Path
    value: JSON
    was_open: bool = False


JSONEvent: TypeAlias = JSONOpened | JSONGrew | JSONCompleted

# The events of the hot loop, built with plain attribute stores (the same objects).
_opened: Callable[[Path, str], JSONOpened] = constructor(JSONOpened)
_grew: Callable[[Path, str], JSONGrew] = constructor(JSONGrew)
_completed: Callable[[Path, JSON, bool], JSONCompleted] = constructor(JSONCompleted)


def pointer(path: Path) -> str:
    """The JSON Pointer (RFC 6901) of `path`.

    >>> pointer(("a/b", 0, "~"))
    '/a~1b/0/~0'
    """
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# The standard library's scanner (C when available), exactly what json.loads reads
# a value with; NaN and Infinity refused.
_DECODER: Any = json.JSONDecoder(parse_constant=_refuse_constant)
_scan_once: Callable[[str, int], tuple[Any, int]] = make_scanner(_DECODER)


def _fits(text: str, start: int, end: int, room: int) -> bool:
    """Whether what the scanner read in `text[start:end]` nests at most `room` deep.

    The standard scanner knows no depth limit, so each value it reads whole is
    checked here: by counting its opening brackets and braces (in C), an upper
    bound of its depth (those inside strings count too). False sends the text to
    the usual reading, which finds the exact depth and refuses at the exact offset.
    """
    return end - start <= room or text.count("[", start, end) + text.count("{", start, end) <= room


_WS = re.compile(r"[ \t\n\r]*")
_STRING_RUN = re.compile(r'[^"\\\x00-\x1f]*')
_DIGITS = re.compile(r"[0-9]*")
_HEX = re.compile(r"[0-9a-fA-F]*")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_LITERALS: dict[str, tuple[str, JSON]] = {
    "t": ("true", True),
    "f": ("false", False),
    "n": ("null", None),
}

# Skimming an array's elements (see `JSONStreamParser(skim=)`): inside an element, a run of
# what is neither a bracket, a brace nor a quote, with whole strings in it; in a string, up to
# its closing quote (or to a backslash that is the text's last character).
_SKIM_RUN = re.compile(r'[^"\[\]{}]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^"\[\]{}]*)*', re.DOTALL)
_SKIM_STRING = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)

# Runs of whole members (of an object) or elements (of an array), each followed by `,` or
# the container's closing character, read at once by the reader without events (see
# `JSONStreamParser(events=False)`). Lexical only: a string, a scalar's characters, or a
# container with containers at most one level inside it, delimited by brackets, braces and
# quotes; the standard decoder then checks the run (and what it refuses is read the usual
# way). A number is taken only with the `,` or closing character after it.
_STR = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'
_FLAT = rf'[\[{{][^\[\]{{}}"]*+(?:{_STR}[^\[\]{{}}"]*+)*+[\]}}]'
_NESTED = rf'[\[{{][^\[\]{{}}"]*+(?:(?:{_STR}|{_FLAT})[^\[\]{{}}"]*+)*+[\]}}]'
_ONE = rf"(?:{_STR}|{_NESTED}|[-0-9][-+.0-9eE]*+|true|false|null)[ \t\n\r]*+"
_ELEMENT = rf"[ \t\n\r]*+{_ONE}"
_MEMBER = rf"[ \t\n\r]*+{_STR}[ \t\n\r]*+:[ \t\n\r]*+{_ONE}"
_ELEMENT_RUN = re.compile(rf"(?>{_ELEMENT},)*{_ELEMENT}[,\]]", re.DOTALL)
_LAST_MEMBER = rf"[ \t\n\r]*+(?P<key>{_STR})[ \t\n\r]*+:[ \t\n\r]*+{_ONE}"  # its key kept
_MEMBER_RUN = re.compile(rf"(?>{_MEMBER},)*{_LAST_MEMBER}[,}}]", re.DOTALL)

# What the reader expects next.
_VALUE, _FIRST_ELEMENT, _FIRST_KEY, _KEY, _COLON, _AFTER, _END, _STRING, _NUMBER = range(9)
_SKIM = 9  # an element of an array whose elements are skimmed
_EXPECTED = {
    _VALUE: "a value",
    _FIRST_ELEMENT: "a value or ']'",
    _FIRST_KEY: "'\"' (a key) or '}'",
    _KEY: "'\"' (a key)",
    _COLON: "':'",
    _END: "the end of the text (the top value is complete)",
}

# The states of a number, and those in which it may end.
_N_START, _N_MINUS, _N_ZERO, _N_INT, _N_DOT, _N_FRAC, _N_E, _N_ESIGN, _N_EXP = range(9)
_N_ENDS = frozenset({_N_ZERO, _N_INT, _N_FRAC, _N_EXP})
_N_NEEDS = {
    _N_START: "a digit",
    _N_MINUS: "a digit after '-'",
    _N_DOT: "a digit after '.'",
    _N_E: "a digit or sign after the exponent's 'e'",
    _N_ESIGN: "a digit after the exponent's sign",
}


class _Frame:
    """An open object or array: its live container and the key (or index) being read."""

    __slots__ = ("container", "count", "is_object", "key", "path", "skim", "skims")

    def __init__(self, container: dict[str, Any] | list[Any], key: str | int) -> None:
        self.container = container
        self.is_object = type(container) is dict
        self.key = key
        self.count = 0  # an array's elements so far (kept or not)
        self.skims = False  # an array whose elements are skimmed (`skim=`)
        self.skim: _Skim | None = None  # the element being skimmed
        self.path: Path = ()  # a skimmed array's own path (its elements' paths start so)


class _Skim:
    """The element of a skimmed array read so far: its text, and where the scan stands."""

    __slots__ = (
        "begun",
        "deepest",
        "depth",
        "escape",
        "first",
        "got",
        "in_string",
        "mine",
        "other",
        "own",
        "pieces",
        "start",
        "tried",
    )

    def __init__(self, start: int, *, first: bool) -> None:
        self.start = start  # the offset of the element's text in the whole text
        self.first = first  # no element before it (so `]` may close the array)
        self.begun = False  # its first character (a bracket, brace or quote) has arrived
        self.pieces: list[str] = []
        self.depth = 0  # brackets and braces open inside the element
        self.deepest = 0
        self.in_string = False
        self.escape = False  # a backslash in a string was the text's last character
        self.tried = False  # read whole by the scanner once (`_skim_whole`)
        self.got = 0  # closing characters (`"`, or `}` and `]`) in the text held since
        self.own = '"'  # the closing character of the element's own kind (`"`, `}` or `]`)
        self.other = ""  # the other one that closes a level inside it (none in a string)
        self.mine = 0  # closing characters of its own kind in the text held since


class _String:
    """An open string: its decoded pieces and whether it is a key."""

    __slots__ = ("is_key", "length", "pieces")

    def __init__(self, is_key: bool) -> None:
        self.is_key = is_key
        self.pieces: list[str] = []
        self.length = 0

    def text(self) -> str:
        if len(self.pieces) > 1:
            self.pieces[:] = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""


_NOTHING: Any = object()


class JSONStreamParser(MachineBase):
    """Read one JSON document from text fragments, reporting what each makes visible.

    Args:
        max_depth: the deepest nesting accepted (default 1,000); deeper is a
            `JSONStreamError`.
        keep: which values to keep in the tree (`snapshot()`, the values of
            the containers that hold them), asked with each value's path as it
            completes or opens; None keeps all. A value not kept is still read,
            checked and reported in its events, then dropped (`rs.elements`
            keeps only the way to its array); values still open show in
            `snapshot()` until they close.
        skim: which arrays to skim, asked with each array's path as it
            opens; None skims none. The elements of a skimmed array are not
            read character by character: their text is delimited by
            brackets, braces and strings alone (a compiled pattern over each
            fragment), and each element, once its `,` or `]` has arrived, is
            decoded once by the standard library's decoder (C speed) and
            reported by one `JSONCompleted` (no events inside it). What it
            refuses is then read again the usual way, from the element's
            start, so the error (its message, offset and path) is the one the
            reader gives without `skim`; it is raised when the element ends
            (or at `close()`), not at its bad character. `rs.elements`
            skims its array.
        events: False for a reader that builds the value without reporting
            events (`rs.partial_object`'s, which shows snapshots): `feed` and
            `close` return empty lists, and `changed` says whether the
            fragment changed what `snapshot()` shows. Without events (and
            with neither `keep` nor `skim`), a run of whole members or
            elements in the open container (each followed by its `,` or the
            closing character) is delimited by a compiled pattern and decoded
            by one call of the standard decoder; what it refuses is read the
            usual way, so the values, snapshots and errors are the ones the
            reader gives with events, for every chunking.

    Returns (from `feed`): the `JSONEvent`s the fragment completes; `close()`
    returns the last ones (a top-level number ends there) and raises if the
    document is unfinished or absent.

    Raises:
        JSONStreamError: the text cannot be (or, at `close()`, is not) a JSON document.
        TypeError: a fragment that is not a `str`.
        RuntimeError: `feed` after `close()` or after an error.

    >>> p = JSONStreamParser()
    >>> for event in p.feed('{"a": [1, 2'):
    ...     print(event)
    JSONOpened(path=(), kind='object')
    JSONOpened(path=('a',), kind='array')
    JSONCompleted(path=('a', 0), value=1, was_open=False)
    >>> p.snapshot()
    {'a': [1]}
    >>> p.feed("]}")[-1], p.close(), p.value
    (JSONCompleted(path=(), value={'a': [1, 2]}, was_open=True), [], {'a': [1, 2]})
    """

    __slots__ = (
        "_base",
        "_budget",
        "_buf",
        "_events",
        "_held",
        "_keep",
        "_mode",
        "_num",
        "_num_state",
        "_paths",
        "_root",
        "_runs",
        "_skim",
        "_stack",
        "_str",
        "changed",
        "max_depth",
    )

    operator = "rs.partial_object()"

    def __init__(
        self,
        *,
        max_depth: int = MAX_DEPTH,
        keep: Callable[[Path], bool] | None = None,
        skim: Callable[[Path], bool] | None = None,
        events: bool = True,
    ) -> None:
        super().__init__()
        self.max_depth = max_depth
        self._keep = keep
        self._skim = skim
        self._events = events
        self._paths = events or keep is not None or skim is not None  # paths are asked for
        self._runs = not self._paths  # whole runs read at once (`_whole_run`)
        self.changed = False
        self._held: list[str] = []  # fragments a skimmed element cannot end in, not read yet
        self._buf = ""  # text not consumed yet: at most a cut literal or escape
        self._base = 0  # the offset of _buf[0] in the whole text
        self._mode = _VALUE
        self._stack: list[_Frame] = []
        self._root: JSON = _NOTHING
        self._str: _String | None = None
        self._num: list[str] = []
        self._num_state = _N_START
        self._budget = 0

    #: Whether the last `feed` (or `close`) changed what `snapshot()` shows: a value
    #: placed, a container or string opened, a string grown (with `events=False`).
    changed: bool

    # -- the public view ----------------------------------------------------------

    @property
    def complete(self) -> bool:
        """True once the top value has closed (a top-level number: once `close()` ran)."""
        return self._mode == _END

    @property
    def value(self) -> JSON:
        """The document's value, once `complete`.

        Raises:
            RuntimeError: the top value has not closed yet.
        """
        if self._mode != _END:
            raise RuntimeError("the JSON value is not complete yet")
        return self._root

    @property
    def offset(self) -> int:
        """Characters read so far (the position of the next one)."""
        return self._base + len(self._buf) + sum(map(len, self._held))

    @property
    def visible(self) -> bool:
        """Whether `snapshot()` has anything to show (the top value has begun)."""
        return self._root is not _NOTHING or (self._str is not None and not self._str.is_key)

    @property
    def growing(self) -> Path | None:
        """The path of the open string value, if one is open."""
        if self._mode == _STRING and self._str is not None and not self._str.is_key:
            return self._path()
        return None

    def growing_text(self) -> str | None:
        """The text so far of the open string value (None when none is open); costs its length."""
        if self._str is not None and not self._str.is_key:
            return self._str.text()
        return None

    def holds(self) -> tuple[str, str, int] | None:
        """What the next text must bring before `feed` reads it: `(own, other, count)`, or None.

        Inside a skimmed element (`skim=`) that began in an earlier fragment, text
        cannot end the element until it brings `count` closing characters (`own`
        or `other`: `}` and `]` in a container element, `"` in a string one,
        `other` then empty), one of them `own`, the element's own (`}` for an
        object). Until then `feed` only holds the text, to read it joined with
        the text that brings them. A consumer may hold such text itself and feed
        it joined with that text: the reader then does what it does when fed the
        pieces one by one (the same events, values and errors). None when the
        next text is read at once (or the reader holds text already).

        >>> p = JSONStreamParser(skim=lambda path: True)
        >>> _ = p.feed('[{"a": [1')
        >>> p.holds()
        ('}', ']', 2)
        """
        if self._mode != _SKIM or self._held:
            return None
        skim: _Skim | None = self._stack[-1].skim
        if skim is None or not skim.begun:
            return None
        return skim.own, skim.other, skim.depth or 1

    def snapshot_size(self) -> int:
        """What `snapshot()` copies: the open containers' entries plus the open string's length."""
        size = sum(len(frame.container) for frame in self._stack)
        if self._str is not None and not self._str.is_key:
            size += self._str.length
        return size

    def snapshot(self) -> JSON:
        """The partial value: completed scalars, open containers, the open string so far.

        None when nothing is visible yet (see `visible`). The open containers are
        copied (shallowly, see the module docstring); closed values are shared
        with the final value, so do not mutate them.
        """
        child: JSON = _NOTHING
        live: Any = None  # the open container `child` copies (None for the open string)
        if self._str is not None and not self._str.is_key:
            child = self._str.text()
        for frame in reversed(self._stack):
            copy: Any = dict(frame.container) if frame.is_object else list(frame.container)
            if child is not _NOTHING:
                if frame.is_object:
                    copy[frame.key] = child
                elif copy and live is not None and copy[-1] is live:
                    copy[-1] = child
                else:  # an open string, or an open container not kept (see `keep`)
                    copy.append(child)
            child, live = copy, frame.container
        if child is _NOTHING:
            return None if self._root is _NOTHING else self._root
        return child

    # -- the machine --------------------------------------------------------------

    def feed(self, text: str) -> list[JSONEvent]:
        """Read one fragment; return the events it completes."""
        if self._state is not OPEN:
            self._refuse()
        if type(text) is not str:
            self._state = FAILED
            raise TypeError(f"JSONStreamParser takes str fragments, not {type(text).__name__}")
        out: list[JSONEvent] = []
        self.changed = False
        if not text:
            return out
        if self._mode == _SKIM:
            skim: Any = self._stack[-1].skim
            if skim.begun:
                # It ends only once as many closing characters as it has open levels have
                # arrived (a string: one quote), one of its own kind (`holds()`); until then
                # its text is read with the next.
                mine = text.count(skim.own)
                skim.mine += mine
                skim.got += mine + text.count(skim.other) if skim.other else mine
                if skim.got < (skim.depth or 1) or not skim.mine:
                    self._held.append(text)
                    return out
                skim.got = skim.mine = 0
            if self._held:
                self._held.append(text)
                text = "".join(self._held)
                self._held.clear()
        self._buf = self._buf + text if self._buf else text
        self._budget = 2 * len(text) + 1024
        try:
            self._run(out)
        except BaseException:
            self._state = FAILED
            raise
        return out

    def close(self) -> list[JSONEvent]:
        """End the text; return the last events (a top-level number's).

        Raises:
            JSONStreamError: the document is unfinished, or no value arrived.
        """
        self._closing()
        out: list[JSONEvent] = []
        self.changed = False
        try:
            if self._mode == _SKIM:  # the text ended in a skimmed element: read it the usual way
                self._rewind(self._buf + "".join(self._held))  # with the text held back
                self._held.clear()
                self._budget = 2 * len(self._buf) + 1024
                self._run(out)
            if self._mode == _NUMBER and not self._stack and self._num_state in _N_ENDS:
                self._end_number("", 0, out)
            elif self._mode != _END:
                self._unfinished()
        except BaseException:
            self._state = FAILED
            raise
        return out

    def _unfinished(self) -> None:
        buf = self._buf
        if self._root is _NOTHING and self._mode == _VALUE and not buf.strip():
            reason = "no JSON value arrived"
        elif self._mode == _STRING:
            reason = "the text ended inside a string"
        elif self._mode == _NUMBER and self._num_state not in _N_ENDS:
            reason = f"the text ended inside a number (expected {_N_NEEDS[self._num_state]})"
        elif buf.strip():
            reason = f"the text ended inside {buf.strip()!r}"
        else:
            reason = f"the text ended where {_EXPECTED.get(self._mode, 'more')} was expected"
            if self._mode == _NUMBER:
                reason = "the text ended after a number in an unfinished document"
            if self._stack:
                open_ = "".join("{" if f.is_object else "[" for f in self._stack)
                reason += f" ({open_!r} still open)"
        self._fail(reason, len(buf))

    # -- reading ------------------------------------------------------------------

    def _run(self, out: list[JSONEvent]) -> None:
        """Read `_buf` as far as it goes; keep the unread tail.

        The dispatch loop over the expected token: long, because it is the hot
        loop; each token's work is in a named helper.
        """
        buf = self._buf
        n = len(buf)
        pos = 0
        stack = self._stack
        while True:
            mode = self._mode
            if mode == _SKIM:
                pos = self._skim_elements(buf, pos, out)
                if pos < 0:  # rewound: read the element again, the usual way
                    buf, pos = self._buf, 0
                    n = len(buf)
                elif self._mode == _SKIM:
                    break
                continue
            if mode == _STRING:
                pos = self._string(buf, pos, out)
                if self._mode == _STRING:
                    break
                continue
            if mode == _NUMBER:
                pos = self._number(buf, pos, out)
                if self._mode == _NUMBER:
                    break
                continue
            pos = _WS.match(buf, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                break
            c = buf[pos]
            if mode == _AFTER:
                frame = stack[-1]
                if c == ",":
                    self._mode = _KEY if frame.is_object else _VALUE
                    if frame.skims:
                        frame.skim = _Skim(self._base + pos + 1, first=False)
                        self._mode = _SKIM
                    pos += 1
                elif c == ("}" if frame.is_object else "]"):
                    self._close_container(out)
                    pos += 1
                else:
                    close = "'}'" if frame.is_object else "']'"
                    self._fail(f"expected ',' or {close}, got {c!r}", pos)
            elif mode in (_VALUE, _FIRST_ELEMENT):
                if c == "]" and stack and not stack[-1].is_object:
                    if mode == _VALUE:
                        self._fail("a trailing comma before ']'", pos)
                    self._close_container(out)
                    pos += 1
                    continue
                if self._runs and self._budget > 0 and stack and not stack[-1].is_object:
                    if c == "{" or c == "[":
                        end = self._whole_elements(buf, pos, out)
                    else:
                        end = self._whole_run(buf, pos, out)
                    if end > pos:
                        pos = end
                        continue
                pos = self._value(buf, pos, c, out)
                if pos < 0:
                    pos = -pos - 1
                    break
            elif mode in (_FIRST_KEY, _KEY):
                if c == '"':
                    if self._runs and self._budget > 0:
                        end = self._whole_run(buf, pos, out)
                        if end > pos:
                            pos = end
                            continue
                    pos = self._key(buf, pos)
                elif c == "}" and mode == _FIRST_KEY:
                    self._close_container(out)
                    pos += 1
                elif c == "}":
                    self._fail("a trailing comma before '}'", pos)
                else:
                    self._fail(f"expected {_EXPECTED[mode]}, got {c!r}", pos)
            elif mode == _COLON:
                if c != ":":
                    self._fail(f"expected ':' after the key, got {c!r}", pos)
                self._mode = _VALUE
                pos += 1
            else:  # _END
                self._fail(f"text after the complete top value: {c!r}", pos)
        self._base += pos
        self._buf = buf[pos:]

    def _value(self, buf: str, pos: int, c: str, out: list[JSONEvent]) -> int:
        """Start the value at `pos`; its end, or `-pos - 1` to wait for more text there."""
        stack = self._stack
        if stack and not stack[-1].is_object:
            frame = stack[-1]
            frame.key = frame.count
        if c == '"':
            if self._budget > 0 and _may_close(buf, pos + 1):
                try:
                    text, end = scanstring(buf, pos + 1, True)
                except ValueError:
                    self._budget -= len(buf) - pos
                else:
                    self._complete(text, out)
                    return int(end)
            self._str = _String(is_key=False)
            self._mode = _STRING
            if self._events:
                out.append(_opened(self._path(), "string"))
            else:
                self.changed = True
            return pos + 1
        if c == "{" or c == "[":
            return self._open(buf, pos, c, out)
        if c == "-" or "0" <= c <= "9":
            self._num = []
            self._num_state = _N_START
            self._mode = _NUMBER
            return self._number(buf, pos, out)
        literal = _LITERALS.get(c)
        if literal is not None:
            word, value = literal
            got = buf[pos : pos + len(word)]
            if got == word:
                self._complete(value, out)
                return pos + len(word)
            if word.startswith(got) and pos + len(got) == len(buf):
                return -pos - 1
            self._fail(f"expected {word!r}, got {got!r}", pos)
        if c == "N" or c == "I":
            self._fail(f"expected a value, got {c!r} (NaN and Infinity are not JSON)", pos)
        self._fail(f"expected {_EXPECTED[self._mode]}, got {c!r}", pos)

    def _open(self, buf: str, pos: int, c: str, out: list[JSONEvent]) -> int:
        if len(self._stack) >= self.max_depth:
            self._fail(f"nested deeper than {self.max_depth} levels", pos)
        if self._budget > 0 and buf.find("}" if c == "{" else "]", pos) > 0:
            try:
                value, end = _scan_once(buf, pos)
            except (StopIteration, ValueError, RecursionError):
                self._budget -= len(buf) - pos
            else:
                if _fits(buf, pos, end, self.max_depth - len(self._stack)):
                    self._complete(value, out)
                    return end
                self._budget -= end - pos
        container: dict[str, Any] | list[Any] = {} if c == "{" else []
        path = self._path() if self._paths else ()
        self._place(container, path)
        frame = _Frame(container, "" if c == "{" else 0)
        self._stack.append(frame)
        self._mode = _FIRST_KEY if c == "{" else _FIRST_ELEMENT
        if c == "[" and self._skim is not None and self._skim(path):
            frame.skims = True
            frame.path = path
            frame.skim = _Skim(self._base + pos + 1, first=True)
            self._mode = _SKIM
        if self._events:
            out.append(_opened(path, "object" if c == "{" else "array"))
        else:
            self.changed = True
        return pos + 1

    def _skim_elements(self, buf: str, pos: int, out: list[JSONEvent]) -> int:
        """Skim the element of the array on top from `pos` (see `skim=`); where it stopped.

        A container or string element is delimited by brackets, braces and quotes
        alone, then decoded once (`_skimmed`); any other (a scalar, or the `]`) is
        left to the usual reading. -1 after a rewind (`_rewind`). A hot loop: each
        step is one compiled pattern over a run of the text.
        """
        frame = self._stack[-1]
        skim: Any = frame.skim
        n = len(buf)
        if skim.begun and not skim.tried and skim.pieces:
            end = self._skim_whole(frame, skim, buf, pos, out)
            if end >= 0:
                return end
        if not skim.begun:
            pos = _WS.match(buf, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                skim.start = self._base + pos  # a rewind reads on after the whitespace
                return pos
            c = buf[pos]
            if c != "{" and c != "[" and c != '"':
                frame.skim = None
                self._mode = _FIRST_ELEMENT if skim.first else _VALUE
                return pos
            closes = '"' if c == '"' else "}" if c == "{" else "]"
            if (
                self._budget > 0
                and len(self._stack) < self.max_depth
                and buf.find(closes, pos + 1) > 0
            ):
                # Whole in this fragment? The C scanner reads it at once (as `_open` does).
                try:
                    value, end = _scan_once(buf, pos)
                except (StopIteration, ValueError, RecursionError):
                    self._budget -= n - pos
                    end = -1
                if end >= 0 and not _fits(buf, pos, end, self.max_depth - len(self._stack)):
                    self._budget -= end - pos
                elif end >= 0:
                    self._element(frame, value, out)
                    return int(end)
            skim.begun = True
            skim.start = self._base + pos
            skim.in_string = c == '"'
            skim.depth = skim.deepest = int(c != '"')
            skim.own = closes
            skim.other = "" if c == '"' else "]" if c == "{" else "}"
        mark = pos
        if skim.start == self._base + pos:
            pos += 1
        # The scan's state in locals (the hot loop), stored back when the text runs out.
        depth, in_string = skim.depth, skim.in_string
        if skim.escape:
            skim.escape = False
            pos += 1
        run, string = _SKIM_RUN.match, _SKIM_STRING.match
        while pos < n:
            if in_string:
                pos = string(buf, pos).end()  # type: ignore[union-attr]
                if pos >= n:
                    break
                pos += 1
                if buf[pos - 1] != '"':  # a backslash, the text's last character
                    skim.escape = True
                    break
                in_string = False
                if not depth:  # a string element closed
                    return self._skimmed(frame, skim, buf[mark:pos], buf, pos, out)
                continue
            pos = run(buf, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                break
            c = buf[pos]
            pos += 1
            if c == '"':
                in_string = True  # a string the text cuts (the pattern takes whole ones)
            elif c == "{" or c == "[":
                depth += 1
                if depth > skim.deepest:
                    skim.deepest = depth
            else:
                depth -= 1
                if not depth:  # the element's closing bracket or brace
                    return self._skimmed(frame, skim, buf[mark:pos], buf, pos, out)
        skim.depth, skim.in_string = depth, in_string
        if pos > mark:
            skim.pieces.append(buf[mark:pos])
        return pos

    def _skim_whole(
        self, frame: _Frame, skim: _Skim, buf: str, pos: int, out: list[JSONEvent]
    ) -> int:
        """The element begun earlier, read whole by the scanner from its start; where it ends.

        Tried once per element, when the closing character of its own kind (its
        first character's) is in `buf`: the text up to it is then not stepped
        through. -1 when it is not whole there (or is refused): it is skimmed.
        """
        first = skim.pieces[0][0]
        if buf.find('"' if first == '"' else "}" if first == "{" else "]", pos) < 0:
            return -1
        skim.tried = True
        if len(self._stack) >= self.max_depth:
            return -1
        done = "".join(skim.pieces)
        text = done + buf[pos:]
        try:
            value, end = _scan_once(text, 0)
        except (StopIteration, ValueError, RecursionError):
            self._budget -= len(buf) - pos
            return -1
        if end <= len(done):  # pragma: no cover - the stepping would have found its end
            return -1
        if not _fits(text, 0, end, self.max_depth - len(self._stack)):
            return -1  # skimmed on: `_skimmed` knows its depth
        self._element(frame, value, out)
        return pos + end - len(done)

    def _skimmed(
        self, frame: _Frame, skim: _Skim, last: str, buf: str, end: int, out: list[JSONEvent]
    ) -> int:
        """The skimmed element closed with `last`: decode it; else read it again (`_rewind`)."""
        pieces = skim.pieces
        pieces.append(last)
        text = "".join(pieces) if len(pieces) > 1 else last
        if len(self._stack) + skim.deepest <= self.max_depth:
            try:
                value, stop = _scan_once(text, 0)  # it starts at its first character
            except (StopIteration, ValueError, RecursionError):
                stop = -1
            if stop == len(text):
                self._element(frame, value, out)
                return end
        return self._rewind(buf[end:])

    def _element(self, frame: _Frame, value: Any, out: list[JSONEvent]) -> None:
        """A skimmed element decoded: `_complete` in the array on top, its path the array's own."""
        frame.skim = None
        index = frame.key = frame.count
        frame.count = index + 1
        path = (*frame.path, index)
        if self._events:
            out.append(_completed(path, value, False))
        else:
            self.changed = True
        if self._keep is None or self._keep(path):
            frame.container.append(value)  # type: ignore[union-attr]
        self._mode = _AFTER

    def _rewind(self, rest: str) -> int:
        """Stop skimming (here and for good): the element's text, then `rest`, is read again.

        The usual reading then refuses what the decoder refused, with its own message,
        offset and path (or reads an element nested past the decoder's recursion limit).
        """
        frame = self._stack[-1]
        skim = frame.skim
        assert skim is not None
        frame.skim = None
        frame.skims = False
        self._skim = None  # no more skimming: each character is read again at most once
        self._mode = _FIRST_ELEMENT if skim.first else _VALUE
        self._buf = "".join(skim.pieces) + rest
        self._base = skim.start
        return -1

    def _whole_run(self, buf: str, pos: int, out: list[JSONEvent]) -> int:
        """Read the run of whole members or elements at `pos` at once; where it ends, or `pos`.

        The reader without events only (`events=False`): the run is delimited by a
        compiled pattern (`_MEMBER_RUN`, `_ELEMENT_RUN`) and decoded by one call of
        the standard decoder, then added to the open container (its closing
        character too, when the run ends with it). Nothing read when no whole
        member is there, or when the decoder refuses the run: the usual reading
        then goes on (and refuses it with its own error). A failed attempt is
        charged against the budget, as the scanner's are.
        """
        stack = self._stack
        if len(stack) >= self.max_depth:  # a container inside is refused (`_open`)
            return pos
        frame = stack[-1]
        is_object = frame.is_object
        opening, closing = ("{", "}") if is_object else ("[", "]")
        close = buf.find(closing, pos)
        if close < 0:
            self._budget -= len(buf) - pos
        elif not 0 <= buf.find(opening, pos, close) < close:
            # The container closes in this text, nothing like it inside: the rest at once.
            text = opening + buf[pos : close + 1]
            try:
                value, end = _scan_once(text, 0)
            except (StopIteration, ValueError, RecursionError):
                end = -1
            if end == len(text) and _fits(text, 1, end, self.max_depth - len(stack)):
                return self._add_run(frame, value, close + 1, True, out)
        match = (_MEMBER_RUN if is_object else _ELEMENT_RUN).match(buf, pos)
        if match is None:
            self._budget -= len(buf) - pos
            return pos
        end = match.end()
        text = opening + buf[pos:end]
        closes = text[-1] != ","
        if not closes:
            text = text[:-1] + closing
        try:
            value, stop = _scan_once(text, 0)
        except (StopIteration, ValueError, RecursionError):
            stop = -1
        if stop != len(text) or not _fits(text, 1, stop, self.max_depth - len(stack)):
            self._budget -= end - pos
            return pos
        if is_object and not closes:  # the key read last, as the usual reading keeps it
            frame.key = scanstring(match.group("key"), 1, True)[0]
        return self._add_run(frame, value, end, closes, out)

    def _add_run(
        self, frame: _Frame, value: Any, end: int, closes: bool, out: list[JSONEvent]
    ) -> int:
        """Add what `_whole_run` decoded to the container of `frame`; close it if `closes`."""
        is_object = frame.is_object
        container: Any = frame.container
        if is_object:
            container.update(value)
        else:
            container.extend(value)
            frame.count += len(value)
            frame.key = frame.count - 1
        self.changed = True
        if closes:
            self._close_container(out)
        else:
            self._mode = _KEY if is_object else _VALUE
        return end

    def _whole_elements(self, buf: str, pos: int, out: list[JSONEvent]) -> int:
        """Read the whole elements at `pos` one call each; where they end, or `pos`.

        `_whole_run` for an array of containers (long elements: the call per
        element costs less than a pattern over them): each is read by the
        standard library's scanner, and taken once the `,` or `]` after it has
        arrived. It stops at an element cut by the text's end, or one the
        scanner refuses (the usual reading then reads it, and refuses it with its
        own error).
        """
        if len(self._stack) >= self.max_depth:  # refused (`_open`)
            return pos
        frame = self._stack[-1]
        container: Any = frame.container
        ws = _WS.match
        n = len(buf)
        start = pos
        while buf.find("}" if buf[pos] == "{" else "]", pos) > 0:  # else it cannot be whole
            try:
                value, end = _scan_once(buf, pos)
            except (StopIteration, ValueError, RecursionError):
                self._budget -= n - pos
                break
            if not _fits(buf, pos, end, self.max_depth - len(self._stack)):
                self._budget -= end - pos
                break  # the usual reading refuses it where it goes too deep
            end = ws(buf, end).end()  # type: ignore[union-attr]
            c = buf[end] if end < n else ""
            if c != "," and c != "]":
                break  # the text's end, or what the usual reading refuses
            container.append(value)
            frame.key = frame.count
            frame.count += 1
            self.changed = True
            if c == "]":
                self._close_container(out)
                return end + 1
            self._mode = _VALUE
            pos = ws(buf, end + 1).end()  # type: ignore[union-attr]
            if pos >= n or (buf[pos] != "{" and buf[pos] != "["):
                break
        return pos if pos > start else start

    def _key(self, buf: str, pos: int) -> int:
        if self._budget > 0 and _may_close(buf, pos + 1):
            try:
                key, end = scanstring(buf, pos + 1, True)
            except ValueError:
                self._budget -= len(buf) - pos
            else:
                self._stack[-1].key = key
                self._mode = _COLON
                return int(end)
        self._str = _String(is_key=True)
        self._mode = _STRING
        return pos + 1

    def _string(self, buf: str, pos: int, out: list[JSONEvent]) -> int:
        """Go on with the open string from `pos`; where reading stopped."""
        state = self._str
        assert state is not None
        n = len(buf)
        fresh: list[str] = []
        while True:
            end = _STRING_RUN.match(buf, pos).end()  # type: ignore[union-attr]
            if end > pos:
                fresh.append(buf[pos:end])
                pos = end
            if pos >= n:
                break
            c = buf[pos]
            if c == "\\":
                decoded = self._escape(buf, pos)
                if decoded is None:
                    break
                fresh.append(decoded[0])
                pos = decoded[1]
            elif c == '"':
                self._end_string(state, fresh, out)
                return pos + 1
            else:
                self._fail(f"a control character {c!r} in a string (escape it)", pos)
        if fresh:
            self._grow(state, fresh, out)
        return pos

    def _grow(self, state: _String, fresh: list[str], out: list[JSONEvent]) -> None:
        text = "".join(fresh)
        state.pieces.append(text)
        state.length += len(text)
        if state.is_key:
            return
        if self._events:
            out.append(_grew(self._path(), text))
        else:
            self.changed = True

    def _end_string(self, state: _String, fresh: list[str], out: list[JSONEvent]) -> None:
        if fresh:
            self._grow(state, fresh, out)
        text = state.text()
        self._str = None
        if state.is_key:
            self._stack[-1].key = text
            self._mode = _COLON
        else:
            self._complete(text, out, was_open=True)

    def _escape(self, buf: str, i: int) -> tuple[str, int] | None:
        """The escape at `i` decoded, and where it ends; None if it is cut by the text's end."""
        n = len(buf)
        if i + 1 >= n:
            return None
        c = buf[i + 1]
        if c != "u":
            char = _ESCAPES.get(c)
            if char is None:
                self._fail(f"invalid escape {buf[i : i + 2]!r} in a string", i)
            return char, i + 2
        code = self._hex(buf, i)
        if code is None:
            return None
        j = i + 6
        if 0xD800 <= code <= 0xDBFF:
            # A high surrogate: a low one may follow, and they make one character.
            if buf.startswith("\\u", j):
                low = self._hex(buf, j)
                if low is None:
                    return None
                if 0xDC00 <= low <= 0xDFFF:
                    return chr(0x10000 + (((code - 0xD800) << 10) | (low - 0xDC00))), j + 6
            elif j >= n or (j + 1 == n and buf[j] == "\\"):
                return None  # what follows decides
        return chr(code), j

    def _hex(self, buf: str, i: int) -> int | None:
        """The code of `\\uXXXX` at `i`; None if it is cut by the text's end."""
        digits = _HEX.match(buf, i + 2, i + 6).group()  # type: ignore[union-attr]
        if len(digits) == 4:
            return int(digits, 16)
        if i + 2 + len(digits) < len(buf):
            self._fail(f"invalid escape {buf[i : i + 2 + len(digits) + 1]!r} in a string", i)
        return None

    def _number(self, buf: str, pos: int, out: list[JSONEvent]) -> int:
        end, state = _scan_number(buf, pos, self._num_state)
        self._num_state = state
        if end >= len(buf):
            self._num.append(buf[pos:end])
            return end
        got = buf[end]
        if state == _N_ZERO and "0" <= got <= "9":
            self._fail("a number with a leading zero", end - 1)
        if state not in _N_ENDS:
            hint = " (-Infinity is not JSON)" if got == "I" else ""
            self._fail(f"expected {_N_NEEDS[state]}, got {got!r}{hint}", end)
        self._end_number(buf, pos, out, end)
        return end

    def _end_number(self, buf: str, pos: int, out: list[JSONEvent], end: int = 0) -> None:
        self._num.append(buf[pos:end])
        text = "".join(self._num)
        self._num = []
        try:
            value: JSON = int(text) if self._num_state in (_N_ZERO, _N_INT) else float(text)
        except ValueError as exc:  # an integer past Python's digit limit, as json.loads says
            self._fail(str(exc), end)
        self._complete(value, out)

    # -- the tree -----------------------------------------------------------------

    def _path(self) -> Path:
        return tuple([frame.key for frame in self._stack])

    def _place(self, value: JSON, path: Path) -> None:
        if not self._stack:
            self._root = value
            return
        frame = self._stack[-1]
        keep = self._keep is None or self._keep(path)
        if frame.is_object:
            if keep:
                frame.container[frame.key] = value  # type: ignore[index]
        else:
            frame.count += 1
            if keep:
                frame.container.append(value)  # type: ignore[union-attr]

    def _complete(self, value: JSON, out: list[JSONEvent], *, was_open: bool = False) -> None:
        if self._events:
            path = self._path()
            out.append(_completed(path, value, was_open))
        else:
            self.changed = True
            path = self._path() if self._paths else ()
        self._place(value, path)
        self._mode = _AFTER if self._stack else _END

    def _close_container(self, out: list[JSONEvent]) -> None:
        frame = self._stack.pop()
        if self._events:
            out.append(_completed(self._path(), frame.container, True))
        self._mode = _AFTER if self._stack else _END

    def _fail(self, reason: str, pos: int) -> NoReturn:
        self._state = FAILED
        buf = self._buf
        start = max(0, pos - 40)
        raise JSONStreamError(
            reason,
            buf[start : pos + 40],
            offset=self._base + pos,
            path=pointer(self._path()),
        )


def _may_close(buf: str, start: int) -> bool:
    """Whether the string whose text starts at `start` may close in `buf`: an unescaped `"`.

    A guess that saves a failed scan (an exception costs as much as reading a few
    hundred characters); `\\"` is taken for an escaped quote, and the string then
    read the usual way.
    """
    end = buf.find('"', start)
    while end > 0 and buf[end - 1] == "\\":
        end = buf.find('"', end + 1)
    return end > 0


def _scan_number(buf: str, pos: int, state: int) -> tuple[int, int]:
    """Go over a number's characters from `pos` in `state`; where it stopped, and the state.

    It stops at the first character that cannot go on (the caller decides
    whether the number may end there) or at the end of `buf`.
    """
    n = len(buf)
    while pos < n:
        if state in (_N_INT, _N_FRAC, _N_EXP):
            pos = _DIGITS.match(buf, pos).end()  # type: ignore[union-attr]
            if pos >= n or state == _N_EXP:
                break
        c = buf[pos]
        if state == _N_START and c == "-":
            state = _N_MINUS
        elif state in (_N_START, _N_MINUS):
            if c == "0":
                state = _N_ZERO
            elif "1" <= c <= "9":
                state = _N_INT
            else:
                break
        elif state in (_N_ZERO, _N_INT, _N_FRAC) and c in "eE":
            state = _N_E
        elif state in (_N_ZERO, _N_INT) and c == ".":
            state = _N_DOT
        elif state == _N_DOT and "0" <= c <= "9":
            state = _N_FRAC
        elif state == _N_E and c in "+-":
            state = _N_ESIGN
        elif state in (_N_E, _N_ESIGN) and "0" <= c <= "9":
            state = _N_EXP
        else:
            break
        pos += 1
    return pos, state
