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

from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    Usage,
)
from rxstream.operators._chunk_input import chunks_or_deltas

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


@dataclass(frozen=True)
class Long:
    """A long text, checked by its start, its end and its length."""

    start: str
    end: str
    length: int

    def check(self, text: str) -> None:
        assert (text[: len(self.start)], text[-len(self.end) :], len(text)) == (
            self.start,
            self.end,
            self.length,
        )


@dataclass(frozen=True)
class Expected:
    content: str | Long = ""
    reasoning: str | Long = ""
    refusal: str = ""
    tools: tuple[tuple[str | None, str, dict[str, Any]], ...] = ()
    finish: str | None = "stop"
    usage: Usage | None = None


def check_text(expected: str | Long, got: str) -> None:
    if isinstance(expected, Long):
        expected.check(got)
    else:
        assert got == expected


def check_message(message: Message, want: Expected) -> None:
    assert message.role == "assistant"
    check_text(want.content, message.content)
    check_text(want.reasoning, message.reasoning)
    assert message.refusal == want.refusal
    got_tools = tuple((c.id, c.name, c.parse_arguments()) for c in message.tool_calls)
    assert got_tools == want.tools
    assert [c.index for c in message.tool_calls] == list(range(len(want.tools)))
    assert message.finish_reason == want.finish
    assert message.usage == want.usage


def usage(
    p: int,
    c: int,
    t: int,
    r: int | None = None,
    cached: int | None = None,
    written: int | None = None,
) -> Usage:
    return Usage(p, c, t, reasoning_tokens=r, cached_tokens=cached, cache_write_tokens=written)


N3 = '{{"city":"San Francisco","temperature":{},"units":"f"}}'

