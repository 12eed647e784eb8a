"""Reset under Rx: coalesce, split_by_delta_type, stop_on, accumulate_tool_calls, continue_from.

Virtual time (TestScheduler): subscribed at 200, one tick is one second.
"""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.testing import ReactiveTest, TestScheduler

import rxstream as rs
from rxstream.models import Finish, Message, Reset, TextDelta, ToolCall, ToolCallDelta
from tests.support.operators import marbles_testing

on_next, on_completed = ReactiveTest.on_next, ReactiveTest.on_completed
subscribe = ReactiveTest.subscribe

RESET = Reset(2, "cut")


def test_coalesce_drops_the_pending_run_at_a_reset() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("a")),
        on_next(212, TextDelta("b")),
        on_next(214, RESET),
        on_next(216, TextDelta("c")),
        on_completed(300),
    )
    results = scheduler.start(lambda: source.pipe(rs.coalesce(4, scheduler=scheduler)))
    assert results.messages == [
        on_next(214, RESET),
        on_next(220, TextDelta("c")),
        on_completed(300),
    ]
    assert source.subscriptions == [subscribe(200, 300)]


def test_coalesce_a_stale_window_does_not_fire_after_a_reset() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("a")), on_next(211, RESET), on_completed(300)
    )
    results = scheduler.start(lambda: source.pipe(rs.coalesce(4, scheduler=scheduler)))
    assert results.messages == [on_next(211, RESET), on_completed(300)]


def test_split_sends_a_reset_to_every_group() -> None:
    with marbles_testing() as (start, cold, _hot, _exp):
        values: dict[str, Any] = {"a": TextDelta("a"), "f": Finish("stop"), "r": RESET}
        groups: dict[str, list[Any]] = {}

        def keep(group: Any) -> None:
            group.subscribe(lambda d, k=str(group.key): groups.setdefault(k, []).append(d))

        observable = cold("-a-f-r-a-|", values).pipe(rs.split_by_delta_type(), ops.do_action(keep))
        start(observable)
    assert groups == {
        "text": [TextDelta("a"), RESET, TextDelta("a")],
        "finish": [Finish("stop"), RESET],
        "reset": [RESET],
    }


def test_stop_on_cancels_only_the_new_answers_choices() -> None:
    signal = rs.StopSignal()
    out: list[Any] = []
    items = [TextDelta("a", choice=1), RESET, TextDelta("b")]

    def on_next_item(item: Any) -> None:
        out.append(item)
        if item == TextDelta("b"):
            signal.stop()

    reactivex.from_iterable(items).pipe(rs.stop_on(signal)).subscribe(on_next_item)
    assert out == [*items, Finish("cancelled")]


def test_accumulate_tool_calls_passes_the_reset() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        values = {
            "a": ToolCallDelta(0, '{"x":', id="c1", name="f"),
            "r": RESET,
            "b": ToolCallDelta(0, "{}", id="c2", name="f"),
            "f": Finish("tool_calls"),
        }
        expected = {"r": RESET, "c": ToolCall(0, "c2", "f", "{}")}
        assert start(cold("-a-r-b-f-|", values).pipe(rs.accumulate_tool_calls())) == exp(
            "---r---c-|", expected
        )


def test_accumulate_message_after_a_reset() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        values = {"a": TextDelta("Hel"), "r": RESET, "b": TextDelta("Hello")}
        assert start(cold("-a-r-b-|", values).pipe(rs.accumulate_message())) == exp(
            "-------(m,|)", {"m": Message(content="Hello")}
        )


def test_continue_from_marbles() -> None:
    partial = Message(content="The cat sat")
    with marbles_testing() as (start, cold, _hot, exp):
        values = {"a": TextDelta(" sat on"), "b": TextDelta(" the mat"), "f": Finish("stop")}
        expected = {"A": TextDelta(" on"), "b": TextDelta(" the mat"), "f": Finish("stop")}
        assert start(cold("-a-b-f-|", values).pipe(rs.continue_from(partial))) == exp(
            "-A-b-f-|", expected
        )


def test_continue_from_holds_a_possible_repeat_until_it_is_decided() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("ca")), on_next(220, TextDelta("t!")), on_completed(230)
    )
    results = scheduler.start(lambda: source.pipe(rs.continue_from(Message(content="a cat"))))
    assert results.messages == [on_next(220, TextDelta("!")), on_completed(230)]
    assert source.subscriptions == [subscribe(200, 230)]


def test_continue_from_after_a_cut_call_resets_first() -> None:
    partial = Message(content="Hi", tool_calls=(ToolCall(0, "a", "f", '{"x'),))
    out: list[Any] = []
    reactivex.of(TextDelta("Hi there")).pipe(
        rs.continue_from(partial, attempt=3, reason="cut")
    ).subscribe(out.append)
    assert out == [Reset(3, "cut"), TextDelta("Hi"), TextDelta(" there")]


def test_continue_from_checks_its_arguments_at_once() -> None:
    with pytest.raises(TypeError, match=r"rs\.Message"):
        rs.continue_from("Hi")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="window"):
        rs.continue_from(Message(), window=0)
