"""DeltaDecoder: chat chunks -> flat deltas, one table row per shape or provider quirk."""

from __future__ import annotations

from typing import Any

import pytest

from rxstream.core.deltas import DeltaDecoder, parse_usage
from rxstream.models import (
    ChatChunk,
    Delta,
    Finish,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)


def choice(delta: Any = None, finish: Any = None, index: int = 0, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"index": index, "delta": {} if delta is None else delta}
    out["finish_reason"] = finish
    out.update(extra)
    return out


def chunk(*choices: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion.chunk", "choices": list(choices), **extra}


def decode(*raws: dict[str, Any]) -> list[Delta]:
    decoder = DeltaDecoder()
    out: list[Delta] = []
    for raw in raws:
        out.extend(decoder.feed(ChatChunk(raw)))
    out.extend(decoder.close())
    return out


USAGE = {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}
U = Usage(5, 7, 12)

CASES: list[tuple[str, list[dict[str, Any]], list[Delta]]] = [
    ("text", [chunk(choice({"content": "Hi"}))], [TextDelta("Hi")]),
    (
        "role-only first chunk gives nothing",
        [chunk(choice({"role": "assistant", "content": ""}))],
        [],
    ),
    ("empty delta", [chunk(choice({}))], []),
    ("delta null", [chunk({"index": 0, "delta": None})], []),
    ("content null", [chunk(choice({"content": None, "refusal": None}))], []),
    ("no finish_reason key", [chunk({"index": 0, "delta": {"content": "a"}})], [TextDelta("a")]),
    ("no choices key", [{"id": "c"}], []),
    ("choices null", [{"id": "c", "choices": None}], []),
    ("choice index missing is 0", [{"choices": [{"delta": {"content": "a"}}]}], [TextDelta("a")]),
    (
        "deepseek reasoning_content",
        [chunk(choice({"reasoning_content": "hm"}))],
        [ReasoningDelta("hm")],
    ),
    (
        "deepseek explicit nulls while reasoning",
        [
            chunk(choice({"role": "assistant", "content": None, "reasoning_content": ""})),
            chunk(choice({"content": None, "reasoning_content": "think"})),
            chunk(choice({"content": "ok", "reasoning_content": None})),
        ],
        [ReasoningDelta("think"), TextDelta("ok")],
    ),
    (
        "groq/openrouter reasoning",
        [chunk(choice({"reasoning": "hm", "channel": "analysis"}))],
        [ReasoningDelta("hm")],
    ),
    (
        "reasoning_details alone (snowflake)",
        [
            chunk(
                choice(
                    {
                        "reasoning_details": [
                            {"type": "reasoning.text", "text": "a"},
                            {"type": "reasoning.text", "text": "b"},
                        ]
                    }
                )
            )
        ],
        [ReasoningDelta("ab")],
    ),
    (
        "openrouter reasoning and reasoning_details: never twice",
        [
            chunk(
                choice(
                    {
                        "content": "",
                        "reasoning": "x",
                        "reasoning_details": [{"type": "reasoning.text", "text": "x"}],
                    }
                )
            )
        ],
        [ReasoningDelta("x")],
    ),
    (
        "openrouter reasoning null with an empty details text",
        [
            chunk(
                choice(
                    {
                        "reasoning": None,
                        "reasoning_details": [
                            {"type": "reasoning.text", "text": "", "signature": "s"}
                        ],
                    }
                )
            )
        ],
        [],
    ),
    (
        "encrypted reasoning details carry no text",
        [chunk(choice({"reasoning_details": [{"type": "reasoning.encrypted", "data": "opaque"}]}))],
        [],
    ),
    (
        "reasoning_content preferred over reasoning when both come",
        [chunk(choice({"reasoning_content": "x", "reasoning": "x"}))],
        [ReasoningDelta("x")],
    ),
    (
        "mistral magistral thinking part",
        [
            chunk(
                choice(
                    {
                        "content": [
                            {"type": "thinking", "thinking": [{"type": "text", "text": "Okay"}]}
                        ]
                    }
                )
            )
        ],
        [ReasoningDelta("Okay")],
    ),
    (
        "mistral content array with text part",
        [chunk(choice({"content": [{"type": "text", "text": "Hi"}]}))],
        [TextDelta("Hi")],
    ),
    (
        "content array: reasoning before text in one delta",
        [
            chunk(
                choice(
                    {
                        "content": [
                            {"type": "text", "text": "A"},
                            {"type": "thinking", "thinking": "t"},
                        ]
                    }
                )
            )
        ],
        [ReasoningDelta("t"), TextDelta("A")],
    ),
    ("refusal", [chunk(choice({"content": None, "refusal": "No."}))], [RefusalDelta("No.")]),
    ("empty refusal", [chunk(choice({"content": None, "refusal": ""}))], []),
    (
        "order within a choice: reasoning, text, refusal, tool call, finish; usage last",
        [
            chunk(
                choice(
                    {
                        "tool_calls": [
                            {"index": 0, "id": "t", "function": {"name": "f", "arguments": "{}"}}
                        ],
                        "refusal": "r",
                        "content": "c",
                        "reasoning_content": "z",
                    },
                    "stop",
                ),
                usage=USAGE,
            )
        ],
        [
            ReasoningDelta("z"),
            TextDelta("c"),
            RefusalDelta("r"),
            ToolCallDelta(0, "{}", "t", "f"),
            Finish("stop"),
            U,
        ],
    ),
    (
        "openai tool call fragments",
        [
            chunk(
                choice(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "f", "arguments": ""},
                            }
                        ]
                    }
                )
            ),
            chunk(choice({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]})),
        ],
        [ToolCallDelta(0, "", "call_1", "f"), ToolCallDelta(0, '{"a"')],
    ),
    (
        "mistral tool call without index",
        [
            chunk(
                choice(
                    {
                        "tool_calls": [
                            {"id": "gSIMJiOkT", "function": {"name": "w", "arguments": "{}"}}
                        ]
                    },
                    "tool_calls",
                )
            )
        ],
        [ToolCallDelta(None, "{}", "gSIMJiOkT", "w"), Finish("tool_calls")],
    ),
    (
        "tool index null or a string is no index",
        [
            chunk(
                choice(
                    {
                        "tool_calls": [
                            {"index": None, "function": {"arguments": "a"}},
                            {"index": "1", "function": {"arguments": "b"}},
                        ]
                    }
                )
            )
        ],
        [ToolCallDelta(None, "a"), ToolCallDelta(None, "b")],
    ),
    (
        "qwen id empty string on follow-ups is no id",
        [
            chunk(
                choice(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "",
                                "type": "function",
                                "function": {"name": "", "arguments": "x"},
                            }
                        ]
                    }
                )
            )
        ],
        [ToolCallDelta(0, "x")],
    ),
    (
        "arguments as a JSON object, compact, key order kept",
        [
            chunk(
                choice(
                    {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "t",
                                "function": {"name": "f", "arguments": {"b": 1, "a": "é"}},
                            }
                        ]
                    }
                )
            )
        ],
        [ToolCallDelta(0, '{"b":1,"a":"é"}', "t", "f")],
    ),
    (
        "arguments null or missing",
        [
            chunk(
                choice(
                    {
                        "tool_calls": [
                            {"index": 0, "id": "t", "function": {"name": "f", "arguments": None}},
                            {"index": 1, "id": "u", "function": {"name": "g"}},
                        ]
                    }
                )
            )
        ],
        [ToolCallDelta(0, "", "t", "f"), ToolCallDelta(1, "", "u", "g")],
    ),
    (
        "tool_calls null",
        [chunk(choice({"content": None, "tool_calls": None}))],
        [],
    ),
    (
        "legacy function_call",
        [
            chunk(choice({"function_call": {"name": "f", "arguments": ""}})),
            chunk(choice({"function_call": {"arguments": "{}"}})),
            chunk(choice({}, "function_call")),
        ],
        [ToolCallDelta(0, "", None, "f"), ToolCallDelta(0, "{}"), Finish("tool_calls")],
    ),
    (
        "legacy completions text",
        [
            {
                "object": "text_completion",
                "choices": [{"index": 0, "text": "Hi", "finish_reason": None}],
            }
        ],
        [TextDelta("Hi")],
    ),
    (
        "together text next to delta is not doubled",
        [chunk(choice({"content": "Hi"}, text="Hi", token_id=5))],
        [TextDelta("Hi")],
    ),
    *[
        (f"finish {r}", [chunk(choice({}, r))], list[Delta]([Finish(r)]))
        for r in ("stop", "length", "tool_calls", "content_filter")
    ],
    (
        "finish function_call (legacy) is a tool-call finish",
        [chunk(choice({}, "function_call"))],
        list[Delta]([Finish("tool_calls", raw="function_call")]),
    ),
    (
        "finish repeated with the same reason: once",
        [chunk(choice({}, "stop")), chunk(choice({}, "stop"))],
        [Finish("stop")],
    ),
    (
        "stop after tool_calls: both reported",
        [chunk(choice({}, "tool_calls")), chunk(choice({}, "stop"))],
        [Finish("tool_calls"), Finish("stop")],
    ),
    ("empty finish_reason ignored", [chunk(choice({"content": "a"}, ""))], [TextDelta("a")]),
    (
        "n>1 interleaved",
        [
            chunk(choice({"content": "a"}, index=0)),
            chunk(choice({"content": "b"}, index=1)),
            chunk(choice({"content": "c"}, index=0)),
            chunk(choice({}, "stop", index=1)),
            chunk(choice({}, "stop", index=0)),
        ],
        [TextDelta("a"), TextDelta("b", 1), TextDelta("c"), Finish("stop", 1), Finish("stop")],
    ),
    (
        "two choices in one chunk, in listed order",
        [chunk(choice({"content": "b"}, index=1), choice({"content": "a"}, index=0))],
        [TextDelta("b", 1), TextDelta("a")],
    ),
    (
        "openai usage chunk with choices []",
        [chunk(choice({}, "stop")), {"id": "c", "choices": [], "usage": USAGE}],
        [Finish("stop"), U],
    ),
    (
        "usage null on every other chunk",
        [chunk(choice({"content": "a"}), usage=None), chunk(choice({}, "stop"), usage=USAGE)],
        [TextDelta("a"), Finish("stop"), U],
    ),
    (
        "usage riding on the finish chunk (mistral, deepseek)",
        [chunk(choice({"content": "a"}, "stop"), usage=USAGE)],
        [TextDelta("a"), Finish("stop"), U],
    ),
    (
        "cumulative usage repeated: emitted when it changes, never summed",
        [
            chunk(
                choice({"content": "a"}),
                usage={"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
            ),
            chunk(
                choice({"content": "b"}),
                usage={"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
            ),
            chunk(
                choice({"content": "c"}, "stop"),
                usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
            ),
        ],
        [
            TextDelta("a"),
            Usage(5, 1, 6),
            TextDelta("b"),
            TextDelta("c"),
            Finish("stop"),
            Usage(5, 2, 7),
        ],
    ),
    (
        "moderation chunk after the usage chunk",
        [
            {"choices": [], "usage": USAGE},
            {"choices": [], "usage": None, "moderation": {"flagged": False}},
        ],
        [U],
    ),
    (
        "azure prompt_filter_results first chunk and content_filter_results",
        [
            {
                "id": "",
                "created": 0,
                "model": "",
                "object": "",
                "choices": [],
                "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
            },
            chunk(
                choice(
                    {"content": "Hallo"},
                    content_filter_results={"hate": {"filtered": False, "severity": "safe"}},
                )
            ),
            chunk(choice({}, "stop", content_filter_results={})),
        ],
        [TextDelta("Hallo"), Finish("stop")],
    ),
    (
        "azure async filter chunk without delta",
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": None,
                        "content_filter_offsets": {},
                        "content_filter_results": {},
                    }
                ]
            }
        ],
        [],
    ),
    (
        "logprobs present",
        [
            chunk(
                choice(
                    {"content": "Foo"},
                    logprobs={"content": [{"token": "Foo", "logprob": -0.1}], "refusal": None},
                )
            )
        ],
        [TextDelta("Foo")],
    ),
    (
        "openai obfuscation field",
        [chunk(choice({"content": "a"}), obfuscation="x7Yz")],
        [TextDelta("a")],
    ),
    (
        "groq x_groq usage when no top-level usage",
        [chunk(choice({}, "stop"), x_groq={"id": "req", "usage": {"queue_time": 0.1, **USAGE}})],
        [Finish("stop"), U],
    ),
    (
        "groq x_groq and top-level usage agree: one Usage",
        [chunk(choice({}, "stop"), usage=USAGE, x_groq={"id": "req", "usage": USAGE})],
        [Finish("stop"), U],
    ),
]


