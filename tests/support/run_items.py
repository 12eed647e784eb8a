"""A run's items as `rs.run` gives them, for the tests of what renders, stores and follows a run.

Two parts of one run: the first asks two tools in parallel (one fails), then a step whose call
needs approval, and waits (`RunEnd.pending`); the second resumes with the decision, runs the
approved call and answers. Written by hand from the run item types, so the renderers, the wire
format and Redis are tested without the run itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import rxstream as rs
from rxstream.core.message import MessageAccumulator
from rxstream.models import DELTA_CLASSES

USER = {"role": "user", "content": "Weather in Paris, and clear the cache?"}
DELETE = rs.ApprovalRequest("call_3", "delete_file", {"path": "/tmp/cache"})

STEP_1: list[Any] = [
    rs.StepStart(1, "openai-chat", "gpt-4o-mini"),
    rs.ToolCallDelta(0, '{"city":', id="call_1", name="get_weather"),
    rs.ToolCallDelta(0, '"Paris"}'),
    rs.ToolCallDelta(1, '{"zone":"CET"}', id="call_2", name="get_time"),
    rs.Finish("tool_calls"),
    rs.Usage(10, 5, 15),
    rs.StepEnd(1, "tool_calls", rs.Usage(10, 5, 15)),
    rs.ToolResult("call_1", "get_weather", {"temp_c": 18}),
    rs.ToolResult("call_2", "get_time", error="get_time timed out after 5 s"),
]
STEP_2: list[Any] = [
    rs.StepStart(2, "openai-chat", "gpt-4o-mini"),
    rs.TextDelta("Clearing "),
    rs.TextDelta("the cache."),
    rs.ToolCallDelta(0, '{"path":"/tmp/cache"}', id="call_3", name="delete_file"),
    rs.Finish("tool_calls"),
    rs.Usage(20, 6, 26),
    rs.StepEnd(2, "tool_calls", rs.Usage(20, 6, 26)),
    DELETE,
]


def conversation(*steps: list[Any]) -> tuple[Any, ...]:
    """The messages of a run's steps (the user's, each answer, its results), as `RunEnd` has."""
    out: list[Any] = [USER]
    for items in steps:
        deltas = [i for i in items if isinstance(i, DELTA_CLASSES)]
        message = rs.Message(
            content="".join(d.text for d in deltas if isinstance(d, rs.TextDelta)),
            finish_reason="tool_calls"
            if any(isinstance(d, rs.ToolCallDelta) for d in deltas)
            else "stop",
        )
        out.append(message)
        for result in items:
            if isinstance(result, rs.ToolResult):
                content = result.error if result.error is not None else result.output
                out.append({"role": "tool", "tool_call_id": result.call_id, "content": content})
    return tuple(out)


WAITING = rs.RunEnd(conversation(STEP_1, STEP_2), rs.Usage(30, 11, 41), 2, (DELETE,))
#: The run up to its approval request: what the first response renders.
FIRST: list[Any] = [*STEP_1, *STEP_2, WAITING]


def resumed(approved: bool) -> list[Any]:
    """The run resumed with the decision on `call_3`: the call runs (or is denied), then answers."""
    if approved:
        result = rs.ToolResult("call_3", "delete_file", "deleted /tmp/cache")
        words = ["Done: ", "18 C in Paris, cache cleared."]
    else:
        result = rs.ToolResult("call_3", "delete_file", error="denied: not now", denied=True)
        words = ["18 C in Paris; ", "the cache stays."]
    step_3: list[Any] = [
        rs.StepStart(3, "openai-chat", "gpt-4o-mini"),
        *[rs.TextDelta(word) for word in words],
        rs.Finish("stop"),
        rs.Usage(30, 8, 38),
        rs.StepEnd(3, "stop", rs.Usage(30, 8, 38)),
    ]
    reason = None if approved else "not now"
    head: list[Any] = [rs.ApprovalResponse("call_3", approved, reason), result]
    sent_back = {"role": "tool", "tool_call_id": "call_3", "content": result.error or result.output}
    answer = rs.Message(content="".join(words), finish_reason="stop")
    end = rs.RunEnd((*WAITING.messages, sent_back, answer), rs.Usage(60, 19, 79), 3)
    return [*head, *step_3, end]


def as_the_ui_stream_carries(items: list[Any]) -> list[Any]:
    """A run's items as its AI SDK UI stream carries them (`rs.decode("ai-sdk", runs=True)`).

    The run items, and between them each stretch of deltas as the text, reasoning and tool
    calls it adds up to. Left out: what the stream has no place for (`ApprovalResponse`, the
    `RunEnd`'s conversation, a denial's reason), and the per-step `Finish`, `Usage` and
    `Metadata` deltas (a step's finish and usage are on its `StepEnd`; the stream ends with
    one finish and the run's usage).
    """
    out: list[Any] = []
    deltas: list[Any] = []

    def answer() -> None:
        if deltas:
            accumulator = MessageAccumulator()
            accumulator.feed_all(deltas, [])
            (message,) = accumulator.close()
            out.append((message.content, message.reasoning, message.tool_calls))
            deltas.clear()

    for item in items:
        if isinstance(item, rs.Finish | rs.Usage | rs.Metadata):
            continue
        if isinstance(item, DELTA_CLASSES):
            deltas.append(item)
            continue
        answer()
        if isinstance(item, rs.ToolResult) and item.denied:
            out.append(dataclasses.replace(item, error=None))
        elif not isinstance(item, rs.ApprovalResponse | rs.RunEnd):
            out.append(item)
    answer()
    return out
