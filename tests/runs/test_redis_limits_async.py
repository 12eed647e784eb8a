"""rs.RedisLimiter with an async Redis client (`redis.asyncio`), on a real redis-server."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
import redis.asyncio
from reactivex.testing import TestScheduler
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

import rxstream as rs
from rxstream.io.limits import Ask, Ticket
from rxstream.testing import FakeLLMServer, Scenario
from rxstream.testing.builders import ChatStream
from rxstream.testing.redis_server import RedisServer


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer() as running:
        yield running


def async_client(server: RedisServer) -> Any:
    """An async client that fails at once when Redis is away (no retries)."""
    return redis.asyncio.Redis(host=server.host, port=server.port, retry=Retry(NoBackoff(), 0))


class AsyncProbe:
    """A RedisLimiter with an async client, on virtual time; run inside the event loop."""

    def __init__(self, server: RedisServer, name: str = "t", **bounds: Any) -> None:
        self.scheduler = TestScheduler()
        self.redis = async_client(server)
        with server.client() as sync:  # as if the limiter had been in Redis for long
            sync.set(f"{{{name}}}:state", 0, nx=True)
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

    def ask(self, name: str, tokens: int = 1) -> Any:
        def admitted(ticket: Ticket) -> None:
            self.admitted[name] = self.scheduler.clock
            self.tickets[name] = ticket

        return self.limiter.admit(
            Ask("r", tokens), admitted, lambda error: self.errors.__setitem__(name, error)
        )

    async def settle(self) -> None:
        """Until the limiter's tasks (scripts, and what they start) have all ended."""
        while self.limiter._tasks:
            await asyncio.gather(*list(self.limiter._tasks))

    async def advance_to(self, seconds: int) -> None:
        """Virtual time to `seconds`, a second at a time, letting the scripts answer."""
        await self.settle()
        while self.scheduler.clock < seconds:
            self.scheduler.advance_by(1)
            await self.settle()


def test_an_async_client_keeps_the_budgets_and_frees_slots(server: RedisServer) -> None:
    async def main() -> AsyncProbe:
        p = AsyncProbe(server, requests_per_minute=2, concurrency=2)
        for name in "abcd":
            p.ask(name)
        assert p.admitted == {}  # admit returned at once: the scripts run as tasks
        p.scheduler.schedule_absolute(5, lambda *_: p.tickets["a"].release(None))
        p.scheduler.schedule_absolute(6, lambda *_: p.tickets["b"].release(None))
        await p.advance_to(200)
        await p.redis.aclose()
        return p

    p = asyncio.run(main())
    assert p.admitted == {"a": 0, "b": 0, "c": 60, "d": 60}
    assert (p.limiter.waiting, p.limiter.running) == (0, 2)


def test_a_429_and_a_withdrawal_with_an_async_client(server: RedisServer) -> None:
    async def main() -> AsyncProbe:
        p = AsyncProbe(server, concurrency=1)
        p.ask("a")
        await p.settle()
        p.tickets["a"].answered(429, {"retry-after": "5"})
        withdraw = p.ask("b")
        p.ask("c")
        withdraw()
        p.tickets["a"].release(rs.Usage(3, 4, 7))
        await p.advance_to(20)
        await p.redis.aclose()
        return p

    p = asyncio.run(main())
    assert p.admitted == {"a": 0, "c": 5}  # held by the 429 until its Retry-After
    assert p.limiter.waiting == 0


def test_an_admission_leaves_the_loop_free_while_redis_is_slow(server: RedisServer) -> None:
    """While Redis holds every command (CLIENT PAUSE), the loop goes on running other
    tasks; the admission comes once Redis answers."""

    async def main() -> tuple[int, bool, float]:
        store = async_client(server)
        limiter = rs.RedisLimiter(store, "slow", concurrency=1)
        with server.client() as sync:
            sync.set("{slow}:state", 0)
            sync.execute_command("CLIENT", "PAUSE", 2000, "ALL")
        admitted = asyncio.get_running_loop().create_future()
        limiter.admit(Ask("r", 1), admitted.set_result, admitted.set_exception)
        ticks = 0
        for _ in range(10):  # the loop is free: this task runs while the script waits
            await asyncio.sleep(0.01)
            ticks += 1
        waiting = not admitted.done()
        ticket = await asyncio.wait_for(admitted, 30)
        ticket.release(None)
        while limiter._tasks:
            await asyncio.gather(*list(limiter._tasks))
        leases = await store.zcard("{slow}:leases")
        await store.aclose()
        return ticks, waiting, leases

    ticks, waiting, leases = asyncio.run(main())
    assert (ticks, waiting, leases) == (10, True, 0)


