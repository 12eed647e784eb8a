"""Redis Streams: a pipeline's items kept in Redis, for followers elsewhere and for resuming.

    # the process that reads the provider:
    rs.from_request(aclient, "POST", url, json=payload).pipe(
        rs.sse_frames(), rs.decode(), rs.to_redis_stream(redis, "answer:42")
    ).subscribe(ui)

    # any process, any time (a browser that reconnects sends Last-Event-ID):
    rs.from_redis_stream(redis, "answer:42", after=last_event_id, ids=True).pipe(rs.to_sse())

Both work with `redis.Redis` and `redis.asyncio.Redis` (redis-py, the `redis`
extra; typed here against small protocols, so any client with the same
`execute_command` and `pipeline` fits). What is stored, entry by entry, is
described in `rxstream.io._redis_entries`: one entry per item in the
versioned encoding of `rxstream.core.codec` (its version beside each entry),
between a `start` entry and an `end` (completed) or `error` entry, each
numbered, so a gap can be seen and a retried write is read once.

Decisions, where Redis leaves a choice:

- One stream per key and subscription: the producer's first write creates
  the stream atomically (a Lua `EVAL`) and fails with `StoredStreamError` when
  the key already holds anything, so two producers never interleave.
- Heartbeat: the producer appends a `beat` entry when it has written nothing
  for `heartbeat` seconds (default 2). A follower counts any entry as a sign
  of life and measures its age by the entry id (Redis's clock), so a follower
  that joins a stream whose producer died long ago fails at once, and one
  that follows a live stream fails `heartbeat_timeout` seconds (default 10)
  after the last entry, with `StreamTimeoutError`.
- TTL: the key expires `ttl` seconds (default one hour) after the end; while
  the stream runs, the expiry is pushed back with every heartbeat, so a long
  stream never expires under its followers (and one whose producer died
  expires `ttl` after its last heartbeat).
- Trimming: `XADD ... MAXLEN ~ maxlen` (default 100,000 entries). A follower
  that falls behind the trimming, or resumes after an id already trimmed,
  fails with `StoredStreamError` naming the entries that are gone and why:
  the follower then asks Redis (`TYPE`, `XINFO STREAM`) whether the key is
  gone (deleted, expired, lost in a restart), the stream was reset (Redis 7
  counts fewer entries added to the key than the producer numbered: deleted
  or lost, then written again), or it was trimmed (all counted). Redis 6
  keeps no such count; the message then names both causes.
- A key that does not exist: a follower from the start (`after=None`) waits
  for it up to `heartbeat_timeout` (a follower may well subscribe before the
  producer's first write), then fails with `StreamTimeoutError`; a follower
  that resumes (`after=` an id) fails at once with `StoredStreamError`: the
  stream it saw has expired or was deleted.
- Redis restarted mid-stream: both sides go through the client's retry policy
  (redis-py 8 retries a failed command 10 times with backoff by default).
  When Redis comes back with the stream (persistence on), producer and
  followers go on where they were, every item once; when it comes back
  without it, a follower that had not read the lost entries fails with
  `StoredStreamError` naming them; when the client gives up, the follower
  (or the producer) fails with `TransportError`.
- A producer whose subscription is disposed before the end writes an `error`
  entry (`TruncatedStreamError`), so followers end at once instead of
  waiting for the heartbeat timeout.

Backpressure on the producer's side: items are passed downstream at once and
written behind them, in batches (one pipeline per batch, in order), by a
writer of their own: a thread for a sync client, a task on the event loop for
an async one (the loop is never blocked). At most `maxsize` entries wait
to be written, besides the batch being written (itself at most that many);
memory is bounded by twice `maxsize` entries. Then a sync producer's
thread waits in `on_next` (so the
source waits too); an async producer pauses an rxstream async source through
the demand signal (`rxstream._flow`) until the writer has caught up, and a
source that cannot be paused and runs `maxsize` further entries ahead
fails the stream with `BufferOverflowError`. Completion (or the error) is
passed downstream only once the end marker is written.

Errors (via `on_error`): Redis unreachable or failing is `TransportError`
(the message says where and what redis-py reported; nothing of a password);
a key of another type, a foreign or newer entry, a malformed or unknown resume
id and a gap are `StoredStreamError`; a dead producer is `StreamTimeoutError`;
an error the producer stored comes back as its own class.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import timedelta
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

from reactivex import Observable, abc
from reactivex.disposable import Disposable, SingleAssignmentDisposable

from .._deprecate import deprecated_arguments
from .._flow import Demand, current_demand, demand_scope
from ..errors import (
    BufferOverflowError,
    StoredStreamError,
    TransportError,
    TruncatedStreamError,
    excerpt,
)
from ..models import StreamEntry
from ._args import check_count, loop_for
from ._loops import Handle, async_source, sync_source
from ._redis_entries import (
    EntryReader,
    EntryWriter,
    Reply,
    encodable,
    entries_of,
    error_payload,
    item_payload,
    parse_id,
)

__all__ = [
    "AsyncPipeline",
    "AsyncRedis",
    "SyncPipeline",
    "SyncRedis",
    "from_redis_stream",
    "to_redis_stream",
]

T = TypeVar("T")

DEFAULT_MAXLEN = 100_000
DEFAULT_TTL = 3600.0
DEFAULT_HEARTBEAT = 2.0
DEFAULT_HEARTBEAT_TIMEOUT = 10.0
DEFAULT_MAX_PENDING = 1024

# How many entries one XREAD asks for.
_READ_COUNT = 512
# The longest one XREAD blocks: a sync follower notices a dispose between two
# reads (so within this), an async one is cancelled at once and can block longer.
_SYNC_POLL = 0.25
_ASYNC_POLL = 1.0


class SyncPipeline(Protocol):
    """What rxstream uses of a redis-py pipeline (`redis.Redis.pipeline()`)."""

    def execute_command(self, *args: Any, **options: Any) -> Any: ...

    def execute(self, raise_on_error: bool = ...) -> list[Any]: ...


class SyncRedis(Protocol):
    """What rxstream uses of a sync Redis client (`redis.Redis`, `redis.RedisCluster`)."""

    def execute_command(self, *args: Any, **options: Any) -> Any: ...

    def pipeline(self, transaction: bool = ..., shard_hint: Any = ...) -> SyncPipeline: ...


class AsyncPipeline(Protocol):
    """What rxstream uses of a redis-py asyncio pipeline."""

    def execute_command(self, *args: Any, **kwargs: Any) -> Any: ...

    async def execute(self, raise_on_error: bool = ...) -> list[Any]: ...


class AsyncRedis(Protocol):
    """What rxstream uses of an async Redis client (`redis.asyncio.Redis`)."""

    async def execute_command(self, *args: Any, **options: Any) -> Any: ...

    def pipeline(self, transaction: bool = ..., shard_hint: Any = ...) -> AsyncPipeline: ...


# --------------------------------------------------------------------------- producer


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
    and Redis). See the module docstring for the decisions (heartbeat, TTL,
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
            source is held back (see the module docstring), as the bridges'
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
    _check_key(key)
    if maxlen is not None:
        check_count("maxlen", maxlen)
    check_count("maxsize", maxsize)
    heartbeat_s = _seconds("heartbeat", heartbeat)
    ttl_s = _seconds("ttl", ttl)
    if ttl_s <= heartbeat_s:
        raise ValueError(
            f"ttl ({ttl_s:g} s) must be longer than heartbeat ({heartbeat_s:g} s): the key "
            "would expire between two heartbeats"
        )
    is_async = _is_async(redis)
    where = _where(redis)

    def operator(source: Observable[T]) -> Observable[T]:
        def subscribe(
            observer: abc.ObserverBase[T], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            writer = EntryWriter(key, maxlen=maxlen, ttl=ttl_s, heartbeat=heartbeat_s)
            if is_async:
                return _AsyncProducer(
                    redis,  # type: ignore[arg-type]
                    writer,
                    observer,
                    maxsize=maxsize,
                    where=where,
                ).subscribe(source, scheduler)
            return _SyncProducer(
                redis,  # type: ignore[arg-type]
                writer,
                observer,
                maxsize=maxsize,
                where=where,
            ).subscribe(source, scheduler)

        return Observable(subscribe)

    return operator


class _Producer(Generic[T]):
    """What the sync and async producers share: the first write's check, the end, the emissions."""

    def __init__(
        self, writer: EntryWriter, observer: abc.ObserverBase[T], *, maxsize: int, where: str
    ) -> None:
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


