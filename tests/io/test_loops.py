"""The read loops piece by piece: one `SyncLoop` / `AsyncLoop` per subscription, a method per step.

The end-to-end behaviour (sockets, disposal from other threads, backpressure)
is tested with real servers elsewhere; here each step is called on its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from reactivex import Observer
from reactivex.abc import DisposableBase
from reactivex.scheduler import CurrentThreadScheduler
from reactivex.testing import TestScheduler

from rxstream.io._loops import AsyncLoop, Handle, SyncLoop, turns_of


class Seen:
    """What an observer got, in order."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.observer: Observer[Any] = Observer(
            lambda x: self.events.append(x),
            lambda e: self.events.append(("error", e)),
            lambda: self.events.append("completed"),
        )


def test_the_reader_is_made_on_the_first_read_and_read_once_per_step() -> None:
    made: list[Handle] = []
    closed: list[bool] = []

    def make_reader(handle: Handle) -> Iterator[list[int]]:
        made.append(handle)
        try:
            yield [1, 2]
            yield [3]
        finally:
            closed.append(True)

    seen = Seen()
    loop = SyncLoop(make_reader, seen.observer, CurrentThreadScheduler.singleton())
    assert made == []
    assert loop.read() == [1, 2]
    assert len(made) == 1
    assert loop.read() == [3]
    assert loop.read() is None
    assert len(made) == 1
    assert closed == [True]


def test_push_stops_at_a_dispose_from_inside_on_next() -> None:
    events: list[int] = []
    started: list[DisposableBase] = []

    def on_next(item: int) -> None:
        events.append(item)
        started[0].dispose()

    # A virtual-time scheduler runs nothing until told: the steps are called by hand.
    loop = SyncLoop(lambda h: iter([]), Observer(on_next), TestScheduler())
    started.append(loop.start())
    assert loop.push([1, 2, 3]) is False
    assert events == [1]


def test_after_dispose_neither_completion_nor_error_is_told() -> None:
    seen = Seen()
    loop = SyncLoop(lambda h: iter([[1]]), seen.observer, TestScheduler())
    loop.start().dispose()
    loop.complete()
    loop.fail(ValueError("late"))
    assert seen.events == []


def test_a_whole_run_emits_every_batch_then_completes() -> None:
    seen = Seen()
    loop = SyncLoop(
        lambda h: iter([[1, 2], [], [3]]), seen.observer, CurrentThreadScheduler.singleton()
    )
    loop.start()  # the trampoline runs every step before start returns
    assert seen.events == [1, 2, 3, "completed"]


def test_a_failing_reader_is_closed_before_the_error_is_told() -> None:
    order: list[str] = []

    def make_reader(handle: Handle) -> Iterator[list[int]]:
        try:
            yield [1]
            raise ValueError("broken")
        finally:
            order.append("closed")

    seen = Seen()
    loop = SyncLoop(
        make_reader,
        Observer(seen.events.append, lambda e: order.append(f"error {e}")),
        CurrentThreadScheduler.singleton(),
    )
    loop.start()
    assert seen.events == [1]
    assert order == ["closed", "error broken"]


def test_an_async_loop_ends_once_and_reports_what_nobody_handles() -> None:
    async def main() -> tuple[list[Any], list[dict[str, Any]]]:
        loop = asyncio.get_running_loop()
        reported: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _, context: reported.append(context))

        async def make_reader(handle: Handle) -> AsyncIterator[list[int]]:
            yield [1]
            raise ValueError("broken")

        items: list[Any] = []
        AsyncLoop(make_reader, Observer(items.append), loop).start()
        for _ in range(10):
            await asyncio.sleep(0)
        return items, reported

    items, reported = asyncio.run(main())
    assert items == [1]
    [context] = reported
    assert isinstance(context["exception"], ValueError)
    assert "no on_error" in context["message"]


def test_an_async_loop_disposed_before_its_end_tells_nothing() -> None:
    async def main() -> list[Any]:
        seen = Seen()

        async def make_reader(handle: Handle) -> AsyncIterator[list[int]]:
            yield [1]
            await asyncio.sleep(10)
            yield [2]

        disposable = AsyncLoop(make_reader, seen.observer, asyncio.get_running_loop()).start()
        for _ in range(5):
            await asyncio.sleep(0)
        disposable.dispose()
        for _ in range(5):
            await asyncio.sleep(0)
        return seen.events

    assert asyncio.run(main()) == [1]


