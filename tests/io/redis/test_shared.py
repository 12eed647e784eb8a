"""One Redis read per key per process: followers of a key share one `XREAD` loop.

The rules first, without Redis (`rxstream.io.redis.feed.Feed`, fed by hand):
who gets which entries when a follower joins a feed that is ahead of it (its
backlog read while the feed reads on), behind it, or slower than it. Then
against a real `redis-server`: many followers, one blocked read; a joiner
whose backlog read is held up until the feed has read past it gets every
item once; errors reach every follower; the last to leave stops the read.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
import redis
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.subject import Subject

import rxstream as rs
from rxstream.core import wire
from rxstream.io.redis.entries import entries_of, item_payload
from rxstream.io.redis.feed import MAX_QUEUED, Backlog, Feed, FollowPlan, Member
from rxstream.testing.redis_server import RedisServer
from tests.support.redis import TIMEOUT, Outcome, aclient, arun, client, until

ITEMS = [rs.TextDelta(str(i)) for i in range(20)]

# --------------------------------------------------------------------------- the rules


def entry(number: int, kind: str = "item") -> tuple[bytes, dict[bytes, Any]]:
    """Entry `number` as redis-py returns it; items are `TextDelta(str(number))`."""
    data = {
        "start": wire.start_data(1.0, None),
        "item": item_payload(rs.TextDelta(str(number))),
    }.get(kind)
    fields = wire.entry_fields(kind, number, data)
    return f"{1000 + number}-0".encode(), {
        fields[i]: fields[i + 1] for i in range(0, len(fields), 2)
    }


def xread(*numbers: int, kinds: dict[int, str] | None = None) -> list[Any]:
    """An XREAD reply holding the entries `numbers` (entry 0 is the start)."""
    kinds = kinds or {}
    return [[b"k", [entry(n, kinds.get(n, "start" if n == 0 else "item")) for n in numbers]]]


def xrange(*numbers: int) -> list[Any]:
    return [entry(n, "start" if n == 0 else "item") for n in numbers]


def opened(after: str | None = None, *, ids: bool = False) -> FollowPlan:
    """A follower's plan, opened on a key that holds a stream (entries 0 to 9 for a resume)."""
    plan = FollowPlan("k", after, ids=ids, timeout=10.0)
    replies: list[Any] = [b"stream", [b"1700000000", b"0"]]
    if after is not None:
        number = int(after.split("-")[0]) - 1000
        replies += [xrange(number), xrange(0), xrange(9)]
    plan.opened(replies, 0.0)
    return plan


def texts(batches: list[list[Any]]) -> list[str]:
    return [
        item.text if isinstance(item, rs.TextDelta) else item.item.text
        for b in batches
        for item in b
    ]


def drain(member: Member) -> tuple[list[list[Any]], list[Any]]:
    """The member's batches, and what ended it (None, an error), if anything did."""
    batches: list[list[Any]] = []
    ends: list[Any] = []
    while True:
        has, got = member.pop()
        if not has:
            return batches, ends
        if isinstance(got, list):
            batches.append(got)
        else:
            ends.append(got)


def test_the_first_follower_starts_the_feed_where_it_resumes() -> None:
    feed = Feed("k")
    first = Member(opened("1004-0"), lambda: None)
    assert feed.join(first) is None
    assert feed.reader.position == "1004-0"
    assert feed.command(0.0, 1.0)[-1] == "1004-0"
    feed.received(xread(5, 6), 0.0)
    assert texts(drain(first)[0]) == ["5", "6"]


def test_a_joiner_behind_the_feed_reads_its_backlog_while_the_feed_reads_on() -> None:
    feed = Feed("k")
    first = Member(opened(), lambda: None)
    feed.join(first)
    feed.received(xread(0, 1, 2, 3), 0.0)

    joiner = Member(opened("1001-0", ids=True), lambda: None)
    backlog = feed.join(joiner)
    assert backlog == ("1003-0", 4)  # to the feed's position, inclusive
    # The race: the feed reads entries 4 and 5 while the joiner's XRANGE is under way.
    feed.received(xread(4, 5), 0.0)
    assert joiner.pending
    assert not joiner.queue
    command = joiner.plan.backlog(backlog[0])
    assert command[:4] == ("XRANGE", "k", "(1001-0", "1003-0")  # after its own id, exclusive
    from_backlog = joiner.plan.reader.feed(entries_of(xrange(2, 3), xread=False))
    joiner.plan.reader.reached(*backlog)
    assert not joiner.plan.reader.done
    assert feed.settle(joiner)
    feed.received(xread(6), 0.0)
    live, _ = drain(joiner)
    # Every item after its `after` exactly once, in order, ids kept.
    assert texts([from_backlog, *live]) == ["2", "3", "4", "5", "6"]
    assert [e.id for e in live[0]] == ["1004-0", "1005-0"]
    assert texts(drain(first)[0]) == [str(i) for i in range(1, 7)]


