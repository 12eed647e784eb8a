"""sse_frames(): the SSEParser under Rx: frames, completion, errors and the upstream window."""

from __future__ import annotations

import reactivex
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.models import SSEFrame
from tests.support.operators import (
    error_of,
    marbles_testing,
    on_completed,
    on_error,
    on_next,
    subscribe,
)


def test_marbles_comment_blank_data() -> None:
    lines = {"c": ": ping", "_": "", "d": "data: hi", "e": "event: delta"}
    with marbles_testing() as (start, cold, _hot, exp):
        source = cold("-c-_-e-d-_-d-|", lines)
        expected = exp("---------F---(G,|)", {"F": SSEFrame("hi", "delta"), "G": SSEFrame("hi")})
        assert start(source.pipe(rs.sse_frames())) == expected


def test_frames_completion_and_upstream_window() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, "id: 1"),
        on_next(220, "retry: 500"),
        on_next(230, "data: a"),
        on_next(240, "data: b"),
        on_next(250, ""),
        on_next(260, "data: [DONE]"),  # nothing special here: that rule is decode_chunks'
        on_next(270, ""),
        on_next(280, "data: last, without a blank line"),
        on_completed(290),
    )
    results = scheduler.start(lambda: source.pipe(rs.sse_frames()))
    assert results.messages == [
        on_next(250, SSEFrame("a\nb", id="1", retry=500)),
        on_next(270, SSEFrame("[DONE]", id="1", retry=500)),
        on_next(290, SSEFrame("last, without a blank line", id="1", retry=500)),
        on_completed(290),
    ]
    assert source.subscriptions == [subscribe(200, 290)]


def test_bad_line_type_reaches_on_error_and_disposes_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, b"data: bytes, not a line"), on_next(220, "data: x"), on_completed(300)
    )
    results = scheduler.start(lambda: source.pipe(rs.sse_frames()))
    assert len(results.messages) == 1
    assert results.messages[0].time == 210
    assert isinstance(error_of(results.messages[0]), TypeError)
    assert source.subscriptions == [subscribe(200, 210)]


def test_upstream_error_passes_through_and_drops_the_open_frame() -> None:
    boom = ConnectionError("reset")
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, "data: a"), on_next(220, ""), on_next(230, "data: half"), on_error(240, boom)
    )
    results = scheduler.start(lambda: source.pipe(rs.sse_frames()))
    assert results.messages[0] == on_next(220, SSEFrame("a"))
    assert error_of(results.messages[1]) is boom
    assert len(results.messages) == 2
    assert source.subscriptions == [subscribe(200, 240)]


def test_downstream_dispose_disposes_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, "data: a"), on_next(220, ""), on_next(700, "data: b")
    )
    results = scheduler.start(lambda: source.pipe(rs.sse_frames()), disposed=400)
    assert results.messages == [on_next(220, SSEFrame("a"))]
    assert source.subscriptions == [subscribe(200, 400)]


def test_each_subscription_has_its_own_parser() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        on_next(10, "id: x"), on_next(20, "data: 1"), on_next(30, ""), on_completed(40)
    )
    piped = source.pipe(rs.sse_frames())
    first: list[SSEFrame] = []
    second: list[SSEFrame] = []
    scheduler.schedule_absolute(200, lambda *_: piped.subscribe(first.append))
    scheduler.schedule_absolute(225, lambda *_: piped.subscribe(second.append))
    scheduler.start()
    assert first == second == [SSEFrame("1", id="x")]
    assert source.subscriptions == [subscribe(200, 240), subscribe(225, 265)]


def test_after_lines_from_bytes() -> None:
    got: list[SSEFrame] = []
    chunks = [b"\xef\xbb\xbfevent: e\r", b"\ndata: caf\xc3", b"\xa9\r\n\r", b"\n: ping\n\n"]
    reactivex.from_iterable(chunks).pipe(rs.lines(), rs.sse_frames()).subscribe(got.append)
    assert got == [SSEFrame("café", "e")]
