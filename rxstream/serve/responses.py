"""A Starlette (and FastAPI) response that streams an observable as server-sent events.

The response subscribes when the server starts sending it, encodes the items
as `rs.to_sse(dialect)` does (the same `SSEEncoder`: formats, ids, the closing
and error events) and writes the events as they come:

- headers: `text/event-stream`, `Cache-Control: no-cache`,
  `X-Accel-Buffering: no` (nginx and its kin pass each event on at once),
  and for `dialect="ai-sdk"` the AI SDK's `x-vercel-ai-ui-message-stream: v1`;
- `Last-Event-ID`: when the source is a function, it is called with the
  header's value (None without one), so a browser that reconnects resumes
  where it was (`lambda after: rs.from_redis_stream(redis, key, after=after,
  ids=True)`); a `ValueError` it raises is answered with status 400.
  A page that reloads opens a new `EventSource`, which cannot send the
  header: pass the id the page kept (e.g. from the URL's query) as
  `after=`, used when the request has no header (the header wins:
  the browser's own reconnects send it to the same URL, and it is newer);
- keep-alive comments while nothing was written for `keepalive` seconds.
  They are sent here, by the writer, not by a timer upstream: a keep-alive is
  due when the connection is idle, and one that queued behind a browser that
  reads nothing would only add to the server's memory. One timer per
  connection, re-armed only when it fires (a write just moves its deadline);
- cheap per event: the writer awaits its buffer directly, writes everything
  waiting in one `send`, and in the `"rxstream"` format each item is encoded
  once for all the connections a hub (`rs.multicast`) fans it out to;
- backpressure: items wait in a bounded buffer (`maxsize`), and the writer
  waits on the server's flow control; what a full buffer does is the
  connection's `overflow` policy. `"block"` (the default) pauses the source:
  a browser that never reads holds it (an rxstream source stops reading its
  provider) instead of piling events up in memory. Behind a hub the pause
  reaches no source (the other clients keep it going), so a server that
  fans one stream out to many clients chooses per client: `"latest"` drops
  the oldest waiting items and tells the client (a comment `: skipped <n>
  items; resume after <id>`, the id to resume from through Redis), `"error"`
  ends that client: what waits is written, then the format's error event for
  `BufferOverflowError`; a client that takes none of it within the grace
  period (`keepalive`, or 15 s) is cut off. Both log a warning
  (logger `rxstream.serve`) and keep memory bounded;
- disconnect: the server's `http.disconnect` is watched all along, so a
  browser that leaves is noticed at once, even while the source is silent;
  the subscription is then disposed, which closes the provider connection.
  With `keep_for_resume=True` the source instead runs on to its end
  (its items are dropped), so a generation that writes to Redis
  (`rs.to_redis_stream`) completes for the browser that comes back.

A synchronous source (an `httpx.Client`) must run on a thread pool (give it
`scheduler=ThreadPoolScheduler(...)`): subscribed on the event loop it would
block the loop, and the buffer bound could not hold.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from reactivex import Observable
from starlette.background import BackgroundTask
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from .._deprecate import deprecated_arguments
from ..core.dialects import AI_SDK
from ..core.dialects.ai_sdk import HEADERS as AI_SDK_HEADERS
from ..core.dialects.sse_encoder import SSEEncoder
from ..io.multicast import Overflow
from ..operators.timing import Duration, duration
from ._connection import Connection

__all__ = ["SSEResponse", "Source", "sse_response"]

log = logging.getLogger("rxstream.serve")

_OVERFLOWS = ("block", "latest", "error")

#: How long a client that overflowed with `overflow="error"` has to take its
#: last events when `keepalive` is None.
_GRACE = 15.0

#: What an `SSEResponse` streams: an observable, or a function of the `Last-Event-ID`
#: (None when the request has none) that returns one.
Source: TypeAlias = Observable[Any] | Callable[[str | None], Observable[Any]]

#: The headers every SSE response carries (a header given to the response overrides one).
DEFAULT_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

# Upstreams kept running for resumption after their browser left; referenced
# here so the loop does not collect them half-way.
_KEPT: set[asyncio.Task[None]] = set()


# The spellings of the first release (see the CHANGELOG's migration section).
_RENAMED = {"format": "dialect", "last_event_id": "after"}


class SSEResponse(Response):
    """Stream an observable's items as server-sent events (see `sse_response`)."""

    media_type = "text/event-stream"

    @deprecated_arguments(renamed=_RENAMED)
    def __init__(
        self,
        source: Source,
        *,
        dialect: str = "openai-chat",
        keepalive: Duration | None = 15.0,
        keep_for_resume: bool = False,
        maxsize: int = 64,
        overflow: Overflow = "block",
        retry: int | None = None,
        after: str | None = None,
        status_code: int = 200,
        headers: Mapping[str, str] | None = None,
        background: BackgroundTask | None = None,
        **options: Any,
    ) -> None:
        if overflow not in _OVERFLOWS:
            raise ValueError(f"overflow must be one of {_OVERFLOWS}, got {overflow!r}")
        if not (isinstance(source, Observable) or callable(source)):
            raise TypeError(
                "source must be an Observable or a function of the Last-Event-ID "
                f"returning one, got {type(source).__name__}"
            )
        if isinstance(maxsize, bool) or not isinstance(maxsize, int) or maxsize < 1:
            raise ValueError(f"maxsize must be an int of at least 1, got {maxsize!r}")
        if after is not None and not isinstance(after, str):
            raise TypeError(f"after must be a str, got {type(after).__name__}")
        self._after = after or None
        # Checks the dialect and the options now, in the handler, not mid-response;
        # the first call that resumes after nothing writes with it.
        self._checked: SSEEncoder | None = SSEEncoder(dialect, retry=retry, **options)
        self._source = source
        self._dialect = dialect
        self._keepalive = None if keepalive is None else duration(keepalive, "keepalive")
        self._keep = keep_for_resume
        self._maxsize = maxsize
        self._overflow: Overflow = overflow
        self._retry = retry
        self._options = options
        self.status_code = status_code
        self.background = background
        merged = dict(DEFAULT_HEADERS)
        if dialect == AI_SDK:
            merged.update(AI_SDK_HEADERS)  # what the `ai` package's own servers send
        for name, value in (headers or {}).items():
            for known in [k for k in merged if k.lower() == name.lower()]:
                del merged[known]
            merged[name] = value
        self.init_headers(merged)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        last_id = self._after
        try:
            if isinstance(self._source, Observable):
                observable = self._source
            else:
                last_id = _last_event_id(scope) or last_id
                observable = self._source(last_id)
            encoder, self._checked = self._checked, None
            if encoder is None or last_id is not None:
                encoder = SSEEncoder(
                    self._dialect, retry=self._retry, after=last_id, **self._options
                )
        except ValueError as exc:  # the Last-Event-ID refused, by the source or as an id
            await PlainTextResponse(str(exc), status_code=400)(scope, receive, send)
            return
        connection = Connection(
            observable,
            encoder,
            maxsize=self._maxsize,
            overflow=self._overflow,
            keepalive=self._keepalive,
        )
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        writer = asyncio.ensure_future(connection.write(send))
        listener = asyncio.ensure_future(_disconnect(receive))
        gone = True  # until the writer says otherwise
        try:
            first: set[asyncio.Future[Any]] = {writer, listener, connection.overflowed}
            await asyncio.wait(first, return_when=asyncio.FIRST_COMPLETED)
            if connection.overflowed.done() and not writer.done() and not listener.done():
                grace = _GRACE if self._keepalive is None else self._keepalive
                log.warning(
                    "an SSE client fell %d items behind (overflow='error'): ending its "
                    "response; it has %g s to take what waits and the error event",
                    self._maxsize,
                    grace,
                )
                await asyncio.wait({writer, listener}, timeout=grace)
                if not writer.done() and not listener.done():
                    log.warning(
                        "an SSE client took nothing for %g s after it fell behind: "
                        "cutting its connection",
                        grace,
                    )
            if writer.done():
                gone = False  # a mistake in the pipeline (raised here) ends it too
                gone = writer.result()
        finally:
            listener.cancel()
            writer.cancel()
            connection.detach()  # the response writes nothing more, by any task
            await asyncio.wait({writer, listener})
            if gone and self._keep:
                task = asyncio.ensure_future(_run_on(connection, self.background))
                _KEPT.add(task)
                task.add_done_callback(_KEPT.discard)
            else:
                connection.close()
                if self.background is not None:
                    await self.background()


