"""`after_output="restart"` and `"continue"` against `FakeLLMServer` on 127.0.0.1: a stream cut
after k pieces of an answer (reasoning, text, two parallel tool calls) ends as that answer, once.

Waits run on virtual time (`HistoricalScheduler`); the sockets are real.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from reactivex import Observable
from reactivex.scheduler import HistoricalScheduler

import rxstream as rs
from rxstream.core.message import MessageAccumulator
from rxstream.testing import FakeLLMServer, Scenario

DIALECTS = ["openai-chat", "openai-responses", "anthropic", "gemini", "cohere", "ollama", "bedrock"]
ASK = [{"role": "user", "content": "What is the weather in Paris and in Rome?"}]
START = datetime(2026, 1, 1, tzinfo=UTC)

#: The whole answer: reasoning, text, two tool calls whose arguments interleave.
DELTAS: tuple[rs.Delta, ...] = (
    rs.ReasoningDelta("Two cities."),
    rs.TextDelta("Let me "),
    rs.TextDelta("look."),
    rs.ToolCallDelta(0, '{"city": ', id="call_a", name="weather"),
    rs.ToolCallDelta(1, '{"city": ', id="call_b", name="weather"),
    rs.ToolCallDelta(0, '"Paris"}'),
    rs.ToolCallDelta(1, '"Rome"}'),
    rs.Finish("tool_calls"),
)
ANSWER = Scenario.answer(*DELTAS)
#: A text answer, which a server that starts over repeats whole.
TEXT = Scenario.answer(
    rs.ReasoningDelta("Short."), rs.TextDelta("Hello, "), rs.TextDelta("world."), rs.Finish("stop")
)
#: Every cut: after k pieces, for k from none to all of them.
CUTS = range(len(DELTAS) + 1)


def base_url(server: FakeLLMServer, dialect: str) -> str:
    root = f"http://127.0.0.1:{server.port}"
    return f"{root}/v1" if dialect.startswith("openai") else root


def chat(client: Any, server: FakeLLMServer, dialect: str, **options: Any) -> Observable[rs.Delta]:
    return rs.chat(
        client,
        dialect,
        model="m",
        messages=ASK,
        base_url=base_url(server, dialect),
        api_key="k",
        max_tokens=50,
        **options,
    )


def route(server: FakeLLMServer, dialect: str) -> rs.Route:
    return rs.Route(dialect, "m", base_url=base_url(server, dialect), api_key="k")


def read(source: Observable[rs.Delta]) -> tuple[list[Any], Exception | None]:
    """The items and the error of one run, its waits on virtual time."""
    items: list[Any] = []
    errors: list[Exception] = []
    done: list[bool] = []
    scheduler = HistoricalScheduler(START)
    source.subscribe(items.append, errors.append, lambda: done.append(True), scheduler=scheduler)
    scheduler.advance_by(120.0)
    assert done or errors, "the run neither ended nor failed"
    return items, errors[0] if errors else None


def message(items: list[Any]) -> rs.Message:
    accumulator = MessageAccumulator()
    for item in items:
        accumulator.feed(item)
    return accumulator.close()[0]


def same(got: rs.Message, want: rs.Message) -> None:
    """The answer's content, in its order (usage is summed over attempts, so left out)."""
    assert dataclasses.replace(got, usage=None) == dataclasses.replace(want, usage=None)
    assert got.blocks == want.blocks


@pytest.fixture(scope="module")
def answers() -> dict[tuple[str, int], rs.Message]:
    """Each scripted answer as `rs.chat` reads it in each dialect, without any fault."""
    found = {}
    with httpx.Client() as client:
        for n, scenario in enumerate((ANSWER, TEXT)):
            with FakeLLMServer(scenario) as server:
                for dialect in DIALECTS:
                    run = chat(client, server, dialect).pipe(rs.accumulate_message())
                    found[dialect, n] = run.run()
    return found


def policy(after_output: str) -> rs.Retry:
    return rs.Retry(attempts=3, backoff=0.5, jitter=0.0, after_output=after_output)  # type: ignore[arg-type]


@pytest.mark.parametrize("k", CUTS)
@pytest.mark.parametrize("dialect", DIALECTS)
def test_restart_after_a_cut_gives_the_answer_once(
    dialect: str, k: int, answers: dict[tuple[str, int], rs.Message]
) -> None:
    with FakeLLMServer(ANSWER, faults=[f"cut:{k}", "ok"]) as server, httpx.Client() as client:
        items, error = read(chat(client, server, dialect, retry=policy("restart")))
        asked = len(server.requests)
    assert error is None
    want = answers[dialect, 0]
    same(message(items), want)
    resets = [i for i in items if isinstance(i, rs.Reset)]
    before = items[: items.index(resets[0])] if resets else []
    if any(isinstance(i, rs.TextDelta | rs.ReasoningDelta | rs.ToolCallDelta) for i in before):
        assert resets == [rs.Reset(2, resets[0].reason)]
        assert "TruncatedStreamError" in resets[0].reason or "TransportError" in resets[0].reason
        assert asked == 2
    else:
        assert resets == []  # nothing was shown: a silent retry, if any


