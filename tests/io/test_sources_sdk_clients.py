"""Keeping a provider's SDK for the request: `rs.from_response(raw.http_response)`.

The openai and anthropic SDKs send their requests with the httpx2 fork (the
openai SDK also takes an httpx client). Their `with_streaming_response` API
hands out the raw, still unread, streaming response as `raw.http_response`;
rxstream reads it like any other. These tests drive both SDKs, sync and async,
against a `FakeLLMServer` on 127.0.0.1 (no network, fake keys).

The SDKs are in the `test` extra; where one is not installed its tests are
skipped with the reason.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import reactivex.operators as ops

import rxstream as rs
from rxstream.testing import FakeLLMServer, Scenario

ANSWER = Scenario.answer(
    rs.TextDelta("Hel"), rs.TextDelta("lo"), rs.Finish("stop"), rs.Usage(3, 2, 5)
)
EXPECTED = rs.Message(content="Hello", finish_reason="stop", usage=rs.Usage(3, 2, 5))
USER = [{"role": "user", "content": "Hi"}]


def _sdk(name: str) -> Any:
    return pytest.importorskip(
        name, reason=f"the {name} SDK is not installed (it comes with the test extra)"
    )


def _http_library(response: object) -> str:
    """The library the SDK's raw response comes from: "httpx" or "httpx2"."""
    return type(response).__module__.split(".")[0]


# --------------------------------------------------------------------------- openai


def test_openai_chat_raw_response_sync() -> None:
    openai = _sdk("openai")
    with FakeLLMServer(ANSWER) as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with client.chat.completions.with_streaming_response.create(
            model="gpt-4o-mini", messages=USER, stream=True
        ) as raw:
            assert _http_library(raw.http_response) in ("httpx", "httpx2")
            message = (
                rs.from_response(raw.http_response)
                .pipe(rs.sse_frames(), rs.decode("openai-chat"), rs.accumulate_message())
                .run()
            )
        client.close()
        [request] = server.requests
    assert message == EXPECTED
    assert request.path == "/v1/chat/completions"
    assert request.json["stream"] is True
    assert request.headers["authorization"] == "Bearer sk-test"


def test_openai_uses_httpx2_by_default() -> None:
    openai = _sdk("openai")
    pytest.importorskip("httpx2", reason="httpx2 is not installed")
    with FakeLLMServer(ANSWER) as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with client.chat.completions.with_streaming_response.create(
            model="m", messages=USER, stream=True
        ) as raw:
            library = _http_library(raw.http_response)
            rs.from_response(raw.http_response).pipe(ops.to_list()).run()
        client.close()
    # Whichever the installed SDK uses, from_response read it above; this records which.
    assert library in ("httpx", "httpx2")


def test_openai_responses_raw_response_sync() -> None:
    openai = _sdk("openai")
    with FakeLLMServer(ANSWER) as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with client.responses.with_streaming_response.create(
            model="gpt-5-mini", input="Hi", stream=True
        ) as raw:
            message = (
                rs.from_response(raw.http_response)
                .pipe(rs.sse_frames(), rs.decode("openai-responses"), rs.accumulate_message())
                .run()
            )
        client.close()
        [request] = server.requests
    assert message == EXPECTED
    assert request.path == "/v1/responses"


def test_openai_chat_raw_response_async() -> None:
    openai = _sdk("openai")

    async def main(server: FakeLLMServer) -> rs.Message:
        client = openai.AsyncOpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        async with client.chat.completions.with_streaming_response.create(
            model="gpt-4o-mini", messages=USER, stream=True
        ) as raw:
            message: rs.Message = await rs.from_response(raw.http_response).pipe(
                rs.sse_frames(), rs.decode("openai-chat"), rs.accumulate_message()
            )
        await client.close()
        return message

    with FakeLLMServer(ANSWER) as server:
        assert asyncio.run(main(server)) == EXPECTED


def test_openai_stream_objects_response_reads_too() -> None:
    openai = _sdk("openai")
    with FakeLLMServer(ANSWER) as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        message = (
            rs.from_response(stream.response)
            .pipe(rs.sse_frames(), rs.decode("openai-chat"), rs.accumulate_message())
            .run()
        )
        client.close()
    assert message == EXPECTED


