"""The official SDKs as oracle for the requests a run makes: each step, the same request.

For each dialect, `rs.run` makes the three-step run of `tests/runs/test_run_server.py`
(two tools at once, then one that needs their results, then the answer) against a
loopback `FakeLLMServer`, whose answers carry signed reasoning where the dialect has it
(Anthropic and Bedrock thinking with its signature and a redacted thinking block, an
Anthropic compaction block opening the second answer, a Responses reasoning item with
encrypted content, Gemini thought signatures on the calls, Cohere's tool plan, Ollama's
thinking), and whose first answer has a tool the provider ran itself where the dialect
has one (Anthropic's web search, Responses' web search call, Gemini's code execution,
Nova's code interpreter on Bedrock). Then the provider's official SDK makes the same
steps against the same server, the way its users write a tool loop: the assistant turn
goes back as the SDK returned it where the SDK accumulates one (the anthropic SDK's
`get_final_message()`, the openai SDK's `get_final_response()`, `get_final_completion()`
written as the SDK's param type, google-genai's parts), as a boto3 user builds it from
`converse_stream`'s events, and for Cohere and Ollama (whose SDKs give the stream's
pieces only) written from the run's own turn in the SDK's shape, as
`tests/request_oracle/test_oracle.py` writes it. The tool results are the run's
(`RunEnd.messages`), in the SDK's shape. Each step's requests must be equal, path and
JSON body (those of steps 2 and 3 being the conversations with calls and results);
each deliberate difference is said where it is allowed. (Credentials and signatures
are `test_oracle.py`'s.)
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.models import JSONObject, Message
from rxstream.testing import FakeLLMServer, Scenario
from rxstream.testing._asked import read_asked
from rxstream.testing._routes import route
from rxstream.testing._scenario import RecordedRequest

from ..runs.run_resume import TOOLS, get_time, get_weather, to_fahrenheit

ASK = "How warm is it in Paris, in Fahrenheit, and what time is it?"
SPECS = [rs.tool(get_weather).spec, rs.tool(get_time).spec, rs.tool(to_fahrenheit).spec]
#: Each step's options, for the run and the SDK alike.
MAX_TOKENS = 2048
THINKING = 1024


def _call(index: int, call_id: str, name: str, arguments: dict[str, Any]) -> rs.ToolCallDelta:
    return rs.ToolCallDelta(index, json.dumps(arguments), id=call_id, name=name)


def _signature(step: int) -> str:
    return base64.b64encode(f"thought-signature-{step}".encode()).decode()


#: The tools the provider ran, in each dialect's first answer (where the SDK keeps them).
SERVER_TOOLS: dict[str, list[rs.Delta]] = {
    "anthropic": [
        rs.ServerToolCall("srvtoolu_1", "web_search", {"query": "Paris weather"}),
        rs.ServerToolResult(
            "srvtoolu_1",
            "web_search_tool_result",
            [{"type": "web_search_result", "url": "https://x.test/paris", "title": "Paris",
              "encrypted_content": "ENC", "page_age": None}],
        ),
    ],
    "openai-responses": [
        rs.ServerToolCall("ws_1", "web_search", {"action": {"type": "search", "query": "Paris"}})
    ],
    "gemini": [
        rs.ServerToolCall(None, "code_execution", {"language": "PYTHON", "code": "print(18)"}),
        rs.ServerToolResult(None, "code_execution", {"outcome": "OUTCOME_OK", "output": "18\n"}),
    ],
    # Nova's code interpreter, which Bedrock runs (its call and result in the turn).
    "bedrock": [
        rs.ServerToolCall("tooluse_ci_1", "nova_code_interpreter", {"code": "print(18)"}),
        rs.ServerToolResult(
            "tooluse_ci_1",
            "nova_code_interpreter_result",
            [{"text": '{"stdOut":"18","stdErr":"","exitCode":0,"isError":false}'}],
        ),
    ],
}  # fmt: skip


#: The compaction block the second Anthropic answer opens with (the context management beta).
COMPACTION = [
    rs.ReasoningState(
        "compaction",
        data="The user asked for the weather and time in Paris; get_weather and get_time ran.",
        raw={"type": "compaction", "encrypted_content": "EqCompacted1=="},
    )
]


def _before_calls(dialect: str, step: int) -> list[rs.Delta]:
    """What a dialect's answer at `step` carries before its calls: reasoning, server tools."""
    thought = rs.ReasoningDelta(f"Step {step}: which tools?")
    reasoning: list[rs.Delta] = []
    match dialect:
        case "anthropic":
            # Signed thinking, then a redacted block; the second answer opens with a
            # compaction block (the API's summary of the turns before it).
            redacted = rs.ReasoningState("redacted_thinking", data=f"EqRedacted{step}==")
            signed = rs.ReasoningState("thinking", data=f"sig-{step}")
            reasoning = [*(COMPACTION if step == 2 else []), thought, signed, redacted]
        case "bedrock":
            redacted = rs.ReasoningState("redacted_thinking", data=_signature(10 + step))
            reasoning = [thought, rs.ReasoningState("thinking", data=f"sig-{step}"), redacted]
        case "openai-responses":
            encrypted = rs.ReasoningState("reasoning_item", data=f"enc-{step}", id=f"rs_{step}")
            reasoning = [thought, encrypted]
        case "cohere" | "ollama":
            reasoning = [thought]
    return [*reasoning, *(SERVER_TOOLS.get(dialect, []) if step == 1 else [])]


