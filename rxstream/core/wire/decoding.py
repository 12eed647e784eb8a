"""rxstream's own event format, read: JSON, SSE events and Redis entry fields back to items.

Input: what `rxstream.core.wire.encoding` writes: a tagged JSON object, the
name and data of an SSE event, the fields of a Redis Stream entry.
Output: the item it stands for, equal to what was written (an error object
gives the `StreamError` back, same class and attributes).

What a reader of this version refuses, with a `ValueError` naming what
arrived (the callers turn it into their own `StreamError`): an object
without a known `"type"`, an unknown or missing field, a value that does not
build the item; an SSE event whose name is not its data's type, or whose
data is no JSON object; a `done` event whose version is no integer; a Redis
entry without `v`, `n` and `kind`, of another format version, of an unknown
kind, or whose `data` is no JSON. An item type or field of a newer writer
fails on its own, so a `done` event only checks that its version is an
integer. Pure: no I/O.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from ... import errors as _errors
from ...errors import StreamError, excerpt
from ...models import (
    JSON,
    EventStreamMessage,
    JSONObject,
    Message,
    ReasoningBlock,
    RunEnd,
    StepEnd,
    TextBlock,
    TokenCount,
)
from .encoding import DONE, ENTRY_KINDS, FIELDS, FORMAT_VERSION, MIXED, TAGS

__all__ = [
    "Done",
    "decode",
    "decode_error",
    "entry_kind",
    "entry_number",
    "read_event",
    "read_json",
]

_CLASSES = {tag: cls for cls, tag in TAGS.items()}
# Fields holding items (decoded as items); every other field holds plain or
# provider JSON and is taken as it is, so a provider object that happens to
# have a "type" of "text" stays a dict.
_ITEM_FIELDS = {
    (Message, "tool_calls"),
    (Message, "usage"),
    (Message, "citations"),
    (Message, "server_tools"),
    (Message, "reasoning_state"),
    (Message, "blocks"),
    (ReasoningBlock, "state"),
    (TextBlock, "citations"),
    (TokenCount, "usage"),
    (StepEnd, "usage"),
    (RunEnd, "usage"),
    (RunEnd, "pending"),
}
# Fields holding a tuple (JSON has only lists).
_TUPLES = {
    (cls, f.name)
    for cls in TAGS
    for f in dataclasses.fields(cls)
    if str(f.type).startswith("tuple")
}


def decode(obj: JSONObject) -> Any:
    """The item a tagged JSON object stands for (an error object gives the exception).

    Raises:
        ValueError: not an object of this format (no or an unknown `"type"`,
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
    names = FIELDS[cls]
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
        elif (cls, name) in MIXED:
            value = _mixed(value)
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


def _mixed(value: JSON) -> list[Any]:
    """A conversation: tagged items, and plain JSON wrapped as `{"$json": value}`."""
    if not isinstance(value, list):
        raise ValueError(f"expected a list of messages, got {value!r:.80}")
    out: list[Any] = []
    for entry in value:
        if isinstance(entry, dict) and list(entry) == ["$json"]:
            out.append(entry["$json"])
        else:
            out.append(decode(entry))
    return out


def _bytes(value: JSON) -> bytes:
    if isinstance(value, dict) and isinstance(value.get("$bytes"), str):
        return base64.b64decode(value["$bytes"], validate=True)
    raise ValueError(f"expected {{'$bytes': <base64>}}, got {value!r:.80}")


def _headers(value: JSON) -> dict[str, str | bytes | int | bool]:
    if not isinstance(value, dict):
        raise ValueError(f"expected the headers object, got {value!r:.80}")
    return {k: _bytes(v) if isinstance(v, dict) else v for k, v in value.items()}


def decode_error(obj: JSONObject) -> StreamError:
    """The `StreamError` an error object stands for (same class and attributes where known;
    a class this version does not know gives a plain `StreamError`)."""
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


# --------------------------------------------------------------------------- SSE events


class Done:
    """What `read_event` gives for the `done` event: the writer's format version."""

    __slots__ = ("version",)

    def __init__(self, version: int) -> None:
        self.version = version

    def __repr__(self) -> str:
        return f"Done(version={self.version})"


def read_event(event: str, obj: JSONObject) -> Any:
    """What one event of the format carries, its data already loaded as a JSON object.

    Returns:
        The item; a `Done` for the `done` event; the `StreamError` (not
        raised) for the `error` event.

    Raises:
        ValueError: the event's name is not its data's type (a `message`
            item is SSE's default event, `message`), a `done` event without
            an integer version, an object `decode` cannot read.

    >>> read_event("text", {"type": "text", "text": "Hi", "choice": 0})
    TextDelta(text='Hi', choice=0)
    >>> read_event("done", {"type": "done", "version": 1})
    Done(version=1)
    """
    kind = obj.get("type")
    if kind != event:
        raise ValueError(
            f"an event named {event!r} whose data has type {kind!r}: "
            "the format names each event after its item's type"
        )
    if kind == DONE:
        version = obj.get("version")
        if isinstance(version, bool) or not isinstance(version, int):
            raise ValueError(f"a done event whose version is {version!r}, not an integer")
        return Done(version)
    return decode(obj)


# --------------------------------------------------------------------------- Redis entries


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def entry_number(fields: Mapping[str, bytes | str]) -> int:
    """The number (`n`) of an entry of this format version.

    Raises:
        ValueError: an entry not written by rxstream (no `v`, `n` or `kind`),
            of another format version, or whose `n` is no number.
    """
    version, number = fields.get("v"), fields.get("n")
    if version is None or number is None or fields.get("kind") is None:
        raise ValueError(
            "it was not written by rxstream.to_redis_stream (its fields: "
            f"{excerpt(repr(sorted(fields)))})"
        )
    if _text(version) != str(FORMAT_VERSION):
        raise ValueError(
            f"it is in rxstream format {excerpt(_text(version))!r}; this version of "
            f"rxstream reads format {FORMAT_VERSION} (upgrade the reader)"
        )
    text = _text(number)
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"it has no number: n={excerpt(text)!r}")
    return int(text)


def entry_kind(fields: Mapping[str, bytes | str]) -> str:
    """The kind of an entry (one of `ENTRY_KINDS`).

    Raises:
        ValueError: no `kind`, or one this version does not know.
    """
    kind = _text(fields.get("kind") or b"")
    if kind not in ENTRY_KINDS:
        raise ValueError(f"it is of an unknown kind {excerpt(kind)!r}")
    return kind


def read_json(data: bytes | str | None) -> Any:
    """The JSON an entry's `data` holds (an item: `decode` it; `start`: its settings).

    Raises:
        ValueError: no data, or data that is not JSON.
    """
    try:
        if data is None:
            raise ValueError("it has no data")
        return json.loads(data)
    except ValueError as exc:
        raise ValueError(f"it holds no JSON ({exc}): {excerpt(_text(data or b''))!r}") from None
