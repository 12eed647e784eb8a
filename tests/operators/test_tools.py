"""accumulate_tool_calls(): ToolCallAccumulator under Rx."""

from __future__ import annotations

import sys

import pytest
import reactivex
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.core import tools as tools_module
from rxstream.models import ToolCall, ToolCallDelta
from rxstream.testing.marbles import DONE, StreamMarbles, finish, tool
from tests.support.operators import chunk, error_of, on_completed, on_error, on_next, subscribe


def test_marbles_call_emitted_at_finish() -> None:
    m = StreamMarbles()
    values = {
        "a": tool(0, '{"q"', id="c1", name="f"),
        "b": tool(0, ":1}"),
        "f": finish("tool_calls"),
    }
    source = m.lines("-a-b-f-D", {**values, "D": DONE})
    pipeline = (rs.sse_frames(), rs.decode_chunks(), rs.accumulate_tool_calls())
    assert m.start(source.pipe(*pipeline)) == m.expected(
        "-----c-|", {"c": ToolCall(0, "c1", "f", '{"q":1}')}
    )
    assert source.subscriptions == [m.subscription("^------!")]


def test_marbles_unfinished_call_emitted_at_completion() -> None:
    m = StreamMarbles()
    source = m.deltas("-a-b-|", {"a": tool(0, "{", id="c1", name="f"), "b": tool(0, "}")})
    assert m.start(source.pipe(rs.accumulate_tool_calls())) == m.expected(
        "-----(c,|)", {"c": ToolCall(0, "c1", "f", "{}")}
    )
    assert source.subscriptions == [m.subscription("^----!")]


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


def test_partial_needs_no_jiter(monkeypatch: pytest.MonkeyPatch) -> None:
    # The snapshots come from rxstream's own incremental reader: jiter stays optional.
    monkeypatch.setitem(sys.modules, "jiter", None)
    monkeypatch.setattr(tools_module, "_jiter_from_json", None)
    source = reactivex.of(ToolCallDelta(0, '{"a": [1, 2', "c", "f"), ToolCallDelta(0, "]}"))
    calls: list[ToolCall | rs.Reset] = []
    source.pipe(rs.accumulate_tool_calls(partial=True)).subscribe(calls.append)
    assert [c.partial for c in calls if isinstance(c, ToolCall) and not c.complete] == [
        {"a": [1]},
        {"a": [1, 2]},
    ]
