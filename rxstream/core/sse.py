"""Interpret event-stream lines as server-sent events.

Input: lines as `str`, without terminators (what `LineSplitter` gives).
Output: `SSEFrame(data, event, id, retry)`, one per dispatched event.

Invariants:

- A blank line dispatches the event being built; a frame is dispatched only
  if at least one `data` field arrived since the last dispatch.
- `id` (the last event id) and `retry` (the reconnection time) persist from
  event to event; every frame carries their values at dispatch time.
- Comments, unknown fields, an `id` containing NUL and a `retry` that is not
  all ASCII digits are ignored, as the spec says.
- `feed_all(lines, out)` is `feed` line by line, in one call (the fused
  operator chain uses it; the data, event and blank lines of a chat stream
  take an inline path there, and a list of lines whose events are all
  `event:`, `data:`, blank is read in bulk).

Spec: WHATWG HTML, "Server-sent events", section "Interpreting an event
stream", with one deliberate deviation: at end of input, an event whose data
arrived but whose closing blank line did not is still dispatched (real
servers omit the last blank line; a browser would drop that event). Its data
is an `Unterminated` (a `str` that says the event may be cut short), so a
decoder that cannot read it reports a truncated stream, not a malformed one.

The writer below (`event_lines`, `event_text`, `comment_lines`,
`comment_text`) is the one place rxstream writes SSE text; it refuses a field
it cannot write (an event name, id or comment holding a line break, an id
holding NUL) with a `ValueError`, so what it writes this parser reads back
as it was.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from contextlib import suppress
from itertools import repeat
from operator import itemgetter

from .._fast import constructor
from ..errors import excerpt
from ..models import SSEFrame
from ._machine import FAILED, OPEN, MachineBase, Stage, wrong_input
from .lines import Cut, LineAfterBOM, Unterminated
from .pipeline import Handoff

__all__ = [
    "SSEParser",
    "check_field",
    "check_retry",
    "comment_lines",
    "comment_text",
    "event_lines",
    "event_text",
]

_frame: Callable[[str, str, str | None, int | None], SSEFrame] = constructor(SSEFrame)

#: The fewest lines `feed_all` tries to read in bulk (see `SSEParser._read_run`).
_BULK_LINES = 8
#: A data line's field and the value after it, cut by C code (`SSEParser._read_run`).
_DATA = "data: "
_head: Callable[[str], str] = itemgetter(slice(None, 6))
_tail: Callable[[str], str] = itemgetter(slice(6, None))


class SSEParser(MachineBase):
    """Turn event-stream lines into `SSEFrame`s, by the WHATWG rules.

    >>> parser = SSEParser()
    >>> parser.feed("event: delta")
    []
    >>> parser.feed("data: {}")
    []
    >>> parser.feed("")
    [SSEFrame(data='{}', event='delta', id=None, retry=None)]
    >>> parser.feed("data: tail")
    []
    >>> parser.close()
    [SSEFrame(data='tail', event='message', id=None, retry=None)]
    """

    __slots__ = ("_event", "_fresh", "_id", "_more", "_one", "_pairs", "_retry", "_strings")
    operator = "rs.sse_frames()"
    #: What it hands on, by mode (`rxstream.core.pipeline.Handoff`): `SSEFrame`s
    #: unfused; fused in front of a decoder that takes them, a `"message"`
    #: frame's data as a bare `str` (`STRINGS`) or every frame as an
    #: `(event, data)` tuple (`PAIRS`); the last frame, which no blank line
    #: ended, always whole.
    hands = (Handoff.FRAMES, Handoff.STRINGS, Handoff.PAIRS)

    def __init__(self) -> None:
        super().__init__()
        # The data lines of the event being built: the first one, and the
        # others (rare); "\n".join of them is the spec's data buffer with its
        # one trailing LF removed. `_one` is None when no data arrived.
        self._one: str | None = None
        self._more: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        # True before the first line and after the end: `feed` then takes
        # the slow road through `_first`, which checks the state and the type.
        self._fresh = True
        # Give the data of a "message" frame as a plain str (`_hand(Handoff.STRINGS)`).
        self._strings = False
        # Give every frame as an (event, data) tuple (`_hand(Handoff.PAIRS)`).
        self._pairs = False

    def feed(self, line: str) -> list[SSEFrame]:
        """Take one line (without its terminator) and return the frame it dispatches.

        Args:
            line: the next line of the stream.

        Returns:
            `[frame]` when the line is blank and data was collected, else `[]`.

        Raises:
            TypeError: the line is not a `str` (the message names the
                operator missing in front of `rs.sse_frames()`).
            RuntimeError: the parser was closed, or failed before.
        """
        try:
            if self._fresh:
                line = self._first(line)
            if not line:
                return self._dispatch()
            if line[0] == ":":
                return []
            name, colon, value = line.partition(":")
            if colon and value.startswith(" "):
                value = value[1:]
            if name == "data":
                if self._one is None:
                    self._one = value
                else:
                    self._more.append(value)
            elif name == "event":
                # The input's last line, cut: the event's name may be cut short.
                self._event = value if type(line) is not Unterminated else Unterminated(value)
            elif name == "id":
                if "\x00" not in value:
                    self._id = value
            # isdigit() alone would accept non-ASCII digits such as "٣".
            elif name == "retry" and value.isascii() and value.isdigit():
                # int() refuses a value of thousands of digits; the spec gives no
                # other answer, so such a field is ignored like any bogus one.
                with suppress(ValueError):
                    self._retry = int(value)
            return []
        except BaseException:
            self._fail(line)
            raise

    def feed_all(self, lines: Iterable[str], out: list[SSEFrame]) -> None:
        """Feed many lines at once, appending the frames they dispatch to `out`.

        The same as `out += parser.feed(line)` for each line in turn (an error
        leaves in `out` what the lines before it gave), minus a call per line.
        A list of lines (a read's worth, as the sources and `LineSplitter` give)
        whose events are all `event:`, `data:`, blank is read in bulk
        (`_read_run`).

        >>> parser, out = SSEParser(), []
        >>> parser.feed_all(["data: a", "", "data: b", ""], out)
        >>> [frame.data for frame in out]
        ['a', 'b']
        """
        if self._state is not OPEN:
            self._refuse()
        if self._fresh or type(lines) is not list or len(lines) < _BULK_LINES:
            self._each(lines, out)
            return
        at, end = 0, len(lines)
        if self._one is not None or self._event or self._more:
            # The event the last read left open ends at the first blank line.
            try:
                at = lines.index("") + 1
            except ValueError:
                at = end
            self._each(lines[:at], out)
        # Events of three lines each from here, if the first is one. (Events of two
        # lines, `data:` and blank, read in bulk were measured slower than the loop.)
        first = lines[at] if at < end else None
        stop = at
        if type(first) is str and first[:7] == "event: ":
            stop = at + (end - at) // 3 * 3
            if stop - at < 6 or not self._read_run(lines[at:stop], out):
                stop = at  # not the usual shape throughout: line by line
        if stop < end:
            self._each(lines[stop:] if stop else lines, out)

    def _read_run(self, run: list[str], out: list[SSEFrame]) -> bool:
        """Read `run`, events of three lines each, in bulk; False (nothing read) if it is not.

        The usual shape is `event: <name>`, `data: <text>`, blank, for events
        that begin with nothing of an event pending. For such lines the spec's
        steps give exactly one event each: its type the name (never empty
        here), its data the text, the last event id and the reconnection time
        unchanged, and nothing pending after the blank line. The lines are
        checked and cut by C code over the whole run (`join`, `map`), none per
        line in Python: every third line blank, each data line starting with
        `data: `, the event lines (short) joined and cut at their line breaks,
        none marked `Unterminated` (see `feed`).
        """
        count = len(run) // 3
        heads, lines = run[::3], run[1::3]
        try:
            if "".join(run[2::3]) or "".join(map(_head, lines)) != _DATA * count:
                return False  # a line where the blank one should be, or no data line
            names = "\n".join(heads)
        except TypeError:  # a line that is not a str: `feed` words it
            return False
        if not names.startswith("event: ") or names.count("\n") != count - 1:
            return False
        events = names[7:].split("\nevent: ")
        if len(events) != count or "" in events or {*map(type, heads)} != {str}:
            return False
        data = map(_tail, lines)
        if self._pairs:
            out += zip(events, data, strict=True)  # type: ignore[arg-type]
        else:
            out += map(_frame, data, events, repeat(self._id), repeat(self._retry))
        return True

    def _each(self, lines: Iterable[str], out: list[SSEFrame]) -> None:
        """`feed_all` line by line: the hot loop for any lines (see `feed_all`)."""
        line = ""
        try:
            if self._fresh:
                # The first line takes `feed`, which checks it; then the loop.
                lines = iter(lines)
                for line in lines:
                    out += self.feed(line)
                    break
            # The three kinds of line a chat stream is made of, `data: ...`,
            # `event: ...` and blank, take the inline path; any other line
            # takes `feed`.
            # The event being built lives in locals (`one`, `event`), and in
            # the parser's fields only around a call of `feed`.
            one, event, more = self._one, self._event, self._more
            strings = self._strings
            pairs = self._pairs
            for line in lines:
                if line:
                    if line[:6] == "data: ":
                        if one is None:
                            one = line[6:]
                        else:
                            more.append(line[6:])
                    elif line[:7] == "event: " and type(line) is not Unterminated:
                        event = line[7:]
                    else:
                        self._one, self._event = one, event
                        out += self.feed(line)
                        one, event = self._one, self._event
                elif line != "":
                    # Falsy, yet no blank line: None, b"", ...
                    raise wrong_input(line, self.operator, Stage.LINES)
                elif one is not None:
                    # A blank line after data: `_dispatch`, inline.
                    if more:
                        text = "\n".join([one, *more])
                        more.clear()
                    else:
                        text = one
                    one = None
                    if not event and strings:
                        out.append(text)  # type: ignore[arg-type]
                    elif pairs:
                        out.append((event or "message", text))  # type: ignore[arg-type]
                        event = ""
                    else:
                        out.append(_frame(text, event or "message", self._id, self._retry))
                        event = ""
                else:
                    event = ""
            self._event = event
            self._one = one
        except BaseException:
            self._fail(line)
            raise

    def _can_hand(self, mode: Handoff) -> bool:
        """Fusion hook (`rxstream.core.pipeline`): whether `_hand(mode)` may still be set."""
        return mode in self.hands and self._fresh and self._state is OPEN and self._one is None

    def _hand(self, mode: Handoff) -> None:
        """Fusion hook (`rxstream.core.pipeline`): hand each frame on in `mode` from now on.

        Set before any input, for a decoder below that reads nothing of a
        frame but what `mode` gives: `STRINGS`, the data of a `"message"`
        frame as a bare `str` (other frames still go whole); `PAIRS`, every
        frame as an `(event, data)` tuple (the decoder builds the frame
        itself where it needs one). The last frame, which no blank line
        ended, still goes whole (see `close`).
        """
        self._strings = mode is Handoff.STRINGS
        self._pairs = mode is Handoff.PAIRS

    def _first(self, line: str) -> str:
        if self._state is not OPEN:
            self._refuse()
        # Checked once: a stream of the wrong type fails on its first line
        # (a later line of another type fails in `_fail`).
        if not isinstance(line, str):
            raise wrong_input(line, self.operator, Stage.LINES)
        self._fresh = False
        if isinstance(line, LineAfterBOM):
            return line  # the stream's one BOM is gone already
        return line[1:] if line.startswith("\ufeff") else line

    def _fail(self, line: object) -> None:
        """After an error: refuse all later input, and word a line of the wrong type."""
        # Every later feed goes through `_first`, which refuses it.
        self._fresh = True
        if self._state is OPEN:
            self._state = FAILED
            if not isinstance(line, str):
                raise wrong_input(line, self.operator, Stage.LINES) from None

    def close(self) -> list[SSEFrame]:
        """End the input, dispatching an event left without its closing blank line.

        Returns:
            `[frame]` if data was collected since the last dispatch, else `[]`.
            The frame's data is an `Unterminated`: no blank line ended the
            event, so the stream may have stopped in the middle of it. (The
            frame goes whole, never as the bare data `fuse` hands over, so
            the mark reaches the decoder.)

        Raises:
            RuntimeError: the parser was already closed, or failed before.
        """
        self._closing()
        self._fresh = True
        self._strings = False
        self._pairs = False
        return [
            _frame(
                (Cut if type(frame.event) is Unterminated else Unterminated)(frame.data),
                str(frame.event),
                frame.id,
                frame.retry,
            )
            for frame in self._dispatch()
        ]

    def _dispatch(self) -> list[SSEFrame]:
        one, event = self._one, self._event
        self._event = ""
        if one is None:
            return []
        self._one = None
        more = self._more
        if more:
            text = "\n".join([one, *more])
            more.clear()
        else:
            text = one
        if not event and self._strings:
            return [text]  # type: ignore[list-item]
        if self._pairs:
            return [(event or "message", text)]  # type: ignore[list-item]
        return [_frame(text, event or "message", self._id, self._retry)]


# --------------------------------------------------------------------------- writing
#
# The one writer of SSE text: every event and comment rxstream sends is made
# here (`event_lines`, `event_text`, `comment_lines`, `comment_text`), which is
# where each field is checked. A field whose value holds a line end (CR or LF)
# would end the field early and let its rest be read as fields or events of
# its own (`event: x\n\ndata: injected`), so it is refused; an id holding NUL
# too, as a parser ignores such an id (the client would resume from another
# one). NUL elsewhere reads back as it was (in a comment, nothing is read).
# Data is the one field that may hold line ends: each line (CR, LF or CRLF)
# becomes a `data:` line, and a parser gives them back joined by LF.

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_UNWRITABLE = re.compile(r"[\r\n]")
_LINE_END = _UNWRITABLE
_UNWRITABLE_ID = re.compile(r"[\r\n\x00]")


def check_field(name: str, value: object) -> str:
    """`value` if it can be written as the SSE field `name` (`event`, `id`, or a comment).

    Raises:
        TypeError: `value` is not a `str`.
        ValueError: `value` holds a line break (CR or LF), or an `id` holds
            NUL; the message names the field and shows a bounded excerpt.

    >>> check_field("event", "delta")
    'delta'
    >>> check_field("event", "x\\n\\ndata: injected")
    Traceback (most recent call last):
    ...
    ValueError: an SSE event field cannot hold a line break (CR, LF), got 'x\\n\\ndata: injected'
    """
    if not isinstance(value, str):
        raise TypeError(f"an SSE {name} field must be a str, got {type(value).__name__}")
    if name == "id":
        if _UNWRITABLE_ID.search(value):
            raise ValueError(
                f"an SSE id field cannot hold a line break (CR, LF) or NUL, got {excerpt(value)!r}"
            )
    elif _UNWRITABLE.search(value):
        raise ValueError(
            f"an SSE {name} field cannot hold a line break (CR, LF), got {excerpt(value)!r}"
        )
    return value


def check_retry(retry: object) -> int:
    """`retry` if it can be written as the SSE `retry` field (milliseconds, at least 0).

    Raises:
        TypeError: not an `int` (a `bool` neither).
        ValueError: a negative number.
    """
    if isinstance(retry, bool) or not isinstance(retry, int):
        raise TypeError(f"retry must be an int (milliseconds), got {type(retry).__name__}")
    if retry < 0:
        raise ValueError(f"retry must be at least 0 milliseconds, got {retry}")
    return retry


def event_lines(
    data: str, *, event: str | None = None, id: str | None = None, retry: int | None = None
) -> list[str]:
    """The lines (without terminators) that send one event, its closing blank line included.

    The inverse of `SSEParser` for one event: the parser gives back `data`
    (each line break in it, CR, LF or CRLF, makes one `data:` line, given
    back as LF), `event`, `id` and `retry`. The default event type
    `"message"` is not written.

    Raises:
        TypeError: a field of the wrong type.
        ValueError: an `event` or `id` holding a line break (an `id` NUL
            too), a negative `retry` (see `check_field`).

    >>> event_lines('{"a": 1}')
    ['data: {"a": 1}', '']
    >>> event_lines("x\\ny", event="delta", id="7")
    ['event: delta', 'id: 7', 'data: x', 'data: y', '']
    """
    if not isinstance(data, str):
        raise TypeError(f"SSE data must be a str, got {type(data).__name__}")
    head = []
    if event is not None and event != "message":
        head.append(f"event: {check_field('event', event)}")
    if id is not None:
        head.append(f"id: {check_field('id', id)}")
    if retry is not None:
        head.append(f"retry: {check_retry(retry)}")
    if "\n" in data or "\r" in data:
        return [*head, *(f"data: {line}" for line in _LINE_BREAK.split(data)), ""]
    return [*head, f"data: {data}", ""]


def comment_lines(text: str = "") -> list[str]:
    """The lines of a comment (a keep-alive): `: text` and a blank line.

    Raises:
        ValueError: `text` holds a line break (see `check_field`).

    >>> comment_lines("keep-alive")
    [': keep-alive', '']
    """
    return [f": {check_field('comment', text)}" if text else ":", ""]


def event_text(
    data: str,
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
    newline: str = "\n",
) -> str:
    """One event as event-stream text, each line ended by `newline` (see `event_lines`).

    Args:
        newline: the line end, `"\\n"` (the default), `"\\r\\n"` or `"\\r"`.

    >>> event_text("[DONE]")
    'data: [DONE]\\n\\n'
    """
    if newline == "\n" and retry is None and type(data) is str and not _LINE_END.search(data):
        # The usual event (one data line, LF ends), written at once: the lines
        # `event_lines` gives, joined, without the list (a server writes one per token).
        head = ""
        if event is not None and event != "message":
            head = f"event: {check_field('event', event)}\n"
        if id is not None:
            head = f"{head}id: {check_field('id', id)}\n"
        return f"{head}data: {data}\n\n"
    lines = event_lines(data, event=event, id=id, retry=retry)
    return newline.join(lines) + _check_newline(newline)


def comment_text(text: str = "", *, newline: str = "\n") -> str:
    """One comment as event-stream text, each line ended by `newline` (see `comment_lines`).

    >>> comment_text("keep-alive")
    ': keep-alive\\n\\n'
    """
    return newline.join(comment_lines(text)) + _check_newline(newline)


def _check_newline(newline: str) -> str:
    if newline not in ("\n", "\r\n", "\r"):
        raise ValueError(f"an SSE line ends with LF, CRLF or CR, not {newline!r}")
    return newline