def _signed(dialect: str, step: int) -> list[rs.Delta]:
    """Gemini's thought signature, on the step's first call (as Gemini sends it)."""
    if dialect != "gemini":
        return []
    return [rs.ReasoningState("thought_signature", data=_signature(step), index=0)]


def three_steps(request: RecordedRequest) -> Scenario:
    """Step 1: two calls at once; step 2: a call that needs their results; step 3: the answer."""
    dialect = route(request.path, request.json) or "openai-chat"
    results = read_asked(dialect, request.path, request.json).results
    if not results:
        deltas: list[rs.Delta] = [
            *_before_calls(dialect, 1),
            _call(0, "call_w", "get_weather", {"city": "Paris"}),
            *_signed(dialect, 1),
            _call(1, "call_t", "get_time", {"city": "Paris"}),
            rs.Finish("tool_calls"),
        ]
    elif len(results) == 2:
        celsius = json.loads(next(r for r in results if "temperature_c" in r))["temperature_c"]
        deltas = [
            *_before_calls(dialect, 2),
            _call(0, "call_f", "to_fahrenheit", {"celsius": celsius}),
            *_signed(dialect, 2),
            rs.Finish("tool_calls"),
        ]
    else:
        deltas = [rs.TextDelta(f"It is {float(results[0]):g} F in Paris."), rs.Finish("stop")]
    return Scenario.answer(*deltas, rs.Usage(10, 2, 12))


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(three_steps) as running:
        yield running


def _root(server: FakeLLMServer, dialect: str) -> str:
    root = f"http://127.0.0.1:{server.port}"
    return f"{root}/v1" if dialect.startswith("openai") else root


def _options(dialect: str) -> dict[str, Any]:
    if dialect == "anthropic":
        return {"reasoning": THINKING}
    if dialect == "openai-responses":
        return {"store": False, "include": ["reasoning.encrypted_content"]}
    return {}


def run_requests(
    server: FakeLLMServer, dialect: str
) -> tuple[list[RecordedRequest], tuple[Message | JSONObject, ...]]:
    """The requests the run made at each step, and the run's whole conversation."""
    before = len(server.requests)
    with httpx.Client() as client:
        run = rs.run(
            client, dialect, model="m", messages=[{"role": "user", "content": ASK}],
            tools=TOOLS, base_url=_root(server, dialect), api_key="k",
            max_tokens=MAX_TOKENS, **_options(dialect),
        )  # fmt: skip
        end = list(rs.to_iterator(run))[-1]
    assert isinstance(end, rs.RunEnd)
    assert end.steps == 3
    assert end.messages[-1].content == "It is 64.4 F in Paris."
    requests = server.requests[before:]
    assert len(requests) == 3
    return requests, end.messages


def sdk_requests(server: FakeLLMServer, steps: Callable[[], None]) -> list[RecordedRequest]:
    """The requests the SDK's loop `steps()` made to the server."""
    before = len(server.requests)
    steps()
    return server.requests[before:]


def results_of(messages: tuple[Message | JSONObject, ...]) -> dict[str, JSONObject]:
    """The run's tool results, by call id."""
    return {m["tool_call_id"]: m for m in messages if isinstance(m, dict) and m["role"] == "tool"}


