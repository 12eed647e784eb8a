"""`rs.multicast`: one request for N observers, each with its own overflow policy.

Virtual-time tests drive the source on one TestScheduler and an observer on
another, so "the observer fell behind" is exact: the source's clock runs while
the observer's stands still. The cold source's subscription window proves when
the hub disposed upstream. Thread and socket tests count at the source (lines
produced minus lines consumed), and ask the fake server how many requests it saw.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import reactivex
import reactivex.operators as ops
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.testing import ReactiveTest, TestScheduler
from reactivex.testing.subscription import Subscription

import rxstream as rs
from rxstream.testing.server import Done, FakeLLMServer, Scenario, Stall
from tests.support.sources import TIMEOUT, Outcome

on_next, on_completed = ReactiveTest.on_next, ReactiveTest.on_completed
PAYLOAD = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def is_overflow(maxsize: int, name: str | None = None) -> Callable[[Exception], bool]:
    def check(error: Exception) -> bool:
        return (
            isinstance(error, rs.BufferOverflowError)
            and error.maxsize == maxsize
            and error.observer == name
        )

    return check


class Tally:
    """Items produced at the source and consumed by one slow observer; the widest gap."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.produced = self.consumed = self.widest = 0
        self.exhausted = False

    def on_produced(self, _: object = None) -> None:
        with self.cond:
            self.produced += 1
            self.widest = max(self.widest, self.produced - self.consumed)
            self.cond.notify_all()

    def on_exhausted(self) -> None:
        with self.cond:
            self.exhausted = True
            self.cond.notify_all()

    def consume_slowly(self, lead: int) -> None:
        """Count one consumed item, then wait until the source is `lead` ahead (or done)."""
        with self.cond:
            self.consumed += 1
            reached = self.cond.wait_for(
                lambda: self.exhausted or self.produced - self.consumed >= lead, timeout=TIMEOUT
            )
        assert reached, f"source stuck at {self.produced} produced / {self.consumed} consumed"


def counted(tally: Tally, n: int) -> Iterator[str]:
    try:
        for i in range(n):
            tally.on_produced()
            yield f"line {i}"
    finally:
        tally.on_exhausted()


# --------------------------------------------------------------------------- virtual time


def two_clocks() -> tuple[TestScheduler, TestScheduler, Any]:
    source_clock, observer_clock = TestScheduler(), TestScheduler()
    source = source_clock.create_cold_observable(
        on_next(10, "a"), on_next(20, "b"), on_next(30, "c"), on_completed(40)
    )
    return source_clock, observer_clock, source


def test_every_observer_sees_every_item_from_one_subscription() -> None:
    clock, _, source = two_clocks()
    hub = rs.multicast(source)
    ui, log = clock.create_observer(), clock.create_observer()
    hub.subscribe(ui)
    hub.subscribe(log)
    hub.connect()
    clock.start()
    expected = [on_next(10, "a"), on_next(20, "b"), on_next(30, "c"), on_completed(40)]
    assert ui.messages == expected
    assert log.messages == expected
    assert source.subscriptions == [Subscription(0, 40)]


@pytest.mark.parametrize(
    ("maxsize", "seen"),
    [
        pytest.param(1, ["c"], id="maxsize-1-keeps-the-newest"),
        pytest.param(2, ["b", "c"], id="maxsize-2-keeps-the-two-newest"),
        pytest.param(5, ["a", "b", "c"], id="room-for-all-drops-nothing"),
    ],
)
def test_latest_drops_the_oldest_items_of_an_observer_that_fell_behind(
    maxsize: int, seen: list[str]
) -> None:
    clock, observer_clock, source = two_clocks()
    hub = rs.multicast(source)
    status = observer_clock.create_observer()
    everything = clock.create_observer()
    hub.subscribe(status, overflow="latest", maxsize=maxsize, scheduler=observer_clock)
    hub.subscribe(everything)
    hub.connect()
    clock.start()  # the whole stream runs while the status observer is busy
    observer_clock.advance_by(1)
    assert status.messages == [*(on_next(0, x) for x in seen), on_completed(0)]
    assert [m.value.value for m in everything.messages[:-1]] == ["a", "b", "c"]
    assert source.subscriptions == [Subscription(0, 40)]


