"""rxstream's own event format, written: items as JSON, as SSE events, as Redis entry fields.

Input: any item of a pipeline (`SSEFrame`, `ChatChunk`, `EventStreamMessage`,
every delta, `ToolCall`, `Message`, `TokenCount`, `Partial`, `JSONPatch`, a run's
items: `StepStart`, `StepEnd`, `ToolResult`, `ApprovalRequest`, `ApprovalResponse`,
`RunEnd`) or a
`StreamError`.
Output: the item's tagged JSON object (`encode`), the `(event, data)` pair of
the SSE event that sends it (`item_event`), or the `data` of the Redis entry
that stores it (`item_data`). The format is described in
docs/concepts/wire-format.md; `rxstream.core.wire.decoding` reads it back.

Invariants: `decode(encode(x)) == x` for every item (fields outside equality,
such as `Finish.raw`, included); `encode` output is JSON-serialisable; the
JSON text written is compact (no spaces) and keeps non-ASCII characters as
they are (an SSE event keeps a lone surrogate for the SSE encoder to escape;
Redis data with one is written all-ASCII).
Pure: no I/O; msgspec, when installed, only speeds up `item_data`.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import Any

from ...errors import StreamError, excerpt
from ...models import (
    JSON,
    ApprovalRequest,
    ApprovalResponse,
    ChatChunk,
    Citation,
    EmptyCitations,
    EventStreamMessage,
    Finish,
    JSONObject,
    JSONPatch,
    Message,
    Metadata,
    Partial,
    ReasoningBlock,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
    Reset,
    RunEnd,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    StepEnd,
    StepStart,
    TextBlock,
    TextBlockStart,
    TextDelta,
    TokenCount,
    ToolCall,
    ToolCallDelta,
    ToolResult,
    Usage,
)

__all__ = [
    "DONE",
    "ENTRY_KINDS",
    "FORMAT_VERSION",
    "RXSTREAM",
    "TYPES",
    "done_event",
    "encodable",
    "encode",
    "encode_error",
    "entry_fields",
    "error_data",
    "error_event",
    "item_data",
    "item_event",
    "reported",
    "start_data",
    "text_event",
]

#: The version of the format this rxstream writes and reads.
FORMAT_VERSION = 1

#: The format's name (`rs.decode("rxstream")`, `rs.to_sse(dialect="rxstream")`).
RXSTREAM = "rxstream"

#: The `"type"` (and SSE event name) that ends a stream completed.
DONE = "done"

#: The `kind` field of a Redis entry: `start`, `item`, `beat`, `end`, `error`.
ENTRY_KINDS = ("start", "item", "beat", "end", "error")

TAGS: dict[type, str] = {
    TextDelta: "text",
    ReasoningDelta: "reasoning",
    RefusalDelta: "refusal",
    ToolCallDelta: "tool_call",
    Finish: "finish",
    Usage: "usage",
    Citation: "citation",
    EmptyCitations: "empty_citations",
    TextBlockStart: "text_block_start",
    ServerToolCall: "server_tool_call",
    ServerToolResult: "server_tool_result",
    ReasoningState: "reasoning_state",
    Metadata: "metadata",
    Reset: "reset",
    SSEFrame: "frame",
    ChatChunk: "chunk",
    EventStreamMessage: "eventstream_message",
    ToolCall: "call",
    Message: "message",
    TokenCount: "token_count",
    StepStart: "step_start",
    StepEnd: "step_end",
    ToolResult: "tool_result",
    ApprovalRequest: "approval_request",
    ApprovalResponse: "approval_response",
    RunEnd: "run_end",
    TextBlock: "text_block",
    ReasoningBlock: "reasoning_block",
    Partial: "partial",
    JSONPatch: "patch",
}

#: The item types of this version (the `"type"` of every object but an error's).
TYPES = frozenset(TAGS.values())

# Fields written only when they hold something: `Message.blocks` (the turn's arrival
# order, which `rs.request` sends back as it came) is empty for a message built by hand,
# and a message written without it reads as before.
_WHEN_SET = frozenset({(Message, "blocks")})
# Fields written only when not None: a text block's `citations` (only a block that came
# with a citations list has one, `[]` when the list stayed empty).
_WHEN_GIVEN = frozenset({(TextBlock, "citations")})

# Fields holding a conversation: `Message`s (tagged objects) among the caller's plain message
# dicts, which go as `{"$json": <dict>}` so that no dict is ever read back as an item.
MIXED = frozenset({(RunEnd, "messages")})

FIELDS = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in TAGS}


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
    tag = TAGS.get(type(item))
    if tag is None:
        raise TypeError(f"rxstream cannot encode a {type(item).__name__} item")
    out: JSONObject = {"type": tag}
    for name in FIELDS[type(item)]:
        value = getattr(item, name)
        if not value and (type(item), name) in _WHEN_SET:
            continue
        if value is None and (type(item), name) in _WHEN_GIVEN:
            continue
        if (type(item), name) in MIXED:
            out[name] = [encode(v) if type(v) in TAGS else {"$json": _value(v)} for v in value]
        else:
            out[name] = _value(value)
    return out


def encodable(item: object) -> bool:
    """Whether `item` is of a type `encode` takes (a value inside it may still not be JSON)."""
    return type(item) in TAGS


def _value(value: Any) -> JSON:
    if type(value) in TAGS:
        return encode(value)
    if isinstance(value, tuple | list):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value(v) for k, v in value.items()}
    if isinstance(value, bytes | bytearray):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def encode_error(error: StreamError) -> JSONObject:
    """The JSON object for a `StreamError`: its class, its message and its public attributes.

    >>> encode_error(StreamError("Overloaded"))["message"]
    'Overloaded'
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


