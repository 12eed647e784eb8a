"""`rs.request` and `rs.chat`: keys, options per provider, assistant turns back in block order."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
import reactivex as rx

import rxstream as rs
from rxstream.io.requests import ENDPOINTS, build_request, missing_key
from rxstream.models import (
    Finish,
    JSONObject,
    Message,
    ReasoningBlock,
    ReasoningDelta,
    ReasoningState,
    TextBlock,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)
from rxstream.testing.server import FakeLLMServer

HI = [{"role": "user", "content": "Hi"}]
DIALECTS = tuple(ENDPOINTS)


def body(request: httpx.Request) -> JSONObject:
    value = json.loads(request.content)
    assert isinstance(value, dict)
    return value


def build(dialect: str, **kwargs: Any) -> httpx.Request:
    kwargs.setdefault("messages", HI)
    kwargs.setdefault("model", "m")
    kwargs.setdefault("env", {})
    kwargs.setdefault("api_key", "sk-unit-0123")
    return build_request(dialect, **kwargs)


def accumulate(*items: Any) -> Message:
    out: list[Message] = []
    rx.from_iterable(items).pipe(rs.accumulate_message()).subscribe(out.append)
    return out[0]


# -- keys and endpoints ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("dialect", "variable"),
    [
        ("openai-chat", "OPENAI_API_KEY"),
        ("openai-responses", "OPENAI_API_KEY"),
        ("anthropic", "ANTHROPIC_API_KEY"),
        ("gemini", "GOOGLE_API_KEY or GEMINI_API_KEY"),
        ("cohere", "CO_API_KEY"),
    ],
)
def test_a_missing_key_is_a_value_error_naming_the_variable(dialect: str, variable: str) -> None:
    with pytest.raises(ValueError, match=f"no API key for {dialect}: set {variable}"):
        build_request(dialect, model="m", messages=HI, env={})


def test_request_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-0123")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/proxy")
    request = rs.request("anthropic", model="claude-haiku-4-5", messages=HI)
    assert str(request.url) == "http://127.0.0.1:9/proxy/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-env-0123"
    assert request.headers["anthropic-version"] == "2023-06-01"


def test_ollama_needs_no_key_and_bedrock_says_what_is_missing() -> None:
    assert missing_key("ollama", {}) is None
    request = build_request("ollama", model="llama3.2", messages=HI, env={})
    assert "authorization" not in request.headers
    assert str(request.url) == "http://127.0.0.1:11434/api/chat"
    said = missing_key("bedrock", {})
    assert said is not None
    assert "AWS_BEARER_TOKEN_BEDROCK" in said


def test_bedrock_bearer_token_and_region() -> None:
    request = build(
        "bedrock",
        api_key=None,
        model="amazon.nova-lite-v1:0",
        env={"AWS_BEARER_TOKEN_BEDROCK": "bedrock-key-0123", "AWS_REGION": "eu-west-3"},
    )
    assert str(request.url) == (
        "https://bedrock-runtime.eu-west-3.amazonaws.com/model/amazon.nova-lite-v1%3A0"
        "/converse-stream"
    )
    assert request.headers["authorization"] == "Bearer bedrock-key-0123"


def test_bedrock_sigv4_from_the_environment_given() -> None:
    pytest.importorskip("botocore")
    request = build(
        "bedrock",
        api_key=None,
        env={
            "AWS_ACCESS_KEY_ID": "AKIDUNIT",
            "AWS_SECRET_ACCESS_KEY": "s",
            "AWS_REGION": "ap-south-1",
        },
    )
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDUNIT/")
    assert "/ap-south-1/bedrock/aws4_request" in request.headers["authorization"]
    assert "x-amz-date" in request.headers


def test_unknown_dialect() -> None:
    with pytest.raises(ValueError, match="unknown dialect 'nope'; one of openai-chat"):
        build("nope")


# -- options per provider ------------------------------------------------------------


def test_anthropic_version_is_chosen_and_an_option_it_refuses_is_an_error() -> None:
    assert build("anthropic", temperature=0.2).headers["anthropic-version"] == "2023-06-01"
    newer = build("anthropic", anthropic_version="2026-10-21")
    assert newer.headers["anthropic-version"] == "2026-10-21"
    with pytest.raises(ValueError, match=r"anthropic does not take temperature: .*2026-10-21"):
        build("anthropic", anthropic_version="2026-10-21", temperature=0.2)


def test_usage_is_asked_for_where_the_provider_needs_asking() -> None:
    assert body(build("openai-chat"))["stream_options"] == {"include_usage": True}
    assert "stream_options" not in body(build("openai-chat", stream_options=None))
    for dialect in ("anthropic", "cohere", "ollama", "openai-responses"):
        assert "stream_options" not in body(build(dialect))


def test_responses_tools_are_not_strict() -> None:
    tool = rs.Tool("f", "does f", {"type": "object", "properties": {}})
    (sent,) = body(build("openai-responses", tools=[tool]))["tools"]
    assert sent == {
        "type": "function",
        "name": "f",
        "description": "does f",
        "parameters": {"type": "object", "properties": {}},
        "strict": False,
    }


def test_ollama_gets_only_the_fields_asked_for() -> None:
    assert body(build("ollama")) == {"model": "m", "messages": HI, "stream": True}
    assert body(build("ollama", reasoning=True))["think"] is True
    assert body(build("ollama", reasoning=False))["think"] is False


COMMON = {"max_tokens": 100, "temperature": 0.5, "stop": ["END"], "tool_choice": "required"}


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        (
            "openai-chat",
            {"max_tokens": 100, "temperature": 0.5, "stop": ["END"], "tool_choice": "required"},
        ),
        (
            "anthropic",
            {
                "max_tokens": 100,
                "temperature": 0.5,
                "stop_sequences": ["END"],
                "tool_choice": {"type": "any"},
            },
        ),
        (
            "gemini",
            {
                "generationConfig": {
                    "maxOutputTokens": 100,
                    "temperature": 0.5,
                    "stopSequences": ["END"],
                },
                "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            },
        ),
        (
            "cohere",
            {
                "max_tokens": 100,
                "temperature": 0.5,
                "stop_sequences": ["END"],
                "tool_choice": "REQUIRED",
            },
        ),
        (
            "bedrock",
            {
                "inferenceConfig": {"maxTokens": 100, "temperature": 0.5, "stopSequences": ["END"]},
            },
        ),
    ],
)
def test_the_common_options_per_provider(dialect: str, expected: JSONObject) -> None:
    sent = body(build(dialect, tools=[rs.Tool("f")], **COMMON))
    assert {key: sent[key] for key in expected} == expected


def test_options_a_provider_cannot_carry_are_errors() -> None:
    with pytest.raises(ValueError, match="openai-responses does not take stop"):
        build("openai-responses", stop="x")
    with pytest.raises(ValueError, match="ollama does not take tool_choice='required'"):
        build("ollama", tool_choice="required")
    with pytest.raises(ValueError, match="openai-chat does not take reasoning=2048"):
        build("openai-chat", reasoning=2048)
    with pytest.raises(ValueError, match="cohere does not take tool_choice='f'"):
        build("cohere", tool_choice="f")


def test_unknown_options_pass_through_unchanged() -> None:
    sent = body(build("openai-chat", seed=7, metadata={"a": "b"}))
    assert (sent["seed"], sent["metadata"]) == (7, {"a": "b"})


def test_malformed_messages_say_what_arrived() -> None:
    with pytest.raises(ValueError, match=r"messages\[0\] has role 'robot'"):
        build("openai-chat", messages=[{"role": "robot", "content": "x"}])
    with pytest.raises(TypeError, match=r"an OpenAI chat-style dict or an rs\.Message"):
        build("openai-chat", messages=["hello"])
    with pytest.raises(ValueError, match="needs a 'tool_call_id'"):
        build("openai-chat", messages=[{"role": "tool", "content": "x"}])


# -- block order ---------------------------------------------------------------------

INTERLEAVED = (
    ReasoningDelta("first I look"),
    ReasoningState("thinking", "sig-1", "first I look"),
    ToolCallDelta(0, '{"q": 1}', id="toolu_1", name="search"),
    ReasoningDelta("then I look again"),
    ReasoningState("thinking", "sig-2", "then I look again"),
    ReasoningState("redacted_thinking", "opaque-1"),
    TextDelta("Looking."),
    ToolCallDelta(1, '{"q": 2}', id="toolu_2", name="search"),
    Finish("tool_calls"),
)


def test_message_keeps_its_blocks_in_arrival_order() -> None:
    m = accumulate(*INTERLEAVED)
    assert m.blocks == (
        ReasoningBlock("first I look", INTERLEAVED[1]),
        ToolCall(0, "toolu_1", "search", '{"q": 1}'),
        ReasoningBlock("then I look again", INTERLEAVED[4]),
        ReasoningState("redacted_thinking", "opaque-1"),
        TextBlock("Looking."),
        ToolCall(1, "toolu_2", "search", '{"q": 2}'),
    )
    # The existing fields are as they were.
    assert (m.reasoning, m.content, len(m.tool_calls)) == (
        "first I lookthen I look again",
        "Looking.",
        2,
    )


def test_an_interleaved_turn_goes_back_to_anthropic_as_it_came() -> None:
    m = accumulate(*INTERLEAVED)
    (_, assistant) = body(build("anthropic", messages=[*HI, m]))["messages"]
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "first I look", "signature": "sig-1"},
        {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": 1}},
        {"type": "thinking", "thinking": "then I look again", "signature": "sig-2"},
        {"type": "redacted_thinking", "data": "opaque-1"},
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_2", "name": "search", "input": {"q": 2}},
    ]


def test_and_to_bedrock_as_reasoning_content() -> None:
    m = accumulate(*INTERLEAVED)
    (_, assistant) = body(build("bedrock", messages=[*HI, m]))["messages"]
    assert [next(iter(block)) for block in assistant["content"]] == [
        "reasoningContent",
        "toolUse",
        "reasoningContent",
        "reasoningContent",
        "text",
        "toolUse",
    ]
    assert assistant["content"][0]["reasoningContent"]["reasoningText"] == {
        "text": "first I look",
        "signature": "sig-1",
    }


def test_in_another_dialect_unsigned_reasoning_is_left_out() -> None:
    m = accumulate(*INTERLEAVED)
    (_, assistant) = body(build("openai-chat", messages=[*HI, m]))["messages"]
    assert assistant == {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [
            {
                "id": "toolu_1",
                "type": "function",
                "function": {"name": "search", "arguments": '{"q": 1}'},
            },
            {
                "id": "toolu_2",
                "type": "function",
                "function": {"name": "search", "arguments": '{"q": 2}'},
            },
        ],
    }
    (_, gemini) = body(build("gemini", messages=[*HI, m]))["contents"]
    assert [list(part) for part in gemini["parts"]] == [
        ["functionCall"],
        ["text"],
        ["functionCall"],
    ]


def test_gemini_signatures_ride_on_the_part_they_came_on() -> None:
    m = accumulate(
        ReasoningDelta("pondering"),
        ReasoningState("thought_signature", "c2lnLXRob3VnaHQ=", raw={"text": "pondering"}),
        TextDelta("Answer"),
        ToolCallDelta(0, "{}", name="f"),
        ReasoningState("thought_signature", "c2lnLWNhbGw=", index=0),
        Finish("tool_calls"),
    )
    (_, model) = body(build("gemini", messages=[*HI, m]))["contents"]
    assert model == {
        "role": "model",
        "parts": [
            {"text": "pondering", "thought": True, "thoughtSignature": "c2lnLXRob3VnaHQ="},
            {"text": "Answer"},
            {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "c2lnLWNhbGw="},
        ],
    }


def test_a_message_built_by_hand_goes_back_from_its_fields() -> None:
    m = Message(content="Sure.", tool_calls=(ToolCall(0, "call_1", "f", "{}"),))
    (_, assistant, tool) = body(
        build(
            "anthropic",
            messages=[*HI, m, {"role": "tool", "tool_call_id": "call_1", "content": "ok"}],
        )
    )["messages"]
    assert assistant["content"] == [
        {"type": "text", "text": "Sure."},
        {"type": "tool_use", "id": "call_1", "name": "f", "input": {}},
    ]
    assert tool == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "ok"}],
    }


# -- sending -------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECTS)
def test_chat_sends_and_decodes_every_dialect(dialect: str) -> None:
    with FakeLLMServer() as server, httpx.Client() as client:
        root = f"http://127.0.0.1:{server.port}"
        base = f"{root}/v1" if dialect.startswith("openai") else root
        out: list[Message] = []
        rs.chat(
            client, dialect, model="m", messages=HI, api_key="sk-unit-0123", base_url=base
        ).pipe(rs.accumulate_message()).subscribe(out.append)
        (request,) = server.requests
    assert out[0].content == "Hello, world!"
    assert request.json is not None


def test_chat_with_an_async_client() -> None:
    async def main() -> str:
        with FakeLLMServer() as server:
            async with httpx.AsyncClient() as client:
                source = rs.chat(
                    client,
                    "anthropic",
                    model="m",
                    messages=HI,
                    api_key="sk-unit-0123",
                    base_url=f"http://127.0.0.1:{server.port}",
                )
                message = await source.pipe(rs.accumulate_message())
                return message.content

    assert asyncio.run(main()) == "Hello, world!"


def test_from_request_takes_a_built_request_and_no_other_arguments() -> None:
    request = build("openai-chat")
    with httpx.Client() as client:
        with pytest.raises(TypeError, match="takes no request arguments; got json"):
            rs.from_request(client, request, json={})  # type: ignore[call-overload]
        with pytest.raises(TypeError, match="needs a url"):
            rs.from_request(client, "POST")  # type: ignore[call-overload]


def test_a_message_with_blocks_still_encodes_in_rxstreams_own_format() -> None:
    from rxstream.core.wire.decoding import decode
    from rxstream.core.wire.encoding import encode

    m = accumulate(*INTERLEAVED)
    encoded = encode(m)
    back = decode(json.loads(json.dumps(encoded)))
    assert back == m
    assert back.blocks == m.blocks  # the arrival order goes along (outside equality)


def test_one_chat_observable_runs_twice_with_a_sync_client() -> None:
    # Each subscription sends the same built request; the first one's connection
    # tracer must not stay on it (the second run failed with an internal error).
    user_trace: list[str] = []
    with FakeLLMServer() as server, httpx.Client() as client:
        request = rs.request(
            "openai-chat",
            model="m",
            messages=HI,
            api_key="sk-unit-0123",
            base_url=f"http://127.0.0.1:{server.port}/v1",
        )
        request.extensions["trace"] = lambda event, info: user_trace.append(event)
        chat = rs.from_request(client, request).pipe(rs.sse_frames(), rs.decode("openai-chat"))
        first = chat.pipe(rs.accumulate_message()).run()
        second = chat.pipe(rs.accumulate_message()).run()
        assert len(server.requests) == 2
    assert first.content == second.content == "Hello, world!"
    assert request.extensions["trace"].__name__ == "<lambda>"  # the caller's own, untouched
    assert user_trace.count("http11.send_request_headers.started") == 2
