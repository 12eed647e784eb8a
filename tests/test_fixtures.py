"""Every recorded OpenAI-compatible chat stream in tests/data, asserted to its final message.

The files are real provider recordings (where each one comes from:
tests/data/PROVENANCE.md). Each one goes bytes -> lines -> frames -> chunks -> final
messages through the core machines, and the result is checked against what
the recording says: text (exact, or start + end + length when long),
reasoning, tool calls (names and parsed arguments), finish reason and usage.
The same bytes through the Rx operators, and cut into small pieces, must give
the same messages.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import reactivex

import rxstream as rs
from rxstream.core.dialects.openai_chat.chunks import ChunkDecoder
from rxstream.core.dialects.openai_chat.deltas import DeltaDecoder
from rxstream.core.lines import LineSplitter
from rxstream.core.message import MessageAccumulator
from rxstream.core.sse import SSEParser
from rxstream.core.think import ThinkTagSplitter
from rxstream.models import (
    ChatChunk,
    Delta,
    Message,
    Metadata,
    ReasoningDelta,
    ToolCallDelta,
)
from rxstream.operators._chunk_input import chunks_or_deltas
from tests.support.recordings.openai_chat import (
    N3,
    SINGLE_CHOICE,
    Expected,
    Long,
    check_message,
    usage,
)

DATA = Path(__file__).parent / "data"


def chunks_of(data: bytes, piece: int | None = None) -> list[ChatChunk]:
    """Bytes -> ChatChunks through the core machines, stopping at [DONE] as the operator does."""
    splitter, parser, decoder = LineSplitter(), SSEParser(), ChunkDecoder()
    pieces = [data] if piece is None else [data[i : i + piece] for i in range(0, len(data), piece)]
    out: list[ChatChunk] = []
    for part in pieces:
        for line in splitter.feed(part):
            for frame in parser.feed(line):
                out.extend(decoder.feed(frame))
                if decoder.done:
                    return out
    for line in splitter.close():
        for frame in parser.feed(line):
            out.extend(decoder.feed(frame))
            if decoder.done:
                return out
    for frame in parser.close():
        out.extend(decoder.feed(frame))
        if decoder.done:
            return out
    out.extend(decoder.close())
    return out


def messages_of(name: str, piece: int | None = None) -> list[Message]:
    # The machines `rs.accumulate_message()` runs over chunks: a delta decoder first.
    acc = chunks_or_deltas(MessageAccumulator, "rs.accumulate_message()", reads_chunks=True)()
    for chunk in chunks_of((DATA / name).read_bytes(), piece):
        acc.feed(chunk)
    return acc.close()


@pytest.mark.parametrize("name", sorted(SINGLE_CHOICE), ids=sorted(SINGLE_CHOICE))
def test_recording_final_message(name: str) -> None:
    [message] = messages_of(name)
    check_message(message, SINGLE_CHOICE[name])


def test_openai_n3_choices_stay_apart() -> None:
    messages = messages_of("openai/chat-n3-choices.sse")
    assert [m.choice for m in messages] == [0, 1, 2]
    for message, temperature in zip(messages, (65, 61, 59), strict=True):
        check_message(message, Expected(N3.format(temperature), usage=usage(79, 42, 121, 0)))


ALL = [*sorted(SINGLE_CHOICE), "openai/chat-n3-choices.sse"]


@pytest.mark.parametrize("name", ALL, ids=ALL)
def test_recording_cut_into_pieces_gives_the_same_messages(name: str) -> None:
    assert messages_of(name, piece=61) == messages_of(name)


@pytest.mark.parametrize("name", ALL, ids=ALL)
def test_recording_through_the_operators_gives_the_same_messages(name: str) -> None:
    data = (DATA / name).read_bytes()
    got: list[Message] = []
    reactivex.from_iterable([data[i : i + 997] for i in range(0, len(data), 997)]).pipe(
        rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.deltas(), rs.accumulate_message()
    ).subscribe(got.append)
    # Deltas carry no role, so compare everything else.
    assert got == messages_of(name)


def test_groq_think_tags_split_into_reasoning() -> None:
    splitter = chunks_or_deltas(ThinkTagSplitter, "rs.think_tags()")()
    acc = MessageAccumulator()
    for chunk in chunks_of((DATA / "groq/think-tags-in-content.sse").read_bytes()):
        for delta in splitter.feed(chunk):
            acc.feed(delta)
    for delta in splitter.close():
        acc.feed(delta)
    [message] = acc.close()
    Long(
        "\nOkay, so I want to make Uruguayan alfaj",
        "turn out right, I can adjust next time.\n",
        1977,
    ).check(message.reasoning)
    Long(
        "\n\nTo make Uruguayan alfajores, follow th",
        "Enjoy your homemade Uruguayan alfajores!",
        2053,
    ).check(message.content)
    assert "<think>" not in message.content + message.reasoning
    assert message.finish_reason == "stop"


def deltas_until_error(name: str) -> tuple[list[Delta], BaseException | None]:
    got: list[Delta] = []
    errors: list[BaseException] = []
    data = (DATA / name).read_bytes()
    reactivex.of(data).pipe(rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.deltas()).subscribe(
        got.append, errors.append
    )
    return got, errors[0] if errors else None


def test_openrouter_error_object_in_a_normal_chunk_is_provider_error() -> None:
    got, error = deltas_until_error("openrouter/keepalive-then-midstream-error.sse")
    assert isinstance(error, rs.ProviderError)
    assert not isinstance(error, rs.TruncatedStreamError)
    assert (error.code, error.message) == (400, "Token limit reached")
    reasoning = "".join(d.text for d in got if isinstance(d, ReasoningDelta))
    assert reasoning  # the reasoning streamed before the error was delivered


def test_groq_error_event_without_done_is_provider_error() -> None:
    got, error = deltas_until_error("groq/error-event-tool-use-failed.sse")
    assert isinstance(error, rs.ProviderError)
    assert (error.type, error.code, error.event) == (
        "invalid_request_error",
        "tool_use_failed",
        "error",
    )
    assert "did not match schema" in error.message
    assert got
    assert isinstance(got[0], Metadata)  # the chunks' id and model
    assert all(isinstance(d, ReasoningDelta) for d in got[1:])
    assert not any(isinstance(d, ToolCallDelta) for d in got)


def test_decoder_sees_every_recorded_chunk_without_error() -> None:
    # Every choice object of every recording decodes: no chunk shape trips the decoder.
    for name in ALL:
        decoder = DeltaDecoder()
        for chunk in chunks_of((DATA / name).read_bytes()):
            decoder.feed(chunk)
        assert decoder.close() == []


def test_every_recording_is_in_a_table() -> None:
    chat = {
        str(p.relative_to(DATA))
        for p in DATA.glob("*/*.sse")
        if p.parent.name
        in {"openai", "azure", "deepseek", "groq", "mistral", "openrouter", "hf-tgi"}
        and "responses" not in p.name
        and not p.name.startswith("generate-")
    }
    covered = {
        *ALL,
        "openrouter/keepalive-then-midstream-error.sse",
        "groq/error-event-tool-use-failed.sse",
    }
    assert chat == covered
