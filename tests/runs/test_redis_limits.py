"""rs.RedisLimiter on a real redis-server: virtual time, processes, restarts."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from reactivex.testing import TestScheduler
from redis.backoff import NoBackoff
from redis.retry import Retry

import rxstream as rs
from rxstream.io.limits import Ask, Ticket
from rxstream.testing.redis_server import RedisServer

ROOT = Path(__file__).resolve().parents[2]


#: The clients a test opened, closed when its server stops.
CLIENTS: list[redis.Redis] = []


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer() as running:
        yield running
        while CLIENTS:
            CLIENTS.pop().close()


def client(server: RedisServer) -> redis.Redis:
    """A client that fails at once when Redis is away (no retries), closed after the test."""
    made = redis.Redis(host=server.host, port=server.port, retry=Retry(NoBackoff(), 0))
    CLIENTS.append(made)
    return made


class Probe:
    """A RedisLimiter on virtual time (the scripts go by the scheduler's clock)."""

    def __init__(
        self,
        server: RedisServer,
        name: str = "t",
        *,
        scheduler: TestScheduler | None = None,
        fresh: bool = False,
        **bounds: Any,
    ) -> None:
        self.scheduler = scheduler or TestScheduler()
        self.redis = client(server)
        if not fresh:  # as if the limiter had been in Redis for long: no hold at the start
            self.redis.set(f"{{{name}}}:state", 0, nx=True)
        self.limiter = rs.RedisLimiter(
            self.redis,
            name,
            scheduler=self.scheduler,
            clock=lambda: self.scheduler.clock,
            **bounds,
        )
        self.admitted: dict[str, float] = {}
        self.tickets: dict[str, Ticket] = {}
        self.errors: dict[str, Exception] = {}

    def ask(self, name: str, tokens: int = 1, route: str = "r") -> Any:
        def admitted(ticket: Ticket) -> None:
            self.admitted[name] = self.scheduler.clock
            self.tickets[name] = ticket

        def failed(error: Exception) -> None:
            self.errors[name] = error

        return self.limiter.admit(Ask(route, tokens), admitted, failed)

    def at(self, seconds: float, action: Any) -> None:
        self.scheduler.schedule_absolute(seconds, lambda *_: action())


def test_requests_per_window_and_concurrency(server: RedisServer) -> None:
    p = Probe(server, requests_per_minute=2, concurrency=2)
    for name in "abcd":
        p.ask(name)
    p.at(5, lambda: p.tickets["a"].release(None))
    p.at(6, lambda: p.tickets["b"].release(None))
    p.scheduler.advance_to(200)
    assert p.admitted == {"a": 0, "b": 0, "c": 60, "d": 60}


def test_tokens_corrected_by_usage_and_the_whole_budget(server: RedisServer) -> None:
    p = Probe(server, tokens_per_minute=100)
    p.ask("a", 90)
    p.ask("b", 50)
    p.at(4, lambda: p.tickets["a"].release(rs.Usage(20, 10, 30)))
    p.ask("huge", 101)
    p.scheduler.advance_to(10)
    assert p.admitted == {"a": 0, "b": 4}
    assert isinstance(p.errors["huge"], rs.LimiterError)


def test_a_429_holds_the_route_in_every_process(server: RedisServer) -> None:
    p = Probe(server, name="shared")
    other = Probe(server, name="shared", scheduler=p.scheduler)  # another worker, same budget
    p.ask("a")
    p.tickets["a"].answered(429, {"retry-after": "5"})
    p.tickets["a"].release(None)
    other.ask("b")
    other.ask("elsewhere", route="other")
    p.scheduler.advance_to(20)
    assert p.admitted == {"a": 0}
    assert other.admitted == {"elsewhere": 0, "b": 5}


def test_remaining_tokens_from_headers_hold_what_does_not_fit(server: RedisServer) -> None:
    p = Probe(server)
    p.ask("a")
    p.tickets["a"].answered(
        200, {"x-ratelimit-remaining-tokens": "100", "x-ratelimit-reset-tokens": "10s"}
    )
    p.ask("fits", 60)
    p.ask("too-big", 50)
    p.scheduler.advance_to(20)
    assert p.admitted == {"a": 0, "fits": 0, "too-big": 10}


def test_a_withdrawn_request_is_never_admitted(server: RedisServer) -> None:
    p = Probe(server, concurrency=1)
    p.ask("a")
    withdraw = p.ask("b")
    p.ask("c")
    withdraw()
    p.at(3, lambda: p.tickets["a"].release(None))
    p.scheduler.advance_to(10)
    assert p.admitted == {"a": 0, "c": 3}
    assert p.limiter.waiting == 0


def test_a_dead_workers_slot_expires_with_its_lease(server: RedisServer) -> None:
    dead = Probe(server, name="w", concurrency=1, lease=30.0)
    dead.ask("a")  # admitted; then the worker "dies": its clock stops, it renews nothing
    alive = Probe(server, name="w", concurrency=1, lease=30.0, recheck=1.0)
    alive.ask("b")
    alive.scheduler.advance_to(29)
    assert alive.admitted == {}
    alive.scheduler.advance_to(31)
    assert alive.admitted == {"b": 30}


def test_redis_away_is_a_limiter_error_naming_redis(server: RedisServer) -> None:
    p = Probe(server)
    server.stop()
    p.ask("a")
    error = p.errors["a"]
    assert isinstance(error, rs.LimiterError)
    assert isinstance(error, rs.StreamError)
    assert str(error).startswith(
        f"RedisLimiter 't': Redis at 127.0.0.1:{server.port} failed while admitting a request: "
        "ConnectionError"
    )


def test_redis_restarted_without_its_data_holds_admissions_for_one_window(
    server: RedisServer,
) -> None:
    p = Probe(server, requests_per_minute=2)
    p.ask("a")
    p.ask("b")
    p.scheduler.advance_to(30)
    server.restart(keep_data=False)
    p.ask("c")  # the window of a and b is gone from Redis: hold a whole window from now
    p.scheduler.advance_to(200)
    # Held until a window after Redis started: its uptime is told in whole seconds (0 or 1).
    assert p.admitted.keys() == {"a", "b", "c"}
    assert 89 <= p.admitted["c"] <= 90


def test_a_limiter_new_to_a_redis_that_just_started_holds_one_window(
    server: RedisServer,
) -> None:
    p = Probe(server, fresh=True, requests_per_minute=5)
    p.scheduler.advance_to(10)
    p.ask("a")  # Redis is up for less than a window: what did it hold before it started?
    p.scheduler.advance_to(200)
    assert 69 <= p.admitted["a"] <= 70  # a window after Redis started (its uptime: 0 or 1 s)


def test_redis_restarted_with_its_data_goes_on_where_it_was(server: RedisServer) -> None:
    p = Probe(server, requests_per_minute=2)
    p.ask("a")
    p.ask("b")
    p.scheduler.advance_to(30)
    server.restart(keep_data=True)
    p.ask("c")
    p.scheduler.advance_to(200)
    assert p.admitted == {"a": 0, "b": 0, "c": 60}


def test_arguments_are_checked(server: RedisServer) -> None:
    sync = client(server)
    with pytest.raises(ValueError, match="name must be a non-empty str"):
        rs.RedisLimiter(sync, "")
    with pytest.raises(ValueError, match="lease must be a positive number of seconds"):
        rs.RedisLimiter(sync, "n", lease=0)

    assert repr(rs.RedisLimiter(sync, "n")) == f"RedisLimiter('n' at 127.0.0.1:{server.port})"


def _over(times: list[float], bound: int, window: float) -> list[float]:
    """The admissions that found `bound` others within `window` before them."""
    times = sorted(times)
    return [t for i, t in enumerate(times) if i >= bound and t - times[i - bound] < window]


def test_processes_share_one_budget_through_a_restart(server: RedisServer) -> None:
    workers, count, rpm, concurrency, window = 3, 8, 6, 2, 0.5
    command = [sys.executable, "-m", "tests.runs.redis_worker", str(server.port), "job"]
    procs = [
        subprocess.Popen(
            [*command, str(count), str(rpm), str(concurrency), str(window)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(workers)
    ]
    outputs: list[str] = []
    readers = [
        threading.Thread(target=lambda p=p: outputs.append(p.communicate(timeout=60)[0]))
        for p in procs
    ]
    for reader in readers:
        reader.start()
    probe = client(server)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and probe.zcard("{job}:requests") < rpm:
        time.sleep(0.01)  # until the run is under way: then Redis goes away mid-run
    try:
        server.stop()  # away for longer than a window: the waiting workers find it gone
        time.sleep(window * 1.5)
        server.start()  # on the same port, without its data
        for reader in readers:
            reader.join()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert [p.returncode for p in procs] == [0] * workers
    events = [json.loads(line) for out in outputs for line in out.splitlines()]
    admits = [e["at"] for e in events if e["event"] == "admit"]
    assert len(admits) == workers * count
    # No window ever held more than the budget (50 ms of slack for the workers' own
    # timestamps, taken after Redis admitted them).
    assert _over(admits, rpm, window - 0.05) == []
    spans = sorted(
        (e["at"], 1 if e["event"] == "admit" else -1) for e in events if e["event"] != "error"
    )
    running = most = 0
    for _, step in spans:
        running += step
        most = max(most, running)
    assert most <= concurrency
    errors = [e for e in events if e["event"] == "error"]
    assert errors  # the workers met Redis away, and went on once it was back
    for error in errors:
        assert error["type"] == "LimiterError"
        assert f"RedisLimiter 'job': Redis at 127.0.0.1:{server.port} failed" in error["message"]


def test_a_concurrency_bound_alone_starts_at_once_on_a_new_redis(server: RedisServer) -> None:
    p = Probe(server, fresh=True, concurrency=1)
    p.ask("a")
    assert p.admitted == {"a": 0}
