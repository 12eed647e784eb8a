"""Each provider's official SDK reads `FakeLLMServer` in every scenario kind, in its dialect.

For every dialect and scenario, the SDK (as a user calls it: see `_readers`)
and rxstream read the same answer of the same server; what the SDK gets must
be what rxstream's own reading gives: the text, the reasoning, the client
tool calls (id, name, parsed arguments), the usage and the finish. Any SDK
exception fails, and so does any silent loss.

The only difference the tests allow is written here: the ollama client's
`ToolCall` model has no `id` field, so an Ollama call reaches its users
without the id the line carries.
"""

from __future__ import annotations

import pytest

import rxstream as rs
from rxstream.testing.server import FakeLLMServer, Scenario
from tests.support.conformance_readers import DIALECTS, Answer, Read, rxstream_read, sdk_read
from tests.support.conformance_scenarios import ERROR_MID_STREAM, HTTP_429, SCENARIOS

from .conftest import body_of, root


def expected(dialect: str, mine: Read) -> Answer:
    """What the SDK must give: rxstream's reading, less what the SDK has no field for."""
    answer = mine.answer
    if dialect == "ollama":  # the ollama client's ToolCall has no id
        answer.calls = [(None, name, args) for _, name, args in answer.calls]
    return answer


@pytest.mark.parametrize("kind", list(SCENARIOS))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_sdk_reads_what_rxstream_reads(server: FakeLLMServer, dialect: str, kind: str) -> None:
    server.serve(SCENARIOS[kind])
    mine = rxstream_read(dialect, body_of(server, dialect))
    assert mine.error is None
    got = sdk_read(dialect, root(server))
    assert got.error is None, f"{dialect} SDK raised {got.error!r}"
    assert got.answer == expected(dialect, mine)
    # Nothing of the script was lost on the way (rxstream's reading is whole).
    assert mine.answer.text or mine.answer.calls


def test_the_scenarios_carry_what_they_promise(server: FakeLLMServer) -> None:
    server.serve(SCENARIOS["parallel-tool-calls"])
    answer = rxstream_read("openai-chat", body_of(server, "openai-chat")).answer
    assert answer.calls == [
        ("call_1", "weather", {"city": "Paris", "days": [1, 2]}),
        ("call_2", "search", {"q": "rx"}),
    ]
    assert (answer.text, answer.usage, answer.finish) == ("Checking.", (20, 11), "tool_calls")


# ------------------------------------------------------------------------ errors and ends


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_provider_error_mid_stream_is_an_sdk_exception(
    server: FakeLLMServer, dialect: str
) -> None:
    server.serve(ERROR_MID_STREAM)
    mine = rxstream_read(dialect, body_of(server, dialect))
    assert isinstance(mine.error, rs.ProviderError)
    got = sdk_read(dialect, root(server))
    assert got.error is not None, f"{dialect}: the SDK ended without the error"
    assert "overloaded" in str(got.error)
    if dialect == "bedrock":
        # botocore knows the modelled exception events only; the renderer maps to one.
        assert "serviceUnavailableException" in str(got.error)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_stream_cut_before_its_end_marker(server: FakeLLMServer, dialect: str) -> None:
    # The body ends cleanly, without the dialect's end marker. rxstream says so
    # (TruncatedStreamError); the official clients return the partial answer
    # silently (see docs/dialects/index.md). Both read the same text.
    server.serve(Scenario.answer(rs.TextDelta("Hel"), rs.TextDelta("lo"), end=False))
    mine = rxstream_read(dialect, body_of(server, dialect))
    assert isinstance(mine.error, rs.TruncatedStreamError)
    got = sdk_read(dialect, root(server))
    assert got.answer.text == "Hello"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_dropped_connection_is_an_sdk_exception(server: FakeLLMServer, dialect: str) -> None:
    server.serve(Scenario.answer(rs.TextDelta("Hel"), rs.TextDelta("lo")).disconnect_after(1))
    got = sdk_read(dialect, root(server))
    assert got.error is not None
    assert got.answer.text in ("", "Hel")


def _rate_limited(dialect: str, error: BaseException) -> bool:
    """Whether `error` is the SDK's own exception for an HTTP 429."""
    match dialect:
        case "openai-chat" | "openai-responses":
            import openai

            return isinstance(error, openai.RateLimitError)
        case "anthropic":
            import anthropic

            return isinstance(error, anthropic.RateLimitError)
        case "gemini":
            from google.genai import errors

            return isinstance(error, errors.ClientError) and error.code == 429
        case "cohere":
            import cohere

            return isinstance(error, cohere.TooManyRequestsError)
        case "ollama":
            import ollama

            return isinstance(error, ollama.ResponseError) and error.status_code == 429
        case _:
            from botocore.exceptions import ClientError  # type: ignore[import-untyped]

            return (
                isinstance(error, ClientError)
                and error.response["Error"]["Code"] == "ThrottlingException"
                and type(error).__name__ == "ThrottlingException"
            )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_http_429_is_the_sdk_rate_limit_exception(server: FakeLLMServer, dialect: str) -> None:
    server.serve(HTTP_429)
    got = sdk_read(dialect, root(server))
    assert got.error is not None
    assert _rate_limited(dialect, got.error), repr(got.error)
    assert "Rate limit reached" in str(got.error)