def behind() -> tuple[Member, tuple[str, int] | None]:
    """A joiner after entry 1 of a feed that has read entries 0 to 5, and its backlog."""
    feed = Feed("k")
    feed.join(Member(opened(), lambda: None))
    feed.received(xread(0, 1, 2, 3, 4, 5), 0.0)
    joiner = Member(opened("1001-0"), lambda: None)
    return joiner, feed.join(joiner)


def test_a_joiner_whose_backlog_was_trimmed_meanwhile_names_the_gap() -> None:
    joiner, backlog = behind()
    assert backlog == ("1005-0", 6)
    # Entries 2 to 5 trimmed before its XRANGE ran: it read nothing.
    joiner.plan.reader.feed(entries_of(xrange(), xread=False))
    joiner.plan.reader.reached(*backlog)
    assert isinstance(joiner.plan.reader.failure, rs.StoredStreamError)
    assert joiner.plan.reader.failure.missing == (2, 5)


def test_a_joiner_ahead_of_the_feed_skips_what_it_has_seen() -> None:
    feed = Feed("k")
    feed.join(Member(opened(), lambda: None))
    feed.received(xread(0, 1, 2), 0.0)
    joiner = Member(opened("1004-0"), lambda: None)
    assert feed.join(joiner) is None  # no backlog: it goes live at once
    feed.received(xread(3, 4, 5), 0.0)
    feed.received(xread(6), 0.0)
    assert texts(drain(joiner)[0]) == ["5", "6"]


def test_a_follower_busy_with_its_batch_is_dropped_and_reads_on_its_own() -> None:
    feed = Feed("k")
    slow, other = Member(opened(), lambda: None), Member(opened(), lambda: None)
    feed.join(slow)
    feed.join(other)
    feed.received(xread(0, 1, 2), 0.0)
    has, batch = slow.pop()  # taken, and still being pushed downstream
    assert has
    assert isinstance(batch, list)
    assert texts([batch]) == ["1", "2"]
    feed.received(xread(3), 0.0)
    assert slow.detached
    assert slow not in feed.members
    assert not slow.queue
    # It stands where its last batch ended: its next read (as a joiner) starts there.
    assert slow.plan.reader.position == "1002-0"
    assert slow.pop() == (False, None)
    assert feed.join(slow) == ("1003-0", 4)
    assert texts(drain(other)[0]) == ["1", "2", "3"]


def test_a_follower_never_holds_more_than_about_one_read() -> None:
    feed = Feed("k")
    idle = Member(opened(), lambda: None)
    feed.join(idle)
    numbers = list(range(MAX_QUEUED + 2))
    for start in range(0, len(numbers), 100):
        feed.received(xread(*numbers[start : start + 100]), 0.0)
    assert idle.detached
    assert not idle.queue
    assert idle.queued == 0
    assert idle.plan.reader.position == "0-0"  # nothing taken: it reads it all from Redis


def test_the_end_and_errors_reach_every_follower_after_their_items() -> None:
    feed = Feed("k")
    members = [Member(opened(), lambda: None) for _ in range(3)]
    for member in members:
        feed.join(member)
    feed.received(xread(0, 1, 2, 3, kinds={3: "end"}), 0.0)
    assert feed.reader.done
    feed.finish(None)
    for member in members:
        batches, ends = drain(member)
        assert texts(batches) == ["1", "2"]
        assert ends == [None]
    error = rs.StoredStreamError("k", "gone")
    other = Feed("k")
    waiting = Member(opened(), lambda: None)
    other.join(waiting)
    other.finish(error)
    assert drain(waiting) == ([], [error])
    assert other.closed


def test_a_silent_producer_ends_each_follower_at_its_own_deadline() -> None:
    feed = Feed("k")
    short, long = (
        FollowPlan("k", None, ids=False, timeout=1.0),
        FollowPlan("k", None, ids=False, timeout=5.0),
    )
    for plan in (short, long):
        plan.opened([b"none", [b"1700000000", b"0"]], 0.0)
    a, b = Member(short, lambda: None), Member(long, lambda: None)
    feed.join(a)
    feed.join(b)
    assert feed.command(0.0, 2.0)[3:5] == ("BLOCK", 1000)  # never past the nearest deadline
    feed.received([], 1.5)
    assert isinstance(drain(a)[1][0], rs.StreamTimeoutError)
    assert drain(b) == ([], [])
    assert list(feed.members) == [b]


