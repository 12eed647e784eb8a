"""The `"cohere"` typed path: the usual deltas read by msgspec types, the rest as before."""

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
typed: Any = typed_decoding.typed("cohere")

DIALECT = "cohere"


def test_the_typed_module_is_used_with_msgspec() -> None:
    assert typed is not None


def content(index: Any = 0, **fields: Any) -> dict[str, Any]:
    return {"type": "content-delta", "index": index, "delta": {"message": {"content": fields}}}


def call(index: Any = 0, arguments: Any = "") -> dict[str, Any]:
    function = {"arguments": arguments}
    body = {"message": {"tool_calls": {"function": function}}}
    return {"type": "tool-call-delta", "index": index, "delta": body}


TYPED = {
    "text": (content(text="Hi"), "ContentDelta"),
    "thinking": (content(thinking="hm"), "ContentDelta"),
    "any index": (content("0", text="Hi"), "ContentDelta"),
    "arguments": (call(0, '{"a'), "CallDelta"),
    "arguments, null index": (call(None, "x"), "CallDelta"),
}


@pytest.mark.parametrize(("data", "kind"), TYPED.values(), ids=TYPED.keys())
def test_the_usual_deltas_decode_into_their_types(data: Any, kind: str) -> None:
    assert type(typed.decode(json.dumps(data))).__name__ == kind


REFUSED = {
    "another event": {"type": "content-end", "index": 0},
    "logprobs": {**content(text="x"), "logprobs": {"token_ids": [1]}},
    "an unknown content field": content(text="x", type="text"),
    "text of a wrong type": content(text=1),
    "a float call index": call(0.0, "x"),
    "a bool call index": call(True, "x"),
    "null arguments": call(0, None),
    "a call id": {**call(0, "x"), "id": "c"},
}


@pytest.mark.parametrize("data", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_types_do_not_know_is_refused(data: Any) -> None:
    with pytest.raises(msgspec.DecodeError):  # a ValidationError is one too
        typed.decode(json.dumps(data))


def frames(*events: Any) -> list[rs.SSEFrame]:
    return [
        e if isinstance(e, rs.SSEFrame) else rs.SSEFrame(json.dumps(e), str(e["type"]))
        for e in events
    ]


START = {"type": "message-start", "id": "m", "delta": {"message": {"role": "assistant"}}}
CALL_START = {
    "type": "tool-call-start",
    "index": 0,
    "delta": {
        "message": {
            "tool_calls": {
                "id": "c",
                "type": "function",
                "function": {"name": "f", "arguments": ""},
            }
        }
    },
}
END = {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}

STREAMS = {
    "every usual delta": [
        START,
        content(text="a"),
        content(text=""),
        content(thinking="t"),
        content(thinking=""),
        content(text="b", thinking="c"),
        content(text=None, thinking="d"),
        CALL_START,
        call(0, '{"x":'),
        call(None, "1}"),
        call(0, ""),
        END,
    ],
    "no text, no thinking": [START, content(), END],
    "null text": [START, content(text=None), END],
    "only empty text": [START, content(text=""), END],
    "arguments for no call": [START, call(3, "x"), END],
    "an event name that differs": [
        START,
        rs.SSEFrame(json.dumps(content(text="a")), "tool-call-delta"),
        END,
    ],
    "a message event name": [START, rs.SSEFrame(json.dumps(content(text="a"))), END],
    "an error event name": [START, rs.SSEFrame(json.dumps(content(text="a")), "error")],
    "a delta after the end": [START, END, content(text="a")],
    "no start": [content(text="a")],
}


@pytest.mark.parametrize("events", STREAMS.values(), ids=STREAMS.keys())
@pytest.mark.parametrize("skip", [False, True])
def test_streams_give_the_same_deltas_and_errors(events: list[Any], skip: bool) -> None:
    items = frames(*events)
    for at_once in (False, True):
        assert_same_decoding(DIALECT, items, at_once=at_once, skip=skip)
