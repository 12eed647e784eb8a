"""ChunkDecoder: SSE frames of an OpenAI-compatible chat stream -> ChatChunk."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.core.dialects.openai_chat.chunks import ChunkDecoder
from rxstream.core.lines import LineSplitter
from rxstream.core.sse import SSEParser
from rxstream.errors import (
    EXCERPT_LIMIT,
    EmptyStreamError,
    MalformedChunkError,
    ProviderError,
    StreamError,
    TruncatedStreamError,
    excerpt,
)
from rxstream.models import ChatChunk, SSEFrame, ToolCall
from rxstream.testing.builders import ChatStream, error_chunk, text_chunk
from tests.support.chunking import outputs_for_all_chunkings
from tests.support.json_paths import json_path  # noqa: F401  (every test runs on both JSON paths)

DATA = Path(__file__).parents[3] / "data"


def F(data: str | dict[str, Any], event: str = "message") -> SSEFrame:
    return SSEFrame(data if isinstance(data, str) else json.dumps(data), event)


def decode(frames: list[SSEFrame], **options: Any) -> tuple[list[ChatChunk], ChunkDecoder]:
    decoder = ChunkDecoder(**options)
    out: list[ChatChunk] = []
    for frame in frames:
        out.extend(decoder.feed(frame))
    return out, decoder


class Pipeline:
    """Bytes -> LineSplitter -> SSEParser -> ChunkDecoder, stopping at [DONE], as a machine."""

    def __init__(self) -> None:
        self.lines, self.sse, self.decoder = LineSplitter(), SSEParser(), ChunkDecoder()

    def _frames(self, frames: list[SSEFrame]) -> list[ChatChunk]:
        out: list[ChatChunk] = []
        for frame in frames:
            if self.decoder.done:
                break
            out.extend(self.decoder.feed(frame))
        return out

    def feed(self, data: bytes) -> list[ChatChunk]:
        out: list[ChatChunk] = []
        for line in self.lines.feed(data):
            out.extend(self._frames(self.sse.feed(line)))
        return out

    def close(self) -> list[ChatChunk]:
        out: list[ChatChunk] = []
        for line in self.lines.close():
            out.extend(self._frames(self.sse.feed(line)))
        out.extend(self._frames(self.sse.close()))
        return out + self.decoder.close()


def decode_bytes(pieces: list[bytes]) -> tuple[list[ChatChunk], Pipeline]:
    pipeline = Pipeline()
    out: list[ChatChunk] = []
    for piece in pieces:
        out.extend(pipeline.feed(piece))
    out.extend(pipeline.close())
    return out, pipeline


def choice(**fields: Any) -> dict[str, Any]:
    return {"choices": [fields]}


# -- frames that give a chunk (or nothing) ----------------------------------------------

EMITS: list[tuple[str, list[SSEFrame], list[dict[str, Any]]]] = [
    ("text", [F(text_chunk("Hi"))], [text_chunk("Hi")]),
    (
        "usage, empty choices",
        [F({"choices": [], "usage": {"total_tokens": 3}})],
        [{"choices": [], "usage": {"total_tokens": 3}}],
    ),
    ("choices null", [F({"choices": None})], [{"choices": None}]),
    ("choices missing", [F({"id": "x"})], [{"id": "x"}]),
    ("empty object", [F("{}")], [{}]),
    ("index missing", [F(choice(delta={"content": "a"}))], [choice(delta={"content": "a"})]),
    ("index null", [F(choice(index=None, delta={}))], [choice(index=None, delta={})]),
    ("delta null", [F(choice(index=0, delta=None))], [choice(index=0, delta=None)]),
    ("delta missing", [F(choice(index=0))], [choice(index=0)]),
    (
        "provider extras kept",
        [F({"x_groq": {"id": "req_1"}, "obfuscation": "abc", **choice(index=0, delta={})})],
        [{"x_groq": {"id": "req_1"}, "obfuscation": "abc", **choice(index=0, delta={})}],
    ),
    (
        "error null is no error",
        [F({"error": None, "choices": []})],
        [{"error": None, "choices": []}],
    ),
    ("surrounding whitespace", [F('  {"choices": []}\n')], [{"choices": []}]),
    ("empty data", [F("")], []),
    ("whitespace data", [F(" \n\t ")], []),
    ("other event names decode too", [F('{"a": 1}', event="chunk")], [{"a": 1}]),
    (
        "two chunks",
        [F(text_chunk("a")), F("\n"), F(text_chunk("b"))],
        [text_chunk("a"), text_chunk("b")],
    ),
]


@pytest.mark.parametrize(("frames", "expected"), [c[1:] for c in EMITS], ids=[c[0] for c in EMITS])
def test_emits(frames: list[SSEFrame], expected: list[dict[str, Any]]) -> None:
    out, decoder = decode(frames)
    assert out == [ChatChunk(raw) for raw in expected]
    assert not decoder.done


@pytest.mark.parametrize("data", ["[DONE]", " [DONE]", "[DONE]\n", "\t[DONE] "])
def test_done_completes(data: str) -> None:
    out, decoder = decode([F(text_chunk("a")), F(data)])
    assert out == [ChatChunk(text_chunk("a"))]
    assert decoder.done
    # [DONE] is complete even though choice 0 never finished.
    assert decoder.close() == []


def test_done_refuses_more_input() -> None:
    decoder = ChunkDecoder()
    decoder.feed(F(text_chunk("a")))
    decoder.feed(F("[DONE]"))
    with pytest.raises(RuntimeError, match="done"):
        decoder.feed(F(text_chunk("late")))


@pytest.mark.parametrize("data", ["[done]", "DONE", "[DONE]]", "data: [DONE]"])
def test_near_done_is_malformed(data: str) -> None:
    decoder = ChunkDecoder()
    with pytest.raises(MalformedChunkError, match="invalid JSON"):
        decoder.feed(F(data))
    assert not decoder.done


# -- malformed data -----------------------------------------------------------------------

MALFORMED: list[tuple[str, str, str]] = [
    ("invalid JSON", "{not json", "invalid JSON"),
    ("cut-off JSON", '{"choices": [', "invalid JSON"),
    ("array", "[1, 2]", "a JSON array, not an object"),
    ("string", '"hello"', "a JSON string, not an object"),
    ("number", "42", "a JSON number, not an object"),
    ("null", "null", "a JSON null, not an object"),
    ("boolean", "true", "a JSON boolean, not an object"),
    ("choices a string", '{"choices": "x"}', "choices is a JSON string, not an array or null"),
    ("choices an object", '{"choices": {}}', "choices is a JSON object, not an array or null"),
    ("choice a number", '{"choices": [1]}', "choices[0] is a JSON number, not an object"),
    ("second choice null", '{"choices": [{}, null]}', "choices[1] is a JSON null, not an object"),
    ("index a string", '{"choices": [{"index": "0"}]}', "choices[0].index is a JSON string"),
    ("index a boolean", '{"choices": [{"index": true}]}', "choices[0].index is a JSON boolean"),
    ("index a float", '{"choices": [{"index": 1.0}]}', "choices[0].index is a JSON number"),
    ("delta a string", '{"choices": [{"delta": "hi"}]}', "choices[0].delta is a JSON string"),
    ("delta an array", '{"choices": [{"delta": []}]}', "choices[0].delta is a JSON array"),
    (
        "finish_reason a number",
        '{"choices": [{"delta": {}, "finish_reason": 1}]}',
        "choices[0].finish_reason is a JSON number, not a string or null",
    ),
    (
        "content a number",
        '{"choices": [{"delta": {"content": 5}}]}',
        "choices[0].delta.content is a JSON number, not a string, an array or null",
    ),
    (
        "usage counter a string",
        '{"choices": [], "usage": {"prompt_tokens": "5"}}',
        "usage.prompt_tokens is a JSON string, not an integer or null",
    ),
    ("nested too deep", '{"choices": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested deeper"),
]


@pytest.mark.parametrize(
    ("data", "reason"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_malformed_raises(data: str, reason: str) -> None:
    decoder = ChunkDecoder()
    with pytest.raises(MalformedChunkError) as info:
        decoder.feed(F(data))
    assert reason in info.value.reason
    assert info.value.data == data
    assert repr(excerpt(data)) in str(info.value)  # the message quotes what arrived
    with pytest.raises(RuntimeError, match="failed"):
        decoder.feed(F(text_chunk("after")))


@pytest.mark.parametrize(
    ("data", "reason"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED]
)
def test_malformed_skipped(data: str, reason: str) -> None:
    out, decoder = decode(
        [F(text_chunk("a")), F(data), F({"choices": [{"finish_reason": "stop"}]})],
        on_malformed="skip",
    )
    assert out == [ChatChunk(text_chunk("a")), ChatChunk({"choices": [{"finish_reason": "stop"}]})]
    assert decoder.close() == []


def test_malformed_excerpt_is_bounded() -> None:
    data = '{"content": "' + "x" * 5000
    with pytest.raises(MalformedChunkError) as info:
        ChunkDecoder().feed(F(data))
    assert len(str(info.value)) < EXCERPT_LIMIT + 200
    assert '{"content": "xxx' in str(info.value)
    assert "(5013 chars)" in str(info.value)


def test_skipped_chunk_leaves_no_trace_in_truncation() -> None:
    # Choice 0 is valid but choice 1 is broken: the whole chunk is skipped,
    # and choice 0 (named only there) is not awaited.
    frames = [F('{"choices": [{"index": 0}, "broken"]}'), F(choice(index=1, **FINISH))]
    out, decoder = decode(frames, on_malformed="skip")
    assert out == [ChatChunk(choice(index=1, **FINISH))]
    assert decoder.close() == []


def test_skipped_wrong_type_leaves_no_trace() -> None:
    # The tool call's id is broken after the text was read: nothing of the chunk stays.
    broken = choice(index=0, delta={"content": "a", "tool_calls": [{"id": 7}]})
    frames = [F(broken), F(choice(index=1, **FINISH)), F("[DONE]")]
    out, decoder = decode(frames, on_malformed="skip")
    assert out == [ChatChunk(choice(index=1, **FINISH))]
    assert decoder.close() == []


@pytest.mark.parametrize("value", ["ignore", "", None, "RAISE"])
def test_bad_on_malformed(value: Any) -> None:
    with pytest.raises(ValueError, match="on_malformed"):
        ChunkDecoder(on_malformed=value)


# -- provider errors ------------------------------------------------------------------

GROQ_ERROR = error_chunk(
    "Tool call validation failed",
    type="invalid_request_error",
    code="tool_use_failed",
    failed_generation='{"name": "f"}',
    status_code=400,
)
OPENROUTER_ERROR = {
    "id": "gen-1",
    "error": {"code": 400, "message": "Token limit reached"},
    "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": None}],
    "usage": {"prompt_tokens": 43},
}
ANTHROPIC_ERROR = {
    "type": "error",
    "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"},
}
RESPONSES_ERROR = {"type": "error", "code": "insufficient_quota", "message": "You exceeded"}

# (id, frame, message, type, code, payload)
PROVIDER_ERRORS: list[tuple[str, SSEFrame, str, str | None, str | int | None, Any]] = [
    (
        "groq event",
        F(GROQ_ERROR, "error"),
        "Tool call validation failed",
        "invalid_request_error",
        "tool_use_failed",
        GROQ_ERROR,
    ),
    (
        "anthropic event",
        F(ANTHROPIC_ERROR, "error"),
        "Overloaded",
        "overloaded_error",
        None,
        ANTHROPIC_ERROR,
    ),
    (
        "top-level message",
        F(RESPONSES_ERROR, "error"),
        "You exceeded",
        None,
        "insufficient_quota",
        RESPONSES_ERROR,
    ),
    ("event, error string", F('{"error": "boom"}', "error"), "boom", None, None, {"error": "boom"}),
    ("event, not JSON", F("upstream exploded", "error"), "upstream exploded", None, None, None),
    ("event, JSON without message", F('{"foo": 1}', "error"), '{"foo": 1}', None, None, {"foo": 1}),
    ("event, [DONE] data", F("[DONE]", "error"), "[DONE]", None, None, None),
    ("event, empty data", F("", "error"), "(no data)", None, None, None),
    (
        "openrouter in-chunk",
        F(OPENROUTER_ERROR),
        "Token limit reached",
        None,
        400,
        OPENROUTER_ERROR,
    ),
    (
        "in-chunk error string",
        F({"error": "rate limited", "choices": []}),
        "rate limited",
        None,
        None,
        {"error": "rate limited", "choices": []},
    ),
    (
        "in-chunk error without message",
        F('{"error": {"code": 500}}'),
        '{"error": {"code": 500}}',
        None,
        500,
        {"error": {"code": 500}},
    ),
    (
        "in-chunk error with odd code",
        F('{"error": {"message": "m", "code": true, "type": 3}}'),
        "m",
        None,
        None,
        {"error": {"message": "m", "code": True, "type": 3}},
    ),
]


@pytest.mark.parametrize(
    ("frame", "message", "type_", "code", "payload"),
    [c[1:] for c in PROVIDER_ERRORS],
    ids=[c[0] for c in PROVIDER_ERRORS],
)
def test_provider_error(
    frame: SSEFrame, message: str, type_: str | None, code: str | int | None, payload: Any
) -> None:
    decoder = ChunkDecoder(on_malformed="skip")  # provider errors are never skipped
    with pytest.raises(ProviderError) as info:
        decoder.feed(frame)
    error = info.value
    assert (error.message, error.type, error.code) == (message, type_, code)
    assert error.payload == payload
    assert error.event == frame.event
    assert message in str(error)
    with pytest.raises(RuntimeError, match="failed"):
        decoder.feed(F(text_chunk("after")))
    with pytest.raises(RuntimeError, match="failed"):
        decoder.close()


def test_provider_error_message_names_type_and_code() -> None:
    with pytest.raises(ProviderError, match=r"invalid_request_error, code 'tool_use_failed'"):
        ChunkDecoder().feed(F(GROQ_ERROR, "error"))


def test_unparsed_error_event_is_bounded() -> None:
    with pytest.raises(ProviderError) as info:
        ChunkDecoder().feed(F("<html>" + "x" * 5000, "error"))
    assert info.value.message.startswith("<html>xxx")
    assert len(info.value.message) < EXCERPT_LIMIT + 50


# -- truncation --------------------------------------------------------------------------

FINISH = {"finish_reason": "stop"}

# (id, frames, unfinished choices or None for a normal end, chunk count in the message)
TRUNCATION: list[tuple[str, list[SSEFrame], tuple[int, ...] | None]] = [
    ("text then finish, no [DONE]", [F(choice(index=0)), F(choice(index=0, **FINISH))], None),
    ("finish without index", [F(choice()), F(choice(**FINISH))], None),
    ("text only", [F(choice(index=0)), F(choice(index=0))], (0,)),
    ("index missing counts as 0", [F(choice()), F(choice(index=1, **FINISH))], (0,)),
    ("index null counts as 0", [F(choice(index=None))], (0,)),
    (
        "choice 1 of 2 unfinished",
        [F(choice(index=0)), F(choice(index=1)), F(choice(index=0, **FINISH))],
        (1,),
    ),
    (
        "three unfinished",
        [F({"choices": [{"index": 2}, {"index": 0}, {"index": 1}]})],
        (0, 1, 2),
    ),
    (
        "finished stays finished",
        [F(choice(index=0, **FINISH)), F(choice(index=0, finish_reason=None))],
        None,
    ),
    ("[DONE] wins", [F(text_chunk("a")), F("[DONE]")], None),
]


@pytest.mark.parametrize(
    ("frames", "unfinished"), [c[1:] for c in TRUNCATION], ids=[c[0] for c in TRUNCATION]
)
def test_truncation(frames: list[SSEFrame], unfinished: tuple[int, ...] | None) -> None:
    out, decoder = decode(frames)
    if unfinished is None:
        assert decoder.close() == []
        return
    with pytest.raises(TruncatedStreamError) as info:
        decoder.close()
    assert info.value.unfinished == unfinished
    message = str(info.value)
    assert "before [DONE]" in message
    assert ", ".join(map(str, unfinished)) + " unfinished" in message
    assert f"after {len(out)} chunk" in message


# -- no chat data at all ---------------------------------------------------------------

USAGE_ONLY = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 0}}
AZURE_FILTER = {
    "id": "",
    "choices": [],
    "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {}}],
}

# (id, frames, whether [DONE] ends them, words the message must hold, excerpt in `.body`)
EMPTY: list[tuple[str, list[SSEFrame], str, str]] = [
    ("nothing arrived", [], "no event arrived", ""),
    ("only keep-alive blanks", [F(""), F(" ")], "2 frames of blank data", ""),
    ("only [DONE]", [F("[DONE]")], "only [DONE]", ""),
    ("blanks then [DONE]", [F(""), F("[DONE]")], "1 frame of blank data, then [DONE]", ""),
    ("only a usage chunk", [F(USAGE_ONLY)], "1 chunk with no choice", json.dumps(USAGE_ONLY)),
    (
        "azure's prompt-filter chunk, then [DONE]",
        [F(AZURE_FILTER), F("[DONE]")],
        "1 chunk with no choice, then [DONE]",
        json.dumps(AZURE_FILTER),
    ),
    (
        "two usage chunks",
        [F(USAGE_ONLY), F({"choices": None})],
        "2 chunks with no choice",
        json.dumps(USAGE_ONLY),
    ),
    # A message start and the end marker: no answer (issue 18, item 7).
    (
        "a role then [DONE]",
        [F(choice(index=0, delta={"role": "assistant"})), F("[DONE]")],
        "1 chunk with no text, reasoning, refusal, tool call or finish",
        json.dumps(choice(index=0, delta={"role": "assistant"})),
    ),
]


@pytest.mark.parametrize(
    ("frames", "words", "body"), [c[1:] for c in EMPTY], ids=[c[0] for c in EMPTY]
)
def test_no_chat_data_is_an_empty_stream(frames: list[SSEFrame], words: str, body: str) -> None:
    decoder = ChunkDecoder()
    done = bool(frames) and frames[-1].data == "[DONE]"

    def run() -> None:
        for frame in frames:
            decoder.feed(frame)
        assert not done, "[DONE] must raise at once"
        decoder.close()

    with pytest.raises(EmptyStreamError) as info:
        run()
    error = info.value
    assert isinstance(error, TruncatedStreamError)  # code catching short streams catches it
    assert words in error.reason
    assert error.body == body
    assert str(error).startswith("the stream brought no answer: ")
    with pytest.raises(RuntimeError, match="failed"):
        decoder.feed(F(text_chunk("late")))


def test_empty_stream_quotes_a_bounded_excerpt() -> None:
    big = {"choices": [], "usage": {"prompt_tokens": 1}, "pad": "x" * 5000}
    _, decoder = decode([F(big)])
    with pytest.raises(EmptyStreamError) as info:
        decoder.close()
    assert len(info.value.body) < EXCERPT_LIMIT + 50
    assert len(str(info.value)) < EXCERPT_LIMIT + 200


def test_skipped_frames_are_counted_in_the_empty_message() -> None:
    _, decoder = decode([F("{oops"), F("[1]")], on_malformed="skip")
    with pytest.raises(EmptyStreamError, match="2 malformed frames") as info:
        decoder.close()
    assert info.value.body == "{oops"


@pytest.mark.parametrize(
    "frames",
    [
        [F(choice(index=0, **FINISH))],
        [
            F(choice(index=0, delta={"role": "assistant"})),
            F(choice(index=0, **FINISH)),
            F("[DONE]"),
        ],
        [F(choice(index=0, delta={}, finish_reason="length")), F(USAGE_ONLY)],
    ],
    ids=["finished without content", "a role, a finish, then [DONE]", "length then usage"],
)
def test_a_choice_without_content_is_an_answer(frames: list[SSEFrame]) -> None:
    _, decoder = decode(frames)
    assert decoder.close() == []


def test_truncation_message_counts_chunks() -> None:
    _, decoder = decode([F(choice(index=0)), F(choice(index=1)), F(choice(index=0, **FINISH))])
    with pytest.raises(
        TruncatedStreamError, match=r"with choice 1 unfinished, after 3 chunks$"
    ) as info:
        decoder.close()
    assert isinstance(info.value, StreamError)


# -- lifecycle -----------------------------------------------------------------------------


def test_feed_after_close() -> None:
    _, decoder = decode([F(choice(index=0, **FINISH))])
    assert decoder.close() == []
    with pytest.raises(RuntimeError, match="closed"):
        decoder.feed(F(text_chunk("a")))
    with pytest.raises(RuntimeError, match="closed"):
        decoder.close()


def test_feed_after_truncation() -> None:
    _, decoder = decode([F(text_chunk("a"))])
    with pytest.raises(TruncatedStreamError):
        decoder.close()
    with pytest.raises(RuntimeError, match="failed"):
        decoder.feed(F(text_chunk("b")))


def test_done_then_close_then_feed() -> None:
    _, decoder = decode([F(text_chunk("a")), F("[DONE]")])
    assert decoder.done
    assert decoder.close() == []
    assert decoder.done  # still: [DONE] did arrive
    with pytest.raises(RuntimeError, match="closed"):
        decoder.feed(F("[DONE]"))


def test_chunk_properties() -> None:
    frame = F({"id": "c1", "model": "m", "choices": [{"index": 0}], "usage": {"total_tokens": 1}})
    [chunk] = ChunkDecoder().feed(frame)
    assert (chunk.id, chunk.model, chunk.choices, chunk.usage) == (
        "c1",
        "m",
        [{"index": 0}],
        {"total_tokens": 1},
    )


# -- whole streams through LineSplitter -> SSEParser -> ChunkDecoder ----------------------


def test_built_stream_all_chunkings() -> None:
    stream = (
        ChatStream()
        .keepalive()
        .role()
        .text("Hé", "llo ✓")
        .tool_call(0, id="call_1", name="f", arguments='{"a":1}', fragments=2)
        .finish("tool_calls")
        .usage(3, 5)
        .done()
    )
    data = stream.bytes("\r\n") + b"data: not read after [DONE]\n\n"
    out = outputs_for_all_chunkings(Pipeline, data)
    assert out == [ChatChunk(raw) for raw in stream.chunks()]


def test_fixture_groq_error_event() -> None:
    data = (DATA / "groq" / "error-event-tool-use-failed.sse").read_bytes()
    pipeline = Pipeline()
    with pytest.raises(ProviderError) as info:
        pipeline.feed(data)
    error = info.value
    assert error.message.startswith(
        "Tool call validation failed: tool call validation failed: parameters for tool "
        "get_something_by_name did not match schema"
    )
    assert (error.type, error.code, error.event) == (
        "invalid_request_error",
        "tool_use_failed",
        "error",
    )
    assert error.payload["error"]["status_code"] == 400
    assert '"invalid_param"' in error.payload["error"]["failed_generation"]


def test_fixture_groq_chunks_before_the_error() -> None:
    data = (DATA / "groq" / "error-event-tool-use-failed.sse").read_bytes()
    head = data[: data.index(b"event: error")]
    pipeline = Pipeline()
    out = pipeline.feed(head)
    assert not pipeline.decoder.done
    reasoning = "".join(c.choices[0]["delta"].get("reasoning", "") for c in out)
    assert reasoning.startswith("We need to call the tool with invalid parameters first")
    assert out[0].raw["x_groq"] == {"id": "req_01khrvt2r6e9rb7e8qsg86ywkw", "seed": 27718886}


def test_fixture_groq_truncated_without_error_event() -> None:
    data = (DATA / "groq" / "error-event-tool-use-failed.sse").read_bytes()
    pipeline = Pipeline()
    out = pipeline.feed(data[: data.index(b"event: error")])
    with pytest.raises(TruncatedStreamError, match=f"choice 0 unfinished, after {len(out)} chunks"):
        pipeline.close()


def test_fixture_openrouter_midstream_error() -> None:
    data = (DATA / "openrouter" / "keepalive-then-midstream-error.sse").read_bytes()
    pipeline = Pipeline()
    lines = data.splitlines(keepends=True)
    out = [chunk for line in lines[:-3] for chunk in pipeline.feed(line)]
    with pytest.raises(ProviderError) as info:
        pipeline.feed(b"".join(lines[-3:]))
    error = info.value
    assert (error.message, error.code, error.type, error.event) == (
        "Token limit reached",
        400,
        None,
        "message",
    )
    assert error.payload["usage"]["total_tokens"] == 53  # the whole chunk is kept
    assert len(out) == 3  # the 17 keep-alive comments gave nothing
    assert [c.choices[0]["finish_reason"] for c in out] == [None, "length", "length"]


def test_fixture_tgi_completes_without_done() -> None:
    data = (DATA / "hf-tgi" / "chat-data-no-space-no-done.sse").read_bytes()
    out, pipeline = decode_bytes([data])
    assert not pipeline.decoder.done
    assert out[-1].choices[0]["finish_reason"] == "length"
    assert all(c.raw["object"] == "text_completion" for c in out)
    text = "".join(c.choices[0]["delta"]["content"] for c in out)
    assert text.endswith(" The algorithms can")
    assert len(out) == data.count(b"data:")


def test_fixture_tgi_cut_short_is_truncated() -> None:
    data = (DATA / "hf-tgi" / "chat-data-no-space-no-done.sse").read_bytes()
    cut = data[: data.rindex(b"data:")]
    with pytest.raises(TruncatedStreamError) as info:
        decode_bytes([cut])
    assert info.value.unfinished == (0,)


# -- property: any chunking of a built stream gives the same chunks ------------------------

_piece = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)


@st.composite
def streams(draw: st.DrawFn) -> ChatStream:
    stream = ChatStream(model=draw(st.sampled_from(["m", "gpt-ø"])))
    n = draw(st.integers(1, 3))
    for c in range(n):
        stream.role(choice=c)
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["text", "reasoning", "refusal", "tool", "keepalive"]))
        c = draw(st.integers(0, n - 1))
        if kind == "text":
            stream.text(*draw(st.lists(_piece, max_size=3)), choice=c)
        elif kind == "reasoning":
            stream.reasoning(draw(_piece), choice=c)
        elif kind == "refusal":
            stream.refusal(draw(_piece), choice=c)
        elif kind == "tool":
            args = draw(_piece)
            call = ToolCall(draw(st.integers(0, 2)), "call_x", "f", args, choice=c)
            stream.tool_calls([call], fragments=draw(st.integers(1, 4)))
        else:
            stream.keepalive(draw(_piece.filter(lambda s: "\n" not in s and "\r" not in s)))
    for c in range(n):
        stream.finish(draw(st.sampled_from(["stop", "length", "tool_calls"])), choice=c)
    if draw(st.booleans()):
        stream.usage(draw(st.integers(0, 99)), draw(st.integers(0, 99)))
    return stream.done() if draw(st.booleans()) else stream


@settings(max_examples=200, deadline=None)
@given(
    stream=streams(),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(0, 10_000), max_size=8),
)
def test_any_chunking_gives_the_same_chunks(
    stream: ChatStream, newline: str, cuts: list[int]
) -> None:
    data = stream.bytes(newline)
    bounds = sorted({min(cut, len(data)) for cut in cuts} | {0, len(data)})
    pieces = [data[a:b] for a, b in itertools.pairwise(bounds)]
    out, pipeline = decode_bytes(pieces)
    assert out == [ChatChunk(raw) for raw in stream.chunks()]
    assert pipeline.decoder.done == (stream.lines()[-2] == "data: [DONE]")
