"""A run's items in rxstream's own format: each comes back exactly, alone and as SSE events."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reactivex
from hypothesis import given
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core import wire
from tests.support.codec_strategies import (
    every_field,
    json_objects,
    json_values,
    messages,
    text,
    usage,
)
from tests.support.run_items import FIRST, resumed

small = st.integers(min_value=0, max_value=10**6)
opt_text = st.none() | text
approvals = st.builds(rs.ApprovalRequest, text, text, json_values)
# A conversation as a run keeps it: Messages among plain dicts, some of which look like items.
looks_like_an_item = st.builds(
    lambda d, tag: {**d, "type": tag}, json_objects, st.sampled_from(sorted(wire.TYPES))
)
turns = st.lists(messages | json_objects | looks_like_an_item, max_size=4).map(tuple)

run_items = st.one_of(
    st.builds(rs.StepStart, small, text, text),
    st.builds(rs.StepEnd, small, opt_text, st.none() | usage),
    st.builds(rs.ToolResult, text, text, json_values, opt_text, st.booleans()),
    approvals,
    st.builds(rs.ApprovalResponse, text, st.booleans(), opt_text),
    st.builds(
        rs.RunEnd, turns, st.none() | usage, small, st.lists(approvals, max_size=2).map(tuple)
    ),
)


@given(run_items)
def test_every_run_item_comes_back_exactly(item: Any) -> None:
    obj = json.loads(json.dumps(wire.encode(item)))
    back = wire.decode(obj)
    assert type(back) is type(item)
    assert back == item
    assert every_field(back) == every_field(item)
    # The same through an SSE event.
    event, data = wire.item_event(item)
    assert wire.read_event(event, json.loads(data)) == item


def test_a_plain_message_dict_is_never_read_back_as_an_item() -> None:
    lookalike = {"type": "message", "role": "user", "content": "Hi"}
    end = rs.RunEnd((lookalike, rs.Message(content="Hello")), None, 1)
    obj = wire.encode(end)
    assert obj["messages"][0] == {"$json": lookalike}
    assert wire.decode(obj).messages == (lookalike, rs.Message(content="Hello"))


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        ({"type": "run_end", "messages": "Hi", "usage": None, "steps": 1}, "a list of messages"),
        ({"type": "run_end", "messages": [{"role": "user"}], "usage": None, "steps": 1}, "type"),
        ({"type": "step_start", "step": 1, "dialect": "x", "model": "m", "n": 2}, "unknown field"),
    ],
)
def test_a_broken_run_item_is_a_value_error(obj: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        wire.decode(obj)


def test_a_whole_run_goes_through_the_rxstream_format_and_back() -> None:
    run = [*FIRST, *resumed(True)]
    events = reactivex.from_iterable(run).pipe(rs.to_sse(dialect="rxstream", keepalive=None))
    body = b"".join(rs.to_iterator(events))
    lines = reactivex.from_iterable(body.decode().splitlines(keepends=True))
    back = rs.to_iterator(lines.pipe(rs.lines(), rs.sse_frames(), rs.decode("rxstream")))
    assert list(back) == run


CALL_1, CALL_2 = (
    rs.ToolCall(0, "fc_1", "lookup", '{"q": 1}'),
    rs.ToolCall(1, "fc_2", "lookup", "{}"),
)
INTERLEAVED = rs.Message(
    content="Checking.",
    reasoning="first second",
    tool_calls=(CALL_1, CALL_2),
    blocks=(
        rs.models.ReasoningBlock("first", rs.ReasoningState("reasoning_item", "rs_1", "first")),
        CALL_1,
        rs.models.ReasoningBlock("second"),
        rs.models.TextBlock("Checking."),
        CALL_2,
        rs.ReasoningState("thought_signature", "c2ln"),
    ),
)  # fmt: skip


def test_a_message_keeps_its_blocks_in_arrival_order_through_the_format() -> None:
    # `blocks` is outside a Message's equality: compare it on its own.
    back = wire.decode(json.loads(json.dumps(wire.encode(INTERLEAVED))))
    assert back == INTERLEAVED
    assert back.blocks == INTERLEAVED.blocks
    # A message built by hand has none, and is written as before (no "blocks" field).
    assert "blocks" not in wire.encode(rs.Message(content="Hi"))


def test_a_stored_run_keeps_its_turns_block_order() -> None:
    ask = {"role": "user", "content": "Look it up."}
    result = {"role": "tool", "tool_call_id": "fc_1", "content": "1"}
    state = rs.RunState((ask, INTERLEAVED, result))
    back = rs.RunState.from_json(state.to_json())
    assert back.messages[1].blocks == INTERLEAVED.blocks
    end = rs.RunEnd(state.messages, None, 1)
    assert wire.decode(wire.encode(end)).messages[1].blocks == INTERLEAVED.blocks
