"""The `"anthropic"` dialect: Anthropic Messages API streams, frames to deltas and back.

Input: the `SSEFrame`s of a `POST /v1/messages` answer with `"stream": true`
(`event: <type>` lines optional: the type is read from the data, so the
data-only copies some proxies and recorders make decode too). Output: deltas.

The wire, as Anthropic documents it ("Streaming Messages") and sends it::

    message_start
    (content_block_start  content_block_delta*  content_block_stop)*
    message_delta         (stop_reason, stop_sequence, cumulative usage)
    message_stop          (the end marker)

with `ping` anywhere and `error` anywhere. Bodies may be padded with blanks
before the final brace (the JSON decoder does not mind).

What becomes what:

- `text_delta` -> `TextDelta`; `thinking_delta` -> `ReasoningDelta` (text
  of several blocks is concatenated in wire order with nothing added);
- a `thinking` block -> `ReasoningState(kind="thinking", data=<signature>,
  text=<the block's thinking>)` when it ends (its `signature_delta`s
  joined); a `redacted_thinking` block -> `ReasoningState(kind=
  "redacted_thinking", data=<data>)` at once (it comes whole); a
  `compaction` block (the provider's summary of the earlier turns) ->
  `ReasoningState(kind="compaction", data=<the summary>)` when it ends (its
  `compaction_delta`s joined). `raw` is the block to send back on the next
  turn;
- a client `tool_use` block -> `ToolCallDelta`s: the first with the block's
  `id` (the id the client answers with) and `name`, `index` = the order of
  `tool_use` blocks (not the content-block index), then the `input_json_delta`
  fragments verbatim (the leading `""` dropped). A block that ends having sent
  no fragment text gets its `input` serialised compactly (`"{}"` for a tool
  without arguments). A block cut by `max_tokens` (no `content_block_stop`)
  keeps the arguments as sent, valid JSON or not;
- `server_tool_use` / `mcp_tool_use` blocks -> one `ServerToolCall` when the
  block ends (its input decoded; kept as text when it is not JSON); every
  `*_tool_result` block -> a `ServerToolResult` (they come whole);
- `citations_delta` (and citations in a text block's start) -> `Citation`s,
  given when their text block ends, with `start`/`end` the span of that
  block's text in the answer (`str` indexes into `Message.content`); the
  provider's object (document offsets, `encrypted_index`, ...) is `raw`;
- `message_delta` -> `Metadata` (the stop sequence and other delta fields,
  when set), `Finish`, then `Usage`; `message_start` -> `Metadata` with the
  message `id` and `model` (and any other field it sets); fields of
  `message_stop` (Bedrock adds `amazon-bedrock-invocationMetrics`) ->
  `Metadata`;
- a `message_start` may carry blocks whole in its `content` and its
  `stop_reason` already set (a turn resumed after client tool results, as in
  programmatic tool calling, then `message_stop` with no `message_delta`):
  each block gives what a block of its type gives from its start to its
  stop (content position = its index), and the `stop_reason` is the `Finish`
  at `message_stop` unless a `message_delta` sent one;
- event types and block types this module does not know are kept, whole, in
  `Metadata({"events": [...]})` (Anthropic says new ones may appear); `ping`
  is dropped.

Finish: `end_turn`, `stop_sequence` -> `"stop"`; `max_tokens`,
`model_context_window_exceeded` -> `"length"`; `tool_use` -> `"tool_calls"`;
`refusal` -> `"content_filter"` (DESIGN: safety stops are content filters);
anything else (`pause_turn`, `compaction`, ...) stays the provider's word.
`Finish.raw` is always the `stop_reason` sent.

Usage: `message_start`'s usage with each field `message_delta` sends on top
(its numbers are cumulative and win); `prompt_tokens` = `input_tokens` +
`cache_creation_input_tokens` + `cache_read_input_tokens`, `completion_tokens`
= `output_tokens`, total computed, `cached_tokens` = `cache_read_input_tokens`,
`reasoning_tokens` = `output_tokens_details.thinking_tokens` where sent.
`Usage.raw` is the merged object (server tool counts, service tier, ...). One
`Usage` per `message_delta` (in practice one per stream); a `message_stop`
with no `message_delta` before it gives `message_start`'s.

Blocks still open when `message_delta` (or `message_stop`) comes, cut by
`max_tokens`, end there: what they hold is given, nothing is made up. State
is per open block and O(1) per event (a thinking block keeps its pieces, for
its `ReasoningState` text); text, thinking and tool-argument deltas take a
fused path in `feed_all` that reads each frame's JSON once.

Errors and ends: an `error` event (`{"type": "error", "error": {"type":
"overloaded_error", "message": ...}}`) is `ProviderError` with that type;
`message_stop` ends the stream; end of input before it is
`TruncatedStreamError` (`EmptyStreamError` when not even `message_start`
came). A frame of another dialect, JSON that is not an object, a field of the
wrong type, a delta for a block that is not open, a `message_start` of
another message id while one is open (two streams spliced together), is
`MalformedChunkError`; the same `message_start` repeated is ignored.

`AnthropicRenderer` turns deltas back into such a stream, and `http_error`
builds Anthropic's HTTP error bodies.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from ...errors import ProviderError, TruncatedStreamError
from ...models import (
    JSON,
    Citation,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from .._build import constructor
from ..provider_errors import provider_error
from ._base import (
    CONTENT_FILTER,
    LENGTH,
    STOP,
    TOOL_CALLS,
    DialectDecoder,
    OnMalformed,
    ShapeError,
    Wire,
    WireKind,
    load_json,
    opt_int,
    opt_object,
    opt_str,
    usage,
)

__all__ = ["AnthropicDecoder", "AnthropicRenderer", "http_error"]

#: The deltas of the hot path, built the cheap way (every field, positionally).
_text: Callable[[str, int], TextDelta] = constructor(TextDelta)
_reasoning: Callable[[str, int], ReasoningDelta] = constructor(ReasoningDelta)

#: The fields of a `tool_use` block a `ToolCallDelta` holds; any other is kept as `Metadata`.
_TOOL_USE_KEYS = frozenset({"type", "id", "name", "input"})

#: `stop_reason` -> the normalised finish reason (others are kept as sent).
FINISH_REASONS: dict[str, str] = {
    "end_turn": STOP,
    "stop_sequence": STOP,
    "max_tokens": LENGTH,
    "model_context_window_exceeded": LENGTH,
    "tool_use": TOOL_CALLS,
    "refusal": CONTENT_FILTER,
}

# The message fields that are not metadata (they have deltas or fields of their own).
_MESSAGE_OWN = frozenset({"type", "role", "usage", "content", "stop_reason"})
_MESSAGE_DELTA_OWN = frozenset({"type", "delta", "usage"})

# Block kinds: what their deltas and their end give. WHOLE blocks came whole
# in their start (redacted thinking, tool results); UNKNOWN ones are kept as
# events, deltas included.
_TEXT, _THINKING, _TOOL, _SERVER_TOOL, _WHOLE, _UNKNOWN, _COMPACTION = range(7)


class _Block:
    """One open content block: what its deltas need, and what its end gives."""

    __slots__ = ("args", "block", "citations", "kind", "parts", "signature", "start", "tool")

    def __init__(self, kind: int, block: JSONObject) -> None:
        self.kind = kind
        self.block = block
        self.parts: list[str] = []  # thinking text, or a server tool's input JSON
        self.signature = ""
        self.citations: list[JSONObject] = []
        self.start = 0  # a text block's offset in the answer's text
        self.tool = -1  # a client tool call's index
        self.args = False  # a client tool call got fragment text


class AnthropicDecoder(DialectDecoder):
    """Decode an Anthropic Messages stream's frames into deltas (see the module docstring).

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` frames that are not
            valid Anthropic events. Provider errors are raised either way.

    Raises:
        ValueError: `on_malformed` is neither `"raise"` nor `"skip"`.

    >>> decoder = AnthropicDecoder()
    >>> decoder.feed(SSEFrame('{"type": "content_block_start", "index": 0,'
    ...                       ' "content_block": {"type": "text", "text": ""}}'))
    []
    >>> decoder.feed(SSEFrame('{"type": "content_block_delta", "index": 0,'
    ...                       ' "delta": {"type": "text_delta", "text": "Hi"}}'))
    [TextDelta(text='Hi', choice=0)]
    >>> decoder.feed(SSEFrame('{"type": "message_stop"}')), decoder.done
    ([], True)
    """

    dialect: ClassVar[str] = "anthropic"
    end_marker: ClassVar[str] = "message_stop"

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._blocks: dict[int, _Block] = {}
        self._text: set[int] = set()  # the open text blocks, for the hot path
        self._chars = 0  # characters of answer text so far (citation spans)
        self._tools = 0
        self._usage: JSONObject = {}
        self._usage_sent = False
        self._started = False  # message_start came
        self._message_id: str | None = None  # its message id
        self._start_reason: str | None = None  # a stop_reason message_start set
        self._finished = False  # a Finish was given
        self._handlers = {
            "content_block_delta": self._delta,
            "content_block_start": self._start,
            "content_block_stop": self._stop,
            "message_start": self._message_start,
            "message_delta": self._message_delta,
            "message_stop": self._message_stop,
        }

    # -- the hot path ----------------------------------------------------------------

    def feed_all(self, items: Iterable[Any], out: list[Delta]) -> None:
        """`out += feed(item)` for each item in turn, stopping once done.

        The deltas of text, thinking and client tool arguments (nearly all a
        stream holds) are decoded inline, the JSON read once; anything else,
        and anything unusual about those, takes `feed`, which checks it all.
        """
        loads = self._loads
        text_blocks = self._text
        blocks = self._blocks
        feed = self.feed
        for item in items:
            if type(item) is SSEFrame and self._state == "open" and item.event != "error":
                try:
                    value = loads(item.data)
                except Exception:
                    value = None
                if type(value) is dict and value.get("type") == "content_block_delta":
                    delta = value.get("delta")
                    index = value.get("index")
                    if type(delta) is dict and type(index) is int:
                        kind = delta.get("type")
                        if kind == "text_delta":
                            piece = delta.get("text")
                            if type(piece) is str and index in text_blocks:
                                self._items += 1
                                if piece:
                                    self._chars += len(piece)
                                    out.append(_text(piece, 0))
                                continue
                        elif kind == "thinking_delta":
                            piece = delta.get("thinking")
                            block = blocks.get(index)
                            if type(piece) is str and block is not None and block.kind == _THINKING:
                                self._items += 1
                                if piece:
                                    block.parts.append(piece)
                                    out.append(_reasoning(piece, 0))
                                continue
                        elif kind == "input_json_delta":
                            piece = delta.get("partial_json")
                            block = blocks.get(index)
                            if type(piece) is str and block is not None and block.kind == _TOOL:
                                self._items += 1
                                if piece:
                                    block.args = True
                                    out.append(ToolCallDelta(block.tool, piece))
                                continue
            out += feed(item)
            if self._done:
                return

    # -- one frame -------------------------------------------------------------------

    def _decode(self, item: Any) -> list[Delta]:
        if not isinstance(item, SSEFrame):
            raise TypeError(
                f"AnthropicDecoder takes SSEFrame items (add rs.sse_frames()), "
                f"got {type(item).__name__}"
            )
        if item.event == "error":
            raise self._error(item)
        payload = self._object(item.data, item)
        if payload is None:
            return []
        kind = payload.get("type")
        handler = self._handlers.get(kind) if type(kind) is str else None
        if handler is not None:
            return handler(payload, item)
        if kind == "ping":
            return []
        if kind == "error":
            raise self._error(item, payload)
        return self._unknown(payload, kind, item)

    def _error(self, frame: SSEFrame, payload: JSON = None) -> ProviderError:
        if payload is None:
            try:
                payload = load_json(frame.data)
            except ValueError:
                payload = None
        return provider_error(payload, data=frame.data, event=frame.event)

    def _unknown(self, payload: JSONObject, kind: JSON, item: SSEFrame) -> list[Delta]:
        if type(kind) is not str:
            if kind is None:
                return self._malformed(
                    f"an event without a 'type' ({_looks_like(payload)}), not an Anthropic event",
                    item,
                )
            raise ShapeError("type", "a string", kind)
        other = _other_dialect(kind)
        if other is not None:
            return self._malformed(f"a {other} event ({kind!r}), not an Anthropic event", item)
        # Anthropic may add event types: kept, not an error.
        self._answered = True
        return [Metadata({"events": [payload]})]

    # -- message events --------------------------------------------------------------

    def _message_start(self, payload: JSONObject, item: SSEFrame) -> list[Delta]:
        message = opt_object(payload, "message", "")
        if message is None:
            raise ShapeError("message", "an object", payload.get("message"))
        start_usage = opt_object(message, "usage", "message")
        if start_usage is not None:
            _check_usage(start_usage, "message.usage")
        message_id = opt_str(message, "id", "message")
        opt_str(message, "model", "message")
        reason = opt_str(message, "stop_reason", "message")
        content = message.get("content")
        if content is not None and type(content) is not list:
            raise ShapeError("message.content", "an array", content)
        if self._started:
            if message_id == self._message_id:
                return []  # the same message_start again: nothing new
            return self._malformed(
                f"a message_start for message {message_id!r} while message "
                f"{self._message_id!r} is open (two streams spliced together)",
                item,
            )
        self._started = True
        self._message_id = message_id
        self._answered = True
        if start_usage is not None:
            self._usage = dict(start_usage)
        self._start_reason = reason
        data = {k: v for k, v in message.items() if k not in _MESSAGE_OWN and v is not None}
        out: list[Delta] = [Metadata(data)] if data else []
        if content:
            out += self._prefilled(content)
        return out

    def _prefilled(self, content: list[JSON]) -> list[Delta]:
        """The blocks a `message_start` carries whole, each as if it started and stopped."""
        out: list[Delta] = []
        for index, block in enumerate(content):
            path = f"message.content[{index}]"
            if type(block) is not dict:
                raise ShapeError(path, "an object", block)
            kind = opt_str(block, "type", path)
            if kind is None:
                raise ShapeError(f"{path}.type", "a string", block.get("type"))
            event: JSONObject = {"type": "message_start", "index": index, "content_block": block}
            out += self._open(index, kind, block, event)
            self._text.discard(index)
            out += self._end_block(self._blocks.pop(index), stopped=True)
        return out

    def _message_delta(self, payload: JSONObject, item: SSEFrame) -> list[Delta]:
        delta = opt_object(payload, "delta", "")
        more = opt_object(payload, "usage", "")
        stop_reason = None if delta is None else opt_str(delta, "stop_reason", "delta")
        if delta is not None:
            opt_str(delta, "stop_sequence", "delta")
        if more is not None:
            _check_usage(more, "usage")
        self._answered = True
        out = self._flush()
        data = {k: v for k, v in payload.items() if k not in _MESSAGE_DELTA_OWN and v is not None}
        if delta is not None:
            data.update((k, v) for k, v in delta.items() if k != "stop_reason" and v is not None)
        if data:
            out.append(Metadata(data))
        if stop_reason is not None:
            out.append(_finish(stop_reason))
            self._finished = True
        if more is not None:
            merged = self._usage
            merged.update((k, v) for k, v in more.items() if v is not None)
            out.append(_usage_of(merged))
            self._usage_sent = True
        return out

    def _message_stop(self, payload: JSONObject, item: SSEFrame) -> list[Delta]:
        self._done = True
        out = self._flush()
        if not self._finished and self._start_reason is not None:
            out.append(_finish(self._start_reason))  # no message_delta said otherwise
        if not self._usage_sent and self._usage:
            out.append(_usage_of(self._usage))  # no message_delta came: keep what start said
        # Fields a relay adds (Bedrock's `amazon-bedrock-invocationMetrics`): kept.
        data = {k: v for k, v in payload.items() if k != "type" and v is not None}
        if data:
            out.append(Metadata(data))
        return out

    # -- content blocks --------------------------------------------------------------

    def _start(self, payload: JSONObject, item: SSEFrame) -> list[Delta]:
        index = _index(payload)
        block = opt_object(payload, "content_block", "")
        if block is None:
            raise ShapeError("content_block", "an object", payload.get("content_block"))
        kind = opt_str(block, "type", "content_block")
        if kind is None:
            raise ShapeError("content_block.type", "a string", block.get("type"))
        if index in self._blocks:
            return self._malformed(f"content block {index} started twice", item)
        out = self._open(index, kind, block, payload)
        self._answered = True
        return out

    def _open(self, index: int, kind: str, block: JSONObject, payload: JSONObject) -> list[Delta]:
        """Open content block `index` (its fields are checked before any state changes)."""
        out: list[Delta] = []
        if kind == "text":
            text = opt_str(block, "text", "content_block") or ""
            citations = _citations(block)
            state = _Block(_TEXT, block)
            state.citations = citations
            state.start = self._chars
            self._text.add(index)
            if text:
                self._chars += len(text)
                out.append(TextDelta(text))
        elif kind == "thinking":
            thinking = opt_str(block, "thinking", "content_block") or ""
            signature = opt_str(block, "signature", "content_block") or ""
            state = _Block(_THINKING, block)
            state.signature = signature
            if thinking:
                state.parts.append(thinking)
                out.append(ReasoningDelta(thinking))
        elif kind == "redacted_thinking":
            data = opt_str(block, "data", "content_block")
            if data is None:
                raise ShapeError("content_block.data", "a string", block.get("data"))
            self._blocks[index] = _Block(_WHOLE, block)
            return [ReasoningState("redacted_thinking", data, raw=block)]
        elif kind == "tool_use":
            call_id = opt_str(block, "id", "content_block")
            name = opt_str(block, "name", "content_block")
            if call_id is None:
                raise ShapeError("content_block.id", "a string", block.get("id"))
            if name is None:
                raise ShapeError("content_block.name", "a string", block.get("name"))
            opt_object(block, "input", "content_block")
            state = _Block(_TOOL, block)
            state.tool = self._tools
            self._tools += 1
            out.append(ToolCallDelta(state.tool, "", call_id, name))
            extra = {key: value for key, value in block.items() if key not in _TOOL_USE_KEYS}
            if extra:  # e.g. `caller` on a call made from the provider's code execution
                out.append(Metadata({"tool_calls": [{"id": call_id, **extra}]}))
        elif kind == "compaction":  # the provider's summary of the earlier turns
            summary = opt_str(block, "content", "content_block")
            state = _Block(_COMPACTION, block)
            if summary:
                state.parts.append(summary)
        elif kind.endswith("_tool_use"):  # server_tool_use, mcp_tool_use: the provider runs it
            opt_str(block, "id", "content_block")
            if opt_str(block, "name", "content_block") is None:
                raise ShapeError("content_block.name", "a string", block.get("name"))
            state = _Block(_SERVER_TOOL, block)
        elif kind.endswith("_tool_result"):  # web_search_tool_result, ...: they come whole
            call_id = opt_str(block, "tool_use_id", "content_block")
            self._blocks[index] = _Block(_WHOLE, block)
            return [ServerToolResult(call_id, kind, block.get("content"), raw=block)]
        else:  # a block type rxstream does not know: kept whole, with its deltas
            self._blocks[index] = _Block(_UNKNOWN, block)
            return [Metadata({"events": [payload]})]
        self._blocks[index] = state
        return out

    def _delta(self, payload: JSONObject, item: SSEFrame) -> list[Delta]:
        index = _index(payload)
        delta = opt_object(payload, "delta", "")
        if delta is None:
            raise ShapeError("delta", "an object", payload.get("delta"))
        kind = opt_str(delta, "type", "delta")
        if kind is None:
            raise ShapeError("delta.type", "a string", delta.get("type"))
        block = self._blocks.get(index)
        if block is None:
            return self._malformed(f"a {kind} for content block {index}, which is not open", item)
        expected = _DELTA_BLOCKS.get(kind)
        if expected is None or block.kind == _UNKNOWN:
            # A delta type, or a block type, rxstream does not know: kept.
            return [Metadata({"events": [payload]})]
        if block.kind not in expected:
            what = block.block.get("type")
            return self._malformed(f"a {kind} for content block {index}, a {what} block", item)
        if kind == "text_delta":
            text = _required_str(delta, "text")
            if not text:
                return []
            self._chars += len(text)
            return [_text(text, 0)]
        if kind == "thinking_delta":
            thinking = _required_str(delta, "thinking")
            if not thinking:
                return []
            block.parts.append(thinking)
            return [_reasoning(thinking, 0)]
        if kind == "input_json_delta":
            fragment = _required_str(delta, "partial_json")
            if block.kind == _SERVER_TOOL:
                block.parts.append(fragment)
                return []
            if not fragment:
                return []
            block.args = True
            return [ToolCallDelta(block.tool, fragment)]
        if kind == "signature_delta":
            block.signature += _required_str(delta, "signature")
            return []
        if kind == "compaction_delta":
            summary = opt_str(delta, "content", "delta")
            if summary:
                block.parts.append(summary)
            return []
        # citations_delta
        citation = opt_object(delta, "citation", "delta")
        if citation is None:
            raise ShapeError("delta.citation", "an object", delta.get("citation"))
        _citation_fields(citation, "delta.citation")
        block.citations.append(citation)
        return []

    def _stop(self, payload: JSONObject, item: SSEFrame) -> list[Delta]:
        index = _index(payload)
        block = self._blocks.pop(index, None)
        if block is None:
            return self._malformed(f"a stop for content block {index}, which is not open", item)
        self._text.discard(index)
        return self._end_block(block, stopped=True)

    def _end_block(self, block: _Block, *, stopped: bool) -> list[Delta]:
        """What a block gives when it ends (or, not `stopped`, when the message ends first)."""
        kind = block.kind
        if kind == _TEXT:
            if not block.citations:
                return []
            start, end = block.start, self._chars
            return [_citation(c, start, end) for c in block.citations]
        if kind == _TOOL:
            if block.args or not stopped:
                return []  # cut by max_tokens: the arguments stay as sent
            sent = block.block.get("input")
            return [ToolCallDelta(block.tool, json.dumps(sent or {}, separators=(",", ":")))]
        if kind == _THINKING:
            if not block.signature:
                return []  # cut before its signature: nothing to send back
            text = "".join(block.parts)
            raw = {**block.block, "thinking": text, "signature": block.signature}
            return [ReasoningState("thinking", block.signature, text, raw=raw)]
        if kind == _COMPACTION:
            if not stopped:
                return []  # cut short: not a summary to send back
            summary = "".join(block.parts)
            raw = {**block.block, "content": summary}
            return [ReasoningState("compaction", summary, raw=raw)]
        if kind == _SERVER_TOOL:
            source = block.block
            text = "".join(block.parts)
            given: JSON = source.get("input")
            if text:
                try:
                    given = load_json(text)
                except ValueError:
                    given = text  # not JSON (cut short): kept as sent
            raw = {**source, "input": given}
            name = source.get("name") or ""
            return [ServerToolCall(source.get("id"), name, given, raw=raw)]
        return []

    def _flush(self) -> list[Delta]:
        """End the blocks still open when the message ends (cut by `max_tokens`)."""
        if not self._blocks:
            return []
        out: list[Delta] = []
        for index in sorted(self._blocks):
            out += self._end_block(self._blocks[index], stopped=False)
        self._blocks.clear()
        self._text.clear()
        return out

    def _end(self) -> list[Delta]:
        if not self._done and self._answered and self._blocks:
            index = max(self._blocks)
            block = self._blocks[index]
            what = block.block.get("type")
            raise TruncatedStreamError(
                f"the anthropic stream ended before message_stop, inside content block "
                f"{index} ({what}), after {self._items} item(s)"
            )
        return super()._end()


# Which blocks each delta type belongs to.
_DELTA_BLOCKS: dict[str, tuple[int, ...]] = {
    "text_delta": (_TEXT,),
    "citations_delta": (_TEXT,),
    "thinking_delta": (_THINKING,),
    "signature_delta": (_THINKING,),
    "compaction_delta": (_COMPACTION,),
    "input_json_delta": (_TOOL, _SERVER_TOOL),
}


def _finish(stop_reason: str) -> Finish:
    return Finish(FINISH_REASONS.get(stop_reason, stop_reason), raw=stop_reason)


def _index(payload: JSONObject) -> int:
    index = payload.get("index")
    if type(index) is not int:
        raise ShapeError("index", "an integer", index)
    return index


def _required_str(delta: JSONObject, key: str) -> str:
    value = delta.get(key)
    if type(value) is not str:
        raise ShapeError(f"delta.{key}", "a string", value)
    return value


def _check_usage(obj: JSONObject, path: str) -> None:
    for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens"):
        opt_int(obj, key, path)
    opt_int(obj, "cache_read_input_tokens", path)
    details = opt_object(obj, "output_tokens_details", path)
    if details is not None:
        opt_int(details, "thinking_tokens", f"{path}.output_tokens_details")


def _usage_of(merged: JSONObject) -> Usage:
    read = merged.get("cache_read_input_tokens")
    prompt = (
        (merged.get("input_tokens") or 0)
        + (merged.get("cache_creation_input_tokens") or 0)
        + (read or 0)
    )
    details = merged.get("output_tokens_details")
    thinking = details.get("thinking_tokens") if isinstance(details, dict) else None
    return usage(
        prompt,
        merged.get("output_tokens") or 0,
        reasoning=thinking,
        cached=read,
        raw=dict(merged),
    )


def _citations(block: JSONObject) -> list[JSONObject]:
    given = block.get("citations")
    if given is None:
        return []
    if type(given) is not list:
        raise ShapeError("content_block.citations", "an array", given)
    for n, citation in enumerate(given):
        if type(citation) is not dict:
            raise ShapeError(f"content_block.citations[{n}]", "an object", citation)
        _citation_fields(citation, f"content_block.citations[{n}]")
    return list(given)


def _citation_fields(citation: JSONObject, path: str) -> None:
    if opt_str(citation, "type", path) is None:
        raise ShapeError(f"{path}.type", "a string", citation.get("type"))
    for key in ("url", "source", "title", "document_title", "cited_text"):
        opt_str(citation, key, path)


def _citation(citation: JSONObject, start: int, end: int) -> Citation:
    return Citation(
        citation["type"],
        url=citation.get("url") or citation.get("source"),
        title=citation.get("title") or citation.get("document_title"),
        text=citation.get("cited_text"),
        start=start,
        end=end,
        raw=citation,
    )


def _other_dialect(kind: str) -> str | None:
    """The dialect an event type belongs to, when it is plainly not Anthropic's."""
    if kind.startswith("response."):
        return "openai-responses"
    if "-" in kind:
        return "cohere"
    if "." in kind:
        return "another dialect's"
    return None


def _looks_like(payload: JSONObject) -> str:
    if "choices" in payload:
        return "an openai-chat chunk"
    if "candidates" in payload or "usageMetadata" in payload:
        return "a gemini chunk"
    if "message" in payload and "done" in payload:
        return "an ollama object"
    keys = ", ".join(sorted(payload)[:5])
    return f"keys {keys}" if keys else "an empty object"


# =========================================================================== rendering

#: The normalised finish reason -> Anthropic's `stop_reason`.
STOP_REASONS: dict[str, str] = {
    STOP: "end_turn",
    LENGTH: "max_tokens",
    TOOL_CALLS: "tool_use",
    CONTENT_FILTER: "refusal",
}

_PING = '{"type": "ping"}'  # as Anthropic writes it, with the space


def _dumps(value: JSON) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _frame(payload: JSONObject) -> SSEFrame:
    return SSEFrame(_dumps(payload), event=payload["type"])


class AnthropicRenderer:
    """Deltas back into an Anthropic Messages stream (the inverse of `AnthropicDecoder`).

    The stream opens with `message_start` at the first delta, puts each run
    of text, thinking, a tool call, a server tool call or result in content
    blocks of its own (one open at a time, as Anthropic sends them), and ends
    at `close()` with `message_delta` (stop reason, stop sequence, usage) and
    `message_stop`. With `pings=True` (the default) a `ping` follows the first
    block's start, as the API does; `ping()` gives one for keep-alive faults.

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
    - a `ReasoningState` of kind `"thinking"` signs the open thinking block (an
      empty one is opened when none is: its text is then not repeated);
      `"redacted_thinking"` is a block of its own; other kinds (Gemini thought
      signatures, Responses reasoning items) have no Anthropic form and are left out;
    - a tool call without an id gets `toolu_<index>`, one without a name `""`;
      Anthropic sends one block at a time, so a fragment for a call whose block
      was already closed is a `ValueError`; arguments `""` decode as `"{}"`;
    - `Usage.total_tokens` is not sent (the decoder computes it); cached and
      cache-creation tokens are taken out of `input_tokens` as Anthropic counts;
    - a `Finish` reason Anthropic has no word for is sent as it is; `Finish.raw`
      is used when it is an Anthropic word for the same reason;
    - every delta must be of choice 0 (Anthropic has one).

    Raises:
        ValueError: from `feed`, a delta Anthropic cannot carry (see above), or
            a `Usage` with more cached tokens than prompt tokens.
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
        self._model = model
        self._id = id
        self._pings = pings
        self._started = False
        self._closed = False
        self._next = 0  # the next content block index
        self._open: str | None = None  # the open block's kind
        self._open_tool: int | None = None  # the tool call index of the open tool block
        self._tools: dict[int, str] = {}  # tool call index -> its id (for calls seen)
        self._last_tool: int | None = None
        self._stop_reason: str | None = None
        self._usage: Usage | None = None
        self._delta_meta: JSONObject = {}
        self._start_meta: JSONObject = {}

    def ping(self) -> list[Wire]:
        """One `ping` event (a keep-alive), as Anthropic sends it."""
        return [SSEFrame(_PING, event="ping")]

    def feed(self, delta: Delta) -> list[Wire]:
        """The wire events `delta` becomes (see the class docstring)."""
        if self._closed:
            raise RuntimeError("this AnthropicRenderer is closed; it takes no more deltas")
        if delta.choice != 0:
            raise ValueError(
                f"Anthropic streams have one choice; got a delta of choice {delta.choice}"
            )
        if type(delta) is Usage and delta.cached_tokens is not None:
            cached, prompt = delta.cached_tokens, delta.prompt_tokens
            if not 0 <= cached <= prompt:
                raise ValueError(
                    f"usage with {cached} cached tokens out of {prompt} prompt tokens: "
                    "Anthropic counts cached tokens as part of the prompt"
                )
        out: list[Wire] = []
        if type(delta) is Metadata and not self._started:
            rest = {}
            for key, value in delta.data.items():
                if key in ("id", "model") and isinstance(value, str):
                    self._start_meta[key] = value
                else:
                    rest[key] = value
            if not rest:
                return out
            delta = Metadata(rest)
        if not self._started:
            out += self._message_start()
        match delta:
            case TextDelta(text=text):
                if text:
                    self._ensure(out, "text")
                    out.append(_frame(_block_delta(self._next - 1, "text_delta", text=text)))
            case ReasoningDelta(text=text):
                if text:
                    self._ensure(out, "thinking")
                    out.append(
                        _frame(_block_delta(self._next - 1, "thinking_delta", thinking=text))
                    )
            case ToolCallDelta():
                self._tool(delta, out)
            case ReasoningState(kind="thinking", data=data):
                self._ensure(out, "thinking")
                out.append(_frame(_block_delta(self._next - 1, "signature_delta", signature=data)))
                self._close_block(out)
            case ReasoningState(kind="redacted_thinking", data=data):
                self._whole(out, {"type": "redacted_thinking", "data": data})
            case ReasoningState(kind="compaction", data=data):
                self._whole(out, {"type": "compaction", "content": data})
            case ReasoningState():
                pass  # no Anthropic form (see the class docstring)
            case Citation():
                if self._open not in ("text", "cited"):
                    self._close_block(out)
                    self._open_block(out, "text", {"type": "text", "text": "", "citations": []})
                citation = {**(delta.raw or {}), "type": delta.kind}
                for key, value in (
                    ("url", delta.url),
                    ("title", delta.title),
                    ("cited_text", delta.text),
                ):
                    if value is not None:
                        citation[key] = value
                out.append(
                    _frame(_block_delta(self._next - 1, "citations_delta", citation=citation))
                )
                self._open = "cited"  # the next text opens a block of its own
            case ServerToolCall():
                self._server_call(delta, out)
            case ServerToolResult(call_id=call_id, name=name, content=content, raw=raw):
                kind = name if name.endswith("_tool_result") else f"{name}_tool_result"
                base = raw if raw is not None and raw.get("type") == kind else {}
                self._whole(out, {**base, "type": kind, "tool_use_id": call_id, "content": content})
            case Finish(reason=reason, raw=raw):
                self._close_block(out)
                if raw is not None and FINISH_REASONS.get(raw, raw) == reason:
                    self._stop_reason = raw
                else:
                    self._stop_reason = STOP_REASONS.get(reason, reason)
            case Usage():
                self._usage = delta
            case Metadata(data=data):
                for key, value in data.items():
                    if key == "events" and isinstance(value, list):
                        for event in value:
                            self._event(event, out)
                    else:
                        self._delta_meta[key] = value
        return out

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
        creation = raw.get("cache_creation_input_tokens")
        if type(creation) is not int or not 0 <= creation <= given.prompt_tokens - read:
            creation = 0
        out: JSONObject = {
            k: v
            for k, v in raw.items()
            if k not in ("cache_read_input_tokens", "output_tokens_details")
        }
        out["input_tokens"] = given.prompt_tokens - read - creation
        out["cache_creation_input_tokens"] = creation
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
        if self._open is not None:
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
            self._close_block(out)
            block = {"type": "tool_use", "id": call_id, "name": delta.name or "", "input": {}}
            self._open_block(out, "tool", block)
            self._open_tool = index
            out.append(_frame(_block_delta(self._next - 1, "input_json_delta", partial_json="")))
        elif self._open_tool != index:
            raise ValueError(
                f"a fragment of tool call {index} after its content block closed: "
                "Anthropic streams one content block at a time"
            )
        if delta.arguments:
            out.append(
                _frame(
                    _block_delta(self._next - 1, "input_json_delta", partial_json=delta.arguments)
                )
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
            text = given if isinstance(given, str) else _dumps(given)
            out.append(_frame(_block_delta(index, "input_json_delta", partial_json=text)))
        self._close_block(out)


def _block_delta(index: int, kind: str, **fields: JSON) -> JSONObject:
    return {"type": "content_block_delta", "index": index, "delta": {"type": kind, **fields}}


# =========================================================================== HTTP errors

#: HTTP status -> Anthropic's `error.type` (docs: "Errors"; 413 is sent by Cloudflare).
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """The content type and body of an Anthropic HTTP error answer.

    `{"type": "error", "error": {"type": ..., "message": ...}}`, the type
    from `type` or else the status (`ERROR_TYPES`; other 4xx are
    `invalid_request_error`, anything else `api_error`). Anthropic's errors
    carry no code: `code` is accepted for the common signature and not sent.

    >>> http_error(529, "Overloaded")[1]
    b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    """
    kind = type or ERROR_TYPES.get(
        status, "invalid_request_error" if 400 <= status < 500 else "api_error"
    )
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return "application/json", _dumps(body).encode()
