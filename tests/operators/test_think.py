"""think_tags(): ThinkTagSplitter under Rx."""

from __future__ import annotations

from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.models import Finish, ReasoningDelta, TextDelta
from tests.support.operators import (
    chunk,
    error_of,
    marbles_testing,
    on_completed,
    on_error,
    on_next,
    subscribe,
)


def test_marbles_split_tags() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        values = {"a": TextDelta("<think>hm"), "b": TextDelta("</th"), "c": TextDelta("ink>Hi")}
        assert start(cold("-a-b-c-|", values).pipe(rs.think_tags())) == exp(
            "-r---t-|", {"r": ReasoningDelta("hm"), "t": TextDelta("Hi")}
        )


def test_held_prefix_flushed_at_completion_and_window() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, chunk({"content": "<think>a</think>b <th"})),
        on_completed(220),
    )
    results = scheduler.start(lambda: source.pipe(rs.think_tags()))
    assert results.messages == [
        on_next(210, ReasoningDelta("a")),
        on_next(210, TextDelta("b ")),
        on_next(220, TextDelta("<th")),
        on_completed(220),
    ]
    assert source.subscriptions == [subscribe(200, 220)]


def test_held_prefix_released_before_finish() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("x<")), on_next(220, Finish("stop")), on_completed(230)
    )
    results = scheduler.start(lambda: source.pipe(rs.think_tags()))
    assert results.messages == [
        on_next(210, TextDelta("x")),
        on_next(220, TextDelta("<")),
        on_next(220, Finish("stop")),
        on_completed(230),
    ]


def test_upstream_error_passes_through() -> None:
    scheduler = TestScheduler()
    boom = rs.StreamTimeoutError("idle", 1.0)
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("<think>a")), on_error(220, boom)
    )
    results = scheduler.start(lambda: source.pipe(rs.think_tags()))
    assert results.messages[0] == on_next(210, ReasoningDelta("a"))
    assert error_of(results.messages[1]) is boom
    assert source.subscriptions == [subscribe(200, 220)]


def test_dispose_ends_the_upstream_window() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, TextDelta("a")), on_completed(500))
    results = scheduler.start(lambda: source.pipe(rs.think_tags()), disposed=300)
    assert results.messages == [on_next(210, TextDelta("a"))]
    assert source.subscriptions == [subscribe(200, 300)]
