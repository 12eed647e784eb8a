"""rs.Limiter under a queue: CPU per admission, and no CPU at all while everything waits.

10,000 requests queue on one `rs.Limiter` that lets 100 run at once (with a
requests and a tokens budget large enough to be checked on every admission but
never to bind), then the running ones are released one by one, each release
admitting the next in line, until every request has run. Figures:

- **CPU per admission** (process CPU time, `time.process_time`): queueing all
  the requests, then the releases that admit the rest, divided by the number
  of requests. Target: under 20 µs.
- **The same through the I/O layer's gate** (`rxstream.io.limits.limited`, what
  `rs.chat(..., limiter=)` and `rs.from_request(..., limiter=)` run): one
  subscription per request to a source that never ends, disposed to release;
  beside it, the same subscriptions without a limiter (reactivex's own cost).
- **CPU while all wait**: 10,000 requests queued and none able to pass, for
  `--idle` seconds of wall time, (a) waiting for a slot (only a release can
  help: no timer at all) and (b) waiting for the minute to slide (one timer,
  due in a minute). Target: ~0 (nothing polls), and one timer at most.

    python benchmarks/bench_limiter.py                 # 10,000 queued, 100 running, 2 s idle
    python benchmarks/bench_limiter.py --count 100000 --running 1000 --idle 5
    python benchmarks/bench_limiter.py --quick         # 1,000 queued, one run: prints, never fails

Each figure is the median of `--repeat` runs. A full run exits 1 when a target is missed:
20 µs of CPU per admission, 5 ms of CPU in the idle wait, more than one timer.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import reactivex
from reactivex.scheduler import ImmediateScheduler, TimeoutScheduler

import rxstream as rs
from rxstream.io.limits import Ask, Ticket, limited


def _cpu(action: Callable[[], None]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        action()
        return time.process_time() - start
    finally:
        gc.enable()


def admissions(count: int, running: int) -> float:
    """Seconds of CPU per admission: queue `count`, release one by one until all ran."""
    limiter = rs.Limiter(
        concurrency=running, requests_per_minute=count * 10, tokens_per_minute=count * 1000
    )
    tickets: list[Ticket] = []
    asks = [Ask(f"route-{n % 4}", 50) for n in range(count)]

    def run() -> None:
        for ask in asks:
            limiter.admit(ask, tickets.append, _fail)
        released = 0
        while released < len(tickets):
            tickets[released].release(rs.Usage(20, 10, 30))
            released += 1

    seconds = _cpu(run)
    assert len(tickets) == count
    assert limiter.running == 0
    assert limiter.waiting == 0
    return seconds / count


def gated(count: int, running: int) -> float:
    """Seconds of CPU per request through `limited` (subscribe, admitted, dispose)."""
    limiter = rs.Limiter(concurrency=running, requests_per_minute=count * 10)
    ask = Ask("route", 50)
    subscriptions: list[Any] = []

    def make(ticket: Ticket) -> reactivex.Observable[Any]:
        return reactivex.never()

    source = limited(
        make, limiter, ask, asynchronous=False, scheduler=ImmediateScheduler.singleton()
    )

    def run() -> None:
        for _ in range(count):
            subscriptions.append(source.subscribe())
        for subscription in subscriptions:
            subscription.dispose()  # running: releases (and admits the next); queued: withdraws

    seconds = _cpu(run)
    assert limiter.running == 0
    return seconds / count


def plain(count: int) -> float:
    """Seconds of CPU per subscription of the same source without a limiter (the baseline)."""
    source = reactivex.never()
    subscriptions: list[Any] = []

    def run() -> None:
        for _ in range(count):
            subscriptions.append(source.subscribe(scheduler=ImmediateScheduler.singleton()))
        for subscription in subscriptions:
            subscription.dispose()

    return _cpu(run) / count


def idle(count: int, running: int, wait: float, *, window: bool) -> tuple[float, int]:
    """CPU seconds spent in `wait` seconds with `count` queued and none able to pass.

    Returns the CPU time and the timers the limiter scheduled in all (queueing included).
    """
    scheduler = _CountingScheduler()
    if window:  # the minute's budget is spent: one timer, a minute away
        limiter = rs.Limiter(requests_per_minute=running, scheduler=scheduler)
    else:  # every slot is held: only a release can help
        limiter = rs.Limiter(concurrency=running, scheduler=scheduler)
    held: list[Ticket] = []
    for _ in range(count):
        limiter.admit(Ask("route", 1), held.append, _fail)
    assert limiter.waiting == count - running
    start = time.process_time()
    time.sleep(wait)  # the wall clock passes; the limiter should spend nothing
    spent = time.process_time() - start
    return spent, scheduler.timers


class _CountingScheduler(TimeoutScheduler):
    """reactivex's TimeoutScheduler, counting the timers asked of it."""

    def __init__(self) -> None:
        super().__init__()
        self.timers = 0
        self._count_lock = threading.Lock()

    def schedule_relative(self, duetime: Any, action: Any, state: Any = None) -> Any:
        with self._count_lock:
            self.timers += 1
        return super().schedule_relative(duetime, action, state)


def _fail(error: Exception) -> None:
    raise error


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000, help="requests queued")
    parser.add_argument("--running", type=int, default=100, help="requests run at once")
    parser.add_argument("--idle", type=float, default=2.0, help="seconds of idle waiting")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--quick", action="store_true", help="small and once; never fails")
    args = parser.parse_args()
    if args.quick:
        args.count, args.repeat, args.idle = min(args.count, 1_000), 1, 0.5
    missed: list[str] = []

    per = statistics.median(admissions(args.count, args.running) for _ in range(args.repeat))
    gate = statistics.median(gated(args.count, args.running) for _ in range(args.repeat))
    bare = statistics.median(plain(args.count) for _ in range(args.repeat))
    print(f"{args.count:,} requests, {args.running} at once")
    print(f"  CPU per admission, rs.Limiter:            {per * 1e6:6.2f} µs  (target < 20 µs)")
    if per >= 20e-6:
        missed.append("CPU per admission")
    print(
        f"  CPU per request, through the I/O gate:    {gate * 1e6:6.2f} µs "
        f"(the same source without a limiter: {bare * 1e6:.2f} µs)"
    )
    for label, window in (("waiting for a slot", False), ("waiting for the minute", True)):
        spent, timers = idle(args.count, args.running, args.idle, window=window)
        print(
            f"  idle {args.idle:g} s, {label + ':':24} CPU {spent * 1e3:7.3f} ms, "
            f"timers {timers} (target ~0 CPU, at most 1 timer)"
        )
        if spent > 0.005 or timers > 1:
            missed.append(f"idle, {label}")
    if missed and not args.quick:
        print("missed:", ", ".join(missed))
        raise SystemExit(1)


if __name__ == "__main__":
    main()
