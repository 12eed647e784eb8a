"""The read loops under every source: one read, push what it gave, check, schedule the next.

Two drivers, one per world:

- `sync_source`: a generator of item batches driven on a reactivex scheduler
  (by default the current thread's trampoline, so `subscribe` returns when the
  stream ends). One batch per step; between steps the disposed flag is
  checked and the next step is scheduled, so a downstream that disposes stops
  the loop at once and one read never runs ahead of what downstream accepted.
- `async_source`: an async generator of batches run as a task on an asyncio
  loop; it awaits the consumer's demand (`rxstream._flow`) before each read and
  each item, and yields to the loop after each read so hundreds of streams
  interleave fairly.

And the readers of a response body (`read_response`, `aread_response`), twins
that only read (or await); what they do with the bytes is `BodyReader`'s and
what they accept and how they fail is `_http`'s.

Disposal from another thread while a sync read is blocked: the disposing
thread shuts the socket down (which wakes the read at once) but never closes
it, because a closed descriptor can be reused by a new connection while the
reader is still about to poll it; the reader thread closes the response itself
on its way out. A read that is not yet under way is closed by the disposer.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import Disposable
from reactivex.scheduler import CurrentThreadScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler

from .._flow import Demand, current_demand
from ._body import BodyReader
from ._http import (
    ERROR_BODY_LIMIT,
    AsyncResponse,
    Credentials,
    SyncResponse,
    accepted,
    answer_error,
    body_kind,
    header,
    transport_error,
    transport_types,
)

__all__ = ["Handle", "aread_response", "async_source", "read_response", "sync_source"]

T = TypeVar("T")


class Handle:
    """What one subscription holds open, and who may close it when.

    `disposed` is set by `dispose` from any thread; `begin_read`/`end_read`
    bracket each blocking step of the reader, so a dispose knows whether a
    read may be under way (then it only shuts sockets down) or not (then it
    closes everything itself).
    """

    def __init__(self) -> None:
        self.disposed = False
        self._lock = threading.Lock()
        self._reading = False
        self._closed = False
        self._resources: list[Any] = []
        self._async_resources: list[Any] = []

    def begin_read(self) -> bool:
        """Mark a read as under way; False (and nothing marked) once disposed."""
        with self._lock:
            if self.disposed:
                return False
            self._reading = True
            return True

    def end_read(self) -> None:
        with self._lock:
            self._reading = False

    def attach(self, resource: Any) -> None:
        """Own `resource` (something with `close()`); close it now if already disposed."""
        with self._lock:
            if not self._closed and not self.disposed:
                self._resources.append(resource)
                return
        _close_quietly(resource)

    def attach_async(self, resource: Any) -> None:
        """Own `resource` (something with `aclose()` or `close()`)."""
        with self._lock:
            self._async_resources.append(resource)

    def dispose(self) -> None:
        """Stop the reader: from any thread, at any time, once or more."""
        with self._lock:
            self.disposed = True
            reading = self._reading
            resources = list(self._resources)
        if reading:
            for resource in resources:
                _shutdown(resource)
        else:
            self.close()

    def close(self) -> None:
        """Close the sync resources (idempotent); the reader's own way out."""
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


def _shutdown(resource: Any) -> None:
    """Wake a read blocked on `resource`'s socket (httpx-like responses expose it)."""
    extensions = getattr(resource, "extensions", None)
    if not isinstance(extensions, Mapping):
        return
    stream = extensions.get("network_stream")
    try:
        sock = stream.get_extra_info("socket") if stream is not None else None
    except Exception:
        return
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _close_quietly(resource: Any) -> None:
    closer = getattr(resource, "close", None)
    if closer is not None:
        with contextlib.suppress(Exception):
            closer()


def _scrubbed(error: Exception) -> Exception:
    # An error raised `from None` hides its context on purpose (the httpx
    # exception, which keeps the request and its headers): drop it altogether.
    if error.__suppress_context__:
        error.__context__ = None
    return error


# --------------------------------------------------------------------------- drivers


