"""Bad input and faults of the Redis Streams source and operator, each against a real Redis.

Redis unreachable at start, Redis restarted mid-stream (with and without its
data), a key that does not exist, a key of another type, entries not written
by rxstream, a follower slower than `maxlen` allows, a dead producer, and a
malformed or unknown `Last-Event-ID`: each ends with a clear error saying what
arrived, never a hang and never a silent gap.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
import reactivex
import redis
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.subject import Subject

import rxstream as rs
from rxstream.io.redis_streams import gone_cause, map_redis_error
from rxstream.testing.redis_server import RedisServer
from tests.support.redis import (
    TIMEOUT,
    Outcome,
    aclient,
    afollow,
    aproduce,
    client,
    follow,
    in_thread,
    produce,
    run,
    xrange,
)
from tests.support.sources import free_port

ITEMS = [rs.TextDelta(str(i)) for i in range(10)]


def nowhere() -> Any:
    """Where no Redis listens: a free port on 127.0.0.1 (bound, then released)."""
    return SimpleNamespace(host="127.0.0.1", port=free_port())


# --------------------------------------------------------------------------- unreachable


def test_unreachable_at_start_sync_producer_never_subscribes_its_source() -> None:
    subscribed = False

    def subscribe(observer: Any, scheduler: Any = None) -> Any:
        nonlocal subscribed
        subscribed = True
        return reactivex.empty().subscribe(observer)

    server = nowhere()
    written = run(reactivex.create(subscribe).pipe(rs.to_redis_stream(client(server), "k")))
    assert isinstance(written.error, rs.TransportError)
    assert f"127.0.0.1:{server.port}" in str(written.error)
    assert "refused" in str(written.error).lower()
    assert not subscribed


def test_unreachable_at_start_async_producer() -> None:
    async def main() -> None:
        r = aclient(nowhere())
        written = await aproduce(r, "k", ITEMS)
        assert isinstance(written.error, rs.TransportError)
        await r.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("after", [None, "1-0"], ids=["from-start", "resuming"])
def test_unreachable_at_start_followers(after: str | None) -> None:
    server = nowhere()
    read = follow(client(server), "k", after=after)
    assert isinstance(read.error, rs.TransportError)
    assert "Redis at 127.0.0.1:" in str(read.error)
    assert read.error.__context__ is None
    assert read.error.__cause__ is None

    async def main() -> Outcome:
        r = aclient(server)
        try:
            return await afollow(r, "k", after=after)
        finally:
            await r.aclose()

    assert isinstance(asyncio.run(main()).error, rs.TransportError)


def test_a_password_never_shows_in_an_error(redis_server: RedisServer) -> None:
    client(redis_server).config_set("requirepass", "right-password")
    wrong = redis.Redis.from_url(f"redis://user:s3cret-password@127.0.0.1:{redis_server.port}/0")
    read = follow(wrong, "k")
    assert isinstance(read.error, rs.TransportError)
    chain = [read.error, read.error.__cause__, read.error.__context__]
    text = " ".join(f"{e!s} {e!r} {getattr(e, 'args', '')}" for e in chain if e is not None)
    assert "s3cret" not in text


# --------------------------------------------------------------------------- restarts


def test_redis_restarted_with_its_data_followers_and_producer_go_on(
    redis_server: RedisServer,
) -> None:
    producer_client = client(redis_server, retries=50)
    follower_client = client(redis_server, retries=50)
    subject: Subject[Any] = Subject()
    written = Outcome()
    subject.pipe(rs.to_redis_stream(producer_client, "answer")).subscribe(
        written.on_next, written.on_error, written.on_completed
    )
    pool = ThreadPoolScheduler(1)
    seen = Outcome()
    rs.from_redis_stream(follower_client, "answer", scheduler=pool).subscribe(
        seen.on_next, seen.on_error, seen.on_completed
    )
    for item in ITEMS[:5]:
        subject.on_next(item)
    deadline = time.monotonic() + TIMEOUT
    while len(seen.items) < 5 and time.monotonic() < deadline:
        time.sleep(0.005)
    redis_server.restart(keep_data=True)
    for item in ITEMS[5:]:
        subject.on_next(item)
    subject.on_completed()
    assert seen.ended.wait(TIMEOUT)
    assert seen.completed, seen.error
    assert seen.items == ITEMS  # every item once, in order
    assert written.completed
    assert written.items == ITEMS
    pool.executor.shutdown(wait=True)


def test_redis_restarted_with_its_data_async(redis_server: RedisServer) -> None:
    async def main() -> None:
        producer_client = aclient(redis_server, retries=50)
        follower_client = aclient(redis_server, retries=50)
        subject: Subject[Any] = Subject()
        written = Outcome()
        subject.pipe(rs.to_redis_stream(producer_client, "answer")).subscribe(
            written.on_next, written.on_error, written.on_completed
        )
        follower = asyncio.ensure_future(afollow(follower_client, "answer"))
        for item in ITEMS[:5]:
            subject.on_next(item)
        await asyncio.sleep(0.1)
        await asyncio.to_thread(redis_server.restart, keep_data=True)
        for item in ITEMS[5:]:
            subject.on_next(item)
        subject.on_completed()
        read = await follower
        assert read.completed, read.error
        assert read.items == ITEMS
        assert written.completed
        await producer_client.aclose()
        await follower_client.aclose()

    asyncio.run(main())


def test_redis_restarted_without_its_data_readers_name_what_was_lost(
    redis_server: RedisServer,
) -> None:
    r = client(redis_server, retries=50)
    subject: Subject[Any] = Subject()
    written = Outcome()
    subject.pipe(rs.to_redis_stream(r, "answer", heartbeat=0.05)).subscribe(
        written.on_next, written.on_error, written.on_completed
    )
    for item in ITEMS[:5]:
        subject.on_next(item)
    time.sleep(0.1)
    third = xrange(r, "answer")[3][0].decode()
    redis_server.restart(keep_data=False)
    for item in ITEMS[5:]:
        subject.on_next(item)
    subject.on_completed()
    assert written.completed  # the producer went on (its stream is recreated)

    read = follow(r, "answer")
    assert read.items == []
    assert isinstance(read.error, rs.StoredStreamError)
    assert read.error.missing is not None
    assert read.error.missing[0] == 0
    assert read.error.missing[1] >= 5  # start and five items at least, heartbeats maybe
    assert "restart of Redis" in str(read.error)

    resumed = follow(r, "answer", after=third)
    assert isinstance(resumed.error, rs.StoredStreamError)
    assert f"cannot resume after {third!r}: that entry is gone" in str(resumed.error)


def test_redis_gone_for_good_ends_followers_with_a_transport_error(
    redis_server: RedisServer,
) -> None:
    r = client(redis_server)
    produce_subject: Subject[Any] = Subject()
    written = Outcome()
    produce_subject.pipe(rs.to_redis_stream(r, "answer", heartbeat=0.05)).subscribe(
        written.on_next, written.on_error, written.on_completed
    )
    pool = ThreadPoolScheduler(1)
    seen = Outcome()
    rs.from_redis_stream(client(redis_server), "answer", scheduler=pool).subscribe(
        seen.on_next, seen.on_error, seen.on_completed
    )
    produce_subject.on_next(ITEMS[0])
    deadline = time.monotonic() + TIMEOUT
    while not seen.items and time.monotonic() < deadline:
        time.sleep(0.005)
    redis_server.stop()
    assert seen.ended.wait(TIMEOUT)
    assert seen.items == [ITEMS[0]]
    assert isinstance(seen.error, rs.TransportError)
    assert written.ended.wait(TIMEOUT)
    assert isinstance(written.error, rs.TransportError)
    pool.executor.shutdown(wait=True)


@pytest.mark.parametrize("make", [client, aclient], ids=["sync", "async"])
def test_redis_gone_ends_the_producer_and_its_upstream(
    redis_server: RedisServer, make: Callable[..., Any]
) -> None:
    async def main() -> None:
        r = make(redis_server)
        subject: Subject[Any] = Subject()
        written = Outcome()
        subject.pipe(rs.to_redis_stream(r, "answer", heartbeat=0.05)).subscribe(
            written.on_next, written.on_error, written.on_completed
        )
        subject.on_next(ITEMS[0])
        await asyncio.sleep(0.05)
        redis_server.stop()
        # The writer fails at its next write (a heartbeat, or this item).
        subject.on_next(ITEMS[1])
        deadline = time.monotonic() + TIMEOUT
        while not written.ended.is_set() and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        assert isinstance(written.error, rs.TransportError)
        assert not subject.observers  # upstream disposed
        if make is aclient:
            await r.aclose()

    asyncio.run(main())


# --------------------------------------------------------------------------- keys


def test_a_missing_key_is_waited_for_then_times_out(redis_server: RedisServer) -> None:
    read = follow(client(redis_server), "never", heartbeat_timeout=0.2)
    assert isinstance(read.error, rs.StreamTimeoutError)
    assert read.error.limit == "heartbeat"
    assert "no stream at Redis key 'never'" in str(read.error)


def test_a_missing_key_times_out_async(redis_server: RedisServer) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        read = await afollow(r, "never", heartbeat_timeout=0.2)
        assert isinstance(read.error, rs.StreamTimeoutError)
        await r.aclose()

    asyncio.run(main())


def test_resuming_a_missing_key_fails_at_once(redis_server: RedisServer) -> None:
    read = follow(client(redis_server), "expired", after="1700000000000-0", heartbeat_timeout=60)
    assert isinstance(read.error, rs.StoredStreamError)
    assert "no stream at this key" in str(read.error)
    assert read.error.after == "1700000000000-0"


OTHER_TYPES: dict[str, Callable[[redis.Redis, str], Any]] = {
    "string": lambda r, k: r.set(k, "x"),
    "list": lambda r, k: r.rpush(k, "x"),
    "hash": lambda r, k: r.hset(k, "f", "x"),
    "set": lambda r, k: r.sadd(k, "x"),
    "zset": lambda r, k: r.zadd(k, {"x": 1}),
}


@pytest.mark.parametrize("kind", OTHER_TYPES)
@pytest.mark.parametrize("after", [None, "1-0"], ids=["from-start", "resuming"])
def test_a_key_of_another_type_follower(
    redis_server: RedisServer, kind: str, after: str | None
) -> None:
    r = client(redis_server)
    OTHER_TYPES[kind](r, "taken")
    read = follow(r, "taken", after=after)
    assert isinstance(read.error, rs.StoredStreamError)
    assert str(read.error) == f"stream 'taken': the key holds a {kind}, not a stream"


@pytest.mark.parametrize("kind", OTHER_TYPES)
def test_a_key_of_another_type_producer(redis_server: RedisServer, kind: str) -> None:
    r = client(redis_server)
    OTHER_TYPES[kind](r, "taken")
    written = produce(r, "taken", ITEMS)
    assert isinstance(written.error, rs.StoredStreamError)
    assert str(written.error) == f"stream 'taken': the key holds a {kind}, not a stream"
    assert written.items == []


def test_a_key_that_already_holds_a_stream_is_refused(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "answer", ITEMS[:2])
    again = produce(r, "answer", ITEMS)
    assert isinstance(again.error, rs.StoredStreamError)
    assert "already holds a stream" in str(again.error)
    assert follow(r, "answer").items == ITEMS[:2]  # the first stream is untouched


def test_a_key_replaced_mid_stream_is_wrongtype(redis_server: RedisServer) -> None:
    r = client(redis_server)
    subject: Subject[Any] = Subject()
    written = Outcome()
    subject.pipe(rs.to_redis_stream(r, "answer")).subscribe(
        written.on_next, written.on_error, written.on_completed
    )
    subject.on_next(ITEMS[0])
    r.delete("answer")
    r.set("answer", "someone else's")
    subject.on_completed()
    assert isinstance(written.error, rs.StoredStreamError)
    assert "WRONGTYPE" in str(written.error)


# --------------------------------------------------------------------------- foreign entries


def _entry(**fields: Any) -> dict[Any, Any]:
    return {"v": "1", "n": "0", "kind": "start", "data": "{}", **fields}


FOREIGN: dict[str, tuple[list[dict[Any, Any]], str]] = {
    "not-rxstream": ([{"event": "hello"}], "was not written by rxstream.to_redis_stream"),
    "newer-format": ([_entry(v="2")], "is in rxstream format '2'; this version"),
    "no-number": ([_entry(n="x")], "has no number: n='x'"),
    "unknown-kind": ([_entry(), _entry(n="1", kind="poem")], "is of an unknown kind 'poem'"),
    "bad-json": ([_entry(), _entry(n="1", kind="item", data="{nope")], "holds no JSON"),
    "unknown-item": (
        [_entry(), _entry(n="1", kind="item", data=json.dumps({"type": "hologram"}))],
        "holds no item this rxstream can read (unknown item type 'hologram'",
    ),
    "error-not-object": ([_entry(), _entry(n="1", kind="error", data="[1]")], "holds no error"),
}


@pytest.mark.parametrize("name", FOREIGN)
def test_entries_not_written_by_rxstream(redis_server: RedisServer, name: str) -> None:
    r = client(redis_server)
    entries, message = FOREIGN[name]
    for fields in entries:
        r.xadd("foreign", fields)
    read = follow(r, "foreign", heartbeat_timeout=TIMEOUT)
    assert isinstance(read.error, rs.StoredStreamError)
    assert message in str(read.error)
    assert "'foreign'" in str(read.error)


# --------------------------------------------------------------------------- dead producers


def test_a_producer_that_died_long_ago_fails_a_new_follower_at_once(
    redis_server: RedisServer,
) -> None:
    r = client(redis_server)
    old = int(r.time()[0]) * 1000 - 60_000  # a minute ago, on Redis's clock
    r.xadd("dead", _entry(data=json.dumps({"heartbeat": 2.0})), id=f"{old}-0")
    r.xadd("dead", _entry(n="1", kind="item", data='{"type":"text","text":"a"}'), id=f"{old}-1")
    read = follow(r, "dead", heartbeat_timeout=30)  # would wait 30 s for a live one
    assert read.items == [rs.TextDelta("a")]
    assert isinstance(read.error, rs.StreamTimeoutError)
    assert "stopped before the end: no entry and no heartbeat for 30 s" in str(read.error)
    assert "(it beats every 2 s)" in str(read.error)


def test_a_producer_that_dies_mid_stream_ends_its_followers(redis_server: RedisServer) -> None:
    r = client(redis_server)
    r.xadd("dying", _entry(data=json.dumps({"heartbeat": 0.05})))
    pool = ThreadPoolScheduler(1)
    seen = Outcome()
    rs.from_redis_stream(r, "dying", heartbeat_timeout=0.3, scheduler=pool).subscribe(
        seen.on_next, seen.on_error, seen.on_completed
    )
    r.xadd("dying", _entry(n="1", kind="item", data='{"type":"text","text":"a"}'))
    assert seen.ended.wait(TIMEOUT)  # and no more entries: the "producer" is gone
    assert seen.items == [rs.TextDelta("a")]
    assert isinstance(seen.error, rs.StreamTimeoutError)
    pool.executor.shutdown(wait=True)


# --------------------------------------------------------------------------- trimming


def test_a_follower_that_starts_after_trimming_names_what_is_gone(
    redis_server: RedisServer,
) -> None:
    r = client(redis_server)
    produce(r, "long", [rs.TextDelta(str(i)) for i in range(1000)], maxlen=10)
    assert r.xlen("long") < 1000
    read = follow(r, "long")
    assert read.items == []
    assert isinstance(read.error, rs.StoredStreamError)
    first_kept = int(xrange(r, "long", count=1)[0][1][b"n"])
    assert read.error.missing == (0, first_kept - 1)
    assert f"entries 0 to {first_kept - 1} are gone ({first_kept} in all" in str(read.error)
    assert "trimmed by MAXLEN" in str(read.error)


def test_a_follower_slower_than_maxlen_fails_naming_the_gap(redis_server: RedisServer) -> None:
    r = client(redis_server)
    subject: Subject[Any] = Subject()
    subject.pipe(rs.to_redis_stream(r, "long", maxlen=10)).subscribe()
    for i in range(3):
        subject.on_next(rs.TextDelta(str(i)))
    # A consumer that takes one item and then stops reading: the source is held
    # in its `on_next` with the rest of its first read (items 1 and 2).
    iterator = rs.to_iterator(
        rs.from_redis_stream(r, "long", scheduler=ThreadPoolScheduler(1)), maxsize=1
    )
    assert next(iterator) == rs.TextDelta("0")
    for i in range(3, 1000):
        subject.on_next(rs.TextDelta(str(i)))
    subject.on_completed()
    got = [next(iterator), next(iterator)]
    assert got == [rs.TextDelta("1"), rs.TextDelta("2")]
    with pytest.raises(rs.StoredStreamError) as caught:
        next(iterator)
    first_kept = int(xrange(r, "long", count=1)[0][1][b"n"])
    assert caught.value.missing == (4, first_kept - 1)
    assert f"entries 4 to {first_kept - 1} are gone" in str(caught.value)
    assert "a follower slower than maxlen allows" in str(caught.value)


# --------------------------------------------------------------------------- deleted or trimmed


def counts_entries_added(r: Any) -> bool:
    """Whether this Redis counts the entries added to a stream (`XINFO`'s `entries-added`, 7.0+)."""
    return int(str(r.info("server")["redis_version"]).split(".")[0]) >= 7


def test_a_key_deleted_mid_stream_is_told_from_trimming(redis_server: RedisServer) -> None:
    r = client(redis_server)
    subject: Subject[Any] = Subject()
    written = Outcome()
    subject.pipe(rs.to_redis_stream(r, "answer", heartbeat=0.05)).subscribe(
        written.on_next, written.on_error, written.on_completed
    )
    for item in ITEMS[:5]:
        subject.on_next(item)
    time.sleep(0.1)  # written behind, by the producer's thread
    r.delete("answer")
    for item in ITEMS[5:]:
        subject.on_next(item)  # the producer writes on: its XADD makes a new stream
    subject.on_completed()
    assert written.completed

    read = follow(r, "answer")
    assert isinstance(read.error, rs.StoredStreamError)
    assert read.error.missing is not None
    assert read.error.missing[0] == 0
    if counts_entries_added(r):
        assert "the stream was reset: the key was deleted" in str(read.error)
        assert "not trimmed by MAXLEN" in str(read.error)
    else:  # Redis 6 shows no trace of the reset: both causes are named, and why
        assert "or lost with the key (deleted" in str(read.error)
        assert "Redis before 7.0 does not count" in str(read.error)


def test_a_stream_trimmed_by_maxlen_is_not_called_deleted(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "long", [rs.TextDelta(str(i)) for i in range(1000)], maxlen=10)
    read = follow(r, "long")
    assert isinstance(read.error, rs.StoredStreamError)
    resumed = follow(r, "long", after="1-0")
    assert isinstance(resumed.error, rs.StoredStreamError)
    for error in (read.error, resumed.error):
        assert "trimmed by MAXLEN" in str(error)
        if counts_entries_added(r):
            assert "deleted" not in str(error)
            assert "restart" not in str(error)


def test_a_resume_into_a_stream_lost_in_a_restart_says_so(redis_server: RedisServer) -> None:
    r = client(redis_server, retries=50)
    subject: Subject[Any] = Subject()
    written = Outcome()
    subject.pipe(rs.to_redis_stream(r, "answer", heartbeat=0.05)).subscribe(
        written.on_next, written.on_error, written.on_completed
    )
    for item in ITEMS[:5]:
        subject.on_next(item)
    time.sleep(0.1)
    third = xrange(r, "answer")[3][0].decode()
    redis_server.restart(keep_data=False)
    for item in ITEMS[5:]:
        subject.on_next(item)
    subject.on_completed()
    assert written.completed

    resumed = follow(r, "answer", after=third)
    assert isinstance(resumed.error, rs.StoredStreamError)
    assert resumed.error.missing is not None
    if counts_entries_added(r):
        assert "the stream was reset" in str(resumed.error)
        assert "restart of Redis without its data" in str(resumed.error)


def entry(number: int) -> list[Any]:
    return [b"1700000000000-0", [b"v", b"1", b"n", str(number).encode(), b"kind", b"item"]]


@pytest.mark.parametrize(
    ("replies", "says"),
    [
        ([b"none", redis.ResponseError("ERR no such key")], "the key is gone: it was deleted"),
        ([b"stream", [b"length", 3, b"entries-added", 3, b"last-entry", entry(9)]], "was reset"),
        (
            [b"stream", {"length": 3, "entries-added": 10, "last-entry": ("1-0", {"n": "9"})}],
            "trimmed by MAXLEN (a follower",
        ),
        ([b"stream", [b"length", 3, b"last-entry", entry(9)]], "Redis before 7.0"),
        (None, "or lost with the key"),
        ([redis.ConnectionError("gone"), None], "or lost with the key"),
    ],
    ids=["key-missing", "reset", "trimmed", "redis-6", "no-replies", "failed"],
)
def test_the_cause_of_entries_gone_by_what_redis_shows(replies: Any, says: str) -> None:
    assert says in gone_cause(replies)


# --------------------------------------------------------------------------- Last-Event-ID


MALFORMED = [
    "abc",
    "1-",
    "-1",
    "1",
    "1-2-3",
    " 1-0",
    "1-0 ",
    "1.5-0",
    "１-０",
    "1-0\n",
    "9" * 21 + "-0",
]


@pytest.mark.parametrize("after", MALFORMED)
def test_a_malformed_last_event_id(redis_server: RedisServer, after: str) -> None:
    r = client(redis_server)
    produce(r, "answer", ITEMS)
    read = follow(r, "answer", after=after)
    assert isinstance(read.error, rs.StoredStreamError)
    assert f"cannot resume after {after!r}: not a stream entry id" in str(read.error)
    assert read.error.after == after
    assert read.items == []


def test_a_malformed_last_event_id_async(redis_server: RedisServer) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        read = await afollow(r, "answer", after="<script>")
        assert isinstance(read.error, rs.StoredStreamError)
        await r.aclose()

    asyncio.run(main())


def test_an_id_of_no_entry_of_the_stream(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "answer", ITEMS)
    ids = [entry_id.decode() for entry_id, _ in xrange(r, "answer")]
    ms, seq = ids[-1].split("-")
    for after in [f"{ms}-{int(seq) + 1}", "99999999999999-0", "0-1"]:
        read = follow(r, "answer", after=after)
        assert isinstance(read.error, rs.StoredStreamError), after
        assert "no entry of the stream has that id" in str(read.error)
        assert repr(ids[0]) in str(read.error)
        assert repr(ids[-1]) in str(read.error)


def test_resuming_after_the_end_marker_completes_at_once(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "answer", ITEMS)
    end = xrange(r, "answer")[-1][0].decode()
    read = follow(r, "answer", after=end)
    assert read.completed
    assert read.items == []


# --------------------------------------------------------------------------- the error mapping


def test_the_error_mapping() -> None:
    from redis import exceptions

    cases: list[tuple[BaseException, type | None, str]] = [
        (exceptions.ConnectionError("Error 111 connecting"), rs.TransportError, "Error 111"),
        (exceptions.TimeoutError("Timeout reading"), rs.TransportError, "Timeout reading"),
        (exceptions.ResponseError("WRONGTYPE Operation"), rs.StoredStreamError, "WRONGTYPE"),
        (exceptions.ResponseError("NOPERM no"), rs.TransportError, "refused a command"),
        (exceptions.AuthenticationError("invalid password"), rs.TransportError, "invalid"),
        (ConnectionResetError("reset"), rs.TransportError, "reset"),
        (ValueError("mine"), None, ""),
    ]
    for exc, expected, text in cases:
        mapped = map_redis_error(exc, "k", "127.0.0.1:6379")
        if expected is None:
            assert mapped is None
        else:
            assert type(mapped) is expected
            assert text in str(mapped)


def test_in_a_thread_a_sync_follower_reads_a_live_producer_of_another_thread(
    redis_server: RedisServer,
) -> None:
    # The sync producer runs on its own thread with a sync source; the follower
    # on the test's thread ends when the producer does.
    r = client(redis_server)

    def write() -> None:
        def slow() -> Any:
            for item in ITEMS:
                time.sleep(0.002)
                yield item

        run(reactivex.from_iterable(slow()).pipe(rs.to_redis_stream(r, "answer")))

    thread = in_thread(write)
    read = follow(r, "answer", heartbeat_timeout=TIMEOUT)
    thread.join(TIMEOUT)
    assert read.completed
    assert read.items == ITEMS
