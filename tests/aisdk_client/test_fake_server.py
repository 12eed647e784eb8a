"""The AI SDK's own client reads `FakeLLMServer`'s `"ai-sdk"` answers in every scenario kind.

One `FakeLLMServer` per scenario answers `POST /api/chat` (the path and body of
`useChat`'s `DefaultChatTransport`) in the UI message stream; one Node process
(`read_fake_server.mjs`, the `ai` 6.x pinned in package-lock.json) reads each
with a plain fetch (every chunk checked against the package's
`uiMessageChunkSchema`) and with `DefaultChatTransport` and
`readUIMessageStream`, as `useChat` does. rxstream reads the same server with
`rs.decode("ai-sdk")`; the UI message the client ends with must hold what
rxstream read: text, reasoning, client tool calls (id, name, input), usage,
the finish, and the provider's error text. The scenario kinds are those every
provider dialect is read in (tests/conformance/test_fake_server.py), plus the
faults: an error mid-stream, a stream cut before its end, a dropped
connection, an HTTP 429 and a request the server's check refuses.

Where the client and rxstream part ways, the test says so: on a body that ends
cleanly without `finish` and `[DONE]` the client keeps the partial message
silently, as every official client does; rxstream raises
`TruncatedStreamError`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.errors import StreamError
from rxstream.models import Delta
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import FakeLLMServer, Scenario
from tests.support.aisdk import Expected, expected
from tests.support.conformance_scenarios import ERROR_MID_STREAM, HTTP_429, SCENARIOS

from ..support.node import run_node
from .conftest import HERE

CUT = Scenario.answer(rs.TextDelta("Hel"), rs.TextDelta("lo"), end=False)
DROPPED = Scenario.answer(rs.TextDelta("Hel"), rs.TextDelta("lo")).disconnect_after(1)
#: What a misconfigured client sends: the transport's body without its messages.
NO_MESSAGES = {"id": "chat-1", "trigger": "submit-message"}

CASES: dict[str, Scenario] = {
    **SCENARIOS,
    "error-mid-stream": ERROR_MID_STREAM,
    "cut-before-the-end": CUT,
    "dropped-connection": DROPPED,
    "http-429": HTTP_429,
    "no-messages": Scenario.text("never sent"),
}
BODIES: dict[str, Any] = {"no-messages": NO_MESSAGES}


def rxstream_read(url: str, body: Any) -> tuple[list[Delta], StreamError | None]:
    """rxstream's own reading of the server's answer: the deltas and the error that ended it."""
    out: list[Delta] = []
    errors: list[Exception] = []
    with httpx.Client(timeout=10.0) as client:
        rs.from_request(client, "POST", url, json=body).pipe(
            rs.sse_frames(), rs.decode("ai-sdk")
        ).subscribe(out.append, errors.append)
    error = errors[0] if errors else None
    assert error is None or isinstance(error, StreamError), repr(error)
    return out, error


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, FakeLLMServer]]:
    with ExitStack() as stack:
        yield {name: stack.enter_context(FakeLLMServer(s)) for name, s in CASES.items()}


@pytest.fixture(scope="module")
def results(node: str, servers: dict[str, FakeLLMServer]) -> dict[str, Any]:
    """What the AI SDK client read of every scenario (one node process for all of them)."""
    cases: list[dict[str, Any]] = []
    for name, server in servers.items():
        case: dict[str, Any] = {"name": name, "url": server.url_for("ai-sdk")}
        if name in BODIES:
            case["body"] = BODIES[name]
        cases.append(case)
    read: dict[str, Any] = run_node(node, HERE / "read_fake_server.mjs", cases)
    return read


def mine(servers: dict[str, FakeLLMServer], name: str) -> tuple[list[Delta], StreamError | None]:
    server = servers[name]
    return rxstream_read(server.url_for("ai-sdk"), BODIES.get(name, minimal_body("ai-sdk")))


def _parts(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [part for part in message["parts"] if part["type"] == kind]


def _text(message: dict[str, Any] | None, kind: str = "text") -> str:
    return "".join(p["text"] for p in _parts(message, kind)) if message else ""


def assert_holds(message: dict[str, Any], want: Expected) -> None:
    """The client's UI message holds what rxstream read (text, reasoning, calls)."""
    assert _text(message) == want.text
    assert _text(message, "reasoning") == want.reasoning
    calls = [p for p in message["parts"] if p["type"].startswith("tool-")]
    got = [(p["toolCallId"], p["type"].removeprefix("tool-"), p["input"]) for p in calls]
    assert got == [(id, *call) for id, call in zip(want.ids, want.calls, strict=True)]
    assert all(p["state"] == "input-available" for p in calls)


