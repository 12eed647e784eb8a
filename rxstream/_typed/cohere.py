"""Typed decoding of the `"cohere"` dialect's usual events (the `fast` extra).

Input: the JSON text of one frame's data. Output: the event as one of the
msgspec types below, by its `type` (a tagged union), or a `ValueError` (a
`msgspec.DecodeError`; a `TypeError` for the `str` subclass of a last, cut
event) for anything they do not describe, which the decoder then reads on
its general path.

The types describe what nearly every frame of a stream is: a `content-delta`
whose `delta.message.content` holds a string `text` (or `thinking`), and a
`tool-call-delta` whose `delta.message.tool_calls.function.arguments` is a
string. Cohere's `index` on a content delta is not read (as on the general
path: `Any`, built and dropped, as a skipped `msgspec.Raw` would take an
integer of more digits than `json.loads` takes); on a call delta it is an
integer or null. An unknown field (logprobs
among them: they become `Metadata`, on the general path), another event, a
wrong type or JSON msgspec refuses goes to the general path, whose items and
errors then count.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["CallDelta", "ContentDelta", "decode"]


class _Content(msgspec.Struct, forbid_unknown_fields=True):
    text: str | None = None
    thinking: str | None = None


class _ContentMessage(msgspec.Struct, forbid_unknown_fields=True):
    content: _Content


class _ContentBody(msgspec.Struct, forbid_unknown_fields=True):
    message: _ContentMessage


class ContentDelta(
    msgspec.Struct, tag="content-delta", tag_field="type", forbid_unknown_fields=True
):
    """A `content-delta` event: `delta.message.content` is its text (or thinking)."""

    delta: _ContentBody
    index: Any = None


class _Function(msgspec.Struct, forbid_unknown_fields=True):
    arguments: str


class _Call(msgspec.Struct, forbid_unknown_fields=True):
    function: _Function


class _CallMessage(msgspec.Struct, forbid_unknown_fields=True):
    tool_calls: _Call


class _CallBody(msgspec.Struct, forbid_unknown_fields=True):
    message: _CallMessage


class CallDelta(
    msgspec.Struct, tag="tool-call-delta", tag_field="type", forbid_unknown_fields=True
):
    """A `tool-call-delta` event: `delta.message.tool_calls.function.arguments` is its fragment."""

    delta: _CallBody
    index: int | None = None


#: The event of one frame's data, typed (raises `ValueError` or `TypeError` for any other).
decode = msgspec.json.Decoder(ContentDelta | CallDelta).decode