class _SyncProducer(_Producer[T]):
    """A producer with a sync client: a writer thread drains the queue in batches."""

    def __init__(
        self,
        client: SyncRedis,
        writer: EntryWriter,
        observer: abc.ObserverBase[T],
        *,
        maxsize: int,
        where: str,
    ) -> None:
        super().__init__(writer, observer, maxsize=maxsize, where=where)
        self._client = client
        self._cond = threading.Condition()
        self._idle = False  # the writer waits for work
        self._emit = threading.RLock()
        self._written = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"rxstream redis writer {writer.key!r}", daemon=True
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
            if self._stopped:
                return
            self._stopped = True
            if self._error is not None:
                self._observer.on_error(self._error)
            elif self._failure is not None:
                self._observer.on_error(self._failure)
            else:
                self._observer.on_completed()

    def _dispose(self) -> None:
        self._stopped = True
        with self._cond:
            if self._end is None:
                self._end = (b"error", self._truncated())
            self._cond.notify_all()
        self._upstream.dispose()

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._queue and self._end is None:
                        wait = self._writer.next_beat() - time.monotonic()
                        if wait <= 0:
                            break
                        self._idle = True
                        self._cond.wait(wait)
                        self._idle = False
                    items = list(self._queue)
                    self._queue.clear()
                    end = self._end
                    self._cond.notify_all()
                # Encoded here rather than in `on_next`: the source's thread does
                # the least, so the two threads contend less for the GIL.
                data, refused = self._encode(items)
                if refused is not None:
                    end = (b"error", error_payload(refused))
                commands = self._writer.commands(data, end, time.monotonic())
                if commands:
                    pipe = self._client.pipeline(transaction=False)
                    for command in commands:
                        pipe.execute_command(*command)
                    pipe.execute()
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
                    if not self._stopped:
                        self._stopped = True
                        self._observer.on_error(failure)
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
                if not self._stopped:
                    self._stopped = True
                    self._observer.on_error(error)
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