@deprecated_arguments(renamed=_RENAMED)
def sse_response(
    source: Source,
    *,
    dialect: str = "openai-chat",
    keepalive: Duration | None = 15.0,
    keep_for_resume: bool = False,
    maxsize: int = 64,
    overflow: Overflow = "block",
    retry: int | None = None,
    after: str | None = None,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
    background: BackgroundTask | None = None,
    **options: Any,
) -> SSEResponse:
    """A streaming response that sends an observable's items as server-sent events.

    The items (deltas, `SSEFrame`s, `StreamEntry`s, or any item with
    `dialect="rxstream"`) are sent as `rs.to_sse(dialect)` sends them; the stream ends
    with the dialect's end marker, or with its error event when the source
    fails. See the module docstring for headers, `Last-Event-ID`,
    keep-alives, backpressure and disconnects.

    Args:
        source: an observable, or a function called with the request's
            `Last-Event-ID` (None without one) that returns the observable to
            send; raising `ValueError` there answers 400 with its message.
        dialect: the event format (see `rs.to_sse`). (Formerly `format=`,
            deprecated.)
        keepalive: seconds without a write before a keep-alive comment (None: none).
        keep_for_resume: when the client leaves, let the source run on to its
            end (dropping its items) instead of disposing it.
        maxsize: how many items may wait between the source and the socket.
        overflow: what a full buffer does for this client: `"block"` pauses
            the source (it holds for a source of its own, not behind a hub),
            `"latest"` drops the oldest waiting items and tells the client
            with a comment naming the id to resume after, `"error"` ends
            the client with the error event of `BufferOverflowError` (cut off
            if it takes nothing within `keepalive`, or 15 s); see the module
            docstring.
        retry: a reconnection delay for the browser, in milliseconds.
        after: the id to resume after when the request carries no
            `Last-Event-ID` header (a reloaded page's, from its URL): what the
            source function is called with then, and what the closing event
            repeats when no item follows it. (Formerly `last_event_id=`,
            deprecated.)
        status_code: the response status.
        headers: more headers (they override the defaults of the same name).
        background: a Starlette background task, run when the source is done
            (for a kept source, when it has run to its end).
        options: passed to the dialect's renderer (`model`, `id`, ...).

    Returns:
        A Starlette `Response` (FastAPI handlers return it as it is).

    Raises:
        ValueError: a bad dialect, option, `keepalive`, `maxsize` or `overflow`.
        TypeError: `source` is neither an observable nor a function, or
            `after` is not a str.

    Example (FastAPI; `generate` and `rs.from_redis_stream` as in the README)::

        @app.get("/chat/{key}")
        def chat(key: str) -> SSEResponse:
            return sse_response(
                lambda after: rs.from_redis_stream(redis, key, after=after, ids=True),
                dialect="rxstream",
            )

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> response = sse_response(reactivex.of(TextDelta("Hi")), dialect="rxstream")
    >>> response.headers["content-type"], response.headers["x-accel-buffering"]
    ('text/event-stream; charset=utf-8', 'no')
    """
    return SSEResponse(
        source,
        dialect=dialect,
        keepalive=keepalive,
        keep_for_resume=keep_for_resume,
        maxsize=maxsize,
        overflow=overflow,
        retry=retry,
        after=after,
        status_code=status_code,
        headers=headers,
        background=background,
        **options,
    )


async def _run_on(connection: Connection, background: BackgroundTask | None) -> None:
    """Let a kept source run to its end (its items dropped: the client left), then clean up."""
    try:
        await connection.drain()
    finally:
        connection.close()
        if background is not None:
            await background()


async def _disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


def _last_event_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"last-event-id":
            text: str = value.decode("latin-1")
            return text or None
    return None
