"""A run's OpenTelemetry spans: `invoke_agent` around its steps, `execute_tool` per tool call.

Input: the moments a run knows (it starts; a step's request is subscribed; a
tool call starts and ends; the run ends, fails or is disposed). Output: spans
per the OpenTelemetry GenAI semantic conventions for agents and tools (spans
`invoke_agent` (internal: the agent runs in this process) and `execute_tool`,
Development status), checked against `opentelemetry-semantic-conventions`
0.66b2 (`gen_ai.operation.name` values `invoke_agent` and `execute_tool`,
`gen_ai.agent.name`, `gen_ai.tool.name`, `gen_ai.tool.call.id`,
`gen_ai.tool.type`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`).

The tree a run makes, with `rs.telemetry()` on each step's request::

    invoke_agent weather-bot          (the run: RunTelemetry.start)
      chat gpt-4o-mini                (step 1: rs.telemetry's span, current while subscribed)
      execute_tool get_weather        (RunSpan.tool, for each call of the step)
      execute_tool get_time
      chat gpt-4o-mini                (step 2)

OpenTelemetry is imported when a `RunTelemetry` is made (the `otel` extra);
with the API only (no SDK), every span is a no-op and nothing is recorded.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from ..__about__ import __version__
from ..models import JSON, RunEnd, ToolCall, ToolResult, Usage
from ..operators.telemetry import CANCELLED, LATEST_EXPERIMENTAL, PROVIDER_NAMES

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["RunSpan", "RunTelemetry", "ToolSpan"]

T = TypeVar("T")

_INSTALL_HINT = (
    'rs.RunTelemetry needs the "otel" extra (opentelemetry-api): pip install -e ".[otel]" '
    "from a checkout of rxstream, or pip install opentelemetry-api"
)

#: `gen_ai.tool.type` of a tool the run calls in this process (the conventions' `function`).
FUNCTION = "function"


def _error_type(error: BaseException | str) -> str:
    """`error.type`: an exception's qualified class name, or the low-cardinality word given."""
    if isinstance(error, str):
        return error
    return f"{type(error).__module__}.{type(error).__qualname__}"


def _json(value: JSON) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class RunTelemetry:
    """The spans of tool-using runs: give one to `rs.run(..., telemetry=...)`.

    Args:
        agent_name: `gen_ai.agent.name` (and the span's name, `invoke_agent
            {agent_name}`; just `invoke_agent` without one).
        agent_id: `gen_ai.agent.id`.
        conversation_id: `gen_ai.conversation.id` (a chat's id, to find its runs).
        tracer_provider: default the global one.
        meter_provider: for the steps' client metrics (default the global one).
        capture_content: record each tool call's arguments and result
            (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`) and each
            step's answer: content, so off by default, as the conventions ask.
        chat_spans: each step's request records its own `chat` span (and the
            GenAI client metrics) under the run's: `step_options()` is the
            `telemetry=` a run gives `rs.chat` (False: the run's spans only).

    Raises:
        ImportError: opentelemetry-api is not installed (the `otel` extra).

    Example:
        >>> telemetry = RunTelemetry(agent_name="weather-bot")
        >>> run = telemetry.start(dialect="openai-chat", model="gpt-4o-mini")
        >>> with run.current():  # each step's request is subscribed here
        ...     pass
        >>> tool = run.tool(ToolCall(0, "call_1", "get_weather", '{"city": "Paris"}'))
        >>> tool.end(ToolResult("call_1", "get_weather", {"temp_c": 18}))
        >>> run.end(RunEnd((), Usage(10, 5, 15), 1))
    """

    def __init__(
        self,
        *,
        agent_name: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool = False,
        chat_spans: bool = True,
    ) -> None:
        try:
            from opentelemetry import trace
        except ImportError as exc:
            raise ImportError(_INSTALL_HINT) from exc
        self._trace = trace
        self.agent_name = agent_name
        self.capture_content = capture_content
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self.chat_spans = chat_spans
        self._base: dict[str, str] = {"gen_ai.operation.name": "invoke_agent"}
        for key, value in (
            ("gen_ai.agent.name", agent_name),
            ("gen_ai.agent.id", agent_id),
            ("gen_ai.conversation.id", conversation_id),
        ):
            if value:
                self._base[key] = value

    def step_options(self) -> dict[str, Any] | bool:
        """What a run passes as each step's `rs.chat(..., telemetry=...)`: the options of
        `rs.telemetry` for its `chat` spans, or False with `chat_spans=False`.

        >>> RunTelemetry(capture_content=True).step_options()
        {'tracer_provider': None, 'meter_provider': None, 'capture_content': True}
        """
        if not self.chat_spans:
            return False
        return {
            "tracer_provider": self._tracer_provider,
            "meter_provider": self._meter_provider,
            "capture_content": self.capture_content,
        }

    def _tracer(self) -> Tracer:
        provider = self._tracer_provider or self._trace.get_tracer_provider()
        return provider.get_tracer("rxstream", __version__)

    def start(self, *, dialect: str | None = None, model: str | None = None) -> RunSpan:
        """Open the run's `invoke_agent` span (under the current context) and return it.

        Args:
            dialect: the dialect of the run's first step: `gen_ai.provider.name`
                (`"openai-chat"` is `"openai"`, as `rs.telemetry` names it).
            model: `gen_ai.request.model`, the model the run begins with.
        """
        attributes: dict[str, str] = dict(self._base)
        provider = PROVIDER_NAMES.get(dialect, dialect) if dialect else None
        if provider:
            attributes["gen_ai.provider.name"] = provider
            opt_in = os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN", "")
            if LATEST_EXPERIMENTAL not in {value.strip() for value in opt_in.split(",")}:
                attributes["gen_ai.system"] = provider  # the pre-v1.37 name
        if model:
            attributes["gen_ai.request.model"] = model
        name = f"invoke_agent {self.agent_name}" if self.agent_name else "invoke_agent"
        span = self._tracer().start_span(
            name, kind=self._trace.SpanKind.INTERNAL, attributes=attributes
        )
        return RunSpan(self, span)


