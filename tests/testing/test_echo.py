"""`FakeLLMServer.echoing()`: an answer that listens to the request, in every dialect.

Each request goes through `rs.chat` (the library's own request builder and
reader) or a provider's official SDK to a real server on 127.0.0.1.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.core.dialects import DIALECTS
from rxstream.testing import FakeLLMServer, Scenario, echo_answer
from rxstream.testing._asked import read_asked
from rxstream.testing.server import RecordedRequest
from tests.support.schema_check import problems

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7},
        "where": {
            "type": "object",
            "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}},
            "required": ["lat", "lon"],
        },
        "hours": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2},
    },
    "required": ["city", "unit", "where"],
    "additionalProperties": False,
}
TIME = {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}


def tool(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": name, "parameters": schema},
    }


TOOLS = [tool("get_time", TIME), tool("get_weather", WEATHER)]
SCHEMAS = {"get_time": TIME, "get_weather": WEATHER}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
CALL_ID = "call_1"
AFTER_CALL = [
    *ASK,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": CALL_ID,
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": CALL_ID, "content": "21 degrees and sunny"},
]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer.echoing() as fake:
        yield fake


def base_url(server: FakeLLMServer, dialect: str) -> str:
    root = f"http://127.0.0.1:{server.port}"
    return f"{root}/v1" if dialect.startswith("openai") else root


def ask(server: FakeLLMServer, dialect: str, messages: Any, **options: Any) -> rs.Message:
    with httpx.Client(timeout=30) as client:
        deltas = rs.chat(
            client,
            dialect,
            model=f"model-of-{dialect}",
            messages=messages,
            base_url=base_url(server, dialect),
            api_key="fake-key",
            max_tokens=100,
            **options,
        )
        message: rs.Message = deltas.pipe(rs.accumulate_message()).run()
    return message


@pytest.mark.parametrize("dialect", DIALECTS)
def test_tools_get_a_call_of_one_of_them_with_valid_arguments(
    server: FakeLLMServer, dialect: str
) -> None:
    message = ask(server, dialect, ASK, tools=TOOLS)
    [call] = message.tool_calls
    # The prompt names the weather: the tool it names is chosen (not simply the first).
    assert call.name == "get_weather"
    arguments = json.loads(call.arguments)
    assert problems(arguments, WEATHER) == []
    assert arguments["unit"] == "celsius"
    assert message.finish_reason == "tool_calls"
    assert not message.content


@pytest.mark.parametrize("dialect", DIALECTS)
def test_without_tools_the_answer_quotes_the_user(server: FakeLLMServer, dialect: str) -> None:
    message = ask(server, dialect, ASK)
    assert message.content == 'You said: "What is the weather in Paris?"'
    assert not message.tool_calls
    assert message.finish_reason == "stop"
    assert message.usage is not None
    assert message.usage.completion_tokens > 0


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_tool_result_gets_a_final_text(server: FakeLLMServer, dialect: str) -> None:
    message = ask(server, dialect, AFTER_CALL, tools=TOOLS)
    assert not message.tool_calls
    assert message.content == "The tool returned: 21 degrees and sunny"
    assert message.finish_reason == "stop"


@pytest.mark.parametrize("dialect", ["openai-chat", "anthropic", "openai-responses"])
def test_a_forced_tool_is_the_one_called(server: FakeLLMServer, dialect: str) -> None:
    message = ask(server, dialect, ASK, tools=TOOLS, tool_choice="get_time")
    assert [call.name for call in message.tool_calls] == ["get_time"]
    assert problems(json.loads(message.tool_calls[0].arguments), TIME) == []


def test_tool_choice_none_gets_text(server: FakeLLMServer) -> None:
    message = ask(server, "openai-chat", ASK, tools=TOOLS, tool_choice="none")
    assert not message.tool_calls
    assert message.content.startswith("You said:")


def test_use_chat_gets_a_quote_and_a_client_tool_output_a_final_text(server: FakeLLMServer) -> None:
    url = server.url_for("ai-sdk")
    said = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hello there"}]}
    tool_part = {
        "type": "tool-getLocation",
        "toolCallId": "c1",
        "state": "output-available",
        "input": {},
        "output": "Berlin",
    }
    answered = {"id": "a1", "role": "assistant", "parts": [tool_part]}
    texts = []
    with httpx.Client(timeout=30) as client:
        for messages in ([said], [said, answered]):
            body = {"id": "chat-1", "messages": messages, "trigger": "submit-message"}
            deltas = rs.from_request(client, "POST", url, json=body).pipe(
                rs.sse_frames(), rs.decode("ai-sdk")
            )
            texts.append(deltas.pipe(rs.accumulate_message()).run().content)
    assert texts == ['You said: "Hello there"', "The tool returned: Berlin"]


# --------------------------------------------------------------------------- the model


def test_the_model_is_echoed_through_the_official_sdks(server: FakeLLMServer) -> None:
    """Where each dialect's stream names the model, the SDK reports the one asked for."""
    openai = pytest.importorskip("openai")
    anthropic = pytest.importorskip("anthropic")
    seen: dict[str, str] = {}
    client = openai.OpenAI(api_key="k", base_url=server.base_url, max_retries=0)
    chunks = list(client.chat.completions.create(model="gpt-4.1-nano", messages=ASK, stream=True))
    seen["openai-chat"] = chunks[0].model
    events = list(client.responses.create(model="o4-mini", input="Hi", stream=True))
    seen["openai-responses"] = events[-1].response.model
    client.close()
    claude = anthropic.Anthropic(api_key="k", base_url=f"http://127.0.0.1:{server.port}")
    with claude.messages.stream(model="claude-haiku-4-5", max_tokens=50, messages=ASK) as stream:
        seen["anthropic"] = stream.get_final_message().model
    claude.close()
    assert seen == {
        "openai-chat": "gpt-4.1-nano",
        "openai-responses": "o4-mini",
        "anthropic": "claude-haiku-4-5",
    }


