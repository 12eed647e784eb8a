"""Typed decoding of the `"openai-chat"` dialect's usual chunks (the `fast` extra).

Input: the JSON text of one chunk (a `"message"` frame's data). Output: the
chunk's deltas, appended to a list, and the `ChunkReader`'s state (choices
seen and finished, roles, the response's id and model) updated, exactly as
`ChunkReader.read` does for the same chunk; or False, with nothing appended
or changed, for a chunk these types do not describe, which the decoder then
reads on its general path.

What the types describe is the chunk nearly every token of a stream comes
in: `choices` of `delta`s with string `content`, `role`, `reasoning_content`,
`reasoning` or `refusal` and `tool_calls` whose `function` has string `name`
and `arguments`; a string `finish_reason`; no usage and no logprobs. `id` and
`model` go to the reader's `identify` when they change (a `Metadata`).
Fields the reader never reads (`created`, `content_filter_results`, ...) are
declared as `Any`: msgspec builds them (a little faster than skipping a
`msgspec.Raw`, which would take an integer of more digits than `json.loads`
takes) and they are dropped. Anything else (an unknown field, `usage`,
`logprobs` that are not null, an `error`, content parts, annotations, a
wrong type, JSON msgspec refuses) is left to the general path, whose items
and errors then count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import msgspec

from .._fast import constructor
from ..models import Delta, Finish, ReasoningDelta, RefusalDelta, TextDelta, ToolCallDelta

__all__ = ["ChunkFeeder"]

_text: Callable[[str, int], TextDelta] = constructor(TextDelta)
_reasoning: Callable[[str, int], ReasoningDelta] = constructor(ReasoningDelta)
_tool_call: Callable[[int | None, str, str | None, str | None, int], ToolCallDelta] = constructor(
    ToolCallDelta
)
_finish: Callable[[str, int, str], Finish] = constructor(Finish)


class _Function(msgspec.Struct, forbid_unknown_fields=True):
    name: str | None = None
    arguments: str | None = None


class _ToolCall(msgspec.Struct, forbid_unknown_fields=True):
    index: int | None = None
    id: str | None = None
    type: str | None = None
    function: _Function | None = None


class _Delta(msgspec.Struct, forbid_unknown_fields=True):
    content: str | None = None
    role: str | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None
    channel: Any = None


class _Choice(msgspec.Struct, forbid_unknown_fields=True):
    index: int | None = None
    delta: _Delta | None = None
    finish_reason: str | None = None
    # Logprobs take the general path (the reader's `Metadata`); OpenAI's null stays here.
    logprobs: None = None
    content_filter_results: Any = None
    matched_stop: Any = None
    native_finish_reason: Any = None


class _Chunk(msgspec.Struct, forbid_unknown_fields=True):
    choices: list[_Choice] | None = None
    id: Any = None
    object: Any = None
    created: Any = None
    model: Any = None
    system_fingerprint: Any = None
    service_tier: Any = None
    obfuscation: Any = None
    provider: Any = None
    # A usage object takes the general path (its `Usage` keeps the object as `raw`).
    usage: None = None


_decode = msgspec.json.Decoder(_Chunk).decode

# What a chunk's `id` and `model` may be (the reader's `identify` reads them).
_NAMES = (str, type(None))


class ChunkReader(Protocol):
    """The state of the openai-chat `ChunkReader` the typed reading keeps up to date."""

    seen: set[int]
    finished: dict[int, str]
    roles: dict[int, str]
    last_id: Any
    last_model: Any

    def identify(self, id: Any, model: Any, out: list[Delta], /) -> None: ...  # pragma: no cover


class ChunkFeeder:
    """The typed reading of one stream's chunks, into the state of its `ChunkReader`.

    `feed(data, out)` is `ChunkReader.read(json.loads(data), out)` for the
    chunks the types describe, and False (nothing done) for any other.
    """

    __slots__ = ("_finished", "_reader", "_roles", "_seen")

    def __init__(self, reader: ChunkReader) -> None:
        self._reader = reader
        self._seen = reader.seen
        self._finished = reader.finished
        self._roles = reader.roles

    def feed(self, data: str, out: list[Delta]) -> bool:
        """Append the deltas of the chunk `data` holds; False when the general path must read it."""
        try:
            chunk = _decode(data)
        except (msgspec.DecodeError, TypeError):
            # Not a chunk these types describe (or a `str` subclass msgspec refuses).
            return False
        choices = chunk.choices
        if choices is None:
            return False  # maybe an error report in disguise: the general path tells
        id, model, reader = chunk.id, chunk.model, self._reader
        if id != reader.last_id or model != reader.last_model:
            if not (type(id) in _NAMES and type(model) in _NAMES):
                return False  # not strings: the general path says which
            reader.identify(id, model, out)
        for choice in choices:
            index = choice.index
            n = 0 if index is None else index
            self._seen.add(n)
            delta = choice.delta
            if delta is not None:
                role = delta.role
                if role and n not in self._roles:
                    self._roles[n] = role
                reasoning = delta.reasoning_content or delta.reasoning
                content = delta.content
                if content:
                    if reasoning:
                        out.append(_reasoning(reasoning, n))
                        reasoning = None
                    out.append(_text(content, n))
                if reasoning:
                    out.append(_reasoning(reasoning, n))
                refusal = delta.refusal
                if refusal:
                    out.append(RefusalDelta(refusal, n))
                calls = delta.tool_calls
                if calls is not None:
                    for call in calls:
                        function = call.function
                        if function is None:
                            out.append(_tool_call(call.index, "", call.id or None, None, n))
                        else:
                            arguments = function.arguments
                            out.append(
                                _tool_call(
                                    call.index,
                                    "" if arguments is None else arguments,
                                    call.id or None,
                                    function.name or None,
                                    n,
                                )
                            )
            reason = choice.finish_reason
            if reason and self._finished.get(n) != reason:
                self._finished[n] = reason
                # The legacy function_call ends in a tool call like any other.
                norm = "tool_calls" if reason == "function_call" else reason
                out.append(_finish(norm, n, reason))
        return True