_TASKS: set[Any] = set()


class _AsyncProducer(_Producer[T]):
    """A producer with an async client: a task on the loop drains the queue in batches."""

    def __init__(
        self,
        client: AsyncRedis,
        writer: EntryWriter,
        observer: abc.ObserverBase[T],
        *,
        maxsize: int,
        where: str,
    ) -> None:
        super().__init__(writer, observer, maxsize=maxsize, where=where)
        self._client = client
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
        _TASKS.add(task)
        task.add_done_callback(_TASKS.discard)
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
        if self._end is None:
            self._end = (b"error", self._truncated())
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
                while not self._queue and self._end is None:
                    wait = self._writer.next_beat() - time.monotonic()
                    if wait <= 0:
                        break
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
                payloads = list(self._queue)
                self._queue.clear()
                end = self._end
                self._demand.resume()
                commands = self._writer.commands(payloads, end, time.monotonic())
                if commands:
                    pipe = self._client.pipeline(transaction=False)
                    for command in commands:
                        pipe.execute_command(*command)
                    await pipe.execute()
                if end is not None:
                    break
        except Exception as exc:
            self._failure = self._mapped(exc)
            self._demand.resume()
            if not self._stopped:
                self._stopped = True
                self._observer.on_error(self._error or self._failure)
            self._upstream.dispose()
            return
        if not self._stopped:
            self._stopped = True
            if self._error is not None:
                self._observer.on_error(self._error)
            else:
                self._observer.on_completed()


# --------------------------------------------------------------------------- follower


