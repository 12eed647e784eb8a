"""`to_redis_stream`: a pipeline's items passed on and written to a Redis Stream, one entry each.

The entries (a `start`, the items, heartbeats, the end) are spelled by
`EntryWriter` (`rxstream.io.redis.entries`); the two producers here only
hold the queue and send its batches: `_SyncProducer` with a thread of its
own for a `redis.Redis`, `_AsyncProducer` with a task on the event loop for
a `redis.asyncio.Redis`. What they share (the first write's check, the
truncated end, the mapping of errors) is `_Producer`.

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
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Generic, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import Disposable, SingleAssignmentDisposable

from ..._deprecate import deprecated_arguments
from ..._flow import Demand, current_demand, demand_scope
from ...errors import BufferOverflowError, StoredStreamError, TruncatedStreamError, excerpt
from .._args import check_count, loop_for
from .._loops import _running_loop
from .client import (
    TASKS,
    AsyncRedis,
    SyncRedis,
    as_seconds,
    check_key,
    is_async,
    map_redis_error,
    where_of,
)
from .cluster import asend_all, send_all
from .entries import EntryWriter, Reply, encodable, error_payload, item_payload

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
            shell = _AsyncProducer if asynchronous else _SyncProducer
            producer = shell(redis, writer, observer, maxsize=maxsize, where=where)  # type: ignore[arg-type]
            return producer.subscribe(source, scheduler)

        return Observable(subscribe)

    return operator


class _Producer(ABC, Generic[T, C]):
    """What the sync and async producers share: the first write's check, the end, the emissions."""

    def __init__(
        self,
        client: C,
        writer: EntryWriter,
        observer: abc.ObserverBase[T],
        *,
        maxsize: int,
        where: str,
    ) -> None:
        self._client = client
        self._writer = writer
        self._observer = observer
        self._maxsize = maxsize
        self._where = where
        self._queue: deque[Any] = deque()  # items (sync) or their payloads (async)
        self._end: tuple[bytes, bytes | None] | None = None
        self._error: Exception | None = None  # the upstream error, passed on after the end
        self._failure: Exception | None = None  # what went wrong writing
        self._stopped = False  # downstream got its terminal event, or was disposed
        self._upstream = SingleAssignmentDisposable()
        self._setup()

    @abstractmethod
    def _setup(self) -> None:
        """The shell's own state (its locks and thread, or its event and demand)."""

    @property
    def _key(self) -> str:
        return self._writer.key

    def _started(self, reply: Reply) -> None:
        held = reply.decode() if isinstance(reply, bytes) else str(reply)
        if held == "none":
            return
        if held == "stream":
            reason = (
                "the key already holds a stream (an earlier or a concurrent producer): "
                "to_redis_stream writes one new stream per key and subscription; use a fresh "
                "key, or delete the old stream"
            )
        else:
            reason = f"the key holds a {excerpt(held)}, not a stream"
        raise StoredStreamError(self._key, reason)

    def _truncated(self) -> bytes:
        return error_payload(
            TruncatedStreamError(
                f"the producer of Redis stream {self._key!r} stopped before the end: its "
                f"subscription was disposed after {self._writer.items + len(self._queue)} item(s)"
            )
        )

    def _mapped(self, exc: Exception) -> Exception:
        return map_redis_error(exc, self._key, self._where) or exc

    def _beat_wait(self) -> float | None:
        """How long the writer may wait for work before the next heartbeat is due, or None
        when it has work (items queued, or the end) or the heartbeat is due now."""
        if self._queue or self._end is not None:
            return None
        wait = self._writer.next_beat() - time.monotonic()
        return wait if wait > 0 else None

    def _take(self) -> tuple[list[Any], tuple[bytes, bytes | None] | None]:
        """The next batch: all that is queued, and the end if it has come."""
        batch = list(self._queue)
        self._queue.clear()
        return batch, self._end

    def _truncate(self) -> bool:
        """Disposed downstream: the stream ends with `TruncatedStreamError`, unless it has
        an end already; whether the writer is to be woken for it."""
        if self._end is not None:
            return False
        self._end = (b"error", self._truncated())
        return True

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
    """A producer with a sync client: a writer thread drains the queue in batches."""

    def _setup(self) -> None:
        self._cond = threading.Condition()
        self._idle = False  # the writer waits for work
        self._emit = threading.RLock()
        self._written = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"rxstream redis writer {self._key!r}", daemon=True
        )

    def subscribe(
        self, source: Observable[T], scheduler: abc.SchedulerBase | None
    ) -> abc.DisposableBase:
        try:
            self._started(self._client.execute_command(*self._writer.start(time.monotonic())))
        except Exception as exc:
            self._observer.on_error(self._mapped(exc))
            return Disposable()
        self._thread.start()
        self._upstream.disposable = source.subscribe(
            self._on_next, self._on_error, self._on_completed, scheduler=scheduler
        )
        return Disposable(self._dispose)

    def _on_next(self, item: T) -> None:
        if self._stopped:
            return
        if not encodable(item):
            self._upstream.dispose()
            try:
                item_payload(item)
            except TypeError as exc:
                self._on_error(exc)
            return
        with self._cond:
            while len(self._queue) >= self._maxsize and self._failure is None and self._end is None:
                self._cond.wait()
            if self._failure is not None or self._end is not None:
                return
            self._queue.append(item)
            if self._idle:
                self._cond.notify_all()
        with self._emit:
            if not self._stopped:
                self._observer.on_next(item)

    def _on_error(self, error: Exception) -> None:
        self._finish((b"error", error_payload(error)), error)

    def _on_completed(self) -> None:
        self._finish((b"end", None), None)

    def _finish(self, end: tuple[bytes, bytes | None], error: Exception | None) -> None:
        with self._cond:
            if self._end is not None:
                return
            self._end, self._error = end, error
            self._cond.notify_all()
        self._written.wait()
        with self._emit:
            self._terminate(self._error or self._failure)

    def _dispose(self) -> None:
        self._stopped = True
        with self._cond:
            self._truncate()
            self._cond.notify_all()
        self._upstream.dispose()

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while (wait := self._beat_wait()) is not None:
                        self._idle = True
                        self._cond.wait(wait)
                        self._idle = False
                    items, end = self._take()
                    self._cond.notify_all()
                # Encoded here rather than in `on_next`: the source's thread does
                # the least, so the two threads contend less for the GIL.
                data, refused = self._encode(items)
                if refused is not None:
                    end = (b"error", error_payload(refused))
                commands = self._writer.commands(data, end, time.monotonic())
                if commands:
                    send_all(self._client, commands)
                if refused is not None:
                    self._refused(refused)
                if end is not None:
                    return
        except Exception as exc:
            failure = self._mapped(exc)
            with self._cond:
                self._failure = failure
                ended = self._end is not None
                self._cond.notify_all()
            if not ended:
                with self._emit:
                    self._terminate(failure)
                self._upstream.dispose()
        finally:
            self._written.set()

    def _encode(self, items: list[Any]) -> tuple[list[bytes], TypeError | None]:
        """The payloads of `items`, up to one holding a value that is not JSON (and that error)."""
        data = []
        for item in items:
            try:
                data.append(item_payload(item))
            except TypeError as exc:
                return data, exc
        return data, None

    def _refused(self, error: TypeError) -> None:
        """An item could not be encoded (its error entry is written): end the stream with it."""
        with self._cond:
            finishing = self._end is not None  # then `_finish` passes the error on
            self._end, self._error = self._end or (b"error", b""), error
            self._cond.notify_all()
        if not finishing:
            with self._emit:
                self._terminate(error)
            self._upstream.dispose()


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
    """A producer with an async client: a task on the loop drains the queue in batches."""

    def _setup(self) -> None:
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
        if self._stopped or self._end is not None:
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
            data = item_payload(item)
        except TypeError as exc:
            self._upstream.dispose()
            self._on_error(exc)
            return
        if len(self._queue) >= 2 * self._maxsize:
            self._upstream.dispose()
            self._on_error(
                BufferOverflowError(
                    2 * self._maxsize, observer=f"to_redis_stream({self._key!r})", item=item
                )
            )
            return
        self._queue.append(data)
        if len(self._queue) >= self._maxsize:
            self._demand.pause()
        self._wake.set()
        self._observer.on_next(item)

    def _on_error(self, error: Exception) -> None:
        if self._end is None:
            self._end, self._error = (b"error", error_payload(error)), error
            self._wake.set()

    def _on_completed(self) -> None:
        if self._end is None:
            self._end = (b"end", None)
            self._wake.set()

    def _dispose(self) -> None:
        self._stopped = True
        if self._truncate():
            if self._thread is None or threading.get_ident() == self._thread:
                self._wake.set()
            elif self._loop is not None and not self._loop.is_closed():
                # Disposed from another thread: wake the writer on its loop.
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(self._wake.set)
        self._upstream.dispose()

    async def _run(self) -> None:
        self._thread = threading.get_ident()
        try:
            self._started(await self._client.execute_command(*self._writer.start(time.monotonic())))
            while True:
                while (wait := self._beat_wait()) is not None:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wait):
                            await self._wake.wait()
                # A source that is producing right now (one item per turn of the loop)
                # adds to this batch while it grows: fewer, larger writes. A source
                # that waits (a model between two tokens) costs one turn, no more.
                size = -1
                while size != len(self._queue) < self._maxsize and self._end is None:
                    size = len(self._queue)
                    await asyncio.sleep(0)
                payloads, end = self._take()
                self._demand.resume()
                commands = self._writer.commands(payloads, end, time.monotonic())
                if commands:
                    await asend_all(self._client, commands)
                if end is not None:
                    break
        except Exception as exc:
            self._failure = self._mapped(exc)
            self._demand.resume()
            self._terminate(self._error or self._failure)
            self._upstream.dispose()
            return
        self._terminate(self._error)