def test_the_model_in_the_path_is_echoed_too(server: FakeLLMServer) -> None:
    """Gemini and Bedrock name the model in the URL: Gemini's stream reports it
    (`modelVersion`); Ollama's names it on every line. (Cohere's and Bedrock's
    streams name no model at all.)"""
    genai = pytest.importorskip("google.genai")
    ollama = pytest.importorskip("ollama")
    root = f"http://127.0.0.1:{server.port}"
    with genai.Client(api_key="k", http_options={"base_url": root}) as client:
        chunks = list(client.models.generate_content_stream(model="gemini-2.5-pro", contents="Hi"))
    assert {chunk.model_version for chunk in chunks} == {"gemini-2.5-pro"}
    with ollama.Client(host=root) as local:
        lines = list(local.chat(model="qwen3:8b", messages=ASK, stream=True))
    assert {line.model for line in lines} == {"qwen3:8b"}


# --------------------------------------------------------------------------- reading requests


def recorded(dialect: str, messages: Any, **options: Any) -> RecordedRequest:
    """The request `rs.request` builds for `dialect`, as the server records it."""
    built = rs.request(
        dialect,
        model="m/1",
        messages=messages,
        base_url="http://127.0.0.1:1",
        api_key="k",
        **options,
    )
    body = built.read()
    return RecordedRequest("POST", built.url.raw_path.decode(), {}, body, json.loads(body))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialects_request_is_read_back(dialect: str) -> None:
    """The model, the tools with their schemas, and the tool result, in each dialect's form."""
    request = recorded(dialect, AFTER_CALL, tools=TOOLS, max_tokens=10)
    asked = read_asked(dialect, request.path, request.json)
    assert asked.model == "m/1"
    assert [(t.name, t.schema) for t in asked.tools] == [
        ("get_time", TIME),
        ("get_weather", WEATHER),
    ]
    assert asked.prompt == "What is the weather in Paris?"
    assert asked.results == ("21 degrees and sunny",)
    assert read_asked(dialect, request.path, recorded(dialect, ASK).json).results == ()


@pytest.mark.parametrize("body", [None, [], {"messages": "x"}, {"tools": [1, {"function": 2}]}])
def test_an_odd_body_is_read_without_raising(body: Any) -> None:
    request = RecordedRequest("POST", "/v1/chat/completions", {}, b"", body)
    scenario = echo_answer(request)
    assert scenario.answer_text() == "Hello!"


def test_the_same_request_gets_the_same_answer_and_a_paced_one_waits() -> None:
    request = recorded("anthropic", ASK, tools=TOOLS, max_tokens=10)
    assert echo_answer(request) == echo_answer(request)
    paced = echo_answer(request, delay=0.25)
    assert {step.delay for step in paced.steps} == {0.25}
    assert isinstance(paced, Scenario)
    assert paced.model == "m/1"


def test_a_reply_stands_for_a_scenario_in_a_sequence() -> None:
    with FakeLLMServer(Scenario.error(500, "down"), echo_answer) as server:
        with pytest.raises(rs.HTTPStatusError, match="down"):
            ask(server, "cohere", ASK)
        assert ask(server, "cohere", ASK).content == 'You said: "What is the weather in Paris?"'
        assert ask(server, "cohere", ASK, tools=TOOLS).tool_calls[0].name == "get_weather"
