"""`rs.telemetry()` with the real OpenTelemetry SDK: one client span and the GenAI metrics.

Every dialect's recorded stream (tests/data), decoded with `rs.decode(d)`, then errors,
truncation, a stop, a dispose, a timeout, and content capture (off unless asked).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import reactivex
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider, SpanKind, StatusCode
from reactivex import Observable
from reactivex import operators as ops
from reactivex.subject import Subject
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.operators import telemetry as telemetry_module
from rxstream.testing import FakeLLMServer, Scenario
from rxstream.testing.checks import minimal_body

DATA = Path(__file__).parent.parent / "data"


@dataclass
class Otel:
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider
    meter_provider: MeterProvider

    def span(self) -> ReadableSpan:
        finished = self.spans.get_finished_spans()
        assert len(finished) == 1, finished
        return finished[0]

    def points(self, name: str) -> list[HistogramDataPoint]:
        data = self.reader.get_metrics_data()
        found: list[HistogramDataPoint] = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found += [
                            p for p in metric.data.data_points if isinstance(p, HistogramDataPoint)
                        ]
        return found

    def kwargs(self) -> dict[str, Any]:
        return {"tracer_provider": self.tracer_provider, "meter_provider": self.meter_provider}


@pytest.fixture
def otel() -> Iterator[Otel]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    yield Otel(spans, reader, tracer_provider, meter_provider)
    tracer_provider.shutdown()
    meter_provider.shutdown()


@dataclass(frozen=True)
class Recorded:
    dialect: str
    path: str
    provider: str
    model: str | None  # what the stream says (None: the decoder emits no model)
    id: str | None


RECORDED = [
    Recorded(
        "openai-chat",
        "openai/chat-text-usage.sse",
        "openai",
        "gpt-4o-2024-08-06",
        "chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL",
    ),
    Recorded(
        "openai-responses",
        "openai-responses/text.sse",
        "openai",
        "gpt-4o-2024-08-06",
        "resp_67e554a21aa88191b65876ac5e5bbe0406c52f0e511c76ed",
    ),
    Recorded(
        "anthropic",
        "anthropic/text-minimal-padded.sse",
        "anthropic",
        "claude-sonnet-4-5-20250929",
        "msg_018E1hg8GoVTGEKQY3ovMcSJ",
    ),
    Recorded(
        "gemini",
        "google/text-crlf.sse",
        "gcp.gemini",
        "gemini-2.0-flash-exp",
        "w1peaMz6INOvnvgPgYfPiQY",
    ),
    Recorded(
        "cohere", "cohere/v2-text.sse", "cohere", None, "321d178c-2c12-44d3-ae42-2f5510f6b1cc"
    ),
    Recorded("ollama", "ollama/chat-tool-call-llama3.1.ndjson", "ollama", "llama3.1", None),
    Recorded("bedrock", "bedrock/converse-stream-text.eventstream", "aws.bedrock", None, None),
]


def wire(dialect: str, body: bytes) -> Observable[Any]:
    """The recorded bytes, decoded by the dialect's pipeline (docs/concepts/architecture.md)."""
    source: Observable[bytes] = reactivex.from_iterable(
        [body[i : i + 61] for i in range(0, len(body), 61)]
    )
    if dialect == "bedrock":
        return source.pipe(rs.eventstream_frames(), rs.decode(dialect))
    if dialect == "ollama":
        return source.pipe(rs.lines(), rs.decode(dialect))
    return source.pipe(rs.lines(), rs.sse_frames(), rs.decode(dialect))


def run(observable: Observable[Any]) -> tuple[list[Any], list[Exception], bool]:
    items: list[Any] = []
    errors: list[Exception] = []
    done: list[bool] = []
    observable.subscribe(items.append, errors.append, lambda: done.append(True))
    return items, errors, bool(done)


