"""Deltas (or chunks) to the final assistant message of each choice.

Input: `ChatChunk` items or deltas. Output: nothing while the stream runs;
`close()` returns one `Message` per choice, in choice order.

Invariants:

- choices stay apart (`n > 1`); a choice exists once any chunk or delta names it;
- text, reasoning and refusal are the concatenation of their deltas, joined once;
- tool calls are reassembled by `ToolCallAccumulator` and listed in index order;
- `finish_reason` is the choice's last `Finish` (None if it never finished),
  `finish_raw` that finish's provider word;
- citations, server-side tools and reasoning state are kept in wire order;
  `Metadata` items merge into `metadata` (a list extends the list there,
  anything else replaces it);
- `usage` is the stream's last `Usage`, shared by every choice;
- `role` is read from the chunks' `delta.role` (the first non-empty one), as
  deltas carry no role; it is `"assistant"` when fed deltas or when none came.

Follows the OpenAI chat streaming format (a `chat.completion` assembled from
its `chat.completion.chunk` stream).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..models import (
    ChatChunk,
    Citation,
    Delta,
    Finish,
    JSONObject,
    Message,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
    ServerToolCall,
    ServerToolResult,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from .deltas import DELTA_CLASSES, DeltaDecoder
from .tools import ToolCallAccumulator

__all__ = ["MessageAccumulator"]


@dataclass(slots=True)
class _Choice:
    role: str | None = None
    content: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    finish_raw: str | None = None
    citations: list[Citation] = field(default_factory=list)
    server_tools: list[ServerToolCall | ServerToolResult] = field(default_factory=list)
    reasoning_state: list[ReasoningState] = field(default_factory=list)
    metadata: JSONObject = field(default_factory=dict)


class MessageAccumulator:
    """Accumulate a stream into one final `Message` per choice.

    Returns: `feed` always returns `[]`; `close()` returns the messages, in
    choice order.

    Raises:
        TypeError: an item that is neither a `ChatChunk` nor a delta.
        RuntimeError: `feed` after `close()` or after an error.

    >>> acc = MessageAccumulator()
    >>> acc.feed(TextDelta("Hi")) + acc.feed(Finish("stop"))
    []
    >>> acc.close()[0].content
    'Hi'
    """

    __slots__ = ("_choices", "_closed", "_decoder", "_tools", "_usage")

    def __init__(self) -> None:
        self._decoder = DeltaDecoder()
        self._tools = ToolCallAccumulator()
        self._choices: dict[int, _Choice] = {}
        self._usage: Usage | None = None
        self._closed = False

    def feed(self, item: ChatChunk | Delta) -> list[Message]:
        """Take one chunk or delta; return `[]` (messages come at `close()`)."""
        if self._closed:
            raise RuntimeError("MessageAccumulator: feed() after close() or after an error")
        if isinstance(item, DELTA_CLASSES):
            self._apply(item)
            return []
        if not isinstance(item, ChatChunk):
            self._closed = True
            raise TypeError(f"MessageAccumulator expects ChatChunk or delta items, got {item!r}")
        # What `item.choices` gives, read without building a list.
        choices = item.raw.get("choices")
        if isinstance(choices, list):
            known = self._choices
            for raw in choices:
                if not isinstance(raw, dict):
                    continue
                index = raw.get("index")
                n = index if type(index) is int else 0
                state = known.get(n)
                if state is None:
                    state = known[n] = _Choice()
                # The role is the first non-empty one: once known, not looked up again.
                if state.role is None:
                    delta = raw.get("delta")
                    role = delta.get("role") if isinstance(delta, dict) else None
                    if isinstance(role, str) and role:
                        state.role = role
        for delta in self._decoder.feed(item):
            self._apply(delta)
        return []

    def feed_all(self, items: Iterable[ChatChunk | Delta], out: list[Message]) -> None:
        """Feed many items at once: the same as `feed` for each in turn (and `out` stays empty)."""
        choices = self._choices
        tools = self._tools
        for item in items:
            # Text, reasoning and tool-call deltas are nearly all a stream
            # holds: `_apply`'s hot cases, inline; the rest takes `feed`.
            if self._closed:
                self.feed(item)  # which refuses it
            elif type(item) is TextDelta:
                state = choices.get(item.choice) or self._choice(item.choice)
                state.content.append(item.text)
            elif type(item) is ReasoningDelta:
                state = choices.get(item.choice) or self._choice(item.choice)
                state.reasoning.append(item.text)
            elif type(item) is ToolCallDelta:
                if item.choice not in choices:
                    self._choice(item.choice)
                tools.feed(item)
            else:
                self.feed(item)

    def close(self) -> list[Message]:
        """End the input; return one `Message` per choice, in choice order."""
        if self._closed:
            raise RuntimeError("MessageAccumulator: close() called twice or after an error")
        self._closed = True
        for call in self._tools.close():
            self._choice(call.choice).tool_calls.append(call)
        return [
            Message(
                choice=n,
                role=state.role or "assistant",
                content="".join(state.content),
                reasoning="".join(state.reasoning),
                refusal="".join(state.refusal),
                tool_calls=tuple(sorted(state.tool_calls, key=lambda c: c.index)),
                finish_reason=state.finish_reason,
                usage=self._usage,
                finish_raw=state.finish_raw,
                citations=tuple(state.citations),
                server_tools=tuple(state.server_tools),
                reasoning_state=tuple(state.reasoning_state),
                metadata=state.metadata,
            )
            for n, state in sorted(self._choices.items())
        ]

    def _choice(self, n: int) -> _Choice:
        state = self._choices.get(n)
        if state is None:
            state = self._choices[n] = _Choice()
        return state

    def _apply(self, delta: Delta) -> None:
        # Exact-type tests first (the common case, and cheaper than `match`);
        # the `match` below serves subclasses.
        if type(delta) is TextDelta:
            self._choice(delta.choice).content.append(delta.text)
        elif type(delta) is ReasoningDelta:
            self._choice(delta.choice).reasoning.append(delta.text)
        elif type(delta) is ToolCallDelta:
            self._choice(delta.choice)
            self._tools.feed(delta)
        else:
            self._apply_any(delta)

    def _apply_any(self, delta: Delta) -> None:
        match delta:
            case Usage():
                # Shared by all choices, so it names none.
                self._usage = delta
                return
            case TextDelta(text=text):
                self._choice(delta.choice).content.append(text)
            case ReasoningDelta(text=text):
                self._choice(delta.choice).reasoning.append(text)
            case RefusalDelta(text=text):
                self._choice(delta.choice).refusal.append(text)
            case ToolCallDelta():
                self._choice(delta.choice)
                self._tools.feed(delta)
            case Finish(reason=reason, raw=raw):
                state = self._choice(delta.choice)
                state.finish_reason = reason
                state.finish_raw = raw
                state.tool_calls.extend(self._tools.feed(delta))
            case Citation():
                self._choice(delta.choice).citations.append(delta)
            case ServerToolCall() | ServerToolResult():
                self._choice(delta.choice).server_tools.append(delta)
            case ReasoningState():
                self._choice(delta.choice).reasoning_state.append(delta)
            case Metadata(data=data):
                merged = self._choice(delta.choice).metadata
                for key, value in data.items():
                    old = merged.get(key)
                    if isinstance(value, list) and isinstance(old, list):
                        merged[key] = old + value
                    else:
                        merged[key] = value
