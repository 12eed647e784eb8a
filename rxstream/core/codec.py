"""Items as JSON and back: the versioned encoding of everything a pipeline carries.

Input: any item of a pipeline (`SSEFrame`, `ChatChunk`, `EventStreamMessage`,
every delta, `ToolCall`, `Message`, `TokenCount`) or a `StreamError`.
Output: a JSON object tagged with its `"type"`, and back, equal to what went in.

This is rxstream's own event format: `to_sse(format="rxstream")` sends it to
browsers, and `to_redis_stream` stores it (with `FORMAT_VERSION` beside it),
so any operator can run on the far side of a process or a network boundary.

The format, version 1:

- every object has `"type"`: a delta's `DeltaType` value (`"text"`,
  `"reasoning"`, `"refusal"`, `"tool_call"`, `"finish"`, `"usage"`,
  `"citation"`, `"server_tool_call"`, `"server_tool_result"`,
  `"reasoning_state"`, `"metadata"`), or `"frame"`, `"chunk"`,
  `"eventstream_message"`, `"call"` (a complete `ToolCall`), `"message"`,
  `"token_count"`, `"error"`;
- the other keys are the item's fields by name (`{"type": "text", "text":
  "Hi", "choice": 0}`); nested items are tagged objects themselves (a
  `Message`'s `usage` and `tool_calls`); fields holding provider JSON
  (`raw`, `input`, `content`, `metadata`, a chunk's `raw`) are that JSON;
  bytes are `{"$bytes": "<base64>"}`;
- an error is `{"type": "error", "error": "<class name>", "message": "...",
  "attributes": {...its public attributes}}`; decoding gives the same class
  with the same message and attributes (a name unknown to this version gives
  a plain `StreamError`).

Invariants: `decode(encode(x)) == x` for every item (fields outside equality,
such as `Finish.raw`, included); `encode` output is JSON-serialisable; a
decoder of version 1 refuses objects it cannot read with `ValueError` naming
what arrived.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

from .. import errors as _errors
from ..errors import StreamError
from ..models import (
    JSON,
    ChatChunk,
    Citation,
    EventStreamMessage,
    Finish,
    JSONObject,
    Message,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    TextDelta,
    TokenCount,
    ToolCall,
    ToolCallDelta,
    Usage,
)

__all__ = ["FORMAT_VERSION", "TYPES", "decode", "decode_error", "encode", "encode_error"]

#: The version of the encoding `encode` writes and `decode` reads.
FORMAT_VERSION = 1

_TAGS: dict[type, str] = {
    TextDelta: "text",
    ReasoningDelta: "reasoning",
    RefusalDelta: "refusal",
    ToolCallDelta: "tool_call",
    Finish: "finish",
    Usage: "usage",
    Citation: "citation",
    ServerToolCall: "server_tool_call",
    ServerToolResult: "server_tool_result",
    ReasoningState: "reasoning_state",
    Metadata: "metadata",
    SSEFrame: "frame",
    ChatChunk: "chunk",
    EventStreamMessage: "eventstream_message",
    ToolCall: "call",
    Message: "message",
    TokenCount: "token_count",
}
_CLASSES = {tag: cls for cls, tag in _TAGS.items()}

#: The item types of this version (the `"type"` of every object but an error's).
TYPES = frozenset(_CLASSES)
_FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _TAGS}
# Fields holding items (decoded as items); every other field holds plain or
# provider JSON and is taken as it is, so a provider object that happens to
# have a "type" of "text" stays a dict.
_ITEM_FIELDS = {
    (Message, "tool_calls"),
    (Message, "usage"),
    (Message, "citations"),
    (Message, "server_tools"),
    (Message, "reasoning_state"),
    (TokenCount, "usage"),
}
# Fields holding a tuple (JSON has only lists).
_TUPLES = {
    (cls, f.name)
    for cls in _TAGS
    for f in dataclasses.fields(cls)
    if str(f.type).startswith("tuple")
}


def encode(item: object) -> JSONObject:
    """The tagged JSON object for a pipeline item.

    Raises:
        TypeError: `item` is not an item rxstream knows (see the module docstring).

    >>> encode(TextDelta("Hi"))
    {'type': 'text', 'text': 'Hi', 'choice': 0}
    """
    if isinstance(item, BaseException):
        if isinstance(item, StreamError):
            return encode_error(item)
        raise TypeError(f"only StreamErrors can be encoded, not {type(item).__name__}")
    tag = _TAGS.get(type(item))
    if tag is None:
        raise TypeError(f"rxstream cannot encode a {type(item).__name__} item")
    out: JSONObject = {"type": tag}
    for name in _FIELDS[type(item)]:
        out[name] = _value(getattr(item, name))
    return out


def _value(value: Any) -> JSON:
    if type(value) in _TAGS:
        return encode(value)
    if isinstance(value, tuple | list):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def decode(obj: JSONObject) -> Any:
    """The item a tagged JSON object stands for (an error object gives the exception).

    Raises:
        ValueError: not an object of this encoding (no or an unknown `"type"`,
            a missing or unknown field).

    >>> decode({"type": "finish", "reason": "stop", "choice": 0, "raw": "end_turn"}).raw
    'end_turn'
    """
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    tag = obj.get("type")
    if tag == "error":
        return decode_error(obj)
    cls = _CLASSES.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise ValueError(f"unknown item type {tag!r} (rxstream format {FORMAT_VERSION})")
    names = _FIELDS[cls]
    unknown = set(obj) - {"type", *names}
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)!r} for a {tag!r} item")
    kwargs = {}
    for name in names:
        if name not in obj:
            continue
        value = obj[name]
        if (cls, name) in _ITEM_FIELDS:
            value = _items(value)
        elif cls is EventStreamMessage:
            value = _bytes(value) if name == "payload" else _headers(value)
        if (cls, name) in _TUPLES and isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"a {tag!r} item that cannot be built: {exc}") from None


def _items(value: JSON) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    return None if value is None else decode(value)


def _bytes(value: JSON) -> bytes:
    if isinstance(value, dict) and isinstance(value.get("$bytes"), str):
        return base64.b64decode(value["$bytes"], validate=True)
    raise ValueError(f"expected {{'$bytes': <base64>}}, got {value!r:.80}")


def _headers(value: JSON) -> dict[str, str | bytes | int | bool]:
    if not isinstance(value, dict):
        raise ValueError(f"expected the headers object, got {value!r:.80}")
    return {k: _bytes(v) if isinstance(v, dict) else v for k, v in value.items()}


def encode_error(error: StreamError) -> JSONObject:
    """The JSON object for a `StreamError`: its class, its message and its public attributes.

    >>> encode_error(_errors.ProviderError("Overloaded", type="overloaded_error"))["error"]
    'ProviderError'
    """
    attributes = {
        name: _value(value) if _jsonable(value) else repr(value)
        for name, value in vars(error).items()
        if not name.startswith("_")
    }
    return {
        "type": "error",
        "error": type(error).__name__,
        "message": str(error),
        "attributes": attributes,
    }


def decode_error(obj: JSONObject) -> StreamError:
    """The `StreamError` an error object stands for (same class and attributes where known)."""
    name = obj.get("error")
    cls = getattr(_errors, name, None) if isinstance(name, str) else None
    if not (isinstance(cls, type) and issubclass(cls, StreamError)):
        cls = StreamError
    message = obj.get("message")
    error = cls.__new__(cls)
    StreamError.__init__(error, message if isinstance(message, str) else "")
    attributes = obj.get("attributes")
    if isinstance(attributes, dict):
        for key, value in attributes.items():
            setattr(error, key, value)
    return error


def _jsonable(value: object) -> bool:
    if value is None or isinstance(value, str | int | float | bool | bytes):
        return True
    if type(value) in _TAGS:
        return True
    if isinstance(value, tuple | list):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return False
