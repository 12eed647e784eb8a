"""Bedrock's typed decoding (`rxstream._typed.bedrock`) gives what the general path gives.

Table cases of each content delta the types know (text, a tool call's input,
reasoning) and of the ones they leave to the general path, the recording
and rendered streams whole, cut at random and damaged, payloads made up by
hypothesis (wrong types, nulls, padding, keys twice, bytes that are no UTF-8,
fields the types do not declare), and the wrong-type mutations of
`test_every_dialect_strict_shapes`: both paths must agree on the items, the
error (class and message) and the end.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core.dialects import renderer, wire_bytes
from rxstream.core.dialects.bedrock import BedrockDecoder
from rxstream.core.eventstream import encode_message
from rxstream.models import EventStreamMessage
from tests.support.fast import way
from tests.support.mutations import (
    MUTATIONS,
    WRONG,
    mutated,
    text_of,
    with_text,
)
from tests.support.pipelines import pipelines
from tests.support.typed_gemini_ollama_bedrock import (
    assert_both_alike,
    assert_decoded_alike,
    cut,
    damaged,
    recordings,
)

pytest.importorskip("msgspec")

FILES = recordings("bedrock")
PIPELINES = pipelines("bedrock")


def event(name: str, payload: str | bytes, kind: str = "event") -> EventStreamMessage:
    data = payload.encode() if isinstance(payload, str) else payload
    headers: dict[str, str | bytes | int | bool] = {":event-type": name, ":message-type": kind}
    return EventStreamMessage(headers, data)


def body(*events: EventStreamMessage) -> bytes:
    return b"".join(encode_message(e.headers, e.payload) for e in events)


def assert_all_alike(*events: EventStreamMessage) -> None:
    for name in PIPELINES:
        assert_both_alike([body(*events)], PIPELINES[name])
    assert_decoded_alike("bedrock", list(events))


START = event("messageStart", '{"role": "assistant", "p": "abc"}')
STOP = event("messageStop", '{"stopReason": "end_turn"}')
META = event("metadata", '{"usage": {"inputTokens": 3, "outputTokens": 2}, "metrics": {}}')


def text(value: str, index: int = 0) -> EventStreamMessage:
    return event(
        "contentBlockDelta", json.dumps({"contentBlockIndex": index, "delta": {"text": value}})
    )


TOOL_START = event(
    "contentBlockStart",
    '{"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}}',
)
SERVER_START = event(
    "contentBlockStart",
    '{"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "s1", "name": "web",'
    ' "type": "server_tool_use"}}}',
)


def tool_input(fragment: str, index: int = 1) -> EventStreamMessage:
    payload = {"contentBlockIndex": index, "delta": {"toolUse": {"input": fragment}}}
    return event("contentBlockDelta", json.dumps(payload))


def reasoning(index: int = 0, **members: Any) -> EventStreamMessage:
    payload = {"contentBlockIndex": index, "delta": {"reasoningContent": members}}
    return event("contentBlockDelta", json.dumps(payload))


def block_stop(index: int) -> EventStreamMessage:
    return event("contentBlockStop", json.dumps({"contentBlockIndex": index}))


#: Streams whose content deltas the types know: each must take the typed path.
TYPED_CASES = {
    "text": [START, text("Hi"), text(""), text(" there"), block_stop(0), STOP, META],
    "padded text": [
        START,
        event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"a"},"p":"xyz"}'),
        event("contentBlockDelta", '{"p":"","delta":{"text":"b"},"contentBlockIndex":0}'),
        STOP,
    ],
    "tool call": [
        START,
        text("Let me look."),
        TOOL_START,
        tool_input('{"a":'),
        tool_input(""),
        tool_input("1}"),
        block_stop(1),
        STOP,
        META,
    ],
    "server tool": [START, SERVER_START, tool_input('{"q": "x"}'), block_stop(1), STOP],
    "reasoning": [
        START,
        reasoning(text="Hm"),
        reasoning(text=""),
        reasoning(signature="c2ln"),
        reasoning(text=None, signature=None, redactedContent="cmVk"),
        block_stop(0),
        text("Answer", 1),
        STOP,
        META,
    ],
    "escapes": [START, text("caf\u00e9 \U0001f600 \n \\ \u2028"), STOP],
    "reasoning never stopped": [START, reasoning(text="a", signature="s"), STOP],
    "empty signature and redacted content": [
        START,
        reasoning(text="", signature="", redactedContent=""),
        block_stop(0),
        STOP,
    ],
}

#: Streams the types leave (in part) to the general path.
GENERAL_CASES = {
    "null text": [
        START,
        event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":null}}'),
    ],
    "int text": [START, event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":1}}')],
    "bool index": [
        START,
        event("contentBlockDelta", '{"contentBlockIndex":true,"delta":{"text":"a"}}'),
    ],
    "float index": [
        START,
        event("contentBlockDelta", '{"contentBlockIndex":0.0,"delta":{"text":"a"}}'),
    ],
    "big index": [
        START,
        event(
            "contentBlockDelta", '{"contentBlockIndex":99999999999999999999,"delta":{"text":"a"}}'
        ),
        STOP,
    ],
    "no index": [START, event("contentBlockDelta", '{"delta":{"text":"a"}}')],
    "unknown member": [
        START,
        event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"a"},"x":1}'),
        STOP,
    ],
    "text and citation": [
        START,
        event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"a","citation":{}}}'),
        STOP,
    ],
    "citation": [
        START,
        event(
            "contentBlockDelta",
            '{"contentBlockIndex":0,"delta":{"citation":{"title":"t",'
            '"location":{"web":{"url":"u"}},"sourceContent":[{"text":"s"}]}}}',
        ),
        STOP,
    ],
    "empty delta": [START, event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{}}'), STOP],
    "tool input without its start": [START, tool_input("{}")],
    "tool input in a reasoning block": [START, reasoning(1, text="a"), tool_input("{}")],
    "reasoning in a tool block": [START, TOOL_START, reasoning(1, text="a")],
    "reasoning with a new member": [START, reasoning(text="a", other=1), STOP],
    "reasoning text null": [START, reasoning(text=None), text("a"), STOP],
    "text after messageStop": [START, text("a"), STOP, text("b")],
    "invalid UTF-8": [
        START,
        text("a"),
        event("contentBlockDelta", b'{"contentBlockIndex":0,"delta":{"text":"\xff"}}'),
        STOP,
    ],
    "NaN padding": [
        START,
        text("a"),
        event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"b"},"p":NaN}'),
        STOP,
    ],
    "duplicate keys": [
        START,
        text("a"),
        event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"b","text":2}}'),
        event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":2,"text":"c"}}'),
        STOP,
    ],
    "not JSON": [START, text("a"), event("contentBlockDelta", b"{"), STOP],
    "not an object": [START, text("a"), event("contentBlockDelta", b"[]"), STOP],
    "exception": [START, text("a"), event("x", '{"message":"slow"}', kind="exception")],
    "message type of the wrong kind": [START, text("a"), event("contentBlockDelta", "{}", "ev")],
}


@pytest.mark.parametrize("events", TYPED_CASES.values(), ids=list(TYPED_CASES))
def test_typed_deltas_take_the_typed_path_and_agree(
    events: list[EventStreamMessage], monkeypatch: pytest.MonkeyPatch
) -> None:
    general: list[Any] = []
    original = BedrockDecoder._block_delta

    def counted(self: BedrockDecoder, data: Any, item: EventStreamMessage) -> Any:
        general.append(data)
        return original(self, data, item)

    monkeypatch.setattr(BedrockDecoder, "_block_delta", counted)
    with way("typed"):
        decoder = BedrockDecoder()
    out: list[Any] = []
    decoder.feed_all(events, out)
    assert general == []
    with way("stdlib"):
        decoder = BedrockDecoder()
    decoder.feed_all(events, [])
    assert general  # the general path reads the same deltas
    assert_all_alike(*events)


@pytest.mark.parametrize("events", GENERAL_CASES.values(), ids=list(GENERAL_CASES))
def test_other_events_agree_too(events: list[EventStreamMessage]) -> None:
    assert_all_alike(*events)


def test_the_typed_path_is_off_without_msgspec_loads() -> None:
    with way("stdlib"):
        assert BedrockDecoder()._read is None
    with way("typed"):
        assert BedrockDecoder()._read is not None


# --------------------------------------------------------------------------- streams


def rendered(*deltas: rs.Delta) -> bytes:
    made = renderer("bedrock")
    items: list[Any] = []
    for delta in deltas:
        items += made.feed(delta)
    items += made.close()
    return wire_bytes(made, items)


STREAMS = {path.name: path.read_bytes() for path in FILES} | {
    "rendered text": rendered(rs.TextDelta("Hello"), rs.TextDelta(" you"), rs.Finish("stop")),
    "rendered tools and reasoning": rendered(
        rs.ReasoningDelta("think"),
        rs.ReasoningState("thinking", "c2ln", "think"),
        rs.TextDelta("ok"),
        rs.ToolCallDelta(0, '{"a":', "t1", "f"),
        rs.ToolCallDelta(0, "1}"),
        rs.Finish("tool_calls"),
        rs.Usage(3, 4, 7),
    ),
}


def test_there_is_a_bedrock_recording() -> None:
    assert FILES


@pytest.mark.parametrize("stream", list(STREAMS))
@pytest.mark.parametrize("name", list(PIPELINES))
def test_whole_streams_agree(stream: str, name: str) -> None:
    assert_both_alike([STREAMS[stream]], PIPELINES[name])


@pytest.mark.parametrize("stream", list(STREAMS))
@settings(max_examples=25, deadline=None)
@given(
    points=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=12),
    damage=st.sampled_from(["none", "truncate", "flip"]),
    where=st.integers(min_value=0, max_value=1 << 20),
    bit=st.integers(min_value=0, max_value=7),
    name=st.sampled_from(list(PIPELINES)),
)
def test_cut_and_damaged_streams_agree(
    stream: str, points: list[int], damage: str, where: int, bit: int, name: str
) -> None:
    data = damaged(STREAMS[stream], damage, where, bit)
    assert_both_alike(cut(data, points), PIPELINES[name])


# --------------------------------------------------------------------------- made-up events

ODD: st.SearchStrategy[Any] = st.sampled_from(
    [None, True, False, 0, 1, -1, 1.0, -0.0, 2**64, "", "x", [], {}, {"text": "a"}]
)
TEXTS = st.one_of(st.sampled_from(["a", "bc", "", "", "\ud800", "é"]), st.text(max_size=4))
OTHER = st.sampled_from([START, STOP, META, TOOL_START, SERVER_START, block_stop(0), block_stop(1)])
#: Where a made-up delta may get an odd value (a path into the payload).
SPOTS = [
    ("contentBlockIndex",),
    ("delta",),
    ("delta", "text"),
    ("delta", "toolUse"),
    ("delta", "toolUse", "input"),
    ("delta", "reasoningContent"),
    ("delta", "reasoningContent", "text"),
    ("delta", "reasoningContent", "signature"),
    ("p",),
]


@st.composite
def events(draw: st.DrawFn) -> EventStreamMessage:
    """A content delta as Bedrock sends it (or another event); one in three damaged."""
    if not draw(st.integers(0, 3)):
        return draw(OTHER)
    kind = draw(st.sampled_from(["text"] * 3 + ["tool", "reasoning", "both"]))
    delta: dict[str, Any]
    if kind == "text":
        delta = {"text": draw(TEXTS)}
    elif kind == "tool":
        delta = {"toolUse": {"input": draw(TEXTS)}}
    elif kind == "both":
        delta = {"text": draw(TEXTS), "toolUse": {"input": "x"}}
    else:
        members = {"text": draw(TEXTS), "signature": "c2ln", "redactedContent": "cmVk"}
        delta = {"reasoningContent": draw(st.sampled_from([members, {"text": "a"}, {}]))}
    index = 1 if kind == "tool" else draw(st.sampled_from([0, 1]))
    payload: dict[str, Any] = {"contentBlockIndex": index, "delta": delta}
    if draw(st.booleans()):
        payload["p"] = "abcdef"
    how = draw(st.sampled_from(["plain"] * 6 + ["odd", "twice", "cut", "bytes", "extra"]))
    if how == "odd":
        *parents, key = draw(st.sampled_from(SPOTS))
        at: Any = payload
        try:
            for parent in parents:
                at = at[parent]
            at[key] = draw(ODD)
        except (KeyError, TypeError):
            pass  # that spot is not in this payload
    data = json.dumps(payload, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    if how == "twice":
        key = draw(st.sampled_from(sorted(payload)))
        data = b"{" + f"{json.dumps(key)}: {json.dumps(draw(ODD))}, ".encode() + data[1:]
    elif how == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "bytes":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])) + data[at:]
    elif how == "extra":
        data = b'{"x": 1, ' + data[1:]
    return event("contentBlockDelta", data)


ENDINGS = st.sampled_from([[], [STOP], [block_stop(0), block_stop(1), STOP, META]])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([[], [TOOL_START], [SERVER_START]]), st.lists(events(), max_size=8), ENDINGS)
def test_made_up_events_agree(
    opening: list[EventStreamMessage],
    made: list[EventStreamMessage],
    ending: list[EventStreamMessage],
) -> None:
    assert_decoded_alike("bedrock", [START, text("a"), *opening, *made, *ending])


# --------------------------------------------------------------------------- wrong types

BEDROCK_MUTATIONS = [m for m in MUTATIONS if m[1] == "bedrock"]


def test_there_are_bedrock_mutations() -> None:
    assert len(BEDROCK_MUTATIONS) > 10


@pytest.mark.parametrize("new", WRONG, ids=repr)
def test_a_wrong_type_anywhere_is_reported_alike(new: Any) -> None:
    for _, _, items, n, path in BEDROCK_MUTATIONS:
        value = json.loads(text_of(items[n]))
        stream = list(items)
        stream[n] = with_text(items[n], json.dumps(mutated(value, path, new)))
        assert_decoded_alike("bedrock", stream)
        assert_both_alike([body(*stream)], PIPELINES["named-message"])


def test_the_rendered_stream_has_tool_input_and_reasoning() -> None:
    data = STREAMS["rendered tools and reasoning"]
    assert b'"toolUse"' in data
    assert b'"reasoningContent"' in data
