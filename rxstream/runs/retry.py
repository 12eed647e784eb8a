"""Retry and fall back: one answer over several requests, seen by the consumer as one stream.

`rs.chat(client, dialect, ..., retry=rs.Retry(...), fallback=[rs.Route(...)])` and, for
any cold observable of deltas (a `rs.from_request` pipeline), `rs.retrying(rs.Retry(...))`.

How a run goes (one subscription):

- Each attempt subscribes to its route's source afresh (a cold source sends its request
  again). Items pass through as they come; nothing is buffered.
- Before any output (a delta the model produced: `Usage` and `Metadata` are not output),
  an error worth retrying (`worth_retrying`) is retried on the same route after a wait
  (`Retry.wait`: what the server asked for, else a jittered exponential backoff, capped);
  when the route's attempts run out, or its error cannot succeed on it, the next route is
  tried at once. The deadline, on the scheduler's clock, bounds when an attempt may
  start. When nothing is left: `RetryError` naming every attempt (an error that cannot
  succeed anywhere, with no route left, is raised as it is).
- After output has started, the `after_output` policy decides (`AFTER_OUTPUT`: one
  strategy object per policy). `"raise"` sends the error on with `error.partial`, the
  `Message` built from what was emitted. `"restart"` emits a `Reset` marker and asks the
  same request again; `"continue"` asks again with the answer so far as the assistant's
  turn (`rs.continuation_messages`) and emits only what is new (`rs.continue_from`). Both
  go on on the same route while its attempts last and its error is worth retrying, then
  on the next route (the partial goes over in that dialect's terms).
- At the end, a `Metadata` item lists the attempts (`Message.metadata["attempts"]`) and,
  when an earlier attempt reported usage or died after output (its usage then
  estimated: `rxstream.runs._estimate`, marked `"estimated": True`), a `Usage` item
  sums every attempt's, provided some attempt reported one (`accumulate_message` keeps
  the last `Usage`, so the final message has the sum).

Waits run on a reactivex scheduler: the one given, else the one the subscription was made
with, else the current thread (sync clients: an event a dispose sets ends the wait) or the
running asyncio loop (async clients). A dispose during a wait cancels it: no request is
sent after it. With `telemetry=`, each attempt is a GenAI client span, a child of the
span current at subscription.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import os
import random as _random
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Protocol, TypeAlias

from reactivex import Observable, abc
from reactivex.disposable import (
    CompositeDisposable,
    Disposable,
    SerialDisposable,
    SingleAssignmentDisposable,
)
from reactivex.scheduler import CurrentThreadScheduler, TrampolineScheduler
from reactivex.scheduler.eventloop import AsyncIOThreadSafeScheduler

from ..core.continuation import continuation_messages
from ..core.lines import DEFAULT_LIMIT
from ..core.message import keep_partial, partial_message
from ..errors import (
    HTTPStatusError,
    ProviderError,
    RetryError,
    StreamError,
    StreamTimeoutError,
    TransportError,
    TruncatedStreamError,
)
from ..io.requests import ENDPOINTS, base_url_for, prepare_chat
from ..io.requests import chat as io_chat
from ..io.sources import AsyncClient, SyncClient
from ..models import (
    Delta,
    JSONObject,
    Message,
    Metadata,
    ReasoningDelta,
    Reset,
    TextDelta,
    Tool,
    Usage,
)
from ..operators.continuation import continue_from
from ..operators.delta_source import DeltaSource, Observing, subscribe_direct
from ._estimate import estimated_usage, usage_of_record, usage_record

__all__ = [
    "AFTER_OUTPUT",
    "AfterOutput",
    "ContinueAfterOutput",
    "Leg",
    "RaiseAfterOutput",
    "RestartAfterOutput",
    "Resume",
    "Retry",
    "Route",
    "chat",
    "retrying",
    "worth_retrying",
]

AfterOutputName: TypeAlias = Literal["raise", "continue", "restart"]

#: HTTP statuses worth retrying (as the official SDKs do; 529 is Anthropic's "overloaded").
RETRY_STATUSES = frozenset({408, 409, 429})

# Words in a provider error's type, code or message that say "overloaded" or "rate-limited".
_BUSY_WORDS = (
    "overload",
    "rate_limit",
    "rate-limit",
    "ratelimit",
    "rate limit",
    "throttl",
    "resource_exhausted",
    "too_many_requests",
    "too many requests",
    "unavailable",
)
_BUSY_CODES = frozenset({429, 503, 529})


def worth_retrying(error: BaseException) -> bool:
    """Whether `error`, before any output, may go away if the same request is sent again.

    Yes: HTTP 408, 409, 429 and 5xx (529 included), unless the server said
    `x-should-retry: false` (and any status it said `true` for); a transport
    failure (not a closed client or a header that cannot be encoded:
    `TransportError.retryable`); a time limit (`StreamTimeoutError`); a stream that ended early or
    empty (`TruncatedStreamError`, `EmptyStreamError`); a `ProviderError` whose
    type, code or message says overloaded or rate-limited (Anthropic's
    `overloaded_error`, OpenAI's `rate_limit_exceeded`, Gemini's
    `RESOURCE_EXHAUSTED` / `UNAVAILABLE`, Bedrock's `throttlingException` /
    `serviceUnavailableException`). No: everything else (400, 401, 403, 404,
    422, a malformed stream, an answer that is no stream: the wrong URL).

    >>> worth_retrying(HTTPStatusError(429)), worth_retrying(HTTPStatusError(400))
    (True, False)
    >>> worth_retrying(ProviderError("Overloaded", type="overloaded_error"))
    True
    """
    if isinstance(error, HTTPStatusError):
        if error.should_retry is not None:
            return error.should_retry
        return error.status_code in RETRY_STATUSES or error.status_code >= 500
    if isinstance(error, TransportError):
        return error.retryable
    if isinstance(error, StreamTimeoutError | TruncatedStreamError):
        return True
    if isinstance(error, ProviderError):
        if error.code in _BUSY_CODES:
            return True
        words = " ".join(str(w) for w in (error.type, error.code, error.message) if w).lower()
        return any(word in words for word in _BUSY_WORDS)
    return False


# --------------------------------------------------------------------------- the policy


@dataclass(frozen=True, slots=True)
class Retry:
    """How `rs.chat` (or `rs.retrying`) retries: attempts, waits, deadline, and what to do
    once output has started.

    Args:
        attempts: attempts per route, the first included (>= 1).
        backoff: the first backoff wait in seconds; it doubles per retry, up to `max_wait`.
        max_wait: the longest backoff wait.
        deadline: seconds from subscribing after which no attempt starts (a wait
            that would end past it is not begun), over every route; None: no deadline.
        after_output: what to do when a stream fails after output started
            (see `AFTER_OUTPUT`): `"raise"` sends the error on, with
            `error.partial`; `"restart"` emits `rs.Reset` and asks again;
            `"continue"` asks again with the answer so far as the assistant's
            turn and emits only what is new. Both count against `attempts`
            and go on with the next route once the route's attempts run out.
        jitter: the share of each wait taken at random, so that many streams
            refused at once do not come back at once: a backoff wait is cut by
            up to this share (`backoff * 2**n * (1 - jitter * r)`), a wait the
            server asked for is lengthened by up to it (never shorter than asked).
        max_retry_after: the longest wait a server may ask for (`Retry-After`,
            `retry-after-ms`, Gemini's `retryDelay`); a longer one gives up the
            route (the next route is tried, or the run ends).
        random: the random source of the jitter, a function giving floats in
            [0, 1) (default `random.random`); inject one to test.
        first: a time limit per attempt to its first item (as `rs.timeouts`), so a
            server that never answers is retried; None: none.
        idle: a time limit per attempt between items (as `rs.timeouts`); None: none.

    Raises:
        ValueError: an argument out of range, or a policy not known.
        TypeError: an argument of the wrong type.

    Example:
        >>> Retry(attempts=4, backoff=1.0, deadline=60).attempts
        4
    """

    attempts: int = 3
    backoff: float = 0.5
    max_wait: float = 8.0
    deadline: float | None = None
    after_output: AfterOutputName = "raise"
    jitter: float = 0.25
    max_retry_after: float = 60.0
    random: Callable[[], float] = field(default=_random.random, compare=False, repr=False)
    first: float | None = None
    idle: float | None = None

    def __post_init__(self) -> None:
        if type(self.attempts) is not int:
            raise TypeError(f"attempts must be an int, got {self.attempts!r}")
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        for name in ("backoff", "max_wait", "max_retry_after"):
            _check_seconds(name, getattr(self, name), zero=True)
        for name in ("deadline", "first", "idle"):
            if getattr(self, name) is not None:
                _check_seconds(name, getattr(self, name), zero=False)
        if not isinstance(self.jitter, int | float) or isinstance(self.jitter, bool):
            raise TypeError(f"jitter must be a number, got {self.jitter!r}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter!r}")
        if not callable(self.random):
            raise TypeError(f"random must be a function giving floats, got {self.random!r}")
        if self.after_output not in AFTER_OUTPUT:
            raise ValueError(
                f"after_output must be one of {', '.join(map(repr, AFTER_OUTPUT))}, "
                f"got {self.after_output!r}"
            )

    def wait(self, retry: int, error: BaseException) -> float | None:
        """Seconds to wait before retry number `retry` (0 for the first) after `error`.

        What the server asked for when it said (`HTTPStatusError.retry_after`),
        lengthened by the jitter; else the backoff. None: the server asked for
        more than `max_retry_after` (the route is given up).

        >>> Retry(jitter=0).wait(2, TransportError("reset"))
        2.0
        """
        asked = error.retry_after if isinstance(error, HTTPStatusError) else None
        if asked is not None:
            if asked > self.max_retry_after:
                return None
            return asked * (1 + self.jitter * self.random())
        base = min(self.max_wait, self.backoff * 2.0**retry)
        return base * (1 - self.jitter * self.random())


def _check_seconds(name: str, value: object, *, zero: bool) -> None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    if math.isnan(value) or value < 0 or (value == 0 and not zero) or math.isinf(value):
        least = "0 or more" if zero else "more than 0"
        raise ValueError(f"{name} must be {least} seconds (and finite), got {value!r}")


# Options that go over to a fallback route: those `rs.request` maps per provider.
PORTABLE_OPTIONS = ("max_tokens", "temperature", "reasoning", "tool_choice", "stop", "output")


class Route:
    """Another way to ask for the same answer: a dialect, a model and its own options.

    A fallback route of `rs.chat(..., fallback=[...])` gets the chat's messages
    and tools (converted to its dialect by `rs.request`) and the chat's
    portable options (`PORTABLE_OPTIONS`: `max_tokens`, `temperature`,
    `reasoning`, `tool_choice`, `stop`, and `output`, asked of every route in
    its own provider's form); its own `options` come on top
    (`api_key=`, `base_url=`, `headers=`, anything `rs.request` takes). The
    chat's own key, base URL, headers and other options stay with the chat's
    route.

    Args:
        dialect: a dialect `rs.request` builds for.
        model: the model.
        **options: as `rs.request` (and the io-level `rs.chat`) take them.

    Raises:
        ValueError: an unknown dialect, an empty model.
        TypeError: a dialect or model that is not a string.

    Example:
        >>> Route("anthropic", "claude-haiku-4-5", max_tokens=1024).dialect
        'anthropic'
    """

    __slots__ = ("dialect", "model", "options")

    dialect: str
    model: str
    options: Mapping[str, Any]

    def __init__(self, dialect: str, model: str, **options: Any) -> None:
        if not isinstance(dialect, str):
            raise TypeError(f"a route's dialect is a str, got {dialect!r}")
        if dialect not in ENDPOINTS:
            raise ValueError(f"unknown dialect {dialect!r}; one of {', '.join(ENDPOINTS)}")
        if not isinstance(model, str):
            raise TypeError(f"a route's model is a str, got {model!r}")
        if not model.strip():
            raise ValueError("a route's model must not be empty")
        for key in ("messages", "model", "dialect"):
            if key in options:
                raise TypeError(f"a route takes no {key}= option (the chat gives the messages)")
        object.__setattr__(self, "dialect", dialect)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "options", MappingProxyType(dict(options)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Route is frozen: cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Route):
            return NotImplemented
        return (self.dialect, self.model, dict(self.options)) == (
            other.dialect,
            other.model,
            dict(other.options),
        )

    def __hash__(self) -> int:
        return hash((self.dialect, self.model, tuple(sorted(self.options))))

    def __repr__(self) -> str:
        # Keys and headers are never shown: a repr ends up in logs.
        shown = "".join(
            f", {k}=" + ("[redacted]" if k in ("api_key", "headers") else repr(v))
            for k, v in self.options.items()
        )
        return f"Route({self.dialect!r}, {self.model!r}{shown})"

    def describe(self) -> JSONObject:
        """The route in an attempt's record: `{"dialect", "model"}`."""
        return {"dialect": self.dialect, "model": self.model}


# --------------------------------------------------------------------------- the seam


@dataclass(frozen=True, slots=True)
class Leg:
    """One route as a run uses it.

    Attributes:
        route: the route (None: a bare source given to `rs.retrying`).
        source: the cold observable of the route's deltas, as asked.
        rebuild: the same route asked with other messages (for a policy that
            asks again with the partial answer), or None where it cannot be.
        messages: the messages the chat asked with (empty for a bare source).
    """

    route: Route | None
    source: Observable[Delta]
    rebuild: Callable[[Sequence[Mapping[str, Any] | Message]], Observable[Delta]] | None = None
    messages: tuple[Mapping[str, Any] | Message, ...] = ()


@dataclass(frozen=True, slots=True)
class Resume:
    """How a run goes on after a failure after output: items to emit, then a source.

    Attributes:
        source: the next attempt's deltas.
        before: items emitted before it (a `Reset` marker, ...).
        carry: whether the consumer's answer carries on through `source` (a
            continuation): what was emitted stays the answer so far, and a
            failure before the new attempt's own output is still after output.
        messages: the messages `source` asks with, when not the leg's own (a
            continuation's): what an estimate of its usage counts.

    The run decides where it goes on (the same leg while its attempts last
    and the error is worth retrying, else the next leg) and how long it waits
    first; a resume counts as an attempt of that leg.
    """

    source: Observable[Delta]
    before: tuple[Any, ...] = ()
    carry: bool = False
    messages: tuple[Mapping[str, Any] | Message, ...] | None = None


class AfterOutput(Protocol):
    """The strategy of one `after_output` policy: what a failure after output leads to."""

    def failed(
        self, error: StreamError, shown: Message, came: Leg, goes: Leg, attempt: int
    ) -> Resume | None:
        """The way on (None: the error goes to the subscriber, `error.partial` set).

        Args:
            error: what ended the attempt.
            shown: the `Message` the consumer was shown (a cut tool call included).
            came: the leg that failed; `goes`: the leg the run goes on with.
            attempt: the number of the attempt about to start (the first is 1).
        """
        ...  # pragma: no cover


class RaiseAfterOutput:
    """`after_output="raise"`: the error goes on, carrying the partial `Message`."""

    def failed(
        self, error: StreamError, shown: Message, came: Leg, goes: Leg, attempt: int
    ) -> Resume | None:
        return None


class RestartAfterOutput:
    """`after_output="restart"`: a `Reset` marker, then the answer asked anew.

    Consumers that honour `Reset` (`accumulate_message`, `accumulate_tool_calls`,
    `count_tokens`, the renderers) drop what they showed; the final `Message`
    is the new answer's alone.
    """

    def failed(
        self, error: StreamError, shown: Message, came: Leg, goes: Leg, attempt: int
    ) -> Resume | None:
        return Resume(goes.source, before=(Reset(attempt, _reason(error)),))


class ContinueAfterOutput:
    """`after_output="continue"`: ask again with the answer so far as the assistant's turn.

    The request is `rs.continuation_messages(goes' dialect, messages, shown)`
    (the provider's prefill where it has one, a continuation instruction
    where not; a tool call cut in its arguments and, for another dialect,
    signed reasoning left out), and its deltas go through
    `rs.continue_from(shown)`: the start that repeats the answer so far is
    trimmed, new tool calls are numbered after the shown ones, and a cut tool
    call the consumer saw is taken back with a `Reset` and a replay of the
    rest. A bare source (`rs.retrying`) cannot be asked with other messages:
    there the error goes on.
    """

    def failed(
        self, error: StreamError, shown: Message, came: Leg, goes: Leg, attempt: int
    ) -> Resume | None:
        if goes.rebuild is None or goes.route is None:
            return None
        source = came.route.dialect if came.route is not None else None
        asked = continuation_messages(goes.route.dialect, goes.messages, shown, source=source)
        trimmed = continue_from(shown, attempt=attempt, reason=_reason(error))
        return Resume(goes.rebuild(asked).pipe(trimmed), carry=True, messages=tuple(asked))


def _reason(error: StreamError) -> str:
    return f"{type(error).__name__}: {error}"


#: The `after_output` policies, by name: one strategy each.
AFTER_OUTPUT: dict[str, AfterOutput] = {
    "raise": RaiseAfterOutput(),
    "restart": RestartAfterOutput(),
    "continue": ContinueAfterOutput(),
}


# --------------------------------------------------------------------------- one run


def _is_output(item: object) -> bool:
    """Whether `item` is something the model produced (what `EmptyStreamError` counts)."""
    if isinstance(item, Usage | Metadata):
        return False
    if isinstance(item, TextDelta | ReasoningDelta):
        return bool(item.text)
    return True


class RetryRun:
    """One subscription of a retried stream: the attempts, their waits, and their records.

    One method per notification (`on_next`, `on_error`, `on_completed`) and per
    timer (`attempt`); `_plan` decides, before any output, where a failure
    leads, and the `after_output` strategy after it. The deltas of the current
    attempt are kept (references only) until it ends, so that a failure can
    hand on the partial `Message`.
    """

    __slots__ = (
        "_asked",
        "_began",
        "_carry",
        "_context",
        "_disposed",
        "_emitted",
        "_leg",
        "_legs",
        "_observer",
        "_output",
        "_policy",
        "_records",
        "_retries",
        "_scheduler",
        "_serial",
        "_start",
        "_wait",
        "_whole",
    )

    def __init__(
        self,
        legs: Sequence[Leg],
        policy: Retry,
        observer: abc.ObserverBase[Delta],
        scheduler: abc.SchedulerBase,
        *,
        traced: bool = False,
    ) -> None:
        self._legs = legs
        self._policy = policy
        self._observer = observer
        # The observer's way to take many deltas in one call (a run of machines), if any.
        self._whole: Callable[[list[Delta]], None] | None = getattr(observer, "on_batch", None)
        self._scheduler = scheduler
        self._serial = SerialDisposable()
        self._disposed = False
        self._leg = 0
        self._retries = 0  # retries made on the current leg
        self._wait = 0.0  # the wait before the current attempt
        self._records: list[JSONObject] = []
        self._emitted: list[Delta] = []
        self._output = False
        self._carry = False  # the next attempt continues the answer so far
        self._asked = legs[0].messages  # the messages of the current attempt
        self._start = 0  # where the current attempt's items begin in `_emitted`
        self._began = scheduler.now
        # The OpenTelemetry context of the subscription: every attempt's span is its
        # child, also for an attempt a timer starts (where it is not current).
        self._context = _current_context() if traced else None

    def start(self) -> abc.DisposableBase:
        """Start the first attempt; the disposable ends the run (and a wait) from any thread."""
        self.attempt(self._legs[0].source)
        return Disposable(self.dispose)

    def dispose(self) -> None:
        self._disposed = True
        self._serial.dispose()

    def attempt(self, source: Observable[Delta]) -> None:
        """Subscribe to the next attempt's source."""
        if self._disposed:
            return
        if self._carry:  # a continuation: the answer so far stays the consumer's
            self._carry = False
        else:
            self._output = False
            self._emitted = []
        self._start = len(self._emitted)
        inner = SingleAssignmentDisposable()
        self._serial.disposable = inner
        with _attached(self._context):
            inner.disposable = subscribe_direct(
                self._timed(source), self, self._scheduler, partial=False
            )

    def _timed(self, source: Observable[Delta]) -> Observable[Delta]:
        policy = self._policy
        if policy.first is None and policy.idle is None:
            return source
        from ..operators.timeouts import timeouts

        # The timers take the subscription's scheduler, unless it is the current
        # thread's (busy reading the very stream they watch): then a timer thread.
        return source.pipe(timeouts(first=policy.first, idle=policy.idle))

    def on_next(self, item: Delta) -> None:
        if not self._output and _is_output(item):
            self._output = True
        self._emitted.append(item)
        self._observer.on_next(item)

    def on_batch(self, items: list[Delta]) -> None:
        """The deltas of one read of the attempt, in one call (`on_next` for each); passed
        on in one call too where the observer takes them so (a run of machine operators).

        Nothing per delta once the output began (the attempt's usage is read from
        its items when it ends, `_usage`): a read brings several deltas, and a
        server's answer thousands.
        """
        if not self._output:
            self._output = any(map(_is_output, items))
        self._emitted += items
        whole = self._whole
        if whole is not None:
            whole(items)
            return
        on_next = self._observer.on_next
        for item in items:
            on_next(item)

    def on_error(self, error: Exception) -> None:
        if not isinstance(error, StreamError):
            self._observer.on_error(error)  # a bug or a caller's mistake: not the stream's
            return
        # What this attempt gave (a run of machines, subscribed with `partial=False`,
        # kept nothing for it: the run keeps the items).
        keep_partial(error, self._emitted[self._start :])
        self._record(error)
        if self._output:
            self._after_output(error)
            return
        self._plan(error)

    def on_completed(self) -> None:
        self._record(None)
        self._observer.on_next(Metadata({"attempts": list(self._records)}))
        earlier = [r["usage"] for r in self._records[:-1] if r["usage"] is not None]
        # Summed when the provider reports usage (an estimate alone is not a usage: it
        # stays in the records).
        usage = self._usage()
        reported = usage is not None or any(not u.get("estimated") for u in earlier)
        if earlier and reported:
            self._observer.on_next(_summed(usage, earlier))
        self._observer.on_completed()

    # ------------------------------------------------------------------ decisions

    def _plan(self, error: StreamError) -> None:
        """Before any output: retry this leg after a wait, go to the next leg, or give up."""
        policy = self._policy
        wait: float | None = None
        reason = "the attempts ran out" + (" on every route" if len(self._legs) > 1 else "")
        if worth_retrying(error) and self._retries + 1 < policy.attempts:
            wait = policy.wait(self._retries, error)
            if wait is None:
                reason = f"the server asked for a wait longer than {policy.max_retry_after:g} s"
        elif not worth_retrying(error) and self._leg + 1 == len(self._legs):
            self._observer.on_error(error)  # it cannot succeed, and no route is left
            return
        if wait is not None:
            self._retries += 1
            self._asked = self._legs[self._leg].messages
            self._later(wait, self._legs[self._leg].source, error)
            return
        if self._leg + 1 < len(self._legs):
            self._leg += 1
            self._retries = 0
            self._asked = self._legs[self._leg].messages
            self._later(0.0, self._legs[self._leg].source, error)
            return
        self._give_up(reason, error)

    def _later(self, wait: float, source: Observable[Delta], error: StreamError) -> None:
        deadline = self._policy.deadline
        if deadline is not None:
            spent = (self._scheduler.now - self._began).total_seconds()
            if spent + wait > deadline:
                self._give_up(
                    f"the deadline of {deadline:g} s leaves no time for a wait of {wait:.3g} s "
                    f"after {spent:.3g} s",
                    error,
                )
                return
        self._wait = wait
        if isinstance(self._scheduler, TrampolineScheduler) and wait > 0:
            self._serial.disposable = self._sleep_then(wait, source)
            return

        def go(_: abc.SchedulerBase, __: Any = None) -> None:
            self.attempt(source)

        self._serial.disposable = self._scheduler.schedule_relative(wait, go)

    def _sleep_then(self, wait: float, source: Observable[Delta]) -> abc.DisposableBase:
        """A wait on the current thread (a sync client's): an event a dispose sets wakes it.

        The trampoline would sleep through a relative wait (and log that it
        does); this one ends early, without the next attempt, when disposed.
        """
        disposed = threading.Event()

        def go(_: abc.SchedulerBase, __: Any = None) -> None:
            if not disposed.wait(wait):
                self.attempt(source)

        return CompositeDisposable(self._scheduler.schedule(go), Disposable(disposed.set))

    def _give_up(self, reason: str, error: StreamError) -> None:
        exc = RetryError(reason, attempts=tuple(self._records), last=error)
        exc.__cause__ = error
        self._observer.on_error(exc)

    def _after_output(self, error: StreamError) -> None:
        # The answer the consumer was shown, over every attempt it saw (a continuation
        # included; a cut call kept with complete=False): what a policy goes on from, and
        # the partial that replaces the one the failed attempt's decoder gave (it knew
        # that attempt only).
        shown = partial_message(self._emitted)
        way = self._way_on(error)
        resume = None
        if way is not None and shown is not None:
            leg, _ = way
            strategy = AFTER_OUTPUT[self._policy.after_output]
            came, goes = self._legs[self._leg], self._legs[leg]
            resume = strategy.failed(error, shown, came, goes, len(self._records) + 1)
        if resume is None or way is None:
            if shown is not None:
                shown.metadata["attempts"] = list(self._records)
                error.partial = shown
            self._observer.on_error(error)
            return
        leg, wait = way
        for item in resume.before:
            self._observer.on_next(item)
        if leg != self._leg:
            self._leg, self._retries = leg, 0
        else:
            self._retries += 1
        self._carry = resume.carry
        self._asked = resume.messages if resume.messages is not None else self._legs[leg].messages
        self._later(wait, resume.source, error)

    def _way_on(self, error: StreamError) -> tuple[int, float] | None:
        """After output: the leg to go on with and the wait first (None: nowhere).

        The same leg while its attempts last and the error is worth retrying
        (after the wait `Retry.wait` gives), else the next leg at once.
        """
        policy = self._policy
        if worth_retrying(error) and self._retries + 1 < policy.attempts:
            wait = policy.wait(self._retries, error)
            if wait is not None:
                return self._leg, wait
        if self._leg + 1 < len(self._legs):
            return self._leg + 1, 0.0
        return None

    def _record(self, error: StreamError | None) -> None:
        leg = self._legs[self._leg]
        self._records.append(
            {
                "route": leg.route.describe() if leg.route is not None else None,
                "error": str(error) if error is not None else None,
                "error_type": type(error).__name__ if error is not None else None,
                "wait": self._wait,
                "usage": self._attempt_usage(error),
            }
        )

    def _usage(self) -> Usage | None:
        """The current attempt's last `Usage` (the provider's last report wins), or None.

        Read from its items when it ends, from the last back (a usage comes at
        the end), rather than looked for in each read.
        """
        emitted = self._emitted
        for i in range(len(emitted) - 1, self._start - 1, -1):
            item = emitted[i]
            if type(item) is Usage:
                return item
        return None

    def _attempt_usage(self, error: StreamError | None) -> JSONObject | None:
        """The attempt's usage record: as reported; estimated when it died after output
        without one (it was billed); None when it reported none otherwise."""
        usage = self._usage()
        if usage is not None:
            return usage_record(usage)
        own = self._emitted[self._start :]
        if error is None or not any(_is_output(item) for item in own):
            return None
        return estimated_usage(own, self._asked)


def _current_context() -> Any:
    from opentelemetry import context

    return context.get_current()


@contextlib.contextmanager
def _attached(saved: Any) -> Iterator[None]:
    """`saved` (an OpenTelemetry context) current inside the block; nothing when None."""
    if saved is None:
        yield
        return
    from opentelemetry import context

    token = context.attach(saved)
    try:
        yield
    finally:
        context.detach(token)


def _summed(last: Usage | None, earlier: list[Any]) -> Usage:
    """The `Usage` of every attempt together (the last attempt's `last`, the others' records).

    Estimated when an earlier attempt's record is an estimate.
    """
    usages = [usage_of_record(record) for record in earlier]
    return sum([*usages, *([last] if last is not None else [])], Usage(0, 0, 0))


# --------------------------------------------------------------------------- the entries


def _resilient(
    legs: Sequence[Leg],
    policy: Retry,
    scheduler: abc.SchedulerBase | None,
    async_: bool,
    *,
    traced: bool = False,
) -> Observable[Delta]:
    return _Resilient(legs, policy, scheduler, async_, traced)


class _Resilient(DeltaSource):
    """The observable of a retried stream: each subscription is one `RetryRun`. A
    `DeltaSource`: the machine operators piped after it (`accumulate_message()`, ...)
    take the run's deltas with a plain call, as if fused with the decoder."""

    def __init__(
        self,
        legs: Sequence[Leg],
        policy: Retry,
        scheduler: abc.SchedulerBase | None,
        async_: bool,
        traced: bool,
    ) -> None:
        super().__init__()
        self._legs = legs
        self._policy = policy
        self._scheduler = scheduler
        self._async = async_
        self._traced = traced

    def _subscribe_core(
        self, observer: abc.ObserverBase[Delta], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        chosen = self._scheduler or scheduler
        if chosen is None:
            chosen = _loop_scheduler() if self._async else CurrentThreadScheduler.singleton()
        run = RetryRun(self._legs, self._policy, observer, chosen, traced=self._traced)
        return run.start()


def _loop_scheduler() -> abc.SchedulerBase:
    """The running loop's scheduler (thread-safe: a dispose may come from any thread)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "rs.chat with an async client and retry= needs a running asyncio event loop: "
            "subscribe inside a coroutine (or pass scheduler=AsyncIOScheduler(loop)), "
            "or use a sync client"
        ) from None
    return AsyncIOThreadSafeScheduler(loop)


def retrying(
    retry: Retry, *, scheduler: abc.SchedulerBase | None = None
) -> Callable[[Observable[Delta]], Observable[Delta]]:
    """Retry a cold observable of deltas (a `rs.from_request` pipeline) as `rs.chat` retries.

    Each attempt subscribes to the source again (a `rs.from_request` source
    sends its request again); before any output, what is worth retrying is
    retried after the wait `retry` says; after output, `retry.after_output`
    decides. Fallback routes need `rs.chat(..., fallback=...)`, which builds
    their requests.

    `-#|` (429), then `-a-b-|`  ->  `-a-b-M-|` (M: the attempts' `Metadata`)

    Args:
        retry: the policy.
        scheduler: where the waits run (default: the subscription's scheduler,
            else the current thread's trampoline).

    Returns:
        An operator over deltas.

    Example:
        >>> rs.from_request(client, request).pipe(  # doctest: +SKIP
        ...     rs.sse_frames(), rs.decode("openai-chat"), rs.retrying(rs.Retry(attempts=4))
        ... )
    """
    if not isinstance(retry, Retry):
        raise TypeError(f"retrying takes an rs.Retry, got {retry!r}")

    def operator(source: Observable[Delta]) -> Observable[Delta]:
        return _resilient([Leg(None, source)], retry, scheduler, async_=False)

    return operator


def chat(
    client: SyncClient | AsyncClient,
    dialect: str,
    *,
    model: str,
    messages: Iterable[Mapping[str, Any] | Message],
    tools: Iterable[Tool | Mapping[str, Any]] | None = None,
    retry: Retry | None = None,
    fallback: Sequence[Route] | None = None,
    telemetry: bool | Mapping[str, Any] = False,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
    **options: Any,
) -> Observable[Delta]:
    """Send a provider's streaming chat request and decode the answer into deltas; with
    `retry=` or `fallback=`, over as many requests as it takes, as one stream.

    Without `retry=` and `fallback=` this is the io-level `rxstream.io.requests.chat`
    itself (the same observable, nothing added). With them, every route's request is
    built at once (a missing key raises here), and each subscription runs the
    attempts (see `rxstream.runs.retry`): silent retries before output, then the
    next route; after output, `retry.after_output`. The final `Message` of
    `accumulate_message()` lists the attempts in `metadata["attempts"]` (route,
    error, wait, usage) and its usage sums every attempt's (an attempt cut after
    output without a usage of its own is estimated, and marked `"estimated": True`).

    Args:
        client: an `httpx.Client` or `httpx.AsyncClient` (as `rs.from_request`).
        dialect: the wire format, as `rs.request`.
        model: as `rs.request`.
        messages: as `rs.request`.
        tools: as `rs.request` (also sent on each fallback route).
        retry: the retry policy (`rs.Retry`); `fallback=` alone means `rs.Retry()`.
        fallback: routes tried in order once this one gives up (`rs.Route`).
        telemetry: True (or a dict of `rs.telemetry`'s options: `tracer_provider=`,
            `meter_provider=`, `capture_content=`) records one OpenTelemetry
            GenAI client span per attempt (`rs.telemetry` with the route's
            provider, model and server), each a child of the span current when
            the stream was subscribed: pipe `rs.telemetry()` after it for one
            parent span over the attempts.
        scheduler: as `rs.from_request`; the waits run on it too (default: the
            current thread for a sync client, the running loop for an async one).
        line_limit: as `rs.from_request`.
        **options: as `rs.request`; anything else is passed on to the
            io-level `chat` of this route unchanged, for each attempt;
            `limiter=` (an `rs.Limiter`) admits every attempt on every route.

    Returns:
        A cold observable of the deltas.

    Raises:
        ValueError: as `rs.request`, for any route; a fallback that is not a list of routes.
        TypeError: a `retry` that is not an `rs.Retry`; a `telemetry` that is
            neither a bool nor a dict of `rs.telemetry`'s options.
        ImportError: `telemetry=` without opentelemetry-api (the `otel` extra).

    Errors (via `on_error`):
        RetryError: the attempts (or the deadline) ran out before any output.
        StreamError: an error that cannot succeed, with no route left, as it came;
            after output (policy `"raise"`), the error with `.partial`.

    Example:
        >>> with httpx.Client() as client:  # doctest: +SKIP
        ...     rs.chat(client, "anthropic", model="claude-haiku-4-5", messages=messages,
        ...             retry=rs.Retry(attempts=3, deadline=60),
        ...             fallback=[rs.Route("openai-chat", "gpt-4o-mini")]).pipe(
        ...         rs.accumulate_message()).run()
    """
    common: dict[str, Any] = {"scheduler": scheduler, "line_limit": line_limit}
    if "limiter" in options:  # one budget for every route (a route's own limiter wins)
        common["limiter"] = options.pop("limiter")
    traced = _telemetry_options(telemetry)
    if retry is None and not fallback and traced is None:
        return io_chat(
            client, dialect, model=model, messages=messages, tools=tools, **common, **options
        )
    if retry is not None and not isinstance(retry, Retry):
        raise TypeError(f"retry must be an rs.Retry, got {retry!r}")
    routes = _routes(fallback)
    messages = list(messages)
    tools = list(tools) if tools is not None else None
    portable = {k: v for k, v in options.items() if k in PORTABLE_OPTIONS}

    def leg(route: Route, own: Mapping[str, Any], *, first: bool) -> Leg:
        watch = _attempt_telemetry(route, own, traced)

        def rebuild(asked: Sequence[Mapping[str, Any] | Message]) -> Observable[Delta]:
            source = io_chat(
                client, route.dialect, model=route.model, messages=asked, tools=tools,
                **{**common, **own},
            )  # fmt: skip
            return source if watch is None else source.pipe(watch)

        if first:
            return Leg(route, rebuild(messages), rebuild, tuple(messages))
        # A fallback: checked now, its request made when it is first asked.
        later = prepare_chat(
            client, route.dialect, model=route.model, messages=messages, tools=tools,
            **{**common, **own},
        )  # fmt: skip
        source = _Later(later if watch is None else lambda: later().pipe(watch))
        return Leg(route, source, rebuild, tuple(messages))

    legs = [leg(Route(dialect, model, **options), options, first=True)]
    legs += [leg(r, {**portable, **r.options}, first=False) for r in routes]
    async_ = inspect.iscoroutinefunction(getattr(client, "send", None))
    if retry is None and not fallback:
        return legs[0].source  # one request, one span: nothing to retry
    return _resilient(legs, retry or Retry(), scheduler, async_, traced=traced is not None)


class _Later(Observable[Delta]):
    """A fallback route's source, made when first subscribed (`prepare_chat`): a route
    that is never asked costs only its checks. Subscribed directly where its source is."""

    def __init__(self, make: Callable[[], Observable[Delta]]) -> None:
        super().__init__()
        self._make = make
        self._made: Observable[Delta] | None = None

    def _source(self) -> Observable[Delta]:
        if self._made is None:
            self._made = self._make()
        return self._made

    def _subscribe_core(
        self, observer: abc.ObserverBase[Delta], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return self._source().subscribe(observer, scheduler=scheduler)

    def subscribe_observer(
        self, observer: Observing, scheduler: abc.SchedulerBase | None = None, *, partial: bool
    ) -> abc.DisposableBase:
        """The source's own direct subscription (see `subscribe_direct`)."""
        return subscribe_direct(self._source(), observer, scheduler, partial=partial)


def _telemetry_options(telemetry: object) -> dict[str, Any] | None:
    """`telemetry=` read: None (off), or the options for `rs.telemetry`."""
    if telemetry is True:
        return {}
    if telemetry is False or telemetry is None:
        return None
    if isinstance(telemetry, Mapping):
        return dict(telemetry)
    raise TypeError(
        f"telemetry must be True, False or a dict of rs.telemetry's options, got {telemetry!r}"
    )


def _attempt_telemetry(
    route: Route, own: Mapping[str, Any], traced: dict[str, Any] | None
) -> Callable[[Observable[Delta]], Observable[Delta]] | None:
    """The `rs.telemetry` of one route's attempts (None: telemetry is off)."""
    if traced is None:
        return None
    from ..operators.telemetry import telemetry

    server = base_url_for(route.dialect, own.get("base_url"), os.environ)
    return telemetry(
        provider=route.dialect, request_model=route.model, server_address=server, **traced
    )


def _routes(fallback: Sequence[Route] | None) -> list[Route]:
    if fallback is None:
        return []
    if isinstance(fallback, Route | str) or not isinstance(fallback, Iterable):
        raise ValueError(f"fallback must be a list of rs.Route, got {fallback!r}")
    routes = list(fallback)
    for route in routes:
        if not isinstance(route, Route):
            raise ValueError(f"fallback must be a list of rs.Route, got an item {route!r}")
    return routes
