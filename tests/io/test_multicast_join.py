"""`rs.multicast` hubs that observers join while the stream runs (a server's clients over time).

A late observer gets the items from the moment it joins; one that joins after the end gets
that end at once (the completion, or the very error); a join racing with the end on another
thread gets exactly one end. Virtual time makes "the moment it joins" exact.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import reactivex
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.subject import Subject
from reactivex.testing import ReactiveTest, TestScheduler
from reactivex.testing.subscription import Subscription

import rxstream as rs
from tests.support.sources import TIMEOUT, Outcome

on_next, on_completed, on_error = (
    ReactiveTest.on_next,
    ReactiveTest.on_completed,
    ReactiveTest.on_error,
)


def test_a_late_observer_gets_the_items_from_the_moment_it_joins() -> None:
    clock = TestScheduler()
    source = clock.create_cold_observable(
        on_next(10, "a"), on_next(20, "b"), on_next(30, "c"), on_completed(40)
    )
    hub = rs.multicast(source)
    first, late, piped = clock.create_observer(), clock.create_observer(), clock.create_observer()
    hub.subscribe(first)
    hub.connect()
    clock.schedule_absolute(15, lambda *_: hub.subscribe(late))
    clock.schedule_absolute(25, lambda *_: hub.observe().subscribe(piped))
    clock.start()
    assert first.messages == [
        on_next(10, "a"),
        on_next(20, "b"),
        on_next(30, "c"),
        on_completed(40),
    ]
    assert late.messages == [on_next(20, "b"), on_next(30, "c"), on_completed(40)]
    assert piped.messages == [on_next(30, "c"), on_completed(40)]
    assert source.subscriptions == [Subscription(0, 40)]  # still one subscription


def test_a_late_observer_keeps_the_stream_open_when_the_first_leaves() -> None:
    clock = TestScheduler()
    source = clock.create_cold_observable(on_next(10, "a"), on_next(30, "c"), on_completed(40))
    hub = rs.multicast(source)
    first, late = clock.create_observer(), clock.create_observer()
    subscription = hub.subscribe(first)
    hub.connect()
    clock.schedule_absolute(15, lambda *_: hub.subscribe(late))
    clock.schedule_absolute(20, lambda *_: subscription.dispose())
    clock.start()
    assert late.messages == [on_next(30, "c"), on_completed(40)]
    assert source.subscriptions == [Subscription(0, 40)]


def test_joining_after_an_error_gets_the_very_error_at_once() -> None:
    failure = rs.TruncatedStreamError("cut")
    hub = rs.multicast(reactivex.concat(reactivex.of(1), reactivex.throw(failure)))
    hub.subscribe(lambda _: None, lambda _: None)
    hub.connect()
    late = Outcome()
    hub.subscribe(late.on_next, late.on_error, late.on_completed)
    assert late.items == []
    assert late.error is failure
    assert not late.completed


def test_joining_after_the_end_with_a_scheduler_gets_the_end_there(
    pool: Callable[[], ThreadPoolScheduler],
) -> None:
    hub = rs.multicast(reactivex.of(1, 2))
    hub.subscribe(lambda _: None)
    hub.connect()
    late = Outcome()
    hub.subscribe(late.on_next, late.on_error, late.on_completed, scheduler=pool())
    assert late.ended.wait(TIMEOUT)
    assert (late.items, late.completed) == ([], True)


def test_joining_after_a_stop_gets_the_completion() -> None:
    subject: Subject[rs.Delta] = Subject()
    hub = rs.multicast(subject)
    first = Outcome()
    hub.subscribe(first.on_next, first.on_error, first.on_completed)
    hub.connect()
    subject.on_next(rs.TextDelta("Hi"))
    hub.stop()
    late = Outcome()
    hub.subscribe(late.on_next, late.on_error, late.on_completed)
    assert first.items == [rs.TextDelta("Hi"), rs.Finish("cancelled")]
    assert (late.items, late.completed) == ([], True)


def race_a_join_with_the_end(ending: str, failure: Exception) -> list[object]:
    """Join a hub on one thread while its stream ends on another; what the joiner got."""
    subject: Subject[int] = Subject()
    hub = rs.multicast(subject)
    hub.subscribe(lambda _: None, lambda _: None)
    hub.connect()
    ends: list[object] = []
    lock = threading.Lock()
    start = threading.Barrier(2)

    def record(what: object) -> None:
        with lock:
            ends.append(what)

    def join() -> None:
        start.wait()
        hub.subscribe(lambda item: record(("item", item)), record, lambda: record("completed"))

    def end() -> None:
        start.wait()
        if ending == "completed":
            subject.on_completed()
        else:
            subject.on_error(failure)

    threads = [threading.Thread(target=join), threading.Thread(target=end)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT)
    return ends


@pytest.mark.parametrize("ending", ["completed", "error"])
def test_a_join_racing_with_the_end_on_another_thread_gets_exactly_one_end(ending: str) -> None:
    failure = rs.ProviderError("gone")
    for _ in range(200):
        ends = race_a_join_with_the_end(ending, failure)
        assert ends == (["completed"] if ending == "completed" else [failure])


def test_a_late_observer_on_its_own_thread_joins_a_stream_running_on_another(
    pool: Callable[[], ThreadPoolScheduler],
) -> None:
    subject: Subject[int] = Subject()
    hub = rs.multicast(subject)
    hub.subscribe(lambda _: None)
    hub.connect()
    subject.on_next(1)
    late = Outcome()
    hub.subscribe(late.on_next, late.on_error, late.on_completed, scheduler=pool(), maxsize=4)
    for n in range(2, 10):
        subject.on_next(n)
    subject.on_completed()
    assert late.ended.wait(TIMEOUT)
    assert late.items == list(range(2, 10))
    assert late.completed
