"""The `"ai-sdk"` dialect: the decoder (UI message stream chunks -> deltas).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ....errors import ProviderError
from ....models import (
    JSON,
    ApprovalRequest,
    Citation,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    RefusalDelta,
    Reset,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    StepEnd,
    StepStart,
    TextBlockStart,
    TextDelta,
    ToolCallDelta,
    ToolResult,
    Usage,
)
from ...wire.decoding import decode as decode_item
from .._base import (
    CONTENT_FILTER,
    LENGTH,
    STOP,
    TOOL_CALLS,
    DialectDecoder,
    OnMalformed,
    ShapeError,
    opt_int,
    opt_object,
    opt_str,
    usage,
)
from .._shared import dumps

__all__ = ["FINISH", "RESET_PART", "STEP_PART", "AISDKDecoder"]

#: The AI SDK's finish words -> rxstream's (`"error"` and `"other"` stay as they are).
FINISH = {
    "stop": STOP,
    "length": LENGTH,
    "tool-calls": TOOL_CALLS,
    "content-filter": CONTENT_FILTER,
    "error": "error",
    "other": "other",
}
#: Chunks that only mark a step: nothing to read in them.
_STEPS = frozenset({"start-step", "finish-step"})
#: The `providerMetadata` key the renderer marks a refusal's text part with.
RXSTREAM_KEY = "rxstream"
#: The data part that carries a `Reset` (`{"attempt": int, "reason": str}`).
RESET_PART = "data-rxstream-reset"
#: The transient data part that carries a run's `StepStart` or `StepEnd` (its rxstream JSON).
STEP_PART = "data-rxstream-step"
#: What a client tool's end becomes when the decoder reads a run (`runs=True`).
_OUTCOMES = frozenset({"tool-output-available", "tool-output-error", "tool-output-denied"})


def _need_str(obj: JSONObject, key: str) -> str:
    value = obj.get(key)
    if type(value) is not str:
        raise ShapeError(key, "a string", value)
    return value


class _Call:
    __slots__ = ("arguments", "index", "input", "name", "server")

    def __init__(self, index: int, name: str, server: bool) -> None:
        self.index = index
        self.name = name
        self.server = server
        self.arguments = False  # a fragment of its arguments arrived
        self.input: JSON = None  # its whole input, once `tool-input-available` gave it


class AISDKDecoder(DialectDecoder):
    """Decode the AI SDK's UI message stream (see the package docstring).

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` frames that are not
            valid UI message stream chunks.
        runs: also give a run's items (`StepStart`, `StepEnd`, `ToolResult`,
            `ApprovalRequest`) where the stream marks them (see the package
            docstring); without it, deltas only.

    >>> d = AISDKDecoder()
    >>> d.feed(SSEFrame('{"type":"text-start","id":"t"}'))
    []
    >>> d.feed(SSEFrame('{"type":"text-delta","id":"t","delta":"Hi"}'))
    [TextDelta(text='Hi', choice=0)]
    """

    dialect: ClassVar[str] = "ai-sdk"
    end_marker: ClassVar[str] = "finish"

    def __init__(self, *, on_malformed: OnMalformed = "raise", runs: bool = False) -> None:
        super().__init__(on_malformed=on_malformed)
        self._runs = runs
        self._steps = _Steps()
        self._calls: dict[str, _Call] = {}  # toolCallId -> its call
        self._client_calls = 0
        self._answered_calls: set[str] = set()  # client calls whose output the backend sent
        self._refusals: set[str] = set()  # text part ids that carry a refusal
        self._ended = False  # `finish` (or `abort`) arrived; `[DONE]` may follow
        self._after_text = False  # the last part with content was text (not a refusal)

    def _decode(self, frame: SSEFrame) -> list[Any]:
        if type(frame) is not SSEFrame:
            raise TypeError(f"the ai-sdk decoder takes SSEFrame items, got {type(frame).__name__}")
        data = frame.data
        if data == "[DONE]":
            self._done = True
            return []
        if not data or data.isspace():
            return []
        chunk = self._object(data, frame)
        if chunk is None:
            return []
        kind = chunk.get("type")
        if type(kind) is not str:
            raise ShapeError("type", "a string", kind)
        if kind == "text-delta" or kind == "reasoning-delta":
            return self._text(kind, chunk)
        if kind in ("text-start", "text-end", "reasoning-start", "reasoning-end"):
            return self._part_edge(kind, chunk)
        out = self._chunk(kind, chunk, frame)
        if self._after_text and any(_begins_block(d) for d in out):
            self._after_text = False  # a block between: text after it is apart already
        return out

    def _chunk(self, kind: str, chunk: JSONObject, frame: SSEFrame) -> list[Any]:
        """What a chunk other than a text or reasoning part's gives."""
        if kind.startswith("tool-"):
            if self._runs and (kind in _OUTCOMES or kind == "tool-approval-request"):
                return self._run_tool(kind, chunk)
            return self._tool(kind, chunk)
        if kind == "error":
            message = _need_str(chunk, "errorText")
            raise ProviderError(message, payload=chunk, event=frame.event)
        if kind == "finish":
            return self._finish(chunk)
        if kind == "start":
            return self._start(chunk)
        if kind in _STEPS or kind == STEP_PART:
            return self._step(kind, chunk)
        if kind == "message-metadata":
            return self._metadata(chunk.get("messageMetadata"))
        if kind == "source-url" or kind == "source-document":
            return [self._source(kind, chunk)]
        if kind == RESET_PART:
            return [self._reset(chunk)]
        if kind == "abort":
            opt_str(chunk, "reason", "")
            self._ended = True
        return [Metadata({"events": [chunk]})]

    def _text(self, kind: str, chunk: JSONObject) -> list[Delta]:
        """A `text-delta` (text, or a refusal's) or a `reasoning-delta`."""
        part = _need_str(chunk, "id")
        text = _need_str(chunk, "delta")
        self._answered = True
        if not text:
            return []
        if kind == "reasoning-delta":
            self._after_text = False
            return [ReasoningDelta(text)]
        if part in self._refusals:
            self._after_text = False
            return [RefusalDelta(text)]
        self._after_text = True
        return [TextDelta(text)]

    def _start(self, chunk: JSONObject) -> list[Delta]:
        """The `start` part: the message's id and metadata."""
        out: list[Delta] = []
        message_id = opt_str(chunk, "messageId", "")
        if message_id is not None:
            out.append(Metadata({"messageId": message_id}))
        if "messageMetadata" in chunk:
            out += self._metadata(chunk["messageMetadata"])
        return out

    def _step(self, kind: str, chunk: JSONObject) -> list[Any]:
        """`start-step`, `finish-step` and the renderer's step part: run items with `runs`."""
        if kind == STEP_PART:
            item = _step_item(chunk)
            return self._steps.part(item) if self._runs else []
        if not self._runs:
            return []
        self._answered = True
        if kind == "finish-step":
            return self._steps.finish()
        self._client_calls = 0  # a step is an answer of its own: its calls count from 0
        return self._steps.start()

    def _run_tool(self, kind: str, chunk: JSONObject) -> list[Any]:
        """A client tool's end (or approval request) as a run's item; a server tool's as before."""
        id = _need_str(chunk, "toolCallId")
        call = self._calls.get(id)
        if kind == "tool-approval-request":
            _need_str(chunk, "approvalId")
            self._answered = True
            if call is None:
                return [ApprovalRequest(id, "")]
            return [ApprovalRequest(id, call.name, call.input)]
        if self._server(chunk) or (call is not None and call.server):
            return self._tool(kind, chunk)
        self._answered = True
        self._answered_calls.add(id)
        name = "" if call is None else call.name
        if kind == "tool-output-denied":
            return [ToolResult(id, name, denied=True)]
        if kind == "tool-output-error":
            return [ToolResult(id, name, error=_need_str(chunk, "errorText"))]
        return [ToolResult(id, name, chunk.get("output"))]

    def _source(self, kind: str, chunk: JSONObject) -> Citation:
        """A `source-url` or `source-document` part as a `Citation`."""
        if kind == "source-url":
            url = _need_str(chunk, "url")
            _need_str(chunk, "sourceId")
            title = opt_str(chunk, "title", "")
            self._answered = True
            return Citation("source-url", url=url, title=title, raw=chunk)
        _need_str(chunk, "sourceId")
        title = _need_str(chunk, "title")
        self._answered = True
        return Citation("source-document", title=title, raw=chunk)

    def _reset(self, chunk: JSONObject) -> Reset:
        """The renderer's reset part: the calls of the dropped answer are forgotten."""
        data = opt_object(chunk, "data", "")
        if data is None:
            raise ShapeError("data", "an object", None)
        attempt = opt_int(data, "attempt", "data")
        if attempt is None:
            raise ShapeError("data.attempt", "an integer", None)
        reason = opt_str(data, "reason", "data") or ""
        self._calls.clear()
        self._answered_calls.clear()
        self._client_calls = 0
        self._ended = False
        return Reset(attempt, reason)

    def _part_edge(self, kind: str, chunk: JSONObject) -> list[Delta]:
        part = _need_str(chunk, "id")
        meta = opt_object(chunk, "providerMetadata", "")
        ours = opt_object(meta, RXSTREAM_KEY, "providerMetadata") if meta else None
        refusal = kind == "text-start" and ours is not None and ours.get("refusal") is True
        out: list[Delta] = []
        if kind == "text-start" and not refusal and self._after_text:
            # A text part of its own right after another's text: it stays a block of its own.
            self._after_text = False
            out.append(TextBlockStart(raw=chunk))
        if not meta:
            return out
        if refusal:
            self._refusals.add(part)
            rest = {k: v for k, v in meta.items() if k != RXSTREAM_KEY}
            return [*out, Metadata({"providerMetadata": rest})] if rest else out
        return [*out, Metadata({"providerMetadata": meta})]

    def _tool(self, kind: str, chunk: JSONObject) -> list[Delta]:
        if kind == "tool-input-start":
            id, name = _need_str(chunk, "toolCallId"), _need_str(chunk, "toolName")
            server = self._server(chunk)
            self._answered = True
            call = self._calls.get(id)
            if call is not None:
                return []  # the same call announced again (a resumed step)
            call = self._new_call(id, name, server)
            return [] if server else [ToolCallDelta(call.index, "", id, name)]
        if kind == "tool-input-delta":
            id = _need_str(chunk, "toolCallId")
            text = _need_str(chunk, "inputTextDelta")
            call = self._calls.get(id)
            if call is None:
                raise ShapeError("toolCallId", f"a call started by tool-input-start ({id!r})", id)
            if call.server or not text:
                return []
            call.arguments = True
            return [ToolCallDelta(call.index, text)]
        if kind == "tool-input-available":
            id, name = _need_str(chunk, "toolCallId"), _need_str(chunk, "toolName")
            server = self._server(chunk)
            self._answered = True
            call = self._calls.get(id)
            if call is None:
                call = self._new_call(id, name, server)
                call.input = chunk.get("input")
                if not server:
                    return [ToolCallDelta(call.index, _arguments(chunk.get("input")), id, name)]
            call.input = chunk.get("input")
            if call.server:
                return [ServerToolCall(id, name, chunk.get("input"), raw=chunk)]
            if call.arguments:
                return []
            call.arguments = True
            return [ToolCallDelta(call.index, _arguments(chunk.get("input")))]
        if kind == "tool-output-available":
            id = _need_str(chunk, "toolCallId")
            self._server(chunk)
            known = self._calls.get(id)
            self._answered = True
            self._answered_calls.add(id)
            name = known.name if known is not None else ""
            return [ServerToolResult(id, name, chunk.get("output"), raw=chunk)]
        return [Metadata({"events": [chunk]})]

    def _server(self, chunk: JSONObject) -> bool:
        value = chunk.get("providerExecuted")
        if value is None or type(value) is bool:
            return value is True
        raise ShapeError("providerExecuted", "a boolean", value)

    def _new_call(self, id: str, name: str, server: bool) -> _Call:
        index = -1 if server else self._client_calls
        if not server:
            self._client_calls += 1
        call = self._calls[id] = _Call(index, name, server)
        return call

    def _finish(self, chunk: JSONObject) -> list[Delta]:
        word = opt_str(chunk, "finishReason", "")
        out: list[Delta] = []
        if "messageMetadata" in chunk:
            out += self._metadata(chunk["messageMetadata"])
        # Client calls the backend did not run itself are the client's to answer.
        asked = any(
            not call.server and id not in self._answered_calls for id, call in self._calls.items()
        )
        reason = FINISH.get(word, word) if word is not None else STOP
        if reason == STOP and asked:
            reason = TOOL_CALLS
        out.append(Finish(reason, raw=word))
        self._answered = True
        self._ended = True
        return out

    def _metadata(self, value: JSON) -> list[Delta]:
        if type(value) is not dict:
            return [] if value is None else [Metadata({"messageMetadata": value})]
        out: list[Delta] = []
        rest = value
        found = _usage(value.get("usage"))
        if found is not None:
            out.append(found)
            rest = {k: v for k, v in value.items() if k != "usage"}
        if rest:
            out.append(Metadata(rest))
        return out

    def _end(self) -> list[Delta]:
        if self._ended:
            return []
        return super()._end()


class _Steps:
    """Where a run's steps are in the stream: which step is open, and whether it ended.

    The renderer's step part (`STEP_PART`) comes before `start-step` with the
    step's `StepStart`, and where the step's answer ends with its `StepEnd`; a
    stream without them (an AI SDK backend's) gets a `StepStart` numbered in
    order, with no dialect or model, and a `StepEnd` without a finish reason at
    its `finish-step`.
    """

    __slots__ = ("ended", "number", "told")

    def __init__(self) -> None:
        self.number = 0  # the open (or last) step's number
        self.told: StepStart | None = None  # the next step, as the step part told it
        self.ended = True  # the open step's StepEnd was given (or no step is open)

    def part(self, item: StepStart | StepEnd) -> list[Any]:
        if type(item) is StepStart:
            self.told = item
            return []
        self.ended = True
        return [item]

    def start(self) -> list[Any]:
        told, self.told = self.told, None
        step = told if told is not None else StepStart(self.number + 1, "", "")
        self.number, self.ended = step.step, False
        return [step]

    def finish(self) -> list[Any]:
        if self.ended:
            return []
        self.ended = True
        return [StepEnd(self.number, None)]


def _step_item(chunk: JSONObject) -> StepStart | StepEnd:
    """The `StepStart` or `StepEnd` a step part carries (its `data`, in rxstream's JSON)."""
    data = chunk.get("data")
    try:
        item = decode_item(data) if type(data) is dict else None
    except ValueError:
        item = None
    if type(item) is not StepStart and type(item) is not StepEnd:
        raise ShapeError("data", "a step_start or step_end item", data)
    return item


def _arguments(value: JSON) -> str:
    """A tool input as arguments text (a string input is taken as the text itself)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else dumps(value)


def _usage(value: JSON) -> Usage | None:
    """`LanguageModelUsage` (`inputTokens`, ...) as `Usage`; None when it is not of that shape."""
    if type(value) is not dict:
        return None
    prompt = opt_int(value, "inputTokens", "messageMetadata.usage")
    completion = opt_int(value, "outputTokens", "messageMetadata.usage")
    if prompt is None and completion is None:
        return None
    reasoning = opt_int(value, "reasoningTokens", "messageMetadata.usage")
    if reasoning is None:
        details = value.get("outputTokenDetails")
        if type(details) is dict:
            reasoning = opt_int(details, "reasoningTokens", "messageMetadata.usage")
    cached = opt_int(value, "cachedInputTokens", "messageMetadata.usage")
    written = None
    details = value.get("inputTokenDetails")
    if type(details) is dict:
        if cached is None:
            cached = opt_int(details, "cacheReadTokens", "messageMetadata.usage")
        written = opt_int(details, "cacheWriteTokens", "messageMetadata.usage")
    return usage(
        prompt,
        completion,
        total=opt_int(value, "totalTokens", "messageMetadata.usage"),
        reasoning=reasoning,
        cached=cached,
        cache_write=written,
        raw=value,
    )


def _begins_block(item: object) -> bool:
    """Whether `item` makes a block of a `Message` of its own (text after it is apart)."""
    if type(item) is ToolCallDelta:
        return item.id is not None or item.name is not None  # a call's start, not its input
    return type(item) not in (Metadata, Usage, Finish)