def _jsonable(value: object) -> bool:
    if value is None or isinstance(value, str | int | float | bool | bytes):
        return True
    if type(value) in TAGS:
        return True
    if isinstance(value, tuple | list):
        return all(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _jsonable(v) for k, v in value.items())
    return False


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def _utf8(obj: object) -> bytes:
    """Compact JSON as UTF-8, non-ASCII kept; with a lone surrogate (no UTF-8 form), all escaped."""
    text = _ENCODER.encode(obj)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(obj, separators=(",", ":")).encode()


# --------------------------------------------------------------------------- SSE events


def item_event(item: object) -> tuple[str, str]:
    """The `(event name, data)` of the SSE event that sends `item`: its type and its JSON.

    The data is compact JSON text with every character as it is, a lone
    surrogate included (the bytes' writer escapes it: it has no UTF-8 form).

    Raises:
        TypeError: not an item `encode` takes.

    >>> item_event(TextDelta("Hi"))
    ('text', '{"type":"text","text":"Hi","choice":0}')
    """
    obj = encode(item)
    # A lone surrogate stays in the text: the SSE encoder escapes it when it
    # makes the bytes, keeping every other character as it is.
    return str(obj["type"]), _ENCODER.encode(obj)


def text_event(delta: TextDelta) -> tuple[str, str]:
    """`item_event(delta)` for a `TextDelta`, of the first choice through a template.

    What `item_event` writes, without its layers (a server writes one per
    token): the text's JSON string between the two halves `item_event` wrote
    once around a mark, for a delta of choice 0 whose text is a `str`; any
    other through `item_event`.

    >>> text_event(TextDelta("Hi")) == item_event(TextDelta("Hi"))
    True
    """
    if delta.choice == 0 and type(delta.choice) is int and type(delta.text) is str:
        return _TEXT, f"{_TEXT_BEFORE}{encode_basestring(delta.text)}{_TEXT_AFTER}"
    return item_event(delta)


# A text no delta holds (NUL is escaped in JSON), where `text_event`'s template puts the text.
_MARK = "\x00rxstream-text\x00"
_TEXT, _TEXT_WRITTEN = item_event(TextDelta(_MARK))
_TEXT_BEFORE, _, _TEXT_AFTER = _TEXT_WRITTEN.partition(encode_basestring(_MARK))


def done_event() -> tuple[str, str]:
    """The `(event name, data)` of the event that ends a completed stream.

    >>> done_event()
    ('done', '{"type":"done","version":1}')
    """
    return DONE, _DONE_DATA


_DONE_DATA = _ENCODER.encode({"type": DONE, "version": FORMAT_VERSION})


def reported(error: BaseException) -> StreamError:
    """The `StreamError` that reports `error`: itself, or one naming only the class of another
    exception (a bug on the sender's side, whose message may hold anything)."""
    if isinstance(error, StreamError):
        return error
    return StreamError(f"internal error in the stream ({type(error).__name__})")


def error_event(error: BaseException) -> tuple[str, str]:
    """The `(event name, data)` of the event that ends a stream with `error` (see `reported`).

    >>> error_event(StreamError("cut"))
    ('error', '{"type":"error","error":"StreamError","message":"cut","attributes":{}}')
    """
    return "error", _ENCODER.encode(encode_error(reported(error)))


# --------------------------------------------------------------------------- Redis entries


def entry_fields(kind: str, number: int, data: bytes | None = None) -> tuple[Any, ...]:
    """The fields of a Redis Stream entry, as the name/value sequence `XADD` takes.

    >>> entry_fields("end", 3)
    (b'v', b'1', b'n', 3, b'kind', b'end')
    """
    if kind not in ENTRY_KINDS:
        raise ValueError(f"unknown entry kind {kind!r}; the kinds are {ENTRY_KINDS!r}")
    fields = (b"v", _VERSION, b"n", number, b"kind", kind.encode())
    return fields if data is None else (*fields, b"data", data)


_VERSION = str(FORMAT_VERSION).encode()


def start_data(heartbeat: float, maxlen: int | None) -> bytes:
    """The `data` of the `start` entry.

    >>> start_data(5.0, None)
    b'{"heartbeat":5.0,"maxlen":null}'
    """
    return _utf8({"heartbeat": heartbeat, "maxlen": maxlen})


@functools.cache
def _fast_encoder() -> Callable[[object], bytes] | None:
    """msgspec's JSON encoder (the optional `fast` extra), loaded on first use; None without it."""
    try:
        import msgspec
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    encode: Callable[[object], bytes] = msgspec.json.Encoder().encode
    return encode


# msgspec writes the same JSON ten times faster, but not for everything (a NaN
# becomes null, a lone surrogate fails): it is used only for the deltas whose
# fields are text, ints and None, the bulk of a stream. It is loaded on first
# use, so importing the core loads no optional package.
_PLAIN = frozenset({TextDelta, ReasoningDelta, RefusalDelta, ToolCallDelta})


def item_data(item: object) -> bytes:
    """The `data` of an `item` entry: the item's `encode` JSON, UTF-8.

    Raises:
        TypeError: not an item `encode` takes (e.g. a raw `str` line).
    """
    obj = encode(item)
    if type(item) in _PLAIN:
        fast = _fast_encoder()
        if fast is not None:
            try:
                return fast(obj)
            except (TypeError, ValueError, UnicodeEncodeError):
                pass
    return _utf8(obj)


def error_data(error: BaseException) -> bytes:
    """The `data` of an `error` entry; an error outside the `StreamError` tree is stored as one."""
    if not isinstance(error, StreamError):
        error = StreamError(f"{type(error).__name__}: {excerpt(str(error))}")
    return _utf8(encode_error(error))