def step_conversations(
    messages: tuple[Message | JSONObject, ...],
) -> list[list[Message | JSONObject]]:
    """The conversation each step sent: the question, up to the first results, up to the second."""
    ends = [
        i + 1
        for i, m in enumerate(messages[:-1])
        if isinstance(m, dict) and m["role"] == "tool" and isinstance(messages[i + 1], Message)
    ]
    assert len(ends) == 2
    return [list(messages[:end]) for end in [1, *ends]]


def assert_same_steps(ours: list[RecordedRequest], theirs: list[RecordedRequest]) -> None:
    """Each step the same path and body (steps 2 and 3 send calls and results back)."""
    assert len(theirs) == 3
    for step, (mine, sdk) in enumerate(zip(ours, theirs, strict=True), start=1):
        assert (mine.method, mine.path) == (sdk.method, sdk.path), step
        assert mine.json == sdk.json, f"step {step}"


# -- Anthropic: the turn as `get_final_message()` gives it -------------------------------


def test_anthropic(server: FakeLLMServer) -> None:
    # The beta client: compaction blocks are the context management beta's (the released
    # client's message types do not have them).
    anthropic = pytest.importorskip("anthropic")
    ours, messages = run_requests(server, "anthropic")
    results = results_of(messages)
    tools = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
             for t in SPECS]  # fmt: skip

    def loop() -> None:
        with anthropic.Anthropic(api_key="k", base_url=_root(server, "anthropic")) as client:
            sdk_loop(client)

    def sdk_loop(client: Any) -> None:
        conversation: list[Any] = [{"role": "user", "content": ASK}]
        for _ in range(3):
            with client.beta.messages.stream(
                model="m", max_tokens=MAX_TOKENS, messages=conversation, tools=tools,
                thinking={"type": "enabled", "budget_tokens": THINKING},
            ) as stream:  # fmt: skip
                final = stream.get_final_message()
            calls = [block for block in final.content if block.type == "tool_use"]
            if not calls:
                return
            conversation.append({"role": "assistant", "content": final.content})
            conversation.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": call.id,
                            "content": results[call.id]["content"],
                        }
                        for call in calls
                    ],
                }
            )

    theirs = sdk_requests(server, loop)
    assert_same_steps(ours, theirs)
    turn = ours[1].json["messages"][1]["content"]
    assert [block["type"] for block in turn] == [
        "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result",
        "tool_use", "tool_use",
    ]  # fmt: skip
    second = ours[2].json["messages"][3]["content"]
    assert [block["type"] for block in second] == [
        "compaction", "thinking", "redacted_thinking", "tool_use",
    ]  # fmt: skip
    assert second[0] == {"type": "compaction", "content": COMPACTION[0].data,
                         "encrypted_content": "EqCompacted1=="}  # fmt: skip
    assert second[2] == {"type": "redacted_thinking", "data": "EqRedacted2=="}


# -- OpenAI Responses: `input += response.output` ------------------------------------------


def test_openai_responses(server: FakeLLMServer) -> None:
    openai = pytest.importorskip("openai")
    ours, messages = run_requests(server, "openai-responses")
    results = results_of(messages)
    tools = [{"type": "function", "name": t.name, "description": t.description,
              "parameters": t.parameters, "strict": False} for t in SPECS]  # fmt: skip

    def loop() -> None:
        with openai.OpenAI(api_key="k", base_url=_root(server, "openai-responses")) as client:
            sdk_loop(client)

    def sdk_loop(client: Any) -> None:
        conversation: list[Any] = [{"role": "user", "content": ASK}]
        for _ in range(3):
            with client.responses.stream(
                model="m", input=conversation, tools=tools, max_output_tokens=MAX_TOKENS,
                store=False, include=["reasoning.encrypted_content"],
            ) as stream:  # fmt: skip
                final = stream.get_final_response()
            calls = [item for item in final.output if item.type == "function_call"]
            if not calls:
                return
            conversation += final.output
            conversation += [
                {"type": "function_call_output", "call_id": call.call_id,
                 "output": results[call.call_id]["content"]}
                for call in calls
            ]  # fmt: skip

    theirs = sdk_requests(server, loop)
    assert_same_steps(ours, theirs)
    sent = [item.get("type", item.get("role")) for item in ours[1].json["input"]]
    assert sent == [
        "user", "reasoning", "web_search_call", "function_call", "function_call",
        "function_call_output", "function_call_output",
    ]  # fmt: skip


