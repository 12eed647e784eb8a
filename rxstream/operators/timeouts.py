"""`timeouts`: end a stalled stream with `StreamTimeoutError` and close the connection.

Three independent limits, each optional: `first` (subscribe to first item),
`idle` (the longest silence between items) and `total` (the whole stream).
When one is exceeded the error is delivered downstream and the upstream is
disposed, which makes an rxstream source close its response. In that order:
a sync source then returns from `subscribe` with the error already delivered.

Timers run on a reactivex scheduler, so they may fire on another thread than
the items; notifications to the observer are still delivered one at a time,
and a timer never blocks on a downstream call that is in progress (see
`SerialQueue`).

"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import (
    CompositeDisposable,
    Disposable,
    SerialDisposable,
    SingleAssignmentDisposable,
)

from .._flow import current_demand
from ..errors import StreamTimeoutError
from ._timing import Duration, SerialQueue, duration, timer_scheduler

__all__ = ["timeouts"]

T = TypeVar("T")

_MESSAGES = {
    "first": "no first item within {s:g} s of subscribing (the 'first' time limit)",
    "idle": "no new item for {s:g} s (the 'idle' time limit)",
    "total": "stream still running after {s:g} s (the 'total' time limit)",
}


def timeouts(
    first: Duration | None = None,
    idle: Duration | None = None,
    total: Duration | None = None,
    scheduler: abc.SchedulerBase | None = None,
) -> Callable[[Observable[T]], Observable[T]]:
    """End a stalled stream with `StreamTimeoutError`, disposing the upstream.

    Each limit is seconds (a float) or a `timedelta`, and optional:

    - `first`: from subscribing to the first item;
    - `idle`: the longest wait for the next item. Without `first`, the wait
      for the first item counts as idle too. The clock restarts when the
      downstream has taken an item, so a slow consumer that makes the producer
      wait (`to_iterator`) is not idleness, and neither is a source paused by
      `to_async_iterator`;
    - `total`: from subscribing to the end of the stream.

    What counts as an item is whatever reaches this operator: applied after
    `decode_chunks`, SSE keep-alive comments never count as progress (they
    are not chunks); applied to raw lines, a keep-alive line does count.
    The error's `limit` is `"first"`, `"idle"` or `"total"` and its `seconds`
    the limit that was exceeded. Items pass unchanged; with no limit at all
    the operator is a plain pass-through.

    Args:
        first: the limit for the first item, or None.
        idle: the limit between items, or None.
        total: the limit for the whole stream, or None.
        scheduler: where the timers run; default the scheduler given to
            `subscribe` (unless it is the current-thread or immediate one),
            else reactivex's `TimeoutScheduler` (a timer thread).

    Returns:
        An operator `Observable[T] -> Observable[T]`.

    Raises:
        ValueError: a limit is zero, negative or infinite.
        TypeError: a limit is not a number or a timedelta.

    Marbles (idle=3)::

        -a-b--------c-|
        -a-b--#               # StreamTimeoutError("idle", 3), upstream disposed

    >>> import reactivex
    >>> reactivex.of(1, 2).pipe(timeouts(total=30)).run()
    2
    """
    limits = {
        name: duration(value, name)
        for name, value in (("first", first), ("idle", idle), ("total", total))
        if value is not None
    }
    first_s, idle_s, total_s = (limits.get(k) for k in ("first", "idle", "total"))
    # Before the first item the stricter-named limit applies: `first` if set, else `idle`.
    opening = ("first", first_s) if first_s is not None else ("idle", idle_s)

    def operator(source: Observable[T]) -> Observable[T]:
        if not limits:
            return source

        def subscribe(
            observer: abc.ObserverBase[T], subscribe_scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            timers = timer_scheduler(scheduler, subscribe_scheduler)
            # A bridge subscribes inside its demand scope; its pause is not idleness.
            demand = current_demand()
            lock = threading.Lock()
            queue = SerialQueue()
            upstream = SingleAssignmentDisposable()
            gap_timer = SerialDisposable()
            total_timer = SerialDisposable()
            stopped = False
            generation = 0  # bumped per item, so a gap timer armed earlier is stale

            def stop_locked() -> None:
                # The upstream is disposed by the caller, after the lock is
                # released: a source may react to disposal by calling back.
                nonlocal stopped
                stopped = True
                gap_timer.dispose()
                total_timer.dispose()

            def expire(limit: str, seconds: float) -> None:
                error = StreamTimeoutError(limit, seconds, _MESSAGES[limit].format(s=seconds))
                stop_locked()
                queue.put(lambda: observer.on_error(error))

            def arm_gap_locked(limit: str, seconds: float) -> None:
                armed_at = generation

                def fire(_: abc.SchedulerBase, __: Any = None) -> None:
                    with lock:
                        if stopped or armed_at != generation:
                            return
                        if limit == "idle" and demand is not None and demand.paused:
                            arm_gap_locked(limit, seconds)
                            return
                        expire(limit, seconds)
                    # The error first, then the disposal: a sync source returns from
                    # `subscribe` once disposed, and its caller must find the error.
                    queue.drain()
                    upstream.dispose()

                gap_timer.disposable = timers.schedule_relative(seconds, fire)

            def fire_total(_: abc.SchedulerBase, __: Any = None) -> None:
                assert total_s is not None
                with lock:
                    if stopped:
                        return
                    expire("total", total_s)
                queue.drain()
                upstream.dispose()

            def on_next(item: T) -> None:
                nonlocal generation
                with lock:
                    if stopped:
                        return
                    generation += 1
                    gap_timer.disposable = Disposable()
                    queue.put(lambda: observer.on_next(item))
                queue.drain()
                if idle_s is not None:
                    with lock:
                        if not stopped:
                            arm_gap_locked("idle", idle_s)

            def on_terminal(call: Callable[[], None]) -> None:
                with lock:
                    if stopped:
                        return
                    stop_locked()
                    queue.put(call)
                upstream.dispose()
                queue.drain()

            def on_error(error: Exception) -> None:
                on_terminal(lambda: observer.on_error(error))

            def on_completed() -> None:
                on_terminal(observer.on_completed)

            # Armed before subscribing: a synchronous source may run the whole
            # stream inside `subscribe`.
            with lock:
                if total_s is not None:
                    total_timer.disposable = timers.schedule_relative(total_s, fire_total)
                if opening[1] is not None:
                    arm_gap_locked(opening[0], opening[1])
            upstream.disposable = source.subscribe(
                on_next, on_error, on_completed, scheduler=subscribe_scheduler
            )
            queue.drain()

            def dispose() -> None:
                nonlocal stopped
                with lock:
                    stopped = True
                gap_timer.dispose()
                total_timer.dispose()

            return CompositeDisposable(Disposable(dispose), upstream)

        return Observable(subscribe)

    return operator
