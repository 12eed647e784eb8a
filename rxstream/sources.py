"""Sources: an HTTP response, or an iterable of lines, as a cold `Observable[str]` of lines.

Every subscription makes its own request (or iterates afresh) and pushes one
line at a time. A source reads one chunk, pushes the lines it completes, checks
whether it was disposed, and only then asks its scheduler for the next read, so
it never reads ahead of what downstream accepted and a downstream that disposes
(`take(n)`, `decode_chunks` at `[DONE]`) stops the read loop at once.

- Sync clients and responses run on the given scheduler, by default
  reactivex's `CurrentThreadScheduler` (a trampoline): `subscribe` returns
  when the stream has ended, and downstream disposables are wired before the
  first read. Pass a `ThreadPoolScheduler` to run in the background.
- Async clients and responses run as a task on the running asyncio loop (or
  the loop of a given `AsyncIOScheduler`); they await the bridge's demand
  (`rxstream._demand`) before each read and each line, and yield to the loop
  after each read, so hundreds of streams in one loop interleave fairly.
- The response is closed when the stream ends, fails, or is disposed (from any
  thread); nothing is emitted after dispose.

Clients and responses are typed as small protocols, so `httpx` and the `httpx2`
fork both fit; neither is imported here (their exception classes are looked up
in `sys.modules`: an exception of a library can only arrive if it was imported).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import inspect
import json
import re
import socket
import sys
import threading
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol, TypeAlias
from urllib.parse import urlsplit, urlunsplit

from reactivex import Observable, abc
from reactivex.disposable import Disposable
from reactivex.scheduler import CurrentThreadScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler

from ._demand import Demand, current_demand
from .core.lines import DEFAULT_LIMIT, LineAfterBOM, LineSplitter
from .errors import (
    HTTPStatusError,
    LineTooLongError,
    StreamError,
    TransportError,
    UnexpectedContentTypeError,
    excerpt,
)

__all__ = [
    "AsyncClient",
    "AsyncResponse",
    "SyncClient",
    "SyncResponse",
    "from_lines",
    "from_request",
    "from_response",
]

#: How much of a non-2xx (or JSON) body is read to quote it in the error.
ERROR_BODY_LIMIT = 65_536


class SyncResponse(Protocol):
    """What a source needs of an opened, streaming sync response (`httpx.Response`)."""

    @property
    def status_code(self) -> int: ...  # pragma: no cover

    @property
    def headers(self) -> Mapping[str, str]: ...  # pragma: no cover

    def iter_bytes(self) -> Iterator[bytes]: ...  # pragma: no cover

    def close(self) -> None: ...  # pragma: no cover


class AsyncResponse(Protocol):
    """What a source needs of an opened, streaming async response."""

    @property
    def status_code(self) -> int: ...  # pragma: no cover

    @property
    def headers(self) -> Mapping[str, str]: ...  # pragma: no cover

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...  # pragma: no cover

    async def aclose(self) -> None: ...  # pragma: no cover


class SyncClient(Protocol):
    """What `from_request` needs of a sync client (`httpx.Client`, `httpx2.Client`)."""

    def build_request(
        self, method: str, url: Any, *args: Any, **kwargs: Any
    ) -> Any: ...  # pragma: no cover

    def send(self, request: Any, *args: Any, **kwargs: Any) -> SyncResponse: ...  # pragma: no cover


class AsyncClient(Protocol):
    """What `from_request` needs of an async client (`httpx.AsyncClient`, `httpx2.AsyncClient`)."""

    def build_request(
        self, method: str, url: Any, *args: Any, **kwargs: Any
    ) -> Any: ...  # pragma: no cover

    async def send(
        self, request: Any, *args: Any, **kwargs: Any
    ) -> AsyncResponse: ...  # pragma: no cover


Lines: TypeAlias = Observable[str]
LineItem: TypeAlias = str | bytes | bytearray

# Keyword arguments that belong to `send()`, not to `build_request()`.
_SEND_KWARGS = ("auth", "follow_redirects")


# --------------------------------------------------------------------------- public


def from_request(
    client: SyncClient | AsyncClient,
    method: str,
    url: Any,
    *,
    scheduler: abc.SchedulerBase | None = None,
    **httpx_kwargs: Any,
) -> Observable[str]:
    """Make a streaming request per subscription and emit the body's lines.

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
        **httpx_kwargs: passed on (`json=`, `headers=`, `timeout=`, ...);
            `auth=` and `follow_redirects=` go to `send()`.

    Returns:
        A cold observable of lines (`str`, without terminators).

    Errors (via `on_error`):
        HTTPStatusError: a non-2xx status (`status_code`, `retry_after`,
            `provider_message`, a bounded excerpt of the body).
        UnexpectedContentTypeError: a 2xx JSON answer instead of a stream.
        TransportError: the connection failed; the httpx error is `__cause__`.
        LineTooLongError: a line longer than 1 MiB.
        RuntimeError: an async client subscribed with no running event loop.

    Example:
        >>> with httpx.Client() as client:  # doctest: +SKIP
        ...     rs.from_request(client, "POST", url, json=payload).pipe(
        ...         rs.sse_frames(), rs.decode_chunks()
        ...     ).subscribe(print)
    """
    if not isinstance(method, str):
        raise TypeError(f"method must be a str such as 'POST', got {type(method).__name__}")
    send_kwargs = {key: httpx_kwargs.pop(key) for key in _SEND_KWARGS if key in httpx_kwargs}

    if inspect.iscoroutinefunction(getattr(client, "send", None)):
        async_client: AsyncClient = client  # type: ignore[assignment]

        async def aread(handle: _Handle) -> AsyncIterator[list[str]]:
            request = async_client.build_request(method, url, **httpx_kwargs)
            where = _describe(request)
            try:
                response = await async_client.send(request, stream=True, **send_kwargs)
            except Exception as exc:
                error = _as_transport_error(exc, where)
                if error is None:
                    raise
                raise error from exc
            async for lines in _aread_response(response, handle, where):
                yield lines

        return _async_source(aread, scheduler)

    sync_client: SyncClient = client  # type: ignore[assignment]

    def read(handle: _Handle) -> Iterator[list[str]]:
        request = sync_client.build_request(method, url, **httpx_kwargs)
        where = _describe(request)
        try:
            response = sync_client.send(request, stream=True, **send_kwargs)
        except Exception as exc:
            error = _as_transport_error(exc, where)
            if error is None:
                raise
            raise error from exc
        yield from _read_response(response, handle, where)

    return _sync_source(read, scheduler)


def from_response(
    response: SyncResponse | AsyncResponse,
    *,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[str]:
    """Emit the lines of an already opened streaming response (sync or async).

    The observable takes over the response: it checks the status and content
    type first (as `from_request` does) and closes the response at the end,
    on error and on dispose. A response can be read once, so only the first
    subscription reads it; a later one fails with `RuntimeError`.

    Args:
        response: e.g. from `client.send(request, stream=True)`; an async
            response (from an `AsyncClient`) is read on the event loop.
        scheduler: as for `from_request`.

    Returns:
        An observable of lines (`str`, without terminators).

    Example:
        >>> request = client.build_request("POST", url, json=payload)  # doctest: +SKIP
        >>> rs.from_response(client.send(request, stream=True)).subscribe(print)
    """
    taken = False

    def take() -> None:
        nonlocal taken
        if taken:
            raise RuntimeError(
                "from_response reads its response once; this observable was already "
                "subscribed (use from_request for a fresh request per subscription, "
                "or share() to fan one response out)"
            )
        taken = True

    where = _describe(_request_of(response))
    if _is_async_response(response):
        async_response: AsyncResponse = response  # type: ignore[assignment]

        async def aread(handle: _Handle) -> AsyncIterator[list[str]]:
            take()
            async for lines in _aread_response(async_response, handle, where):
                yield lines

        return _async_source(aread, scheduler)

    sync_response: SyncResponse = response  # type: ignore[assignment]

    def read(handle: _Handle) -> Iterator[list[str]]:
        take()
        yield from _read_response(sync_response, handle, where)

    return _sync_source(read, scheduler)


def from_lines(
    lines: Iterable[LineItem] | AsyncIterable[LineItem],
    *,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[str]:
    """Emit the lines of an iterable (or async iterable) of `str` / `bytes` items.

    Each item holds one or more whole lines: it is split at CRLF, LF or CR, and
    a terminator at its end is optional, so both `open(path)` and
    `["data: x", ""]` work (`""` is a blank line). Bytes are decoded as UTF-8
    (invalid bytes become U+FFFD); a BOM at the very start is dropped.

    Each subscription iterates afresh (`iter()` / `aiter()`); the iterator is
    closed (`close()` / `aclose()`, if it has one) when the stream ends or is
    disposed, so a generator's `finally` runs and an open file is closed.

    Args:
        lines: an iterable (list, generator, open file) or async iterable.
        scheduler: sync iterables: where the loop runs (default: the current
            thread). Async iterables: an `AsyncIOScheduler` picks the loop.

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
    if isinstance(lines, str | bytes | bytearray):
        raise TypeError(
            f"from_lines takes an iterable of lines, got a {type(lines).__name__}; "
            "wrap it in a list: from_lines([text])"
        )
    if isinstance(lines, AsyncIterable):
        source_a: AsyncIterable[LineItem] = lines

        async def aread(handle: _Handle) -> AsyncIterator[list[str]]:
            iterator = aiter(source_a)
            handle.attach_async(iterator)
            cut = _ItemSplitter()
            async for item in iterator:
                yield cut.split(item)

        return _async_source(aread, scheduler)
    if not isinstance(lines, Iterable):
        raise TypeError(f"from_lines takes an iterable of lines, got {type(lines).__name__}")
    source_s: Iterable[LineItem] = lines

    def read(handle: _Handle) -> Iterator[list[str]]:
        iterator = iter(source_s)
        handle.attach(iterator)
        cut = _ItemSplitter()
        for item in iterator:
            yield cut.split(item)

    return _sync_source(read, scheduler)


