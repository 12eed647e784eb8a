"""The `"bedrock"` dialect: AWS Bedrock ConverseStream, event-stream messages to deltas and back.

Input: `EventStreamMessage`s (what `EventStreamParser` / `rs.eventstream_frames()`
cut from an `application/vnd.amazon.eventstream` body). Output: deltas.

The stream, by its `:event-type` header (payloads are JSON objects; every one
carries a random-length `p` padding string, which is ignored)::

    messageStart  ([contentBlockStart] contentBlockDelta* contentBlockStop)*  messageStop  metadata

- `contentBlockDelta.delta.text` is `TextDelta` (text blocks have no
  `contentBlockStart`, or one with an empty `start`, which gives nothing);
  `reasoningContent.text` is `ReasoningDelta`.
- A `contentBlockStart` with `toolUse {toolUseId, name}` begins a client tool
  call: `ToolCallDelta` with `id` = `toolUseId` (the id the client answers
  with) and `index` = the order of the tool-use blocks (not
  `contentBlockIndex`); its `toolUse.input` deltas are the JSON text
  fragments; a call whose input stayed empty gets `"{}"` at its
  `contentBlockStop`.
- `toolUse` with `type: "server_tool_use"` is a provider-side tool
  (`ServerToolCall` at its stop, its input decoded); a `toolResult` block is
  its result (`ServerToolResult`, the content items of its deltas).
- A reasoning block's `signature` becomes, at its stop, `ReasoningState`
  kind `"thinking"` (data: the signature, text: the block's thinking) and its
  `redactedContent` (base64) kind `"redacted_thinking"`; `raw` is the
  `reasoningContent` block to send back (`{"reasoningText": {"text",
  "signature"}}` or `{"redactedContent": ...}`).
- `citation` deltas are `Citation`s (kind: the location kind, `"web"`,
  `"documentChar"`, ...; url, title and the cited source text; Bedrock's
  offsets point into the source, not the answer, so `start`/`end` stay None).
- `messageStop.stopReason` is `Finish`: `end_turn`/`stop_sequence` -> `stop`
  (`tool_calls` when client tool calls were asked for), `max_tokens`/
  `model_context_window_exceeded` -> `length`, `tool_use` -> `tool_calls`,
  `guardrail_intervened`/`content_filtered` -> `content_filter`, any other
  word as it is; `raw` keeps it. `additionalModelResponseFields` is `Metadata`.
- `metadata.usage` is `Usage`: prompt = `inputTokens + cacheReadInputTokens +
  cacheWriteInputTokens` (AWS counts cache reads and writes apart), completion
  = `outputTokens`, total = `totalTokens` as sent, cached =
  `cacheReadInputTokens`; `metrics`, `trace`, `performanceConfig` and
  `serviceTier` are `Metadata`. Image blocks and event types this module does
  not know are kept as `Metadata` under `"events"` (the service adds members),
  and so are `reasoningContent` deltas with members other than `text`,
  `signature` and `redactedContent`.
- A message with `:message-type: exception` is `ProviderError` with `type` =
  its `:exception-type` (`throttlingException`, `modelStreamErrorException`,
  ...), the payload's `message` and, where sent, `originalStatusCode` as
  `code`; `:message-type: error` carries `:error-code`/`:error-message`.

The end: the answer is complete at `messageStop`, but its usage follows in
`metadata`. So `done` turns True only at a `metadata` after `messageStop`
(then the operator ends the stream and releases the connection); input that
ends right after `messageStop` is a normal end too (no usage). Input that ends
before `messageStop` is `TruncatedStreamError`. After `messageStop` only
`metadata` (and errors, and unknown event types) may come; content is
`MalformedChunkError`.

Spec: the ConverseStream API reference and botocore's service model
(`bedrock-runtime/2023-09-30/service-2.json`); the AWS event-stream framing
is `rxstream.core.eventstream`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ...errors import ProviderError, excerpt
from ...models import (
    JSON,
    Citation,
    Delta,
    EventStreamMessage,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
    ServerToolCall,
    ServerToolResult,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from .._build import constructor
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
    opt_list,
    opt_object,
    opt_str,
    usage,
)

__all__ = ["BedrockDecoder", "BedrockRenderer", "http_error"]

#: `stopReason` -> the normalised finish reason (any other word is kept as it is).
FINISH_REASONS = {
    "end_turn": STOP,
    "stop_sequence": STOP,
    "max_tokens": LENGTH,
    "model_context_window_exceeded": LENGTH,
    "tool_use": TOOL_CALLS,
    "guardrail_intervened": CONTENT_FILTER,
    "content_filtered": CONTENT_FILTER,
}

# The members of a reasoningContent delta this module reads.
_REASONING_KNOWN = frozenset({"text", "signature", "redactedContent"})

# The kinds of location a Bedrock citation may have.
_LOCATIONS = ("web", "documentChar", "documentPage", "documentChunk", "searchResultLocation")

_text: Callable[[str, int], TextDelta] = constructor(TextDelta)
_reasoning: Callable[[str, int], ReasoningDelta] = constructor(ReasoningDelta)


@dataclass(slots=True)
class _Block:
    """A content block that needs state until its `contentBlockStop`."""

    kind: str  # "tool", "server_tool", "tool_result" or "reasoning"
    index: int = 0  # the client tool call's index
    id: str | None = None
    name: str | None = None
    start: JSONObject = field(default_factory=dict)
    parts: list[str] = field(default_factory=list)  # input fragments, or thinking text
    signature: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)
    content: list[JSON] = field(default_factory=list)


class BedrockDecoder(DialectDecoder):
    """Decode a Bedrock ConverseStream's event-stream messages into deltas (see the module).

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` messages that are
            not valid ConverseStream events.

    >>> def event(name, payload):
    ...     headers = {":event-type": name, ":message-type": "event"}
    ...     return EventStreamMessage(headers, payload.encode())
    >>> decoder = BedrockDecoder()
    >>> decoder.feed(event("contentBlockDelta", '{"contentBlockIndex":0,"delta":{"text":"Hi"}}'))
    [TextDelta(text='Hi', choice=0)]
    >>> decoder.feed(event("messageStop", '{"stopReason":"end_turn"}')), decoder.done
    ([Finish(reason='stop', choice=0, raw='end_turn')], False)
    >>> decoder.feed(event("metadata", '{"usage":{"inputTokens":3,"outputTokens":1}}'))[0]
    Usage(prompt_tokens=3, completion_tokens=1, total_tokens=4, reasoning_tokens=None, \
cached_tokens=None, choice=0, raw={'inputTokens': 3, 'outputTokens': 1})
    >>> decoder.done
    True
    """

    dialect: ClassVar[str] = "bedrock"
    end_marker: ClassVar[str] = "messageStop"

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._blocks: dict[int, _Block] = {}
        self._calls = 0  # client tool calls begun
        self._stopped = False  # messageStop arrived
        self._events: dict[str, Callable[[JSONObject, EventStreamMessage], list[Delta]]] = {
            "contentBlockDelta": self._block_delta,
            "contentBlockStart": self._block_start,
            "contentBlockStop": self._block_stop,
            "messageStart": self._message_start,
            "messageStop": self._message_stop,
            "metadata": self._metadata,
        }

    def _decode(self, item: Any) -> list[Delta]:
        if type(item) is not EventStreamMessage and not isinstance(item, EventStreamMessage):
            raise TypeError(
                "BedrockDecoder takes EventStreamMessage items (add rs.eventstream_frames() "
                f"before rs.decode('bedrock')), got {type(item).__name__}"
            )
        headers = item.headers
        kind = headers.get(":message-type", "event")
        if kind != "event":
            return self._not_an_event(kind, item)
        name = headers.get(":event-type")
        handler = self._events.get(name) if type(name) is str else None
        if handler is None:
            return self._unknown(name, item)
        data = self._object(item.payload, item)
        if data is None:
            return []
        return handler(data, item)

    def _end(self) -> list[Delta]:
        if self._stopped:
            return []  # messageStop came; the metadata after it is optional
        return super()._end()

    # -- events ------------------------------------------------------------------

    def _message_start(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        if self._stopped:
            return self._malformed("messageStart after messageStop", item)
        opt_str(data, "role", "")
        return []

    def _block_start(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        if self._stopped:
            return self._malformed("contentBlockStart after messageStop", item)
        index = _index(data)
        start = opt_object(data, "start", "")
        if start is None:
            raise ShapeError("start", "an object", None)
        self._answered = True
        use = opt_object(start, "toolUse", "start")
        if use is not None:
            call_id = opt_str(use, "toolUseId", "start.toolUse")
            name = opt_str(use, "name", "start.toolUse")
            if opt_str(use, "type", "start.toolUse") == "server_tool_use":
                self._blocks[index] = _Block("server_tool", id=call_id, name=name, start=use)
                return []
            n = self._calls
            self._calls += 1
            self._blocks[index] = _Block("tool", n, call_id, name)
            return [ToolCallDelta(n, "", call_id, name)]
        result = opt_object(start, "toolResult", "start")
        if result is not None:
            call_id = opt_str(result, "toolUseId", "start.toolResult")
            name = opt_str(result, "type", "start.toolResult") or "toolResult"
            opt_str(result, "status", "start.toolResult")
            self._blocks[index] = _Block("tool_result", id=call_id, name=name, start=result)
            return []
        if not start:
            return []  # a text block that says so (it tells nothing more)
        # An image block, or a kind this module does not know: kept whole.
        return [Metadata({"events": [{"event": "contentBlockStart", "data": _unpadded(data)}]})]

    def _block_delta(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        if self._stopped:
            return self._malformed("contentBlockDelta after messageStop", item)
        index = _index(data)
        delta = data.get("delta")
        if type(delta) is not dict:
            raise ShapeError("delta", "an object", delta)
        self._answered = True
        text = delta.get("text")
        if text is not None:
            if type(text) is not str:
                raise ShapeError("delta.text", "a string", text)
            return [_text(text, 0)]
        use = delta.get("toolUse")
        if use is not None:
            return self._tool_input(index, use, item)
        reasoning = delta.get("reasoningContent")
        if reasoning is not None:
            return self._reasoning(index, reasoning, item)
        citation = opt_object(delta, "citation", "delta")
        if citation is not None:
            return [_citation(citation)]
        result = opt_list(delta, "toolResult", "delta")
        if result is not None:
            block = self._blocks.get(index)
            if block is None or block.kind != "tool_result":
                return self._malformed(
                    f"a toolResult delta for content block {index}, which no toolResult "
                    "contentBlockStart opened",
                    item,
                )
            block.content += result
            return []
        return [Metadata({"events": [{"event": "contentBlockDelta", "data": _unpadded(data)}]})]

    def _tool_input(self, index: int, use: JSON, item: EventStreamMessage) -> list[Delta]:
        if type(use) is not dict:
            raise ShapeError("delta.toolUse", "an object", use)
        fragment = use.get("input")
        if type(fragment) is not str:
            raise ShapeError("delta.toolUse.input", "a string", fragment)
        block = self._blocks.get(index)
        if block is None or block.kind not in ("tool", "server_tool"):
            return self._malformed(
                f"a toolUse delta for content block {index}, which no toolUse "
                "contentBlockStart opened",
                item,
            )
        if fragment:
            block.parts.append(fragment)
            if block.kind == "tool":
                return [ToolCallDelta(block.index, fragment)]
        return []

    def _reasoning(self, index: int, reasoning: JSON, item: EventStreamMessage) -> list[Delta]:
        if type(reasoning) is not dict:
            raise ShapeError("delta.reasoningContent", "an object", reasoning)
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Block("reasoning")
        elif block.kind != "reasoning":
            return self._malformed(
                f"a reasoningContent delta in content block {index}, a {block.kind} block", item
            )
        out: list[Delta] = []
        text = opt_str(reasoning, "text", "delta.reasoningContent")
        if text is not None:
            block.parts.append(text)
            out.append(_reasoning(text, 0))
        signature = opt_str(reasoning, "signature", "delta.reasoningContent")
        if signature is not None:
            block.signature.append(signature)
        redacted = opt_str(reasoning, "redactedContent", "delta.reasoningContent")
        if redacted is not None:
            block.redacted.append(redacted)
        if reasoning.keys() - _REASONING_KNOWN:
            # A member this module does not know (the union may grow): kept.
            event = {"contentBlockIndex": index, "delta": {"reasoningContent": reasoning}}
            out.append(Metadata({"events": [{"event": "contentBlockDelta", "data": event}]}))
        return out

    def _block_stop(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        if self._stopped:
            return self._malformed("contentBlockStop after messageStop", item)
        index = _index(data)
        block = self._blocks.pop(index, None)
        return [] if block is None else _flush(block)

    def _message_stop(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        if self._stopped:
            return self._malformed("a second messageStop", item)
        raw = data.get("stopReason")
        if type(raw) is not str:
            raise ShapeError("stopReason", "a string", raw)
        self._answered = self._stopped = True
        out: list[Delta] = []
        # Blocks the stream never stopped are complete all the same.
        for index in sorted(self._blocks):
            out += _flush(self._blocks.pop(index))
        reason = FINISH_REASONS.get(raw, raw)
        if reason == STOP and self._calls:
            reason = TOOL_CALLS
        out.append(Finish(reason, 0, raw))
        extra = data.get("additionalModelResponseFields")
        if extra is not None:
            out.append(Metadata({"additionalModelResponseFields": extra}))
        return out

    def _metadata(self, data: JSONObject, item: EventStreamMessage) -> list[Delta]:
        out: list[Delta] = []
        counts = opt_object(data, "usage", "")
        if counts is not None:
            read = opt_int(counts, "cacheReadInputTokens", "usage")
            write = opt_int(counts, "cacheWriteInputTokens", "usage")
            prompt = (opt_int(counts, "inputTokens", "usage") or 0) + (read or 0) + (write or 0)
            out.append(
                usage(
                    prompt,
                    opt_int(counts, "outputTokens", "usage"),
                    total=opt_int(counts, "totalTokens", "usage"),
                    cached=read,
                    raw=counts,
                )
            )
        rest = {key: value for key, value in data.items() if key not in ("usage", "p")}
        if rest:
            out.append(Metadata(rest))
        if self._stopped:
            self._done = True
        return out

    def _not_an_event(self, kind: Any, item: EventStreamMessage) -> list[Delta]:
        headers = item.headers
        try:
            payload = load_json(item.payload) if item.payload else None
        except ValueError:
            payload = None
        body = payload if isinstance(payload, dict) else {}
        if kind == "exception":
            name = headers.get(":exception-type")
            name = name if type(name) is str and name else None
            message = body.get("message")
            code = body.get("originalStatusCode")
            raise ProviderError(
                message if type(message) is str and message else _quote(item.payload),
                type=name,
                code=code if type(code) is int else None,
                payload=payload,
                event=name or "exception",
            )
        if kind == "error":
            code = headers.get(":error-code")
            message = headers.get(":error-message")
            raise ProviderError(
                message if type(message) is str and message else _quote(item.payload),
                type=code if type(code) is str and code else None,
                payload=payload,
                event="error",
            )
        return self._malformed(f"an unknown :message-type header {kind!r}", item)

    def _unknown(self, name: Any, item: EventStreamMessage) -> list[Delta]:
        if type(name) is not str:
            raise ShapeError(":event-type header", "a string", name)
        if name == "chunk":
            return self._malformed(
                "a 'chunk' event is InvokeModelWithResponseStream's, not ConverseStream's", item
            )
        if not (name[:1].islower() and name.isascii() and name.isalnum()):
            # ConverseStream names its events in lowerCamelCase.
            return self._malformed(f"an event of another API ({name!r})", item)
        data = self._object(item.payload, item) if item.payload else {}
        if data is None:
            return []
        return [Metadata({"events": [{"event": name, "data": _unpadded(data)}]})]


def _index(data: JSONObject) -> int:
    index = data.get("contentBlockIndex")
    if type(index) is not int:
        raise ShapeError("contentBlockIndex", "an integer", index)
    return index


def _flush(block: _Block) -> list[Delta]:
    """The deltas a block gives at its end."""
    text = "".join(block.parts)
    if block.kind == "tool":
        return [] if text else [ToolCallDelta(block.index, "{}")]
    if block.kind == "server_tool":
        try:
            value: JSON = load_json(text) if text.strip() else None
        except ValueError:
            value = text
        raw = {**block.start, "input": value}
        return [ServerToolCall(block.id, block.name or "", value, 0, {"toolUse": raw})]
    if block.kind == "tool_result":
        raw = {**block.start, "content": block.content}
        return [ServerToolResult(block.id, block.name or "", block.content, 0, {"toolResult": raw})]
    out: list[Delta] = []
    if block.redacted:
        data = "".join(block.redacted)
        out.append(ReasoningState("redacted_thinking", data, raw={"redactedContent": data}))
    if block.signature:
        signature = "".join(block.signature)
        raw = {"reasoningText": {"text": text, "signature": signature}}
        out.append(ReasoningState("thinking", signature, text, raw=raw))
    return out


def _citation(citation: JSONObject) -> Citation:
    title = opt_str(citation, "title", "delta.citation")
    location = opt_object(citation, "location", "delta.citation") or {}
    kind = next((k for k in location if k in _LOCATIONS), None) or next(iter(location), "citation")
    where = location.get(kind)
    url = where.get("url") if isinstance(where, dict) else None
    sources = opt_list(citation, "sourceContent", "delta.citation") or []
    texts = [s["text"] for s in sources if isinstance(s, dict) and isinstance(s.get("text"), str)]
    return Citation(
        kind,
        url if isinstance(url, str) else None,
        title,
        "".join(texts) if texts else None,
        raw=citation,
    )


def _unpadded(data: JSONObject) -> JSONObject:
    return {key: value for key, value in data.items() if key != "p"} if "p" in data else data


def _quote(payload: bytes) -> str:
    return excerpt(payload) if payload.strip() else "(no message)"


# --------------------------------------------------------------------------- rendering

# The normalised reasons back into stopReason words (any other word goes as it is).
_REASONS_BACK = {
    STOP: "end_turn",
    LENGTH: "max_tokens",
    TOOL_CALLS: "tool_use",
    CONTENT_FILTER: "content_filtered",
}


def _event(name: str, payload: JSONObject) -> EventStreamMessage:
    headers: dict[str, str | bytes | int | bool] = {
        ":event-type": name,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return EventStreamMessage(headers, _dumps(payload))


def _dumps(value: JSON) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


class BedrockRenderer:
    """Render deltas as a Bedrock ConverseStream: `EventStreamMessage`s (`encode_message`
    makes the bytes).

    `messageStart` comes before the first event; text and reasoning open a
    block of their own (text without `contentBlockStart`, as Bedrock sends
    it); each client tool call is a `toolUse` block, kept open until the
    finish so fragments of several calls may interleave; `Finish` is
    `messageStop`; the `Usage` (and `Metadata` such as `metrics`) goes into
    the `metadata` event at `close()`.

    The usage is sent with `inputTokens` = `prompt_tokens - cached_tokens`
    and `cacheReadInputTokens` = `cached_tokens`, so it decodes to the same
    `Usage`. What ConverseStream cannot express is left out: refusals,
    choices other than 0, `reasoning_tokens`, reasoning state of other
    dialects (thought signatures, reasoning items), `Metadata` other than
    `metrics`, `trace`, `performanceConfig`, `serviceTier` and
    `additionalModelResponseFields`. A client tool call without arguments
    comes back as `"{}"`, one without an id with `""`; a `thinking` state
    that does not follow reasoning text comes back with its signature only.
    Bedrock's stream names neither the model nor a response id, so `model`
    and `id` are accepted and unused.

    Args:
        model: the model name (unused: the stream does not carry it).
        id: the response id (unused likewise).

    >>> renderer = BedrockRenderer()
    >>> [m.headers[":event-type"] for m in renderer.feed(TextDelta("Hi"))]
    ['messageStart', 'contentBlockDelta']
    >>> [m.headers[":event-type"] for m in renderer.feed(Finish("stop")) + renderer.close()]
    ['contentBlockStop', 'messageStop']
    """

    wire: ClassVar[WireKind] = "eventstream"
    #: Unused: event-stream messages are length-prefixed binary frames.
    newline: ClassVar[str] = "\n"

    def __init__(self, *, model: str = "rxstream-fake", id: str = "bedrock-fake") -> None:
        self.model = model
        self.id = id
        self._started = False
        self._open: tuple[str, int] | None = None  # the text or reasoning block open
        self._calls: dict[int, int] = {}  # client tool call index -> its open block
        self._last_call: int | None = None
        self._any_call = False
        self._next = 0  # the next contentBlockIndex
        self._finished = False
        self._closed = False
        self._usage: Usage | None = None
        self._extra: JSONObject = {}

    def feed(self, delta: Delta) -> list[Wire]:
        """Take one delta; return the event-stream messages it becomes.

        Raises:
            ValueError: content after the `Finish` (ConverseStream ends its
                content at `messageStop`).
            RuntimeError: after `close()` or `error()`.
        """
        if self._closed:
            raise RuntimeError("this BedrockRenderer is closed; it takes no more deltas")
        if delta.choice != 0:
            return []
        if isinstance(delta, Usage):
            self._usage = delta
            return []
        if isinstance(delta, Metadata):
            self._extra.update(delta.data)
            return []
        if isinstance(delta, RefusalDelta):
            return []
        if self._finished:
            raise ValueError(
                f"a {type(delta).__name__} after the Finish: ConverseStream ends the content "
                "at messageStop"
            )
        out = self._begin()
        if isinstance(delta, TextDelta):
            index = self._block(out, "text")
            out.append(_event("contentBlockDelta", _at(index, {"text": delta.text})))
        elif isinstance(delta, ReasoningDelta):
            index = self._block(out, "reasoning")
            out.append(
                _event("contentBlockDelta", _at(index, {"reasoningContent": {"text": delta.text}}))
            )
        elif isinstance(delta, ReasoningState):
            self._state(out, delta)
        elif isinstance(delta, ToolCallDelta):
            self._tool_call(out, delta)
        elif isinstance(delta, Citation):
            index = self._block(out, "text")
            out.append(_event("contentBlockDelta", _at(index, {"citation": _citation_back(delta)})))
        elif isinstance(delta, ServerToolCall):
            self._whole_block(
                out,
                {
                    "toolUse": {
                        "toolUseId": delta.id or "",
                        "name": delta.name,
                        "type": "server_tool_use",
                    }
                },
                [] if delta.input is None else [{"toolUse": {"input": json.dumps(delta.input)}}],
            )
        elif isinstance(delta, ServerToolResult):
            start: JSONObject = {"toolUseId": delta.call_id or ""}
            if delta.name and delta.name != "toolResult":
                start["type"] = delta.name
            content = (
                delta.content if isinstance(delta.content, list) else [{"json": delta.content}]
            )
            self._whole_block(out, {"toolResult": start}, [{"toolResult": content}])
        elif isinstance(delta, Finish):
            self._end_blocks(out)
            raw = delta.raw if FINISH_REASONS.get(delta.raw or "") == delta.reason else None
            stop: JSONObject = {"stopReason": raw or _REASONS_BACK.get(delta.reason, delta.reason)}
            self._stop_extras(stop)
            out.append(_event("messageStop", stop))
            self._finished = True
        return out

    def close(self) -> list[Wire]:
        """End the stream: `messageStop` if no `Finish` came, then `metadata` with the usage.

        Raises:
            RuntimeError: already closed.
        """
        if self._closed:
            raise RuntimeError("this BedrockRenderer is closed already")
        out = self._begin()
        if not self._finished:
            self._end_blocks(out)
            stop: JSONObject = {"stopReason": "tool_use" if self._any_call else "end_turn"}
            self._stop_extras(stop)
            out.append(_event("messageStop", stop))
        self._closed = True
        metadata: JSONObject = {}
        if self._usage is not None:
            metadata["usage"] = _usage_back(self._usage)
        for key in ("metrics", "trace", "performanceConfig", "serviceTier"):
            if key in self._extra:
                metadata[key] = self._extra[key]
        if metadata:
            out.append(_event("metadata", metadata))
        return out

    def error(self, error: ProviderError) -> list[Wire]:
        """End the stream with an exception message (`:message-type: exception`).

        The `:exception-type` is the error's `type` (`internalServerException`
        when it has none), the payload `{"message": ...}`.
        """
        if self._closed:
            raise RuntimeError("this BedrockRenderer is closed already")
        self._closed = True
        out = self._begin()
        payload: JSONObject = {"message": error.message}
        if isinstance(error.code, int):
            payload["originalStatusCode"] = error.code
        headers: dict[str, str | bytes | int | bool] = {
            ":exception-type": error.type or "internalServerException",
            ":content-type": "application/json",
            ":message-type": "exception",
        }
        out.append(EventStreamMessage(headers, _dumps(payload)))
        return out

    # -- blocks ------------------------------------------------------------------

    def _begin(self) -> list[Wire]:
        if self._started:
            return []
        self._started = True
        return [_event("messageStart", {"role": "assistant"})]

    def _block(self, out: list[Wire], kind: str) -> int:
        """The index of the open block of `kind`, opening one (and closing another) if needed."""
        if self._open is not None:
            if self._open[0] == kind:
                return self._open[1]
            out.append(_event("contentBlockStop", {"contentBlockIndex": self._open[1]}))
        index = self._next
        self._next += 1
        self._open = (kind, index)
        return index

    def _close_open(self, out: list[Wire]) -> None:
        if self._open is not None:
            out.append(_event("contentBlockStop", {"contentBlockIndex": self._open[1]}))
            self._open = None

    def _end_blocks(self, out: list[Wire]) -> None:
        self._close_open(out)
        for index in sorted(self._calls.values()):
            out.append(_event("contentBlockStop", {"contentBlockIndex": index}))
        self._calls.clear()

    def _whole_block(self, out: list[Wire], start: JSONObject, deltas: list[JSONObject]) -> None:
        self._close_open(out)
        index = self._next
        self._next += 1
        out.append(_event("contentBlockStart", {"contentBlockIndex": index, "start": start}))
        out.extend(_event("contentBlockDelta", _at(index, delta)) for delta in deltas)
        out.append(_event("contentBlockStop", {"contentBlockIndex": index}))

    def _state(self, out: list[Wire], state: ReasoningState) -> None:
        if state.kind == "thinking":
            index = self._block(out, "reasoning")
            signature = {"reasoningContent": {"signature": state.data}}
            out.append(_event("contentBlockDelta", _at(index, signature)))
            self._close_open(out)
        elif state.kind == "redacted_thinking":
            self._close_open(out)
            index = self._block(out, "reasoning")
            redacted = {"reasoningContent": {"redactedContent": state.data}}
            out.append(_event("contentBlockDelta", _at(index, redacted)))
            self._close_open(out)

    def _tool_call(self, out: list[Wire], delta: ToolCallDelta) -> None:
        key = delta.index
        if key is None:
            # No index (Mistral sends whole calls): a fragment with an id or a
            # name begins a call, any other goes on with the last one.
            begins = delta.id is not None or delta.name is not None
            index = None if begins else self._last_call
        else:
            index = self._calls.get(key)
        if index is None:
            self._close_open(out)
            index = self._next
            self._next += 1
            self._calls[-index - 1 if key is None else key] = index
            start = {"toolUse": {"toolUseId": delta.id or "", "name": delta.name or ""}}
            out.append(_event("contentBlockStart", {"contentBlockIndex": index, "start": start}))
            self._any_call = True
        self._last_call = index
        if delta.arguments:
            fragment = {"toolUse": {"input": delta.arguments}}
            out.append(_event("contentBlockDelta", _at(index, fragment)))

    def _stop_extras(self, stop: JSONObject) -> None:
        extra = self._extra.get("additionalModelResponseFields")
        if extra is not None:
            stop["additionalModelResponseFields"] = extra


def _at(index: int, delta: JSONObject) -> JSONObject:
    return {"contentBlockIndex": index, "delta": delta}


def _citation_back(citation: Citation) -> JSONObject:
    if citation.raw is not None and citation.kind in (*_LOCATIONS, "citation"):
        return citation.raw  # a Bedrock citation: sent back as it came
    out: JSONObject = {}
    if citation.title is not None:
        out["title"] = citation.title
    if citation.text is not None:
        out["sourceContent"] = [{"text": citation.text}]
    if citation.url is not None:
        out["location"] = {"web": {"url": citation.url}}
    return out


def _usage_back(counts: Usage) -> JSONObject:
    cached = counts.cached_tokens
    out: JSONObject = {
        "inputTokens": counts.prompt_tokens - (cached or 0),
        "outputTokens": counts.completion_tokens,
        "totalTokens": counts.total_tokens,
    }
    if cached is not None:
        out["cacheReadInputTokens"] = cached
    return out


# --------------------------------------------------------------------------- HTTP errors

#: The ConverseStream error names by HTTP status (the `x-amzn-ErrorType` a server sends).
ERROR_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """The content type and body of a Bedrock error answer (before the stream).

    Bedrock's REST-JSON answer is `{"message": ...}` with the error's name in
    the `x-amzn-ErrorType` header; the name is also put in the body's
    `__type` (which botocore reads when the header is absent): `type` (or a
    string `code`), else the name Bedrock uses for the status.

    >>> http_error(429, "Too many requests, please wait before trying again.")
    ('application/json', b'{"message":"Too many requests, please wait before trying again.",\
"__type":"ThrottlingException"}')
    """
    name = type or (code if isinstance(code, str) else None) or ERROR_TYPES.get(status)
    body: JSONObject = {"message": message}
    if name:
        body["__type"] = name
    return "application/json", _dumps(body)
