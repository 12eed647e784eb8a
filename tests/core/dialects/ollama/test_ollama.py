"""The "ollama" dialect (/api/chat NDJSON): the recordings, the decoder line by line, bad
input, the renderer and the round trip."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.core.dialects import AutoDecoder, detect, renderer
from rxstream.core.dialects.ollama import OllamaDecoder, OllamaRenderer, http_error
from rxstream.core.message import MessageAccumulator
from rxstream.core.tools import generated_call_id
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
    Metadata,
    ReasoningDelta,
    RefusalDelta,
    SSEFrame,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from tests.support.chunking import chunkings
from tests.support.dialects import runner
from tests.support.narrowing import only
from tests.support.operators import error_of, on_completed, on_next, subscribe
from tests.support.recordings.ollama import RECORDINGS

pipeline = runner("ollama", wire="ndjson")


DATA = Path(__file__).parents[3] / "data" / "ollama"
STAMP = {"model": "m", "created_at": "2025-01-01T00:00:00Z"}


def line(message: dict[str, Any] | None = None, *, done: bool = False, **extra: Any) -> str:
    body: dict[str, Any] = dict(STAMP)
    if message is not None:
        body["message"] = {"role": "assistant", "content": "", **message}
    body.update(extra)
    body["done"] = done
    return json.dumps(body)


def final(reason: str | None = "stop", **extra: Any) -> str:
    if reason is not None:
        extra["done_reason"] = reason
    return line({}, done=True, **extra)


def feed_each(machine: OllamaDecoder, items: list[str]) -> list[Delta]:
    out: list[Delta] = []
    for item in items:
        out += machine.feed(item)
    return out


def decode_all(items: list[str], **options: Any) -> list[Delta]:
    machine = OllamaDecoder(**options)
    return feed_each(machine, items) + machine.close()


# ----------------------------------------------------------------------------- the recordings


@pytest.mark.parametrize(("name", "check"), RECORDINGS)
@pytest.mark.parametrize("dialect", ["ollama", "auto"])
def test_recordings_under_every_chunking(name: str, check: Any, dialect: str) -> None:
    data = (DATA / name).read_bytes()
    assert not data.endswith(b"\n")  # both recordings lack the final newline
    for chunking, pieces in chunkings(data):
        (message,) = pipeline(pieces, dialect)
        try:
            check(message)
        except AssertionError as exc:  # pragma: no cover - names the chunking
            raise AssertionError(f"chunking {chunking!r}: {exc}") from exc


def test_the_tool_call_recording_line_by_line() -> None:
    lines = (DATA / "chat-tool-call-llama3.1.ndjson").read_text().split("\n")
    machine = OllamaDecoder()
    assert machine.feed(lines[0]) == [
        ToolCallDelta(0, '{"firstNumber":1,"secondNumber":1}', None, "sum")
    ]
    assert not machine.done
    finish, counts, extra = machine.feed(lines[1])
    assert finish == Finish("tool_calls")
    assert counts == Usage(169, 22, 191)
    assert isinstance(extra, Metadata)
    assert machine.done
    with pytest.raises(RuntimeError, match="done"):
        machine.feed(lines[1])


# ----------------------------------------------------------------------------- lines, table


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param(
            [line({"content": "Hel"}), line({"content": ""}), line({"content": "lo"})],
            [TextDelta("Hel"), TextDelta("lo")],
            id="text-empty-content-gives-nothing",
        ),
        pytest.param(
            [line({"thinking": "hmm "}), line({"thinking": "ok", "content": "A"})],
            [ReasoningDelta("hmm "), ReasoningDelta("ok"), TextDelta("A")],
            id="thinking",
        ),
        pytest.param(
            ["", "   ", "\t", line({"content": "x"})],
            [TextDelta("x")],
            id="blank-lines-ignored",
        ),
        pytest.param(
            [
                line(
                    {
                        "tool_calls": [
                            {
                                "id": "call_abc12345",
                                "function": {
                                    "index": 0,
                                    "name": "get_weather",
                                    "arguments": {"city": "Paris", "unit": "°C"},
                                },
                            },
                            {"function": {"index": 1, "name": "now", "arguments": {}}},
                        ]
                    }
                ),
                line(
                    {
                        "tool_calls": [
                            {
                                "id": "call_2",
                                "function": {"name": "f", "arguments": {"n": [1, 2.5, None]}},
                            }
                        ]
                    }
                ),
            ],
            [
                ToolCallDelta(0, '{"city":"Paris","unit":"°C"}', "call_abc12345", "get_weather"),
                ToolCallDelta(1, "{}", None, "now"),
                ToolCallDelta(2, '{"n":[1,2.5,null]}', "call_2", "f"),
            ],
            id="tool-calls-whole-in-order-of-appearance",
        ),
        pytest.param(
            [line({"tool_calls": [{"function": {"name": "f", "arguments": '{"a": 1}'}}]})],
            [ToolCallDelta(0, '{"a": 1}', None, "f")],
            id="arguments-as-text-kept",
        ),
        pytest.param(
            [line({"tool_calls": [{"function": {"name": "f"}}]})],
            [ToolCallDelta(0, "{}", None, "f")],
            id="arguments-absent-is-empty-object",
        ),
        pytest.param(
            [line({"content": "a"}, logprobs=[{"token": "a", "logprob": -0.1}])],
            [TextDelta("a"), Metadata({"logprobs": [{"token": "a", "logprob": -0.1}]})],
            id="logprobs-kept",
        ),
        pytest.param(
            [line({"images": ["aGk="]})],
            [Metadata({"images": ["aGk="]})],
            id="images-kept",
        ),
        pytest.param(
            [final("stop", prompt_eval_count=3, eval_count=2, eval_duration=9)],
            [
                Finish("stop"),
                Usage(3, 2, 5),
                Metadata({**STAMP, "eval_duration": 9}),
            ],
            id="final-line",
        ),
        pytest.param(
            [final("stop", eval_count=2)],
            [Finish("stop"), Usage(0, 2, 2), Metadata(STAMP)],
            id="prompt-count-omitted-when-cached",
        ),
        pytest.param(
            [final("stop", prompt_eval_count=12, prompt_eval_cached_count=9, eval_count=3)],
            [Finish("stop"), Usage(12, 3, 15, cached_tokens=9), Metadata(STAMP)],
            id="cached-prompt-count",
        ),
        pytest.param(
            [final("stop", prompt_eval_cached_count=0, eval_count=1)],
            [Finish("stop"), Usage(0, 1, 1, cached_tokens=0), Metadata(STAMP)],
            id="cached-count-zero-is-said",
        ),
        pytest.param(
            [
                line({"content": "a"}, _probe={"slot": 2}),
                final("stop", eval_count=1, server_note="warm"),
            ],
            [
                TextDelta("a"),
                Metadata({"_probe": {"slot": 2}}),
                Metadata({"server_note": "warm"}),
                Finish("stop"),
                Usage(0, 1, 1),
                Metadata(STAMP),
            ],
            id="unknown-fields-kept-under-their-names",
        ),
        pytest.param(
            [final("load")],
            [Finish("load"), Metadata(STAMP)],
            id="load-without-counts",
        ),
        pytest.param(
            [line({"content": "partial"}), final("length", prompt_eval_count=1, eval_count=1)],
            [TextDelta("partial"), Finish("length"), Usage(1, 1, 2), Metadata(STAMP)],
            id="length",
        ),
        pytest.param(
            [line({"content": "x"}), final(None)],
            [TextDelta("x"), Finish("stop"), Metadata(STAMP)],
            id="no-done-reason",
        ),
        pytest.param(
            [line({"content": "tail"}, done=True, done_reason="stop")],
            [TextDelta("tail"), Finish("stop"), Metadata(STAMP)],
            id="content-on-the-final-line",
        ),
        pytest.param(
            [json.dumps({"done": True, "done_reason": "unload"})],
            [Finish("unload")],
            id="unload-without-message",
        ),
    ],
)
def test_lines(items: list[str], expected: list[Delta]) -> None:
    assert feed_each(OllamaDecoder(), items) == expected


@pytest.mark.parametrize(
    ("raw", "calls", "reason"),
    [
        ("stop", False, "stop"),
        ("stop", True, "tool_calls"),
        ("length", False, "length"),
        ("length", True, "length"),
        ("load", False, "load"),
        ("unload", False, "unload"),
        ("", False, "stop"),
    ],
)
def test_done_reasons(raw: str, calls: bool, reason: str) -> None:
    items = [final(raw)]
    if calls:
        items.insert(0, line({"tool_calls": [{"function": {"name": "f", "arguments": {}}}]}))
    finish = next(d for d in decode_all(items) if isinstance(d, Finish))
    assert finish == Finish(reason)
    assert finish.raw == (raw or None)


# ----------------------------------------------------------------------------- errors


def test_an_error_line_is_a_provider_error() -> None:
    machine = OllamaDecoder()
    machine.feed(line({"content": "par"}))
    with pytest.raises(ProviderError, match="model runner has unexpectedly stopped") as info:
        machine.feed('{"error":"model runner has unexpectedly stopped"}')
    assert info.value.payload == {"error": "model runner has unexpectedly stopped"}
    with pytest.raises(RuntimeError, match="failed"):
        machine.close()


def test_an_error_first_is_a_provider_error_under_auto_too() -> None:
    with pytest.raises(ProviderError, match="model 'x' not found"):
        AutoDecoder().feed('{"error":"model \'x\' not found"}')


@pytest.mark.parametrize(
    ("item", "reason"),
    [
        pytest.param('{"message": "hi", "done": false}', "message is a JSON string", id="message"),
        pytest.param(line({"content": 5}), "message.content is a JSON number", id="content"),
        pytest.param(line({"thinking": ["a"]}), "message.thinking is a JSON array", id="thinking"),
        pytest.param(line({"tool_calls": {}}), "message.tool_calls is a JSON object", id="calls"),
        pytest.param(
            line({"tool_calls": ["f"]}), "message.tool_calls[0] is a JSON string", id="call"
        ),
        pytest.param(
            line({"tool_calls": [{"id": "c"}]}),
            "message.tool_calls[0].function is a JSON null",
            id="call-without-function",
        ),
        pytest.param(
            line({"tool_calls": [{"function": {"name": "f", "arguments": [1]}}]}),
            "message.tool_calls[0].function.arguments is a JSON array, not an object",
            id="arguments-array",
        ),
        pytest.param(
            line({"tool_calls": [{"function": {"name": 3}}]}),
            "message.tool_calls[0].function.name is a JSON number",
            id="name-number",
        ),
        pytest.param(
            line({"tool_calls": [{"id": 7, "function": {"name": "f"}}]}),
            "message.tool_calls[0].id is a JSON number",
            id="id-number",
        ),
        pytest.param(
            line({}, done="yes"),  # type: ignore[arg-type]  # a string for done, on purpose
            "done is a JSON string, not a boolean",
            id="done",
        ),
        pytest.param(final(None, done_reason=1), "done_reason is a JSON number", id="reason"),
        pytest.param(final("stop", eval_count="2"), "eval_count is a JSON string", id="count"),
        pytest.param(final("stop", total_duration=1.5), "total_duration is a JSON number", id="ns"),
        pytest.param(line({"content": "a"}, logprobs={}), "logprobs is a JSON object", id="lp"),
        pytest.param("not json", "invalid JSON", id="not-json"),
        pytest.param("[1, 2]", "a JSON array, not an object", id="array"),
        pytest.param('"text"', "a JSON string, not an object", id="string"),
        pytest.param('data: {"choices": []}', "invalid JSON", id="an-sse-line"),
        pytest.param(
            '{"choices": [{"delta": {"content": "a"}}]}',
            "neither message nor done; this looks like the openai-chat dialect",
            id="openai-chunk",
        ),
        pytest.param(
            '{"type": "message_start", "x": 1}',
            "neither message nor done; this looks like the anthropic dialect",
            id="anthropic-event",
        ),
        pytest.param(
            '{"model": "m", "response": "Hi", "done": false}',
            "an /api/generate line (response), not an /api/chat one",
            id="generate-line",
        ),
        pytest.param('{"model": "m"}', "neither message nor done", id="no-message-no-done"),
    ],
)
def test_bad_lines_are_malformed_naming_the_dialect(item: str, reason: str) -> None:
    machine = OllamaDecoder()
    with pytest.raises(MalformedChunkError) as info:
        machine.feed(item)
    assert info.value.dialect == "ollama"
    assert reason in info.value.reason
    assert "malformed ollama data" in str(info.value)


def test_skip_drops_bad_lines_and_goes_on() -> None:
    items = ["nope", line({"content": 5}), line({"content": "ok"}), final("stop")]
    assert decode_all(items, on_malformed="skip") == [
        TextDelta("ok"),
        Finish("stop"),
        Metadata(STAMP),
    ]


def test_items_of_another_kind_are_a_type_error_with_a_hint() -> None:
    with pytest.raises(TypeError, match=r"add rs.lines\(\)"):
        OllamaDecoder().feed(SSEFrame("{}"))
    with pytest.raises(TypeError, match="NDJSON lines"):
        OllamaDecoder().feed(b'{"done": true}')


@pytest.mark.parametrize(
    ("items", "error", "said"),
    [
        pytest.param([], EmptyStreamError, "without any content", id="nothing"),
        pytest.param(["", ""], EmptyStreamError, "2 item", id="blank-lines-only"),
        pytest.param(
            [line({"content": "a"})],
            TruncatedStreamError,
            'ended before "done": true',
            id="no-done-line",
        ),
        pytest.param(
            [line({"tool_calls": [{"function": {"name": "f", "arguments": {}}}]})],
            TruncatedStreamError,
            "before",
            id="after-a-tool-call",
        ),
    ],
)
def test_ends_without_done(items: list[str], error: type[Exception], said: str) -> None:
    machine = OllamaDecoder()
    feed_each(machine, items)
    with pytest.raises(error, match=said):
        machine.close()


def test_auto_detects_ollama_and_drops_leading_blank_lines() -> None:
    assert detect('{"model":"m","message":{},"done":false}') == "ollama"
    auto = AutoDecoder()
    assert auto.feed("") == []
    assert auto.dialect is None
    assert auto.feed(line({"content": "a"})) == [TextDelta("a")]
    assert auto.dialect == "ollama"


def test_the_operator_completes_at_done_and_disposes_the_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, line({"content": "a"}) + "\n"),
        on_next(220, final("stop") + "\n"),
        on_next(230, line({"content": "never"}) + "\n"),
        on_completed(300),
    )
    results = scheduler.start(lambda: source.pipe(rs.lines(), rs.decode("ollama")))
    assert results.messages == [
        on_next(210, TextDelta("a")),
        on_next(220, Finish("stop")),
        on_next(220, Metadata(STAMP)),
        on_completed(220),
    ]
    assert source.subscriptions == [subscribe(200, 220)]


def test_the_operator_reports_a_stream_without_done() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, line({"content": "a"}) + "\n"), on_completed(250)
    )
    results = scheduler.start(lambda: source.pipe(rs.lines(), rs.decode("ollama")))
    assert results.messages[0] == on_next(210, TextDelta("a"))
    assert results.messages[1].time == 250
    assert isinstance(error_of(results.messages[1]), TruncatedStreamError)


# ----------------------------------------------------------------------------- random input


@given(st.binary(max_size=300))
def test_random_bytes_give_deltas_or_a_stream_error(data: bytes) -> None:
    errors: list[Exception] = []
    reactivex.from_iterable([data[:5], data[5:]]).pipe(
        rs.lines(), rs.decode("ollama"), rs.accumulate_message()
    ).subscribe(lambda _: None, errors.append)
    assert all(isinstance(error, StreamError) for error in errors)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(
                ["message", "done", "done_reason", "error", "eval_count", "response", "logprobs"]
            ),
            json_values,
            max_size=4,
        ).map(json.dumps),
        max_size=6,
    )
)
def test_random_objects_give_deltas_or_a_stream_error(items: list[str]) -> None:
    machine = OllamaDecoder()
    try:
        for item in items:
            machine.feed(item)
            if machine.done:
                break
        machine.close()
    except StreamError:
        pass


# ----------------------------------------------------------------------------- the renderer


def test_the_renderer_writes_api_chat_lines() -> None:
    r = renderer("ollama", model="llama3.2")
    assert r.wire == "ndjson"
    out: list[Any] = []
    deltas: list[Delta] = [
        ReasoningDelta("think"),
        TextDelta("Hi"),
        ToolCallDelta(0, "", "call_1", "f"),
        ToolCallDelta(0, '{"a":'),
        ToolCallDelta(0, "1}"),
        ToolCallDelta(1, "", None, "g"),
        RefusalDelta("not expressible"),
        Citation("url_citation", "https://x.test"),
        Finish("tool_calls"),
        Usage(10, 2, 12, cached_tokens=4),
        Metadata({"total_duration": 99, "other": 1}),
    ]
    for item in deltas:
        out += r.feed(item)
    out += r.close()
    stamp = {"model": "llama3.2", "created_at": "2024-01-01T00:00:00Z"}
    assert [json.loads(item) for item in out] == [
        {
            **stamp,
            "message": {"role": "assistant", "content": "", "thinking": "think"},
            "done": False,
        },
        {**stamp, "message": {"role": "assistant", "content": "Hi"}, "done": False},
        {
            **stamp,
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"function": {"index": 0, "name": "f", "arguments": {"a": 1}}, "id": "call_1"}
                ],
            },
            "done": False,
        },
        {
            **stamp,
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"index": 1, "name": "g", "arguments": {}}}],
            },
            "done": False,
        },
        {
            **stamp,
            "message": {"role": "assistant", "content": ""},
            "done_reason": "stop",
            "done": True,
            "total_duration": 99,
            "prompt_eval_count": 10,
            "prompt_eval_cached_count": 4,
            "eval_count": 2,
        },
    ]
    with pytest.raises(RuntimeError, match="closed"):
        r.feed(TextDelta("x"))


def test_the_renderer_takes_whole_calls_without_an_index() -> None:
    r = OllamaRenderer()
    lines: list[Any] = []
    deltas: list[Delta] = [
        ToolCallDelta(None, '{"a":1}', "call_1", "f"),
        ToolCallDelta(None, '{"b":2}', None, "g"),
        TextDelta("then text"),
        ToolCallDelta(None, "{}", "call_3", "h"),
    ]
    for item in deltas:
        lines += r.feed(item)
    lines += r.close()
    accumulator = MessageAccumulator()
    for item in decode_all(lines):
        accumulator.feed(item)
    (message,) = accumulator.close()
    assert message.tool_calls == (
        ToolCall(0, "call_1", "f", '{"a":1}'),
        ToolCall(1, generated_call_id(1, "g", '{"b":2}'), "g", '{"b":2}'),
        ToolCall(2, "call_3", "h", "{}"),
    )
    assert (message.content, message.finish_reason) == ("then text", "tool_calls")


@pytest.mark.parametrize("arguments", ["[1, 2", "[1, 2]", '"text"', "3"])
def test_the_renderer_leaves_out_a_call_whose_arguments_are_no_object(arguments: str) -> None:
    # Ollama's arguments are an object: the ollama client's model rejects the
    # whole stream for a line with anything else, so such a call is left out.
    r = OllamaRenderer()
    r.feed(ToolCallDelta(0, arguments, "c", "f"))
    r.feed(ToolCallDelta(1, '{"a":1}', "d", "g"))
    (call_line, last) = only(str, r.close())
    (call,) = json.loads(call_line)["message"]["tool_calls"]
    assert call == {"id": "d", "function": {"index": 0, "name": "g", "arguments": {"a": 1}}}
    assert decode_all([call_line, last])[0] == ToolCallDelta(0, '{"a":1}', "d", "g")


def test_the_renderer_error_is_ollamas_error_line() -> None:
    r = OllamaRenderer()
    items = only(str, r.feed(TextDelta("a")) + r.error(ProviderError("out of memory")))
    assert items[-1] == '{"error":"out of memory"}'
    with pytest.raises(ProviderError, match="out of memory"):
        decode_all(items)
    with pytest.raises(RuntimeError):
        r.close()


def test_http_error_body() -> None:
    content_type, body = http_error(404, "model 'x' not found", type="not_found", code=404)
    assert content_type == "application/json"
    assert json.loads(body) == {"error": "model 'x' not found"}


# ----------------------------------------------------------------------------- round trip


@st.composite
def scripts(draw: st.DrawFn) -> list[Delta]:
    """A scripted answer in what /api/chat can express."""
    text = st.text(max_size=8)
    out: list[Delta] = []
    calls = 0
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["text", "reasoning", "tool"]))
        if kind == "text":
            out += [TextDelta(t) for t in draw(st.lists(text, min_size=1, max_size=3))]
        elif kind == "reasoning":
            out += [ReasoningDelta(t) for t in draw(st.lists(text, min_size=1, max_size=3))]
        else:
            arguments = json.dumps(
                draw(st.dictionaries(st.text(max_size=5), json_values, max_size=3)),
                separators=(",", ":"),
                ensure_ascii=False,
            )
            cuts = sorted(draw(st.sets(st.integers(1, max(len(arguments) - 1, 1)), max_size=3)))
            bounds = [0, *cuts, len(arguments)]
            call_id = draw(st.none() | st.text("abcdefgh0123", min_size=8, max_size=8))
            name = draw(st.text("abcdefgh_", min_size=1, max_size=8))
            out.append(
                ToolCallDelta(calls, "", None if call_id is None else f"call_{call_id}", name)
            )
            out += [ToolCallDelta(calls, arguments[a:b]) for a, b in itertools.pairwise(bounds)]
            calls += 1
    reasons = ["stop", "length", "load"]
    out.append(Finish("tool_calls" if calls else draw(st.sampled_from(reasons))))
    if draw(st.booleans()):
        prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))
        cached = draw(st.none() | st.integers(0, prompt))
        out.append(Usage(prompt, completion, prompt + completion, cached_tokens=cached))
    return out


@st.composite
def cut(draw: st.DrawFn, data: bytes) -> list[bytes]:
    points = sorted(draw(st.sets(st.integers(0, len(data)), max_size=10)))
    return [data[a:b] for a, b in itertools.pairwise([0, *points, len(data)])]


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(scripts(), st.booleans(), st.data())
def test_render_then_decode_gives_the_same_message(
    script: list[Delta], newline_at_end: bool, data: st.DataObject
) -> None:
    r = OllamaRenderer()
    lines: list[Any] = []
    for item in script:
        lines += r.feed(item)
    lines += r.close()
    wire = ("\n".join(lines) + ("\n" if newline_at_end else "")).encode()
    dialect = data.draw(st.sampled_from(["ollama", "auto"]))
    (got,) = pipeline(data.draw(cut(wire)), dialect)
    accumulator = MessageAccumulator()
    for item in script:
        accumulator.feed(item)
    (want,) = accumulator.close()
    assert got == want
    assert got.finish_raw == ("stop" if want.finish_reason == "tool_calls" else want.finish_reason)