@pytest.mark.parametrize("kind", list(SCENARIOS))
def test_the_client_reads_what_rxstream_reads(
    results: dict[str, Any], servers: dict[str, FakeLLMServer], kind: str
) -> None:
    got = results[kind]
    assert "failure" not in got, got.get("failure")
    deltas, error = mine(servers, kind)
    assert error is None
    want = expected(deltas, error)
    # The wire: the header, every chunk of the package's schema, `start` first, `[DONE]`.
    assert (got["status"], got["header"], got["invalid"], got["done"]) == (200, "v1", [], True)
    # A new messageId per answer (the client keys its messages by it).
    assert got["chunks"][0]["type"] == "start"
    assert got["chunks"][0]["messageId"] != got["message"]["id"]
    assert got["message"]["id"].startswith("msg-fake-")
    # The UI message: what rxstream read, nothing lost.
    assert (got["thrown"], got["errors"]) == (None, [])
    assert_holds(got["message"], want)
    assert want.text or want.calls
    assert got["finishReason"] == want.finish
    assert want.usage is not None
    usage = got["message"]["metadata"]["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["totalTokens"]) == (
        want.usage.prompt_tokens,
        want.usage.completion_tokens,
        want.usage.total_tokens,
    )
    if want.usage.reasoning_tokens is not None:
        assert usage["reasoningTokens"] == want.usage.reasoning_tokens
    if want.usage.cached_tokens is not None:
        assert usage["cachedInputTokens"] == want.usage.cached_tokens


def test_the_tool_calls_arrive_whole(results: dict[str, Any]) -> None:
    message = results["parallel-tool-calls"]["message"]
    calls = [(p["toolCallId"], p["type"], p["input"]) for p in message["parts"] if "input" in p]
    assert calls == [
        ("call_1", "tool-weather", {"city": "Paris", "days": [1, 2]}),
        ("call_2", "tool-search", {"q": "rx"}),
    ]
    assert results["parallel-tool-calls"]["finishReason"] == "tool-calls"


def test_keepalives_are_comments_the_client_passes_over(results: dict[str, Any]) -> None:
    got = results["keepalives"]
    assert got["keepalives"] == 4
    assert _text(got["message"]) == "ab"


def test_a_provider_error_mid_stream_reaches_the_client_as_its_text(
    results: dict[str, Any], servers: dict[str, FakeLLMServer]
) -> None:
    got = results["error-mid-stream"]
    deltas, error = mine(servers, "error-mid-stream")
    assert isinstance(error, rs.ProviderError)
    assert error.message == "the model is overloaded"
    assert got["invalid"] == []
    assert got["chunks"][-1] == {"type": "error", "errorText": "the model is overloaded"}
    assert got["errors"] == [error.message]
    assert got["thrown"] is None
    assert _text(got["message"]) == expected(deltas, error).text == "Hel"


def test_a_stream_cut_before_its_end(
    results: dict[str, Any], servers: dict[str, FakeLLMServer]
) -> None:
    # The body ends cleanly without `finish` and `[DONE]`: rxstream says so; the client
    # keeps the partial message silently, as the official SDKs do. Both read the same text.
    got = results["cut-before-the-end"]
    deltas, error = mine(servers, "cut-before-the-end")
    assert isinstance(error, rs.TruncatedStreamError)
    assert (got["done"], got["broke"], got["thrown"], got["errors"]) == (False, None, None, [])
    assert got["finishReason"] is None
    assert _text(got["message"]) == expected(deltas, error).text == "Hello"


def test_a_dropped_connection_is_an_error_for_both(
    results: dict[str, Any], servers: dict[str, FakeLLMServer]
) -> None:
    got = results["dropped-connection"]
    deltas, error = mine(servers, "dropped-connection")
    assert isinstance(error, rs.TransportError | rs.TruncatedStreamError)
    assert got["broke"] is not None  # the body itself broke off (undici: "terminated")
    # The client reports the break as an error (useChat's `error`), its part left streaming.
    assert got["errors"] or got["thrown"]
    assert _text(got["message"]) in ("", "Hel")
    assert expected(deltas, None).text in ("", "Hel")


def test_an_http_429_is_a_json_error_the_client_throws(
    results: dict[str, Any], servers: dict[str, FakeLLMServer]
) -> None:
    got = results["http-429"]
    _, error = mine(servers, "http-429")
    assert isinstance(error, rs.HTTPStatusError)
    assert error.status_code == 429
    assert error.retry_after == 1.0
    assert error.provider_message == "Rate limit reached"
    assert got["status"] == 429
    body = json.loads(got["text"])
    assert body == {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}
    # The transport throws `Error(await response.text())`: the JSON is its message.
    assert got["thrown"] == f"Error: {got['text']}"
    assert got["message"] is None


def test_a_request_without_messages_is_refused_clearly(
    results: dict[str, Any], servers: dict[str, FakeLLMServer]
) -> None:
    got = results["no-messages"]
    _, error = mine(servers, "no-messages")
    assert isinstance(error, rs.HTTPStatusError)
    assert error.status_code == 400
    assert error.provider_message is not None
    assert "messages parameter must be provided" in error.provider_message
    assert got["status"] == 400
    assert json.loads(got["text"])["error"]["type"] == "AI_InvalidArgumentError"
    assert got["thrown"] == f"Error: {got['text']}"
