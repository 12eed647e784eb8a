"""`to_redis_stream`: a pipeline's items passed on and written to a Redis Stream, one entry each.

The entries (a `start`, the items, heartbeats, the end) are spelled by
`EntryWriter` (`rxstream.io.redis.entries`), and what is written when (the
first write's check, the batches, the heartbeats, the truncated end, the
failures) is decided by one machine, `Writing` (`rxstream.io.redis.writing`).
The two shells here only hold the source back, wake the writer and perform
the machine's steps: `_SyncProducer` with a thread of its own for a
`redis.Redis`, `_AsyncProducer` with a task on the event loop for a
`redis.asyncio.Redis`.

Backpressure: items are passed downstream at once and written behind them,
in batches (one pipeline per batch, in order). At most `maxsize` entries wait
to be written, besides the batch being written (itself at most that many);
memory is bounded by twice `maxsize` entries. Then a sync producer's thread
waits in `on_next` (so the source waits too); an async producer pauses an
rxstream async source through the demand signal (`rxstream._flow`) until the
writer has caught up, and a source that cannot be paused and runs `maxsize`
further entries ahead fails the stream with `BufferOverflowError`.
Completion (or the error) is passed downstream only once the end marker is
written.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Generic, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import Disposable, SingleAssignmentDisposable

from ..._deprecate import deprecated_arguments
from ..._flow import Demand, current_demand, demand_scope
from ...errors import BufferOverflowError
from .._args import check_count, loop_for
from .._loops import _running_loop
from .client import (
    TASKS,
    AsyncRedis,
    SyncRedis,
    as_seconds,
    check_key,
    is_async,
    where_of,
)
from .cluster import asend, asend_all, send, send_all
from .entries import EntryWriter, error_payload
from .steps import Command, Fail, Idle, Step, Turn, Write, arun, run
from .writing import End, Writing

__all__ = ["to_redis_stream"]

T = TypeVar("T")
C = TypeVar("C")  # the client: SyncRedis or AsyncRedis

DEFAULT_MAXLEN = 100_000
DEFAULT_TTL = 3600.0
DEFAULT_HEARTBEAT = 2.0
DEFAULT_MAX_PENDING = 1024


@deprecated_arguments(renamed={"max_pending": "maxsize"})
def to_redis_stream(
    redis: SyncRedis | AsyncRedis,
    key: str,
    *,
    maxlen: int | None = DEFAULT_MAXLEN,
    ttl: float | timedelta = DEFAULT_TTL,
    heartbeat: float | timedelta = DEFAULT_HEARTBEAT,
    maxsize: int = DEFAULT_MAX_PENDING,
) -> Callable[[Observable[T]], Observable[T]]:
    """Pass every item through and append it to a Redis Stream, one entry per item.

    Each subscription writes a new stream at `key`: a `start` entry, one
    entry per item (the item in rxstream's versioned encoding), heartbeats
    while the stream runs, then the end (completed, or the error). Followers
    anywhere read it with `rs.from_redis_stream`. Items go downstream
    unchanged, so the operator composes with `rs.multicast` (one request, a UI,
    and Redis). See `rxstream.io.redis` for the decisions (heartbeat, TTL,
    trimming, restarts, backpressure).

    Args:
        redis: a `redis.Redis` (entries written by a thread of their own) or a
            `redis.asyncio.Redis` (by a task on the event loop; the items must
            then arrive on the loop's thread, as from an async source).
        key: the stream's key; it must not exist yet.
        maxlen: keep about this many entries (`XADD MAXLEN ~`), or None for
            no cap. Followers slower than that fail with `StoredStreamError`.
        ttl: seconds (or a `timedelta`) the key lives after the end (and
            after the last heartbeat, if the producer dies); more than `heartbeat`.
        heartbeat: seconds of silence after which the producer writes a
            heartbeat entry; followers' `heartbeat_timeout` should be a few
            times this.
        maxsize: how many entries may wait to be written before the
            source is held back (see `rxstream.io.redis`), as the bridges'
            and `multicast`'s `maxsize`. (Formerly `max_pending=`, deprecated.)

    Returns:
        An operator: items in, the same items out.

    Raises:
        ValueError: `maxlen` or `maxsize` below 1, `heartbeat` not
            positive, `ttl` not above `heartbeat`, an empty `key`.
        TypeError: `key` is not a str, or an option is not a number.

    Errors (via `on_error`):
        TransportError: Redis unreachable or failing (at the first write: before
            the source is subscribed at all, for a sync client).
        StoredStreamError: the key already holds a stream or another value.
        BufferOverflowError: an async source that cannot be paused ran
            `maxsize` entries ahead of the writer.
        TypeError: an item the codec cannot encode (e.g. a raw `str` line).

    Example:
        >>> redis = Redis()  # doctest: +SKIP
        >>> rs.from_request(client, "POST", url, json=payload).pipe(  # doctest: +SKIP
        ...     rs.sse_frames(), rs.decode(), rs.to_redis_stream(redis, "answer:42")
        ... ).subscribe(print)

    Marbles (items pass at once; the end passes once it is written)::

        source:   -a-b-|
        output:   -a-b-|
        Redis:    S-a-b-E      (start, items, end)
    """
    check_key(key)
    if maxlen is not None:
        check_count("maxlen", maxlen)
    check_count("maxsize", maxsize)
    heartbeat_s = as_seconds("heartbeat", heartbeat)
    ttl_s = as_seconds("ttl", ttl)
    if ttl_s <= heartbeat_s:
        raise ValueError(
            f"ttl ({ttl_s:g} s) must be longer than heartbeat ({heartbeat_s:g} s): the key "
            "would expire between two heartbeats"
        )
    asynchronous = is_async(redis)
    where = where_of(redis)

    def operator(source: Observable[T]) -> Observable[T]:
        def subscribe(
            observer: abc.ObserverBase[T], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            writer = EntryWriter(key, maxlen=maxlen, ttl=ttl_s, heartbeat=heartbeat_s)
            writing = Writing(
                writer, maxsize=maxsize, where=where, encoded=asynchronous, gather=asynchronous
            )
            shell = _AsyncProducer if asynchronous else _SyncProducer
            producer = shell(redis, writing, observer)  # type: ignore[arg-type]
            return producer.subscribe(source, scheduler)

        return Observable(subscribe)

    return operator


class _Producer(Generic[T, C]):
    """What both shells hold: the client, the machine (`Writing`), the observer, the source."""

    def __init__(self, client: C, writing: Writing, observer: abc.ObserverBase[T]) -> None:
        self._client = client
        self._w = writing
        self._observer = observer
        self._stopped = False  # downstream got its terminal event, or was disposed
        self._upstream = SingleAssignmentDisposable()

    def _terminate(self, error: Exception | None) -> None:
        """Pass the end downstream, once: `error`, or completion when None."""
        if self._stopped:
            return
        self._stopped = True
        if error is not None:
            self._observer.on_error(error)
        else:
            self._observer.on_completed()


class _SyncProducer(_Producer[T, SyncRedis]):
    """A producer with a sync client: a writer thread performs the machine's steps, under
    a `Condition` that the source's thread waits on while the queue is full."""

    def __init__(self, client: SyncRedis, writing: Writing, observer: abc.ObserverBase[T]) -> None:
        super().__init__(client, writing, observer)
        self._cond = threading.Condition()
        self._idle = False  # the writer waits for work
        self._emit = threading.RLock()
        self._written = threading.Event()

    def subscribe(
        self, source: Observable[T], scheduler: abc.SchedulerBase | None
    ) -> abc.DisposableBase:
        try:
            run(self._w.starting(time.monotonic), self._perform)
        except Exception as exc:
            self._observer.on_error(self._w.mapped(exc))
            return Disposable()
        name = f"rxstream redis writer {self._w.key!r}"
        threading.Thread(target=self._run, name=name, daemon=True).start()
        self._upstream.disposable = source.subscribe(
            self._on_next, self._on_error, self._on_completed, scheduler=scheduler
        )
        return Disposable(self._dispose)

    def _on_next(self, item: T) -> None:
        if self._stopped:
            return
        try:
            queued = self._w.admit(item)
        except TypeError as exc:
            self._upstream.dispose()
            self._on_error(exc)
            return
        with self._cond:
            while self._w.full and not self._w.closed:
                self._cond.wait()
            if self._w.closed:
                return
            self._w.queue.append(queued)
            if self._idle:
                self._cond.notify_all()
        with self._emit:
            if not self._stopped:
                self._observer.on_next(item)

    def _on_error(self, error: Exception) -> None:
        self._finish((b"error", error_payload(error)), error)

    def _on_completed(self) -> None:
        self._finish((b"end", None), None)

    def _finish(self, end: End, error: Exception | None) -> None:
        with self._cond:
            if not self._w.ended(end, error):
                return
            self._cond.notify_all()
        self._written.wait()
        with self._emit:
            self._terminate(self._w.outcome)

    def _dispose(self) -> None:
        self._stopped = True
        with self._cond:
            self._w.truncate()
            self._cond.notify_all()
        self._upstream.dispose()

    def _run(self) -> None:
        try:
            run(self._w.steps(time.monotonic, start=False, guard=self._cond), self._perform)
        finally:
            self._written.set()

    def _perform(self, step: Step) -> Any:
        match step:
            case Command(command=command, failover=failover):
                return (
                    send(self._client, command)
                    if failover
                    else self._client.execute_command(*command)
                )
            case Idle(seconds=seconds):
                with self._cond:
                    self._idle = True
                    self._cond.wait_for(lambda: self._w.has_work, seconds)
                    self._idle = False
            case Write(commands=commands):
                with self._cond:
                    self._cond.notify_all()  # the queue has room again
                if commands:
                    send_all(self._client, commands)
            case Fail(error=error, ended=ended):
                with self._cond:
                    self._cond.notify_all()
                if not ended:  # else the source's end, waiting for the writer, passes it on
                    with self._emit:
                        self._terminate(error)
                    self._upstream.dispose()
            case _:
                raise TypeError(f"a sync Redis writer cannot perform {step!r}")
        return None


class _JointDemand(Demand):
    """The demand an async producer hands its source: paused while its queue is full,
    or while the consumer downstream (if it made a demand) is paused."""

    def __init__(self, outer: Demand | None) -> None:
        super().__init__()
        self._outer = outer

    @property
    def paused(self) -> bool:
        return super().paused or (self._outer is not None and self._outer.paused)

    async def wait(self) -> None:
        while True:
            if self._outer is not None:
                await self._outer.wait()
            await super().wait()
            if not self.paused:
                return


class _AsyncProducer(_Producer[T, AsyncRedis]):
    """A producer with an async client: a task on the loop performs the machine's steps."""

    def __init__(self, client: AsyncRedis, writing: Writing, observer: abc.ObserverBase[T]) -> None:
        super().__init__(client, writing, observer)
        self._wake = asyncio.Event()
        self._demand = _JointDemand(current_demand())
        self._thread: int | None = None  # the loop's thread, once known
        self._loop: asyncio.AbstractEventLoop | None = None

    def subscribe(
        self, source: Observable[T], scheduler: abc.SchedulerBase | None
    ) -> abc.DisposableBase:
        loop = self._loop = loop_for(scheduler, what="an async Redis client", instead="redis.Redis")
        if _running_loop() is loop:
            self._thread = threading.get_ident()
            task: Any = loop.create_task(self._run())
        else:
            task = asyncio.run_coroutine_threadsafe(self._run(), loop)
        TASKS.add(task)
        task.add_done_callback(TASKS.discard)
        with demand_scope(self._demand):
            self._upstream.disposable = source.subscribe(
                self._on_next, self._on_error, self._on_completed, scheduler=scheduler
            )
        return Disposable(self._dispose)

    def _on_next(self, item: T) -> None:
        if self._stopped or self._w.end is not None:
            return
        if self._thread is not None and threading.get_ident() != self._thread:
            self._upstream.dispose()
            self._on_error(
                RuntimeError(
                    "to_redis_stream with an async Redis client takes its items on the event "
                    "loop's thread (from an async source); with a sync source use redis.Redis"
                )
            )
            return
        try:
            data = self._w.admit(item)
        except (TypeError, BufferOverflowError) as exc:
            self._upstream.dispose()
            self._on_error(exc)
            return
        self._w.queue.append(data)
        if self._w.full:
            self._demand.pause()
        self._wake.set()
        self._observer.on_next(item)

    def _on_error(self, error: Exception) -> None:
        if self._w.end is None and self._w.ended((b"error", error_payload(error)), error):
            self._wake.set()

    def _on_completed(self) -> None:
        if self._w.ended((b"end", None), None):
            self._wake.set()

    def _dispose(self) -> None:
        self._stopped = True
        if self._w.truncate():
            if self._thread is None or threading.get_ident() == self._thread:
                self._wake.set()
            elif self._loop is not None and not self._loop.is_closed():
                # Disposed from another thread: wake the writer on its loop.
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._wake.set)
        self._upstream.dispose()

    async def _run(self) -> None:
        self._thread = threading.get_ident()
        await arun(self._w.steps(time.monotonic, start=True), self._perform)
        self._terminate(self._w.outcome)

    async def _perform(self, step: Step) -> Any:
        match step:
            case Command(command=command, failover=failover):
                if failover:
                    return await asend(self._client, command)
                return await self._client.execute_command(*command)
            case Idle(seconds=seconds):
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(seconds):
                        await self._wake.wait()
            case Turn():
                await asyncio.sleep(0)
            case Write(commands=commands):
                self._demand.resume()
                if commands:
                    await asend_all(self._client, commands)
            case Fail(error=error):
                self._demand.resume()
                self._terminate(error)
                self._upstream.dispose()
            case _:
                raise TypeError(f"an async Redis writer cannot perform {step!r}")
        return None
