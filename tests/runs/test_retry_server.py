"""`rs.chat(..., retry=, fallback=)` against `FakeLLMServer` on 127.0.0.1, waits on virtual time."""

from __future__ import annotations

import asyncio
import itertools
import threading
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from reactivex import Observable, Subject
from reactivex import operators as ops
from reactivex.scheduler import HistoricalScheduler

import rxstream as rs
from rxstream.core.message import MessageAccumulator
from rxstream.runs import retry as retry_module
from rxstream.testing import FAULT_HEADER, FakeLLMServer, Scenario

DIALECTS = ["openai-chat", "openai-responses", "anthropic", "gemini", "cohere", "ollama", "bedrock"]
ASK = [{"role": "user", "content": "Hi"}]
START = datetime(2026, 1, 1, tzinfo=UTC)
ANSWER = Scenario.answer(
    rs.ReasoningDelta("think"),
    rs.TextDelta("Hel"),
    rs.TextDelta("lo"),
    rs.Finish("stop"),
    rs.Usage(5, 2, 7),
)


def base_url(server: FakeLLMServer, dialect: str) -> str:
    root = f"http://127.0.0.1:{server.port}"
    return f"{root}/v1" if dialect.startswith("openai") else root


def chat(client: Any, server: FakeLLMServer, dialect: str, **options: Any) -> Observable[rs.Delta]:
    return rs.chat(
        client,
        dialect,
        model="m",
        messages=ASK,
        base_url=base_url(server, dialect),
        api_key="k",
        max_tokens=20,
        **options,
    )


def route(server: FakeLLMServer, dialect: str, **options: Any) -> rs.Route:
    return rs.Route(dialect, "m", base_url=base_url(server, dialect), api_key="k", **options)


@pytest.fixture(scope="module")
def answers() -> dict[str, rs.Message]:
    """The scripted answer as `rs.chat` reads it in each dialect, without any fault."""
    with FakeLLMServer(ANSWER) as server, httpx.Client() as client:
        return {
            dialect: chat(client, server, dialect).pipe(rs.accumulate_message()).run()
            for dialect in DIALECTS
        }


class Timed:
    """Runs one observable on a `HistoricalScheduler`: the items, their virtual times, the end."""

    def __init__(
        self, source: Observable[Any] | rs.Multicast[Any], scheduler: HistoricalScheduler
    ) -> None:
        self.items: list[Any] = []
        self.times: list[float] = []
        self.error: Exception | None = None
        self.done = False
        self.scheduler = scheduler
        self.subscription = source.subscribe(self.on_next, self.on_error, self.on_completed)

    def on_next(self, item: Any) -> None:
        self.items.append(item)
        self.times.append((self.scheduler.now - START).total_seconds())

    def on_error(self, error: Exception) -> None:
        self.error = error

    def on_completed(self) -> None:
        self.done = True

    def message(self) -> rs.Message:
        assert self.done, self.error
        accumulator = MessageAccumulator()
        for item in self.items:
            accumulator.feed(item)
        return accumulator.close()[0]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_429_then_the_answer_gives_the_answer_once(
    dialect: str, answers: dict[str, rs.Message]
) -> None:
    faults = ["429:retry-after=1", "error:overloaded@0", "ok"]
    scheduler = HistoricalScheduler(START)
    with FakeLLMServer(ANSWER, faults=faults) as server, httpx.Client() as client:
        run = Timed(chat(client, server, dialect, retry=rs.Retry(), scheduler=scheduler), scheduler)
        scheduler.advance_by(60.0)
        assert len(server.requests) == 3
    message = run.message()
    assert message == answers[dialect]
    assert message.blocks == answers[dialect].blocks
    attempts = message.metadata["attempts"]
    assert [a["error_type"] for a in attempts] == ["HTTPStatusError", "ProviderError", None]
    assert attempts[0]["route"] == {"dialect": dialect, "model": "m"}


