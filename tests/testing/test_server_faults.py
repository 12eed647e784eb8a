"""Every FakeLLMServer fault through the real pipeline (sockets, httpx, Rx)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from reactivex import operators as ops

import rxstream as rs
from rxstream.models import Finish, Metadata, TextDelta, Usage
from rxstream.testing.builders import ChatStream, finish_chunk, text_chunk
from rxstream.testing.server import (
    Chunk,
    Comment,
    Done,
    FakeLLMServer,
    Raw,
    Scenario,
    Stall,
)
from tests.support.sources import run

#: The `Metadata` the decoder gives for the builders' chunks (`chatcmpl-test`, `test-model`).
IDENTITY = Metadata({"id": "chatcmpl-test", "model": "test-model"})

PAYLOAD = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5.0) as c:
        yield c


def deltas_of(client: httpx.Client, server: FakeLLMServer, *extra: Any) -> Any:
    """The deltas of the server's answer, after the first one: the response's id and model."""
    out = run(
        rs.from_request(client, "POST", server.url, json=PAYLOAD).pipe(
            rs.sse_frames(), rs.decode_chunks(), rs.deltas(), *extra
        )
    )
    if out.items and isinstance(out.items[0], Metadata):
        assert set(out.items[0].data) == {"id", "model"}
        del out.items[0]
    return out


def test_paced_chunks_arrive_whole_and_in_order(
    client: httpx.Client, fake_llm_server: FakeLLMServer
) -> None:
    fake_llm_server.serve(Scenario.text("Hel", "lo").paced(0.02, first=0.05))
    out = deltas_of(client, fake_llm_server)
    assert out.error is None
    assert out.items == [TextDelta("Hel"), TextDelta("lo"), Finish("stop"), Usage(5, 2, 7)]


def test_keepalive_comments_make_no_items(
    client: httpx.Client, fake_llm_server: FakeLLMServer
) -> None:
    steps = (
        Comment(),
        Chunk(text_chunk("Hi")),
        Comment("ping"),
        Chunk(finish_chunk("stop")),
        Done(),
    )
    fake_llm_server.serve(Scenario(steps=steps))
    out = deltas_of(client, fake_llm_server)
    assert out.items == [TextDelta("Hi"), Finish("stop")]
    assert out.completed


def test_429_with_retry_after(client: httpx.Client, fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.error(429, "Rate limit reached", headers={"Retry-After": "2"}))
    out = deltas_of(client, fake_llm_server)
    assert isinstance(out.error, rs.HTTPStatusError)
    assert out.error.status_code == 429
    assert out.error.retry_after == 2.0
    assert "Rate limit reached" in str(out.error)


def test_a_malformed_line_raises_or_is_skipped(
    client: httpx.Client, fake_llm_server: FakeLLMServer
) -> None:
    scenario = Scenario(
        steps=(
            Chunk(text_chunk("a")),
            Raw('data: {"choices": [\n\n'),
            Chunk(text_chunk("b")),
            Done(),
        )
    )
    fake_llm_server.serve(scenario)
    out = deltas_of(client, fake_llm_server)
    assert out.items == [TextDelta("a")]
    assert isinstance(out.error, rs.MalformedChunkError)
    skipped = run(
        rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD).pipe(
            rs.sse_frames(), rs.decode_chunks(on_malformed="skip"), rs.deltas()
        )
    )
    assert skipped.items == [IDENTITY, TextDelta("a"), TextDelta("b")]


def test_an_error_object_mid_stream(client: httpx.Client, fake_llm_server: FakeLLMServer) -> None:
    stream = ChatStream().text("partial").error("Overloaded", code=529).done()
    fake_llm_server.serve(Scenario.from_stream(stream))
    out = deltas_of(client, fake_llm_server)
    assert out.items == [TextDelta("partial")]
    assert isinstance(out.error, rs.ProviderError)
    assert out.error.code == 529


@pytest.mark.parametrize(
    ("framing", "reset", "error"),
    [
        ("close", False, rs.TruncatedStreamError),  # a clean end of body before [DONE]
        ("chunked", False, rs.TransportError),  # an incomplete chunked body
        ("chunked", True, rs.TransportError),  # a TCP reset
    ],
    ids=["close-unframed", "close-chunked", "reset"],
)
def test_a_disconnect_after_n_chunks(
    client: httpx.Client,
    fake_llm_server: FakeLLMServer,
    framing: Any,
    reset: bool,
    error: type[Exception],
) -> None:
    scenario = Scenario.text("a", "b", "c").disconnect_after(2, reset=reset)
    fake_llm_server.serve(dataclasses.replace(scenario, framing=framing))
    out = deltas_of(client, fake_llm_server)
    assert out.items == [TextDelta("a")]
    assert isinstance(out.error, error)


def test_a_stall_ends_with_an_idle_timeout_and_closes_the_connection(
    client: httpx.Client, fake_llm_server: FakeLLMServer
) -> None:
    steps = Scenario.text("a").steps
    fake_llm_server.serve(Scenario(steps=(*steps[:2], Stall(10.0), *steps[2:])))
    source = rs.from_request(client, "POST", fake_llm_server.url, json=PAYLOAD)
    items: list[Any] = []
    errors: list[BaseException] = []
    source.pipe(rs.sse_frames(), rs.decode_chunks(), rs.deltas(), rs.timeouts(idle=1.0)).subscribe(
        items.append, errors.append
    )
    assert fake_llm_server.wait_for_disconnect(timeout=30.0)
    assert items == [Metadata({"id": "chatcmpl-fake", "model": "fake-model"}), TextDelta("a")]
    assert len(errors) == 1
    assert isinstance(errors[0], rs.StreamTimeoutError)


def test_requests_are_recorded(client: httpx.Client, fake_llm_server: FakeLLMServer) -> None:
    deltas_of(client, fake_llm_server, ops.take(1))
    deltas_of(client, fake_llm_server)
    assert fake_llm_server.wait_for_requests(2, timeout=30.0)
    first = fake_llm_server.requests[0]
    assert first.method == "POST"
    assert first.path == "/v1/chat/completions"
    assert first.json == PAYLOAD
    assert first.stream


def test_a_request_without_stream_gets_a_json_completion(
    client: httpx.Client, fake_llm_server: FakeLLMServer
) -> None:
    fake_llm_server.serve(Scenario.text("Hel", "lo"))
    response = client.post(fake_llm_server.url, json={**PAYLOAD, "stream": False})
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Hello"}
    out = deltas_of(client, fake_llm_server)
    assert out.items[0] == TextDelta("Hel")
    streamed = run(
        rs.from_request(client, "POST", fake_llm_server.url, json={**PAYLOAD, "stream": False})
    )
    assert isinstance(streamed.error, rs.UnexpectedContentTypeError)


def test_from_stream_and_paced_keep_the_builders_events() -> None:
    stream = ChatStream().role().text("Hi").keepalive().finish().usage(1, 1).done()
    scenario = Scenario.from_stream(stream).paced(0.01, first=0.2)
    assert [step.delay for step in scenario.steps] == [0.2, 0.01, 0.01, 0.01, 0.01, 0.01]
    # A builder's chunks, comments and [DONE] become steps that play in every dialect,
    # and at /v1/chat/completions they send exactly the builder's bytes.
    assert [type(step) for step in scenario.steps] == [Chunk, Chunk, Comment, Chunk, Chunk, Done]
    assert b"".join(encoded(scenario)) == stream.bytes()
    text_form = Scenario.from_stream(stream.sse())
    assert all(isinstance(step, Raw) for step in text_form.steps)
    assert b"".join(encoded(text_form)) == stream.bytes()
    stalled = Scenario(steps=(Stall(1.0),)).paced(0.5)
    assert stalled.steps == (Stall(1.0),)


def encoded(scenario: Scenario) -> list[bytes]:
    return [
        step.encode() for step in scenario.steps if isinstance(step, Chunk | Comment | Done | Raw)
    ]
