"""What each OpenAI Responses recording in tests/data means: the expected message, and its check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from rxstream.errors import (
    ProviderError,
)
from rxstream.models import (
    Message,
)
from tests.support.recordings import sha


@dataclass(frozen=True)
class Text:
    """A text checked exactly, or (when long) by its length, hash and ends."""

    exact: str | None = None
    length: int = 0
    digest: str = ""
    start: str = ""
    end: str = ""

    def check(self, text: str) -> None:
        if self.exact is not None:
            assert text == self.exact
        else:
            assert (len(text), sha(text), text[: len(self.start)], text[-len(self.end) :]) == (
                self.length,
                self.digest,
                self.start,
                self.end,
            )


@dataclass(frozen=True)
class Recording:
    name: str
    content: Text = Text("")
    reasoning: Text = Text("")
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()  # (id, name, parsed arguments)
    finish: str | None = None
    finish_raw: str | None = None
    usage: tuple[int, int, int, int | None, int | None] | None = None
    states: tuple[tuple[str, str, int], ...] = ()  # (id, encrypted prefix, length)
    logprobs: int = 0  # entries in metadata["logprobs"]
    content_filters: int | None = None
    model: str | None = None
    response_id: str | None = None
    error: tuple[str | None, str | int | None, str] | None = None  # type, code, message start
    extra: dict[str, Any] = field(default_factory=dict)


QUOTA = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, read the docs: "
    "https://platform.openai.com/docs/guides/error-codes/api-errors."
)

RECORDINGS = [
    Recording(
        "openai-responses/text.sse",
        content=Text("The capital of France is Paris."),
        finish="stop",
        finish_raw="completed",
        usage=(278, 9, 287, 0, 0),
        model="gpt-4o-2024-08-06",
        response_id="resp_67e554a21aa88191b65876ac5e5bbe0406c52f0e511c76ed",
    ),
    Recording(
        "openai-responses/function-call-args.sse",
        calls=(("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", {"country": "France"}),),
        finish="tool_calls",
        finish_raw="completed",
        usage=(255, 16, 271, 0, 0),
        model="gpt-4o-2024-08-06",
        response_id="resp_67e554a155508191900ee113293c4c830794405d35281ae2",
    ),
    Recording(
        "openai-responses/reasoning-encrypted-content-function-call.sse",
        reasoning=Text(
            "**Calculating step-by-step using calculator**\n\nI'll compute 12 plus 7, then "
            "multiply the result by 3, and finally multiply that by 10, reporting the final "
            "product."
        ),
        calls=(("call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator", {"a": 12, "b": 7, "op": "add"}),),
        finish="tool_calls",
        finish_raw="completed",
        usage=(134, 28, 162, 0, 0),
        states=(
            ("rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9", "gAAAAABpPDIVOKrs", 1060),
        ),
        model="gpt-5.1-codex-max",
        response_id="resp_01830d662ab3856501693c321345c88190b0de00f3b9975691",
    ),
    Recording(
        "openai-responses/text-logprobs.sse",
        content=Text("The capital of Minas Gerais is Belo Horizonte."),
        finish="stop",
        finish_raw="completed",
        usage=(25, 10, 35, 0, 0),
        logprobs=9,
        model="gpt-4o-mini-2024-07-18",
    ),
    Recording(
        "openai-responses/reasoning-summary-and-text.sse",
        content=Text(
            length=1251,
            digest="4242cea70d53",
            start="I'm not a road safety professional, but ",
            end=" rules specific to your area. Stay safe!",
        ),
        reasoning=Text(
            length=2022,
            digest="3c6bd181bde0",
            start="**Providing street crossing instructions",
            end="It will be clear and easy to understand!",
        ),
        finish="stop",
        finish_raw="completed",
        usage=(13, 1680, 1693, 1408, 0),
        # The value of output_item.done, in the item's place (output_item.added and
        # response.completed carry others: the request sends the completed one back).
        states=(("rs_68c42d1d0878819d8266007cd3d1402c08fbf9b1584184ff", "gAAAAABoxC0m_QWp", 440),),
        model="o3-mini-2025-01-31",
    ),
    Recording(
        "openai-responses/error-event-then-response-failed.sse",
        error=("insufficient_quota", "insufficient_quota", QUOTA),
    ),
    Recording(
        "azure/responses-text-content-filters.sse",
        content=Text("Hello"),
        finish="stop",
        finish_raw="completed",
        usage=(11, 11, 22, 0, 0),
        content_filters=2,
        model="gpt-5.1",
    ),
    Recording(
        "bedrock-mantle/responses-function-call.sse",
        calls=(("call_0", "first_tool", {}),),
        finish="tool_calls",
        finish_raw="completed",
        usage=(88, 14, 102, 0, 0),
        model="openai.gpt-5.6-luna",
    ),
    Recording(
        "deepseek/responses-api-text.sse",
        content=Text("The capital of France is Paris."),
        reasoning=Text("We need answer capital of France."),
        finish="stop",
        finish_raw="completed",
        usage=(90, 15, 105, 7, 0),
        states=(("b594b7e1-3dbb-4b65-b8c2-f4f5aae4ee80", "", 0),),
        model="deepseek-v4-flash",
    ),
    Recording(
        "lmstudio/responses-reasoning-tool-call.sse",
        content=Text("I'll get the current weather information for San Francisco for you."),
        reasoning=Text(
            "The user is asking for the weather in San Francisco. I have a weather function "
            'available that takes a location parameter. The user has provided "San Francisco" '
            "as the location, so I have all the required information to make the function call."
        ),
        # Arguments only in function_call_arguments.done (no delta at all).
        calls=(("call_2025306790300011", "weather", {"location": "San Francisco"}),),
        finish="tool_calls",
        finish_raw="completed",
        usage=(182, 61, 243, 48, 2),
        states=(("rs_3yo6zy4vu4hq6iegqwhn1", "", 0),),
        logprobs=13,
        model="zai-org/glm-4.7-flash",
    ),
    Recording(
        "openrouter/responses-api-reasoning-text.sse",
        content=Text("4"),
        reasoning=Text(
            'The user asks: "What is 2+2?" They expect a straightforward answer: 4. Just answer 4.'
        ),
        finish="stop",
        finish_raw="completed",
        usage=(78, 37, 115, 22, 0),
        # The id of the streamed events (response.completed gives it another,
        # rs_tmp_ku4i7pagjwn, which the request sends back).
        states=(("rs_tmp_2kbe7x16sax", "", 0),),
        model="openai/gpt-oss-20b",
        extra={"cost": 1.13e-05},
    ),
]
BY_NAME = {r.name: r for r in RECORDINGS}


def check_recording(case: Recording, messages: list[Message]) -> None:
    (m,) = messages
    case.content.check(m.content)
    case.reasoning.check(m.reasoning)
    assert m.refusal == ""
    assert [(c.id, c.name, c.parse_arguments()) for c in m.tool_calls] == list(case.calls)
    assert [c.index for c in m.tool_calls] == list(range(len(case.calls)))
    assert (m.finish_reason, m.finish_raw) == (case.finish, case.finish_raw)
    assert case.usage is not None
    assert m.usage is not None
    u = m.usage
    assert (u.prompt_tokens, u.completion_tokens, u.total_tokens) == case.usage[:3]
    assert (u.reasoning_tokens, u.cached_tokens) == case.usage[3:]
    assert u.raw is not None
    assert u.raw["input_tokens"] == case.usage[0]
    for key, value in case.extra.items():
        assert u.raw[key] == value
    assert [(s.kind, s.id, s.data[:16], len(s.data)) for s in m.reasoning_state] == [
        ("reasoning_item", *state) for state in case.states
    ]
    for state in m.reasoning_state:
        assert state.raw is not None
        assert state.raw["type"] == "reasoning"
    assert m.citations == ()
    assert m.server_tools == ()
    assert len(m.metadata.get("logprobs", [])) == case.logprobs
    if case.content_filters is None:
        assert "content_filters" not in m.metadata
    else:
        filters = m.metadata["content_filters"]
        assert len(filters) == case.content_filters
        assert [f["source_type"] for f in filters] == ["prompt", "completion"]
        assert not any(f["blocked"] for f in filters)
    assert m.metadata["model"] == case.model
    assert m.metadata["response"]["status"] == "completed"
    if case.response_id is not None:
        assert m.metadata["id"] == case.response_id
    assert "events" not in m.metadata
    assert "items" not in m.metadata


def check_error(case: Recording, run: Callable[[], Any]) -> None:
    assert case.error is not None
    with pytest.raises(ProviderError) as info:
        run()
    kind, code, message = case.error
    assert (info.value.type, info.value.code, info.value.message) == (kind, code, message)
