"""A run rendered as the AI SDK's UI message stream (one message of steps), and the decisions
a `useChat` request carries back (`approval_responses`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reactivex

import rxstream as rs
from rxstream.core.dialects.ai_sdk import AISDKRenderer, approval_id, approval_responses
from rxstream.core.tools import generated_call_id
from rxstream.errors import MalformedChunkError
from tests.support.run_items import FIRST, resumed


def chunks(items: list[Any], **options: Any) -> list[Any]:
    renderer = AISDKRenderer(id="msg-1", **options)
    frames = [frame for item in items for frame in renderer.feed(item)] + renderer.close()
    return [frame.data if frame.data == "[DONE]" else json.loads(frame.data) for frame in frames]


STEP = "data-rxstream-step"


def kinds(items: list[Any]) -> list[str]:
    return [c if isinstance(c, str) else c["type"] for c in chunks(items)]


def test_a_run_up_to_its_approval_is_one_message_of_two_steps() -> None:
    assert kinds(FIRST) == [
        "start",
        STEP,  # the step's StepStart, for a Python reader (useChat leaves it out)
        "start-step",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",  # StepEnd: the step's calls are whole
        "tool-input-available",
        STEP,  # the StepEnd
        "tool-output-available",  # the tools' results, in their step
        "tool-output-error",
        "finish-step",  # when the next step starts
        STEP,
        "start-step",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        STEP,
        "tool-approval-request",
        "finish-step",  # at RunEnd
        "finish",
        "[DONE]",
    ]
    out = chunks(FIRST)
    assert out[1] == {
        "type": STEP,
        "data": {"type": "step_start", "step": 1, "dialect": "openai-chat", "model": "gpt-4o-mini"},
        "transient": True,
    }
    assert out[11] == {
        "type": "tool-output-available",
        "toolCallId": "call_1",
        "output": {"temp_c": 18},
    }
    assert out[12] == {
        "type": "tool-output-error",
        "toolCallId": "call_2",
        "errorText": "get_time timed out after 5 s",
    }
    assert out[24] == {
        "type": "tool-approval-request",
        "approvalId": approval_id("call_3"),
        "toolCallId": "call_3",
    }
    # The run's summed usage, not the last step's; a waiting run asked for tools.
    assert out[26] == {
        "type": "finish",
        "finishReason": "tool-calls",
        "messageMetadata": {"usage": {"inputTokens": 30, "outputTokens": 11, "totalTokens": 41}},
    }


@pytest.mark.parametrize(
    ("approved", "result"),
    [
        (
            True,
            {
                "type": "tool-output-available",
                "toolCallId": "call_3",
                "output": "deleted /tmp/cache",
            },
        ),
        (False, {"type": "tool-output-denied", "toolCallId": "call_3"}),
    ],
    ids=["approved", "denied"],
)
def test_a_resumed_run_gives_the_decided_call_first_then_its_steps(
    approved: bool, result: dict[str, Any]
) -> None:
    out = chunks(resumed(approved))
    # The ApprovalResponse renders nothing: the decision came from the page.
    assert out[:2] == [{"type": "start", "messageId": "msg-1"}, result]
    assert [c if isinstance(c, str) else c["type"] for c in out[2:]] == [
        STEP,
        "start-step",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        STEP,
        "finish-step",
        "finish",
        "[DONE]",
    ]
    assert out[-2]["finishReason"] == "stop"
    assert out[-2]["messageMetadata"]["usage"]["totalTokens"] == 79


def test_a_call_id_repeated_by_a_later_step_is_made_unique_and_its_result_follows() -> None:
    # A provider that numbers its calls per answer repeats `call_0` in step 2.
    items = [
        rs.StepStart(1, "ollama", "m"),
        rs.ToolCallDelta(0, "{}", id="call_0", name="f"),
        rs.StepEnd(1, "tool_calls"),
        rs.ToolResult("call_0", "f", 1),
        rs.StepStart(2, "ollama", "m"),
        rs.ToolCallDelta(0, "{}", id="call_0", name="g"),
        rs.StepEnd(2, "tool_calls"),
        rs.ToolResult("call_0", "g", 2),
        rs.ApprovalRequest("call_0", "g", {}),
    ]
    ids = [c.get("toolCallId") for c in chunks(items) if isinstance(c, dict) and "toolCallId" in c]
    # Each: tool-input-start, -delta, -available, tool-output-available; then the approval.
    assert ids == ["call_0"] * 4 + ["call_0-0"] * 5


def test_a_call_without_an_id_has_its_result_under_the_streams_id() -> None:
    # Gemini and Ollama may send a call without an id: the stream names it at its start, the
    # run's result names it by the id the core made once the call was whole (rxcall_...).
    arguments = '{"city": "Paris"}'
    made = generated_call_id(0, "get_weather", arguments)
    items = [
        rs.StepStart(1, "gemini", "m"),
        rs.ToolCallDelta(0, arguments, name="get_weather"),
        rs.StepEnd(1, "tool_calls"),
        rs.ToolResult(made, "get_weather", {"temp_c": 18}),
        rs.StepStart(2, "gemini", "m"),
        rs.ToolCallDelta(0, arguments, name="get_weather"),
        rs.StepEnd(2, "tool_calls"),
        rs.ApprovalRequest(made, "get_weather", {"city": "Paris"}),
    ]
    ids = [c.get("toolCallId") for c in chunks(items) if isinstance(c, dict) and "toolCallId" in c]
    # Step 1: tool-input-start, -delta, -available, tool-output-available, all one id; step 2's
    # call (the same arguments, so the same made-up id) gets its own, and so does its approval.
    assert len(set(ids[:4])) == 1
    assert made not in ids
    assert len(set(ids[4:])) == 1
    assert ids[4] != ids[0]


def test_an_empty_step_still_opens_and_finishes() -> None:
    items = [rs.StepStart(1, "openai-chat", "m"), rs.StepEnd(1, None), rs.RunEnd((), None, 1)]
    assert kinds(items) == ["start", STEP, "start-step", STEP, "finish-step", "finish", "[DONE]"]


def test_to_sse_passes_a_run_to_the_ai_sdk_and_refuses_it_elsewhere() -> None:
    run = reactivex.from_iterable(FIRST)
    body = b"".join(
        rs.to_iterator(run.pipe(rs.to_sse(dialect="ai-sdk", id="msg-1", keepalive=None)))
    )
    assert b'"type":"tool-approval-request"' in body
    with pytest.raises(
        TypeError, match=r"the 'anthropic' format sends one answer, not a run's StepStart"
    ):
        list(rs.to_iterator(run.pipe(rs.to_sse(dialect="anthropic", keepalive=None))))


def part(state: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "tool-delete_file",
        "toolCallId": "call_3",
        "input": {},
        "state": state,
        **fields,
    }


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        pytest.param(
            [part("approval-responded", approval={"id": "a", "approved": True})],
            [rs.ApprovalResponse("call_3", True)],
            id="approved",
        ),
        pytest.param(
            [part("approval-responded", approval={"id": "a", "approved": False, "reason": "no"})],
            [rs.ApprovalResponse("call_3", False, "no")],
            id="denied-with-reason",
        ),
        pytest.param(
            [
                part("approval-requested", approval={"id": "a"}),
                part("output-available", output=1, approval={"id": "b", "approved": True}),
                {"type": "text", "text": "Hi"},
            ],
            [],
            id="undecided-or-already-run",
        ),
    ],
)
def test_approval_responses_reads_the_decided_parts(
    parts: list[Any], expected: list[rs.ApprovalResponse]
) -> None:
    messages = [
        {"id": "u", "role": "user", "parts": [{"type": "text", "text": "Hi"}]},
        {"id": "m", "role": "assistant", "parts": parts},
    ]
    assert approval_responses(messages) == expected


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ("hi", "messages must be a list of objects"),
        ([{"role": "assistant", "parts": "x"}], r"messages\[\]\.parts must be a list"),
        ([{"parts": [part("approval-responded")]}], "approval.approved true or false"),
        (
            [{"parts": [part("approval-responded", approval={"approved": "yes"})]}],
            "approval.approved true or false",
        ),
    ],
)
def test_a_broken_decision_is_a_malformed_chunk_error(messages: Any, match: str) -> None:
    with pytest.raises(MalformedChunkError, match=match) as caught:
        approval_responses(messages)
    assert caught.value.dialect == "ai-sdk"


def test_a_resumed_run_that_still_waits_asks_again_outside_any_step() -> None:
    waiting = rs.ApprovalRequest("call_3", "delete_file", {})
    items = [waiting, rs.RunEnd((), None, 2, (waiting,))]
    assert chunks(items) == [
        {"type": "start", "messageId": "msg-1"},
        {"type": "tool-approval-request", "approvalId": "approval-call_3", "toolCallId": "call_3"},
        {"type": "finish", "finishReason": "tool-calls"},  # it waits for a call
        "[DONE]",
    ]