def test_requests_from_other_threads_are_admitted_on_the_limiters_loop(
    server: RedisServer,
) -> None:
    async def main() -> tuple[set[int], int]:
        store = async_client(server)
        limiter = rs.RedisLimiter(store, "threads", concurrency=2)
        with server.client() as sync:
            sync.set("{threads}:state", 0)
        loop = asyncio.get_running_loop()
        threads_seen: set[int] = set()
        done: asyncio.Queue[Ticket] = asyncio.Queue()

        def admitted(ticket: Ticket) -> None:
            threads_seen.add(threading.get_ident())
            loop.call_soon_threadsafe(done.put_nowait, ticket)

        first = loop.create_future()
        limiter.admit(Ask("r", 1), first.set_result, first.set_exception)
        (await first).release(None)  # the loop is the limiter's from here
        others = [
            threading.Thread(target=limiter.admit, args=(Ask("r", 1), admitted, print))
            for _ in range(4)
        ]
        for thread in others:
            thread.start()
        for thread in others:
            thread.join()
        for _ in range(4):
            (await asyncio.wait_for(done.get(), 30)).release(None)
        while limiter._tasks:
            await asyncio.gather(*list(limiter._tasks))
        await store.aclose()
        return threads_seen, limiter.running

    threads_seen, running = asyncio.run(main())
    assert threads_seen == {threading.get_ident()}  # asyncio.run's loop runs on this thread
    assert running == 0


def test_an_async_client_asked_where_no_loop_runs_is_a_limiter_error(
    server: RedisServer,
) -> None:
    limiter = rs.RedisLimiter(async_client(server), "noloop")
    errors: list[Exception] = []
    limiter.admit(Ask("r", 1), lambda ticket: None, errors.append)
    [error] = errors
    assert isinstance(error, rs.LimiterError)
    assert "an async Redis client runs on an event loop, and none runs here" in str(error)


def test_redis_away_is_a_limiter_error_with_an_async_client(server: RedisServer) -> None:
    async def main() -> AsyncProbe:
        p = AsyncProbe(server)
        server.stop()
        p.ask("a")
        await p.settle()
        await p.redis.aclose()
        return p

    p = asyncio.run(main())
    assert str(p.errors["a"]).startswith(
        f"RedisLimiter 't': Redis at 127.0.0.1:{server.port} failed while admitting a request: "
        "ConnectionError"
    )


def test_rs_chat_streams_admitted_by_an_async_redis_limiter(server: RedisServer) -> None:
    stream = ChatStream().role().text("one ", "answer").finish("stop").usage(5, 2).done()
    answer = Scenario.from_stream(stream)

    async def main() -> tuple[list[str], int, int]:
        store = async_client(server)
        limiter = rs.RedisLimiter(store, "chat", concurrency=1, requests_per_minute=100)
        with FakeLLMServer(answer) as fake, server.client() as sync:
            sync.set("{chat}:state", 0)
            async with httpx.AsyncClient() as client:

                async def one(n: int) -> str:
                    deltas = rs.chat(
                        client,
                        "openai-chat",
                        model="m",
                        messages=[{"role": "user", "content": f"question {n}"}],
                        api_key="k",
                        base_url=fake.base_url,
                        limiter=limiter,
                    ).pipe(rs.accumulate_message())
                    messages = [m async for m in rs.to_async_iterator(deltas)]
                    return messages[0].content

                texts = await asyncio.gather(*(one(n) for n in range(3)))
        while limiter._tasks:
            await asyncio.gather(*list(limiter._tasks))
        leases = await store.zcard("{chat}:leases")
        await store.aclose()
        return list(texts), leases, limiter.running

    texts, leases, running = asyncio.run(main())
    assert texts == ["one answer"] * 3
    assert (leases, running) == (0, 0)


def test_a_sync_client_is_still_run_on_the_asking_thread(server: RedisServer) -> None:
    sync: redis.Redis = server.client()
    limiter = rs.RedisLimiter(sync, "sync", concurrency=1)
    sync.set("{sync}:state", 0)
    tickets: list[Ticket] = []
    limiter.admit(Ask("r", 1), tickets.append, print)
    assert len(tickets) == 1  # admitted before admit returned
    tickets[0].release(None)
    assert sync.zcard("{sync}:leases") == 0
    sync.close()