SINGLE_CHOICE: dict[str, Expected] = {
    # OpenAI: logprobs on every chunk; usage chunk with choices: [].
    "openai/chat-logprobs-content.sse": Expected("Foo!", usage=usage(9, 2, 11, 0)),
    # A refusal streamed in delta.refusal, its logprobs under logprobs.refusal.
    "openai/chat-logprobs-refusal.sse": Expected(
        refusal="I'm very sorry, but I can't assist with that.", usage=usage(79, 12, 91, 0)
    ),
    "openai/chat-max-tokens-length.sse": Expected('{"', finish="length", usage=usage(79, 1, 80, 0)),
    # A second choices: [] chunk (moderation) after the usage chunk: usage kept.
    "openai/chat-moderation-after-usage.sse": Expected("Paris.", usage=usage(13, 11, 24, 0, 0)),
    "openai/chat-parallel-tool-calls.sse": Expected(
        tools=(
            (
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                {"city": "Edinburgh", "country": "GB", "units": "c"},
            ),
            (
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                {"ticker": "AAPL", "exchange": "NASDAQ"},
            ),
        ),
        finish="tool_calls",
        usage=usage(149, 60, 209, 0),
    ),
    "openai/chat-refusal-stream.sse": Expected(
        refusal="I'm sorry, I can't assist with that request.", usage=usage(79, 11, 90, 0)
    ),
    "openai/chat-text-usage.sse": Expected(
        Long(
            "I'm unable to provide real-time weather ",
            "liable weather website or a weather app.",
            159,
        ),
        usage=usage(14, 30, 44, 0),
    ),
    # The `obfuscation` padding field on every chunk is ignored.
    "openai/chat-tool-call-obfuscation.sse": Expected(
        tools=(("call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", {"country": "UK"}),),
        finish="tool_calls",
        usage=usage(53, 15, 68, 0, 0),
    ),
    "openai/chat-tool-call-single.sse": Expected(
        tools=(
            (
                "call_CTf1nWJLqSeRgDqaCG27xZ74",
                "get_weather",
                {"city": "San Francisco", "state": "CA"},
            ),
        ),
        finish="tool_calls",
        usage=usage(48, 19, 67, 0),
    ),
    # Legacy completions (choices[].text, no delta), read leniently.
    "openai/completions-legacy-text.sse": Expected(
        'The holiday is called "Gratitude Day" and it is a day dedicated to',
        finish="length",
        usage=usage(14, 16, 30),
    ),
    # Azure: a first chunk with choices: [] and prompt_filter_results.
    "azure/chat-prompt-filter-results-first-chunk.sse": Expected(
        "Capital of Denmark.", usage=usage(15, 78, 93, 64, 0)
    ),
    "azure/chat-prompt-filter-results-raw.sse": Expected("Hallo Welt!"),
    # DeepSeek on Azure Foundry: reasoning_content, role: null, top-level reasoning_tokens.
    "azure/foundry-deepseek-v4-reasoning-matched-stop.sse": Expected(
        Long(
            "Exciting news, Knicks fans—there's a bra",
            " See you next April\u202f4—from the logo! 🎯🧡💙",
            2661,
        ),
        Long(
            "We need to invent a new holiday around t",
            ". That seems fun. I'll craft a response.",
            3832,
        ),
        usage=usage(19, 1720, 1739, 0),
    ),
    # DeepSeek: reasoning_content, content: null while reasoning, usage on the finish chunk.
    "deepseek/reasoning-content.sse": Expected(
        "Hello there! 😊 How can I help you today?",
        Long(
            'Hmm, the user just said "Hello". It\'s a ',
            "not reply further - and that's okay too.",
            882,
        ),
        usage=usage(6, 212, 218, 198, 0),
    ),
    # DeepSeek: single-character argument fragments; prompt_cache_hit_tokens.
    "deepseek/tool-call-with-reasoning.sse": Expected(
        reasoning=Long(
            "The user is asking for the weather in Sa",
            'cation parameter set to "San Francisco".',
            191,
        ),
        tools=(("call_00_ioIn7yN9p1ZOMNpDLwd4MgAF", "weather", {"location": "San Francisco"}),),
        finish="tool_calls",
        usage=usage(339, 83, 422, 39, 320),
    ),
    # Groq: x_groq on the first and finish chunks; a whole call in one fragment.
    "groq/reasoning-tool-call-x-groq.sse": Expected(
        reasoning=Long(
            "We need to call the function with correc",
            '"name". Provide a name, e.g., "example".',
            92,
        ),
        tools=(
            (
                "fc_bfb39741-3748-4def-9886-a93fc9c64a90",
                "get_something_by_name",
                {"name": "example"},
            ),
        ),
        finish="tool_calls",
        usage=usage(304, 49, 353, 23),
    ),
    # Groq: <think> tags left in the content (think_tags() is opt-in, tested below);
    # usage only inside x_groq.usage.
    "groq/think-tags-in-content.sse": Expected(
        Long(
            "<think>\nOkay, so I want to make Uruguaya",
            "Enjoy your homemade Uruguayan alfajores!",
            4045,
        ),
        usage=usage(21, 988, 1009),
    ),
    # Mistral 2024: role: null after the first delta, "usage": null until the finish chunk.
    "mistral/chat-text-role-null-done.sse": Expected(
        Long(
            'It is subjective to determine the "best"',
            "at cheese: Chevre (goat cheese) or Crott",
            477,
        ),
        finish="length",
        usage=usage(15, 128, 143),
    ),
    # Mistral: no index on tool calls, whole call in the finish chunk.
    "mistral/chat-tool-call-whole-done.sse": Expected(
        tools=(
            ("u2ef3Udel", "WeatherPlugin-GetWeather", {"location": "Paris", "unit": "celsius"}),
        ),
        finish="tool_calls",
        usage=usage(118, 31, 149),
    ),
    # Mistral Magistral: content as an array of typed parts, thinking parts -> reasoning.
    "mistral/magistral-thinking-content-array.sse": Expected(
        Long(
            "To cross the street safely, follow these",
            "e steps, you can ensure a safe crossing.",
            607,
        ),
        Long(
            "Okay, the user is asking how to cross th",
            "ation into a clear and concise response.",
            421,
        ),
        usage=usage(10, 232, 242),
    ),
    "mistral/text.sse": Expected("Hello, world! This is a test response.", usage=usage(13, 8, 21)),
    "mistral/tool-call-whole-in-finish-chunk.sse": Expected(
        tools=(("gSIMJiOkT", "weather", {"location": "San Francisco"}),),
        finish="tool_calls",
        usage=usage(124, 22, 146),
    ),
    # OpenRouter: reasoning next to reasoning_details (never twice), keep-alive comments,
    # usage on a normal choice with an empty delta after the finish chunk.
    "openrouter/reasoning-details-claude.sse": Expected(
        "2 + 2 = 4",
        "This is a simple arithmetic question. 2+2 equals 4.",
        usage=usage(43, 36, 79, 13, 0),
    ),
    # OpenRouter via Bedrock: usage on a choices: [] chunk.
    "openrouter/usage-empty-choices.sse": Expected("Hello!", usage=usage(254, 5, 259, 0, 0, 0)),
    "openrouter/web-search-annotations.sse": Expected(
        "The URL for Pydantic AI's GitHub repository is:  \n\nhttps://github.com/pydantic/pydantic-ai",
        usage=usage(2317, 53, 2370, 0, 0, 0),
    ),
    # TGI: data: without a space, no [DONE], no usage.
    "hf-tgi/chat-data-no-space-no-done.sse": Expected(
        Long(
            "Deep learning is a subset of machine lea",
            "evels of abstraction. The algorithms can",
            550,
        ),
        finish="length",
    ),
}


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
