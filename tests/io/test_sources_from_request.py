"""from_request / from_response against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import threading

import httpx
import httpx2
import pytest
import reactivex.operators as ops
from reactivex.scheduler import ThreadPoolScheduler

import rxstream as rs
from rxstream._flow import Demand, demand_scope
from rxstream.testing.builders import text_chunk
from rxstream.testing.server import (
    Chunk,
    Comment,
    Done,
    FakeLLMServer,
    Raw,
    Scenario,
    Stall,
)
from tests.support.sources import TIMEOUT, Outcome, arun, free_port, run

PAYLOAD = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
SECRET = "sk-test-SECRET-0123456789"
AUTH = {"Authorization": f"Bearer {SECRET}"}


def expected_lines(scenario: Scenario) -> list[str]:
    """The lines a scenario's body is made of (what a source must emit, in order)."""
    body = b"".join(step.encode() for step in scenario.steps if hasattr(step, "encode"))
    text = body.decode().replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def text_of(outcome: Outcome) -> str:
    return "".join(d.text for d in outcome.items if isinstance(d, rs.TextDelta))


# --------------------------------------------------------------------------- happy paths


def test_sync_client_emits_every_line_then_completes(fake_llm_server: FakeLLMServer) -> None:
    scenario = Scenario.text("Hel", "lo", " there")
    fake_llm_server.serve(scenario)
    with httpx.Client() as client:
        outcome = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))
    assert outcome.error is None
    assert outcome.completed
    assert outcome.items == expected_lines(scenario)
    assert outcome.items[-2:] == ["data: [DONE]", ""]
    (request,) = fake_llm_server.requests
    assert (request.method, request.path, request.json) == ("POST", "/v1/chat/completions", PAYLOAD)


def test_async_client_emits_every_line_then_completes(fake_llm_server: FakeLLMServer) -> None:
    scenario = Scenario.text("a", "b")
    fake_llm_server.serve(scenario)

    async def main() -> Outcome:
        async with httpx.AsyncClient() as client:
            return await arun(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))

    outcome = asyncio.run(main())
    assert outcome.error is None
    assert outcome.completed
    assert outcome.items == expected_lines(scenario)


def test_httpx2_clients_fit_the_protocol(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.text("from ", "httpx2"))
    pipeline = (rs.sse_frames(), rs.decode_chunks(), rs.deltas())
    with httpx2.Client() as client:
        sync = run(
            rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(*pipeline)
        )

    async def main() -> Outcome:
        async with httpx2.AsyncClient() as client:
            source = rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD)
            return await arun(source.pipe(*pipeline))

    asynchronous = asyncio.run(main())
    assert (text_of(sync), sync.completed) == ("from httpx2", True)
    assert (text_of(asynchronous), asynchronous.completed) == ("from httpx2", True)


def test_full_pipeline_gives_the_text(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.text("Hello", ", ", "world"))
    with httpx.Client() as client:
        outcome = run(
            rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(
                rs.sse_frames(), rs.decode_chunks(), rs.deltas()
            )
        )
    assert outcome.completed
    assert text_of(outcome) == "Hello, world"


def test_keep_alive_comments_pass_through_as_lines(fake_llm_server: FakeLLMServer) -> None:
    scenario = Scenario(
        steps=(Comment("OPENROUTER PROCESSING"), Comment(), Chunk(text_chunk("x")), Done())
    )
    fake_llm_server.serve(scenario)
    with httpx.Client() as client:
        outcome = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))
    assert outcome.items[:4] == [": OPENROUTER PROCESSING", "", ": keep-alive", ""]
    assert outcome.items == expected_lines(scenario)


def test_from_response_reads_an_opened_response_once(fake_llm_server: FakeLLMServer) -> None:
    scenario = Scenario.text("once")
    fake_llm_server.serve(scenario)
    with httpx.Client() as client:
        request = client.build_request("POST", fake_llm_server.url, json=PAYLOAD)
        response = client.send(request, stream=True)
        source = rs.from_response(response)
        first, second = run(source), run(source)
        assert response.is_closed
    assert first.items == expected_lines(scenario)
    assert first.completed
    assert isinstance(second.error, RuntimeError)
    assert "once" in str(second.error)


