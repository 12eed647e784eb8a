"""DeltaDecoder: chat chunks -> flat deltas, one table row per shape or provider quirk."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from rxstream.core.dialects.openai_chat.deltas import DeltaDecoder
from rxstream.core.dialects.openai_chat.reader import parse_usage
from rxstream.errors import MalformedChunkError
from rxstream.models import (
    ChatChunk,
    Citation,
    Delta,
    Finish,
    Metadata,
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
        "tool index null or missing is no index",
        [
            chunk(
                choice(
                    {
                        "tool_calls": [
                            {"index": None, "function": {"arguments": "a"}},
                            {"function": {"arguments": "b"}},
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
        "logprobs present: a Metadata of the entries, before the text",
        [
            chunk(
                choice(
                    {"content": "Foo"},
                    logprobs={"content": [{"token": "Foo", "logprob": -0.1}], "refusal": None},
                )
            )
        ],
        [Metadata({"logprobs": [{"token": "Foo", "logprob": -0.1}]}), TextDelta("Foo")],
    ),
    (
        "openai obfuscation field",
        [chunk(choice({"content": "a"}), obfuscation="x7Yz")],
        [TextDelta("a")],
    ),
    (
        "openai url_citation annotations: after the text, fields under the type's name",
        [
            chunk(
                choice(
                    {
                        "content": "See",
                        "annotations": [
                            {
                                "type": "url_citation",
                                "url_citation": {
                                    "url": "https://one.test/",
                                    "title": "One",
                                    "start_index": 0,
                                    "end_index": 3,
                                },
                            },
                            {"type": "note", "title": "flat"},
                        ],
                    },
                    index=1,
                )
            )
        ],
        [
            TextDelta("See", 1),
            Citation(
                "url_citation", url="https://one.test/", title="One", start=0, end=3, choice=1
            ),
            Citation("note", title="flat", choice=1),
        ],
    ),
    (
        "perplexity sources repeated on every chunk: each address once, before the usage",
        [
            chunk(choice({"content": "a"}), citations=["https://p.test/1"]),
            chunk(
                choice({"content": "b"}, "stop"),
                citations=["https://p.test/1", "https://p.test/2"],
                search_results=[{"url": "https://p.test/2", "title": "Two"}, {"title": "none"}],
                usage=USAGE,
            ),
        ],
        [
            TextDelta("a"),
            Citation("citation", url="https://p.test/1"),
            TextDelta("b"),
            Finish("stop"),
            Citation("search_result", url="https://p.test/2", title="Two"),
            Citation("search_result", title="none"),
            U,
        ],
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
    assert decode(*raws) == named(raws) + expected


def named(raws: list[dict[str, Any]]) -> list[Delta]:
    """Every chunk `chunk()` builds names the response `"c"`: one Metadata says so, first."""
    return [Metadata({"id": "c"})] if any(raw.get("id") == "c" for raw in raws) else []


IDENTITY_CASES: list[tuple[str, list[dict[str, Any]], list[Delta]]] = [
    (
        "id and model once, before the first chunk's deltas",
        [
            {"id": "r1", "model": "m", "choices": [choice({"content": "a"})]},
            {"id": "r1", "model": "m", "choices": [choice({"content": "b"})]},
        ],
        [Metadata({"id": "r1", "model": "m"}), TextDelta("a"), TextDelta("b")],
    ),
    (
        "a change gives what changed",
        [
            {"id": "r1", "model": "m", "choices": [choice({"content": "a"})]},
            {"id": "r1", "model": "m2", "choices": [choice({"content": "b"})]},
        ],
        [
            Metadata({"id": "r1", "model": "m"}),
            TextDelta("a"),
            Metadata({"model": "m2"}),
            TextDelta("b"),
        ],
    ),
    (
        "a chunk without them (a usage chunk) changes nothing",
        [
            {"id": "r1", "model": "m", "choices": [choice({"content": "a"})]},
            {"choices": [], "usage": USAGE, "id": None},
            {"id": "r1", "model": "m", "choices": [choice({}, "stop")]},
        ],
        [Metadata({"id": "r1", "model": "m"}), TextDelta("a"), U, Finish("stop", raw="stop")],
    ),
    (
        "model alone",
        [{"model": "llama", "choices": [choice({"content": "a"})]}],
        [Metadata({"model": "llama"}), TextDelta("a")],
    ),
]


@pytest.mark.parametrize(
    ("raws", "expected"), [c[1:] for c in IDENTITY_CASES], ids=[c[0] for c in IDENTITY_CASES]
)
def test_the_response_id_and_model_are_metadata(
    raws: list[dict[str, Any]], expected: list[Delta]
) -> None:
    assert decode(*raws) == expected


@pytest.mark.parametrize(
    ("raw", "path"),
    [({"id": 7, "choices": []}, "id"), ({"model": ["m"], "choices": []}, "model")],
    ids=["id a number", "model an array"],
)
def test_an_id_or_model_of_another_type_is_malformed(raw: dict[str, Any], path: str) -> None:
    with pytest.raises(MalformedChunkError, match=rf"^malformed chunk \({path} is a JSON"):
        decode(raw)


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
    (
        "xai reasoning counted apart from the completion: added to it",
        {**USAGE, "total_tokens": 15, "completion_tokens_details": {"reasoning_tokens": 3}},
        Usage(5, 10, 15, reasoning_tokens=3),
    ),
    (
        "reasoning inside the completion: left as it is",
        {**USAGE, "completion_tokens_details": {"reasoning_tokens": 3}},
        Usage(5, 7, 12, reasoning_tokens=3),
    ),
    ("no counts", {"cost": 0.1}, None),
    ("counts null", {"prompt_tokens": None, "completion_tokens": None}, None),
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


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"prompt_tokens": "5"},
            "usage.prompt_tokens is a JSON string, not an integer or null",
        ),
        ({"completion_tokens": True}, "usage.completion_tokens is a JSON boolean"),
        ({"total_tokens": 1.0}, "usage.total_tokens is a JSON number"),
        (
            {"prompt_tokens": 1, "prompt_tokens_details": []},
            "usage.prompt_tokens_details is a JSON array, not an object or null",
        ),
        (
            {"prompt_tokens": 1, "completion_tokens_details": {"reasoning_tokens": "2"}},
            "usage.completion_tokens_details.reasoning_tokens is a JSON string",
        ),
    ],
    ids=["string", "boolean", "float", "details an array", "details counter a string"],
)
def test_parse_usage_refuses_wrong_types(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(MalformedChunkError, match=re.escape(message)):
        parse_usage(raw)


def test_not_a_chunk_is_a_type_error_and_stops_the_machine() -> None:
    decoder = DeltaDecoder()
    with pytest.raises(TypeError, match=r"wrap a decoded chunk as rs\.ChatChunk\(raw\)"):
        decoder.feed({"choices": []})  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="this DeltaDecoder is failed; it takes no more input"):
        decoder.feed(ChatChunk({}))


def test_feed_after_close_is_refused() -> None:
    decoder = DeltaDecoder()
    assert decoder.close() == []
    with pytest.raises(RuntimeError, match="this DeltaDecoder is closed; it takes no more input"):
        decoder.feed(ChatChunk({}))
    with pytest.raises(RuntimeError, match="is closed"):
        decoder.close()


# -- strict shapes: every field read is checked, and a wrong type names its path ----------


def d(**fields: Any) -> dict[str, Any]:
    """A chunk of one choice whose delta holds `fields`."""
    return chunk(choice(fields))


def call(**fields: Any) -> dict[str, Any]:
    return d(tool_calls=[fields])


STR, INT = "a string or null", "an integer or null"
OBJ_, ARR = "an object or null", "an array or null"
C, F = "a string, an array or null", "a string, an object or null"
OBJ, SO = "an object", "a string or an object"

# (id, chunk, path, the JSON type that arrived, what was expected)
WRONG: list[tuple[str, dict[str, Any], str, str, str]] = [
    ("content a number", d(content=5), "choices[0].delta.content", "number", C),
    ("content an object", d(content={}), "choices[0].delta.content", "object", C),
    ("content part a number", d(content=["a", 1]), "choices[0].delta.content[1]", "number", SO),
    (
        "content part text",
        d(content=[{"type": "text", "text": 2}]),
        "choices[0].delta.content[0].text",
        "number",
        STR,
    ),
    (
        "content part type",
        d(content=[{"type": 3}]),
        "choices[0].delta.content[0].type",
        "number",
        "a string",
    ),
    (
        "content part without a type",
        d(content=[{}]),
        "choices[0].delta.content[0].type",
        "null",
        "a string",
    ),
    (
        "content part of text without a type",
        d(content=[{"text": "a"}]),
        "choices[0].delta.content[0].type",
        "null",
        "a string",
    ),
    (
        "thinking part without a type",
        d(content=[{"type": "thinking", "thinking": [{"text": "a"}]}]),
        "choices[0].delta.content[0].thinking[0].type",
        "null",
        "a string",
    ),
    (
        "thinking an object",
        d(content=[{"type": "thinking", "thinking": {}}]),
        "choices[0].delta.content[0].thinking",
        "object",
        C,
    ),
    (
        "thinking part text",
        d(content=[{"type": "thinking", "thinking": [{"type": "text", "text": True}]}]),
        "choices[0].delta.content[0].thinking[0].text",
        "boolean",
        STR,
    ),
    ("role", d(role=1), "choices[0].delta.role", "number", STR),
    ("refusal", d(refusal=[]), "choices[0].delta.refusal", "array", STR),
    (
        "reasoning_content",
        d(reasoning_content=1.5),
        "choices[0].delta.reasoning_content",
        "number",
        STR,
    ),
    ("reasoning", d(reasoning={}), "choices[0].delta.reasoning", "object", STR),
    (
        "reasoning beside reasoning_content",
        d(reasoning_content="x", reasoning=1),
        "choices[0].delta.reasoning",
        "number",
        STR,
    ),
    (
        "reasoning_details",
        d(reasoning_details={}),
        "choices[0].delta.reasoning_details",
        "object",
        ARR,
    ),
    (
        "reasoning_details item",
        d(reasoning_details=["x"]),
        "choices[0].delta.reasoning_details[0]",
        "string",
        OBJ,
    ),
    (
        "reasoning_details text",
        d(reasoning_details=[{"type": "reasoning.text", "text": 1}]),
        "choices[0].delta.reasoning_details[0].text",
        "number",
        STR,
    ),
    (
        "reasoning_details summary",
        d(reasoning_details=[{"summary": []}]),
        "choices[0].delta.reasoning_details[0].summary",
        "array",
        STR,
    ),
    (
        "reasoning_details type",
        d(reasoning_details=[{"type": 1}]),
        "choices[0].delta.reasoning_details[0].type",
        "number",
        STR,
    ),
    (
        "details checked beside reasoning",
        d(reasoning="x", reasoning_details=[1]),
        "choices[0].delta.reasoning_details[0]",
        "number",
        OBJ,
    ),
    ("tool_calls an object", d(tool_calls={}), "choices[0].delta.tool_calls", "object", ARR),
    ("tool call a string", d(tool_calls=["x"]), "choices[0].delta.tool_calls[0]", "string", OBJ),
    (
        "tool call index a string",
        call(index="1"),
        "choices[0].delta.tool_calls[0].index",
        "string",
        INT,
    ),
    (
        "tool call index a boolean",
        call(index=False),
        "choices[0].delta.tool_calls[0].index",
        "boolean",
        INT,
    ),
    ("tool call id", call(id=7), "choices[0].delta.tool_calls[0].id", "number", STR),
    ("tool call type", call(type={}), "choices[0].delta.tool_calls[0].type", "object", STR),
    (
        "tool call function",
        call(function="f"),
        "choices[0].delta.tool_calls[0].function",
        "string",
        OBJ_,
    ),
    (
        "function name",
        call(function={"name": 1, "arguments": ""}),
        "choices[0].delta.tool_calls[0].function.name",
        "number",
        STR,
    ),
    (
        "function arguments an array",
        call(function={"arguments": [1]}),
        "choices[0].delta.tool_calls[0].function.arguments",
        "array",
        F,
    ),
    (
        "function arguments a number",
        call(function={"arguments": 1}),
        "choices[0].delta.tool_calls[0].function.arguments",
        "number",
        F,
    ),
    (
        "second tool call",
        d(tool_calls=[{"index": 0}, {"index": 1, "id": False}]),
        "choices[0].delta.tool_calls[1].id",
        "boolean",
        STR,
    ),
    (
        "legacy function_call",
        d(function_call="f"),
        "choices[0].delta.function_call",
        "string",
        OBJ_,
    ),
    (
        "legacy function_call name",
        d(function_call={"name": 1}),
        "choices[0].delta.function_call.name",
        "number",
        STR,
    ),
    ("finish_reason a number", chunk(choice({}, 1)), "choices[0].finish_reason", "number", STR),
    (
        "finish_reason a boolean",
        chunk(choice({}, True)),
        "choices[0].finish_reason",
        "boolean",
        STR,
    ),
    (
        "finish_reason an object",
        chunk(choice({}, {"type": "stop"})),
        "choices[0].finish_reason",
        "object",
        STR,
    ),
    ("choice index a float", {"choices": [{"index": 0.0}]}, "choices[0].index", "number", INT),
    (
        "second choice",
        chunk(choice({}), choice({"content": 1}, index=1)),
        "choices[1].delta.content",
        "number",
        C,
    ),
    ("legacy text", {"choices": [{"index": 0, "text": 5}]}, "choices[0].text", "number", STR),
    ("usage a string", {"choices": [], "usage": "5"}, "usage", "string", OBJ_),
    (
        "usage counter",
        {"choices": [], "usage": {"total_tokens": "5"}},
        "usage.total_tokens",
        "string",
        INT,
    ),
    (
        "usage counter a float",
        {"choices": [], "usage": {"prompt_tokens": 5.0}},
        "usage.prompt_tokens",
        "number",
        INT,
    ),
    (
        "usage reasoning_tokens",
        {"choices": [], "usage": {"reasoning_tokens": True}},
        "usage.reasoning_tokens",
        "boolean",
        INT,
    ),
    (
        "usage cache hits",
        {"choices": [], "usage": {"prompt_cache_hit_tokens": "1"}},
        "usage.prompt_cache_hit_tokens",
        "string",
        INT,
    ),
    (
        "usage details counter",
        {"choices": [], "usage": {"prompt_tokens_details": {"cached_tokens": []}}},
        "usage.prompt_tokens_details.cached_tokens",
        "array",
        INT,
    ),
    ("annotations an object", d(annotations={}), "choices[0].delta.annotations", "object", ARR),
    (
        "annotation url",
        d(annotations=[{"type": "url_citation", "url_citation": {"url": 1}}]),
        "choices[0].delta.annotations[0].url_citation.url",
        "number",
        STR,
    ),
    (
        "annotation fields not an object",
        d(annotations=[{"type": "url_citation", "url_citation": "u"}]),
        "choices[0].delta.annotations[0].url_citation",
        "string",
        OBJ_,
    ),
    ("citations a string", {"citations": "u"}, "citations", "string", ARR),
    ("citation a number", {"citations": [1]}, "citations[0]", "number", "a string or an object"),
    (
        "search result title",
        {"search_results": [{"title": 2}]},
        "search_results[0].title",
        "number",
        STR,
    ),
    ("x_groq", {"choices": [], "x_groq": "r"}, "x_groq", "string", OBJ_),
    ("x_groq usage", {"choices": [], "x_groq": {"usage": []}}, "x_groq.usage", "array", OBJ_),
    (
        "x_groq usage counter",
        {"choices": [], "x_groq": {"usage": {"completion_tokens": "2"}}},
        "x_groq.usage.completion_tokens",
        "string",
        INT,
    ),
]


@pytest.mark.parametrize(
    ("raw", "path", "got", "expected"), [c[1:] for c in WRONG], ids=[c[0] for c in WRONG]
)
def test_a_field_of_the_wrong_type_names_its_path(
    raw: dict[str, Any], path: str, got: str, expected: str
) -> None:
    decoder = DeltaDecoder()
    with pytest.raises(MalformedChunkError) as info:
        decoder.feed(ChatChunk(raw))
    assert info.value.reason == f"{path} is a JSON {got}, not {expected}"
    # What arrived is quoted: the chunk, as compact JSON.
    assert info.value.data == json.dumps(raw, ensure_ascii=False, separators=(",", ":"))


# (id, chunk, deltas) — null stands for "absent" wherever a field may be absent.
NULLS: list[tuple[str, dict[str, Any], list[Delta]]] = [
    (
        "every delta field null",
        d(
            role=None,
            content=None,
            refusal=None,
            reasoning_content=None,
            reasoning=None,
            reasoning_details=None,
            tool_calls=None,
            function_call=None,
        ),
        [],
    ),
    (
        "tool call fields null",
        call(index=None, id=None, type=None, function=None),
        [ToolCallDelta(None, "")],
    ),
    (
        "function fields null",
        call(index=0, function={"name": None, "arguments": None}),
        [ToolCallDelta(0, "")],
    ),
    (
        "content part fields null",
        d(content=[{"type": "text", "text": None}, {"type": "thinking", "thinking": None}]),
        [],
    ),
    ("unknown content part kinds", d(content=[{"type": "image_url", "image_url": 1}]), []),
    ("choice fields null", chunk({"index": None, "delta": None, "finish_reason": None}), []),
    ("choices null", {"choices": None}, []),
    ("usage null", {"choices": [], "usage": None, "x_groq": None}, []),
    (
        "usage fields null",
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 1,
                "completion_tokens": None,
                "total_tokens": None,
                "completion_tokens_details": None,
                "prompt_tokens_details": {"cached_tokens": None},
            },
        },
        [Usage(1, 0, 1)],
    ),
    ("legacy text null", {"choices": [{"index": 0, "text": None}]}, []),
    ("legacy text beside a delta is not read", {"choices": [{"delta": {}, "text": 5}]}, []),
    ("x_groq is not read beside usage", {"choices": [], "usage": USAGE, "x_groq": 5}, [U]),
    ("fields nobody reads stay free", d(channel=5, audio="x", content="a"), [TextDelta("a")]),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "expected"), [c[1:] for c in NULLS], ids=[c[0] for c in NULLS])
def test_null_and_unread_fields_are_fine(raw: dict[str, Any], expected: list[Delta]) -> None:
    assert decode(raw) == named([raw]) + expected


def test_a_failing_chunk_leaves_no_deltas_in_feed_all() -> None:
    decoder = DeltaDecoder()
    out: list[Delta] = []
    good = ChatChunk(d(content="a"))
    bad = ChatChunk(d(reasoning_content="r", tool_calls=[{"id": 7}]))
    with pytest.raises(MalformedChunkError, match=r"tool_calls\[0\]\.id"):
        decoder.feed_all([good, bad], out)
    assert out == [Metadata({"id": "c"}), TextDelta("a")]


@pytest.mark.parametrize(
    "raw",
    [
        d(tool_calls=[{"index": 0, "function": {"arguments": {"a": NESTED}}}])
        for NESTED in [json.loads("[" * 900 + "]" * 900)]
    ]
    + [d(content=[{"type": "thinking", "thinking": []}])],  # the test nests it deep
    ids=["arguments", "thinking"],
)
def test_nesting_past_the_recursion_limit_is_malformed(raw: dict[str, Any]) -> None:
    if raw["choices"][0]["delta"].get("content") is not None:
        # Thinking parts that nest thinking parts, deeper than Python recurses.
        inner: list[Any] = []
        raw["choices"][0]["delta"]["content"][0]["thinking"] = inner
        for _ in range(5000):
            nested: list[Any] = []
            inner.append({"type": "thinking", "thinking": nested})
            inner = nested
    with pytest.raises(MalformedChunkError, match="nested deeper than the decoder allows"):
        _deep_stack(DeltaDecoder().feed, ChatChunk(raw))


def _deep_stack(function: Any, argument: Any, depth: int = 300) -> Any:
    """Call `function` with `depth` frames already on the stack (as inside a long Rx chain)."""
    if depth:
        return _deep_stack(function, argument, depth - 1)
    return function(argument)
