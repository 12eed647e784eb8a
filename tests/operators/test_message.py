"""accumulate_message(): MessageAccumulator under Rx."""

from __future__ import annotations

import reactivex.operators as ops
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.models import Message, MessageBlock, TextBlock, TextDelta, Usage
from rxstream.testing.marbles import StreamMarbles, finish, text
from tests.support.operators import chunk, error_of, on_completed, on_error, on_next, subscribe


def test_marbles_one_message_at_completion() -> None:
    m = StreamMarbles()
    source = m.deltas("-a-b-f-|", {"a": text("He"), "b": text("llo"), "f": finish("stop")})
    assert m.start(source.pipe(rs.accumulate_message())) == m.expected(
        "-------(m,|)", {"m": Message(content="Hello", finish_reason="stop")}
    )
    assert source.subscriptions == [m.subscription("^------!")]


def test_n2_chunks_messages_in_choice_order_and_window() -> None:
    scheduler = TestScheduler()
    usage = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
    source = scheduler.create_hot_observable(
        on_next(210, chunk({"role": "assistant", "content": "b"}, index=1)),
        on_next(220, chunk({"role": "assistant", "content": "a"}, index=0)),
        on_next(230, chunk({}, "stop", index=1)),
        on_next(240, chunk({}, "length", index=0)),
        on_next(250, rs.ChatChunk({"choices": [], "usage": usage})),
        on_completed(260),
    )
    results = scheduler.start(lambda: source.pipe(rs.accumulate_message()))
    u = Usage(1, 2, 3)
    assert results.messages == [
        on_next(260, Message(0, content="a", finish_reason="length", usage=u)),
        on_next(260, Message(1, content="b", finish_reason="stop", usage=u)),
        on_completed(260),
    ]
    assert source.subscriptions == [subscribe(200, 260)]


def test_upstream_error_passes_through_without_a_message() -> None:
    scheduler = TestScheduler()
    boom = rs.ProviderError("Token limit reached", code=400)
    source = scheduler.create_hot_observable(on_next(210, TextDelta("a")), on_error(220, boom))
    results = scheduler.start(lambda: source.pipe(rs.accumulate_message()))
    assert len(results.messages) == 1
    assert error_of(results.messages[0]) is boom
    assert source.subscriptions == [subscribe(200, 220)]


def test_bad_item_errors_and_disposes_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, None), on_completed(300))
    results = scheduler.start(lambda: source.pipe(rs.accumulate_message()))
    assert isinstance(error_of(results.messages[0]), TypeError)
    assert source.subscriptions == [subscribe(200, 210)]


def test_dispose_before_completion_gives_nothing() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, TextDelta("a")), on_completed(500))
    results = scheduler.start(lambda: source.pipe(rs.accumulate_message()), disposed=300)
    assert results.messages == []
    assert source.subscriptions == [subscribe(200, 300)]


def _content_and_blocks(message: Message) -> tuple[str, tuple[MessageBlock, ...]]:
    return message.content, message.blocks


def test_marbles_a_text_block_start_keeps_two_text_blocks_apart() -> None:
    # Two Anthropic text blocks side by side: one text, two blocks, each as it came.
    m = StreamMarbles()
    source = m.deltas(
        "-a-s-b-f-|",
        {"a": text("Hello. "), "s": rs.TextBlockStart(), "b": text("World."), "f": finish("stop")},
    )
    blocks = (TextBlock("Hello. "), TextBlock("World."))
    seen = source.pipe(rs.accumulate_message(), ops.map(_content_and_blocks))
    assert m.start(seen) == m.expected("---------(m,|)", {"m": ("Hello. World.", blocks)})
    assert source.subscriptions == [m.subscription("^--------!")]
