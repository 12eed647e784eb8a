"""rxstream.testing.builders: the streams they build say what the builders say (parsed back)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.core.dialects.openai_chat.chunks import ChunkDecoder
from rxstream.core.lines import LineSplitter
from rxstream.core.sse import SSEParser
from rxstream.errors import MalformedChunkError, ProviderError
from rxstream.models import JSONObject, SSEFrame, ToolCall
from rxstream.testing.builders import (
    DEFAULT_ID,
    DEFAULT_MODEL,
    ChatStream,
    chunk,
    done,
    error_chunk,
    finish_chunk,
    reasoning_chunk,
    refusal_chunk,
    role_chunk,
    split_text,
    text_chunk,
    tool_call_chunk,
    tool_call_fragment,
    tool_calls_chunk,
    usage_chunk,
)


def parse(data: bytes) -> list[SSEFrame]:
    """What a real SSE parser makes of the bytes."""
    splitter, parser = LineSplitter(), SSEParser()
    lines = splitter.feed(data) + splitter.close()
    return [frame for line in lines for frame in parser.feed(line)] + parser.close()


def decode(stream: ChatStream) -> list[JSONObject]:
    decoder = ChunkDecoder()
    out = [c.raw for frame in parse(stream.bytes()) for c in decoder.feed(frame)]
    decoder.close()
    return out


def delta(c: JSONObject) -> JSONObject:
    value: JSONObject = c["choices"][0]["delta"]
    return value


def arguments(chunks: list[JSONObject]) -> list[str]:
    return [delta(c)["tool_calls"][0]["function"]["arguments"] for c in chunks]


# -- chunk helpers ---------------------------------------------------------------------

HELPERS: list[tuple[str, JSONObject, JSONObject, str | None]] = [
    ("role", role_chunk(), {"role": "assistant"}, None),
    ("role user", role_chunk("user"), {"role": "user"}, None),
    ("text", text_chunk("Hi"), {"content": "Hi"}, None),
    ("reasoning", reasoning_chunk("hm"), {"reasoning_content": "hm"}, None),
    ("reasoning field", reasoning_chunk("hm", field="reasoning"), {"reasoning": "hm"}, None),
    ("refusal", refusal_chunk("No"), {"refusal": "No"}, None),
    ("finish", finish_chunk(), {}, "stop"),
    ("finish length", finish_chunk("length"), {}, "length"),
    ("bare chunk", chunk(), {}, None),
    (
        "tool call first fragment",
        tool_call_chunk(1, id="call_1", name="f", arguments="{"),
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "f", "arguments": "{"},
                }
            ]
        },
        None,
    ),
    (
        "tool call later fragment",
        tool_call_chunk(0, arguments="}"),
        {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]},
        None,
    ),
    (
        "two fragments in one chunk",
        tool_calls_chunk(tool_call_fragment(0, arguments="a"), tool_call_fragment(1, name="g")),
        {
            "tool_calls": [
                {"index": 0, "function": {"arguments": "a"}},
                {"index": 1, "type": "function", "function": {"name": "g", "arguments": ""}},
            ]
        },
        None,
    ),
]


@pytest.mark.parametrize(
    ("built", "expected_delta", "finish_reason"),
    [c[1:] for c in HELPERS],
    ids=[c[0] for c in HELPERS],
)
def test_chunk_helpers(
    built: JSONObject, expected_delta: JSONObject, finish_reason: str | None
) -> None:
    assert built == {
        "id": DEFAULT_ID,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": DEFAULT_MODEL,
        "choices": [{"index": 0, "delta": expected_delta, "finish_reason": finish_reason}],
    }


def test_helpers_take_choice_and_common_fields() -> None:
    built = text_chunk("x", choice=2, id="c9", model="m", created=7)
    assert (built["id"], built["model"], built["created"]) == ("c9", "m", 7)
    assert built["choices"][0]["index"] == 2


@pytest.mark.parametrize(
    ("built", "usage"),
    [
        (usage_chunk(3, 5), {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8}),
        (usage_chunk(3, 5, 9), {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 9}),
        (
            usage_chunk(3, 5, reasoning_tokens=2, cached_tokens=1),
            {
                "prompt_tokens": 3,
                "completion_tokens": 5,
                "total_tokens": 8,
                "prompt_tokens_details": {"cached_tokens": 1},
                "completion_tokens_details": {"reasoning_tokens": 2},
            },
        ),
    ],
    ids=["computed total", "given total", "details"],
)
def test_usage_chunk(built: JSONObject, usage: JSONObject) -> None:
    assert built["choices"] == []
    assert built["usage"] == usage


def test_error_chunk() -> None:
    assert error_chunk("m") == {"error": {"message": "m"}}
    assert error_chunk("m", type="t", code="c", status_code=400) == {
        "error": {"message": "m", "type": "t", "code": "c", "status_code": 400}
    }


def test_done() -> None:
    assert done() == "[DONE]"


def test_helpers_are_valid_openai_chunks() -> None:
    openai_chunk = pytest.importorskip("openai.types.chat").ChatCompletionChunk
    for built in [*(c[1] for c in HELPERS), usage_chunk(3, 5, reasoning_tokens=1)]:
        parsed = openai_chunk.model_validate(built)
        assert parsed.model_dump(exclude_unset=True) == built


# -- split_text ----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=40), pieces=st.integers(1, 50))
def test_split_text(text: str, pieces: int) -> None:
    parts = split_text(text, pieces)
    assert "".join(parts) == text
    assert len(parts) == pieces
    assert max(map(len, parts)) - min(map(len, parts)) <= 1


@pytest.mark.parametrize("pieces", [0, -1])
def test_split_text_needs_a_piece(pieces: int) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        split_text("abc", pieces)


# -- ChatStream -----------------------------------------------------------------------------


def test_the_example_stream() -> None:
    stream = (
        ChatStream(model="m")
        .role()
        .text("Hel", "lo")
        .reasoning("think")
        .tool_call(index=0, id="call_1", name="f", arguments='{"a":1}', fragments=3)
        .finish("stop")
        .usage(3, 5)
        .done()
    )
    frames = parse(stream.bytes())
    assert frames[-1] == SSEFrame("[DONE]")
    chunks = [json.loads(f.data) for f in frames[:-1]]
    assert chunks == stream.chunks() == decode(stream)
    assert all(c["model"] == "m" and c["id"] == DEFAULT_ID for c in chunks)
    assert delta(chunks[0]) == {"role": "assistant"}
    assert [delta(c)["content"] for c in chunks[1:3]] == ["Hel", "lo"]
    assert delta(chunks[3]) == {"reasoning_content": "think"}
    calls = chunks[4:7]
    assert "".join(arguments(calls)) == '{"a":1}'
    first, *rest = (delta(c)["tool_calls"][0] for c in calls)
    assert (first["id"], first["function"]["name"], first["type"]) == ("call_1", "f", "function")
    assert all("id" not in f and "name" not in f["function"] for f in rest)
    assert chunks[7]["choices"][0]["finish_reason"] == "stop"
    assert chunks[8]["usage"]["total_tokens"] == 8
    assert chunks[8]["choices"] == []


def test_lines_shape() -> None:
    stream = ChatStream().keepalive().text("a").error("boom").done()
    lines = stream.lines()
    assert lines[0:2] == [": keep-alive", ""]
    assert lines[2].startswith('data: {"id":')
    assert lines[3] == ""
    assert lines[4:7] == ["event: error", 'data: {"error":{"message":"boom"}}', ""]
    assert lines[7:] == ["data: [DONE]", ""]


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_sse_and_bytes(newline: str) -> None:
    stream = ChatStream().text("naïve ✓").finish().done()
    text = stream.sse(newline)
    assert text == "".join(line + newline for line in stream.lines())
    assert stream.bytes(newline) == text.encode("utf-8")
    assert "naïve ✓" in text  # non-ASCII is not escaped
    assert parse(stream.bytes(newline)) == stream.frames()


def test_bad_newline() -> None:
    with pytest.raises(ValueError, match="newline"):
        ChatStream().done().sse("\n\n")


def test_explicit_argument_pieces() -> None:
    stream = ChatStream().tool_call(0, id="c", name="f", arguments=["", '{"a"', ":1}"])
    assert arguments(stream.chunks()) == ["", '{"a"', ":1}"]


def test_empty_argument_pieces() -> None:
    with pytest.raises(ValueError, match="at least one piece"):
        ChatStream().tool_call(0, arguments=[])


@pytest.mark.parametrize(
    ("interleave", "order"),
    [(False, [0, 0, 1, 1]), (True, [0, 1, 0, 1])],
    ids=["sequential", "interleaved"],
)
def test_parallel_tool_calls(interleave: bool, order: list[int]) -> None:
    calls = [ToolCall(0, "call_0", "f", '{"x":1}'), ToolCall(1, "call_1", "g", '{"y":2}')]
    chunks = ChatStream().tool_calls(calls, fragments=2, interleave=interleave).chunks()
    fragments = [delta(c)["tool_calls"][0] for c in chunks]
    assert [f["index"] for f in fragments] == order
    for call in calls:
        mine = [f for f in fragments if f["index"] == call.index]
        assert mine[0]["id"] == call.id
        assert mine[0]["function"]["name"] == call.name
        assert "".join(f["function"]["arguments"] for f in mine) == call.arguments


def test_tool_calls_use_the_call_choice() -> None:
    chunks = ChatStream().tool_calls([ToolCall(0, "c", "f", "{}", choice=2)]).chunks()
    assert [c["choices"][0]["index"] for c in chunks] == [2]


def test_choices() -> None:
    stream = ChatStream().text("a", choice=0).text("b", choice=1).finish(choice=1).finish()
    assert [(c["choices"][0]["index"], delta(c).get("content")) for c in stream.chunks()] == [
        (0, "a"),
        (1, "b"),
        (1, None),
        (0, None),
    ]
    # Every choice finished: a valid stream even without [DONE].
    assert len(decode(stream)) == 4


def test_keepalive_makes_no_frame() -> None:
    stream = ChatStream().keepalive("OPENROUTER PROCESSING").keepalive("").done()
    assert stream.lines()[:4] == [": OPENROUTER PROCESSING", "", ":", ""]
    assert parse(stream.bytes()) == stream.frames() == [SSEFrame("[DONE]")]
    assert stream.chunks() == []


def test_error_event() -> None:
    stream = ChatStream().text("a").error("bad call", type="invalid", code="tool_use_failed")
    assert stream.frames()[-1].event == "error"
    with pytest.raises(ProviderError) as info:
        decode(stream)
    assert (info.value.message, info.value.type, info.value.code) == (
        "bad call",
        "invalid",
        "tool_use_failed",
    )
    assert info.value.event == "error"


def test_error_in_chunk() -> None:
    stream = ChatStream(model="m").error("Token limit reached", code=400, in_chunk=True).done()
    [payload] = stream.chunks()
    assert payload["model"] == "m"
    assert payload["choices"] == []
    assert stream.frames()[0].event == "message"
    with pytest.raises(ProviderError, match="Token limit reached") as info:
        decode(stream)
    assert info.value.code == 400


def test_malformed() -> None:
    stream = ChatStream().text("a").malformed().done()
    assert stream.lines()[2:4] == ['data: {"choices": [', ""]
    assert len(stream.chunks()) == 1  # malformed data is not a chunk
    with pytest.raises(MalformedChunkError, match="invalid JSON"):
        decode(stream)


def test_raw_multiline_and_event() -> None:
    stream = ChatStream().raw("one\ntwo", event="note")
    assert stream.lines() == ["event: note", "data: one", "data: two", ""]
    assert parse(stream.bytes()) == stream.frames() == [SSEFrame("one\ntwo", "note")]


def test_custom_chunk() -> None:
    extra: dict[str, Any] = {"x_groq": {"id": "r"}, "choices": []}
    # A finish follows: a stream of the custom chunk alone would bring no answer.
    stream = ChatStream().chunk(extra).finish()
    assert stream.chunks()[0] == extra
    assert decode(stream) == stream.chunks()


def test_fluent_returns_the_builder() -> None:
    stream = ChatStream()
    assert stream.role() is stream
    assert stream.text("a").finish().usage(1, 1).keepalive().done() is stream
    assert len(stream.chunks()) == 4


def test_openai_sdk_accepts_built_streams() -> None:
    openai_chunk = pytest.importorskip("openai.types.chat").ChatCompletionChunk
    stream = (
        ChatStream()
        .role()
        .text("a")
        .refusal("r")
        .tool_call(0, id="c", name="f", arguments="{}", fragments=2)
        .finish("tool_calls")
        .usage(1, 2)
        .done()
    )
    parsed = [openai_chunk.model_validate(c) for c in stream.chunks()]
    assert parsed[1].choices[0].delta.content == "a"
    assert parsed[3].choices[0].delta.tool_calls is not None
    assert parsed[3].choices[0].delta.tool_calls[0].id == "c"
    assert parsed[-1].usage is not None
    assert parsed[-1].usage.total_tokens == 3