# -- OpenAI chat: the message `get_final_completion()` gives ----------------------------


def test_openai_chat(server: FakeLLMServer) -> None:
    openai = pytest.importorskip("openai")
    ours, messages = run_requests(server, "openai-chat")
    results = results_of(messages)
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
              "parameters": t.parameters}} for t in SPECS]  # fmt: skip

    def loop() -> None:
        with openai.OpenAI(api_key="k", base_url=_root(server, "openai-chat")) as client:
            sdk_loop(client)

    def sdk_loop(client: Any) -> None:
        conversation: list[Any] = [{"role": "user", "content": ASK}]
        for _ in range(3):
            with client.chat.completions.stream(
                model="m", messages=conversation, tools=tools, max_tokens=MAX_TOKENS,
                stream_options={"include_usage": True},
            ) as stream:  # fmt: skip
                final = stream.get_final_completion().choices[0].message
            if not final.tool_calls:
                return
            # The message as a param (`ChatCompletionAssistantMessageParam`): the object itself
            # would send its Python fields (`parsed`, `audio`, `index`, ... as nulls), which the
            # API does not document; an assistant turn of calls alone has `content: null`.
            conversation.append(
                {
                    "role": "assistant",
                    "content": final.content or None,
                    "tool_calls": [
                        {"id": call.id, "type": "function",
                         "function": {"name": call.function.name,
                                      "arguments": call.function.arguments}}
                        for call in final.tool_calls
                    ],
                }
            )  # fmt: skip
            conversation += [
                {"role": "tool", "tool_call_id": call.id,
                 "content": results[call.id]["content"]}
                for call in final.tool_calls
            ]  # fmt: skip

    theirs = sdk_requests(server, loop)
    assert_same_steps(ours, theirs)


# -- Gemini: the model's parts as google-genai gave them ----------------------------------


def test_gemini(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("google.genai")
    from google import genai
    from google.genai import types

    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    ours, messages = run_requests(server, "gemini")
    results = results_of(messages)
    declarations = [
        types.FunctionDeclaration(
            name=t.name, description=t.description, parameters_json_schema=t.parameters
        )
        for t in SPECS
    ]
    config = types.GenerateContentConfig(
        max_output_tokens=MAX_TOKENS, tools=[types.Tool(function_declarations=declarations)]
    )

    def response(call: Any) -> Any:
        # The function's result as the SDK's docs say: an object as it is, else under "output".
        content = results[call.id]["content"]
        value = json.loads(content) if content.startswith("{") else {"output": content}
        return types.Part(
            function_response=types.FunctionResponse(id=call.id, name=call.name, response=value)
        )

    def loop() -> None:
        client = genai.Client(
            api_key="k", http_options=types.HttpOptions(base_url=_root(server, "gemini"))
        )
        try:
            sdk_loop(client)
        finally:
            client.close()

    def sdk_loop(client: Any) -> None:
        contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=ASK)])]
        for _ in range(3):
            parts = [
                part
                for chunk in client.models.generate_content_stream(
                    model="m", contents=contents, config=config
                )
                for candidate in chunk.candidates or ()
                for part in (candidate.content.parts if candidate.content else None) or ()
            ]
            calls = [part.function_call for part in parts if part.function_call]
            if not calls:
                return
            contents.append(types.Content(role="model", parts=parts))
            contents.append(types.Content(role="user", parts=[response(c) for c in calls]))

    theirs = sdk_requests(server, loop)
    for request in theirs:
        # Where rxstream deliberately differs from the SDK (as in test_oracle.py): the SDK
        # sends the schema as `parameters_json_schema`, rxstream the REST field's documented
        # name; the SDK re-encodes a thought signature URL-safe, rxstream sends the very
        # string that came (the same bytes).
        for tool in request.json.get("tools", []):
            for declaration in tool.get("functionDeclarations", []):
                declaration["parametersJsonSchema"] = declaration.pop("parameters_json_schema")
        # And the SDK keeps the empty text part the stream's last chunk carried (with the
        # finish reason); rxstream sends no empty text (Vertex AI refuses one).
        for content in request.json["contents"]:
            content["parts"] = [part for part in content["parts"] if part != {"text": ""}]
            for part in content["parts"]:
                if "thoughtSignature" in part:
                    signature = base64.urlsafe_b64decode(part["thoughtSignature"])
                    part["thoughtSignature"] = base64.b64encode(signature).decode()
    assert_same_steps(ours, theirs)
    first, second = ours[2].json["contents"][1]["parts"], ours[2].json["contents"][3]["parts"]
    assert [next(iter(part)) for part in first] == [
        "executableCode", "codeExecutionResult", "functionCall", "functionCall",
    ]  # fmt: skip
    assert second[0]["thoughtSignature"] == _signature(2)