class _Ending:
    """Ends a span once, whoever asks first (the run's end, its error, its dispose)."""

    def __init__(self, span: Span) -> None:
        self.span = span
        self._lock = threading.Lock()
        self._ended = False

    def first(self) -> bool:
        with self._lock:
            if self._ended:
                return False
            self._ended = True
            return True

    def fail(self, error: BaseException | str | None, cancelled: bool) -> None:
        from opentelemetry.trace import StatusCode

        span = self.span
        if error is not None:
            span.set_attribute("error.type", _error_type(error))
            if isinstance(error, BaseException):
                span.record_exception(error)
            span.set_status(StatusCode.ERROR, str(error)[:200])
        elif cancelled:
            span.set_attribute("error.type", CANCELLED)
            span.set_status(StatusCode.ERROR, "the run was cancelled before its end")


class RunSpan:
    """A run's `invoke_agent` span (made by `RunTelemetry.start`)."""

    def __init__(self, telemetry: RunTelemetry, span: Span) -> None:
        self._telemetry = telemetry
        self._ending = _Ending(span)
        self.span = span

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """The run's span as the current one: subscribe each step's request inside, so the
        step's `chat` span (`rs.telemetry`) is its child."""
        with self._telemetry._trace.use_span(
            self.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
        ):
            yield

    def tool(self, call: ToolCall, *, description: str | None = None) -> ToolSpan:
        """Open the `execute_tool {name}` span of one call, a child of the run's span.

        Args:
            call: the call about to run (its name and id; its arguments with
                `capture_content`).
            description: `gen_ai.tool.description`, the tool's own.
        """
        name = call.name or ""
        attributes: dict[str, str] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.type": FUNCTION,
        }
        if call.id:
            attributes["gen_ai.tool.call.id"] = call.id
        if description:
            attributes["gen_ai.tool.description"] = description
        if self._telemetry.capture_content:
            attributes["gen_ai.tool.call.arguments"] = call.arguments
        trace = self._telemetry._trace
        span = self._telemetry._tracer().start_span(
            f"execute_tool {name}" if name else "execute_tool",
            context=trace.set_span_in_context(self.span),
            kind=trace.SpanKind.INTERNAL,
            attributes=attributes,
        )
        return ToolSpan(span, capture_content=self._telemetry.capture_content, trace=trace)

    def watch(self, observer: abc.ObserverBase[Any]) -> abc.ObserverBase[Any]:
        """`observer`, telling this span how the run ends: its `RunEnd` (passed on first), or
        its error. A run wraps the observer it emits to (`rs.run`'s subscribe)."""
        return _RunObserver(self, observer)

    def watch_tool(
        self, call: ToolCall, output: Observable[T], *, description: str | None = None
    ) -> Observable[T]:
        """`output` (a tool call's result, as an Observable) in its own `execute_tool` span:
        opened at subscription (current while the call is subscribed), ended with the last
        value, the error (a timeout is a `TimeoutError`) or, disposed first, as cancelled."""

        def subscribe(
            observer: abc.ObserverBase[T], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            tool = self.tool(call, description=description)
            last: list[T] = []

            def on_next(value: T) -> None:
                last[:] = [value]
                observer.on_next(value)

            def on_error(error: Exception) -> None:
                tool.end(error=error)
                observer.on_error(error)

            def on_completed() -> None:
                value: JSON = last[0] if last else None
                tool.end(ToolResult(call.id or "", call.name or "", value))
                observer.on_completed()

            with tool.current():
                upstream = output.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
            return CompositeDisposable(upstream, Disposable(lambda: tool.end(cancelled=True)))

        return Observable(subscribe)

    def end(
        self,
        run_end: RunEnd | None = None,
        *,
        error: BaseException | str | None = None,
        cancelled: bool = False,
    ) -> None:
        """End the span: at the run's `RunEnd` (its usage and steps), an error, or a dispose.

        Only the first call ends it (a dispose after the end changes nothing).

        Args:
            run_end: the run's last item (usage summed over its steps, the steps
                made, the approvals it waits for).
            error: what ended the run (an exception, or a low-cardinality word).
            cancelled: the run was disposed before its end.
        """
        if not self._ending.first():
            return
        span = self.span
        if span.is_recording():
            if run_end is not None:
                _usage(span, run_end.usage)
                span.set_attribute("rxstream.run.steps", run_end.steps)
                if run_end.pending:
                    span.set_attribute("rxstream.run.pending", len(run_end.pending))
            self._ending.fail(error, cancelled)
        span.end()


class _RunObserver(abc.ObserverBase[Any]):
    """The run's observer, ending the run's span at its `RunEnd` or its error."""

    def __init__(self, span: RunSpan, observer: abc.ObserverBase[Any]) -> None:
        self._span = span
        self._observer = observer

    def on_next(self, value: Any) -> None:
        self._observer.on_next(value)
        if isinstance(value, RunEnd):
            self._span.end(value)

    def on_error(self, error: Exception) -> None:
        self._span.end(error=error)
        self._observer.on_error(error)

    def on_completed(self) -> None:
        self._span.end()
        self._observer.on_completed()


def _usage(span: Span, usage: Usage | None) -> None:
    if usage is None:
        return
    span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)
    if usage.cached_tokens is not None:
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", usage.cached_tokens)
    if usage.reasoning_tokens is not None:
        span.set_attribute("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens)


class ToolSpan:
    """One tool call's `execute_tool` span (made by `RunSpan.tool`)."""

    def __init__(self, span: Span, *, capture_content: bool, trace: Any) -> None:
        self.span = span
        self._capture = capture_content
        self._trace = trace
        self._ending = _Ending(span)

    @contextlib.contextmanager
    def current(self) -> Iterator[None]:
        """The tool's span as the current one: run the tool inside, so what it traces (an
        instrumented HTTP call, a database query) is its child."""
        with self._trace.use_span(
            self.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
        ):
            yield

    def end(
        self,
        result: ToolResult | None = None,
        *,
        error: BaseException | str | None = None,
        cancelled: bool = False,
    ) -> None:
        """End the span with the call's `ToolResult`, or the exception the tool raised (or a
        word: `"timeout"`), or as cancelled (the run was disposed while it ran).

        A result with an `error` and no exception given is an error span of type
        `"tool_error"` (`"denied"` for a denied call: a run opens no span for a call
        denied before it ran, but one denied by the tool itself is ended so). Only
        the first call ends it.
        """
        if not self._ending.first():
            return
        span = self.span
        if span.is_recording():
            if result is not None and self._capture and result.error is None:
                span.set_attribute("gen_ai.tool.call.result", _json(result.output))
            if error is None and result is not None and result.denied:
                error = "denied"
            elif error is None and result is not None and result.error is not None:
                error = "tool_error"
            self._ending.fail(error, cancelled)
        span.end()