@pytest.mark.parametrize(
    ("dialect", "fault", "asked"),
    [
        ("openai-chat", "429:retry-after=2", 2.0),
        ("gemini", "429:retry-after=3", 3.0),  # RetryInfo.retryDelay in the body
        ("openai-responses", "503:retry-after-ms=1500", 1.5),
        ("anthropic", "529:retry-after=4", 4.0),
        ("bedrock", "429:retry-after=1", 1.0),
    ],
)
def test_the_wait_the_server_asks_for_is_honoured_within_ten_percent(
    dialect: str, fault: str, asked: float
) -> None:
    scheduler = HistoricalScheduler(START)
    policy = rs.Retry(jitter=0.1)
    with FakeLLMServer(ANSWER, faults=[fault, "ok"]) as server, httpx.Client() as client:
        run = Timed(chat(client, server, dialect, retry=policy, scheduler=scheduler), scheduler)
        scheduler.advance_by(60.0)
        assert len(server.requests) == 2
    assert run.done
    assert asked <= run.times[0] <= asked * 1.1
    assert run.message().content == "Hello"


def test_a_server_that_stalls_before_its_first_token_is_asked_again() -> None:
    policy = rs.Retry(first=0.5, backoff=0.01)
    with FakeLLMServer(ANSWER, faults=["ok", "stall:forever@0", "ok"]) as server:
        with httpx.Client() as client:
            # A first request, so that what a process loads on its first one is not timed.
            chat(client, server, "anthropic").run()
            source = chat(client, server, "anthropic", retry=policy)
            message = source.pipe(rs.accumulate_message()).run()
        server.wait_for_disconnect()  # the stalled connection was closed
        assert len(server.requests) == 3
    assert message.content == "Hello"
    assert [a["error_type"] for a in message.metadata["attempts"]] == ["StreamTimeoutError", None]


def test_a_sync_wait_on_the_current_thread_ends_at_a_dispose_from_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waiting = threading.Event()
    sleep_then = retry_module.RetryRun._sleep_then

    def noted(run: Any, wait: float, source: Observable[rs.Delta]) -> Any:
        waiting.set()
        return sleep_then(run, wait, source)

    monkeypatch.setattr(retry_module.RetryRun, "_sleep_then", noted)
    stop: Subject[int] = Subject()
    with FakeLLMServer(ANSWER, faults=["429:retry-after=30", "ok"]) as server:
        with httpx.Client() as client:
            source = chat(client, server, "gemini", retry=rs.Retry())
            items: list[Any] = []

            def stop_when_waiting() -> None:
                assert waiting.wait(10.0)
                stop.on_next(0)  # take_until disposes the retried stream

            # The refusal starts a 30 s wait on this thread; the dispose from another
            # one ends it: subscribe returns, and no second request is sent.
            stopper = threading.Thread(target=stop_when_waiting)
            stopper.start()
            source.pipe(ops.take_until(stop)).subscribe(items.append)
            stopper.join()
        assert len(server.requests) == 1
    assert waiting.is_set()
    assert items == []


def test_a_request_that_cannot_succeed_is_sent_once() -> None:
    with FakeLLMServer(ANSWER, faults=["400", "ok"]) as server, httpx.Client() as client:
        with pytest.raises(rs.HTTPStatusError) as caught:
            chat(client, server, "anthropic", retry=rs.Retry()).pipe(rs.accumulate_message()).run()
        assert len(server.requests) == 1
    assert caught.value.status_code == 400


def test_a_closed_client_is_not_retried() -> None:
    with FakeLLMServer(ANSWER) as server:
        client = httpx.Client()
        source = chat(client, server, "openai-chat", retry=rs.Retry())
        client.close()
        with pytest.raises(rs.TransportError, match="closed") as caught:
            source.run()
        assert server.requests == []
    assert caught.value.retryable is False


def test_x_should_retry_false_is_obeyed() -> None:
    faults = ["503:should-retry=false", "ok"]
    with FakeLLMServer(ANSWER, faults=faults) as server, httpx.Client() as client:
        with pytest.raises(rs.HTTPStatusError) as caught:
            chat(client, server, "openai-chat", retry=rs.Retry()).run()
        assert len(server.requests) == 1
    assert (caught.value.status_code, caught.value.should_retry) == (503, False)


