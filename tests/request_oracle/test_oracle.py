"""The official SDKs as oracle for `rs.request`: the same conversation, the same request.

For each dialect, the same three conversations (plain; with tools; with a tool
round whose assistant turn is a `Message` decoded from a real recording,
reasoning included) go once through the provider's official SDK, pointed at a
loopback `FakeLLMServer` that records what arrives, and once through
`rs.request`. The two must have the same method, path and query, the same
JSON body (key order aside) and the same credential header. For Bedrock, both
SigV4 signatures are checked by one independent implementation of the
algorithm, for the same credentials and timestamp.

The SDK side is written from the `Message`'s fields by hand, as a user of that
SDK would send the turn back; where rxstream deliberately differs, the test
says why.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any
from urllib.parse import quote

import httpx
import pytest

import rxstream as rs
from rxstream.models import (
    Citation,
    Finish,
    JSONObject,
    Message,
    ReasoningBlock,
    ReasoningState,
    ServerToolCall,
    ServerToolResult,
    TextDelta,
    ToolCall,
    ToolCallDelta,
)
from rxstream.testing.server import (
    End,
    FakeLLMServer,
    RecordedRequest,
    Say,
    Scenario,
)
from tests.support.request_recordings import message
from tests.support.sdk_oracle import AWS_KEY_ID, AWS_REGION, AWS_SECRET, KEY, sdk_request

SYSTEM = "You are terse."
WEATHER = rs.Tool(
    "get_weather",
    "The current weather in a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
WEATHER_OPENAI: JSONObject = {
    "type": "function",
    "function": {
        "name": WEATHER.name,
        "description": WEATHER.description,
        "parameters": WEATHER.parameters,
    },
}
RESULT = '{"temperature": 18, "unit": "C"}'


def assert_same(ours: httpx.Request, theirs: RecordedRequest, *auth: str) -> None:
    """Same method, path and query, JSON body, and credential headers."""
    assert ours.method == theirs.method
    assert ours.url.raw_path.decode() == theirs.path
    assert json.loads(ours.content) == theirs.json
    for name in auth:
        assert ours.headers.get(name) == theirs.headers.get(name), name


def key_of(headers: Any) -> str | None:
    """The API key a request carries, whichever header carries it."""
    for name in ("x-api-key", "x-goog-api-key"):
        if headers.get(name):
            return str(headers[name])
    value = headers.get("authorization")
    return str(value).removeprefix("Bearer ") if value else None


def _user(text: str) -> JSONObject:
    return {"role": "user", "content": text}


# -- OpenAI chat completions ----------------------------------------------------------


def _chat_turn() -> Message:
    return message(("openai/chat-tool-call-single.sse", "openai-chat"))


def _chat_sdk_assistant(m: Message) -> JSONObject:
    return {
        "role": "assistant",
        "content": m.content or None,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in m.tool_calls
        ],
    }


@pytest.mark.parametrize("case", ["plain", "tools", "round"])
def test_openai_chat(case: str) -> None:
    openai = pytest.importorskip("openai")
    m = _chat_turn()
    ours_messages: list[Any] = [{"role": "system", "content": SYSTEM}, _user("Weather in Paris?")]
    sdk_messages: list[Any] = list(ours_messages)
    if case == "round":
        call = m.tool_calls[0]
        ours_messages += [m, {"role": "tool", "tool_call_id": call.id, "content": RESULT}]
        sdk_messages += [
            _chat_sdk_assistant(m),
            {"role": "tool", "tool_call_id": call.id, "content": RESULT},
        ]
    tools = case != "plain"

    def send(root: str) -> Any:
        client = openai.OpenAI(api_key=KEY, base_url=f"{root}/v1", max_retries=0)
        extra: dict[str, Any] = {"tools": [WEATHER_OPENAI]} if tools else {}
        return client.chat.completions.create(
            model="gpt-4o-mini",
            messages=sdk_messages,
            stream=True,
            stream_options={"include_usage": True},
            max_tokens=200,
            temperature=0.5,
            **extra,
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "openai-chat",
        model="gpt-4o-mini",
        messages=ours_messages,
        tools=[WEATHER] if tools else None,
        max_tokens=200,
        temperature=0.5,
        api_key=KEY,
        base_url="http://127.0.0.1/v1",
    )
    assert_same(ours, theirs, "authorization")


# -- OpenAI Responses -------------------------------------------------------------------


def _responses_turn() -> Message:
    # A real reasoning turn (summary, encrypted item, text) followed by a real call.
    return message(
        ("openai-responses/reasoning-summary-and-text.sse", "openai-responses"),
        ("openai-responses/function-call-args.sse", "openai-responses"),
    )


def _output_item(m: Message, kind: str) -> JSONObject:
    """The one output item of `kind` in the final response the turn's recording ended with."""
    (item,) = [i for i in m.metadata["response"]["output"] if i["type"] == kind]
    assert isinstance(item, dict)
    return item


