"""`rs.to_redis_stream` and `rs.from_redis_stream` against a real Redis server.

Every test gets its own `redis-server` (the `redis_server` fixture of the
rxstream pytest plugin). Items go in through the operator and come back out
of the source equal, sync and async, whole or resumed after any entry; a hub
(`rs.multicast`) feeds a UI and Redis from one upstream; disposal, heartbeats,
TTL and backpressure are checked on the server itself.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any, cast

import pytest
import reactivex
import reactivex.operators as ops
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.subject import Subject

import rxstream as rs
from rxstream.core import wire as codec
from rxstream.testing.redis_server import RedisServer
from tests.support.codec_strategies import every_field, items
from tests.support.redis import (
    TIMEOUT,
    Outcome,
    aclient,
    afollow,
    aproduce,
    arun,
    client,
    follow,
    in_thread,
    produce,
    run,
    until,
    xrange,
)

CHAT: list[Any] = [
    rs.ReasoningDelta("Let me think"),
    rs.TextDelta("Hel"),
    rs.TextDelta("lo ☃ \U0001f600"),
    rs.ToolCallDelta(0, '{"city"', id="call_1", name="weather"),
    rs.ToolCallDelta(0, ': "Paris"}'),
    rs.Finish("tool_calls", raw="tool_use"),
    rs.Usage(10, 5, 15, reasoning_tokens=2, raw={"input_tokens": 10}),
]
FRAMES: list[Any] = [
    rs.SSEFrame('{"choices":[]}', id="1"),
    rs.SSEFrame("[DONE]", event="message", retry=3000),
]
MESSAGES: list[Any] = [
    rs.Message(
        0,
        content="Hi",
        reasoning="hm",
        tool_calls=(rs.ToolCall(0, "call_1", "f", '{"a": 1}'),),
        finish_reason="stop",
        usage=rs.Usage(1, 2, 3),
    ),
    rs.ChatChunk({"id": "c", "choices": [{"index": 0, "delta": {"content": "x"}}]}),
    rs.EventStreamMessage({":event-type": "messageStop", "n": 3}, b"\x00\xffpayload"),
    rs.TokenCount(1, 2, 3, 4, None, True),
    rs.TextDelta("lone surrogate \ud800 kept"),
]

SCENARIOS = {"deltas": CHAT, "frames": FRAMES, "messages and others": MESSAGES, "empty": []}


def same(got: list[Any], expected: list[Any]) -> None:
    assert got == expected
    assert [every_field(g) for g in got] == [every_field(e) for e in expected]


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("name", SCENARIOS)
def test_items_come_back_equal_sync(redis_server: RedisServer, name: str) -> None:
    r = client(redis_server)
    written = produce(r, "answer", SCENARIOS[name])
    assert written.completed
    assert written.items == SCENARIOS[name]
    read = follow(r, "answer")
    assert read.completed, read.error
    same(read.items, SCENARIOS[name])


@pytest.mark.parametrize("name", SCENARIOS)
def test_items_come_back_equal_async(redis_server: RedisServer, name: str) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        written = await aproduce(r, "answer", SCENARIOS[name])
        assert written.completed
        assert written.items == SCENARIOS[name]
        read = await afollow(r, "answer")
        assert read.completed, read.error
        same(read.items, SCENARIOS[name])
        await r.aclose()

    asyncio.run(main())


@pytest.mark.parametrize(
    "options",
    [{"decode_responses": True}, {"protocol": 3}, {"protocol": 3, "decode_responses": True}],
    ids=["decoded", "resp3", "resp3-decoded"],
)
def test_clients_of_every_reply_shape_read_the_same(
    redis_server: RedisServer, options: dict[str, Any]
) -> None:
    written = produce(client(redis_server, **options), "answer", MESSAGES)
    assert written.completed, written.error
    read = follow(client(redis_server, **options), "answer", ids=True)
    same([entry.item for entry in read.items], MESSAGES)
    resumed = follow(client(redis_server, **options), "answer", after=read.items[1].id)
    same(resumed.items, MESSAGES[2:])

    async def main() -> None:
        r = aclient(redis_server, **options)
        same((await afollow(r, "answer")).items, MESSAGES)
        await r.aclose()

    asyncio.run(main())


def test_async_written_sync_read_and_back(redis_server: RedisServer) -> None:
    async def write() -> None:
        r = aclient(redis_server)
        await aproduce(r, "a", CHAT)
        read = await afollow(r, "s")
        same(read.items, CHAT)
        await r.aclose()

    produce(client(redis_server), "s", CHAT)
    asyncio.run(write())
    same(follow(client(redis_server), "a").items, CHAT)


errors = st.sampled_from(
    [
        None,
        rs.ProviderError("Overloaded", type="overloaded_error", code=529),
        rs.TruncatedStreamError("cut", unfinished=(0,)),
        rs.StreamTimeoutError("idle", 2.5),
    ]
)
PROPERTY = settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


# Hypothesis runs every example on the same server: each writes its own key.
KEYS = (f"example:{i}" for i in itertools.count())


def _check_error(got: BaseException | None, expected: rs.StreamError) -> None:
    assert type(got) is type(expected)
    assert str(got) == str(expected)


@PROPERTY
@given(sequence=st.lists(items, max_size=8), error=errors)
def test_any_items_and_errors_go_through_redis_sync(
    redis_server: RedisServer, sequence: list[Any], error: rs.StreamError | None
) -> None:
    key = next(KEYS)
    r = client(redis_server)
    source = reactivex.from_iterable(sequence)
    if error is not None:
        source = reactivex.concat(source, reactivex.throw(error))
    written = run(source.pipe(rs.to_redis_stream(r, str(key))))
    read = follow(r, str(key))
    same(read.items, sequence)
    if error is None:
        assert written.completed
        assert read.completed
    else:
        assert written.error is error
        _check_error(read.error, error)


@PROPERTY
@given(sequence=st.lists(items, max_size=8), error=errors)
def test_any_items_and_errors_go_through_redis_async(
    redis_server: RedisServer, sequence: list[Any], error: rs.StreamError | None
) -> None:
    key = next(KEYS)

    async def main() -> None:
        r = aclient(redis_server)
        source = reactivex.from_iterable(sequence)
        if error is not None:
            source = reactivex.concat(source, reactivex.throw(error))
        written = await arun(source.pipe(rs.to_redis_stream(r, str(key))))
        read = await afollow(r, str(key))
        await r.aclose()
        same(read.items, sequence)
        if error is None:
            assert written.completed
            assert read.completed
        else:
            assert written.error is error
            _check_error(read.error, error)

    asyncio.run(main())


# --------------------------------------------------------------------------- resuming


def test_ids_resume_after_every_entry_exactly_once(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "answer", CHAT)
    entries = follow(r, "answer", ids=True).items
    assert [e.item for e in entries] == CHAT
    assert all(isinstance(e, rs.StreamEntry) for e in entries)
    for i, entry in enumerate(entries):
        resumed = follow(r, "answer", after=entry.id, ids=True)
        assert resumed.completed
        assert resumed.items == entries[i + 1 :]


def test_an_empty_after_reads_from_the_start(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "answer", CHAT)
    assert follow(r, "answer", after="").items == CHAT


def test_resume_async(redis_server: RedisServer) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        await aproduce(r, "answer", CHAT)
        entries = (await afollow(r, "answer", ids=True)).items
        resumed = await afollow(r, "answer", after=entries[2].id)
        assert resumed.items == CHAT[3:]
        await r.aclose()

    asyncio.run(main())


def test_the_stored_error_comes_back_after_a_resume(redis_server: RedisServer) -> None:
    r = client(redis_server)
    error = rs.ProviderError("Overloaded", type="overloaded_error", code=529, payload={"a": 1})
    run(
        reactivex.concat(reactivex.from_iterable(CHAT), reactivex.throw(error)).pipe(
            rs.to_redis_stream(r, "answer")
        )
    )
    entries = follow(r, "answer", ids=True)
    resumed = follow(r, "answer", after=entries.items[-1].id)
    assert resumed.items == []
    assert isinstance(resumed.error, rs.ProviderError)
    assert (resumed.error.type, resumed.error.code, resumed.error.payload) == (
        "overloaded_error",
        529,
        {"a": 1},
    )


def test_each_follower_gets_the_partial_of_what_it_read(redis_server: RedisServer) -> None:
    r = client(redis_server)
    cut = rs.TransportError("the provider went away")
    run(
        reactivex.concat(reactivex.from_iterable(CHAT[:4]), reactivex.throw(cut)).pipe(
            rs.to_redis_stream(r, "answer")
        )
    )
    whole = follow(r, "answer", ids=True)
    resumed = follow(r, "answer", after=whole.items[1].id)
    assert isinstance(whole.error, rs.TransportError)
    assert isinstance(resumed.error, rs.TransportError)
    assert whole.error.partial is not None
    assert resumed.error.partial is not None
    assert (whole.error.partial.reasoning, whole.error.partial.content) == (
        "Let me think",
        "Hello ☃ \U0001f600",
    )
    (call,) = whole.error.partial.tool_calls
    assert (call.arguments, call.complete) == ('{"city"', False)
    # A follower that resumed read less: its error is its own, with its own partial.
    assert (resumed.error.partial.reasoning, resumed.error.partial.content) == (
        "",
        "lo ☃ \U0001f600",
    )
    assert str(resumed.error) == str(whole.error)


def test_an_async_follower_gets_the_partial_too(redis_server: RedisServer) -> None:
    r = client(redis_server)
    run(
        reactivex.concat(
            reactivex.from_iterable(CHAT[:2]), reactivex.throw(rs.StreamError("gone"))
        ).pipe(rs.to_redis_stream(r, "answer"))
    )

    async def main() -> Outcome:
        a = aclient(redis_server)
        try:
            return await afollow(a, "answer")
        finally:
            await a.aclose()

    seen = asyncio.run(main())
    assert isinstance(seen.error, rs.StreamError)
    assert seen.error.partial is not None
    assert seen.error.partial.content == "Hel"


# --------------------------------------------------------------------------- following live


def test_a_follower_waits_for_the_key_then_follows_to_the_end(redis_server: RedisServer) -> None:
    r = client(redis_server)
    subject: Subject[Any] = Subject()
    seen = Outcome()
    pool = ThreadPoolScheduler(1)
    # The follower subscribes before anything is written: it waits for the key.
    rs.from_redis_stream(r, "live", heartbeat_timeout=TIMEOUT, scheduler=pool).subscribe(
        seen.on_next, seen.on_error, seen.on_completed
    )
    written = Outcome()
    subject.pipe(rs.to_redis_stream(r, "live")).subscribe(
        written.on_next, written.on_error, written.on_completed
    )
    for i, item in enumerate(CHAT):
        subject.on_next(item)
        deadline = time.monotonic() + TIMEOUT
        while len(seen.items) <= i and time.monotonic() < deadline:
            time.sleep(0.002)
        assert seen.items == CHAT[: i + 1]  # each item reaches the follower before the next
    subject.on_completed()
    assert seen.ended.wait(TIMEOUT)
    assert seen.completed
    assert written.completed
    pool.executor.shutdown(wait=True)


def test_an_async_follower_follows_an_async_producer(redis_server: RedisServer) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        subject: Subject[Any] = Subject()
        follower = asyncio.ensure_future(afollow(r, "live", heartbeat_timeout=TIMEOUT))
        await asyncio.sleep(0.05)
        written = Outcome()
        subject.pipe(rs.to_redis_stream(r, "live")).subscribe(
            written.on_next, written.on_error, written.on_completed
        )
        for item in CHAT:
            subject.on_next(item)
            await asyncio.sleep(0.005)
        subject.on_completed()
        read = await follower
        assert read.completed
        assert read.items == CHAT
        # The producer completes downstream once its write of the end marker has
        # returned, which can be a moment after the follower has read that marker.
        await until(written.ended.is_set)
        assert written.completed
        await r.aclose()

    asyncio.run(main())


def test_composes_with_multicast(redis_server: RedisServer) -> None:
    r = client(redis_server)
    subscriptions = 0

    def subscribe(observer: Any, scheduler: Any = None) -> Any:
        nonlocal subscriptions
        subscriptions += 1
        return reactivex.from_iterable(CHAT).subscribe(observer, scheduler=scheduler)

    hub = rs.multicast(reactivex.create(subscribe))
    ui, stored = Outcome(), Outcome()
    hub.subscribe(ui.on_next, ui.on_error, ui.on_completed)
    hub.observe().pipe(rs.to_redis_stream(r, "answer")).subscribe(
        stored.on_next, stored.on_error, stored.on_completed
    )
    hub.connect()
    assert subscriptions == 1
    assert ui.items == stored.items == CHAT
    assert ui.completed
    assert stored.completed
    assert follow(r, "answer").items == CHAT


def test_completion_passes_only_once_the_end_is_written(redis_server: RedisServer) -> None:
    r = client(redis_server)
    kinds_at_completion: list[bytes] = []

    def on_completed() -> None:
        kinds_at_completion.extend(fields[b"kind"] for _, fields in xrange(r, "answer"))

    reactivex.from_iterable(CHAT).pipe(rs.to_redis_stream(r, "answer")).subscribe(
        on_completed=on_completed
    )
    assert kinds_at_completion == [b"start"] + [b"item"] * len(CHAT) + [b"end"]


def test_entries_carry_the_format_version_and_numbers(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "answer", CHAT[:2])
    entries = xrange(r, "answer")
    assert [f[b"v"] for _, f in entries] == [b"1"] * 4
    assert [f[b"n"] for _, f in entries] == [b"0", b"1", b"2", b"3"]
    assert [f[b"kind"] for _, f in entries] == [b"start", b"item", b"item", b"end"]
    assert json.loads(entries[1][1][b"data"]) == codec.encode(CHAT[0])


# --------------------------------------------------------------------------- ends that are errors


def test_an_upstream_error_is_stored_and_passed_on(redis_server: RedisServer) -> None:
    r = client(redis_server)
    boom = ValueError("a bug upstream")
    written = run(
        reactivex.concat(reactivex.from_iterable(CHAT[:2]), reactivex.throw(boom)).pipe(
            rs.to_redis_stream(r, "answer")
        )
    )
    assert written.error is boom
    assert written.items == CHAT[:2]
    read = follow(r, "answer")
    assert read.items == CHAT[:2]
    assert type(read.error) is rs.StreamError
    assert str(read.error) == "ValueError: a bug upstream"


@pytest.mark.parametrize("make", [client, aclient], ids=["sync", "async"])
def test_an_item_the_codec_cannot_encode_fails_the_stream(
    redis_server: RedisServer, make: Any
) -> None:
    upstream_disposed = threading.Event()
    source = reactivex.from_iterable([rs.TextDelta("a"), "a raw line", rs.TextDelta("b")]).pipe(
        ops.finally_action(upstream_disposed.set)
    )

    async def main() -> Outcome:
        r = make(redis_server)
        try:
            if make is client:
                return run(source.pipe(rs.to_redis_stream(r, "answer")))
            return await arun(source.pipe(rs.to_redis_stream(r, "answer")))
        finally:
            if make is aclient:
                await r.aclose()

    written = asyncio.run(main())
    assert isinstance(written.error, TypeError)
    assert written.items == [rs.TextDelta("a")]
    assert upstream_disposed.is_set()
    read = follow(client(redis_server), "answer")
    assert read.items == [rs.TextDelta("a")]
    assert type(read.error) is rs.StreamError
    assert "TypeError" in str(read.error)


@pytest.mark.parametrize("make", [client, aclient], ids=["sync", "async"])
def test_an_item_holding_a_value_that_is_not_json_fails_the_stream(
    redis_server: RedisServer, make: Any
) -> None:
    bad = rs.Metadata({"when": object()})
    source = reactivex.from_iterable([rs.TextDelta("a"), bad, rs.TextDelta("b")])

    async def main() -> Outcome:
        r = make(redis_server)
        try:
            if make is client:
                return run(source.pipe(rs.to_redis_stream(r, "answer")))
            return await arun(source.pipe(rs.to_redis_stream(r, "answer")))
        finally:
            if make is aclient:
                await r.aclose()

    written = asyncio.run(main())
    # Downstream may have seen the items (a sync client encodes behind them); Redis holds
    # those before the bad one, then the error.
    assert isinstance(written.error, TypeError)
    read = follow(client(redis_server), "answer")
    assert read.items == [rs.TextDelta("a")]
    assert type(read.error) is rs.StreamError
    assert "TypeError" in str(read.error)


def test_a_disposed_producer_ends_its_followers(redis_server: RedisServer) -> None:
    r = client(redis_server)
    subject: Subject[Any] = Subject()
    subscription = subject.pipe(rs.to_redis_stream(r, "answer")).subscribe()
    subject.on_next(CHAT[0])
    subscription.dispose()
    seen = follow(r, "answer", heartbeat_timeout=TIMEOUT)
    assert seen.items == [CHAT[0]]
    assert isinstance(seen.error, rs.TruncatedStreamError)
    assert "disposed after 1 item(s)" in str(seen.error)
    assert not subject.observers


def test_a_disposed_async_producer_ends_its_followers(redis_server: RedisServer) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        subject: Subject[Any] = Subject()
        subscription = subject.pipe(rs.to_redis_stream(r, "answer")).subscribe()
        subject.on_next(CHAT[0])
        subject.on_next(CHAT[1])
        subscription.dispose()
        seen = await afollow(r, "answer", heartbeat_timeout=TIMEOUT)
        assert seen.items == CHAT[:2]
        assert isinstance(seen.error, rs.TruncatedStreamError)
        await r.aclose()

    asyncio.run(main())


# --------------------------------------------------------------------------- disposal of followers


def _blocked_clients(r: Any) -> int:
    return int(r.info("clients")["blocked_clients"])


def test_disposing_a_sync_follower_stops_its_blocked_read(redis_server: RedisServer) -> None:
    r = client(redis_server)
    probe = client(redis_server)
    pool = ThreadPoolScheduler(1)
    seen = Outcome()
    subscription = rs.from_redis_stream(
        r, "nothing-yet", heartbeat_timeout=60, scheduler=pool
    ).subscribe(seen.on_next, seen.on_error, seen.on_completed)
    deadline = time.monotonic() + TIMEOUT
    while _blocked_clients(probe) == 0 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert _blocked_clients(probe) == 1
    subscription.dispose()
    pool.executor.shutdown(wait=True)  # returns once the read loop has left
    assert _blocked_clients(probe) == 0
    assert not seen.ended.is_set()  # nothing is emitted after dispose


def test_disposing_an_async_follower_cancels_its_blocked_read(redis_server: RedisServer) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        probe = client(redis_server)
        seen = Outcome()
        subscription = rs.from_redis_stream(r, "nothing-yet", heartbeat_timeout=60).subscribe(
            seen.on_next, seen.on_error, seen.on_completed
        )
        await until(lambda: _blocked_clients(probe) == 1)
        subscription.dispose()
        await until(lambda: _blocked_clients(probe) == 0)
        # The client's pool still works after the cancelled read.
        assert await r.ping()
        await asyncio.sleep(0.01)
        assert not seen.ended.is_set()
        await r.aclose()

    asyncio.run(main())


# --------------------------------------------------------------------------- heartbeat and TTL


def test_heartbeats_keep_followers_waiting_and_the_key_alive(redis_server: RedisServer) -> None:
    r = client(redis_server)
    subject: Subject[Any] = Subject()
    subject.pipe(rs.to_redis_stream(r, "slow", heartbeat=0.05, ttl=0.4)).subscribe()
    pool = ThreadPoolScheduler(1)
    seen = Outcome()
    rs.from_redis_stream(r, "slow", heartbeat_timeout=0.3, scheduler=pool).subscribe(
        seen.on_next, seen.on_error, seen.on_completed
    )
    time.sleep(1.0)  # silence far longer than the follower's timeout and the key's ttl
    assert not seen.ended.is_set(), seen.error
    kinds = [fields[b"kind"] for _, fields in xrange(r, "slow")]
    assert kinds.count(b"beat") >= 3
    subject.on_next(CHAT[0])
    subject.on_completed()
    assert seen.ended.wait(TIMEOUT)
    assert seen.completed
    assert seen.items == [CHAT[0]]
    assert 0 < r.pttl("slow") <= 400
    pool.executor.shutdown(wait=True)


def test_async_heartbeats(redis_server: RedisServer) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        subject: Subject[Any] = Subject()
        subject.pipe(rs.to_redis_stream(r, "slow", heartbeat=0.05, ttl=0.4)).subscribe()
        follower = asyncio.ensure_future(afollow(r, "slow", heartbeat_timeout=0.3))
        await asyncio.sleep(0.8)
        assert not follower.done()
        subject.on_completed()
        read = await follower
        assert read.completed
        assert read.items == []
        entries = cast(list[tuple[bytes, dict[bytes, bytes]]], await r.xrange("slow"))
        kinds = [fields[b"kind"] for _, fields in entries]
        assert kinds.count(b"beat") >= 3
        assert kinds[-1] == b"end"
        await r.aclose()

    asyncio.run(main())


def test_the_key_expires_after_the_ttl(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "short", CHAT, ttl=0.3, heartbeat=0.1)
    assert 0 < r.pttl("short") <= 300
    deadline = time.monotonic() + TIMEOUT
    while r.exists("short") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not r.exists("short")


# --------------------------------------------------------------------------- backpressure


def test_a_sync_producer_holds_its_source_back_while_redis_is_slow(
    redis_server: RedisServer,
) -> None:
    r = client(redis_server)
    control = client(redis_server)
    pulled = 0

    def lines() -> Iterator[str]:
        nonlocal pulled
        for i in range(200):
            pulled += 1
            yield f"data: {i}"

    written = Outcome()
    control.client_pause(5000, all=False)
    thread = in_thread(
        lambda: (
            rs.from_lines(lines())
            .pipe(ops.map(rs.TextDelta), rs.to_redis_stream(r, "answer", maxsize=8))
            .subscribe(written.on_next, written.on_error, written.on_completed)
        )
    )
    time.sleep(0.3)
    # 8 waiting, at most 8 more in the writer's hands (none while the start is paused).
    assert pulled <= 8 + 8 + 1
    control.client_unpause()
    thread.join(TIMEOUT)
    assert written.completed
    assert len(written.items) == 200
    assert len(follow(r, "answer").items) == 200


def test_an_async_producer_pauses_an_rxstream_source_while_redis_is_slow(
    redis_server: RedisServer,
) -> None:
    pulled = 0

    async def lines() -> AsyncIterator[str]:
        nonlocal pulled
        for i in range(200):
            pulled += 1
            yield f"data: {i}"

    async def main() -> None:
        r = aclient(redis_server)
        control = client(redis_server)
        control.client_pause(5000, all=False)
        written = asyncio.ensure_future(
            arun(
                rs.from_lines(lines()).pipe(
                    ops.map(rs.TextDelta), rs.to_redis_stream(r, "answer", maxsize=8)
                )
            )
        )
        await asyncio.sleep(0.3)
        assert pulled <= 8 + 1  # the writer is stuck at the start: nothing has been taken
        control.client_unpause()
        outcome = await written
        assert outcome.completed
        assert len(outcome.items) == 200
        assert len((await afollow(r, "answer")).items) == 200
        await r.aclose()

    asyncio.run(main())


def test_a_source_that_cannot_be_paused_overflows(redis_server: RedisServer) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        control = client(redis_server)
        control.client_pause(5000, all=False)
        subject: Subject[Any] = Subject()
        written = Outcome()
        subject.pipe(rs.to_redis_stream(r, "answer", maxsize=4)).subscribe(
            written.on_next, written.on_error, written.on_completed
        )
        for i in range(20):
            subject.on_next(rs.TextDelta(str(i)))
        assert len(written.items) == 8
        assert not subject.observers  # upstream disposed at once
        control.client_unpause()
        # The error goes downstream once it is stored (after the 8 items waiting).
        await until(written.ended.is_set)
        assert isinstance(written.error, rs.BufferOverflowError)
        assert written.error.maxsize == 8
        assert written.error.observer == "to_redis_stream('answer')"
        read = await afollow(r, "answer", heartbeat_timeout=TIMEOUT)
        assert read.items == [rs.TextDelta(str(i)) for i in range(8)]
        assert isinstance(read.error, rs.BufferOverflowError)
        await r.aclose()

    asyncio.run(main())


def test_an_async_producer_keeps_the_consumers_demand(redis_server: RedisServer) -> None:
    pulled = 0

    async def lines() -> AsyncIterator[str]:
        nonlocal pulled
        for i in range(100):
            pulled += 1
            yield f"data: {i}"

    async def main() -> None:
        r = aclient(redis_server)
        iterator = rs.to_async_iterator(
            rs.from_lines(lines()).pipe(ops.map(rs.TextDelta), rs.to_redis_stream(r, "answer")),
            maxsize=2,
        )
        first = await anext(iterator)
        await asyncio.sleep(0.2)  # the consumer reads nothing: the source must wait
        assert first == rs.TextDelta("data: 0")
        assert pulled <= 2 + 2
        rest = [item async for item in iterator]
        assert len(rest) == 99
        await r.aclose()

    asyncio.run(main())


# --------------------------------------------------------------------------- loops and threads


def test_async_clients_on_a_loop_of_another_thread(redis_server: RedisServer) -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    scheduler = AsyncIOScheduler(loop)
    r = asyncio.run_coroutine_threadsafe(_make(aclient, redis_server), loop).result(TIMEOUT)
    # Subscribed from this thread: the writer and the reader run on the loop's thread.
    written = Outcome()
    source = rs.from_lines(_aiter(["1", "2", "3"]), scheduler=scheduler).pipe(ops.map(rs.TextDelta))
    source.pipe(rs.to_redis_stream(r, "answer")).subscribe(
        written.on_next, written.on_error, written.on_completed, scheduler=scheduler
    )
    assert written.ended.wait(TIMEOUT)
    assert written.completed, written.error
    seen = Outcome()
    rs.from_redis_stream(r, "answer", scheduler=scheduler).subscribe(
        seen.on_next, seen.on_error, seen.on_completed
    )
    assert seen.ended.wait(TIMEOUT)
    assert texts(seen.items) == ["1", "2", "3"]
    # A producer disposed from this thread writes its end on the loop's thread.
    subject: Subject[Any] = Subject()
    subscription = subject.pipe(rs.to_redis_stream(r, "disposed")).subscribe(scheduler=scheduler)
    time.sleep(0.05)
    subscription.dispose()
    ended = follow(client(redis_server), "disposed", heartbeat_timeout=TIMEOUT)
    assert isinstance(ended.error, rs.TruncatedStreamError)
    asyncio.run_coroutine_threadsafe(r.aclose(), loop).result(TIMEOUT)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(TIMEOUT)
    loop.close()


async def _make(make: Any, server: RedisServer) -> Any:
    return make(server)


async def _aiter(values: list[str]) -> AsyncIterator[str]:
    for value in values:
        yield value


def texts(items: list[Any]) -> list[str]:
    return [item.text for item in items]


def test_an_async_client_needs_a_running_loop(redis_server: RedisServer) -> None:
    r = aclient(redis_server)
    written = run(reactivex.from_iterable(CHAT).pipe(rs.to_redis_stream(r, "k")))
    assert isinstance(written.error, RuntimeError)
    assert "needs a running asyncio event loop" in str(written.error)
    read = Outcome()
    rs.from_redis_stream(r, "k").subscribe(read.on_next, read.on_error, read.on_completed)
    assert isinstance(read.error, RuntimeError)


def test_an_async_producer_refuses_items_from_another_thread(redis_server: RedisServer) -> None:
    async def main() -> None:
        r = aclient(redis_server)
        subject: Subject[Any] = Subject()
        written = Outcome()
        subject.pipe(rs.to_redis_stream(r, "answer")).subscribe(
            written.on_next, written.on_error, written.on_completed
        )
        await asyncio.to_thread(subject.on_next, CHAT[0])
        await until(written.ended.is_set)
        assert isinstance(written.error, RuntimeError)
        assert "on the event loop's thread" in str(written.error)
        assert written.items == []
        await r.aclose()

    asyncio.run(main())


def test_durations_as_timedeltas(redis_server: RedisServer) -> None:
    r = client(redis_server)
    produce(r, "answer", CHAT, ttl=timedelta(minutes=2), heartbeat=timedelta(seconds=1))
    assert 110_000 < r.pttl("answer") <= 120_000
    read = follow(r, "answer", heartbeat_timeout=timedelta(seconds=5))
    assert read.items == CHAT


def test_where_names_the_server_but_never_a_password() -> None:
    from rxstream.io.redis.client import where_of

    assert where_of(redis.Redis(unix_socket_path="/run/redis.sock")) == "unix:/run/redis.sock"
    url = "redis://user:hunter2@10.0.0.1:6380/0"
    assert where_of(redis.Redis.from_url(url)) == "10.0.0.1:6380"
    assert where_of(object()) == "object"


# --------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"maxlen": 0}, ValueError),
        ({"maxlen": 1.5}, TypeError),
        ({"maxsize": 0}, ValueError),
        ({"heartbeat": 0}, ValueError),
        ({"heartbeat": "2"}, TypeError),
        ({"ttl": 1, "heartbeat": 2}, ValueError),
    ],
    ids=["maxlen-0", "maxlen-float", "max-pending-0", "heartbeat-0", "heartbeat-str", "ttl-short"],
)
def test_bad_options_are_caller_mistakes(options: dict[str, Any], error: type) -> None:
    with pytest.raises(error):
        rs.to_redis_stream(object(), "k", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda: rs.from_redis_stream(object(), ""), ValueError),  # type: ignore[call-overload]
        (lambda: rs.from_redis_stream(object(), b"k"), TypeError),  # type: ignore[call-overload]
        (lambda: rs.from_redis_stream(object(), "k", after=5), TypeError),  # type: ignore[call-overload]
        (lambda: rs.from_redis_stream(object(), "k", heartbeat_timeout=-1), ValueError),  # type: ignore[call-overload]
        (lambda: rs.to_redis_stream(object(), None), TypeError),  # type: ignore[arg-type]
    ],
    ids=["empty-key", "bytes-key", "int-after", "negative-timeout", "no-key"],
)
def test_bad_arguments_of_the_source(call: Any, error: type) -> None:
    with pytest.raises(error):
        call()
