"""What each Gemini recording in tests/data/google means: the expected message, checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rxstream.core.tools import generated_call_id
from rxstream.models import (
    Message,
    Usage,
)
from tests.support.recordings import sha


@dataclass(frozen=True)
class Call:
    id: str | None
    name: str
    args: dict[str, Any]
    text: str | None = None  # the exact arguments text, where it matters


@dataclass(frozen=True)
class Expect:
    content: str | tuple[int, str]  # exact, or (length, sha256[:12])
    finish: str
    raw: str
    usage: Usage
    reasoning: str | tuple[int, str] = ""
    calls: tuple[Call, ...] = ()
    # (index, length, prefix) of each thought signature
    signatures: tuple[tuple[int | None, int, str], ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


def check_text(got: str, want: str | tuple[int, str]) -> None:
    if isinstance(want, str):
        assert got == want
    else:
        assert (len(got), sha(got)) == want


RECORDINGS = {
    "text-crlf.sse": Expect(
        "The capital of France is Paris.\n",
        "stop",
        "STOP",
        Usage(13, 8, 21),
        metadata={"id": "w1peaMz6INOvnvgPgYfPiQY", "model": "gemini-2.0-flash-exp"},
    ),
    "function-call-single-event.sse": Expect(
        "",
        "tool_calls",
        "STOP",
        Usage(52, 5, 57),
        calls=(Call(None, "get_capital", {"country": "France"}, '{"country":"France"}'),),
        metadata={"id": "1lpeaMTxIpW1nvgP-O3vwQY", "model": "gemini-2.0-flash"},
    ),
    "function-call-thought-signature.sse": Expect(
        "",
        "tool_calls",
        "STOP",
        Usage(29, 212, 241, reasoning_tokens=202),
        calls=(Call(None, "get_country", {}, "{}"),),
        signatures=((0, 1408, "EpwICpkIAXLI2nxlU6gsWZaZ"),),
    ),
    "thinking-thought-parts.sse": Expect(
        (1938, "8c4308d5109d"),
        "stop",
        "STOP",
        Usage(34, 1256, 1290, reasoning_tokens=787),
        reasoning=(1575, "1bf501f690cd"),
        signatures=((None, 6152, "CiIB0e2Kb6Syj1a961EfbWv4"),),
    ),
    "grounding-web-search.sse": Expect(
        (926, "adb9ebe491f7"),
        "stop",
        "STOP",
        Usage(119, 653, 772, reasoning_tokens=412),
    ),
    "vertex-single-event-thought-signature.sse": Expect(
        "OK",
        "stop",
        "STOP",
        Usage(5, 101, 106, reasoning_tokens=100),
        signatures=((None, 724, "CiQBjz1rX+z7CAOCNB0aLI7y"),),
        metadata={"createTime": "2026-03-21T18:11:55.919086Z"},
    ),
    "vertex-partial-args-streaming.sse": Expect(
        "",
        "tool_calls",
        "STOP",
        Usage(26, 155, 181, reasoning_tokens=132),
        calls=(
            Call(None, "getWeather", {"location": "Boston"}, '{"location":"Boston"}'),
            Call(None, "getWeather", {"location": "San Francisco"}),
        ),
        signatures=((0, 1032, "CiMBjz1rX25KieIB4d4AwFn8"),),
    ),
    "vertex-partial-args-array-no-terminal-call.sse": Expect(
        "",
        "tool_calls",
        "STOP",
        Usage(54, 195, 249, reasoning_tokens=121),
        calls=(
            Call(
                None,
                "writeItems",
                {
                    "operations": [
                        {
                            "action": "add",
                            "description": "Fresh red apple",
                            "itemid": "apple_001",
                            "price": 0.5,
                        },
                        {
                            "action": "add",
                            "description": "Ripe yellow banana",
                            "itemid": "banana_001",
                            "price": 0.3,
                        },
                    ]
                },
                '{"operations":[{"action":"add","description":"Fresh red apple",'
                '"itemid":"apple_001","price":0.5},{"action":"add","description":'
                '"Ripe yellow banana","itemid":"banana_001","price":0.3}]}',
            ),
        ),
        signatures=((0, 732, "AY89a19ZkXSMGh/bSOlwTCxl"),),
    ),
}

#: The grounding recording's citations: (title, the text its support segment quotes).
GROUNDING = [
    ("Weather information for San Francisco, CA, US", "As of Tuesday afternoon, the"),
    ("timeanddate.com", "Another report indicates a temperature of 68°F"),
    ("Weather information for San Francisco, CA, US", "There is a very low chance"),
    ("weather.gov", "The forecast for the remainder"),
    ("wunderground.com", "Some sources suggest the high could reach up to 85"),
    ("weather.gov", "Tonight, the weather is expected"),
    ("accuweather.com", "Hourly forecasts show"),
    ("timeanddate.com", "Hourly forecasts show"),
    ("Weather information for San Francisco, CA, US", "The chance of rain remains low"),
]


def check_recording(name: str, message: Message) -> None:
    want = RECORDINGS[name]
    check_text(message.content, want.content)
    check_text(message.reasoning, want.reasoning)
    assert (message.finish_reason, message.finish_raw) == (want.finish, want.raw)
    assert message.usage == want.usage
    assert message.refusal == ""
    assert [(c.index, c.name, c.parse_arguments()) for c in message.tool_calls] == [
        (i, c.name, c.args) for i, c in enumerate(want.calls)
    ]
    for call, expected in zip(message.tool_calls, want.calls, strict=True):
        # A call that came without an id has the one rxstream makes from its place and content.
        assert call.id == (
            expected.id
            if expected.id is not None
            else generated_call_id(call.index, call.name, call.arguments)
        )
        if expected.text is not None:
            assert call.arguments == expected.text
    assert [
        (s.kind, s.index, len(s.data), s.data[: len(p)])
        for s, (_, _, p) in zip(message.reasoning_state, want.signatures, strict=True)
    ] == [("thought_signature", i, n, p) for i, n, p in want.signatures]
    assert {k: message.metadata[k] for k in want.metadata} == want.metadata
    if name == "grounding-web-search.sse":
        check_grounding(message)
    else:
        assert message.citations == ()
    assert message.server_tools == ()


def check_grounding(message: Message) -> None:
    got = [(c.kind, c.title, c.text or "") for c in message.citations]
    assert len(got) == len(GROUNDING)
    for (kind, title, text), (want_title, prefix) in zip(got, GROUNDING, strict=True):
        assert (kind, title, text[: len(prefix)]) == ("grounding", want_title, prefix)
    for c in message.citations:
        # Offsets are characters into the answer: they cut out the quoted text exactly.
        assert c.start is not None
        assert c.end is not None
        assert message.content[c.start : c.end] == c.text
        assert c.url is not None
        assert c.url.startswith("https://")
        assert c.raw is not None
        assert set(c.raw) == {"groundingSupport", "groundingChunk"}
    # Byte 376 of the UTF-8 answer is character 372: four "°" come before it.
    assert (message.citations[1].start, message.citations[1].end) == (372, 439)
    grounding = message.metadata["groundingMetadata"]
    assert grounding["webSearchQueries"] == ["weather in San Francisco today"]
    assert len(grounding["searchEntryPoint"]["renderedContent"]) == 4660
