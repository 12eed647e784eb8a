"""A tool-using run as one stream: `rs.run`.

A run is a loop of steps. A step is one `rs.chat` request (retry, fallback and
a limiter apply to it when given); when its answer asks for tools, the run
calls them (in parallel, up to `max_parallel`), adds the answer and the
results to the conversation, and makes the next step, until an answer asks
for no tool, `stop_when` says so, or a call waits for approval.

The Observable carries every step's deltas as `rs.chat` gives them, and the
run's items (`rs.RunItem`) between them::

    StepStart(1) deltas... StepEnd(1) ToolResult ToolResult StepStart(2) deltas... StepEnd(2) RunEnd

A run that waits for approval ends with `ApprovalRequest`s and a `RunEnd`
whose `pending` lists them; `RunState` keeps what it needs as JSON, and
`rs.run(..., resume=state, decisions=[rs.ApprovalResponse(...)])` carries on,
in any process.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import (
    CompositeDisposable,
    Disposable,
    SerialDisposable,
    SingleAssignmentDisposable,
)
from reactivex.scheduler import CurrentThreadScheduler, TimeoutScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler

from ..core.message import MessageAccumulator
from ..core.wire import decode as decode_item
from ..core.wire import encode as encode_item
from ..errors import EmptyStreamError, StreamError, ToolError
from ..models import (
    JSON,
    ApprovalRequest,
    ApprovalResponse,
    Delta,
    JSONObject,
    Message,
    RunEnd,
    RunItem,
    StepEnd,
    StepStart,
    Tool,
    ToolCall,
    ToolResult,
    Usage,
)
from ._calls import Invoker
from ._estimate import estimated_usage_of
from .retry import Retry, Route, chat
from .telemetry import RunSpan, RunTelemetry
from .tools import FunctionTool, as_tool

__all__ = [
    "DEFAULT_MAX_STEPS",
    "RunState",
    "RunStep",
    "StepAnswer",
    "StepRequest",
    "StopCondition",
    "run",
    "tool_called",
    "tool_message",
]

#: The step limit of a run whose `stop_when` gives none (a model that keeps calling tools).
DEFAULT_MAX_STEPS = 20

#: The version of `RunState.to_json`'s format.
STATE_VERSION = 1


@dataclass(frozen=True, slots=True)
class RunStep:
    """A finished step, as `stop_when` predicates see it.

    Attributes:
        step: its number.
        message: the model's answer.
        results: its tool calls' results, in call order.
    """

    step: int
    message: Message
    results: tuple[ToolResult, ...]


@dataclass(frozen=True, slots=True)
class StepRequest:
    """What a step asks, for a run whose `client` is a function answering each step itself.

    Attributes:
        step: the step's number.
        dialect: the run's dialect.
        model: the step's model.
        messages: the conversation to send.
        tools: the step's tools, as the model sees them.
        options: the step's other options (those `rs.chat` would get).
    """

    step: int
    dialect: str
    model: str
    messages: tuple[Message | JSONObject, ...]
    tools: tuple[Tool, ...]
    options: Mapping[str, Any]


#: A function that answers each step (in place of an HTTP client): a cold Observable of deltas.
StepAnswer: TypeAlias = Callable[[StepRequest], Observable[Delta]]

StopCondition: TypeAlias = int | Callable[[RunStep], bool]
"""When a run stops after a step: after that many steps, or when the predicate says so."""


def tool_called(*names: str) -> Callable[[RunStep], bool]:
    """A `stop_when` condition: the step called one of these tools (its result is in).

    >>> stop = tool_called("final_answer")
    >>> stop(RunStep(1, Message(tool_calls=(ToolCall(0, "c1", "final_answer", "{}"),)), ()))
    True
    """
    if not names or not all(isinstance(name, str) for name in names):
        raise TypeError(f"tool_called takes one or more tool names, got {names!r}")
    wanted = frozenset(names)

    def called(step: RunStep) -> bool:
        return any(call.name in wanted for call in step.message.tool_calls)

    return called


@dataclass(frozen=True, slots=True)
class RunState:
    """What a waiting run needs to carry on: its conversation and the calls that wait.

    Made from a run's `RunEnd` (`RunState.of(end)`); `to_json` / `from_json`
    keep it anywhere (a file, a database row, a queue) and read it back in
    another process. The assistant turns keep everything `rs.request` sends
    back (reasoning states, call ids, block order): they are written in
    rxstream's own format (`rxstream.core.wire`).

    Attributes:
        messages: the conversation (as `RunEnd.messages`).
        pending: the calls waiting for a decision.
        steps: the steps made so far.
        usage: the usage of those steps, summed.
    """

    messages: tuple[Message | JSONObject, ...]
    pending: tuple[ApprovalRequest, ...] = ()
    steps: int = 0
    usage: Usage | None = None

    @classmethod
    def of(cls, end: RunEnd) -> RunState:
        """The state a `RunEnd` leaves."""
        return cls(end.messages, end.pending, end.steps, end.usage)

    def to_json(self) -> str:
        """The state as JSON text (tool outputs already in it as text)."""
        document = {
            "version": STATE_VERSION,
            "steps": self.steps,
            "usage": None if self.usage is None else encode_item(self.usage),
            "pending": [
                {"call_id": p.call_id, "name": p.name, "arguments": p.arguments}
                for p in self.pending
            ],
            "messages": [
                {"message": encode_item(m)} if isinstance(m, Message) else {"dict": m}
                for m in self.messages
            ],
        }
        return json.dumps(document, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        """Read a state back (`to_json`'s text).

        Raises:
            ValueError: the text is not such a state (it says what is wrong).
        """
        try:
            document = json.loads(text)
            if document.get("version") != STATE_VERSION:
                raise ValueError(f"version {document.get('version')!r}, not {STATE_VERSION}")
            messages = tuple(
                decode_item(entry["message"]) if "message" in entry else dict(entry["dict"])
                for entry in document["messages"]
            )
            pending = tuple(ApprovalRequest(**entry) for entry in document["pending"])
            usage = document["usage"]
            return cls(
                messages,
                pending,
                int(document["steps"]),
                None if usage is None else decode_item(usage),
            )
        except (ValueError, KeyError, TypeError, AttributeError, StreamError) as exc:
            raise ValueError(f"not a run state written by RunState.to_json: {exc}") from None


def run(
    client: Any,
    dialect: str,
    *,
    model: str,
    messages: Iterable[Mapping[str, Any] | Message] | None = None,
    tools: Iterable[object] = (),
    stop_when: StopCondition | Sequence[StopCondition] = DEFAULT_MAX_STEPS,
    max_parallel: int = 8,
    approve: Callable[[ToolCall], bool] | None = None,
    resume: RunState | RunEnd | None = None,
    decisions: Iterable[ApprovalResponse] = (),
    approvals: Observable[ApprovalResponse] | None = None,
    retry: Retry | None = None,
    fallback: Sequence[Route] | None = None,
    prepare_step: Callable[[int, tuple[Message | JSONObject, ...]], Mapping[str, Any] | None]
    | None = None,
    tool_errors: Literal["return", "raise"] = "return",
    scheduler: abc.SchedulerBase | None = None,
    telemetry: RunTelemetry | None = None,
    **options: Any,
) -> Observable[Delta | RunItem]:
    """Run a conversation with tools as one stream: steps, tool calls, approvals, the end.

    Each step is `rs.chat(client, dialect, model=..., messages=..., tools=...)`;
    its deltas pass through as they come, between `rs.StepStart` and
    `rs.StepEnd`. An answer that asks for tools has them called: in parallel
    up to `max_parallel` (sync functions on a pool of worker threads, async
    ones on the run's event loop), each within its tool's timeout, each
    result an `rs.ToolResult` (in the order they finish) and a
    `{"role": "tool", ...}` message (in call order). A call of an unknown
    tool, or with arguments its schema refuses, goes back to the model as an
    error result, and so does a tool's exception unless `tool_errors="raise"`.
    The run ends with `rs.RunEnd`: the whole conversation, the usage summed
    over the steps, the step count.

    Approval: a call whose tool says `needs_approval` (or, given `approve=`,
    for which `approve(call)` says True) waits. The step ends with an
    `rs.ApprovalRequest` per waiting call and the run with a `RunEnd` whose
    `pending` lists them (the step's other calls wait with them, so the
    results go back together, in call order). Resume with
    `rs.run(..., resume=rs.RunState.of(end), decisions=[...])` (the same
    tools; `messages=` is the state's): each decision is emitted as an
    `rs.ApprovalResponse`, approved calls run, denied ones go back to the
    model as denied, and the run carries on.

    Args:
        client: an `httpx.Client` or `httpx.AsyncClient` (as `rs.chat`).
        dialect: the wire format (as `rs.chat`).
        model: the model (as `rs.chat`).
        messages: the conversation so far (as `rs.chat`); not with `resume=`.
        tools: the functions the model may call: `rs.tool(...)`, or plain
            functions (`rs.tool(fn)` with its defaults).
        stop_when: after which step to stop even if the model asked for tools
            (whose results are then in the conversation): a step count, a
            predicate on the last `RunStep` (`rs.tool_called("name")`), or a
            list of them (any). Default: 20 steps.
        max_parallel: how many calls of one step run at once.
        approve: a predicate on each call (an `rs.ToolCall`): True makes the
            call wait for approval; in place of the tools' own `needs_approval`.
        resume: the state of a run that waits for approval (`RunState`, or its `RunEnd`).
        decisions: the `rs.ApprovalResponse`s for the waiting calls; a call
            without one keeps waiting.
        approvals: decisions as they come (an Observable of
            `rs.ApprovalResponse`, a `Subject` a UI feeds): the run waits for
            them instead of ending, and goes on once every waiting call of the
            step has one; if it completes first, the run ends waiting as
            without it (every call of the step still pending).
        retry: as `rs.chat`, for every step.
        fallback: as `rs.chat`, for every step.
        prepare_step: called before each step with its number and the
            conversation; a dict it returns changes that step: `"model"`,
            `"tools"`, and any option of `rs.chat`.
        tool_errors: `"raise"` ends the run with a `ToolError` when a tool
            raises or times out.
        scheduler: as `rs.chat`; the tools' timeouts run on it too.
        telemetry: an `rs.RunTelemetry`: the run in an `invoke_agent` span, each
            step's `chat` span under it (unless its `chat_spans=False`), each
            tool call in an `execute_tool` span.
        **options: as `rs.chat` (`limiter=`, `max_tokens=`, ...), for every step.

    Returns:
        A cold Observable of the run; each subscription is a run of its own.

    Raises:
        TypeError, ValueError: a bad argument (a tool without a function,
            `messages=` with `resume=`, a decision for no waiting call, ...).

    Errors (via `on_error`):
        StreamError: a step's request failed (as `rs.chat`); `ToolError` (a
            tool raised or timed out, with `tool_errors="raise"`).
    """
    setup = _setup(
        client,
        dialect,
        model=model,
        messages=messages,
        tools=tools,
        stop_when=stop_when,
        max_parallel=max_parallel,
        approve=approve,
        resume=resume,
        decisions=decisions,
        tool_errors=tool_errors,
        approvals=approvals,
    )
    chat_options = {"retry": retry, "fallback": fallback, "scheduler": scheduler, **options}
    if telemetry is not None:  # each step's chat span, under the run's
        chat_options["telemetry"] = telemetry.step_options()

    def subscribe(observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None) -> Any:
        span = telemetry.start(dialect=dialect, model=model) if telemetry else None
        watched = span.watch(observer) if span else observer
        runner = _Run(setup, chat_options, prepare_step, scheduler, watched)
        runner.span = span
        return runner.start()

    return reactivex.create(subscribe)


# --------------------------------------------------------------------------- setup


@dataclass(frozen=True, slots=True)
class _Setup:
    client: Any
    dialect: str
    model: str
    messages: tuple[Message | JSONObject, ...]
    tools: Mapping[str, FunctionTool]
    stops: tuple[StopCondition, ...]
    max_parallel: int
    approve: Callable[[ToolCall], bool] | None
    state: RunState | None
    decisions: Mapping[str, ApprovalResponse]
    raise_errors: bool
    approvals: Observable[ApprovalResponse] | None


def _setup(client: Any, dialect: str, **given: Any) -> _Setup:
    """The run's arguments checked once, before any subscription."""
    model, tools, resume = given["model"], given["tools"], given["resume"]
    made = [as_tool(t) for t in ([tools] if callable(tools) else tools)]
    by_name = {t.name: t for t in made}
    if len(by_name) != len(made):
        raise ValueError(f"two tools have the same name: {sorted(t.name for t in made)!r}")
    max_parallel = given["max_parallel"]
    if isinstance(max_parallel, bool) or not isinstance(max_parallel, int) or max_parallel < 1:
        raise ValueError(f"max_parallel must be a positive int, got {max_parallel!r}")
    if given["tool_errors"] not in ("return", "raise"):
        raise ValueError(f"tool_errors must be 'return' or 'raise', got {given['tool_errors']!r}")
    stops = _stops(given["stop_when"])
    state, messages = _start_state(resume, given["messages"])
    decisions = _decisions(state, given["decisions"])
    return _Setup(
        client,
        dialect,
        model,
        messages,
        by_name,
        stops,
        max_parallel,
        given["approve"],
        state,
        decisions,
        given["tool_errors"] == "raise",
        given["approvals"],
    )


def _stops(stop_when: Any) -> tuple[StopCondition, ...]:
    stops = tuple(stop_when) if isinstance(stop_when, list | tuple) else (stop_when,)
    for stop in stops:
        if isinstance(stop, bool) or not (callable(stop) or (isinstance(stop, int) and stop > 0)):
            raise TypeError(
                "stop_when takes a positive step count, a predicate on the last step "
                f"(rs.tool_called(...)), or a list of them; got {stop!r}"
            )
    return stops


def _start_state(
    resume: RunState | RunEnd | None, messages: Iterable[Any] | None
) -> tuple[RunState | None, tuple[Message | JSONObject, ...]]:
    if resume is None:
        if messages is None:
            raise TypeError("rs.run needs messages= (or resume= a waiting run's state)")
        return None, tuple(m if isinstance(m, Message) else dict(m) for m in messages)
    if messages is not None:
        raise TypeError("rs.run takes messages= or resume=, not both (the state holds them)")
    state = RunState.of(resume) if isinstance(resume, RunEnd) else resume
    if not isinstance(state, RunState):
        raise TypeError(f"resume= takes an rs.RunState or rs.RunEnd, got {resume!r}")
    return state, state.messages


def _decisions(
    state: RunState | None, decisions: Iterable[ApprovalResponse]
) -> Mapping[str, ApprovalResponse]:
    given = list(decisions)
    if given and state is None:
        raise TypeError("decisions= goes with resume= (the state of a run that waits)")
    waiting = {p.call_id for p in state.pending} if state is not None else set()
    out: dict[str, ApprovalResponse] = {}
    for decision in given:
        if not isinstance(decision, ApprovalResponse):
            raise TypeError(f"decisions= takes rs.ApprovalResponse items, got {decision!r}")
        if decision.call_id not in waiting:
            raise ValueError(
                f"a decision for call {decision.call_id!r}, which does not wait "
                f"(waiting: {sorted(waiting)!r})"
            )
        out[decision.call_id] = decision
    return out


# --------------------------------------------------------------------------- the run


@dataclass(slots=True)
class _Call:
    """One call of a step, on its way to a result."""

    call: ToolCall
    id: str
    tool: FunctionTool | None = None
    arguments: JSON = None
    keywords: JSONObject | None = None
    result: ToolResult | None = None
    waits: bool = False


class _Run:
    """One subscription's run: its conversation, its step, its running calls."""

    def __init__(
        self,
        setup: _Setup,
        chat_options: Mapping[str, Any],
        prepare_step: Callable[..., Mapping[str, Any] | None] | None,
        scheduler: abc.SchedulerBase | None,
        observer: abc.ObserverBase[Any],
    ) -> None:
        self.setup = setup
        self.chat_options = chat_options
        self.prepare_step = prepare_step
        self.observer = observer
        self.messages: list[Message | JSONObject] = list(setup.messages)
        state = setup.state
        self.steps = state.steps if state is not None else 0
        self.usage = state.usage if state is not None else None
        loop = _loop_of(setup.client, scheduler)
        self.timers: abc.SchedulerBase = scheduler or (
            AsyncIOScheduler(loop) if loop is not None else TimeoutScheduler.singleton()
        )
        self.next_steps: abc.SchedulerBase = scheduler or (
            AsyncIOScheduler(loop) if loop is not None else CurrentThreadScheduler.singleton()
        )
        self.invoker = Invoker(max_parallel=setup.max_parallel, loop=loop)
        self.lock = threading.RLock()
        self.done = False
        self.current = SerialDisposable()
        self.span: RunSpan | None = None
        self.disposables = CompositeDisposable(self.current, Disposable(self._stop))

    # ------------------------------------------------------------------ life

    def start(self) -> abc.DisposableBase:
        try:
            if self.setup.state is not None:
                self._resume(self.setup.state)
            else:
                self._schedule_step()
        except Exception as exc:
            self._fail(exc)
        return self.disposables

    def _stop(self) -> None:
        self.done = True
        if self.span:
            self.span.end(cancelled=True)
        self.invoker.shutdown()

    def _emit(self, item: Any) -> None:
        with self.lock:
            if not self.done:
                self.observer.on_next(item)

    def _fail(self, error: Exception) -> None:
        with self.lock:
            if self.done:
                return
            self.done = True
        self.invoker.shutdown()
        self.observer.on_error(error)

    def _end(self, pending: tuple[ApprovalRequest, ...] = ()) -> None:
        end = RunEnd(tuple(self.messages), self.usage, self.steps, pending)
        with self.lock:
            if self.done:
                return
            self.observer.on_next(end)
            self.done = True
        self.invoker.shutdown()
        self.observer.on_completed()

    # ------------------------------------------------------------------ steps

    def _schedule_step(self) -> None:
        self._hold(lambda: self.next_steps.schedule(lambda *_: self._guarded(self._step)))

    def _hold(self, start: Callable[[], abc.DisposableBase]) -> None:
        """Make `start()`'s subscription the current one (it may finish, and start the next,
        before it returns: the holder is current first, so the next is never disposed)."""
        holder = SingleAssignmentDisposable()
        self.current.disposable = holder
        holder.disposable = start()

    def _guarded(self, action: Callable[[], None]) -> None:
        if self.done:
            return
        try:
            action()
        except Exception as exc:
            self._fail(exc)

    def _step(self) -> None:
        self.steps += 1
        model, tools, options = self.setup.model, self.setup.tools, dict(self.chat_options)
        if self.prepare_step is not None:
            model, tools, options = _changed(
                self.prepare_step(self.steps, tuple(self.messages)), model, tools, options
            )
        step = self.steps
        self._emit(StepStart(step, self.setup.dialect, model))
        source = self._source(step, model, tools, options)
        accumulator = MessageAccumulator()

        def on_next(delta: Delta) -> None:
            accumulator.feed(delta)
            self._emit(delta)

        def on_completed() -> None:
            self._guarded(lambda: self._answered(step, accumulator.close(), tools))

        def on_error(error: Exception) -> None:
            self._guarded(lambda: self._died(step, accumulator, error))

        with self.span.current() if self.span else contextlib.nullcontext():
            self._hold(lambda: source.subscribe(on_next, on_error, on_completed))

    def _source(
        self, step: int, model: str, tools: Mapping[str, FunctionTool], options: dict[str, Any]
    ) -> Observable[Delta]:
        specs = tuple(t.spec for t in tools.values())
        client, dialect = self.setup.client, self.setup.dialect
        if _answers_itself(client):
            asked = StepRequest(step, dialect, model, tuple(self.messages), specs, options)
            answer: Observable[Delta] = client(asked)
            return answer
        messages = list(self.messages)
        return chat(client, dialect, model=model, messages=messages, tools=specs or None, **options)

    def _answered(
        self, step: int, answers: list[Message], tools: Mapping[str, FunctionTool]
    ) -> None:
        message = next((m for m in answers if m.choice == 0), None)
        if message is None:
            raise EmptyStreamError(f"step {step} of the run completed without an answer")
        self._emit(StepEnd(step, message.finish_reason, message.usage))
        self.usage = _added(self.usage, message.usage)
        self.messages.append(message)
        calls = [call for call in message.tool_calls if call.complete]
        if not calls:
            self._end()
            return
        planned = [self._plan(step, call, tools) for call in calls]
        self._settle_step(step, message, planned, {})

    def _died(self, step: int, accumulator: MessageAccumulator, error: Exception) -> None:
        """A step's request failed: its `StepEnd` (finish reason "error") carries what it
        cost, as reported or, once output had come, estimated; then the run's error."""
        try:
            answer = next((m for m in accumulator.close() if m.choice == 0), None)
        except Exception:  # what came cannot make a message: nothing to estimate from
            answer = None
        usage = None if answer is None else answer.usage
        if usage is None and answer is not None and _has_output(answer):
            usage = estimated_usage_of(answer, self.messages)
        self._emit(StepEnd(step, "error", usage))
        self._fail(error)

    def _plan(self, step: int, call: ToolCall, tools: Mapping[str, FunctionTool]) -> _Call:
        planned = _Call(call, call.id or f"call_{step}_{call.index}", tools.get(call.name or ""))
        if planned.tool is None:
            known = sorted(tools)
            planned.result = _error(planned, f"no tool is named {call.name!r} (tools: {known!r})")
            return planned
        try:
            planned.arguments = call.parse_arguments()
            planned.keywords = planned.tool.keywords(planned.arguments)
        except (StreamError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or str(exc)
            planned.result = _error(planned, f"the arguments do not fit the tool: {reason}")
            return planned
        asked = self.setup.approve
        planned.waits = asked(call) if asked is not None else planned.tool.waits(planned.arguments)
        return planned

    def _settle_step(
        self,
        step: int,
        message: Message,
        planned: list[_Call],
        decisions: Mapping[str, ApprovalResponse],
    ) -> None:
        """Wait for approval, or run the step's calls and go on."""
        for item in planned:
            decision = decisions.get(item.id)
            if item.waits and decision is not None and not decision.approved:
                item.result = _denied(item, decision.reason)
                item.waits = False
            elif decision is not None:
                item.waits = False
        waiting = tuple(
            ApprovalRequest(p.id, p.call.name or "", p.arguments) for p in planned if p.waits
        )
        if waiting:
            for request in waiting:
                self._emit(request)
            if self.setup.approvals is None:
                self._end(waiting)
            else:
                self._await_approvals(step, message, planned, waiting)
            return
        for item in planned:
            if item.result is not None:
                self._emit(item.result)
        self._run_calls(step, message, planned)

    def _await_approvals(
        self,
        step: int,
        message: Message,
        planned: list[_Call],
        waiting: tuple[ApprovalRequest, ...],
    ) -> None:
        """Collect the decisions from `approvals=`; go on once every waiting call has one."""
        assert self.setup.approvals is not None
        ids = {request.call_id for request in waiting}
        decided: dict[str, ApprovalResponse] = {}

        def on_next(decision: ApprovalResponse) -> None:
            if not isinstance(decision, ApprovalResponse) or decision.call_id not in ids:
                raise ValueError(
                    f"approvals= sent {decision!r}, which decides no waiting call "
                    f"(waiting: {sorted(ids)!r})"
                )
            decided[decision.call_id] = decision
            self._emit(decision)
            if decided.keys() == ids:
                self._settle_step(step, message, planned, decided)

        def on_completed() -> None:
            if decided.keys() != ids:  # the decisions so far are given again on resume
                self._end(waiting)

        def guarded(decision: ApprovalResponse) -> None:
            self._guarded(lambda: on_next(decision))

        approvals = self.setup.approvals.pipe(ops.take_while(lambda _: decided.keys() != ids))
        self._hold(lambda: approvals.subscribe(guarded, self._fail, on_completed))

    def _run_calls(self, step: int, message: Message, planned: list[_Call]) -> None:
        running = [p for p in planned if p.result is None]

        def finished() -> None:
            self._guarded(lambda: self._after_tools(step, message, planned))

        if not running:
            finished()
            return
        calls = [self._result_of(p) for p in running]
        merged = reactivex.from_iterable(calls).pipe(
            ops.merge(max_concurrent=self.setup.max_parallel)
        )
        self._hold(lambda: merged.subscribe(on_error=self._fail, on_completed=finished))

    def _result_of(self, planned: _Call) -> Observable[ToolResult]:
        tool = planned.tool
        assert tool is not None
        assert planned.keywords is not None
        output = self.invoker.call(tool, planned.keywords)
        if tool.timeout is not None:
            late = reactivex.throw(TimeoutError(f"no result within {tool.timeout:g} s"))
            output = output.pipe(ops.timeout(tool.timeout, other=late, scheduler=self.timers))
        if self.span:
            output = self.span.watch_tool(planned.call, output, description=tool.spec.description)

        def done(value: JSON) -> ToolResult:
            planned.result = ToolResult(planned.id, tool.name, value)
            return planned.result

        def failed(error: Exception, _: Observable[ToolResult]) -> Observable[ToolResult]:
            reason = _reason(error, tool)
            if self.setup.raise_errors:
                failure = ToolError(name=tool.name, call_id=planned.id, reason=reason)
                failure.__cause__ = error
                return reactivex.throw(failure)
            planned.result = _error(planned, reason)
            return reactivex.just(planned.result)

        return output.pipe(ops.last(), ops.map(done), ops.catch(failed), ops.do_action(self._emit))

    def _after_tools(self, step: int, message: Message, planned: list[_Call]) -> None:
        results = tuple(p.result for p in planned if p.result is not None)
        self.messages.extend(tool_message(result) for result in results)
        finished = RunStep(step, message, results)
        if any(_stopped(stop, finished, self.steps) for stop in self.setup.stops):
            self._end()
            return
        self._schedule_step()

    # ------------------------------------------------------------------ resume

    def _resume(self, state: RunState) -> None:
        message, answered = _waiting_turn(state.messages)
        pending = {p.call_id for p in state.pending}
        decisions = self.setup.decisions
        for decision in decisions.values():
            self._emit(decision)
        planned = []
        for call in message.tool_calls:
            if not call.complete:
                continue
            item = self._plan(self.steps, call, self.setup.tools)
            if item.id in answered:
                continue
            item.waits = item.id in pending and item.result is None
            planned.append(item)
        self._settle_step(self.steps, message, planned, decisions)


# --------------------------------------------------------------------------- helpers


def tool_message(result: ToolResult) -> JSONObject:
    """The conversation's message for a tool result (OpenAI chat-style, as `rs.request` takes).

    The content is the output as text (a `str` as it is, anything else as
    JSON), `"Error: ..."` for an error and `"Denied: ..."` for a denied call.

    >>> tool_message(ToolResult("call_1", "get_weather", {"sky": "clear"}))["content"]
    '{"sky": "clear"}'
    """
    if result.denied:
        content = f"Denied: {result.error or 'the call was not approved'}"
    elif result.error is not None:
        content = f"Error: {result.error}"
    elif isinstance(result.output, str):
        content = result.output
    else:
        content = json.dumps(result.output, ensure_ascii=False, default=_jsonable)
    return {"role": "tool", "tool_call_id": result.call_id, "name": result.name, "content": content}


def _jsonable(value: Any) -> Any:
    """What `json.dumps` cannot write itself: pydantic models, dataclasses, else `str`."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return {name: getattr(value, name) for name in fields}
    return str(value)


def _error(planned: _Call, reason: str) -> ToolResult:
    return ToolResult(planned.id, planned.call.name or "", error=reason)


def _denied(planned: _Call, reason: str | None) -> ToolResult:
    return ToolResult(
        planned.id,
        planned.call.name or "",
        error=reason or "the call was not approved",
        denied=True,
    )


def _reason(error: Exception, tool: FunctionTool) -> str:
    if isinstance(error, TimeoutError):
        return f"the tool {tool.name!r} did not finish within {tool.timeout:g} s"
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _stopped(stop: StopCondition, step: RunStep, steps: int) -> bool:
    if isinstance(stop, int):
        return steps >= stop
    return bool(stop(step))


def _added(total: Usage | None, usage: Usage | None) -> Usage | None:
    """Two usages summed (the optional counts where either has them)."""
    if usage is None or total is None:
        return total if usage is None else replace(usage, raw=None)

    def both(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    return Usage(
        total.prompt_tokens + usage.prompt_tokens,
        total.completion_tokens + usage.completion_tokens,
        total.total_tokens + usage.total_tokens,
        both(total.reasoning_tokens, usage.reasoning_tokens),
        both(total.cached_tokens, usage.cached_tokens),
    )


def _changed(
    changes: Mapping[str, Any] | None,
    model: str,
    tools: Mapping[str, FunctionTool],
    options: dict[str, Any],
) -> tuple[str, Mapping[str, FunctionTool], dict[str, Any]]:
    """A step's model, tools and options after `prepare_step`'s changes."""
    if changes is None:
        return model, tools, options
    if not isinstance(changes, Mapping):
        raise TypeError(f"prepare_step returns a dict of changes or None, got {changes!r}")
    rest = dict(changes)
    model = rest.pop("model", model)
    if "tools" in rest:
        made = [as_tool(t) for t in rest.pop("tools")]
        tools = {t.name: t for t in made}
    return model, tools, {**options, **rest}


def _waiting_turn(messages: Sequence[Message | JSONObject]) -> tuple[Message, set[str]]:
    """The assistant turn whose calls wait, and the ids of its calls already answered."""
    answered: set[str] = set()
    for entry in reversed(messages):
        if isinstance(entry, Message):
            if not entry.tool_calls:
                break
            return entry, answered
        if entry.get("role") != "tool":
            break
        answered.add(str(entry.get("tool_call_id")))
    raise ValueError("the state's conversation does not end with a turn whose tool calls wait")


def _has_output(answer: Message) -> bool:
    return bool(answer.content or answer.reasoning or answer.refusal or answer.tool_calls)


def _answers_itself(client: Any) -> bool:
    """True for a `StepAnswer` function (an HTTP client has `send`)."""
    return callable(client) and not hasattr(client, "send")


def _loop_of(client: Any, scheduler: abc.SchedulerBase | None) -> asyncio.AbstractEventLoop | None:
    """The event loop async tools run on: the scheduler's, else the running one (async client)."""
    if isinstance(scheduler, AsyncIOScheduler):
        return scheduler._loop
    if not inspect.iscoroutinefunction(getattr(client, "send", None)):
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
