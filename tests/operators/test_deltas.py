"""deltas(): DeltaDecoder under Rx."""

from __future__ import annotations

from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.models import Finish, ReasoningDelta, TextDelta, ToolCallDelta, Usage
from tests.support.operators import (
    chunk,
    error_of,
    marbles_testing,
    on_completed,
    on_error,
    on_next,
    subscribe,
)

USAGE = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}


def test_marbles_one_chunk_gives_its_deltas_in_wire_order() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        values = {
            "a": chunk({"reasoning_content": "r", "content": "t"}),
            "b": chunk(
                {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]},
                "tool_calls",
                usage=USAGE,
            ),
        }
        out = {
            "r": ReasoningDelta("r"),
            "t": TextDelta("t"),
            "u": ToolCallDelta(0, "", "c", "f"),
            "f": Finish("tool_calls"),
            "s": Usage(1, 2, 3),
        }
        assert start(cold("-a------(b,|)", values).pipe(rs.deltas())) == exp(
            "-(r,t)--(u,f,s,|)", out
        )


def test_values_completion_and_upstream_window() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, chunk({"role": "assistant", "content": ""})),
        on_next(220, chunk({"content": "Hi"})),
        on_next(230, chunk({}, "stop")),
        on_next(240, chunk({}, "stop")),
        on_completed(250),
    )
    results = scheduler.start(lambda: source.pipe(rs.deltas()))
    assert results.messages == [
        on_next(220, TextDelta("Hi")),
        on_next(230, Finish("stop")),
        on_completed(250),
    ]
    assert source.subscriptions == [subscribe(200, 250)]


def test_upstream_error_passes_through() -> None:
    scheduler = TestScheduler()
    boom = rs.ProviderError("overloaded")
    source = scheduler.create_hot_observable(
        on_next(210, chunk({"content": "a"})), on_error(220, boom)
    )
    results = scheduler.start(lambda: source.pipe(rs.deltas()))
    assert results.messages[0] == on_next(210, TextDelta("a"))
    assert error_of(results.messages[1]) is boom
    assert source.subscriptions == [subscribe(200, 220)]


def test_bad_item_errors_and_disposes_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, "not a chunk"), on_next(220, chunk({"content": "a"})), on_completed(300)
    )
    results = scheduler.start(lambda: source.pipe(rs.deltas()))
    assert len(results.messages) == 1
    assert results.messages[0].time == 210
    assert isinstance(error_of(results.messages[0]), TypeError)
    assert source.subscriptions == [subscribe(200, 210)]


def test_dispose_ends_the_upstream_window() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, chunk({"content": "a"})),
        on_next(400, chunk({"content": "b"})),
        on_completed(500),
    )
    results = scheduler.start(lambda: source.pipe(rs.deltas()), disposed=300)
    assert results.messages == [on_next(210, TextDelta("a"))]
    assert source.subscriptions == [subscribe(200, 300)]


def test_each_subscription_has_its_own_decoder() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(on_next(10, chunk({}, "stop")), on_completed(20))
    piped = source.pipe(rs.deltas())
    first: list[object] = []
    second: list[object] = []
    piped.subscribe(first.append, scheduler=scheduler)
    piped.subscribe(second.append, scheduler=scheduler)
    scheduler.start()
    # A shared decoder would drop the second Finish as a repeat.
    assert first == second == [Finish("stop")]
