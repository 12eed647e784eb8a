"""Reset: every core machine over deltas, the wire format and every renderer honour it."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex

import rxstream as rs
from rxstream.core import (
    MessageAccumulator,
    ThinkTagSplitter,
    TokenCounter,
    ToolCallAccumulator,
    wire,
)
from rxstream.core.dialects import DIALECTS, ResetRule, renderer, wire_bytes
from rxstream.core.dialects.sse_encoder import SSEEncoder
from rxstream.models import (
    Delta,
    Finish,
    Message,
    ReasoningDelta,
    Reset,
    TextDelta,
    TokenCount,
    ToolCall,
    ToolCallDelta,
    Usage,
)

RESET = Reset(2, "the connection closed after 3 events")

#: A dropped answer (text, reasoning, a call cut in its arguments), the reset, a new answer.
DROPPED: list[Delta] = [
    ReasoningDelta("hmm"),
    TextDelta("Hel"),
    ToolCallDelta(0, '{"city":', id="call_a", name="weather"),
]
NEW: list[Delta] = [
    TextDelta("Hello"),
    ToolCallDelta(0, '{"city":"Paris"}', id="call_b", name="weather"),
    Finish("tool_calls"),
    Usage(3, 4, 7),
]
NEW_MESSAGE = Message(
    content="Hello",
    tool_calls=(ToolCall(0, "call_b", "weather", '{"city":"Paris"}'),),
    finish_reason="tool_calls",
    usage=Usage(3, 4, 7),
)


def message_of(items: list[Delta]) -> list[Message]:
    acc = MessageAccumulator()
    for item in items:
        assert acc.feed(item) == []
    return acc.close()


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param([*DROPPED, RESET, *NEW], [NEW_MESSAGE], id="cut-in-a-call"),
        pytest.param(
            [TextDelta("a"), Finish("stop"), Usage(1, 1, 2), RESET, *NEW],
            [NEW_MESSAGE],
            id="after-the-finish-and-usage",
        ),
        pytest.param(
            [TextDelta("a", choice=1), RESET, TextDelta("b")],
            [Message(content="b")],
            id="every-choice-dropped",
        ),
        pytest.param(
            [TextDelta("a"), RESET, RESET, TextDelta("b")],
            [Message(content="b")],
            id="two-resets",
        ),
        pytest.param([TextDelta("a"), RESET], [], id="nothing-after"),
    ],
)
def test_message_is_the_new_answers_alone(items: list[Delta], expected: list[Message]) -> None:
    assert message_of(items) == expected


def test_message_blocks_are_the_new_answers() -> None:
    [message] = message_of([*DROPPED, RESET, *NEW])
    assert [type(b).__name__ for b in message.blocks] == ["TextBlock", "ToolCall"]


def test_message_after_a_run_of_fragments() -> None:
    # The pending run of fragments of one call (MessageAccumulator joins them) goes too.
    items: list[Delta] = [
        ToolCallDelta(0, "{", id="a", name="f"),
        ToolCallDelta(0, '"x'),
        RESET,
        ToolCallDelta(0, "{}", id="b", name="g"),
    ]
    [message] = message_of(items)
    assert message.tool_calls == (ToolCall(0, "b", "g", "{}"),)


def test_tool_calls_drop_the_pending_calls_and_pass_the_reset() -> None:
    acc = ToolCallAccumulator()
    out: list[Any] = []
    for item in [*DROPPED, RESET, *NEW]:
        out += acc.feed(item)
    out += acc.close()
    assert out == [RESET, ToolCall(0, "call_b", "weather", '{"city":"Paris"}')]


def test_tool_call_snapshots_then_the_reset() -> None:
    acc = ToolCallAccumulator(partial=True)
    out = acc.feed(ToolCallDelta(0, '{"a":', id="x", name="f")) + acc.feed(RESET)
    assert [type(o).__name__ for o in out] == ["ToolCall", "Reset"]
    assert out[0].complete is False
    assert acc.close() == []


def test_token_counts_start_again_and_keep_what_was_dropped() -> None:
    counter = TokenCounter(str.split)  # one "token" per word
    out: list[TokenCount] = []
    items: list[Delta] = [
        TextDelta("one two three"),
        ReasoningDelta("four"),
        RESET,
        TextDelta("five"),
    ]
    for item in items:
        out += counter.feed(item)
    final = counter.close()
    assert out[-2] == TokenCount(0, 0, 0, 0, None, False, 0, False, dropped=4)
    assert out[-1].text == 1
    assert out[-1].dropped == 4
    assert final == [TokenCount(1, 0, 0, 0, None, True, 0, dropped=4)]
    assert final[0].total == 1


def test_token_counts_forget_the_dropped_usage() -> None:
    counter = TokenCounter(str.split)
    items: list[Delta] = [TextDelta("a"), Usage(1, 1, 2), RESET, RESET, TextDelta("b c")]
    for item in items:
        counter.feed(item)
    [final] = counter.close()
    assert (final.text, final.usage, final.dropped) == (2, None, 1)


def test_think_tags_start_outside_again() -> None:
    splitter = ThinkTagSplitter()
    out: list[Delta] = []
    items: list[Delta] = [TextDelta("<think>hm</th"), RESET, TextDelta("ink>Hi")]
    for item in items:
        out += splitter.feed(item)
    out += splitter.close()
    # The held "</th" went with the dropped answer; the new one starts outside a block.
    assert out == [ReasoningDelta("hm"), RESET, TextDelta("ink>Hi")]


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param(
            [ToolCallDelta(0, "{", id="a"), ToolCallDelta(1, "{", id="b"), RESET],
            [ToolCallDelta(0, "{", id="a"), ToolCallDelta(1, "{", id="b")],
            id="reset-left-out",
        ),
        pytest.param(
            [ToolCallDelta(1, "{", id="a"), RESET, ToolCallDelta(0, "{}", id="c")],
            [ToolCallDelta(1, "{", id="a"), ToolCallDelta(2, "{}", id="c")],
            id="calls-numbered-after",
        ),
        pytest.param(
            [ToolCallDelta(0, "{", id="a"), RESET, ToolCallDelta(None, "{}", id="c")],
            [ToolCallDelta(0, "{", id="a"), ToolCallDelta(None, "{}", id="c")],
            id="no-index-found-by-id",
        ),
        pytest.param(
            [
                ToolCallDelta(0, "{", id="a"),
                RESET,
                ToolCallDelta(0, "{", id="b"),
                RESET,
                ToolCallDelta(0, "{}", id="c"),
            ],
            [
                ToolCallDelta(0, "{", id="a"),
                ToolCallDelta(1, "{", id="b"),
                ToolCallDelta(2, "{}", id="c"),
            ],
            id="two-resets",
        ),
        pytest.param(
            [TextDelta("a"), Finish("stop"), RESET, TextDelta("b"), Finish("stop"), Usage(1, 1, 2)],
            [TextDelta("a"), Finish("stop"), Usage(1, 1, 2)],
            id="a-finished-choice-keeps-what-it-sent",
        ),
        pytest.param(
            [Finish("stop"), RESET, ToolCallDelta(0, "{}", id="b"), Finish("tool_calls")],
            [Finish("stop")],
            id="no-call-after-a-choice-finished",
        ),
        pytest.param(
            [Finish("stop", choice=1), RESET, TextDelta("b"), TextDelta("c", choice=1)],
            [Finish("stop", choice=1), TextDelta("b")],
            id="other-choices-go-on",
        ),
    ],
)
def test_reset_rule(items: list[Delta], expected: list[Delta]) -> None:
    rule = ResetRule()
    assert [d for d in map(rule.see, items) if d is not None] == expected


def decoded(dialect: str, items: list[Delta]) -> tuple[list[Any], list[Exception]]:
    """Render `items` in `dialect`, then read the bytes back to messages."""
    made = renderer(dialect)
    wire_items: list[Any] = []
    for item in items:
        wire_items += made.feed(item)
    wire_items += made.close()
    data = wire_bytes(made, wire_items)
    framings: dict[str, list[Any]] = {
        "sse": [rs.lines(), rs.sse_frames()],
        "ndjson": [rs.lines()],
        "eventstream": [rs.eventstream_frames()],
    }
    framing = framings[made.wire]
    out: list[Any] = []
    errors: list[Exception] = []
    stages: list[Any] = [*framing, rs.decode(dialect), rs.accumulate_message()]
    reactivex.of(data).pipe(*stages).subscribe(out.append, errors.append)
    return out, errors


@pytest.mark.parametrize("dialect", [d for d in DIALECTS if d != "ai-sdk"])
def test_a_provider_dialect_keeps_one_valid_stream_and_never_splices(dialect: str) -> None:
    [message], errors = decoded(dialect, [*DROPPED, RESET, *NEW])
    assert errors == []
    assert message.content == "HelHello"  # what was sent stays; the new answer follows
    new_call = ToolCall(0, "call_b", "weather", '{"city":"Paris"}')
    # The new call is whole, apart from the dropped one (numbered after it, or,
    # where calls wait for their choice's end, dropped before it was ever written).
    assert message.tool_calls[-1].arguments == new_call.arguments
    assert message.tool_calls[-1].id == new_call.id
    assert all(c.arguments in ('{"city":', new_call.arguments) for c in message.tool_calls)


@pytest.mark.parametrize("dialect", ["gemini", "ollama"])
def test_calls_not_written_yet_go_with_the_dropped_answer(dialect: str) -> None:
    whole_but_unfinished = [ToolCallDelta(0, '{"city":"Rome"}', id="call_a", name="weather")]
    [message], _ = decoded(dialect, [*whole_but_unfinished, RESET, *NEW])
    assert [c.arguments for c in message.tool_calls] == ['{"city":"Paris"}']


def test_ai_sdk_carries_the_reset_and_reads_it_back() -> None:
    [message], errors = decoded("ai-sdk", [*DROPPED, RESET, *NEW])
    assert errors == []
    assert message == NEW_MESSAGE


def test_ai_sdk_parts_of_a_reset() -> None:
    made = renderer("ai-sdk")
    frames: list[Any] = []
    for item in [*DROPPED, RESET]:
        frames += made.feed(item)
    types = [f.data.split('"type":"')[1].split('"')[0] for f in frames]
    assert types[-3:] == ["tool-input-delta", "tool-input-error", "data-rxstream-reset"]
    assert frames[-1].data == (
        '{"type":"data-rxstream-reset","data":{"attempt":2,'
        '"reason":"the connection closed after 3 events"}}'
    )
    # A new call with the dropped call's id gets an id of its own (the UI keys calls by id).
    frames = made.feed(ToolCallDelta(0, "{}", id="call_a", name="weather"))
    assert '"toolCallId":"call_a-0"' in frames[0].data


@pytest.mark.parametrize(
    ("data", "field"),
    [
        pytest.param(',"data":{"reason":"x"}', "attempt", id="no-attempt"),
        pytest.param(',"data":{"attempt":"2"}', "attempt", id="attempt-not-an-integer"),
        pytest.param("", "data", id="no-data"),
        pytest.param(',"data":[2]', "data", id="data-not-an-object"),
    ],
)
def test_ai_sdk_decoder_refuses_a_broken_reset_part(data: str, field: str) -> None:
    bad = f'data: {{"type":"data-rxstream-reset"{data}}}\n\n'
    errors: list[Exception] = []
    reactivex.of(bad).pipe(rs.lines(), rs.sse_frames(), rs.decode("ai-sdk")).subscribe(
        on_error=errors.append
    )
    assert isinstance(errors[0], rs.MalformedChunkError)
    assert field in str(errors[0])


def test_wire_format_round_trip() -> None:
    items: list[Any] = [*DROPPED, RESET, *NEW, TokenCount(1, 0, 0, 0, dropped=5)]
    assert [wire.decode(wire.encode(i)) for i in items] == items
    assert wire.encode(RESET) == {
        "type": "reset",
        "attempt": 2,
        "reason": "the connection closed after 3 events",
        "choice": 0,
    }


def test_rxstream_sse_round_trip() -> None:
    encoder = SSEEncoder("rxstream")
    data = b"".join(b for item in [*DROPPED, RESET, *NEW] for b in encoder.feed(item))
    data += b"".join(encoder.close())
    assert b"event: reset\n" in data
    out: list[Any] = []
    reactivex.of(data).pipe(rs.lines(), rs.sse_frames(), rs.decode("rxstream")).subscribe(
        out.append
    )
    assert out == [*DROPPED, RESET, *NEW]
    assert message_of(out) == [NEW_MESSAGE]


@pytest.mark.parametrize("dialect", [d for d in DIALECTS if d != "ai-sdk"])
def test_a_provider_dialect_keeps_a_finished_answer(dialect: str) -> None:
    items: list[Delta] = [TextDelta("a"), Finish("stop"), RESET, TextDelta("b"), Finish("stop")]
    [message], errors = decoded(dialect, items)
    assert errors == []
    assert (message.content, message.finish_reason) == ("a", "stop")
