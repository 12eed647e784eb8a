"""Typed decoding of the `"openai-responses"` dialect's usual events (the `fast` extra).

Input: the JSON text of one frame's data. Output: the event as one of the
msgspec types below, by its `type` (a tagged union), or a `ValueError` (a
`msgspec.DecodeError`; a `TypeError` for the `str` subclass of a last, cut
event) for anything they do not describe, which the decoder then reads on
its general path.

The types describe the deltas nearly every frame of a stream carries: the
answer's text (`response.output_text.delta`), reasoning summaries and text,
refusals, and a function call's arguments, each with its string `delta` and
integer indexes. The fields the decoder does not read (`item_id`,
`sequence_number`, `obfuscation`) are declared as `Any`: msgspec builds them
(a little faster than skipping a `msgspec.Raw`, which would take an integer of
more digits than `json.loads` takes) and they are dropped. An unknown field,
another event, a wrong type, logprobs
that are not empty (they become `Metadata`, on the general path) or JSON
msgspec refuses go to the general path, whose items and errors then count.
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["Arguments", "Reasoning", "Refusal", "Summary", "Text", "decode"]


class _Delta(msgspec.Struct, tag_field="type", forbid_unknown_fields=True, kw_only=True):
    """What every delta event has: its piece of text, its output item, and fields not read."""

    delta: str
    output_index: int
    item_id: Any = None
    sequence_number: Any = None
    obfuscation: Any = None


class Text(_Delta, tag="response.output_text.delta"):
    """A piece of the answer's text."""

    content_index: int = 0
    logprobs: list[Any] | None = None


class Summary(_Delta, tag="response.reasoning_summary_text.delta"):
    """A piece of a reasoning summary."""

    summary_index: int = 0


class Reasoning(_Delta, tag="response.reasoning_text.delta"):
    """A piece of reasoning text."""

    content_index: int = 0


class Refusal(_Delta, tag="response.refusal.delta"):
    """A piece of a refusal."""

    content_index: int = 0


class Arguments(_Delta, tag="response.function_call_arguments.delta"):
    """A fragment of a function call's arguments."""


#: The event of one frame's data, typed (raises `ValueError` or `TypeError` for any other).
decode = msgspec.json.Decoder(Text | Summary | Reasoning | Refusal | Arguments).decode