@pytest.mark.parametrize("case", RECORDED, ids=[r.dialect for r in RECORDED])
def test_every_dialect_records_one_span_and_the_metrics(otel: Otel, case: Recorded) -> None:
    body = (DATA / case.path).read_bytes()
    plain, _, _ = run(wire(case.dialect, body))
    items, errors, done = run(
        wire(case.dialect, body).pipe(
            rs.telemetry(
                provider=case.dialect,
                request_model="the-model",
                server_address="https://llm.example.test/v1",
                **otel.kwargs(),
            )
        )
    )
    assert (items, errors, done) == (plain, [], True)  # passed through unchanged

    span = otel.span()
    attributes = dict(span.attributes or {})
    assert span.name == "chat the-model"
    assert span.kind is SpanKind.CLIENT
    assert span.status.status_code is StatusCode.UNSET
    usage = [item for item in plain if isinstance(item, rs.Usage)][-1]
    finishes = [item.reason for item in plain if isinstance(item, rs.Finish)]
    expected: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": case.provider,
        "gen_ai.request.model": "the-model",
        "server.address": "llm.example.test",
        "server.port": 443,
        "gen_ai.response.finish_reasons": tuple(finishes),
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
    }
    assert {key: attributes.get(key) for key in expected} == expected
    # The usage's details where the provider gave them (None: no attribute).
    assert attributes.get("gen_ai.usage.cache_read.input_tokens") == usage.cached_tokens
    assert attributes.get("gen_ai.usage.cache_creation.input_tokens") == usage.cache_write_tokens
    assert attributes.get("gen_ai.usage.reasoning.output_tokens") == usage.reasoning_tokens
    assert attributes.get("gen_ai.response.model") == case.model
    assert attributes.get("gen_ai.response.id") == case.id
    assert "error.type" not in attributes
    assert "gen_ai.output.messages" not in attributes  # never without capture_content

    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert duration.count == 1
    assert duration.attributes is not None
    assert duration.attributes.get("gen_ai.provider.name") == case.provider
    assert duration.attributes.get("gen_ai.response.model") == case.model
    tokens = {
        (p.attributes or {}).get("gen_ai.token.type"): p.sum
        for p in otel.points("gen_ai.client.token.usage")
    }
    assert tokens == {"input": usage.prompt_tokens, "output": usage.completion_tokens}
    outputs = [
        item
        for item in plain
        if isinstance(item, rs.TextDelta | rs.ReasoningDelta | rs.RefusalDelta | rs.ToolCallDelta)
    ]
    (first,) = otel.points("gen_ai.client.operation.time_to_first_chunk")
    assert first.count == 1
    per_chunk = otel.points("gen_ai.client.operation.time_per_output_chunk")
    assert sum(p.count for p in per_chunk) == len(outputs) - 1


def test_a_provider_error_is_an_error_span(otel: Otel) -> None:
    body = (DATA / "openai-responses/error-event-then-response-failed.sse").read_bytes()
    _, errors, _ = run(
        wire("openai-responses", body).pipe(
            rs.telemetry(provider="openai-responses", **otel.kwargs())
        )
    )
    assert len(errors) == 1
    assert isinstance(errors[0], rs.ProviderError)
    span = otel.span()
    assert span.name == "chat"
    assert span.status.status_code is StatusCode.ERROR
    attributes = dict(span.attributes or {})
    assert attributes["error.type"] == "rxstream.errors.ProviderError"
    assert attributes["gen_ai.response.model"] == "gpt-5-nano-2025-08-07"
    assert [event.name for event in span.events] == ["exception"]
    (duration,) = otel.points("gen_ai.client.operation.duration")
    assert (duration.attributes or {})["error.type"] == "rxstream.errors.ProviderError"
    assert otel.points("gen_ai.client.token.usage") == []  # no usage came


def test_a_truncated_stream_is_an_error_span(otel: Otel) -> None:
    body = (DATA / "anthropic/text-minimal-padded.sse").read_bytes()
    cut = body[: body.index(b"event: message_stop")]
    _, errors, _ = run(wire("anthropic", cut).pipe(rs.telemetry(**otel.kwargs())))
    assert len(errors) == 1
    assert isinstance(errors[0], rs.TruncatedStreamError)
    span = otel.span()
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "rxstream.errors.TruncatedStreamError"


def test_a_stop_is_a_cancelled_span(otel: Otel) -> None:
    body = (DATA / "anthropic/text-minimal-padded.sse").read_bytes()
    button = rs.StopSignal()
    items: list[Any] = []

    def on_next(item: Any) -> None:
        items.append(item)
        if isinstance(item, rs.TextDelta):
            button.stop()

    wire("anthropic", body).pipe(rs.stop_on(button), rs.telemetry(**otel.kwargs())).subscribe(
        on_next
    )
    assert items[-1] == rs.Finish("cancelled")
    span = otel.span()
    attributes = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.ERROR
    assert attributes["error.type"] == "cancelled"
    assert attributes["gen_ai.response.finish_reasons"] == ("cancelled",)


def test_a_dispose_before_the_end_is_a_cancelled_span(otel: Otel) -> None:
    source: Subject[rs.Delta] = Subject()
    items: list[Any] = []
    subscription = source.pipe(rs.telemetry(**otel.kwargs())).subscribe(items.append)
    source.on_next(rs.Metadata({"model": "m-1", "id": "r-1"}))
    source.on_next(rs.TextDelta("Hel"))
    assert otel.spans.get_finished_spans() == ()  # open while the stream runs
    subscription.dispose()
    source.on_next(rs.TextDelta("lo"))  # after the dispose: neither passed nor seen
    assert items == [rs.Metadata({"model": "m-1", "id": "r-1"}), rs.TextDelta("Hel")]
    span = otel.span()
    attributes = dict(span.attributes or {})
    assert span.status.status_code is StatusCode.ERROR
    assert attributes["error.type"] == "cancelled"
    assert (attributes["gen_ai.response.model"], attributes["gen_ai.response.id"]) == ("m-1", "r-1")
    subscription.dispose()  # a second dispose changes nothing
    assert len(otel.spans.get_finished_spans()) == 1


