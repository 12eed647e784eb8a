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
versioned encoding of `rxstream.core.wire` (its version beside each entry),
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
- One read per key per process: the followers of a key with one client (and,
  for an async client, one event loop) share one reader, one `XREAD BLOCK`
  on one connection whose entries are decoded once (a thread per key for a
  sync client, a task for an async one). Each follower still opens (resumes)
  on its own; one that joins a reader that is further along reads its
  backlog with `XRANGE` while the reader holds what it reads meanwhile for
  it; one that is slower than the stream drops out, catches up from Redis
  and joins again. The rules are in `rxstream.io._redis_follow`.
- Redis Cluster (`redis.cluster.RedisCluster`, `redis.asyncio.cluster.
  RedisCluster`): every command names the stream's one key, so any slot
  does. A read that Redis unblocks because its master is failed over, and,
  with a cluster client, a command that meets a master failing over (a
  refused connection, `CLUSTERDOWN`, `TRYAGAIN`, `READONLY`), is sent again
  with backoff for up to `FAILOVER_WINDOW` seconds: redis-py retries those
  at once, which a failover of a second or two outlasts.

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
import copy
import importlib
import inspect
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from datetime import timedelta
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar, overload

from reactivex import Observable, abc
from reactivex.disposable import Disposable, SingleAssignmentDisposable