def test_the_deadline_stops_retries_with_an_error_naming_the_attempts() -> None:
    scheduler = HistoricalScheduler(START)
    policy = rs.Retry(attempts=10, deadline=5.0, jitter=0.0)
    with FakeLLMServer(ANSWER, faults=["429:retry-after=2"]) as server, httpx.Client() as client:
        run = Timed(chat(client, server, "gemini", retry=policy, scheduler=scheduler), scheduler)
        scheduler.advance_by(60.0)
        assert len(server.requests) == 3
    assert isinstance(run.error, rs.RetryError)
    text = str(run.error)
    assert text.startswith("gave up after 3 attempts (the deadline of 5 s")
    assert "1. gemini m: HTTP 429" in text
    assert "3. gemini m: HTTP 429" in text
    assert run.items == []


def test_dispose_during_a_wait_sends_no_other_request() -> None:
    scheduler = HistoricalScheduler(START)
    with FakeLLMServer(ANSWER, faults=["429:retry-after=5", "ok"]) as server:
        with httpx.Client() as client:
            source = chat(client, server, "cohere", retry=rs.Retry(), scheduler=scheduler)
            run = Timed(source, scheduler)
            scheduler.advance_by(1.0)
            run.subscription.dispose()
            scheduler.advance_by(60.0)
        assert len(server.requests) == 1
    assert run.items == []
    assert run.error is None
    assert not run.done


def test_after_output_the_error_carries_the_partial_answer() -> None:
    with FakeLLMServer(ANSWER, faults=["cut:2", "ok"]) as server, httpx.Client() as client:
        with pytest.raises(rs.StreamError) as caught:
            chat(client, server, "openai-chat", retry=rs.Retry()).pipe(
                rs.accumulate_message()
            ).run()
        assert len(server.requests) == 1
    partial = caught.value.partial
    assert partial is not None
    assert (partial.reasoning, partial.content) == ("think", "Hel")
    assert [a["error_type"] for a in partial.metadata["attempts"]] == [type(caught.value).__name__]


PAIRS = [(a, b) for a, b in itertools.product(DIALECTS, DIALECTS) if a != b]


@pytest.mark.parametrize(("first", "then"), PAIRS, ids=[f"{a}-to-{b}" for a, b in PAIRS])
def test_fallback_between_dialects(first: str, then: str, answers: dict[str, rs.Message]) -> None:
    scheduler = HistoricalScheduler(START)
    with FakeLLMServer(ANSWER) as server, httpx.Client() as client:
        source = chat(
            client,
            server,
            first,
            headers={FAULT_HEADER: "503:retry-after=1"},
            retry=rs.Retry(attempts=2),
            fallback=[route(server, then)],
            scheduler=scheduler,
        )
        run = Timed(source, scheduler)
        scheduler.advance_by(60.0)
        assert len(server.requests) == 3
        sent = server.requests[2]
    message = run.message()
    assert message == answers[then]
    assert [a["route"]["dialect"] for a in message.metadata["attempts"]] == [first, first, then]
    assert FAULT_HEADER not in sent.headers  # the chat's own headers stay with its route
    assert sent.json is not None


def test_portable_options_go_over_and_a_routes_own_options_win() -> None:
    with FakeLLMServer(ANSWER) as server, httpx.Client() as client:
        source = chat(
            client,
            server,
            "openai-chat",
            temperature=0.5,
            headers={FAULT_HEADER: "401"},
            fallback=[route(server, "anthropic", max_tokens=7)],
        )
        source.pipe(rs.accumulate_message()).run()
        body = server.requests[1].json
    assert isinstance(body, dict)
    assert (body["max_tokens"], body["temperature"]) == (7, 0.5)


def test_a_fallback_asks_for_the_same_output_in_its_own_form() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    refused = {FAULT_HEADER: "401"}
    with FakeLLMServer(ANSWER) as server, httpx.Client() as client:
        source = chat(
            client,
            server,
            "openai-chat",
            output=schema,
            headers=refused,
            fallback=[
                route(server, "ollama", headers=refused),
                # A route's own output= wins (a model there without the native form).
                route(server, "gemini", output=rs.Output(schema, via="tool")),
            ],
        )
        source.pipe(rs.accumulate_message()).run()
        bodies = [r.json for r in server.requests]
    assert bodies[0]["response_format"]["json_schema"]["schema"]["required"] == ["n"]
    assert bodies[1]["format"] == schema  # the fallback's own field for the chat's output
    assert "responseJsonSchema" not in bodies[2]["generationConfig"]
    assert bodies[2]["toolConfig"]["functionCallingConfig"]["allowedFunctionNames"] == ["output"]


