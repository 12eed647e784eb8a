"""count_tokens: running counts in virtual time, disposal, errors, independent subscriptions.

TestScheduler: subscribed at 200, disposed at 1000.
"""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
import tiktoken
import tiktoken.load
from reactivex.notification import OnNext
from reactivex.testing import ReactiveTest, TestScheduler
from reactivex.testing.hotobservable import HotObservable
from reactivex.testing.subscription import Subscription

import rxstream as rs
from rxstream.core.tokens import TAIL_LIMIT, resolve_encoding
from rxstream.models import ReasoningDelta, TextDelta, TokenCount, ToolCallDelta, Usage

# The data the `tokens` extra installs: no network.
CL100K: tiktoken.Encoding = resolve_encoding("cl100k_base")  # type: ignore[assignment]
on_next, on_completed, on_error = (
    ReactiveTest.on_next,
    ReactiveTest.on_completed,
    ReactiveTest.on_error,
)


def n(text: str) -> int:
    return len(CL100K.encode_ordinary(text))


USAGE = Usage(prompt_tokens=12, completion_tokens=3, total_tokens=15)


def test_running_counts_then_one_final_count() -> None:
    # -a---b---r---u---|      a="Hello", b=" internationa", r=reasoning "hmm", u=usage
    # -1---2---3-------(F|)
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        on_next(10, TextDelta("Hello")),
        on_next(20, TextDelta(" internationa")),
        on_next(30, TextDelta("l")),
        on_next(40, ReasoningDelta("hmm")),
        on_next(50, USAGE),
        on_completed(60),
    )
    result = scheduler.start(lambda: source.pipe(rs.count_tokens(encoding=CL100K)))
    text = n("Hello international")
    assert result.messages == [
        on_next(210, TokenCount(1, 0, 0, 0)),
        on_next(220, TokenCount(n("Hello internationa"), 0, 0, 0)),
        on_next(230, TokenCount(text, 0, 0, 0)),  # the last fragment merged: the count shrank
        on_next(240, TokenCount(text, n("hmm"), 0, 0)),
        on_next(260, TokenCount(text, n("hmm"), 0, 0, usage=USAGE, final=True)),
        on_completed(260),
    ]
    assert n("Hello internationa") > text
    assert source.subscriptions == [Subscription(200, 260)]


def test_an_upstream_error_passes_through_without_a_final_count() -> None:
    scheduler = TestScheduler()
    boom = rs.TransportError("connection reset")
    source = scheduler.create_hot_observable(
        on_next(150, TextDelta("early")),  # before subscription: never seen
        on_next(210, TextDelta("Hi")),
        on_error(220, boom),
    )
    result = scheduler.start(lambda: source.pipe(rs.count_tokens(encoding=CL100K)))
    assert result.messages[0] == on_next(210, TokenCount(1, 0, 0, 0))
    [(time, notification)] = [(m.time, m.value) for m in result.messages[1:]]
    assert time == 220
    assert notification.kind == "E"
    assert isinstance(notification.exception, rs.TransportError)
    assert source.subscriptions == [Subscription(200, 220)]


def test_a_wrong_item_errors_and_disposes_the_upstream() -> None:
    scheduler = TestScheduler()
    source: HotObservable[Any] = scheduler.create_hot_observable(
        on_next(210, TextDelta("a")), on_next(220, "not a delta"), on_next(230, TextDelta("b"))
    )
    result = scheduler.start(lambda: source.pipe(rs.count_tokens(encoding=CL100K)))
    assert [m.time for m in result.messages] == [210, 220]
    error = result.messages[1].value
    assert error.kind == "E"
    assert isinstance(error.exception, TypeError)
    assert source.subscriptions == [Subscription(200, 220)]


def test_disposing_the_subscriber_disposes_the_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, TextDelta("a")), on_next(1100, TextDelta("late")), on_completed(1200)
    )
    result = scheduler.start(lambda: source.pipe(rs.count_tokens(encoding=CL100K)), disposed=1000)
    assert result.messages == [on_next(210, TokenCount(1, 0, 0, 0))]
    assert source.subscriptions == [Subscription(200, 1000)]


def test_two_subscriptions_count_independently() -> None:
    counted = reactivex.of(TextDelta("one"), TextDelta(" two")).pipe(
        rs.count_tokens(encoding=CL100K)
    )
    first: list[TokenCount] = []
    second: list[TokenCount] = []
    counted.subscribe(first.append)
    counted.subscribe(second.append)
    assert (
        first
        == second
        == [
            TokenCount(1, 0, 0, 0),
            TokenCount(2, 0, 0, 0),
            TokenCount(2, 0, 0, 0, final=True),
        ]
    )


def test_chunks_straight_from_decode_chunks_are_counted() -> None:
    chunks = [
        rs.ChatChunk({"choices": [{"index": 1, "delta": {"content": "Bonjour"}}]}),
        rs.ChatChunk({"choices": [{"index": 0, "delta": {"content": "Hello"}}]}),
    ]
    out: list[TokenCount] = []
    reactivex.from_iterable(chunks).pipe(rs.count_tokens(encoding=CL100K)).subscribe(out.append)
    assert [(c.choice, c.text, c.final) for c in out] == [
        (1, n("Bonjour"), False),
        (0, n("Hello"), False),
        (0, n("Hello"), True),
        (1, n("Bonjour"), True),
    ]


@pytest.mark.parametrize(
    ("encoding", "error"),
    [
        pytest.param("no-such-encoding", ValueError, id="unknown name"),
        pytest.param(3.5, TypeError, id="wrong type"),
    ],
)
def test_a_bad_encoding_fails_when_the_operator_is_made(encoding: Any, error: type) -> None:
    with pytest.raises(error):
        rs.count_tokens(encoding=encoding)


def test_a_long_run_is_flagged_estimated_and_the_final_count_is_exact() -> None:
    # -a-b-c-d-|     a = 100 letters, b = 100 more (the run outgrows TAIL_LIMIT),
    # -1-2-3-4-(F|)  c = " and", d = " more"; 2 is an estimate, the rest exact
    run = "abcdefghijklmnopqrstuvwxy" * 8
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        on_next(10, ToolCallDelta(0, run[:100], id="c", name="f")),
        on_next(20, ToolCallDelta(0, run[100:])),
        on_next(30, ToolCallDelta(0, " and")),
        on_next(40, ToolCallDelta(0, " more")),
        on_completed(50),
    )
    result = scheduler.start(lambda: source.pipe(rs.count_tokens(encoding=CL100K)))
    counts = [m.value.value for m in result.messages if isinstance(m.value, OnNext)]
    assert len(run) > TAIL_LIMIT > 100
    assert [c.estimated for c in counts] == [False, True, False, False, False]
    assert [c.tool_arguments for i, c in enumerate(counts) if i != 1] == [
        n(run[:100]),
        n(run + " and"),
        n(run + " and more"),
        n(run + " and more"),
    ]
    assert counts[-1].final


def test_a_name_counts_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(blobpath: str) -> bytes:
        raise AssertionError(f"tried to read {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    out: list[TokenCount] = []
    reactivex.of(TextDelta("Hello world")).pipe(rs.count_tokens(encoding="o200k_base")).subscribe(
        out.append
    )
    assert [c.text for c in out] == [2, 2]