def test_from_response_async(fake_llm_server: FakeLLMServer) -> None:
    scenario = Scenario.text("async", " response")
    fake_llm_server.serve(scenario)

    async def main() -> tuple[Outcome, bool]:
        async with httpx.AsyncClient() as client:
            request = client.build_request("POST", fake_llm_server.url, json=PAYLOAD)
            response = await client.send(request, stream=True)
            outcome = await arun(rs.from_response(response))
            return outcome, response.is_closed

    outcome, closed = asyncio.run(main())
    assert outcome.items == expected_lines(scenario)
    assert closed


def test_each_subscription_makes_its_own_request(fake_llm_server: FakeLLMServer) -> None:
    with httpx.Client() as client:
        source = rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD)
        first, second = run(source), run(source)
    assert first.items == second.items
    assert len(fake_llm_server.requests) == 2


def test_share_opens_one_request_for_two_observers(fake_llm_server: FakeLLMServer) -> None:
    with httpx.Client() as client:
        shared = rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(
            ops.publish()
        )
        ui, log = Outcome(), Outcome()
        shared.subscribe(ui.on_next, ui.on_error, ui.on_completed)
        shared.subscribe(log.on_next, log.on_error, log.on_completed)
        shared.connect()
    assert ui.completed
    assert ui.items == log.items
    assert len(ui.items) > 0
    assert len(fake_llm_server.requests) == 1


def test_thread_pool_scheduler_runs_in_the_background(fake_llm_server: FakeLLMServer) -> None:
    scenario = Scenario.text("back", "ground")
    fake_llm_server.serve(scenario)
    threads: set[int] = set()
    outcome = Outcome()

    def on_next(line: str) -> None:
        threads.add(threading.get_ident())
        outcome.on_next(line)

    with httpx.Client() as client:
        rs.from_request(
            client, "POST", fake_llm_server.url, json=PAYLOAD, scheduler=ThreadPoolScheduler(1)
        ).subscribe(
            on_next,
            outcome.on_error,
            outcome.on_completed,
        )
        assert outcome.ended.wait(TIMEOUT)
    assert outcome.completed
    assert outcome.items == expected_lines(scenario)
    assert threading.get_ident() not in threads


# --------------------------------------------------------------------------- HTTP errors


@pytest.mark.parametrize(
    ("headers", "retry_after"),
    [
        ({"Retry-After": "2"}, 2.0),
        ({"Retry-After": "0.5"}, 0.5),
        ({"retry-after-ms": "1500", "Retry-After": "2"}, 1.5),
        ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
    ids=["seconds", "fraction", "ms-wins", "past-http-date", "garbage", "absent"],
)
def test_429_carries_retry_after_and_provider_message(
    fake_llm_server: FakeLLMServer, headers: dict[str, str], retry_after: float | None
) -> None:
    fake_llm_server.serve(
        Scenario.error(429, "Rate limit reached for requests", type="requests", headers=headers)
    )
    with httpx.Client() as client:
        outcome = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))
    error = outcome.error
    assert isinstance(error, rs.HTTPStatusError)
    assert error.status_code == 429
    assert error.retry_after == retry_after
    assert error.provider_message == "Rate limit reached for requests"
    assert error.request == f"POST {fake_llm_server.url}"
    assert "429" in str(error)
    assert "Rate limit reached" in str(error)
    assert outcome.items == []


def test_http_date_retry_after_in_the_future_counts_seconds(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(
        Scenario.error(503, headers={"Retry-After": "Fri, 01 Jan 2100 00:00:00 GMT"})
    )
    with httpx.Client() as client:
        error = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD)).error
    assert isinstance(error, rs.HTTPStatusError)
    assert error.retry_after is not None
    assert error.retry_after > 365 * 24 * 3600


