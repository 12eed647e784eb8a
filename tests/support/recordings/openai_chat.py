"""What each OpenAI-style chat recording in tests/data means: the expected message, checked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rxstream.models import (
    Message,
    Usage,
)


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