@pytest.mark.parametrize(("raws", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decode(raws: list[dict[str, Any]], expected: list[Delta]) -> None:
    assert decode(*raws) == expected


USAGE_CASES: list[tuple[str, dict[str, Any], Usage | None]] = [
    ("plain", USAGE, U),
    (
        "openai details",
        {
            **USAGE,
            "prompt_tokens_details": {"cached_tokens": 3},
            "completion_tokens_details": {"reasoning_tokens": 2},
        },
        Usage(5, 7, 12, reasoning_tokens=2, cached_tokens=3),
    ),
    (
        "top-level reasoning_tokens",
        {**USAGE, "reasoning_tokens": 4, "prompt_tokens_details": None},
        Usage(5, 7, 12, 4),
    ),
    (
        "deepseek prompt_cache_hit_tokens",
        {**USAGE, "prompt_cache_hit_tokens": 3},
        Usage(5, 7, 12, cached_tokens=3),
    ),
    ("total missing", {"prompt_tokens": 5, "completion_tokens": 7}, U),
    ("xai total larger than the sum kept", {**USAGE, "total_tokens": 20}, Usage(5, 7, 20)),
    ("no counts", {"cost": 0.1}, None),
    ("counts of the wrong type", {"prompt_tokens": "5", "completion_tokens": True}, None),
]


@pytest.mark.parametrize(
    ("raw", "expected"), [c[1:] for c in USAGE_CASES], ids=[c[0] for c in USAGE_CASES]
)
def test_parse_usage(raw: dict[str, Any], expected: Usage | None) -> None:
    assert parse_usage(raw) == expected


def test_deltas_pass_through() -> None:
    decoder = DeltaDecoder()
    items: list[Delta] = [TextDelta("a"), Finish("stop"), U, ToolCallDelta(0, "x")]
    assert [out for item in items for out in decoder.feed(item)] == items


def test_not_a_chunk_is_a_type_error_and_stops_the_machine() -> None:
    decoder = DeltaDecoder()
    with pytest.raises(TypeError, match="ChatChunk"):
        decoder.feed({"choices": []})  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="after close"):
        decoder.feed(ChatChunk({}))


def test_feed_after_close_is_refused() -> None:
    decoder = DeltaDecoder()
    assert decoder.close() == []
    with pytest.raises(RuntimeError, match="after close"):
        decoder.feed(ChatChunk({}))
    with pytest.raises(RuntimeError):
        decoder.close()
