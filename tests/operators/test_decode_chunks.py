"""decode_chunks(): SSEFrame -> ChatChunk as an Rx operator, over ChunkDecoder."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import reactivex
from reactivex.testing import ReactiveTest, TestScheduler

import rxstream as rs
from rxstream.models import ChatChunk, SSEFrame
from rxstream.testing.builders import ChatStream, error_chunk, finish_chunk, text_chunk
from rxstream.testing.marbles import DONE, StreamMarbles, error, malformed, text
from tests.support.json_paths import json_path  # noqa: F401  (every test runs on both JSON paths)
from tests.support.operators import on_error

on_next = ReactiveTest.on_next
on_completed = ReactiveTest.on_completed
subscribe = ReactiveTest.subscribe

A, B = text_chunk("a"), text_chunk("b")
END = finish_chunk("stop")


def F(data: str | dict[str, Any], event: str = "message") -> SSEFrame:
    return SSEFrame(data if isinstance(data, str) else json.dumps(data), event)


# Expected records go on the left: only the predicate side knows how to compare.
def is_error(kind: type[Exception], text: str = "") -> Callable[[Exception], bool]:
    return lambda error: isinstance(error, kind) and text in str(error)


def test_marbles_done_completes() -> None:
    m = StreamMarbles()
    values = {"a": A, "b": B, "D": DONE, "x": malformed("never decoded")}
    source = m.frames("-a-b-D-x-|", values)
    expected = m.expected("-A-B-|", {"A": ChatChunk(A), "B": ChatChunk(B)})
    assert m.start(source.pipe(rs.decode_chunks())) == expected
    assert source.subscriptions == [m.subscription("^----!")]


def test_marbles_a_provider_error_mid_stream_ends_it() -> None:
    m = StreamMarbles()
    values = {"a": text("a"), "e": error("overloaded", code=529), "D": DONE}
    source = m.lines("-a-e-a-D", values)
    out = m.start(source.pipe(rs.sse_frames(), rs.decode_chunks(), rs.deltas()))
    assert out == m.expected("-a-e", values)
    assert source.subscriptions == [m.subscription("^--!")]


def test_done_ends_the_upstream_subscription_at_that_frame() -> None:
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(
        on_next(210, F(A)),
        on_next(220, F("[DONE]")),
        on_next(230, F("not JSON, never read")),
        on_completed(240),
    )
    results = scheduler.start(lambda: xs.pipe(rs.decode_chunks()))
    assert [on_next(210, ChatChunk(A)), on_completed(220)] == results.messages
    assert xs.subscriptions == [subscribe(200, 220)]


def test_completion_after_every_choice_finished() -> None:
    # TGI sends no [DONE]: the source's own completion ends the stream.
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(
        on_next(210, F(A)), on_next(220, F(END)), on_completed(230)
    )
    results = scheduler.start(lambda: xs.pipe(rs.decode_chunks()))
    assert [
        on_next(210, ChatChunk(A)),
        on_next(220, ChatChunk(END)),
        on_completed(230),
    ] == results.messages
    assert xs.subscriptions == [subscribe(200, 230)]


ERRORS: list[tuple[str, SSEFrame, type[Exception], str]] = [
    ("event error", F(error_chunk("Overloaded"), "error"), rs.ProviderError, "Overloaded"),
    (
        "in-chunk error",
        F({"error": {"code": 400, "message": "Token limit reached"}, "choices": []}),
        rs.ProviderError,
        "Token limit reached",
    ),
    ("invalid JSON", F("{oops"), rs.MalformedChunkError, "{oops"),
    ("not an object", F("[1]"), rs.MalformedChunkError, "not an object"),
    ("broken choices", F('{"choices": 3}'), rs.MalformedChunkError, "choices is a JSON number"),
    (
        "content of the wrong type",
        F('{"choices": [{"delta": {"content": 5}}]}'),
        rs.MalformedChunkError,
        "choices[0].delta.content is a JSON number, not a string, an array or null",
    ),
]


@pytest.mark.parametrize(
    ("frame", "kind", "text"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS]
)
def test_errors_reach_on_error_and_dispose_upstream(
    frame: SSEFrame, kind: type[Exception], text: str
) -> None:
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(
        on_next(210, F(A)), on_next(220, frame), on_next(230, F(B)), on_completed(240)
    )
    results = scheduler.start(lambda: xs.pipe(rs.decode_chunks()))
    assert [on_next(210, ChatChunk(A)), on_error(220, is_error(kind, text))] == results.messages
    assert xs.subscriptions == [subscribe(200, 220)]


def test_truncated_stream_errors_at_completion() -> None:
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(on_next(210, F(A)), on_completed(250))
    results = scheduler.start(lambda: xs.pipe(rs.decode_chunks()))
    assert [
        on_next(210, ChatChunk(A)),
        on_error(250, is_error(rs.TruncatedStreamError, "choice 0 unfinished")),
    ] == results.messages
    assert xs.subscriptions == [subscribe(200, 250)]


def test_skip_drops_malformed_frames() -> None:
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(
        on_next(210, F("{oops")),
        on_next(220, F(A)),
        on_next(230, F("[1, 2]")),
        on_next(240, F("[DONE]")),
    )
    results = scheduler.start(lambda: xs.pipe(rs.decode_chunks(on_malformed="skip")))
    assert [on_next(220, ChatChunk(A)), on_completed(240)] == results.messages
    assert xs.subscriptions == [subscribe(200, 240)]


def test_skip_does_not_skip_provider_errors() -> None:
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(on_next(210, F(error_chunk("boom"), "error")))
    results = scheduler.start(lambda: xs.pipe(rs.decode_chunks(on_malformed="skip")))
    assert [on_error(210, is_error(rs.ProviderError, "boom"))] == results.messages
    assert xs.subscriptions == [subscribe(200, 210)]


def test_upstream_error_passes_through() -> None:
    scheduler = TestScheduler()
    failure = rs.TransportError("connection reset")
    xs = scheduler.create_hot_observable(on_next(210, F(A)), on_error(220, failure))
    results = scheduler.start(lambda: xs.pipe(rs.decode_chunks()))
    assert [
        on_next(210, ChatChunk(A)),
        on_error(220, lambda error: error is failure),
    ] == results.messages


def test_downstream_dispose_disposes_upstream() -> None:
    scheduler = TestScheduler()
    xs = scheduler.create_hot_observable(on_next(210, F(A)), on_next(1100, F("[DONE]")))
    results = scheduler.start(lambda: xs.pipe(rs.decode_chunks()), disposed=500)
    assert [on_next(210, ChatChunk(A))] == results.messages
    assert xs.subscriptions == [subscribe(200, 500)]


def test_each_subscription_gets_its_own_decoder() -> None:
    stream = ChatStream().text("Hi").finish().done()
    chunks = reactivex.from_iterable(stream.frames()).pipe(rs.decode_chunks())
    first: list[ChatChunk] = []
    second: list[ChatChunk] = []
    chunks.subscribe(first.append)
    # A shared decoder would be done already and refuse the second run.
    chunks.subscribe(second.append, on_error=lambda error: pytest.fail(repr(error)))
    assert first == second == [ChatChunk(raw) for raw in stream.chunks()]


@pytest.mark.parametrize("value", ["ignore", "", "Skip"])
def test_bad_option_fails_when_built(value: Any) -> None:
    with pytest.raises(ValueError, match="on_malformed"):
        rs.decode_chunks(on_malformed=value)


def test_with_sse_frames() -> None:
    stream = ChatStream().keepalive().role().text("Hel", "lo").finish().usage(1, 2).done()
    got: list[ChatChunk] = []
    completed: list[bool] = []
    reactivex.from_iterable([*stream.lines(), "data: after done", ""]).pipe(
        rs.sse_frames(), rs.decode_chunks()
    ).subscribe(
        got.append,
        on_error=lambda error: pytest.fail(repr(error)),
        on_completed=lambda: completed.append(True),
    )
    assert got == [ChatChunk(raw) for raw in stream.chunks()]
    assert completed == [True]
