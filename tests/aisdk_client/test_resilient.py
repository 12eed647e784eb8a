"""The AI SDK's own client reads a served resilient stream and sees one message.

The upstream is `FakeLLMServer`, cut after output (`faults=["cut:3", "ok"]` per run); `rs.chat(...,
retry=rs.Retry(after_output="restart" | "continue"))` goes on, and `sse_response(...,
dialect="ai-sdk")` serves the run on 127.0.0.1 to the pinned `ai` package
(`read_streams.mjs`: every chunk checked against `uiMessageChunkSchema`, then read as
`useChat` does). What the UI message's parts hold: the answer's text once.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.testing import FakeLLMServer, Scenario

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

ANSWER = Scenario.answer(
    rs.ReasoningDelta("Short."),
    rs.TextDelta("Hello, "),
    rs.TextDelta("wide "),
    rs.TextDelta("world."),
    rs.Finish("stop"),
    rs.Usage(5, 4, 9),
)
TEXT = "Hello, wide world."


def _app(upstream: str, after_output: str) -> Starlette:
    client = httpx.AsyncClient()
    retry = rs.Retry(attempts=3, backoff=0.0, jitter=0.0, after_output=after_output)  # type: ignore[arg-type]

    async def chat(request: Request) -> Response:
        run = rs.chat(
            client,
            "anthropic",
            model="m",
            messages=[{"role": "user", "content": "Greet the wide world."}],
            base_url=upstream,
            api_key="k",
            max_tokens=50,
            retry=retry,
        )
        return sse_response(run, dialect="ai-sdk", id="msg-resilient")

    return Starlette(routes=[Route("/chat", chat, methods=["POST"])])


def read(node: str, after_output: str) -> tuple[dict[str, Any], int]:
    # read_streams.mjs POSTs twice (the body checked, then the client's read): each run
    # is cut once after output and goes on.
    with FakeLLMServer(ANSWER, faults=["cut:3", "ok", "cut:3", "ok"]) as upstream:
        app = _app(f"http://127.0.0.1:{upstream.port}", after_output)
        with serving(app) as base:
            got: dict[str, Any] = run_node(
                node, HERE / "read_streams.mjs", [{"name": "run", "url": f"{base}/chat"}]
            )["run"]
        asked = len(upstream.requests)
    assert "failure" not in got, got.get("failure")
    assert got["invalid"] == []
    assert got["errors"] == []
    assert got["finishReason"] == "stop"
    assert got["done"]
    return got, asked


def test_the_client_sees_a_restarted_answer_once(node: str) -> None:
    got, asked = read(node, "restart")
    assert asked == 4  # two attempts per run
    parts = got["message"]["parts"]
    kinds = [p["type"] for p in parts]
    assert kinds.count("data-rxstream-reset") == 1
    last = kinds.index("data-rxstream-reset")
    assert parts[last]["data"]["attempt"] == 2
    # What the UI shows after the reset: the new answer alone, its text once.
    shown = parts[last + 1 :]
    assert "".join(p["text"] for p in shown if p["type"] == "text") == TEXT
    assert [p["text"] for p in shown if p["type"] == "reasoning"] == ["Short."]


def test_the_client_sees_a_continued_answer_once(node: str) -> None:
    got, asked = read(node, "continue")
    assert asked == 4  # two attempts per run
    parts = got["message"]["parts"]
    assert "data-rxstream-reset" not in [p["type"] for p in parts]
    # The text once: what came before the cut, then only what is new.
    assert "".join(p["text"] for p in parts if p["type"] == "text") == TEXT
    assert [p["text"] for p in parts if p["type"] == "reasoning"] == ["Short."]
