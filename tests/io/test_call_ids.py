"""Calls that come without an id (Gemini, Ollama) answered by id, on real sockets.

The fake server answers a step with two calls that carry no id on the wire; the
loop answers them as every OpenAI-style loop does (`tool_call_id=call.id`, here in
the reverse order), and the next request must go back the provider's way: no made-up
id on the wire, each result named after its call, in the order of the calls.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.core.tools import generated_call_id, is_generated_call_id
from rxstream.models import Finish, Message, ToolCallDelta
from rxstream.testing.server import End, FakeLLMServer, Say, Scenario

CALLS = (
    ToolCallDelta(0, '{"city":"Paris"}', None, "get_weather"),
    ToolCallDelta(1, '{"zone":"CET"}', None, "get_time"),
)
ASK = [{"role": "user", "content": "Weather and time in Paris?"}]


def _step(client: httpx.Client, dialect: str, root: str, messages: list[Any]) -> Message:
    out: list[Message] = []
    rs.chat(
        client, dialect, model="m", messages=messages, api_key="sk-unit-0123", base_url=root
    ).pipe(rs.accumulate_message()).subscribe(out.append)
    (message,) = out
    return message


def _run(dialect: str) -> tuple[Message, Any]:
    """Two steps against the fake server; the first answer and the second request's body."""
    calls = Scenario(steps=(Say(*CALLS, Finish("tool_calls")), End()))
    with FakeLLMServer(calls, Scenario.text()) as server, httpx.Client() as client:
        root = f"http://127.0.0.1:{server.port}"
        first = _step(client, dialect, root, ASK)
        results = [
            {"role": "tool", "tool_call_id": call.id, "content": f"result of {call.name}"}
            for call in reversed(first.tool_calls)
        ]
        second = _step(client, dialect, root, [*ASK, first, *results])
        assert second.content == "Hello, world!"
        assert len(server.requests) == 2
        body = server.requests[1].json
    return first, body


@pytest.mark.parametrize("dialect", ["gemini", "ollama"])
def test_calls_without_ids_get_stable_ids_of_their_own(dialect: str) -> None:
    first, _ = _run(dialect)
    assert [(c.name, c.id) for c in first.tool_calls] == [
        (d.name, generated_call_id(i, d.name, d.arguments)) for i, d in enumerate(CALLS)
    ]
    assert all(is_generated_call_id(c.id) for c in first.tool_calls)
    again, _ = _run(dialect)  # the same stream gives the same ids
    assert [c.id for c in again.tool_calls] == [c.id for c in first.tool_calls]


def test_gemini_results_by_id_go_back_by_name_in_call_order() -> None:
    _, body = _run("gemini")
    model, answers = body["contents"][1:]
    assert [p["functionCall"] for p in model["parts"]] == [
        {"name": "get_weather", "args": {"city": "Paris"}},
        {"name": "get_time", "args": {"zone": "CET"}},
    ]
    assert answers["parts"] == [
        {
            "functionResponse": {
                "name": "get_weather",
                "response": {"output": "result of get_weather"},
            }
        },
        {"functionResponse": {"name": "get_time", "response": {"output": "result of get_time"}}},
    ]
    assert "rxcall_" not in json.dumps(body)


def test_ollama_results_by_id_go_back_by_tool_name_in_call_order() -> None:
    _, body = _run("ollama")
    assistant, *results = body["messages"][1:]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["get_weather", "get_time"]
    assert results == [
        {"role": "tool", "content": "result of get_weather", "tool_name": "get_weather"},
        {"role": "tool", "content": "result of get_time", "tool_name": "get_time"},
    ]
    assert "rxcall_" not in json.dumps(body)


@pytest.mark.parametrize("dialect", ["gemini", "ollama"])
def test_the_name_form_still_works(dialect: str) -> None:
    first, _ = _run(dialect)
    named = [{"role": "tool", "name": call.name, "content": "r"} for call in first.tool_calls]
    by_id = [{"role": "tool", "tool_call_id": c.id, "content": "r"} for c in first.tool_calls]
    requests = [
        json.loads(
            rs.request(dialect, model="m", messages=[*ASK, first, *results], api_key="k").content
        )
        for results in (named, by_id)
    ]
    assert requests[0] == requests[1]


@pytest.mark.parametrize("dialect", ["gemini", "ollama"])
def test_a_result_for_a_made_up_id_no_turn_holds_is_refused(dialect: str) -> None:
    orphan = {"role": "tool", "tool_call_id": generated_call_id(0, "f", "{}"), "content": "r"}
    with pytest.raises(ValueError, match="matches a tool result to its call by name"):
        rs.request(dialect, model="m", messages=[*ASK, orphan], api_key="k")


@pytest.mark.parametrize("dialect", ["openai-chat", "anthropic", "bedrock", "cohere"])
def test_providers_that_take_ids_get_the_made_up_one(
    dialect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A conversation begun on Gemini, continued elsewhere: those providers need an id.
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "x")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    first, _ = _run("gemini")
    results = [{"role": "tool", "tool_call_id": c.id, "content": "r"} for c in first.tool_calls]
    body = rs.request(
        dialect, model="m", messages=[*ASK, first, *results], api_key="k"
    ).content.decode()
    for call in first.tool_calls:
        assert call.id is not None
        assert body.count(call.id) == 2  # on the call and on its result
