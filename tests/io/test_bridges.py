"""`to_iterator` / `to_async_iterator`: bounded buffers, disposal on early exit, errors at the pull.

The bounded-buffer targets are counted at the source: lines read minus lines
consumed never exceeds maxsize + 2. The consumer waits (on a condition, not a
clock) until the producer is as far ahead as it may go, so an unbounded
bridge would be caught reading the whole stream.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import reactivex
from reactivex import operators as ops
from reactivex.disposable import Disposable
from reactivex.scheduler import ThreadPoolScheduler

import rxstream as rs
from rxstream._flow import Demand, current_demand
from rxstream.testing.builders import text_chunk
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import Chunk, FakeLLMServer, Scenario, Stall

WAIT = 10  # seconds a test waits for another thread before it fails (never reached when green)


class Tally:
    """Lines read at the source and consumed at the sink, and the widest gap seen."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.read = 0
        self.consumed = 0
        self.widest = 0
        self.exhausted = False
        self.closed = threading.Event()

    def on_read(self) -> None:
        with self.cond:
            self.read += 1
            self.widest = max(self.widest, self.read - self.consumed)
            self.cond.notify_all()

    def on_consumed(self) -> None:
        with self.cond:
            self.consumed += 1

    def on_end(self) -> None:
        with self.cond:
            self.exhausted = True
            self.cond.notify_all()
        self.closed.set()

    def wait_until_ahead(self, lead: int) -> None:
        """Block until the producer is `lead` lines ahead of the consumer, or done."""
        with self.cond:
            reached = self.cond.wait_for(
                lambda: self.exhausted or self.read - self.consumed >= lead, timeout=WAIT
            )
        assert reached, f"producer stuck at {self.read} read / {self.consumed} consumed"


def counted_lines(tally: Tally, n: int) -> Iterator[str]:
    try:
        for i in range(n):
            tally.on_read()
            yield f"line {i}"
    finally:
        tally.on_end()


async def acounted_lines(tally: Tally, n: int) -> AsyncIterator[str]:
    try:
        for i in range(n):
            await asyncio.sleep(0)
            tally.on_read()
            yield f"line {i}"
    finally:
        tally.on_end()


async def collect(iterator: AsyncIterator[Any], into: list[Any]) -> None:
    async for item in iterator:
        into.append(item)


def lines(n: int) -> list[str]:
    return [f"line {i}" for i in range(n)]


# -- to_iterator ---------------------------------------------------------------------------


@pytest.mark.parametrize("maxsize", [1, 2, 8])
@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda t: rs.from_lines(counted_lines(t, 60)), id="sync-on-the-worker"),
        pytest.param(
            lambda t: rs.from_lines(counted_lines(t, 60), scheduler=ThreadPoolScheduler(1)),
            id="sync-on-a-thread-pool",
        ),
    ],
)
def test_to_iterator_keeps_the_producer_within_maxsize(make: Any, maxsize: int) -> None:
    tally = Tally()
    got = []
    for line in rs.to_iterator(make(tally), maxsize=maxsize):
        tally.on_consumed()
        got.append(line)
        tally.wait_until_ahead(maxsize + 1)
    assert got == lines(60)
    assert tally.widest <= maxsize + 2
    assert tally.widest >= maxsize + 1  # the buffer really filled


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(reactivex.of(1, 2, 3), id="of"),
        pytest.param(reactivex.from_iterable(range(1, 4)), id="from-iterable"),
        pytest.param(reactivex.of(1, 2, 3).pipe(ops.observe_on(ThreadPoolScheduler(1))), id="pool"),
    ],
)
def test_to_iterator_yields_every_item_in_order(source: Any) -> None:
    assert list(rs.to_iterator(source, maxsize=1)) == [1, 2, 3]


def test_to_iterator_subscribes_at_the_first_pull() -> None:
    subscribed = []
    source = reactivex.defer(lambda _: subscribed.append(1) or reactivex.of("a"))
    it = rs.to_iterator(source)
    assert subscribed == []
    assert next(it) == "a"
    assert subscribed == [1]
    assert list(it) == []


def test_to_iterator_closed_before_the_first_pull_never_subscribes() -> None:
    subscribed = []
    it = rs.to_iterator(reactivex.defer(lambda _: subscribed.append(1) or reactivex.of("a")))
    it.close()
    assert list(it) == []
    assert subscribed == []


