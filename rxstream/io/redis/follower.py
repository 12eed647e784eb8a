"""`from_redis_stream`: a stream written by `to_redis_stream` replayed, then followed to its end.

The rules are `rxstream.io.redis.feed`'s (one subscription's `FollowPlan`,
one `Feed` per key shared by its followers, a `Member` per follower) and the
jobs are `rxstream.io.redis.following`'s step machines (`following`, a
follower; `reading`, a key's one reader). This module holds the shells that
perform their steps: `_SyncFeed` / `_SyncFollower` for a `redis.Redis` (a
thread reads each key, under a lock the followers' threads share),
`_AsyncFeed` / `_AsyncFollower` for a `redis.asyncio.Redis` (a task on the
loop reads each key), `_Gate` (how many commands the async followers of one
client have under way at once) and the sends of a diagnosis.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import timedelta
from typing import Any, ClassVar, Generic, Literal, TypeVar, overload

from reactivex import Observable, abc

from ...errors import StreamError
from ...models import StreamEntry
from .._loops import Handle, async_source, sync_source
from .client import TASKS, AsyncRedis, SyncRedis, as_seconds, check_key, is_async, poll_of, where_of
from .cluster import asend, asend_all, pipeline_of, send, send_all
from .feed import Feed, FollowPlan, Member
from .following import following, reading
from .steps import Command, Diagnose, Join, Next, Open, Settle, Step, Wait, adrive, arun, drive, run

__all__ = ["from_redis_stream"]

C = TypeVar("C")  # the client: SyncRedis or AsyncRedis

DEFAULT_HEARTBEAT_TIMEOUT = 10.0

# The longest one XREAD blocks: a sync follower notices a dispose between two
# reads (so within this), an async one is cancelled at once and can block longer.
SYNC_POLL = 0.25
ASYNC_POLL = 1.0


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
    one process that follow a key with one client share one `XREAD` (see
    `rxstream.io.redis`): a thousand followers cost one read per entry.

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
    check_key(key)
    if after is not None and not isinstance(after, str):
        raise TypeError(f"after must be a str entry id or None, got {type(after).__name__}")
    timeout = as_seconds("heartbeat_timeout", heartbeat_timeout)
    where = where_of(redis)

    def plan() -> FollowPlan:
        return FollowPlan(key, after or None, ids=ids, timeout=timeout)

    if is_async(redis):
        afollower = _AsyncFollower(redis, key, plan, poll_of(redis, ASYNC_POLL), where)  # type: ignore[arg-type]
        return async_source(afollower.batches, scheduler)
    follower = _SyncFollower(redis, key, plan, poll_of(redis, SYNC_POLL), where)  # type: ignore[arg-type]
    return sync_source(follower.batches, scheduler)


class _Follower(Generic[C]):
    """What a follower's shell is given: the client, the key, each subscription's plan
    (made anew for each), how long one read blocks, and where the client connects."""

    def __init__(
        self, client: C, key: str, plan: Callable[[], FollowPlan], poll: float, where: str
    ) -> None:
        self._client = client
        self._key = key
        self._plan = plan
        self._poll = poll
        self._where = where


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
        try:
            reader = reading(self.feed, self.where, self.poll, time.monotonic)
            run(reader, lambda step: _sent(self.client, step), self.lock)
        finally:
            self._forget()


class _SyncFollower(_Follower[SyncRedis]):
    """The read loop of `from_redis_stream` for `redis.Redis`: one `FollowPlan` per subscription.

    `batches` is what `sync_source` reads: the subscription opens (resumes)
    with commands of its own, joins the key's `_SyncFeed` (reading its
    backlog, if the feed is ahead of it), then takes the feed's batches.
    """

    def batches(self, handle: Handle) -> Iterator[list[Any]]:
        """The items, a batch at a time, to the end or until disposed."""
        plan = self._plan()
        woken = threading.Event()
        member = Member(plan, woken.set)
        shell: _SyncFeed | None = None

        def perform(step: Step) -> Any:
            nonlocal shell
            match step:
                case Open():
                    self._open(plan)
                case Join():
                    shell, mark = _SyncFeed.join(
                        self._client, self._key, member, self._poll, self._where
                    )
                    return mark
                case Settle() if shell is not None:
                    return shell.settle(member)
                case Next() if shell is not None:
                    woken.clear()
                    with shell.lock:
                        return member.next()
                case Wait():
                    woken.wait(self._poll)
                case _:
                    return _sent(self._client, step)
            return None

        try:
            yield from drive(following(plan, member, self._where, lambda: handle.disposed), perform)
        finally:
            if shell is not None:
                shell.leave(member)

    def _open(self, plan: FollowPlan) -> None:
        commands = plan.opening()
        t0 = time.monotonic()
        replies = send_all(self._client, commands, raise_on_error=False)
        plan.opened(replies, (t0 + time.monotonic()) / 2)


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
            TASKS.add(task)
            task.add_done_callback(TASKS.discard)
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
        try:
            reader = reading(self.feed, self.where, self.poll, time.monotonic)
            await arun(reader, lambda step: _asent(self.client, step))
        except asyncio.CancelledError:
            # Not by the last follower leaving (that closes the feed first): the loop is
            # shutting down under followers that still run.
            self.feed.finish(
                StreamError(
                    f"the read of Redis stream {self.key!r} was cancelled before the stream "
                    "ended (did the event loop stop while it was still running?)"
                )
            )
            raise
        finally:
            self._forget()


class _AsyncFollower(_Follower[AsyncRedis]):
    """The read loop of `from_redis_stream` for `redis.asyncio.Redis` (see `_SyncFollower`)."""

    async def batches(self, handle: Handle) -> AsyncIterator[list[Any]]:
        """The items, a batch at a time, to the end or until disposed (cancelled)."""
        plan = self._plan()
        woken = asyncio.Event()
        member = Member(plan, woken.set)
        shell: _AsyncFeed | None = None

        async def perform(step: Step) -> Any:
            nonlocal shell
            match step:
                case Open():
                    shell = await self._opening(plan)
                case Join():
                    shell, mark = _AsyncFeed.join(
                        self._client, self._key, member, self._poll, self._where
                    )
                    return mark
                case Settle() if shell is not None:
                    return shell.feed.settle(member)
                case Next():
                    woken.clear()
                    return member.next()
                case Wait():
                    # The flag as well as the cancel: a lost cancellation must not leave
                    # this loop waiting.
                    await woken.wait()
                    handle.waited = True  # the loop ran the others meanwhile
                case Command():
                    async with _Gate.of(self._client):
                        return await _asent(self._client, step)
                case _:
                    return await _asent(self._client, step)
            return None

        steps = following(plan, member, self._where, lambda: handle.disposed)
        try:
            async for batch in adrive(steps, perform):
                yield batch
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
            replies = await asend_all(self._client, commands, raise_on_error=False)
            t1 = time.monotonic()
        plan.opened(replies, (t0 + t1) / 2)


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


def _sent(client: SyncRedis, step: Step) -> Any:
    """Perform a step that only sends: a command, or a diagnosis (see `steps`)."""
    match step:
        case Command(command=command):
            return send(client, command)
        case Diagnose(commands=commands):
            return _diagnosis(client, commands)
    raise TypeError(f"a Redis reader cannot perform {step!r}")


async def _asent(client: AsyncRedis, step: Step) -> Any:
    """`_sent` with an async client."""
    match step:
        case Command(command=command):
            return await asend(client, command)
        case Diagnose(commands=commands):
            return await _adiagnosis(client, commands)
    raise TypeError(f"a Redis reader cannot perform {step!r}")


def _diagnosis(client: SyncRedis, commands: list[tuple[Any, ...]]) -> list[Any] | None:
    """The replies of `commands` (a diagnosis), or None when they cannot be had."""
    try:
        replies: list[Any] = pipeline_of(client, commands).execute(raise_on_error=False)
    except Exception:  # the error at hand is the one to report
        return None
    return replies


async def _adiagnosis(client: AsyncRedis, commands: list[tuple[Any, ...]]) -> list[Any] | None:
    try:
        pipe = pipeline_of(client, commands)
        async with _Gate.of(client):
            replies: list[Any] = await pipe.execute(raise_on_error=False)
    except Exception:  # the error at hand is the one to report
        return None
    return replies