# --------------------------------------------------------------------------- drivers


class _Handle:
    """What one subscription holds open, closed once from whichever side gets there first."""

    def __init__(self) -> None:
        self.disposed = False
        self.reading = False
        self._lock = threading.Lock()
        self._closed = False
        self._resources: list[Any] = []
        self._async_resources: list[Any] = []

    def attach(self, resource: Any) -> None:
        """Own `resource` (something with `close()`); close it now if already disposed."""
        with self._lock:
            if not self._closed:
                self._resources.append(resource)
                return
        _close_quietly(resource)

    def attach_async(self, resource: Any) -> None:
        """Own `resource` (something with `aclose()` or `close()`)."""
        with self._lock:
            self._async_resources.append(resource)

    def close(self) -> None:
        """Close the sync resources (idempotent, any thread)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            resources, self._resources = self._resources, []
        for resource in reversed(resources):
            _close_quietly(resource)

    async def aclose(self) -> None:
        """Close everything, awaiting async closers."""
        resources, self._async_resources = self._async_resources, []
        for resource in reversed(resources):
            with contextlib.suppress(Exception):
                closer = getattr(resource, "aclose", None)
                if closer is not None:
                    await closer()
                else:
                    _close_quietly(resource)
        self.close()

    def interrupt(self) -> None:
        """Unblock a read in progress on another thread by shutting its socket down.

        Closing a socket does not wake a thread blocked in `recv` on it;
        `shutdown` does. Only httpx-like responses expose their socket.
        """
        with self._lock:
            resources = list(self._resources)
        for resource in resources:
            sock = _socket_of(resource)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def _sync_source(
    make_reader: Callable[[_Handle], Iterator[list[str]]],
    scheduler: abc.SchedulerBase | None,
) -> Observable[str]:
    def subscribe(
        observer: abc.ObserverBase[str], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        sched = scheduler or scheduler_ or CurrentThreadScheduler.singleton()
        handle = _Handle()
        reader: Iterator[list[str]] | None = None
        reader_thread: int | None = None

        def finish() -> None:
            handle.close()
            if reader is not None:
                with contextlib.suppress(Exception):
                    reader.close()  # type: ignore[attr-defined]

        def step(_: abc.SchedulerBase, __: Any = None) -> None:
            nonlocal reader, reader_thread
            if handle.disposed:
                finish()
                return
            try:
                if reader is None:
                    reader = make_reader(handle)
                handle.reading = True
                reader_thread = threading.get_ident()
                try:
                    lines = next(reader, None)
                finally:
                    handle.reading = False
                if lines is not None:
                    for line in lines:
                        if handle.disposed:
                            break
                        observer.on_next(line)
                    if handle.disposed:
                        finish()
                    else:
                        sched.schedule(step)
                    return
            except Exception as exc:
                finish()
                if not handle.disposed:
                    observer.on_error(exc)
                return
            finish()
            if not handle.disposed:
                observer.on_completed()

        def dispose() -> None:
            handle.disposed = True
            if handle.reading and reader_thread != threading.get_ident():
                handle.interrupt()
            # Closing from the disposing thread is what ends a read blocked elsewhere.
            handle.close()

        sched.schedule(step)
        return Disposable(dispose)

    return Observable(subscribe)


_RUNNING: set[Any] = set()


def _async_source(
    make_reader: Callable[[_Handle], AsyncIterator[list[str]]],
    scheduler: abc.SchedulerBase | None,
) -> Observable[str]:
    def subscribe(
        observer: abc.ObserverBase[str], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        loop = _loop_for(scheduler or scheduler_)
        demand = current_demand()
        handle = _Handle()
        task: Any = None
        cancel: Callable[[], object] = _nothing
        inner: asyncio.Task[Any] | None = None
        finishing = False

        async def run() -> None:
            nonlocal inner, finishing
            inner = asyncio.current_task()
            reader = make_reader(handle)
            error: Exception | None = None
            try:
                while True:
                    await _wait(demand)
                    if handle.disposed:
                        return
                    lines = await anext(reader, None)
                    if lines is None:
                        break
                    for line in lines:
                        await _wait(demand)
                        if handle.disposed:
                            return
                        observer.on_next(line)
                    if handle.disposed:
                        return
                    # A read that finds its data already buffered returns without
                    # suspending: yield once per read, so one fast stream cannot
                    # starve the other tasks of the loop.
                    await asyncio.sleep(0)
            except Exception as exc:
                error = exc
            finally:
                finishing = True
                with contextlib.suppress(Exception):
                    await reader.aclose()  # type: ignore[attr-defined]
                await handle.aclose()
            if handle.disposed:
                return
            if error is not None:
                observer.on_error(error)
            else:
                observer.on_completed()

        def dispose() -> None:
            handle.disposed = True
            if finishing or task is None:
                return
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                # Disposed from inside its own task (e.g. at [DONE]): the flag stops
                # the loop; cancelling would interrupt closing the response.
                if asyncio.current_task() is not inner:
                    cancel()
            elif not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(cancel)

        try:
            running_here = asyncio.get_running_loop() is loop
        except RuntimeError:
            running_here = False
        if running_here:
            task = loop.create_task(run())
            cancel = task.cancel
        else:
            future = asyncio.run_coroutine_threadsafe(run(), loop)
            cancel = future.cancel  # thread-safe, unlike Task.cancel
            task = future
        # asyncio keeps only weak references to tasks: hold this one until it ends.
        _RUNNING.add(task)
        task.add_done_callback(_RUNNING.discard)
        return Disposable(dispose)

    return Observable(subscribe)


def _nothing() -> None:
    return None


async def _wait(demand: Demand | None) -> None:
    if demand is not None:
        await demand.wait()


def _loop_for(scheduler: abc.SchedulerBase | None) -> asyncio.AbstractEventLoop:
    if isinstance(scheduler, AsyncIOScheduler):
        loop: asyncio.AbstractEventLoop = scheduler._loop
        return loop
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "an async client or response needs a running asyncio event loop: subscribe "
            "inside a coroutine (or pass scheduler=AsyncIOScheduler(loop)), or use a sync client"
        ) from None


# --------------------------------------------------------------------------- responses


def _read_response(response: SyncResponse, handle: _Handle, where: str) -> Iterator[list[str]]:
    handle.attach(response)
    try:
        status, content_type = response.status_code, _header(response.headers, "content-type")
        if not 200 <= status < 300 or _is_json(content_type):
            body = bytearray()
            with contextlib.suppress(*_transport_types()):
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) >= ERROR_BODY_LIMIT:
                        break
            raise _status_error(response, bytes(body[:ERROR_BODY_LIMIT]), where)
        splitter = LineSplitter()
        for chunk in response.iter_bytes():
            yield splitter.feed(chunk)
        yield splitter.close()
    except StreamError:
        raise
    except Exception as exc:
        if handle.disposed:
            raise
        error = _as_transport_error(exc, where)
        if error is None:
            raise
        raise error from exc
    finally:
        handle.close()


async def _aread_response(
    response: AsyncResponse, handle: _Handle, where: str
) -> AsyncIterator[list[str]]:
    handle.attach_async(response)
    try:
        status, content_type = response.status_code, _header(response.headers, "content-type")
        if not 200 <= status < 300 or _is_json(content_type):
            body = bytearray()
            with contextlib.suppress(*_transport_types()):
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) >= ERROR_BODY_LIMIT:
                        break
            raise _status_error(response, bytes(body[:ERROR_BODY_LIMIT]), where)
        splitter = LineSplitter()
        async for chunk in response.aiter_bytes():
            yield splitter.feed(chunk)
        yield splitter.close()
    except StreamError:
        raise
    except Exception as exc:
        if handle.disposed:
            raise
        error = _as_transport_error(exc, where)
        if error is None:
            raise
        raise error from exc
    finally:
        with contextlib.suppress(Exception):
            await response.aclose()


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


def _status_error(response: Any, body: bytes, where: str) -> StreamError:
    status: int = response.status_code
    headers: Mapping[str, str] = response.headers
    content_type = _header(headers, "content-type") or ""
    if 200 <= status < 300:
        return UnexpectedContentTypeError(content_type, status_code=status, body=excerpt(body))
    reason = getattr(response, "reason_phrase", "")
    return HTTPStatusError(
        status,
        reason=reason if isinstance(reason, str) else "",
        body=excerpt(body),
        provider_message=_provider_message(body),
        retry_after=_retry_after(headers),
        request=where,
    )


def _provider_message(body: bytes) -> str | None:
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        payload = payload[0]  # Google wraps its error object in a list
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    if not isinstance(error, str):
        error = payload.get("message")
    return excerpt(error) if isinstance(error, str) and error else None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        with contextlib.suppress(ValueError):
            value = float(millis)
            if value >= 0 and value == value and value != float("inf"):
                return value / 1000
    text = _header(headers, "retry-after")
    if text is None:
        return None
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        for key, item in headers.items():
            if key.lower() == name:
                return item
    return value


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    mime = content_type.split(";", 1)[0].strip().lower()
    return mime == "application/json" or (
        mime.startswith("application/") and mime.endswith("+json")
    )


def _request_of(response: object) -> Any:
    try:
        return getattr(response, "request", None)
    except RuntimeError:  # httpx: "The request instance has not been set on this response."
        return None


def _describe(request: Any) -> str:
    """`"POST http://host:port/path"`: no query string, no credentials, never a header."""
    if request is None:
        return ""
    method = getattr(request, "method", "")
    url = str(getattr(request, "url", ""))
    try:
        parts = urlsplit(url)
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if parts.port is not None:
            netloc += f":{parts.port}"
        url = urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    except ValueError:
        url = url.split("?", 1)[0].split("#", 1)[0]
    return f"{method} {url}".strip()


# --------------------------------------------------------------------------- transport errors

_WHAT = {
    "ConnectTimeout": "timed out connecting to the server",
    "ConnectError": "could not connect to the server",
    "ConnectionRefusedError": "could not connect to the server (connection refused)",
    "ReadTimeout": "timed out waiting for the server to send more of the response",
    "WriteTimeout": "timed out sending the request",
    "PoolTimeout": "timed out waiting for a free connection in the client's pool",
    "RemoteProtocolError": "the server closed the connection or broke HTTP mid-response",
    "ConnectionResetError": "the connection was reset",
    "ReadError": "reading the response failed",
    "WriteError": "sending the request failed",
    "DecodingError": "could not decode the response body (content encoding)",
    "ProxyError": "the proxy failed",
    "TimeoutException": "the request timed out",
}


def _transport_types() -> tuple[type[Exception], ...]:
    types: list[type[Exception]] = [OSError]
    for name in ("httpx", "httpx2"):
        module = sys.modules.get(name)
        for attr in ("TransportError", "DecodingError"):
            cls = getattr(module, attr, None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                types.append(cls)
    return tuple(types)


def _as_transport_error(exc: Exception, where: str) -> TransportError | None:
    """The `TransportError` to raise from a transport exception; None for anything else."""
    if isinstance(exc, StreamError) or not isinstance(exc, _transport_types()):
        return None
    what = next(
        (_WHAT[cls.__name__] for cls in type(exc).__mro__ if cls.__name__ in _WHAT),
        "the connection failed",
    )
    detail = excerpt(str(exc)) or "(no detail)"
    head = f"{what} ({where})" if where else what
    return TransportError(f"{head}: {type(exc).__name__}: {detail}")


def _socket_of(resource: Any) -> socket.socket | None:
    extensions = getattr(resource, "extensions", None)
    if not isinstance(extensions, Mapping):
        return None
    stream = extensions.get("network_stream")
    try:
        sock = stream.get_extra_info("socket") if stream is not None else None
    except Exception:
        return None
    return sock if isinstance(sock, socket.socket) else None


def _close_quietly(resource: Any) -> None:
    closer = getattr(resource, "close", None)
    if closer is not None:
        with contextlib.suppress(Exception):
            closer()


# --------------------------------------------------------------------------- from_lines items

_TERMINATOR_B = re.compile(rb"\r\n|\r|\n")
_TERMINATOR_S = re.compile(r"\r\n|\r|\n")


class _ItemSplitter:
    """Cut each `from_lines` item into lines; a terminator at the item's end is optional."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self._limit = limit
        self._first = True

    def split(self, item: LineItem) -> list[str]:
        if isinstance(item, bytearray):
            item = bytes(item)
        if isinstance(item, bytes):
            bom = self._first and item.startswith(b"\xef\xbb\xbf")
            if bom:
                item = item[3:]
            pieces_b = _TERMINATOR_B.split(item)
            if len(pieces_b) > 1 and not pieces_b[-1]:
                pieces_b.pop()
            self._check(pieces_b)
            self._first = False
            pieces = [piece.decode("utf-8", "replace") for piece in pieces_b]
        elif isinstance(item, str):
            bom = self._first and item.startswith("\ufeff")
            if bom:
                item = item[1:]
            pieces = _TERMINATOR_S.split(item)
            if len(pieces) > 1 and not pieces[-1]:
                pieces.pop()
            self._check(pieces)
            self._first = False
        else:
            raise TypeError(f"from_lines items must be str or bytes, got {type(item).__name__}")
        if bom:
            pieces[0] = LineAfterBOM(pieces[0])
        return pieces

    def _check(self, pieces: list[str] | list[bytes]) -> None:
        for piece in pieces:
            if len(piece) > self._limit:
                raise LineTooLongError(self._limit, piece[: self._limit + 1])
