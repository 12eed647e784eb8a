"""rs.Limiter over real sockets: rs.chat and rs.from_request from threads and asyncio, rs.chats."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import pytest
import reactivex.operators as ops
from reactivex.scheduler import ThreadPoolScheduler
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.io.limits import Admission, Ask, Ticket, ask_for
from rxstream.testing import rate_limit_headers
from rxstream.testing.server import FakeLLMServer, Scenario

HI = [{"role": "user", "content": "Hi"}]
KEY = "sk-unit-0123"


class Spy:
    """An `Admission` in front of a limiter that records what reaches it."""

    def __init__(self, limiter: rs.Limiter) -> None:
        self.limiter = limiter
        self.most = 0
        self.asks: list[Ask] = []
        self.answers: list[tuple[int, dict[str, str]]] = []
        self.usages: list[rs.Usage | None] = []
        self._lock = threading.Lock()

    def admit(
        self, ask: Ask, admitted: Callable[[Ticket], None], failed: Callable[[Exception], None]
    ) -> Callable[[], None]:
        self.asks.append(ask)
        spy = self

        class Watched:
            def __init__(self, ticket: Ticket) -> None:
                self.ticket = ticket

            def answered(self, status: int, headers: Mapping[str, str]) -> None:
                spy.answers.append((status, {k.lower(): v for k, v in headers.items()}))
                self.ticket.answered(status, headers)

            def release(self, usage: rs.Usage | None) -> None:
                spy.usages.append(usage)
                self.ticket.release(usage)

        def watched(ticket: Ticket) -> None:
            with self._lock:
                self.most = max(self.most, self.limiter.running)
            admitted(Watched(ticket))

        return self.limiter.admit(ask, watched, failed)


def paced() -> Scenario:
    # A few ms between pieces: streams overlap, so the bound is what holds them apart.
    return Scenario.text("Hel", "lo").paced(0.01)


def chat(client: Any, server: FakeLLMServer, limiter: Admission, **kwargs: Any) -> Any:
    return rs.chat(
        client,
        "openai-chat",
        model="m",
        messages=HI,
        api_key=KEY,
        base_url=server.base_url,
        limiter=limiter,
        **kwargs,
    )


def test_threads_share_the_concurrency_bound() -> None:
    spy = Spy(rs.Limiter(concurrency=2))
    texts: list[str] = []
    foreign: list[str] = []
    with FakeLLMServer(paced()) as server, httpx.Client() as client:

        def one() -> None:
            # On the current thread: subscribe waits here for its turn, then streams here.
            me = threading.current_thread()

            def take(message: rs.Message) -> None:
                if threading.current_thread() is not me:
                    foreign.append(threading.current_thread().name)
                texts.append(message.content)

            chat(client, server, spy).pipe(rs.accumulate_message()).subscribe(take)

        threads = [threading.Thread(target=one) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert texts == ["Hello"] * 6
    assert foreign == []
    assert spy.most <= 2
    assert spy.limiter.running == 0
    assert spy.limiter.waiting == 0
    assert all(u is not None and u.total_tokens == 7 for u in spy.usages)


def test_asyncio_streams_share_the_concurrency_bound() -> None:
    spy = Spy(rs.Limiter(concurrency=3))

    async def main() -> list[str]:
        with FakeLLMServer(paced()) as server:
            async with httpx.AsyncClient() as client:
                answers = [
                    chat(client, server, spy).pipe(rs.accumulate_message()) for _ in range(8)
                ]
                return [m.content for m in await asyncio.gather(*(_last(a) for a in answers))]

    assert asyncio.run(main()) == ["Hello"] * 8
    assert spy.most <= 3
    assert spy.limiter.running == 0


async def _last(observable: Any) -> Any:
    return await observable


def test_the_answers_usage_corrects_the_token_estimate() -> None:
    limiter = rs.Limiter(tokens_per_minute=10_000)
    with FakeLLMServer(Scenario.text("Hel", "lo")) as server, httpx.Client() as client:
        chat(client, server, limiter, max_tokens=500).pipe(ops.to_list()).run()
    assert limiter.tokens_spent == 7  # Scenario.text reports 5 prompt + 2 completion tokens


def test_a_429_with_retry_after_holds_the_route_for_the_next_request() -> None:
    scheduler = TestScheduler()
    spy = Spy(rs.Limiter(scheduler=scheduler))
    rejected = Scenario.error(429, "slow down", headers={"Retry-After": "30"})
    with (
        FakeLLMServer(rejected) as server,
        httpx.Client() as client,
        pytest.raises(rs.HTTPStatusError) as caught,
    ):
        chat(client, server, spy).run()
    assert caught.value.status_code == 429
    assert spy.answers[0][0] == 429
    assert spy.answers[0][1]["retry-after"] == "30"
    admitted: list[float] = []
    spy.limiter.admit(spy.asks[0], lambda _: admitted.append(scheduler.clock), print)
    scheduler.advance_to(29.9)
    assert admitted == []
    scheduler.advance_to(30)
    assert admitted == [30]


def test_rate_limit_headers_of_a_streamed_answer_reach_the_limiter() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1m0s",
        "x-ratelimit-remaining-tokens": "9000",
    }
    scenario = Scenario(steps=Scenario.text("ok").steps, headers=headers)
    scheduler = TestScheduler()
    limiter = rs.Limiter(scheduler=scheduler)
    with FakeLLMServer(scenario) as server, httpx.Client() as client:
        deltas = chat(client, server, limiter).pipe(ops.to_list()).run()
        ask = ask_for(server.url, b'{"model": "m", "messages": []}')
    assert rs.TextDelta("ok") in deltas
    admitted: list[float] = []
    limiter.admit(ask, lambda _: admitted.append(scheduler.clock), print)
    scheduler.advance_to(59)
    assert admitted == []
    scheduler.advance_to(60)
    assert admitted == [60]


def test_from_request_waits_for_its_turn_in_both_spellings() -> None:
    spy = Spy(rs.Limiter(requests_per_minute=10))
    with FakeLLMServer() as server, httpx.Client() as client:
        built = rs.request(
            "anthropic",
            model="m",
            messages=HI,
            api_key=KEY,
            base_url=f"http://127.0.0.1:{server.port}",
        )
        lines = rs.from_request(client, built, limiter=spy).pipe(ops.to_list()).run()
        payload = {"model": "m", "stream": True, "messages": HI, "max_tokens": 100}
        again = rs.from_request(client, "POST", server.url, json=payload, limiter=spy)
        more = again.pipe(ops.to_list()).run()
        port = server.port
    assert any("message_stop" in line for line in lines)
    assert "data: [DONE]" in more
    assert [a.route for a in spy.asks] == [
        f"127.0.0.1:{port}/v1/messages m",
        f"127.0.0.1:{port}/v1/chat/completions m",
    ]
    assert spy.asks[1].tokens >= 100  # the prompt and max_tokens
    assert spy.usages == [None, None]  # lines carry no usage: the estimate stands


def test_disposing_a_queued_request_never_sends_it() -> None:
    limiter = rs.Limiter(concurrency=1)

    async def main() -> int:
        with FakeLLMServer(paced()) as server:
            async with httpx.AsyncClient() as client:
                first = asyncio.ensure_future(_last(chat(client, server, limiter)))
                await asyncio.sleep(0)
                assert limiter.running == 1
                queued = chat(client, server, limiter).subscribe(lambda _: None, print)
                assert limiter.waiting == 1
                queued.dispose()
                await first
                await asyncio.sleep(0)
                return len(server.requests)

    assert asyncio.run(main()) == 1
    assert limiter.running == 0
    assert limiter.waiting == 0


def test_a_sync_stream_on_a_pool_starts_once_admitted() -> None:
    limiter = rs.Limiter(concurrency=1)
    pool = ThreadPoolScheduler(2)
    done = threading.Event()
    seen: list[str] = []
    with FakeLLMServer(paced()) as server, httpx.Client() as client:
        for _ in range(2):
            chat(client, server, limiter, scheduler=pool).pipe(rs.accumulate_message()).subscribe(
                lambda m: seen.append(m.content), on_completed=lambda: len(seen) == 2 and done.set()
            )
        assert done.wait(10)
    assert seen == ["Hello", "Hello"]


def test_a_request_over_the_budget_fails_with_a_limiter_error() -> None:
    limiter = rs.Limiter(tokens_per_minute=50)
    with FakeLLMServer() as server, httpx.Client() as client:
        with pytest.raises(rs.LimiterError, match="more than tokens_per_minute=50"):
            chat(client, server, limiter, max_tokens=100).run()
        assert server.requests == []


# -- rs.chats ---------------------------------------------------------------------------


def test_chats_keeps_each_answer_with_its_request() -> None:
    spy = Spy(rs.Limiter(concurrency=2))
    with FakeLLMServer.echoing() as server, httpx.Client() as client:
        asks: list[Any] = [
            {
                "dialect": "openai-chat",
                "model": "m",
                "messages": [{"role": "user", "content": f"prompt {n}"}],
                "api_key": KEY,
                "base_url": server.base_url,
            }
            for n in range(5)
        ]
        asks.append(
            rs.request(
                "anthropic",
                model="model-5",
                messages=HI,
                api_key=KEY,
                base_url=f"http://127.0.0.1:{server.port}",
                headers={"x-rxstream-fault": "429"},
            )
        )
        results = rs.chats(client, asks, limiter=spy, max_concurrent=3).pipe(ops.to_list()).run()
    assert sorted(r.index for r in results) == list(range(6))
    by_index = {r.index: r for r in results}
    for n in range(5):
        result = by_index[n]
        assert result.ok
        assert result.request is asks[n]
        assert result.message is not None
        assert f"prompt {n}" in result.message.content
    failed = by_index[5]
    assert not failed.ok
    assert failed.message is None
    assert isinstance(failed.error, rs.HTTPStatusError)
    assert failed.error.status_code == 429


def test_chats_takes_an_observable_and_runs_async() -> None:
    import reactivex

    limiter = rs.Limiter(concurrency=2)

    async def main() -> list[rs.ChatResult]:
        with FakeLLMServer(paced()) as server:
            async with httpx.AsyncClient() as client:
                asks = reactivex.from_iterable(
                    {
                        "dialect": "openai-chat",
                        "model": "m",
                        "messages": HI,
                        "api_key": KEY,
                        "base_url": server.base_url,
                    }
                    for _ in range(4)
                )
                out: list[rs.ChatResult] = await rs.chats(client, asks, limiter=limiter).pipe(
                    ops.to_list()
                )
                return out

    results = asyncio.run(main())
    assert sorted(r.index for r in results) == [0, 1, 2, 3]
    assert all(r.message is not None and r.message.content == "Hello" for r in results)


@pytest.mark.parametrize(
    ("requests", "error", "match"),
    [
        pytest.param([{"model": "m"}], ValueError, "needs its 'dialect'", id="no-dialect"),
        pytest.param([object()], ValueError, "built by rs.request", id="not-a-request"),
    ],
)
def test_chats_refuses_what_is_not_a_request(
    requests: list[Any], error: type[Exception], match: str
) -> None:
    with httpx.Client() as client, pytest.raises(error, match=match):
        rs.chats(client, requests).run()


def test_chats_checks_max_concurrent() -> None:
    with httpx.Client() as client:
        with pytest.raises(ValueError, match="at least 1"):
            rs.chats(client, [], max_concurrent=0)
        with pytest.raises(TypeError, match="must be an int"):
            rs.chats(client, [], max_concurrent=1.5)  # type: ignore[arg-type]


@pytest.mark.parametrize("dialect", ["openai-chat", "anthropic"])
def test_the_fake_servers_rate_limit_headers_hold_the_route(dialect: str) -> None:
    scheduler = TestScheduler()
    limiter = rs.Limiter(scheduler=scheduler)
    headers = rate_limit_headers(dialect, requests=0, tokens=500, reset=90, now=0.0)
    scenario = Scenario(steps=Scenario.text("ok").steps, headers=headers)
    with FakeLLMServer(scenario) as server, httpx.Client() as client:
        root = f"http://127.0.0.1:{server.port}"
        built = rs.request(
            dialect,
            model="m",
            messages=HI,
            api_key=KEY,
            base_url=f"{root}/v1" if dialect == "openai-chat" else root,
        )
        message = (
            rs.from_request(client, built, limiter=limiter)
            .pipe(rs.sse_frames(), rs.decode(dialect), rs.accumulate_message())
            .run()
        )
    assert message.content == "ok"
    admitted: list[float] = []
    again = ask_for(built.url, built.content)
    limiter.admit(again, lambda _: admitted.append(scheduler.clock), print)
    scheduler.advance_to(89)
    assert admitted == []
    scheduler.advance_to(90)
    assert admitted == [90]


def test_rate_limit_headers_read_back_as_they_were_written() -> None:
    from rxstream.core.rate_limits import RateLimits, rate_limits

    for dialect in ("openai-responses", "anthropic", "gemini"):
        headers = rate_limit_headers(dialect, requests=3, tokens=40, reset=75.5, now=100.0)
        assert rate_limits(headers, 100.0) == RateLimits(3, 40, 75.5, 75.5)
    assert rate_limit_headers("openai-chat", tokens=1, reset=0.02) == {
        "x-ratelimit-remaining-tokens": "1",
        "x-ratelimit-reset-tokens": "20ms",
    }
    assert rate_limit_headers("cohere", retry_after=2) == {"retry-after": "2"}


@pytest.mark.parametrize(
    "dialect",
    ["openai-chat", "openai-responses", "anthropic", "gemini", "cohere", "ollama", "bedrock"],
)
def test_chat_with_a_limiter_in_every_dialect(dialect: str) -> None:
    spy = Spy(rs.Limiter(concurrency=1, tokens_per_minute=100_000))
    with FakeLLMServer() as server, httpx.Client() as client:
        root = f"http://127.0.0.1:{server.port}"
        message = (
            rs.chat(
                client,
                dialect,
                model="m",
                messages=HI,
                api_key=KEY,
                base_url=f"{root}/v1" if dialect.startswith("openai") else root,
                limiter=spy,
            )
            .pipe(rs.accumulate_message())
            .run()
        )
    assert message.content == "Hello, world!"
    assert [status for status, _ in spy.answers] == [200]
    assert len(spy.usages) == 1
    assert spy.limiter.running == 0


def test_chats_retries_a_request_that_asks_for_it() -> None:
    # A mapping is rs.chat's arguments: retry= and fallback= work there too.
    faults = ["429:retry-after=0.01", "ok"]
    with FakeLLMServer(Scenario.text("Hel", "lo"), faults=faults) as server, httpx.Client() as c:
        ask = {
            "dialect": "openai-chat",
            "model": "m",
            "messages": HI,
            "api_key": KEY,
            "base_url": server.base_url,
            "retry": rs.Retry(attempts=2, jitter=0.0),
        }
        [result] = rs.chats(c, [ask], limiter=rs.Limiter(concurrency=1)).pipe(ops.to_list()).run()
        asked = len(server.requests)
    assert result.ok, result.error
    assert result.message is not None
    assert result.message.content == "Hello"
    assert [a["error_type"] for a in result.message.metadata["attempts"]] == [
        "HTTPStatusError",
        None,
    ]
    assert asked == 2


def test_a_limiter_admits_every_attempt_on_every_route() -> None:
    spy = Spy(rs.Limiter(concurrency=1))
    with (
        FakeLLMServer(Scenario.text("Hel", "lo"), faults=["503"]) as down,
        FakeLLMServer(Scenario.text("Hi")) as up,
        httpx.Client() as client,
    ):
        fallback = rs.Route("anthropic", "m2", api_key=KEY, base_url=f"http://127.0.0.1:{up.port}")
        message = (
            chat(client, down, spy, retry=rs.Retry(attempts=1), fallback=[fallback])
            .pipe(rs.accumulate_message())
            .run()
        )
    assert message.content == "Hi"
    assert [status for status, _ in spy.answers] == [503, 200]
    assert len(spy.asks) == 2