def test_responses_calls_go_back_with_their_item_id_and_status() -> None:
    m = _responses_turn()
    (call,) = m.tool_calls
    item = _output_item(m, "function_call")
    assert item["id"].startswith("fc_")
    assert m.metadata["function_call_item_ids"] == {call.id: item["id"]}
    request = rs.request(
        "openai-responses",
        model="gpt-5-mini",
        messages=[_user("Capital of France?"), m],
        api_key=KEY,
        base_url="http://127.0.0.1/v1",
    )
    sent = [i for i in json.loads(request.content)["input"] if i.get("type") == "function_call"]
    assert sent == [item]
    # A call that came from elsewhere (a dict, another dialect) has no item id: none is made up.
    plain = rs.request(
        "openai-responses",
        model="gpt-5-mini",
        messages=[
            _user("Capital of France?"),
            Message(content="", tool_calls=(ToolCall(0, call.id, call.name, call.arguments),)),
        ],
        api_key=KEY,
        base_url="http://127.0.0.1/v1",
    )
    (bare,) = [i for i in json.loads(plain.content)["input"] if i.get("type") == "function_call"]
    assert "id" not in bare
    assert "status" not in bare


@pytest.mark.parametrize("case", ["plain", "tools", "round"])
def test_openai_responses(case: str) -> None:
    openai = pytest.importorskip("openai")
    m = _responses_turn()
    ours_messages: list[Any] = [{"role": "system", "content": SYSTEM}, _user("Capital of France?")]
    sdk_input: list[Any] = [{"role": "user", "content": "Capital of France?"}]
    if case == "round":
        call = m.tool_calls[0]
        (reasoning,) = [b for b in m.blocks if isinstance(b, ReasoningBlock)]
        assert reasoning.state is not None
        assert reasoning.state.raw is not None
        ours_messages += [m, {"role": "tool", "tool_call_id": call.id, "content": "Paris"}]
        sdk_input += [
            # The reasoning item as it came (id, status, encrypted content), then the rest.
            reasoning.state.raw,
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": m.content}],
            },
            # The call item as the response's output holds it (its own `fc_` id and status),
            # which is how an SDK user sends it back (`input += response.output`).
            _output_item(m, "function_call"),
            {"type": "function_call_output", "call_id": call.id, "output": "Paris"},
        ]
    tools = case != "plain"

    def send(root: str) -> Any:
        client = openai.OpenAI(api_key=KEY, base_url=f"{root}/v1", max_retries=0)
        extra: dict[str, Any] = {}
        if tools:
            # Chat-style tools are not strict: the API takes a tool without `strict` as strict.
            extra["tools"] = [
                {
                    "type": "function",
                    "name": WEATHER.name,
                    "description": WEATHER.description,
                    "parameters": WEATHER.parameters,
                    "strict": False,
                }
            ]
        return client.responses.create(
            model="gpt-5-mini",
            instructions=SYSTEM,
            input=sdk_input,
            stream=True,
            max_output_tokens=300,
            reasoning={"effort": "low", "summary": "auto"},
            **extra,
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "openai-responses",
        model="gpt-5-mini",
        messages=ours_messages,
        tools=[WEATHER_OPENAI] if tools else None,
        max_tokens=300,
        reasoning="low",
        api_key=KEY,
        base_url="http://127.0.0.1/v1",
    )
    assert_same(ours, theirs, "authorization")


