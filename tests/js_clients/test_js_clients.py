"""The official JavaScript clients read `FakeLLMServer` in every dialect and scenario kind.

Two readers per dialect, as JavaScript users stream: the provider's own npm
SDK (`openai` for chat and Responses, `@anthropic-ai/sdk`, `@google/genai`,
`cohere-ai`, `ollama`, `@aws-sdk/client-bedrock-runtime`) and `streamText`
of the AI SDK (`ai` 6.x) over the dialect's provider (`@ai-sdk/openai` chat
and responses, `@ai-sdk/anthropic`, `@ai-sdk/google`, `@ai-sdk/cohere`,
`@ai-sdk/amazon-bedrock`, and the community `ollama-ai-provider-v2`, the
Ollama provider that declares `ai` 6 as its peer; the AI SDK has no Ollama
provider of its own). Versions are pinned in package-lock.json.

One `FakeLLMServer` per scenario; one Node process (`read_streams.mjs`) reads
every case and prints a summary of each (text, reasoning, tool calls with
parsed arguments, finish, usage, error). rxstream reads the same server's
bytes of the same dialect; the client must read what rxstream reads. Where a
client has no field for something rxstream reads, `expected` says so and why
(each reason found in the client's own parsing code); nothing else may differ.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import reactivex

import rxstream as rs
from rxstream.testing.server import FakeLLMServer, Scenario
from tests.support.conformance_readers import DIALECTS, Read, rxstream_read
from tests.support.conformance_scenarios import ERROR_MID_STREAM, SCENARIOS

from ..conformance.conftest import body_of
from ..support.node import run_node
from .conftest import HERE

pytestmark = pytest.mark.matrix

READERS = ("sdk", "ai-sdk")
#: Two calls streamed side by side, as some OpenAI-compatible servers send them.
INTERLEAVED = Scenario.answer(
    rs.ToolCallDelta(0, '{"city": ', id="call_1", name="weather"),
    rs.ToolCallDelta(1, '{"q": ', id="call_2", name="search"),
    rs.ToolCallDelta(0, '"Paris"}'),
    rs.ToolCallDelta(1, '"rx"}'),
    rs.Finish("tool_calls"),
    rs.Usage(20, 11, 31),
)
ANSWERS: dict[str, Scenario] = {**SCENARIOS, "interleaved-tool-calls": INTERLEAVED}
#: The provider's error with nothing but its message (no type, no code).
BARE_ERROR = Scenario.answer(
    rs.TextDelta("Hel"), rs.ProviderError("the model is overloaded"), end=False
)
ERRORS: dict[str, Scenario] = {"error-mid-stream": ERROR_MID_STREAM, "bare-error": BARE_ERROR}
CASES: dict[str, Scenario] = {**ANSWERS, **ERRORS}

#: The AI SDK's unified finish reasons, in rxstream's words.
UNIFIED = {"stop": "stop", "length": "length", "tool-calls": "tool_calls"}


def case_name(reader: str, dialect: str, kind: str) -> str:
    return f"{reader}/{dialect}/{kind}"


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, FakeLLMServer]]:
    with ExitStack() as stack:
        yield {kind: stack.enter_context(FakeLLMServer(s)) for kind, s in CASES.items()}


@pytest.fixture(scope="module")
def results(node: str, servers: dict[str, FakeLLMServer]) -> dict[str, Any]:
    """What each JavaScript client read of each case (one node process for all of them)."""
    cases = [
        {
            "name": case_name(reader, dialect, kind),
            "dialect": dialect,
            "reader": reader,
            "base": f"http://127.0.0.1:{server.port}",
        }
        for kind, server in servers.items()
        for dialect in DIALECTS
        for reader in READERS
    ]
    read: dict[str, Any] = run_node(node, HERE / "read_streams.mjs", cases)
    return read


@pytest.fixture(scope="module")
def mine(servers: dict[str, FakeLLMServer]) -> dict[tuple[str, str], tuple[Read, str | None]]:
    """rxstream's reading of every case's bytes, and its normalised finish reason."""
    out: dict[tuple[str, str], tuple[Read, str | None]] = {}
    for kind, server in servers.items():
        for dialect in DIALECTS:
            body = body_of(server, dialect)
            out[dialect, kind] = (rxstream_read(dialect, body), finish_reason(dialect, body))
    return out


def finish_reason(dialect: str, body: bytes) -> str | None:
    """rxstream's normalised finish reason of `body` (None: no finish came)."""
    frames: list[Any] = [rs.eventstream_frames()] if dialect == "bedrock" else [rs.lines()]
    if dialect not in ("bedrock", "ollama"):
        frames.append(rs.sse_frames())
    source: reactivex.Observable[Any] = reactivex.of(body)
    for operator in [*frames, rs.decode(dialect)]:
        source = operator(source)
    deltas: list[Any] = []
    source.subscribe(on_next=deltas.append, on_error=lambda _: None)
    finishes = [d.reason for d in deltas if isinstance(d, rs.Finish)]
    return finishes[-1] if finishes else None


