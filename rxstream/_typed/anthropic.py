"""Typed decoding of the `"anthropic"` dialect's usual events (the `fast` extra).

Input: the JSON text of one frame's data. Output: the event as one of the
msgspec types below, by its `type` (a tagged union), or a `ValueError` (a
`msgspec.DecodeError`; a `TypeError` for the `str` subclass of a last, cut
event) for anything they do not describe, which the decoder then reads on
its general path.

The types describe what nearly every frame of a stream is: a
`content_block_delta` whose integer `index` names the block and whose
`delta` is a `text_delta` (string `text`), a `thinking_delta` (string
`thinking`) or an `input_json_delta` (string `partial_json`); and `ping`.
An unknown field, another event or delta type, a wrong type, or JSON msgspec
refuses goes to the general path, whose items and errors then count; so does
a delta for a block it does not fit (the decoder checks that). The types hold
strings, integers and each other, never a cycle: they are left out of the
garbage collector's tracking (`gc=False`), as Gemini's are.
"""

from __future__ import annotations

import msgspec

__all__ = ["BlockDelta", "InputJSON", "Ping", "Text", "Thinking", "decode"]


class Text(
    msgspec.Struct, tag="text_delta", tag_field="type", forbid_unknown_fields=True, gc=False
):
    """A `text_delta`."""

    text: str


class Thinking(
    msgspec.Struct, tag="thinking_delta", tag_field="type", forbid_unknown_fields=True, gc=False
):
    """A `thinking_delta`."""

    thinking: str


class InputJSON(
    msgspec.Struct, tag="input_json_delta", tag_field="type", forbid_unknown_fields=True, gc=False
):
    """An `input_json_delta` (a fragment of a tool call's arguments)."""

    partial_json: str


class BlockDelta(
    msgspec.Struct,
    tag="content_block_delta",
    tag_field="type",
    forbid_unknown_fields=True,
    gc=False,
):
    """A `content_block_delta` event."""

    index: int
    delta: Text | Thinking | InputJSON


class Ping(msgspec.Struct, tag="ping", tag_field="type", forbid_unknown_fields=True, gc=False):
    """A `ping` event."""


#: The event of one frame's data, typed (raises `ValueError` or `TypeError` for any other).
decode = msgspec.json.Decoder(BlockDelta | Ping).decode