def test_a_dispose_after_the_end_changes_nothing(otel: Otel) -> None:
    subscription = (
        reactivex.of(rs.TextDelta("Hi"), rs.Finish("stop"))
        .pipe(rs.telemetry(**otel.kwargs()))
        .subscribe()
    )
    subscription.dispose()
    span = otel.span()
    assert span.status.status_code is StatusCode.UNSET
    assert "error.type" not in dict(span.attributes or {})


def test_a_timeout_is_an_error_span(otel: Otel) -> None:
    scheduler = TestScheduler()
    source: Subject[rs.Delta] = Subject()
    errors: list[Exception] = []
    source.pipe(
        rs.timeouts(idle=5.0, scheduler=scheduler), rs.telemetry(**otel.kwargs())
    ).subscribe(on_error=errors.append)
    source.on_next(rs.TextDelta("Hi"))
    scheduler.advance_by(6.0)
    assert len(errors) == 1
    assert isinstance(errors[0], rs.StreamTimeoutError)
    span = otel.span()
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["error.type"] == "rxstream.errors.StreamTimeoutError"


def test_content_is_captured_only_when_asked(otel: Otel) -> None:
    body = (DATA / "ollama/chat-tool-call-llama3.1.ndjson").read_bytes()
    run(wire("ollama", body).pipe(rs.telemetry(capture_content=True, **otel.kwargs())))
    attributes = dict(otel.span().attributes or {})
    (message,) = json.loads(str(attributes["gen_ai.output.messages"]))
    assert message["role"] == "assistant"
    assert message["finish_reason"] == "tool_call"
    (call,) = [part for part in message["parts"] if part["type"] == "tool_call"]
    assert call["name"] == "sum"
    assert isinstance(call["arguments"], dict)


def test_content_of_every_choice_and_of_a_final_message(otel: Otel) -> None:
    body = (DATA / "openai/chat-n3-choices.sse").read_bytes()
    messages, _, _ = run(wire("openai-chat", body).pipe(rs.accumulate_message()))
    run(
        wire("openai-chat", body).pipe(
            rs.accumulate_message(), rs.telemetry(capture_content=True, **otel.kwargs())
        )
    )
    attributes = dict(otel.span().attributes or {})
    captured = json.loads(str(attributes["gen_ai.output.messages"]))
    assert [m["parts"] for m in captured] == [
        [{"type": "text", "content": m.content}] for m in messages
    ]
    assert attributes["gen_ai.response.finish_reasons"] == ("stop", "stop", "stop")
    assert attributes["gen_ai.usage.output_tokens"] == messages[0].usage.completion_tokens


def test_semconv_opt_in_drops_the_old_system_name(
    otel: Otel, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = reactivex.of(rs.TextDelta("Hi"), rs.Finish("stop"))
    stream.pipe(rs.telemetry(provider="gemini", **otel.kwargs())).subscribe()
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http, gen_ai_latest_experimental")
    stream.pipe(rs.telemetry(provider="gemini", **otel.kwargs())).subscribe()
    default, latest = (dict(s.attributes or {}) for s in otel.spans.get_finished_spans())
    assert (default["gen_ai.system"], default["gen_ai.provider.name"]) == ("gcp.gemini",) * 2
    assert "gen_ai.system" not in latest
    assert latest["gen_ai.provider.name"] == "gcp.gemini"


def test_a_provider_name_passes_as_is(otel: Otel) -> None:
    reactivex.of(rs.Finish("stop")).pipe(
        rs.telemetry(provider="azure.ai.openai", **otel.kwargs())
    ).subscribe()
    assert dict(otel.span().attributes or {})["gen_ai.provider.name"] == "azure.ai.openai"


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("localhost", {"server.address": "localhost"}),
        ("127.0.0.1:11434", {"server.address": "127.0.0.1", "server.port": 11434}),
        ("http://localhost/api", {"server.address": "localhost", "server.port": 80}),
        (
            "https://user:sk-secret@llm.example.test:8443/v1?key=sk-secret",
            {"server.address": "llm.example.test", "server.port": 8443},
        ),
    ],
    ids=["host", "host-port", "url", "url-with-credentials"],
)
def test_server_address_keeps_only_host_and_port(
    otel: Otel, address: str, expected: dict[str, Any]
) -> None:
    reactivex.of(rs.Finish("stop")).pipe(
        rs.telemetry(server_address=address, **otel.kwargs())
    ).subscribe()
    attributes = dict(otel.span().attributes or {})
    assert {k: v for k, v in attributes.items() if k.startswith("server.")} == expected
    assert "sk-secret" not in repr(attributes)


