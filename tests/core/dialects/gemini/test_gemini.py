"""The "gemini" dialect: recorded streams, decoder table, bad input, renderer, round trips."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core.dialects import AutoDecoder, Wire, decoder, detect, renderer
from rxstream.core.dialects._json_paths import ArgumentsWriter, parse_path
from rxstream.core.dialects.gemini import GeminiDecoder, GeminiRenderer, http_error
from rxstream.core.dialects.gemini.render import _partial_pieces
from rxstream.core.provider_errors import provider_message
from rxstream.errors import (
    EmptyStreamError,
    MalformedChunkError,
    ProviderError,
    StreamError,
    TruncatedStreamError,
)
from rxstream.models import (
    Citation,
    Delta,
    Finish,
    Message,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from tests.support.dialects import deltas_runner, runner, wire_bytes
from tests.support.narrowing import only
from tests.support.recordings.gemini import (
    RECORDINGS,
    check_recording,
)

run = runner("gemini")
deltas_of = deltas_runner("gemini")


DATA = Path(__file__).parents[3] / "data" / "google"


# --------------------------------------------------------------------------- helpers


def decode(*frames: Any, close: bool = True, **options: Any) -> list[Delta]:
    """Frames (JSON objects or raw strings) through a fresh decoder, then `close()`."""
    d = GeminiDecoder(**options)
    out: list[Delta] = []
    for f in frames:
        out += d.feed(f if isinstance(f, SSEFrame) else SSEFrame(_data(f)))
    if close:
        out += d.close()
    return out


def _data(f: Any) -> str:
    return f if isinstance(f, str) else json.dumps(f)


def cand(*parts: Any, finish: str | None = None, index: int | None = None, **extra: Any) -> Any:
    c: dict[str, Any] = {"content": {"parts": list(parts), "role": "model"}}
    if finish is not None:
        c["finishReason"] = finish
    if index is not None:
        c["index"] = index
    c.update(extra)
    return c


def chunk(*candidates: Any, **extra: Any) -> dict[str, Any]:
    return {"candidates": list(candidates), **extra}


def end(finish: str = "STOP", **extra: Any) -> dict[str, Any]:
    return chunk(cand(finish=finish, **extra))


def content_only(out: list[Delta]) -> list[Delta]:
    return [d for d in out if not isinstance(d, Metadata)]


# --------------------------------------------------------------------------- recordings


@pytest.mark.parametrize("dialect", ["gemini", "auto"])
@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_recording_whole(name: str, dialect: str) -> None:
    messages = run([(DATA / name).read_bytes()], dialect)
    assert [m.choice for m in messages] == [0]
    check_recording(name, messages[0])


def test_every_recording_is_checked() -> None:
    assert sorted(p.name for p in DATA.glob("*.sse")) == sorted(RECORDINGS)


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_recording_in_small_pieces(name: str) -> None:
    data = (DATA / name).read_bytes()
    whole = run([data])
    for size in (1, 7, 64) if len(data) < 3000 else (7, 64):
        assert run([data[i : i + size] for i in range(0, len(data), size)]) == whole
    check_recording(name, whole[0])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(RECORDINGS)), data=st.data())
def test_recording_any_chunking(name: str, data: st.DataObject) -> None:
    raw = (DATA / name).read_bytes()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(raw) - 1), max_size=12)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    messages = run(pieces, data.draw(st.sampled_from(["gemini", "auto"])))
    check_recording(name, messages[0])


def test_streamed_arguments_concatenate_to_valid_json_at_the_end_only() -> None:
    out = deltas_of([(DATA / "vertex-partial-args-array-no-terminal-call.sse").read_bytes()])
    pieces = [d.arguments for d in out if isinstance(d, ToolCallDelta)]
    assert pieces[:3] == ["", '{"operations":[{"action":"add', '","description":"Fresh red apple']
    assert pieces[-1] == '","price":0.3}]}'
    text = "".join(pieces)
    assert (
        json.loads(text)
        == RECORDINGS["vertex-partial-args-array-no-terminal-call.sse"].calls[0].args
    )


def test_streamed_call_closed_by_the_empty_function_call() -> None:
    out = deltas_of([(DATA / "vertex-partial-args-streaming.sse").read_bytes()])
    calls = [d for d in out if isinstance(d, ToolCallDelta)]
    assert [(d.index, d.name, d.arguments) for d in calls] == [
        (0, "getWeather", ""),
        (0, None, '{"location":"Boston'),
        (0, None, '"}'),
        (1, "getWeather", ""),
        (1, None, '{"location":"San Francisco'),
        (1, None, '"}'),
    ]


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_detect_says_gemini(name: str) -> None:
    first = (DATA / name).read_bytes().split(b"\n", 1)[0].decode().strip()
    assert detect(SSEFrame(first.removeprefix("data: "))) == "gemini"


# --------------------------------------------------------------------------- decoder table

SIG = "c2lnbmF0dXJl"

CASES: list[tuple[str, list[Any], list[Delta]]] = [
    ("text", [chunk(cand({"text": "Hi"}, finish="STOP"))], [TextDelta("Hi"), Finish("stop")]),
    (
        "parts concatenate with nothing added",
        [chunk(cand({"text": "a"}, {"text": "b"})), end()],
        [TextDelta("a"), TextDelta("b"), Finish("stop")],
    ),
    ("empty text gives nothing", [chunk(cand({"text": ""}, finish="STOP"))], [Finish("stop")]),
    (
        "thought part is reasoning",
        [chunk(cand({"text": "hmm", "thought": True}, {"text": "ok"})), end()],
        [ReasoningDelta("hmm"), TextDelta("ok"), Finish("stop")],
    ),
    (
        "thought false is text",
        [chunk(cand({"text": "a", "thought": False}, finish="STOP"))],
        [TextDelta("a"), Finish("stop")],
    ),
    (
        "signature on a text part",
        [chunk(cand({"text": "OK", "thoughtSignature": SIG}, finish="STOP"))],
        [TextDelta("OK"), ReasoningState("thought_signature", SIG), Finish("stop")],
    ),
    (
        "signature on a thought part",
        [chunk(cand({"text": "t", "thought": True, "thoughtSignature": SIG})), end()],
        [ReasoningDelta("t"), ReasoningState("thought_signature", SIG), Finish("stop")],
    ),
    (
        "function call with id and args",
        [chunk(cand({"functionCall": {"id": "c1", "name": "f", "args": {"a": [1, "é"]}}})), end()],
        [ToolCallDelta(0, '{"a":[1,"é"]}', "c1", "f"), Finish("tool_calls")],
    ),
    (
        "function call without args",
        [chunk(cand({"functionCall": {"name": "now"}}, finish="STOP"))],
        [ToolCallDelta(0, "{}", None, "now"), Finish("tool_calls")],
    ),
    (
        "parallel calls are numbered in order",
        [
            chunk(
                cand(
                    {"functionCall": {"name": "a", "args": {}}, "thoughtSignature": SIG},
                    {"functionCall": {"name": "b", "args": {"x": True}}},
                    finish="STOP",
                )
            )
        ],
        [
            ToolCallDelta(0, "{}", None, "a"),
            ReasoningState("thought_signature", SIG, index=0),
            ToolCallDelta(1, '{"x":true}', None, "b"),
            Finish("tool_calls"),
        ],
    ),
    (
        "max tokens with calls stays length",
        [chunk(cand({"functionCall": {"name": "f", "args": {}}})), end("MAX_TOKENS")],
        [ToolCallDelta(0, "{}", None, "f"), Finish("length")],
    ),
    (
        "streamed arguments: nesting, arrays, gaps, every value kind",
        [
            chunk(cand({"functionCall": {"name": "f", "willContinue": True}})),
            chunk(
                cand(
                    {
                        "functionCall": {
                            "partialArgs": [
                                {"jsonPath": "$.a.b", "stringValue": 'x"', "willContinue": True},
                                {"jsonPath": "$.a.b", "stringValue": "y"},
                                {"jsonPath": "$.a.n", "numberValue": 2},
                                {"jsonPath": "$.list[1]", "boolValue": False},
                                {"jsonPath": "$['odd key'][0].z", "nullValue": "NULL_VALUE"},
                            ],
                            "willContinue": True,
                        }
                    }
                )
            ),
            chunk(cand({"functionCall": {}})),
            end(),
        ],
        [
            ToolCallDelta(0, "", None, "f"),
            ToolCallDelta(0, '{"a":{"b":"x\\"y","n":2},"list":[null,false],"odd key":[{"z":null'),
            ToolCallDelta(0, "}]}"),
            Finish("tool_calls"),
        ],
    ),
    (
        "streamed call begun with partial args, ended by the finish",
        [
            chunk(
                cand(
                    {
                        "functionCall": {
                            "id": "v1",
                            "name": "f",
                            "partialArgs": [
                                {"jsonPath": "$.q", "stringValue": "ab", "willContinue": True}
                            ],
                        }
                    }
                )
            ),
            chunk(cand({"text": ""}, finish="STOP")),
        ],
        [ToolCallDelta(0, '{"q":"ab', "v1", "f"), ToolCallDelta(0, '"}'), Finish("tool_calls")],
    ),
    (
        "a streamed call without arguments",
        [chunk(cand({"functionCall": {"name": "f", "willContinue": True}})), end()],
        [ToolCallDelta(0, "", None, "f"), ToolCallDelta(0, "{}"), Finish("tool_calls")],
    ),
    (
        "a new call closes the streamed one",
        [
            chunk(cand({"functionCall": {"name": "f", "willContinue": True}})),
            chunk(
                cand(
                    {
                        "functionCall": {
                            "partialArgs": [{"jsonPath": "$.k", "numberValue": 1.5}],
                            "willContinue": True,
                        }
                    }
                )
            ),
            chunk(cand({"functionCall": {"name": "g", "args": {}}})),
            end(),
        ],
        [
            ToolCallDelta(0, "", None, "f"),
            ToolCallDelta(0, '{"k":1.5'),
            ToolCallDelta(0, "}"),
            ToolCallDelta(1, "{}", None, "g"),
            Finish("tool_calls"),
        ],
    ),
    (
        "a stray terminator is nothing",
        [chunk(cand({"functionCall": {}})), chunk(cand({"text": "a"}, finish="STOP"))],
        [TextDelta("a"), Finish("stop")],
    ),
    (
        "code execution",
        [
            chunk(
                cand(
                    {"executableCode": {"language": "PYTHON", "code": "print(1)", "id": "e1"}},
                    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
                    finish="STOP",
                )
            )
        ],
        [
            ServerToolCall("e1", "code_execution", {"language": "PYTHON", "code": "print(1)"}),
            ServerToolResult("e1", "code_execution", {"outcome": "OUTCOME_OK", "output": "1\n"}),
            Finish("stop"),
        ],
    ),
    (
        "a finish on the chunk that starts a code run is not the end when more follows",
        [
            chunk(
                cand(
                    {"executableCode": {"language": "PYTHON", "code": "print(6*7)"}}, finish="STOP"
                ),
                usageMetadata={"promptTokenCount": 5, "candidatesTokenCount": 2},
            ),
            chunk(cand({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}})),
            chunk(cand({"text": "It is "})),
            chunk(
                cand({"text": "42."}, finish="STOP"),
                usageMetadata={"promptTokenCount": 9, "candidatesTokenCount": 6},
            ),
        ],
        [
            ServerToolCall(None, "code_execution", {"language": "PYTHON", "code": "print(6*7)"}),
            ServerToolResult(None, "code_execution", {"outcome": "OUTCOME_OK", "output": "42\n"}),
            TextDelta("It is "),
            TextDelta("42."),
            Finish("stop"),
            Usage(9, 6, 15),
        ],
    ),
    (
        "a finish held back for a code run ends the stream when nothing follows it",
        [
            chunk(
                cand({"executableCode": {"language": "PYTHON", "code": "x"}}, finish="MAX_TOKENS"),
                usageMetadata={"promptTokenCount": 3, "candidatesTokenCount": 4},
            )
        ],
        [
            ServerToolCall(None, "code_execution", {"language": "PYTHON", "code": "x"}),
            Finish("length"),
            Usage(3, 4, 7),
        ],
    ),
    (
        "built-in tool call and response",
        [
            chunk(
                cand(
                    {"toolCall": {"id": "t", "toolType": "GOOGLE_SEARCH_WEB", "args": {"q": 1}}},
                    {"toolResponse": {"id": "t", "toolType": "GOOGLE_SEARCH_WEB", "response": []}},
                    finish="STOP",
                )
            )
        ],
        [
            ServerToolCall("t", "GOOGLE_SEARCH_WEB", {"q": 1}),
            ServerToolResult("t", "GOOGLE_SEARCH_WEB", []),
            Finish("stop"),
        ],
    ),
    (
        "inline data is kept as a part",
        [chunk(cand({"inlineData": {"mimeType": "image/png", "data": "AA=="}}, finish="STOP"))],
        [
            Metadata({"parts": [{"inlineData": {"mimeType": "image/png", "data": "AA=="}}]}),
            Finish("stop"),
        ],
    ),
    (
        "a part of an unknown kind is kept",
        [chunk(cand({"text": "a", "partMetadata": {"k": 1}}, finish="STOP"))],
        [
            TextDelta("a"),
            Metadata({"parts": [{"text": "a", "partMetadata": {"k": 1}}]}),
            Finish("stop"),
        ],
    ),
    (
        "ids, model and createTime once; unknown fields kept",
        [
            chunk(cand({"text": "a"}), responseId="r", modelVersion="m", createTime="t", extra=1),
            chunk(
                cand({"text": "b"}, finish="STOP", tokenCount=3), responseId="r", modelVersion="m"
            ),
        ],
        [
            TextDelta("a"),
            Metadata({"id": "r", "model": "m", "createTime": "t"}),
            Metadata({"extra": 1}),
            TextDelta("b"),
            Metadata({"tokenCount": 3}),
            Finish("stop"),
        ],
    ),
    (
        "finish message and the last safety ratings at the finish; logprobs per chunk",
        [
            chunk(cand({"text": "a"}, safetyRatings=[1], logprobsResult={"c": 1}, avgLogprobs=-1)),
            chunk(cand(finish="SAFETY", safetyRatings=[2], finishMessage="blocked")),
        ],
        [
            TextDelta("a"),
            Metadata({"logprobsResult": [{"c": 1}]}),
            Metadata({"avgLogprobs": -1}),
            Metadata({"finishMessage": "blocked"}),
            Metadata({"safetyRatings": [2]}),
            Finish("content_filter"),
        ],
    ),
    (
        "a final chunk without parts",
        [chunk(cand({"text": "a"})), chunk({"finishReason": "MAX_TOKENS", "index": 0})],
        [TextDelta("a"), Finish("length")],
    ),
    (
        "usage: the last with counts wins, tool-use prompt counted, partial chunks ignored",
        [
            chunk(cand({"text": "a"}), usageMetadata={"promptTokenCount": 9, "totalTokenCount": 9}),
            chunk(cand({"text": "b"}), usageMetadata={"trafficType": "ON_DEMAND"}),
            chunk(
                cand(finish="STOP"),
                usageMetadata={
                    "promptTokenCount": 4,
                    "toolUsePromptTokenCount": 2,
                    "candidatesTokenCount": 3,
                    "thoughtsTokenCount": 5,
                    "cachedContentTokenCount": 1,
                    "totalTokenCount": 14,
                },
            ),
        ],
        [
            TextDelta("a"),
            TextDelta("b"),
            Finish("stop"),
            Usage(6, 8, 14, reasoning_tokens=5, cached_tokens=1),
        ],
    ),
    (
        "usage total computed when absent",
        [
            chunk(
                cand(finish="STOP"),
                usageMetadata={"promptTokenCount": 2, "candidatesTokenCount": 3},
            )
        ],
        [Finish("stop"), Usage(2, 3, 5)],
    ),
    (
        "a usage-only chunk before the answer",
        [{"usageMetadata": {"promptTokenCount": 1}}, chunk(cand({"text": "a"}, finish="STOP"))],
        [TextDelta("a"), Finish("stop"), Usage(1, 0, 1)],
    ),
    (
        "blocked prompt: no candidates, a content filter finish",
        [
            {
                "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                "usageMetadata": {"promptTokenCount": 7},
            }
        ],
        [
            Metadata({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}),
            Finish("content_filter"),
            Usage(7, 0, 7),
        ],
    ),
    (
        "prompt feedback without a block is metadata",
        [
            {
                "promptFeedback": {"safetyRatings": []},
                "candidates": [cand({"text": "a"}, finish="STOP")],
            }
        ],
        [TextDelta("a"), Finish("stop"), Metadata({"promptFeedback": {"safetyRatings": []}})],
    ),
    (
        "two candidates: done when both finished",
        [
            chunk(cand({"text": "a"}, index=0), cand({"text": "b"}, index=1)),
            chunk(cand(finish="STOP", index=0), cand({"text": "c"}, index=1)),
            chunk(cand(finish="MAX_TOKENS", index=1)),
        ],
        [
            TextDelta("a"),
            TextDelta("b", 1),
            Finish("stop"),
            TextDelta("c", 1),
            Finish("length", 1),
        ],
    ),
    (
        "citation metadata: UTF-8 byte offsets become character offsets",
        [
            chunk(cand({"text": "é ab"})),
            chunk(
                cand(
                    finish="RECITATION",
                    citationMetadata={
                        "citationSources": [
                            {"startIndex": 3, "endIndex": 5, "uri": "https://x", "license": "mit"},
                            {"endIndex": 2},
                            {"startIndex": 3, "endIndex": 99},
                        ]
                    },
                )
            ),
        ],
        [
            TextDelta("é ab"),
            Citation("citation", "https://x", None, None, 2, 4),
            Citation("citation", None, None, None, 0, 1),
            Citation("citation", None, None, None, 2, None),
            Finish("content_filter"),
        ],
    ),
    (
        "vertex citations, repeated on two chunks, count once",
        [
            chunk(
                cand({"text": "ab"}, citationMetadata={"citations": [{"uri": "u", "title": "T"}]})
            ),
            chunk(
                cand(finish="STOP", citationMetadata={"citations": [{"uri": "u", "title": "T"}]})
            ),
        ],
        [TextDelta("ab"), Citation("citation", "u", "T"), Finish("stop")],
    ),
    (
        "grounding: a support per chunk it cites, uncited chunks, a support citing none",
        [
            chunk(cand({"text": "one two"}, groundingMetadata={})),
            chunk(
                cand(
                    finish="STOP",
                    groundingMetadata={
                        "groundingChunks": [
                            {"web": {"uri": "u0", "title": "t0"}},
                            {"retrievedContext": {"uri": "u1", "text": "ctx"}},
                            {"maps": {"title": "m"}},
                        ],
                        "groundingSupports": [
                            {
                                "segment": {"startIndex": 4, "endIndex": 7, "text": "two"},
                                "groundingChunkIndices": [1, 0],
                            },
                            {"segment": {"endIndex": 3, "text": "one"}},
                        ],
                    },
                )
            ),
        ],
        [
            TextDelta("one two"),
            Citation("grounding", "u1", None, "two", 4, 7),
            Citation("grounding", "u0", "t0", "two", 4, 7),
            Citation("grounding", None, None, "one", 0, 3),
            Citation("grounding", None, "m", None),
            Metadata(
                {
                    "groundingMetadata": {
                        "groundingChunks": [
                            {"web": {"uri": "u0", "title": "t0"}},
                            {"retrievedContext": {"uri": "u1", "text": "ctx"}},
                            {"maps": {"title": "m"}},
                        ],
                        "groundingSupports": [
                            {
                                "segment": {"startIndex": 4, "endIndex": 7, "text": "two"},
                                "groundingChunkIndices": [1, 0],
                            },
                            {"segment": {"endIndex": 3, "text": "one"}},
                        ],
                    }
                }
            ),
            Finish("stop"),
        ],
    ),
    (
        "blank frames are nothing",
        ["", " ", chunk(cand({"text": "a"}, finish="STOP"))],
        [TextDelta("a"), Finish("stop")],
    ),
]


@pytest.mark.parametrize(("frames", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decoder_table(frames: list[Any], want: list[Delta]) -> None:
    assert decode(*frames) == want


FINISHES = [
    ("STOP", "stop"),
    ("MAX_TOKENS", "length"),
    ("SAFETY", "content_filter"),
    ("RECITATION", "content_filter"),
    ("BLOCKLIST", "content_filter"),
    ("PROHIBITED_CONTENT", "content_filter"),
    ("SPII", "content_filter"),
    ("IMAGE_SAFETY", "content_filter"),
    ("MALFORMED_FUNCTION_CALL", "MALFORMED_FUNCTION_CALL"),
    ("LANGUAGE", "LANGUAGE"),
    ("OTHER", "OTHER"),
    ("FINISH_REASON_UNSPECIFIED", "FINISH_REASON_UNSPECIFIED"),
]


@pytest.mark.parametrize(("raw", "reason"), FINISHES, ids=[f[0] for f in FINISHES])
def test_finish_reasons_keep_the_raw_word(raw: str, reason: str) -> None:
    (finish,) = [d for d in decode(end(raw)) if isinstance(d, Finish)]
    assert (finish.reason, finish.raw) == (reason, raw)


def test_blocked_prompt_raw_is_the_block_reason() -> None:
    out = decode({"promptFeedback": {"blockReason": "OTHER"}})
    assert [(d.reason, d.raw) for d in out if isinstance(d, Finish)] == [
        ("content_filter", "OTHER")
    ]


def test_signature_names_the_streamed_call_it_rode_on() -> None:
    out = decode(
        chunk(cand({"functionCall": {"name": "a", "args": {}}})),
        chunk(cand({"functionCall": {"name": "b", "willContinue": True}, "thoughtSignature": SIG})),
        end(),
    )
    (state,) = [d for d in out if isinstance(d, ReasoningState)]
    assert (state.index, state.data, state.raw) == (
        1,
        SIG,
        {"functionCall": {"name": "b", "willContinue": True}, "thoughtSignature": SIG},
    )


def test_done_at_the_finish() -> None:
    d = GeminiDecoder()
    d.feed(SSEFrame(json.dumps(chunk(cand({"text": "a"})))))
    assert not d.done
    d.feed(SSEFrame(json.dumps(end())))
    assert d.done
    with pytest.raises(RuntimeError, match="done"):
        d.feed(SSEFrame(json.dumps(chunk(cand({"text": "late"})))))


def test_pipeline_stops_reading_at_the_finish() -> None:
    frames = [chunk(cand({"text": "a"}, finish="STOP")), chunk(cand({"text": "never read"}))]
    data = "".join(f"data: {json.dumps(f)}\r\n\r\n" for f in frames).encode()
    assert [m.content for m in run([data])] == ["a"]


# --------------------------------------------------------------------------- bad input


def test_truncated_before_the_finish() -> None:
    with pytest.raises(TruncatedStreamError, match="finishReason") as info:
        decode(chunk(cand({"text": "a"})))
    assert not isinstance(info.value, EmptyStreamError)


def test_truncated_after_a_held_back_finish_when_the_answer_went_on() -> None:
    with pytest.raises(TruncatedStreamError):
        decode(
            chunk(cand({"executableCode": {"language": "PYTHON", "code": "x"}}, finish="STOP")),
            chunk(cand({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": ""}})),
        )


def test_the_pipeline_reads_on_past_a_finish_held_back_for_a_code_run() -> None:
    frames = [
        chunk(cand({"executableCode": {"language": "PYTHON", "code": "x"}}, finish="STOP")),
        chunk(cand({"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1"}})),
        chunk(cand({"text": "one"}, finish="STOP")),
        chunk(cand({"text": "never read"})),
    ]
    data = "".join(f"data: {json.dumps(f)}\r\n\r\n" for f in frames).encode()
    for dialect in ("gemini", "auto"):
        (message,) = run([data], dialect)
        assert (message.content, message.finish_reason, len(message.server_tools)) == (
            "one",
            "stop",
            2,
        )


def test_truncated_inside_a_streamed_call() -> None:
    with pytest.raises(TruncatedStreamError):
        decode(chunk(cand({"functionCall": {"name": "f", "willContinue": True}})))


def test_truncated_through_the_pipeline() -> None:
    events = (DATA / "thinking-thought-parts.sse").read_bytes().split(b"\r\n\r\n")
    with pytest.raises(TruncatedStreamError):
        run([b"\r\n\r\n".join(events[:10]) + b"\r\n\r\n"])


@pytest.mark.parametrize(
    "frames",
    [[], [""], [{"usageMetadata": {"promptTokenCount": 3}}], [{"modelVersion": "m"}]],
    ids=["nothing", "blank", "usage only", "model only"],
)
def test_nothing_of_an_answer_is_empty(frames: list[Any]) -> None:
    with pytest.raises(EmptyStreamError):
        decode(*frames)


ERRORS = [
    (
        "object",
        '{"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}}',
        ("Resource exhausted", "RESOURCE_EXHAUSTED", 429),
    ),
    (
        "wrapped in a list",
        '[{"error": {"code": 500, "message": "Internal", "status": "INTERNAL"}}]',
        ("Internal", "INTERNAL", 500),
    ),
    (
        "with details",
        json.dumps(
            {
                "error": {
                    "code": 400,
                    "message": "API key not valid.",
                    "status": "INVALID_ARGUMENT",
                    "details": [{"reason": "API_KEY_INVALID"}],
                }
            }
        ),
        ("API key not valid.", "INVALID_ARGUMENT", 400),
    ),
]


@pytest.mark.parametrize(("data", "want"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error_object_is_provider_error(data: str, want: tuple[str, str, int]) -> None:
    with pytest.raises(ProviderError) as info:
        decode(chunk(cand({"text": "a"})), data)
    assert (info.value.message, info.value.type, info.value.code) == want


def test_error_first_through_auto() -> None:
    data = (
        b'data: {"error": {"code": 503, "message": "Overloaded", "status": "UNAVAILABLE"}}\r\n\r\n'
    )
    with pytest.raises(ProviderError, match="Overloaded") as info:
        run([data], "auto")
    assert info.value.code == 503


FOREIGN = [
    ("openai chat chunk", {"id": "c", "object": "chat.completion.chunk", "choices": []}, "object"),
    ("anthropic event", {"type": "message_start", "message": {}}, "message_start"),
    ("cohere event", {"type": "content-delta", "index": 0}, "content-delta"),
    ("responses event", {"type": "response.created", "response": {}}, "response.created"),
    ("ollama line", {"model": "m", "message": {}, "done": False}, "message"),
    ("an unknown object", {"hello": 1}, "not a Gemini chunk"),
]


@pytest.mark.parametrize(("payload", "says"), [f[1:] for f in FOREIGN], ids=[f[0] for f in FOREIGN])
def test_frame_of_another_dialect(payload: Any, says: str) -> None:
    with pytest.raises(MalformedChunkError, match=says) as info:
        decode(payload)
    assert info.value.dialect == "gemini"


NOT_OBJECTS = [("array", "[1, 2]"), ("string", '"x"'), ("number", "3"), ("null", "null")]


@pytest.mark.parametrize("data", [n[1] for n in NOT_OBJECTS], ids=[n[0] for n in NOT_OBJECTS])
def test_json_that_is_not_an_object(data: str) -> None:
    with pytest.raises(MalformedChunkError, match="not an object") as info:
        decode(data)
    assert info.value.dialect == "gemini"


def test_invalid_json() -> None:
    with pytest.raises(MalformedChunkError, match="invalid JSON"):
        decode('{"candidates": [')


# Each case builds a field of the wrong type on purpose (hence `type: ignore[arg-type]`).
WRONG_TYPES = [
    ("candidates", {"candidates": {}}, "candidates"),
    ("candidate", {"candidates": [1]}, r"candidates\[0\]"),
    ("index", chunk(cand(index="0")), r"candidates\[0\]\.index"),  # type: ignore[arg-type]
    ("content", chunk({"content": []}), r"candidates\[0\]\.content"),
    ("parts", chunk({"content": {"parts": {"text": "a"}}}), r"content\.parts"),
    ("part", chunk(cand("a")), r"parts\[0\]"),
    ("text", chunk(cand({"text": 5})), r"parts\[0\]\.text"),
    ("thought", chunk(cand({"text": "a", "thought": "yes"})), r"parts\[0\]\.thought"),
    ("signature", chunk(cand({"text": "a", "thoughtSignature": 1})), "thoughtSignature"),
    ("function call", chunk(cand({"functionCall": "f"})), r"parts\[0\]\.functionCall"),
    ("call name", chunk(cand({"functionCall": {"name": 1}})), r"functionCall\.name"),
    (
        "call args",
        chunk(cand({"functionCall": {"name": "f", "args": "{}"}})),
        r"functionCall\.args",
    ),
    (
        "partial args",
        chunk(cand({"functionCall": {"name": "f", "partialArgs": {}}})),
        r"functionCall\.partialArgs",
    ),
    (
        "partial arg path",
        chunk(cand({"functionCall": {"name": "f", "partialArgs": [{"jsonPath": 1}]}})),
        r"partialArgs\[0\]\.jsonPath",
    ),
    (
        "partial arg number",
        chunk(
            cand(
                {
                    "functionCall": {
                        "name": "f",
                        "partialArgs": [{"jsonPath": "$.a", "numberValue": "1"}],
                    }
                }
            )
        ),
        r"partialArgs\[0\]\.numberValue",
    ),
    (
        "will continue",
        chunk(cand({"functionCall": {"name": "f", "willContinue": "true"}})),
        r"functionCall\.willContinue",
    ),
    ("finish reason", chunk(cand({"text": "a"}, finish=1)), r"candidates\[0\]\.finishReason"),  # type: ignore[arg-type]
    ("usage", {"candidates": [], "usageMetadata": [1]}, "usageMetadata"),
    (
        "usage count",
        chunk(cand(finish="STOP"), usageMetadata={"promptTokenCount": "3"}),
        "promptTokenCount",
    ),
    ("response id", {"candidates": [], "responseId": 3}, "responseId"),
    ("prompt feedback", {"promptFeedback": "blocked"}, "promptFeedback"),
    ("grounding", chunk(cand(groundingMetadata=[])), "groundingMetadata"),
    (
        "grounding chunk index",
        chunk(
            cand(
                finish="STOP",
                groundingMetadata={"groundingSupports": [{"groundingChunkIndices": [3]}]},
            )
        ),
        r"groundingChunkIndices\[0\]",
    ),
    (
        "citation metadata",
        chunk(cand(citationMetadata={"citations": {}})),
        r"citationMetadata\.citations",
    ),
    ("code", chunk(cand({"executableCode": {"id": 1}})), r"executableCode\.id"),
]


@pytest.mark.parametrize(
    ("payload", "path"), [w[1:] for w in WRONG_TYPES], ids=[w[0] for w in WRONG_TYPES]
)
def test_wrong_typed_field_names_its_path(payload: Any, path: str) -> None:
    with pytest.raises(MalformedChunkError, match=path) as info:
        decode(payload)
    assert info.value.dialect == "gemini"


BAD_CALLS = [
    (
        "a key written twice",
        [
            {"jsonPath": "$.a", "numberValue": 1},
            {"jsonPath": "$.b", "numberValue": 2},
            {"jsonPath": "$.a", "numberValue": 3},
        ],
        "'a' was written before",
    ),
    (
        "going back in an array",
        [{"jsonPath": "$.a[1]", "numberValue": 1}, {"jsonPath": "$.a[0]", "numberValue": 2}],
        "goes back",
    ),
    (
        "a string continued after another value",
        [
            {"jsonPath": "$.a", "stringValue": "x"},
            {"jsonPath": "$.b", "numberValue": 1},
            {"jsonPath": "$.a", "stringValue": "y"},
        ],
        "written before",
    ),
    (
        "an array indexed by name",
        [{"jsonPath": "$.a[0]", "numberValue": 1}, {"jsonPath": "$.a.b", "numberValue": 2}],
        "indexes an array",
    ),
    ("an object indexed by number", [{"jsonPath": "$[0]", "numberValue": 1}], "indexes an object"),
    ("the whole arguments", [{"jsonPath": "$", "numberValue": 1}], "must be an object"),
    ("not a path", [{"jsonPath": "a.b", "numberValue": 1}], "not a JSON path"),
    ("a wildcard", [{"jsonPath": "$.*", "numberValue": 1}], "not a JSON path"),
]


@pytest.mark.parametrize(
    ("args", "says"), [b[1:] for b in BAD_CALLS], ids=[b[0] for b in BAD_CALLS]
)
def test_streamed_arguments_that_cannot_extend_the_text(args: list[Any], says: str) -> None:
    frames = [
        chunk(cand({"functionCall": {"name": "f", "willContinue": True}})),
        chunk(cand({"functionCall": {"partialArgs": args, "willContinue": True}})),
    ]
    with pytest.raises(MalformedChunkError, match=says):
        decode(*frames, close=False)


def test_skipping_a_bad_partial_argument_keeps_the_rest_valid() -> None:
    args = [
        {"jsonPath": "$.a", "numberValue": 1},
        {"jsonPath": "$.a", "numberValue": 2},
        {"jsonPath": "$.b", "stringValue": "z"},
    ]
    out = decode(
        chunk(cand({"functionCall": {"name": "f", "willContinue": True}})),
        chunk(cand({"functionCall": {"partialArgs": args}})),
        end(),
        on_malformed="skip",
    )
    text = "".join(d.arguments for d in out if isinstance(d, ToolCallDelta))
    assert json.loads(text) == {"a": 1, "b": "z"}


@pytest.mark.parametrize(
    ("part", "says"),
    [
        (
            {"functionCall": {"partialArgs": [{"jsonPath": "$.a", "numberValue": 1}]}},
            "continues no",
        ),
        ({"functionCall": {"args": {}}}, "continues no"),
        (
            {
                "functionCall": {
                    "name": "f",
                    "args": {},
                    "partialArgs": [{"jsonPath": "$.a", "nullValue": 0}],
                }
            },
            "both args and partialArgs",
        ),
    ],
    ids=["nameless partial args", "nameless args", "args and partial args"],
)
def test_function_calls_that_make_no_sense(part: Any, says: str) -> None:
    with pytest.raises(MalformedChunkError, match=says):
        decode(chunk(cand(part)), close=False)


def test_nameless_args_on_a_streamed_call() -> None:
    with pytest.raises(MalformedChunkError, match="arguments stream"):
        decode(
            chunk(cand({"functionCall": {"name": "f", "willContinue": True}})),
            chunk(cand({"functionCall": {"args": {"a": 1}}})),
            close=False,
        )


def test_content_after_a_candidates_finish() -> None:
    with pytest.raises(MalformedChunkError, match="after its finishReason"):
        decode(
            chunk(cand({"text": "a"}, index=0), cand({"text": "b"}, index=1)),
            chunk(cand(finish="STOP", index=0)),
            chunk(cand({"text": "late"}, index=0)),
            close=False,
        )


def test_a_second_finish() -> None:
    with pytest.raises(MalformedChunkError, match="second finishReason"):
        decode(
            chunk(cand(finish="STOP", index=0), cand({"text": "b"}, index=1)),
            chunk(cand(finish="STOP", index=0)),
            close=False,
        )


def test_skip_drops_malformed_frames() -> None:
    out = decode(
        "[1]",
        {"type": "message_start"},
        chunk(cand({"text": 1})),
        chunk(cand({"text": "a"}, finish="STOP")),
        on_malformed="skip",
    )
    assert out == [TextDelta("a"), Finish("stop")]


def test_takes_only_frames() -> None:
    with pytest.raises(TypeError, match="SSEFrame"):
        GeminiDecoder().feed("data: {}")


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_give_only_stream_errors(data: bytes) -> None:
    try:
        run([data])
        run([b"data: " + data + b"\r\n\r\n"])
    except StreamError:
        pass


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "candidates",
                        "content",
                        "parts",
                        "text",
                        "functionCall",
                        "name",
                        "args",
                        "partialArgs",
                        "jsonPath",
                        "stringValue",
                        "finishReason",
                        "index",
                        "usageMetadata",
                        "willContinue",
                        "thought",
                        "groundingMetadata",
                    ]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    )
)
def test_random_gemini_shaped_json_gives_only_stream_errors(payload: Any) -> None:
    with contextlib.suppress(StreamError):
        decode(payload)


# --------------------------------------------------------------------------- paths and the writer


@pytest.mark.parametrize(
    ("path", "segments"),
    [
        ("$.a", ["a"]),
        ("$.a.b[0].c", ["a", "b", 0, "c"]),
        ("$['a b'][12]", ["a b", 12]),
        ('$["q\\"uote"].x', ['q"uote', "x"]),
        ("$['it\\'s']", ["it's"]),
        ('$[""]', [""]),
        ("$", []),
        ("a", None),
        ("$.", None),
        ("$[x]", None),
        ("$['open", None),
        ("$[-1]", None),
        ("$..a", None),
    ],
)
def testparse_path(path: str, segments: list[Any] | None) -> None:
    assert parse_path(path) == segments


JSON_ARGS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, min_size=1, max_size=3)
        | st.dictionaries(st.text(max_size=4), inner, min_size=1, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=4), JSON_ARGS, max_size=4))
def test_writer_text_is_always_a_prefix_of_the_compact_json(args: dict[str, Any]) -> None:
    final = json.dumps(args, separators=(",", ":"), ensure_ascii=False)
    writer, text = ArgumentsWriter(), ""
    for piece in _partial_pieces(args):
        segments = parse_path(piece["jsonPath"])
        assert segments is not None
        if "stringValue" in piece:
            text += writer.write(segments, piece["stringValue"], True)
        elif "nullValue" in piece:
            text += writer.write(segments, None, False)
        else:
            value = piece["boolValue"] if "boolValue" in piece else piece["numberValue"]
            text += writer.write(segments, value, False)
        assert final.startswith(text)
    text += writer.close()
    assert text == final
    assert json.loads(text) == args


# --------------------------------------------------------------------------- renderer


def render(deltas: Sequence[Delta], **options: Any) -> list[SSEFrame]:
    r = GeminiRenderer(**options)
    items: list[Wire] = []
    for d in deltas:
        items += r.feed(d)
    return only(SSEFrame, items + r.close())


def test_renderer_writes_crlf_chunks_like_the_api() -> None:
    r = renderer("gemini", model="gemini-x", id="resp-1")
    assert r.wire == "sse"
    assert r.newline == "\r\n"
    frames = r.feed(TextDelta("Hi")) + r.feed(Finish("stop")) + r.feed(Usage(3, 2, 5)) + r.close()
    assert [json.loads(f.data) for f in frames] == [
        {
            "candidates": [{"content": {"parts": [{"text": "Hi"}], "role": "model"}, "index": 0}],
            "modelVersion": "gemini-x",
            "responseId": "resp-1",
        },
        {
            "candidates": [
                {
                    "content": {"parts": [{"text": ""}], "role": "model"},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 3,
                "candidatesTokenCount": 2,
                "totalTokenCount": 5,
            },
            "modelVersion": "gemini-x",
            "responseId": "resp-1",
        },
    ]
    assert frames[0].data.startswith(
        '{"candidates": [{"content": {"parts": [{"text": "Hi"}],"role"'
    )
    assert wire_bytes(frames, r.newline).count(b"\r\n\r\n") == 2


def test_renderer_sends_a_call_whole_with_its_signature() -> None:
    frames = render(
        [
            ToolCallDelta(0, '{"city": ', "c1", "weather"),
            ReasoningState("thought_signature", SIG, index=0),
            ToolCallDelta(0, '"Paris"}'),
            Finish("tool_calls"),
        ]
    )
    parts = json.loads(frames[0].data)["candidates"][0]["content"]["parts"]
    assert parts == [
        {
            "functionCall": {"id": "c1", "name": "weather", "args": {"city": "Paris"}},
            "thoughtSignature": SIG,
        }
    ]
    assert json.loads(frames[-1].data)["candidates"][0]["finishReason"] == "STOP"


def test_renderer_streams_vertex_partial_args() -> None:
    frames = render(
        [ToolCallDelta(0, '{"a": {"b": "xy"}, "n": [1, null]}', None, "f"), Finish("tool_calls")],
        partial_args=True,
    )
    calls = [
        json.loads(f.data)["candidates"][0]["content"]["parts"][0]["functionCall"]
        for f in frames[:-1]
    ]
    assert calls == [
        {"name": "f", "willContinue": True},
        {
            "partialArgs": [{"jsonPath": "$.a.b", "stringValue": "x", "willContinue": True}],
            "willContinue": True,
        },
        {
            "partialArgs": [{"jsonPath": "$.a.b", "stringValue": "y", "willContinue": True}],
            "willContinue": True,
        },
        {"partialArgs": [{"jsonPath": "$.a.b", "stringValue": ""}], "willContinue": True},
        {"partialArgs": [{"jsonPath": "$.n[0]", "numberValue": 1}], "willContinue": True},
        {"partialArgs": [{"jsonPath": "$.n[1]", "nullValue": "NULL_VALUE"}], "willContinue": True},
        {},
    ]


@pytest.mark.parametrize("arguments", ['"text"', "[1]", "{broken"])
def test_renderer_leaves_out_a_call_whose_arguments_are_not_an_object(arguments: str) -> None:
    # Gemini sends arguments as an object: such a call is left out, the stream goes on.
    r = GeminiRenderer()
    r.feed(ToolCallDelta(0, arguments, "c", "f"))
    r.feed(ToolCallDelta(1, '{"a":1}', "d", "g"))
    frames = r.feed(Finish("tool_calls")) + r.close()
    calls = [
        part["functionCall"]
        for frame in frames
        for candidate in json.loads(frame.data).get("candidates", [])
        for part in candidate.get("content", {}).get("parts", [])
        if "functionCall" in part
    ]
    assert calls == [{"id": "d", "name": "g", "args": {"a": 1}}]


@pytest.mark.parametrize("block", ["MODEL_ARMOR", "OTHER", "guardrail_intervened"])
def test_renderer_blocked_prompt(block: str) -> None:
    """A content filter with a word that is no finish reason, and nothing else: a block."""
    frames = render([Finish("content_filter", raw=block), Usage(4, 0, 4)])
    assert json.loads(frames[0].data)["promptFeedback"] == {"blockReason": block}
    out = decode(*[f.data for f in frames])
    finishes = [(d.reason, d.raw) for d in out if isinstance(d, Finish)]
    assert finishes == [("content_filter", block)]


def test_renderer_filter_word_that_is_a_finish_reason() -> None:
    frames = render([Finish("content_filter", raw="PROHIBITED_CONTENT")])
    assert json.loads(frames[0].data)["candidates"][0]["finishReason"] == "PROHIBITED_CONTENT"


@pytest.mark.parametrize(
    ("finish", "word"),
    [
        (Finish("stop"), "STOP"),
        (Finish("length"), "MAX_TOKENS"),
        (Finish("content_filter"), "SAFETY"),
        (Finish("content_filter", raw="RECITATION"), "RECITATION"),
        (Finish("content_filter", raw="content_filter"), "SAFETY"),
        (Finish("stop", raw="end_turn"), "STOP"),
        (Finish("pause_turn", raw="pause_turn"), "pause_turn"),
        (
            Finish("MALFORMED_FUNCTION_CALL", raw="MALFORMED_FUNCTION_CALL"),
            "MALFORMED_FUNCTION_CALL",
        ),
    ],
)
def test_renderer_finish_words(finish: Finish, word: str) -> None:
    frames = render([TextDelta("a"), finish])
    assert json.loads(frames[-1].data)["candidates"][0]["finishReason"] == word


def test_renderer_error_is_google_s_error_object() -> None:
    r = GeminiRenderer()
    r.feed(TextDelta("a"))
    (frame,) = r.error(ProviderError("Quota", type="RESOURCE_EXHAUSTED", code=429))
    assert json.loads(frame.data) == {
        "error": {"code": 429, "message": "Quota", "status": "RESOURCE_EXHAUSTED"}
    }
    with pytest.raises(ProviderError) as info:
        decode(frame)
    assert (info.value.message, info.value.type, info.value.code) == (
        "Quota",
        "RESOURCE_EXHAUSTED",
        429,
    )
    with pytest.raises(RuntimeError):
        r.feed(TextDelta("b"))


def test_renderer_error_defaults() -> None:
    (frame,) = GeminiRenderer().error(ProviderError("boom"))
    assert json.loads(frame.data) == {
        "error": {"code": 500, "message": "boom", "status": "INTERNAL"}
    }


def test_http_error_in_google_s_shape() -> None:
    content_type, body = http_error(429, "Resource has been exhausted (e.g. check quota).")
    assert content_type.startswith("application/json")
    assert json.loads(body) == [
        {
            "error": {
                "code": 429,
                "message": "Resource has been exhausted (e.g. check quota).",
                "status": "RESOURCE_EXHAUSTED",
            }
        }
    ]
    assert body.startswith(b'[\n  {\n    "error": {')  # pretty-printed, as Google sends it
    assert provider_message(body) == "Resource has been exhausted (e.g. check quota)."


def test_http_error_with_type_and_code() -> None:
    _, body = http_error(400, "API key not valid.", type="INVALID_ARGUMENT", code="API_KEY_INVALID")
    (wrapper,) = json.loads(body)
    assert wrapper["error"]["status"] == "INVALID_ARGUMENT"
    assert wrapper["error"]["code"] == 400
    assert wrapper["error"]["details"][0]["reason"] == "API_KEY_INVALID"
    _, body = http_error(418, "teapot", code=7)
    assert json.loads(body)[0]["error"] == {"code": 7, "message": "teapot", "status": "UNKNOWN"}


@pytest.mark.parametrize("name", sorted(RECORDINGS))
@pytest.mark.parametrize("partial_args", [False, True])
def test_recordings_decode_render_decode(name: str, partial_args: bool) -> None:
    """A recorded answer, rendered again, decodes to the same message (extras included)."""
    original = run([(DATA / name).read_bytes()])[0]
    deltas = deltas_of([(DATA / name).read_bytes()])
    frames = render(deltas, partial_args=partial_args)
    again = run([wire_bytes(frames, GeminiRenderer.newline)])[0]
    assert again == original
    assert again.finish_raw == original.finish_raw
    assert again.citations == original.citations
    assert again.reasoning_state == original.reasoning_state
    assert [c.arguments for c in again.tool_calls] == [c.arguments for c in original.tool_calls]
    assert again.metadata.get("groundingMetadata") == original.metadata.get("groundingMetadata")


# --------------------------------------------------------------------------- round trip


@dataclass
class Script:
    deltas: list[Delta]
    citations: dict[int, list[Citation]]


ARGS = st.dictionaries(st.text(max_size=5), JSON_ARGS, max_size=3)
TEXT = st.text(min_size=1, max_size=12)


@st.composite
def scripts(draw: st.DrawFn, partial_args: bool) -> list[Delta]:
    """A scripted answer of one or two choices: what the dialect can express."""
    out: list[Delta] = []
    n_choices = draw(st.integers(1, 2))
    texts = dict.fromkeys(range(n_choices), "")
    calls = dict.fromkeys(range(n_choices), 0)
    code_id: dict[int, str | None] = {}
    for _ in range(draw(st.integers(0, 8))):
        choice = draw(st.integers(0, n_choices - 1))
        kind = draw(
            st.sampled_from(["text", "text", "reasoning", "call", "code", "builtin", "signature"])
        )
        if kind == "text":
            text = draw(TEXT)
            texts[choice] += text
            out.append(TextDelta(text, choice))
        elif kind == "reasoning":
            out.append(ReasoningDelta(draw(TEXT), choice))
        elif kind == "call":
            index = calls[choice]
            calls[choice] += 1
            args = json.dumps(draw(ARGS), separators=(",", ":"), ensure_ascii=False)
            cut = draw(st.integers(0, len(args)))
            call_id = draw(st.none() | st.just(f"call_{choice}_{index}"))
            out.append(
                ToolCallDelta(
                    index, args[:cut], call_id, draw(st.text(min_size=1, max_size=6)), choice
                )
            )
            if draw(st.booleans()):
                out.append(
                    ReasoningState("thought_signature", draw(TEXT), index=index, choice=choice)
                )
            if cut < len(args):
                out.append(ToolCallDelta(index, args[cut:], None, None, choice))
        elif kind == "code":
            call_id = draw(st.none() | st.just("exec"))
            code_id[choice] = call_id
            out.append(
                ServerToolCall(
                    call_id, "code_execution", {"language": "PYTHON", "code": draw(TEXT)}, choice
                )
            )
            out.append(
                ServerToolResult(
                    call_id,
                    "code_execution",
                    {"outcome": "OUTCOME_OK", "output": draw(TEXT)},
                    choice,
                )
            )
        elif kind == "builtin":
            out.append(ServerToolCall("t1", "GOOGLE_SEARCH_WEB", {"q": draw(TEXT)}, choice))
            out.append(
                ServerToolResult("t1", "GOOGLE_SEARCH_WEB", {"results": [draw(TEXT)]}, choice)
            )
        else:
            out.append(ReasoningState("thought_signature", draw(TEXT), choice=choice))
    for choice in range(n_choices):
        text = texts[choice]
        spans = draw(
            st.lists(st.tuples(st.integers(0, len(text)), st.integers(0, len(text))), max_size=2)
        )
        for a, b in spans:
            a, b = min(a, b), max(a, b)
            out.append(
                Citation(
                    "grounding",
                    draw(st.none() | st.just("https://a")),
                    draw(st.none() | TEXT),
                    draw(st.none() | st.just(text[a:b])),
                    a,
                    b,
                    choice,
                )
            )
        for _ in range(draw(st.integers(0, 2))):
            out.append(
                Citation(
                    "grounding",
                    "https://s",
                    draw(st.none() | TEXT),
                    draw(st.none() | TEXT),
                    choice=choice,
                )
            )
        for a, b in draw(
            st.lists(st.tuples(st.integers(0, len(text)), st.integers(0, len(text))), max_size=1)
        ):
            out.append(
                Citation(
                    "citation",
                    draw(st.none() | st.just("https://c")),
                    None,
                    None,
                    min(a, b),
                    max(a, b),
                    choice,
                )
            )
        reason = draw(st.sampled_from(["stop", "length", "content_filter", "OTHER"]))
        if reason == "stop" and calls[choice]:
            reason = "tool_calls"
        out.append(Finish(reason, choice))
    if draw(st.booleans()):
        prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))
        reasoning = draw(st.none() | st.integers(0, completion))
        cached = draw(st.none() | st.integers(0, prompt))
        out.append(Usage(prompt, completion, prompt + completion, reasoning, cached))
    return out


def accumulate(deltas: Sequence[Delta]) -> list[Message]:
    out: list[Message] = []
    reactivex.from_iterable(deltas).pipe(rs.accumulate_message()).subscribe(out.append)
    return out


def _key(x: Any) -> str:
    return repr(x)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), partial_args=st.booleans(), newline=st.sampled_from(["\r\n", "\n"]))
def test_round_trip_any_script_any_chunking(
    data: st.DataObject, partial_args: bool, newline: str
) -> None:
    script = data.draw(scripts(partial_args))
    frames = render(script, partial_args=partial_args)
    raw = wire_bytes(frames, newline)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(raw) - 1)), max_size=8)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    got = run(pieces, data.draw(st.sampled_from(["gemini", "auto"])))
    want = accumulate(script)
    assert got == want
    for g, w in zip(got, want, strict=True):
        assert g.citations == w.citations
        assert g.server_tools == w.server_tools
        assert sorted(g.reasoning_state, key=_key) == sorted(w.reasoning_state, key=_key)


def test_auto_decoder_picks_gemini_for_rendered_streams() -> None:
    frames = render([TextDelta("a"), Finish("stop")])
    auto = AutoDecoder()
    out: list[Delta] = []
    for f in frames:
        out += auto.feed(f)
    assert auto.dialect == "gemini"
    assert auto.done
    assert content_only(out) == [TextDelta("a"), Finish("stop")]
    assert isinstance(decoder("gemini"), GeminiDecoder)


# --------------------------------------------------------------------------- operators downstream


def test_partial_tool_call_snapshots_of_streamed_arguments() -> None:
    """Vertex streamed arguments stay a JSON prefix, so every snapshot parses to a prefix."""
    data = (DATA / "vertex-partial-args-array-no-terminal-call.sse").read_bytes()
    calls: list[Any] = []
    reactivex.from_iterable([data]).pipe(
        rs.lines(), rs.sse_frames(), rs.decode("gemini"), rs.accumulate_tool_calls(partial=True)
    ).subscribe(calls.append)
    snapshots = [c for c in calls if not c.complete]
    final = [c for c in calls if c.complete]
    assert [(c.name, c.parse_arguments()) for c in final] == [
        ("writeItems", RECORDINGS["vertex-partial-args-array-no-terminal-call.sse"].calls[0].args)
    ]
    assert len(snapshots) >= 7
    items = [len(s.partial.get("operations", [])) for s in snapshots if isinstance(s.partial, dict)]
    assert items == sorted(items)  # the array only grows
    assert items[-1] == 2


def words(text: str) -> list[int]:
    """A stand-in tokenizer (one token per word) that needs no download."""
    return [0] * len(text.split())


def test_split_and_count_on_a_gemini_stream() -> None:
    data = (DATA / "thinking-thought-parts.sse").read_bytes()
    kinds: list[str] = []
    reactivex.from_iterable([data]).pipe(
        rs.lines(), rs.sse_frames(), rs.decode(), rs.split_by_delta_type()
    ).subscribe(lambda group: kinds.append(str(group.key)))
    assert kinds[:2] == ["reasoning", "metadata"]
    assert {"text", "reasoning_state", "finish", "usage"} <= set(kinds)
    counts: list[Any] = []
    reactivex.from_iterable([data]).pipe(
        rs.lines(), rs.sse_frames(), rs.decode(), rs.count_tokens(encoding=words)
    ).subscribe(counts.append)
    last = counts[-1]
    assert last.final
    assert last.usage == Usage(34, 1256, 1290, reasoning_tokens=787)
    message = run([data])[0]
    assert (last.text, last.reasoning) == (
        len(words(message.content)),
        len(words(message.reasoning)),
    )


@pytest.mark.parametrize(
    ("delta", "part"),
    [
        pytest.param(
            ServerToolResult("t1", "web_search", [{"type": "web_search_result", "url": "u"}]),
            {
                "toolResponse": {
                    "id": "t1",
                    "toolType": "web_search",
                    "response": {"output": [{"type": "web_search_result", "url": "u"}]},
                }
            },
            id="a-list-result-goes-under-output",
        ),
        pytest.param(
            ServerToolCall("t2", "code_execution", {"code": "1", "stdin": ""}),
            {
                "toolCall": {
                    "id": "t2",
                    "toolType": "code_execution",
                    "args": {"code": "1", "stdin": ""},
                }
            },
            id="code-with-other-keys-is-a-tool-call",
        ),
        pytest.param(
            ServerToolCall("t3", "code_execution", {"code": "1", "language": "PYTHON"}),
            {"executableCode": {"code": "1", "language": "PYTHON", "id": "t3"}},
            id="gemini-code-stays-executable-code",
        ),
        pytest.param(
            ServerToolCall("t4", "bash", "ls"),
            {"toolCall": {"id": "t4", "toolType": "bash", "args": {"input": "ls"}}},
            id="a-string-input-goes-under-input",
        ),
    ],
)
def test_renderer_writes_server_tools_in_shapes_google_genai_takes(
    delta: Delta, part: dict[str, Any]
) -> None:
    (frame,) = GeminiRenderer().feed(delta)
    assert json.loads(frame.data)["candidates"][0]["content"]["parts"] == [part]
