"""The `"cohere"` dialect: Cohere v2 chat streams (`POST /v2/chat`, `"stream": true`).

Input: `SSEFrame`s, each `event: <type>` with `data: {"type": <type>, ...}`
(recordings without the `event:` line read the same: the type is taken from
the data). Output: deltas.

What becomes what:

- `message-start` is `Metadata({"id": <message id>})`;
- `content-delta` text is `TextDelta`; thinking content (`{"thinking":
  ...}`, reasoning models) and `tool-plan-delta` are `ReasoningDelta`;
  `logprobs` on a delta are `Metadata({"logprobs": [<logprobs>, ...]})`;
- `tool-call-start` / `tool-call-delta` are `ToolCallDelta`s: the id and name
  on the first, then the argument fragments as sent; `index` is the call's
  order of appearance (Cohere's own per-call `index` picks the call);
- `citation-start` is one `Citation` per source (`kind` = the source's type,
  `"document"` or `"tool"`; url and title from the document or tool output
  where they have them; `start`/`end`/`text` as Cohere sends them, character
  offsets into the content the citation's `type` names: the text, the
  thinking or the plan; raw = the whole citation object), or one
  `Citation("citation")` when it names no source;
- `debug` is `Metadata({"debug": ...})`; an event of a type this decoder does
  not know (Cohere's event types are lower-case hyphenated words, and new
  ones may appear) is `Metadata({"events": [<event>]})`;
- `content-start` is read like `content-delta` (its text or thinking is
  usually empty); `content-end`, `tool-call-end`, `citation-end` carry nothing
  new. Fields of `message-start` and `message-end` that rxstream does not
  read are kept as `Metadata`.

`message-end` ends the stream: `finish_reason` `COMPLETE` and
`STOP_SEQUENCE` are `"stop"` (`"tool_calls"` if the answer asked for tool
calls), `MAX_TOKENS` `"length"`, `TOOL_CALL` `"tool_calls"`, others
(`TIMEOUT`, `ERROR` without a message) the provider's word; `Finish.raw`
keeps it. A `message-end` with `delta.error` is `ProviderError`, and so is
an `{"error": ...}` object without a type (a gateway's, mid-stream). Usage comes
from `usage.tokens` (what the model read and wrote), not `billed_units`
(which leaves out the system prompt and template tokens: 12 billed input
tokens against 507 read in a recorded stream); `billed_units` is used only
when `tokens` is absent, and `Usage.raw` keeps both. `cached_tokens` is
`cached_tokens`; Cohere reports no reasoning count. End of input before
`message-end` is `TruncatedStreamError`; `data: [DONE]`, which the official
SDK tolerates, is ignored.

Follows Cohere's v2 chat streaming reference (`StreamedChatResponseV2`,
`ChatFinishReason`, `Usage`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import ClassVar

from ...errors import ProviderError
from ...models import (
    JSON,
    Citation,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from .._build import constructor
from ..provider_errors import provider_error
from ..tools import ToolCallMatcher
from ._base import (
    LENGTH,
    STOP,
    TOOL_CALLS,
    DialectDecoder,
    OnMalformed,
    ShapeError,
    Wire,
    WireKind,
    opt_int,
    opt_list,
    opt_object,
    opt_str,
    usage,
)

__all__ = ["CohereDecoder", "CohereRenderer", "http_error"]

#: The deltas of the hot path, built the cheap way (every field, positionally).
_text: Callable[[str, int], TextDelta] = constructor(TextDelta)
_reasoning: Callable[[str, int], ReasoningDelta] = constructor(ReasoningDelta)

_FINISH = {
    "COMPLETE": STOP,
    "STOP_SEQUENCE": STOP,
    "MAX_TOKENS": LENGTH,
    "TOOL_CALL": TOOL_CALLS,
}
#: What Cohere's event types look like: new ones of this form are kept, others are foreign.
_COHERE_TYPE = re.compile(r"[a-z]+(?:-[a-z]+)+")
#: What Cohere's finish words look like (another dialect's raw word is not sent as one).
_WORD = re.compile(r"[A-Z][A-Z_]*")
_QUIET = frozenset({"content-end", "tool-call-end", "citation-end"})
#: The fields of `message-start` and of `message-end`'s delta that the decoder reads itself.
_START_KEYS = frozenset({"type", "id", "delta"})
_START_MESSAGE_KEYS = frozenset({"role"})
_END_DELTA_KEYS = frozenset({"finish_reason", "error", "usage"})


def _message(payload: JSONObject) -> JSONObject:
    """`payload.delta.message` (an empty object when either is absent)."""
    delta = opt_object(payload, "delta", "")
    if delta is None:
        return {}
    return opt_object(delta, "message", "delta") or {}


class CohereDecoder(DialectDecoder):
    """Decode a Cohere v2 chat stream (see the module docstring).

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` frames that are not
            valid Cohere events.

    >>> d = CohereDecoder()
    >>> d.feed(SSEFrame('{"type": "content-delta", "index": 0,'
    ...                 ' "delta": {"message": {"content": {"text": "Hi"}}}}'))
    [TextDelta(text='Hi', choice=0)]
    """

    dialect: ClassVar[str] = "cohere"
    end_marker: ClassVar[str] = "message-end"

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._calls: dict[int, int] = {}  # Cohere's call index -> order of appearance

    def _decode(self, frame: SSEFrame) -> list[Delta]:
        if type(frame) is not SSEFrame:
            raise TypeError(f"the cohere decoder takes SSEFrame items, got {type(frame).__name__}")
        data = frame.data
        try:
            payload = self._loads(data)
        except (ValueError, RecursionError):
            payload = None
        if type(payload) is not dict:
            if not data or data.isspace() or data == "[DONE]":
                return []
            payload = self._object(data, frame)  # its error (or None when skipped)
            if payload is None:
                return []
        kind = payload.get("type")
        event = frame.event
        if kind is None:
            if "error" in payload:  # a gateway's or proxy's error object in the stream
                raise provider_error(payload, data=data, event=event)
            if event == "message" or not _COHERE_TYPE.fullmatch(event):
                return self._foreign(payload, frame)
            kind = event
        elif type(kind) is not str:
            raise ShapeError("type", "a string", kind)
        elif event != kind and event != "message":
            return self._malformed(f"event {event!r} carries data of type {kind!r}", frame)
        if kind == "content-delta":
            # The hot case, read inline: a plain text piece.
            delta = payload.get("delta")
            if type(delta) is dict and "logprobs" not in payload:
                message = delta.get("message")
                content = message.get("content") if type(message) is dict else None
                if type(content) is dict and len(content) == 1:
                    text = content.get("text")
                    if type(text) is str:
                        self._answered = True
                        return [_text(text, 0)] if text else []
            return self._content(payload)
        if kind == "tool-call-delta":
            return self._call_delta(payload, frame)
        if kind == "tool-plan-delta":
            plan = opt_str(_message(payload), "tool_plan", "delta.message")
            self._answered = True
            return [ReasoningDelta(plan)] if plan else []
        if kind in _QUIET:
            self._index(payload)
            return []
        if kind == "content-start":
            self._index(payload)
            return self._content(payload)  # its text or thinking is usually empty, not always
        if kind == "tool-call-start":
            return self._call_start(payload)
        if kind == "citation-start":
            return self._citation(payload)
        if kind == "message-start":
            return self._start_message(payload)
        if kind == "message-end":
            return self._end_message(payload, frame)
        if kind == "debug":
            return [Metadata({"debug": payload})]
        if _COHERE_TYPE.fullmatch(kind):
            return [Metadata({"events": [payload]})]
        return self._foreign(payload, frame)

    def _foreign(self, payload: JSONObject, frame: SSEFrame) -> list[Delta]:
        kind = payload.get("type")
        if isinstance(kind, str):
            what = f"type {kind!r}"
        else:
            keys = ", ".join(sorted(payload)[:4]) or "no keys"
            what = f"no type ({keys})"
        return self._malformed(f"an event of another dialect ({what}), not a Cohere event", frame)

    def _index(self, payload: JSONObject) -> int:
        index = opt_int(payload, "index", "")
        return 0 if index is None else index

    def _content(self, payload: JSONObject) -> list[Delta]:
        content = opt_object(_message(payload), "content", "delta.message") or {}
        self._answered = True
        out: list[Delta] = []
        text = content.get("text")
        if text is not None:
            if type(text) is not str:
                raise ShapeError("delta.message.content.text", "a string", text)
            if text:
                out.append(_text(text, 0))
        thinking = opt_str(content, "thinking", "delta.message.content")
        if thinking:
            out.append(ReasoningDelta(thinking))
        logprobs = payload.get("logprobs")
        if logprobs is not None:
            out.append(Metadata({"logprobs": [logprobs]}))
        return out

    def _call_start(self, payload: JSONObject) -> list[Delta]:
        wire = self._index(payload)
        call = opt_object(_message(payload), "tool_calls", "delta.message") or {}
        where = "delta.message.tool_calls"
        function = opt_object(call, "function", where) or {}
        self._answered = True
        index = self._calls[wire] = len(self._calls)
        return [
            ToolCallDelta(
                index,
                opt_str(function, "arguments", f"{where}.function") or "",
                opt_str(call, "id", where),
                opt_str(function, "name", f"{where}.function") or "",
            )
        ]

    def _call_delta(self, payload: JSONObject, frame: SSEFrame) -> list[Delta]:
        wire = self._index(payload)
        call = opt_object(_message(payload), "tool_calls", "delta.message") or {}
        function = opt_object(call, "function", "delta.message.tool_calls") or {}
        arguments = function.get("arguments")
        if type(arguments) is not str:
            if arguments is None:
                return []
            raise ShapeError("delta.message.tool_calls.function.arguments", "a string", arguments)
        index = self._calls.get(wire)
        if index is None:
            return self._malformed(f"tool-call-delta for call {wire}, which no start opened", frame)
        return [ToolCallDelta(index, arguments)] if arguments else []

    def _citation(self, payload: JSONObject) -> list[Delta]:
        where = "delta.message.citations"
        cited = opt_object(_message(payload), "citations", "delta.message") or {}
        start = opt_int(cited, "start", where)
        end = opt_int(cited, "end", where)
        text = opt_str(cited, "text", where)
        sources = opt_list(cited, "sources", where) or []
        out: list[Delta] = []
        for k, source in enumerate(sources):
            at = f"{where}.sources[{k}]"
            if type(source) is not dict:
                raise ShapeError(at, "an object", source)
            kind = opt_str(source, "type", at) or "source"
            inner = opt_object(source, "document", at) or opt_object(source, "tool_output", at)
            url = title = None
            if inner is not None:
                url, title = _word(inner.get("url")), _word(inner.get("title"))
            out.append(Citation(kind, url, title, text, start, end, 0, cited))
        if not out:
            out.append(Citation("citation", None, None, text, start, end, 0, cited))
        return out

    def _start_message(self, payload: JSONObject) -> list[Delta]:
        """The message id, and whatever else `message-start` brought, as `Metadata`."""
        self._answered = True
        out: list[Delta] = []
        message_id = opt_str(payload, "id", "")
        if message_id is not None:
            out.append(Metadata({"id": message_id}))
        extra = {key: value for key, value in payload.items() if key not in _START_KEYS}
        message = _message(payload)
        sent = {
            key: value
            for key, value in message.items()
            if key not in _START_MESSAGE_KEYS and value not in (None, "", [], {})
        }
        if sent:
            extra["message"] = sent  # the start of a message is normally empty: kept as sent
        if extra:
            out.append(Metadata(extra))
        return out

    def _end_message(self, payload: JSONObject, frame: SSEFrame) -> list[Delta]:
        delta = opt_object(payload, "delta", "") or {}
        reason = opt_str(delta, "finish_reason", "delta")
        error = opt_str(delta, "error", "delta")
        if error:
            raise ProviderError(error, type=reason, payload=payload, event=frame.event)
        out: list[Delta] = []
        message_id = opt_str(payload, "id", "")
        if message_id is not None:
            out.append(Metadata({"id": message_id}))
        if reason is not None:
            normal = _FINISH.get(reason, reason)
            if normal == STOP and self._calls:
                normal = TOOL_CALLS
            out.append(Finish(normal, 0, reason))
        counts = opt_object(delta, "usage", "delta")
        if counts is not None:
            out.append(_usage(counts))
        extra = {key: value for key, value in delta.items() if key not in _END_DELTA_KEYS}
        extra.update((key, value) for key, value in payload.items() if key not in _START_KEYS)
        if extra:
            out.append(Metadata(extra))  # fields rxstream does not know, kept as sent
        self._answered = True
        self._done = True
        return out


def _word(value: JSON) -> str | None:
    return value if isinstance(value, str) else None


def _count(obj: JSONObject, key: str, path: str) -> int | None:
    """A token count: an integer (the SDK types say number, so a whole float passes too)."""
    value = obj.get(key)
    if type(value) is float and value.is_integer():
        return int(value)
    return opt_int(obj, key, path)


def _usage(counts: JSONObject) -> Usage:
    tokens = opt_object(counts, "tokens", "delta.usage")
    where = "delta.usage.tokens"
    if tokens is None:
        tokens = opt_object(counts, "billed_units", "delta.usage") or {}
        where = "delta.usage.billed_units"
    return usage(
        _count(tokens, "input_tokens", where),
        _count(tokens, "output_tokens", where),
        cached=_count(counts, "cached_tokens", "delta.usage"),
        raw=counts,
    )


# --------------------------------------------------------------------------- renderer

_WORDS = {STOP: "COMPLETE", LENGTH: "MAX_TOKENS", TOOL_CALLS: "TOOL_CALL"}


def _frame(kind: str, body: JSONObject) -> SSEFrame:
    data = {"type": kind, **body}
    return SSEFrame(json.dumps(data, separators=(",", ":"), ensure_ascii=False), kind)


class CohereRenderer:
    """Deltas back into a Cohere v2 chat stream (`SSEFrame`s with `event:` names).

    `message-start` opens the stream; text and reasoning go in `text` and
    `thinking` content blocks (`content-start` / `-delta` / `-end`, a new
    block each time the kind changes); a tool call is `tool-call-start` (id,
    name, first fragment) then a `tool-call-delta` per fragment and
    `tool-call-end` when the next block begins; a citation is
    `citation-start` + `citation-end` with one source; `close()` sends
    `message-end` with the finish reason and usage, `error()` a
    `message-end` with `finish_reason: "ERROR"` and the message.

    Not expressible, so left out: choices other than 0 (Cohere has one),
    refusals, reasoning state, server-side tools, `Metadata`, reasoning
    tokens, a total other than prompt + completion. Billed units are
    written equal to the token counts (rxstream does not know the billed
    split). Reasoning comes back as reasoning, but as thinking rather than a
    tool plan; citation kinds other than `"document"`/`"tool"` come back as
    `"document"`; a finish of `"content_filter"` (Cohere has no such reason)
    comes back as the same word; a stream that never finished ends with
    `COMPLETE` (`TOOL_CALL` if it asked for tool calls).

    Args:
        model: accepted for the common renderer options (Cohere's stream
            does not name the model).
        id: the message id in `message-start`.

    >>> r = CohereRenderer()
    >>> [f.event for f in r.feed(TextDelta("Hi")) + r.close()]
    ['message-start', 'content-start', 'content-delta', 'content-end', 'message-end']
    """

    wire: ClassVar[WireKind] = "sse"
    newline: ClassVar[str] = "\n"

    def __init__(
        self, *, model: str = "command-a-03-2025", id: str = "rxstream-cohere-0001"
    ) -> None:
        self._model = model
        self._id = id
        self._started = False
        self._closed = False
        self._block: str | None = None  # "text", "thinking" or "tool" while one is open
        self._content_index = -1
        self._matcher = ToolCallMatcher()  # which call a fragment belongs to
        self._calls: dict[int, int] = {}  # the call's index -> Cohere's index
        self._call = -1  # the open call's Cohere index
        self._citations = 0
        self._finish: Finish | None = None
        self._usage: Usage | None = None

    def feed(self, delta: Delta) -> list[Wire]:
        """The events `delta` becomes."""
        if self._closed:
            raise RuntimeError("this CohereRenderer is closed; it renders no more")
        if delta.choice != 0:
            return []
        match delta:
            case TextDelta(text=text) if text:
                return self._content("text", text)
            case ReasoningDelta(text=text) if text:
                return self._content("thinking", text)
            case ToolCallDelta():
                return self._tool(delta)
            case Citation():
                return self._citation(delta)
            case Finish():
                self._finish = delta
            case Usage():
                self._usage = delta
        return []

    def close(self) -> list[Wire]:
        """The events that end the stream: the open block's end and `message-end`."""
        if self._closed:
            raise RuntimeError("this CohereRenderer is closed; it renders no more")
        self._closed = True
        out = self._start() + self._end_block()
        finish = self._finish
        if finish is None:
            word = "TOOL_CALL" if self._calls else "COMPLETE"
        elif (
            finish.raw is not None
            and _WORD.fullmatch(finish.raw)
            and _FINISH.get(finish.raw, finish.raw) == finish.reason
        ):
            word = finish.raw  # Cohere's own word, or one that reads the same
        else:
            word = _WORDS.get(finish.reason, finish.reason)
        body: JSONObject = {"finish_reason": word}
        if self._usage is not None:
            u = self._usage
            tokens = {"input_tokens": u.prompt_tokens, "output_tokens": u.completion_tokens}
            counts: JSONObject = {"billed_units": dict(tokens), "tokens": tokens}
            if u.cached_tokens is not None:
                counts["cached_tokens"] = u.cached_tokens
            body["usage"] = counts
        out.append(_frame("message-end", {"delta": body}))
        return out

    def error(self, error: ProviderError) -> list[Wire]:
        """`message-end` with `finish_reason: "ERROR"` and the error's message."""
        if self._closed:
            raise RuntimeError("this CohereRenderer is closed; it renders no more")
        self._closed = True
        out = self._start() + self._end_block()
        body = {"finish_reason": "ERROR", "error": error.message}
        out.append(_frame("message-end", {"delta": body}))
        return out

    def _start(self) -> list[Wire]:
        if self._started:
            return []
        self._started = True
        message = {
            "role": "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
        return [_frame("message-start", {"id": self._id, "delta": {"message": message}})]

    def _end_block(self) -> list[Wire]:
        block, self._block = self._block, None
        if block is None:
            return []
        if block == "tool":
            return [_frame("tool-call-end", {"index": self._call})]
        return [_frame("content-end", {"index": self._content_index})]

    def _content(self, kind: str, text: str) -> list[Wire]:
        out = self._start()
        if self._block != kind:
            out += self._end_block()
            self._content_index += 1
            self._block = kind
            start = {"type": kind, kind: ""}
            out.append(
                _frame(
                    "content-start",
                    {"index": self._content_index, "delta": {"message": {"content": start}}},
                )
            )
        piece = {"message": {"content": {kind: text}}}
        out.append(_frame("content-delta", {"index": self._content_index, "delta": piece}))
        return out

    def _tool(self, delta: ToolCallDelta) -> list[Wire]:
        out = self._start()
        key = self._matcher.match(delta)[0].index
        wire = self._calls.get(key)
        if wire is None:
            out += self._end_block()
            wire = self._call = len(self._calls)
            self._calls[key] = wire
            self._block = "tool"
            call: JSONObject = {} if delta.id is None else {"id": delta.id}
            call["type"] = "function"
            call["function"] = {"name": delta.name or "", "arguments": delta.arguments}
            body = {"index": wire, "delta": {"message": {"tool_calls": call}}}
            out.append(_frame("tool-call-start", body))
            return out
        if delta.arguments:
            piece = {"message": {"tool_calls": {"function": {"arguments": delta.arguments}}}}
            out.append(_frame("tool-call-delta", {"index": wire, "delta": piece}))
        return out

    def _citation(self, citation: Citation) -> list[Wire]:
        out = self._start()
        cited: JSONObject = {}
        for key, value in (
            ("start", citation.start),
            ("end", citation.end),
            ("text", citation.text),
        ):
            if value is not None:
                cited[key] = value
        if citation.kind != "citation" or citation.url is not None or citation.title is not None:
            kind = citation.kind if citation.kind in ("document", "tool") else "document"
            pairs = (("url", citation.url), ("title", citation.title))
            inner = {k: v for k, v in pairs if v is not None}
            field = "tool_output" if kind == "tool" else "document"
            cited["sources"] = [{"type": kind, field: inner}]
        index = self._citations
        self._citations += 1
        out.append(
            _frame("citation-start", {"index": index, "delta": {"message": {"citations": cited}}})
        )
        out.append(_frame("citation-end", {"index": index}))
        return out


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """An HTTP error answer in Cohere's shape: `{"message": ...}`.

    Cohere's error bodies hold only the message; `type` and `code`, when
    given, are kept as extra fields (`"type"`, `"code"`) that clients ignore.

    Returns:
        (content type, body).

    >>> http_error(401, "invalid api token")
    ('application/json', b'{"message":"invalid api token"}')
    """
    body: JSONObject = {"message": message}
    if type is not None:
        body["type"] = type
    if code is not None:
        body["code"] = code
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return "application/json", text.encode("utf-8")
