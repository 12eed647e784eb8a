"""The versioned JSON encoding of items: each comes back equal, fields outside equality too."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given

import rxstream as rs
from rxstream.core import wire
from tests.support.codec_strategies import every_field, items


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