def test_openai_responses_reasoning_then_call_goes_back_as_response_output() -> None:
    # A real gpt-5 turn: a reasoning item (encrypted content) and then a function call.
    # The SDK user sends the response's output back as it is, reasoning first; the API
    # refuses a call item without the reasoning item that came before it.
    openai = pytest.importorskip("openai")
    m = message(
        ("openai-responses/reasoning-encrypted-content-function-call.sse", "openai-responses")
    )
    assert [type(b).__name__ for b in m.blocks] == ["ReasoningBlock", "ToolCall"]
    (call,) = m.tool_calls
    output = m.metadata["response"]["output"]
    assert [i["type"] for i in output] == ["reasoning", "function_call"]
    result = {"type": "function_call_output", "call_id": call.id, "output": "19"}

    def send(root: str) -> Any:
        client = openai.OpenAI(api_key=KEY, base_url=f"{root}/v1", max_retries=0)
        return client.responses.create(
            model="gpt-5.1-codex-max",
            input=[{"role": "user", "content": "(12 + 7) * 3 * 10?"}, *output, result],
            stream=True,
            store=False,
            include=["reasoning.encrypted_content"],
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "openai-responses",
        model="gpt-5.1-codex-max",
        messages=[
            _user("(12 + 7) * 3 * 10?"),
            m,
            {"role": "tool", "tool_call_id": call.id, "content": "19"},
        ],
        store=False,
        include=["reasoning.encrypted_content"],
        api_key=KEY,
        base_url="http://127.0.0.1/v1",
    )
    assert_same(ours, theirs, "authorization")


# -- Anthropic ------------------------------------------------------------------------


def _anthropic_turns() -> tuple[Message, Message]:
    redacted = message(("anthropic/redacted-thinking.sse", "anthropic"))
    thinking_then_call = message(
        ("anthropic/thinking-signature-padded.sse", "anthropic"),
        ("anthropic/tool-use-input-json.sse", "anthropic"),
    )
    return redacted, thinking_then_call


def _anthropic_sdk_content(m: Message) -> list[JSONObject]:
    out: list[JSONObject] = []
    thinking = [s for s in m.reasoning_state if s.kind == "thinking"]
    out += [{"type": "thinking", "thinking": m.reasoning, "signature": s.data} for s in thinking]
    out += [
        {"type": "redacted_thinking", "data": s.data}
        for s in m.reasoning_state
        if s.kind == "redacted_thinking"
    ]
    out.append({"type": "text", "text": m.content})
    out += [
        {"type": "tool_use", "id": c.id, "name": c.name, "input": json.loads(c.arguments)}
        for c in m.tool_calls
    ]
    return out


@pytest.mark.parametrize("case", ["plain", "tools", "round"])
def test_anthropic(case: str) -> None:
    anthropic = pytest.importorskip("anthropic")

    redacted, turn = _anthropic_turns()
    ours_messages: list[Any] = [{"role": "system", "content": SYSTEM}, _user("Weather in Paris?")]
    sdk_messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    if case == "round":
        call = turn.tool_calls[0]
        ours_messages += [
            redacted,
            _user("And now?"),
            turn,
            {"role": "tool", "tool_call_id": call.id, "content": RESULT},
        ]
        sdk_messages += [
            {"role": "assistant", "content": _anthropic_sdk_content(redacted)},
            {"role": "user", "content": "And now?"},
            {"role": "assistant", "content": _anthropic_sdk_content(turn)},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": RESULT}],
            },
        ]
    tools = case != "plain"

    def send(root: str) -> Any:
        client = anthropic.Anthropic(api_key=KEY, base_url=root, max_retries=0)
        extra: dict[str, Any] = {}
        if tools:
            extra["tools"] = [
                {
                    "name": WEATHER.name,
                    "description": WEATHER.description,
                    "input_schema": WEATHER.parameters,
                }
            ]
        return client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=2048,
            system=SYSTEM,
            messages=sdk_messages,
            stream=True,
            thinking={"type": "enabled", "budget_tokens": 1024},
            **extra,
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "anthropic",
        model="claude-sonnet-4-5",
        messages=ours_messages,
        tools=[WEATHER] if tools else None,
        max_tokens=2048,
        reasoning=1024,
        # The version the SDK sent, so the headers compare (whichever SDK release this
        # is); rxstream's default is 2023-06-01 (deliberately: the current SDK's newer
        # version refuses `temperature`).
        anthropic_version=theirs.headers["anthropic-version"],
        api_key=KEY,
        base_url="http://127.0.0.1",
    )
    assert_same(ours, theirs, "anthropic-version")
    # Equivalent, not equal: the SDK now sends the key as `Authorization: Bearer`;
    # rxstream keeps `x-api-key`, which every API version and every
    # Anthropic-compatible gateway takes.
    assert ours.headers["x-api-key"] == key_of(theirs.headers) == KEY


