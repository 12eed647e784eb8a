"""The usage of an attempt cut after output, with no `Usage` of its own, is estimated and marked.

Real sockets (`FakeLLMServer`), waits on virtual time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from reactivex.scheduler import HistoricalScheduler

import rxstream as rs
from rxstream.core.message import MessageAccumulator
from rxstream.io.limits import estimate_tokens
from rxstream.runs._estimate import estimated_usage, estimator
from rxstream.testing import FakeLLMServer, Scenario

ASK = [{"role": "user", "content": "Say hello to the wide world, please."}]
START = datetime(2026, 1, 1, tzinfo=UTC)
ANSWER = Scenario.answer(
    rs.ReasoningDelta("Short."),
    rs.TextDelta("Hello, "),
    rs.TextDelta("wide "),
    rs.TextDelta("world."),
    rs.Finish("stop"),
    rs.Usage(11, 4, 15),
)


def run(after_output: str, faults: list[str]) -> tuple[list[Any], Exception | None, int]:
    retry = rs.Retry(attempts=3, jitter=0.0, after_output=after_output)  # type: ignore[arg-type]
    items: list[Any] = []
    errors: list[Exception] = []
    scheduler = HistoricalScheduler(START)
    with FakeLLMServer(ANSWER, faults=faults) as server, httpx.Client() as client:
        source = rs.chat(
            client,
            "anthropic",
            model="m",
            messages=ASK,
            base_url=f"http://127.0.0.1:{server.port}",
            api_key="k",
            max_tokens=50,
            retry=retry,
        )
        source.subscribe(items.append, errors.append, scheduler=scheduler)
        scheduler.advance_by(60.0)
        return items, errors[0] if errors else None, len(server.requests)


def message(items: list[Any]) -> rs.Message:
    accumulator = MessageAccumulator()
    for item in items:
        accumulator.feed(item)
    return accumulator.close()[0]


@pytest.mark.parametrize("after_output", ["restart", "continue"])
def test_an_attempt_cut_after_output_has_its_usage_estimated_and_summed(after_output: str) -> None:
    items, error, asked = run(after_output, ["cut:3", "ok"])
    assert error is None
    assert asked == 2
    final = message(items)
    cut, done = final.metadata["attempts"]
    assert done["usage"] == {
        "prompt_tokens": 11,
        "completion_tokens": 4,
        "total_tokens": 15,
        "reasoning_tokens": None,
        "cached_tokens": None,
        "cache_write_tokens": None,
    }
    guess = cut["usage"]
    assert guess["estimated"] is True
    assert guess["estimator"] == estimator()
    # What the cut attempt streamed before the cut: the reasoning and two pieces of text.
    assert guess["completion_tokens"] == estimate_tokens("Short.Hello, wide ")
    assert guess["prompt_tokens"] == estimate_tokens("user\nSay hello to the wide world, please.")
    assert guess["total_tokens"] == guess["prompt_tokens"] + guess["completion_tokens"]
    # The sum holds an estimate, and says so.
    assert final.usage == rs.Usage(
        11 + guess["prompt_tokens"],
        4 + guess["completion_tokens"],
        15 + guess["total_tokens"],
        estimated=True,
    )


def test_a_continuation_is_estimated_with_the_messages_it_asked_with() -> None:
    # The continuation is cut too: its prompt holds the answer so far as the assistant's turn.
    items, error, asked = run("continue", ["cut:3", "cut:4", "ok"])
    assert error is None
    assert asked == 3
    first, second, _ = message(items).metadata["attempts"]
    assert second["usage"]["estimated"] is True
    assert second["usage"]["prompt_tokens"] > first["usage"]["prompt_tokens"]


def test_an_attempt_refused_before_output_costs_nothing() -> None:
    items, error, asked = run("restart", ["429", "ok"])
    assert error is None
    assert asked == 2
    refused, _ = message(items).metadata["attempts"]
    assert refused["usage"] is None
    assert message(items).usage == rs.Usage(11, 4, 15)


def test_under_raise_the_partial_lists_the_estimate() -> None:
    _items, error, _ = run("raise", ["cut:3", "ok"])
    assert isinstance(error, rs.StreamError)
    assert error.partial is not None
    (attempt,) = error.partial.metadata["attempts"]
    assert attempt["usage"]["estimated"] is True


def test_without_the_token_counter_it_is_a_quarter_of_the_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import rxstream.core.tokens as tokens

    def missing(*_: Any) -> Any:
        raise ImportError("no tiktoken")

    monkeypatch.setattr(tokens, "TokenCounter", missing)
    record = estimated_usage(
        [rs.TextDelta("abcdefghi"), rs.ToolCallDelta(0, '{"a":1}'), rs.Usage(1, 1, 2)],
        [rs.Message(content="abcd", tool_calls=(rs.ToolCall(0, "c", "f", "{}"),))],
    )
    assert record["estimator"] == "characters/4"
    assert record["completion_tokens"] == 4  # 16 characters
    assert record["prompt_tokens"] == 3  # "abcd", "", "", "f", "{}" joined by newlines: 11
    assert record["estimated"] is True
