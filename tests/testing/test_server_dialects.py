"""`FakeLLMServer` in every dialect: one scenario, each provider's path, wire and faults."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import reactivex
from reactivex import Observable

import rxstream as rs
from rxstream.testing.builders import text_chunk
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import (
    SERVED,
    Chunk,
    Disconnect,
    Done,
    End,
    Fail,
    FakeLLMServer,
    Keepalive,
    Raw,
    Say,
    Scenario,
    Stall,
    route,
)
from tests.support.sources import Outcome, run

_MODULES = {
    "openai-chat": "openai_chat",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
    "cohere": "cohere",
    "ollama": "ollama",
    "bedrock": "bedrock",
    "ai-sdk": "ai_sdk",
}
# Every dialect whose module is in the tree (all of them once issue 11 is complete).
AVAILABLE = [
    d
    for d in SERVED
    if importlib.util.find_spec(f"rxstream.core.dialects.{_MODULES[d]}") is not None
]

BODIES: dict[str, dict[str, Any]] = {
    "openai-chat": {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    "openai-responses": {"model": "m", "stream": True, "input": "hi"},
    "anthropic": {
        "model": "m",
        "stream": True,
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
    },
    "gemini": {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    "cohere": {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    "ollama": {"model": "m", "messages": []},
    "bedrock": {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
    "ai-sdk": minimal_body("ai-sdk"),
}


def wire(dialect: str) -> Callable[[Observable[Any]], Observable[rs.Delta]]:
    """From a source's output to deltas, as each dialect's wire needs."""
    if dialect == "bedrock":
        return reactivex.compose(rs.eventstream_frames(), rs.decode(dialect))
    if dialect == "ollama":
        return rs.decode(dialect)
    return reactivex.compose(rs.sse_frames(), rs.decode(dialect))


def fetch(server: FakeLLMServer, dialect: str, *operators: Any) -> Outcome:
    with httpx.Client(timeout=5.0) as client:
        source = rs.from_request(
            client,
            "POST",
            server.url_for(dialect),
            json=BODIES[dialect],
            body="bytes" if dialect == "bedrock" else "lines",
        )
        return run(source.pipe(wire(dialect), *operators))


def message(server: FakeLLMServer, dialect: str) -> rs.Message:
    outcome = fetch(server, dialect, rs.accumulate_message())
    assert outcome.error is None, outcome.error
    assert outcome.completed
    [answer] = outcome.items
    assert isinstance(answer, rs.Message)
    return answer


@pytest.mark.parametrize(
    ("path", "dialect"),
    [
        ("/v1/chat/completions", "openai-chat"),
        ("/chat/completions", "openai-chat"),
        ("/openai/deployments/gpt/chat/completions?api-version=2024-10-21", "openai-chat"),
        ("/v1/responses", "openai-responses"),
        ("/v1/messages", "anthropic"),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "gemini"),
        ("/v1/projects/p/locations/l/publishers/google/models/g:streamGenerateContent", "gemini"),
        ("/v2/chat", "cohere"),
        ("/api/chat", "ollama"),
        ("/model/anthropic.claude-v2/converse-stream", "bedrock"),
        ("/v1/embeddings", None),
    ],
)
def test_routes(path: str, dialect: str | None) -> None:
    assert route(path) == dialect


UI_USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}


@pytest.mark.parametrize(
    ("body", "dialect"),
    [
        (minimal_body("ai-sdk"), "ai-sdk"),
        ({"id": "chat-1", "trigger": "submit-message"}, "ai-sdk"),  # no messages: still useChat's
        ({"messages": [UI_USER]}, "ai-sdk"),
        (minimal_body("ollama"), "ollama"),
        ({"model": "m", "id": "x", "trigger": "submit-message"}, "ollama"),  # Ollama needs model
        ({"messages": [{"role": "user", "content": "hi"}]}, "ollama"),
        ({}, "ollama"),
        (None, "ollama"),
        ([UI_USER], "ollama"),
    ],
)
def test_the_body_tells_the_ai_sdk_from_ollama_at_api_chat(body: Any, dialect: str) -> None:
    assert route("/api/chat", body) == dialect
    assert route("/v1/messages", body) == "anthropic"


def test_every_ai_sdk_answer_has_its_own_message_id_and_the_protocol_header() -> None:
    with FakeLLMServer(Scenario.text("Hi")) as server, httpx.Client() as client:
        answers = [client.post(server.url_for("ai-sdk"), json=BODIES["ai-sdk"]) for _ in "ab"]
        ollama = client.post(server.url_for("ollama"), json=BODIES["ollama"])
    starts = [answer.text.split("\n", 1)[0] for answer in answers]
    assert starts == [
        'data: {"type":"start","messageId":"msg-fake-1"}',
        'data: {"type":"start","messageId":"msg-fake-2"}',
    ]
    assert all(a.headers["x-vercel-ai-ui-message-stream"] == "v1" for a in answers)
    assert all(a.text.endswith("data: [DONE]\n\n") for a in answers)
    assert "x-vercel-ai-ui-message-stream" not in ollama.headers
    assert ollama.headers["content-type"] == "application/x-ndjson"


def test_the_ai_sdk_resume_path_has_nothing_to_resume() -> None:
    with FakeLLMServer() as server, httpx.Client() as client:
        resumed = client.get(f"http://127.0.0.1:{server.port}/api/chat/chat-1/stream")
        other = client.get(f"http://127.0.0.1:{server.port}/api/chat/chat-1/other")
    assert (resumed.status_code, resumed.content) == (204, b"")
    assert other.status_code == 404


@pytest.mark.parametrize("dialect", AVAILABLE)
def test_one_scripted_answer_in_every_dialect(dialect: str) -> None:
    scenario = Scenario.answer(
        rs.TextDelta("Hel"), rs.TextDelta("lo"), rs.Finish("stop"), rs.Usage(5, 2, 7)
    )
    with FakeLLMServer(scenario) as server:
        answer = message(server, dialect)
        assert server.requests[0].path == server.url_for(dialect).split(str(server.port), 1)[1]
    assert answer.content == "Hello"
    assert answer.finish_reason == "stop"
    assert answer.usage is not None
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (5, 2)


@pytest.mark.parametrize("dialect", AVAILABLE)
def test_openai_shaped_scenarios_play_in_every_dialect(dialect: str) -> None:
    with FakeLLMServer(Scenario.text("Hel", "lo", ", world")) as server:
        assert message(server, dialect).content == "Hello, world"


@pytest.mark.parametrize("dialect", AVAILABLE)
def test_tool_calls_in_every_dialect(dialect: str) -> None:
    scenario = Scenario.answer(
        rs.ToolCallDelta(0, '{"city": ', id="call_1", name="weather"),
        rs.ToolCallDelta(0, '"Paris"}'),
        rs.Finish("tool_calls"),
    )
    with FakeLLMServer(scenario) as server:
        answer = message(server, dialect)
    [call] = answer.tool_calls
    assert call.name == "weather"
    assert call.parse_arguments() == {"city": "Paris"}
    assert answer.finish_reason == "tool_calls"


@pytest.mark.parametrize("dialect", AVAILABLE)
def test_keepalives_change_nothing(dialect: str) -> None:
    scenario = Scenario(
        steps=(
            Keepalive(),
            Say(rs.TextDelta("a")),
            Keepalive(),
            Say(rs.TextDelta("b"), rs.Finish("stop")),
            Keepalive(),
            End(),
        )
    )
    with FakeLLMServer(scenario) as server:
        assert message(server, dialect).content == "ab"


@pytest.mark.parametrize("dialect", AVAILABLE)
def test_an_error_mid_stream_is_a_provider_error(dialect: str) -> None:
    scenario = Scenario.answer(
        rs.TextDelta("partial"),
        rs.ProviderError("Overloaded", type="overloaded_error"),
        end=False,
    )
    with FakeLLMServer(scenario) as server:
        outcome = fetch(server, dialect)
    assert isinstance(outcome.error, rs.ProviderError), outcome.error
    assert "Overloaded" in str(outcome.error)
    assert rs.TextDelta("partial") in outcome.items


@pytest.mark.parametrize("dialect", AVAILABLE)
def test_http_errors_come_in_the_providers_shape(dialect: str) -> None:
    scenario = Scenario.error(429, "slow down", headers={"Retry-After": "3"})
    with FakeLLMServer(scenario) as server:
        outcome = fetch(server, dialect)
    error = outcome.error
    assert isinstance(error, rs.HTTPStatusError), error
    assert error.status_code == 429
    assert error.retry_after == 3.0
    assert error.provider_message == "slow down"


def test_an_http_error_takes_an_integer_code_as_gemini_sends_it() -> None:
    scenario = Scenario.error(400, "bad key", type="INVALID_ARGUMENT", code=400)
    with FakeLLMServer(scenario) as server:
        response = httpx.post(
            server.url_for("gemini"), json=BODIES["gemini"], headers={"x-goog-api-key": "k"}
        )
    assert response.status_code == 400
    [body] = response.json()
    assert body["error"]["code"] == 400
    assert body["error"]["message"] == "bad key"


@pytest.mark.parametrize("dialect", AVAILABLE)
def test_a_cut_stream_is_truncated(dialect: str) -> None:
    scenario = Scenario.answer(rs.TextDelta("a"), rs.TextDelta("b"), end=False)
    with FakeLLMServer(scenario) as server:
        outcome = fetch(server, dialect)
    assert isinstance(outcome.error, rs.TruncatedStreamError), outcome.error


@pytest.mark.parametrize("dialect", AVAILABLE)
def test_a_disconnect_mid_stream_fails(dialect: str) -> None:
    scenario = Scenario(steps=(Say(rs.TextDelta("a")), Disconnect()))
    with FakeLLMServer(scenario) as server:
        outcome = fetch(server, dialect)
    assert isinstance(outcome.error, rs.TransportError | rs.TruncatedStreamError), outcome.error


@pytest.mark.parametrize("dialect", AVAILABLE)
def test_a_stall_meets_timeouts(dialect: str) -> None:
    scenario = Scenario(steps=(Say(rs.TextDelta("a")), Stall(3.0), End()))
    with FakeLLMServer(scenario) as server:
        outcome = fetch(server, dialect, rs.timeouts(idle=0.3))
    assert isinstance(outcome.error, rs.StreamTimeoutError), outcome.error
    assert server.wait_for_disconnect(2.0)


# Bedrock's converse-stream path streams whatever the body says, as the real one does, and
# the AI SDK's chat transport always asks for a stream (its body has no "stream").
@pytest.mark.parametrize(
    "dialect", [d for d in AVAILABLE if d not in ("openai-chat", "bedrock", "ai-sdk")]
)
def test_non_streaming_requests_are_refused_in_the_providers_shape(dialect: str) -> None:
    body = {**BODIES[dialect], "stream": False}
    url = FakeLLMServer.url_for
    with FakeLLMServer() as server, httpx.Client() as client:
        target = url(server, dialect).replace("?alt=sse", "")
        answer = client.post(target, json=body)
    assert answer.status_code == 400


def test_the_openai_path_sends_openai_steps_verbatim() -> None:
    steps = (Chunk(text_chunk("x")), Raw(": raw\n\n"), Done())
    with FakeLLMServer(Scenario(steps=steps)) as server, httpx.Client() as client:
        body = client.post(server.url, json=BODIES["openai-chat"]).content
    assert body == b"".join(step.encode() for step in steps)


def test_fail_steps_carry_type_and_code() -> None:
    scenario = Scenario(steps=(Fail("quota", type="insufficient_quota", code=429),))
    with FakeLLMServer(scenario) as server:
        outcome = fetch(server, "openai-chat")
    error = outcome.error
    assert isinstance(error, rs.ProviderError)
    assert (error.message, error.type, error.code) == ("quota", "insufficient_quota", 429)
