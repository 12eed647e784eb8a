"""`timeouts`: which limit fires, when, and that the upstream is disposed at that moment.

Virtual time (TestScheduler): subscribed at 200, disposed at 1000, one tick is one second.
"""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta
from typing import Any

import httpx
import pytest
import reactivex
from reactivex import abc
from reactivex import operators as ops
from reactivex.scheduler import CurrentThreadScheduler
from reactivex.testing import ReactiveTest, TestScheduler

import rxstream as rs
from rxstream._flow import Demand, demand_scope
from rxstream.errors import StreamTimeoutError
from rxstream.testing.builders import text_chunk
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import Chunk, Comment, FakeLLMServer, Scenario, Stall
from tests.support.operators import on_error

on_next, on_completed = ReactiveTest.on_next, ReactiveTest.on_completed
subscribe = ReactiveTest.subscribe


def timed_out(limit: str, seconds: float) -> Any:
    """An OnError predicate: a StreamTimeoutError for `limit` after `seconds`."""

    def check(error: Exception) -> bool:
        return (
            isinstance(error, StreamTimeoutError)
            and error.limit == limit
            and error.seconds == seconds
            and repr(limit) in str(error)
            and f"{seconds:g} s" in str(error)
        )

    return check


CASES = [
    pytest.param(
        {"first": 30},
        [on_next(240, "a"), on_completed(300)],
        [on_error(230, timed_out("first", 30))],
        subscribe(200, 230),
        id="first-item-too-late",
    ),
    pytest.param(
        {"first": 50, "idle": 20},
        [on_next(240, "a"), on_next(255, "b"), on_completed(400)],
        [on_next(240, "a"), on_next(255, "b"), on_error(275, timed_out("idle", 20))],
        subscribe(200, 275),
        id="idle-after-first-item",
    ),
    pytest.param(
        {"first": 50, "idle": 20},
        [on_next(245, "a"), on_completed(260)],
        [on_next(245, "a"), on_completed(260)],
        subscribe(200, 260),
        id="first-longer-than-idle-is-respected",
    ),
    pytest.param(
        {"idle": 20},
        [on_next(230, "a"), on_completed(240)],
        [on_error(220, timed_out("idle", 20))],
        subscribe(200, 220),
        id="idle-covers-the-first-wait-without-first",
    ),
    pytest.param(
        {"idle": 20, "total": 100},
        [on_next(200 + 15 * i, i) for i in range(1, 10)] + [on_completed(400)],
        [on_next(200 + 15 * i, i) for i in range(1, 7)] + [on_error(300, timed_out("total", 100))],
        subscribe(200, 300),
        id="total-while-items-keep-coming",
    ),
    pytest.param(
        {
            "first": timedelta(seconds=30),
            "idle": timedelta(seconds=20),
            "total": timedelta(seconds=500),
        },
        [on_next(220, "a"), on_next(239, "b"), on_completed(250)],
        [on_next(220, "a"), on_next(239, "b"), on_completed(250)],
        subscribe(200, 250),
        id="within-all-limits-timedelta",
    ),
    pytest.param(
        {"first": 30, "idle": 30, "total": 30},
        [on_next(210, "a"), on_error(220, ValueError("boom"))],
        [on_next(210, "a"), on_error(220, lambda e: isinstance(e, ValueError))],
        subscribe(200, 220),
        id="upstream-error-passes",
    ),
    pytest.param(
        {"total": 2000},
        [on_next(300, "a")],
        [on_next(300, "a")],
        subscribe(200, 1000),
        id="subscriber-dispose-cancels-timers",
    ),
    pytest.param(
        {},
        [on_next(300, "a"), on_completed(900)],
        [on_next(300, "a"), on_completed(900)],
        subscribe(200, 900),
        id="no-limits-pass-through",
    ),
]


@pytest.mark.parametrize(("limits", "upstream", "expected", "window"), CASES)
def test_timeouts(
    limits: dict[str, Any], upstream: list[Any], expected: list[Any], window: Any
) -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(upstream)
    results = scheduler.start(lambda: source.pipe(rs.timeouts(**limits)))
    assert expected == results.messages  # expected first: its predicates do the comparing
    assert source.subscriptions == [window]


def test_explicit_scheduler_wins_over_the_subscribers() -> None:
    timers, scheduler = TestScheduler(), TestScheduler()
    source = scheduler.create_hot_observable(on_next(500, "late"))
    # Only the timer scheduler's clock counts: 300 ticks of the subscriber's pass first.
    scheduler.schedule_absolute(300, lambda *_: timers.advance_by(5))
    results = scheduler.start(lambda: source.pipe(rs.timeouts(first=5, scheduler=timers)))
    assert [on_error(300, timed_out("first", 5))] == results.messages
    assert source.subscriptions == [subscribe(200, 300)]