# -- Cohere, Ollama, Bedrock: the run's turns written in the SDK's types --------------------


def test_cohere(server: FakeLLMServer) -> None:
    cohere = pytest.importorskip("cohere")
    ours, messages = run_requests(server, "cohere")
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
              "parameters": t.parameters}} for t in SPECS]  # fmt: skip

    def sdk_message(m: Message | JSONObject) -> JSONObject:
        if not isinstance(m, Message):
            return {k: v for k, v in m.items() if k != "name"}  # a tool result has no name
        return {
            "role": "assistant",
            "tool_plan": m.reasoning,
            "tool_calls": [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in m.tool_calls
            ],
        }  # fmt: skip

    def steps() -> None:
        with httpx.Client() as http:
            sdk_steps(
                cohere.ClientV2(api_key="k", base_url=_root(server, "cohere"), httpx_client=http)
            )

    def sdk_steps(client: Any) -> None:
        for conversation in step_conversations(messages):
            stream = client.chat_stream(
                model="m",
                messages=[sdk_message(m) for m in conversation],
                tools=tools,
                max_tokens=MAX_TOKENS,
            )
            assert list(stream)

    theirs = sdk_requests(server, steps)
    assert_same_steps(ours, theirs)
    assert ours[1].json["messages"][1]["tool_plan"] == "Step 1: which tools?"


def test_ollama(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    ollama = pytest.importorskip("ollama")
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    monkeypatch.delenv("OLLAMA_HOST", raising=False)
    ours, messages = run_requests(server, "ollama")
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
              "parameters": t.parameters}} for t in SPECS]  # fmt: skip

    def sdk_message(m: Message | JSONObject) -> JSONObject:
        if not isinstance(m, Message):
            if m["role"] == "tool":  # Ollama matches a result to its call by the tool's name
                return {"role": "tool", "content": m["content"], "tool_name": m["name"]}
            return dict(m)
        return {
            "role": "assistant",
            "content": m.content,
            "thinking": m.reasoning,
            "tool_calls": [
                {"function": {"name": c.name, "arguments": json.loads(c.arguments)}}
                for c in m.tool_calls
            ],
        }

    def steps() -> None:
        with ollama.Client(host=_root(server, "ollama")) as client:
            sdk_steps(client)

    def sdk_steps(client: Any) -> None:
        for conversation in step_conversations(messages):
            stream = client.chat(
                model="m",
                messages=[sdk_message(m) for m in conversation],
                tools=tools,
                stream=True,
                options={"num_predict": MAX_TOKENS},
            )
            assert list(stream)

    theirs = sdk_requests(server, steps)
    for request in ours:
        # The SDK's typed `Tool` keeps only the schema fields it models (`type`, `properties`,
        # `required`, ...): `additionalProperties` is not sent; rxstream sends the schema as
        # it is written (Ollama reads the same fields of either).
        for tool in request.json["tools"]:
            tool["function"]["parameters"].pop("additionalProperties")
    assert_same_steps(ours, theirs)
    assert ours[2].json["messages"][4]["thinking"] == "Step 2: which tools?"