@pytest.mark.parametrize("address", ["https://", "host:notaport"], ids=["no-host", "bad-port"])
def test_a_bad_server_address_is_a_value_error(address: str) -> None:
    with pytest.raises(ValueError, match="server_address"):
        rs.telemetry(server_address=address)


def test_without_an_sdk_the_items_pass_straight_through(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_recording(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("per-item work without an SDK")

    monkeypatch.setattr(telemetry_module, "_Recording", no_recording)
    items, errors, done = run(
        reactivex.of(rs.TextDelta("Hi"), rs.Finish("stop")).pipe(
            rs.telemetry(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())
        )
    )
    assert (items, errors, done) == ([rs.TextDelta("Hi"), rs.Finish("stop")], [], True)


def test_metrics_alone_are_recorded(otel: Otel) -> None:
    reactivex.of(rs.TextDelta("Hi"), rs.Usage(3, 4, 7), rs.Finish("stop")).pipe(
        rs.telemetry(tracer_provider=NoOpTracerProvider(), meter_provider=otel.meter_provider)
    ).subscribe()
    assert otel.spans.get_finished_spans() == ()
    assert sorted(p.sum for p in otel.points("gen_ai.client.token.usage")) == [3, 4]


def test_without_opentelemetry_it_is_an_import_error_naming_the_extra() -> None:
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "import rxstream as rs\n"
        "try:\n"
        "    rs.telemetry()\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(rs.__file__).parent.parent,
    ).stdout
    assert '".[otel]"' in out
    assert "opentelemetry-api" in out


def test_the_request_span_nests_under_the_chat_span(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("an-http-client")

    def request(observer: Any, scheduler: Any = None) -> Any:
        with tracer.start_as_current_span("POST"):  # what an instrumented client does
            observer.on_next(rs.TextDelta("Hi"))
            observer.on_completed()
        return reactivex.disposable.Disposable()

    with otel.tracer_provider.get_tracer("app").start_as_current_span("handler"):
        Observable(request).pipe(rs.telemetry(**otel.kwargs())).subscribe()
    spans = {span.name: span for span in otel.spans.get_finished_spans()}
    assert set(spans) == {"handler", "chat", "POST"}
    chat_context = spans["chat"].context
    handler_context = spans["handler"].context
    assert spans["chat"].parent is not None
    assert handler_context is not None
    assert spans["chat"].parent.span_id == handler_context.span_id
    assert spans["POST"].parent is not None
    assert chat_context is not None
    assert spans["POST"].parent.span_id == chat_context.span_id


def test_a_real_request_to_a_local_server(otel: Otel) -> None:
    said: list[str] = []

    def model_said(item: Any) -> None:
        if isinstance(item, rs.Metadata) and "model" in item.data:
            said.append(item.data["model"])

    with FakeLLMServer(Scenario.text("Hel", "lo")) as server:
        url, port = server.url_for("anthropic"), server.port
        with httpx.Client() as client:
            messages, errors, _ = run(
                rs.from_request(
                    client, "POST", url, json=minimal_body("anthropic", model="asked")
                ).pipe(
                    rs.sse_frames(),
                    rs.decode("anthropic"),
                    ops.do_action(model_said),
                    rs.telemetry(
                        provider="anthropic",
                        request_model="asked",
                        server_address=server.base_url,
                        **otel.kwargs(),
                    ),
                    rs.accumulate_message(),
                )
            )
    assert errors == []
    assert messages[0].content == "Hello"
    attributes = dict(otel.span().attributes or {})
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == port
    assert attributes["gen_ai.request.model"] == "asked"
    assert said
    assert said[0] != "asked"
    assert attributes["gen_ai.response.model"] == said[0]  # what the stream said wins


def test_a_reset_leaves_the_new_answers_finish_and_content(otel: Otel) -> None:
    items = [
        rs.TextDelta("Hel", choice=1),
        rs.Finish("length", choice=1),
        rs.Reset(2, "cut"),
        rs.TextDelta("Hello"),
        rs.Finish("stop"),
    ]
    run(reactivex.from_iterable(items).pipe(rs.telemetry(capture_content=True, **otel.kwargs())))
    attributes = dict(otel.span().attributes or {})
    assert attributes["gen_ai.response.finish_reasons"] == ("stop",)
    (message,) = json.loads(str(attributes["gen_ai.output.messages"]))
    assert message["parts"] == [{"type": "text", "content": "Hello"}]
