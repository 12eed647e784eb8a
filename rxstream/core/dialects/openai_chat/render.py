"""The `"openai-chat"` dialect: the renderer (deltas -> wire events).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import ClassVar

from ...._fast import enabled
from ....errors import ProviderError
from ....models import (
    JSON,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    RefusalDelta,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from .._base import ResetRule, Wire, WireKind
from .._shared import TEXT_MARK, dumps, text_halves
from .reader import LOGPROBS

__all__ = ["OpenAIChatRenderer"]

# The provider's own word is kept only where it means the reason (a legacy
# `function_call` finish is a tool-call finish); an Ollama tool turn
# (`Finish("tool_calls", raw="stop")`) is written as `tool_calls`.
_SAME_MEANING = {
    ("stop", "stop"),
    ("length", "length"),
    ("tool_calls", "tool_calls"),
    ("content_filter", "content_filter"),
    ("function_call", "tool_calls"),
}

#: The deltas written as a chunk of their choice, which carries the logprobs held for it.
_CARRIERS = frozenset({TextDelta, ReasoningDelta, RefusalDelta, ToolCallDelta, Finish})


class OpenAIChatRenderer:
    """Render deltas as an OpenAI chat-completion stream (`SSEFrame`s, then `[DONE]`).

    Every choice opens with a role chunk; text, reasoning (as DeepSeek's
    `reasoning_content`), refusals and tool-call fragments become one chunk
    each; a `Finish` the chunk with its `finish_reason`; `Usage` the usage-only
    chunk OpenAI sends with `stream_options.include_usage`. `close()` gives
    `[DONE]`; `error(exc)` the `{"error": {...}}` data event OpenAI-compatible
    servers send mid-stream.

    A `Metadata` with `"logprobs"` or `"refusal_logprobs"` lists (what the
    decoder gives for a choice's `logprobs`, before the choice's deltas) goes
    into the choice's next chunk as its `logprobs` (`content`, `refusal`), or
    into a chunk of its own when something else comes next, so decoding the
    rendered stream gives the same deltas back.

    Not expressed (left out): citations, server-side tools, reasoning state and
    other metadata, which chat completions have no place for.

    A `Reset` (a new answer replaces the one so far), which this format
    cannot carry, follows `ResetRule`: the new answer goes on in the same
    stream, its tool calls numbered after the dropped answer's.

    Args:
        model: the model name in every chunk.
        id: the completion id in every chunk.
        created: the creation timestamp in every chunk.

    >>> r = OpenAIChatRenderer()
    >>> [f.data for f in r.feed(TextDelta("Hi"))][-1]
    '{"id":"chatcmpl-rxstream","object":"chat.completion.chunk","created":0,"model":"rxstream-fake","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}'
    >>> r.close()
    [SSEFrame(data='[DONE]', event='message', id=None, retry=None)]
    """

    wire: ClassVar[WireKind] = "sse"
    newline: ClassVar[str] = "\n"

    def __init__(
        self, *, model: str = "rxstream-fake", id: str = "chatcmpl-rxstream", created: int = 0
    ) -> None:
        self._resets = ResetRule()  # what a Reset does here (ResetRule)
        self._head = {
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }
        self._opened: set[int] = set()
        # Per choice: the index the last fragment went to, the next one free.
        self._calls: dict[int, tuple[int | None, int]] = {}
        # (choice, index) of each call begun -> whether its name was written.
        self._begun: dict[tuple[int, int], bool] = {}
        # The logprobs of a `Metadata`, for the next chunk of their choice: (choice, logprobs).
        self._held: tuple[int, JSONObject] | None = None
        # A text chunk of each choice as a template (a fast path, `text_event`): choice ->
        # the JSON before and after the text.
        self._templates = enabled()
        self._text_templates: dict[int, tuple[str, str]] = {}

    def feed(self, delta: Delta) -> list[Wire]:
        """The frames that send `delta` (none for what chat completions cannot express)."""
        if type(delta) is not TextDelta or self._resets.ended:
            seen = self._resets.see(delta)
            if seen is None:
                return []
            delta = seen
        out: list[Wire] = [] if self._held is None else self._release(delta)
        if isinstance(delta, Usage):
            out.append(self._frame([], usage=_usage_json(delta)))
            return out
        body: JSONObject | None
        finish: str | None = None
        match delta:
            case TextDelta(text=text):
                body = {"content": text}
            case ReasoningDelta(text=text):
                body = {"reasoning_content": text}
            case RefusalDelta(text=text):
                body = {"refusal": text}
            case ToolCallDelta():
                index = self._call_index(delta)
                key = (delta.choice, index)
                first, named = key not in self._begun, self._begun.get(key, False)
                self._begun[key] = named or delta.name is not None
                body = {"tool_calls": [_fragment(delta, index, first, named)]}
            case Finish(reason=reason, raw=raw):
                body = {}
                finish = raw if raw is not None and (raw, reason) in _SAME_MEANING else reason
            case Metadata(data=data):
                self._hold(data, delta.choice)
                return out
            case _:
                return out
        choice = delta.choice
        if choice not in self._opened:
            out += self._opening(choice)
        if self._held is None:
            out.append(self._choice_frame(choice, body, finish))
        else:
            # Logprobs held for this choice (`_release` let go of any other's).
            held, self._held = self._held[1], None
            out.append(self._choice_frame(choice, body, finish, held))
        return out

    def text_event(self, delta: TextDelta) -> tuple[str, str] | None:
        """The one event `feed(delta)` gives for a text delta, as (name, data), when it
        changes nothing else (the text chunk of an opened choice); else None: `feed` it.

        What `feed` writes, without its layers: an encoder asks this first (a
        server writes one per token). Only where `feed` would only append that
        chunk: its choice opened, no logprobs held, no reset ending a choice,
        the fast paths on.
        """
        if not self._templates or self._held is not None or self._resets.ended:
            return None
        choice = delta.choice
        template = self._text_templates.get(choice)
        if template is None:
            if choice not in self._opened:
                return None
            template = self._text_templates[choice] = text_halves(
                self._choice_frame(choice, {"content": TEXT_MARK}, None).data
            )
        return "message", f"{template[0]}{encode_basestring(delta.text)}{template[1]}"

    def close(self) -> list[Wire]:
        """`data: [DONE]` (after the logprobs still held, in a chunk of their own)."""
        return [*self._release(None), SSEFrame("[DONE]")]

    def error(self, error: ProviderError) -> list[Wire]:
        """The error event an OpenAI-compatible server sends mid-stream."""
        payload: JSONObject = {"message": error.message, "type": error.type, "code": error.code}
        return [*self._release(None), SSEFrame(dumps({"error": payload}))]

    def _hold(self, data: JSONObject, choice: int) -> None:
        """Keep a `Metadata`'s logprobs lists (if it has any) for the next chunk of `choice`."""
        logprobs: JSONObject = {}
        for wire, key in LOGPROBS:
            entries = data.get(key)
            logprobs[wire] = entries if type(entries) is list and entries else None
        if any(entries is not None for entries in logprobs.values()):
            self._held = choice, logprobs

    def _release(self, delta: Delta | None) -> list[Wire]:
        """The chunk of the logprobs held: none when `delta` is the next chunk of their choice."""
        if self._held is None:
            return []
        choice, logprobs = self._held
        if delta is not None and type(delta) in _CARRIERS and delta.choice == choice:
            return []
        self._held = None
        return [*self._opening(choice), self._choice_frame(choice, {}, None, logprobs)]

    def _opening(self, choice: int) -> list[Wire]:
        """The role chunk that opens `choice`, the first time it is written."""
        if choice in self._opened:
            return []
        self._opened.add(choice)
        return [self._choice_frame(choice, {"role": "assistant", "content": ""}, None)]

    def _call_index(self, delta: ToolCallDelta) -> int:
        """The `index` a fragment is written with: the delta's, or one given in order.

        The openai SDK needs an `index` on every tool-call fragment. A delta
        without one (Mistral sends whole calls so) begins a call when it has an
        id or a name, and goes on with the choice's last call otherwise.
        """
        last, free = self._calls.get(delta.choice, (None, 0))
        if delta.index is not None:
            index = delta.index
        elif last is None or delta.id is not None or delta.name is not None:
            index = free
        else:
            index = last
        self._calls[delta.choice] = (index, max(free, index + 1))
        return index

    def _choice_frame(
        self, choice: int, delta: JSONObject, finish: str | None, logprobs: JSONObject | None = None
    ) -> SSEFrame:
        if logprobs is None:
            return self._frame([{"index": choice, "delta": delta, "finish_reason": finish}])
        body = {"index": choice, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
        return self._frame([body])

    def _frame(self, choices: list[JSONObject], **extra: JSON) -> SSEFrame:
        return SSEFrame(dumps({**self._head, "choices": choices, **extra}))


def _fragment(delta: ToolCallDelta, index: int, first: bool, named: bool) -> JSONObject:
    """One tool-call fragment as OpenAI sends it: id, type and name once.

    The openai SDK concatenates every string it meets again for the same
    index (an id or a name repeated on each fragment would double), and
    keeps a call without an id or `type` from its users: the first fragment
    carries the id (`call_<index>` when the call has none) and the type.
    """
    function: JSONObject = {"arguments": delta.arguments}
    fragment: JSONObject = {"index": index}
    if first:
        fragment["id"] = delta.id if delta.id is not None else f"call_{index}"
        fragment["type"] = "function"
    if delta.name is not None and not named:
        function["name"] = delta.name
    fragment["function"] = function
    return fragment


def _usage_json(usage: Usage) -> JSONObject:
    out: JSONObject = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    prompt_details: JSONObject = {}
    if usage.cached_tokens is not None:
        prompt_details["cached_tokens"] = usage.cached_tokens
    if usage.cache_write_tokens is not None:
        prompt_details["cache_write_tokens"] = usage.cache_write_tokens
    if prompt_details:
        out["prompt_tokens_details"] = prompt_details
    if usage.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return out
