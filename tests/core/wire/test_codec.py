"""The versioned JSON encoding of items: each comes back equal, fields outside equality too."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core import wire

text = st.text(max_size=20)
small = st.integers(min_value=0, max_value=10**6)
opt_text = st.none() | text
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(text, json_values, max_size=3)

usage = st.builds(
    rs.Usage,
    small,
    small,
    small,
    st.none() | small,
    st.none() | small,
    st.just(0),
    st.none() | json_objects,
)
calls = st.builds(rs.ToolCall, small, opt_text, opt_text, text, small, st.booleans(), json_values)
citations = st.builds(
    rs.Citation,
    text,
    opt_text,
    opt_text,
    opt_text,
    st.none() | small,
    st.none() | small,
    small,
    st.none() | json_objects,
    st.booleans(),
)
server_tools = st.builds(rs.ServerToolCall, opt_text, text, json_values, small) | st.builds(
    rs.ServerToolResult, opt_text, text, json_values, small, st.none() | json_objects
)
states = st.builds(rs.ReasoningState, text, text, text, opt_text, st.none() | small, small)
deltas = st.one_of(
    st.builds(rs.TextDelta, text, small),
    st.builds(rs.ReasoningDelta, text, small),
    st.builds(rs.RefusalDelta, text, small),
    st.builds(rs.ToolCallDelta, st.none() | small, text, opt_text, opt_text, small),
    st.builds(rs.Finish, text, small, opt_text),
    usage,
    citations,
    st.builds(rs.EmptyCitations, small, small, small, st.none() | json_objects),
    server_tools,
    states,
    st.builds(rs.Metadata, json_objects, small),
    st.builds(rs.Reset, small, text, small),
)
messages = st.builds(
    rs.Message,
    small,
    text,
    text,
    text,
    text,
    st.lists(calls, max_size=2).map(tuple),
    opt_text,
    st.none() | usage,
    opt_text,
    st.lists(citations, max_size=2).map(tuple),
    st.lists(server_tools, max_size=2).map(tuple),
    st.lists(states, max_size=2).map(tuple),
    json_objects,
    st.lists(
        st.builds(rs.TextBlock, text, st.none() | st.lists(citations, max_size=2).map(tuple))
        | st.builds(rs.ReasoningBlock, text, st.none() | states)
        | calls,
        max_size=3,
    ).map(tuple),
)
headers = st.dictionaries(
    text, st.one_of(text, st.binary(max_size=8), st.integers(), st.booleans()), max_size=3
)
items = st.one_of(
    deltas,
    messages,
    calls,
    st.builds(rs.SSEFrame, text, text, opt_text, st.none() | small),
    st.builds(rs.ChatChunk, json_objects),
    st.builds(rs.EventStreamMessage, headers, st.binary(max_size=16)),
    st.builds(
        rs.TokenCount,
        small,
        small,
        small,
        small,
        st.none() | usage,
        st.booleans(),
        small,
        st.booleans(),
        small,
    ),
)


def every_field(item: Any) -> dict[str, Any]:
    """All fields, those outside equality included (compared through their own fields)."""
    out = {}
    for f in dataclasses.fields(item):
        value = getattr(item, f.name)
        if dataclasses.is_dataclass(value):
            value = every_field(value)
        elif isinstance(value, tuple):
            value = [every_field(v) if dataclasses.is_dataclass(v) else v for v in value]
        out[f.name] = value
    return out


@given(items)
def test_every_item_comes_back_equal(item: Any) -> None:
    obj = json.loads(json.dumps(wire.encode(item)))
    back = wire.decode(obj)
    assert type(back) is type(item)
    assert back == item
    assert every_field(back) == every_field(item)


def test_provider_json_that_looks_like_an_item_stays_json() -> None:
    block = {"type": "text", "text": "Hi"}
    state = rs.ReasoningState("thinking", "sig", raw=block)
    assert wire.decode(wire.encode(state)).raw == block


@pytest.mark.parametrize(
    "error",
    [
        rs.ProviderError("Overloaded", type="overloaded_error", code=529, payload={"a": [1]}),
        rs.HTTPStatusError(429, body="slow", retry_after=2.0),
        rs.TruncatedStreamError("cut", unfinished=(0,)),
        rs.EmptyStreamError("nothing", status_code=200, content_type="text/event-stream"),
        rs.StreamTimeoutError("idle", 1.5),
    ],
    ids=lambda e: type(e).__name__,
)
def test_errors_come_back_as_their_class(error: rs.StreamError) -> None:
    back = wire.decode(json.loads(json.dumps(wire.encode(error))))
    assert type(back) is type(error)
    assert str(back) == str(error)
    assert vars(back) == json.loads(json.dumps(vars(error)))


@pytest.mark.parametrize(
    ("obj", "match"),
    [
        ({"text": "no type"}, "unknown item type"),
        ({"type": "telepathy"}, "unknown item type"),
        ({"type": "text", "text": "a", "colour": "red"}, "unknown field"),
        ({"type": "text"}, "cannot be built"),
        ({"type": "eventstream_message", "headers": {}, "payload": "notbytes"}, "bytes"),
    ],
)
def test_what_cannot_be_read_is_a_value_error(obj: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        wire.decode(obj)


def test_an_unknown_error_class_is_a_plain_stream_error() -> None:
    back = wire.decode({"type": "error", "error": "FutureError", "message": "m"})
    assert type(back) is rs.StreamError
    assert str(back) == "m"


def test_only_items_and_stream_errors_encode() -> None:
    with pytest.raises(TypeError):
        wire.encode(object())
    with pytest.raises(TypeError):
        wire.encode(ValueError("x"))


@pytest.mark.parametrize(
    ("old", "new", "names"),
    [
        pytest.param(
            "rxstream.core.codec",
            "rxstream.core.wire",
            ["FORMAT_VERSION", "TYPES", "decode", "decode_error", "encode", "encode_error"],
            id="codec",
        ),
        pytest.param(
            "rxstream.core.sse_encoder",
            "rxstream.core.dialects.sse_encoder",
            ["KEEPALIVE", "RXSTREAM", "SSE_FORMATS", "SSEEncoder"],
            id="sse_encoder",
        ),
    ],
)
def test_the_old_module_paths_warn_and_give_the_same_names(
    old: str, new: str, names: list[str]
) -> None:
    import importlib

    shim = importlib.import_module(old)  # importing alone does not warn: using a name does
    moved = importlib.import_module(new)
    for name in names:
        with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} is deprecated, use {new}\."):
            value = getattr(shim, name)
        expected = "SSE_DIALECTS" if name == "SSE_FORMATS" else name
        assert value is getattr(moved, expected), name
    with pytest.raises(AttributeError):
        _ = shim.nothing_of_the_kind
