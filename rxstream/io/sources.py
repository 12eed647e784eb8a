"""Sources: an HTTP response, or an iterable of lines, as a cold observable.

Every subscription makes its own request (or iterates afresh) and pushes what
one read gave before it reads again (see `_loops`): it never reads ahead of
what downstream accepted, and a downstream that disposes (`take(n)`,
`decode_chunks` at `[DONE]`) stops the read loop at once.

- Sync clients and responses run on the given scheduler, by default
  reactivex's current-thread trampoline: `subscribe` returns when the stream
  has ended. Pass a `ThreadPoolScheduler` to run in the background.
- Async clients and responses run as a task on the running asyncio loop (or
  the loop of a given `AsyncIOScheduler`); they read only while the consumer
  asks for more (`rxstream._flow`).
- The response is closed when the stream ends, fails, or is disposed (from any
  thread); nothing is emitted after dispose.

What a source accepts and how it fails is decided at one boundary (`_http`):
a non-2xx status is `HTTPStatusError`, a content type that is not a stream is
`UnexpectedContentTypeError`, a 2xx body that holds no stream is
`EmptyStreamError`, a transport failure is `TransportError`; none of them
carries a credential of the request.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, overload

from reactivex import Observable, abc

from .._deprecate import warn_deprecated
from ..core.lines import DEFAULT_LIMIT, LineSplitter
from ..operators.wire import SourceWire, WireSource
from ._args import check_count
from ._http import (
    AsyncClient,
    AsyncResponse,
    Exchange,
    SyncClient,
    SyncResponse,
    check_header_values,
    request_of,
)
from ._loops import Handle, aread_body, async_source, connection_tracer, read_body, sync_source
from .limits import Admission, Ticket, ask_for, limited

__all__ = [
    "AsyncClient",
    "AsyncResponse",
    "BodyMode",
    "BuiltRequest",
    "SyncClient",
    "SyncResponse",
    "from_lines",
    "from_request",
    "from_response",
    "limited_request",
]

LineItem: TypeAlias = str | bytes | bytearray
T = TypeVar("T")

#: The key of `httpx.Request.extensions` where `rs.request` notes the request's dialect.
DIALECT_EXTENSION = "rxstream.dialect"

#: What a source hands out of a response body: its lines, or its blocks of bytes.
BodyMode: TypeAlias = Literal["lines", "bytes"]
_BODY_MODES = ("lines", "bytes")

# Keyword arguments that belong to `send()`, not to `build_request()`.
_SEND_KWARGS = ("auth", "follow_redirects")


class BuiltRequest(Protocol):
    """A request already built (`httpx.Request`, as `rs.request` returns), for `from_request`."""

    @property
    def method(self) -> str: ...  # pragma: no cover

    @property
    def url(self) -> Any: ...  # pragma: no cover

    @property
    def extensions(self) -> Any: ...  # pragma: no cover


@overload
def from_request(
    client: SyncClient | AsyncClient,
    method: BuiltRequest,
    /,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: None = None,
    limiter: Admission | None = None,
) -> Observable[Any]: ...


@overload
def from_request(
    client: SyncClient | AsyncClient,
    method: BuiltRequest,
    /,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: Literal["lines"],
    limiter: Admission | None = None,
) -> Observable[str]: ...


@overload
def from_request(
    client: SyncClient | AsyncClient,
    method: BuiltRequest,
    /,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: Literal["bytes"],
    limiter: Admission | None = None,
) -> Observable[bytes]: ...


@overload
def from_request(
    client: SyncClient | AsyncClient,
    method: str,
    url: Any,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: Literal["lines"] = "lines",
    raw: Literal[False] | None = None,
    limiter: Admission | None = None,
    **httpx_kwargs: Any,
) -> Observable[str]: ...


@overload
def from_request(
    client: SyncClient | AsyncClient,
    method: str,
    url: Any,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: Literal["bytes"],
    raw: bool | None = None,
    limiter: Admission | None = None,
    **httpx_kwargs: Any,
) -> Observable[bytes]: ...


@overload
def from_request(
    client: SyncClient | AsyncClient,
    method: str,
    url: Any,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: BodyMode = "lines",
    raw: Literal[True],
    limiter: Admission | None = None,
    **httpx_kwargs: Any,
) -> Observable[bytes]: ...


@overload
def from_request(
    client: SyncClient | AsyncClient,
    method: str,
    url: Any,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: BodyMode = "lines",
    raw: bool | None = None,
    limiter: Admission | None = None,
    **httpx_kwargs: Any,
) -> Observable[str] | Observable[bytes]: ...


def from_request(
    client: SyncClient | AsyncClient,
    method: str | BuiltRequest,
    url: Any = None,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: BodyMode | None = None,
    raw: bool | None = None,
    limiter: Admission | None = None,
    **httpx_kwargs: Any,
) -> Observable[Any]:
    """Make a streaming request per subscription and emit the body's lines.

    Also `from_request(client, request)` with a request already built (an
    `httpx.Request`, as `rs.request` returns): each subscription sends it as
    it is. A request built by `rs.request` knows its dialect, so the source
    hands out what that dialect's wire is made of, unless `body` says
    otherwise: lines for the SSE dialects and Ollama's NDJSON, the body's
    `bytes` for Bedrock's binary event stream. The source is labelled with
    that wire (`rxstream.operators.wire.WireSource`), so `rs.sse_frames()`
    lets what is not SSE through and `rs.decode()` adds the framing it needs:
    `from_request(client, request).pipe(rs.sse_frames(), rs.decode(dialect))`
    reads every dialect.

    Works with `httpx.Client` / `httpx.AsyncClient` and the `httpx2` fork's
    clients. The body is cut into lines at CRLF, LF or CR (`LineSplitter`).

    Args:
        client: a sync or async client; the request is built with
            `client.build_request(method, url, **httpx_kwargs)` and sent with
            `client.send(request, stream=True)`.
        method: the HTTP method, e.g. `"POST"`.
        url: the URL (relative to the client's `base_url` if it has one).
        scheduler: sync clients: where the read loop runs (default: the
            current thread; `subscribe` returns when the stream ends; not the
            `ImmediateScheduler`, which would recurse once per read). Async
            clients: an `AsyncIOScheduler` picks the loop (default: the
            running loop).
        line_limit: the longest line allowed, in bytes (default 1 MiB).
        body: `"lines"` (the default) cuts the body into lines; `"bytes"`
            emits the body's blocks as `bytes`, as they arrive (for binary
            formats: AWS Bedrock's event stream, read with
            `rs.eventstream_frames()`). Not given, a request built by
            `rs.request` gets its dialect's (`"bytes"` for Bedrock).
        raw: deprecated spelling of `body="bytes"` (`raw=True`); it works for
            one more release and warns (`DeprecationWarning`).
        limiter: a rate limiter shared with other requests (`rs.Limiter`,
            `rs.RedisLimiter`, or anything with `rxstream.io.limits.Admission`):
            each subscription waits for its admission before sending, reports
            the answer's status and rate-limit headers to it, and gives its
            slot back when the stream ends or is disposed (see
            `rxstream.io.limits.limited` for where a waiting stream starts).
        **httpx_kwargs: passed on (`json=`, `headers=`, `timeout=`, ...);
            `auth=` and `follow_redirects=` go to `send()`.

    Returns:
        A cold observable of lines (`str`, without terminators), or of `bytes`
        blocks with `body="bytes"` (or a Bedrock request's, see above).

    Raises:
        ValueError: `body` is neither `"lines"` nor `"bytes"`, it contradicts
            `raw`, or a header value in `headers=` holds a character that is
            not ASCII (the message names the header, never its value).

    Errors (via `on_error`):
        HTTPStatusError: a non-2xx status (`status_code`, `retry_after`,
            `provider_message`, a bounded excerpt of the body).
        UnexpectedContentTypeError: a 2xx answer that is not a stream (JSON,
            HTML, plain text), before any parsing.
        EmptyStreamError: a 2xx stream that brought no event at all (an empty
            body, only keep-alive comments, a JSON body sent as an event stream).
        TransportError: the connection failed, the client was closed (before
            or during the stream), or the event loop stopped under a running
            async stream; the message says what httpx reported and, for a
            closed client, how to keep it open (`await` the observable inside
            the `async with` block, or `rs.to_async_iterator`).
        TransportError: also a header value the client could not encode
            while sending (a non-ASCII character added by `auth=`); the
            message names the header, never its value.
        LineTooLongError: a line longer than `line_limit`.
        RuntimeError: an async client subscribed with no running event loop.

    An observer without `on_error`: a sync stream raises the error from
    `subscribe()` (reactivex's default, the stream runs inside it); an async
    stream, which runs after `subscribe()` returned, hands it to the event
    loop's exception handler (`loop.call_exception_handler`) at once, which
    by default logs it with its traceback. No error ends in silence.

    Credentials of the request (the `Authorization`, `api-key`, `x-api-key`,
    `x-goog-api-key` headers, HTTP Basic `auth=`, a key in the query string)
    never appear in an error: a server that echoes one back has it replaced
    by `[redacted]`, in the errors and in the lines themselves, and no error
    keeps the request (nor its headers) as a cause or context.

    Disposal: from any thread, at any time, also while `send()` still waits
    for the response headers (the socket is shut down, which wakes the read).

    Example:
        >>> with httpx.Client() as client:  # doctest: +SKIP
        ...     rs.from_request(client, "POST", url, json=payload).pipe(
        ...         rs.sse_frames(), rs.decode_chunks()
        ...     ).subscribe(print)
    """
    built: BuiltRequest | None = None
    verb = method if isinstance(method, str) else ""
    if not isinstance(method, str):
        if not (hasattr(method, "method") and hasattr(method, "url")) or url is not None:
            raise TypeError(
                "from_request takes (client, method, url, ...) or (client, request), "
                f"got a {type(method).__name__} as method"
            )
        if httpx_kwargs:
            raise TypeError(
                f"from_request(client, request) takes no request arguments; got "
                f"{', '.join(sorted(httpx_kwargs))} (build them into the request)"
            )
        built = method
    elif url is None:
        raise TypeError("from_request(client, method, url) needs a url")
    check_count("line_limit", line_limit)
    wire = _request_wire(built)
    if body is None and raw is None:
        body = "bytes" if wire == "eventstream" else "lines"
    binary = _binary("from_request", "lines" if body is None else body, raw)
    check_header_values(httpx_kwargs.get("headers"))
    send_kwargs = {key: httpx_kwargs.pop(key) for key in _SEND_KWARGS if key in httpx_kwargs}

    def build(exchange: Exchange) -> Any:
        # Inside the boundary: what build_request raises is mapped too.
        if built is not None:
            request: Any = built
        else:
            request = client.build_request(verb, url, **httpx_kwargs)
        exchange.learn(request)
        return request

    asynchronous = inspect.iscoroutinefunction(getattr(client, "send", None))

    def source(ticket: Ticket | None) -> Observable[Any]:
        if asynchronous:
            return _async_request_source(
                client, build, send_kwargs, ticket, binary, line_limit, scheduler
            )
        return _sync_request_source(
            client, build, send_kwargs, ticket, binary, line_limit, scheduler
        )

    if limiter is None:
        return _labelled(source(None), wire, binary)
    if built is not None:
        ask = ask_for(built.url, getattr(built, "content", None))
    else:
        ask = ask_for(url, httpx_kwargs.get("json", httpx_kwargs.get("content")))
    gated = limited(source, limiter, ask, asynchronous=asynchronous, scheduler=scheduler)
    return _labelled(gated, wire, binary)


def limited_request(
    client: SyncClient | AsyncClient,
    request: BuiltRequest,
    limiter: Admission,
    then: Callable[[Observable[Any]], Observable[T]],
    *,
    scheduler: abc.SchedulerBase | None,
    line_limit: int,
    body: BodyMode,
) -> Observable[T]:
    """A built request's source under `limiter`, with `then` (the decoding) inside the gate.

    What `rs.chat(..., limiter=)` runs: as `from_request(client, request,
    limiter=limiter).pipe(then)`, except that the gate sees the decoded
    items, so the answer's `Usage` corrects the token estimate.
    """
    asynchronous = inspect.iscoroutinefunction(getattr(client, "send", None))
    binary = body == "bytes"

    def build(exchange: Exchange) -> Any:
        exchange.learn(request)
        return request

    def source(ticket: Ticket) -> Observable[T]:
        make = _async_request_source if asynchronous else _sync_request_source
        return then(make(client, build, {}, ticket, binary, line_limit, scheduler))

    ask = ask_for(request.url, getattr(request, "content", None))
    return limited(source, limiter, ask, asynchronous=asynchronous, scheduler=scheduler)


def _answered(ticket: Ticket | None, response: SyncResponse | AsyncResponse) -> None:
    if ticket is not None:
        ticket.answered(response.status_code, response.headers)


def _async_request_source(
    client: Any,
    build: Callable[[Exchange], Any],
    send_kwargs: dict[str, Any],
    ticket: Ticket | None,
    binary: bool,
    line_limit: int,
    scheduler: abc.SchedulerBase | None,
) -> Observable[Any]:
    async_client: AsyncClient = client

    def aread(handle: Handle) -> AsyncIterator[list[Any]]:
        exchange = Exchange(client=client)

        async def send() -> AsyncResponse:
            request = build(exchange)
            response = await async_client.send(request, stream=True, **send_kwargs)
            _answered(ticket, response)
            return response

        # The body's reader itself: no generator of ours between it and the loop.
        return aread_body(send, exchange, handle, binary=binary, line_limit=line_limit)

    return async_source(aread, scheduler)


def _sync_request_source(
    client: Any,
    build: Callable[[Exchange], Any],
    send_kwargs: dict[str, Any],
    ticket: Ticket | None,
    binary: bool,
    line_limit: int,
    scheduler: abc.SchedulerBase | None,
) -> Observable[Any]:
    sync_client: SyncClient = client

    def read(handle: Handle) -> Iterator[list[Any]]:
        exchange = Exchange(client=client)

        def send() -> SyncResponse:
            request = build(exchange)
            extensions = getattr(request, "extensions", None)
            if isinstance(extensions, dict):
                # Lets a dispose reach the socket while send() still waits for the headers.
                # The tracer goes on a copy: the caller's request (sent again by a
                # second subscription, maybe at the same time) keeps its own extensions.
                traced = {**extensions, "trace": connection_tracer(handle, extensions.get("trace"))}
                request = _with_extensions(request, traced)
            response = sync_client.send(request, stream=True, **send_kwargs)
            _answered(ticket, response)
            return response

        yield from read_body(send, exchange, handle, binary=binary, line_limit=line_limit)

    return sync_source(read, scheduler)


def _request_wire(request: BuiltRequest | None) -> SourceWire | None:
    """The wire of the dialect `rs.request` built `request` for (None: not one of its requests)."""
    extensions = getattr(request, "extensions", None)
    dialect = extensions.get(DIALECT_EXTENSION) if isinstance(extensions, dict) else None
    if not isinstance(dialect, str):
        return None
    from .requests import ENDPOINTS  # deferred: requests builds on this module

    endpoint = ENDPOINTS.get(dialect)
    return None if endpoint is None else endpoint.wire


def _labelled(source: Observable[Any], wire: SourceWire | None, binary: bool) -> Observable[Any]:
    """`source` labelled with its wire when its items are that wire's own (lines, or bytes)."""
    if wire is None or binary != (wire == "eventstream"):
        return source
    return WireSource(source, wire)


def _with_extensions(request: Any, extensions: dict[str, Any]) -> Any:
    """A shallow copy of an httpx `Request` with other `extensions` (same body stream).

    `copy.copy` would not do: a `Request` pickles without its stream.
    """
    clone = object.__new__(type(request))
    clone.__dict__.update(vars(request))
    clone.extensions = extensions
    return clone


@overload
def from_response(
    response: SyncResponse | AsyncResponse,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: Literal["lines"] = "lines",
    raw: Literal[False] | None = None,
) -> Observable[str]: ...


@overload
def from_response(
    response: SyncResponse | AsyncResponse,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: Literal["bytes"],
    raw: bool | None = None,
) -> Observable[bytes]: ...


@overload
def from_response(
    response: SyncResponse | AsyncResponse,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: BodyMode = "lines",
    raw: Literal[True],
) -> Observable[bytes]: ...


@overload
def from_response(
    response: SyncResponse | AsyncResponse,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: BodyMode = "lines",
    raw: bool | None = None,
) -> Observable[str] | Observable[bytes]: ...


def from_response(
    response: SyncResponse | AsyncResponse,
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    body: BodyMode = "lines",
    raw: bool | None = None,
) -> Observable[str] | Observable[bytes]:
    """Emit the lines of an already opened streaming response (sync or async).

    The observable takes over the response: it checks the status and content
    type first (as `from_request` does) and closes the response at the end,
    on error and on dispose. A response can be read once, so only the first
    subscription reads it; a later one fails with `RuntimeError`.

    This is how to keep a provider SDK for the request and hand its raw
    streaming response to rxstream, e.g. the openai SDK's
    `client.chat.completions.with_streaming_response.create(...)`, whose
    `.http_response` is an httpx (or httpx2) response.

    Args:
        response: e.g. from `client.send(request, stream=True)`; an async
            response (from an `AsyncClient`) is read on the event loop.
        scheduler: as for `from_request`.
        line_limit: the longest line allowed, in bytes (default 1 MiB).
        body: `"lines"` (the default), or `"bytes"`: the body's blocks as
            they arrive (see `from_request`).
        raw: deprecated spelling of `body="bytes"` (warns).

    Returns:
        An observable of lines (`str`, without terminators), or of `bytes`.

    Raises:
        ValueError: `body` is neither `"lines"` nor `"bytes"`, or contradicts `raw`.

    Errors (via `on_error`): as for `from_request`.

    Example:
        >>> request = client.build_request("POST", url, json=payload)  # doctest: +SKIP
        >>> rs.from_response(client.send(request, stream=True)).subscribe(print)  # doctest: +SKIP
    """
    check_count("line_limit", line_limit)
    binary = _binary("from_response", body, raw)
    taken = False

    def take() -> None:
        nonlocal taken
        if taken:
            raise RuntimeError(
                "from_response reads its response once; this observable was already "
                "subscribed (use from_request for a fresh request per subscription, "
                "or rs.multicast to fan one response out)"
            )
        taken = True

    exchange = Exchange(request_of(response))
    if _is_async_response(response):
        async_response: AsyncResponse = response  # type: ignore[assignment]

        async def aopen() -> AsyncResponse:
            take()
            return async_response

        def aread(handle: Handle) -> AsyncIterator[list[Any]]:
            return aread_body(aopen, exchange, handle, binary=binary, line_limit=line_limit)

        return async_source(aread, scheduler)

    sync_response: SyncResponse = response  # type: ignore[assignment]

    def open_() -> SyncResponse:
        take()
        return sync_response

    def read(handle: Handle) -> Iterator[list[Any]]:
        yield from read_body(open_, exchange, handle, binary=binary, line_limit=line_limit)

    return sync_source(read, scheduler)


def from_lines(
    lines: Iterable[LineItem] | AsyncIterable[LineItem],
    *,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
) -> Observable[str]:
    """Emit the lines of an iterable (or async iterable) of `str` / `bytes` items.

    Each item holds one or more whole lines: it is split at CRLF, LF or CR, and
    a terminator at its end is optional, so both `open(path)` and
    `["data: x", ""]` work (`""` is a blank line). Bytes are decoded as UTF-8
    (invalid bytes become U+FFFD); a BOM at the very start is dropped. One
    stream holds one type of item (all `str` or all `bytes`). Arbitrary
    chunks, cut anywhere, go through `rs.lines()` instead.

    Each subscription iterates afresh (`iter()` / `aiter()`); the iterator is
    closed (`close()` / `aclose()`, if it has one) when the stream ends or is
    disposed, so a generator's `finally` runs and an open file is closed.

    Args:
        lines: an iterable (list, generator, open file) or async iterable.
        scheduler: sync iterables: where the loop runs (default: the current
            thread). Async iterables: an `AsyncIOScheduler` picks the loop.
        line_limit: the longest line allowed (bytes, or characters for `str`).

    Returns:
        An observable of lines (`str`, without terminators).

    Raises:
        TypeError: `lines` is a `str`/`bytes` (wrap it in a list) or not iterable.

    Example:
        >>> rs.from_lines(["data: a\\n\\ndata: b", ""]).subscribe(print)  # doctest: +SKIP
        data: a
        <BLANKLINE>
        data: b
        <BLANKLINE>

    Marbles: `-"a\\nb"-"c"-|` -> `-a-b-c-|`
    """
    check_count("line_limit", line_limit)
    if isinstance(lines, str | bytes | bytearray):
        raise TypeError(
            f"from_lines takes an iterable of lines, got a {type(lines).__name__}; "
            "wrap it in a list: from_lines([text])"
        )
    if isinstance(lines, AsyncIterable):
        source_a: AsyncIterable[LineItem] = lines

        async def aread(handle: Handle) -> AsyncIterator[list[str]]:
            iterator = aiter(source_a)
            handle.attach_async(iterator)
            splitter = LineSplitter(line_limit=line_limit)
            async for item in iterator:
                yield splitter.feed_lines(_item(item))

        return async_source(aread, scheduler)
    if not isinstance(lines, Iterable):
        raise TypeError(f"from_lines takes an iterable of lines, got {type(lines).__name__}")
    source_s: Iterable[LineItem] = lines

    def read(handle: Handle) -> Iterator[list[str]]:
        iterator = iter(source_s)
        handle.attach(iterator)
        splitter = LineSplitter(line_limit=line_limit)
        for item in iterator:
            yield splitter.feed_lines(_item(item))

    return sync_source(read, scheduler)


def _binary(where: str, body: object, raw: bool | None) -> bool:
    """Whether the source hands out bytes: `body`, or the deprecated `raw` (which warns).

    `raw=` was renamed because `.raw` on items means what the provider sent;
    the old spelling keeps working for one release.
    """
    if body not in _BODY_MODES:
        raise ValueError(f'{where}: body must be "lines" or "bytes", got {body!r}')
    if raw is None:
        return body == "bytes"
    new = '"bytes"' if raw else '"lines"'
    # `.raw` on items is what the provider sent, not the body's bytes: hence the new name.
    warn_deprecated(f"raw={raw!r}", f"body={new}", where=f"{where}()", stacklevel=3)
    if not raw and body == "bytes":
        raise ValueError(f'{where}: raw=False contradicts body="bytes"; pass body only')
    return bool(raw) or body == "bytes"


def _item(item: object) -> LineItem:
    if not isinstance(item, str | bytes | bytearray):
        raise TypeError(f"from_lines items must be str or bytes, got {type(item).__name__}")
    return item


def _is_async_response(response: object) -> bool:
    # httpx responses have both iter_bytes and aiter_bytes; the stream a client
    # attached tells which one works.
    stream = getattr(response, "stream", None)
    if stream is not None:
        if isinstance(stream, Iterable):
            return False
        if isinstance(stream, AsyncIterable):
            return True
    return not hasattr(response, "iter_bytes") and hasattr(response, "aiter_bytes")
