"""Cut a stream of text or byte chunks into lines, by the event-stream rule.

Input: `str` or `bytes` chunks, cut anywhere (one stream uses one type).
Output: lines as `str`, without their terminators; a blank line is `""`.

Invariants:

- A line ends only at CRLF, LF or CR, also when CR and LF arrive in different
  chunks; no other character (U+2028, U+0085, form feed, ...) ends a line, so
  this is not `str.splitlines`.
- Bytes are cut into lines before they are decoded, so a multi-byte character
  split across chunks survives; invalid UTF-8 becomes U+FFFD, never an error.
- A UTF-8 BOM at the very start of the stream is removed once.
- The last line, when no terminator followed it, is an `Unterminated` (a
  `str` to everyone else): it may be a line the connection cut short.
- No line, and no buffered partial line, grows past `limit`.
- The output is the same however the input is chunked.

Spec: the line rule of WHATWG HTML, "Server-sent events", section "Parsing an
event stream" (end-of-line = CRLF / LF / CR).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from .._deprecate import deprecated_arguments
from ..errors import LineTooLongError
from ._machine import CLOSED, FAILED, OPEN, MachineBase, Stage, wrong_input

__all__ = [
    "DEFAULT_LIMIT",
    "Cut",
    "LineAfterBOM",
    "LineSplitter",
    "Unterminated",
    "cut_short",
]

#: The default longest line, in bytes (or characters for `str` input): 1 MiB.
DEFAULT_LIMIT = 1_048_576

_BOM_BYTES = b"\xef\xbb\xbf"
_BOM_STR = "\ufeff"


class LineAfterBOM(str):
    """The first line of a stream whose byte-order mark was already removed.

    To everyone else it is the plain `str` it equals. It tells `SSEParser`
    not to remove a BOM again: the event-stream rule removes one BOM per
    stream, and a second one at the start makes the first field unknown.
    """

    __slots__ = ()


class Unterminated(str):
    """Text the input ended in before its terminator: a line or an event maybe cut short.

    `LineSplitter.close()` gives the stream's last line as one when no line
    end followed it; `SSEParser.close()` gives the data of an event that no
    blank line closed as one (by the event-stream spec such an event is
    incomplete). To everyone else it is the plain `str` it equals, and an
    `SSEFrame` holding it equals the frame holding the plain text.

    Real servers often end a stream without the last line end or blank line,
    so it is no error in itself. But a decoder that cannot read it reports
    `TruncatedStreamError`, not `MalformedChunkError`: the text was not
    malformed, the stream stopped in the middle of it.

    >>> Unterminated("data: {") == "data: {"
    True
    """

    __slots__ = ()


class _UnterminatedAfterBOM(Unterminated, LineAfterBOM):
    """The one line of a stream that is both (a BOM, then no line end)."""

    __slots__ = ()


class Cut(Unterminated):
    """Text of an event whose `event:` line the input ended in: cut short whatever it holds.

    `SSEParser.close()` gives the data of such an event as one: the data may be
    whole JSON, but the event's name was cut (`event: message_st`), so what the
    decoder makes of the pair is the cut's doing, never the provider's.
    """

    __slots__ = ()


def cut_short(item: object) -> Unterminated | None:
    """The unterminated text `item` is or carries (a line, an `SSEFrame`'s data), else None.

    >>> from rxstream.models import SSEFrame
    >>> cut_short(SSEFrame(Unterminated('{"a"'))), cut_short(SSEFrame('{"a"'))
    ('{"a"', None)
    """
    if isinstance(item, Unterminated):
        return item
    data = getattr(item, "data", None)
    return data if isinstance(data, Unterminated) else None


T = TypeVar("T", str, bytes)


class LineSplitter(MachineBase):
    """Split `str` or `bytes` chunks into lines at CRLF, LF or CR.

    A line is emitted as soon as its terminator arrives (at a CR, without
    waiting to see whether an LF follows). The unterminated last line is
    emitted by `close()`, as an `Unterminated` (a `str` that says so).

    Args:
        line_limit: the longest line allowed, in bytes for `bytes` input and in
            characters for `str` input, terminator excluded (`limit=`, its
            former name, still works with a `DeprecationWarning`).

    Raises:
        ValueError: `line_limit` is not a positive int.

    >>> splitter = LineSplitter()
    >>> splitter.feed(b"data: caf\\xc3")
    []
    >>> splitter.feed(b"\\xa9\\r\\n\\r\\nda")
    ['data: café', '']
    >>> splitter.close()
    ['da']
    """

    __slots__ = (
        "_at_start",
        "_cr",
        "_error",
        "_kind",
        "_limit",
        "_mark_first",
        "_pending_b",
        "_pending_len",
        "_pending_s",
    )
    operator = "rs.lines()"

    @deprecated_arguments(renamed={"limit": "line_limit"})
    def __init__(self, *, line_limit: int = DEFAULT_LIMIT) -> None:
        limit = line_limit
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(f"line_limit must be an int, got {type(limit).__name__}")
        if limit <= 0:
            raise ValueError(f"line_limit must be positive, got {limit!r}")
        super().__init__()
        self._limit = limit
        self._kind: type[str] | type[bytes] | None = None
        # Pieces of the line that has no terminator yet; a list so a long line
        # that arrives in many small chunks is joined once, not once per chunk.
        self._pending_b: list[bytes] = []
        self._pending_s: list[str] = []
        self._pending_len = 0
        # The previous chunk ended in CR: an LF starting this one ends nothing.
        self._cr = False
        # Still within the first bytes of the stream, where a BOM may sit.
        self._at_start = True
        # A BOM was removed and the first line is not out yet (see LineAfterBOM).
        self._mark_first = False
        # An over-long line found after good lines in one chunk: those lines are
        # returned first and this is raised by the next call.
        self._error: LineTooLongError | None = None

    def feed(self, chunk: str | bytes | bytearray) -> list[str]:
        """Take the next chunk and return the lines it completes.

        Args:
            chunk: the next piece of the stream; `str` or `bytes` (or
                `bytearray`), the same type for the whole stream.

        Returns:
            The completed lines, in order (possibly none).

        Raises:
            LineTooLongError: a line grew past the limit. When complete lines
                came before it in the same chunk, those are returned first and
                the error is raised by the next `feed` or `close`, so what is
                delivered before the error does not depend on the chunking.
            TypeError: the chunk is not `str`/`bytes`, or not the type of the
                earlier chunks.
            RuntimeError: the splitter was closed or has failed.
        """
        self._check_open()
        try:
            if isinstance(chunk, bytearray):
                chunk = bytes(chunk)
            kind = str if isinstance(chunk, str) else bytes if isinstance(chunk, bytes) else None
            if kind is None:
                raise wrong_input(chunk, self.operator, Stage.RAW)
            if self._kind is None:
                self._kind = kind
            elif kind is not self._kind:
                raise TypeError(
                    f"{self.operator} takes the {self._kind.__name__} chunks it began with,"
                    f" got a {kind.__name__} chunk: one stream cannot mix str and bytes"
                )
            if not chunk:
                return []
            if self._at_start:
                chunk = self._strip_bom(chunk)
                if not chunk:
                    return []
            lines = self._feed_bytes(chunk) if isinstance(chunk, bytes) else self._feed_str(chunk)
        except BaseException:
            self._state = FAILED
            raise
        if self._mark_first and lines:
            lines[0] = LineAfterBOM(lines[0])
            self._mark_first = False
        return lines

    def feed_all(self, chunks: Iterable[str | bytes | bytearray], out: list[str]) -> None:
        """Feed many chunks at once: the same as `out += feed(chunk)` for each in turn.

        >>> splitter, out = LineSplitter(), []
        >>> splitter.feed_all([b"a\\nb", b"\\n"], out)
        >>> out
        ['a', 'b']
        """
        for chunk in chunks:
            out += self.feed(chunk)

    def close(self) -> list[str]:
        """End the input and return the unterminated last line, if any.

        Returns:
            `[last_line]` (an `Unterminated`), or `[]` when the input ended
            with a terminator.

        Raises:
            LineTooLongError: an over-long line was found by the last `feed`.
            RuntimeError: the splitter was already closed or has failed.
        """
        self._check_open()
        self._state = CLOSED
        if self._pending_b:
            last = b"".join(self._pending_b).decode("utf-8", "replace")
        elif self._pending_s:
            last = "".join(self._pending_s)
        else:
            return []
        return [_UnterminatedAfterBOM(last) if self._mark_first else Unterminated(last)]

    def feed_lines(self, item: str | bytes | bytearray) -> list[str]:
        """Take an item that holds whole lines: its end also ends a line.

        For sources whose items are lines already (a list, a file read line by
        line): a terminator at the item's end is optional, and an empty item
        is one blank line. Inside the item the rule is `feed`'s.

        >>> splitter = LineSplitter()
        >>> splitter.feed_lines("data: a"), splitter.feed_lines(""), splitter.feed_lines("b\\r\\n")
        (['data: a'], [''], ['b'])
        """
        if not item:
            self._check_open()
            self._at_start = False
            return [""]
        lines = self.feed(item)
        self._cr = False
        if self._pending_b or self._pending_s:
            self._at_start = False
            if self._pending_b:
                last = b"".join(self._pending_b).decode("utf-8", "replace")
            else:
                last = "".join(self._pending_s)
            self._pending_b, self._pending_s, self._pending_len = [], [], 0
            if self._mark_first:
                last, self._mark_first = LineAfterBOM(last), False
            lines.append(last)
        return lines

    def _check_open(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            self._state = FAILED
            raise error
        if self._state is not OPEN:
            self._refuse()

    def _strip_bom(self, chunk: str | bytes) -> str | bytes:
        if isinstance(chunk, str):
            self._at_start = False
            if chunk.startswith(_BOM_STR):
                self._mark_first = True
                return chunk[1:]
            return chunk
        # The three BOM bytes may arrive in separate chunks: hold a prefix of
        # them until it either completes the BOM or turns out to be text.
        head = b"".join([*self._pending_b, chunk])
        if len(head) < len(_BOM_BYTES) and _BOM_BYTES.startswith(head):
            self._pending_b = [head]
            self._pending_len = len(head)
            return b""
        self._at_start = False
        self._pending_b = []
        self._pending_len = 0
        if head.startswith(_BOM_BYTES):
            self._mark_first = True
            return head[3:]
        return head

    def _feed_bytes(self, data: bytes) -> list[str]:
        if self._cr and data[0] == 0x0A:
            data = data[1:]
            if not data:
                self._cr = False
                return []
        if b"\r" in data:
            self._cr = data[-1] == 0x0D
            unix = data.replace(b"\r", b"")
            # Every CR begins a CRLF (the usual case): dropping them is the
            # same, and far cheaper than replacing each CRLF.
            if len(data) - len(unix) == data.count(b"\r\n"):
                data = unix
            else:
                data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        else:
            self._cr = False
        end = data.rfind(b"\n")
        pending = self._pending_b
        if end < 0:
            self._hold(pending, data)
            return []
        region = data[:end]
        if pending:
            pending.append(region)
            region = b"".join(pending)
        tail = data[end + 1 :]
        pending.clear()
        self._pending_len = 0
        if len(region) > self._limit:
            # Rare: only now is it worth measuring each line.
            parts = region.split(b"\n")
            for i, part in enumerate(parts):
                if len(part) > self._limit:
                    return self._fail_after(
                        b"\n".join(parts[:i]).decode("utf-8", "replace").split("\n") if i else [],
                        part,
                    )
        lines = region.decode("utf-8", "replace").split("\n")
        if tail:
            if len(tail) > self._limit:
                return self._fail_after(lines, tail)
            pending.append(tail)
            self._pending_len = len(tail)
        return lines

    def _feed_str(self, data: str) -> list[str]:
        if self._cr and data[0] == "\n":
            data = data[1:]
            if not data:
                self._cr = False
                return []
        if "\r" in data:
            self._cr = data[-1] == "\r"
            data = data.replace("\r\n", "\n").replace("\r", "\n")
        else:
            self._cr = False
        end = data.rfind("\n")
        pending = self._pending_s
        if end < 0:
            self._hold(pending, data)
            return []
        region = data[:end]
        if pending:
            pending.append(region)
            region = "".join(pending)
        tail = data[end + 1 :]
        pending.clear()
        self._pending_len = 0
        lines = region.split("\n")
        if len(region) > self._limit:
            for i, line in enumerate(lines):
                if len(line) > self._limit:
                    return self._fail_after(lines[:i], line)
        if tail:
            if len(tail) > self._limit:
                return self._fail_after(lines, tail)
            pending.append(tail)
            self._pending_len = len(tail)
        return lines

    def _hold(self, pending: list[T], data: T) -> None:
        size = self._pending_len + len(data)
        if size > self._limit:
            # data[:0] is an empty str or bytes, whichever this stream carries.
            head = data[:0].join(pending) + data
            raise LineTooLongError(self._limit, head[: self._limit + 1])
        pending.append(data)
        self._pending_len = size

    def _fail_after(self, lines: list[str], line: str | bytes) -> list[str]:
        # Deliver the good lines before the over-long one, so the output up
        # to the error does not depend on how the input was chunked.
        error = LineTooLongError(self._limit, line[: self._limit + 1])
        if not lines:
            raise error
        self._error = error
        return lines