def _boto3_content(events: Any) -> list[JSONObject]:
    """The assistant content a boto3 user builds from `converse_stream` events.

    Each content block by its index: text joined, reasoning text joined with its
    signature, a `toolUse` (the server's or the client's) with its input parsed at
    its stop, a `toolResult` with its content joined; the starts as boto3 parsed them.
    """
    blocks: dict[int, JSONObject] = {}
    inputs: dict[int, str] = {}
    for event in events:
        if "contentBlockStart" in event:
            index, start = event["contentBlockStart"]["contentBlockIndex"], event[
                "contentBlockStart"]["start"]  # fmt: skip
            if "toolUse" in start:
                blocks[index], inputs[index] = {"toolUse": dict(start["toolUse"])}, ""
            elif "toolResult" in start:
                blocks[index] = {"toolResult": {**start["toolResult"], "content": []}}
        elif "contentBlockDelta" in event:
            index, delta = event["contentBlockDelta"]["contentBlockIndex"], event[
                "contentBlockDelta"]["delta"]  # fmt: skip
            _add_delta(blocks, inputs, index, delta)
        elif "contentBlockStop" in event:
            index = event["contentBlockStop"]["contentBlockIndex"]
            if index in inputs:
                blocks[index]["toolUse"]["input"] = json.loads(inputs.pop(index) or "{}")
    return [blocks[index] for index in sorted(blocks)]


def _add_delta(
    blocks: dict[int, JSONObject], inputs: dict[int, str], index: int, delta: JSONObject
) -> None:
    if "text" in delta:
        block = blocks.setdefault(index, {"text": ""})
        block["text"] += delta["text"]
    elif "redactedContent" in delta.get("reasoningContent", {}):
        # boto3 gives the blob as bytes (and sends them back base64-encoded).
        blocks[index] = {"reasoningContent": {"redactedContent": delta["reasoningContent"][
            "redactedContent"]}}  # fmt: skip
    elif "reasoningContent" in delta:
        reasoning = blocks.setdefault(index, {"reasoningContent": {"reasoningText": {"text": ""}}})
        signed = reasoning["reasoningContent"]["reasoningText"]
        signed["text"] += delta["reasoningContent"].get("text", "")
        if "signature" in delta["reasoningContent"]:
            signed["signature"] = delta["reasoningContent"]["signature"]
    elif "toolUse" in delta:
        inputs[index] += delta["toolUse"]["input"]
    elif "toolResult" in delta:
        blocks[index]["toolResult"]["content"] += delta["toolResult"]


@pytest.mark.usefixtures("aws_env")
def test_bedrock(server: FakeLLMServer) -> None:
    boto3 = pytest.importorskip("boto3")
    from botocore.config import Config  # type: ignore[import-untyped]

    ours, messages = run_requests(server, "bedrock")
    results = results_of(messages)
    tools = [{"toolSpec": {"name": t.name, "description": t.description,
              "inputSchema": {"json": t.parameters}}} for t in SPECS]  # fmt: skip

    def result(call_id: str) -> JSONObject:
        # An object result as JSON, anything else as text (as boto3's docs write them).
        content = results[call_id]["content"]
        value = {"json": json.loads(content)} if content.startswith("{") else {"text": content}
        return {"toolResult": {"toolUseId": call_id, "content": [value]}}

    def steps() -> None:
        client = boto3.client(
            "bedrock-runtime", region_name="us-west-2", endpoint_url=_root(server, "bedrock"),
            config=Config(retries={"total_max_attempts": 1}),
        )  # fmt: skip
        try:
            sdk_loop(client)
        finally:
            client.close()

    def sdk_loop(client: Any) -> None:
        conversation: list[Any] = [{"role": "user", "content": [{"text": ASK}]}]
        for _ in range(3):
            answer = client.converse_stream(
                modelId="m",
                messages=conversation,
                toolConfig={"tools": tools},
                inferenceConfig={"maxTokens": MAX_TOKENS},
            )
            content = _boto3_content(answer["stream"])
            # The client's calls (the server's own came with their results).
            calls = [
                b["toolUse"]["toolUseId"]
                for b in content
                if "toolUse" in b and b["toolUse"]["toolUseId"] in results
            ]
            if not calls:
                return
            conversation.append({"role": "assistant", "content": content})
            conversation.append({"role": "user", "content": [result(c) for c in calls]})

    theirs = sdk_requests(server, steps)
    assert_same_steps(ours, theirs)
    first = ours[2].json["messages"][1]["content"]
    assert [next(iter(block)) for block in first] == [
        "reasoningContent", "reasoningContent", "toolUse", "toolResult", "toolUse", "toolUse",
    ]  # fmt: skip
    assert first[1] == {"reasoningContent": {"redactedContent": _signature(11)}}
    reasoning = ours[2].json["messages"][3]["content"][0]["reasoningContent"]["reasoningText"]
    assert reasoning == {"text": "Step 2: which tools?", "signature": "sig-2"}
