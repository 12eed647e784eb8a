"""The `"ai-sdk"` dialect: the renderer (deltas -> UI message stream chunks).

See the package docstring for the wire format, and `AISDKRenderer` for the rules.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import ClassVar

from ...._fast import enabled
from ....errors import ProviderError
from ....models import (
    JSON,
    ApprovalRequest,
    ApprovalResponse,
    Citation,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    RefusalDelta,
    Reset,
    RunEnd,
    RunItem,
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
from ...tools import ToolCallMatcher, generated_call_id
from ...wire.encoding import encode
from .._base import CONTENT_FILTER, LENGTH, STOP, TOOL_CALLS, Wire, WireKind
from .._shared import TEXT_MARK, dumps, text_halves
from .decode import RESET_PART, RXSTREAM_KEY, STEP_PART

__all__ = ["AISDKRenderer", "approval_id"]

#: rxstream's finish reasons -> the AI SDK's (anything else is `"other"`).
_WORDS = {
    STOP: "stop",
    LENGTH: "length",
    TOOL_CALLS: "tool-calls",
    CONTENT_FILTER: "content-filter",
    "error": "error",
    "other": "other",
}
_DONE = SSEFrame("[DONE]")


def _chunk(body: JSONObject) -> SSEFrame:
    return SSEFrame(dumps(body))


class _Call:
    __slots__ = ("arguments", "id", "index", "made_up", "name", "started")

    def __init__(self, index: int) -> None:
        self.index = index  # the call's index (the tool call matcher's)
        self.id: str | None = None
        self.name: str | None = None
        self.arguments: list[str] = []
        self.started = False
        self.made_up = False  # the wire gave no id: this stream made one


class AISDKRenderer:
    """Deltas as the AI SDK's UI message stream (what `useChat` reads).

    The chunks, in order: `start` (with `messageId`) and `start-step` first;
    text, reasoning and refusals in parts (`text-start`, `text-delta`...,
    `text-end`; `reasoning-*`), a new part each time the kind changes or a
    tool call begins; a client tool call is `tool-input-start` (once its id
    and name are known; an id is made up from the message id when the
    provider sent none) and a `tool-input-delta` per fragment, and, once the
    answer is complete, `tool-input-available` with the parsed input (`{}` for
    empty arguments; arguments that are not JSON are `tool-input-error` with
    the text as the input); then `finish-step`, `finish` and `data: [DONE]`.

    - A refusal is a text part marked `providerMetadata: {"rxstream":
      {"refusal": true}}` (the UI shows it as text; rxstream reads it back as
      a refusal).
    - A citation with a url is `source-url`; one without is
      `source-document` (titled with its title, else its text, else its kind).
    - A provider-side tool call is `tool-input-available` with
      `providerExecuted: true`, its result `tool-output-available` (a result
      whose call was not sent gets a call first, with a null input).
    - `Metadata` is `message-metadata` (it lands in the UI message's
      `metadata`); usage is `messageMetadata.usage` on `finish`, in the AI
      SDK's `LanguageModelUsage` names (`inputTokens`, `outputTokens`,
      `totalTokens`, `reasoningTokens`, `cachedInputTokens`,
      `inputTokenDetails.cacheWriteTokens`): the protocol has no usage field of
      its own.
    - `finishReason` is hyphenated: `stop`, `length`, `tool-calls`,
      `content-filter`, `error`; any other reason (`pause_turn`, `cancelled`, ...)
      is `other`. A stream that never finished says `tool-calls` if it asked
      for client tool calls, else `stop`.
    - `error()` writes `{"type": "error", "errorText": <the provider's
      message>}` and `[DONE]`.
    - A `Reset` (a new answer replaces the one sent so far): the UI message
      stream cannot take parts back, and a second `start` only renames the
      message in `useChat`, so the reset is a part of its own. The open part
      ends; each tool call of the dropped answer already announced ends with
      `tool-input-error` (its arguments so far as the input, so the UI leaves
      no call pending); then `{"type": "data-rxstream-reset", "data":
      {"attempt": ..., "reason": ...}}`, which `useChat` keeps in the
      message's `parts` (a UI hides the parts before the last one), and the
      new answer's parts follow, with new ids. `rs.decode("ai-sdk")` reads the
      part back as the `Reset`.

    A run (`rs.run`'s items between the steps' deltas) is one UI message of
    several steps, as the AI SDK's `streamText` writes it:

    - `StepStart` opens a step (`start-step`; the one before, if still open,
      is finished first); `StepEnd` ends the step's open part and gives its
      calls' inputs (`tool-input-available`), and the step's `finish-step`
      follows its tools' results, when the next step starts or the run ends.
      Each also writes a transient data part, `{"type": "data-rxstream-step",
      "data": <the item's rxstream JSON>, "transient": true}` (`StepStart`'s
      just before its `start-step`, `StepEnd`'s after its calls' inputs):
      `useChat` hands it to `onData` and keeps it out of the message, and
      `rs.decode("ai-sdk", runs=True)` reads the items back from it.
    - `ToolResult` is `tool-output-available` (its `output`), or
      `tool-output-error` (its `error` as the `errorText`), or
      `tool-output-denied` for a denied call; the results a resumed run
      begins with (its decided calls) come before its first step, in none.
    - `ApprovalRequest` is `tool-approval-request`, its `approvalId`
      `approval_id(call_id)`; the decision comes back in the client's next
      request, as the tool part's `approval` (`approval_responses` reads it):
      the protocol has no chunk for it, so an `ApprovalResponse` item renders
      nothing.
    - `RunEnd`: the run's summed usage goes on `finish` (in place of the last
      step's); its conversation stays on the server (the UI keeps its own).
    - Call ids stay the run's own, so a result or an approval finds its call;
      one that a step repeats (a provider that numbers its calls per answer)
      is made unique in the stream, and the results follow it.

    Not expressible, so left out: choices other than 0 (the UI message has
    one), reasoning state (signatures, encrypted reasoning).

    Args:
        model: accepted for the common renderer options (the stream does not
            name the model).
        id: the `messageId` of `start`. A server answering `useChat` passes a
            new one per answer (the client keys its messages by it), and the
            same one again when it replays an answer for a resume.

    >>> r = AISDKRenderer()
    >>> [json.loads(f.data)["type"] for f in r.feed(TextDelta("Hi"))]
    ['start', 'start-step', 'text-start', 'text-delta']
    >>> [f.data[:24] for f in r.close()]
    ['{"type":"text-end","id":', '{"type":"finish-step"}', '{"type":"finish","finish', '[DONE]']
    """

    wire: ClassVar[WireKind] = "sse"
    newline: ClassVar[str] = "\n"
    #: It renders a run's items too (`rs.to_sse(dialect="ai-sdk")` passes them on).
    runs: ClassVar[bool] = True

    def __init__(self, *, model: str = "", id: str = "rxstream-ai-sdk-0001") -> None:
        if not isinstance(id, str) or not id:
            raise ValueError(f"id must be a non-empty str (the messageId), got {id!r}")
        self._model = model
        self._id = id
        self._started = False
        self._step_open = False  # `start-step` sent, `finish-step` not yet
        self._step_ended = False  # the open step's answer ended (`StepEnd`): tools' results next
        self._closed = False
        self._part: tuple[str, str] | None = None  # (kind, id) of the open part
        self._parts = 0
        self._matcher = ToolCallMatcher()
        self._calls: dict[int, _Call] = {}  # the call's index -> its record
        self._server_calls: set[str] = set()  # ids of provider-side calls sent
        self._sources = 0
        self._finish: Finish | None = None
        self._usage: Usage | None = None
        self._retired: set[str] = set()  # ids of the calls a reset dropped (never reused)
        self._announced: set[str] = set()  # ids shown for calls of the steps before
        self._shown: dict[str, str] = {}  # a run's call id -> the id the stream shows for it
        self._run_usage: Usage | None = None  # `RunEnd.usage`, the run's sum
        self._waits = False  # the run ended waiting for approvals
        # The open text part's `text-delta` as a template (a fast path, `text_event`):
        # the part's id, and the JSON before and after the text.
        self._templates = enabled()
        self._text_template: tuple[str, str, str] | None = None

    def feed(self, delta: Delta | RunItem) -> list[Wire]:
        """The chunks `delta` (or a run's item) becomes."""
        self._check()
        match delta:
            case StepStart():
                out = self._end_step() + self._message()
                return [*out, _step_part(delta), *self._start()]
            case StepEnd():
                out = self._start() + self._inputs()
                self._step_ended = True
                return [*out, _step_part(delta)]
            case ToolResult():
                # In its step; a resumed run's first results (the decided calls) in none.
                out = self._message()
                return [*out, _result(delta, self._shown.get(delta.call_id))]
            case ApprovalRequest(call_id=call_id):
                body: JSONObject = {
                    "type": "tool-approval-request",
                    "approvalId": approval_id(call_id),
                    "toolCallId": self._shown.get(call_id, call_id),
                }
                # In its step; a resumed run that still waits asks again in none.
                return [*self._message(), _chunk(body)]
            case ApprovalResponse():
                return []
            case RunEnd(usage=usage, pending=pending):
                self._run_usage = usage
                self._waits = bool(pending)
                return self._end_step()
        if delta.choice != 0:
            return []
        match delta:
            case TextDelta(text=text) if text:
                return self._text("text", text)
            case ReasoningDelta(text=text) if text:
                return self._text("reasoning", text)
            case RefusalDelta(text=text) if text:
                return self._text("refusal", text)
            case ToolCallDelta():
                return self._tool(delta)
            case TextBlockStart():
                # A text block of its own follows: the open text part ends, the next opens.
                return (
                    self._end_part() if self._part is not None and self._part[0] == "text" else []
                )
            case Citation():
                return self._citation(delta)
            case ServerToolCall():
                return self._server_call(delta)
            case ServerToolResult():
                return self._server_result(delta)
            case Metadata(data=data) if data:
                return [
                    *self._start(),
                    _chunk({"type": "message-metadata", "messageMetadata": data}),
                ]
            case Finish():
                self._finish = delta
            case Usage():
                self._usage = delta
            case Reset():
                return self._reset(delta)
        return []

    def text_event(self, delta: TextDelta) -> tuple[str, str] | None:
        """The one event `feed(delta)` gives for a text delta, as (name, data), when it
        changes nothing else (the open text part's `text-delta`); else None: `feed` it.

        What `feed` writes, without its layers: an encoder asks this first (a
        server writes one per token). Only where `feed` would only append that
        chunk: a step open, a text part open (not a refusal's), the first
        choice's text, not empty, the fast paths on.
        """
        part = self._part
        if (
            part is None
            or part[0] != "text"
            or not self._step_open
            or not delta.text
            or delta.choice != 0
            or self._closed
            or not self._templates
        ):
            return None
        template = self._text_template
        if template is None or template[0] != part[1]:
            written = _chunk({"type": "text-delta", "id": part[1], "delta": TEXT_MARK}).data
            template = self._text_template = (part[1], *text_halves(written))
        return "message", f"{template[1]}{encode_basestring(delta.text)}{template[2]}"

    def close(self) -> list[Wire]:
        """The chunks that end the stream: open parts, the tool inputs, `finish`, `[DONE]`."""
        self._check()
        asked = bool(self._calls) or self._waits
        out = self._start() if not self._started else []
        out += self._end_step()
        self._closed = True
        finish = self._finish
        if finish is None:
            word = "tool-calls" if asked else "stop"
        else:
            word = _WORDS.get(finish.reason, "other")
        body: JSONObject = {"type": "finish", "finishReason": word}
        usage = self._run_usage or self._usage
        if usage is not None:
            body["messageMetadata"] = {"usage": _usage(usage)}
        out += [_chunk(body), _DONE]
        return out

    def error(self, error: ProviderError) -> list[Wire]:
        """`{"type": "error", "errorText": <the provider's message>}`, then `[DONE]`."""
        self._check()
        self._closed = True
        return [*self._start(), _chunk({"type": "error", "errorText": error.message}), _DONE]

    # ----------------------------------------------------------------- internals

    def _check(self) -> None:
        if self._closed:
            raise RuntimeError("this AISDKRenderer is closed; it renders no more")

    def _message(self) -> list[Wire]:
        """`start`, once."""
        if self._started:
            return []
        self._started = True
        return [_chunk({"type": "start", "messageId": self._id})]

    def _start(self) -> list[Wire]:
        """`start` once, then `start-step` whenever no step is open."""
        out = self._message()
        if not self._step_open:
            self._step_open, self._step_ended = True, False
            out.append(_chunk({"type": "start-step"}))
        return out

    def _inputs(self) -> list[Wire]:
        """End the step's answer: its open part, then every call's start and its whole input."""
        if self._step_ended:
            return []
        out = self._end_part()
        for call in self._calls.values():
            out += self._begin_call(call)
        for call in self._calls.values():
            out.append(_available(call))
            assert call.id is not None  # set when the call began
            self._announced.add(call.id)
            if call.made_up:  # a run's results name it by the id the core made, now known
                arguments = "".join(call.arguments)
                self._shown[generated_call_id(call.index, call.name or None, arguments)] = call.id
        self._calls = {}
        self._matcher = ToolCallMatcher()
        return out

    def _end_step(self) -> list[Wire]:
        """`finish-step` for the open step (its answer ended first, if it had not)."""
        if not self._step_open:
            return []
        out = self._inputs()
        self._step_open = False
        out.append(_chunk({"type": "finish-step"}))
        return out

    def _end_part(self) -> list[Wire]:
        part, self._part = self._part, None
        if part is None:
            return []
        kind, id = part
        return [_chunk({"type": f"{'reasoning' if kind == 'reasoning' else 'text'}-end", "id": id})]

    def _text(self, kind: str, text: str) -> list[Wire]:
        out = self._start()
        part = self._part
        if part is None or part[0] != kind:
            out += self._end_part()
            id = f"{kind}-{self._parts}"
            self._parts += 1
            self._part = (kind, id)
            if kind == "refusal":
                marked = {RXSTREAM_KEY: {"refusal": True}}
                out.append(_chunk({"type": "text-start", "id": id, "providerMetadata": marked}))
            else:
                out.append(_chunk({"type": f"{kind}-start", "id": id}))
        else:
            id = part[1]
        wire_kind = "reasoning" if kind == "reasoning" else "text"
        out.append(_chunk({"type": f"{wire_kind}-delta", "id": id, "delta": text}))
        return out

    def _tool(self, delta: ToolCallDelta) -> list[Wire]:
        out = self._start()
        index = self._matcher.match(delta)[0].index
        call = self._calls.get(index)
        if call is None:
            call = self._calls[index] = _Call(index)
        if delta.id and call.id is None:
            call.id = delta.id
        if delta.name and call.name is None:
            call.name = delta.name
        if delta.arguments:
            call.arguments.append(delta.arguments)
            if call.started:
                out.append(_input_delta(call, delta.arguments))
                return out
        if not call.started and call.id is not None and call.name is not None:
            out += self._begin_call(call)
        return out

    def _begin_call(self, call: _Call) -> list[Wire]:
        """`tool-input-start` and the fragments so far, once the call has its id and name."""
        if call.started:
            return []
        out = self._end_part()
        call.started = True
        if call.id is None:
            call.id = f"{self._id}-call-{call.index}"
            call.made_up = True
        # The client keys a call by its id: two calls of one id (a provider's slip) would
        # merge into one there, so a repeated id is made unique, never shared.
        taken = {other.id for other in self._calls.values() if other.started and other is not call}
        taken |= self._retired | self._announced
        base, n = call.id, 1
        while call.id in taken:
            call.id = f"{base}-{call.index}" if n == 1 else f"{base}-{call.index}-{n}"
            n += 1
        self._shown[base] = call.id
        if call.name is None:
            call.name = ""
        out.append(
            _chunk({"type": "tool-input-start", "toolCallId": call.id, "toolName": call.name})
        )
        if call.arguments:
            out.append(_input_delta(call, "".join(call.arguments)))
        return out

    def _reset(self, reset: Reset) -> list[Wire]:
        """End what the dropped answer had open, then the reset part (see the class docstring)."""
        out = self._start() + self._end_part()
        for call in self._calls.values():
            if call.started:
                assert call.id is not None  # set when the call began
                self._retired.add(call.id)
                body: JSONObject = {
                    "type": "tool-input-error",
                    "toolCallId": call.id,
                    "toolName": call.name,
                    "input": "".join(call.arguments),
                    "errorText": f"dropped: the answer restarted (attempt {reset.attempt})",
                }
                out.append(_chunk(body))
        self._calls = {}
        self._matcher = ToolCallMatcher()
        self._finish = None
        self._usage = None
        data: JSONObject = {"attempt": reset.attempt, "reason": reset.reason}
        out.append(_chunk({"type": RESET_PART, "data": data}))
        return out

    def _citation(self, citation: Citation) -> list[Wire]:
        out = self._start()
        source = f"{self._id}-source-{self._sources}"
        self._sources += 1
        if citation.url is not None:
            body: JSONObject = {"type": "source-url", "sourceId": source, "url": citation.url}
            if citation.title is not None:
                body["title"] = citation.title
        else:
            title = citation.title or citation.text or citation.kind
            body = {
                "type": "source-document",
                "sourceId": source,
                "mediaType": "text/plain",
                "title": title,
            }
        out.append(_chunk(body))
        return out

    def _server_call(self, call: ServerToolCall) -> list[Wire]:
        out = self._start() + self._end_part()
        id = call.id or f"{self._id}-server-{len(self._server_calls)}"
        self._server_calls.add(id)
        out.append(_server_available(id, call.name, call.input))
        return out

    def _server_result(self, result: ServerToolResult) -> list[Wire]:
        out = self._start() + self._end_part()
        id = result.call_id or f"{self._id}-server-{len(self._server_calls)}"
        if id not in self._server_calls:
            self._server_calls.add(id)
            out.append(_server_available(id, result.name, None))
        body: JSONObject = {
            "type": "tool-output-available",
            "toolCallId": id,
            "output": result.content,
            "providerExecuted": True,
        }
        out.append(_chunk(body))
        return out


def approval_id(call_id: str) -> str:
    """The `approvalId` of the `tool-approval-request` for the call `call_id`.

    >>> approval_id("call_1")
    'approval-call_1'
    """
    return f"approval-{call_id}"


def _result(result: ToolResult, shown: str | None) -> SSEFrame:
    """A tool's result: its output, its error, or its denial."""
    id = shown or result.call_id
    if result.denied:
        return _chunk({"type": "tool-output-denied", "toolCallId": id})
    if result.error is not None:
        return _chunk({"type": "tool-output-error", "toolCallId": id, "errorText": result.error})
    return _chunk({"type": "tool-output-available", "toolCallId": id, "output": result.output})


def _step_part(item: StepStart | StepEnd) -> SSEFrame:
    """The transient data part that carries a step's item (see `AISDKRenderer`)."""
    return _chunk({"type": STEP_PART, "data": encode(item), "transient": True})


def _input_delta(call: _Call, text: str) -> SSEFrame:
    assert call.id is not None  # set when the call began
    return _chunk({"type": "tool-input-delta", "toolCallId": call.id, "inputTextDelta": text})


def _available(call: _Call) -> SSEFrame:
    text = "".join(call.arguments)
    body: JSONObject = {"toolCallId": call.id, "toolName": call.name}
    try:
        value: JSON = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        body = {"type": "tool-input-error", **body, "input": text}
        body["errorText"] = f"the tool call's arguments are not valid JSON: {exc}"
        return _chunk(body)
    return _chunk({"type": "tool-input-available", **body, "input": value})


def _server_available(id: str, name: str, input: JSON) -> SSEFrame:
    body: JSONObject = {
        "type": "tool-input-available",
        "toolCallId": id,
        "toolName": name,
        "input": input,
        "providerExecuted": True,
    }
    return _chunk(body)


def _usage(usage: Usage) -> JSONObject:
    body: JSONObject = {
        "inputTokens": usage.prompt_tokens,
        "outputTokens": usage.completion_tokens,
        "totalTokens": usage.total_tokens,
    }
    if usage.reasoning_tokens is not None:
        body["reasoningTokens"] = usage.reasoning_tokens
    if usage.cached_tokens is not None:
        body["cachedInputTokens"] = usage.cached_tokens
    if usage.cache_write_tokens is not None:
        body["inputTokenDetails"] = {"cacheWriteTokens": usage.cache_write_tokens}
    return body
