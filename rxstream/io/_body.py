"""What a source does with each block of an accepted response body, sync or async alike.

`BodyReader` is the part of reading a body that is the same for both twins of
the read loop: cut lines (the core's `LineSplitter`), or pass raw bytes on;
redact credentials a server echoes; and notice a body that brings no stream
at all, which must end in an error rather than pass for an empty answer.

Input: the body's byte blocks as they arrive. Output: lines (`str`), or the
blocks themselves for a raw source.

Honest ends (`close()` raises `EmptyStreamError`, with the status, content
type and a redacted excerpt of the body's head):

- an empty body;
- an event-stream (or untyped) body without a single `data` line: only
  comments and blank lines (keep-alives), a JSON object (an error sent as
  `text/event-stream`), an HTML page with a stream's content type;
- an NDJSON body without a single non-blank line.

Watching for the first event costs one test per line until it is seen, and
nothing after; looking for echoed credentials costs one substring test per
block, and lines are rewritten only once one was found (from that block on:
a line is never handed out before its last byte has arrived).
"""

from __future__ import annotations

from ..core.lines import LineSplitter
from ..core.provider_errors import provider_message
from ..errors import EmptyStreamError, excerpt
from ._http import BodyKind, Credentials

__all__ = ["BodyReader"]

# How much of the body's head is kept to quote it in an error.
_HEAD = 800


class BodyReader:
    """Turn a response body's blocks into lines (or raw blocks), checking what arrives.

    Args:
        kind: what the content type says the body holds (None: no content type).
        raw: hand out the blocks as they are instead of lines.
        credentials: values to redact from the lines (never from raw bytes,
            which a checksum may cover).
        status_code, content_type: quoted by the errors.
        line_limit: the longest line (see `LineSplitter`).
    """

    __slots__ = (
        "_content_type",
        "_credentials",
        "_head",
        "_kind",
        "_overlap",
        "_raw",
        "_redacting",
        "_seen",
        "_size",
        "_splitter",
        "_status",
        "_tail",
    )

    def __init__(
        self,
        kind: BodyKind | None,
        *,
        raw: bool,
        credentials: Credentials,
        status_code: int,
        content_type: str | None,
        line_limit: int,
    ) -> None:
        self._kind = kind
        self._raw = raw
        self._credentials = credentials
        self._status = status_code
        self._content_type = content_type
        self._splitter = None if raw else LineSplitter(limit=line_limit)
        self._seen = False  # an event (or NDJSON line) has arrived
        self._head = b""
        self._size = 0
        self._redacting = False
        # The end of the previous block, so a credential split across two blocks is found.
        self._overlap = max(credentials.longest - 1, 0) if credentials and not raw else 0
        self._tail = b""

    def feed(self, block: bytes) -> list[str] | list[bytes]:
        """Take the next block of the body; return the lines it completes (or the block)."""
        if not block:
            return []
        if self._size < _HEAD:
            self._head += block[: _HEAD - self._size]
        self._size += len(block)
        if self._splitter is None:
            return [block]
        if self._overlap and not self._redacting:
            window = self._tail + block
            self._redacting = self._credentials.found_in(window)
            self._tail = window[-self._overlap :]
        lines = self._splitter.feed(block)
        if lines:
            if self._redacting:
                lines = [self._credentials.redact(line) for line in lines]
            if not self._seen:
                self._seen = self._any_event(lines)
        return lines

    def close(self) -> list[str] | list[bytes]:
        """End the body; return its unterminated last line, or raise if it held no stream.

        Raises:
            EmptyStreamError: the body brought no event (see the module docstring).
            LineTooLongError: the last line is over the limit.
        """
        if self._splitter is None:
            if not self._size:
                raise self._empty("an empty body")
            return []
        lines = self._splitter.close()
        if self._redacting:
            lines = [self._credentials.redact(line) for line in lines]
        if not self._seen and not self._any_event(lines):
            raise self._empty(self._what_arrived())
        return lines

    def _any_event(self, lines: list[str]) -> bool:
        if self._kind == "ndjson":
            return any(line.strip() for line in lines)
        if self._kind == "sse":
            return any(line.startswith("data") for line in lines)
        # No content type: either kind of stream will do.
        return any(line.startswith(("data", "{")) for line in lines)

    def _what_arrived(self) -> str:
        if not self._size:
            return "an empty body"
        text = self._head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        if not text:
            return "a body of blank lines only"
        if text.startswith(("{", "[")):
            message = provider_message(self._head) if self._size <= _HEAD else None
            what = "a JSON body instead of events"
            return f"{what} (error: {self._credentials.redact(message)})" if message else what
        if text.lstrip().startswith("<"):
            return "an HTML or XML page instead of events"
        if all(line.startswith(":") or not line.strip() for line in text.splitlines()):
            return "only comments and blank lines (keep-alives), no event"
        return "no event in the body"

    def _empty(self, reason: str) -> EmptyStreamError:
        body = self._head.decode("utf-8", "replace")
        return EmptyStreamError(
            reason,
            status_code=self._status,
            content_type=self._content_type,
            body=excerpt(self._credentials.redact(body)) if body.strip() else "",
        )
