"""The `"openai-responses"` typed path: usual deltas read by msgspec types, the rest as before."""

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
typed: Any = typed_decoding.typed("openai_responses")

DIALECT = "openai-responses"

TEXT = "response.output_text.delta"
SUMMARY = "response.reasoning_summary_text.delta"
REASONING = "response.reasoning_text.delta"
REFUSAL = "response.refusal.delta"
ARGUMENTS = "response.function_call_arguments.delta"


def test_the_typed_module_is_used_with_msgspec() -> None:
    assert typed is not None


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


TYPED = {
    "text": (event(TEXT, delta="Hi", output_index=0, content_index=0), "Text"),
    "text, the usual extras": (
        event(
            TEXT,
            delta="Hi",
            output_index=1,
            content_index=2,
            item_id="msg",
            sequence_number=4,
            logprobs=[],
            obfuscation="x",
        ),
        "Text",
    ),
    "text without content_index": (event(TEXT, delta="", output_index=0), "Text"),
    "summary": (event(SUMMARY, delta="s", output_index=0, summary_index=1), "Summary"),
    "reasoning": (event(REASONING, delta="r", output_index=0, content_index=0), "Reasoning"),
    "refusal": (event(REFUSAL, delta="no", output_index=0, content_index=0), "Refusal"),
    "arguments": (event(ARGUMENTS, delta='{"a', output_index=3, item_id="fc"), "Arguments"),
}


@pytest.mark.parametrize(("data", "kind"), TYPED.values(), ids=TYPED.keys())
def test_the_usual_deltas_decode_into_their_types(data: Any, kind: str) -> None:
    got = typed.decode(json.dumps(data))
    assert type(got).__name__ == kind
    assert got.delta == data["delta"]
    assert got.output_index == data["output_index"]


REFUSED = {
    "another event": event("response.completed", response={}),
    "an unknown field": event(TEXT, delta="x", output_index=0, novel=1),
    "a missing delta": event(TEXT, output_index=0),
    "a null delta": event(TEXT, delta=None, output_index=0),
    "a missing output_index": event(TEXT, delta="x"),
    "a float output_index": event(TEXT, delta="x", output_index=0.0),
    "a bool content_index": event(TEXT, delta="x", output_index=0, content_index=False),
    "a null content_index": event(TEXT, delta="x", output_index=0, content_index=None),
    "logprobs of a wrong type": event(TEXT, delta="x", output_index=0, logprobs={}),
    "custom tool input": event("response.custom_tool_call_input.delta", delta="x", output_index=0),
}


@pytest.mark.parametrize("data", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_types_do_not_know_is_refused(data: Any) -> None:
    with pytest.raises(msgspec.DecodeError):  # a ValidationError is one too
        typed.decode(json.dumps(data))


def frames(*events: Any) -> list[rs.SSEFrame]:
    return [
        e if isinstance(e, rs.SSEFrame) else rs.SSEFrame(json.dumps(e), e["type"]) for e in events
    ]


CREATED = event("response.created", response={"id": "r", "status": "in_progress"})
CALL = event(
    "response.output_item.added",
    output_index=1,
    item={"type": "function_call", "id": "fc", "call_id": "c", "name": "f", "arguments": ""},
)
COMPLETED = event("response.completed", response={"id": "r", "status": "completed"})

STREAMS = {
    "every usual delta": [
        CREATED,
        event(SUMMARY, delta="s", output_index=0, summary_index=0),
        event(REASONING, delta="", output_index=0, content_index=0),
        event(TEXT, delta="a", output_index=2, content_index=0),
        event(TEXT, delta="", output_index=2, content_index=0),
        event(TEXT, delta="b", output_index=2, content_index=0, logprobs=[{"token": "b"}]),
        event(REFUSAL, delta="no", output_index=3, content_index=0),
        CALL,
        event(ARGUMENTS, delta='{"x":1}', output_index=1),
        event("response.output_text.done", output_index=2, content_index=0, text="ab"),
        COMPLETED,
    ],
    "only empty text": [CREATED, event(TEXT, delta="", output_index=0), COMPLETED],
    "arguments for no call": [CREATED, event(ARGUMENTS, delta="x", output_index=7), COMPLETED],
    "an event name that differs": [
        CREATED,
        rs.SSEFrame(json.dumps(event(TEXT, delta="a", output_index=0)), "response.refusal.delta"),
        COMPLETED,
    ],
    "an error event name": [
        CREATED,
        rs.SSEFrame(json.dumps(event(TEXT, delta="a", output_index=0)), "error"),
    ],
    "a message event name": [
        CREATED,
        rs.SSEFrame(json.dumps(event(TEXT, delta="a", output_index=0))),
        COMPLETED,
    ],
    "a delta after the end": [CREATED, COMPLETED, event(TEXT, delta="a", output_index=0)],
    "no created": [event(TEXT, delta="a", output_index=0)],
}


@pytest.mark.parametrize("events", STREAMS.values(), ids=STREAMS.keys())
@pytest.mark.parametrize("skip", [False, True])
def test_streams_give_the_same_deltas_and_errors(events: list[Any], skip: bool) -> None:
    items = frames(*events)
    for at_once in (False, True):
        assert_same_decoding(DIALECT, items, at_once=at_once, skip=skip)