def test_latest_observer_that_keeps_up_sees_everything() -> None:
    clock, observer_clock, source = two_clocks()
    hub = rs.multicast(source)
    status = observer_clock.create_observer()
    hub.subscribe(status, overflow="latest", scheduler=observer_clock)
    hub.connect()
    for tick in (15, 25, 35, 45):
        clock.advance_to(tick)
        observer_clock.advance_to(tick)
    assert [m.value.value for m in status.messages[:-1]] == ["a", "b", "c"]
    assert status.messages[-1].value.kind == "C"


def test_error_policy_ends_only_the_observer_that_overflowed() -> None:
    clock, observer_clock, source = two_clocks()
    hub = rs.multicast(source)
    slow = observer_clock.create_observer()
    fast = clock.create_observer()
    hub.subscribe(slow, overflow="error", maxsize=2, scheduler=observer_clock, name="ui")
    hub.subscribe(fast)
    hub.connect()
    clock.start()
    observer_clock.advance_by(1)
    # The buffered items first, then the error; the other observer sees the whole stream.
    assert [m.value.kind for m in slow.messages] == ["N", "N", "E"]
    assert [m.value.value for m in slow.messages[:2]] == ["a", "b"]
    assert is_overflow(2, "ui")(slow.messages[2].value.exception)
    assert fast.messages == [on_next(10, "a"), on_next(20, "b"), on_next(30, "c"), on_completed(40)]
    assert source.subscriptions == [Subscription(0, 40)]


def test_error_policy_overflow_of_the_only_observer_disposes_upstream() -> None:
    clock, observer_clock, source = two_clocks()
    hub = rs.multicast(source)
    slow = observer_clock.create_observer()
    hub.subscribe(slow, overflow="error", maxsize=1, scheduler=observer_clock)
    hub.connect()
    clock.start()
    observer_clock.advance_by(1)
    assert source.subscriptions == [Subscription(0, 20)]  # "b" did not fit
    assert [m.value.kind for m in slow.messages] == ["N", "E"]
    message = str(slow.messages[1].value.exception)
    assert "buffer of 1 item" in message
    assert "'b'" in message


def test_disposing_one_observer_keeps_the_stream_for_the_others() -> None:
    clock, _, source = two_clocks()
    hub = rs.multicast(source)
    ui, log = clock.create_observer(), clock.create_observer()
    ui_subscription = hub.subscribe(ui)
    hub.subscribe(log)
    hub.connect()
    clock.schedule_absolute(25, lambda *_: ui_subscription.dispose())
    clock.start()
    assert ui.messages == [on_next(10, "a"), on_next(20, "b")]
    assert log.messages[-1] == on_completed(40)
    assert source.subscriptions == [Subscription(0, 40)]


def test_disposing_every_observer_disposes_upstream() -> None:
    clock, _, source = two_clocks()
    hub = rs.multicast(source)
    ui, log = clock.create_observer(), clock.create_observer()
    subscriptions = [hub.subscribe(ui), hub.subscribe(log)]
    hub.connect()
    clock.schedule_absolute(15, lambda *_: subscriptions[0].dispose())
    clock.schedule_absolute(25, lambda *_: subscriptions[1].dispose())
    clock.start()
    assert source.subscriptions == [Subscription(0, 25)]
    assert ui.messages == [on_next(10, "a")]
    assert log.messages == [on_next(10, "a"), on_next(20, "b")]


def test_the_connection_disposable_stops_everybody() -> None:
    clock, _, source = two_clocks()
    hub = rs.multicast(source)
    ui = clock.create_observer()
    hub.subscribe(ui)
    connection = hub.connect()
    clock.schedule_absolute(15, lambda *_: connection.dispose())
    clock.start()
    assert source.subscriptions == [Subscription(0, 15)]
    assert ui.messages == [on_next(10, "a")]


def test_observe_pipes_one_observers_own_operators() -> None:
    clock, _, source = two_clocks()
    hub = rs.multicast(source)
    upper, plain = clock.create_observer(), clock.create_observer()
    hub.observe().pipe(ops.map(str.upper)).subscribe(upper)
    hub.observe().subscribe(plain)
    hub.connect()
    clock.start()
    assert [m.value.value for m in upper.messages[:-1]] == ["A", "B", "C"]
    assert [m.value.value for m in plain.messages[:-1]] == ["a", "b", "c"]
    assert source.subscriptions == [Subscription(0, 40)]