from .._deprecate import deprecated_arguments
from .._flow import Demand, current_demand, demand_scope
from ..core.message import Arrived, partial_message
from ..errors import (
    BufferOverflowError,
    StoredStreamError,
    StreamError,
    TransportError,
    TruncatedStreamError,
    excerpt,
)
from ..models import StreamEntry
from ._args import check_count, loop_for
from ._loops import Handle, async_source, sync_source
from ._redis_entries import (
    EntryWriter,
    Reply,
    encodable,
    entries_of,
    error_payload,
    item_payload,
)
from ._redis_follow import (
    Feed,
    FollowPlan,
    Member,
    diagnosis,
    explained,
    explains,
    id_key,
)
from ._redis_follow import gone_cause as gone_cause  # where it was, for tests and tools

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
                    _written(self._client, commands)
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
                    await _awritten(self._client, commands)
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
    any operator runs on this side as on the producer's. The subscriptions of
    one process that follow a key with one client share one `XREAD` (see the
    module docstring): a thousand followers cost one read per entry.

    Args:
        redis: a `redis.Redis` (read on the scheduler, by default the current
            thread: `subscribe` returns at the end) or a `redis.asyncio.Redis`
            (read as a task on the running loop, or an `AsyncIOScheduler`'s),
            or either's Redis Cluster twin.
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

    Each error (a `StreamError`) carries as `partial` the `Message` of the
    deltas this subscription read before it (None when it read none).

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

    def plan() -> FollowPlan:
        return FollowPlan(key, after or None, ids=ids, timeout=timeout)

    if _is_async(redis):
        afollower = _AsyncFollower(redis, key, plan, _poll(redis, _ASYNC_POLL), where)  # type: ignore[arg-type]
        return async_source(_kept_async(afollower.batches), scheduler)
    follower = _SyncFollower(redis, key, plan, _poll(redis, _SYNC_POLL), where)  # type: ignore[arg-type]
    return sync_source(_kept_sync(follower.batches), scheduler)


def _kept_sync(
    batches: Callable[[Handle], Iterator[list[Any]]],
) -> Callable[[Handle], Iterator[list[Any]]]:
    """`batches`, its error carrying the partial `Message` of the deltas it gave."""

    def reader(handle: Handle) -> Iterator[list[Any]]:
        arrived = Arrived()
        try:
            for batch in batches(handle):
                for item in batch:
                    arrived.see(item)
                yield batch
        except Exception as exc:
            failure = _with_partial(exc, arrived)
            if failure is exc:
                raise
            raise failure from exc.__cause__

    return reader


def _kept_async(
    batches: Callable[[Handle], AsyncIterator[list[Any]]],
) -> Callable[[Handle], AsyncIterator[list[Any]]]:
    """`_kept_sync` for the async follower."""

    async def reader(handle: Handle) -> AsyncIterator[list[Any]]:
        arrived = Arrived()
        try:
            async for batch in batches(handle):
                for item in batch:
                    arrived.see(item)
                yield batch
        except Exception as exc:
            failure = _with_partial(exc, arrived)
            if failure is exc:
                raise
            raise failure from exc.__cause__

    return reader


def _with_partial(error: Exception, arrived: Arrived) -> Exception:
    """`error`, or a copy of it with the partial `Message` of what this follower read.

    A copy: the key's feed hands one error to every follower, and followers
    that resumed at different entries read different parts of the answer.
    """
    if not isinstance(error, StreamError) or error.partial is not None:
        return error
    partial = partial_message(arrived.items)
    if partial is None:
        return error
    own = copy.copy(error)
    own.partial = partial
    return own


class _SyncFeed:
    """The thread that reads one key for every sync follower of it with one client.

    The rules (who gets what) are the `Feed`'s; this shell sends its `XREAD`s on a
    thread of its own and calls the feed under its lock, which the followers'
    threads take to join, settle and leave.
    """

    _feeds: ClassVar[dict[tuple[int, str], _SyncFeed]] = {}
    _feeds_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, client: SyncRedis, key: str, poll: float, where: str) -> None:
        self.client = client
        self.key = key
        self.feed = Feed(key)
        self.lock = threading.Lock()
        self.poll = poll
        self.where = where
        self._thread = threading.Thread(
            target=self._run, name=f"rxstream redis follower {key!r}", daemon=True
        )

    @classmethod
    def join(
        cls, client: SyncRedis, key: str, member: Member, poll: float, where: str
    ) -> tuple[_SyncFeed, tuple[str, int] | None]:
        """The feed of `key` for `client` (started when new), with `member` in it; its backlog."""
        slot = (id(client), key)
        while True:
            with cls._feeds_lock:
                shell = cls._feeds.get(slot)
                new = shell is None
                if shell is None:
                    shell = cls._feeds[slot] = cls(client, key, poll, where)
            with shell.lock:
                if shell.feed.closed:
                    backlog: tuple[str, int] | None = None
                    closed = True
                else:
                    backlog = shell.feed.join(member)
                    closed = False
            if closed:
                shell._forget()
                continue
            if new:
                shell._thread.start()
            return shell, backlog

    def settle(self, member: Member) -> bool:
        with self.lock:
            return self.feed.settle(member)

    def leave(self, member: Member) -> None:
        with self.lock:
            emptied = self.feed.leave(member)
        if emptied:
            self._forget()
            # Its read blocks one poll at most: once the last follower has left, nothing
            # reads for it any more (the thread goes on only while the client retries).
            if self._thread.ident is not None and self._thread is not threading.current_thread():
                self._thread.join(self.poll + 1.0)

    def _forget(self) -> None:
        with self._feeds_lock:
            slot = (id(self.client), self.key)
            if self._feeds.get(slot) is self:
                del self._feeds[slot]

    def _run(self) -> None:
        feed = self.feed
        try:
            while True:
                with self.lock:
                    if feed.closed:
                        return
                    command = feed.command(time.monotonic(), self.poll)
                reply = _xread(self.client, command)
                with self.lock:
                    if feed.closed:
                        return
                    feed.received(reply, time.monotonic())
                    if not feed.reader.done:
                        continue
                error: Exception | None = feed.reader.failure
                if error is not None and explains(error):
                    error = explained(error, _diagnosis(self.client, self.key))
                with self.lock:
                    feed.finish(error)
                return
        except Exception as exc:
            error = map_redis_error(exc, self.key, self.where) or exc
            if explains(error):
                error = explained(error, _diagnosis(self.client, self.key))
            with self.lock:
                feed.finish(error)
        finally:
            self._forget()


