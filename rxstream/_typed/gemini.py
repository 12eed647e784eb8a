"""Typed decoding of the `"gemini"` dialect: a `GenerateContentResponse` chunk as msgspec types.

What a Gemini stream sends nearly every time: candidates whose content is
text and thought parts, a `finishReason`, the ids and `usageMetadata`.
`decode(data)` reads such a chunk straight into these types, shape checks
included (strict: no bool for an int, no null for a string); it raises
`ValueError` (msgspec's `DecodeError`) for anything else, a field they do not
declare included, and the decoder then takes its general path, which gives
exactly the standard library's items or error. `usageMetadata` stays the
provider's object (it is `Usage.raw`).
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Candidate", "Chunk", "Content", "Part", "decode"]


class Part(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """A text part (`thought: true`: reasoning); any other kind of part is not one."""

    text: str
    thought: bool = False


class Content(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    parts: list[Part] | None = None
    role: str | None = None


class Candidate(msgspec.Struct, forbid_unknown_fields=True, gc=False, rename="camel"):
    content: Content | None = None
    index: int | None = None
    finish_reason: str | None = None


class Chunk(msgspec.Struct, forbid_unknown_fields=True, gc=False, rename="camel"):
    candidates: list[Candidate] | None = None
    usage_metadata: dict[str, Any] | None = None
    model_version: str | None = None
    response_id: str | None = None
    create_time: str | None = None


#: A `str` (or bytes) of JSON -> `Chunk`; `ValueError` when it is no such chunk.
decode = msgspec.json.Decoder(Chunk).decode