def test_a_hundred_streams_hit_by_one_429_retry_in_one_spread_wave() -> None:
    scheduler = HistoricalScheduler(START)
    faults = ["429:retry-after=1"] * 100 + ["ok"]
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    # Kept-alive connections outlive a slow run (coverage, a loaded machine): a connection
    # the server closed would be a transport error, retried, and a second wave.
    with (
        FakeLLMServer(ANSWER, faults=faults, idle_timeout=120.0) as server,
        httpx.Client(limits=limits, timeout=120.0) as client,
    ):
        runs = [
            Timed(
                chat(client, server, "openai-chat", retry=rs.Retry(), scheduler=scheduler),
                scheduler,
            )
            for _ in range(100)
        ]
        scheduler.advance_by(60.0)
        assert len(server.requests) == 200  # one retry each: one wave
    firsts = sorted(run.times[0] for run in runs)
    assert all(run.done for run in runs)
    assert firsts[0] >= 1.0
    assert firsts[-1] <= 1.25
    assert firsts[-1] - firsts[0] > 0.15  # spread over it, not all at once
    assert len(set(firsts)) > 90
    assert all(len(run.message().metadata["attempts"]) == 2 for run in runs)


def test_the_async_client_retries_too(answers: dict[str, rs.Message]) -> None:
    async def main(server: FakeLLMServer) -> rs.Message:
        async with httpx.AsyncClient() as client:
            source = chat(client, server, "anthropic", retry=rs.Retry(backoff=0.001))
            message: rs.Message = await source.pipe(rs.accumulate_message())
            return message

    faults = ["429:retry-after=0", "error:overloaded@0", "ok"]
    with FakeLLMServer(ANSWER, faults=faults) as server:
        message = asyncio.run(main(server))
        assert len(server.requests) == 3
    assert message == answers["anthropic"]
    assert len(message.metadata["attempts"]) == 3


def test_subscribed_in_a_loop_without_a_scheduler_the_waits_run_on_that_loop() -> None:
    async def main(server: FakeLLMServer) -> list[Any]:
        done: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        items: list[Any] = []
        async with httpx.AsyncClient() as client:
            source = chat(client, server, "cohere", retry=rs.Retry(backoff=0.001))
            source.subscribe(items.append, done.set_exception, lambda: done.set_result(items))
            return await done

    with FakeLLMServer(ANSWER, faults=["503:retry-after=0.01", "ok"]) as server:
        items = asyncio.run(main(server))
        assert len(server.requests) == 2
    assert [i.text for i in items if isinstance(i, rs.TextDelta)] == ["Hel", "lo"]


def test_the_async_client_raises_with_the_partial_after_output() -> None:
    async def main(server: FakeLLMServer) -> None:
        async with httpx.AsyncClient() as client:
            await chat(client, server, "gemini", retry=rs.Retry()).pipe(rs.accumulate_message())

    with FakeLLMServer(ANSWER, faults=["error:overloaded@2", "ok"]) as server:
        with pytest.raises(rs.ProviderError) as caught:
            asyncio.run(main(server))
        assert len(server.requests) == 1
    assert caught.value.partial is not None
    assert caught.value.partial.content == "Hel"


def test_behind_multicast_one_upstream_is_retried_once_for_every_observer() -> None:
    scheduler = HistoricalScheduler(START)
    with FakeLLMServer(ANSWER, faults=["429:retry-after=1", "ok"]) as server:
        with httpx.Client() as client:
            source = chat(client, server, "anthropic", retry=rs.Retry(), scheduler=scheduler)
            hub = rs.multicast(source)
            ui = Timed(hub, scheduler)
            log = Timed(hub, scheduler)
            hub.connect()
            scheduler.advance_by(60.0)
        assert len(server.requests) == 2
    assert ui.items == log.items
    assert ui.message().content == "Hello"
    assert len(ui.message().metadata["attempts"]) == 2


def test_an_async_client_outside_a_loop_says_what_it_needs() -> None:
    client = httpx.AsyncClient()
    source = rs.chat(client, "gemini", model="m", messages=ASK, api_key="k", retry=rs.Retry())
    with pytest.raises(RuntimeError, match="needs a running asyncio event loop"):
        source.subscribe()
    asyncio.run(client.aclose())