@pytest.mark.parametrize(
    "scheduler",
    [pytest.param(None, id="sync-on-the-worker"), pytest.param(ThreadPoolScheduler(1), id="pool")],
)
def test_to_iterator_break_disposes_and_stops_reading(scheduler: Any) -> None:
    tally = Tally()
    for i, _ in enumerate(
        rs.to_iterator(rs.from_lines(counted_lines(tally, 10_000), scheduler=scheduler), maxsize=4)
    ):
        tally.on_consumed()
        if i == 2:
            break
    assert tally.closed.wait(WAIT), "the source was never closed"
    assert tally.read <= 3 + 4 + 2


def test_to_iterator_consumer_exception_disposes() -> None:
    tally = Tally()

    def consume() -> None:
        for _ in rs.to_iterator(rs.from_lines(counted_lines(tally, 10_000)), maxsize=2):
            raise KeyError("consumer bug")

    with pytest.raises(KeyError):
        consume()
    assert tally.closed.wait(WAIT)
    assert tally.read <= 1 + 2 + 2


def test_to_iterator_as_context_manager_disposes_on_exit() -> None:
    tally = Tally()
    with rs.to_iterator(rs.from_lines(counted_lines(tally, 10_000)), maxsize=2) as it:
        assert next(it) == "line 0"
    assert tally.closed.wait(WAIT)
    assert list(it) == []


def test_to_iterator_dropped_iterator_disposes() -> None:
    tally = Tally()
    it = rs.to_iterator(rs.from_lines(counted_lines(tally, 10_000)), maxsize=2)
    assert next(it) == "line 0"
    del it
    gc.collect()
    assert tally.closed.wait(WAIT)


def test_to_iterator_disposes_a_subscription_it_holds() -> None:
    """A source that returns from subscribe at once is stopped through its disposable."""
    disposed = threading.Event()
    gate = threading.Event()

    def subscribe(observer: Any, scheduler: Any = None) -> Any:
        def produce() -> None:
            for i in range(1000):
                if disposed.is_set():
                    return
                observer.on_next(i)
            gate.wait(WAIT)

        threading.Thread(target=produce, daemon=True).start()
        return Disposable(disposed.set)

    it = rs.to_iterator(reactivex.create(subscribe), maxsize=2)
    assert [next(it), next(it)] == [0, 1]
    it.close()
    assert disposed.wait(WAIT)
    gate.set()


def test_to_iterator_worker_thread_ends_after_close() -> None:
    tally = Tally()
    before = set(threading.enumerate())
    it = rs.to_iterator(rs.from_lines(counted_lines(tally, 10_000)), maxsize=2)
    next(it)
    workers = [t for t in set(threading.enumerate()) - before if t.name == "rxstream-to-iterator"]
    it.close()
    assert len(workers) == 1
    workers[0].join(WAIT)
    assert not workers[0].is_alive()


def test_to_iterator_raises_the_error_after_the_items_before_it() -> None:
    error = ValueError("from the stream")
    it = rs.to_iterator(reactivex.concat(reactivex.of(1, 2), reactivex.throw(error)), maxsize=8)
    assert [next(it), next(it)] == [1, 2]
    with pytest.raises(ValueError, match="from the stream") as caught:
        next(it)
    assert caught.value is error
    assert list(it) == []


def test_to_iterator_raises_an_error_from_a_source_on_another_thread() -> None:
    def broken() -> Iterator[str]:
        yield "a"
        raise rs.TransportError("connection reset")

    it = rs.to_iterator(rs.from_lines(broken(), scheduler=ThreadPoolScheduler(1)))
    assert next(it) == "a"
    with pytest.raises(rs.TransportError, match="connection reset"):
        next(it)


@pytest.mark.parametrize(
    ("maxsize", "error"),
    [
        pytest.param(0, ValueError, id="zero"),
        pytest.param(-3, ValueError, id="negative"),
        pytest.param(2.5, TypeError, id="float"),
        pytest.param(True, TypeError, id="bool"),
    ],
)
@pytest.mark.parametrize("bridge", [rs.to_iterator, rs.to_async_iterator])
def test_bridges_reject_bad_maxsize(bridge: Any, maxsize: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="maxsize"):
        bridge(reactivex.of(1), maxsize=maxsize)


# -- to_async_iterator ---------------------------------------------------------------------


