"""Recordings on disk: what a file holds, how `--log` writes a stream, how `replay` reads it back.

Three wire kinds, told apart by a file's first bytes (`sniff`):

- `"eventstream"`: AWS event-stream messages (Bedrock), binary: the file
  starts with a 12-byte prelude whose CRC32 checks;
- `"ndjson"`: one JSON object per line (Ollama): the first non-blank line
  starts with `{`;
- `"sse"`: a server-sent event stream: anything else that is text.

What `--log FILE` writes is the stream itself, in its own wire format, so
`replay` (or any other tool) reads it as a recording of that provider:

- SSE: every frame as an event, each after a `: t=SECONDS` comment (ignored
  by any SSE parser) saying when it arrived, counted from the request;
- NDJSON: every non-blank line, as it arrived;
- event stream: every message, framed again with both checksums.

NDJSON and the event stream have no comments, so their times go to a sidecar
file, `FILE.timing`: a `#` header line, then one `OFFSET SECONDS` line per
item (the byte offset where it starts in FILE, the time it arrived). `replay`
reads the sidecar when it is there; without one a file plays at once, its
footer timed by the wall clock.
"""

from __future__ import annotations

import os
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

from ..core.dialects import WireKind, detect
from ..core.eventstream import EventStreamParser, encode_message
from ..core.lines import LineSplitter
from ..core.sse import SSEParser, event_text
from ..errors import StreamError
from ..models import EventStreamMessage, SSEFrame

__all__ = [
    "HEAD",
    "KIND_NAMES",
    "TIMING_SUFFIX",
    "WIRE",
    "Recording",
    "StreamLog",
    "first_dialect",
    "open_log",
    "sniff",
]

#: Each dialect's wire kind (what its renderer's `wire` says; written out so that
#: starting the command does not import every dialect).
WIRE: dict[str, WireKind] = {
    "openai-chat": "sse",
    "openai-responses": "sse",
    "anthropic": "sse",
    "gemini": "sse",
    "cohere": "sse",
    "ollama": "ndjson",
    "bedrock": "eventstream",
    "ai-sdk": "sse",
}

#: The wire kinds in words.
KIND_NAMES: dict[WireKind, str] = {
    "sse": "a server-sent event stream",
    "ndjson": "NDJSON lines",
    "eventstream": "an AWS event stream",
}

#: What the sidecar file of timings is called after its recording.
TIMING_SUFFIX = ".timing"

#: How much of a file `sniff` and `first_dialect` look at.
HEAD = 1 << 16

_PRELUDE = 12
_SSE_STAMP = re.compile(rb"^: t=(\d+(?:\.\d*)?)\r?\n?$")


def sniff(head: bytes) -> WireKind:
    """The wire kind of a recording, from its first bytes.

    Raises:
        ValueError: binary data that is no AWS event stream.

    >>> sniff(b'data: {}\\n\\n'), sniff(b'{"done": true}\\n')
    ('sse', 'ndjson')
    >>> from rxstream.core.eventstream import encode_message
    >>> sniff(encode_message({":event-type": "messageStop"}, b"{}"))
    'eventstream'
    """
    if len(head) >= _PRELUDE + 4:
        total, headers = int.from_bytes(head[0:4], "big"), int.from_bytes(head[4:8], "big")
        checksum = int.from_bytes(head[8:12], "big")
        if zlib.crc32(head[0:8]) == checksum and total >= 16 + headers:
            return "eventstream"
    if b"\x00" in head:
        raise ValueError(
            "binary data that is no AWS event stream (its first 12 bytes are no prelude "
            "whose checksum holds)"
        )
    text = head.decode("utf-8", "replace").removeprefix("\ufeff")
    for line in text.splitlines():
        if line.strip():
            return "ndjson" if line.lstrip().startswith("{") else "sse"
    return "sse"


def first_dialect(path: str, kind: WireKind) -> str | None:
    """The dialect of a recording's first item that tells (None: none in its head, or an error).

    The same `detect` that `rs.decode()` runs, on the core machines: a label
    for the title; the stream itself is decoded by `rs.decode(...)`.
    """
    with open(path, "rb") as file:
        head = file.read(HEAD)
    items: list[Any]
    try:
        if kind == "eventstream":
            items = EventStreamParser().feed(head)
        else:
            lines = LineSplitter().feed(head)
            if kind == "ndjson":
                items = lines
            else:
                parser = SSEParser()
                items = [frame for line in lines for frame in parser.feed(line)]
        for item in items:
            name = detect(item)
            if name is not None:
                return name
    except (StreamError, TypeError):
        return None
    return None


# --------------------------------------------------------------------------- logs


