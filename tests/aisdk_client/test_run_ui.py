"""A run rendered for the UI, read by the AI SDK's own chat logic (`AbstractChat`, as `useChat`).

The backend is a `FakeLLMServer` whose answer at `/api/chat` is a run's items written by
`rs.to_sse(dialect="ai-sdk")`: the first request gets the run up to its approval request; the
page decides, and its next request (sent by `sendAutomaticallyWhen`) carries the decision, which
`approval_responses` reads; the run resumed with it answers in the same UI message.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import httpx
import pytest
import reactivex

import rxstream as rs
from rxstream.core.dialects.ai_sdk import approval_id, approval_responses
from rxstream.testing import FakeLLMServer, RunScript, Scenario, ScriptCall, tool_results
from rxstream.testing.server import Raw, RecordedRequest
from tests.support.run_items import FIRST, resumed

from .conftest import HERE


def rendered(items: list[Any], message_id: str) -> str:
    frames = reactivex.from_iterable(items).pipe(
        rs.to_sse(dialect="ai-sdk", id=message_id, keepalive=None)
    )
    return b"".join(rs.to_iterator(frames)).decode()


def backend(request: RecordedRequest) -> Scenario:
    """The first request gets the run up to its approval; one with a decision, the rest."""
    body = request.json
    assert isinstance(body, dict)
    decisions = approval_responses(body["messages"])
    if not decisions:
        return Scenario(steps=(Raw(rendered(FIRST, "msg-run-1")),))
    [decision] = decisions
    assert decision.call_id == "call_3"
    # The resumed run continues the page's assistant message: the same messageId.
    last = body["messages"][-1]
    return Scenario(steps=(Raw(rendered(resumed(decision.approved), last["id"])),))


def drive(node: str, approved: bool) -> tuple[dict[str, Any], list[RecordedRequest]]:
    with FakeLLMServer(backend) as server:
        done = subprocess.run(
            [node, str(HERE / "run_approval.mjs")],
            input=json.dumps({"api": server.url_for("ai-sdk"), "approved": approved}),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        requests = server.requests
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result, requests


def tools(message: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["type"], p["state"]) for p in message["parts"] if p["type"].startswith("tool-")]


def text(message: dict[str, Any]) -> str:
    return "".join(p["text"] for p in message["parts"] if p["type"] == "text")


@pytest.mark.parametrize("approved", [True, False], ids=["approved", "denied"])
def test_use_chat_runs_the_steps_waits_for_approval_and_resumes(node: str, approved: bool) -> None:
    result, requests = drive(node, approved)
    assert result["errors"] == []
    assert result["requests"] == 2
    assert result["status"] == "ready"

    # After the first answer: two steps, the tools' outcomes, the approval asked.
    [_user, waiting] = result["waiting"]
    assert [p["type"] for p in waiting["parts"]].count("step-start") == 2
    assert tools(waiting) == [
        ("tool-get_weather", "output-available"),
        ("tool-get_time", "output-error"),
        ("tool-delete_file", "approval-requested"),
    ]
    weather, clock, delete = [p for p in waiting["parts"] if p["type"].startswith("tool-")]
    assert weather["input"] == {"city": "Paris"}
    assert weather["output"] == {"temp_c": 18}
    assert clock["errorText"] == "get_time timed out after 5 s"
    assert delete["approval"] == {"id": approval_id("call_3")}
    assert waiting["metadata"] == {
        "usage": {"inputTokens": 30, "outputTokens": 11, "totalTokens": 41}
    }

    # The decision went back in the page's next request, as the protocol spells it.
    sent = requests[1].json
    assert isinstance(sent, dict)
    assert approval_responses(sent["messages"]) == [
        rs.ApprovalResponse("call_3", approved, None if approved else "not now")
    ]

    # After the resume: the same assistant message, a third step, the answer.
    [_user, final] = result["messages"]
    assert final["id"] == waiting["id"] == "msg-run-1"
    assert [p["type"] for p in final["parts"]].count("step-start") == 3
    state = "output-available" if approved else "output-denied"
    assert tools(final) == [
        ("tool-get_weather", "output-available"),
        ("tool-get_time", "output-error"),
        ("tool-delete_file", state),
    ]
    delete = next(p for p in final["parts"] if p["type"] == "tool-delete_file")
    assert delete["approval"]["approved"] is approved
    if approved:
        assert delete["output"] == "deleted /tmp/cache"
        assert text(final) == "Clearing the cache.Done: 18 C in Paris, cache cleared."
    else:
        assert delete["approval"]["reason"] == "not now"
        assert text(final) == "Clearing the cache.18 C in Paris; the cache stays."
    assert final["metadata"]["usage"]["totalTokens"] == 79


# --------------------------------------------------------------------------- with rs.run itself


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temp_c": 18}


def clear_cache(path: str) -> str:
    """Delete a cache directory."""
    return f"deleted {path}"


TOOLS = [get_weather, rs.tool(clear_cache, needs_approval=True)]
MODEL = RunScript(
    [ScriptCall("get_weather", {"city": "Paris"})],
    [ScriptCall("clear_cache", {"path": "/tmp/cache"})],
    lambda seen: f"{seen['get_weather']['temp_c']} C; {seen['clear_cache']}",
)


class Backend:
    """A `useChat` backend running `rs.run` against a scripted model, keeping each waiting run."""

    def __init__(self, model: FakeLLMServer) -> None:
        self.model = model
        self.waiting: dict[str, rs.RunState] = {}  # the chat id -> its run's state

    def __call__(self, request: RecordedRequest) -> Scenario:
        body = request.json
        assert isinstance(body, dict)
        chat_id = body["id"]
        decisions = approval_responses(body["messages"])
        with httpx.Client() as client:
            options: dict[str, Any] = {
                "base_url": f"http://127.0.0.1:{self.model.port}",
                "api_key": "k",
                "max_tokens": 100,
            }
            if decisions:
                state = self.waiting.pop(chat_id)
                run = rs.run(
                    client, "anthropic", model="m", tools=TOOLS, resume=state,
                    decisions=decisions, **options,
                )  # fmt: skip
                message_id = body["messages"][-1]["id"]  # the resumed run continues it
            else:
                text = body["messages"][-1]["parts"][0]["text"]
                ask = [{"role": "user", "content": text}]
                run = rs.run(client, "anthropic", model="m", messages=ask, tools=TOOLS, **options)
                message_id = f"msg-{chat_id}"
            items = list(rs.to_iterator(run))
        end = items[-1]
        assert isinstance(end, rs.RunEnd)
        if end.pending:
            self.waiting[chat_id] = rs.RunState.of(end)
        return Scenario(steps=(Raw(rendered(items, message_id)),))


def test_use_chat_through_rs_run_with_an_approval(node: str) -> None:
    with FakeLLMServer(MODEL) as model, FakeLLMServer(Backend(model)) as server:
        done = subprocess.run(
            [node, str(HERE / "run_approval.mjs")],
            input=json.dumps({"api": server.url_for("ai-sdk"), "approved": True}),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        asked = [tool_results(r) for r in model.requests]
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["errors"] == []
    assert result["requests"] == 2
    [_user, waiting] = result["waiting"]
    assert tools(waiting) == [
        ("tool-get_weather", "output-available"),
        ("tool-clear_cache", "approval-requested"),
    ]
    [_user, final] = result["messages"]
    assert final["id"] == waiting["id"] == "msg-chat-run"
    assert [p["type"] for p in final["parts"]].count("step-start") == 3
    assert tools(final) == [
        ("tool-get_weather", "output-available"),
        ("tool-clear_cache", "output-available"),
    ]
    assert text(final) == "18 C; deleted /tmp/cache"
    # What the run sent the model at each step: the approved call's result only after the decision.
    assert [[r.name for r in results] for results in asked] == [
        [],
        ["get_weather"],
        ["get_weather", "clear_cache"],
    ]
