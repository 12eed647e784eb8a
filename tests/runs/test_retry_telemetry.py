"""`rs.chat(..., retry=, telemetry=)`: one GenAI client span per attempt, under one parent."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from reactivex.scheduler import HistoricalScheduler

import rxstream as rs
from rxstream.testing import FAULT_HEADER, FakeLLMServer, Scenario

ANSWER = Scenario.answer(rs.TextDelta("Hel"), rs.TextDelta("lo"), rs.Finish("stop"))
ASK = [{"role": "user", "content": "Hi"}]


@pytest.fixture
def spans() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def by_start(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return sorted(exporter.get_finished_spans(), key=lambda s: s.start_time or 0)


def test_each_attempt_is_a_span_under_the_runs_parent(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    scheduler = HistoricalScheduler(datetime(2026, 1, 1, tzinfo=UTC))
    with FakeLLMServer(ANSWER) as server, httpx.Client() as client:
        root = f"http://127.0.0.1:{server.port}"
        source = rs.chat(
            client,
            "anthropic",
            model="claude",
            messages=ASK,
            api_key="k",
            base_url=root,
            max_tokens=10,
            headers={FAULT_HEADER: "529:retry-after=1"},
            retry=rs.Retry(attempts=2),
            fallback=[rs.Route("gemini", "gemini-x", api_key="k", base_url=root)],
            telemetry={"tracer_provider": provider},
            scheduler=scheduler,
        ).pipe(rs.telemetry(tracer_provider=provider))
        items: list[Any] = []
        source.subscribe(items.append)
        scheduler.advance_by(60.0)
        assert len(server.requests) == 3
        port = server.port
    parent, *attempts = by_start(exporter)
    assert parent.name == "chat"
    assert [s.name for s in attempts] == ["chat claude", "chat claude", "chat gemini-x"]
    assert parent.context is not None
    assert all(s.parent is not None for s in attempts)
    assert {s.parent.span_id for s in attempts if s.parent} == {parent.context.span_id}
    providers = [(s.attributes or {}).get("gen_ai.provider.name") for s in attempts]
    assert providers == ["anthropic", "anthropic", "gcp.gemini"]
    errors = [(s.attributes or {}).get("error.type") for s in attempts]
    assert errors == ["rxstream.errors.HTTPStatusError"] * 2 + [None]
    assert [s.status.status_code for s in attempts][:2] == [StatusCode.ERROR] * 2
    assert (attempts[2].attributes or {}).get("server.port") == port
    assert parent.status.status_code != StatusCode.ERROR


def test_without_retry_telemetry_is_one_span(
    spans: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = spans
    with FakeLLMServer(ANSWER) as server, httpx.Client() as client:
        message = (
            rs.chat(
                client,
                "ollama",
                model="llama",
                messages=ASK,
                base_url=f"http://127.0.0.1:{server.port}",
                telemetry={"tracer_provider": provider},
            )
            .pipe(rs.accumulate_message())
            .run()
        )
        assert len(server.requests) == 1
    assert message.content == "Hello"
    assert "attempts" not in message.metadata  # no run: the request as it is
    (span,) = exporter.get_finished_spans()
    assert span.name == "chat llama"
    assert (span.attributes or {}).get("gen_ai.provider.name") == "ollama"


def test_telemetry_takes_a_bool_or_its_options() -> None:
    with httpx.Client() as client, pytest.raises(TypeError, match="telemetry must be"):
        rs.chat(client, "ollama", model="m", messages=ASK, telemetry="yes")  # type: ignore[arg-type]
    with httpx.Client() as client, pytest.raises(TypeError, match="unexpected keyword"):
        rs.chat(client, "ollama", model="m", messages=ASK, telemetry={"colour": "red"})
