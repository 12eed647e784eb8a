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
from typing import Any, Generic, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import (
    CompositeDisposable,
    Disposable,
    SerialDisposable,
    SingleAssignmentDisposable,
)

from .._deprecate import deprecated_arguments
from .._flow import Demand, current_demand
from ..core.message import Arrived
from ..errors import StreamTimeoutError
from .timing import Duration, SerialQueue, duration, timer_scheduler

__all__ = ["TimeoutWatch", "timeouts"]

T = TypeVar("T")

_MESSAGES = {
    "first": "no first item within {s:g} s of subscribing (the 'first' time limit)",
    "idle": "no new item for {s:g} s (the 'idle' time limit)",
    "total": "stream still running after {s:g} s (the 'total' time limit)",
}


@deprecated_arguments(positional=("first", "idle", "total", "scheduler"))
def timeouts(
    *,
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
    the limit that was exceeded; its `partial` is the `Message` of the deltas
    that passed before it (applied before `rs.decode`, the decoder fills it).
    Items pass unchanged; with no limit at all the operator is a plain
    pass-through.

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

    def operator(source: Observable[T]) -> Observable[T]:
        if not limits:
            return source

        def subscribe(
            observer: abc.ObserverBase[T], subscribe_scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            watch = TimeoutWatch(
                observer,
                timer_scheduler(scheduler, subscribe_scheduler),
                first=limits.get("first"),
                idle=limits.get("idle"),
                total=limits.get("total"),
                # A bridge subscribes inside its demand scope; its pause is not idleness.
                demand=current_demand(),
            )
            return watch.run(source, subscribe_scheduler)

        return Observable(subscribe)

    return operator


class TimeoutWatch(Generic[T]):
    """One subscription of `timeouts`: the limits' timers, and the items passed on.

    `on_next`, `on_error` and `on_completed` are the upstream's notifications;
    the timers call `fire_gap` and `fire_total`. State is guarded by one lock;
    calls to the observer go through a `SerialQueue`, outside the lock.
    """

    def __init__(
        self,
        observer: abc.ObserverBase[T],
        timers: abc.SchedulerBase,
        *,
        first: float | None = None,
        idle: float | None = None,
        total: float | None = None,
        demand: Demand | None = None,
    ) -> None:
        self._observer = observer
        self._timers = timers
        self._idle = idle
        self._total = total
        self._demand = demand
        # Before the first item the stricter-named limit applies: `first` if set, else `idle`.
        self._opening = ("first", first) if first is not None else ("idle", idle)
        self._lock = threading.Lock()
        self._queue = SerialQueue()
        self.upstream = SingleAssignmentDisposable()
        self._gap_timer = SerialDisposable()
        self._total_timer = SerialDisposable()
        self._stopped = False
        self._generation = 0  # bumped per item, so a gap timer armed earlier is stale
        self._arrived = Arrived()  # the deltas passed on, for an error's partial

    def run(
        self, source: Observable[T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        """Arm the timers, subscribe to `source`, and return the subscription's disposable."""
        # Armed before subscribing: a synchronous source may run the whole
        # stream inside `subscribe`.
        self.start()
        self.upstream.disposable = source.subscribe(
            self.on_next, self.on_error, self.on_completed, scheduler=scheduler
        )
        self._queue.drain()
        return CompositeDisposable(Disposable(self.dispose), self.upstream)

    def start(self) -> None:
        """Arm the `total` timer and the one for the first item."""
        with self._lock:
            if self._total is not None:
                self._total_timer.disposable = self._timers.schedule_relative(
                    self._total, self.fire_total
                )
            limit, seconds = self._opening
            if seconds is not None:
                self._arm_gap_locked(limit, seconds)

    def on_next(self, item: T) -> None:
        with self._lock:
            if self._stopped:
                return
            self._generation += 1
            self._arrived.see(item)
            self._gap_timer.disposable = Disposable()
            self._queue.put(lambda: self._observer.on_next(item))
        self._queue.drain()
        if self._idle is not None:
            with self._lock:
                if not self._stopped:
                    self._arm_gap_locked("idle", self._idle)

    def on_error(self, error: Exception) -> None:
        self._arrived.keep_partial(error)
        self._terminate(lambda: self._observer.on_error(error))

    def on_completed(self) -> None:
        self._terminate(self._observer.on_completed)

    def fire_gap(self, limit: str, seconds: float, armed_at: int) -> None:
        """A `first` or `idle` timer armed at item number `armed_at` ran out."""
        with self._lock:
            if self._stopped or armed_at != self._generation:
                return
            if limit == "idle" and self._demand is not None and self._demand.paused:
                self._arm_gap_locked(limit, seconds)
                return
            self._expire_locked(limit, seconds)
        # The error first, then the disposal: a sync source returns from
        # `subscribe` once disposed, and its caller must find the error.
        self._queue.drain()
        self.upstream.dispose()

    def fire_total(self, _: abc.SchedulerBase | None = None, __: Any = None) -> None:
        """The `total` timer ran out."""
        assert self._total is not None
        with self._lock:
            if self._stopped:
                return
            self._expire_locked("total", self._total)
        self._queue.drain()
        self.upstream.dispose()

    def dispose(self) -> None:
        with self._lock:
            self._stopped = True
        self._gap_timer.dispose()
        self._total_timer.dispose()

    def _terminate(self, call: Callable[[], None]) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stop_locked()
            self._queue.put(call)
        self.upstream.dispose()
        self._queue.drain()

    def _stop_locked(self) -> None:
        # The upstream is disposed by the caller, after the lock is
        # released: a source may react to disposal by calling back.
        self._stopped = True
        self._gap_timer.dispose()
        self._total_timer.dispose()

    def _expire_locked(self, limit: str, seconds: float) -> None:
        error = StreamTimeoutError(limit, seconds, _MESSAGES[limit].format(s=seconds))
        self._arrived.keep_partial(error)
        self._stop_locked()
        self._queue.put(lambda: self._observer.on_error(error))

    def _arm_gap_locked(self, limit: str, seconds: float) -> None:
        armed_at = self._generation

        def fire(_: abc.SchedulerBase, __: Any = None) -> None:
            self.fire_gap(limit, seconds, armed_at)

        self._gap_timer.disposable = self._timers.schedule_relative(seconds, fire)
