"""The `"anthropic"` dialect: the decoder (wire events -> deltas).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

from ...._fast import constructor
from ...._typed import typed
from ....errors import ProviderError, TruncatedStreamError
from ....models import (
    JSON,
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
)
from ...pipeline import Handoff
from ...provider_errors import provider_error
from .._base import (
    CONTENT_FILTER,
    LENGTH,
    STOP,
    TOOL_CALLS,
    DialectDecoder,
    OnMalformed,
    Reader,
    ShapeError,
    foreign,
    load_json,
    opt_object,
    opt_str,
    pair_type,
)
from .._shared import Budget, reread, skeleton
from .fields import (
    _check_usage,
    _citation,
    _citation_fields,
    _citations,
    _index,
    _required_str,
    _usage_of,
)

__all__ = ["FINISH_REASONS", "AnthropicDecoder"]

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
    #: What it takes, fused (`Handoff`): an `SSEParser` fused in front hands each
    #: frame as an `(event, data)` tuple; the last, unterminated frame still whole.
    takes = Handoff.PAIRS
    gives_deltas_only = True

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._blocks: dict[int, _Block] = {}
        self._text: set[int] = set()  # the open text blocks, for the hot path
        # The skeleton of the last plain text delta (`_plain_reader`), or None.
        self._around: tuple[str, str] | None = None
        self._budget = Budget()  # not before a few text deltas (a short stream learns none)
        self._chars = 0  # characters of answer text so far (citation spans)
        # The last block to end was a text block with text and no citations list, and no
        # block started since: a text block starting now would run into its text.
        self._after_text = False
        self._tools = 0
        self._usage: JSONObject = {}
        self._usage_sent = False
        self._started = False  # message_start came
        self._message_id: str | None = None  # its message id
        self._start_reason: str | None = None  # a stop_reason message_start set
        self._finished = False  # a Finish was given
        # The typed decoding of the usual events (the `fast` extra), or None.
        self._typed: Any = typed("anthropic")
        self._handlers = {
            "content_block_delta": self._delta,
            "content_block_start": self._start,
            "content_block_stop": self._stop,
            "message_start": self._message_start,
            "message_delta": self._message_delta,
            "message_stop": self._message_stop,
        }

    # -- the hot path ----------------------------------------------------------------

    def _reader(self, out: list[Delta]) -> Reader | None:
        """The usual events' reader (see `DialectDecoder._reader`).

        The deltas of text, thinking and client tool arguments (nearly all a
        stream holds), the JSON read once: with the `fast` extra into the
        typed module's msgspec types (`_typed_reader`), else as dicts, a text
        delta like the last one by its text alone (`_plain_reader`). An
        `(event, data)` tuple is a frame from the SSE parser fused in front
        (`_take`).
        """
        if self._typed is not None:
            return self._typed_reader(out)
        return self._plain_reader(out)

    def _typed_reader(self, out: list[Delta]) -> Reader:
        """Block deltas (and pings) decoded into the typed types, as `_delta` reads them."""
        typed: Any = self._typed
        decode, block_delta, ping = typed.decode, typed.BlockDelta, typed.Ping
        text_type, thinking_type, json_type = typed.Text, typed.Thinking, typed.InputJSON
        append, text_blocks, blocks = out.append, self._text, self._blocks
        pair, text = pair_type(self._pairs), _text

        def typed_events(items: list[Any], start: int) -> int:
            chars = self._chars
            try:
                for at in range(start, len(items)):
                    item = items[at]
                    if type(item) is pair:
                        event, data = item
                    elif type(item) is SSEFrame:
                        event, data = item.event, item.data
                    else:
                        return at
                    if event == "error":
                        return at
                    try:
                        value: Any = decode(data)
                    except (ValueError, TypeError):
                        return at  # not a usual event: `_decode` reads it
                    if type(value) is not block_delta:
                        if type(value) is ping:
                            continue
                        return at
                    delta = value.delta
                    kind = type(delta)
                    if kind is text_type:
                        if value.index not in text_blocks:
                            return at
                        piece = delta.text
                        if piece:
                            chars += len(piece)
                            append(text(piece, 0))
                        continue
                    block = blocks.get(value.index)
                    if block is None:
                        return at
                    if kind is thinking_type and block.kind == _THINKING:
                        piece = delta.thinking
                        if piece:
                            block.parts.append(piece)
                            append(_reasoning(piece, 0))
                    elif kind is json_type and block.kind == _TOOL:
                        piece = delta.partial_json
                        if piece:
                            block.args = True
                            append(ToolCallDelta(block.tool, piece))
                    else:
                        return at
                return len(items)
            finally:
                self._chars = chars

        return typed_events

    def _plain_reader(self, out: list[Delta]) -> Reader:
        """Block deltas read as dicts: a text delta like the last one by its text alone.

        The last text delta read whole is kept as the JSON around its text
        (`_shared.skeleton`); the next one made of the same is read by its
        text alone (`reread`). `_decode` forgets it (what it stood for, the
        open blocks, may change there).
        """
        append, loads, pair, text = out.append, self._loads, pair_type(self._pairs), _text

        def plain_events(items: list[Any], start: int) -> int:
            for at in range(start, len(items)):
                item = items[at]
                if type(item) is pair:
                    event, data = item
                elif type(item) is SSEFrame:
                    event, data = item.event, item.data
                else:
                    return at
                if event == "error":
                    return at
                around = self._around
                if around is not None:
                    piece = reread(data, *around)
                    if piece is not None:
                        if piece:
                            self._chars += len(piece)
                            append(text(piece, 0))
                        continue
                try:
                    value = loads(data)
                except Exception:
                    return at
                if type(value) is not dict or value.get("type") != "content_block_delta":
                    return at
                if not self._plain_delta(value, data, append):
                    return at
            return len(items)

        return plain_events

    def _plain_delta(self, value: JSONObject, data: str, append: Callable[[Delta], None]) -> bool:
        """`_delta`'s rules for a text, thinking or input JSON delta read as a dict (else False)."""
        delta = value.get("delta")
        index = value.get("index")
        if type(delta) is not dict or type(index) is not int:
            return False
        name = delta.get("type")
        if name == "text_delta":
            piece = delta.get("text")
            if type(piece) is not str or index not in self._text:
                return False
            if piece:
                self._chars += len(piece)
                append(_text(piece, 0))
                if self._around is None and self._budget.waited():
                    self._around = skeleton(data, "text", piece)
            return True
        block = self._blocks.get(index)
        if block is None:
            return False
        if name == "thinking_delta" and block.kind == _THINKING:
            piece = delta.get("thinking")
            if type(piece) is not str:
                return False
            if piece:
                block.parts.append(piece)
                append(_reasoning(piece, 0))
            return True
        if name == "input_json_delta" and block.kind == _TOOL:
            piece = delta.get("partial_json")
            if type(piece) is not str:
                return False
            if piece:
                block.args = True
                append(ToolCallDelta(block.tool, piece))
            return True
        return False

    # -- one frame -------------------------------------------------------------------

    def _decode(self, item: Any) -> list[Delta]:
        self._around = None  # what it stood for may change (see `_plain_reader`)
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
                return self._foreign("an event without a 'type', not an Anthropic event", item)
            raise ShapeError("type", "a string", kind)
        if foreign(item, self.dialect) is not None:
            return self._foreign(f"an event of type {kind!r}, not an Anthropic event", item)
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
        after_text, self._after_text = self._after_text, False
        if kind == "text":
            text = opt_str(block, "text", "content_block") or ""
            citations = _citations(block)
            if after_text:  # a block of its own, not the end of the one before
                out.append(TextBlockStart(raw=block))
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
            if self._typed is None and index in self._text and self._budget.waited():
                # The next text delta like it may be read by its text (`_plain_reader`).
                self._around = skeleton(item.data, "text", text)
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
            sealed = opt_str(delta, "encrypted_content", "delta")
            if sealed is not None:  # opaque, to go back with the block (the last one given)
                block.block = {**block.block, "encrypted_content": sealed}
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
            start, end = block.start, self._chars
            self._after_text = end > start and "citations" not in block.block
            if block.citations:
                return [_citation(c, start, end) for c in block.citations]
            if "citations" in block.block and end > start:
                # A list that stayed empty: the block still stands apart, as it came.
                return [EmptyCitations(start, end, raw=block.block)]
            return []
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
            # No summary came: a compaction that failed, whose `content` stays null (the
            # API takes it back as a no-op, and refuses an empty string there).
            raw = {**block.block, "content": summary or None}
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