def test_the_last_to_leave_closes_the_feed() -> None:
    feed = Feed("k")
    a, b = Member(opened(), lambda: None), Member(opened(), lambda: None)
    feed.join(a)
    feed.join(b)
    assert not feed.leave(a)
    assert feed.leave(b)
    assert feed.closed
    with pytest.raises(RuntimeError, match="closed"):
        feed.join(a)


def backlog_run(backlog: Backlog, replies: list[list[Any]]) -> tuple[list[Any], list[str]]:
    """Drive `backlog` as a shell does, with `replies` for its XRANGEs: its commands' starts
    and ends, and the texts of what it read."""
    sent: list[Any] = []
    read: list[list[Any]] = []
    while (command := backlog.command()) is not None:
        sent.append(command[2:4])
        read.append(backlog.received(replies.pop(0)))
    return sent, texts(read)


BACKLOGS = [
    # (the XRANGE replies, the commands sent, the texts read, the entries gone or None)
    ([xrange(2, 3, 4, 5)], [("(1001-0", "1005-0")], ["2", "3", "4", "5"], None),
    (
        [xrange(2, 3), xrange(4, 5)],
        [("(1001-0", "1005-0"), ("(1003-0", "1005-0")],
        ["2", "3", "4", "5"],
        None,
    ),
    ([xrange()], [("(1001-0", "1005-0")], [], (2, 5)),  # all trimmed before the read
    ([xrange(2, 3), xrange()], [("(1001-0", "1005-0"), ("(1003-0", "1005-0")], ["2", "3"], (4, 5)),
]


@pytest.mark.parametrize(("replies", "sent", "read", "missing"), BACKLOGS)
def test_a_backlog_reads_up_to_the_feed_and_names_what_is_gone(
    replies: list[list[Any]], sent: list[Any], read: list[str], missing: tuple[int, int] | None
) -> None:
    joiner, mark = behind()
    assert mark == ("1005-0", 6)
    assert backlog_run(Backlog(joiner.plan, mark), replies) == (sent, read)
    failure = joiner.plan.reader.failure
    if missing is None:
        assert failure is None
        assert (joiner.plan.reader.position, joiner.plan.reader.expected) == mark
    else:
        assert isinstance(failure, rs.StoredStreamError)
        assert failure.missing == missing


def test_a_members_next_step_is_a_batch_a_wait_a_rejoin_or_the_end() -> None:
    feed = Feed("k")
    member, other = Member(opened(), lambda: None), Member(opened(), lambda: None)
    feed.join(member)
    feed.join(other)
    assert member.next() == ("wait", None)
    feed.received(xread(0, 1, 2), 0.0)
    what, batch = member.next()
    assert what == "batch"
    assert texts([batch or []]) == ["1", "2"]
    feed.received(xread(3), 0.0)  # it is still on its batch: dropped
    assert member.next() == ("rejoin", None)
    assert [other.next()[0], other.next()[0]] == ["batch", "batch"]  # entries 1-2, then 3
    error = rs.StoredStreamError("k", "gone")
    feed.finish(error)
    assert other.next() == ("end", None)
    assert other.ended is error
    assert member.ended is None


# --------------------------------------------------------------------------- against Redis


def blocked(r: Any) -> int:
    return int(r.info("clients")["blocked_clients"])


def xreads(r: Any) -> int:
    return int(r.info("commandstats").get("cmdstat_xread", {}).get("calls", 0))


def producer(r: redis.Redis, key: str, **options: Any) -> tuple[Subject[Any], Outcome]:
    subject: Subject[Any] = Subject()
    written = Outcome()
    subject.pipe(rs.to_redis_stream(r, key, **options)).subscribe(
        written.on_next, written.on_error, written.on_completed
    )
    return subject, written


def test_many_async_followers_share_one_read(redis_server: RedisServer) -> None:
    async def main() -> None:
        r, probe = aclient(redis_server), client(redis_server)
        subject, written = producer(client(redis_server), "answer")
        seen = [Outcome() for _ in range(50)]
        for outcome in seen:
            rs.from_redis_stream(r, "answer").subscribe(
                outcome.on_next, outcome.on_error, outcome.on_completed
            )
        await until(lambda: blocked(probe) >= 1)
        await asyncio.sleep(0.05)
        assert blocked(probe) == 1  # one XREAD BLOCK for all fifty
        before = xreads(probe)
        for item in ITEMS:
            subject.on_next(item)
            await asyncio.sleep(0.002)
        subject.on_completed()
        await until(lambda: all(o.ended.is_set() for o in seen))
        for outcome in seen:
            assert outcome.completed, outcome.error
            assert outcome.items == ITEMS
        # About one read per item (the producer writes them apart), never one per follower.
        assert xreads(probe) - before <= 2 * len(ITEMS) + 2
        assert written.completed
        await until(lambda: blocked(probe) == 0)
        await r.aclose()

    asyncio.run(main())


