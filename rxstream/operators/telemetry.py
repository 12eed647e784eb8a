"""`telemetry(...)`: pass every item through and record the OpenTelemetry GenAI client telemetry.

Put after `rs.decode(...)` (or after `rs.stop_on`, `rs.timeouts`): each
subscription (one request) becomes one client span and a few histogram
records, per the OpenTelemetry GenAI semantic conventions (client spans and
client metrics, Development status) as the semantic-conventions registry
defines them up to v1.44.0, when they moved to the semantic-conventions-genai
repository; the names were checked against `opentelemetry-semantic-conventions`
0.66b2.

OpenTelemetry is imported only when `telemetry()` is called (the `otel` extra).
When neither the tracer nor the meter records (the API without an SDK, the
default), the operator checks that once per subscription and then only passes
the upstream through: no per-item work at all.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from ..__about__ import __version__
from ..core.message import MessageAccumulator
from ..models import (
    DELTA_CLASSES,
    Finish,
    Message,
    Metadata,
    ReasoningDelta,
    RefusalDelta,
    Reset,
    TextDelta,
    ToolCallDelta,
    Usage,
)

if TYPE_CHECKING:
    from opentelemetry.metrics import Histogram, MeterProvider
    from opentelemetry.trace import Span, TracerProvider

__all__ = ["PROVIDER_NAMES", "telemetry"]

T = TypeVar("T")

#: `gen_ai.provider.name` for each dialect (the conventions' well-known values;
#: `"ollama"` is not one of them, so it is the custom value the conventions allow).
PROVIDER_NAMES = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gemini",
    "cohere": "cohere",
    "ollama": "ollama",
    "bedrock": "aws.bedrock",
}

#: What ends a stream early without an exception: a dispose, or `rs.stop_on`'s `Finish`.
CANCELLED = "cancelled"

#: The items that carry output: a "chunk" for the time-to-first-chunk and
#: time-per-output-chunk histograms.
_OUTPUT = (TextDelta, ReasoningDelta, RefusalDelta, ToolCallDelta)

#: The conventions' advice for the histograms' buckets.
_SECONDS_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48)
_DURATION_BUCKETS = (*_SECONDS_BUCKETS, 40.96, 81.92)
_CHUNK_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
_TOKEN_BUCKETS = tuple(float(4**n) for n in range(14))

#: `OTEL_SEMCONV_STABILITY_OPT_IN` value that drops what older conventions named differently.
LATEST_EXPERIMENTAL = "gen_ai_latest_experimental"

_INSTALL_HINT = (
    'rs.telemetry() needs the "otel" extra (opentelemetry-api): pip install -e ".[otel]" '
    "from a checkout of rxstream, or pip install opentelemetry-api"
)


class _Instruments:
    """The four GenAI client histograms of one meter provider."""

    __slots__ = ("duration", "time_per_chunk", "time_to_first_chunk", "tokens")

    def __init__(self, provider: MeterProvider) -> None:
        meter = provider.get_meter("rxstream", __version__)
        self.duration: Histogram = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self.tokens: Histogram = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.time_to_first_chunk: Histogram = meter.create_histogram(
            "gen_ai.client.operation.time_to_first_chunk",
            unit="s",
            description="Time to receive the first chunk of the response stream.",
            explicit_bucket_boundaries_advisory=_SECONDS_BUCKETS,
        )
        self.time_per_chunk: Histogram = meter.create_histogram(
            "gen_ai.client.operation.time_per_output_chunk",
            unit="s",
            description="Time from the end of the previous chunk to the end of this one.",
            explicit_bucket_boundaries_advisory=_CHUNK_BUCKETS,
        )


def _server(address: str | None) -> dict[str, str | int]:
    """`server.address` (and `server.port` where known) from a host, `host:port` or a URL.

    Only the host and port of a URL are kept: a key in its query or user part
    never reaches an attribute.
    """
    if not address:
        return {}
    if "://" not in address:
        address = f"//{address}"
    parts = urlsplit(address)
    try:
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"server_address has a bad port: {address!r}") from exc
    if not parts.hostname:
        raise ValueError(f"server_address names no host: {address!r}")
    if port is None:
        port = {"https": 443, "http": 80}.get(parts.scheme)
    out: dict[str, str | int] = {"server.address": parts.hostname}
    if port is not None:
        out["server.port"] = port
    return out


def _is_api_only(provider: object) -> bool:
    """True for the API's own no-op or proxy provider: no SDK behind it, nothing recorded."""
    return type(provider).__module__.startswith(("opentelemetry.metrics", "opentelemetry.trace"))