def test_an_observer_that_raises_ends_alone() -> None:
    def explode(item: str) -> None:
        if item == "b":
            raise ValueError("observer bug")

    hub = rs.multicast(reactivex.of("a", "b", "c"))
    broken, healthy = Outcome(), Outcome()
    hub.subscribe(explode, broken.on_error, broken.on_completed)
    hub.subscribe(healthy.on_next, healthy.on_error, healthy.on_completed)
    hub.connect()
    assert isinstance(broken.error, ValueError)
    assert healthy.items == ["a", "b", "c"]
    assert healthy.completed


def test_an_upstream_error_reaches_every_observer_after_its_items(
    pool: Callable[[], ThreadPoolScheduler],
) -> None:
    failure = rs.TruncatedStreamError("cut")
    hub = rs.multicast(reactivex.concat(reactivex.of(1, 2), reactivex.throw(failure)))
    direct, queued = Outcome(), Outcome()
    hub.subscribe(direct.on_next, direct.on_error, direct.on_completed)
    hub.subscribe(queued.on_next, queued.on_error, queued.on_completed, scheduler=pool())
    hub.connect()
    assert queued.ended.wait(TIMEOUT)
    assert direct.items == queued.items == [1, 2]
    assert direct.error is failure
    assert queued.error is failure


# --------------------------------------------------------------------------- caller mistakes


def test_the_share_trap_that_multicast_avoids() -> None:
    # With share(), a synchronous source has finished before the second observer
    # subscribes: it runs the source again (a second request, for an HTTP source).
    runs = []
    source = reactivex.defer(lambda _: (runs.append(1), reactivex.of(1, 2))[1])
    shared = source.pipe(ops.share())
    shared.subscribe(lambda _: None)
    shared.subscribe(lambda _: None)
    assert len(runs) == 2
    runs.clear()
    hub = rs.multicast(source)
    seen: list[list[int]] = [[], []]
    hub.subscribe(seen[0].append)
    hub.subscribe(seen[1].append)
    hub.connect()
    assert len(runs) == 1
    assert seen == [[1, 2], [1, 2]]


def test_subscribing_after_the_end_gets_the_end_at_once_and_connect_is_once() -> None:
    # Late observers are welcome (tests/io/test_multicast_join.py); after the end
    # they get the end at once, and the source never runs twice.
    hub = rs.multicast(reactivex.of(1))
    observable = hub.observe()
    hub.subscribe(lambda _: None)
    hub.connect()
    assert hub.connected
    late, piped = Outcome(), Outcome()
    hub.subscribe(late.on_next, late.on_error, late.on_completed)
    observable.subscribe(piped.on_next, piped.on_error, piped.on_completed)
    assert (late.items, late.completed, late.error) == ([], True, None)
    assert (piped.items, piped.completed, piped.error) == ([], True, None)
    with pytest.raises(RuntimeError, match=r"connected|ended"):
        hub.connect()


def test_subscribing_to_a_disposed_hub_is_a_runtime_error() -> None:
    hub = rs.multicast(reactivex.never())
    observable = hub.observe()
    hub.subscribe(lambda _: None)
    hub.connect()
    hub.dispose()
    with pytest.raises(RuntimeError, match="disposed"):
        hub.subscribe(lambda _: None)
    late = Outcome()
    observable.subscribe(late.on_next, late.on_error, late.on_completed)
    assert isinstance(late.error, RuntimeError)


def test_connect_without_observers_is_a_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="no observer"):
        rs.multicast(reactivex.of(1)).connect()


@pytest.mark.parametrize(
    ("options", "error"),
    [
        pytest.param({"overflow": "drop"}, ValueError, id="unknown-policy"),
        pytest.param({"maxsize": 0}, ValueError, id="maxsize-zero"),
        pytest.param({"maxsize": 2.5}, TypeError, id="maxsize-float"),
        pytest.param({"maxsize": True}, TypeError, id="maxsize-bool"),
        pytest.param({"overflow": "latest"}, ValueError, id="latest-without-scheduler"),
        pytest.param({"overflow": "error"}, ValueError, id="error-without-scheduler"),
    ],
)
def test_bad_options(options: dict[str, Any], error: type[Exception]) -> None:
    hub = rs.multicast(reactivex.of(1))
    with pytest.raises(error):
        hub.observe(**options)
    with pytest.raises(error):
        hub.subscribe(lambda _: None, **options)


def test_context_manager_connects_at_the_end_of_the_block() -> None:
    seen: list[int] = []
    with rs.multicast(reactivex.of(1, 2)) as hub:
        hub.subscribe(seen.append)
        assert seen == []
    assert seen == [1, 2]


