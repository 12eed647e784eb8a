"""A tool loop that is the same code for every provider: only the dialect and the model change.

`tool_loop` below (the loop itself is 14 lines) asks, runs the tools the model
calls, sends their results back with the model's own turn (reasoning state,
signatures and tool calls kept, in their order), and asks again until the model
answers. The key and the base URL come from each provider's usual environment
variables (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`,
`CO_API_KEY`, `OLLAMA_HOST`, the AWS credentials, ...).

    python examples/tool_loop.py anthropic claude-sonnet-4-5
    python examples/tool_loop.py gemini gemini-2.5-flash
    python examples/tool_loop.py --fake bedrock any-model   # a local FakeLLMServer, no key
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import httpx

import rxstream as rs

WEATHER = rs.Tool(
    "get_weather",
    "The current weather in a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def get_weather(city: str) -> str:
    return json.dumps({"city": city, "temperature_c": 18, "sky": "sunny"})


def tool_loop(client: httpx.Client, dialect: str, model: str, question: str) -> str:
    messages: list[Any] = [{"role": "user", "content": question}]
    for _ in range(5):  # in case a model keeps calling tools
        reply = rs.chat(client, dialect, model=model, messages=messages, tools=[WEATHER])
        message: rs.Message = reply.pipe(rs.accumulate_message()).run()
        messages.append(message)  # the model's turn, as it came
        if message.finish_reason != "tool_calls":
            return message.content
        for call in message.tool_calls:
            result = get_weather(**call.parse_arguments())
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": result}
            )
    raise RuntimeError("the model still calls tools after 5 turns")


def fake_server() -> Any:
    """A local FakeLLMServer that calls get_weather, then answers; the environment points there."""
    from rxstream.testing.server import FakeLLMServer, Scenario

    call = rs.ToolCallDelta(0, '{"city": "Paris"}', id="call_1", name="get_weather")
    server = FakeLLMServer(
        Scenario.answer(rs.ReasoningDelta("I need the weather."), call, rs.Finish("tool_calls")),
        Scenario.answer(rs.TextDelta("It is sunny in Paris, 18 °C."), rs.Finish("stop")),
    ).start()
    root = f"http://127.0.0.1:{server.port}"
    os.environ.update(
        OPENAI_BASE_URL=f"{root}/v1",
        OPENAI_API_KEY="sk-fake",
        ANTHROPIC_BASE_URL=root,
        ANTHROPIC_API_KEY="sk-ant-fake",
        GOOGLE_GEMINI_BASE_URL=root,
        GEMINI_API_KEY="fake",
        CO_API_URL=root,
        CO_API_KEY="fake",
        OLLAMA_HOST=root,
        AWS_ENDPOINT_URL_BEDROCK_RUNTIME=root,
        AWS_BEARER_TOKEN_BEDROCK="fake",
    )
    os.environ.pop("GOOGLE_API_KEY", None)
    return server


def main(argv: list[str]) -> None:
    fake = argv[:1] == ["--fake"]
    dialect, model = argv[1:3] if fake else argv[:2]
    server = fake_server() if fake else None
    try:
        with httpx.Client(timeout=60.0) as client:
            print(tool_loop(client, dialect, model, "What is the weather in Paris?"))
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