def test_many_sync_followers_share_one_read(redis_server: RedisServer) -> None:
    r, probe = client(redis_server), client(redis_server)
    subject, _ = producer(client(redis_server), "answer")
    pool = ThreadPoolScheduler(10)
    seen = [Outcome() for _ in range(10)]
    for outcome in seen:
        rs.from_redis_stream(r, "answer", scheduler=pool).subscribe(
            outcome.on_next, outcome.on_error, outcome.on_completed
        )
    deadline = time.monotonic() + TIMEOUT
    while blocked(probe) == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)
    assert blocked(probe) == 1
    for item in ITEMS:
        subject.on_next(item)
        time.sleep(0.002)
    subject.on_completed()
    for outcome in seen:
        assert outcome.ended.wait(TIMEOUT)
        assert outcome.completed, outcome.error
        assert outcome.items == ITEMS  # a follower dropped for being slow read the rest itself
    pool.executor.shutdown(wait=True)
    assert blocked(probe) == 0


def test_a_joiner_whose_backlog_read_races_the_feed_gets_every_item_once(
    redis_server: RedisServer,
) -> None:
    """The joiner's XRANGE is held until the producer has written more and the shared
    reader has read it: those entries come from what the feed held for the joiner,
    the older ones from its backlog, none twice and none missing."""

    async def main() -> None:
        r = aclient(redis_server)
        subject, _ = producer(client(redis_server), "answer")
        first = Outcome()
        rs.from_redis_stream(r, "answer", ids=True).subscribe(
            first.on_next, first.on_error, first.on_completed
        )
        for item in ITEMS[:10]:
            subject.on_next(item)
        await until(lambda: len(first.items) == 10)
        send = r.execute_command
        held = asyncio.Event()

        async def racing(*args: Any, **options: Any) -> Any:
            if args[0] == "XRANGE" and str(args[2]).startswith("(") and not held.is_set():
                held.set()
                for item in ITEMS[10:15]:
                    subject.on_next(item)
                await until(lambda: len(first.items) == 15)  # the feed read them meanwhile
            return await send(*args, **options)  # type: ignore[no-untyped-call]

        r.execute_command = racing  # type: ignore[method-assign]
        resumed, fresh = Outcome(), Outcome()
        after = first.items[4].id
        rs.from_redis_stream(r, "answer", after=after, ids=True).subscribe(
            resumed.on_next, resumed.on_error, resumed.on_completed
        )
        await until(held.is_set)
        rs.from_redis_stream(r, "answer").subscribe(
            fresh.on_next, fresh.on_error, fresh.on_completed
        )
        await asyncio.sleep(0.05)
        for item in ITEMS[15:]:
            subject.on_next(item)
        subject.on_completed()
        await until(lambda: resumed.ended.is_set() and fresh.ended.is_set())
        assert resumed.completed, resumed.error
        assert [e.item for e in resumed.items] == ITEMS[5:]
        assert [e.id for e in resumed.items] == [e.id for e in first.items[5:]]
        assert fresh.completed, fresh.error
        assert fresh.items == ITEMS
        await until(first.ended.is_set)
        assert [e.item for e in first.items] == ITEMS
        await r.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_the_stored_error_reaches_every_follower(
    redis_server: RedisServer, use_async: bool
) -> None:
    subject, _ = producer(client(redis_server), "answer")
    subject.on_next(ITEMS[0])
    error = rs.TruncatedStreamError("the provider overloaded mid-answer")

    async def main() -> list[Outcome]:
        r = aclient(redis_server)
        seen = [Outcome() for _ in range(5)]
        for outcome in seen:
            rs.from_redis_stream(r, "answer").subscribe(
                outcome.on_next, outcome.on_error, outcome.on_completed
            )
        await until(lambda: all(o.items for o in seen))
        subject.on_error(error)
        await until(lambda: all(o.ended.is_set() for o in seen))
        await r.aclose()
        return seen

    if use_async:
        seen = asyncio.run(main())
    else:
        r = client(redis_server)
        pool = ThreadPoolScheduler(5)
        seen = [Outcome() for _ in range(5)]
        for outcome in seen:
            rs.from_redis_stream(r, "answer", scheduler=pool).subscribe(
                outcome.on_next, outcome.on_error, outcome.on_completed
            )
        deadline = time.monotonic() + TIMEOUT
        while not all(o.items for o in seen) and time.monotonic() < deadline:
            time.sleep(0.005)
        subject.on_error(error)
        for outcome in seen:
            assert outcome.ended.wait(TIMEOUT)
        pool.executor.shutdown(wait=True)
    for outcome in seen:
        assert outcome.items == [ITEMS[0]]
        assert isinstance(outcome.error, rs.TruncatedStreamError)
        assert "overloaded" in str(outcome.error)


