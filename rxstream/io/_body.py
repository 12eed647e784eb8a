"""What a source does with each block of a response body, sync or async alike.

`open_body(response, exchange, ...)` decides, from the status and content type
(`_http.accepted`), which of two readers takes the body; both are the part of
reading that is the same for the sync and the async twin of the read loop,
which only iterate and hand each block to `feed`, then call `close`:

- `BodyReader`, for a stream: cut lines (the core's `LineSplitter`), or pass
  the bytes on; redact credentials a server echoes; and notice a body that
  brings no stream at all, which must end in an error rather than pass for an
  empty answer.
- `_http.Refusal` (from `Exchange.refuse`), for anything else: collect a
  bounded head of the body and raise the `HTTPStatusError` /
  `UnexpectedContentTypeError` that quotes it.

What goes wrong while reading is mapped by the exchange (`Exchange.mapped`),
never here. Input: the body's byte blocks as they arrive. Output: lines
(`str`), or the blocks themselves for a source of bytes.

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

from typing import Any

from ..core.lines import LineSplitter
from ..core.provider_errors import provider_message
from ..errors import EmptyStreamError, LineTooLongError
from ._http import BodyKind, Exchange, Refusal, accepted, body_kind, header, request_of
from ._redact import raw_redactor

__all__ = ["BodyReader", "open_body"]


def open_body(
    response: Any, exchange: Exchange, *, binary: bool, line_limit: int
) -> BodyReader | Refusal:
    """The reader for `response`'s body: a `BodyReader` if it is a stream, else a `Refusal`."""
    exchange.learn(request_of(response))  # with what auth= added to it
    if not accepted(response, binary=binary):
        return exchange.refuse(response)
    content_type = header(response.headers, "content-type")
    return BodyReader(
        body_kind(content_type),
        binary=binary,
        exchange=exchange,
        status_code=response.status_code,
        content_type=content_type,
        line_limit=line_limit,
    )


# How much of the body's head is kept to quote it in an error.
_HEAD = 800


class BodyReader:
    """Turn a response body's blocks into lines (or hand the blocks on), checking what arrives.

    Args:
        kind: what the content type says the body holds (None: no content type).
        binary: hand out the blocks as they are instead of lines.
        exchange: the request's errors, and the credentials to redact from
            the lines (from the bytes of a binary body: `_redact`, which keeps
            checksums right).
        status_code, content_type: quoted by the errors.
        line_limit: the longest line (see `LineSplitter`).
    """

    __slots__ = (
        "_content_type",
        "_credentials",
        "_echoes",
        "_head",
        "_kind",
        "_overlap",
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
        binary: bool,
        exchange: Exchange,
        status_code: int,
        content_type: str | None,
        line_limit: int,
    ) -> None:
        credentials = exchange.credentials
        self._kind = kind
        self._credentials = credentials
        self._status = status_code
        self._content_type = credentials.redact(content_type) if content_type else content_type
        self._splitter = None if binary else LineSplitter(line_limit=line_limit)
        self._echoes = raw_redactor(credentials, kind) if binary else None
        self._seen = False  # an event (or NDJSON line) has arrived
        self._head = b""
        self._size = 0
        self._redacting = False
        # The end of the previous block, so a credential split across two blocks is found.
        self._overlap = max(credentials.longest - 1, 0) if credentials and not binary else 0
        self._tail = b""

    def feed(self, block: bytes) -> list[str] | list[bytes]:
        """Take the next block of the body; return the lines it completes (or the block)."""
        if not block:
            return []
        if self._size < _HEAD:
            self._head += block[: _HEAD - self._size]
        self._size += len(block)
        if self._splitter is None:
            return self._echoes.feed(block) if self._echoes else [block]
        if self._overlap and not self._redacting:
            window = self._tail + block
            self._redacting = self._credentials.found_in(window)
            self._tail = window[-self._overlap :]
        try:
            lines = self._splitter.feed(block)
        except LineTooLongError as exc:
            # Its message quotes the line's head, cut before it could be redacted.
            raise self._credentials.scrub(exc) from None
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
            return self._echoes.close() if self._echoes else []
        try:
            lines = self._splitter.close()
        except LineTooLongError as exc:
            raise self._credentials.scrub(exc) from None
        if self._redacting:
            # type(line) keeps the splitter's mark on a last line no line end
            # followed (`lines.Unterminated`): a decoder reports it as cut.
            lines = [type(line)(self._credentials.redact(line)) for line in lines]
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
            whole = self._size <= _HEAD
            redact = self._credentials.redact
            message = provider_message(redact(text)) if whole else None
            # Redacted again once decoded: what is shown is the provider's message.
            message = redact(message) if message else None
            what = "a JSON body instead of events"
            return f"{what} (error: {message})" if message else what
        if text.lstrip().startswith("<"):
            return "an HTML or XML page instead of events"
        if all(line.startswith(":") or not line.strip() for line in text.splitlines()):
            return "only comments and blank lines (keep-alives), no event"
        return "no event in the body"

    def _empty(self, reason: str) -> EmptyStreamError:
        whole = self._size <= _HEAD
        quoted = self._credentials.quote(self._head, complete=whole) if self._head.strip() else ""
        return EmptyStreamError(
            reason,
            status_code=self._status,
            content_type=self._content_type,
            body=quoted,
        )
