"""Benchmark `rs.telemetry()`: its cost with and without an OpenTelemetry SDK configured.

One answer (text fragments, a finish, usage) runs from two sources: the deltas
themselves (the cheapest pipeline there is, so the operator's own cost shows
most), and the answer's OpenAI chat wire bytes through `rs.lines(),
rs.sse_frames(), rs.decode("openai-chat")` (what an application runs). Each
source runs through three pipelines, interleaved in one process, each timed in
CPU time (`time.process_time`), the median ratio of rounds taken one right after
the other:

- base: `accumulate_message()` alone (the pipeline without the operator);
- pass: a bare pass-through operator (an `Observable` that only subscribes its
  upstream) then `accumulate_message()`: any operator that is not a core machine
  ends the fused run of machines (`decode` and `accumulate_message` read each chunk
  once between them when nothing stands between them), and this is that cost alone;
- no SDK: `telemetry()` then `accumulate_message()`, with the API's no-op tracer and
  meter providers (what an application that configured no SDK has);
- SDK: the same with the SDK's tracer provider (a span processor that exports to
  memory) and meter provider (an in-memory reader), as a configured application has.

Target: the no-SDK pipeline costs at most 1.05x the pass-through (the operator itself
adds nothing measurable: the check is made once per subscription, and then the
upstream gets the subscriber's own callbacks). Its ratio to the base is printed too.
The SDK's cost is printed, not judged: one span and a few histogram records per
stream, plus one `time_per_output_chunk` record per output item after the first
(the conventions ask for one per chunk); nearly all of it is the SDK's own work per
record (checking and hashing the attributes), not rxstream's.

The process exits 1 when the target is missed (never with --quick).

Usage: python benchmarks/bench_telemetry.py [--quick] [--deltas N] [--streams N] [--rounds N]
Needs the `otel` extra and opentelemetry-sdk (the `test` extra).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import reactivex
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider
from reactivex import Observable

import rxstream as rs
from rxstream.core import dialects

NO_SDK_TARGET = 1.05


def script(deltas: int) -> list[rs.Delta]:
    items: list[rs.Delta] = [rs.Metadata({"model": "bench-model", "id": "resp-1"})]
    items += [rs.TextDelta(f"word{i % 97} ") for i in range(deltas)]
    items += [rs.Finish("stop"), rs.Usage(100, deltas, 100 + deltas)]
    return items


def wire_bytes(items: list[rs.Delta]) -> list[bytes]:
    renderer = dialects.renderer("openai-chat")
    rendered: list[Any] = []
    for item in items:
        rendered += renderer.feed(item)
    rendered += renderer.close()
    body = dialects.wire_bytes(renderer, rendered)
    return [body[i : i + 4096] for i in range(0, len(body), 4096)]


def pass_through(source: Observable[Any]) -> Observable[Any]:
    """The cheapest operator that is not a machine: it only subscribes the upstream."""

    def subscribe(observer: Any, scheduler: Any = None) -> Any:
        return source.subscribe(observer, scheduler=scheduler)

    return Observable(subscribe)


def pipelines(items: list[Any], decode: bool) -> dict[str, Callable[[], Any]]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    source: Observable[Any] = reactivex.from_iterable(items)
    if decode:
        source = source.pipe(rs.lines(), rs.sse_frames(), rs.decode("openai-chat"))
    base = source.pipe(rs.accumulate_message())
    passed = source.pipe(pass_through, rs.accumulate_message())
    no_sdk = source.pipe(
        rs.telemetry(
            provider="openai-chat",
            request_model="bench-model",
            tracer_provider=NoOpTracerProvider(),
            meter_provider=NoOpMeterProvider(),
        ),
        rs.accumulate_message(),
    )
    sdk = source.pipe(
        rs.telemetry(
            provider="openai-chat",
            request_model="bench-model",
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
        ),
        rs.accumulate_message(),
    )

    def clear() -> None:
        spans.clear()

    return {
        "base": lambda: base.subscribe(),
        "pass": lambda: passed.subscribe(),
        "no SDK": lambda: no_sdk.subscribe(),
        "SDK": lambda: (sdk.subscribe(), clear()),
    }


def cpu(run: Callable[[], Any], streams: int) -> float:
    gc.collect()
    start = time.process_time()
    for _ in range(streams):
        run()
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes; never fails")
    parser.add_argument("--deltas", type=int, default=400, help="output deltas per stream")
    parser.add_argument("--streams", type=int, default=300, help="streams per timed run")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    if args.quick:
        args.deltas, args.streams, args.rounds = 50, 20, 3
    answer = script(args.deltas)
    print(f"{args.deltas} output deltas per stream, {args.streams} streams, {args.rounds} rounds")
    worst = 0.0
    for label, items, decode in (
        ("deltas", answer, False),
        ("wire bytes, decoded", wire_bytes(answer), True),
    ):
        no_sdk = measure(label, pipelines(items, decode), args.streams, args.rounds)
        worst = max(worst, no_sdk)
    if not args.quick and worst > NO_SDK_TARGET:
        print(f"MISSED: without an SDK {worst:.2f}x the pass-through (target <= {NO_SDK_TARGET}x)")
        return 1
    return 0


def measure(label: str, runs: dict[str, Callable[[], Any]], streams: int, rounds: int) -> float:
    """Print the three pipelines' CPU per stream; return the no-SDK ratio."""
    for run in runs.values():  # warm up: instruments created, caches filled
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    ratios: dict[str, list[float]] = {"pass": [], "no SDK": [], "SDK": []}
    against_pass: list[float] = []
    for _ in range(rounds):
        measured = {name: cpu(run, streams) for name, run in runs.items()}
        for name, value in measured.items():
            times[name].append(value)
        for name in ratios:
            ratios[name].append(measured[name] / measured["base"])
        against_pass.append(measured["no SDK"] / measured["pass"])
    print(f"from {label}:")
    for name in runs:
        us = statistics.median(times[name]) / streams * 1e6
        ratio = f"{statistics.median(ratios[name]):.2f}x base" if name in ratios else "1.00x"
        print(f"  {name:7} {us:9.1f} µs per stream   {ratio}")
    no_sdk = statistics.median(against_pass)
    print(f"  no SDK against the bare pass-through: {no_sdk:.2f}x")
    return no_sdk


if __name__ == "__main__":
    sys.exit(main())
