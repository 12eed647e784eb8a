"""The "cohere" dialect: recorded streams, decoder table, bad input, renderer, round trips."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core.dialects import Wire, decoder, detect, renderer
from rxstream.core.dialects.cohere import CohereDecoder, CohereRenderer, http_error
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
    SSEFrame,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from tests.support.dialects import deltas_runner, runner, wire_bytes
from tests.support.dialects import frame as any_frame
from tests.support.narrowing import only
from tests.support.recordings.cohere import RECORDINGS

run = runner("cohere")
deltas_of = deltas_runner("cohere")
#: Cohere names each event after its payload's type.
frame = partial(any_frame, typed=True)


DATA = Path(__file__).parents[3] / "data" / "cohere"


def decode(*payloads: Any, close: bool = True, **options: Any) -> list[Delta]:
    d = CohereDecoder(**options)
    out: list[Delta] = []
    for p in payloads:
        out += d.feed(p if isinstance(p, SSEFrame) else frame(p))
    if close:
        out += d.close()
    return out


START = {
    "id": "m1",
    "type": "message-start",
    "delta": {
        "message": {
            "role": "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
    },
}


def content_start(index: int = 0, kind: str = "text") -> dict[str, Any]:
    return {
        "type": "content-start",
        "index": index,
        "delta": {"message": {"content": {"type": kind, kind: ""}}},
    }


def content(text: str, index: int = 0, key: str = "text", **extra: Any) -> dict[str, Any]:
    return {
        "type": "content-delta",
        "index": index,
        "delta": {"message": {"content": {key: text}}},
        **extra,
    }


def plan(text: str) -> dict[str, Any]:
    return {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": text}}}


def call_start(index: int, id: str, name: str, arguments: str = "") -> dict[str, Any]:
    call = {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
    return {"type": "tool-call-start", "index": index, "delta": {"message": {"tool_calls": call}}}


def call_delta(index: int, arguments: str) -> dict[str, Any]:
    piece = {"function": {"arguments": arguments}}
    return {"type": "tool-call-delta", "index": index, "delta": {"message": {"tool_calls": piece}}}


def end(reason: str = "COMPLETE", usage: Any = None, **delta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"finish_reason": reason, **delta}
    if usage is not None:
        body["usage"] = usage
    return {"type": "message-end", "delta": body}


USAGE = {
    "billed_units": {"input_tokens": 12, "output_tokens": 7},
    "tokens": {"input_tokens": 507, "output_tokens": 10},
    "cached_tokens": 448,
}


# --------------------------------------------------------------------------- recordings


def test_every_recording_is_checked() -> None:
    assert sorted(p.name for p in DATA.glob("*.sse")) == sorted(RECORDINGS)


@pytest.mark.parametrize("dialect", ["cohere", "auto"])
@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_recording(name: str, dialect: str) -> None:
    data = (DATA / name).read_bytes()
    (message,) = run([data], dialect)
    RECORDINGS[name](message)
    for size in (1, 5, 64):
        assert run([data[i : i + size] for i in range(0, len(data), size)], dialect) == [message]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(RECORDINGS)), data=st.data())
def test_recording_any_chunking(name: str, data: st.DataObject) -> None:
    raw = (DATA / name).read_bytes()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(raw) - 1), max_size=12)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    (message,) = run(pieces, data.draw(st.sampled_from(["cohere", "auto"])))
    RECORDINGS[name](message)


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_recording_with_event_lines_as_on_the_wire(name: str) -> None:
    """The recordings lost their `event:` lines; with them back, the same message."""
    frames = [
        frame(json.loads(line[6:]))
        for line in (DATA / name).read_text().splitlines()
        if line.startswith("data: ")
    ]
    (message,) = run([wire_bytes(frames)])
    RECORDINGS[name](message)


def test_tool_arguments_arrive_as_sent() -> None:
    out = deltas_of([(DATA / "v2-tool-call.sse").read_bytes()])
    first = [d for d in out if isinstance(d, ToolCallDelta) and d.index == 0]
    assert first[0] == ToolCallDelta(0, "", "weather_e8p4pn45zt0t", "weather")
    assert [d.arguments for d in first[1:]] == [
        '{"',
        "location",
        '":',
        ' "',
        "San",
        " Francisco",
        '"}',
    ]


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_detect_says_cohere(name: str) -> None:
    first = (DATA / name).read_text().splitlines()[0].removeprefix("data: ")
    assert detect(SSEFrame(first)) == "cohere"
    assert detect(SSEFrame(first, event=json.loads(first)["type"])) == "cohere"


# --------------------------------------------------------------------------- decoder table

CASES: list[tuple[str, list[Any], list[Delta]]] = [
    (
        "text",
        [START, content_start(), content("Hi"), {"type": "content-end", "index": 0}, end()],
        [Metadata({"id": "m1"}), TextDelta("Hi"), Finish("stop")],
    ),
    (
        "thinking content is reasoning",
        [
            START,
            content_start(0, "thinking"),
            content("hmm", 0, "thinking"),
            content_start(1),
            content("ok", 1),
            end(),
        ],
        [Metadata({"id": "m1"}), ReasoningDelta("hmm"), TextDelta("ok"), Finish("stop")],
    ),
    (
        "empty pieces give nothing",
        [START, content(""), plan(""), end()],
        [Metadata({"id": "m1"}), Finish("stop")],
    ),
    (
        "logprobs are metadata",
        [START, content("a", logprobs={"token_ids": [1], "logprobs": [-0.5]}), end()],
        [
            Metadata({"id": "m1"}),
            TextDelta("a"),
            Metadata({"logprobs": [{"token_ids": [1], "logprobs": [-0.5]}]}),
            Finish("stop"),
        ],
    ),
    (
        "tool plan is reasoning; calls numbered in order of appearance",
        [
            START,
            plan("I will"),
            call_start(3, "c_a", "a"),
            call_delta(3, '{"x":'),
            call_delta(3, "1}"),
            {"type": "tool-call-end", "index": 3},
            call_start(5, "c_b", "b", "{}"),
            {"type": "tool-call-end", "index": 5},
            end("TOOL_CALL"),
        ],
        [
            Metadata({"id": "m1"}),
            ReasoningDelta("I will"),
            ToolCallDelta(0, "", "c_a", "a"),
            ToolCallDelta(0, '{"x":'),
            ToolCallDelta(0, "1}"),
            ToolCallDelta(1, "{}", "c_b", "b"),
            Finish("tool_calls"),
        ],
    ),
    (
        "a stop that asked for tools is tool_calls",
        [START, call_start(0, "c", "f", "{}"), end("COMPLETE")],
        [Metadata({"id": "m1"}), ToolCallDelta(0, "{}", "c", "f"), Finish("tool_calls")],
    ),
    (
        "citation: one per source",
        [
            START,
            {
                "type": "citation-start",
                "index": 0,
                "delta": {
                    "message": {
                        "citations": {
                            "start": 4,
                            "end": 9,
                            "text": "Paris",
                            "type": "TEXT_CONTENT",
                            "sources": [
                                {
                                    "type": "document",
                                    "id": "d1",
                                    "document": {"title": "T", "url": "https://d"},
                                },
                                {"type": "tool", "id": "t1", "tool_output": {"temp": 20}},
                            ],
                        }
                    }
                },
            },
            {"type": "citation-end", "index": 0},
            end(),
        ],
        [
            Metadata({"id": "m1"}),
            Citation("document", "https://d", "T", "Paris", 4, 9),
            Citation("tool", None, None, "Paris", 4, 9),
            Finish("stop"),
        ],
    ),
    (
        "a citation with no source",
        [
            START,
            {
                "type": "citation-start",
                "index": 0,
                "delta": {"message": {"citations": {"start": 0, "end": 1}}},
            },
            end(),
        ],
        [Metadata({"id": "m1"}), Citation("citation", start=0, end=1), Finish("stop")],
    ),
    (
        "debug and unknown hyphenated events are kept",
        [START, {"type": "debug", "prompt": "p"}, {"type": "new-thing", "x": 1}, end()],
        [
            Metadata({"id": "m1"}),
            Metadata({"debug": {"type": "debug", "prompt": "p"}}),
            Metadata({"events": [{"type": "new-thing", "x": 1}]}),
            Finish("stop"),
        ],
    ),
    (
        "usage from tokens, billed units kept in raw, message id on the end",
        [
            START,
            {
                "type": "message-end",
                "id": "m1",
                "delta": {"finish_reason": "MAX_TOKENS", "usage": USAGE},
            },
        ],
        [
            Metadata({"id": "m1"}),
            Metadata({"id": "m1"}),
            Finish("length"),
            Usage(507, 10, 517, cached_tokens=448),
        ],
    ),
    (
        "billed units when tokens are absent; whole floats pass",
        [START, end(usage={"billed_units": {"input_tokens": 3.0, "output_tokens": 4}})],
        [Metadata({"id": "m1"}), Finish("stop"), Usage(3, 4, 7)],
    ),
    (
        "the type read from the event line when the data has none",
        [START, frame({"delta": {"message": {"content": {"text": "a"}}}}, "content-delta"), end()],
        [Metadata({"id": "m1"}), TextDelta("a"), Finish("stop")],
    ),
    (
        "blank frames and [DONE] are nothing",
        [START, "", " ", "[DONE]", end()],
        [Metadata({"id": "m1"}), Finish("stop")],
    ),
    (
        "text or thinking in a content-start is not lost",
        [
            START,
            {
                "type": "content-start",
                "index": 0,
                "delta": {"message": {"content": {"type": "thinking", "thinking": "so"}}},
            },
            {
                "type": "content-start",
                "index": 1,
                "delta": {"message": {"content": {"type": "text", "text": "Yes"}}},
            },
            content(", done", 1),
            end(),
        ],
        [
            Metadata({"id": "m1"}),
            ReasoningDelta("so"),
            TextDelta("Yes"),
            TextDelta(", done"),
            Finish("stop"),
        ],
    ),
    (
        "fields of message-start and message-end rxstream does not read are metadata",
        [
            {
                **START,
                "trace": "t9",
                "delta": {"message": {"role": "assistant", "content": [], "lang": "pt"}},
            },
            content("a"),
            {**end(system_fingerprint="f1"), "id": "m1"},
        ],
        [
            Metadata({"id": "m1"}),
            Metadata({"trace": "t9", "message": {"lang": "pt"}}),
            TextDelta("a"),
            Metadata({"id": "m1"}),
            Finish("stop"),
            Metadata({"system_fingerprint": "f1"}),
        ],
    ),
]


@pytest.mark.parametrize(("payloads", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decoder_table(payloads: list[Any], want: list[Delta]) -> None:
    assert decode(*payloads) == want


FINISHES = [
    ("COMPLETE", "stop"),
    ("STOP_SEQUENCE", "stop"),
    ("MAX_TOKENS", "length"),
    ("TOOL_CALL", "tool_calls"),
    ("TIMEOUT", "TIMEOUT"),
    ("ERROR", "ERROR"),
]


@pytest.mark.parametrize(("raw", "reason"), FINISHES, ids=[f[0] for f in FINISHES])
def test_finish_reasons_keep_the_raw_word(raw: str, reason: str) -> None:
    (finish,) = [d for d in decode(START, end(raw)) if isinstance(d, Finish)]
    assert (finish.reason, finish.raw) == (reason, raw)


def test_done_at_message_end() -> None:
    d = CohereDecoder()
    d.feed(frame(START))
    assert not d.done
    d.feed(frame(end()))
    assert d.done
    with pytest.raises(RuntimeError, match="done"):
        d.feed(frame(content("late")))


# --------------------------------------------------------------------------- bad input


def test_error_at_message_end_is_provider_error() -> None:
    with pytest.raises(ProviderError, match="internal server error") as info:
        decode(START, content("a"), end("ERROR", error="internal server error"), close=False)
    assert info.value.message == "internal server error"
    assert info.value.type == "ERROR"
    assert info.value.event == "message-end"


def test_truncated_before_message_end() -> None:
    with pytest.raises(TruncatedStreamError, match="message-end") as info:
        decode(START, content("a"))
    assert not isinstance(info.value, EmptyStreamError)


def test_truncated_through_the_pipeline() -> None:
    data = (DATA / "v2-tool-call.sse").read_bytes()
    cut = data.rindex(b"data: ")
    with pytest.raises(TruncatedStreamError):
        run([data[:cut]])


@pytest.mark.parametrize("payloads", [[], [""], ["[DONE]"]], ids=["nothing", "blank", "done"])
def test_nothing_is_empty(payloads: list[Any]) -> None:
    with pytest.raises(EmptyStreamError):
        decode(*payloads)


FOREIGN = [
    ("openai chat chunk", {"id": "c", "choices": [{"delta": {"content": "a"}}]}, "no type"),
    ("anthropic event", {"type": "message_start", "message": {}}, "message_start"),
    ("responses event", {"type": "response.created", "response": {}}, "response.created"),
    ("gemini chunk", {"candidates": []}, "no type"),
    ("an event line from another dialect", frame({"x": 1}, "message_start"), "no type"),
]


@pytest.mark.parametrize(("payload", "says"), [f[1:] for f in FOREIGN], ids=[f[0] for f in FOREIGN])
def test_frame_of_another_dialect(payload: Any, says: str) -> None:
    with pytest.raises(MalformedChunkError, match=says) as info:
        decode(START, payload, close=False)
    assert info.value.dialect == "cohere"


def test_an_error_object_without_a_type_is_provider_error() -> None:
    with pytest.raises(ProviderError, match="overloaded") as info:
        decode(START, {"error": {"message": "overloaded", "type": "server_error"}}, close=False)
    assert info.value.type == "server_error"


def test_event_line_and_data_disagree() -> None:
    with pytest.raises(MalformedChunkError, match="carries data of type"):
        decode(frame(content("a"), "content-end"), close=False)


@pytest.mark.parametrize("data", ["[1]", '"x"', "3", "null", "{broken"])
def test_json_that_is_not_an_object(data: str) -> None:
    with pytest.raises(MalformedChunkError) as info:
        decode(data, close=False)
    assert info.value.dialect == "cohere"


# Each case builds a field of the wrong type on purpose (hence `type: ignore[arg-type]`).
WRONG_TYPES = [
    ("type", {"type": 3}, "type"),
    ("delta", {"type": "content-delta", "delta": []}, "delta"),
    ("message", {"type": "content-delta", "delta": {"message": "m"}}, r"delta\.message"),
    ("content text", content(3), r"delta\.message\.content\.text"),  # type: ignore[arg-type]
    ("thinking", content(3, key="thinking"), r"content\.thinking"),  # type: ignore[arg-type]
    ("tool plan", plan(3), "tool_plan"),  # type: ignore[arg-type]
    ("index", {"type": "content-end", "index": "0"}, "index"),
    ("call id", call_start(0, 3, "f"), r"tool_calls\.id"),  # type: ignore[arg-type]
    ("call name", call_start(0, "c", 3), r"function\.name"),  # type: ignore[arg-type]
    ("call arguments", call_delta(0, 3), r"function\.arguments"),  # type: ignore[arg-type]
    (
        "citation start",
        {"type": "citation-start", "delta": {"message": {"citations": {"start": "0"}}}},
        r"citations\.start",
    ),
    (
        "citation source",
        {"type": "citation-start", "delta": {"message": {"citations": {"sources": [1]}}}},
        r"sources\[0\]",
    ),
    ("finish reason", end(3), r"delta\.finish_reason"),  # type: ignore[arg-type]
    ("usage", end(usage=[1]), r"delta\.usage"),
    ("tokens", end(usage={"tokens": {"input_tokens": "5"}}), r"tokens\.input_tokens"),
    ("fractional tokens", end(usage={"tokens": {"output_tokens": 1.5}}), "output_tokens"),
    ("message id", {"type": "message-start", "id": 7}, "id"),
]


@pytest.mark.parametrize(
    ("payload", "path"), [w[1:] for w in WRONG_TYPES], ids=[w[0] for w in WRONG_TYPES]
)
def test_wrong_typed_field_names_its_path(payload: Any, path: str) -> None:
    with pytest.raises(MalformedChunkError, match=path) as info:
        decode(payload, close=False)
    assert info.value.dialect == "cohere"


def test_a_delta_for_a_call_never_started() -> None:
    with pytest.raises(MalformedChunkError, match="no start opened"):
        decode(START, call_delta(2, "{}"), close=False)


def test_skip_drops_malformed_frames() -> None:
    out = decode(
        START,
        "[1]",
        {"type": "message_start"},
        content(3),  # type: ignore[arg-type]  # a number for the text, on purpose
        content("a"),
        end(),
        on_malformed="skip",
    )
    assert out == [Metadata({"id": "m1"}), TextDelta("a"), Finish("stop")]


def test_takes_only_frames() -> None:
    with pytest.raises(TypeError, match="SSEFrame"):
        CohereDecoder().feed("data: {}")


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_give_only_stream_errors(data: bytes) -> None:
    with contextlib.suppress(StreamError):
        run([data])
    with contextlib.suppress(StreamError):
        run([b"event: content-delta\ndata: " + data + b"\n\n"])


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "type",
                        "delta",
                        "message",
                        "content",
                        "text",
                        "thinking",
                        "tool_calls",
                        "function",
                        "arguments",
                        "index",
                        "citations",
                        "sources",
                        "finish_reason",
                        "usage",
                        "tokens",
                        "error",
                        "id",
                        "name",
                        "start",
                        "end",
                    ]
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=12,
    ),
    st.sampled_from(["content-delta", "tool-call-start", "citation-start", "message-end"]),
)
def test_random_cohere_shaped_json_gives_only_stream_errors(payload: Any, kind: str) -> None:
    if isinstance(payload, dict):
        payload = {**payload, "type": kind}
    with contextlib.suppress(StreamError):
        decode(START, payload)


# --------------------------------------------------------------------------- renderer


def render(deltas: Sequence[Delta], **options: Any) -> list[SSEFrame]:
    r = CohereRenderer(**options)
    items: list[Wire] = []
    for d in deltas:
        items += r.feed(d)
    return only(SSEFrame, items + r.close())


def test_renderer_events() -> None:
    r = renderer("cohere", id="msg-1")
    assert r.wire == "sse"
    frames = render(
        [
            ReasoningDelta("plan"),
            TextDelta("Hi"),
            TextDelta("!"),
            ToolCallDelta(0, '{"a":', "c1", "f"),
            ToolCallDelta(0, "1}"),
            Finish("tool_calls"),
            Usage(5, 3, 8, cached_tokens=2),
        ],
        id="msg-1",
    )
    assert [f.event for f in frames] == [
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "content-start",
        "content-delta",
        "content-delta",
        "content-end",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "message-end",
    ]
    data = [json.loads(f.data) for f in frames]
    assert all(d["type"] == f.event for d, f in zip(data, frames, strict=True))
    assert data[0]["id"] == "msg-1"
    assert data[1]["delta"]["message"]["content"] == {"type": "thinking", "thinking": ""}
    assert data[4]["index"] == 1
    assert data[8]["delta"]["message"]["tool_calls"] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": '{"a":'},
    }
    assert data[-1]["delta"] == {
        "finish_reason": "TOOL_CALL",
        "usage": {
            "billed_units": {"input_tokens": 5, "output_tokens": 3},
            "tokens": {"input_tokens": 5, "output_tokens": 3},
            "cached_tokens": 2,
        },
    }


@pytest.mark.parametrize(
    ("finish", "word"),
    [
        (None, "COMPLETE"),
        (Finish("stop"), "COMPLETE"),
        (Finish("stop", raw="STOP_SEQUENCE"), "STOP_SEQUENCE"),
        (Finish("stop", raw="stop"), "COMPLETE"),
        (Finish("length"), "MAX_TOKENS"),
        (Finish("TIMEOUT", raw="TIMEOUT"), "TIMEOUT"),
        (Finish("content_filter"), "content_filter"),
    ],
)
def test_renderer_finish_words(finish: Finish | None, word: str) -> None:
    frames = render([TextDelta("a")] + ([finish] if finish else []))
    assert json.loads(frames[-1].data)["delta"]["finish_reason"] == word


def test_renderer_drops_other_choices() -> None:
    frames = render([TextDelta("a"), TextDelta("b", choice=1), Finish("stop", choice=1)])
    (message,) = run([wire_bytes(frames)])
    assert (message.content, message.finish_reason) == ("a", "stop")


ZEROS = {"input_tokens": 0, "output_tokens": 0}


@pytest.mark.parametrize(
    ("given", "usage"),
    [
        ([], {"billed_units": ZEROS, "tokens": ZEROS}),
        (
            [Usage(5, 3, 8)],
            {
                "billed_units": {"input_tokens": 5, "output_tokens": 3},
                "tokens": {"input_tokens": 5, "output_tokens": 3},
            },
        ),
    ],
    ids=["usage-unknown", "usage-known"],
)
def test_renderer_error(given: list[Delta], usage: dict[str, Any]) -> None:
    # Cohere's message-end always has usage; the AI SDK's cohere provider refuses one without.
    r = CohereRenderer()
    items = r.feed(TextDelta("a"))
    for d in given:
        items += r.feed(d)
    frames = only(SSEFrame, items + r.error(ProviderError("overloaded")))
    assert json.loads(frames[-1].data)["delta"] == {
        "finish_reason": "ERROR",
        "error": "overloaded",
        "usage": usage,
    }
    with pytest.raises(ProviderError, match="overloaded"):
        run([wire_bytes(frames)])
    with pytest.raises(RuntimeError):
        r.close()


def test_renderer_usage_unknown_is_zeros_and_reads_back_so() -> None:
    frames = render([TextDelta("a"), Finish("stop")])
    assert json.loads(frames[-1].data)["delta"]["usage"] == {"billed_units": ZEROS, "tokens": ZEROS}
    (message,) = run([wire_bytes(frames)])
    assert message.usage == Usage(0, 0, 0)


def _call(index: int, arguments: str) -> ToolCallDelta:
    return ToolCallDelta(index, arguments, f"c{index}", f"f{index}")


@pytest.mark.parametrize(
    "deltas",
    [
        # Side by side, as OpenAI-compatible servers may stream them.
        [_call(0, '{"a":'), _call(1, '{"b":'), ToolCallDelta(0, "1}"), ToolCallDelta(1, "2}")],
        [_call(0, ""), _call(1, ""), _call(2, "{}"), ToolCallDelta(1, "{}"), ToolCallDelta(0, "")],
        # One after the other (nothing is held).
        [_call(0, '{"a":'), ToolCallDelta(0, "1}"), _call(1, '{"b":2}')],
        # Text ends the run of calls; a later call starts a new one.
        [_call(0, "{}"), _call(1, "{"), TextDelta("t"), _call(2, "{}"), ToolCallDelta(2, "")],
    ],
    ids=["two-interleaved", "three-interleaved", "sequential", "text-between"],
)
def test_renderer_writes_each_call_contiguously(deltas: list[Delta]) -> None:
    frames = render([TextDelta("Hi"), *deltas, Finish("tool_calls")])
    seen: list[tuple[str, int]] = [
        (f.event, json.loads(f.data)["index"]) for f in frames if f.event.startswith("tool-call")
    ]
    # A strict reader keeps one pending call: start, its deltas, its end, then the next.
    open_call: int | None = None
    for event, index in seen:
        if event == "tool-call-start":
            assert open_call is None, seen
            open_call = index
        else:
            assert open_call == index, seen
            if event == "tool-call-end":
                open_call = None
    assert open_call is None
    assert [i for e, i in seen if e == "tool-call-start"] == sorted({i for _, i in seen})
    (message,) = run([wire_bytes(frames)])
    (want,) = accumulate([TextDelta("Hi"), *deltas, Finish("tool_calls")])
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (c.id, c.name, c.arguments) for c in want.tool_calls
    ]


def test_renderer_holds_calls_up_to_its_limit() -> None:
    r = CohereRenderer(held_limit=8)
    r.feed(_call(0, "{"))
    r.feed(_call(1, '{"a":'))  # held: 5 characters
    with pytest.raises(ValueError, match="hold 9 characters of arguments, over held_limit=8"):
        r.feed(ToolCallDelta(1, "1234"))
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="held_limit must be a positive int"):
            CohereRenderer(held_limit=bad)  # type: ignore[arg-type]


def test_renderer_refuses_a_fragment_of_an_ended_call() -> None:
    r = CohereRenderer()
    r.feed(_call(0, "{"))
    r.feed(TextDelta("between"))
    with pytest.raises(ValueError, match="tool call 0 after its tool-call-end"):
        r.feed(ToolCallDelta(0, "}"))


def test_http_error_in_cohere_s_shape() -> None:
    content_type, body = http_error(429, "You are using a Trial key")
    assert content_type == "application/json"
    assert json.loads(body) == {"message": "You are using a Trial key"}
    assert provider_message(body) == "You are using a Trial key"
    _, body = http_error(400, "bad", type="invalid_request", code=17)
    assert json.loads(body) == {"message": "bad", "type": "invalid_request", "code": 17}


@pytest.mark.parametrize("name", sorted(RECORDINGS))
def test_recordings_decode_render_decode(name: str) -> None:
    (original,) = run([(DATA / name).read_bytes()])
    frames = render(deltas_of([(DATA / name).read_bytes()]))
    (again,) = run([wire_bytes(frames)])
    assert again == original
    assert again.finish_raw == original.finish_raw
    assert [c.arguments for c in again.tool_calls] == [c.arguments for c in original.tool_calls]


# --------------------------------------------------------------------------- round trip

TEXT = st.text(min_size=1, max_size=12)


def _interleaved(draw: st.DrawFn, calls: list[list[Delta]]) -> list[Delta]:
    """The calls' fragments in a drawn order that keeps each call's own order (starts first)."""
    out: list[Delta] = []
    left = [list(c) for c in calls]
    started = 0
    while any(left):
        # A call's first fragment (its start) comes after the earlier calls' starts.
        ready = [n for n, c in enumerate(left) if c and n <= started]
        n = draw(st.sampled_from(ready))
        out.append(left[n].pop(0))
        started = max(started, n + 1)
    return out


@st.composite
def scripts(draw: st.DrawFn) -> list[Delta]:
    """A scripted answer of what Cohere can express: one choice, no server tools."""
    out: list[Delta] = []
    calls = 0
    text = ""
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["text", "text", "reasoning", "call"]))
        if kind == "text":
            piece = draw(TEXT)
            text += piece
            out.append(TextDelta(piece))
        elif kind == "reasoning":
            out.append(ReasoningDelta(draw(TEXT)))
        else:
            # Cohere passes argument fragments through as they are: any text round-trips.
            # Calls of one run may stream side by side (fragments interleaved).
            run_of: list[list[Delta]] = []
            for _ in range(draw(st.integers(1, 3))):
                pieces = draw(st.lists(st.text(max_size=6), min_size=1, max_size=3))
                first = ToolCallDelta(calls, pieces[0], f"call_{calls}", draw(TEXT))
                run_of.append([first, *(ToolCallDelta(calls, p) for p in pieces[1:])])
                calls += 1
            out += _interleaved(draw, run_of)
    for _ in range(draw(st.integers(0, 2))):
        a = draw(st.integers(0, len(text)))
        b = draw(st.integers(a, len(text)))
        kind = draw(st.sampled_from(["document", "tool", "citation"]))
        url = None if kind == "citation" else draw(st.none() | st.just("https://d"))
        title = None if kind == "citation" else draw(st.none() | TEXT)
        out.append(Citation(kind, url, title, draw(st.none() | st.just(text[a:b])), a, b))
    reason = draw(st.sampled_from(["stop", "length", "TIMEOUT", "content_filter"]))
    out.append(Finish("tool_calls" if reason == "stop" and calls else reason))
    if draw(st.booleans()):
        prompt, completion = draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))
        out.append(
            Usage(
                prompt,
                completion,
                prompt + completion,
                None,
                draw(st.none() | st.integers(0, prompt)),
            )
        )
    return out


def accumulate(deltas: Sequence[Delta]) -> list[Message]:
    out: list[Message] = []
    reactivex.from_iterable(deltas).pipe(rs.accumulate_message()).subscribe(out.append)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), newline=st.sampled_from(["\n", "\r\n"]))
def test_round_trip_any_script_any_chunking(data: st.DataObject, newline: str) -> None:
    script = data.draw(scripts())
    raw = wire_bytes(render(script), newline)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(raw) - 1), max_size=8)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    got = run(pieces, data.draw(st.sampled_from(["cohere", "auto"])))
    (want,) = accumulate(script)
    if want.usage is None:  # Cohere always sends usage: zeros when none was given
        want = dataclasses.replace(want, usage=Usage(0, 0, 0))
    assert got == [want]
    assert got[0].citations == want.citations


def test_registry_builds_the_cohere_machines() -> None:
    assert isinstance(decoder("cohere"), CohereDecoder)
    assert isinstance(renderer("cohere"), CohereRenderer)


# --------------------------------------------------------------------------- operators downstream


def test_partial_tool_call_snapshots_on_a_cohere_stream() -> None:
    calls: list[Any] = []
    reactivex.from_iterable([(DATA / "v2-tool-call.sse").read_bytes()]).pipe(
        rs.lines(), rs.sse_frames(), rs.decode(), rs.accumulate_tool_calls(partial=True)
    ).subscribe(calls.append)
    final = [(c.index, c.id, c.parse_arguments()) for c in calls if c.complete]
    assert final == [
        (0, "weather_e8p4pn45zt0t", {"location": "San Francisco"}),
        (1, "cityAttractions_pyxssbwnq9fq", {"city": "San Francisco"}),
    ]
    partial = [c.partial for c in calls if not c.complete and c.index == 0]
    assert {"location": "San Francisco"} in partial
    assert partial[-1] == {"location": "San Francisco"}
