"""lines(): the LineSplitter under Rx: values, completion, errors and the upstream window."""

from __future__ import annotations

import pytest
import reactivex
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.errors import LineTooLongError
from tests.support.operators import (
    error_of,
    marbles_testing,
    on_completed,
    on_error,
    on_next,
    subscribe,
)


def test_marbles_cr_then_lf_in_the_next_chunk() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        chunks = {"a": b"data: 1\r", "b": b"\ndata: 2\n\nda", "c": b"ta: 3"}
        source = cold("-a-b---c|", chunks)
        # a group spans its width: (y,e) covers ticks 3-7, so (z,|) lands at 8
        expected = exp("-x-(y,e)(z,|)", {"x": "data: 1", "y": "data: 2", "e": "", "z": "data: 3"})
        assert start(source.pipe(rs.lines())) == expected


def test_values_completion_and_upstream_window() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(150, b"ignored before subscribe\n"),
        on_next(210, b"a\r"),
        on_next(220, b"\nb\nc"),
        on_next(230, "é".encode()[:1]),
        on_next(240, "é".encode()[1:] + b"\n"),
        on_next(250, b"tail"),
        on_completed(260),
    )
    results = scheduler.start(lambda: source.pipe(rs.lines()))
    assert results.messages == [
        on_next(210, "a"),
        on_next(220, "b"),
        on_next(240, "cé"),
        on_next(260, "tail"),
        on_completed(260),
    ]
    assert source.subscriptions == [subscribe(200, 260)]


def test_line_too_long_reaches_on_error_and_disposes_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, b"ok\n"),
        on_next(220, b"abc"),
        on_next(230, b"de"),
        on_next(240, b"\nnever seen\n"),
        on_completed(300),
    )
    results = scheduler.start(lambda: source.pipe(rs.lines(line_limit=4)))
    assert results.messages[0] == on_next(210, "ok")
    assert len(results.messages) == 2
    assert results.messages[1].time == 230
    error = error_of(results.messages[1])
    assert isinstance(error, LineTooLongError)
    assert error.limit == 4
    assert source.subscriptions == [subscribe(200, 230)]


def test_line_too_long_found_at_completion() -> None:
    scheduler = TestScheduler()
    # One chunk holds a good line and then the over-long one: the good line comes
    # first, the error when the splitter is next called (here: at completion).
    source = scheduler.create_cold_observable(on_next(10, b"ok\nabcdefgh\n"), on_completed(20))
    results = scheduler.start(lambda: source.pipe(rs.lines(line_limit=4)))
    assert results.messages[0] == on_next(210, "ok")
    assert results.messages[1].time == 220
    assert isinstance(error_of(results.messages[1]), LineTooLongError)
    assert source.subscriptions == [subscribe(200, 220)]


def test_mixed_chunk_types_error_and_dispose_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, b"a\n"), on_next(220, "b\n"), on_completed(300)
    )
    results = scheduler.start(lambda: source.pipe(rs.lines()))
    assert results.messages[0] == on_next(210, "a")
    assert isinstance(error_of(results.messages[1]), TypeError)
    assert source.subscriptions == [subscribe(200, 220)]


def test_upstream_error_passes_through_without_flushing() -> None:
    boom = ConnectionError("reset")
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, b"a\npartial"), on_error(230, boom))
    results = scheduler.start(lambda: source.pipe(rs.lines()))
    assert results.messages[0] == on_next(210, "a")
    assert error_of(results.messages[1]) is boom
    assert len(results.messages) == 2  # the partial line is not passed off as complete
    assert source.subscriptions == [subscribe(200, 230)]


def test_downstream_dispose_disposes_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, b"a\n"), on_next(600, b"b\n"))
    results = scheduler.start(lambda: source.pipe(rs.lines()), disposed=500)
    assert results.messages == [on_next(210, "a")]
    assert source.subscriptions == [subscribe(200, 500)]


def test_each_subscription_has_its_own_splitter() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        on_next(10, b"ab"), on_next(20, b"c\n"), on_completed(30)
    )
    piped = source.pipe(rs.lines())
    first: list[str] = []
    second: list[str] = []
    scheduler.schedule_absolute(200, lambda *_: piped.subscribe(first.append))
    scheduler.schedule_absolute(215, lambda *_: piped.subscribe(second.append))
    scheduler.start()
    assert first == ["abc"]
    assert second == ["abc"]
    assert source.subscriptions == [subscribe(200, 230), subscribe(215, 245)]


def test_str_chunks_and_plain_subscribe() -> None:
    got: list[str] = []
    reactivex.of("x\r\ny\u2028z\r", "\nw").pipe(rs.lines()).subscribe(got.append)
    assert got == ["x", "y\u2028z", "w"]


@pytest.mark.parametrize("limit", [0, -5], ids=["zero", "negative"])
def test_bad_limit_fails_when_the_operator_is_made(limit: int) -> None:
    with pytest.raises(ValueError, match="limit"):
        rs.lines(line_limit=limit)
