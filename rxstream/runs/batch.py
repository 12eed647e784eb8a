"""`rs.chats`: many prompts through one budget, each answer kept with its request.

Requests go in (a list, any iterable, or an Observable of them, arriving
as they come), at most `max_concurrent` run at once, each waits for the
limiter if one is given, and one `ChatResult` per request comes out when its
answer is complete, in the order the answers finish. A request that fails
(a 429, a cut stream, a provider's error) is a result with its error, not
the end of the batch: one bad answer out of a thousand stops nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import Disposable
from reactivex.scheduler import CurrentThreadScheduler

from ..core.lines import DEFAULT_LIMIT
from ..errors import StreamError
from ..io.limits import Admission
from ..io.requests import send_request
from ..io.sources import AsyncClient, SyncClient
from ..models import Message
from ..operators import accumulate_message
from .retry import chat

__all__ = ["DEFAULT_CONCURRENT", "ChatResult", "chats"]

#: How many requests `rs.chats` runs at once unless told.
DEFAULT_CONCURRENT = 8


@dataclass(frozen=True, slots=True)
class ChatResult:
    """One request's outcome in `rs.chats`.

    Attributes:
        index: the request's place in the input (0 for the first).
        request: the request as it was given (a built request or the
            mapping of `rs.chat` arguments).
        message: the answer (choice 0), or None when it failed.
        error: what failed (a `StreamError`: an HTTP error, a cut stream, a
            provider's error, the limiter's refusal), or None.
    """

    index: int
    request: Any
    message: Message | None = None
    error: StreamError | None = None

    @property
    def ok(self) -> bool:
        """True when the answer arrived whole."""
        return self.error is None


def _deltas(
    client: SyncClient | AsyncClient,
    request: Any,
    limiter: Admission | None,
    scheduler: abc.SchedulerBase | None,
    line_limit: int,
) -> Observable[Any]:
    if isinstance(request, Mapping):
        arguments = dict(request)
        dialect = arguments.pop("dialect", None)
        if not isinstance(dialect, str):
            raise ValueError(
                "rs.chats: a request given as a mapping needs its 'dialect' (and rs.chat's "
                f"other arguments), got keys {sorted(request)!r}"
            )
        return chat(
            client,
            dialect,
            scheduler=scheduler,
            line_limit=line_limit,
            limiter=limiter,
            **arguments,
        )
    return send_request(
        client, request, scheduler=scheduler, line_limit=line_limit, limiter=limiter
    )


def _one(
    index: int,
    request: Any,
    run: Any,
) -> Observable[ChatResult]:
    def subscribe(
        observer: abc.ObserverBase[ChatResult], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        def on_messages(messages: list[Message]) -> None:
            message = next((m for m in messages if m.choice == 0), None)
            observer.on_next(ChatResult(index, request, message=message))

        def on_error(error: Exception) -> None:
            if not isinstance(error, StreamError):
                observer.on_error(error)
                return
            observer.on_next(ChatResult(index, request, error=error))
            observer.on_completed()

        try:
            answer: Observable[list[Message]] = run(request).pipe(
                accumulate_message(), ops.to_list()
            )
        except Exception as exc:  # a request that cannot be built: the caller's mistake
            observer.on_error(exc)
            return Disposable()
        return answer.subscribe(on_messages, on_error, observer.on_completed, scheduler=scheduler)

    return Observable(subscribe)


def chats(
    client: SyncClient | AsyncClient,
    requests: Iterable[Any] | Observable[Any],
    *,
    limiter: Admission | None = None,
    max_concurrent: int = DEFAULT_CONCURRENT,
    scheduler: abc.SchedulerBase | None = None,
    line_limit: int = DEFAULT_LIMIT,
) -> Observable[ChatResult]:
    """Run many chat requests, at most `max_concurrent` at once, through one limiter.

    Args:
        client: an `httpx.Client` or `httpx.AsyncClient`. A sync client on the
            default scheduler runs one request after another on the
            subscribing thread; pass a `ThreadPoolScheduler` (or use an
            async client) to run them side by side.
        requests: requests built by `rs.request`, or mappings of `rs.chat`'s
            arguments with their `"dialect"` (`{"dialect": "anthropic",
            "model": ..., "messages": [...]}`); a list, any iterable (read as
            requests are started), or an Observable of them.
        limiter: a `rs.Limiter` (or `rs.RedisLimiter`) every request waits for.
        max_concurrent: at most this many requests sent and not finished
            (queued in the limiter counts as running): a bound on sockets
            and memory, the limiter's `concurrency` the provider's bound.
        scheduler: as `rs.chat`'s.
        line_limit: as `rs.chat`'s.

    Returns:
        An observable of one `ChatResult` per request, as each answer
        completes, then completion once all have.

    Raises:
        ValueError: `max_concurrent` below 1.

    Errors (via `on_error`): what is not a stream's failure: a request that
    cannot be built (a mapping with no dialect, no key, an unknown option),
    an input that is not a request.

    Example:
        >>> limiter = rs.Limiter(requests_per_minute=500)  # doctest: +SKIP
        >>> asks = [{"dialect": "openai-chat", "model": "gpt-4o-mini",
        ...          "messages": [{"role": "user", "content": p}]}
        ...         for p in prompts]  # doctest: +SKIP
        >>> rs.chats(client, asks, limiter=limiter).subscribe(print)  # doctest: +SKIP

    Marbles (`max_concurrent=2`; the answers take 3, 1 and 1 ticks): requests
    `(abc|)` -> `-BC(A|)`: c starts when b is done, each result (a `ChatResult`
    with its `index`) comes when its answer is complete.
    """
    if isinstance(max_concurrent, bool) or not isinstance(max_concurrent, int):
        raise TypeError(f"max_concurrent must be an int, got {type(max_concurrent).__name__}")
    if max_concurrent < 1:
        raise ValueError(f"max_concurrent must be at least 1, got {max_concurrent!r}")
    source: Observable[Any] = (
        requests if isinstance(requests, Observable) else reactivex.from_iterable(requests)
    )
    on_this_thread = scheduler is None or isinstance(scheduler, CurrentThreadScheduler)
    if on_this_thread and not inspect.iscoroutinefunction(getattr(client, "send", None)):
        # Sync streams on the calling thread run one at a time anyway; merged, one that
        # waits for the limiter would block the thread the running one needs.
        max_concurrent = 1

    def run(request: Any) -> Observable[Any]:
        return _deltas(client, request, limiter, scheduler, line_limit)

    return source.pipe(
        ops.map_indexed(lambda request, index: _one(index, request, run)),
        ops.merge(max_concurrent=max_concurrent),
    )