def expected(reader: str, dialect: str, read: Read, reason: str | None) -> dict[str, Any]:
    """What the client must give: rxstream's reading, less what the client has no field for."""
    a = read.answer
    want: dict[str, Any] = {
        "text": a.text,
        "reasoning": a.reasoning,
        "calls": [list(call) for call in a.calls],
        "finish": a.finish,
        "usage": None if a.usage is None else list(a.usage),
        "error": None,
    }
    if reader == "sdk":
        return want
    want["unified"] = reason
    match dialect:
        case "openai-chat":
            # @ai-sdk/openai's chat model reads no `reasoning_content` (no field for it
            # in its chunk schema: OpenAI's chat API streams no reasoning text).
            want["reasoning"] = ""
        case "openai-responses":
            # The provider gives a raw finish only for `incomplete_details.reason`
            # (`finishReason.raw`), not the `completed` status.
            if a.finish == "completed":
                want["finish"] = None
        case "ollama" if a.calls:
            # ollama-ai-provider-v2 writes its own raw finish when calls came
            # (`{unified: "tool-calls", raw: "tool_calls"}`), whatever `done_reason` said.
            want["finish"] = "tool_calls"
    return want


def got_of(summary: dict[str, Any], reader: str) -> dict[str, Any]:
    """The client's summary in `expected`'s shape (the SDKs have no unified finish)."""
    got = {key: summary[key] for key in ("text", "reasoning", "calls", "finish", "usage", "error")}
    if reader == "ai-sdk":
        got["unified"] = UNIFIED.get(summary["unified"], summary["unified"])
    return got


@pytest.mark.parametrize("kind", list(ANSWERS))
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("reader", READERS)
def test_the_client_reads_what_rxstream_reads(
    results: dict[str, Any],
    mine: dict[tuple[str, str], tuple[Read, str | None]],
    reader: str,
    dialect: str,
    kind: str,
) -> None:
    read, reason = mine[dialect, kind]
    assert read.error is None
    assert read.answer.text or read.answer.calls  # nothing of the script was lost
    got = results[case_name(reader, dialect, kind)]
    assert got_of(got, reader) == expected(reader, dialect, read, reason)


@pytest.mark.parametrize("kind", list(ERRORS))
@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("reader", READERS)
def test_a_provider_error_mid_answer_reaches_the_client(
    results: dict[str, Any],
    mine: dict[tuple[str, str], tuple[Read, str | None]],
    reader: str,
    dialect: str,
    kind: str,
) -> None:
    read, _ = mine[dialect, kind]
    assert isinstance(read.error, rs.ProviderError)
    assert read.error.message == "the model is overloaded"
    got = results[case_name(reader, dialect, kind)]
    assert got["text"] == read.answer.text == "Hel"
    assert got["calls"] == []
    match reader, dialect:
        case "ai-sdk", "cohere":
            # @ai-sdk/cohere maps `finish_reason: "ERROR"` to the finish "error" and
            # reads no `delta.error` (its message-end schema has no such field).
            assert (got["error"], got["unified"], got["finish"]) == (None, "error", "ERROR")
        case "ai-sdk", "ollama":
            # ollama-ai-provider-v2 drops a line its chunk schema refuses with a
            # console.warn (Ollama's `{"error": ...}` line has no `model`, `done`,
            # `message`): the stream just ends, finish "other".
            assert (got["error"], got["unified"]) == (None, "other")
        case "ai-sdk", _:
            # The provider's message itself (not a refusal of the event that carried it).
            assert got["error"] is not None
            assert got["error"].endswith(": the model is overloaded"), got["error"]
            assert got["unified"] == "error"
        case _:
            assert got["error"] is not None
            assert "the model is overloaded" in got["error"]
            assert "validation" not in got["error"].lower()
