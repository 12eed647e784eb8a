"""examples/tool_loop.py: one tool loop, the same code for all seven providers, run locally."""

from __future__ import annotations

import json

import httpx
import pytest

import rxstream as rs
from examples.tool_loop import tool_loop
from rxstream.io.requests import ENDPOINTS
from rxstream.testing.server import FakeLLMServer, Scenario
from tests.support.example_scripts import run

CALL = rs.ToolCallDelta(0, '{"city": "Paris"}', id="call_1", name="get_weather")
ANSWER = "It is sunny in Paris."


@pytest.mark.parametrize("dialect", tuple(ENDPOINTS))
def test_the_same_loop_runs_on_every_provider(
    dialect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeLLMServer(
        Scenario.answer(rs.ReasoningDelta("I need the weather."), CALL, rs.Finish("tool_calls")),
        Scenario.answer(rs.TextDelta(ANSWER), rs.Finish("stop")),
    ) as server:
        root = f"http://127.0.0.1:{server.port}"
        for name in ("GOOGLE_API_KEY", "AWS_ENDPOINT_URL"):
            monkeypatch.delenv(name, raising=False)
        for name, value in {
            "OPENAI_BASE_URL": f"{root}/v1",
            "OPENAI_API_KEY": "sk-loop",
            "ANTHROPIC_BASE_URL": root,
            "ANTHROPIC_API_KEY": "sk-ant-loop",
            "GOOGLE_GEMINI_BASE_URL": root,
            "GEMINI_API_KEY": "loop",
            "CO_API_URL": root,
            "CO_API_KEY": "loop",
            "OLLAMA_HOST": root,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": root,
            "AWS_BEARER_TOKEN_BEDROCK": "loop",
        }.items():
            monkeypatch.setenv(name, value)
        with httpx.Client() as client:
            assert tool_loop(client, dialect, "m", "Weather in Paris?") == ANSWER
        first, second = server.requests
    # The second request carries the model's call and the tool's result.
    sent = json.dumps(second.json)
    assert "get_weather" in sent
    assert "sunny" in sent
    assert len(json.dumps(first.json)) < len(sent)


def test_the_example_runs_as_a_script() -> None:
    result = run("tool_loop.py", "--fake", "anthropic", "any-model")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "It is sunny in Paris, 18 °C."
