"""`coalesce`: merge runs of small text deltas into one delta per time window, for UIs.

A run is a sequence of adjacent `TextDelta`s (or adjacent `ReasoningDelta`s)
of one choice. The first delta of a run opens a window of `interval`; when it
ends, the run so far goes out as one delta. Anything else (another kind,
another choice, a tool call, a finish, a non-delta item), the end of the
stream and an error all flush the pending run first, so the output is the
input with runs merged: lossless and in order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

from reactivex import Observable, abc
from reactivex.disposable import (
    CompositeDisposable,
    Disposable,
    SerialDisposable,
    SingleAssignmentDisposable,
)

from ..models import ReasoningDelta, TextDelta
from ._timing import Duration, SerialQueue, duration, timer_scheduler

__all__ = ["coalesce"]

T = TypeVar("T")

_Mergeable = TextDelta | ReasoningDelta


def coalesce(
    interval: Duration, scheduler: abc.SchedulerBase | None = None
) -> Callable[[Observable[T]], Observable[T]]:
    """Merge adjacent text (and reasoning) deltas of one choice, one delta per window.

    The first `TextDelta` or `ReasoningDelta` of a run opens a window of
    `interval`; the deltas of the same kind and choice that arrive in it are
    joined, and the merged delta is emitted when the window ends. Any other
    item flushes the pending run before it passes, so a tool call never
    overtakes the text before it; completion and error flush too. Joining the
    texts of the output gives exactly the texts of the input, in order. A run
    of a single delta is emitted as the very object that arrived.

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
            timers = timer_scheduler(scheduler, subscribe_scheduler)
            lock = threading.Lock()
            queue = SerialQueue()
            upstream = SingleAssignmentDisposable()
            window = SerialDisposable()
            stopped = False
            pending: list[_Mergeable] = []
            generation = 0  # bumped per flush, so a window timer of an earlier run is stale

            def flush_locked() -> None:
                nonlocal generation
                if not pending:
                    return
                generation += 1
                window.disposable = Disposable()
                merged = _merge(pending)
                pending.clear()
                queue.put(lambda: observer.on_next(cast(T, merged)))

            def close_window(opened: int) -> Callable[[abc.SchedulerBase, Any], None]:
                def fire(_: abc.SchedulerBase, __: Any = None) -> None:
                    with lock:
                        if stopped or opened != generation:
                            return
                        flush_locked()
                    queue.drain()

                return fire

            def on_next(item: T) -> None:
                with lock:
                    if stopped:
                        return
                    if isinstance(item, TextDelta | ReasoningDelta):
                        if pending and not _same_run(pending[0], item):
                            flush_locked()
                        pending.append(item)
                        if len(pending) == 1:
                            window.disposable = timers.schedule_relative(
                                seconds, close_window(generation)
                            )
                    else:
                        flush_locked()
                        queue.put(lambda: observer.on_next(item))
                queue.drain()

            def on_terminal(call: Callable[[], None]) -> None:
                nonlocal stopped
                with lock:
                    if stopped:
                        return
                    flush_locked()
                    stopped = True
                    window.dispose()
                    queue.put(call)
                queue.drain()

            def on_error(error: Exception) -> None:
                on_terminal(lambda: observer.on_error(error))

            def on_completed() -> None:
                on_terminal(observer.on_completed)

            upstream.disposable = source.subscribe(
                on_next, on_error, on_completed, scheduler=subscribe_scheduler
            )

            def dispose() -> None:
                nonlocal stopped
                with lock:
                    stopped = True
                    pending.clear()
                window.dispose()

            return CompositeDisposable(Disposable(dispose), upstream)

        return Observable(subscribe)

    return operator


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
