"""The fake LLM server itself: routes, recording, non-streaming answers, bounded stop."""

from __future__ import annotations

import threading

import httpx
import openai
import pytest

from rxstream.testing.builders import text_chunk
from rxstream.testing.server import (
    Chunk,
    Comment,
    Disconnect,
    Done,
    FakeLLMServer,
    Scenario,
    Stall,
)

PAYLOAD = {"model": "fake-model", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def test_records_method_path_headers_and_json(fake_llm_server: FakeLLMServer) -> None:
    response = httpx.post(
        fake_llm_server.url + "?trace=1", json=PAYLOAD, headers={"X-Custom": "yes"}
    )
    assert response.status_code == 200
    (request,) = fake_llm_server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions?trace=1")
    assert request.headers["x-custom"] == "yes"
    assert request.json == PAYLOAD
    assert request.stream
    assert fake_llm_server.wait_for_completed(1, timeout=30.0)
    assert fake_llm_server.completed == 1


def test_urls(fake_llm_server: FakeLLMServer) -> None:
    assert fake_llm_server.base_url == f"http://127.0.0.1:{fake_llm_server.port}/v1"
    assert fake_llm_server.url == fake_llm_server.base_url + "/chat/completions"


def test_streams_chunked_sse(fake_llm_server: FakeLLMServer) -> None:
    response = httpx.post(fake_llm_server.url, json=PAYLOAD)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["transfer-encoding"] == "chunked"
    assert response.text.endswith("data: [DONE]\n\n")
    assert '"content":"Hello"' in response.text


def test_without_stream_true_answers_a_chat_completion(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.text("Hi", " there"))
    response = httpx.post(
        fake_llm_server.url, json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    )
    body = response.json()
    assert response.headers["content-type"] == "application/json"
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Hi there"}


def test_unknown_route_is_404(fake_llm_server: FakeLLMServer) -> None:
    assert httpx.post(fake_llm_server.base_url + "/embeddings", json={}).status_code == 404
    assert httpx.get(fake_llm_server.base_url + "/models").status_code == 404


def test_scenarios_are_served_in_order_the_last_repeating() -> None:
    with FakeLLMServer(Scenario.error(429, "later"), Scenario.text("ok")) as server:
        statuses = [httpx.post(server.url, json=PAYLOAD).status_code for _ in range(3)]
    assert statuses == [429, 200, 200]


def test_error_scenario_sends_json_and_headers(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.error(429, "slow down", headers={"Retry-After": "3"}))
    response = httpx.post(fake_llm_server.url, json=PAYLOAD)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "3"
    assert response.json()["error"]["message"] == "slow down"


def test_openai_sdk_streams_from_it(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario.text("sdk", " works"))
    client = openai.OpenAI(base_url=fake_llm_server.base_url, api_key="sk-fake", max_retries=0)
    stream = client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    client.close()
    assert text == "sdk works"
    assert fake_llm_server.requests[0].headers["authorization"] == "Bearer sk-fake"


def test_client_leaving_during_a_stall_is_a_disconnect(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario(steps=(Comment(), Stall(5.0), Done())))
    with httpx.Client() as client, client.stream("POST", fake_llm_server.url, json=PAYLOAD) as r:
        assert next(r.iter_lines()) == ": keep-alive"
    assert fake_llm_server.wait_for_disconnect(1.0)
    assert fake_llm_server.completed == 0


def test_no_disconnect_when_the_client_reads_to_the_end(fake_llm_server: FakeLLMServer) -> None:
    httpx.post(fake_llm_server.url, json=PAYLOAD)
    assert not fake_llm_server.wait_for_disconnect(0.1)
    assert fake_llm_server.disconnects == 0


def test_disconnect_step_cuts_the_body(fake_llm_server: FakeLLMServer) -> None:
    fake_llm_server.serve(Scenario(steps=(Chunk(text_chunk("a")), Disconnect())))
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(fake_llm_server.url, json=PAYLOAD)


def test_stop_ends_stalled_responses_promptly() -> None:
    server = FakeLLMServer(Scenario(steps=(Stall(20.0), Done()))).start()
    errors: list[BaseException] = []

    def call() -> None:
        try:
            httpx.post(server.url, json=PAYLOAD, timeout=10.0)
        except httpx.HTTPError as exc:
            errors.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert server.wait_for_requests(1, timeout=30.0)
    server.stop()
    caller.join(timeout=5.0)
    assert not caller.is_alive()
    assert len(errors) == 1


def test_start_twice_is_an_error() -> None:
    with FakeLLMServer() as server, pytest.raises(RuntimeError):
        server.start()


def test_delays_and_steps_build_scenarios() -> None:
    scenario = Scenario.text("a", "b", delay=0.01).disconnect_after(2, reset=True)
    assert [type(step) for step in scenario.steps] == [Chunk, Chunk, Disconnect]
    assert scenario.steps[0].delay == 0.01
    assert scenario.answer_text() == "a"
