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
  operator chain uses it; the data and blank lines of a chat stream take an
  inline path there).

Spec: WHATWG HTML, "Server-sent events", section "Interpreting an event
stream", with one deliberate deviation: at end of input, an event whose data
arrived but whose closing blank line did not is still dispatched (real
servers omit the last blank line; a browser would drop that event).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from contextlib import suppress

from ..models import SSEFrame
from ._build import constructor
from .lines import LineAfterBOM

__all__ = ["SSEParser", "comment_lines", "event_lines", "event_text"]

_frame: Callable[[str, str, str | None, int | None], SSEFrame] = constructor(SSEFrame)


class SSEParser:
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

    __slots__ = ("_data", "_event", "_fresh", "_id", "_retry", "_state")

    def __init__(self) -> None:
        # The data lines of the event being built; "\n".join of them is the
        # spec's data buffer with its one trailing LF removed.
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._fresh = True
        self._state = "open"

    def feed(self, line: str) -> list[SSEFrame]:
        """Take one line (without its terminator) and return the frame it dispatches.

        Args:
            line: the next line of the stream.

        Returns:
            `[frame]` when the line is blank and data was collected, else `[]`.

        Raises:
            TypeError: the line is not a `str`.
            RuntimeError: the parser was closed.
        """
        # The hot path first: a chat stream is data lines and blank lines.
        if self._fresh:
            line = self._first(line)
        if line.startswith("data:"):
            self._data.append(line[6:] if line.startswith(" ", 5) else line[5:])
            return []
        if not line:
            data = self._data
            if not data:
                self._event = ""
                return []
            return self._dispatch()
        if line[0] == ":":
            return []
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
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

    def feed_all(self, lines: Iterable[str], out: list[SSEFrame]) -> None:
        """Feed many lines at once, appending the frames they dispatch to `out`.

        The same as `out += parser.feed(line)` for each line in turn (an error
        leaves in `out` what the lines before it gave), minus a call per line.

        >>> parser, out = SSEParser(), []
        >>> parser.feed_all(["data: a", "", "data: b", ""], out)
        >>> [frame.data for frame in out]
        ['a', 'b']
        """
        for line in lines:
            # The two kinds of line a chat stream is made of, inline; any
            # other line (and the first, and any after close) takes `feed`.
            if self._fresh:
                out += self.feed(line)
            elif line.startswith("data:"):
                self._data.append(line[6:] if line.startswith(" ", 5) else line[5:])
            elif line:
                out += self.feed(line)
            else:
                # A blank line: `_dispatch`, inline.
                data = self._data
                event = self._event
                self._event = ""
                if data:
                    self._data = []
                    out.append(
                        _frame(
                            data[0] if len(data) == 1 else "\n".join(data),
                            event or "message",
                            self._id,
                            self._retry,
                        )
                    )

    def _first(self, line: str) -> str:
        if self._state != "open":
            raise RuntimeError(f"this SSEParser is {self._state}; it takes no more input")
        # Checked once: a stream of the wrong type fails on its first line.
        if not isinstance(line, str):
            raise TypeError(f"expected a str line, got {type(line).__name__}")
        self._fresh = False
        if type(line) is LineAfterBOM:
            return line  # the stream's one BOM is gone already
        return line[1:] if line.startswith("\ufeff") else line

    def close(self) -> list[SSEFrame]:
        """End the input, dispatching an event left without its closing blank line.

        Returns:
            `[frame]` if data was collected since the last dispatch, else `[]`.

        Raises:
            RuntimeError: the parser was already closed.
        """
        if self._state != "open":
            raise RuntimeError(f"this SSEParser is {self._state}; it cannot be closed again")
        self._state = "closed"
        # Every later feed goes through the slow check, which refuses it.
        self._fresh = True
        return self._dispatch()

    def _dispatch(self) -> list[SSEFrame]:
        data, event = self._data, self._event
        self._event = ""
        if not data:
            return []
        self._data = []
        return [
            _frame(
                data[0] if len(data) == 1 else "\n".join(data),
                event or "message",
                self._id,
                self._retry,
            )
        ]


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def event_lines(
    data: str, *, event: str | None = None, id: str | None = None, retry: int | None = None
) -> list[str]:
    """The lines (without terminators) that send one event, its closing blank line included.

    The inverse of `SSEParser` for one event: the parser gives back `data`
    (a line break in it becomes one `data:` line each) and `event`. The
    default event type `"message"` is not written.

    >>> event_lines('{"a": 1}')
    ['data: {"a": 1}', '']
    >>> event_lines("x\\ny", event="delta", id="7")
    ['event: delta', 'id: 7', 'data: x', 'data: y', '']
    """
    head = []
    if event is not None and event != "message":
        head.append(f"event: {event}")
    if id is not None:
        head.append(f"id: {id}")
    if retry is not None:
        head.append(f"retry: {retry}")
    return [*head, *(f"data: {line}" for line in _LINE_BREAK.split(data)), ""]


def comment_lines(text: str = "") -> list[str]:
    """The lines of a comment (a keep-alive): `: text` and a blank line.

    >>> comment_lines("keep-alive")
    [': keep-alive', '']
    """
    return [f": {text}" if text else ":", ""]


def event_text(
    data: str, *, event: str | None = None, id: str | None = None, retry: int | None = None
) -> str:
    """One event as event-stream text, each line ended by LF (see `event_lines`).

    >>> event_text("[DONE]")
    'data: [DONE]\\n\\n'
    """
    return "\n".join(event_lines(data, event=event, id=id, retry=retry)) + "\n"
