"""`rs.run(..., telemetry=rs.RunTelemetry(...))`: the run's spans as the run itself records them.

The run's `invoke_agent` span is the parent of each step's `chat` span and each call's
`execute_tool` span; a tool's timeout and a dispose mid-run end their spans as errors.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import rxstream as rs
from rxstream.testing import FakeLLMServer, RunScript, ScriptCall


def get_weather(city: str) -> dict[str, Any]:
    """The weather in a city."""
    return {"city": city, "temp_c": 18}


def get_time(zone: str) -> str:
    """The time in a zone."""
    return f"14:05 {zone}"


def to_fahrenheit(celsius: float) -> float:
    """Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


SCRIPT = RunScript(
    [ScriptCall("get_weather", {"city": "Paris"}), ScriptCall("get_time", {"zone": "CET"})],
    lambda seen: [ScriptCall("to_fahrenheit", {"celsius": seen["get_weather"]["temp_c"]})],
    lambda seen: f"{seen['to_fahrenheit']} F",
)
ASK = [{"role": "user", "content": "Weather in Paris, in F?"}]


@pytest.fixture
def exporter() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield spans, provider
    provider.shutdown()


def base(server: FakeLLMServer) -> str:
    return f"http://127.0.0.1:{server.port}/v1"


def test_the_run_span_is_the_parent_of_its_chat_and_tool_spans(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    spans, provider = exporter
    telemetry = rs.RunTelemetry(agent_name="bot", tracer_provider=provider)
    with FakeLLMServer(SCRIPT) as server, httpx.Client() as client:
        run = rs.run(
            client, "openai-chat", model="m", messages=ASK,
            tools=[get_weather, get_time, to_fahrenheit],
            base_url=base(server), api_key="k", telemetry=telemetry,
        )  # fmt: skip
        items = list(rs.to_iterator(run))
    assert isinstance(items[-1], rs.RunEnd)
    done = spans.get_finished_spans()
    [agent] = [s for s in done if s.name == "invoke_agent bot"]
    assert (agent.attributes or {})["rxstream.run.steps"] == 3
    chats = [s for s in done if s.name == "chat m"]
    tools = [s for s in done if s.name.startswith("execute_tool")]
    assert len(chats) == 3
    assert sorted(str((t.attributes or {})["gen_ai.tool.call.id"]) for t in tools) == [
        "call_1_0",
        "call_1_1",
        "call_2_0",
    ]
    for child in [*chats, *tools]:
        assert child.parent is not None
        assert child.parent.span_id == agent.context.span_id


def slow(seconds: float) -> str:
    """Takes its time."""
    time.sleep(seconds)
    return "late"


def test_a_tool_that_times_out_is_an_error_span(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    spans, provider = exporter
    script = RunScript([ScriptCall("slow", {"seconds": 0.3})], "ok")
    with FakeLLMServer(script) as server, httpx.Client() as client:
        run = rs.run(
            client, "openai-chat", model="m", messages=ASK,
            tools=[rs.tool(slow, timeout=0.05)], base_url=base(server), api_key="k",
            telemetry=rs.RunTelemetry(tracer_provider=provider, chat_spans=False),
        )  # fmt: skip
        list(rs.to_iterator(run))
    [tool] = [s for s in spans.get_finished_spans() if s.name == "execute_tool slow"]
    assert (tool.attributes or {})["error.type"] == "builtins.TimeoutError"


def test_a_run_disposed_mid_tool_ends_its_spans_as_cancelled(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    spans, provider = exporter
    started = threading.Event()

    def sleepy(seconds: float) -> str:
        """Takes its time."""
        started.set()
        time.sleep(seconds)
        return "x"

    script = RunScript([ScriptCall("sleepy", {"seconds": 0.3})], "ok")
    with FakeLLMServer(script) as server, httpx.Client() as client:
        run = rs.run(
            client, "openai-chat", model="m", messages=ASK, tools=[sleepy],
            base_url=base(server), api_key="k",
            telemetry=rs.RunTelemetry(tracer_provider=provider, chat_spans=False),
        )  # fmt: skip
        subscription = run.subscribe(lambda _: None, lambda _: None)
        assert started.wait(5)
        subscription.dispose()
    ended = {s.name: (s.attributes or {}).get("error.type") for s in spans.get_finished_spans()}
    assert ended == {"execute_tool sleepy": "cancelled", "invoke_agent": "cancelled"}