@pytest.mark.parametrize(
    ("body", "provider_message"),
    [
        ("upstream exploded", None),
        ({"error": "plain string error"}, "plain string error"),
        ({"message": "top-level message"}, "top-level message"),
        ([{"error": {"code": 500, "message": "google style"}}], "google style"),
    ],
    ids=["text", "error-string", "message", "list-wrapped"],
)
def test_500_body_shapes(
    fake_llm_server: FakeLLMServer, body: object, provider_message: str | None
) -> None:
    fake_llm_server.serve(Scenario.error(500, body=body))
    with httpx.Client() as client:
        error = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD)).error
    assert isinstance(error, rs.HTTPStatusError)
    assert error.status_code == 500
    assert error.reason == "Internal Server Error"
    assert error.provider_message == provider_message
    if isinstance(body, str):
        assert error.body == body
        assert body in str(error)


def test_huge_error_body_is_quoted_in_bounded_form(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.error(502, body="x" * 500_000))
    with httpx.Client() as client:
        error = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD)).error
    assert isinstance(error, rs.HTTPStatusError)
    assert len(str(error)) < 1_000
    assert error.body.startswith("xxxx")


def test_async_status_error(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.error(401, "Incorrect API key provided"))

    async def main() -> Outcome:
        async with httpx.AsyncClient() as client:
            return await arun(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))

    error = asyncio.run(main()).error
    assert isinstance(error, rs.HTTPStatusError)
    assert (error.status_code, error.provider_message) == (401, "Incorrect API key provided")


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "application/json; charset=utf-8", "application/problem+json"],
)
def test_2xx_json_is_an_unexpected_content_type(
    fake_llm_server: FakeLLMServer, content_type: str
) -> None:
    fake_llm_server.serve(Scenario(content_type=content_type, body={"object": "chat.completion"}))
    with httpx.Client() as client:
        error = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD)).error
    assert isinstance(error, rs.UnexpectedContentTypeError)
    assert error.status_code == 200
    assert error.content_type == content_type
    assert "chat.completion" in error.body


def test_text_plain_is_refused_before_parsing(fake_llm_server: FakeLLMServer) -> None:
    # An event stream sent as text/plain is not taken on trust: the content type says
    # the body is not a stream, and guessing would let an HTML or text error page through.
    scenario = Scenario.text("plain")
    fake_llm_server.serve(Scenario(steps=scenario.steps, content_type="text/plain"))
    with httpx.Client() as client:
        outcome = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))
    assert isinstance(outcome.error, rs.UnexpectedContentTypeError)
    assert outcome.items == []
    assert outcome.error.content_type == "text/plain"


# --------------------------------------------------------------------------- transport errors


def test_connection_refused_is_a_transport_error_with_cause() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1/chat/completions"
    with httpx.Client() as client:
        error = run(rs.from_request(client, "POST", url, json=PAYLOAD)).error
    assert isinstance(error, rs.TransportError)
    assert isinstance(error.__cause__, httpx.ConnectError)
    assert "could not connect" in str(error)
    assert url in str(error)


def test_async_connection_refused_is_a_transport_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1/chat/completions"

    async def main() -> Outcome:
        async with httpx.AsyncClient() as client:
            return await arun(rs.from_request(client, "POST", url, json=PAYLOAD))

    error = asyncio.run(main()).error
    assert isinstance(error, rs.TransportError)
    assert isinstance(error.__cause__, httpx.ConnectError)


def test_read_timeout_is_a_transport_error(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.text("slow").then(Stall(2.0)))
    with httpx.Client(timeout=httpx.Timeout(5.0, read=0.2)) as client:
        outcome = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))
    assert isinstance(outcome.error, rs.TransportError)
    assert isinstance(outcome.error.__cause__, httpx.ReadTimeout)
    assert "timed out" in str(outcome.error)
    assert outcome.items[-2:] == ["data: [DONE]", ""]


