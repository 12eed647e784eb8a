"""`rs.Limiter`: rate limits and concurrency shared by many requests in one process.

One limiter stands for one provider budget: every request that passes it
(`rs.chat(..., limiter=)`, `rs.from_request(..., limiter=)`, `rs.chats`) waits
its turn, from any thread or event loop. The rules:

- **Budgets over a sliding minute.** At most `requests_per_minute` requests
  and `tokens_per_minute` tokens were admitted in any 60 seconds, and at most
  `concurrency` streams run at once. A request's tokens are estimated when it
  is queued (`rxstream.io.limits.ask_for`: the prompt's tokens plus its
  `max_tokens`) and corrected by the answer's `Usage` when it ends.
- **What the provider says.** The answer's rate-limit headers
  (`rxstream.core.rate_limits`) hold its route: no request for it is
  admitted while the provider says none is left (`remaining-requests: 0`,
  or fewer tokens left than the request asks), until the reset the provider
  gave; a 429 holds the route until its `Retry-After` (else the resets,
  else `HOLD_AFTER_429` seconds).
- **First come, first served.** Requests are admitted in the order they
  were queued: one that waits for the shared budget makes the later ones
  wait too, so a large request is never starved by small ones. Only a
  route on hold steps aside: its requests (in their order) wait for its
  reset while those of other routes go on.
- **Cancellable.** A subscriber that disposes while queued leaves the queue
  at once; one that disposes while running gives its slot back.
- **Nothing spins.** While all wait, the limiter holds one timer on its
  scheduler, due when the first waiter could pass (a slot freed by a
  release needs none). Waits run on that scheduler, so tests drive them in
  virtual time (`reactivex.testing.TestScheduler`).
"""

from __future__ import annotations

import heapq
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

from reactivex import abc
from reactivex.disposable import SerialDisposable
from reactivex.scheduler import TimeoutScheduler, VirtualTimeScheduler

from ..core.rate_limits import rate_limits
from ..errors import LimiterError
from ..io.limits import Ask, Ticket
from ..models import Usage

__all__ = ["HOLD_AFTER_429", "WINDOW", "Limiter"]

#: The window of the per-minute budgets, in seconds.
WINDOW = 60.0

#: How long a 429 that names no wait holds its route, in seconds.
HOLD_AFTER_429 = 1.0


def _positive(name: str, value: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value!r}")
    return value


class _Waiter:
    __slots__ = ("admitted", "ask", "cancelled", "failed", "seq")

    def __init__(
        self,
        ask: Ask,
        admitted: Callable[[Ticket], None],
        failed: Callable[[Exception], None],
        seq: int,
    ) -> None:
        self.ask = ask
        self.admitted = admitted
        self.failed = failed
        self.seq = seq
        self.cancelled = False


class _Spent:
    """One admission in the token window: when, and how many tokens (corrected by usage)."""

    __slots__ = ("at", "live", "tokens")

    def __init__(self, at: float, tokens: int) -> None:
        self.at = at
        self.tokens = tokens
        self.live = True


class _Route:
    """What the provider said of one route: a hold, and what is left until its resets."""

    __slots__ = ("held_until", "requests_left", "requests_reset", "tokens_left", "tokens_reset")

    def __init__(self) -> None:
        self.held_until = -math.inf
        self.requests_left: int | None = None
        self.requests_reset = -math.inf
        self.tokens_left: int | None = None
        self.tokens_reset = -math.inf

    def wait(self, now: float, tokens: int) -> float:
        """Seconds until a request of `tokens` may go on this route (<= 0: now)."""
        wait = self.held_until - now
        if self.requests_left is not None and self.requests_left <= 0 and now < self.requests_reset:
            wait = max(wait, self.requests_reset - now)
        if self.tokens_left is not None and tokens > self.tokens_left and now < self.tokens_reset:
            wait = max(wait, self.tokens_reset - now)
        return wait

    def spend(self, tokens: int) -> None:
        if self.requests_left is not None:
            self.requests_left -= 1
        if self.tokens_left is not None:
            self.tokens_left -= tokens

    def learn(self, status: int, headers: Mapping[str, str], now: float) -> None:
        limits = rate_limits(headers, now)
        if limits.remaining_requests is not None:
            self.requests_left = limits.remaining_requests
            self.requests_reset = now + (limits.requests_reset or WINDOW)
        if limits.remaining_tokens is not None:
            self.tokens_left = limits.remaining_tokens
            self.tokens_reset = now + (limits.tokens_reset or WINDOW)
        if status == 429:
            hold = limits.retry_after
            if hold is None:
                resets = [r for r in (limits.requests_reset, limits.tokens_reset) if r is not None]
                hold = max(resets) if resets else HOLD_AFTER_429
            self.held_until = max(self.held_until, now + hold)


