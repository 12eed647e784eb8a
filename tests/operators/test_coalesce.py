"""`coalesce`: runs of text/reasoning deltas merged per window; everything else flushes first.

Virtual time (TestScheduler): subscribed at 200, disposed at 1000, one tick is one second.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import abc
from reactivex.testing import ReactiveTest, TestScheduler

import rxstream as rs
from rxstream.models import (
    Finish,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)

on_next, on_completed, on_error = (
    ReactiveTest.on_next,
    ReactiveTest.on_completed,
    ReactiveTest.on_error,
)
subscribe = ReactiveTest.subscribe

T, R = TextDelta, ReasoningDelta
TOOL = ToolCallDelta(0, '{"a":', id="call_1", name="f")
BOOM = RuntimeError("boom")

CASES = [
    pytest.param(
        10,
        [on_next(210, T("a")), on_next(213, T("b")), on_next(218, T("c")), on_completed(300)],
        [on_next(220, T("abc")), on_completed(300)],
        subscribe(200, 300),
        id="one-window",
    ),
    pytest.param(
        10,
        [on_next(210, T("a")), on_next(225, T("b")), on_next(229, T("c")), on_completed(300)],
        [on_next(220, T("a")), on_next(235, T("bc")), on_completed(300)],
        subscribe(200, 300),
        id="window-opens-at-first-delta-of-a-run",
    ),
    pytest.param(
        10,
        [on_next(210, T("a")), on_next(212, T("b")), on_next(214, TOOL), on_completed(300)],
        [on_next(214, T("ab")), on_next(214, TOOL), on_completed(300)],
        subscribe(200, 300),
        id="tool-call-flushes-text-first",
    ),
    pytest.param(
        10,
        [
            on_next(210, R("think")),
            on_next(211, R("ing")),
            on_next(212, T("Hi")),
            on_completed(300),
        ],
        [on_next(212, R("thinking")), on_next(222, T("Hi")), on_completed(300)],
        subscribe(200, 300),
        id="reasoning-then-text",
    ),
    pytest.param(
        10,
        [
            on_next(210, T("a")),
            on_next(211, T("b", choice=1)),
            on_next(212, T("c")),
            on_completed(300),
        ],
        [
            on_next(211, T("a")),
            on_next(212, T("b", choice=1)),
            on_next(222, T("c")),
            on_completed(300),
        ],
        subscribe(200, 300),
        id="another-choice-flushes",
    ),
    pytest.param(
        10,
        [on_next(210, T("a")), on_next(211, T("b")), on_completed(215)],
        [on_next(215, T("ab")), on_completed(215)],
        subscribe(200, 215),
        id="completion-flushes",
    ),
    pytest.param(
        10,
        [on_next(210, T("a")), on_next(211, T("b")), on_error(215, BOOM)],
        [on_next(215, T("ab")), on_error(215, BOOM)],
        subscribe(200, 215),
        id="error-flushes",
    ),
    pytest.param(
        10,
        [
            on_next(210, T("a")),
            on_next(211, Finish("stop")),
            on_next(212, Usage(1, 2, 3)),
            on_next(213, RefusalDelta("no")),
            on_completed(300),
        ],
        [
            on_next(211, T("a")),
            on_next(211, Finish("stop")),
            on_next(212, Usage(1, 2, 3)),
            on_next(213, RefusalDelta("no")),
            on_completed(300),
        ],
        subscribe(200, 300),
        id="other-deltas-pass-at-once",
    ),
    pytest.param(
        10,
        [on_next(210, T("a")), on_next(211, "not a delta"), on_next(212, T("")), on_completed(300)],
        [on_next(211, T("a")), on_next(211, "not a delta"), on_next(222, T("")), on_completed(300)],
        subscribe(200, 300),
        id="non-deltas-pass-after-a-flush",
    ),
    pytest.param(
        timedelta(seconds=10),
        [on_next(210, T("a")), on_next(212, T("b"))],
        [on_next(220, T("ab"))],
        subscribe(200, 1000),
        id="timedelta-interval",
    ),
    pytest.param(
        10,
        [on_next(995, T("a")), on_next(996, T("b"))],
        [],
        subscribe(200, 1000),
        id="dispose-drops-the-pending-run",
    ),
]


@pytest.mark.parametrize(("interval", "upstream", "expected", "window"), CASES)
def test_coalesce(interval: Any, upstream: list[Any], expected: list[Any], window: Any) -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(upstream)
    results = scheduler.start(lambda: source.pipe(rs.coalesce(interval)))
    assert expected == results.messages
    assert source.subscriptions == [window]


def test_a_single_delta_run_is_the_same_object() -> None:
    scheduler = TestScheduler()
    delta = T("only")
    source = scheduler.create_hot_observable(on_next(210, delta), on_completed(220))
    results = scheduler.start(lambda: source.pipe(rs.coalesce(5)))
    assert results.messages[0].value.value is delta


def test_default_scheduler_flushes_on_a_timer_thread() -> None:
    """With no scheduler anywhere, a window still closes (on reactivex's TimeoutScheduler)."""
    got: list[Any] = []
    arrived = threading.Event()

    def on_next_(item: Any) -> None:
        got.append(item)
        arrived.set()

    reactivex.concat(reactivex.of(T("a"), T("b")), reactivex.never()).pipe(
        rs.coalesce(0.01)
    ).subscribe(on_next_)
    assert arrived.wait(10), "the window never closed"
    assert got == [T("ab")]


@pytest.mark.parametrize(
    ("interval", "error"),
    [
        pytest.param(0, ValueError, id="zero"),
        pytest.param(-0.5, ValueError, id="negative"),
        pytest.param(float("inf"), ValueError, id="infinite"),
        pytest.param("1", TypeError, id="string"),
        pytest.param(None, TypeError, id="none"),
    ],
)
def test_rejects_bad_intervals(interval: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="interval"):
        rs.coalesce(interval)


# -- property: lossless and order-preserving, for any deltas at any times -----------------

KINDS = st.sampled_from(["text", "reasoning", "tool", "finish", "other"])
EVENT = st.tuples(KINDS, st.integers(0, 2), st.text(max_size=3), st.integers(0, 6))


def make(kind: str, choice: int, text: str) -> Any:
    match kind:
        case "text":
            return TextDelta(text, choice=choice)
        case "reasoning":
            return ReasoningDelta(text, choice=choice)
        case "tool":
            return ToolCallDelta(0, text, choice=choice)
        case "finish":
            return Finish("stop", choice=choice)
    return f"item {text!r}"


def runs(items: list[Any]) -> list[Any]:
    """Merge every maximal run of same-kind, same-choice text/reasoning deltas."""
    out: list[Any] = []
    for item in items:
        if (
            isinstance(item, TextDelta | ReasoningDelta)
            and out
            and type(out[-1]) is type(item)
            and out[-1].choice == item.choice
        ):
            out[-1] = type(item)(out[-1].text + item.text, choice=item.choice)
        else:
            out.append(item)
    return out


@settings(max_examples=200, deadline=None)
@given(events=st.lists(EVENT, max_size=25), interval=st.integers(1, 8), end=st.sampled_from("|#"))
def test_lossless_and_in_order(
    events: list[tuple[str, int, str, int]], interval: int, end: str
) -> None:
    scheduler = TestScheduler()
    time, messages, items = 201, [], []
    for kind, choice, text, gap in events:
        time += gap
        item = make(kind, choice, text)
        items.append(item)
        messages.append(on_next(time, item))
    messages.append(on_completed(time + 1) if end == "|" else on_error(time + 1, BOOM))
    source = scheduler.create_hot_observable(messages)

    results = scheduler.start(lambda: source.pipe(rs.coalesce(interval)))

    out = [m.value.value for m in results.messages if m.value.kind == "N"]
    assert runs(out) == runs(items)
    assert [m.value.kind for m in results.messages[len(out) :]] == ["C" if end == "|" else "E"]
    times = [m.time for m in results.messages]
    assert times == sorted(times)
    # Nothing is held past the end of the stream.
    assert all(m.time <= time + 1 for m in results.messages)
    assert source.subscriptions == [subscribe(200, time + 1)]


# ------------------------------------------------------------------------ the subscription object


class Recorder(abc.ObserverBase[Any]):
    """An observer that keeps what it was told."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.done: list[str] = []

    def on_next(self, item: Any) -> None:
        self.items.append(item)

    def on_error(self, error: Exception) -> None:
        self.done.append(f"error: {error}")

    def on_completed(self) -> None:
        self.done.append("completed")


def test_window_a_timer_of_a_run_already_sent_is_stale() -> None:
    from rxstream.operators.coalesce import CoalesceWindow

    seen = Recorder()
    window: CoalesceWindow[Any] = CoalesceWindow(seen, TestScheduler(), 1.0)
    window.on_next(TextDelta("a"))
    opened = window.generation
    window.on_next(ReasoningDelta("r"))  # another kind: the text run goes out
    assert seen.items == [TextDelta("a")]
    window.close_window(opened)  # the text run's timer, late: the reasoning run stays
    assert seen.items == [TextDelta("a")]
    window.close_window(window.generation)
    assert seen.items == [TextDelta("a"), ReasoningDelta("r")]


def test_window_the_end_flushes_and_a_timer_after_it_does_nothing() -> None:
    from rxstream.operators.coalesce import CoalesceWindow

    seen = Recorder()
    window: CoalesceWindow[Any] = CoalesceWindow(seen, TestScheduler(), 1.0)
    window.on_next(TextDelta("a"))
    window.on_next(TextDelta("b"))
    opened = window.generation
    window.on_error(ValueError("boom"))
    window.close_window(opened)
    assert seen.items == [TextDelta("ab")]
    assert seen.done == ["error: boom"]


def test_window_dispose_drops_the_pending_run() -> None:
    from rxstream.operators.coalesce import CoalesceWindow

    seen = Recorder()
    window: CoalesceWindow[Any] = CoalesceWindow(seen, TestScheduler(), 1.0)
    window.on_next(TextDelta("a"))
    window.dispose()
    window.close_window(window.generation)
    window.on_completed()
    assert seen.items == []
    assert seen.done == []