def test_redis_gone_reaches_every_follower(redis_server: RedisServer) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        subject, _ = producer(client(redis_server), "answer", heartbeat=0.05)
        subject.on_next(ITEMS[0])
        seen = [Outcome() for _ in range(5)]
        for outcome in seen:
            rs.from_redis_stream(r, "answer").subscribe(
                outcome.on_next, outcome.on_error, outcome.on_completed
            )
        await until(lambda: all(o.items for o in seen))
        await asyncio.to_thread(redis_server.stop)
        await until(lambda: all(o.ended.is_set() for o in seen))
        for outcome in seen:
            assert outcome.items == [ITEMS[0]]
            assert isinstance(outcome.error, rs.TransportError)
        await r.aclose()

    asyncio.run(main())


def test_followers_that_leave_stop_the_shared_read(redis_server: RedisServer) -> None:
    async def main() -> None:
        r, probe = aclient(redis_server), client(redis_server)
        seen = [Outcome() for _ in range(3)]
        subscriptions = [
            rs.from_redis_stream(r, "nothing-yet", heartbeat_timeout=60).subscribe(
                o.on_next, o.on_error, o.on_completed
            )
            for o in seen
        ]
        await until(lambda: blocked(probe) == 1)
        subscriptions[0].dispose()
        subscriptions[1].dispose()
        await asyncio.sleep(0.05)
        assert blocked(probe) == 1  # one still follows
        subscriptions[2].dispose()
        await until(lambda: blocked(probe) == 0)
        # A new follower starts a new read, and it works.
        again = Outcome()
        rs.from_redis_stream(r, "nothing-yet", heartbeat_timeout=0.2).subscribe(
            again.on_next, again.on_error, again.on_completed
        )
        await until(again.ended.is_set)
        assert isinstance(again.error, rs.StreamTimeoutError)
        assert not any(o.ended.is_set() for o in seen)
        await r.aclose()

    asyncio.run(main())


def test_a_slow_sync_follower_beside_a_fast_one_gets_every_item_once(
    redis_server: RedisServer,
) -> None:
    r = client(redis_server)
    subject, _ = producer(client(redis_server), "answer")
    items = [rs.TextDelta(str(i)) for i in range(300)]
    fast = Outcome()
    pool = ThreadPoolScheduler(2)
    rs.from_redis_stream(r, "answer", scheduler=pool).subscribe(
        fast.on_next, fast.on_error, fast.on_completed
    )
    slow_items: list[Any] = []
    iterator = rs.to_iterator(rs.from_redis_stream(r, "answer", scheduler=pool), maxsize=1)

    def consume() -> None:
        for item in iterator:
            slow_items.append(item)
            time.sleep(0.001)

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    for item in items:
        subject.on_next(item)
    subject.on_completed()
    assert fast.ended.wait(TIMEOUT)
    reader.join(TIMEOUT)
    assert fast.items == items
    assert slow_items == items
    pool.executor.shutdown(wait=True)


def test_a_slow_async_follower_catches_up_and_newcomers_still_join(
    redis_server: RedisServer,
) -> None:
    """A consumer slower than the stream drops out of the shared read and joins again (the
    only follower: it makes the key's reader anew); followers that arrive then use it."""

    async def main() -> None:
        r = aclient(redis_server)
        subject, _ = producer(client(redis_server), "answer")
        items = [rs.TextDelta(str(i)) for i in range(300)]
        slow: list[Any] = []

        async def consume() -> None:
            async for item in rs.to_async_iterator(rs.from_redis_stream(r, "answer"), maxsize=1):
                slow.append(item)
                await asyncio.sleep(0.001)

        task = asyncio.ensure_future(consume())
        await asyncio.sleep(0.05)
        for item in items:
            subject.on_next(item)
        subject.on_completed()
        await until(lambda: len(slow) >= 50)
        late = await arun(rs.from_redis_stream(r, "answer"))
        assert late.completed, late.error
        assert late.items == items
        await asyncio.wait_for(task, TIMEOUT)
        assert slow == items
        await r.aclose()

    asyncio.run(main())
