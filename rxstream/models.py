"""The items that flow through a pipeline: frozen, slotted dataclasses.

Stages and their items:

- lines: plain `str`
- `sse_frames`: `SSEFrame`
- `decode_chunks`: `ChatChunk` (the decoded JSON kept whole as `.raw`)
- `deltas`: `Delta` = `TextDelta | ReasoningDelta | RefusalDelta | ToolCallDelta | Finish | Usage`
- accumulators: `ToolCall`, `Message`, `TokenCount`

A delta carries only the new piece; accumulators keep the totals. Every item
compares by value, so plain asserts and marble comparisons work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias

from .errors import ToolArgumentsError

__all__ = [
    "JSON",
    "ChatChunk",
    "Delta",
    "DeltaType",
    "Finish",
    "JSONObject",
    "Message",
    "ReasoningDelta",
    "RefusalDelta",
    "SSEFrame",
    "TextDelta",
    "TokenCount",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
]

#: A decoded JSON value. `Any` appears in rxstream only behind these aliases.
JSON: TypeAlias = Any
#: A decoded JSON object.
JSONObject: TypeAlias = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SSEFrame:
    """One dispatched server-sent event.

    Attributes:
        data: the event's data lines joined with "\\n".
        event: the event type (`"message"` when the stream gave none).
        id: the last event id seen so far in the stream (it persists), or None.
        retry: the reconnection time in milliseconds last set by the stream, or None.
    """

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


@dataclass(frozen=True, slots=True)
class ChatChunk:
    """One `chat.completion.chunk` object, decoded.

    The whole decoded JSON stays in `.raw`, so provider extras (`x_groq`,
    `obfuscation`, `prompt_filter_results`, ...) are never lost; the properties
    read the common fields from it.
    """

    raw: JSONObject

    @property
    def id(self) -> str | None:
        """The completion id (providers may send `""`)."""
        value = self.raw.get("id")
        return value if isinstance(value, str) else None

    @property
    def model(self) -> str | None:
        """The model name, if the chunk carries one."""
        value = self.raw.get("model")
        return value if isinstance(value, str) else None

    @property
    def choices(self) -> list[JSONObject]:
        """The chunk's choice objects (possibly empty, e.g. a usage chunk)."""
        value = self.raw.get("choices")
        return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []

    @property
    def usage(self) -> JSONObject | None:
        """The raw `usage` object, if present and not null."""
        value = self.raw.get("usage")
        return value if isinstance(value, dict) else None


class DeltaType(StrEnum):
    """The kind of a delta; the values are the lower-case names."""

    TEXT = "text"
    REASONING = "reasoning"
    REFUSAL = "refusal"
    TOOL_CALL = "tool_call"
    FINISH = "finish"
    USAGE = "usage"


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A new piece of the assistant's visible text."""

    text: str
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.TEXT


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A new piece of the model's reasoning (thinking) text."""

    text: str
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.REASONING


@dataclass(frozen=True, slots=True)
class RefusalDelta:
    """A new piece of a refusal message."""

    text: str
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.REFUSAL


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    """A fragment of a tool call, as it arrived.

    `id` and `name` are set on the fragments that carry them (usually the
    first); `arguments` is the new piece of the arguments text. `index` is the
    call's position in the choice's `tool_calls` (None when the provider sent
    none, as Mistral does).
    """

    index: int | None
    arguments: str = ""
    id: str | None = None
    name: str | None = None
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.TOOL_CALL


@dataclass(frozen=True, slots=True)
class Finish:
    """A choice finished, with the provider's reason (`"stop"`, `"length"`, ...)."""

    reason: str
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.FINISH


@dataclass(frozen=True, slots=True)
class Usage:
    """The provider's token usage for the request (shared by all choices)."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    choice: int = 0

    @property
    def type(self) -> DeltaType:
        return DeltaType.USAGE


Delta: TypeAlias = TextDelta | ReasoningDelta | RefusalDelta | ToolCallDelta | Finish | Usage


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call (or, with `complete=False`, a snapshot of one still streaming).

    Attributes:
        index: the call's position in its choice's tool calls.
        id: the provider's call id (None if it sent none).
        name: the function name.
        arguments: the arguments as the JSON text the model produced.
        choice: the choice the call belongs to.
        complete: False for a progressive snapshot from
            `accumulate_tool_calls(partial=True)`.
        partial: for a snapshot, the best-effort parse of the incomplete arguments.
    """

    index: int
    id: str | None
    name: str | None
    arguments: str
    choice: int = 0
    complete: bool = True
    partial: JSON = field(default=None, compare=False)

    def parse_arguments(self) -> JSONObject:
        """Decode `arguments` as a JSON object; empty arguments give `{}`.

        Raises:
            ToolArgumentsError: the text is not valid JSON (or nests deeper
                than the decoder can follow), or not an object.

        >>> ToolCall(0, "call_1", "f", '{"a": 1}').parse_arguments()
        {'a': 1}
        """
        text = self.arguments
        if not text.strip():
            return {}
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise ToolArgumentsError(
                name=self.name, id=self.id, arguments=text, reason=f"invalid JSON: {exc}"
            ) from exc
        except RecursionError:
            raise ToolArgumentsError(
                name=self.name,
                id=self.id,
                arguments=text,
                reason="JSON nested deeper than the decoder allows",
            ) from None
        if not isinstance(value, dict):
            raise ToolArgumentsError(
                name=self.name,
                id=self.id,
                arguments=text,
                reason=f"a JSON {type(value).__name__}, not an object",
            )
        return value


@dataclass(frozen=True, slots=True)
class Message:
    """The final assistant message of one choice.

    Absent text is `""`; `tool_calls` is in index order; `usage` is the
    stream's last `Usage` (shared by all choices) or None.
    """

    choice: int = 0
    role: str = "assistant"
    content: str = ""
    reasoning: str = ""
    refusal: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Usage | None = None


@dataclass(frozen=True, slots=True)
class TokenCount:
    """Running local token counts of one choice.

    The counts are exact for the text received so far; the one with
    `final=True` is exact for the whole stream. `usage` is the provider's
    `Usage` when one arrived (the prompt is not in the stream, so only the
    provider knows `prompt_tokens`).
    """

    text: int
    reasoning: int
    refusal: int
    tool_arguments: int
    usage: Usage | None = None
    final: bool = False
    choice: int = 0

    @property
    def total(self) -> int:
        """The sum of the four local counts."""
        return self.text + self.reasoning + self.refusal + self.tool_arguments