class _SyncFollower:
    """The read loop of `from_redis_stream` for `redis.Redis`: one `FollowPlan` per subscription.

    `batches` is what `sync_source` reads: the subscription opens (resumes)
    with commands of its own, joins the key's `_SyncFeed` (reading its
    backlog, if the feed is ahead of it), then takes the feed's batches.
    """

    def __init__(
        self,
        client: SyncRedis,
        key: str,
        plan: Callable[[], FollowPlan],
        poll: float,
        where: str,
    ) -> None:
        self._client = client
        self._key = key
        self._plan = plan
        self._poll = poll
        self._where = where

    def batches(self, handle: Handle) -> Iterator[list[Any]]:
        """The items, a batch at a time, to the end or until disposed."""
        plan = self._plan()
        woken = threading.Event()
        member = Member(plan, woken.set)
        shell: _SyncFeed | None = None
        delivered: Exception | None = None
        try:
            try:
                self._open(plan)
                while not plan.done:
                    shell, backlog = _SyncFeed.join(
                        self._client, self._key, member, self._poll, self._where
                    )
                    if backlog is not None:
                        yield from self._backlog(plan, backlog)
                        if plan.done:
                            break
                        if not shell.settle(member):
                            continue  # dropped meanwhile, for being slow: join again
                    outcome = yield from self._live(shell, member, woken, handle)
                    if outcome is not True:
                        delivered = outcome
                        break
                plan.reader.check()
            except Exception as exc:
                error = map_redis_error(exc, self._key, self._where) or exc
                if explains(error):
                    error = explained(error, _diagnosis(self._client, self._key))
            else:
                if delivered is not None:
                    # As the feed made it (mapped and explained there), shared by every
                    # follower: each raises it with a traceback of its own.
                    raise delivered.with_traceback(None)
                return
            raise error
        finally:
            if shell is not None:
                shell.leave(member)

    def _open(self, plan: FollowPlan) -> None:
        commands = plan.opening()
        t0 = time.monotonic()
        replies = _written(self._client, commands, raise_on_error=False)
        plan.opened(replies, (t0 + time.monotonic()) / 2)

    def _backlog(self, plan: FollowPlan, backlog: tuple[str, int]) -> Iterator[list[Any]]:
        """What the feed read before this follower joined: its entries after its own, by XRANGE."""
        upto, expected = backlog
        reader, target = plan.reader, id_key(upto)
        while not reader.done and id_key(reader.position) < target:
            entries = entries_of(_xread(self._client, plan.backlog(upto)), xread=False)
            if not entries:
                break
            plan.existed = True
            batch = reader.feed(entries)
            if batch:
                yield batch
        reader.reached(upto, expected)

    def _live(
        self, shell: _SyncFeed, member: Member, woken: threading.Event, handle: Handle
    ) -> Generator[list[Any], None, Literal[True] | Exception | None]:
        """The feed's batches, until its end (None), its error, disposal (None), or until
        this follower was dropped for being slow (True: it joins again)."""
        while not handle.disposed:
            woken.clear()
            with shell.lock:
                detached = member.detached
                has, got = member.pop()
            if not has:
                if detached:
                    return True
                woken.wait(self._poll)
            elif isinstance(got, list):
                yield got
            else:
                return got
        return None


