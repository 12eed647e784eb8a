"""The read loops under every source: one read, push what it gave, check, schedule the next.

Two drivers, one per world, each a small class with one object per
subscription and a method per step (`SyncLoop`, `AsyncLoop`):

- `sync_source`: a generator of item batches driven on a reactivex scheduler
  (by default the current thread's trampoline, so `subscribe` returns when the
  stream ends). One batch per step; between steps the disposed flag is
  checked and the next step is scheduled, so a downstream that disposes stops
  the loop at once and one read never runs ahead of what downstream accepted.
- `async_source`: an async generator of batches run as a task on an asyncio
  loop; it awaits the consumer's demand (`rxstream._flow`) before each read and
  each item, and yields to the loop after each read so hundreds of streams
  interleave fairly. A task cancelled by anyone but its own `dispose` (the
  loop shutting down under a stream that still runs) ends the stream with an
  error that says so, never in silence.

And the readers of a response body (`read_body`, `aread_body`), twins that
only open, iterate (or await) and close inside the one exception boundary
(`_http.Exchange.mapped`); what they do with the bytes is `_body`'s.

Disposal from another thread while a sync read is blocked (`Handle`): the
disposing thread shuts the socket down, which wakes the read at once, but
never closes it, because a closed descriptor can be reused by a new connection
while the reader is still about to poll it; the reader thread closes the
response itself on its way out. The shutdown goes through a duplicate of the
socket's descriptor that only the handle closes (under its lock), so it can
never land on a descriptor the reader (or httpcore) closed meanwhile and a new
connection reused. A reader that is not inside a read is closed by the
disposer. The socket is known before the response headers arrive too
(`connection_tracer`), so a dispose that lands while `client.send` waits for
them wakes it the same way. Limits: a dispose during the TCP connect or the
wait for a free connection in the client's pool takes effect when that step
ends (bounded by the client's connect and pool timeouts); an HTTP/2 connection,
shared by other requests, is never shut down (the read ends with its next frame).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import sys
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar, cast

from reactivex import Observable, abc
from reactivex.disposable import Disposable
from reactivex.scheduler import CurrentThreadScheduler

from .._flow import current_demand
from ..errors import StreamError
from ..operators.delta_source import Batching, BatchSource
from ._args import loop_for
from ._body import open_body
from ._http import AsyncResponse, Exchange, SyncResponse

__all__ = [
    "AsyncLoop",
    "Handle",
    "SyncLoop",
    "aread_body",
    "async_source",
    "connection_tracer",
    "read_body",
    "sync_source",
]

T = TypeVar("T")
R = TypeVar("R")  # what a source's make_reader gives: an iterator of batches, sync or async


class Handle:
    """What one subscription holds open, and who may close it when.

    `disposed` is set by `dispose` from any thread; `begin_read`/`end_read`
    bracket each blocking step of the reader, so a dispose knows whether a
    read may be under way (then it only shuts the watched sockets down) or not
    (then it closes everything itself). `cancelled` makes the error for an
    async stream whose task someone else cancelled. An async reader that
    waited for its batch on the loop sets `waited` (the pump then needs no
    turn of its own to let the loop's other tasks run).
    """

    def __init__(self) -> None:
        self.disposed = False
        self.waited = False
        self.cancelled: Callable[[], Exception] = _cancelled
        self._lock = threading.Lock()
        self._reading = False
        self._closed = False
        self._resources: list[Any] = []
        self._async_resources: list[Any] = []
        # The socket the reader may block on (its origin, and our duplicate of it).
        self._origin: socket.socket | None = None
        self._watched: socket.socket | None = None

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
        """Own `resource` (something with `close()`); close it now if already disposed.

        An httpx response's HTTP/1.1 socket is watched too (see `watch`).
        """
        with self._lock:
            if not self._closed and not self.disposed:
                self._resources.append(resource)
                keep = True
            else:
                keep = False
        if keep:
            self.watch(_response_stream(resource))
        else:
            _close_quietly(resource)

    def attach_async(self, resource: Any) -> None:
        """Own `resource` (something with `aclose()` or `close()`)."""
        with self._lock:
            self._async_resources.append(resource)

    def watch(self, stream: Any) -> None:
        """Shut the socket of `stream` (an httpcore network stream) down if disposed mid-read.

        Called by the reader thread while the socket is open; it replaces the
        socket watched before (one request reads from one connection at a
        time). A stream that arrives after the dispose is shut down at once:
        the reader is about to block on it.
        """
        sock = _socket_of(stream)
        if sock is None or sock is self._origin:
            return
        try:
            duplicate = sock.dup()
        except OSError:
            return
        stale: socket.socket | None
        with self._lock:
            if self._closed:
                stale = duplicate
            else:
                stale, self._watched, self._origin = self._watched, duplicate, sock
                if self.disposed:
                    _shutdown(duplicate)
        if stale is not None:
            stale.close()

    def dispose(self) -> None:
        """Stop the reader: from any thread, at any time, once or more."""
        with self._lock:
            self.disposed = True
            reading = self._reading
            if reading and self._watched is not None:
                # Under the lock: `close` cannot close the duplicate meanwhile.
                _shutdown(self._watched)
        if not reading:
            self.close()

    def close(self) -> None:
        """Close the sync resources (idempotent); the reader's own way out."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            resources, self._resources = self._resources, []
            watched, self._watched, self._origin = self._watched, None, None
        for resource in reversed(resources):
            _close_quietly(resource)
        if watched is not None:
            watched.close()

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


def _cancelled() -> Exception:
    return StreamError(
        "the stream's task was cancelled before the stream ended (did the event loop stop "
        "while it was still running?)"
    )


class _Disposed(Exception):
    """Raised in the reader thread (from a trace callback) to abandon a disposed request."""


def connection_tracer(handle: Handle, chained: Any = None) -> Callable[[str, Any], None]:
    """An httpcore `trace` extension that lets `handle` reach the socket before the headers.

    httpcore calls it in the reader thread at each step of sending the
    request: the new connection's stream (`connection.connect_tcp.complete`,
    `connection.start_tls.complete`), then `http11.send_request_headers`, where
    the stream is watched (also a reused keep-alive connection's, found on the
    call stack), so a dispose while the reader waits for the response headers
    shuts that socket down. At each step of sending that starts, a disposed
    request is abandoned. `chained`, the caller's own trace callback, is called first.
    """
    candidate: list[Any] = []

    def trace(event: str, info: Any) -> None:
        if chained is not None:
            chained(event, info)
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            candidate[:] = [info.get("return_value")] if isinstance(info, Mapping) else []
        elif event == "http11.send_request_headers.started":
            # A connection made for this request, else one the pool reused (a
            # redirect may do either: a candidate serves one request only).
            handle.watch(candidate.pop() if candidate else _stream_on_stack())
        if handle.disposed and event in _SENDING:
            raise _Disposed("the subscription was disposed")

    return trace


# The steps of sending a request, before the response: where a disposed request is
# abandoned (never a step of reading or closing the response, which must run).
_SENDING = frozenset(
    {
        "connection.connect_tcp.started",
        "connection.start_tls.started",
        "http11.send_request_headers.started",
        "http11.send_request_body.started",
        "http11.receive_response_headers.started",
        "http2.send_request_headers.started",
        "http2.send_request_body.started",
        "http2.receive_response_headers.started",
    }
)


def _stream_on_stack() -> Any:
    """The network stream of the HTTP/1.1 connection whose `handle_request` called the trace.

    A reused keep-alive connection announces no stream before its response:
    it is the `_network_stream` of the connection object a few frames up
    (httpcore's and httpcore2's `HTTP11Connection`). None if not found.
    """
    frame = sys._getframe(1)
    for _ in range(8):
        frame = frame.f_back  # type: ignore[assignment]
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        stream = getattr(owner, "_network_stream", None)
        if stream is not None and callable(getattr(stream, "get_extra_info", None)):
            return stream
    return None


def _response_stream(response: Any) -> Any:
    extensions = getattr(response, "extensions", None)
    if not isinstance(extensions, Mapping):
        return None
    # An HTTP/2 connection carries other requests too: never shut it down.
    if extensions.get("http_version", b"HTTP/1.1") not in (b"HTTP/1.1", b"HTTP/1.0"):
        return None
    return extensions.get("network_stream")


def _socket_of(stream: Any) -> socket.socket | None:
    try:
        sock = stream.get_extra_info("socket") if stream is not None else None
    except Exception:
        return None
    return sock if isinstance(sock, socket.socket) else None


def _shutdown(sock: socket.socket) -> None:
    """Wake a read blocked on the socket `sock` duplicates (shutdown acts on the socket)."""
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
    return _SyncSource(make_reader, scheduler)


class _ReaderSource(BatchSource, Generic[R]):
    """A source of `make_reader(handle)`'s batches, read on `scheduler` (or the subscriber's)."""

    def __init__(
        self, make_reader: Callable[[Handle], R], scheduler: abc.SchedulerBase | None
    ) -> None:
        super().__init__()
        self._make_reader = make_reader
        self._scheduler = scheduler


class _SyncSource(_ReaderSource[Iterator[list[Any]]]):
    """What `sync_source` gives: a `SyncLoop` per subscription (batches whole, if asked)."""

    def _subscribe_core(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return self._loop(observer, scheduler).start()

    def subscribe_batches(
        self, observer: Batching, scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        loop = self._loop(cast(abc.ObserverBase[Any], observer), scheduler)
        loop.on_batch = observer.on_batch
        return loop.start()

    def _loop(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None
    ) -> SyncLoop[Any]:
        sched = self._scheduler or scheduler or CurrentThreadScheduler.singleton()
        return SyncLoop(self._make_reader, observer, sched)


class SyncLoop(Generic[T]):
    """One subscription of a sync source: one read per scheduled step.

    `start` schedules the first `step`; each step reads one batch (`read`),
    pushes it (`push`) and schedules the next, until the reader is exhausted
    (`complete`), fails (`fail`) or the subscription is disposed (`finish`).
    An observer without `on_error` gets reactivex's default, which raises:
    the error leaves `subscribe()` (on the default trampoline) as it would
    any sync call.
    """

    __slots__ = ("_handle", "_make_reader", "_observer", "_reader", "_scheduler", "on_batch")

    def __init__(
        self,
        make_reader: Callable[[Handle], Iterator[list[T]]],
        observer: abc.ObserverBase[T],
        scheduler: abc.SchedulerBase,
    ) -> None:
        self._make_reader = make_reader
        self._observer = observer
        self._scheduler = scheduler
        self._handle = Handle()
        self._reader: Iterator[list[T]] | None = None
        #: An observer's way to take a batch in one call (`BatchSource.subscribe_batches`).
        self.on_batch: Callable[[list[T]], None] | None = None

    def start(self) -> abc.DisposableBase:
        """Schedule the first read; the disposable stops the loop from any thread."""
        self._scheduler.schedule(self.step)
        return Disposable(self._handle.dispose)

    def step(self, _: abc.SchedulerBase, __: Any = None) -> None:
        """Read one batch, push it, schedule the next step (or end)."""
        handle = self._handle
        if not handle.begin_read():
            self.finish()
            return
        try:
            batch = self.read()
            if batch is not None:
                if self.push(batch):
                    self._scheduler.schedule(self.step)
                else:
                    self.finish()
                return
        except Exception as exc:
            self.fail(exc)
            return
        # Outside the `try`: an `on_completed` that raises is not the stream's error.
        self.complete()

    def read(self) -> list[T] | None:
        """The next batch, or None at the end; the read is bracketed for `Handle.dispose`."""
        try:
            if self._reader is None:
                self._reader = self._make_reader(self._handle)
            return next(self._reader, None)
        finally:
            self._handle.end_read()

    def push(self, batch: list[T]) -> bool:
        """Emit `batch` (whole, or item by item while not disposed); False once disposed."""
        handle = self._handle
        if self.on_batch is not None:
            if batch and not handle.disposed:
                self.on_batch(batch)
            return not handle.disposed
        on_next = self._observer.on_next
        for item in batch:
            if handle.disposed:
                return False
            on_next(item)
        return not handle.disposed

    def complete(self) -> None:
        self.finish()
        if not self._handle.disposed:
            self._observer.on_completed()

    def fail(self, error: Exception) -> None:
        self.finish()
        if not self._handle.disposed:
            self._observer.on_error(_scrubbed(error))

    def finish(self) -> None:
        """Close what the subscription holds (the response, the reader)."""
        self._handle.close()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                self._reader.close()  # type: ignore[attr-defined]


_RUNNING: set[Any] = set()


def async_source(
    make_reader: Callable[[Handle], AsyncIterator[list[T]]],
    scheduler: abc.SchedulerBase | None,
) -> Observable[T]:
    """An observable that runs `make_reader(handle)`'s batches as a task on an asyncio loop."""
    return _AsyncSource(make_reader, scheduler)


class _AsyncSource(_ReaderSource[AsyncIterator[list[Any]]]):
    """What `async_source` gives: an `AsyncLoop` per subscription (batches whole, if asked)."""

    def _subscribe_core(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        loop = loop_for(self._scheduler or scheduler)
        return AsyncLoop(self._make_reader, observer, loop).start()

    def subscribe_batches(
        self, observer: Batching, scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        loop = loop_for(self._scheduler or scheduler)
        pump = AsyncLoop(self._make_reader, cast(abc.ObserverBase[Any], observer), loop)
        pump.on_batch = observer.on_batch
        return pump.start()


class AsyncLoop(Generic[T]):
    """One subscription of an async source: a task on `loop` that reads while there is demand.

    `start` creates the task (`run`); it pumps batches (`pump`) until the
    reader is exhausted, fails or the subscription is disposed, then closes
    everything and says how it ended (`end`). `dispose` stops it from any
    thread. A task cancelled by anyone but its own `dispose` (the loop
    shutting down under a running stream) ends with an error that says so.

    An observer without `on_error` (reactivex's default raises) gets no
    silent end either: the stream runs after `subscribe()` returned, so there
    is no caller to raise to; the error goes to the loop's exception handler
    (`loop.call_exception_handler`) at once, as asyncio does for a callback
    that raises, which by default logs it with its traceback. The same holds
    for an `on_next`, `on_error` or `on_completed` that raises.
    """

    __slots__ = (
        "_cancel",
        "_demand",
        "_finishing",
        "_handle",
        "_inner",
        "_loop",
        "_make_reader",
        "_observer",
        "_task",
        "on_batch",
    )

    def __init__(
        self,
        make_reader: Callable[[Handle], AsyncIterator[list[T]]],
        observer: abc.ObserverBase[T],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._make_reader = make_reader
        self._observer = observer
        self._loop = loop
        self._demand = current_demand()
        self._handle = Handle()
        self._task: Any = None
        self._cancel: Callable[[], object] = _nothing
        self._inner: asyncio.Task[Any] | None = None
        self._finishing = False
        #: An observer's way to take a batch in one call (`BatchSource.subscribe_batches`).
        self.on_batch: Callable[[list[T]], None] | None = None

    def start(self) -> abc.DisposableBase:
        """Start the task on the loop (from its own thread, or from any other)."""
        loop = self._loop
        if _running_loop() is loop:
            task = loop.create_task(self.run())
            self._task, self._cancel = task, task.cancel
        else:
            future = asyncio.run_coroutine_threadsafe(self.run(), loop)
            self._task, self._cancel = future, future.cancel  # thread-safe, unlike Task.cancel
        # asyncio keeps only weak references to tasks: hold this one until it ends.
        _RUNNING.add(self._task)
        self._task.add_done_callback(_RUNNING.discard)
        return Disposable(self.dispose)

    async def run(self) -> None:
        """The task: pump, then close everything and tell the observer how it ended."""
        self._inner = asyncio.current_task()
        handle = self._handle
        reader = self._make_reader(handle)
        error: Exception | None = None
        try:
            await self.pump(reader)
        except asyncio.CancelledError:
            # Not by our own dispose (that sets the flag first): the loop is
            # shutting down under a running stream. Say so, then let it go.
            if not handle.disposed:
                error = handle.cancelled()
            raise
        except Exception as exc:
            error = exc
        finally:
            self._finishing = True
            with contextlib.suppress(Exception):
                await reader.aclose()  # type: ignore[attr-defined]
            await handle.aclose()
            if error is not None:
                self.end(error)
        if error is None:
            self.end(None)

    async def pump(self, reader: AsyncIterator[list[T]]) -> None:
        """Read a batch when there is demand, emit it item by item, yield to the loop; repeat."""
        handle = self._handle
        on_batch = self.on_batch
        demand = self._demand
        turns = turns_of(self._loop)
        await self.wait()  # (binds the gate to this loop)
        # The consumer's writer, when it lends it (`Demand.lend`): run here after each batch.
        write = demand.writer_for(self._loop) if demand is not None else None
        while True:
            if demand is not None and demand.paused:
                await demand.wait()
            if handle.disposed:
                return
            handle.waited = False
            seen = turns.mark()
            batch = await anext(reader, None)
            if batch is None:
                return
            if write is None:
                if not await self.emit(batch, on_batch):
                    return
            else:
                assert demand is not None  # (a writer is lent through the demand)
                demand.batching = True
                try:
                    if on_batch is not None and not demand.paused:
                        # A read's worth in one call (`emit`, inline: once per read).
                        if batch:
                            on_batch(batch)
                    elif not await self.emit(batch, on_batch):
                        return
                finally:
                    demand.batching = False
                if handle.disposed:
                    return
                await write()
            # A read that finds its data already buffered returns without
            # suspending: yield once per such read, so one fast stream cannot
            # starve the other tasks of the loop. A read that let the loop
            # turn (an HTTP read that waited for the socket: `turns` tells),
            # or a reader that says it waited, has let them run: an extra
            # turn per batch was a task step per token of every stream.
            if not handle.waited and turns.count == seen:
                await asyncio.sleep(0)

    async def emit(self, batch: list[T], on_batch: Callable[[list[T]], None] | None) -> bool:
        """Emit one read's items (whole to `on_batch` when it can); False once disposed."""
        handle = self._handle
        demand = self._demand
        if on_batch is not None and (demand is None or not demand.paused):
            # A read's worth in one call: the run of machines after the
            # source feeds it to its machines at once (`feed_all`).
            if batch:
                on_batch(batch)
            return not handle.disposed
        on_next = self._observer.on_next
        for item in batch:
            # No await while nothing holds the gate: a coroutine per item
            # was the larger part of what a follower cost (`Demand.wait`).
            if demand is not None and demand.paused:
                batching, demand.batching = demand.batching, False
                await demand.wait()
                demand.batching = batching
            if handle.disposed:
                return False
            on_next(item)
        return not handle.disposed

    async def wait(self) -> None:
        """Wait for the consumer's demand (`rxstream._flow`), if it signals any."""
        if self._demand is not None:
            await self._demand.wait()

    def end(self, error: Exception | None) -> None:
        """Complete, or fail with `error`; what the observer raises goes to the loop's handler."""
        if self._handle.disposed:
            return
        try:
            if error is None:
                self._observer.on_completed()
            else:
                self._observer.on_error(_scrubbed(error))
        except Exception as raised:
            self._loop.call_exception_handler(
                {
                    "message": _UNHANDLED if raised is error else _OBSERVER_RAISED,
                    "exception": raised,
                    "task": self._inner,
                }
            )

    def dispose(self) -> None:
        """Stop the stream: from any thread, at any time, once or more."""
        self._handle.disposed = True
        if self._finishing or self._task is None:
            return
        loop = self._loop
        if _running_loop() is loop:
            # Disposed from inside its own task (e.g. at [DONE]): the flag stops
            # the loop; cancelling would interrupt closing the response.
            if asyncio.current_task() is not self._inner:
                self._cancel()
        elif not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._cancel)


class Turns:
    """Counts the turns of one event loop that a task let pass (`mark`, then `count`).

    `mark()` returns the count and makes sure one callback is waiting on the
    loop: it adds one to the count when the loop runs it, which it does only
    once the task that marked has suspended. So `turns.count == seen` after
    an await says that the await never let the loop run its other callbacks.
    One callback per turn of the loop for all the tasks that mark in it,
    and none while nobody marks (an idle loop stays idle).
    """

    __slots__ = ("_armed", "_loop", "count")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._armed = False
        self.count = 0

    def mark(self) -> int:
        """The count now, with a callback waiting to add one at the loop's next turn."""
        if not self._armed:
            self._armed = True
            self._loop.call_soon(self._tick)
        return self.count

    def _tick(self) -> None:
        self._armed = False
        self.count += 1


_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Turns] = weakref.WeakKeyDictionary()


def turns_of(loop: asyncio.AbstractEventLoop) -> Turns:
    """The `Turns` of `loop` (one per loop, shared by its tasks; called on the loop)."""
    turns = _TURNS.get(loop)
    if turns is None:
        turns = _TURNS[loop] = Turns(loop)
    return turns


_UNHANDLED = (
    "rxstream: an async stream failed and its subscriber has no on_error "
    "(pass on_error=..., or await the observable, to handle it)"
)
_OBSERVER_RAISED = "rxstream: a subscriber of an async stream raised"


def _nothing() -> None:
    return None


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


# --------------------------------------------------------------------------- responses


def read_body(
    open_response: Callable[[], SyncResponse],
    exchange: Exchange,
    handle: Handle,
    *,
    binary: bool,
    line_limit: int,
) -> Iterator[list[Any]]:
    """Batches of lines (or blocks of bytes) of the sync response `open_response()` gives.

    Opens (builds and sends the request, or takes an opened response), hands
    each block to the body's reader (`_body.open_body`), closes; whatever
    goes wrong on the way is mapped once, by `exchange.mapped()`.
    """
    try:
        with exchange.mapped():
            response = open_response()
            handle.attach(response)
            reader = open_body(response, exchange, binary=binary, line_limit=line_limit)
            for block in response.iter_bytes():
                yield reader.feed(block)
            yield reader.close()
    finally:
        handle.close()


async def aread_body(
    open_response: Callable[[], Awaitable[AsyncResponse]],
    exchange: Exchange,
    handle: Handle,
    *,
    binary: bool,
    line_limit: int,
) -> AsyncIterator[list[Any]]:
    """The async twin of `read_body`."""
    handle.cancelled = exchange.cancelled
    try:
        with exchange.mapped():
            response = await open_response()
            handle.attach_async(response)
            reader = open_body(response, exchange, binary=binary, line_limit=line_limit)
            async for block in response.aiter_bytes():
                yield reader.feed(block)
            yield reader.close()
    finally:
        await handle.aclose()
