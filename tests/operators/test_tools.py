"""accumulate_tool_calls(): ToolCallAccumulator under Rx."""

from __future__ import annotations

from reactivex.testing import TestScheduler
from reactivex.testing.marbles import marbles_testing

import rxstream as rs
from rxstream.models import Finish, ToolCall, ToolCallDelta

from ._helpers import chunk, error_of, on_completed, on_error, on_next, subscribe


def test_marbles_call_emitted_at_finish() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        values = {
            "a": ToolCallDelta(0, '{"q"', "c1", "f"),
            "b": ToolCallDelta(0, ":1}"),
            "f": Finish("tool_calls"),
        }
        assert start(cold("-a-b-f-|", values).pipe(rs.accumulate_tool_calls())) == exp(
            "-----c-|", {"c": ToolCall(0, "c1", "f", '{"q":1}')}
        )


def test_marbles_unfinished_call_emitted_at_completion() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        values = {"a": ToolCallDelta(0, "{", "c1", "f"), "b": ToolCallDelta(0, "}")}
        assert start(cold("-a-b-|", values).pipe(rs.accumulate_tool_calls())) == exp(
            "-----(c,|)", {"c": ToolCall(0, "c1", "f", "{}")}
        )


def test_chunks_in_partial_snapshots_and_window() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(
            210,
            chunk(
                {
                    "tool_calls": [
                        {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a": "x'}}
                    ]
                }
            ),
        ),
        on_next(
            220,
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'y"}'}}]}, "tool_calls"),
        ),
        on_completed(230),
    )
    results = scheduler.start(lambda: source.pipe(rs.accumulate_tool_calls(partial=True)))
    assert results.messages == [
        on_next(210, ToolCall(0, "c1", "f", '{"a": "x', complete=False)),
        on_next(220, ToolCall(0, "c1", "f", '{"a": "xy"}', complete=False)),
        on_next(220, ToolCall(0, "c1", "f", '{"a": "xy"}')),
        on_completed(230),
    ]
    # `partial` takes no part in equality: check it on its own.
    assert [m.value.value.partial for m in results.messages[:2]] == [{"a": "x"}, {"a": "xy"}]
    assert source.subscriptions == [subscribe(200, 230)]


def test_upstream_error_drops_unfinished_calls() -> None:
    scheduler = TestScheduler()
    boom = rs.TruncatedStreamError("cut")
    source = scheduler.create_hot_observable(
        on_next(210, ToolCallDelta(0, "{", "c", "f")), on_error(220, boom)
    )
    results = scheduler.start(lambda: source.pipe(rs.accumulate_tool_calls()))
    assert len(results.messages) == 1
    assert error_of(results.messages[0]) is boom
    assert source.subscriptions == [subscribe(200, 220)]


def test_bad_item_errors_and_disposes_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, 3), on_completed(300))
    results = scheduler.start(lambda: source.pipe(rs.accumulate_tool_calls()))
    assert isinstance(error_of(results.messages[0]), TypeError)
    assert source.subscriptions == [subscribe(200, 210)]


def test_dispose_ends_the_upstream_window() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, ToolCallDelta(0, "{}", "c", "f")), on_completed(500)
    )
    results = scheduler.start(lambda: source.pipe(rs.accumulate_tool_calls()), disposed=300)
    assert results.messages == []
    assert source.subscriptions == [subscribe(200, 300)]