class _AsyncFeed:
    """The task that reads one key for every async follower of it with one client, on one loop."""

    _feeds: ClassVar[dict[tuple[int, int, str], _AsyncFeed]] = {}

    def __init__(self, client: AsyncRedis, key: str, poll: float, where: str) -> None:
        self.client = client
        self.key = key
        self.feed = Feed(key)
        self.poll = poll
        self.where = where
        self._slot = (id(asyncio.get_running_loop()), id(client), key)
        self._task: asyncio.Task[None] | None = None
        # Set once the first follower has opened (or failed to): see `_AsyncFollower._opening`.
        self.opened = asyncio.Event()

    @classmethod
    def of(cls, client: AsyncRedis, key: str, poll: float, where: str) -> tuple[_AsyncFeed, bool]:
        """The feed of `key` for `client` on the running loop, and whether it is new."""
        slot = (id(asyncio.get_running_loop()), id(client), key)
        shell = cls._feeds.get(slot)
        if shell is not None and not shell.feed.closed:
            return shell, False
        shell = cls._feeds[slot] = cls(client, key, poll, where)
        return shell, True

    @classmethod
    def join(
        cls, client: AsyncRedis, key: str, member: Member, poll: float, where: str
    ) -> tuple[_AsyncFeed, tuple[str, int] | None]:
        """The feed of `key` for `client` on the running loop, with `member` in it; its backlog."""
        shell, _ = cls.of(client, key, poll, where)
        backlog = shell.feed.join(member)
        if not shell.opened.is_set():
            # A feed made by a follower that opened before (one that joins again): its
            # opening serves those who wait for one.
            shell.feed.offset, shell.feed.existed = member.plan.offset, member.plan.existed
            shell.opened.set()
        if shell._task is None:
            task = shell._task = asyncio.get_running_loop().create_task(shell._run())
            _TASKS.add(task)
            task.add_done_callback(_TASKS.discard)
        return shell, backlog

    def leave(self, member: Member) -> None:
        if self.feed.leave(member):
            self._forget()
            self.opened.set()
            if self._task is not None:
                self._task.cancel()

    def _forget(self) -> None:
        if self._feeds.get(self._slot) is self:
            del self._feeds[self._slot]

    async def _run(self) -> None:
        feed, client = self.feed, self.client
        try:
            while not feed.closed:
                command = feed.command(time.monotonic(), self.poll)
                reply = await _axread(client, command)
                if feed.closed:
                    return
                feed.received(reply, time.monotonic())
                if feed.reader.done:
                    error: Exception | None = feed.reader.failure
                    if error is not None and explains(error):
                        error = explained(error, await _adiagnosis(client, self.key))
                    feed.finish(error)
                    return
        except asyncio.CancelledError:
            # Not by the last follower leaving (that closes the feed first): the loop is
            # shutting down under followers that still run.
            feed.finish(
                StreamError(
                    f"the read of Redis stream {self.key!r} was cancelled before the stream "
                    "ended (did the event loop stop while it was still running?)"
                )
            )
            raise
        except Exception as exc:
            error = map_redis_error(exc, self.key, self.where) or exc
            if explains(error):
                error = explained(error, await _adiagnosis(client, self.key))
            feed.finish(error)
        finally:
            self._forget()


class _AsyncFollower:
    """The read loop of `from_redis_stream` for `redis.asyncio.Redis` (see `_SyncFollower`)."""

    def __init__(
        self,
        client: AsyncRedis,
        key: str,
        plan: Callable[[], FollowPlan],
        poll: float,
        where: str,
    ) -> None:
        self._client = client
        self._key = key
        self._plan = plan
        self._poll = poll
        self._where = where

    async def batches(self, handle: Handle) -> AsyncIterator[list[Any]]:
        """The items, a batch at a time, to the end or until disposed (cancelled)."""
        plan = self._plan()
        woken = asyncio.Event()
        member = Member(plan, woken.set)
        shell: _AsyncFeed | None = None
        delivered: Exception | None = None
        try:
            try:
                shell = await self._opening(plan)
                while not plan.done:
                    shell, backlog = _AsyncFeed.join(
                        self._client, self._key, member, self._poll, self._where
                    )
                    if backlog is not None:
                        async for batch in self._backlog(plan, backlog):
                            yield batch
                        if plan.done:
                            break
                        if not shell.feed.settle(member):
                            continue  # dropped meanwhile, for being slow: join again
                    rejoin = False
                    # The flag as well as the cancel: a lost cancellation must not leave
                    # this loop waiting.
                    while not handle.disposed:
                        woken.clear()
                        has, got = member.pop()
                        if not has:
                            if member.detached:
                                rejoin = True
                                break
                            await woken.wait()
                            handle.waited = True  # the loop ran the others meanwhile
                        elif isinstance(got, list):
                            yield got
                        else:
                            delivered = got
                            break
                    if not rejoin:
                        break
                plan.reader.check()
            except Exception as exc:
                error = map_redis_error(exc, self._key, self._where) or exc
                if explains(error):
                    error = explained(error, await _adiagnosis(self._client, self._key))
            else:
                if delivered is not None:
                    # As the feed made it (mapped and explained there), shared by every
                    # follower: each raises it with a traceback of its own.
                    raise delivered.with_traceback(None)
                return
            raise error
        finally:
            if shell is not None:
                shell.leave(member)

    async def _opening(self, plan: FollowPlan) -> _AsyncFeed | None:
        """Open `plan`; the feed it will join, when the first to open for it.

        A follower from the start (`after=None`) of a key whose feed another
        follower has opened takes that opening (the key is a stream, or not
        there yet; Redis's clock) instead of sending its own: hundreds of
        clients that arrive together cost one opening, not hundreds.
        """
        shell, new = _AsyncFeed.of(self._client, self._key, self._poll, self._where)
        if not new and plan.after is None:
            await shell.opened.wait()
            feed = shell.feed
            if feed.offset is not None and not feed.closed:
                plan.adopt(feed.offset, existed=feed.existed, now=time.monotonic())
                return None
        if not new:
            await self._open(plan)
            return None
        try:
            await self._open(plan)
        except BaseException:
            # Nobody joined it: whoever waits opens on their own, and joins a new feed.
            if not shell.feed.members:
                shell.feed.closed = True
                shell._forget()
            raise
        else:
            shell.feed.offset, shell.feed.existed = plan.offset, plan.existed
        finally:
            shell.opened.set()
        return shell

    async def _open(self, plan: FollowPlan) -> None:
        commands = plan.opening()
        async with _Gate.of(self._client):
            t0 = time.monotonic()
            replies = await _awritten(self._client, commands, raise_on_error=False)
            t1 = time.monotonic()
        plan.opened(replies, (t0 + t1) / 2)

    async def _backlog(
        self, plan: FollowPlan, backlog: tuple[str, int]
    ) -> AsyncIterator[list[Any]]:
        upto, expected = backlog
        reader, target = plan.reader, id_key(upto)
        while not reader.done and id_key(reader.position) < target:
            async with _Gate.of(self._client):
                reply = await _axread(self._client, plan.backlog(upto))
            entries = entries_of(reply, xread=False)
            if not entries:
                break
            plan.existed = True
            batch = reader.feed(entries)
            if batch:
                yield batch
        reader.reached(upto, expected)


