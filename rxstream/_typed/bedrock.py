"""Typed decoding of the `"bedrock"` dialect: ConverseStream's content deltas as msgspec types.

The event type travels in the `:event-type` header, not in the payload, so
each event the types know has its own decoder: `block_delta` for a
`contentBlockDelta` whose delta is text, a tool call's input or reasoning.
It reads the payload `bytes` straight (no `str` in between), shape checks
included; it raises `ValueError` (msgspec's `DecodeError`) for anything else,
a field it does not declare included, and the decoder then takes its general
path, which gives exactly the standard library's items or error. `p` is the
random padding Bedrock adds to every payload (read and ignored).
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

__all__ = ["UNSET", "BlockDelta", "Delta", "Reasoning", "ToolUse", "block_delta"]


class ToolUse(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    input: str


class Reasoning(msgspec.Struct, forbid_unknown_fields=True, rename="camel", gc=False):
    text: str | None = None
    signature: str | None = None
    redacted_content: str | None = None


class Delta(msgspec.Struct, forbid_unknown_fields=True, rename="camel", gc=False):
    """What a content delta carries (`text` UNSET: none; a null text is no text, but wrong)."""

    text: str | UnsetType = UNSET
    tool_use: ToolUse | None = None
    reasoning_content: Reasoning | None = None


class BlockDelta(msgspec.Struct, forbid_unknown_fields=True, rename="camel", gc=False):
    content_block_index: int
    delta: Delta
    p: str = ""


#: A `contentBlockDelta` payload (bytes) -> `BlockDelta`; `ValueError` when it is no such event.
block_delta = msgspec.json.Decoder(BlockDelta).decode