COMPACT = {"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 9}}]}


@pytest.mark.parametrize(
    "betas", [["compact-2026-01-12"], ["compact-2026-01-12", "context-management-2025-06-27"]]
)
def test_anthropic_betas_go_as_the_sdk_sends_them(betas: list[str]) -> None:
    # Compaction is a beta: `client.beta.messages.create(betas=[...])` sends the names as one
    # `anthropic-beta` header and adds none of its own; `rs.request(betas=...)` does the same.
    anthropic = pytest.importorskip("anthropic")

    def send(root: str) -> Any:
        client = anthropic.Anthropic(api_key=KEY, base_url=root, max_retries=0)
        return client.beta.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Go on."}],
            stream=True,
            betas=betas,
            context_management=COMPACT,
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "anthropic",
        model="claude-sonnet-4-5",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Go on."}],
        betas=betas,
        context_management=COMPACT,
        anthropic_version=theirs.headers["anthropic-version"],
        api_key=KEY,
        base_url="http://127.0.0.1",
    )
    assert_same(ours, theirs, "anthropic-version", "anthropic-beta")
    assert ours.headers["anthropic-beta"] == ",".join(betas)
    plain = rs.request("anthropic", model="m", messages=[_user("Hi")], api_key=KEY, betas=[])
    assert "anthropic-beta" not in plain.headers
    for bad in ("compact-2026-01-12", [""], [1]):
        with pytest.raises(TypeError, match="betas="):
            rs.request("anthropic", model="m", messages=[_user("Hi")], api_key=KEY, betas=bad)


# -- Gemini ---------------------------------------------------------------------------


def _gemini_turn() -> Message:
    return message(("google/function-call-thought-signature.sse", "gemini"))


@pytest.mark.parametrize("case", ["plain", "tools", "round", "round-by-id"])
def test_gemini(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    m = _gemini_turn()
    ours_messages: list[Any] = [{"role": "system", "content": SYSTEM}, _user("Where am I?")]
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Where am I?")])]
    if case.startswith("round"):
        call = m.tool_calls[0]
        (signature,) = [s for s in m.reasoning_state if s.kind == "thought_signature"]
        assert signature.index == call.index  # it rode on the call
        # The call came without an id: answered by its name, or (as every OpenAI-style
        # loop does) by the id rxstream gave it, which Gemini never sees.
        answer = {"tool_call_id": call.id} if case == "round-by-id" else {"name": call.name}
        ours_messages += [m, {"role": "tool", **answer, "content": "France"}]
        contents += [
            types.Content(
                role="model",
                parts=[
                    types.Part(
                        function_call=types.FunctionCall(name=call.name, args={}),
                        thought_signature=base64.b64decode(signature.data),
                    )
                ],
            ),
            types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            name=call.name, response={"output": "France"}
                        )
                    )
                ],
            ),
        ]
    tools = case != "plain"

    def send(root: str) -> Any:
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=root))
        config = types.GenerateContentConfig(
            system_instruction=SYSTEM,
            max_output_tokens=200,
            tools=[
                types.Tool(
                    function_declarations=[
                        types.FunctionDeclaration(
                            name=WEATHER.name,
                            description=WEATHER.description,
                            parameters_json_schema=WEATHER.parameters,
                        )
                    ]
                )
            ]
            if tools
            else None,
        )
        # Read inside, while the client lives (it closes its connections when collected).
        return list(
            client.models.generate_content_stream(
                model="gemini-2.5-flash", contents=contents, config=config
            )
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "gemini",
        model="gemini-2.5-flash",
        messages=ours_messages,
        tools=[WEATHER] if tools else None,
        max_tokens=200,
        api_key=KEY,
        base_url="http://127.0.0.1",
    )
    expected = theirs.json
    # Where rxstream deliberately differs from the SDK:
    # - the SDK names the system instruction's role ("user"), which the API does not need;
    expected.get("systemInstruction", {}).pop("role", None)
    # - it sends the declaration's schema as `parameters_json_schema`, rxstream the
    #   REST field's documented name `parametersJsonSchema` (the API reads both);
    for tool in expected.get("tools", []):
        for declaration in tool.get("functionDeclarations", []):
            declaration["parametersJsonSchema"] = declaration.pop("parameters_json_schema")
    # - it decodes a thought signature to bytes and re-encodes it URL-safe; rxstream
    #   sends back the very string that came (the same bytes, byte for byte).
    sent = json.loads(ours.content)
    for theirs_turn, our_turn in zip(expected["contents"], sent["contents"], strict=True):
        for theirs_part, our_part in zip(theirs_turn["parts"], our_turn["parts"], strict=True):
            if "thoughtSignature" in theirs_part:
                assert base64.urlsafe_b64decode(
                    theirs_part["thoughtSignature"]
                ) == base64.b64decode(our_part["thoughtSignature"])
                theirs_part["thoughtSignature"] = our_part["thoughtSignature"]
    assert sent == expected
    assert ours.url.raw_path.decode() == theirs.path
    assert ours.headers["x-goog-api-key"] == theirs.headers["x-goog-api-key"]