@pytest.mark.parametrize("k", range(5))
@pytest.mark.parametrize("dialect", DIALECTS)
def test_continue_after_a_cut_when_the_model_starts_over_gives_the_answer_once(
    dialect: str, k: int, answers: dict[tuple[str, int], rs.Message]
) -> None:
    # The server answers the continuation with the whole answer again: the repeat of
    # what was shown is trimmed, the rest goes on.
    with FakeLLMServer(TEXT, faults=[f"cut:{k}", "ok"]) as server, httpx.Client() as client:
        items, error = read(chat(client, server, dialect, retry=policy("continue")))
        requests = list(server.requests)
    assert error is None
    same(message(items), answers[dialect, 1])
    assert not any(isinstance(i, rs.Reset) for i in items)
    texts = "".join(i.text for i in items if isinstance(i, rs.TextDelta))
    assert texts == "Hello, world."  # nothing shown twice
    if k >= 2:  # "Hello, " was shown: the second request carried it as the assistant's turn
        assert len(requests) == 2
        assert "Hello," in requests[1].body.decode()


def remainder_server(dialect: str) -> FakeLLMServer:
    """A model asked to continue after `call_b` was cut: it sends `call_b` whole, then ends."""
    return FakeLLMServer(
        Scenario.answer(
            rs.ToolCallDelta(0, '{"city": "Rome"}', id="call_b", name="weather"),
            rs.Finish("tool_calls"),
        )
    )


#: The dialects that stream a call's arguments in pieces (Gemini and Ollama send each call
#: whole, so no cut lands inside its arguments).
FRAGMENTING = [d for d in DIALECTS if d not in ("gemini", "ollama")]


@pytest.mark.parametrize("target", DIALECTS)
@pytest.mark.parametrize("dialect", FRAGMENTING)
def test_continue_on_another_route_after_a_cut_inside_arguments_never_splices_them(
    dialect: str, target: str, answers: dict[tuple[str, int], rs.Message]
) -> None:
    # Cut after six pieces: call_a is whole, call_b has half its arguments. They are
    # taken back with a Reset (and the rest replayed); the next route's whole call_b
    # follows call_a.
    k = 6
    with (
        FakeLLMServer(ANSWER, faults=[f"cut:{k}"]) as server,
        remainder_server(target) as other,
        httpx.Client() as client,
    ):
        run = chat(
            client,
            server,
            dialect,
            retry=rs.Retry(attempts=1, after_output="continue"),
            fallback=[route(other, target)],
        )
        items, error = read(run)
        continued = other.requests[0].body.decode() if other.requests else ""
    assert error is None
    got = message(items)
    # (Gemini and Bedrock send arguments as an object: compared as JSON.)
    assert [(c.name, json.loads(c.arguments)) for c in got.tool_calls] == [
        ("weather", {"city": "Paris"}),
        ("weather", {"city": "Rome"}),
    ]
    assert got.content == "Let me look."
    assert got.finish_reason == "tool_calls"
    # The continuation asked the other provider with the text so far and named call_a.
    assert "Let me look." in continued
    assert "call_a" in continued or "Paris" in continued
    # What the consumer was shown of call_b was taken back with one Reset (Cohere holds
    # call_b until call_a ends, so there nothing of it was shown and nothing is reset).
    resets = [i for i in items if isinstance(i, rs.Reset)]
    assert len(resets) == (0 if dialect == "cohere" else 1)
    attempts = got.metadata["attempts"]
    assert [a["route"]["dialect"] for a in attempts] == [dialect, target]


@pytest.mark.parametrize("after_output", ["restart", "continue"])
def test_with_no_attempt_left_the_error_goes_on_with_the_partial(after_output: str) -> None:
    with FakeLLMServer(ANSWER, faults=["cut:3"]) as server, httpx.Client() as client:
        run = chat(client, server, "openai-chat", retry=policy(after_output))
        _, error = read(run)
        asked = len(server.requests)
    assert asked == 3  # the attempts of the only route
    assert isinstance(error, rs.StreamError)
    assert error.partial is not None
    assert error.partial.content.startswith("Let me")
    assert [a["error_type"] for a in error.partial.metadata["attempts"]][:1] != [None]
