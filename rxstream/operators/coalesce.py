"""`coalesce`: merge runs of small text deltas into one delta per time window, for UIs.

A run is a sequence of adjacent `TextDelta`s (or adjacent `ReasoningDelta`s)
of one choice. The first delta of a run opens a window of `interval`; when it
ends, the run so far goes out as one delta. Anything else (another kind,
another choice, a tool call, a finish, a non-delta item), the end of the
stream and an error all flush the pending run first, so the output is the
input with runs merged: lossless and in order. A `Reset` is the one
exception: the pending run belongs to the answer it drops, so the run is
dropped with it (nothing is shown only to be taken back), and the `Reset`
passes; what the output accumulates to is the same.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

from reactivex import Observable, abc
from reactivex.disposable import (
    CompositeDisposable,
    Disposable,
    SerialDisposable,
)

from .._deprecate import deprecated_arguments
from ..models import ReasoningDelta, Reset, TextDelta
from .timing import Duration, SerialQueue, duration, timer_scheduler

__all__ = ["CoalesceWindow", "coalesce"]

T = TypeVar("T")

_Mergeable = TextDelta | ReasoningDelta


@deprecated_arguments(positional=("scheduler",))
def coalesce(
    interval: Duration, *, scheduler: abc.SchedulerBase | None = None
) -> Callable[[Observable[T]], Observable[T]]:
    """Merge adjacent text (and reasoning) deltas of one choice, one delta per window.

    The first `TextDelta` or `ReasoningDelta` of a run opens a window of
    `interval`; the deltas of the same kind and choice that arrive in it are
    joined, and the merged delta is emitted when the window ends. Any other
    item flushes the pending run before it passes, so a tool call never
    overtakes the text before it; completion and error flush too. Joining the
    texts of the output gives exactly the texts of the input, in order. A run
    of a single delta is emitted as the very object that arrived. A `Reset`
    drops the pending run (it belongs to the answer the reset drops) and
    passes.

    Args:
        interval: the window, in seconds or as a `timedelta`.
        scheduler: where the window timers run; default the scheduler given
            to `subscribe` (unless it is the current-thread or immediate one),
            else reactivex's `TimeoutScheduler`.

    Returns:
        An operator over deltas (other items pass through).

    Raises:
        ValueError: `interval` is zero, negative or infinite.
        TypeError: `interval` is not a number or a timedelta.

    Marbles (interval=4; a, b, c text; T a tool call)::

        -a-b-c-----T-|
        -----X-----T-|        # X = a+b+c at the end of a's window
        -a-b-T-|
        ----(XT)-|            # X = a+b, flushed by T
        -a-b-R-c-----|
        -----R-----c-|        # R = a Reset: the run a+b is dropped

    >>> import reactivex
    >>> from rxstream.models import TextDelta
    >>> reactivex.of(TextDelta("Hel"), TextDelta("lo")).pipe(coalesce(0.05)).run()
    TextDelta(text='Hello', choice=0)
    """
    seconds = duration(interval, "interval")

    def operator(source: Observable[T]) -> Observable[T]:
        def subscribe(
            observer: abc.ObserverBase[T], subscribe_scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            window = CoalesceWindow(
                observer, timer_scheduler(scheduler, subscribe_scheduler), seconds
            )
            return window.run(source, subscribe_scheduler)

        return Observable(subscribe)

    return operator


class CoalesceWindow(Generic[T]):
    """One subscription of `coalesce`: the pending run and its window timer.

    `on_next`, `on_error` and `on_completed` are the upstream's notifications;
    the window timer calls `close_window`. State is guarded by one lock; calls
    to the observer go through a `SerialQueue`, outside the lock.
    """

    def __init__(
        self, observer: abc.ObserverBase[T], timers: abc.SchedulerBase, seconds: float
    ) -> None:
        self._observer = observer
        self._timers = timers
        self._seconds = seconds
        self._lock = threading.Lock()
        self._queue = SerialQueue()
        self._window = SerialDisposable()
        self._stopped = False
        self._pending: list[_Mergeable] = []
        self._generation = 0  # bumped per flush, so a window timer of an earlier run is stale

    @property
    def generation(self) -> int:
        """How many runs went out so far (a window timer names the run it closes)."""
        return self._generation

    def run(
        self, source: Observable[T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        """Subscribe to `source`; the disposable ends the subscription and its timer."""
        upstream = source.subscribe(
            self.on_next, self.on_error, self.on_completed, scheduler=scheduler
        )
        return CompositeDisposable(Disposable(self.dispose), upstream)

    def on_next(self, item: T) -> None:
        with self._lock:
            if self._stopped:
                return
            if isinstance(item, TextDelta | ReasoningDelta):
                if self._pending and not _same_run(self._pending[0], item):
                    self._flush_locked()
                self._pending.append(item)
                if len(self._pending) == 1:
                    self._window.disposable = self._timers.schedule_relative(
                        self._seconds, self._timer_for(self._generation)
                    )
            else:
                if type(item) is Reset:
                    self._drop_locked()
                else:
                    self._flush_locked()
                self._queue.put(lambda: self._observer.on_next(item))
        self._queue.drain()

    def on_error(self, error: Exception) -> None:
        self._terminate(lambda: self._observer.on_error(error))

    def on_completed(self) -> None:
        self._terminate(self._observer.on_completed)

    def close_window(self, opened: int) -> None:
        """The window opened when `generation` was `opened` ended: send its run."""
        with self._lock:
            if self._stopped or opened != self._generation:
                return
            self._flush_locked()
        self._queue.drain()

    def dispose(self) -> None:
        with self._lock:
            self._stopped = True
            self._pending.clear()
        self._window.dispose()

    def _timer_for(self, opened: int) -> Callable[[abc.SchedulerBase, Any], None]:
        def fire(_: abc.SchedulerBase, __: Any = None) -> None:
            self.close_window(opened)

        return fire

    def _terminate(self, call: Callable[[], None]) -> None:
        with self._lock:
            if self._stopped:
                return
            self._flush_locked()
            self._stopped = True
            self._window.dispose()
            self._queue.put(call)
        self._queue.drain()

    def _drop_locked(self) -> None:
        """Forget the pending run and its window (a `Reset` dropped its answer)."""
        if self._pending:
            self._generation += 1
            self._window.disposable = Disposable()
            self._pending.clear()

    def _flush_locked(self) -> None:
        if not self._pending:
            return
        self._generation += 1
        self._window.disposable = Disposable()
        merged = _merge(self._pending)
        self._pending.clear()
        self._queue.put(lambda: self._observer.on_next(cast(T, merged)))


def _same_run(head: _Mergeable, item: _Mergeable) -> bool:
    return type(head) is type(item) and head.choice == item.choice


def _merge(run: list[_Mergeable]) -> _Mergeable:
    if len(run) == 1:
        return run[0]
    head = run[0]
    text = "".join(d.text for d in run)
    if isinstance(head, TextDelta):
        return TextDelta(text, choice=head.choice)
    return ReasoningDelta(text, choice=head.choice)
