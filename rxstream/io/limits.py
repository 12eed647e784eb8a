"""What a source asks of a rate limiter, and the gate that waits for its answer.

`rs.chat(..., limiter=)` and `rs.from_request(..., limiter=)` take any object
with the `Admission` protocol (`rs.Limiter` in process, `rs.RedisLimiter`
across processes, both in `rxstream.runs`): the I/O layer cannot import the
layer above it, so the small protocol it calls is written here.

One request's life under a limiter:

1. `admit(ask, admitted, failed)`: the request's `Ask` (its route and its
   estimated tokens) joins the limiter's queue. The limiter calls
   `admitted(ticket)` once the budget allows (at once, or later from any
   thread: a timer, another request's release), or `failed(error)` when it
   never can; the returned function withdraws the ask while it still waits
   (a subscriber that disposes).
2. The request is sent; the answer's status and headers go to
   `ticket.answered(status, headers)` (a 429 holds the route, the
   rate-limit headers adapt the budget).
3. When the stream ends (completes, fails or is disposed),
   `ticket.release(usage)` gives back the concurrency slot and corrects the
   token estimate with the answer's `Usage` (None: the estimate stands).

`limited(...)` is that life as an observable: it subscribes the request's
pipeline once admitted, on the right thread (see its docstring), and releases
exactly once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit

from reactivex import Observable, abc
from reactivex.disposable import Disposable, SerialDisposable
from reactivex.scheduler import CurrentThreadScheduler

from ..models import JSON, TextDelta, Usage
from ._args import loop_for
from ._loops import _running_loop

__all__ = ["Admission", "Ask", "Ticket", "ask_for", "estimate_tokens", "limited"]

T = TypeVar("T")

#: The body keys that bound an answer's length, in every dialect's request.
_MAX_KEYS = (
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "maxOutputTokens",
    "maxTokens",
    "num_predict",
)


@dataclass(frozen=True, slots=True)
class Ask:
    """One request as a limiter sees it.

    Attributes:
        route: where it goes (`"host/path model"`): a 429 and a provider's
            rate-limit headers hold this route's requests only.
        tokens: its estimated tokens (the prompt's, plus the answer's bound).
    """

    route: str
    tokens: int


class Ticket(Protocol):
    """An admitted request's hold on the budget, given back once."""

    def answered(self, status: int, headers: Mapping[str, str]) -> None:
        """The answer's status and headers arrived (before its body)."""

    def release(self, usage: Usage | None) -> None:
        """The stream ended: free its slot; `usage` corrects the token estimate."""


class Admission(Protocol):
    """What the I/O layer calls of a limiter (`rs.Limiter`, `rs.RedisLimiter`)."""

    def admit(
        self,
        ask: Ask,
        admitted: Callable[[Ticket], None],
        failed: Callable[[Exception], None],
    ) -> Callable[[], None]:
        """Queue `ask`; call `admitted` (or `failed`) once; return the withdrawal."""