def test_server_closing_mid_event_is_a_transport_error(fake_llm_server: FakeLLMServer) -> None:
    # Chunked framing proves the body was cut: the transport reports it, even mid-event.
    fake_llm_server.serve(
        Scenario(steps=(*Scenario.text("a").steps[:2], Raw('data: {"choi'))).disconnect_after(3)
    )
    with httpx.Client() as client:
        outcome = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))
    assert isinstance(outcome.error, rs.TransportError)
    assert isinstance(outcome.error.__cause__, httpx.RemoteProtocolError)
    assert "closed the connection" in str(outcome.error)
    # The half line is never emitted: the stream failed before it was terminated.
    assert outcome.items == expected_lines(Scenario(steps=Scenario.text("a").steps[:2]))


def test_connection_reset_is_a_transport_error(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.text("a", "b").disconnect_after(2, reset=True))
    with httpx.Client() as client:
        outcome = run(
            rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(
                rs.sse_frames(), rs.decode_chunks()
            )
        )
    assert isinstance(outcome.error, rs.TransportError)
    assert isinstance(outcome.error.__cause__, httpx.TransportError)


def test_close_delimited_body_cut_between_events_is_truncated(
    fake_llm_server: FakeLLMServer,
) -> None:
    # Without framing the transport cannot tell a cut from the end: decode_chunks can.
    fake_llm_server.serve(Scenario(steps=Scenario.text("a", "b").steps[:2], framing="close"))
    with httpx.Client() as client:
        outcome = run(
            rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(
                rs.sse_frames(), rs.decode_chunks()
            )
        )
    assert isinstance(outcome.error, rs.TruncatedStreamError)
    assert len(outcome.items) == 2


def test_error_messages_never_contain_the_api_key(fake_llm_server: FakeLLMServer) -> None:
    errors: list[BaseException] = []
    fake_llm_server.serve(Scenario.error(429, "slow down", headers={"Retry-After": "1"}))
    with httpx.Client(headers=AUTH) as client:
        for url in (
            f"{fake_llm_server.url}?api-key={SECRET}",
            f"http://user:{SECRET}@127.0.0.1:{fake_llm_server.port}/v1/chat/completions",
            f"http://127.0.0.1:{free_port()}/v1/chat/completions?key={SECRET}",
        ):
            error = run(rs.from_request(client, "POST", url, json=PAYLOAD, headers=AUTH)).error
            assert isinstance(error, rs.StreamError)
            errors.append(error)
    assert fake_llm_server.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert isinstance(errors[2], rs.TransportError)
    for error in errors:
        assert SECRET not in str(error)
        assert SECRET not in repr(error)
        assert SECRET not in repr(vars(error))


# --------------------------------------------------------------------------- disposal


def test_take_disposes_the_source_and_closes_the_connection(
    fake_llm_server: FakeLLMServer,
) -> None:
    fake_llm_server.serve(Scenario.text("a", "b", "c").then(Stall(3.0), Done()))
    with httpx.Client() as client:
        outcome = run(
            rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(ops.take(3))
        )
        assert outcome.completed
        assert len(outcome.items) == 3
        assert fake_llm_server.wait_for_disconnect(1.0)
    assert fake_llm_server.completed == 0


def test_done_disposes_the_source_while_the_server_would_send_more(
    fake_llm_server: FakeLLMServer,
) -> None:
    fake_llm_server.serve(
        Scenario.text("a", "b").then(Stall(3.0), Chunk(text_chunk("after done")), Done())
    )
    with httpx.Client() as client:
        outcome = run(
            rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(
                rs.sse_frames(), rs.decode_chunks(), rs.deltas()
            )
        )
        assert outcome.completed
        assert fake_llm_server.wait_for_disconnect(1.0)
    assert text_of(outcome) == "ab"
    assert fake_llm_server.completed == 0