def sync_source(
    make_reader: Callable[[Handle], Iterator[list[T]]],
    scheduler: abc.SchedulerBase | None,
) -> Observable[T]:
    """An observable that runs `make_reader(handle)`'s batches on a reactivex scheduler."""

    def subscribe(
        observer: abc.ObserverBase[T], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        sched = scheduler or scheduler_ or CurrentThreadScheduler.singleton()
        handle = Handle()
        reader: Iterator[list[T]] | None = None

        def finish() -> None:
            handle.close()
            if reader is not None:
                with contextlib.suppress(Exception):
                    reader.close()  # type: ignore[attr-defined]

        def step(_: abc.SchedulerBase, __: Any = None) -> None:
            nonlocal reader
            if not handle.begin_read():
                finish()
                return
            try:
                try:
                    if reader is None:
                        reader = make_reader(handle)
                    batch = next(reader, None)
                finally:
                    handle.end_read()
                if batch is not None:
                    on_next = observer.on_next
                    for item in batch:
                        if handle.disposed:
                            break
                        on_next(item)
                    if handle.disposed:
                        finish()
                    else:
                        sched.schedule(step)
                    return
            except Exception as exc:
                finish()
                if not handle.disposed:
                    observer.on_error(_scrubbed(exc))
                return
            finish()
            if not handle.disposed:
                observer.on_completed()

        sched.schedule(step)
        return Disposable(handle.dispose)

    return Observable(subscribe)


_RUNNING: set[Any] = set()


def async_source(
    make_reader: Callable[[Handle], AsyncIterator[list[T]]],
    scheduler: abc.SchedulerBase | None,
) -> Observable[T]:
    """An observable that runs `make_reader(handle)`'s batches as a task on an asyncio loop."""

    def subscribe(
        observer: abc.ObserverBase[T], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        loop = _loop_for(scheduler or scheduler_)
        demand = current_demand()
        handle = Handle()
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
                    batch = await anext(reader, None)
                    if batch is None:
                        break
                    for item in batch:
                        await _wait(demand)
                        if handle.disposed:
                            return
                        observer.on_next(item)
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
                observer.on_error(_scrubbed(error))
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


def _body_reader(
    response: Any, credentials: Credentials, *, raw: bool, line_limit: int
) -> BodyReader:
    content_type = header(response.headers, "content-type")
    return BodyReader(
        body_kind(content_type),
        raw=raw,
        credentials=credentials,
        status_code=response.status_code,
        content_type=content_type,
        line_limit=line_limit,
    )


def read_response(
    response: SyncResponse,
    handle: Handle,
    where: str,
    credentials: Credentials,
    *,
    raw: bool,
    line_limit: int,
) -> Iterator[list[Any]]:
    """Batches of lines (or raw blocks) of a sync response; its errors mapped (see `_http`)."""
    handle.attach(response)
    error: Exception | None = None
    try:
        if not accepted(response, raw=raw):
            body = bytearray()
            with contextlib.suppress(*transport_types()):
                for block in response.iter_bytes():
                    body += block
                    if len(body) >= ERROR_BODY_LIMIT:
                        break
            raise answer_error(response, bytes(body[:ERROR_BODY_LIMIT]), where, credentials)
        reader = _body_reader(response, credentials, raw=raw, line_limit=line_limit)
        for block in response.iter_bytes():
            yield reader.feed(block)
        yield reader.close()
    except Exception as exc:
        if handle.disposed:
            raise
        error = transport_error(exc, where, credentials)
        if error is None:
            raise
    finally:
        handle.close()
    # Raised here, outside the `except` block, so the httpx exception is not its context.
    if error is not None:
        raise error


async def aread_response(
    response: AsyncResponse,
    handle: Handle,
    where: str,
    credentials: Credentials,
    *,
    raw: bool,
    line_limit: int,
) -> AsyncIterator[list[Any]]:
    """The async twin of `read_response`."""
    handle.attach_async(response)
    error: Exception | None = None
    try:
        if not accepted(response, raw=raw):
            body = bytearray()
            with contextlib.suppress(*transport_types()):
                async for block in response.aiter_bytes():
                    body += block
                    if len(body) >= ERROR_BODY_LIMIT:
                        break
            raise answer_error(response, bytes(body[:ERROR_BODY_LIMIT]), where, credentials)
        reader = _body_reader(response, credentials, raw=raw, line_limit=line_limit)
        async for block in response.aiter_bytes():
            yield reader.feed(block)
        yield reader.close()
    except Exception as exc:
        if handle.disposed:
            raise
        error = transport_error(exc, where, credentials)
        if error is None:
            raise
    finally:
        with contextlib.suppress(Exception):
            await response.aclose()
    if error is not None:
        raise error