@pytest.mark.parametrize("error", [None, ValueError("x")])
def test_end_after_dispose_is_silent(error: Exception | None) -> None:
    async def main() -> list[Any]:
        seen = Seen()

        async def make_reader(handle: Handle) -> AsyncIterator[list[int]]:
            yield [1]

        loop = AsyncLoop(make_reader, seen.observer, asyncio.get_running_loop())
        loop.dispose()
        loop.end(error)
        return seen.events

    assert asyncio.run(main()) == []


@pytest.mark.parametrize("says_it_waited", [False, True])
def test_an_async_loop_gives_the_loop_a_turn_per_batch_read_without_waiting(
    says_it_waited: bool,
) -> None:
    # A reader whose batches are all ready never suspends: the pump yields once
    # per batch, so another task runs between two batches. A reader that says it
    # waited (as a Redis follower does after its wake-up) let the others run
    # already: no extra turn.
    async def main() -> list[Any]:
        order: list[Any] = []

        async def make_reader(handle: Handle) -> AsyncIterator[list[str]]:
            for batch in (["a"], ["b"], ["c"]):
                handle.waited = says_it_waited
                yield batch

        async def other() -> None:
            for n in range(3):
                order.append(n)
                await asyncio.sleep(0)

        done = asyncio.get_running_loop().create_future()
        observer: Observer[Any] = Observer(
            order.append, lambda e: done.set_exception(e), lambda: done.set_result(None)
        )
        AsyncLoop(make_reader, observer, asyncio.get_running_loop()).start()
        task = asyncio.get_running_loop().create_task(other())
        await done
        await task
        return order

    order = asyncio.run(main())
    if says_it_waited:
        assert order[:3] == ["a", "b", "c"]  # one turn of the loop for the three batches
    else:
        assert order[:5] == ["a", 0, "b", 1, "c"]


@pytest.mark.parametrize("reader_waits", [False, True])
def test_an_async_loop_takes_no_turn_of_its_own_after_a_read_that_let_the_loop_run(
    reader_waits: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An HTTP read that waited for its socket let the loop's other callbacks run:
    # the pump needs no extra turn after it (that was a task step per token of
    # every stream). A read that found its batch ready gets one, as above.
    turns: list[float] = []
    sleep = asyncio.sleep

    async def counted(delay: float) -> None:
        turns.append(delay)
        await sleep(delay)

    async def main() -> list[Any]:
        loop = asyncio.get_running_loop()

        async def make_reader(handle: Handle) -> AsyncIterator[list[str]]:
            for batch in (["a"], ["b"], ["c"]):
                if reader_waits:  # as a socket read does: the loop turns meanwhile
                    ready = loop.create_future()
                    loop.call_soon(ready.set_result, None)
                    await ready
                yield batch

        seen = Seen()
        done = loop.create_future()
        observer: Observer[Any] = Observer(
            seen.events.append, done.set_exception, lambda: done.set_result(None)
        )
        monkeypatch.setattr(asyncio, "sleep", counted)
        AsyncLoop(make_reader, observer, loop).start()
        await done
        return seen.events

    assert asyncio.run(main()) == ["a", "b", "c"]
    assert turns == ([] if reader_waits else [0, 0, 0])


def test_turns_count_the_loops_turns_with_one_callback_for_every_task_that_marks() -> None:
    async def main() -> tuple[int, int, int, int]:
        loop = asyncio.get_running_loop()
        turns = turns_of(loop)
        assert turns_of(loop) is turns  # one per loop
        first = turns.mark()
        again = turns.mark()  # in the same turn: the same callback waits
        await asyncio.sleep(0)
        after = turns.count
        await asyncio.sleep(0)  # nobody marked: nothing counts (an idle loop stays idle)
        return first, again, after, turns.count

    first, again, after, idle = asyncio.run(main())
    assert first == again
    assert after == first + 1  # one callback for the two marks
    assert idle == after
