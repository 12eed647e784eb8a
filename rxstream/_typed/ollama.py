"""Typed decoding of the `"ollama"` dialect: an `/api/chat` line as msgspec types.

What an Ollama stream sends for every token: `{"model", "created_at",
"message": {"role", "content", "thinking"?}, "done": false}`. `decode(line)`
reads such a line straight into these types, shape checks included; it
raises `ValueError` (msgspec's `DecodeError`) for anything else (the final
line, tool calls, images, logprobs and any field it does not declare
included), and the decoder then takes its general path, which gives exactly
the standard library's items or error.
"""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

__all__ = ["UNSET", "Line", "Message", "decode"]


class Message(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """`content` UNSET: none sent (a null content is wrong, and not read here)."""

    role: str = ""
    content: str | UnsetType = UNSET
    thinking: str | None = None


class Line(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    message: Message
    done: bool
    model: str = ""
    created_at: str = ""


#: A line (`str`) -> `Line`; `ValueError` when it is no such line.
decode = msgspec.json.Decoder(Line).decode