def test_context_manager_does_not_start_the_stream_after_an_exception() -> None:
    runs: list[int] = []
    source = reactivex.defer(lambda _: (runs.append(1), reactivex.of(1))[1])
    hub = rs.multicast(source)

    def attach_then_fail() -> None:
        with hub:
            hub.subscribe(lambda _: None)
            raise KeyError("boom")

    with pytest.raises(KeyError):
        attach_then_fail()
    assert runs == []
    assert hub.connected  # disposed: it cannot be connected any more


# --------------------------------------------------------------------------- threads


@pytest.mark.parametrize("maxsize", [1, 4])
def test_block_keeps_a_sync_source_within_maxsize_of_a_slow_observer(
    maxsize: int, pool: Callable[[], ThreadPoolScheduler]
) -> None:
    tally = Tally()
    hub = rs.multicast(rs.from_lines(counted(tally, 40)))
    slow, fast = Outcome(), Outcome()

    def consume(line: str) -> None:
        tally.consume_slowly(maxsize + 1)
        slow.on_next(line)

    hub.subscribe(consume, slow.on_error, slow.on_completed, maxsize=maxsize, scheduler=pool())
    hub.subscribe(fast.on_next, fast.on_error, fast.on_completed)
    hub.connect()  # returns when the source has ended; the slow observer may still be busy
    assert slow.ended.wait(TIMEOUT)
    assert slow.items == fast.items == [f"line {i}" for i in range(40)]
    assert slow.completed
    assert maxsize + 1 <= tally.widest <= maxsize + 2


@pytest.mark.parametrize("maxsize", [1, 4])
def test_block_pauses_an_async_source_for_an_observer_on_another_thread(
    maxsize: int, pool: Callable[[], ThreadPoolScheduler]
) -> None:
    tally = Tally()

    async def lines() -> Any:
        try:
            for i in range(40):
                await asyncio.sleep(0)
                tally.on_produced()
                yield f"line {i}"
        finally:
            tally.on_exhausted()

    async def main() -> Outcome:
        slow = Outcome()

        def consume(line: str) -> None:
            tally.consume_slowly(maxsize)
            slow.on_next(line)

        hub = rs.multicast(rs.from_lines(lines()))
        hub.subscribe(consume, slow.on_error, slow.on_completed, maxsize=maxsize, scheduler=pool())
        hub.connect()
        assert await asyncio.to_thread(slow.ended.wait, TIMEOUT)
        return slow

    slow = asyncio.run(main())
    assert slow.items == [f"line {i}" for i in range(40)]
    assert maxsize <= tally.widest <= maxsize + 2


def test_block_pauses_an_async_source_for_an_observer_on_the_same_loop() -> None:
    # One item holds 30 lines: without the demand gate all 30 would queue at once.
    tally = Tally()
    burst = "\n".join(f"line {i}" for i in range(30))

    async def items() -> Any:
        yield burst

    async def main() -> Outcome:
        seen = Outcome()
        scheduler = AsyncIOScheduler(asyncio.get_running_loop())

        def consume(line: str) -> None:
            tally.consumed += 1
            seen.on_next(line)

        hub = rs.multicast(rs.from_lines(items()).pipe(ops.do_action(tally.on_produced)))
        hub.subscribe(consume, seen.on_error, seen.on_completed, maxsize=3, scheduler=scheduler)
        hub.connect()
        await asyncio.wait_for(asyncio.to_thread(seen.ended.wait, TIMEOUT), TIMEOUT)
        return seen

    seen = asyncio.run(main())
    assert seen.items == burst.split("\n")
    assert tally.widest <= 3 + 1


# --------------------------------------------------------------------------- one HTTP request