# -- Cohere ---------------------------------------------------------------------------


def _cohere_turn() -> Message:
    return message(("cohere/v2-tool-call.sse", "cohere"))


@pytest.mark.parametrize("case", ["plain", "tools", "round"])
def test_cohere(case: str) -> None:
    cohere = pytest.importorskip("cohere")
    m = _cohere_turn()
    ours_messages: list[Any] = [{"role": "system", "content": SYSTEM}, _user("Weather in SF?")]
    sdk_messages: list[Any] = list(ours_messages)
    if case == "round":
        results = [{"role": "tool", "tool_call_id": c.id, "content": RESULT} for c in m.tool_calls]
        ours_messages += [m, *results]
        sdk_messages += [
            {
                "role": "assistant",
                "tool_plan": m.reasoning,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments},
                    }
                    for c in m.tool_calls
                ],
            },
            *results,
        ]
    tools = case != "plain"

    def send(root: str) -> Any:
        client = cohere.ClientV2(api_key=KEY, base_url=root)
        extra: dict[str, Any] = {"tools": [WEATHER_OPENAI]} if tools else {}
        return client.chat_stream(
            model="command-a-03-2025", messages=sdk_messages, max_tokens=200, **extra
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "cohere",
        model="command-a-03-2025",
        messages=ours_messages,
        tools=[WEATHER] if tools else None,
        max_tokens=200,
        api_key=KEY,
        base_url="http://127.0.0.1",
    )
    assert_same(ours, theirs, "authorization")


# -- Ollama ---------------------------------------------------------------------------


def _ollama_turn() -> Message:
    return message(("ollama/chat-tool-call-llama3.1.ndjson", "ollama"))


