"""One script of deltas rendered into every dialect's wire bytes and read back by the operators.

`AVAILABLE` lists the dialects whose module is installed; `deltas_of(dialect)` is the script
(`SCRIPT`, or one given) rendered into that dialect's bytes, cut in 97-byte chunks, and decoded
again: what the operators see from a real stream of that dialect.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import reactivex
from reactivex import Observable

import rxstream as rs
from rxstream.core import dialects

_MODULES = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "cohere": "cohere",
    "ollama": "ollama",
    "bedrock": "bedrock",
}
AVAILABLE = [
    d
    for d in dialects.DIALECTS
    if importlib.util.find_spec(f"rxstream.core.dialects.{_MODULES[d]}") is not None
]

SCRIPT: list[rs.Delta] = [
    rs.ReasoningDelta("Weather: "),
    rs.ReasoningDelta("call the tool."),
    rs.TextDelta("<think>hidden</think>"),
    rs.TextDelta("Let me "),
    rs.TextDelta("check."),
    rs.ToolCallDelta(0, '{"city": ', id="call_1", name="weather"),
    rs.ToolCallDelta(0, '"Paris"}'),
    rs.Finish("tool_calls"),
    rs.Usage(20, 30, 50),
]


def wire_bytes(dialect: str, script: list[rs.Delta]) -> list[bytes]:
    renderer = dialects.renderer(dialect)
    items: list[Any] = []
    for delta in script:
        items += renderer.feed(delta)
    items += renderer.close()
    body = dialects.wire_bytes(renderer, items)
    return [body[i : i + 97] for i in range(0, len(body), 97)]


def deltas_of(dialect: str, script: list[rs.Delta] = SCRIPT) -> Observable[rs.Delta]:
    source = reactivex.from_iterable(wire_bytes(dialect, script))
    if dialect == "bedrock":
        return source.pipe(rs.eventstream_frames(), rs.decode())
    if dialect == "ollama":
        return source.pipe(rs.lines(), rs.decode())
    return source.pipe(rs.lines(), rs.sse_frames(), rs.decode())