class _Gate:
    """How many commands of its own the async followers of one client (on one loop) have
    under way at once: their openings and backlogs, so that hundreds of clients that
    arrive together do not take hundreds of connections from the client's pool (whose
    default size is 100; past it redis-py fails the command)."""

    LIMIT = 8
    _gates: ClassVar[dict[tuple[int, int], _Gate]] = {}

    def __init__(self, slot: tuple[int, int]) -> None:
        self._slot = slot
        self._semaphore = asyncio.Semaphore(self.LIMIT)
        self._users = 0

    @classmethod
    def of(cls, client: AsyncRedis) -> _Gate:
        slot = (id(asyncio.get_running_loop()), id(client))
        gate = cls._gates.get(slot)
        if gate is None:
            gate = cls._gates[slot] = cls(slot)
        return gate

    async def __aenter__(self) -> None:
        self._users += 1
        try:
            await self._semaphore.acquire()
        except BaseException:
            self._left()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._semaphore.release()
        self._left()

    def _left(self) -> None:
        self._users -= 1
        if self._users == 0 and self._gates.get(self._slot) is self:
            del self._gates[self._slot]


def _diagnosis(client: SyncRedis, key: str) -> list[Any] | None:
    """The replies of `diagnosis(key)`, or None when they cannot be had."""
    try:
        pipe = client.pipeline(transaction=False)
        for command in diagnosis(key):
            pipe.execute_command(*command)
        replies: list[Any] = pipe.execute(raise_on_error=False)
    except Exception:  # the error at hand is the one to report
        return None
    return replies


async def _adiagnosis(client: AsyncRedis, key: str) -> list[Any] | None:
    try:
        pipe = client.pipeline(transaction=False)
        for command in diagnosis(key):
            pipe.execute_command(*command)
        async with _Gate.of(client):
            replies: list[Any] = await pipe.execute(raise_on_error=False)
    except Exception:  # the error at hand is the one to report
        return None
    return replies


#: How long a command is sent again while a Redis Cluster fails a master over (seconds).
FAILOVER_WINDOW = 10.0