def test_retrying_a_from_request_pipeline() -> None:
    scheduler = HistoricalScheduler(START)
    with FakeLLMServer(ANSWER, faults=["429:retry-after=2", "ok"]) as server:
        with httpx.Client() as client:
            request = rs.request(
                "ollama", model="m", messages=ASK, base_url=base_url(server, "ollama")
            )
            source = rs.from_request(client, request, scheduler=scheduler).pipe(
                rs.decode("ollama"), rs.retrying(rs.Retry(jitter=0.0), scheduler=scheduler)
            )
            run = Timed(source, scheduler)
            scheduler.advance_by(60.0)
        assert len(server.requests) == 2
    assert run.times[0] == 2.0
    assert run.message().content == "Hello"


def test_without_retry_or_fallback_chat_is_the_io_chat(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    sentinel = Observable[rs.Delta]()

    def io_chat(*args: Any, **kwargs: Any) -> Observable[rs.Delta]:
        made.append((args, kwargs))
        return sentinel

    monkeypatch.setattr(retry_module, "io_chat", io_chat)
    client = httpx.Client()
    assert rs.chat(client, "gemini", model="m", messages=ASK, limiter="L") is sentinel
    assert rs.chat(client, "gemini", model="m", messages=ASK, fallback=[]) is sentinel
    assert made[0][0] == (client, "gemini")
    assert made[0][1]["limiter"] == "L"
    # With a policy, unknown keywords still reach the io-level chat of their route.
    rs.chat(client, "gemini", model="m", messages=ASK, limiter="L", retry=rs.Retry())
    assert made[2][1]["limiter"] == "L"
    client.close()


def test_chat_refuses_what_is_not_a_policy_or_a_route_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    with httpx.Client() as client:
        with pytest.raises(TypeError, match=r"rs\.Retry"):
            rs.chat(client, "openai-chat", model="m", messages=ASK, api_key="k", retry=3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"list of rs\.Route"):
            rs.chat(
                client,
                "openai-chat",
                model="m",
                messages=ASK,
                api_key="k",
                fallback=rs.Route("gemini", "m"),  # type: ignore[arg-type]
            )
        with pytest.raises(ValueError, match="an item 'gemini'"):
            rs.chat(
                client,
                "openai-chat",
                model="m",
                messages=ASK,
                api_key="k",
                fallback=["gemini"],  # type: ignore[list-item]
            )
        with pytest.raises(ValueError, match="no API key for anthropic"):
            rs.chat(
                client,
                "openai-chat",
                model="m",
                messages=ASK,
                api_key="k",
                fallback=[rs.Route("anthropic", "m")],
            )


def test_a_fallback_route_is_checked_at_once_and_its_request_made_only_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rxstream.io import requests as io_requests

    made: list[str] = []
    send_request = io_requests.send_request

    def spy(client: Any, built: httpx.Request, **options: Any) -> Observable[rs.Delta]:
        made.append(built.url.path)
        return send_request(client, built, **options)

    monkeypatch.setattr(io_requests, "send_request", spy)
    with FakeLLMServer(ANSWER) as server, httpx.Client() as client:
        fallback = [route(server, "anthropic")]
        # A bad fallback still raises at once, before anything is sent (the URL httpx
        # refuses, parsed when the request is only made ready).
        bad = rs.Route("anthropic", "m", api_key="k", base_url="http://a\x00b")
        with pytest.raises(httpx.InvalidURL):
            chat(client, server, "openai-chat", fallback=[bad])
        made.clear()
        answered = chat(client, server, "openai-chat", fallback=fallback)
        assert made == ["/v1/chat/completions"]  # the fallback's request is not made yet
        assert answered.pipe(rs.accumulate_message()).run().content == "Hello"
        assert made == ["/v1/chat/completions"]  # nor when it was never asked
        failing = chat(
            client, server, "openai-chat", headers={FAULT_HEADER: "401"}, fallback=fallback
        )
        for _ in range(2):  # made when first asked, once for every subscription after
            assert failing.pipe(rs.accumulate_message()).run().content == "Hello"
    assert made == ["/v1/chat/completions"] * 2 + ["/v1/messages"]
