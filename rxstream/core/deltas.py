"""Chat chunks to flat delta events, in wire order.

Input: `ChatChunk` items (deltas fed in pass through unchanged, so the machine
composes in any order). Output: `TextDelta`, `ReasoningDelta`, `RefusalDelta`,
`ToolCallDelta`, `Finish` and `Usage`, each with the `.choice` it belongs to.

Invariants:

- Choices are handled in the order the chunk lists them. Within one choice the
  order is reasoning, text, refusal, tool calls, then `Finish`; a chunk's
  `Usage` comes after all its choices.
- Empty strings give no delta; `null` or missing fields are tolerated anywhere.
- A `finish_reason` repeated for the same choice with the same reason gives one
  `Finish`; a different reason gives another one.
- Usage is cumulative on the wire (some providers repeat it on every chunk), so a
  `Usage` is emitted only when it differs from the previous one: the last one
  wins and nothing is ever summed.

Follows the OpenAI `chat.completion.chunk` shape and the provider variations
listed in the fixtures' QUIRKS.md (reasoning fields, content arrays, legacy
`function_call` and completions `text`).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ..models import (
    DELTA_CLASSES,
    JSON,
    ChatChunk,
    Delta,
    Finish,
    JSONObject,
    ReasoningDelta,
    RefusalDelta,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from ._build import constructor

__all__ = ["DELTA_CLASSES", "DeltaDecoder", "parse_usage"]

_text: Callable[[str, int], TextDelta] = constructor(TextDelta)
_reasoning: Callable[[str, int], ReasoningDelta] = constructor(ReasoningDelta)
_tool_call: Callable[[int | None, str, str | None, str | None, int], ToolCallDelta] = constructor(
    ToolCallDelta
)


class DeltaDecoder:
    """Turn `ChatChunk` items into flat delta events, in wire order.

    Deltas fed in are passed through unchanged.

    Returns (from `feed`): the deltas the chunk carries; `close()` returns `[]`.

    Raises:
        TypeError: an item that is neither a `ChatChunk` nor a delta.
        RuntimeError: `feed` after `close()` or after an error.

    >>> d = DeltaDecoder()
    >>> d.feed(ChatChunk({"choices": [{"index": 0, "delta": {"content": "Hi"}}]}))
    [TextDelta(text='Hi', choice=0)]
    """

    __slots__ = ("_closed", "_finished", "_usage")

    def __init__(self) -> None:
        self._finished: dict[int, str] = {}
        self._usage: Usage | None = None
        self._closed = False

    def feed(self, chunk: ChatChunk | Delta) -> list[Delta]:
        """Decode one chunk (or pass one delta through)."""
        if self._closed:
            raise RuntimeError("DeltaDecoder: feed() after close() or after an error")
        if type(chunk) is not ChatChunk:
            if isinstance(chunk, DELTA_CLASSES):
                return [chunk]
            if not isinstance(chunk, ChatChunk):
                self._closed = True
                raise TypeError(f"DeltaDecoder expects ChatChunk or delta items, got {chunk!r}")
        raw = chunk.raw
        out: list[Delta] = []
        # What `ChatChunk.choices` and `.usage` give, read without building a list.
        choices = raw.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict):
                    self._decode_choice(choice, out)
        usage = raw.get("usage")
        if not isinstance(usage, dict):
            usage = None
            # Groq also puts the numbers in `x_groq.usage`; top-level usage wins when both exist.
            extra = raw.get("x_groq")
            if isinstance(extra, dict) and isinstance(extra.get("usage"), dict):
                usage = extra["usage"]
        if usage is not None:
            parsed = parse_usage(usage)
            if parsed is not None and parsed != self._usage:
                self._usage = parsed
                out.append(parsed)
        return out

    def close(self) -> list[Delta]:
        """End the input; nothing is buffered, so this returns `[]`."""
        if self._closed:
            raise RuntimeError("DeltaDecoder: close() called twice or after an error")
        self._closed = True
        return []

    def _decode_choice(self, choice: JSONObject, out: list[Delta]) -> None:
        # The hot path of the whole pipeline: each field is read once, and the
        # rare shapes (content arrays, reasoning_details) take the slow road.
        index = choice.get("index")
        n: int = index if type(index) is int else (_int(index) or 0)
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = delta.get("reasoning_content")
            if not (reasoning and isinstance(reasoning, str)):
                reasoning = delta.get("reasoning")
                if not (reasoning and isinstance(reasoning, str)):
                    # Only when no plain reasoning field came: OpenRouter sends both
                    # with the same text.
                    details = delta.get("reasoning_details")
                    reasoning = (
                        "".join(_reasoning_details_text(details)) if details is not None else ""
                    )
            content = delta.get("content")
            if isinstance(content, str):
                text = content
            elif isinstance(content, list):
                texts: list[str] = []
                thoughts = [reasoning]
                _content(content, texts, thoughts)
                text, reasoning = "".join(texts), "".join(thoughts)
            else:
                text = ""
            if reasoning:
                out.append(_reasoning(reasoning, n))
            if text:
                out.append(_text(text, n))
            refusal = delta.get("refusal")
            if refusal and isinstance(refusal, str):
                out.append(RefusalDelta(refusal, n))
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                for call in calls:
                    if isinstance(call, dict):
                        out.append(_tool_call_delta(call, n))
            legacy = delta.get("function_call")
            if isinstance(legacy, dict):
                out.append(_function_delta(legacy, index=0, id=None, choice=n))
        else:
            legacy_text = choice.get("text")
            # Legacy completions; only without a `delta`, as Together sends both.
            if legacy_text and isinstance(legacy_text, str):
                out.append(TextDelta(legacy_text, n))
        reason = choice.get("finish_reason")
        if reason and isinstance(reason, str) and self._finished.get(n) != reason:
            self._finished[n] = reason
            # The legacy function_call ends in a tool call like any other.
            norm = "tool_calls" if reason == "function_call" else reason
            out.append(Finish(norm, n, reason))


def parse_usage(raw: JSONObject) -> Usage | None:
    """Read a provider `usage` object into a `Usage` (None when it holds no counts).

    `reasoning_tokens` comes from `completion_tokens_details.reasoning_tokens` or a
    top-level `reasoning_tokens`; `cached_tokens` from
    `prompt_tokens_details.cached_tokens` or DeepSeek's `prompt_cache_hit_tokens`.
    A missing `total_tokens` is the sum of the other two.

    >>> parse_usage({"prompt_tokens": 3, "completion_tokens": 4}).total_tokens
    7
    """
    prompt = _int(raw.get("prompt_tokens"))
    completion = _int(raw.get("completion_tokens"))
    total = _int(raw.get("total_tokens"))
    if prompt is None and completion is None and total is None:
        return None
    prompt, completion = prompt or 0, completion or 0
    details = raw.get("completion_tokens_details")
    reasoning = _int(details.get("reasoning_tokens")) if isinstance(details, dict) else None
    if reasoning is None:
        reasoning = _int(raw.get("reasoning_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
    if cached is None:
        cached = _int(raw.get("prompt_cache_hit_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion if total is None else total,
        reasoning_tokens=reasoning,
        cached_tokens=cached,
        raw=raw,
    )


def _int(value: JSON) -> int | None:
    # bool is an int in Python, but never a count or an index on the wire.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: JSON) -> str:
    return value if isinstance(value, str) else ""


def _reasoning_details_text(details: JSON) -> list[str]:
    if not isinstance(details, list):
        return []
    out = []
    for item in details:
        if isinstance(item, dict):
            # `reasoning.encrypted` items carry opaque data, not text: skipped.
            if item.get("type") == "reasoning.summary":
                out.append(_str(item.get("summary")))
            elif item.get("type") in ("reasoning.text", None):
                out.append(_str(item.get("text")))
    return out


def _content(content: JSON, text: list[str], reasoning: list[str]) -> None:
    if isinstance(content, str):
        text.append(content)
    elif isinstance(content, list):
        # Mistral Magistral: an array of typed parts, thinking parts nesting their own text parts.
        for part in content:
            if isinstance(part, str):
                text.append(part)
            elif isinstance(part, dict):
                kind = part.get("type")
                if kind == "thinking":
                    inner = part.get("thinking")
                    if isinstance(inner, str):
                        reasoning.append(inner)
                    else:
                        _content(inner, reasoning, reasoning)
                elif kind in ("text", None):
                    text.append(_str(part.get("text")))


def _tool_call_delta(call: JSONObject, choice: int) -> ToolCallDelta:
    function = call.get("function")
    index = call.get("index")
    if type(index) is not int:
        index = _int(index)
    id = call.get("id")
    if not (id and isinstance(id, str)):
        id = None
    if not isinstance(function, dict):
        return _tool_call(index, "", id, None, choice)
    arguments = function.get("arguments")
    name = function.get("name")
    if not isinstance(arguments, str):
        # Rare: leave the conversions to `_function_delta`.
        return _function_delta(function, index, id, choice)
    return _tool_call(
        index, arguments, id, name if name and isinstance(name, str) else None, choice
    )


def _function_delta(
    function: JSONObject, index: int | None, id: str | None, choice: int
) -> ToolCallDelta:
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        text = arguments
    elif arguments is None:
        text = ""
    else:
        # Some providers send the arguments as a JSON object, not its text.
        text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
    name = function.get("name")
    return _tool_call(index, text, id, name if name and isinstance(name, str) else None, choice)
