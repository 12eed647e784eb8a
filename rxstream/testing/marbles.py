"""Marble diagrams for LLM pipelines, on top of `reactivex.testing`.

A test of a pipeline reads as two diagrams and one value map: the source (SSE
lines, frames, chunks or deltas) and the expected output, on the virtual clock
of a `TestScheduler` (one character = one tick, subscription at tick 200):

    V = {"a": text("Hel"), "b": text("lo"), "u": usage(3, 2), "D": DONE}
    m = StreamMarbles()
    source = m.lines("-a-b-u-D", V)        # each value becomes its SSE lines
    out = m.start(source.pipe(rs.sse_frames(), rs.decode_chunks(), rs.deltas()))
    assert out == m.expected("-a-b-u-|", V)  # the same values, as deltas
    assert source.subscriptions == [m.subscription("^------!")]

The vocabulary (`text`, `reasoning`, `refusal`, `tool`, `finish`, `usage`,
`error`, `DONE`, `KEEPALIVE`, `malformed`) gives plain rxstream items: a delta
is the delta the pipeline should emit, and a source helper renders it at its
level (`lines`: `data: {...}` and a blank line, `frames`: an `SSEFrame`,
`chunks`: a `ChatChunk`). Other values pass through as they are (a `str` is one
line, a dict is a chunk), so any item can sit in a map.

In a diagram, a value that is an exception (see `error`) is `on_error` with it
and `DONE` in a chunk- or delta-level diagram is completion (what
`decode_chunks` makes of `[DONE]`). In `expected`, an exception matches any
error of its type with the same message, and an exception class any error of
that class (OnError equality in reactivex compares only the text).

Items that share a tick form a group, separated by commas as reactivex reads
them: `-a-(b,|)` is `b` and completion at tick 3. The RxJS spelling `(b|)`
would be one value named `b|` there, so it is refused with the right spelling.

When `assert out == m.expected(...)` fails, the rxstream pytest plugin prints
both sides as diagrams (ticks from the subscription) and the first record
where they part (`rxstream.testing.marble_diff`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar

from reactivex import Observable
from reactivex.notification import OnCompleted, OnError, OnNext
from reactivex.observable.marbles import parse
from reactivex.testing import TestScheduler
from reactivex.testing.coldobservable import ColdObservable
from reactivex.testing.hotobservable import HotObservable
from reactivex.testing.recorded import Recorded
from reactivex.testing.subscription import Subscription

from ..core.sse import comment_lines, event_lines
from ..errors import ProviderError
from ..models import (
    ChatChunk,
    Delta,
    Finish,
    JSONObject,
    ReasoningDelta,
    RefusalDelta,
    SSEFrame,
    TextDelta,
    Tool,
    ToolCallDelta,
    Usage,
)
from ..runs.run import StepRequest
from ..runs.tools import FunctionTool
from . import builders
from .marble_diff import ExpectedRecords

__all__ = [
    "CREATED",
    "DISPOSED",
    "DONE",
    "KEEPALIVE",
    "SUBSCRIBED",
    "Keepalive",
    "Malformed",
    "MarbleTool",
    "RunAnswers",
    "StreamMarbles",
    "Values",
    "diagram",
    "error",
    "finish",
    "malformed",
    "reasoning",
    "refusal",
    "text",
    "tool",
    "usage",
]

#: Virtual times `StreamMarbles.start` uses (those of `reactivex.testing.ReactiveTest`).
CREATED, SUBSCRIBED, DISPOSED = 100, 200, 1000

#: A marble value map: marble symbol -> item.
Values: TypeAlias = Mapping[str, Any]

T = TypeVar("T")


class _Done:
    """The `data: [DONE]` event (a singleton: `DONE`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DONE"


@dataclass(frozen=True, slots=True)
class Keepalive:
    """An SSE comment (`: keep-alive`) and its blank line; makes no frame."""

    comment: str = "keep-alive"


@dataclass(frozen=True, slots=True)
class Malformed:
    """A data event whose data is not a valid chunk (a cut-off JSON object by default)."""

    data: str = '{"choices": ['


#: The event that ends an OpenAI stream; completion in chunk- and delta-level diagrams.
DONE = _Done()
#: A keep-alive comment (lines level) or nothing at all (frames and below).
KEEPALIVE = Keepalive()


# --------------------------------------------------------------------------- vocabulary


def text(value: str, *, choice: int = 0) -> TextDelta:
    """A piece of visible text: `TextDelta(value)`; on the wire `delta.content`.

    >>> text("Hi")
    TextDelta(text='Hi', choice=0)
    """
    return TextDelta(value, choice)


def reasoning(value: str, *, choice: int = 0) -> ReasoningDelta:
    """A piece of reasoning: `ReasoningDelta(value)`; on the wire `delta.reasoning_content`.

    >>> reasoning("hmm").text
    'hmm'
    """
    return ReasoningDelta(value, choice)


def refusal(value: str, *, choice: int = 0) -> RefusalDelta:
    """A piece of a refusal: `RefusalDelta(value)`; on the wire `delta.refusal`."""
    return RefusalDelta(value, choice)


def tool(
    index: int = 0,
    arguments: str = "",
    *,
    id: str | None = None,
    name: str | None = None,
    choice: int = 0,
) -> ToolCallDelta:
    """A tool-call fragment: `ToolCallDelta`; on the wire one `delta.tool_calls` entry.

    >>> tool(0, '{"q":', id="call_1", name="search")
    ToolCallDelta(index=0, arguments='{"q":', id='call_1', name='search', choice=0)
    """
    return ToolCallDelta(index, arguments, id, name, choice)


def finish(reason: str = "stop", *, choice: int = 0) -> Finish:
    """A choice's end: `Finish(reason)`; on the wire an empty delta with `finish_reason`."""
    return Finish(reason, choice)


def usage(
    prompt_tokens: int,
    completion_tokens: int,
    total_tokens: int | None = None,
    *,
    reasoning_tokens: int | None = None,
    cached_tokens: int | None = None,
    cache_write_tokens: int | None = None,
    estimated: bool = False,
) -> Usage:
    """The provider's usage: `Usage`; on the wire a chunk with `choices: []`.

    >>> usage(3, 2).total_tokens
    5
    """
    total = prompt_tokens + completion_tokens if total_tokens is None else total_tokens
    return Usage(
        prompt_tokens,
        completion_tokens,
        total,
        reasoning_tokens,
        cached_tokens,
        cache_write_tokens=cache_write_tokens,
        estimated=estimated,
    )


def error(message: str, *, type: str | None = None, code: str | int | None = None) -> ProviderError:
    """A provider error: on the wire Groq's `event: error` frame; in a diagram `on_error`.

    In `expected` it matches any `ProviderError` with the same message.

    >>> print(error("overloaded", code=529))
    provider error (code 529): overloaded
    """
    payload = builders.error_chunk(message, type=type, code=code)
    return ProviderError(message, type=type, code=code, payload=payload, event="error")


def malformed(data: str = '{"choices": [') -> Malformed:
    """A data event that is not valid JSON (`decode_chunks` raises `MalformedChunkError`)."""
    return Malformed(data)


# --------------------------------------------------------------------------- rendering


def _dumps(payload: JSONObject) -> str:
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def _chunk_of(value: object) -> JSONObject | None:
    """The OpenAI chunk that carries a vocabulary delta, and nothing else (None: not a delta).

    Without the response's `id` and `model`, which the decoder would report
    as a `Metadata` of their own: a marble value decodes to itself alone.
    """
    chunk = _builder_chunk(value)
    if chunk is not None:
        chunk.pop("id", None)
        chunk.pop("model", None)
    return chunk


def _builder_chunk(value: object) -> JSONObject | None:
    match value:
        case TextDelta(text=piece, choice=choice):
            return builders.text_chunk(piece, choice=choice)
        case ReasoningDelta(text=piece, choice=choice):
            return builders.reasoning_chunk(piece, choice=choice)
        case RefusalDelta(text=piece, choice=choice):
            return builders.refusal_chunk(piece, choice=choice)
        case ToolCallDelta(index=index, arguments=arguments, id=id, name=name, choice=choice):
            fragment = builders.tool_call_fragment(
                0 if index is None else index, id=id, name=name, arguments=arguments
            )
            if index is None:
                del fragment["index"]
            return builders.tool_calls_chunk(fragment, choice=choice)
        case Finish(reason=reason, choice=choice):
            return builders.finish_chunk(reason, choice=choice)
        case Usage():
            return builders.usage_chunk(
                value.prompt_tokens,
                value.completion_tokens,
                value.total_tokens,
                reasoning_tokens=value.reasoning_tokens,
                cached_tokens=value.cached_tokens,
                cache_write_tokens=value.cache_write_tokens,
            )
    return None


def _provider_payload(exc: ProviderError) -> JSONObject:
    if isinstance(exc.payload, dict):
        return exc.payload
    return builders.error_chunk(exc.message, type=exc.type, code=exc.code)


def _frame_of(value: object) -> SSEFrame | None:
    """The frame a value is sent as (None: it makes no frame, e.g. a keep-alive)."""
    if value is DONE:
        return SSEFrame(builders.done())
    if isinstance(value, Keepalive):
        return None
    if isinstance(value, Malformed):
        return SSEFrame(value.data)
    if isinstance(value, ProviderError):
        return SSEFrame(_dumps(_provider_payload(value)), value.event)
    if isinstance(value, ChatChunk):
        return SSEFrame(_dumps(value.raw))
    if isinstance(value, dict):
        return SSEFrame(_dumps(value))
    payload = _chunk_of(value)
    if payload is not None:
        return SSEFrame(_dumps(payload))
    if isinstance(value, SSEFrame):
        return value
    raise TypeError(f"cannot send {value!r} as an SSE event")


def _lines_of(value: object) -> list[str]:
    """The SSE lines a value is sent as: a `str` is one line, anything else an event."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Keepalive):
        return comment_lines(value.comment)
    frame = _frame_of(value)
    assert frame is not None
    return event_lines(frame.data, event=frame.event)


# --------------------------------------------------------------------------- marbles


def _parse(marbles: str, values: Values | None, shift: int) -> list[tuple[int, Any]]:
    """(tick, notification) pairs; values are looked up by symbol, never cast to numbers."""
    _check_groups(marbles)
    lookup: dict[str | float, Any] = dict((values or {}).items())
    # `parse` casts a numeric symbol ("1") to a number before the lookup.
    for symbol in _symbols(marbles):
        number = _number(symbol)
        if number is not None:
            lookup[number] = lookup.get(symbol, symbol)
    parsed = parse(marbles, timespan=1, time_shift=shift, lookup=lookup)
    return [(int(t) if isinstance(t, int | float) else 0, n) for t, n in parsed]


def _check_groups(marbles: str) -> None:
    """Refuse a group item that glues a value to `|` or `#` (the RxJS habit `(b|)`).

    reactivex separates the items of a group with commas and reads `(b|)` as ONE
    value named `b|`: the completion would silently never happen. The error shows
    the spelling that means what was meant.
    """
    for group in re.finditer(r"\(([^)]*)\)", marbles):
        items = [item.strip() for item in group.group(1).split(",")]
        if not any(len(item) > 1 and ("|" in item or "#" in item) for item in items):
            continue
        spelled = []
        for item in items:
            # "b|" -> "b,|"; "b#" -> "b,#"; "|" and "#" stay as they are.
            spelled.append(",".join(p for p in re.split(r"([|#])", item) if p))
        fixed = marbles[: group.start()] + "(" + ",".join(spelled) + ")" + marbles[group.end() :]
        raise ValueError(
            f"marble diagram {marbles!r}: the group {group.group(0)!r} glues a value to '|' or "
            f"'#', which reactivex reads as one value's name; separate the items of a group "
            f"with commas: {fixed!r}"
        )


def _symbols(marbles: str) -> list[str]:
    return re.findall(r"[^-,()#|\s]+", marbles)


def _number(symbol: str) -> float | None:
    for kind in (int, float):
        try:
            return kind(symbol)
        except ValueError:
            pass
    return None


class _ErrorMatcher(OnError[Any]):
    """An expected `on_error` that matches by type (and message, for an instance).

    A subclass of `OnError`, so Python asks it first whichever side of `==` it is
    on (reactivex's own `OnError` equality compares only the message text).
    """

    def __init__(self, expected: BaseException | type[BaseException]) -> None:
        if isinstance(expected, type):
            super().__init__(f"any {expected.__name__}")
        else:
            super().__init__(expected)  # type: ignore[arg-type]
        self.expected = expected

    def matches(self, exc: object) -> bool:
        expected = self.expected
        if isinstance(expected, type):
            return isinstance(exc, expected)
        return isinstance(exc, type(expected)) and str(exc) == str(expected)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _ErrorMatcher):
            return other.expected is self.expected
        return isinstance(other, OnError) and self.matches(other.exception)

    __hash__ = None  # type: ignore[assignment]

    def __str__(self) -> str:
        expected = self.expected
        shown = expected.__name__ if isinstance(expected, type) else repr(expected)
        return f"OnError(like {shown})"


def _error_matcher(expected: BaseException | type[BaseException]) -> _ErrorMatcher:
    return _ErrorMatcher(expected)


def _is_error(value: object) -> bool:
    return isinstance(value, BaseException) or (
        isinstance(value, type) and issubclass(value, BaseException)
    )


class StreamMarbles:
    """Marble sources and expectations for one test, on one `TestScheduler`.

    One character is one tick; `start` subscribes at tick 200 and disposes at
    1000, and `expected` and `subscription` diagrams count from tick 200, so a
    cold source, its expected output and its subscription window line up.

    Args:
        scheduler: the virtual clock (a fresh `TestScheduler` by default).

    Example:
        >>> import rxstream as rs
        >>> m = StreamMarbles()
        >>> V = {"a": text("Hi"), "f": finish(), "D": DONE}
        >>> src = m.lines("-a-f-D", V)
        >>> out = m.start(src.pipe(rs.sse_frames(), rs.decode_chunks(), rs.deltas()))
        >>> out == m.expected("-a-f-|", V)
        True
        >>> src.subscriptions == [m.subscription("^----!")]
        True
    """

    def __init__(self, scheduler: TestScheduler | None = None) -> None:
        self.scheduler = scheduler or TestScheduler()

    # -- sources -------------------------------------------------------------------

    def cold(
        self, marbles: str, values: Values | None = None, *, error: Exception | None = None
    ) -> ColdObservable[Any]:
        """A cold observable of the values as they are (`#` is `error`, or a plain Exception).

        Values that are exceptions are `on_error`, `DONE` is completion. The
        result records its `subscriptions`.
        """
        return self.scheduler.create_cold_observable(self._records(marbles, values, 0, error))

    def hot(
        self, marbles: str, values: Values | None = None, *, error: Exception | None = None
    ) -> HotObservable[Any]:
        """A hot observable: position 0 of `marbles` is tick 200 (the subscription)."""
        return self.scheduler.create_hot_observable(
            self._records(marbles, values, SUBSCRIBED, error)
        )

    def lines(self, marbles: str, values: Values | None = None) -> ColdObservable[str]:
        """A cold source of SSE lines: each value becomes its lines, all at its tick.

        A vocabulary delta becomes `data: <its chunk>` and `""`; `DONE`
        `data: [DONE]`; an `error(...)` an `event: error` frame; `KEEPALIVE` a
        comment; a dict or `ChatChunk` a data event; a `str` one line as it is.
        """
        records: list[Recorded[Any]] = []
        for tick, note in _parse(marbles, values, 0):
            if isinstance(note, OnNext):
                records += [Recorded(tick, OnNext(line)) for line in _lines_of(note.value)]
            else:
                records.append(Recorded(tick, note))
        return self.scheduler.create_cold_observable(records)

    def frames(self, marbles: str, values: Values | None = None) -> ColdObservable[SSEFrame]:
        """A cold source of `SSEFrame`s (what `sse_frames()` makes of `lines`)."""
        records: list[Recorded[Any]] = []
        for tick, note in _parse(marbles, values, 0):
            if isinstance(note, OnNext):
                frame = _frame_of(note.value)
                if frame is not None:
                    records.append(Recorded(tick, OnNext(frame)))
            else:
                records.append(Recorded(tick, note))
        return self.scheduler.create_cold_observable(records)

    def chunks(self, marbles: str, values: Values | None = None) -> ColdObservable[ChatChunk]:
        """A cold source of `ChatChunk`s: deltas become their chunks; `DONE` completes."""

        def convert(value: object) -> object:
            if isinstance(value, dict):
                return ChatChunk(value)
            payload = _chunk_of(value)
            return value if payload is None else ChatChunk(payload)

        return self.scheduler.create_cold_observable(
            self._records(marbles, values, 0, None, convert=convert)
        )

    def deltas(self, marbles: str, values: Values | None = None) -> ColdObservable[Any]:
        """A cold source of deltas (the values as they are; `DONE` completes)."""
        return self.cold(marbles, values)

    # -- runs (rs.run) -------------------------------------------------------------

    def answers(self, *steps: str, values: Values | None = None) -> RunAnswers:
        """A run's answers, one diagram of deltas per request, for `rs.run(m.answers(...), ...)`.

        The first request gets the first diagram (a resumed run's first step
        too), and so on. Each diagram starts when its step does (it is
        cold); the requests the
        run made are kept in `.requests` (`rs.StepRequest`: the messages and
        tools each step sent). A step past the last diagram is an error.
        """
        return RunAnswers(tuple(self.deltas(step, values) for step in steps))

    def tool(
        self,
        name: str,
        marbles: str,
        values: Values | None = None,
        *,
        error: Exception | None = None,
        parameters: JSONObject | None = None,
        needs_approval: bool = False,
        timeout: float | None = None,
    ) -> FunctionTool:
        """A tool whose every call answers as `marbles` says, counted from the call's tick.

        `"---r|"` gives the output `r` three ticks after the call (a slow
        tool), `"--#"` fails (with `error=`, else a `RuntimeError`), `"-"`
        never answers (for `timeout=`, in ticks). Its `fn` is a `MarbleTool`
        (the diagram, and the arguments of each call).
        """
        source = self.cold(marbles, values, error=error or RuntimeError(f"{name} failed"))
        schema = parameters or {"type": "object", "properties": {}}
        return FunctionTool(
            spec=Tool(name, f"The {name} tool of a marble test.", schema),
            fn=MarbleTool(source),
            needs_approval=needs_approval,
            timeout=timeout,
            blocking=False,
        )

    # -- running and expecting -----------------------------------------------------

    def start(
        self,
        create: Observable[T] | Callable[[], Observable[T]],
        *,
        disposed: int = DISPOSED,
    ) -> list[Recorded[T]]:
        """Subscribe at tick 200, run the clock, dispose at `disposed`; return what arrived."""
        factory = create if callable(create) and not isinstance(create, Observable) else None
        observable = create if isinstance(create, Observable) else None

        def make() -> Observable[T]:
            if factory is not None:
                return factory()
            assert observable is not None
            return observable

        observer = self.scheduler.start(
            make, created=CREATED, subscribed=SUBSCRIBED, disposed=disposed
        )
        return observer.messages

    def expected(
        self, marbles: str, values: Values | None = None, *, error: Exception | None = None
    ) -> list[Recorded[Any]]:
        """The records `start` should return, counting from tick 200.

        Exceptions among the values (and `error` for `#`) match by type and
        message, exception classes by type; `DONE` is completion. The list
        remembers `values`, so a failed `assert got == expected` (with the
        rxstream pytest plugin) prints both sides as diagrams in its symbols.
        """
        records = self._records(marbles, values, SUBSCRIBED, error, expect=True)
        return ExpectedRecords(records, values or {})

    def subscription(self, marbles: str) -> Subscription:
        """A subscription window: `^` subscribes, `!` unsubscribes; position 0 is tick 200.

        >>> StreamMarbles().subscription("^--!")
        (200, 203)
        """
        start = marbles.find("^")
        if start < 0:
            raise ValueError(f"a subscription diagram needs a '^', got {marbles!r}")
        end = marbles.find("!")
        return Subscription(SUBSCRIBED + start, SUBSCRIBED + end if end >= 0 else None)

    # -- internals -----------------------------------------------------------------

    def _records(
        self,
        marbles: str,
        values: Values | None,
        shift: int,
        error: Exception | None,
        *,
        expect: bool = False,
        convert: Callable[[object], object] = lambda value: value,
    ) -> list[Recorded[Any]]:
        records: list[Recorded[Any]] = []
        for tick, note in _parse(marbles, values, shift):
            if isinstance(note, OnError):
                # `#` alone: any exception in an expectation, reactivex's default in a source
                # (`error` in either, when given).
                matcher = _error_matcher(Exception if error is None else error)
                source = note if error is None else OnError(error)
                records.append(Recorded(tick, matcher if expect else source))
                continue
            if not isinstance(note, OnNext):
                records.append(Recorded(tick, note))
                continue
            value = note.value
            if value is DONE:
                records.append(Recorded(tick, OnCompleted()))
            elif _is_error(value):
                if expect:
                    records.append(Recorded(tick, _error_matcher(value)))
                elif isinstance(value, Exception):
                    records.append(Recorded(tick, OnError(value)))
                else:
                    raise TypeError(f"a source needs an exception instance, not {value!r}")
            else:
                records.append(Recorded(tick, OnNext(convert(value))))
        return records


class RunAnswers:
    """`StreamMarbles.answers`: a `StepAnswer` for `rs.run` that keeps what it was asked."""

    def __init__(self, steps: tuple[Observable[Any], ...]) -> None:
        self.steps = steps
        self.requests: list[StepRequest] = []

    def __call__(self, request: StepRequest) -> Observable[Delta]:
        self.requests.append(request)
        if len(self.requests) > len(self.steps):
            raise AssertionError(
                f"the run asked for step {request.step}, its request number "
                f"{len(self.requests)}; the test scripted {len(self.steps)}"
            )
        answer: Observable[Delta] = self.steps[len(self.requests) - 1]
        return answer


class MarbleTool:
    """The function of a `StreamMarbles.tool`: its cold diagram for every call.

    Attributes:
        source: the diagram (its `subscriptions` show when each call ran).
        calls: the arguments of each call, in order.
    """

    def __init__(self, source: ColdObservable[Any]) -> None:
        self.source = source
        self.calls: list[JSONObject] = []

    def __call__(self, **arguments: Any) -> Observable[Any]:
        self.calls.append(arguments)
        return self.source


def diagram(records: list[Recorded[Any]], values: Values | None = None) -> str:
    """Render recorded notifications as a marble string (for readable failure messages).

    Values found in `values` print as their symbol, others as their repr in a
    group; ticks count from 200.

    >>> m = StreamMarbles()
    >>> diagram(m.expected("-a-(b,|)", {"a": text("x"), "b": text("y")}),
    ...         {"a": text("x"), "b": text("y")})
    '-a-(b,|)'
    """
    names = {repr(v): k for k, v in (values or {}).items()}
    by_tick: dict[int, list[str]] = {}
    for record in records:
        note = record.value
        if isinstance(note, OnNext):
            symbol = names.get(repr(note.value), repr(note.value))
        elif isinstance(note, OnCompleted):
            symbol = "|"
        else:
            symbol = "#"
        by_tick.setdefault(int(record.time), []).append(symbol)
    out, position = [], SUBSCRIBED
    for tick in sorted(by_tick):
        out.append("-" * max(tick - position, 0))
        symbols = by_tick[tick]
        cell = (
            symbols[0] if len(symbols) == 1 and len(symbols[0]) == 1 else f"({','.join(symbols)})"
        )
        out.append(cell)
        position = max(tick, position) + len(cell)
    return "".join(out)