def test_disposing_closes_the_sdk_response() -> None:
    openai = _sdk("openai")
    from rxstream.testing.server import Stall

    with FakeLLMServer(ANSWER.then(Stall(5.0))) as server:
        server.serve(
            Scenario.answer(rs.TextDelta("a"), rs.TextDelta("b"), end=False).then(Stall(5.0))
        )
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with client.chat.completions.with_streaming_response.create(
            model="m", messages=USER, stream=True
        ) as raw:
            first = (
                rs.from_response(raw.http_response)
                .pipe(
                    rs.sse_frames(),
                    rs.decode("openai-chat"),
                    ops.filter(lambda delta: isinstance(delta, rs.TextDelta)),  # not the id, model
                    ops.take(1),
                )
                .run()
            )
            assert raw.http_response.is_closed
        client.close()
        assert server.wait_for_disconnect(timeout=30.0)
    assert first == rs.TextDelta("a")


def test_openai_sdk_raises_its_own_error_before_the_stream() -> None:
    """An HTTP error answer never reaches rxstream: the SDK raises it at `create`."""
    openai = _sdk("openai")
    with FakeLLMServer(Scenario.error(429, "Rate limit reached")) as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url, max_retries=0)
        with (
            pytest.raises(openai.RateLimitError, match="Rate limit reached"),
            client.chat.completions.with_streaming_response.create(
                model="m", messages=USER, stream=True
            ),
        ):
            pass
        client.close()


# --------------------------------------------------------------------------- anthropic


def test_anthropic_raw_response_sync() -> None:
    anthropic = _sdk("anthropic")
    with FakeLLMServer(ANSWER) as server:
        origin = server.base_url.removesuffix("/v1")
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=origin, max_retries=0)
        with client.messages.with_streaming_response.create(
            model="claude-sonnet-4-5", max_tokens=256, messages=USER, stream=True
        ) as raw:
            assert _http_library(raw.http_response) in ("httpx", "httpx2")
            message = (
                rs.from_response(raw.http_response)
                .pipe(rs.sse_frames(), rs.decode("anthropic"), rs.accumulate_message())
                .run()
            )
        client.close()
        [request] = server.requests
    assert message == EXPECTED
    assert message.finish_raw == "end_turn"
    assert request.path == "/v1/messages"
    # The SDK sends its key as x-api-key or (2.x) as a bearer token.
    sent = {request.headers.get("x-api-key"), request.headers.get("authorization")}
    assert sent & {"sk-ant-test", "Bearer sk-ant-test"}


def test_anthropic_raw_response_async() -> None:
    anthropic = _sdk("anthropic")

    async def main(server: FakeLLMServer) -> rs.Message:
        origin = server.base_url.removesuffix("/v1")
        client = anthropic.AsyncAnthropic(api_key="sk-ant-test", base_url=origin, max_retries=0)
        async with client.messages.with_streaming_response.create(
            model="claude-sonnet-4-5", max_tokens=256, messages=USER, stream=True
        ) as raw:
            message: rs.Message = await rs.from_response(raw.http_response).pipe(
                rs.sse_frames(), rs.decode("anthropic"), rs.accumulate_message()
            )
        await client.close()
        return message

    with FakeLLMServer(ANSWER) as server:
        assert asyncio.run(main(server)) == EXPECTED


def test_anthropic_stream_error_event_is_a_provider_error() -> None:
    anthropic = _sdk("anthropic")
    failing = Scenario.answer(
        rs.TextDelta("Hel"),
        rs.ProviderError("Overloaded", type="overloaded_error"),
        end=False,
    )
    with FakeLLMServer(failing) as server:
        origin = server.base_url.removesuffix("/v1")
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=origin, max_retries=0)
        with (
            client.messages.with_streaming_response.create(
                model="m", max_tokens=256, messages=USER, stream=True
            ) as raw,
            pytest.raises(rs.ProviderError) as caught,
        ):
            rs.from_response(raw.http_response).pipe(rs.sse_frames(), rs.decode("anthropic")).run()
        client.close()
    assert caught.value.type == "overloaded_error"
    assert "sk-ant-test" not in repr(caught.value)