H = TypeVar("H")  # what a ticket holds: a budget entry, a lease id
H_contra = TypeVar("H_contra", contravariant=True)


class _Settles(Protocol[H_contra]):
    """What a ticket reports to the limiter that admitted it."""

    def _answered(self, route: str, status: int, headers: Mapping[str, str]) -> None: ...

    def _release(self, hold: H_contra, usage: Usage | None) -> None: ...


class LimiterTicket(Generic[H]):
    """An admitted request's hold on a limiter (`rxstream.io.limits.Ticket`): what it
    reports (the answer's status and headers) goes to the limiter, and the hold (a
    `Limiter`'s budget entry, a `RedisLimiter`'s lease id) is given back once."""

    __slots__ = ("_limiter", "_released", "hold", "route")

    def __init__(self, limiter: _Settles[H], route: str, hold: H) -> None:
        self._limiter = limiter
        self.route = route
        self.hold = hold
        self._released = False

    def answered(self, status: int, headers: Mapping[str, str]) -> None:
        self._limiter._answered(self.route, status, headers)

    def release(self, usage: Usage | None) -> None:
        if self._released:
            return
        self._released = True
        self._limiter._release(self.hold, usage)


_Ready = list[tuple[_Waiter, Ticket]]


class Limiter:
    """Rate limits and concurrency shared by many requests (threads and asyncio alike).

    Pass one limiter to every request that spends the same provider budget:
    `rs.chat(client, dialect, ..., limiter=limiter)`, `rs.from_request(client,
    request, limiter=limiter)`, `rs.chats(client, requests, limiter=limiter)`.
    See the module docstring for the rules (sliding minute, the provider's
    headers, first come first served, cancellation).

    Args:
        requests_per_minute: at most this many requests admitted in any 60 s
            (None: no bound).
        tokens_per_minute: at most this many tokens (estimated, then
            corrected by each answer's `Usage`) in any 60 s (None: no bound).
        concurrency: at most this many streams running at once (None: no bound).
        scheduler: where the waits' timers run (default: reactivex's
            `TimeoutScheduler`; a `TestScheduler` for virtual time). The
            limiter goes by its clock: a virtual scheduler's own time, the
            wall clock for every other (reactivex's real-time schedulers all
            tell it). Never the current-thread trampoline of a thread that
            blocks for admission.

    Raises:
        TypeError, ValueError: a bound that is not a positive int.

    Errors (via `on_error` of the request's stream):
        LimiterError: a request estimated at more tokens than
            `tokens_per_minute` (it could never pass).

    Example:
        >>> limiter = rs.Limiter(requests_per_minute=500, concurrency=8)  # doctest: +SKIP
        >>> rs.chat(client, "openai-chat", model="gpt-4o-mini", messages=msgs,
        ...         limiter=limiter).subscribe(print)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        concurrency: int | None = None,
        scheduler: abc.SchedulerBase | None = None,
    ) -> None:
        self.requests_per_minute = _positive("requests_per_minute", requests_per_minute)
        self.tokens_per_minute = _positive("tokens_per_minute", tokens_per_minute)
        self.concurrency = _positive("concurrency", concurrency)
        self._scheduler = scheduler or TimeoutScheduler.singleton()
        # reactivex's real-time schedulers all tell the wall clock; a virtual one its own.
        self._clock: Callable[[], float] = (
            self._virtual_now if isinstance(self._scheduler, VirtualTimeScheduler) else time.time
        )
        self._lock = threading.Lock()
        self._queue: deque[_Waiter] = deque()
        self._parked: dict[str, deque[_Waiter]] = {}
        self._routes: dict[str, _Route] = {}
        self._admitted: deque[float] = deque()
        self._spent: deque[_Spent] = deque()
        self._tokens = 0
        self._running = 0
        self._seq = 0
        self._timer = SerialDisposable()
        self._timer_due = math.inf

    def __repr__(self) -> str:
        bounds = ", ".join(
            f"{name}={value}"
            for name, value in (
                ("requests_per_minute", self.requests_per_minute),
                ("tokens_per_minute", self.tokens_per_minute),
                ("concurrency", self.concurrency),
            )
            if value is not None
        )
        return f"Limiter({bounds})"

    @property
    def running(self) -> int:
        """How many admitted requests have not been released yet."""
        return self._running

    @property
    def waiting(self) -> int:
        """How many requests are queued (withdrawn ones may count until they reach the head)."""
        return len(self._queue) + sum(len(q) for q in self._parked.values())

    @property
    def tokens_spent(self) -> int:
        """The tokens admitted in the last minute (corrected by the usage reported so far)."""
        with self._lock:
            self._expire(self._now())
            return self._tokens

    # ------------------------------------------------------------------ the protocol

    def admit(
        self,
        ask: Ask,
        admitted: Callable[[Ticket], None],
        failed: Callable[[Exception], None],
    ) -> Callable[[], None]:
        """Queue `ask`; `admitted(ticket)` when the budget allows (`rxstream.io.limits.Admission`).

        Returns the withdrawal: called while the ask still waits, it leaves the
        queue and `admitted` is never called.
        """
        refusal = never_admitted(repr(self), self.tokens_per_minute, ask)
        if refusal is not None:
            failed(refusal)
            return _nothing
        with self._lock:
            self._seq += 1
            waiter = _Waiter(ask, admitted, failed, self._seq)
            parked = self._parked.get(ask.route)
            (parked if parked is not None else self._queue).append(waiter)
            ready = self._pump(self._now())
        _hand_out(ready)

        def withdraw() -> None:
            with self._lock:
                if waiter.cancelled:
                    return
                waiter.cancelled = True
                ready = self._pump(self._now())
            _hand_out(ready)

        return withdraw

    # ------------------------------------------------------------------ the rules

    def _now(self) -> float:
        return self._clock()

    def _virtual_now(self) -> float:
        return self._scheduler.now.timestamp()

    def _expire(self, now: float) -> None:
        horizon = now - WINDOW
        admitted = self._admitted
        while admitted and admitted[0] <= horizon:
            admitted.popleft()
        spent = self._spent
        while spent and spent[0].at <= horizon:
            gone = spent.popleft()
            gone.live = False
            self._tokens -= gone.tokens

    def _wait(self, now: float, tokens: int) -> float:
        """Seconds until the shared budget takes `tokens` more (inf: until a release)."""
        if self.concurrency is not None and self._running >= self.concurrency:
            return math.inf
        wait = 0.0
        rpm = self.requests_per_minute
        if rpm is not None and len(self._admitted) >= rpm:
            wait = self._admitted[len(self._admitted) - rpm] + WINDOW - now
        tpm = self.tokens_per_minute
        if tpm is not None and self._tokens + tokens > tpm:
            left = self._tokens
            for spent in self._spent:
                left -= spent.tokens
                if left + tokens <= tpm:
                    wait = max(wait, spent.at + WINDOW - now)
                    break
        return wait

    def _pump(self, now: float) -> _Ready:
        """Admit from the head of the queue what the budget allows; set the timer for the rest.

        Called with the lock held; returns the waiters to tell (outside the lock).
        """
        self._expire(now)
        if self._parked:
            self._unpark(now)
        ready: _Ready = []
        wake = math.inf
        queue = self._queue
        while queue:
            waiter = queue[0]
            if waiter.cancelled:
                queue.popleft()
                continue
            ask = waiter.ask
            route = self._routes.get(ask.route)
            held = route.wait(now, ask.tokens) if route is not None else 0.0
            if held > 0:
                # The route's hold puts its requests aside (in order); the others go on.
                self._parked.setdefault(ask.route, deque()).append(queue.popleft())
                wake = min(wake, now + held)
                continue
            wait = self._wait(now, ask.tokens)
            if wait > 0:
                wake = min(wake, now + wait)
                break
            queue.popleft()
            ready.append((waiter, self._take(ask, route, now)))
        for name in self._parked:
            wake = min(wake, now + max(0.0, self._held(name, now)))
        self._arm(now, wake)
        return ready

    def _take(self, ask: Ask, route: _Route | None, now: float) -> Ticket:
        self._running += 1
        if self.requests_per_minute is not None:
            self._admitted.append(now)
        spent = None
        if self.tokens_per_minute is not None:
            spent = _Spent(now, ask.tokens)
            self._spent.append(spent)
            self._tokens += ask.tokens
        if route is not None:
            route.spend(ask.tokens)
        return LimiterTicket(self, ask.route, spent)

    def _unpark(self, now: float) -> None:
        """Put back in the queue, in arrival order, the requests of routes whose hold ended."""
        for name in [n for n in self._parked if self._held(n, now) <= 0]:
            back = self._parked.pop(name)
            self._queue = deque(heapq.merge(self._queue, back, key=_seq))

    def _held(self, name: str, now: float) -> float:
        """Seconds until the first request put aside for route `name` may go."""
        return self._routes[name].wait(now, self._parked[name][0].ask.tokens)

    def _arm(self, now: float, wake: float) -> None:
        """One timer, due at `wake` (none when only a release can help)."""
        if wake == math.inf or wake >= self._timer_due:
            return
        self._timer_due = wake
        self._timer.disposable = self._scheduler.schedule_relative(
            max(0.0, wake - now), self._on_timer
        )

    def _on_timer(self, _: abc.SchedulerBase, __: Any = None) -> None:
        with self._lock:
            self._timer_due = math.inf
            ready = self._pump(self._now())
        _hand_out(ready)

    def _answered(self, route: str, status: int, headers: Mapping[str, str]) -> None:
        with self._lock:
            now = self._now()
            self._routes.setdefault(route, _Route()).learn(status, headers, now)
            ready = self._pump(now)
        _hand_out(ready)

    def _release(self, spent: _Spent | None, usage: Usage | None) -> None:
        with self._lock:
            self._running -= 1
            if usage is not None and spent is not None:
                actual = usage.prompt_tokens + usage.completion_tokens
                if spent.live:
                    self._tokens += actual - spent.tokens
                spent.tokens = actual
            ready = self._pump(self._now())
        _hand_out(ready)


def never_admitted(limiter: str, tokens_per_minute: int | None, ask: Ask) -> LimiterError | None:
    """The error for an ask estimated above the whole minute's token budget, else None."""
    if tokens_per_minute is None or ask.tokens <= tokens_per_minute:
        return None
    return LimiterError(
        limiter,
        f"a request to {ask.route!r} is estimated at {ask.tokens} tokens, more than "
        f"tokens_per_minute={tokens_per_minute}: it could never be admitted",
    )


def _seq(waiter: _Waiter) -> int:
    return waiter.seq


def _nothing() -> None:
    return None


def _hand_out(ready: _Ready) -> None:
    """Tell each admitted waiter; one whose callback raises does not leave the others untold."""
    failure: Exception | None = None
    for waiter, ticket in ready:
        try:
            waiter.admitted(ticket)
        except Exception as exc:
            ticket.release(None)
            failure = failure or exc
    if failure is not None:
        raise failure
