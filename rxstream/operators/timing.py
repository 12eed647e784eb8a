"""Timing helpers the time-based operators share (`timeouts`, `coalesce`, `to_sse`).

Public within the operators package, so `rxstream.serve` (which checks a
`keepalive` the same way) need not reach into a private module.

- `duration`: a number of seconds or a `timedelta`, checked positive and finite;
- `timer_scheduler`: where timers run (never on the thread delivering items);
- `SerialQueue`: notifications delivered one at a time, in decision order,
  without a timer thread ever waiting on a downstream call.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from datetime import timedelta

from reactivex import abc
from reactivex.scheduler import ImmediateScheduler, TimeoutScheduler, TrampolineScheduler

__all__ = ["Duration", "SerialQueue", "duration", "timer_scheduler"]

Duration = float | int | timedelta


def duration(value: Duration, name: str) -> float:
    """Seconds in `value` (a number or a `timedelta`), checked to be positive."""
    if isinstance(value, bool) or not isinstance(value, int | float | timedelta):
        raise TypeError(
            f"{name} must be a number of seconds or a timedelta, got {type(value).__name__}"
        )
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"{name} must be a positive, finite duration, got {value!r}")
    return seconds


def timer_scheduler(
    explicit: abc.SchedulerBase | None, subscribed: abc.SchedulerBase | None
) -> abc.SchedulerBase:
    """The scheduler timers run on: the one given, else the subscriber's, else threads.

    A trampoline (the current-thread scheduler) or the immediate scheduler would
    sleep on, or refuse, the thread delivering the items, so a timer never
    fires while that thread is busy; they are passed over for TimeoutScheduler.
    """
    if explicit is not None:
        return explicit
    if subscribed is not None and not isinstance(
        subscribed, TrampolineScheduler | ImmediateScheduler
    ):
        return subscribed
    return TimeoutScheduler.singleton()


class SerialQueue:
    """Run notification calls one at a time, in the order they were queued.

    Whoever finds the queue idle drains it; a thread that queues while another
    drains returns at once, and the drainer runs its call next. So a timer
    thread never waits on a downstream `on_next` that blocks (a bridge with a
    full buffer does), and the observer never sees two calls at once.
    `put` is meant to be called under the caller's state lock, so queue order
    is decision order; `drain` outside it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: deque[Callable[[], None]] = deque()
        self._draining = False

    def put(self, call: Callable[[], None]) -> None:
        with self._lock:
            self._calls.append(call)

    def drain(self) -> None:
        with self._lock:
            if self._draining:
                return
            self._draining = True
        try:
            while True:
                with self._lock:
                    if not self._calls:
                        self._draining = False
                        return
                    call = self._calls.popleft()
                call()
        except BaseException:
            # The downstream raised; let the next caller drain what is left.
            with self._lock:
                self._draining = False
            raise
