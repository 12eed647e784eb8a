"""The `"anthropic"` typed path: the usual events read by msgspec types, all else as before."""

from __future__ import annotations

import json
from typing import Any

import pytest

import rxstream as rs
import rxstream._typed as typed_decoding
from tests.support.typed import (
    assert_same_decoding,
)

msgspec = pytest.importorskip("msgspec")
typed: Any = typed_decoding.typed("anthropic")

DIALECT = "anthropic"


def test_the_typed_module_is_used_with_msgspec() -> None:
    assert typed is not None


def delta(index: Any, **body: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": body}


TYPED = {
    "text": (delta(0, type="text_delta", text="Hi"), ("Text", "text", "Hi")),
    "empty text": (delta(1, type="text_delta", text=""), ("Text", "text", "")),
    "thinking": (delta(0, type="thinking_delta", thinking="hm"), ("Thinking", "thinking", "hm")),
    "arguments": (
        delta(2, type="input_json_delta", partial_json='{"a'),
        ("InputJSON", "partial_json", '{"a'),
    ),
}


@pytest.mark.parametrize(("event", "expected"), TYPED.values(), ids=TYPED.keys())
def test_the_usual_deltas_decode_into_their_types(event: Any, expected: Any) -> None:
    got = typed.decode(json.dumps(event))
    kind, field, value = expected
    assert type(got) is typed.BlockDelta
    assert got.index == event["index"]
    assert type(got.delta).__name__ == kind
    assert getattr(got.delta, field) == value


def test_ping_decodes_into_its_type() -> None:
    assert type(typed.decode('{"type": "ping"}')) is typed.Ping


REFUSED = {
    "another event": {"type": "message_stop"},
    "signature": delta(0, type="signature_delta", signature="s"),
    "citations": delta(0, type="citations_delta", citation={}),
    "an unknown delta": delta(0, type="novel_delta", text="x"),
    "an unknown field": {**delta(0, type="text_delta", text="x"), "extra": 1},
    "an unknown delta field": delta(0, type="text_delta", text="x", extra=1),
    "a missing text": delta(0, type="text_delta"),
    "a null text": delta(0, type="text_delta", text=None),
    "a number for text": delta(0, type="text_delta", text=1),
    "a float index": delta(0.0, type="text_delta", text="x"),
    "a bool index": delta(True, type="text_delta", text="x"),
    "a null index": delta(None, type="text_delta", text="x"),
    "no delta": {"type": "content_block_delta", "index": 0},
    "a ping with a field": {"type": "ping", "at": 1},
    "an error": {"type": "error", "error": {"type": "overloaded_error", "message": "m"}},
}


@pytest.mark.parametrize("event", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_types_do_not_know_is_refused(event: Any) -> None:
    with pytest.raises(msgspec.DecodeError):  # a ValidationError is one too
        typed.decode(json.dumps(event))


def frames(*events: Any) -> list[rs.SSEFrame]:
    return [
        e if isinstance(e, rs.SSEFrame) else rs.SSEFrame(json.dumps(e), e.get("type", "message"))
        for e in events
    ]


START = {"type": "message_start", "message": {"id": "m", "usage": {"input_tokens": 3}}}
TEXT = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
THINK = {"type": "content_block_start", "index": 1, "content_block": {"type": "thinking"}}
TOOL = {
    "type": "content_block_start",
    "index": 2,
    "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {}},
}
END = [
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    {"type": "message_stop"},
]

STREAMS = {
    "every usual delta": [
        START,
        TEXT,
        THINK,
        TOOL,
        {"type": "ping"},
        delta(0, type="text_delta", text="a"),
        delta(0, type="text_delta", text=""),
        delta(1, type="thinking_delta", thinking="b"),
        delta(2, type="input_json_delta", partial_json='{"x":1}'),
        {"type": "content_block_stop", "index": 2},
        *END,
    ],
    "text for a block not open": [START, delta(5, type="text_delta", text="a"), *END],
    "thinking for a text block": [START, TEXT, delta(0, type="thinking_delta", thinking="a")],
    "arguments for a text block": [START, TEXT, delta(0, type="input_json_delta", partial_json="")],
    "text for a thinking block": [START, THINK, delta(1, type="text_delta", text="a")],
    "only pings": [{"type": "ping"}, {"type": "ping"}],
    "an error frame": [
        START,
        TEXT,
        rs.SSEFrame('{"type": "content_block_delta", "index": 0}', "error"),
    ],
    "a text delta after the end": [START, TEXT, *END, delta(0, type="text_delta", text="a")],
    "a duplicate key": [
        START,
        TEXT,
        rs.SSEFrame(
            '{"type":"content_block_delta","index":0,"index":7,'
            '"delta":{"type":"text_delta","text":"a"}}'
        ),
        *END,
    ],
    "a lone surrogate": [
        START,
        TEXT,
        rs.SSEFrame(
            '{"type":"content_block_delta","index":0,'
            '"delta":{"type":"text_delta","text":"\\ud800"}}'
        ),
        *END,
    ],
}


@pytest.mark.parametrize("events", STREAMS.values(), ids=STREAMS.keys())
@pytest.mark.parametrize("skip", [False, True])
def test_streams_give_the_same_deltas_and_errors(events: list[Any], skip: bool) -> None:
    items = frames(*events)
    for at_once in (False, True):
        assert_same_decoding(DIALECT, items, at_once=at_once, skip=skip)
