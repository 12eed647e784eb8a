"""`RunScript`: the fake server plays a whole tool-using run, its calls depending on the results.

A hand-written loop over `rs.chat` runs the same three-step script against every provider on a
real socket: two tools in parallel, then a tool whose argument comes from a step-1 result, then
a text quoting the results. The server records each request; `tool_results` reads what the
client sent back at each step, the same in every dialect's own form.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.core.dialects import DIALECTS
from rxstream.testing import (
    FakeLLMServer,
    RunScript,
    ScriptCall,
    SeenResult,
    SeenResults,
    tool_results,
)
from rxstream.testing.server import RecordedRequest

OBJECT = {"type": "object", "properties": {}}
TOOLS = [
    rs.Tool("get_weather", "The weather in a city.", OBJECT),
    rs.Tool("get_time", "The time in a zone.", OBJECT),
    rs.Tool("to_fahrenheit", "Celsius to Fahrenheit.", OBJECT),
]


def weather(city: str) -> dict[str, Any]:
    return {"city": city, "temp_c": 18}


def time(zone: str) -> str:
    return f"14:05 {zone}"


def to_fahrenheit(celsius: float) -> float:
    return celsius * 9 / 5 + 32


RUN: dict[str, Callable[..., Any]] = {
    "get_weather": weather,
    "get_time": time,
    "to_fahrenheit": to_fahrenheit,
}


def script() -> RunScript:
    return RunScript(
        [ScriptCall("get_weather", {"city": "Paris"}), ScriptCall("get_time", {"zone": "CET"})],
        lambda seen: [ScriptCall("to_fahrenheit", {"celsius": seen["get_weather"]["temp_c"]})],
        lambda seen: (
            f"{seen['get_weather']['city']}: {seen['to_fahrenheit']} F at {seen['get_time']}"
        ),
    )


def base_url(server: FakeLLMServer, dialect: str) -> str:
    root = f"http://127.0.0.1:{server.port}"
    return f"{root}/v1" if dialect.startswith("openai") else root


def ask(server: FakeLLMServer, dialect: str, messages: list[Any]) -> rs.Message:
    with httpx.Client(timeout=30) as client:
        deltas = rs.chat(
            client,
            dialect,
            model="fake-model",
            messages=messages,
            tools=TOOLS,
            base_url=base_url(server, dialect),
            api_key="fake-key",
            max_tokens=100,
        )
        message: rs.Message = deltas.pipe(rs.accumulate_message()).run()
    return message


def result_of(call: rs.ToolCall) -> dict[str, Any]:
    output = RUN[call.name or ""](**call.parse_arguments())
    return {
        "role": "tool",
        "tool_call_id": call.id,
        "name": call.name,
        "content": json.dumps(output),
    }


def run_loop(server: FakeLLMServer, dialect: str) -> tuple[list[rs.Message], list[Any]]:
    """The hand-written tool loop: each step's calls answered, until the model stops."""
    messages: list[Any] = [{"role": "user", "content": "Weather and time in Paris?"}]
    answers: list[rs.Message] = []
    for _step in range(5):
        message = ask(server, dialect, messages)
        answers.append(message)
        messages.append(message)
        if message.finish_reason != "tool_calls":
            break
        messages += [result_of(call) for call in message.tool_calls]
    return answers, messages


def seen(request: RecordedRequest) -> list[tuple[str | None, Any]]:
    return [(result.name, result.output) for result in tool_results(request)]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(script()) as fake:
        yield fake


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_same_three_step_run_plays_in_every_dialect(
    server: FakeLLMServer, dialect: str
) -> None:
    answers, _messages = run_loop(server, dialect)

    first, second, final = answers
    assert [(c.name, c.parse_arguments()) for c in first.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"zone": "CET"}),
    ]
    # Step 2's argument was taken from the result of step 1 the client sent back.
    assert [(c.name, c.parse_arguments()) for c in second.tool_calls] == [
        ("to_fahrenheit", {"celsius": 18})
    ]
    assert final.content == "Paris: 64.4 F at 14:05 CET"
    assert final.finish_reason == "stop"
    assert final.usage is not None

    # What the client sent back at each step, read from the recorded requests.
    requests = server.requests
    assert len(requests) == 3
    assert seen(requests[0]) == []
    step_one = [("get_weather", {"city": "Paris", "temp_c": 18}), ("get_time", "14:05 CET")]
    assert seen(requests[1]) == step_one
    assert seen(requests[2]) == [*step_one, ("to_fahrenheit", 64.4)]
    ids = [result.call_id for result in tool_results(requests[2])]
    assert ids == ([None] * 3 if dialect == "ollama" else ["call_1_0", "call_1_1", "call_2_0"])
    assert server.faults == ()  # nothing scripted but the run
    assert script_of(server).steps_asked == [1, 2, 3]


def script_of(server: FakeLLMServer) -> RunScript:
    reply = server._scenarios[0]
    assert isinstance(reply, RunScript)
    return reply


@pytest.fixture
def unchecked() -> Iterator[FakeLLMServer]:
    # The provider's own checks (on by default) refuse some of these first, in its words.
    with FakeLLMServer(script(), check_requests=False) as fake:
        yield fake


@pytest.mark.parametrize("dialect", ["openai-chat", "ollama", "bedrock"])
def test_a_step_answered_in_part_is_refused_saying_what_arrived(
    unchecked: FakeLLMServer, dialect: str
) -> None:
    server = unchecked
    messages: list[Any] = [{"role": "user", "content": "Weather and time in Paris?"}]
    first = ask(server, dialect, messages)
    messages += [first, result_of(first.tool_calls[0])]  # get_time's result left out
    with pytest.raises(rs.HTTPStatusError) as caught:
        ask(server, dialect, messages)
    assert caught.value.status_code == 400
    assert "step 1 made 2 call(s)" in str(caught.value)
    assert "the request answers 1" in str(caught.value)
    assert script_of(server).steps_asked == [1]


