"""A run's UI message stream read back: `rs.decode("ai-sdk", runs=True)` gives the run's items
(steps, tools' results, approval requests) between the deltas; without `runs`, deltas only."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reactivex
from hypothesis import given
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core.dialects import DIALECTS, decoder
from rxstream.core.dialects.ai_sdk import AISDKDecoder, AISDKRenderer
from rxstream.errors import MalformedChunkError
from rxstream.models import RUN_ITEM_CLASSES, SSEFrame
from tests.support.run_items import FIRST, as_the_ui_stream_carries, resumed


def frames(items: list[Any]) -> list[Any]:
    renderer = AISDKRenderer(id="msg-1")
    return [frame for item in items for frame in renderer.feed(item)] + renderer.close()


def read(wire: list[Any], **options: Any) -> list[Any]:
    reader = AISDKDecoder(**options)
    out: list[Any] = []
    reader.feed_all(wire, out)
    return out + reader.close()


def round_trip(items: list[Any]) -> list[Any]:
    return as_the_ui_stream_carries(read(frames(items), runs=True))


def test_a_run_up_to_its_approval_reads_back_as_its_items() -> None:
    back = read(frames(FIRST), runs=True)
    assert as_the_ui_stream_carries(back) == as_the_ui_stream_carries(FIRST)
    assert [type(i).__name__ for i in back if isinstance(i, RUN_ITEM_CLASSES)] == [
        "StepStart", "StepEnd", "ToolResult", "ToolResult",
        "StepStart", "StepEnd", "ApprovalRequest",
    ]  # fmt: skip
    # Each step's finish and usage are on its StepEnd; the stream ends with the last
    # finish and the run's summed usage.
    assert back[-2:] == [rs.Usage(30, 11, 41), rs.Finish("tool_calls")]
    steps = [i for i in back if isinstance(i, rs.StepEnd)]
    assert [s.usage for s in steps] == [rs.Usage(10, 5, 15), rs.Usage(20, 6, 26)]


@pytest.mark.parametrize("approved", [True, False], ids=["approved", "denied"])
def test_a_resumed_run_reads_back_with_its_decided_call_first(approved: bool) -> None:
    items = resumed(approved)
    back = as_the_ui_stream_carries(read(frames(items), runs=True))
    decided, *rest = as_the_ui_stream_carries(items)
    # The decided call is not in this stream (its step was the first response's): its
    # result comes without the tool's name.
    assert back == [rs.ToolResult(decided.call_id, "", decided.output, decided.error,
                                  decided.denied), *rest]  # fmt: skip


def test_without_runs_a_run_reads_as_deltas_that_accumulate() -> None:
    back = read(frames(FIRST))
    assert not [i for i in back if isinstance(i, RUN_ITEM_CLASSES)]
    assert not [i for i in back if isinstance(i, rs.Metadata) and "events" in i.data
                and i.data["events"][0]["type"] == "data-rxstream-step"]  # fmt: skip
    messages = reactivex.from_iterable(back).pipe(rs.accumulate_message()).run()
    assert messages.content == "Clearing the cache."
    assert [c.id for c in messages.tool_calls] == ["call_1", "call_2", "call_3"]


def test_a_backend_s_steps_without_rxstream_s_parts() -> None:
    # An AI SDK backend (streamText) marks steps with start-step / finish-step alone, and
    # runs its tool itself: the run items say what the stream says, no more.
    chunks = [
        {"type": "start", "messageId": "m"},
        {"type": "start-step"},
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "f", "input": {"a": 1}},
        {"type": "tool-output-available", "toolCallId": "c1", "output": 2},
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "2"},
        {"type": "text-end", "id": "t"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]
    wire = [SSEFrame(json.dumps(c)) for c in chunks] + [SSEFrame("[DONE]")]
    back = read(wire, runs=True)
    assert [i for i in back if not isinstance(i, rs.Metadata)] == [
        rs.StepStart(1, "", ""),
        rs.ToolCallDelta(0, '{"a":1}', "c1", "f"),
        rs.ToolResult("c1", "f", 2),
        rs.StepEnd(1, None),
        rs.StepStart(2, "", ""),
        rs.TextDelta("2"),
        rs.StepEnd(2, None),
        rs.Finish("stop"),
    ]


def test_a_provider_s_tool_output_stays_a_server_tool_result() -> None:
    answer = [
        rs.StepStart(1, "anthropic", "m"),
        rs.ServerToolCall("srv_1", "web_search", {"q": "x"}),
        rs.ServerToolResult("srv_1", "web_search", [1]),
        rs.StepEnd(1, "stop"),
    ]
    back = read(frames(answer), runs=True)
    assert [i for i in back if isinstance(i, rs.ServerToolCall | rs.ServerToolResult)] == [
        rs.ServerToolCall("srv_1", "web_search", {"q": "x"}),
        rs.ServerToolResult("srv_1", "web_search", [1]),
    ]
    assert not [i for i in back if isinstance(i, rs.ToolResult)]


@pytest.mark.parametrize(
    ("data", "what"),
    [
        ({"type": "text", "text": "x", "choice": 0}, "a step_start or step_end item"),
        ({"type": "step_start", "step": 1}, "a step_start or step_end item"),
        ("step", "a step_start or step_end item"),
    ],
    ids=["another-item", "missing-fields", "not-an-object"],
)
def test_a_broken_step_part_is_malformed(data: Any, what: str) -> None:
    part = SSEFrame(json.dumps({"type": "data-rxstream-step", "data": data, "transient": True}))
    for runs in (True, False):
        with pytest.raises(MalformedChunkError, match=what):
            read([SSEFrame('{"type":"start"}'), part], runs=runs)


def test_a_tool_output_error_without_its_text_is_malformed() -> None:
    chunk = SSEFrame('{"type":"tool-output-error","toolCallId":"c1"}')
    with pytest.raises(MalformedChunkError, match="errorText"):
        read([SSEFrame('{"type":"start"}'), chunk], runs=True)


def test_runs_is_for_the_ai_sdk_stream_only() -> None:
    assert isinstance(decoder("ai-sdk", runs=True), AISDKDecoder)
    with pytest.raises(ValueError, match="runs=True is for the 'ai-sdk' dialect"):
        rs.decode("openai-chat", runs=True)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="runs=True is for the 'ai-sdk' dialect"):
        decoder("auto", runs=True)


def test_rs_decode_reads_a_run_served_as_the_ui_stream() -> None:
    served = reactivex.from_iterable(FIRST).pipe(
        rs.to_sse(dialect="ai-sdk", id="msg-1", keepalive=None)
    )
    body = b"".join(rs.to_iterator(served))
    back = list(
        rs.to_iterator(
            reactivex.of(body).pipe(rs.lines(), rs.sse_frames(), rs.decode("ai-sdk", runs=True))
        )
    )
    assert as_the_ui_stream_carries(back) == as_the_ui_stream_carries(FIRST)


# -- any run: random steps, calls and outcomes ---------------------------------------------

NAMES = st.sampled_from(["get_weather", "get_time", "delete_file"])
ARGS = st.dictionaries(st.sampled_from("abc"), st.integers() | st.text(max_size=5), max_size=2)
USAGE = st.none() | st.builds(
    lambda p, c, e: rs.Usage(p, c, p + c, estimated=e),
    st.integers(0, 99),
    st.integers(0, 99),
    st.booleans(),
)
OUTCOME = st.sampled_from(["output", "error", "denied", "approval"])
NOT_WAITING = st.sampled_from(["output", "error", "denied"])  # no approval but in the last step


@st.composite
def runs(draw: st.DrawFn) -> list[Any]:
    """A run's items, as `rs.run` emits them: steps of text, reasoning and calls, each step
    ended, then each call's outcome (an approval request in the last step only)."""
    items: list[Any] = []
    steps = draw(st.integers(1, 3))
    for step in range(1, steps + 1):
        last = step == steps
        items.append(rs.StepStart(step, draw(st.sampled_from(DIALECTS)), "m"))
        for text in draw(st.lists(st.text(min_size=1, max_size=8), max_size=2)):
            kind = draw(st.sampled_from([rs.TextDelta, rs.ReasoningDelta]))
            items.append(kind(text))
        calls = [
            (f"call_{step}_{n}", draw(NAMES), draw(ARGS)) for n in range(draw(st.integers(0, 2)))
        ]
        for n, (call_id, name, arguments) in enumerate(calls):
            text = json.dumps(arguments)
            cut = draw(st.integers(0, len(text)))
            items.append(rs.ToolCallDelta(n, text[:cut], id=call_id, name=name))
            if cut < len(text):
                items.append(rs.ToolCallDelta(n, text[cut:]))
        reason = "tool_calls" if calls else draw(st.sampled_from(["stop", "length"]))
        usage = draw(USAGE)
        items += [rs.Finish(reason), *([usage] if usage else [])]
        items.append(rs.StepEnd(step, reason, usage))
        for call_id, name, arguments in calls:
            outcome = draw(OUTCOME if last else NOT_WAITING)
            if outcome == "approval":
                items.append(rs.ApprovalRequest(call_id, name, arguments))
            elif outcome == "denied":
                items.append(rs.ToolResult(call_id, name, error="denied: no", denied=True))
            elif outcome == "error":
                items.append(rs.ToolResult(call_id, name, error=f"{name} failed"))
            else:
                items.append(rs.ToolResult(call_id, name, draw(ARGS)))
    pending = tuple(i for i in items if isinstance(i, rs.ApprovalRequest))
    items.append(rs.RunEnd((), None, steps, pending))
    return items


@given(runs())
def test_any_run_reads_back_as_its_items(items: list[Any]) -> None:
    assert round_trip(items) == as_the_ui_stream_carries(items)


def test_a_waiting_call_asked_again_outside_any_step_and_a_provider_tool_s_error() -> None:
    # A resumed run that still waits asks again in no step, for a call this stream never
    # showed; a provider's tool that failed stays an event, as without `runs`.
    chunks = [
        {"type": "start", "messageId": "m"},
        {"type": "tool-approval-request", "approvalId": "approval-c3", "toolCallId": "c3"},
        {
            "type": "tool-output-error",
            "toolCallId": "s1",
            "errorText": "x",
            "providerExecuted": True,
        },
        {"type": "finish", "finishReason": "tool-calls"},
    ]
    back = read([SSEFrame(json.dumps(c)) for c in chunks], runs=True)
    assert back[1:] == [
        rs.ApprovalRequest("c3", ""),
        rs.Metadata({"events": [chunks[2]]}),
        rs.Finish("tool_calls"),
    ]
