"""`stop_on` and `StopSignal`: a stop disposes the upstream at that moment, finishes the open
choices as `"cancelled"`, and completes; what arrived reaches the accumulators.

Virtual time (TestScheduler): subscribed at 200, disposed at 1000.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex import operators as ops
from reactivex.testing import ReactiveTest, TestScheduler

import rxstream as rs
from rxstream.errors import ToolArgumentsError
from rxstream.models import (
    Delta,
    Finish,
    Message,
    Metadata,
    ReasoningDelta,
    TextDelta,
    TokenCount,
    ToolCallDelta,
    Usage,
)
from tests.support.operators import on_error
from tests.support.scripted_streams import AVAILABLE, deltas_of

on_next, on_completed = ReactiveTest.on_next, ReactiveTest.on_completed
subscribe = ReactiveTest.subscribe

A, B, C = TextDelta("Hel"), TextDelta("lo"), TextDelta(" world")
CANCELLED = Finish("cancelled")

CASES = [
    pytest.param(
        [on_next(210, A), on_next(220, B), on_next(240, C), on_completed(250)],
        [on_next(230, "s")],
        [on_next(210, A), on_next(220, B), on_next(230, CANCELLED), on_completed(230)],
        subscribe(200, 230),
        id="stop-mid-stream-finishes-the-choice",
    ),
    pytest.param(
        [on_next(210, A), on_next(220, Finish("stop")), on_next(240, Usage(1, 2, 3))],
        [on_next(230, "s")],
        [on_next(210, A), on_next(220, Finish("stop")), on_completed(230)],
        subscribe(200, 230),
        id="a-finished-choice-gets-no-second-finish",
    ),
    pytest.param(
        [on_next(210, A), on_completed(220)],
        [on_next(230, "s")],
        [on_next(210, A), on_completed(220)],
        subscribe(200, 220),
        id="stop-after-the-end-does-nothing",
    ),
    pytest.param(
        [on_next(240, A), on_completed(250)],
        [on_next(230, "s")],
        [on_completed(230)],
        subscribe(200, 230),
        id="stop-before-any-item-completes-with-nothing",
    ),
    pytest.param(
        [on_next(210, Usage(1, 0, 1)), on_completed(250)],
        [on_next(230, "s")],
        [on_next(210, Usage(1, 0, 1)), on_completed(230)],
        subscribe(200, 230),
        id="usage-alone-begins-no-choice",
    ),
    pytest.param(
        [
            on_next(210, TextDelta("a", choice=1)),
            on_next(211, Metadata({"id": "x"})),
            on_next(212, TextDelta("b", choice=2)),
            on_next(213, Finish("stop", choice=2)),
            on_completed(250),
        ],
        [on_next(230, "s")],
        [
            on_next(210, TextDelta("a", choice=1)),
            on_next(211, Metadata({"id": "x"})),
            on_next(212, TextDelta("b", choice=2)),
            on_next(213, Finish("stop", choice=2)),
            on_next(230, Finish("cancelled", choice=0)),
            on_next(230, Finish("cancelled", choice=1)),
            on_completed(230),
        ],
        subscribe(200, 230),
        id="every-open-choice-in-choice-order",
    ),
    pytest.param(
        [on_next(210, "line one"), on_next(240, "line two"), on_completed(250)],
        [on_next(230, "s")],
        [on_next(210, "line one"), on_completed(230)],
        subscribe(200, 230),
        id="items-that-are-not-deltas-just-complete",
    ),
    pytest.param(
        [on_next(210, A), on_completed(250)],
        [on_completed(220)],
        [on_next(210, A), on_completed(250)],
        subscribe(200, 250),
        id="a-signal-that-completes-without-an-item-never-stops",
    ),
    pytest.param(
        [on_next(210, A), on_completed(250)],
        [on_error(230, "signal broke")],
        [on_next(210, A), on_error(230, "signal broke")],
        subscribe(200, 230),
        id="a-failing-signal-fails-the-stream",
    ),
    pytest.param(
        [on_next(210, A), on_error(220, "cut")],
        [on_next(230, "s")],
        [on_next(210, A), on_error(220, "cut")],
        subscribe(200, 220),
        id="an-upstream-error-passes-unchanged",
    ),
]


@pytest.mark.parametrize(("source", "signal", "expected", "window"), CASES)
def test_stop_on(source: list[Any], signal: list[Any], expected: list[Any], window: Any) -> None:
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(source)
    stop = scheduler.create_hot_observable(signal)
    results = scheduler.start(lambda: xs.pipe(rs.stop_on(stop)))
    assert results.messages == expected
    # The upstream subscription window ends at the stop: that is the connection closing.
    assert xs.subscriptions == [window]


def test_the_signal_is_watched_only_while_the_stream_runs() -> None:
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(on_next(210, A), on_completed(220))
    stop = scheduler.create_hot_observable(on_next(300, "s"))
    scheduler.start(lambda: xs.pipe(rs.stop_on(stop)))
    assert stop.subscriptions == [subscribe(200, 220)]


def test_a_signal_already_stopped_makes_no_subscription_upstream() -> None:
    button = rs.StopSignal()
    button.stop()
    subscribed: list[int] = []

    def source(observer: Any, scheduler: Any = None) -> Any:
        subscribed.append(1)
        return reactivex.of(A).subscribe(observer)

    out: list[Any] = []
    done = threading.Event()
    Observable(source).pipe(rs.stop_on(button)).subscribe(out.append, on_completed=done.set)
    assert (out, done.is_set(), subscribed) == ([], True, [])


def test_a_stop_from_on_next_is_delivered_after_that_call_in_order() -> None:
    button = rs.StopSignal()
    calls: list[str] = []
    upstream_disposed: list[int] = []

    def on_next(item: Any) -> None:
        calls.append(f"begin {item}")
        if item == B:
            button.stop()
            # Disposed at once, inside this very call, before anything else is delivered.
            calls.append(f"upstream disposed: {bool(upstream_disposed)}")
        calls.append(f"end {item}")

    # A source that reads one item per step of the trampoline, like rxstream's own.
    source = reactivex.from_iterable((A, B, C)).pipe(
        ops.finally_action(lambda: upstream_disposed.append(1))
    )
    source.pipe(rs.stop_on(button)).subscribe(
        on_next, on_completed=lambda: calls.append("completed")
    )
    assert calls == [
        f"begin {A}",
        f"end {A}",
        f"begin {B}",
        "upstream disposed: True",
        f"end {B}",
        f"begin {CANCELLED}",
        f"end {CANCELLED}",
        "completed",
    ]


def test_stop_after_n_tokens_keeps_the_partial_message_and_the_final_count() -> None:
    """The common case: an observer stops after a few items; accumulators give what arrived."""
    button = rs.StopSignal()
    items: list[Delta] = [
        ReasoningDelta("think"),
        TextDelta("Hel"),
        ToolCallDelta(0, '{"city": "Pa', id="c1", name="weather"),
        TextDelta("never seen"),
    ]
    seen: list[Any] = []

    def watch(item: Any) -> None:
        seen.append(item)
        if len(seen) == 3:
            button.stop()

    shared = reactivex.from_iterable(items).pipe(rs.stop_on(button), ops.publish())
    messages: list[Message] = []
    counts: list[TokenCount] = []
    shared.pipe(rs.accumulate_message()).subscribe(messages.append)
    shared.pipe(rs.count_tokens(encoding=str.split)).subscribe(counts.append)
    shared.subscribe(watch)  # last: it stops once the others have the third item
    shared.connect()

    assert seen == [*items[:3], CANCELLED]
    [message] = messages
    assert message.finish_reason == "cancelled"
    assert message.finish_raw is None
    assert (message.reasoning, message.content) == ("think", "Hel")
    # The cut tool call is kept, honestly incomplete: its arguments do not parse.
    [call] = message.tool_calls
    assert (call.id, call.name, call.arguments) == ("c1", "weather", '{"city": "Pa')
    assert not call.complete
    with pytest.raises(ToolArgumentsError):
        call.parse_arguments()
    assert counts[-1].final
    assert (counts[-1].text, counts[-1].reasoning) == (1, 1)


def threaded_source(gate: threading.Event, disposed: threading.Event) -> Observable[Any]:
    """A on a thread of its own, then (once `gate` opens) B, unless disposed meanwhile."""

    def subscribe(observer: Any, scheduler: Any = None) -> Any:
        def run() -> None:
            observer.on_next(A)
            gate.wait(5)
            if not disposed.is_set():
                observer.on_next(B)
                observer.on_completed()

        threading.Thread(target=run, daemon=True).start()
        return reactivex.disposable.Disposable(disposed.set)

    return Observable(subscribe)


def test_stop_from_another_thread_while_the_source_waits() -> None:
    gate, disposed, done = threading.Event(), threading.Event(), threading.Event()
    button = rs.StopSignal()
    out: list[Any] = []
    threads: set[str] = set()

    def on_next(item: Any) -> None:
        out.append(item)
        threads.add(threading.current_thread().name)

    got_a = threading.Event()
    threaded_source(gate, disposed).pipe(
        ops.do_action(lambda _: got_a.set()), rs.stop_on(button)
    ).subscribe(on_next, on_completed=done.set)
    assert got_a.wait(5)
    button.stop()  # the source's thread is idle: the end is delivered here, at once
    assert disposed.is_set()
    assert done.is_set()
    gate.set()
    assert out == [A, CANCELLED]


def test_stop_from_another_thread_while_an_item_is_being_delivered() -> None:
    gate, disposed, done = threading.Event(), threading.Event(), threading.Event()
    button = rs.StopSignal()
    inside, leave = threading.Event(), threading.Event()
    out: list[Any] = []
    order: list[str] = []

    def on_completed() -> None:
        order.append("completed")
        done.set()

    def on_next(item: Any) -> None:
        if item == A:
            inside.set()
            leave.wait(5)
        out.append(item)

    threaded_source(gate, disposed).pipe(rs.stop_on(button)).subscribe(
        on_next, on_completed=on_completed
    )
    assert inside.wait(5)
    button.stop()
    # Disposed at once; the end waits for the call in progress, then follows it.
    assert disposed.is_set()
    assert not done.is_set()
    leave.set()
    assert done.wait(5)
    gate.set()
    assert out == [A, CANCELLED]
    assert order == ["completed"]


def test_stop_signal_is_an_observable_that_fires_once() -> None:
    button = rs.StopSignal()
    early: list[Any] = []
    button.subscribe(early.append, on_completed=lambda: early.append("done"))
    button.stop()
    button.stop()
    late: list[Any] = []
    button.subscribe(late.append, on_completed=lambda: late.append("done"))
    assert early == late == [None, "done"]
    assert button.stopped


def test_a_disposed_watcher_hears_no_stop() -> None:
    button = rs.StopSignal()
    heard: list[Any] = []
    button.subscribe(heard.append).dispose()
    button.stop()
    assert heard == []


def test_a_timer_stops_the_stream() -> None:
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(on_next(210, A), on_next(260, B), on_completed(300))
    results = scheduler.start(
        lambda: xs.pipe(rs.stop_on(reactivex.timer(50.0, scheduler=scheduler)))
    )
    assert results.messages == [on_next(210, A), on_next(250, CANCELLED), on_completed(250)]
    assert xs.subscriptions == [subscribe(200, 250)]


def test_every_watcher_is_stopped_even_if_one_raises() -> None:
    button = rs.StopSignal()
    heard: list[str] = []

    def broken(_: Any) -> None:
        raise RuntimeError("a broken watcher")

    button.subscribe(broken)
    button.subscribe(lambda _: heard.append("second"))
    with pytest.raises(RuntimeError, match="a broken watcher"):
        button.stop()
    assert heard == ["second"]


@pytest.mark.parametrize("dialect", AVAILABLE)
def test_a_stop_mid_tool_call_in_every_dialect(dialect: str) -> None:
    button = rs.StopSignal()

    def watch(item: Any) -> None:
        if isinstance(item, ToolCallDelta) and item.arguments:
            button.stop()  # the first piece of the arguments has reached everyone

    shared = deltas_of(dialect).pipe(rs.stop_on(button), ops.publish())
    messages: list[Message] = []
    counts: list[TokenCount] = []
    shared.pipe(rs.accumulate_message()).subscribe(messages.append)
    shared.pipe(rs.count_tokens(encoding=str.split)).subscribe(counts.append)
    shared.subscribe(watch)
    shared.connect()

    [message] = messages
    assert message.finish_reason == "cancelled"
    assert message.reasoning == "Weather: call the tool."
    assert message.content == "<think>hidden</think>Let me check."
    [call] = message.tool_calls
    assert (call.id, call.name) == ("call_1", "weather")
    # Cut after its first fragment; Gemini and Ollama send a call whole, in one delta.
    if dialect in ("gemini", "ollama"):
        assert call.parse_arguments() == {"city": "Paris"}
        assert call.complete
    else:
        assert call.arguments == '{"city": '
        assert not call.complete
        with pytest.raises(ToolArgumentsError):
            call.parse_arguments()
    assert counts[-1].final
    assert counts[-1].choice == 0


def test_a_signal_that_is_not_an_observable_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"needs an observable .* got Event"):
        rs.stop_on(threading.Event())  # type: ignore[arg-type]
