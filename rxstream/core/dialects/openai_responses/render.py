"""The `"openai-responses"` dialect: the renderer (deltas -> wire events).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import ClassVar

from ...._fast import enabled
from ....errors import ProviderError
from ....models import (
    JSON,
    Citation,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
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
from .fields import _ITEM_KEYS, _OTHER_RESULT, _SERVER_ITEMS

__all__ = ["ResponsesRenderer"]

# ------------------------------------------------------------------------------ render


#: The annotation types of Responses output text.
_ANNOTATIONS = frozenset({"url_citation", "file_citation", "container_file_citation", "file_path"})

#: The finish reasons rendered as `response.incomplete`, with their `incomplete_details.reason`.
_INCOMPLETE_REASON = {LENGTH: "max_output_tokens", CONTENT_FILTER: "content_filter"}


_TEXT_DELTA = "response.output_text.delta"
# What `_event` writes before a text delta's sequence number.
_TEXT_HEAD = dumps({"type": _TEXT_DELTA})[:-1] + ',"sequence_number":'


@dataclass(slots=True)
class _Part:
    """A message content part being rendered."""

    kind: str  # "output_text" or "refusal"
    pieces: list[str] = field(default_factory=list)
    annotations: list[JSONObject] = field(default_factory=list)
    logprobs: list[JSON] = field(default_factory=list)

    def whole(self) -> JSONObject:
        text = "".join(self.pieces)
        if self.kind == "refusal":
            return {"type": "refusal", "refusal": text}
        return {
            "type": "output_text",
            "text": text,
            "annotations": self.annotations,
            "logprobs": self.logprobs,
        }


@dataclass(slots=True)
class _Open:
    """The item being rendered (a message, a reasoning item, a server tool call, a client call)."""

    kind: str
    index: int
    item: JSONObject
    parts: list[_Part] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)  # reasoning summary or call arguments


class ResponsesRenderer:
    """Render deltas as an OpenAI Responses stream (`SSEFrame`s with `event:` names).

    The stream opens with `response.created` and `response.in_progress`, gives
    each run of text (and refusal) a `message` item with its content parts,
    each run of reasoning a `reasoning` item with one summary part, each client
    call a `function_call` item (its `call_id` the delta's id, `call_<index>`
    when it has none), each `ServerToolCall` a provider-side item
    (`web_search` -> `web_search_call`, ...; the input's fields go into the
    item, its `ServerToolResult` under the item's result field), and ends at
    `close()` with `response.completed` (or `response.incomplete` for a
    `length`, `content_filter` or other finish), the whole output and the
    usage. Every event has its `sequence_number`.

    What it carries besides: `ReasoningState(kind="reasoning_item")` as the
    id and `encrypted_content` of the next reasoning item without one (or of
    a reasoning item of its own; a reasoning item ended before its state came
    gets its `output_item.done` when the state comes, or at the end, since
    a reader takes the state from that event; an item announced before its
    state keeps its id until it is done, as readers require, and has the
    state's id in the final output), `Metadata` `logprobs` on the next text
    delta, `content_filters` on the final response, `items` as whole output
    items and `events` / `partial_images` as events again; a `TextBlockStart`
    ends the open message item, so the text after it is a message item of its
    own (and decodes as a block of its own).

    What it cannot express: choices other than 0 (dropped), a `Finish` of
    `"stop"` with client calls or of `"tool_calls"` without (the decoder
    derives the reason from the output), `Citation.text`, a citation of
    another dialect without a URL (one with a URL is a `url_citation`, its
    title `""` and offsets 0 when it has none: the fields the SDK requires), other kinds of
    `ReasoningState` (Anthropic signatures, Gemini thought signatures), a
    `ServerToolCall` input that is not an object (it goes under `input`),
    other `Metadata` (the `id` and `model` options name the response), and
    arguments of a call whose item already ended (they open a new item with
    the same `call_id`, which accumulates into the same call).

    A `Reset` (a new answer replaces the one so far), which this format
    cannot carry, follows `ResetRule`: the new answer goes on in the same
    stream, its tool calls numbered after the dropped answer's.

    Args:
        model: the model name the response carries.
        id: the response id.
        created_at: the response's creation time (Unix seconds).

    >>> r = ResponsesRenderer()
    >>> [f.event for f in r.feed(TextDelta("Hi"))]  # doctest: +NORMALIZE_WHITESPACE
    ['response.created', 'response.in_progress', 'response.output_item.added',
     'response.content_part.added', 'response.output_text.delta']
    >>> [f.event for f in r.close()][-1]
    'response.completed'
    """

    wire: ClassVar[WireKind] = "sse"
    newline: ClassVar[str] = "\n"

    def __init__(
        self, *, model: str = "test-model", id: str = "resp_test", created_at: int = 0
    ) -> None:
        self._resets = ResetRule()  # what a Reset does here (ResetRule)
        self._model = model
        self._id = id
        self._created_at = created_at
        self._seq = 0
        self._state = "new"  # new -> open -> closed
        self._output: list[JSONObject] = []  # every item, by output index (filled as they end)
        self._open: _Open | None = None  # a message, reasoning or server item
        self._calls: list[_Open] = []  # client calls open together, in output order
        self._call_keys: dict[int, _Open] = {}  # the open calls by their delta index
        self._stateless: deque[JSONObject] = deque()  # rendered reasoning items awaiting a state
        # Reasoning items ended before their state came: their `output_item.done` waits for it
        # (a decoder takes an item's state from its done event), by output index.
        self._held: dict[int, _Open] = {}
        # The ids states gave items already announced under another: an item keeps its id
        # until it is done (readers refuse a done item whose id changed), the final output
        # has the state's.
        self._final_ids: dict[int, str] = {}
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._logprobs: list[JSON] = []
        self._filters: list[JSON] | None = None
        # The open text part's `response.output_text.delta` as a template (a fast path,
        # `text_event`): (the part, the JSON after the sequence number and before the
        # text, the JSON after the text).
        self._templates = enabled()
        self._text_template: tuple[_Part, str, str] | None = None

    # -- the protocol ---------------------------------------------------------------

    def feed(self, delta: Delta) -> list[Wire]:
        """The frames `delta` becomes (opening and closing items around it as needed).

        Raises:
            RuntimeError: after `close()` or `error()`.
        """
        if type(delta) is not TextDelta or self._resets.ended:
            seen = self._resets.see(delta)
            if seen is None:
                return []
            delta = seen
        out = self._start()
        if delta.choice != 0:
            return out
        match delta:
            case TextDelta(text=text):
                out += self._content("output_text", text)
            case RefusalDelta(text=text):
                out += self._content("refusal", text)
            case ReasoningDelta(text=text):
                out += self._reasoning(text)
            case ToolCallDelta():
                out += self._call(delta)
            case Citation():
                out += self._citation(delta)
            case TextBlockStart():
                out += self._end_message()  # the text after it goes in a message item of its own
            case ServerToolCall():
                out += self._server_call(delta)
            case ServerToolResult():
                out += self._server_result(delta)
            case ReasoningState():
                out += self._reasoning_state(delta)
            case Metadata(data=data):
                out += self._metadata(data)
            case Finish(reason=reason):
                out += self._end_all()
                self._finish = reason
            case Usage():
                self._usage = delta
        return out

    def text_event(self, delta: TextDelta) -> tuple[str, str] | None:
        """The one event `feed(delta)` gives for a text delta, as (name, data), when it
        changes nothing else (the open text part's `response.output_text.delta`); else
        None: `feed` it.

        What `feed` writes, without its layers (the text is kept for the part's
        `done` events, the sequence number counts it): an encoder asks this
        first (a server writes one per token). Only where `feed` would only
        append that event: the stream open, the first choice's text, a message's
        text part open, no client call open, no logprobs held, no reset ending
        the choice, the fast paths on.
        """
        opened = self._open
        if (
            opened is None
            or opened.kind != "message"
            or not opened.parts
            or opened.parts[-1].kind != "output_text"
            or self._calls
            or self._logprobs
            or self._state != "open"
            or delta.choice != 0
            or self._resets.ended
            or not self._templates
        ):
            return None
        part = opened.parts[-1]
        template = self._text_template
        if template is None or template[0] is not part:
            template = self._text_template = (part, *self._around_text(opened))
        part.pieces.append(delta.text)
        seq = self._seq
        self._seq += 1
        return (
            _TEXT_DELTA,
            f"{_TEXT_HEAD}{seq}{template[1]}{encode_basestring(delta.text)}{template[2]}",
        )

    def _around_text(self, message: _Open) -> tuple[str, str]:
        """The JSON `_content` writes for the open text part's delta after the sequence
        number, before and after the text (see `text_event`)."""
        where = {
            "item_id": message.item["id"],
            "output_index": message.index,
            "content_index": len(message.parts) - 1,
            "delta": TEXT_MARK,
            "logprobs": [],
        }
        before, after = text_halves(dumps(where))
        return "," + before[1:], after

    def close(self) -> list[Wire]:
        """The frames that end the stream: open items closed, then the terminal event.

        Raises:
            RuntimeError: after `close()` or `error()`.
        """
        out = self._start()
        out += self._end_all()
        for held in sorted(self._held):
            out += self._item_done(self._held[held])
        self._held.clear()
        self._state = "closed"
        reason = self._finish
        incomplete = None
        if reason is not None and reason not in (STOP, TOOL_CALLS):
            incomplete = _INCOMPLETE_REASON.get(reason, reason)
        response = self._response("incomplete" if incomplete else "completed", self._output)
        if incomplete:
            response["incomplete_details"] = {"reason": incomplete}
        if self._usage is not None:
            response["usage"] = _usage_json(self._usage)
        if self._filters is not None:
            response["content_filters"] = self._filters
        kind = "response.incomplete" if incomplete else "response.completed"
        out.append(self._event(kind, {"response": response}))
        return out

    def error(self, error: ProviderError) -> list[Wire]:
        """An `error` event (nested, as OpenAI sends it) and `response.failed`, ending the stream.

        The error's `code` is written as a string, as the protocol has it: a
        numeric code (`529`) goes as its text (`"529"`) and decodes as such. An
        error without a `type` gets `"server_error"` (the nested error has one).

        Raises:
            RuntimeError: after `close()` or `error()`.
        """
        out = self._start()
        self._state = "closed"
        # The protocol's `code` is a string and the nested error's `type` one too (strict
        # readers, the AI SDK's openai provider, refuse a number or a null): a numeric
        # code goes as its decimal text, a missing type as OpenAI's `server_error`.
        code = None if error.code is None else str(error.code)
        kind = error.type or "server_error"
        body = {"type": kind, "code": code, "message": error.message, "param": None}
        out.append(self._event("error", {"error": body}))
        response = self._response("failed", self._output)
        response["error"] = {"code": code, "message": error.message}
        out.append(self._event("response.failed", {"response": response}))
        return out

    # -- frames -----------------------------------------------------------------------

    def _event(self, kind: str, body: JSONObject) -> SSEFrame:
        payload = {"type": kind, "sequence_number": self._seq, **body}
        self._seq += 1
        return SSEFrame(dumps(payload), event=kind)

    def _response(self, status: str, output: list[JSONObject]) -> JSONObject:
        return {
            "id": self._id,
            "object": "response",
            "created_at": self._created_at,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": self._model,
            "output": output,
            "usage": None,
        }

    def _start(self) -> list[Wire]:
        if self._state == "open":
            return []
        if self._state == "closed":
            raise RuntimeError("this ResponsesRenderer has ended its stream; it takes no more")
        self._state = "open"
        return [
            self._event("response.created", {"response": self._response("in_progress", [])}),
            self._event("response.in_progress", {"response": self._response("in_progress", [])}),
        ]

    def _add(self, kind: str, item: JSONObject, out: list[SSEFrame]) -> _Open:
        """Open an output item: `output_item.added` goes to `out`; the item is kept to end it."""
        index = len(self._output)
        self._output.append(item)
        out.append(
            self._event("response.output_item.added", {"output_index": index, "item": dict(item)})
        )
        return _Open(kind, index, item)

    # -- items -------------------------------------------------------------------------

    def _end_all(self) -> list[SSEFrame]:
        out = self._end_calls()
        opened = self._open
        if opened is not None:
            self._open = None
            out += self._end_item(opened)
        return out

    def _end_message(self) -> list[SSEFrame]:
        """End the open message item, if one is open."""
        opened = self._open
        if opened is None or opened.kind != "message":
            return []
        self._open = None
        return self._end_item(opened)

    def _end_calls(self) -> list[SSEFrame]:
        out: list[SSEFrame] = []
        for call in self._calls:
            out += self._end_item(call)
        self._calls = []
        self._call_keys = {}
        return out

    def _end_item(self, opened: _Open) -> list[SSEFrame]:
        out: list[SSEFrame] = []
        item, index = opened.item, opened.index
        if opened.kind == "message":
            out += self._end_part(opened)
            item["content"] = [part.whole() for part in opened.parts]
        elif opened.kind == "reasoning" and opened.pieces:
            text = "".join(opened.pieces)
            where = {"item_id": item["id"], "output_index": index, "summary_index": 0}
            part = {"type": "summary_text", "text": text}
            out.append(self._event("response.reasoning_summary_text.done", {**where, "text": text}))
            out.append(self._event("response.reasoning_summary_part.done", {**where, "part": part}))
            item["summary"] = [part]
        elif opened.kind == "function_call":
            arguments = "".join(opened.pieces)
            item["arguments"] = arguments
            out.append(
                self._event(
                    "response.function_call_arguments.done",
                    {"item_id": item["id"], "output_index": index, "arguments": arguments},
                )
            )
        if opened.kind == "reasoning" and any(waiting is item for waiting in self._stateless):
            self._held[index] = opened  # done when its state comes (or at the end)
            return out
        return out + self._item_done(opened)

    def _item_done(self, opened: _Open) -> list[SSEFrame]:
        item = opened.item
        if opened.kind != "other":  # an item kept whole goes out as it came
            item["status"] = "completed"
        done = self._event(
            "response.output_item.done", {"output_index": opened.index, "item": dict(item)}
        )
        final_id = self._final_ids.pop(opened.index, None)
        if final_id is not None:
            item["id"] = final_id
        return [done]

    def _end_part(self, opened: _Open) -> list[SSEFrame]:
        if not opened.parts:
            return []
        part = opened.parts[-1]
        whole = part.whole()
        where = {
            "item_id": opened.item["id"],
            "output_index": opened.index,
            "content_index": len(opened.parts) - 1,
        }
        if part.kind == "refusal":
            done = self._event("response.refusal.done", {**where, "refusal": whole["refusal"]})
        else:
            done = self._event(
                "response.output_text.done",
                {**where, "text": whole["text"], "logprobs": part.logprobs},
            )
        return [done, self._event("response.content_part.done", {**where, "part": whole})]

    def _switch(self, kind: str) -> tuple[list[SSEFrame], _Open | None]:
        """End what is open unless it is an item of `kind`; return (frames, that item or None)."""
        out = self._end_calls()
        opened = self._open
        if opened is not None and opened.kind == kind:
            return out, opened
        if opened is not None:
            self._open = None
            out += self._end_item(opened)
        return out, None

    def _message_part(self, kind: str) -> tuple[list[SSEFrame], _Open, _Part]:
        """The open message's current part of `kind`, opening the message or the part."""
        out, message = self._switch("message")
        if message is None:
            message = self._open = self._add(
                "message",
                {
                    "id": f"msg_{len(self._output)}",
                    "type": "message",
                    "status": "in_progress",
                    "role": "assistant",
                    "content": [],
                },
                out,
            )
        if not message.parts or message.parts[-1].kind != kind:
            out += self._end_part(message)
            message.parts.append(_Part(kind))
            empty = _Part(kind).whole()
            out.append(
                self._event(
                    "response.content_part.added",
                    {
                        "item_id": message.item["id"],
                        "output_index": message.index,
                        "content_index": len(message.parts) - 1,
                        "part": empty,
                    },
                )
            )
        return out, message, message.parts[-1]

    def _content(self, kind: str, text: str) -> list[SSEFrame]:
        out, message, part = self._message_part(kind)
        part.pieces.append(text)
        where = {
            "item_id": message.item["id"],
            "output_index": message.index,
            "content_index": len(message.parts) - 1,
            "delta": text,
        }
        if kind == "refusal":
            out.append(self._event("response.refusal.delta", where))
        else:
            logprobs, self._logprobs = self._logprobs, []
            part.logprobs += logprobs
            out.append(self._event(_TEXT_DELTA, {**where, "logprobs": logprobs}))
        return out

    def _citation(self, citation: Citation) -> list[SSEFrame]:
        raw = citation.raw
        annotation: JSONObject
        if (
            isinstance(raw, dict)
            and raw.get("type") in _ANNOTATIONS
            and (raw["type"] != "url_citation" or "url" in raw)
        ):
            annotation = raw  # a Responses annotation already: sent back as it came
        elif citation.kind in _ANNOTATIONS:
            annotation = {"type": citation.kind}
            for key, value in (
                ("url", citation.url),
                ("title", citation.title),
                ("start_index", citation.start),
                ("end_index", citation.end),
            ):
                if value is not None:
                    annotation[key] = value
        elif citation.url is not None:
            # Another dialect's citation with an address: the one annotation type
            # the openai SDK's models take for it, every field it requires.
            annotation = {
                "type": "url_citation",
                "url": citation.url,
                "title": citation.title or "",
                "start_index": citation.start or 0,
                "end_index": citation.end or 0,
            }
        else:
            return []  # no address: Responses has no annotation for it
        out, message, part = self._message_part("output_text")
        part.annotations.append(annotation)
        out.append(
            self._event(
                "response.output_text.annotation.added",
                {
                    "item_id": message.item["id"],
                    "output_index": message.index,
                    "content_index": len(message.parts) - 1,
                    "annotation_index": len(part.annotations) - 1,
                    "annotation": annotation,
                },
            )
        )
        return out

    def _reasoning(self, text: str) -> list[SSEFrame]:
        out, opened = self._switch("reasoning")
        if opened is None:
            item: JSONObject = {"id": f"rs_{len(self._output)}", "type": "reasoning", "summary": []}
            opened = self._open = self._add("reasoning", item, out)
            self._stateless.append(item)
        where = {"item_id": opened.item["id"], "output_index": opened.index, "summary_index": 0}
        if not opened.pieces:
            out.append(
                self._event(
                    "response.reasoning_summary_part.added",
                    {**where, "part": {"type": "summary_text", "text": ""}},
                )
            )
        opened.pieces.append(text)
        out.append(self._event("response.reasoning_summary_text.delta", {**where, "delta": text}))
        return out

    def _reasoning_state(self, state: ReasoningState) -> list[SSEFrame]:
        if state.kind == "compaction":
            out = self._end_all()
            compacted: JSONObject = {
                "id": state.id or f"cmp_{len(self._output)}",
                "type": "compaction",
                "encrypted_content": state.data,
            }
            out += self._end_item(self._add("compaction", compacted, out))
            return out
        if state.kind != "reasoning_item":
            return []
        if self._stateless:
            item = self._stateless.popleft()
            if state.data:
                item["encrypted_content"] = state.data
            index = next(i for i, o in enumerate(self._output) if o is item)
            if state.id is not None:
                self._final_ids[index] = state.id
            held = self._held.pop(index, None)
            return [] if held is None else self._item_done(held)
        out = self._end_all()
        item = {"id": state.id or f"rs_{len(self._output)}", "type": "reasoning", "summary": []}
        if state.data:
            item["encrypted_content"] = state.data
        out += self._end_item(self._add("reasoning", item, out))
        return out

    def _call(self, delta: ToolCallDelta) -> list[SSEFrame]:
        call = None
        if self._calls:
            call = self._calls[-1] if delta.index is None else self._call_keys.get(delta.index)
            if call is not None and delta.id and delta.id != call.item["call_id"]:
                call = None  # another call under the same index
        out: list[SSEFrame] = []
        if call is None:
            opened = self._open
            if opened is not None:
                self._open = None
                out += self._end_item(opened)
            n = len(self._output)
            call = self._add(
                "function_call",
                {
                    "id": f"fc_{n}",
                    "type": "function_call",
                    "status": "in_progress",
                    "call_id": delta.id or f"call_{delta.index if delta.index is not None else n}",
                    "name": delta.name or "",
                    "arguments": "",
                },
                out,
            )
            if delta.index is not None:
                self._call_keys[delta.index] = call
            self._calls.append(call)
        elif delta.name and not call.item["name"]:
            call.item["name"] = delta.name
        if delta.arguments:
            call.pieces.append(delta.arguments)
            out.append(
                self._event(
                    "response.function_call_arguments.delta",
                    {
                        "item_id": call.item["id"],
                        "output_index": call.index,
                        "delta": delta.arguments,
                    },
                )
            )
        return out

    def _server_call(self, call: ServerToolCall) -> list[SSEFrame]:
        out = self._end_all()
        kind = _server_type(call.name)
        item: JSONObject = {"id": call.id or f"tool_{len(self._output)}", "type": kind}
        item["status"] = "in_progress"
        if isinstance(call.input, dict):
            item.update({k: v for k, v in call.input.items() if k not in _ITEM_KEYS})
        elif call.input is not None:
            item["input"] = call.input
        self._open = self._add("server", item, out)
        return out

    def _server_result(self, result: ServerToolResult) -> list[SSEFrame]:
        opened = self._open
        out: list[SSEFrame] = []
        if (
            opened is None
            or opened.kind != "server"
            or (result.call_id is not None and opened.item["id"] != result.call_id)
        ):
            out = self._end_all()
            item = {
                "id": result.call_id or f"tool_{len(self._output)}",
                "type": _server_type(result.name),
                "status": "in_progress",
            }
            opened = self._add("server", item, out)
        else:
            self._open = None
        opened.item[_result_key(opened.item["type"])] = result.content
        out += self._end_item(opened)
        return out

    def _metadata(self, data: JSONObject) -> list[SSEFrame]:
        out: list[SSEFrame] = []
        logprobs = data.get("logprobs")
        if isinstance(logprobs, list):
            self._logprobs += logprobs
        filters = data.get("content_filters")
        if isinstance(filters, list):
            self._filters = (self._filters or []) + filters
        items = data.get("items")
        if isinstance(items, list):
            for item in items:
                if isinstance(item, dict):
                    out += self._end_all()
                    out += self._end_item(self._add("other", dict(item), out))
        for key in ("events", "partial_images"):
            events = data.get(key)
            if isinstance(events, list):
                for event in events:
                    if isinstance(event, dict) and isinstance(event.get("type"), str):
                        body = {
                            k: v for k, v in event.items() if k not in ("type", "sequence_number")
                        }
                        out.append(self._event(event["type"], body))
        return out


def _server_type(name: str) -> str:
    for kind, (known, _) in _SERVER_ITEMS.items():
        if known == name:
            return kind
    return name if name.endswith("_call") else f"{name}_call"


def _result_key(kind: str) -> str:
    spec = _SERVER_ITEMS.get(kind)
    if spec is None:
        return _OTHER_RESULT
    return spec[1] or "result"


def _usage_json(used: Usage) -> JSONObject:
    body: JSONObject = {"input_tokens": used.prompt_tokens}
    inputs: JSONObject = {}
    if used.cached_tokens is not None:
        inputs["cached_tokens"] = used.cached_tokens
    if used.cache_write_tokens is not None:
        inputs["cache_write_tokens"] = used.cache_write_tokens
    if inputs:
        body["input_tokens_details"] = inputs
    body["output_tokens"] = used.completion_tokens
    if used.reasoning_tokens is not None:
        body["output_tokens_details"] = {"reasoning_tokens": used.reasoning_tokens}
    body["total_tokens"] = used.total_tokens
    return body