def test_a_paused_demand_is_not_idleness() -> None:
    """A bridge that paused its source (buffer full) must not trip `idle`."""
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, "a"), on_completed(400))
    demand = Demand()
    demand.pause()
    with demand_scope(demand):  # TestScheduler.start subscribes inside this block
        results = scheduler.start(lambda: source.pipe(rs.timeouts(idle=20)))
    assert results.messages == [on_next(210, "a"), on_completed(400)]

    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, "a"), on_completed(400))
    with demand_scope(Demand()):
        results = scheduler.start(lambda: source.pipe(rs.timeouts(idle=20)))
    assert [on_next(210, "a"), on_error(230, timed_out("idle", 20))] == results.messages


def test_each_subscription_has_its_own_clock() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(on_next(10, "a"), on_next(50, "b"), on_completed(60))
    guarded = source.pipe(rs.timeouts(idle=30))
    first = scheduler.create_observer()
    second = scheduler.create_observer()
    scheduler.schedule_absolute(100, lambda *_: guarded.subscribe(first, scheduler=scheduler))
    scheduler.schedule_absolute(120, lambda *_: guarded.subscribe(second, scheduler=scheduler))
    scheduler.start()
    assert [on_next(110, "a"), on_error(140, timed_out("idle", 30))] == first.messages
    assert [on_next(130, "a"), on_error(160, timed_out("idle", 30))] == second.messages
    assert source.subscriptions == [subscribe(100, 140), subscribe(120, 160)]


def test_default_scheduler_fires_on_a_timer_thread_even_from_the_trampoline() -> None:
    """Subscribed with the current-thread scheduler, the timer must not sleep on that thread."""
    done = threading.Event()
    errors: list[Exception] = []
    disposed = threading.Event()
    never = reactivex.never().pipe(ops.finally_action(disposed.set))

    def on_err(error: Exception) -> None:
        errors.append(error)
        done.set()

    never.pipe(rs.timeouts(first=0.01)).subscribe(
        on_error=on_err, scheduler=CurrentThreadScheduler.singleton()
    )
    assert done.wait(10), "the 'first' limit never fired"
    assert disposed.wait(10), "the upstream was not disposed"
    assert timed_out("first", 0.01)(errors[0])


def test_keep_alive_lines_count_but_chunks_do_not() -> None:
    """`idle` after decode_chunks ignores keep-alive comments; on raw lines they are progress."""
    scheduler = TestScheduler()
    chunk = 'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}'
    lines = [on_next(205, chunk), on_next(206, "")]
    lines += [on_next(206 + 10 * i, ": keep-alive") for i in range(1, 40)]
    source = scheduler.create_hot_observable(lines)

    raw = scheduler.start(lambda: source.pipe(rs.timeouts(idle=15)), disposed=500)
    assert not any(m.value.kind == "E" for m in raw.messages)

    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(lines)
    chunks = scheduler.start(
        lambda: source.pipe(rs.sse_frames(), rs.decode_chunks(), rs.timeouts(idle=15)),
        disposed=500,
    )
    assert [m.time for m in chunks.messages] == [206, 221]
    assert chunks.messages[1].value.kind == "E"
    assert timed_out("idle", 15)(chunks.messages[1].value.exception)
    assert source.subscriptions == [subscribe(200, 221)]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"first": 0}, ValueError, id="zero"),
        pytest.param({"idle": -1}, ValueError, id="negative"),
        pytest.param({"total": float("inf")}, ValueError, id="infinite"),
        pytest.param({"total": float("nan")}, ValueError, id="nan"),
        pytest.param({"idle": timedelta(0)}, ValueError, id="zero-timedelta"),
        pytest.param({"first": "5"}, TypeError, id="string"),
        pytest.param({"idle": True}, TypeError, id="bool"),
    ],
)
def test_rejects_bad_limits(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error, match=next(iter(kwargs))):
        rs.timeouts(**kwargs)


# -- against a real server on 127.0.0.1: the right limit fires and the connection closes ----

HI = Chunk(text_chunk("Hi"))
STALLS = [
    pytest.param(
        Scenario(steps=(Stall(20),)), {"first": 0.2, "idle": 60}, "first", id="after-headers"
    ),
    pytest.param(
        Scenario(steps=(HI, Stall(20))), {"first": 60, "idle": 0.2}, "idle", id="after-first-chunk"
    ),
    pytest.param(
        Scenario(steps=(HI, *[Comment(delay=0.03)] * 600)),
        {"idle": 0.3},
        "idle",
        id="keep-alives-forever",
    ),
    pytest.param(
        Scenario(steps=(*[Chunk(text_chunk("x"), delay=0.03)] * 600,)),
        {"idle": 60, "total": 0.3},
        "total",
        id="trickling-chunks",
    ),
]


