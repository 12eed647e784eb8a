"""Disposal races: after `dispose()` the reader is gone within seconds, every time.

The race this guards against: `from_request(..., scheduler=NewThreadScheduler())`
against a server that sends the headers and then nothing, disposed 0-10 ms
after subscribing while another process loads the CPU. Closing the socket from
the disposing thread let its descriptor be reused by the next connection while
the reader was about to poll it, and about 5 runs in 1,000 left the reader
blocked for good. Now the disposer only shuts the socket down, and can do so
while `client.send` still waits for the headers too.

Each stress test is bounded in count and in time (it stops early, after a
minimum of runs, when the machine is slow) and asserts on every run.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from reactivex.abc import DisposableBase
from reactivex.scheduler import NewThreadScheduler

import rxstream as rs
from rxstream.testing.server import FakeLLMServer, RecordedRequest, WireAnswer
from tests.support.sources import TIMEOUT, Outcome, tls_context

PAYLOAD = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}

#: Runs of each stress test, and the time after which it stops early.
RUNS = 300
BUDGET = 12.0
#: The fewest runs that still count as a test of the race.
MIN_RUNS = 60
#: How long a reader may take to be gone after dispose(). The bug this guards against
#: leaves a reader blocked for good; a busy machine may delay a thread's last steps by far
#: more than the usual few milliseconds, so the margin is wide.
GONE_WITHIN = 5.0


@pytest.fixture
def cpu_load() -> Iterator[None]:
    """Another process that keeps one core busy for the length of the test."""
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield
    finally:
        burner.kill()
        burner.wait(TIMEOUT)


class Readers:
    """A `NewThreadScheduler` whose threads are named and remembered, so none can hide.

    Each thread notes when it ended (`ended`, by name, `time.monotonic()`).
    """

    def __init__(self, prefix: str = "rxstream-reader") -> None:
        self.prefix = prefix
        self.threads: list[threading.Thread] = []
        self.ended: dict[str, float] = {}
        self.scheduler = NewThreadScheduler(thread_factory=self._make)

    def _make(self, target: Callable[..., None]) -> threading.Thread:
        name = f"{self.prefix}-{len(self.threads)}"

        def run() -> None:
            try:
                target()
            finally:
                self.ended[name] = time.monotonic()

        thread = threading.Thread(target=run, name=name, daemon=True)
        self.threads.append(thread)
        return thread

    def late(self, disposed_at: float, within: float) -> list[str]:
        """The threads that ended (or still run) more than `within` s after `disposed_at`."""
        now = time.monotonic()
        late = []
        for thread in self.threads:
            ended = self.ended.get(thread.name)
            after = (now if ended is None else ended) - disposed_at
            if after > within:
                how = "still running" if ended is None else "ended"
                late.append(f"{thread.name} {how} {after:.2f} s after dispose")
        return late

    def stuck_after(self, seconds: float) -> list[str]:
        """The readers still alive `seconds` from now (joined meanwhile)."""
        deadline = time.monotonic() + seconds
        for thread in list(self.threads):
            thread.join(max(0.0, deadline - time.monotonic()))
        return [thread.name for thread in self.threads if thread.is_alive()]


def headers_then_nothing(request: RecordedRequest) -> WireAnswer:
    return WireAnswer.stream(then="stall")


def stress(run_once: Callable[[int], str | None]) -> None:
    """Run `run_once(i)` up to RUNS times within BUDGET; every failure it reports is kept."""
    failures: list[str] = []
    started = time.monotonic()
    runs = 0
    for i in range(RUNS):
        if time.monotonic() - started > BUDGET and runs >= MIN_RUNS:
            break
        failure = run_once(i)
        runs += 1
        if failure is not None:
            failures.append(f"run {i}: {failure}")
    assert failures == [], f"{len(failures)} of {runs} runs failed:\n" + "\n".join(failures[:10])
    assert runs >= MIN_RUNS


def test_the_reader_thread_is_gone_within_a_second_of_dispose_under_load(
    cpu_load: None,
) -> None:
    # The runs overlap, as streams in a program do: the next one connects while the
    # last one's reader may still be on its way out, so a descriptor closed under a
    # reader would be handed to the next connection (the race this test is for).
    rng = random.Random(10)
    runs: list[tuple[Readers, float, Outcome]] = []
    with (
        FakeLLMServer.scripted(headers_then_nothing) as server,
        httpx.Client(verify=tls_context()) as client,
    ):

        def run_once(i: int) -> str | None:
            readers = Readers(f"rxstream-reader-{i}")
            outcome = Outcome()
            subscription = rs.from_request(
                client, "POST", server.url, json=PAYLOAD, scheduler=readers.scheduler
            ).subscribe(outcome.on_next, outcome.on_error, outcome.on_completed)
            time.sleep(rng.uniform(0.0, 0.010))
            subscription.dispose()
            runs.append((readers, time.monotonic(), outcome))
            # Keep the overlap bounded: what is late by now is already a failure.
            if len(runs) > 20:
                readers_, disposed_at, _ = runs[-21]
                late = readers_.late(disposed_at, GONE_WITHIN)
                if late:
                    return f"late readers: {late}"
            return None

        stress(run_once)
        time.sleep(GONE_WITHIN)
        failures = [
            f"late readers: {readers.late(disposed_at, GONE_WITHIN)}"
            for readers, disposed_at, _ in runs
            if readers.late(disposed_at, GONE_WITHIN)
        ]
        failures += [
            f"a terminal call after dispose: {outcome.error or 'completed'}"
            for _, _, outcome in runs
            if outcome.ended.is_set()
        ]
        assert failures == [], f"{len(failures)} of {len(runs)} runs:\n" + "\n".join(failures[:10])
        # Every connection the runs opened was closed: the server saw each client leave.
        opened = len(server.requests)
        assert server.wait_for_disconnect(TIMEOUT, count=opened), (server.disconnects, opened)


@pytest.mark.parametrize("reused", [False, True], ids=["new-connection", "keep-alive-connection"])
def test_dispose_while_send_waits_for_the_headers(reused: bool) -> None:
    # The server reads the request and then sends nothing, not even a status line:
    # the reader is inside client.send(). With a keep-alive connection that an
    # earlier answer left in the pool, no connect step announces the socket.
    def answer(request: RecordedRequest) -> WireAnswer:
        if request.query.get("first"):
            return WireAnswer.stream('data: {"a":1}\n\n', keep_alive=True)
        return WireAnswer(hold=True)

    # Far beyond the test: only the dispose can end the wait.
    client = httpx.Client(verify=tls_context(), timeout=httpx.Timeout(30.0))
    with FakeLLMServer.scripted(answer) as server, client:
        if reused:
            first = rs.from_request(client, "POST", server.url + "?first=1", json=PAYLOAD)
            assert first.pipe(rs.sse_frames()).run().data == '{"a":1}'
        for attempt in range(1, 4):
            readers = Readers()
            outcome = Outcome()
            subscription = rs.from_request(
                client, "POST", server.url, json=PAYLOAD, scheduler=readers.scheduler
            ).subscribe(outcome.on_next, outcome.on_error, outcome.on_completed)
            assert server.wait_for_requests(attempt + int(reused), TIMEOUT)
            time.sleep(0.05)  # now the reader is blocked waiting for the status line
            subscription.dispose()
            assert readers.stuck_after(GONE_WITHIN) == []
            assert server.wait_for_disconnect(TIMEOUT, count=attempt)
            assert not outcome.ended.is_set()
        if reused:
            # The held request did travel on the connection the first answer left open.
            assert server.requests[1].connection == server.requests[0].connection


def test_a_callers_own_trace_callback_still_runs() -> None:
    events: list[str] = []

    def trace(event: str, info: Any) -> None:
        events.append(event)

    with (
        FakeLLMServer.scripted(lambda r: WireAnswer.stream('data: {"a":1}\n\n')) as server,
        httpx.Client(verify=tls_context()) as client,
    ):
        source = rs.from_request(
            client, "POST", server.url, json=PAYLOAD, extensions={"trace": trace}
        )
        assert source.pipe(rs.sse_frames()).run().data == '{"a":1}'
    assert "connection.connect_tcp.complete" in events
    assert "http11.receive_response_headers.complete" in events


# --------------------------------------------------------------------------- async


async def _disposed_async(client: httpx.AsyncClient, url: str, delay: float, how: str) -> Outcome:
    outcome = Outcome()
    source = rs.from_request(client, "POST", url, json=PAYLOAD)
    if how == "dispose":
        subscription: DisposableBase = source.subscribe(
            outcome.on_next, outcome.on_error, outcome.on_completed
        )
        await asyncio.sleep(delay)
        subscription.dispose()
    else:  # cancel a task that awaits the stream
        task = asyncio.ensure_future(_await(source))
        await asyncio.sleep(delay)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    return outcome


async def _await(source: Any) -> Any:
    return await source


@pytest.mark.parametrize("how", ["dispose", "cancel"])
@pytest.mark.parametrize("hold", [False, True], ids=["headers-then-nothing", "no-headers"])
def test_async_dispose_or_cancel_closes_the_connection_promptly(
    cpu_load: None, how: str, hold: bool
) -> None:
    rng = random.Random(11)

    def answer(request: RecordedRequest) -> WireAnswer:
        return WireAnswer(hold=True) if hold else WireAnswer.stream(then="stall")

    async def main(server: FakeLLMServer) -> None:
        async with httpx.AsyncClient(verify=tls_context()) as client:

            async def run_once(i: int) -> str | None:
                outcome = await _disposed_async(client, server.url, rng.uniform(0, 0.010), how)
                opened = len(server.requests)
                # Whatever the client opened for this run, it has let go of within GONE_WITHIN.
                gone = await asyncio.to_thread(
                    server.wait_for_disconnect, GONE_WITHIN, count=opened
                )
                if not gone:
                    return f"{opened - server.disconnects} connection(s) still open after 1 s"
                if outcome.ended.is_set():
                    return f"a terminal call after dispose: {outcome.error or 'completed'}"
                return None

            failures: list[str] = []
            started = time.monotonic()
            runs = 0
            for i in range(RUNS // 3):
                if time.monotonic() - started > BUDGET / 3 and runs >= MIN_RUNS // 3:
                    break
                failure = await run_once(i)
                runs += 1
                if failure is not None:
                    failures.append(f"run {i}: {failure}")
            assert failures == [], f"{len(failures)} of {runs} failed:\n" + "\n".join(failures)

    with FakeLLMServer.scripted(answer) as server:
        asyncio.run(main(server))
