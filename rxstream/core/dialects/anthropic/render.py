"""The `"anthropic"` dialect: the renderer (deltas -> wire events).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

from json.encoder import encode_basestring
from typing import ClassVar

from ...._fast import enabled
from ....errors import ProviderError
from ....models import (
    JSON,
    Citation,
    Delta,
    EmptyCitations,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    TextBlockStart,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from .._base import (
    CONTENT_FILTER,
    LENGTH,
    STOP,
    TOOL_CALLS,
    ResetRule,
    Wire,
    WireKind,
)
from .._shared import TEXT_MARK, dumps, text_halves
from .decode import FINISH_REASONS

__all__ = ["ANTHROPIC_STOP_REASONS", "STOP_REASONS", "AnthropicRenderer"]

# =========================================================================== rendering

#: The normalised finish reason -> Anthropic's `stop_reason`.
STOP_REASONS: dict[str, str] = {
    STOP: "end_turn",
    LENGTH: "max_tokens",
    TOOL_CALLS: "tool_use",
    CONTENT_FILTER: "refusal",
}

#: Every `stop_reason` the Messages API sends (what the anthropic SDK's type names).
ANTHROPIC_STOP_REASONS = frozenset(
    {
        "end_turn",
        "max_tokens",
        "stop_sequence",
        "tool_use",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    }
)

_PING = '{"type": "ping"}'  # as Anthropic writes it, with the space


def _stop_reason(reason: str, raw: str | None) -> str:
    """Anthropic's `stop_reason` for a finish of any dialect.

    Anthropic's own word is kept when it means the reason (`stop_sequence`,
    `pause_turn`); another dialect's word never goes through (`"tool_calls"`,
    `"stop"`, `"STOP"`): the normalised reason is mapped (`tool_use`,
    `end_turn`, `max_tokens`, `refusal`); a reason no Anthropic word means is
    written as it is.
    """
    if raw is not None and raw in ANTHROPIC_STOP_REASONS and FINISH_REASONS.get(raw) == reason:
        return raw
    return STOP_REASONS.get(reason, reason)


def _frame(payload: JSONObject) -> SSEFrame:
    return SSEFrame(dumps(payload), event=payload["type"])


#: The usage counts written from the `Usage`'s fields, not copied from its `raw`.
_CACHE_COUNTS = frozenset(
    {"cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens_details"}
)


class AnthropicRenderer:
    """Deltas back into an Anthropic Messages stream (the inverse of `AnthropicDecoder`).

    The stream opens with `message_start` at the first delta, puts each run
    of text, thinking, a tool call, a server tool call or result in content
    blocks of its own (one open at a time, as Anthropic sends them), and ends
    at `close()` with `message_delta` (stop reason, stop sequence, usage) and
    `message_stop`. With `pings=True` (the default) a `ping` follows the first
    block's start, as the API does; `ping()` gives one for keep-alive faults.

    A `Reset` (a new answer replaces the one so far), which this format
    cannot carry, follows `ResetRule`: the new answer goes on in the same
    stream, its tool calls numbered after the dropped answer's.

    Args:
        model: the model name written into `message_start`.
        id: the message id written into `message_start`.
        pings: send a `ping` after the first content block starts.

    What it cannot express, and what it does instead:

    - `Metadata` `id` / `model` arriving before the first other delta go into
      `message_start`; `events` are sent again as they were; every other key
      goes into `message_delta`'s `delta` (where the stop sequence lives);
    - a `Citation` is sent in the open text block (one is opened when none is)
      and closes it, so it decodes with that block's span as `start`/`end`;
      an `EmptyCitations` closes the open text block too, but its start went
      out already without `citations`, so it reads back as a plain text block
      of its own (`TextBlock.citations` None, not `()`);
    - a `TextBlockStart` closes the open text block: the text after it goes
      in a block of its own (so text before a cited block, which the
      decoders mark so, stays out of that block);
    - a `ReasoningState` of kind `"thinking"` signs the open thinking block (an
      empty one is opened when none is: its text is then not repeated);
      `"redacted_thinking"` is a block of its own; `"compaction"` a block
      opened with null `content` and `encrypted_content` and filled by one
      `compaction_delta` (the summary, null when there is none, and the
      `encrypted_content` its `raw` holds), as the API streams it; other kinds (Gemini thought
      signatures, Responses reasoning items) have no Anthropic form and are left out;
    - a tool call without an id gets `toolu_<index>`, one without a name `""`;
      the blocks of calls that stream side by side stay open together, each
      fragment naming its own block's index (the wire allows it, the SDK and
      the decoder read it; Anthropic itself sends one block at a time); a
      fragment for a call whose block was closed by text or thinking between
      is a `ValueError`; arguments `""` decode as `"{}"`;
    - `Usage.total_tokens` is not sent (the decoder computes it); cached and
      cache-creation tokens are taken out of `input_tokens` as Anthropic counts;
      `message_start` says `input_tokens: 0` while the usage is unknown (the
      figures follow in `message_delta`, which wins), and a stream without any
      `Usage` ends with zeros there, as Anthropic always sends usage;
    - a `Finish` reason Anthropic has no word for is sent as it is; `Finish.raw`
      is used when it is an Anthropic word for the same reason;
    - deltas of choices other than 0 are left out (Anthropic has one choice),
      as every renderer does: a multi-choice stream translates as its first.

    Raises:
        ValueError: from `feed`, a delta Anthropic cannot carry (see above), or
            a `Usage` with more cached and cache-write tokens than prompt tokens.
        RuntimeError: `feed` or `close` after `close()` or `error()`.

    >>> r = AnthropicRenderer(pings=False)
    >>> [f.event for f in r.feed(TextDelta("Hi"))]
    ['message_start', 'content_block_start', 'content_block_delta']
    >>> [f.event for f in r.feed(Finish("stop")) + r.close()]
    ['content_block_stop', 'message_delta', 'message_stop']
    """

    wire: ClassVar[WireKind] = "sse"
    newline: ClassVar[str] = "\n"

    def __init__(
        self,
        *,
        model: str = "claude-sonnet-4-5",
        id: str = "msg_01rxstreamRenderedMessage",
        pings: bool = True,
    ) -> None:
        self._resets = ResetRule()  # what a Reset does here (ResetRule)
        self._model = model
        self._id = id
        self._pings = pings
        self._started = False
        self._closed = False
        self._next = 0  # the next content block index
        self._open: str | None = None  # the open block's kind
        self._open_tool: int | None = None  # the tool call index of the open tool block
        # Tool calls whose blocks are open: call index -> block index. Several may be open
        # at once: each fragment names its block by index, as the wire allows.
        self._tool_blocks: dict[int, int] = {}
        self._tools: dict[int, str] = {}  # tool call index -> its id (for calls seen)
        self._last_tool: int | None = None
        self._stop_reason: str | None = None
        self._usage: Usage | None = None
        self._delta_meta: JSONObject = {}
        self._start_meta: JSONObject = {}
        # The text_delta of the open text block as a template (a fast path): its
        # block index, and the JSON before and after the text.
        self._templates = enabled()
        self._text_template: tuple[int, str, str] | None = None

    def ping(self) -> list[Wire]:
        """One `ping` event (a keep-alive), as Anthropic sends it."""
        return [SSEFrame(_PING, event="ping")]

    def feed(self, delta: Delta) -> list[Wire]:
        """The wire events `delta` becomes (see the class docstring)."""
        self._check(delta)
        if type(delta) is not TextDelta or self._resets.ended or delta.choice != 0:
            written = self._written(delta)
            if written is None:
                return []
            delta = written
        out: list[Wire] = []
        if not self._started:
            out += self._message_start()
        match delta:
            case TextDelta(text=text):
                if text:
                    self._ensure(out, "text")
                    out.append(self._text_delta(text))
            case ReasoningDelta(text=text):
                if text:
                    self._ensure(out, "thinking")
                    out.append(
                        _frame(_block_delta(self._next - 1, "thinking_delta", thinking=text))
                    )
            case ToolCallDelta():
                self._tool(delta, out)
            case ReasoningState():
                self._reasoning_state(delta, out)
            case Citation() | EmptyCitations():
                self._citation(delta, out)
            case TextBlockStart():
                if self._open in ("text", "cited"):
                    self._close_block(out)  # the text that follows is a block of its own
            case ServerToolCall():
                self._server_call(delta, out)
            case ServerToolResult():
                self._server_result(delta, out)
            case Finish(reason=reason, raw=raw):
                self._close_block(out)
                self._stop_reason = _stop_reason(reason, raw)
            case Usage():
                self._usage = delta
            case Metadata(data=data):
                self._metadata(data, out)
        return out

    def _written(self, delta: Delta) -> Delta | None:
        """What `feed` writes of `delta`, past resets (`Resets.see`), other choices and the
        metadata the message's start takes; None when nothing."""
        seen = self._resets.see(delta)
        if seen is None or seen.choice != 0:
            return None
        if type(seen) is Metadata and not self._started:
            return self._take_start_meta(seen)
        return seen

    def text_event(self, delta: TextDelta) -> tuple[str, str] | None:
        """The one event `feed(delta)` gives for a text delta, as (name, data), when it
        changes nothing else (the open text block's `text_delta`); else None: `feed` it.

        What `feed` writes, without its layers: an encoder asks this first (a
        server writes one per token). Only where `feed` would only append that
        event: the renderer open, the first choice's text, a text block open, no
        reset ending the choice, the fast paths on.
        """
        if (
            self._open != "text"
            or not self._templates
            or self._closed
            or self._resets.ended
            or delta.choice != 0
            or not delta.text
        ):
            return None
        return _BLOCK_DELTA, self._text_data(delta.text)

    def _text_delta(self, text: str) -> SSEFrame:
        """The open text block's `text_delta` event (`_block_delta`, written by `dumps`).

        With the fast paths on, through a template `dumps` wrote once per block
        (`_around_text`): the text's JSON string between the same two halves is
        what `dumps` writes for the whole (a server writes one per token).
        """
        if not self._templates:
            return _frame(_block_delta(self._next - 1, "text_delta", text=text))
        return SSEFrame(self._text_data(text), event=_BLOCK_DELTA)

    def _text_data(self, text: str) -> str:
        """The open text block's `text_delta` data, through its template (`_text_delta`)."""
        index = self._next - 1
        template = self._text_template
        if template is None or template[0] != index:
            template = self._text_template = (index, *_around_text(index))
        return f"{template[1]}{encode_basestring(text)}{template[2]}"

    def _server_result(self, result: ServerToolResult, out: list[Wire]) -> None:
        """A server tool's result as its whole `<name>_tool_result` block."""
        name = result.name
        kind = name if name.endswith("_tool_result") else f"{name}_tool_result"
        raw = result.raw
        base = raw if raw is not None and raw.get("type") == kind else {}
        block = {**base, "type": kind, "tool_use_id": result.call_id, "content": result.content}
        self._whole(out, block)

    def _metadata(self, data: JSONObject, out: list[Wire]) -> None:
        """Events kept whole are written again; other metadata goes on the `message_delta`."""
        for key, value in data.items():
            if key == "events" and isinstance(value, list):
                for event in value:
                    self._event(event, out)
            else:
                self._delta_meta[key] = value

    def _check(self, delta: Delta) -> None:
        """Refuse what Anthropic's stream cannot carry (before anything is written)."""
        if self._closed:
            raise RuntimeError("this AnthropicRenderer is closed; it takes no more deltas")
        if type(delta) is Usage:
            cached, written = delta.cached_tokens or 0, delta.cache_write_tokens or 0
            prompt = delta.prompt_tokens
            if cached < 0 or written < 0 or cached + written > prompt:
                raise ValueError(
                    f"usage with {cached} cached tokens and {written} cache-write tokens out of "
                    f"{prompt} prompt tokens: Anthropic counts both as part of the prompt"
                )

    def _take_start_meta(self, delta: Metadata) -> Metadata | None:
        """Keep the `id` and `model` for `message_start`; the rest, or None when nothing is left."""
        rest = {}
        for key, value in delta.data.items():
            if key in ("id", "model") and isinstance(value, str):
                self._start_meta[key] = value
            else:
                rest[key] = value
        return Metadata(rest) if rest else None

    def _reasoning_state(self, state: ReasoningState, out: list[Wire]) -> None:
        match state:
            case ReasoningState(kind="thinking", data=data):
                self._ensure(out, "thinking")
                out.append(_frame(_block_delta(self._next - 1, "signature_delta", signature=data)))
                self._close_block(out)
            case ReasoningState(kind="redacted_thinking", data=data):
                self._whole(out, {"type": "redacted_thinking", "data": data})
            case ReasoningState(kind="compaction"):
                self._compaction(state, out)
            case _:
                pass  # no Anthropic form (see the class docstring)

    def _compaction(self, state: ReasoningState, out: list[Wire]) -> None:
        """A compaction block as the API streams it: opened empty, then one `compaction_delta`."""
        raw = state.raw or {}
        kept = {k: v for k, v in raw.items() if k not in ("content", "encrypted_content")}
        self._close_block(out)
        start = {**kept, "type": "compaction", "content": None, "encrypted_content": None}
        self._open_block(out, "whole", start)
        # A failed compaction (no summary) keeps its content null: the API refuses "".
        delta: JSONObject = {"content": state.data or None}
        if raw.get("encrypted_content") is not None:
            delta["encrypted_content"] = raw["encrypted_content"]
        out.append(_frame(_block_delta(self._next - 1, "compaction_delta", **delta)))
        self._close_block(out)

    def _citation(self, delta: Citation | EmptyCitations, out: list[Wire]) -> None:
        if isinstance(delta, EmptyCitations):
            if self._open == "text":
                self._open = "cited"  # the next text opens a block of its own
            return
        if self._open not in ("text", "cited"):
            self._close_block(out)
            self._open_block(out, "text", {"type": "text", "text": "", "citations": []})
        citation = {**(delta.raw or {}), "type": delta.kind}
        for key, value in (("url", delta.url), ("title", delta.title), ("cited_text", delta.text)):
            if value is not None:
                citation[key] = value
        out.append(_frame(_block_delta(self._next - 1, "citations_delta", citation=citation)))
        self._open = "cited"  # the next text opens a block of its own

    def close(self) -> list[Wire]:
        """The events that end the stream: the open block's stop, message_delta, message_stop."""
        if self._closed:
            raise RuntimeError("this AnthropicRenderer is closed already")
        out: list[Wire] = []
        if not self._started:
            out += self._message_start()
        self._close_block(out)
        self._closed = True
        delta: JSONObject = {"stop_reason": self._stop_reason, "stop_sequence": None}
        delta.update(self._delta_meta)
        out.append(_frame({"type": "message_delta", "delta": delta, "usage": self._usage_out()}))
        out.append(_frame({"type": "message_stop"}))
        return out

    def error(self, error: ProviderError) -> list[Wire]:
        """An `error` event in Anthropic's shape, which ends the stream (no `message_stop`)."""
        if self._closed:
            raise RuntimeError("this AnthropicRenderer is closed already")
        self._closed = True
        body = {
            "type": "error",
            "error": {"type": error.type or "api_error", "message": error.message},
        }
        return [_frame(body)]

    # -- helpers -----------------------------------------------------------------------

    def _message_start(self) -> list[Wire]:
        self._started = True
        # Anthropic always names `input_tokens` here, and strict readers (the AI
        # SDK's anthropic provider) refuse a message_start without it: 0 while the
        # usage is unknown. The real figures come in message_delta, whose numbers
        # win (in the decoder as in the SDKs), so the usage reads back as rendered.
        start_usage: JSONObject = {"input_tokens": 0, "output_tokens": 0}
        if self._usage is not None:
            start_usage = self._usage_out()
        message = {
            "id": self._start_meta.get("id", self._id),
            "type": "message",
            "role": "assistant",
            "model": self._start_meta.get("model", self._model),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": start_usage,
        }
        return [_frame({"type": "message_start", "message": message})]

    def _usage_out(self) -> JSONObject:
        given = self._usage
        if given is None:
            return {"output_tokens": 0}
        raw = given.raw if given.raw is not None and "output_tokens" in given.raw else {}
        read = given.cached_tokens or 0
        creation = given.cache_write_tokens or 0
        out: JSONObject = {k: v for k, v in raw.items() if k not in _CACHE_COUNTS}
        out["input_tokens"] = given.prompt_tokens - read - creation
        if given.cache_write_tokens is not None:
            out["cache_creation_input_tokens"] = given.cache_write_tokens
        if given.cached_tokens is not None:
            out["cache_read_input_tokens"] = given.cached_tokens
        out["output_tokens"] = given.completion_tokens
        if given.reasoning_tokens is not None:
            out["output_tokens_details"] = {"thinking_tokens": given.reasoning_tokens}
        return out

    def _open_block(self, out: list[Wire], kind: str, block: JSONObject) -> None:
        out.append(
            _frame({"type": "content_block_start", "index": self._next, "content_block": block})
        )
        if self._pings and self._next == 0:
            out += self.ping()
        self._next += 1
        self._open = kind

    def _close_block(self, out: list[Wire]) -> None:
        if self._open == "tool":
            for block in sorted(self._tool_blocks.values()):
                out.append(_frame({"type": "content_block_stop", "index": block}))
            self._tool_blocks.clear()
            self._open = None
            self._open_tool = None
        elif self._open is not None:
            out.append(_frame({"type": "content_block_stop", "index": self._next - 1}))
            self._open = None
            self._open_tool = None

    def _ensure(self, out: list[Wire], kind: str) -> None:
        if self._open == kind:
            return
        self._close_block(out)
        if kind == "text":
            self._open_block(out, kind, {"type": "text", "text": ""})
        else:
            self._open_block(out, kind, {"type": "thinking", "thinking": "", "signature": ""})

    def _whole(self, out: list[Wire], block: JSONObject) -> None:
        self._close_block(out)
        self._open_block(out, "whole", block)
        self._close_block(out)

    def _tool(self, delta: ToolCallDelta, out: list[Wire]) -> None:
        index = delta.index
        if index is None:  # no index (Mistral): a new id starts a call, else the last goes on
            known = [n for n, i in self._tools.items() if delta.id is not None and i == delta.id]
            if known:
                index = known[0]
            elif delta.id is not None or self._last_tool is None:
                index = max(self._tools, default=-1) + 1
            else:
                index = self._last_tool
        if index not in self._tools:
            call_id = delta.id or f"toolu_{index:02d}"
            self._tools[index] = call_id
            self._last_tool = index
            if self._open != "tool":
                self._close_block(out)
            block = {"type": "tool_use", "id": call_id, "name": delta.name or "", "input": {}}
            self._open_block(out, "tool", block)
            self._open_tool = index
            self._tool_blocks[index] = self._next - 1
            out.append(_frame(_block_delta(self._next - 1, "input_json_delta", partial_json="")))
        elif index not in self._tool_blocks:
            raise ValueError(
                f"a fragment of tool call {index} after its content block closed (text or "
                "thinking came between): Anthropic has no way to reopen a content block"
            )
        if delta.arguments:
            block_index = self._tool_blocks[index]
            out.append(
                _frame(_block_delta(block_index, "input_json_delta", partial_json=delta.arguments))
            )

    def _event(self, event: JSON, out: list[Wire]) -> None:
        """Send again an event the decoder kept whole (a type rxstream does not know)."""
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            return
        kind = event["type"]
        if kind == "content_block_start":
            block = event.get("content_block")
            self._close_block(out)
            self._open_block(out, "unknown", block if isinstance(block, dict) else {})
        elif kind in ("content_block_delta", "content_block_stop"):
            if self._open is not None:  # into the block open now (indexes are the renderer's)
                out.append(_frame({**event, "index": self._next - 1}))
                if kind == "content_block_stop":
                    self._open = self._open_tool = None
        else:
            out.append(_frame(event))

    def _server_call(self, call: ServerToolCall, out: list[Wire]) -> None:
        kind = "server_tool_use"
        if call.raw is not None and str(call.raw.get("type", "")).endswith("_tool_use"):
            kind = call.raw["type"]
        base = call.raw if call.raw is not None and call.raw.get("type") == kind else {}
        block = {**base, "type": kind, "id": call.id, "name": call.name, "input": {}}
        self._close_block(out)
        self._open_block(out, "server_tool", block)
        index = self._next - 1
        out.append(_frame(_block_delta(index, "input_json_delta", partial_json="")))
        given = call.input
        if given is not None and given != {}:
            text = given if isinstance(given, str) else dumps(given)
            out.append(_frame(_block_delta(index, "input_json_delta", partial_json=text)))
        self._close_block(out)


def _block_delta(index: int, kind: str, **fields: JSON) -> JSONObject:
    return {"type": _BLOCK_DELTA, "index": index, "delta": {"type": kind, **fields}}


_BLOCK_DELTA = "content_block_delta"


def _around_text(index: int) -> tuple[str, str]:
    """The JSON `dumps` writes for block `index`'s `text_delta`, before and after the text."""
    return text_halves(dumps(_block_delta(index, "text_delta", text=TEXT_MARK)))