def chunks_with(limits: dict[str, Any]) -> Any:
    return (rs.sse_frames(), rs.decode_chunks(), rs.timeouts(**limits))


@pytest.mark.parametrize(("scenario", "limits", "limit"), STALLS)
def test_stalled_sync_stream_times_out_and_closes(
    scenario: Scenario, limits: dict[str, float], limit: str
) -> None:
    errors: list[Exception] = []
    with FakeLLMServer(scenario) as server, httpx.Client() as client:
        for attempt in range(3):  # a reused connection too
            rs.from_request(client, "POST", server.url, json=minimal_body("openai-chat")).pipe(
                *chunks_with(limits)
            ).subscribe(on_error=errors.append)  # runs on this thread until the timer ends it
            # subscribe() returned: the error must already be here, not on its way.
            assert len(errors) == attempt + 1
            assert server.wait_for_disconnect(timeout=5, count=attempt + 1)
    assert all(timed_out(limit, limits[limit])(error) for error in errors), errors


@pytest.mark.parametrize(("scenario", "limits", "limit"), STALLS)
def test_stalled_async_stream_times_out_and_closes(
    scenario: Scenario, limits: dict[str, float], limit: str
) -> None:
    async def main(server: FakeLLMServer) -> BaseException:
        async with httpx.AsyncClient() as client:
            source = rs.from_request(client, "POST", server.url, json=minimal_body("openai-chat"))
            with pytest.raises(rs.StreamTimeoutError) as caught:
                async for _ in rs.to_async_iterator(source.pipe(*chunks_with(limits))):
                    pass
            return caught.value

    with FakeLLMServer(scenario) as server:
        error = asyncio.run(main(server))
        assert server.wait_for_disconnect(timeout=30.0)
    assert isinstance(error, Exception)
    assert timed_out(limit, limits[limit])(error)


# ------------------------------------------------------------------------ the subscription object


class Recorder(abc.ObserverBase[Any]):
    """An observer that keeps what it was told."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.error: Exception | None = None
        self.completed = False

    def on_next(self, item: Any) -> None:
        self.items.append(item)

    def on_error(self, error: Exception) -> None:
        self.error = error

    def on_completed(self) -> None:
        self.completed = True


def test_watch_a_gap_timer_armed_before_the_last_item_is_stale() -> None:
    from rxstream.operators.timeouts import TimeoutWatch

    seen = Recorder()
    watch: TimeoutWatch[int] = TimeoutWatch(seen, TestScheduler(), idle=5.0)
    watch.start()
    watch.on_next(1)
    watch.fire_gap("idle", 5.0, armed_at=0)  # armed at subscribe, before item 1
    assert seen.error is None
    watch.fire_gap("idle", 5.0, armed_at=1)
    assert isinstance(seen.error, StreamTimeoutError)
    assert seen.error.limit == "idle"
    watch.on_next(2)  # after the end, nothing passes
    assert seen.items == [1]


def test_watch_an_idle_limit_waits_while_the_consumer_pauses_the_source() -> None:
    from rxstream.operators.timeouts import TimeoutWatch

    seen = Recorder()
    demand = Demand()
    watch: TimeoutWatch[int] = TimeoutWatch(seen, TestScheduler(), idle=5.0, demand=demand)
    demand.pause()
    watch.fire_gap("idle", 5.0, armed_at=0)
    assert seen.error is None  # re-armed: a paused source is not idle
    demand.resume()
    watch.fire_gap("idle", 5.0, armed_at=0)
    assert isinstance(seen.error, StreamTimeoutError)


def test_watch_the_total_limit_after_the_end_does_nothing() -> None:
    from rxstream.operators.timeouts import TimeoutWatch

    seen = Recorder()
    watch: TimeoutWatch[int] = TimeoutWatch(seen, TestScheduler(), total=1.0)
    watch.on_completed()
    watch.fire_total()
    assert seen.completed
    assert seen.error is None


def test_watch_the_first_limit_names_first_until_the_first_item() -> None:
    from rxstream.operators.timeouts import TimeoutWatch

    seen = Recorder()
    watch: TimeoutWatch[int] = TimeoutWatch(seen, TestScheduler(), first=1.0, idle=5.0)
    watch.fire_gap("first", 1.0, armed_at=0)
    assert isinstance(seen.error, StreamTimeoutError)
    assert (seen.error.limit, seen.error.seconds) == ("first", 1.0)