@pytest.mark.parametrize("maxsize", [1, 2, 8])
def test_to_async_iterator_pauses_an_async_source(maxsize: int) -> None:
    tally = Tally()

    async def main() -> list[str]:
        got = []
        async for line in rs.to_async_iterator(
            rs.from_lines(acounted_lines(tally, 60)), maxsize=maxsize
        ):
            tally.on_consumed()
            got.append(line)
            for _ in range(4 * maxsize + 8):  # let the source run ahead as far as it may
                await asyncio.sleep(0)
        return got

    assert asyncio.run(main()) == lines(60)
    assert tally.widest <= maxsize + 2
    assert tally.widest >= maxsize  # the buffer really filled


@pytest.mark.parametrize("maxsize", [1, 2, 8])
def test_to_async_iterator_blocks_a_producer_thread(maxsize: int) -> None:
    tally = Tally()

    async def main() -> list[str]:
        got = []
        source = rs.from_lines(counted_lines(tally, 60), scheduler=ThreadPoolScheduler(1))
        async for line in rs.to_async_iterator(source, maxsize=maxsize):
            tally.on_consumed()
            got.append(line)
            await asyncio.to_thread(tally.wait_until_ahead, maxsize + 1)
        return got

    assert asyncio.run(main()) == lines(60)
    assert tally.widest <= maxsize + 2
    assert tally.widest >= maxsize + 1


def test_to_async_iterator_subscribes_inside_a_demand_scope() -> None:
    seen = []

    def subscribe(observer: Any, scheduler: Any = None) -> Any:
        seen.append(current_demand())
        observer.on_completed()
        return Disposable()

    async def main() -> list[Any]:
        return [x async for x in rs.to_async_iterator(reactivex.create(subscribe))]

    assert asyncio.run(main()) == []
    assert len(seen) == 1
    assert seen[0] is not None
    assert current_demand() is None  # the scope ended with the subscribe call


@pytest.mark.parametrize("how", ["resume", "release", "reset"])
def test_demand_opened_from_another_thread_wakes_a_waiting_source(how: str) -> None:
    # The loop runs in its own thread with nothing else to do (no timer, no I/O):
    # only a thread-safe hand-over can wake it, as when a bridge is closed at
    # garbage collection or a multicast observer drains on a thread pool.
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    demand = Demand()
    woke = threading.Event()
    waiting = threading.Event()

    async def source() -> None:
        demand.hold("consumer") if how == "release" else demand.pause()
        waiting.set()
        await demand.wait()
        woke.set()

    try:
        asyncio.run_coroutine_threadsafe(source(), loop)
        assert waiting.wait(WAIT)
        assert demand.paused
        {
            "resume": demand.resume,
            "release": lambda: demand.release("consumer"),
            "reset": demand.reset,
        }[how]()
        assert woke.wait(WAIT)
        assert not demand.paused
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(WAIT)
        loop.close()


def test_demand_stays_closed_while_any_holder_holds_it() -> None:
    demand = Demand()
    demand.hold("ui")
    demand.hold("log")
    demand.release("ui")
    assert demand.paused
    demand.release("log")
    assert not demand.paused
    demand.hold("ui")
    demand.reset()
    assert not demand.paused


def test_to_async_iterator_yields_a_sync_source_on_the_loop_thread() -> None:
    async def main() -> list[int]:
        return [x async for x in rs.to_async_iterator(reactivex.range(5), maxsize=2)]

    assert asyncio.run(main()) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("how", ["break", "exception", "aclose", "async-with"])
def test_to_async_iterator_early_exit_disposes(how: str) -> None:
    tally = Tally()

    async def main() -> None:
        source = rs.from_lines(acounted_lines(tally, 10_000))
        if how == "break":
            async for _ in rs.to_async_iterator(source, maxsize=2):
                break
        elif how == "exception":

            async def consume() -> None:
                async for _ in rs.to_async_iterator(source, maxsize=2):
                    raise KeyError("consumer bug")

            with pytest.raises(KeyError):
                await consume()
        elif how == "aclose":
            it = rs.to_async_iterator(source, maxsize=2)
            assert await it.__anext__() == "line 0"
            await it.aclose()
            with pytest.raises(StopAsyncIteration):
                await it.__anext__()
        else:
            async with rs.to_async_iterator(source, maxsize=2) as it:
                assert await it.__anext__() == "line 0"
        gc.collect()
        for _ in range(100):  # the cancelled source task closes its generator
            if tally.closed.is_set():
                break
            await asyncio.sleep(0)

    asyncio.run(main())
    assert tally.closed.is_set(), "the source was never closed"
    assert tally.read <= 1 + 2 + 2


