"""The AI SDK's own client reads a restarted answer (`rs.Reset`) rendered as `"ai-sdk"`.

Served by `sse_response(..., dialect="ai-sdk")` on 127.0.0.1 and read by the
pinned `ai` package (`read_streams.mjs`: every chunk checked against its
`uiMessageChunkSchema`, then `DefaultChatTransport` and `readUIMessageStream`,
as `useChat` does): the stream is valid, the dropped call ends as an
`output-error` part, and the parts after the `data-rxstream-reset` part are
the new answer's alone.
"""

from __future__ import annotations

from typing import Any

import pytest
import reactivex

from rxstream.models import Finish, ReasoningDelta, Reset, TextDelta, ToolCallDelta, Usage

from ..support.node import run_node
from .conftest import HERE

pytest.importorskip("starlette", reason="the client test serves with starlette")
pytest.importorskip("uvicorn", reason="the client test serves with uvicorn")

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from rxstream.serve import sse_response
from tests.support.serve import serving

RESTARTED = [
    ReasoningDelta("hmm"),
    TextDelta("Hel"),
    ToolCallDelta(0, '{"city":', id="call_a", name="weather"),
    Reset(2, "the connection closed"),
    TextDelta("Hello"),
    ToolCallDelta(0, '{"city":"Paris"}', id="call_a", name="weather"),
    Finish("tool_calls"),
    Usage(3, 4, 7),
]


def _app() -> Starlette:
    async def chat(request: Request) -> Response:
        return sse_response(reactivex.from_iterable(RESTARTED), dialect="ai-sdk", id="msg-reset")

    return Starlette(routes=[Route("/chat", chat, methods=["POST"])])


def test_the_client_reads_a_restarted_answer(node: str) -> None:
    with serving(_app()) as base:
        got: dict[str, Any] = run_node(
            node, HERE / "read_streams.mjs", [{"name": "reset", "url": f"{base}/chat"}]
        )["reset"]
    assert "failure" not in got, got.get("failure")
    assert got["invalid"] == []
    assert got["errors"] == []
    assert got["finishReason"] == "tool-calls"
    parts = got["message"]["parts"]
    kinds = [p["type"] for p in parts]
    last = max(i for i, kind in enumerate(kinds) if kind == "data-rxstream-reset")
    assert parts[last]["data"] == {"attempt": 2, "reason": "the connection closed"}
    dropped, shown = parts[:last], parts[last + 1 :]
    # What the UI shows after the reset: the new answer alone.
    assert [p["text"] for p in shown if p["type"] == "text"] == ["Hello"]
    calls = [p for p in shown if p["type"] == "tool-weather"]
    assert [(p["state"], p["input"]) for p in calls] == [("input-available", {"city": "Paris"})]
    # Before it, the dropped answer: its half call ended as an error, never left pending.
    [half] = [p for p in dropped if p["type"] == "tool-weather"]
    assert half["state"] == "output-error"
    assert half["toolCallId"] != calls[0]["toolCallId"]
