"""Many streams at once: cancellation leaks nothing, hundreds share one loop, fairly.

The slow-consumer bound (lines read minus lines consumed <= maxsize + 2, sync
and async, counted at the source) is in tests/io/test_bridges.py and
tests/io/test_multicast.py; the 1 s disconnect after dispose is in
test_sources_from_request.py. This module adds the targets that need many streams:

- 1,000 streams started and cancelled leave no open file descriptor (socket)
  and no extra thread behind;
- 500 concurrent async streams in one loop each get their own answer (the
  local server echoes a token from each request);
- a stream whose data is always ready does not starve the others.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
import reactivex.operators as ops

import rxstream as rs
from rxstream.testing.server import Done, FakeLLMServer, Scenario, Stall
from tests.support.sources import TIMEOUT, Outcome

PAYLOAD = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def settles(probe: Callable[[], int], target: int, within: float = TIMEOUT) -> bool:
    """Whether `probe()` comes down to `target` (threads and sockets end asynchronously)."""
    deadline = time.monotonic() + within
    while probe() > target:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


pytestmark = pytest.mark.skipif(
    not os.path.isdir("/proc/self/fd"), reason="counts open files in /proc"
)


# --------------------------------------------------------------------------- cancellation


@pytest.fixture
def stalling_server() -> Iterator[FakeLLMServer]:
    """A server that sends one event, then waits (until the client leaves)."""
    with FakeLLMServer(Scenario.text("a").then(Stall(10.0), Done())) as server:
        yield server


def test_a_thousand_async_streams_cancelled_leave_no_socket_or_thread(
    stalling_server: FakeLLMServer,
) -> None:
    # FakeLLMServer's listen backlog is socketserver's default of 5: more connection
    # attempts at once would be refused by the kernel, which is not what this tests.
    streams, at_once = 1000, 5

    async def one(client: httpx.AsyncClient, gate: asyncio.Semaphore) -> int:
        async with gate:
            first = asyncio.Event()
            seen: list[str] = []

            def on_next(line: str) -> None:
                seen.append(line)
                first.set()

            subscription = rs.from_request(
                client, "POST", stalling_server.url, json=PAYLOAD
            ).subscribe(on_next)
            await asyncio.wait_for(first.wait(), TIMEOUT)
            subscription.dispose()
            return len(seen)

    async def main() -> list[int]:
        gate = asyncio.Semaphore(at_once)
        async with httpx.AsyncClient() as client:
            return await asyncio.gather(*(one(client, gate) for _ in range(streams)))

    threads, fds = threading.active_count(), open_fds()
    counts = asyncio.run(main())
    assert all(count >= 1 for count in counts)
    assert stalling_server.wait_for_disconnect(TIMEOUT, count=streams)
    assert len(stalling_server.requests) == streams
    assert settles(threading.active_count, threads), threading.enumerate()
    assert settles(open_fds, fds), f"{open_fds() - fds} file descriptors left open"


def test_a_thousand_sync_streams_cancelled_leave_no_socket_or_thread(
    stalling_server: FakeLLMServer,
) -> None:
    streams = 1000
    threads, fds = threading.active_count(), open_fds()
    with httpx.Client() as client:
        for _ in range(streams):
            outcome = Outcome()
            # take(1) disposes the source at the first line, mid-stream.
            rs.from_request(client, "POST", stalling_server.url, json=PAYLOAD).pipe(
                ops.take(1)
            ).subscribe(outcome.on_next, outcome.on_error, outcome.on_completed)
            assert outcome.completed
    assert stalling_server.wait_for_disconnect(TIMEOUT, count=streams)
    assert settles(threading.active_count, threads), threading.enumerate()
    assert settles(open_fds, fds), f"{open_fds() - fds} file descriptors left open"


# --------------------------------------------------------------------------- 500 at once


class EchoServer:
    """An asyncio HTTP/1.1 server: each answer streams the request's own prompt back.

    FakeLLMServer answers from fixed scenarios with a thread per connection;
    this one runs on the test's loop, so 500 connections cost no threads, and
    each answer is distinct: `echo: <prompt>` in three chunks.
    """

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None
        self.served = 0

    async def __aenter__(self) -> EchoServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, backlog=1024)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1/chat/completions"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            prompt = json.loads(await reader.readexactly(length))["messages"][0]["content"]
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            )
            for piece in ("echo", ": ", prompt):
                writer.write(
                    _chunk(_event({"choices": [{"index": 0, "delta": {"content": piece}}]}))
                )
                await writer.drain()
                await asyncio.sleep(0.001)
            finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            writer.write(_chunk(_event(finish) + b"data: [DONE]\n\n") + b"0\r\n\r\n")
            await writer.drain()
            self.served += 1
        finally:
            writer.close()


def _event(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def test_five_hundred_concurrent_async_streams_each_get_their_own_answer() -> None:
    streams = 500

    async def one(client: httpx.AsyncClient, url: str, i: int) -> str:
        payload = {**PAYLOAD, "messages": [{"role": "user", "content": f"stream {i}"}]}
        done = asyncio.Event()
        text: list[str] = []
        errors: list[Exception] = []

        def on_error(error: Exception) -> None:
            errors.append(error)
            done.set()

        rs.from_request(client, "POST", url, json=payload).pipe(
            rs.sse_frames(), rs.decode_chunks(), rs.deltas()
        ).subscribe(
            lambda d: text.append(d.text) if isinstance(d, rs.TextDelta) else None,
            on_error,
            done.set,
        )
        await asyncio.wait_for(done.wait(), 4 * TIMEOUT)  # 500 streams under coverage on 2 cores
        assert errors == []
        return "".join(text)

    async def main() -> tuple[list[str], int]:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=0)
        async with EchoServer() as server, httpx.AsyncClient(limits=limits, timeout=30) as client:
            answers = await asyncio.gather(*(one(client, server.url, i) for i in range(streams)))
            return answers, server.served

    answers, served = asyncio.run(main())
    assert answers == [f"echo: stream {i}" for i in range(streams)]
    assert served == streams


# --------------------------------------------------------------------------- fairness


def longest_run(order: list[int]) -> int:
    longest = run = 0
    previous = None
    for who in order:
        run = run + 1 if who == previous else 1
        previous = who
        longest = max(longest, run)
    return longest


def test_streams_whose_data_is_always_ready_interleave_on_one_loop() -> None:
    # An async generator that never awaits anything real never suspends: without
    # a yield per read, the first stream would run to its end before the others.
    streams, lines = 5, 200
    order: list[int] = []

    async def ready(n: int) -> AsyncIterator[str]:
        for i in range(n):
            yield f"data: {i}\n\n"

    async def main() -> None:
        done = [asyncio.Event() for _ in range(streams)]
        for who in range(streams):
            rs.from_lines(ready(lines)).subscribe(
                functools.partial(lambda who, _: order.append(who), who),
                on_completed=done[who].set,
            )
        await asyncio.wait_for(asyncio.gather(*(d.wait() for d in done)), TIMEOUT)

    asyncio.run(main())
    assert sorted(order) == sorted(who for who in range(streams) for _ in range(lines * 2))
    switches = sum(1 for a, b in itertools.pairwise(order) if a != b)
    assert switches >= streams * lines // 2  # one whole stream at a time would be 4
    assert longest_run(order) <= 4  # each read is two lines: one read per turn


def test_a_fast_http_stream_does_not_starve_a_slow_one(fake_llm_server: FakeLLMServer) -> None:
    # The fast answer arrives in one burst; the slow one trickles. The slow
    # stream's lines must show up while the fast one is still being read.
    fast_answer = Scenario.text(*(f"f{i}" for i in range(2000)))
    slow_answer = Scenario.text("s1", "s2", "s3", delay=0.005)
    fake_llm_server.serve(slow_answer, fast_answer)
    order: list[str] = []

    async def main() -> None:
        async with httpx.AsyncClient() as client:
            done = [asyncio.Event(), asyncio.Event()]
            for name, event in zip(("a", "b"), done, strict=True):
                rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(
                    rs.sse_frames()
                ).subscribe(
                    functools.partial(lambda name, _: order.append(name), name),
                    on_completed=event.set,
                )
            await asyncio.wait_for(asyncio.gather(*(d.wait() for d in done)), TIMEOUT)

    asyncio.run(main())
    # Which request got which answer depends on which connection the server saw first.
    fast, slow = sorted("ab", key=order.count, reverse=True)
    assert order.count(fast) == 2000 + 4  # role, pieces, finish, usage, [DONE]
    assert order.count(slow) == 3 + 4
    first_fast, last_fast = order.index(fast), len(order) - 1 - order[::-1].index(fast)
    slow_during_fast = order[first_fast:last_fast].count(slow)
    assert slow_during_fast >= 1, "the slow stream waited for the whole fast one"