def test_results_of_calls_never_made_are_refused(unchecked: FakeLLMServer) -> None:
    server = unchecked
    messages: list[Any] = [{"role": "user", "content": "Weather?"}]
    first = ask(server, "anthropic", messages)
    wrong = [
        {**result_of(call), "tool_call_id": f"other_{i}"} for i, call in enumerate(first.tool_calls)
    ]
    with pytest.raises(rs.HTTPStatusError, match="answers none of them"):
        ask(server, "anthropic", [*messages, first, *wrong])


def test_a_request_after_the_final_answer_is_refused(unchecked: FakeLLMServer) -> None:
    server = unchecked
    _answers, messages = run_loop(server, "openai-chat")
    extra = {"role": "tool", "tool_call_id": "call_9_0", "name": "get_time", "content": "1"}
    assistant = {
        "role": "assistant",
        "tool_calls": [
            {
                "id": "call_9_0",
                "type": "function",
                "function": {"name": "get_time", "arguments": "{}"},
            }
        ],
    }
    with pytest.raises(rs.HTTPStatusError, match="step 3 is the final answer"):
        ask(server, "openai-chat", [*messages, assistant, extra])


def test_a_script_that_runs_out_of_steps_says_so() -> None:
    calls_only = RunScript([ScriptCall("get_time")])
    with FakeLLMServer(calls_only, check_requests=False) as server:
        first = ask(server, "cohere", [{"role": "user", "content": "Time?"}])
        messages: list[Any] = [{"role": "user", "content": "Time?"}, first, result_of_time(first)]
        with pytest.raises(rs.HTTPStatusError, match="steps are over"):
            ask(server, "cohere", messages)


def result_of_time(message: rs.Message) -> dict[str, Any]:
    [call] = message.tool_calls
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": "noon"}


def test_the_ai_sdk_ui_messages_results_are_read() -> None:
    body = {
        "id": "chat-1",
        "trigger": "submit-message",
        "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]},
            {
                "id": "a1",
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {
                        "type": "tool-get_time",
                        "toolCallId": "call_1_0",
                        "state": "output-available",
                        "input": {},
                        "output": "noon",
                    },
                    {
                        "type": "dynamic-tool",
                        "toolName": "delete_file",
                        "toolCallId": "call_1_1",
                        "state": "output-denied",
                        "input": {},
                    },
                    {"type": "tool-get_weather", "toolCallId": "c3", "state": "input-available"},
                ],
            },
        ],
    }
    request = RecordedRequest("POST", "/api/chat", {}, b"", body)
    assert tool_results(request) == (
        SeenResult("call_1_0", "get_time", "noon"),
        SeenResult("call_1_1", "delete_file", None, error=True),
    )


def test_error_results_are_marked_in_anthropic_and_bedrock() -> None:
    anthropic = {
        "messages": [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": [{"type": "text", "text": "boom"}],
                    }
                ],
            },
        ]
    }
    bedrock = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "status": "error",
                            "content": [{"text": "boom"}],
                        }
                    }
                ],
            }
        ]
    }
    assert tool_results(RecordedRequest("POST", "/v1/messages", {}, b"", anthropic)) == (
        SeenResult("t1", "f", "boom", error=True),
    )
    assert tool_results(RecordedRequest("POST", "/model/m/converse-stream", {}, b"", bedrock)) == (
        SeenResult("t1", None, "boom", error=True),
    )


def test_seen_results_by_name_and_by_position() -> None:
    results = SeenResults(
        [SeenResult("a", "f", 1), SeenResult("b", "f", 2), SeenResult(None, "g", 3)]
    )
    assert results["f"] == 2  # the latest of that tool
    assert results[0] == SeenResult("a", "f", 1)
    assert [r.output for r in results] == [1, 2, 3]
    with pytest.raises(KeyError, match=r"no result of the tool 'h'.*\['f', 'g'\]"):
        results["h"]


@pytest.mark.parametrize(
    ("steps", "error"),
    [
        ((), "at least one step"),
        (([],), "each step is"),
        ((42,), "each step is"),
    ],
)
def test_a_bad_script_is_a_caller_mistake(steps: tuple[Any, ...], error: str) -> None:
    kind = ValueError if not steps else TypeError
    with pytest.raises(kind, match=error):
        RunScript(*steps)


def test_an_unknown_dialect_has_no_results_to_read() -> None:
    with pytest.raises(ValueError, match="no tool results to read in the dialect 'x'"):
        tool_results(RecordedRequest("POST", "/v1/messages", {}, b"", {}), dialect="x")


def test_a_step_function_that_gives_neither_calls_nor_text_is_a_caller_mistake() -> None:
    def wrong(seen: SeenResults) -> Any:
        return 42

    broken = RunScript(wrong)
    request = RecordedRequest("POST", "/v1/chat/completions", {}, b"", {"messages": []})
    with pytest.raises(TypeError, match="step 1 gave 42: a sequence of ScriptCall or a str"):
        broken(request)


def test_seen_results_show_what_they_hold() -> None:
    results = SeenResults([SeenResult("a", "f", 1)])
    assert len(results) == 1
    assert (
        repr(results) == "SeenResults([SeenResult(call_id='a', name='f', output=1, error=False)])"
    )
    # A part in an output state that is no tool part is not a result.
    body = {
        "messages": [
            {"role": "assistant", "parts": [{"type": "data-x", "state": "output-available"}]}
        ]
    }
    assert tool_results(RecordedRequest("POST", "/api/chat", {}, b"", {"id": "c", **body})) == ()