def _failing_over(exc: Exception, client: object) -> bool:
    """Whether `exc` is what a command meets while a Redis Cluster master fails over.

    Redis answers a read blocked on a master that is being failed over
    (`CLUSTER FAILOVER`) with `-UNBLOCKED ... (master -> replica?)`, with any
    client. A cluster client (`redis.cluster.RedisCluster`, its asyncio twin)
    also meets the dead master's refused connection, `CLUSTERDOWN`, `TRYAGAIN`
    and `READONLY` (the old master, now a replica) until the cluster has
    promoted a replica; redis-py retries those at once, without waiting, so
    a failover that takes seconds outlasts its retries. Sent again, the
    command finds the new master: a read is safe to repeat, and so is a write
    of numbered entries (a reader skips an entry it has read).
    """
    if type(exc).__name__ == "ResponseError" and str(exc).startswith("UNBLOCKED"):
        return True
    if not hasattr(client, "nodes_manager"):  # not a cluster client: its retry policy rules
        return False
    try:
        errors = importlib.import_module("redis.exceptions")
    except ImportError:  # pragma: no cover - a client that is not redis-py
        return False
    if isinstance(
        exc, errors.AuthenticationError | errors.AuthorizationError | errors.MaxConnectionsError
    ):
        return False
    return isinstance(
        exc,
        errors.ConnectionError
        | errors.TimeoutError
        | errors.ClusterDownError
        | errors.TryAgainError
        | errors.ReadOnlyError
        | errors.SlotNotCoveredError,
    )


class _Failover:
    """The waits between the attempts of one command while a cluster fails over."""

    def __init__(self) -> None:
        self._deadline: float | None = None
        self._delay = 0.05

    def wait(self, exc: Exception, client: object) -> float:
        """Seconds to wait before sending again; raises `exc` when not to send again."""
        if not _failing_over(exc, client):
            raise exc
        now = time.monotonic()
        if self._deadline is None:
            self._deadline = now + FAILOVER_WINDOW
        if now >= self._deadline:
            raise exc
        delay = min(self._delay, self._deadline - now)
        self._delay = min(self._delay * 2, 1.0)
        return delay


def _raise_failover(replies: list[Any], client: object) -> None:
    """Raise a reply (of a pipeline sent with `raise_on_error=False`) that a failover explains."""
    for reply in replies:
        if isinstance(reply, Exception) and _failing_over(reply, client):
            raise reply


def _xread(client: SyncRedis, command: tuple[Any, ...]) -> Any:
    """`client.execute_command(*command)`, sent again while a master fails over."""
    failover = _Failover()
    while True:
        try:
            return client.execute_command(*command)
        except Exception as exc:
            time.sleep(failover.wait(exc, client))
            _refresh(client)


def _refresh(client: object) -> None:
    """Have a sync cluster client ask the cluster again which node serves which slot.

    redis-py does so after a connection error, but a client whose command was
    under way on the master when it died can keep the dead master for its slots
    (seen with redis-py 8.1); asking again once the failover is done helps.
    """
    manager = getattr(client, "nodes_manager", None)
    initialize = getattr(manager, "initialize", None)
    if initialize is not None and not inspect.iscoroutinefunction(initialize):
        with contextlib.suppress(Exception):
            initialize()


async def _axread(client: AsyncRedis, command: tuple[Any, ...]) -> Any:
    failover = _Failover()
    while True:
        try:
            return await client.execute_command(*command)
        except Exception as exc:
            await asyncio.sleep(failover.wait(exc, client))


def _written(
    client: SyncRedis, commands: list[tuple[Any, ...]], *, raise_on_error: bool = True
) -> list[Any]:
    """Send `commands` in one pipeline, again while a master fails over; the replies."""
    failover = _Failover()
    while True:
        pipe = client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        try:
            replies = pipe.execute(raise_on_error=raise_on_error)
            _raise_failover(replies, client)
            return replies
        except Exception as exc:
            time.sleep(failover.wait(exc, client))


async def _awritten(
    client: AsyncRedis, commands: list[tuple[Any, ...]], *, raise_on_error: bool = True
) -> list[Any]:
    failover = _Failover()
    while True:
        pipe = client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        try:
            replies = await pipe.execute(raise_on_error=raise_on_error)
            _raise_failover(replies, client)
            return replies
        except Exception as exc:
            await asyncio.sleep(failover.wait(exc, client))


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


def _is_async(client: object) -> bool:
    return inspect.iscoroutinefunction(getattr(client, "execute_command", None))


def _where(client: object) -> str:
    """Where the client connects (host:port or a socket path), never with a password."""
    nodes = getattr(getattr(client, "nodes_manager", None), "startup_nodes", None)
    if isinstance(nodes, dict) and nodes:  # a Redis Cluster client: its startup nodes
        names = sorted(str(name) for name in nodes)
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return f"cluster {shown}"
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