def _output_messages(messages: list[Message]) -> str:
    """The conventions' `gen_ai.output.messages`: one assistant message per choice, as JSON."""
    out = []
    for message in messages:
        parts: list[dict[str, Any]] = []
        if message.reasoning:
            parts.append({"type": "reasoning", "content": message.reasoning})
        if message.content:
            parts.append({"type": "text", "content": message.content})
        if message.refusal:
            parts.append({"type": "refusal", "content": message.refusal})
        for call in message.tool_calls:
            try:
                arguments: Any = json.loads(call.arguments) if call.arguments else {}
            except ValueError:
                arguments = call.arguments
            parts.append(
                {"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments}
            )
        reason = message.finish_reason or "error"
        out.append(
            {
                "role": message.role,
                "parts": parts,
                "finish_reason": "tool_call" if reason == "tool_calls" else reason,
            }
        )
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


class _Recording:
    """What one subscription has seen so far, and the span it ends."""

    def __init__(
        self,
        span: Span,
        instruments: _Instruments | None,
        attributes: dict[str, str | int],
        *,
        capture_content: bool,
    ) -> None:
        self.span = span
        self.instruments = instruments
        self.attributes = attributes
        self.start = time.perf_counter()
        self.first: float | None = None
        self.last = 0.0
        self.gaps: list[float] = []
        self.response_model: str | None = None
        self.response_id: str | None = None
        self.finishes: dict[int, str] = {}
        self.usage: Usage | None = None
        self.messages: list[Message] = []
        self.content = MessageAccumulator() if capture_content else None
        self.lock = threading.Lock()
        self.ended = False

    def see(self, item: object) -> None:
        if isinstance(item, _OUTPUT):
            now = time.perf_counter()
            if self.first is None:
                self.first = now
            else:
                self.gaps.append(now - self.last)
            self.last = now
        elif isinstance(item, Metadata):
            self._metadata(item.data)
        elif isinstance(item, Finish):
            self.finishes[item.choice] = item.reason
        elif isinstance(item, Usage):
            self.usage = item
        elif isinstance(item, Reset):
            self.finishes.clear()  # the dropped answer's; the new one finishes anew
        elif isinstance(item, Message):
            self.messages.append(item)
            if item.finish_reason is not None:
                self.finishes.setdefault(item.choice, item.finish_reason)
            if item.usage is not None:
                self.usage = item.usage
            self._metadata(item.metadata)
        if self.content is not None and isinstance(item, DELTA_CLASSES):
            try:
                self.content.feed(item)
            except Exception:
                # The telemetry never breaks the stream it watches: capture stops here.
                self.content = None

    def _metadata(self, data: dict[str, Any]) -> None:
        model, id_ = data.get("model"), data.get("id")
        if isinstance(model, str) and model and self.response_model is None:
            self.response_model = model
        if isinstance(id_, str) and id_ and self.response_id is None:
            self.response_id = id_

    def end(self, error: BaseException | None = None, *, cancelled: bool = False) -> None:
        with self.lock:
            if self.ended:
                return
            self.ended = True
        from opentelemetry.trace import StatusCode

        if error is None and not cancelled and CANCELLED in self.finishes.values():
            cancelled = True
        error_type = None
        if error is not None:
            error_type = f"{type(error).__module__}.{type(error).__qualname__}"
        elif cancelled:
            error_type = CANCELLED
        attributes: dict[str, Any] = dict(self.attributes)
        if self.response_model is not None:
            attributes["gen_ai.response.model"] = self.response_model
        if error_type is not None:
            attributes["error.type"] = error_type
        span = self.span
        if span.is_recording():
            span.set_attributes(attributes)
            if self.response_id is not None:
                span.set_attribute("gen_ai.response.id", self.response_id)
            if self.finishes:
                span.set_attribute(
                    "gen_ai.response.finish_reasons",
                    [self.finishes[c] for c in sorted(self.finishes)],
                )
            if self.usage is not None:
                span.set_attribute("gen_ai.usage.input_tokens", self.usage.prompt_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", self.usage.completion_tokens)
                if self.usage.cached_tokens is not None:
                    span.set_attribute(
                        "gen_ai.usage.cache_read.input_tokens", self.usage.cached_tokens
                    )
                if self.usage.cache_write_tokens is not None:
                    span.set_attribute(
                        "gen_ai.usage.cache_creation.input_tokens", self.usage.cache_write_tokens
                    )
                if self.usage.reasoning_tokens is not None:
                    span.set_attribute(
                        "gen_ai.usage.reasoning.output_tokens", self.usage.reasoning_tokens
                    )
            if self.first is not None:
                span.set_attribute("gen_ai.response.time_to_first_chunk", self.first - self.start)
            self._content(span)
            if error is not None:
                span.record_exception(error)
                span.set_status(StatusCode.ERROR, str(error)[:200])
            elif cancelled:
                span.set_status(StatusCode.ERROR, "the stream was cancelled before its end")
        span.end()
        self._metrics(attributes)

    def _content(self, span: Span) -> None:
        if self.content is None:
            return
        messages = self.messages
        if not messages:
            try:
                messages = self.content.close()
            except Exception:  # a stream cut short still shows what came
                messages = []
        if messages:
            span.set_attribute("gen_ai.output.messages", _output_messages(messages))

    def _metrics(self, attributes: dict[str, Any]) -> None:
        instruments = self.instruments
        if instruments is None:
            return
        instruments.duration.record(time.perf_counter() - self.start, attributes)
        if self.usage is not None:
            tokens = {k: v for k, v in attributes.items() if k != "error.type"}
            tokens["gen_ai.token.type"] = "input"
            instruments.tokens.record(self.usage.prompt_tokens, tokens)
            tokens["gen_ai.token.type"] = "output"
            instruments.tokens.record(self.usage.completion_tokens, tokens)
        if self.first is not None:
            instruments.time_to_first_chunk.record(self.first - self.start, attributes)
            for gap in self.gaps:
                instruments.time_per_chunk.record(gap, attributes)


def telemetry(
    *,
    provider: str | None = None,
    request_model: str | None = None,
    server_address: str | None = None,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool = False,
) -> Callable[[Observable[T]], Observable[T]]:
    """Pass every item through and record the OpenTelemetry GenAI client span and metrics.

    Follows the GenAI semantic conventions (client spans and metrics, as the
    semantic-conventions registry defines them up to v1.44.0; Development
    status). Each subscription is one operation:

    - a span `chat {request_model}` (just `chat` without one), kind CLIENT,
      started at subscription under the current context (and current itself
      while the upstream is subscribed, so an instrumented HTTP client's span
      of the request nests under it), ended at the end:
      `gen_ai.operation.name` (`"chat"`), `gen_ai.provider.name`,
      `gen_ai.request.model`, `gen_ai.response.model` and `gen_ai.response.id`
      (from the stream's `Metadata`/`Message`: what the stream says wins),
      `gen_ai.response.finish_reasons` (rxstream's normalised reasons, one per
      choice), `gen_ai.usage.input_tokens`/`output_tokens` (and the cache read
      and reasoning counts where the provider gives them),
      `gen_ai.response.time_to_first_chunk`, `server.address`/`server.port`;
    - on an error, `error.type` (the exception's class, e.g.
      `rxstream.errors.ProviderError`), the exception as a span event and an
      ERROR status; on a cancellation (a dispose before the end, or
      `rs.stop_on`'s `Finish("cancelled")`) `error.type` `"cancelled"` and an
      ERROR status;
    - histograms `gen_ai.client.operation.duration` (s),
      `gen_ai.client.token.usage` (`{token}`, by `gen_ai.token.type`
      `input`/`output`, when the stream reported usage),
      `gen_ai.client.operation.time_to_first_chunk` (s) and
      `gen_ai.client.operation.time_per_output_chunk` (s; one record per output
      item after the first: a text, reasoning, refusal or tool-call delta).
      They are recorded at the end, so each carries the response model.

    Content (`gen_ai.output.messages`: the answer of each choice as the
    conventions' JSON messages) is recorded only with `capture_content=True`.
    The prompt is not seen by this operator, so `gen_ai.input.messages` is
    never set; nor is anything of the request's headers.

    `OTEL_SEMCONV_STABILITY_OPT_IN`: rxstream emits the latest experimental
    GenAI conventions. Unless the variable lists `gen_ai_latest_experimental`,
    it also sets `gen_ai.system` (the pre-v1.37 name of
    `gen_ai.provider.name`) so dashboards built on v1.36.0 keep working; with
    it, only the latest names are emitted, as the conventions ask.

    Cost: with no SDK configured (the API's no-op providers) the check is made
    once per subscription and the items pass straight through.

    Marble sketch (`d`: a delta; the span opens at subscription, ends at `|`)::

        -d-d-d-|   ->   -d-d-d-|      (one span, its metrics recorded at `|`)

    Args:
        provider: a dialect name (`"openai-chat"`, `"gemini"`, ... mapped to
            `"openai"`, `"gcp.gemini"`, ...) or a `gen_ai.provider.name` as is
            (`"azure.ai.openai"`, `"gcp.vertex_ai"`); None leaves it unset.
        request_model: the model the request asked for.
        server_address: the host, `host:port` or base URL the request went to
            (only host and port are kept).
        tracer_provider: default the global one.
        meter_provider: default the global one.
        capture_content: record the output messages on the span.

    Returns:
        An operator that passes its input through unchanged.

    Raises:
        ImportError: opentelemetry-api is not installed (the `otel` extra).
        ValueError: a `server_address` without a host or with a bad port.

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> _ = reactivex.of(TextDelta("Hi")).pipe(telemetry(provider="openai-chat")).subscribe(print)
    TextDelta(text='Hi', choice=0)
    """
    try:
        from opentelemetry import metrics, trace
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc

    base: dict[str, str | int] = {"gen_ai.operation.name": "chat"}
    provider_name = PROVIDER_NAMES.get(provider, provider) if provider else None
    if provider_name:
        base["gen_ai.provider.name"] = provider_name
    if request_model:
        base["gen_ai.request.model"] = request_model
    base.update(_server(server_address))
    span_name = f"chat {request_model}" if request_model else "chat"
    cache: dict[int, tuple[object, _Instruments]] = {}
    cache_lock = threading.Lock()

    def instruments_of(chosen: MeterProvider) -> _Instruments:
        with cache_lock:
            held = cache.get(id(chosen))
            if held is None or held[0] is not chosen:
                held = (chosen, _Instruments(chosen))
                cache[id(chosen)] = held
            return held[1]

    def start() -> _Recording | None:
        tracers = tracer_provider or trace.get_tracer_provider()
        meters = meter_provider or metrics.get_meter_provider()
        opt_in = os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN", "")
        latest = LATEST_EXPERIMENTAL in {value.strip() for value in opt_in.split(",")}
        attributes = dict(base)
        if provider_name and not latest:
            attributes["gen_ai.system"] = provider_name
        span = tracers.get_tracer("rxstream", __version__).start_span(
            span_name, kind=trace.SpanKind.CLIENT, attributes=attributes
        )
        instruments = None if _is_api_only(meters) else instruments_of(meters)
        if not span.is_recording() and instruments is None:
            span.end()
            return None
        return _Recording(span, instruments, attributes, capture_content=capture_content)

    def _telemetry(source: Observable[T]) -> Observable[T]:
        return _Watched(source, start)

    return _telemetry


class _Watched(Observable[T]):
    """The upstream, watched by a `_Recording` per subscription when anything records.

    `subscribe` is overridden (not `_subscribe_core`) so that, when nothing
    records, the upstream gets the subscriber's own callbacks: not even an
    observer wrapper per item is added.
    """

    def __init__(self, source: Observable[T], start: Callable[[], _Recording | None]) -> None:
        super().__init__()
        self._source = source
        self._start = start

    def subscribe(
        self,
        on_next: abc.ObserverBase[T] | abc.OnNext[T] | None = None,
        on_error: abc.OnError | None = None,
        on_completed: abc.OnCompleted | None = None,
        *,
        scheduler: abc.SchedulerBase | None = None,
    ) -> abc.DisposableBase:
        recording = self._start()
        if recording is None:
            return self._source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
        watched: Observable[T] = Observable(partial(_watch, self._source, recording))
        return watched.subscribe(on_next, on_error, on_completed, scheduler=scheduler)

    def _subscribe_core(
        self, observer: abc.ObserverBase[T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return self.subscribe(observer, scheduler=scheduler)


def _watch(
    source: Observable[T],
    recording: _Recording,
    observer: abc.ObserverBase[T],
    scheduler: abc.SchedulerBase | None = None,
) -> abc.DisposableBase:
    def on_next(item: T) -> None:
        recording.see(item)
        observer.on_next(item)

    def on_error(error: Exception) -> None:
        recording.end(error)
        observer.on_error(error)

    def on_completed() -> None:
        recording.end()
        observer.on_completed()

    from opentelemetry.trace import use_span

    # Current while the upstream is subscribed, so the request's own span (an
    # instrumented HTTP client's, where the request starts in this call or in a
    # task it creates) is a child of the chat span.
    with use_span(
        recording.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
    ):
        upstream = source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
    return CompositeDisposable(upstream, Disposable(lambda: recording.end(cancelled=True)))