def test_to_async_iterator_early_exit_unblocks_a_producer_thread() -> None:
    tally = Tally()

    async def main() -> None:
        source = rs.from_lines(counted_lines(tally, 10_000), scheduler=ThreadPoolScheduler(1))
        async with rs.to_async_iterator(source, maxsize=2) as it:
            assert await it.__anext__() == "line 0"

    asyncio.run(main())
    assert tally.closed.wait(WAIT)
    assert tally.read <= 1 + 2 + 2


def test_to_async_iterator_raises_the_error_after_the_items_before_it() -> None:
    error = ValueError("from the stream")

    async def main() -> None:
        it = rs.to_async_iterator(reactivex.concat(reactivex.of(1, 2), reactivex.throw(error)))
        assert [await it.__anext__(), await it.__anext__()] == [1, 2]
        with pytest.raises(ValueError, match="from the stream") as caught:
            await it.__anext__()
        assert caught.value is error
        with pytest.raises(StopAsyncIteration):
            await it.__anext__()

    asyncio.run(main())


def test_to_async_iterator_raises_an_error_from_another_thread() -> None:
    def broken() -> Iterator[str]:
        yield "a"
        raise rs.TransportError("connection reset")

    async def main() -> list[str]:
        got: list[Any] = []
        source = rs.from_lines(broken(), scheduler=ThreadPoolScheduler(1))
        with pytest.raises(rs.TransportError, match="connection reset"):
            await collect(rs.to_async_iterator(source), got)
        return got

    assert asyncio.run(main()) == ["a"]


def test_to_async_iterator_with_timeouts_on_a_stalled_async_source() -> None:
    """A stalled async stream ends with StreamTimeoutError at the pull, and its source is closed."""
    tally = Tally()

    async def stalls() -> AsyncIterator[str]:
        try:
            yield "data: first"
            await asyncio.Event().wait()  # the server goes quiet
        finally:
            tally.on_end()

    async def main() -> list[str]:
        got: list[Any] = []
        source = rs.from_lines(stalls()).pipe(rs.timeouts(idle=0.05))
        with pytest.raises(rs.StreamTimeoutError) as caught:
            await collect(rs.to_async_iterator(source), got)
        assert caught.value.limit == "idle"
        for _ in range(100):
            if tally.closed.is_set():
                break
            await asyncio.sleep(0.01)
        return got

    assert asyncio.run(main()) == ["data: first"]
    assert tally.closed.is_set()


# -- against a real server on 127.0.0.1: leaving early closes the connection ---------------

STALLED = Scenario(steps=(Chunk(text_chunk("Hi")), Stall(20)))


def test_to_iterator_close_reaches_a_read_blocked_on_the_server() -> None:
    """The sync source runs on the worker and waits for bytes; close() must still end it."""
    with FakeLLMServer(STALLED) as server, httpx.Client() as client:
        source = rs.from_request(client, "POST", server.url, json=minimal_body("openai-chat"))
        with rs.to_iterator(source.pipe(rs.sse_frames()), maxsize=4) as frames:
            assert "Hi" in next(frames).data
        assert server.wait_for_disconnect(timeout=WAIT)


def test_to_async_iterator_break_closes_the_connection() -> None:
    async def main(server: FakeLLMServer) -> str:
        data = ""
        async with httpx.AsyncClient() as client:
            source = rs.from_request(client, "POST", server.url, json=minimal_body("openai-chat"))
            async for frame in rs.to_async_iterator(source.pipe(rs.sse_frames()), maxsize=4):
                data = frame.data
                break
            await asyncio.to_thread(server.wait_for_disconnect, WAIT)
        return data

    with FakeLLMServer(STALLED) as server:
        assert "Hi" in asyncio.run(main(server))
        assert server.disconnects == 1


def test_to_iterator_reads_a_whole_answer_from_the_server() -> None:
    with FakeLLMServer(Scenario.text("Hel", "lo")) as server, httpx.Client() as client:
        source = rs.from_request(client, "POST", server.url, json=minimal_body("openai-chat"))
        deltas = source.pipe(rs.sse_frames(), rs.decode_chunks(), rs.deltas())
        items = rs.to_iterator(deltas, maxsize=1)
        text = "".join(d.text for d in items if isinstance(d, rs.TextDelta))
    assert text == "Hello"