@pytest.mark.parametrize("case", ["plain", "tools", "round", "round-by-id"])
def test_ollama(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ollama = pytest.importorskip("ollama")
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    m = _ollama_turn()
    ours_messages: list[Any] = [{"role": "system", "content": SYSTEM}, _user("1 + 1?")]
    sdk_messages: list[Any] = list(ours_messages)
    if case.startswith("round"):
        call = m.tool_calls[0]
        # The call came without an id: answered by its name, or by the id rxstream gave it.
        answer = {"tool_call_id": call.id} if case == "round-by-id" else {"name": call.name}
        ours_messages += [m, {"role": "tool", **answer, "content": "2"}]
        sdk_messages += [
            {
                "role": "assistant",
                "content": m.content,
                "tool_calls": [
                    {"function": {"name": call.name, "arguments": json.loads(call.arguments)}}
                ],
            },
            {"role": "tool", "content": "2", "tool_name": call.name},
        ]
    tools = case != "plain"

    def send(root: str) -> Any:
        client = ollama.Client(host=root)
        extra: dict[str, Any] = {"tools": [WEATHER_OPENAI]} if tools else {}
        return client.chat(
            model="llama3.1",
            messages=sdk_messages,
            stream=True,
            options={"num_predict": 200},
            **extra,
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "ollama",
        model="llama3.1",
        messages=ours_messages,
        tools=[WEATHER] if tools else None,
        max_tokens=200,
        base_url="http://127.0.0.1",
    )
    if theirs.json.get("tools") == []:
        # The SDK sends an empty `tools`; rxstream only the fields asked for.
        del theirs.json["tools"]
    assert_same(ours, theirs, "authorization")
    assert "think" not in json.loads(ours.content)  # no `think: false` unasked


# -- Bedrock --------------------------------------------------------------------------

BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-v1:0"


def _sigv4_signature(
    method: str, path: str, headers: dict[str, str], body: bytes, service: str
) -> tuple[str, str]:
    """(expected, sent) signature of a request, by the SigV4 algorithm itself.

    Written from AWS's description (canonical request, string to sign, derived
    key), not from botocore, so it checks both signers.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    authorization = lower["authorization"]
    fields = dict(part.strip().split("=", 1) for part in authorization.split(" ", 1)[1].split(","))
    signed = fields["SignedHeaders"].split(";")
    amz_date = lower["x-amz-date"]
    date, region = amz_date[:8], fields["Credential"].split("/")[2]
    raw_path, _, query = path.partition("?")
    canonical = "\n".join(
        [
            method,
            quote(raw_path, safe="/~"),  # every service but S3: each segment encoded twice
            query,
            "".join(f"{h}:{' '.join(lower[h].split())}\n" for h in signed),
            ";".join(signed),
            hashlib.sha256(body).hexdigest(),
        ]
    )
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = ("AWS4" + AWS_SECRET).encode()
    for piece in (date, region, service, "aws4_request"):
        key = hmac.new(key, piece.encode(), hashlib.sha256).digest()
    expected = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return expected, fields["Signature"]


def _bedrock_sdk_content(m: Message) -> list[JSONObject]:
    out: list[JSONObject] = []
    for block in m.blocks:
        if isinstance(block, ReasoningBlock) and block.state is not None:
            out.append(
                {
                    "reasoningContent": {
                        "reasoningText": {"text": block.text, "signature": block.state.data}
                    }
                }
            )
        elif isinstance(block, ReasoningState) and block.kind == "redacted_thinking":
            out.append({"reasoningContent": {"redactedContent": base64.b64decode(block.data)}})
        elif isinstance(block, ToolCall):
            out.append(
                {
                    "toolUse": {
                        "toolUseId": block.id,
                        "name": block.name,
                        "input": json.loads(block.arguments),
                    }
                }
            )
        elif hasattr(block, "text"):
            out.append({"text": block.text})
    return out


@pytest.mark.parametrize("case", ["plain", "tools", "round"])
@pytest.mark.usefixtures("aws_env")
def test_bedrock(case: str) -> None:
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config  # type: ignore[import-untyped]

    # Bedrock's only recording is a text answer: the reasoning round uses Claude's
    # real thinking and tool call from the Anthropic recordings (Claude on Bedrock
    # sends the same blocks, as reasoningContent and toolUse).
    text_turn = message(("bedrock/converse-stream-text.eventstream", "bedrock"))
    _, turn = _anthropic_turns()
    ours_messages: list[Any] = [{"role": "system", "content": SYSTEM}, _user("2 + 2?")]
    sdk_messages: list[Any] = [{"role": "user", "content": [{"text": "2 + 2?"}]}]
    if case == "round":
        call = turn.tool_calls[0]
        ours_messages += [
            text_turn,
            _user("Weather in Paris?"),
            turn,
            {"role": "tool", "tool_call_id": call.id, "content": RESULT},
        ]
        sdk_messages += [
            {"role": "assistant", "content": _bedrock_sdk_content(text_turn)},
            {"role": "user", "content": [{"text": "Weather in Paris?"}]},
            {"role": "assistant", "content": _bedrock_sdk_content(turn)},
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": call.id,
                            "content": [{"json": json.loads(RESULT)}],
                        }
                    }
                ],
            },
        ]
    tools = case != "plain"

    def send(root: str) -> Any:
        client = boto3.client(
            "bedrock-runtime",
            region_name=AWS_REGION,
            endpoint_url=root,
            config=Config(retries={"total_max_attempts": 1}),
        )
        extra: dict[str, Any] = {}
        if tools:
            extra["toolConfig"] = {
                "tools": [
                    {
                        "toolSpec": {
                            "name": WEATHER.name,
                            "description": WEATHER.description,
                            "inputSchema": {"json": WEATHER.parameters},
                        }
                    }
                ]
            }
        return client.converse_stream(
            modelId=BEDROCK_MODEL,
            messages=sdk_messages,
            system=[{"text": SYSTEM}],
            inferenceConfig={"maxTokens": 200},
            **extra,
        )

    theirs = sdk_request(send)
    root = theirs.headers["host"]
    ours = rs.request(
        "bedrock",
        model=BEDROCK_MODEL,
        messages=ours_messages,
        tools=[WEATHER] if tools else None,
        max_tokens=200,
        base_url=f"http://{root}",
    )
    assert ours.method == theirs.method
    assert ours.url.raw_path.decode() == theirs.path
    assert json.loads(ours.content) == theirs.json
    # Both signed for the same credentials at the same moment, each over its own
    # bytes (botocore's JSON has spaces after separators, rxstream's none; boto3
    # also signs its SDK headers): the signatures differ only by what they cover,
    # and each is the SigV4 signature of what was sent.
    assert ours.headers["x-amz-date"] == theirs.headers["x-amz-date"] == "20260102T030405Z"
    scope = f"Credential={AWS_KEY_ID}/20260102/{AWS_REGION}/bedrock/aws4_request"
    assert scope in ours.headers["authorization"]
    assert scope in theirs.headers["authorization"]
    expected, sent = _sigv4_signature(
        theirs.method, theirs.path, dict(theirs.headers), theirs.body, "bedrock"
    )
    assert sent == expected
    expected, sent = _sigv4_signature(
        ours.method, ours.url.raw_path.decode(), dict(ours.headers), ours.content, "bedrock"
    )
    assert sent == expected


# -- Bedrock: the tools Bedrock ran go back with the turn ------------------------------------

NOVA = "us.amazon.nova-2-lite-v1:0"
#: A Nova turn as the Converse docs show one: the code interpreter's call and result (run by
#: Bedrock), text, then a call of the client's tool.
NOVA_TURN = (
    ServerToolCall("tooluse_ci_1", "nova_code_interpreter", {"code": "sum([10, 24, 2]) / 3"}),
    ServerToolResult(
        "tooluse_ci_1",
        "nova_code_interpreter_result",
        [{"text": '{"stdOut":"12.0","stdErr":"","exitCode":0,"isError":false}'}],
    ),
    TextDelta("The average is 12. Saving it."),
    ToolCallDelta(0, '{"value": 12}', "tooluse_save_1", "save_result"),
    Finish("tool_calls"),
)
NOVA_TOOLS: list[Any] = [
    {"systemTool": {"name": "nova_code_interpreter"}},
    {
        "toolSpec": {
            "name": "save_result",
            "description": "Save a number",
            "inputSchema": {"json": {"type": "object", "properties": {"value": {}}}},
        }
    },
]


def _boto3_turn(events: Any) -> list[JSONObject]:
    """The assistant content a boto3 user builds from `converse_stream` events.

    Each content block by its index: text joined, a `toolUse` (server's or
    client's) with its input parsed at its stop, a `toolResult` with its
    content deltas joined; the block starts as boto3 parsed them; a text
    block that had `citation` deltas, at its stop, a `citationsContent` block
    (its whole text, its citations as they came).
    """
    blocks: dict[int, JSONObject] = {}
    inputs: dict[int, str] = {}
    cited: dict[int, list[Any]] = {}
    for event in events:
        if "contentBlockStart" in event:
            index, start = (
                event["contentBlockStart"]["contentBlockIndex"],
                event["contentBlockStart"]["start"],
            )
            if "toolUse" in start:
                blocks[index], inputs[index] = {"toolUse": dict(start["toolUse"])}, ""
            elif "toolResult" in start:
                blocks[index] = {"toolResult": {**start["toolResult"], "content": []}}
        elif "contentBlockDelta" in event:
            index, delta = (
                event["contentBlockDelta"]["contentBlockIndex"],
                event["contentBlockDelta"]["delta"],
            )
            if "text" in delta:
                block = blocks.setdefault(index, {"text": ""})
                block["text"] += delta["text"]
            elif "toolUse" in delta:
                inputs[index] += delta["toolUse"]["input"]
            elif "toolResult" in delta:
                blocks[index]["toolResult"]["content"] += delta["toolResult"]
            elif "citation" in delta:
                cited.setdefault(index, []).append(delta["citation"])
        elif "contentBlockStop" in event:
            index = event["contentBlockStop"]["contentBlockIndex"]
            if index in cited:
                text = [{"text": blocks.pop(index, {"text": ""})["text"]}]
                blocks[index] = {"citationsContent": {"content": text, "citations": cited[index]}}
            if index in inputs:
                blocks[index]["toolUse"]["input"] = json.loads(inputs.pop(index) or "{}")
    return [blocks[index] for index in sorted(blocks)]


@pytest.mark.usefixtures("aws_env")
def test_bedrock_server_tools_go_back_as_boto3_keeps_them() -> None:
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config

    question = "Average of 10, 24 and 2? Save it."
    ask: list[Any] = [{"role": "user", "content": [{"text": question}]}]
    answer = Scenario(steps=(Say(*NOVA_TURN), End()))
    with FakeLLMServer(answer) as server, httpx.Client() as client:
        root = f"http://127.0.0.1:{server.port}"
        sdk = boto3.client(
            "bedrock-runtime",
            region_name=AWS_REGION,
            endpoint_url=root,
            config=Config(retries={"total_max_attempts": 1}),
        )
        stream = sdk.converse_stream(modelId=NOVA, messages=ask, toolConfig={"tools": NOVA_TOOLS})
        sdk_content = _boto3_turn(stream["stream"])
        out: list[Message] = []
        rs.chat(
            client,
            "bedrock",
            model=NOVA,
            messages=[_user(question)],
            tools=NOVA_TOOLS,
            base_url=root,
        ).pipe(rs.accumulate_message()).subscribe(out.append)
    (m,) = out
    assert [type(b).__name__ for b in m.blocks] == [
        "ServerToolCall",
        "ServerToolResult",
        "TextBlock",
        "ToolCall",
    ]
    (call,) = m.tool_calls
    result = {"toolResult": {"toolUseId": call.id, "content": [{"json": {"saved": True}}]}}

    def send(root: str) -> Any:
        client = boto3.client(
            "bedrock-runtime",
            region_name=AWS_REGION,
            endpoint_url=root,
            config=Config(retries={"total_max_attempts": 1}),
        )
        return client.converse_stream(
            modelId=NOVA,
            messages=[
                *ask,
                {"role": "assistant", "content": sdk_content},
                {"role": "user", "content": [result]},
            ],
            toolConfig={"tools": NOVA_TOOLS},
        )

    theirs = sdk_request(send)
    ours = rs.request(
        "bedrock",
        model=NOVA,
        messages=[
            _user(question),
            m,
            {"role": "tool", "tool_call_id": call.id, "content": '{"saved": true}'},
        ],
        tools=NOVA_TOOLS,
        base_url=f"http://{theirs.headers['host']}",
    )
    assert json.loads(ours.content) == theirs.json


# -- Bedrock: a cited text block goes back as citationsContent ----------------------------

#: Document chat on Bedrock: a text block with two citations of the document, then text.
CITED_SOURCE = {
    "title": "report",
    "sourceContent": [{"text": "Revenue grew 12%."}],
    "location": {"documentChar": {"documentIndex": 0, "start": 0, "end": 17}},
}
CITED_PAGE = {
    "title": "report",
    "location": {"documentPage": {"documentIndex": 0, "start": 2, "end": 3}},
}


def _bedrock_citation(raw: JSONObject, start: int, end: int) -> Citation:
    """A citation as the bedrock decoder gives one, its raw what Bedrock sent."""
    kind = next(iter(raw["location"]))
    text = "".join(s["text"] for s in raw.get("sourceContent", ())) or None
    return Citation(kind, None, raw["title"], text, start, end, raw=raw, whole_block=True)


CITED_TURN = (
    TextDelta("Revenue grew "),
    TextDelta("12%."),
    _bedrock_citation(CITED_SOURCE, 0, 17),
    _bedrock_citation(CITED_PAGE, 0, 17),
    TextDelta(" Costs fell."),
    Finish("stop"),
)


@pytest.mark.usefixtures("aws_env")
def test_bedrock_citations_go_back_as_citations_content() -> None:
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config
    from botocore.validate import ParamValidator  # type: ignore[import-untyped]

    ask: list[Any] = [{"role": "user", "content": [{"text": "How did the year go?"}]}]
    with FakeLLMServer(Scenario(steps=(Say(*CITED_TURN), End()))) as server, httpx.Client() as c:
        root = f"http://127.0.0.1:{server.port}"
        sdk = boto3.client(
            "bedrock-runtime",
            region_name=AWS_REGION,
            endpoint_url=root,
            config=Config(retries={"total_max_attempts": 1}),
        )
        sdk_content = _boto3_turn(sdk.converse_stream(modelId=NOVA, messages=ask)["stream"])
        out: list[Message] = []
        rs.chat(
            c, "bedrock", model=NOVA, messages=[_user("How did the year go?")], base_url=root
        ).pipe(rs.accumulate_message()).subscribe(out.append)
    (m,) = out
    assert [(type(b).__name__, getattr(b, "citations", None) is None) for b in m.blocks] == [
        ("TextBlock", False),
        ("TextBlock", True),
    ]
    assert m.blocks[0].citations == CITED_TURN[2:4]
    assert "citationsContent" in sdk_content[0]

    def send(root: str) -> Any:
        client = boto3.client(
            "bedrock-runtime",
            region_name=AWS_REGION,
            endpoint_url=root,
            config=Config(retries={"total_max_attempts": 1}),
        )
        next_turn = [*ask, {"role": "assistant", "content": sdk_content}, *ask]
        return client.converse_stream(modelId=NOVA, messages=next_turn)

    theirs = sdk_request(send)
    ours = rs.request(
        "bedrock",
        model=NOVA,
        messages=[_user("How did the year go?"), m, _user("How did the year go?")],
        base_url=f"http://{theirs.headers['host']}",
    )
    body = json.loads(ours.content)
    assert body == theirs.json
    # botocore's own validation of the ConverseStream input takes the body.
    shape = sdk.meta.service_model.operation_model("ConverseStream").input_shape
    report = ParamValidator().validate({"modelId": NOVA, **body}, shape)
    assert not report.has_errors(), report.generate_report()