class StreamLog:
    """`--log FILE`: every wire item of a stream, in its wire format, with its time.

    Args:
        path: the file to write (a sidecar `path + TIMING_SUFFIX` too, for
            NDJSON and event streams).
        kind: the stream's wire kind.
    """

    def __init__(self, path: str, kind: WireKind) -> None:
        self.kind = kind
        self._offset = 0
        self._file: IO[bytes] = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._timing: IO[str] | None = None
        if kind != "sse":
            self._timing = open(path + TIMING_SUFFIX, "w", encoding="utf-8")  # noqa: SIM115
            name = os.path.basename(path)
            self._timing.write(
                f"# rxstream timing of {name}: one line per item, "
                "'<byte offset> <seconds since the request>'\n"
            )

    def write(self, item: SSEFrame | str | EventStreamMessage, at: float) -> None:
        """Write one wire item that arrived `at` seconds after the request."""
        match item:
            case SSEFrame(data=data, event=event, id=ident):
                text = f": t={at:.3f}\n" + event_text(data, event=event, id=ident)
                self._file.write(text.encode("utf-8"))
            case str() if item.strip():
                self._item((item + "\n").encode("utf-8"), at)
            case EventStreamMessage(headers=headers, payload=payload):
                self._item(encode_message(headers, payload), at)
        self._file.flush()

    def _item(self, data: bytes, at: float) -> None:
        assert self._timing is not None
        self._timing.write(f"{self._offset} {at:.3f}\n")
        self._timing.flush()
        self._file.write(data)
        self._offset += len(data)

    def close(self) -> None:
        """Close the file (and the sidecar)."""
        self._file.close()
        if self._timing is not None:
            self._timing.close()


def open_log(path: str | None, kind: WireKind) -> StreamLog | None:
    """A `StreamLog` for `path`, or None without one."""
    return StreamLog(path, kind) if path else None


# --------------------------------------------------------------------------- replay


class Recording:
    """A recording on disk, as pieces for a source, and the clock its timings keep.

    SSE files are read line by line and may hold `: t=SECONDS` stamps; NDJSON
    files line by line and event streams in blocks, timed by a sidecar
    `FILE.timing` when there is one. Played `paced`, each piece after a stamp
    waits until that moment (counted from the start of the replay); either
    way `clock()` returns the latest stamp read, so the footer shows the
    recorded timings, not how fast the file was read.

    Raises:
        ValueError: a sidecar line that is not `OFFSET SECONDS`.
    """

    #: The longest block handed out of an event stream without a stamp in it.
    BLOCK = 1 << 16

    def __init__(self, path: str, kind: WireKind, *, paced: bool) -> None:
        self.path = path
        self.kind = kind
        self.paced = paced
        self._stamps: list[tuple[int, float]] = []
        if kind == "sse":
            with open(path, "rb") as file:
                self.timed = any(_SSE_STAMP.match(line) for line in file)
        else:
            self._stamps = _read_timing(path + TIMING_SUFFIX)
            self.timed = bool(self._stamps)
        self._now = 0.0
        self._cancelled = threading.Event()
        self._monotonic: Callable[[], float] = time.monotonic
        self._wait: Callable[[float], bool] = self._cancelled.wait  # True: cancelled

    def clock(self) -> float:
        """The time of the latest stamp read (0 before the first)."""
        return self._now

    def cancel(self) -> None:
        """Stop waiting (the replay was interrupted or ended)."""
        self._cancelled.set()

    def pieces(self) -> Iterator[bytes]:
        """The file: lines (with their terminators) for SSE and NDJSON, blocks for an event stream.

        Lines are what `from_lines` wants (a binary file splits after each LF,
        so a CRLF stays together); blocks are cut at the sidecar's offsets, so
        each stamped message starts a block.
        """
        begun = self._monotonic()
        if self.kind == "sse":
            yield from self._sse_lines(begun)
            return
        stamps = iter(self._stamps)
        upcoming = next(stamps, None)
        offset = 0
        for piece in self._split():
            while upcoming is not None and upcoming[0] <= offset:
                if not self._reach(upcoming[1], begun):
                    return
                upcoming = next(stamps, None)
            yield piece
            offset += len(piece)

    def _sse_lines(self, begun: float) -> Iterator[bytes]:
        with open(self.path, "rb") as file:
            for line in file:
                stamp = _SSE_STAMP.match(line)
                if stamp is not None and not self._reach(float(stamp.group(1)), begun):
                    return
                yield line

    def _split(self) -> Iterator[bytes]:
        with open(self.path, "rb") as file:
            if self.kind == "ndjson":
                yield from file
                return
            cuts = [offset for offset, _ in self._stamps]
            at = 0
            for cut in [*cuts, None]:
                while cut is None or at < cut:
                    size = self.BLOCK if cut is None else min(self.BLOCK, cut - at)
                    block = file.read(size)
                    if not block:
                        return
                    yield block
                    at += len(block)

    def _reach(self, at: float, begun: float) -> bool:
        """Wait (when paced) until `at` seconds after `begun`; False: cancelled."""
        if self.paced:
            wait = begun + at - self._monotonic()
            if wait > 0 and self._wait(wait):
                return False
        self._now = max(self._now, at)
        return True


def _read_timing(path: str) -> list[tuple[int, float]]:
    if not os.path.isfile(path):
        return []
    stamps: list[tuple[int, float]] = []
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            offset, _, seconds = text.partition(" ")
            try:
                stamps.append((int(offset), float(seconds)))
            except ValueError:
                raise ValueError(
                    f"{path}, line {number}: expected '<byte offset> <seconds>', got {text[:80]!r}"
                ) from None
    stamps.sort()
    return stamps