@overload
def from_redis_stream(
    redis: SyncRedis | AsyncRedis,
    key: str,
    *,
    after: str | None = None,
    ids: Literal[False] = False,
    heartbeat_timeout: float | timedelta = DEFAULT_HEARTBEAT_TIMEOUT,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[Any]: ...


@overload
def from_redis_stream(
    redis: SyncRedis | AsyncRedis,
    key: str,
    *,
    after: str | None = None,
    ids: Literal[True],
    heartbeat_timeout: float | timedelta = DEFAULT_HEARTBEAT_TIMEOUT,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[StreamEntry]: ...


def from_redis_stream(
    redis: SyncRedis | AsyncRedis,
    key: str,
    *,
    after: str | None = None,
    ids: bool = False,
    heartbeat_timeout: float | timedelta = DEFAULT_HEARTBEAT_TIMEOUT,
    scheduler: abc.SchedulerBase | None = None,
) -> Observable[Any] | Observable[StreamEntry]:
    """Replay a stream written by `rs.to_redis_stream`, then follow it until its end.

    Each subscription reads from the start (or right after `after`), then
    waits for new entries (`XREAD BLOCK`) until the end marker: it completes
    there, or raises the error the producer stored, as its own class. Items
    come out equal to the items that went in, in order, each exactly once, so
    any operator runs on this side as on the producer's.

    Args:
        redis: a `redis.Redis` (read on the scheduler, by default the current
            thread: `subscribe` returns at the end) or a `redis.asyncio.Redis`
            (read as a task on the running loop, or an `AsyncIOScheduler`'s).
        key: the stream's key.
        after: an entry id (`"<ms>-<seq>"`, as an SSE `Last-Event-ID`): start
            right after that entry. None or `""`: from the start.
        ids: emit `StreamEntry(id, item)`, whose id `rs.to_sse` writes as the
            SSE event id, so a reconnecting browser resumes with it.
        heartbeat_timeout: seconds (or a `timedelta`) without any entry (the
            producer writes heartbeats while it lives) after which the
            producer is taken for dead; also how long to wait for a key that
            does not exist yet (`after=None` only).
        scheduler: sync: where the read loop runs; async: an
            `AsyncIOScheduler` picks the loop.

    Returns:
        A cold observable of the stored items (or `StreamEntry`s).

    Raises:
        TypeError: `key` or `after` is not a str, `heartbeat_timeout` not a number.
        ValueError: `heartbeat_timeout` not positive, an empty `key`.

    Errors (via `on_error`):
        StreamTimeoutError: no stream appeared at the key, or the producer
            stopped without an end (`limit="heartbeat"`).
        StoredStreamError: a malformed `after`, an `after` the stream does
            not hold (trimmed: the message names the entries gone; or never
            one of its ids), a resume of a key that no longer exists, a key
            of another type, entries gone before this reader read them, an
            entry not written by rxstream.
        TransportError: Redis unreachable, or gone for longer than the
            client's retries.
        StreamError: the error the producer stored (its own class).

    Example:
        >>> rs.from_redis_stream(redis, "answer:42", after="1700000000000-3")  # doctest: +SKIP

    Marbles (resuming after b, while the producer writes d)::

        Redis:    S-a-b-c---d-E
        output:         c---d-|
    """
    _check_key(key)
    if after is not None and not isinstance(after, str):
        raise TypeError(f"after must be a str entry id or None, got {type(after).__name__}")
    timeout = _seconds("heartbeat_timeout", heartbeat_timeout)
    where = _where(redis)

    def plan() -> _Follow:
        return _Follow(key, after or None, ids=ids, timeout=timeout, where=where)

    if _is_async(redis):
        afollower = _AsyncFollower(redis, plan, _poll(redis, _ASYNC_POLL))  # type: ignore[arg-type]
        return async_source(afollower.batches, scheduler)
    follower = _SyncFollower(redis, plan, _poll(redis, _SYNC_POLL))  # type: ignore[arg-type]
    return sync_source(follower.batches, scheduler)


class _SyncFollower:
    """The read loop of `from_redis_stream` for `redis.Redis`: one `_Follow` per subscription.

    `batches` is what `sync_source` reads; the rules are in `_Follow`, this
    shell only sends its commands and hands it the replies.
    """

    def __init__(self, client: SyncRedis, plan: Callable[[], _Follow], poll: float) -> None:
        self._client = client
        self._plan = plan
        self._poll = poll

    def batches(self, handle: Handle) -> Iterator[list[Any]]:
        """The items, a batch per `XREAD` that brought any, to the end or until disposed."""
        follow = self._plan()
        try:
            pipe = self._client.pipeline(transaction=False)
            for command in follow.opening():
                pipe.execute_command(*command)
            t0 = time.monotonic()
            replies = pipe.execute(raise_on_error=False)
            follow.opened(replies, (t0 + time.monotonic()) / 2)
            while not follow.done and not handle.disposed:
                reply = self._client.execute_command(*follow.read(time.monotonic(), self._poll))
                batch = follow.received(reply, time.monotonic())
                if batch:
                    yield batch
            follow.reader.check()
        except Exception as exc:
            error = follow.mapped(exc)
            if follow.explains(error):
                error = follow.explained(error, self._diagnosis(follow))
        else:
            return
        raise error

    def _diagnosis(self, follow: _Follow) -> list[Any] | None:
        try:
            pipe = self._client.pipeline(transaction=False)
            for command in follow.diagnosis():
                pipe.execute_command(*command)
            replies: list[Any] = pipe.execute(raise_on_error=False)
        except Exception:  # the error at hand is the one to report
            return None
        return replies


class _AsyncFollower:
    """The read loop of `from_redis_stream` for `redis.asyncio.Redis` (see `_SyncFollower`)."""

    def __init__(self, client: AsyncRedis, plan: Callable[[], _Follow], poll: float) -> None:
        self._client = client
        self._plan = plan
        self._poll = poll

    async def batches(self, handle: Handle) -> AsyncIterator[list[Any]]:
        """The items, a batch per `XREAD` that brought any, to the end or until disposed."""
        follow = self._plan()
        try:
            pipe = self._client.pipeline(transaction=False)
            for command in follow.opening():
                pipe.execute_command(*command)
            t0 = time.monotonic()
            replies = await pipe.execute(raise_on_error=False)
            follow.opened(replies, (t0 + time.monotonic()) / 2)
            # The flag as well as the cancel: a read that returns no entries yields no
            # batch, so without it a lost cancellation would leave the loop polling.
            while not follow.done and not handle.disposed:
                reply = await self._client.execute_command(
                    *follow.read(time.monotonic(), self._poll)
                )
                batch = follow.received(reply, time.monotonic())
                if batch:
                    yield batch
            follow.reader.check()
        except Exception as exc:
            error = follow.mapped(exc)
            if follow.explains(error):
                error = follow.explained(error, await self._diagnosis(follow))
        else:
            return
        raise error

    async def _diagnosis(self, follow: _Follow) -> list[Any] | None:
        try:
            pipe = self._client.pipeline(transaction=False)
            for command in follow.diagnosis():
                pipe.execute_command(*command)
            replies: list[Any] = await pipe.execute(raise_on_error=False)
        except Exception:  # the error at hand is the one to report
            return None
        return replies


class _Follow:
    """A follower's plan, shared by the sync and async shells: which command next, and what
    its reply means. Time comes in as arguments (a monotonic clock); no I/O here."""

    def __init__(
        self, key: str, after: str | None, *, ids: bool, timeout: float, where: str
    ) -> None:
        self.key = key
        self.after = after
        self.timeout = timeout
        self.where = where
        self.reader = EntryReader(key, ids=ids)
        self.offset = 0.0  # Redis's clock minus ours, in seconds
        self.opened_at = 0.0
        self.existed = False

    @property
    def done(self) -> bool:
        return self.reader.done

    def opening(self) -> list[tuple[Any, ...]]:
        """The first commands, sent together: the key's type, Redis's clock, where to resume."""
        if self.after is not None and parse_id(self.after) is None:
            raise StoredStreamError(
                self.key,
                f"cannot resume after {excerpt(self.after)!r}: not a stream entry id (expected "
                "'<milliseconds>-<sequence>', e.g. '1700000000000-0', as sent in the "
                "Last-Event-ID header)",
                after=self.after,
            )
        commands: list[tuple[Any, ...]] = [("TYPE", self.key), ("TIME",)]
        if self.after is not None:
            commands += [
                ("XRANGE", self.key, self.after, self.after),
                ("XRANGE", self.key, "-", "+", "COUNT", 1),
                ("XREVRANGE", self.key, "+", "-", "COUNT", 1),
            ]
        return commands

    def opened(self, replies: list[Any], now: float) -> None:
        """Take in the replies of `opening()`, received at `now`.

        Raises:
            StoredStreamError: a key of another type, a resume of a key that
                does not exist, an `after` the stream does not hold.
        """
        # Sent with raise_on_error=False: the key's type explains the other replies' errors.
        held = _text(replies[0])
        if not isinstance(replies[0], Exception) and held not in ("none", "stream"):
            raise StoredStreamError(self.key, f"the key holds a {excerpt(held)}, not a stream")
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        self.offset = _seconds_of(replies[1]) - now
        self.opened_at = now
        if held == "none":
            if self.after is not None:
                raise StoredStreamError(
                    self.key,
                    f"cannot resume after {self.after!r}: there is no stream at this key (it "
                    "expired after its ttl, was deleted, or never existed)",
                    after=self.after,
                )
            return
        self.existed = True
        if self.after is not None:
            found, first, last = (entries_of(r, xread=False) for r in replies[2:5])
            self.reader.resume(self.after, found, first, last)

    def deadline(self) -> float:
        """When the producer counts as dead (or the key as never coming), on our clock."""
        newest = self.reader.newest_ms
        if newest is None:
            return self.opened_at + self.timeout
        return newest / 1000 - self.offset + self.timeout

    def read(self, now: float, poll: float) -> tuple[Any, ...]:
        """The next `XREAD`: blocking up to `poll` seconds, never past the deadline."""
        head: tuple[Any, ...] = ("XREAD", "COUNT", _READ_COUNT)
        remaining = self.deadline() - now
        if remaining > 0:
            head += ("BLOCK", max(1, int(min(poll, remaining) * 1000)))
        return (*head, "STREAMS", self.key, self.reader.position)

    def received(self, reply: Reply, now: float) -> list[Any]:
        """The items of an `XREAD` reply.

        Raises:
            StreamTimeoutError: nothing new, and the deadline has passed.
        """
        entries = entries_of(reply, xread=True)
        if entries:
            self.existed = True
            return self.reader.feed(entries)
        if now >= self.deadline():
            raise self.reader.timeout(self.timeout, started=self.existed)
        return []

    def mapped(self, exc: Exception) -> Exception:
        return map_redis_error(exc, self.key, self.where) or exc

    @staticmethod
    def explains(error: Exception) -> bool:
        """Whether `error` says entries are gone, which `diagnosis()` can tell the cause of."""
        return isinstance(error, StoredStreamError) and error.missing is not None

    def diagnosis(self) -> list[tuple[Any, ...]]:
        """The commands that show why entries are gone: the key's type, its stream's counters."""
        return [("TYPE", self.key), ("XINFO", "STREAM", self.key)]

    def explained(self, error: Exception, replies: list[Any] | None) -> Exception:
        """`error` (entries gone) saying what happened, by the replies of `diagnosis()`."""
        assert isinstance(error, StoredStreamError)
        assert error.missing is not None
        cause = gone_cause(replies)
        reason = error.reason
        for said in _GONE_SAID:
            if said in reason:
                reason = reason.replace(said, cause)
                break
        else:
            reason = f"{reason}; {cause}"
        return StoredStreamError(self.key, reason, after=error.after, missing=error.missing)


# What the entry reader says when entries are gone; `explained` puts what happened in its place.
_GONE_SAID = (
    "trimmed by MAXLEN (a follower slower than maxlen allows, or one that "
    "started late) or lost in a restart of Redis",
    "trimmed by MAXLEN, or lost in a restart of Redis",
)


def gone_cause(replies: list[Any] | None) -> str:
    """Why entries of a stream are gone, by what Redis shows of its key.

    Args:
        replies: the replies of `TYPE key` and `XINFO STREAM key` (None: not read).

    Returns:
        The cause, in words: the key deleted (or expired, or lost in a restart
        of Redis without its data) when the key is missing; the stream reset
        (deleted or lost, then written again by its producer) when Redis has
        counted fewer entries added to the key than the producer numbered;
        trimmed by `MAXLEN` when it counted them all, or when its
        `max-deleted-entry-id` shows trimming. Redis before 7.0 keeps no
        such counters: then the message says both causes are possible.
    """
    unknown = (
        "trimmed by MAXLEN (a follower slower than maxlen allows, or one that started late), "
        "or lost with the key (deleted, or in a restart of Redis without its data)"
    )
    if not replies or len(replies) < 2 or isinstance(replies[0], Exception):
        return unknown
    if _text(replies[0]) == "none":
        return (
            "the key is gone: it was deleted (DEL), expired, or lost in a restart of Redis "
            "without its data; the entries were not trimmed"
        )
    info = _xinfo(replies[1])
    added = info.get("entries-added")
    newest = _entry_number(info.get("last-entry"))
    if not isinstance(added, int) or newest is None:
        return unknown + " (Redis before 7.0 does not count the entries added to a key)"
    # Entry numbers start at 0: a stream never reset has had at least `newest + 1` entries
    # added; one deleted (or lost) and written again only those written since.
    written = newest + 1
    if added < written:
        return (
            f"the stream was reset: the key was deleted or lost in a restart of Redis without "
            f"its data, then written again (Redis counts {added} entries added to it, the "
            f"producer had numbered {written}); not trimmed by MAXLEN"
        )
    return "trimmed by MAXLEN (a follower slower than maxlen allows, or one that started late)"


def _xinfo(reply: Any) -> dict[str, Any]:
    """`XINFO STREAM`'s reply (a dict, or a flat list of names and values) by name, as text."""
    if isinstance(reply, dict):
        pairs = list(reply.items())
    elif isinstance(reply, list | tuple):
        pairs = [(reply[i], reply[i + 1]) for i in range(0, len(reply) - 1, 2)]
    else:
        return {}
    return {
        _text(name).replace("_", "-"): (int(value) if _is_int(value) else value)
        for name, value in pairs
    }


def _entry_number(entry: Any) -> int | None:
    """The `n` field (the producer's entry number) of an entry in an `XINFO` reply."""
    if not isinstance(entry, list | tuple) or len(entry) != 2:
        return None
    fields = entry[1]
    if isinstance(fields, list | tuple):
        fields = {fields[i]: fields[i + 1] for i in range(0, len(fields) - 1, 2)}
    if not isinstance(fields, dict):
        return None
    for name, value in fields.items():
        if _text(name) == "n" and _is_int(value):
            return int(value)
    return None


def _is_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, bytes | str) and _text(value).isdigit()


# --------------------------------------------------------------------------- helpers


def map_redis_error(exc: BaseException, key: str, where: str) -> Exception | None:
    """The rxstream error for an exception of redis-py (or the socket), or None if not one.

    The one place where Redis's errors are mapped: a connection that fails is
    `TransportError` (saying where and what redis-py reported), a `WRONGTYPE`
    reply is `StoredStreamError`, any other error reply is `TransportError`.
    """
    if isinstance(exc, OSError):
        return TransportError(
            f"Redis at {where} failed on stream {key!r}: {type(exc).__name__}: {excerpt(str(exc))}"
        )
    try:
        exceptions = importlib.import_module("redis.exceptions")
    except ImportError:  # pragma: no cover - a client that is not redis-py
        return None
    if isinstance(exc, exceptions.ResponseError):
        text = str(exc)
        if "WRONGTYPE" in text:
            return StoredStreamError(
                key, f"the key holds a value of another type, not a stream ({excerpt(text)})"
            )
        return TransportError(
            f"Redis at {where} refused a command on stream {key!r}: {excerpt(text)}"
        )
    if isinstance(exc, exceptions.RedisError):
        return TransportError(
            f"Redis at {where} failed on stream {key!r}: {type(exc).__name__}: {excerpt(str(exc))}"
        )
    return None


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _seconds_of(time_reply: Any) -> float:
    seconds, micros = time_reply[0], time_reply[1]
    return int(seconds) + int(micros) / 1_000_000


def _is_async(client: object) -> bool:
    return inspect.iscoroutinefunction(getattr(client, "execute_command", None))


def _where(client: object) -> str:
    """Where the client connects (host:port or a socket path), never with a password."""
    pool = getattr(client, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    if isinstance(kwargs, dict):
        if kwargs.get("path"):
            return f"unix:{kwargs['path']}"
        if kwargs.get("host") is not None:
            return f"{kwargs['host']}:{kwargs.get('port', 6379)}"
    return type(client).__name__


def _poll(client: object, default: float) -> float:
    # An XREAD that blocks longer than the client's socket timeout fails with a
    # timeout: stay well under it.
    pool = getattr(client, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    limit = kwargs.get("socket_timeout") if isinstance(kwargs, dict) else None
    if isinstance(limit, int | float) and limit > 0:
        return min(default, limit / 2)
    return default


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _check_key(key: object) -> None:
    if not isinstance(key, str):
        raise TypeError(f"key must be a str, got {type(key).__name__}")
    if not key:
        raise ValueError("key must not be empty")


def _seconds(name: str, value: object) -> float:
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise TypeError(f"{name} must be seconds (a number) or a timedelta, got {value!r:.80}")
    if not seconds > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return seconds
