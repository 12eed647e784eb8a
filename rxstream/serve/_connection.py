"""One SSE connection's writer: the source's items, a bounded buffer, the socket.

The writer of `sse_response`, kept cheap per event because a server runs
thousands of them: the source's items go into a bounded buffer (the observer
side, any thread), and one coroutine on the loop takes everything waiting,
encodes it (`SSEEncoder`, whose `"rxstream"` events are encoded once per item
object for all the connections a hub fans it out to) and writes it in one
`send`. The writer awaits the buffer directly: one future per wait, and for
keep-alives ONE timer per connection (`loop.call_later`), re-armed only when it
fires: each write just moves the deadline, which the timer checks.

What a full buffer does (`overflow`, per connection):

- `"block"`: the source is paused (the `rxstream._flow` demand: an rxstream
  async source stops reading; a sync source's thread blocks in `on_next`).
  A source that cannot be paused (a hub's other clients keep it going) goes
  on filling the buffer: behind a hub, choose one of the two below.
- `"latest"`: the oldest waiting items are dropped (at most `maxsize` wait);
  before the next event it writes, the writer tells the client with a
  comment: `: skipped <n> items; resume after <id>` (or `: skipped <n>
  items` before any id), where `<id>` is the last event id written before
  the gap, the `Last-Event-ID` to resume from through a durable log. The
  first gap of a connection is logged as a warning, the others at debug level.
- `"error"`: the client is ended: the subscription is disposed at once,
  the items already waiting are still written, then the format's error
  event for `BufferOverflowError`; a client that takes none of it within the
  grace period is cut off (the response is left incomplete, so the server
  closes the connection). Either way a warning is logged.

Threads: the observer side may run on any thread; the buffer is guarded by
one lock; a producer off the loop is handed to the loop with
`call_soon_threadsafe` and waits while a `"block"` buffer is full.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from reactivex import Observable
from reactivex.disposable import SingleAssignmentDisposable
from starlette.types import Send

from .._flow import Demand, demand_scope
from ..core.dialects.sse_encoder import SSEEncoder
from ..errors import BufferOverflowError
from ..io.multicast import Overflow

__all__ = ["Connection"]

log = logging.getLogger("rxstream.serve")

#: The name an overflowing client gets in its `BufferOverflowError`.
CLIENT = "SSE client"


class _Done:
    """The stream completed (the end marker of `Connection.take`)."""


DONE = _Done()


class Connection:
    """The buffer between a source and one SSE response, and the coroutine that writes it.

    Made on the loop, by the response, which then awaits `write` (it
    subscribes, through `start`), and finally calls `close` (or awaits
    `drain` for a source kept running after the client left).
    """

    def __init__(
        self,
        source: Observable[Any],
        encoder: SSEEncoder,
        *,
        maxsize: int,
        overflow: Overflow,
        keepalive: float | None,
    ) -> None:
        self._source = source
        self._encoder = encoder
        self._maxsize = maxsize
        self._overflow = overflow
        self._keepalive = keepalive
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._lock = threading.Lock()
        self._space = threading.Condition(self._lock)  # a producer thread waits for room
        self._waiting_producers = 0
        self._buffer: deque[Any] = deque()
        self._end: Exception | _Done | None = None  # how the source ended, once it did
        self._closed = False  # the response is done with the source
        self._discard = False  # the client left; the source runs on (keep_for_resume)
        self._skipped = 0  # items dropped since the last write ("latest")
        self._skips = 0  # gaps written to this client so far
        self._paused = False  # this connection holds the demand gate closed
        self._demand = Demand()
        # The source's task writes after each batch it emits on this loop (`_flush`).
        self._demand.lend(self._flush, self._loop)
        self._send: Send | None = None
        self._sending = False  # a send is under way (by the writer or the source's task)
        # What the source's task met writing: the client gone (True), a mistake (raised).
        self._outcome: bool | Exception | None = None
        self._subscription = SingleAssignmentDisposable()
        self._waiter: asyncio.Future[None] | None = None
        self._idle = False  # the keep-alive timer found the connection idle
        self._idle_at = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._ended: asyncio.Future[None] = self._loop.create_future()
        #: Set (on the loop) when the client overflowed with `overflow="error"`.
        self.overflowed: asyncio.Future[None] = self._loop.create_future()

    @property
    def waiting(self) -> int:
        """How many items wait in the buffer now (at most `maxsize`, but for `"block"`)."""
        return len(self._buffer)

    # ----------------------------------------------------------------- the response's side

    def start(self) -> None:
        """Subscribe to the source (inside the connection's demand scope)."""
        with demand_scope(self._demand):
            subscription = self._source.subscribe(self._on_next, self._on_error, self._on_completed)
        self._subscription.disposable = subscription

    async def write(self, send: Send) -> bool:
        """Write every event, then end the body; True when the client was found gone.

        A mistake in the pipeline (an item the format cannot send) writes the
        format's error event, ends the body and is raised.
        """
        encoder = self._encoder
        keepalive = self._keepalive
        self._send = send
        try:
            self.start()
        except Exception as exc:  # a source that raised instead of calling on_error
            with contextlib.suppress(OSError):
                body = b"".join(encoder.error(exc))
                await send({"type": "http.response.body", "body": body, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
            raise
        if keepalive is not None:
            self._idle_at = self._loop.time() + keepalive
            self._timer = self._loop.call_later(keepalive, self._tick)
        while True:
            skipped, items, end = await self.take()
            outcome = self._outcome
            if outcome is not None:  # what the source's task met writing (see `_flush`)
                if isinstance(outcome, Exception):
                    raise outcome
                return outcome
            self._sending = True
            try:
                result = await self._write_batch(send, skipped, items, end)
            except Exception as exc:
                self._outcome = exc  # the source's task writes nothing more
                raise
            finally:
                self._sending = False
            if result is not None:
                self._outcome = result
                return result

    async def _write_batch(
        self, send: Send, skipped: int, items: list[Any], end: Exception | _Done | None
    ) -> bool | None:
        """Encode and send what was taken: None to go on, else whether the client was gone.

        A mistake in the pipeline writes the error event, ends the body and is raised.
        """
        encoder = self._encoder
        chunks: list[bytes] = []
        if skipped:
            chunks += encoder.skipped(skipped)
            # Once per connection as a warning: a slow client skips again and again.
            log.log(
                logging.DEBUG if self._skips else logging.WARNING,
                "an SSE client fell behind (overflow='latest'): %d items skipped "
                "after id %s (%d skips on this connection so far)",
                skipped,
                encoder.position,
                self._skips + 1,
            )
            self._skips += 1
        failure: Exception | None = None
        for item in items:
            try:
                chunks += encoder.feed(item)
            except Exception as exc:
                failure = exc
                chunks += encoder.error(exc)
                self._subscription.dispose()
                break
        if failure is None:
            if isinstance(end, _Done):
                chunks += encoder.close()
            elif end is not None:
                chunks += encoder.error(end)
            elif not chunks and self._idle:
                chunks.append(encoder.keepalive())
        self._idle = False
        last = failure is not None or end is not None
        try:
            if chunks:
                body = chunks[0] if len(chunks) == 1 else b"".join(chunks)
                await send({"type": "http.response.body", "body": body, "more_body": True})
            if last:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:  # servers of ASGI spec 2.4 say so when the client is gone
            if failure is not None:
                raise failure from None
            return True
        if failure is not None:
            raise failure
        if last:
            return False
        if self._keepalive is not None:
            self._idle_at = self._loop.time() + self._keepalive
        return None

    async def _flush(self) -> None:
        """The writer's step, run by the source's own task after a batch (`Demand.lend`).

        Writes what waits unless the writer is sending, or the stream has
        ended (the writer writes the end); what it meets (the client gone, a
        mistake in the pipeline) it leaves to the writer, which it wakes.
        """
        send = self._send
        if threading.get_ident() != self._loop_thread or send is None:
            return
        while not self._sending and self._outcome is None and self._end is None:
            with self._lock:
                if not self._buffer and not self._skipped:
                    break
                skipped, items, resume = self._take_now()
            if resume:
                self._demand.release(self)
            self._sending = True
            try:
                self._outcome = await self._write_batch(send, skipped, items, None)
            except Exception as exc:
                self._outcome = exc
            finally:
                self._sending = False
        if self._waiter is not None and self._ready():
            self._wake_here()

    async def take(self) -> tuple[int, list[Any], Exception | _Done | None]:
        """Everything waiting: (items skipped before them, the items, the end if it came).

        Waits while nothing waits, until an item, the end, or the keep-alive
        timer (then it returns nothing at all); and while the source's task
        writes (`_flush`).
        """
        while True:
            with self._lock:
                if self._ready():
                    skipped, items, resume = self._take_now()
                    end = self._end if not self._closed else None
                    break
                waiter = self._waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None
        if resume:
            self._demand.release(self)
        return skipped, items, end

    def _ready(self) -> bool:
        """Whether the writer has something to do (and the source's task is not writing)."""
        if self._sending:
            return False
        return bool(
            self._buffer
            or self._skipped
            or self._end is not None
            or self._idle
            or self._outcome is not None
        )

    def _take_now(self) -> tuple[int, list[Any], bool]:
        """(Under the lock) the items waiting, those skipped, and whether to resume the source."""
        items = list(self._buffer)
        self._buffer.clear()
        skipped, self._skipped = self._skipped, 0
        if self._waiting_producers:
            self._space.notify_all()
        resume = self._paused
        self._paused = False
        return skipped, items, resume

    def detach(self) -> None:
        """The response is done writing: the source's task writes nothing more (`_flush`)."""
        if self._outcome is None:
            self._outcome = True

    async def drain(self) -> None:
        """The client left: let the source run to its end, dropping its items."""
        with self._lock:
            self._discard = True
            self._buffer.clear()
            if self._waiting_producers:
                self._space.notify_all()
            resume = self._paused
            self._paused = False
        if resume:
            self._demand.release(self)
        await self._ended

    def close(self) -> None:
        """Dispose the subscription (closing the provider connection); any thread."""
        with self._lock:
            self._closed = True
            self._buffer.clear()
            if self._waiting_producers:
                self._space.notify_all()
        self._subscription.dispose()
        # A source waiting on the gate wakes, sees it was disposed, and ends.
        self._demand.reset()
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        self._wake()

    # ----------------------------------------------------------------- the observer's side

    def _on_next(self, item: Any) -> None:
        on_loop = threading.get_ident() == self._loop_thread
        overflowed = False
        with self._lock:
            if self._closed or self._discard or self._end is not None:
                return
            if len(self._buffer) >= self._maxsize:
                if self._overflow == "latest":
                    self._buffer.popleft()
                    self._skipped += 1
                elif self._overflow == "error":
                    self._end = BufferOverflowError(self._maxsize, observer=CLIENT, item=item)
                    overflowed = True
                elif not on_loop:
                    # A producer thread waits for room; the loop thread never does.
                    self._waiting_producers += 1
                    try:
                        while len(self._buffer) >= self._maxsize and not self._gone():
                            self._space.wait()
                    finally:
                        self._waiting_producers -= 1
                    if self._gone():
                        return
            if not overflowed:
                self._buffer.append(item)
            pause = (
                self._overflow == "block"
                and on_loop
                and not self._paused
                and len(self._buffer) >= self._maxsize
            )
            if pause:
                self._paused = True
            # The writer creates its waiter under this lock after finding the
            # buffer empty: without one it will find this item by itself. A
            # source emitting a batch on the loop writes it itself after the
            # batch (`_flush`), unless it is to pause: then the writer drains.
            wake = self._waiter is not None and (pause or not (on_loop and self._demand.batching))
        if pause:
            self._demand.hold(self)
        if overflowed:
            self._subscription.dispose()
            self._call(self._overflowed)
        elif wake:
            self._wake()

    def _on_error(self, error: Exception) -> None:
        self._finish(error)

    def _on_completed(self) -> None:
        self._finish(DONE)

    def _finish(self, end: Exception | _Done) -> None:
        with self._lock:
            if self._end is None:
                self._end = end
        self._call(self._ended_now)
        self._wake()

    def _gone(self) -> bool:
        return self._closed or self._discard or self._end is not None

    # ----------------------------------------------------------------- on the loop

    def _call(self, callback: Callable[[], None]) -> None:
        if threading.get_ident() == self._loop_thread:
            callback()
        else:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits any more
                self._loop.call_soon_threadsafe(callback)

    def _wake(self) -> None:
        self._call(self._wake_here)

    def _wake_here(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _ended_now(self) -> None:
        if not self._ended.done():
            self._ended.set_result(None)

    def _overflowed(self) -> None:
        self._ended_now()
        if not self.overflowed.done():
            self.overflowed.set_result(None)
        self._wake_here()

    def _tick(self) -> None:
        # The one keep-alive timer: due when nothing was written for `keepalive`
        # seconds; while writes go on it only moves to the new deadline.
        keepalive = self._keepalive
        if keepalive is None or self._closed:
            return
        now = self._loop.time()
        if now >= self._idle_at and self._waiter is not None:
            self._idle = True
            self._idle_at = now + keepalive
            self._wake_here()
        self._timer = self._loop.call_at(
            self._idle_at if self._idle_at > now else now + keepalive, self._tick
        )