def test_sync_client_one_request_for_three_observers(
    fake_llm_server: FakeLLMServer, pool: Callable[[], ThreadPoolScheduler]
) -> None:
    fake_llm_server.serve(Scenario.text("one", " request", " three", " observers"))
    outcomes = [Outcome(), Outcome(), Outcome()]
    with httpx.Client() as client:
        deltas = rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(
            rs.sse_frames(), rs.decode_chunks(), rs.deltas()
        )
        with rs.multicast(deltas) as hub:
            hub.subscribe(outcomes[0].on_next, outcomes[0].on_error, outcomes[0].on_completed)
            hub.subscribe(
                outcomes[1].on_next,
                outcomes[1].on_error,
                outcomes[1].on_completed,
                scheduler=pool(),
            )
            hub.observe(overflow="error", maxsize=1000, scheduler=pool()).subscribe(
                outcomes[2].on_next, outcomes[2].on_error, outcomes[2].on_completed
            )
        assert all(outcome.ended.wait(TIMEOUT) for outcome in outcomes)
    assert len(fake_llm_server.requests) == 1
    text = "".join(d.text for d in outcomes[0].items if isinstance(d, rs.TextDelta))
    assert text == "one request three observers"
    assert outcomes[0].items == outcomes[1].items == outcomes[2].items
    assert all(outcome.completed for outcome in outcomes)


def test_async_client_one_request_for_three_observers(
    fake_llm_server: FakeLLMServer, pool: Callable[[], ThreadPoolScheduler]
) -> None:
    fake_llm_server.serve(Scenario.text("async", " fan", " out", delay=0.01))

    async def main() -> list[Outcome]:
        outcomes = [Outcome(), Outcome(), Outcome()]
        loop_scheduler = AsyncIOScheduler(asyncio.get_running_loop())
        async with httpx.AsyncClient() as client:
            hub = rs.multicast(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))
            for outcome, scheduler in zip(outcomes, [None, loop_scheduler, pool()], strict=True):
                hub.subscribe(
                    outcome.on_next, outcome.on_error, outcome.on_completed, scheduler=scheduler
                )
            hub.connect()
            for outcome in outcomes:
                assert await asyncio.to_thread(outcome.ended.wait, TIMEOUT)
        return outcomes

    outcomes = asyncio.run(main())
    assert len(fake_llm_server.requests) == 1
    assert outcomes[0].items == outcomes[1].items == outcomes[2].items
    assert any('"async"' in line for line in outcomes[0].items)
    assert all(outcome.completed for outcome in outcomes)


def test_the_connection_closes_only_when_the_last_observer_leaves(
    fake_llm_server: FakeLLMServer,
) -> None:
    fake_llm_server.serve(Scenario.text("a").then(Stall(10.0), Done()))
    first_line = threading.Event()
    with httpx.Client() as client:
        source = rs.from_request(
            client, "POST", fake_llm_server.url, json=PAYLOAD, scheduler=ThreadPoolScheduler(1)
        )
        hub = rs.multicast(source)
        ui = hub.subscribe(lambda _: first_line.set())
        log = hub.subscribe(lambda _: None)
        hub.connect()
        assert first_line.wait(TIMEOUT)
        ui.dispose()
        assert not fake_llm_server.wait_for_disconnect(0.2)
        log.dispose()
        assert fake_llm_server.wait_for_disconnect(1.0)
    assert len(fake_llm_server.requests) == 1


def test_async_connection_dispose_closes_the_connection(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.text("a").then(Stall(10.0), Done()))

    async def main() -> bool:
        first_line = asyncio.Event()
        async with httpx.AsyncClient() as client:
            hub = rs.multicast(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))
            hub.subscribe(lambda _: first_line.set())
            hub.subscribe(lambda _: None, scheduler=AsyncIOScheduler(asyncio.get_running_loop()))
            connection = hub.connect()
            await asyncio.wait_for(first_line.wait(), TIMEOUT)
            connection.dispose()
            return await asyncio.to_thread(fake_llm_server.wait_for_disconnect, 1.0)

    assert asyncio.run(main())


# --------------------------------------------------------------------------- the example


def test_the_multicast_example_runs_one_request_and_never_logs_the_key() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "multicast_ui_logger.py"
    result = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[0] == "One request, three observers: a UI, a logger and a counter."
    words = out[1].split()
    repaints, pieces = int(words[0]), int(words[3])
    assert 1 <= repaints < pieces == 15  # coalesced, and no text lost (line 0)
    assert out[2].startswith("15 words")
    assert out[-1] == "HTTP requests: 1"
    log = result.stderr.splitlines()
    frames = [line for line in log if line.startswith("DEBUG rxstream.example: frame:")]
    assert len(frames) == 19  # every frame: role, 15 pieces, finish, usage, [DONE]
    assert frames[-1].endswith("data=[DONE]")
    assert any("<redacted>" in line for line in log)
    assert "sk-fake" not in result.stderr + result.stdout
    assert "Bearer" not in result.stderr + result.stdout
