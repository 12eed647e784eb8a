"""`rs.RunTelemetry`: a run's `invoke_agent` span around its steps' `chat` spans and its tools'
`execute_tool` spans, recorded by the OpenTelemetry SDK's in-memory exporter.

The run is a hand-written tool loop over `rs.chat` against a `FakeLLMServer` playing a
`RunScript` (two tools in parallel, then a dependent tool, then the answer), calling the hooks
where `rs.run` calls them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from reactivex import Observer
from reactivex.subject import Subject

import rxstream as rs
from rxstream.runs.telemetry import RunSpan
from rxstream.testing import FakeLLMServer, RunScript, ScriptCall

OBJECT = {"type": "object", "properties": {}}
TOOLS = [
    rs.Tool("get_weather", "", OBJECT),
    rs.Tool("get_time", "", OBJECT),
    rs.Tool("to_f", "", OBJECT),
]
RUN: dict[str, Callable[..., Any]] = {
    "get_weather": lambda city: {"city": city, "temp_c": 18},
    "get_time": lambda zone: f"14:05 {zone}",
    "to_f": lambda c: c * 9 / 5 + 32,
}
SCRIPT = RunScript(
    [ScriptCall("get_weather", {"city": "Paris"}), ScriptCall("get_time", {"zone": "CET"})],
    lambda seen: [ScriptCall("to_f", {"c": seen["get_weather"]["temp_c"]})],
    lambda seen: f"{seen['to_f']} F",
)


@pytest.fixture
def exporter() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield spans, provider
    provider.shutdown()


def run_tool(run: RunSpan, call: rs.ToolCall) -> dict[str, Any]:
    tool = run.tool(call, description=f"the {call.name} tool")
    with tool.current():
        output = RUN[call.name or ""](**call.parse_arguments())
    tool.end(rs.ToolResult(call.id or "", call.name or "", output))
    return {
        "role": "tool",
        "tool_call_id": call.id,
        "name": call.name,
        "content": json.dumps(output),
    }


def loop(server: FakeLLMServer, dialect: str, provider: TracerProvider) -> rs.Message:
    """The run, with the hooks where `rs.run` calls them."""
    telemetry = rs.RunTelemetry(
        agent_name="weather-bot", conversation_id="chat-1", tracer_provider=provider
    )
    run = telemetry.start(dialect=dialect, model="fake-model")
    messages: list[Any] = [{"role": "user", "content": "Weather in Paris, in F?"}]
    total = rs.Usage(0, 0, 0)
    steps = 0
    with httpx.Client() as client, ThreadPoolExecutor(2) as pool:
        root = f"http://127.0.0.1:{server.port}"
        while True:
            steps += 1
            chat = rs.chat(
                client,
                dialect,
                model="fake-model",
                messages=messages,
                tools=TOOLS,
                base_url=root + ("/v1" if dialect.startswith("openai") else ""),
                api_key="k",
                max_tokens=100,
            )
            with run.current():  # the step's chat span is the run's child
                watched = chat.pipe(
                    rs.telemetry(
                        provider=dialect, request_model="fake-model", tracer_provider=provider
                    )
                )
                message = watched.pipe(rs.accumulate_message()).run()
            usage = message.usage or rs.Usage(0, 0, 0)
            total = rs.Usage(
                total.prompt_tokens + usage.prompt_tokens,
                total.completion_tokens + usage.completion_tokens,
                total.total_tokens + usage.total_tokens,
            )
            messages.append(message)
            if message.finish_reason != "tool_calls":
                break
            # The step's calls run in parallel, each in its own span.
            messages += list(pool.map(lambda call: run_tool(run, call), message.tool_calls))
    run.end(rs.RunEnd(tuple(messages), total, steps))
    return message


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    out: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        out.setdefault(span.name, []).append(span)
    return out


@pytest.mark.parametrize("dialect", ["openai-chat", "anthropic"])
def test_a_run_is_one_invoke_agent_span_over_its_chat_and_tool_spans(
    exporter: tuple[InMemorySpanExporter, TracerProvider], dialect: str
) -> None:
    spans, provider = exporter
    with FakeLLMServer(SCRIPT) as server:
        answer = loop(server, dialect, provider)
    assert answer.content == "64.4 F"

    found = by_name(spans.get_finished_spans())
    [agent] = found["invoke_agent weather-bot"]
    assert agent.kind is SpanKind.INTERNAL
    assert agent.parent is None
    assert agent.attributes is not None
    attributes = dict(agent.attributes)
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "weather-bot"
    assert attributes["gen_ai.conversation.id"] == "chat-1"
    assert attributes["gen_ai.provider.name"] == rs.operators.telemetry.PROVIDER_NAMES[dialect]
    assert attributes["gen_ai.request.model"] == "fake-model"
    assert attributes["rxstream.run.steps"] == 3
    assert isinstance(attributes["gen_ai.usage.input_tokens"], int)
    assert attributes["gen_ai.usage.input_tokens"] > 0
    assert "error.type" not in attributes
    assert agent.status.status_code is StatusCode.UNSET

    chats = found["chat fake-model"]
    assert len(chats) == 3
    tools = [s for s in spans.get_finished_spans() if s.name.startswith("execute_tool")]
    assert sorted(s.name for s in tools) == [
        "execute_tool get_time",
        "execute_tool get_weather",
        "execute_tool to_f",
    ]
    run_id = agent.context.span_id
    assert all(s.parent is not None and s.parent.span_id == run_id for s in [*chats, *tools])
    [weather] = found["execute_tool get_weather"]
    assert dict(weather.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "call_1_0",
        "gen_ai.tool.description": "the get_weather tool",
    }
    [converting] = found["execute_tool to_f"]
    assert converting.start_time is not None
    assert weather.end_time is not None
    assert converting.start_time > weather.end_time  # step 2 came after step 1's tools


CALL = rs.ToolCall(0, "call_9", "delete_file", '{"path": "/tmp/x"}')


def telemetry_of(provider: TracerProvider, **options: Any) -> rs.RunTelemetry:
    return rs.RunTelemetry(tracer_provider=provider, **options)


@pytest.mark.parametrize(
    ("end", "error_type"),
    [
        pytest.param(
            {"error": PermissionError("read-only")}, "builtins.PermissionError", id="raised"
        ),
        pytest.param({"error": "timeout"}, "timeout", id="timed-out"),
        pytest.param(
            {"result": rs.ToolResult("call_9", "delete_file", error="no such file")},
            "tool_error",
            id="error-result",
        ),
        pytest.param(
            {"result": rs.ToolResult("call_9", "delete_file", error="denied", denied=True)},
            "denied",
            id="denied",
        ),
        pytest.param({"cancelled": True}, "cancelled", id="cancelled"),
    ],
)
def test_a_tool_that_fails_is_an_error_span(
    exporter: tuple[InMemorySpanExporter, TracerProvider], end: dict[str, Any], error_type: str
) -> None:
    spans, provider = exporter
    run = telemetry_of(provider).start()
    tool = run.tool(CALL)
    result = end.pop("result", None)
    tool.end(result, **end)
    tool.end(rs.ToolResult("call_9", "delete_file", "late"))  # only the first end counts
    run.end(rs.RunEnd((), None, 1))
    [span] = [s for s in spans.get_finished_spans() if s.name == "execute_tool delete_file"]
    assert (span.attributes or {})["error.type"] == error_type
    assert span.status.status_code is StatusCode.ERROR
    if error_type == "builtins.PermissionError":
        assert [event.name for event in span.events] == ["exception"]


def test_content_is_recorded_only_when_asked(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    spans, provider = exporter
    for capture in (False, True):
        run = telemetry_of(provider, capture_content=capture).start()
        run.tool(CALL).end(rs.ToolResult("call_9", "delete_file", {"deleted": 1}))
        run.end()
    plain, captured = [s for s in spans.get_finished_spans() if s.name.startswith("execute_tool")]
    assert "gen_ai.tool.call.arguments" not in (plain.attributes or {})
    assert (captured.attributes or {})["gen_ai.tool.call.arguments"] == '{"path": "/tmp/x"}'
    assert (captured.attributes or {})["gen_ai.tool.call.result"] == '{"deleted": 1}'


@pytest.mark.parametrize(
    ("end", "error_type"),
    [
        pytest.param(
            {"error": rs.ProviderError("Overloaded")}, "rxstream.errors.ProviderError", id="error"
        ),
        pytest.param({"cancelled": True}, "cancelled", id="disposed"),
    ],
)
def test_a_run_that_fails_or_is_disposed_is_an_error_span(
    exporter: tuple[InMemorySpanExporter, TracerProvider], end: dict[str, Any], error_type: str
) -> None:
    spans, provider = exporter
    run = telemetry_of(provider).start(dialect="gemini", model="gemini-2.5-flash")
    run.end(**end)
    run.end(rs.RunEnd((), rs.Usage(1, 1, 2), 1))  # too late: the span has ended
    [span] = spans.get_finished_spans()
    assert span.name == "invoke_agent"
    attributes = dict(span.attributes or {})
    assert attributes["error.type"] == error_type
    assert attributes["gen_ai.provider.name"] == "gcp.gemini"
    assert "gen_ai.usage.input_tokens" not in attributes
    assert span.status.status_code is StatusCode.ERROR


def test_a_waiting_run_says_how_many_calls_wait(
    exporter: tuple[InMemorySpanExporter, TracerProvider], monkeypatch: pytest.MonkeyPatch
) -> None:
    spans, provider = exporter
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    run = telemetry_of(provider).start(dialect="openai-chat")
    pending = (rs.ApprovalRequest("call_9", "delete_file", {}),)
    usage = rs.Usage(5, 2, 7, reasoning_tokens=1, cached_tokens=3)
    run.end(rs.RunEnd((), usage, 2, pending))
    [span] = spans.get_finished_spans()
    attributes = dict(span.attributes or {})
    assert attributes["rxstream.run.pending"] == 1
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 3
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 1
    assert "gen_ai.system" not in attributes  # the latest names only, as asked


def test_without_an_sdk_nothing_is_recorded() -> None:
    run = rs.RunTelemetry().start(dialect="openai-chat")  # the API's no-op provider
    assert not run.span.is_recording()
    with run.current():
        tool = run.tool(CALL)
        with tool.current():
            pass
        tool.end(rs.ToolResult("call_9", "delete_file", 1))
    run.end(rs.RunEnd((), None, 1))


# --------------------------------------------------------------------------- the hooks rs.run uses


def test_watch_tool_spans_a_call_from_subscription_to_its_value(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    spans, provider = exporter
    run = telemetry_of(provider, capture_content=True).start()
    subject: Subject[Any] = Subject()
    got: list[Any] = []
    run.watch_tool(CALL, subject).subscribe(got.append)
    assert spans.get_finished_spans() == ()  # open while the call runs
    subject.on_next({"deleted": 1})
    subject.on_completed()
    [span] = spans.get_finished_spans()
    assert got == [{"deleted": 1}]
    assert span.name == "execute_tool delete_file"
    assert (span.attributes or {})["gen_ai.tool.call.result"] == '{"deleted": 1}'
    assert span.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize(
    ("finish", "error_type"),
    [
        pytest.param(
            lambda s, d: s.on_error(TimeoutError("late")), "builtins.TimeoutError", id="error"
        ),
        pytest.param(lambda s, d: d.dispose(), "cancelled", id="disposed"),
    ],
)
def test_watch_tool_ends_a_failed_or_disposed_call_as_an_error(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
    finish: Callable[[Subject[Any], Any], None],
    error_type: str,
) -> None:
    spans, provider = exporter
    run = telemetry_of(provider).start()
    subject: Subject[Any] = Subject()
    errors: list[Exception] = []
    subscription = run.watch_tool(CALL, subject).subscribe(on_error=errors.append)
    finish(subject, subscription)
    subscription.dispose()  # after the end, changes nothing
    [span] = spans.get_finished_spans()
    assert (span.attributes or {})["error.type"] == error_type
    assert len(errors) == (1 if error_type != "cancelled" else 0)


def test_watch_ends_the_run_span_at_the_run_end_or_its_error(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    spans, provider = exporter
    telemetry = telemetry_of(provider)
    items: list[Any] = []
    ended = telemetry.start(dialect="cohere")
    observer = ended.watch(Observer(items.append, items.append, lambda: items.append("done")))
    end = rs.RunEnd((), rs.Usage(3, 2, 5), 1)
    observer.on_next(rs.StepStart(1, "cohere", "m"))
    observer.on_next(end)
    observer.on_completed()
    failed = telemetry.start(dialect="cohere").watch(Observer(items.append, items.append))
    failed.on_error(rs.ProviderError("Overloaded"))
    first, second = spans.get_finished_spans()
    assert (first.attributes or {})["gen_ai.usage.output_tokens"] == 2
    assert "error.type" not in (first.attributes or {})
    assert (second.attributes or {})["error.type"] == "rxstream.errors.ProviderError"
    assert items[:3] == [rs.StepStart(1, "cohere", "m"), end, "done"]


def test_step_options_give_each_step_its_chat_span(
    exporter: tuple[InMemorySpanExporter, TracerProvider],
) -> None:
    _spans, provider = exporter
    telemetry = telemetry_of(provider)
    assert telemetry.step_options() == {
        "tracer_provider": provider,
        "meter_provider": None,
        "capture_content": False,
    }
    assert telemetry_of(provider, chat_spans=False).step_options() is False
