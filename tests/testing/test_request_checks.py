"""`FakeLLMServer` refuses what each provider refuses, in that provider's error shape."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import reactivex

import rxstream as rs
from rxstream.core.dialects import DIALECTS
from rxstream.testing.checks import check_request, minimal_body
from rxstream.testing.server import SERVED, FakeLLMServer, Scenario
from tests.support.request_recordings import message as recorded_message
from tests.support.sources import Outcome, run

CHAT = list(DIALECTS)
UI_USER = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}]}
USER = {"role": "user", "content": "hi"}
CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
TOOL_CALL_TURN = {"role": "assistant", "content": None, "tool_calls": [CALL]}
TOOL_RESULT = {"role": "tool", "tool_call_id": "call_1", "content": "ok"}


def without(body: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != key}


def valid(dialect: str, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = minimal_body(dialect)
    return {**body, **changes}


# (id, dialect, body, the provider's message, as the server must say it)
BROKEN: list[tuple[str, str, Any, str]] = [
    # OpenAI chat completions
    ("chat-no-model", "openai-chat", without(valid("openai-chat"), "model"),
     "you must provide a model parameter"),
    ("chat-no-messages", "openai-chat", without(valid("openai-chat"), "messages"),
     "Missing required parameter: 'messages'."),
    ("chat-messages-not-list", "openai-chat", valid("openai-chat", messages="hi"),
     "Invalid type for 'messages': expected an array of objects, but got a string instead."),
    ("chat-empty", "openai-chat", valid("openai-chat", messages=[]),
     "Invalid 'messages': empty array."),
    ("chat-role", "openai-chat", valid("openai-chat", messages=[{"role": "bot", "content": "x"}]),
     "Invalid value: 'bot'. Supported values are"),
    ("chat-no-content", "openai-chat", valid("openai-chat", messages=[{"role": "user"}]),
     "Missing required parameter: 'messages[0].content'."),
    ("chat-unanswered-call", "openai-chat",
     valid("openai-chat", messages=[USER, TOOL_CALL_TURN, USER]),
     "The following tool_call_ids did not have response messages: call_1"),
    ("chat-call-is-last", "openai-chat", valid("openai-chat", messages=[USER, TOOL_CALL_TURN]),
     "did not have response messages: call_1"),
    ("chat-stray-tool", "openai-chat", valid("openai-chat", messages=[USER, TOOL_RESULT]),
     "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"),
    # OpenAI Responses
    ("responses-no-model", "openai-responses", without(valid("openai-responses"), "model"),
     "Missing required parameter: 'model'."),
    ("responses-input-type", "openai-responses", valid("openai-responses", input=3),
     "Invalid type for 'input'"),
    ("responses-role", "openai-responses",
     valid("openai-responses", input=[{"role": "tool", "content": "x"}]),
     "Invalid value: 'tool'."),
    ("responses-unanswered-call", "openai-responses",
     valid("openai-responses", input=[
         {"role": "user", "content": "hi"},
         {"type": "function_call", "call_id": "call_9", "name": "f", "arguments": "{}"},
     ]),
     "No tool output found for function call call_9."),
    # Anthropic
    ("anthropic-no-model", "anthropic", without(valid("anthropic"), "model"),
     "model: Field required"),
    ("anthropic-no-max-tokens", "anthropic", without(valid("anthropic"), "max_tokens"),
     "max_tokens: Field required"),
    ("anthropic-no-messages", "anthropic", without(valid("anthropic"), "messages"),
     "messages: Field required"),
    ("anthropic-messages-not-list", "anthropic", valid("anthropic", messages="hi"),
     "messages: Input should be a valid list"),
    ("anthropic-empty", "anthropic", valid("anthropic", messages=[]),
     "messages: at least one message is required"),
    ("anthropic-system-role", "anthropic",
     valid("anthropic", messages=[{"role": "system", "content": "x"}]),
     "messages.0.role: Input should be 'user' or 'assistant'"),
    ("anthropic-no-content", "anthropic", valid("anthropic", messages=[{"role": "user"}]),
     "messages.0.content: Field required"),
    ("anthropic-unanswered-call", "anthropic", valid("anthropic", messages=[
        USER,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "f",
                                           "input": {}}]},
        USER,
    ]), "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: "
        "toolu_1"),
    # Gemini
    ("gemini-no-contents", "gemini", {},
     "GenerateContentRequest.contents: contents is not specified"),
    ("gemini-empty", "gemini", {"contents": []}, "contents is not specified"),
    ("gemini-role", "gemini", {"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]},
     "Please use a valid role: user, model."),
    ("gemini-no-parts", "gemini", {"contents": [{"role": "user", "parts": []}]},
     "GenerateContentRequest.contents[0].parts: contents.parts must not be empty."),
    ("gemini-unanswered-call", "gemini", {"contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        {"role": "user", "parts": [{"text": "and?"}]},
    ]}, "Please ensure that function response turn comes immediately after a function call turn."),
    # Cohere
    ("cohere-no-model", "cohere", without(valid("cohere"), "model"),
     "invalid request: model must be specified"),
    ("cohere-empty", "cohere", valid("cohere", messages=[]),
     "invalid request: messages must be a non-empty list"),
    ("cohere-role", "cohere", valid("cohere", messages=[{"role": "bot", "content": "x"}]),
     "invalid request: messages[0].role must be one of"),
    ("cohere-no-content", "cohere", valid("cohere", messages=[{"role": "user"}]),
     "invalid request: messages[0].content is required"),
    ("cohere-unanswered-call", "cohere", valid("cohere", messages=[USER, TOOL_CALL_TURN, USER]),
     "tool_call_id; missing: call_1"),
    # Ollama: only a missing model
    ("ollama-no-model", "ollama", without(valid("ollama"), "model"), "model is required"),
    # Bedrock
    ("bedrock-no-messages", "bedrock", {}, "A conversation must start with a user message."),
    ("bedrock-starts-with-assistant", "bedrock",
     {"messages": [{"role": "assistant", "content": [{"text": "x"}]}]},
     "A conversation must start with a user message."),
    ("bedrock-role", "bedrock", {"messages": [{"role": "system", "content": [{"text": "x"}]}]},
     "Value 'system' at 'messages.1.member.role' failed to satisfy constraint"),
    ("bedrock-no-content", "bedrock", {"messages": [{"role": "user"}]},
     "Value null at 'messages.1.member.content' failed to satisfy constraint"),
    ("bedrock-unanswered-call", "bedrock", {"messages": [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tu_1", "name": "f",
                                                        "input": {}}}]},
        {"role": "user", "content": [{"text": "and?"}]},
    ]}, "Expected toolResult blocks at messages.2.content for the following Ids: tu_1"),
    # The AI SDK's chat transport (the words of the `ai` package's validateUIMessages)
    ("ai-sdk-no-messages", "ai-sdk", without(valid("ai-sdk"), "messages"),
     "Invalid argument for parameter messages: messages parameter must be provided"),
    ("ai-sdk-messages-null", "ai-sdk", valid("ai-sdk", messages=None),
     "messages parameter must be provided"),
    ("ai-sdk-messages-not-list", "ai-sdk", valid("ai-sdk", messages="hi"),
     'Type validation failed: Value: "hi".\nError message: Invalid input: expected array, '
     "received string"),
    ("ai-sdk-empty", "ai-sdk", valid("ai-sdk", messages=[]), "Messages array must not be empty"),
    ("ai-sdk-not-an-object", "ai-sdk", valid("ai-sdk", messages=[3]),
     "Invalid input: expected object, received number (at messages[0])"),
    ("ai-sdk-no-id", "ai-sdk", valid("ai-sdk", messages=[without(UI_USER, "id")]),
     "Invalid input: expected string, received undefined (at messages[0].id)"),
    ("ai-sdk-role", "ai-sdk", valid("ai-sdk", messages=[{**UI_USER, "role": "tool"}]),
     'Invalid option: expected one of "system"|"user"|"assistant" (at messages[0].role)'),
    ("ai-sdk-no-parts", "ai-sdk", valid("ai-sdk", messages=[UI_USER, without(UI_USER, "parts")]),
     "Invalid input: expected array, received undefined (at messages[1].parts)"),
]  # fmt: skip

# (dialect, body the provider takes although it looks odd)
LENIENT: list[tuple[str, str, Any]] = [
    ("chat-answered-calls", "openai-chat", valid("openai-chat", messages=[
        USER, TOOL_CALL_TURN, TOOL_RESULT, {"role": "assistant", "content": "done"}, USER])),
    ("chat-assistant-only-calls", "openai-chat",
     valid("openai-chat", messages=[USER, {"role": "assistant", "tool_calls": [CALL]},
                                     TOOL_RESULT])),
    ("responses-no-input", "openai-responses", without(valid("openai-responses"), "input")),
    ("responses-answered-call", "openai-responses", valid("openai-responses", input=[
        {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c", "output": "ok"},
    ])),
    ("anthropic-call-is-last", "anthropic", valid("anthropic", messages=[
        USER, {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                                 "input": {}}]}])),
    ("gemini-no-role", "gemini", {"contents": [{"parts": [{"text": "hi"}]}]}),
    ("ollama-no-messages", "ollama", {"model": "m"}),
    ("ollama-any-role", "ollama", {"model": "m", "messages": [{"role": "bot", "content": "x"}]}),
    ("cohere-answered-call", "cohere",
     valid("cohere", messages=[USER, TOOL_CALL_TURN, TOOL_RESULT])),
    ("bedrock-server-tool-answered-in-its-turn", "bedrock", {"messages": [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [
            {"toolUse": {"toolUseId": "ci_1", "name": "nova_code_interpreter", "input": {},
                         "type": "server_tool_use"}},
            {"toolResult": {"toolUseId": "ci_1", "content": [{"text": "2"}]}},
            {"text": "Two."}]},
        {"role": "user", "content": [{"text": "and?"}]},
    ]}),
    ("ai-sdk-regenerate", "ai-sdk",
     valid("ai-sdk", trigger="regenerate-message", messageId="m1", extra={"any": "field"})),
    ("ai-sdk-messages-only", "ai-sdk", {"messages": [UI_USER]}),
]  # fmt: skip


def wire(dialect: str) -> Callable[[Any], Any]:
    if dialect == "bedrock":
        return reactivex.compose(rs.eventstream_frames(), rs.decode(dialect))
    if dialect == "ollama":
        return rs.decode(dialect)
    return reactivex.compose(rs.sse_frames(), rs.decode(dialect))


def send(server: FakeLLMServer, dialect: str, body: Any) -> Outcome:
    with httpx.Client(timeout=5.0) as client:
        source = rs.from_request(
            client,
            "POST",
            server.url_for(dialect),
            json=body,
            body="bytes" if dialect == "bedrock" else "lines",
        )
        return run(source.pipe(wire(dialect), rs.accumulate_message()))


def answered(outcome: Outcome) -> str:
    assert outcome.error is None, outcome.error
    [answer] = outcome.items
    assert isinstance(answer, rs.Message)
    return answer.content


# ----------------------------------------------------------------------------- the table


@pytest.mark.parametrize("dialect", SERVED)
def test_a_valid_request_is_answered(dialect: str) -> None:
    with FakeLLMServer() as server:
        assert answered(send(server, dialect, minimal_body(dialect))) == "Hello, world!"


@pytest.mark.parametrize(("dialect", "body"), [c[1:] for c in LENIENT], ids=[c[0] for c in LENIENT])
def test_what_the_provider_takes_passes(dialect: str, body: Any) -> None:
    assert check_request(dialect, body) is None
    with FakeLLMServer() as server:
        assert answered(send(server, dialect, body)) == "Hello, world!"


@pytest.mark.parametrize(
    ("dialect", "body", "expected"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN]
)
def test_a_broken_request_gets_the_providers_error(dialect: str, body: Any, expected: str) -> None:
    with FakeLLMServer(Scenario.text("never")) as server:
        outcome = send(server, dialect, body)
        recorded = server.requests
    error = outcome.error
    assert isinstance(error, rs.HTTPStatusError), error
    assert error.status_code == 400
    assert expected in str(error)
    assert len(recorded) == 1
    assert recorded[0].json == body


@pytest.mark.parametrize(
    ("dialect", "body", "expected"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN]
)
def test_the_error_body_has_the_providers_shape(dialect: str, body: Any, expected: str) -> None:
    with FakeLLMServer() as server:
        answer = httpx.post(server.url_for(dialect), json=body)
    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith("application/json")
    error = answer.json()
    match dialect:
        case "openai-chat" | "openai-responses":
            assert set(error["error"]) == {"message", "type", "param", "code"}
            assert error["error"]["type"] == "invalid_request_error"
            assert expected in error["error"]["message"]
        case "anthropic":
            assert error["type"] == "error"
            assert error["error"]["type"] == "invalid_request_error"
            assert expected in error["error"]["message"]
        case "gemini":
            [inner] = error
            assert inner["error"]["code"] == 400
            assert inner["error"]["status"] == "INVALID_ARGUMENT"
            assert expected in inner["error"]["message"]
        case "cohere" | "bedrock":
            assert expected in error["message"]
            if dialect == "bedrock":
                assert error["__type"] == "ValidationException"
        case "ollama":
            assert error == {"error": expected}
        case "ai-sdk":
            assert set(error["error"]) == {"message", "type"}
            assert error["error"]["type"] in ("AI_InvalidArgumentError", "AI_TypeValidationError")
            assert expected in error["error"]["message"]


def test_openai_names_the_offending_parameter() -> None:
    body = valid("openai-chat", messages=[{"role": "bot", "content": "x"}])
    with FakeLLMServer() as server:
        error = httpx.post(server.url, json=body).json()["error"]
    assert error["param"] == "messages[0].role"
    assert error["code"] == "invalid_value"


def test_a_refused_request_plays_no_scenario() -> None:
    with FakeLLMServer(Scenario.text("first"), Scenario.text("second")) as server:
        assert httpx.post(server.url, json={"stream": True}).status_code == 400
        outcome = send(server, "openai-chat", minimal_body("openai-chat"))
    assert answered(outcome) == "first"


def test_checks_can_be_turned_off() -> None:
    with FakeLLMServer(check_requests=False) as server:
        assert answered(send(server, "anthropic", {"stream": True})) == "Hello, world!"


def test_a_body_that_is_no_object_is_refused() -> None:
    with FakeLLMServer() as server:
        answer = httpx.post(server.url_for("anthropic"), json=["not", "an", "object"])
    assert answer.status_code == 400
    assert answer.json()["type"] == "error"


def test_minimal_body_knows_every_chat_dialect() -> None:
    for dialect in CHAT:
        assert check_request(dialect, minimal_body(dialect)) is None
    with pytest.raises(ValueError, match="no request body for dialect 'nope'"):
        minimal_body("nope")


# ----------------------------------------------------------------------------- rs.request

TOOLS = [rs.Tool("f", "a function", {"type": "object", "properties": {}})]
TURNS: dict[str, tuple[str, str]] = {
    "openai-chat": ("openai/chat-tool-call-single.sse", "openai-chat"),
    "openai-responses": ("openai-responses/function-call-args.sse", "openai-responses"),
    "anthropic": ("anthropic/tool-use-input-json.sse", "anthropic"),
    "gemini": ("google/function-call-thought-signature.sse", "gemini"),
    "cohere": ("cohere/v2-tool-call.sse", "cohere"),
    "ollama": ("ollama/chat-tool-call-llama3.1.ndjson", "ollama"),
    "bedrock": ("bedrock/converse-stream-text.eventstream", "bedrock"),
}


def conversations(dialect: str) -> dict[str, list[Any]]:
    system = {"role": "system", "content": "Be brief."}
    turn = recorded_message(TURNS[dialect])
    results = [
        # A Gemini call may come without an id: its result then names the function.
        {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": "ok"}
        for call in turn.tool_calls
    ]
    return {
        "plain": [system, USER],
        "dict-round": [system, USER, TOOL_CALL_TURN, TOOL_RESULT],
        "recorded-round": [system, USER, turn, *results],
        "two-rounds": [USER, TOOL_CALL_TURN, TOOL_RESULT, {"role": "assistant", "content": "x"},
                       {"role": "user", "content": "more"}],
    }  # fmt: skip


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("botocore")
    for name in ("AWS_BEARER_TOKEN_BEDROCK", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.mark.parametrize("case", ["plain", "dict-round", "recorded-round", "two-rounds"])
@pytest.mark.parametrize("dialect", CHAT)
def test_what_rs_request_builds_passes_the_checks(
    dialect: str, case: str, aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = conversations(dialect)[case]
    with FakeLLMServer() as server, httpx.Client(timeout=5.0) as client:
        root = f"http://127.0.0.1:{server.port}"
        request = rs.request(
            dialect,
            model="m",
            messages=messages,
            tools=TOOLS,
            api_key="sk-unit-0123",
            base_url=f"{root}/v1" if dialect.startswith("openai") else root,
        )
        assert check_request(dialect, json.loads(request.content)) is None
        out: list[rs.Message] = []
        source: reactivex.Observable[Any] = (
            rs.from_request(client, request, body="bytes")
            if dialect == "bedrock"
            else rs.from_request(client, request)
        )
        source.pipe(wire(dialect), rs.accumulate_message()).subscribe(out.append)
    assert [m.content for m in out] == ["Hello, world!"]


# ----------------------------------------------------------------------------- official SDKs


def test_the_openai_sdk_passes() -> None:
    openai = pytest.importorskip("openai")
    with FakeLLMServer() as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with client:
            stream = client.chat.completions.create(
                model="m",
                messages=[USER, TOOL_CALL_TURN, TOOL_RESULT],
                stream=True,
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            response = client.responses.create(model="m", input="hi", stream=True)
            events = [event.type for event in response]
            with pytest.raises(openai.BadRequestError, match="empty array"):
                client.chat.completions.create(model="m", messages=[], stream=True)
    assert text == "Hello, world!"
    assert "response.completed" in events


def test_the_anthropic_sdk_passes() -> None:
    anthropic = pytest.importorskip("anthropic")
    origin = "http://127.0.0.1:{}"
    with FakeLLMServer() as server:
        client = anthropic.Anthropic(
            api_key="sk-ant-test", base_url=origin.format(server.port), max_retries=0
        )
        with client:
            with client.messages.stream(model="m", max_tokens=64, messages=[USER]) as stream:
                text = "".join(stream.text_stream)
            with pytest.raises(anthropic.BadRequestError, match="at least one message"):
                client.messages.create(model="m", max_tokens=64, messages=[], stream=True)
    assert text == "Hello, world!"


def test_the_google_genai_sdk_passes() -> None:
    pytest.importorskip("google.genai")
    from google import genai
    from google.genai import errors, types

    with FakeLLMServer() as server:
        options = types.HttpOptions(
            base_url=f"http://127.0.0.1:{server.port}", api_version="v1beta"
        )
        with genai.Client(api_key="test-key", http_options=options) as client:
            chunks = client.models.generate_content_stream(model="m", contents="hi")
            text = "".join(chunk.text or "" for chunk in chunks)
            wrong = [{"role": "assistant", "parts": [{"text": "x"}]}]
            with pytest.raises(errors.ClientError, match="valid role"):
                list(client.models.generate_content_stream(model="m", contents=wrong))
    assert text == "Hello, world!"


def test_the_cohere_sdk_passes() -> None:
    cohere = pytest.importorskip("cohere")
    with FakeLLMServer() as server:
        root = f"http://127.0.0.1:{server.port}"
        with cohere.ClientV2(api_key="test-key", base_url=root, max_retries=0) as client:
            events = client.chat_stream(model="m", messages=[USER])
            text = "".join(
                e.delta.message.content.text or "" for e in events if e.type == "content-delta"
            )
    assert text == "Hello, world!"
    assert check_request("cohere", server.requests[0].json) is None


def test_the_ollama_sdk_passes() -> None:
    ollama = pytest.importorskip("ollama")
    with (
        FakeLLMServer() as server,
        ollama.Client(host=f"http://127.0.0.1:{server.port}") as client,
    ):
        chunks = client.chat(model="m", messages=[USER], stream=True)
        text = "".join(chunk.message.content or "" for chunk in chunks)
    assert text == "Hello, world!"


def test_the_boto3_sdk_passes() -> None:
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config  # type: ignore[import-untyped]

    with FakeLLMServer() as server:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=f"http://127.0.0.1:{server.port}",
            aws_access_key_id="AKIDTEST",
            aws_secret_access_key="secret",
            config=Config(retries={"total_max_attempts": 1}),
        )
        try:
            response = client.converse_stream(
                modelId="m", messages=[{"role": "user", "content": [{"text": "hi"}]}]
            )
            text = "".join(
                event["contentBlockDelta"]["delta"].get("text", "")
                for event in response["stream"]
                if "contentBlockDelta" in event
            )
            with pytest.raises(client.exceptions.ValidationException, match="start with a user"):
                client.converse_stream(
                    modelId="m", messages=[{"role": "assistant", "content": [{"text": "x"}]}]
                )
        finally:
            client.close()
    assert text == "Hello, world!"


def test_the_cohere_sdk_raises_its_bad_request_error_with_the_message() -> None:
    cohere = pytest.importorskip("cohere")
    with FakeLLMServer() as server:
        root = f"http://127.0.0.1:{server.port}"
        with (
            cohere.ClientV2(api_key="k", base_url=root, max_retries=0) as client,
            pytest.raises(cohere.BadRequestError) as caught,
        ):
            for _ in client.chat_stream(model="command-a-03-2025", messages=[]):
                pass
    assert caught.value.status_code == 400
    assert caught.value.body == {"message": "invalid request: messages must be a non-empty list"}