def test_dispose_from_another_thread_interrupts_a_blocked_read(
    fake_llm_server: FakeLLMServer,
) -> None:
    fake_llm_server.serve(Scenario.text("a").then(Stall(10.0), Done()))
    outcome = Outcome()
    first_line = threading.Event()

    def on_next(line: str) -> None:
        outcome.on_next(line)
        first_line.set()

    with httpx.Client() as client:
        subscription = rs.from_request(
            client, "POST", fake_llm_server.url, json=PAYLOAD, scheduler=ThreadPoolScheduler(1)
        ).subscribe(
            on_next,
            outcome.on_error,
            outcome.on_completed,
        )
        assert first_line.wait(TIMEOUT)
        subscription.dispose()
        assert fake_llm_server.wait_for_disconnect(1.0)
        # The pool thread wakes up, swallows the read error and emits nothing more.
        assert not outcome.ended.wait(0.2)
    assert outcome.error is None
    assert not outcome.completed


def test_async_dispose_cancels_the_read_and_closes_the_connection(
    fake_llm_server: FakeLLMServer,
) -> None:
    fake_llm_server.serve(Scenario.text("a").then(Stall(10.0), Done()))

    async def main() -> Outcome:
        outcome = Outcome()
        first_line = asyncio.Event()

        def on_next(line: str) -> None:
            outcome.on_next(line)
            first_line.set()

        async with httpx.AsyncClient() as client:
            subscription = rs.from_request(
                client, "POST", fake_llm_server.url, json=PAYLOAD
            ).subscribe(
                on_next,
                outcome.on_error,
                outcome.on_completed,
            )
            await asyncio.wait_for(first_line.wait(), TIMEOUT)
            subscription.dispose()
            disconnected = await asyncio.to_thread(fake_llm_server.wait_for_disconnect, 1.0)
            assert disconnected
            await asyncio.sleep(0.05)
        return outcome

    outcome = asyncio.run(main())
    assert outcome.error is None
    assert not outcome.completed
    assert len(outcome.items) >= 1


def test_async_done_disposes_the_source(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.text("x", "y").then(Stall(3.0), Done()))

    async def main() -> Outcome:
        async with httpx.AsyncClient() as client:
            outcome = await arun(
                rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(
                    rs.sse_frames(), rs.decode_chunks(), rs.deltas()
                )
            )
            assert await asyncio.to_thread(fake_llm_server.wait_for_disconnect, 1.0)
            return outcome

    outcome = asyncio.run(main())
    assert outcome.completed
    assert text_of(outcome) == "xy"


def test_async_source_waits_for_demand(fake_llm_server: FakeLLMServer) -> None:
    async def main() -> tuple[int, int, Outcome]:
        async with httpx.AsyncClient() as client:
            demand = Demand()
            demand.pause()
            outcome = Outcome()
            done = asyncio.Event()
            source = rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD)
            with demand_scope(demand):
                source.subscribe(outcome.on_next, outcome.on_error, lambda: done.set())
            await asyncio.sleep(0.1)
            paused = len(outcome.items)
            demand.resume()
            await asyncio.wait_for(done.wait(), TIMEOUT)
            return paused, len(outcome.items), outcome

    paused, total, outcome = asyncio.run(main())
    assert paused == 0
    assert total == len(expected_lines(Scenario.text()))
    assert outcome.error is None


def test_async_client_without_a_running_loop_is_a_clear_error(
    fake_llm_server: FakeLLMServer,
) -> None:
    client = httpx.AsyncClient()
    try:
        outcome = Outcome()
        rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).subscribe(
            outcome.on_next, outcome.on_error, outcome.on_completed
        )
    finally:
        asyncio.run(client.aclose())
    assert isinstance(outcome.error, RuntimeError)
    assert "running asyncio event loop" in str(outcome.error)
    assert fake_llm_server.requests == []


def test_an_observer_error_closes_the_response(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.text("a").then(Stall(3.0), Done()))
    outcome = Outcome()

    def explode(line: str) -> None:
        raise ValueError("observer bug")

    with httpx.Client() as client:
        rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).subscribe(
            explode, outcome.on_error, outcome.on_completed
        )
        assert fake_llm_server.wait_for_disconnect(1.0)
    assert isinstance(outcome.error, ValueError)


def test_line_too_long_reaches_on_error(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario(steps=(Raw("data: " + "x" * 1_100_000),)))
    with httpx.Client() as client:
        outcome = run(rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD))
    assert isinstance(outcome.error, rs.LineTooLongError)
