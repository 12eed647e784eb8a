"""split_by_delta_type(): one GroupedObservable per DeltaType."""

from __future__ import annotations

from typing import Any

import reactivex
from reactivex import GroupedObservable
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.models import Delta, DeltaType, Finish, TextDelta, ToolCallDelta, Usage
from tests.support.operators import chunk, on_completed, on_error, on_next, subscribe


def record_groups(
    scheduler: TestScheduler, source: Any, disposed: int = 1000
) -> tuple[
    list[tuple[int, DeltaType]], dict[DeltaType, list[tuple[int, Any]]], list[tuple[int, str]]
]:
    """Subscribe each group on arrival; return (arrivals, per-group events, outer end).

    At `disposed` the outer subscription and every group subscription are disposed.
    """
    arrivals: list[tuple[int, DeltaType]] = []
    events: dict[DeltaType, list[tuple[int, Any]]] = {}
    outer: list[tuple[int, str]] = []
    group_subscriptions: list[Any] = []

    def on_group(group: GroupedObservable[DeltaType, Delta]) -> None:
        key = group.key
        arrivals.append((scheduler.clock, key))
        log = events.setdefault(key, [])
        inner = group.subscribe(
            lambda d: log.append((scheduler.clock, d)),
            lambda e: log.append((scheduler.clock, e)),
            lambda: log.append((scheduler.clock, "|")),
        )
        group_subscriptions.append(inner)

    def create() -> Any:
        return source.pipe(rs.split_by_delta_type())

    subscription = None

    def action_subscribe(*_: Any) -> None:
        nonlocal subscription
        subscription = create().subscribe(
            on_group,
            lambda e: outer.append((scheduler.clock, repr(e))),
            lambda: outer.append((scheduler.clock, "|")),
        )

    def action_dispose(*_: Any) -> None:
        assert subscription is not None
        subscription.dispose()
        for inner in group_subscriptions:
            inner.dispose()

    scheduler.schedule_absolute(200, action_subscribe)
    scheduler.schedule_absolute(disposed, action_dispose)
    scheduler.start()
    return arrivals, events, outer


def test_groups_created_at_first_delta_of_each_type_and_completed_together() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("a")),
        on_next(220, ToolCallDelta(0, "{", "c", "f")),
        on_next(230, TextDelta("b")),
        on_next(240, Finish("tool_calls")),
        on_next(250, Usage(1, 2, 3)),
        on_completed(260),
    )
    arrivals, events, outer = record_groups(scheduler, source)
    assert arrivals == [
        (210, DeltaType.TEXT),
        (220, DeltaType.TOOL_CALL),
        (240, DeltaType.FINISH),
        (250, DeltaType.USAGE),
    ]
    assert events[DeltaType.TEXT] == [(210, TextDelta("a")), (230, TextDelta("b")), (260, "|")]
    assert events[DeltaType.TOOL_CALL] == [(220, ToolCallDelta(0, "{", "c", "f")), (260, "|")]
    assert events[DeltaType.FINISH] == [(240, Finish("tool_calls")), (260, "|")]
    assert events[DeltaType.USAGE] == [(250, Usage(1, 2, 3)), (260, "|")]
    assert outer == [(260, "|")]
    assert source.subscriptions == [subscribe(200, 260)]


def test_chunks_are_decoded_first() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, chunk({"reasoning_content": "r", "content": "t"}, "stop")),
        on_completed(220),
    )
    arrivals, events, _ = record_groups(scheduler, source)
    assert [key for _, key in arrivals] == [DeltaType.REASONING, DeltaType.TEXT, DeltaType.FINISH]
    assert events[DeltaType.TEXT] == [(210, TextDelta("t")), (220, "|")]


def test_an_error_reaches_every_group_and_the_outer_stream() -> None:
    scheduler = TestScheduler()
    boom = rs.ProviderError("overloaded")
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("a")),
        on_next(220, Finish("stop")),
        on_error(230, boom),
    )
    _, events, outer = record_groups(scheduler, source)
    assert events[DeltaType.TEXT] == [(210, TextDelta("a")), (230, boom)]
    assert events[DeltaType.FINISH] == [(220, Finish("stop")), (230, boom)]
    assert outer == [(230, repr(boom))]
    assert source.subscriptions == [subscribe(200, 230)]


def test_a_bad_item_errors_every_group_and_disposes_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("a")), on_next(220, "junk"), on_completed(300)
    )
    _, events, outer = record_groups(scheduler, source)
    [(time, error)] = events[DeltaType.TEXT][1:]
    assert time == 220
    assert isinstance(error, TypeError)
    assert outer[0][0] == 220
    assert source.subscriptions == [subscribe(200, 220)]


def test_disposing_outer_and_groups_ends_the_upstream_window() -> None:
    # As in every Rx group_by, a subscribed group keeps the source alive until it is disposed too.
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("a")), on_next(400, TextDelta("b")), on_completed(500)
    )
    _, events, outer = record_groups(scheduler, source, disposed=300)
    assert events[DeltaType.TEXT] == [(210, TextDelta("a"))]
    assert outer == []
    assert source.subscriptions == [subscribe(200, 300)]


def test_a_text_block_start_has_a_group_of_its_own_and_the_text_group_is_unchanged() -> None:
    # A consumer of the text sees the same pieces whether or not blocks are marked.
    marked: list[Delta] = [TextDelta("a"), rs.TextBlockStart(), TextDelta("b"), Finish("stop")]
    groups: dict[DeltaType, list[Any]] = {}

    def keep(group: GroupedObservable[DeltaType, Delta]) -> None:
        group.subscribe(groups.setdefault(group.key, []).append)

    reactivex.from_iterable(marked).pipe(rs.split_by_delta_type()).subscribe(keep)
    assert groups == {
        DeltaType.TEXT: [TextDelta("a"), TextDelta("b")],
        DeltaType.TEXT_BLOCK_START: [rs.TextBlockStart()],
        DeltaType.FINISH: [Finish("stop")],
    }