def _strings(value: JSON) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key != "model":
                yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _bound(value: JSON) -> int:
    """The answer's bound (`max_tokens` and its spellings) anywhere in the body, or 0."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in _MAX_KEYS and isinstance(item, int) and not isinstance(item, bool):
                return item
            found = _bound(item)
            if found:
                return found
    return 0


def estimate_tokens(text: str) -> int:
    """`text`'s tokens with the project's counter (o200k_base), or chars / 4 without it.

    Without the `tokens` extra (tiktoken) the estimate is a quarter of the
    characters, rounded up: the answer's `Usage` corrects it either way.
    """
    if not text:
        return 0
    from ..core.tokens import TokenCounter

    try:
        counter = TokenCounter()
    except ImportError:
        return -(-len(text) // 4)
    counter.feed(TextDelta(text))
    return counter.close()[0].text


def ask_for(url: Any, body: bytes | str | JSON | None) -> Ask:
    """The `Ask` of a request to `url` with `body` (its bytes, or its JSON).

    The route is the URL's host and path (Gemini and Bedrock name the model
    there; never its userinfo or query, which may hold a key) and the body's
    `model`; the tokens are those of every string in the body but the model
    (the messages, the system prompt, the tools' descriptions), plus its
    `max_tokens` (or the dialect's spelling of it).
    A body that is not JSON counts as text, with no bound.
    """
    parts = urlsplit(str(url))
    host = parts.netloc.rpartition("@")[2]  # never the userinfo: a route is shown in errors
    payload: JSON = body if not isinstance(body, bytes | str) else None
    if isinstance(body, bytes | str):
        try:
            payload = json.loads(body)
        except ValueError:
            text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
            return Ask(route=f"{host}{parts.path}", tokens=estimate_tokens(text))
    model = payload.get("model") if isinstance(payload, dict) else None
    route = f"{host}{parts.path}" + (f" {model}" if isinstance(model, str) else "")
    prompt = estimate_tokens("\n".join(_strings(payload)))
    return Ask(route=route, tokens=prompt + _bound(payload))


def limited(
    make: Callable[[Ticket], Observable[T]],
    limiter: Admission,
    ask: Ask,
    *,
    asynchronous: bool,
    scheduler: abc.SchedulerBase | None,
) -> Observable[T]:
    """`make(ticket)`'s observable, subscribed once `limiter` admits `ask`.

    Where the pipeline starts once admitted:

    - an async source: on its event loop (an `AsyncIOScheduler`'s, else the
      loop running at subscription), whatever thread the admission came on;
    - a sync source with a scheduler: there (the source schedules its reads);
    - a sync source on the default current-thread scheduler: `subscribe`
      blocks its thread until admitted (a wait on an event, not a poll),
      then runs the stream as it would without a limiter. So several sync
      streams merged on one thread (`ops.merge` of them on the current
      thread) must not wait for one another's slots: the stream holding a
      slot would be queued behind the one that waits. Give them a
      `ThreadPoolScheduler`, or run them one after another.

    The ticket is released once, before the stream's end is passed on (so a
    request that follows sees the freed slot), with the last `Usage` that
    went through, or when the subscriber disposes; disposing while queued
    withdraws the ask.
    """

    def subscribe(
        observer: abc.ObserverBase[T], scheduler_: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        gate = _Gate(make, observer, scheduler or scheduler_, asynchronous=asynchronous)
        return gate.start(limiter, ask)

    return Observable(subscribe)


class _Gate:
    """One subscription of `limited`: waits for the ticket, runs, releases once."""

    def __init__(
        self,
        make: Callable[[Ticket], Observable[Any]],
        observer: abc.ObserverBase[Any],
        scheduler: abc.SchedulerBase | None,
        *,
        asynchronous: bool,
    ) -> None:
        self._make = make
        self._observer = observer
        self._scheduler = scheduler
        self._lock = threading.Lock()
        self._inner = SerialDisposable()
        self._ticket: Ticket | None = None
        self._usage: Usage | None = None
        self._disposed = False
        self._released = False
        self._cancel: Callable[[], None] | None = None
        self._loop = loop_for(scheduler) if asynchronous else None
        # A sync stream on the current thread waits there (see `limited`).
        blocking = not asynchronous and (
            scheduler is None or isinstance(scheduler, CurrentThreadScheduler)
        )
        self._event = threading.Event() if blocking else None
        self._error: Exception | None = None

    def start(self, limiter: Admission, ask: Ask) -> abc.DisposableBase:
        self._cancel = limiter.admit(ask, self._admitted, self._failed)
        if self._event is not None:
            self._event.wait()
            if self._error is not None:
                self._observer.on_error(self._error)
            else:
                self._run()
        return Disposable(self.dispose)

    def _hop(self, action: Callable[[], None]) -> None:
        """Run `action` where the stream runs (see `limited`)."""
        if self._event is not None:
            self._event.set()
        elif self._loop is not None and _running_loop() is not self._loop:
            self._loop.call_soon_threadsafe(action)
        else:
            action()

    def _admitted(self, ticket: Ticket) -> None:
        with self._lock:
            late = self._disposed
            self._ticket = ticket
        if late:
            self._release()
            return
        try:
            self._hop(self._run)
        except RuntimeError:  # the stream's event loop is closed: nobody will run it
            self._release()

    def _failed(self, error: Exception) -> None:
        self._error = error
        self._hop(lambda: None if self._disposed else self._observer.on_error(error))

    def _run(self) -> None:
        ticket = self._ticket
        if self._disposed or ticket is None:
            self._release()
            return
        try:
            source = self._make(ticket)
        except Exception as exc:
            self._release()
            self._observer.on_error(exc)
            return
        self._inner.disposable = source.subscribe(
            self._next, self._end_error, self._end, scheduler=self._scheduler
        )

    def _next(self, item: Any) -> None:
        if isinstance(item, Usage):
            self._usage = item
        self._observer.on_next(item)

    def _end_error(self, error: Exception) -> None:
        self._release()
        self._observer.on_error(error)

    def _end(self) -> None:
        self._release()
        self._observer.on_completed()

    def _release(self) -> None:
        with self._lock:
            ticket = self._ticket
            if self._released or ticket is None:
                return
            self._released = True
        ticket.release(self._usage)

    def dispose(self) -> None:
        with self._lock:
            self._disposed = True
        if self._cancel is not None:
            self._cancel()
        self._inner.dispose()
        self._release()
