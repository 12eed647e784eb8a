"""The `"cohere"` dialect: the decoder (wire events -> deltas).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from ...._fast import constructor
from ...._typed import typed
from ....errors import ProviderError
from ....models import (
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
from ...pipeline import Handoff
from ...provider_errors import provider_error
from .._base import (
    LENGTH,
    STOP,
    TOOL_CALLS,
    DialectDecoder,
    OnMalformed,
    Reader,
    ShapeError,
    opt_int,
    opt_list,
    opt_object,
    opt_str,
    pair_type,
    usage,
)
from .._shared import Budget, reread, skeleton

__all__ = ["CohereDecoder"]

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


def _plain_text(payload: JSONObject) -> str | None:
    """The text of a `content-delta` payload that is a plain text piece, else None."""
    delta = payload.get("delta")
    if type(delta) is not dict or "logprobs" in payload:
        return None
    message = delta.get("message")
    content = message.get("content") if type(message) is dict else None
    if type(content) is dict and len(content) == 1:
        text = content.get("text")
        if type(text) is str:
            return text
    return None


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
    #: What it takes, fused (`Handoff`): an `SSEParser` fused in front hands each
    #: frame as an `(event, data)` tuple; the last, unterminated frame still whole.
    takes = Handoff.PAIRS
    gives_deltas_only = True

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._calls: dict[int, int] = {}  # Cohere's call index -> order of appearance
        # The skeleton of the last plain text delta (`_plain_reader`), or None.
        self._around: tuple[str, str] | None = None
        self._budget = Budget()  # not before a few text deltas (a short stream learns none)
        # The typed decoding of the usual deltas (the `fast` extra), or None.
        self._typed: Any = typed("cohere")

    def _reader(self, out: list[Delta]) -> Reader | None:
        """The usual events' reader (see `DialectDecoder._reader`).

        With the `fast` extra, content and tool-call deltas decoded into the
        typed module's msgspec types (`_typed_reader`); on the standard
        library, plain text deltas (`_plain_reader`). An `(event, data)` tuple
        is a frame from the SSE parser fused in front (`_take`).
        """
        if self._typed is not None:
            return self._typed_reader(out)
        return self._plain_reader(out)

    def _typed_reader(self, out: list[Delta]) -> Reader:
        """Content and tool-call deltas, typed; what they say applied as `_decode` would."""
        typed: Any = self._typed
        decode, content_type, call_type = typed.decode, typed.ContentDelta, typed.CallDelta
        append, calls, pair, text_delta = out.append, self._calls, pair_type(self._pairs), _text

        def typed_events(items: list[Any], start: int) -> int:
            for at in range(start, len(items)):
                item = items[at]
                if type(item) is pair:
                    event, data = item
                elif type(item) is SSEFrame:
                    event, data = item.event, item.data
                else:
                    return at
                try:
                    value: Any = decode(data)
                except (ValueError, TypeError):
                    return at  # not a usual event: `_decode` reads it
                kind = type(value)
                if kind is content_type:
                    if event != "message" and event != "content-delta":
                        return at
                    content = value.delta.message.content
                    text, thinking = content.text, content.thinking
                    if text is None and thinking is None:
                        return at  # `_content` says what is wrong
                    if text:
                        append(text_delta(text, 0))
                    if thinking:
                        append(ReasoningDelta(thinking))
                elif kind is call_type:
                    index = calls.get(0 if value.index is None else value.index)
                    if index is None or (event != "message" and event != "tool-call-delta"):
                        return at
                    arguments = value.delta.message.tool_calls.function.arguments
                    if arguments:
                        append(ToolCallDelta(index, arguments))
                else:
                    return at
            return len(items)

        return typed_events

    def _plain_reader(self, out: list[Delta]) -> Reader:
        """Plain text deltas, the JSON decoded once (`_decode`'s inline case).

        A text delta just read whole is kept as the JSON around its text
        (`_shared.skeleton`); the next one made of the same is read by its
        text alone. `_decode` forgets it (what it stood for may change); it is
        kept from one call to the next (learning costs about a whole reading).
        """
        append, loads, pair, text_delta = out.append, self._loads, pair_type(self._pairs), _text

        def plain_events(items: list[Any], start: int) -> int:
            for at in range(start, len(items)):
                item = items[at]
                if type(item) is pair:
                    event, data = item
                elif type(item) is SSEFrame:
                    event, data = item.event, item.data
                else:
                    return at
                if event != "message" and event != "content-delta":
                    return at
                around = self._around
                if around is not None:
                    text = reread(data, *around)
                    if text is not None:
                        if text:
                            append(text_delta(text, 0))
                        continue
                try:
                    value = loads(data)
                except Exception:
                    return at
                if type(value) is not dict or value.get("type") != "content-delta":
                    return at
                text = _plain_text(value)
                if text is None:
                    return at
                if text:
                    append(text_delta(text, 0))
                    if around is None and self._budget.waited():
                        self._around = skeleton(data, "text", text)
            return len(items)

        return plain_events

    def _decode(self, frame: SSEFrame) -> list[Delta]:
        self._around = None  # what it stood for may change (see `_plain_reader`)
        if type(frame) is not SSEFrame:
            raise TypeError(f"the cohere decoder takes SSEFrame items, got {type(frame).__name__}")
        data = frame.data
        try:
            payload = self._loads(data)
        except (ValueError, TypeError, RecursionError):
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
                return self._not_cohere(payload, frame)
            kind = event
        elif type(kind) is not str:
            raise ShapeError("type", "a string", kind)
        elif event != kind and event != "message":
            return self._malformed(f"event {event!r} carries data of type {kind!r}", frame)
        if kind == "content-delta":
            text = _plain_text(payload)  # the usual case: a plain text piece
            if text is not None:
                self._answered = True
                return [_text(text, 0)] if text else []
            return self._content(payload)
        return self._event(kind, payload, frame)

    def _event(self, kind: str, payload: JSONObject, frame: SSEFrame) -> list[Delta]:
        """Any event but a plain text piece, by its type."""
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
        return self._not_cohere(payload, frame)

    def _not_cohere(self, payload: JSONObject, frame: SSEFrame) -> list[Delta]:
        kind = payload.get("type")
        if isinstance(kind, str):
            what = f"type {kind!r}"
        else:
            keys = ", ".join(sorted(payload)[:4]) or "no keys"
            what = f"no type ({keys})"
        return self._foreign(f"an event of {what}, not a Cohere event", frame)

    def _index(self, payload: JSONObject) -> int:
        index = opt_int(payload, "index", "")
        return 0 if index is None else index

    def _content(self, payload: JSONObject) -> list[Delta]:
        content = opt_object(_message(payload), "content", "delta.message") or {}
        self._answered = True
        out: list[Delta] = []
        text = content.get("text")
        thinking = opt_str(content, "thinking", "delta.message.content")
        if text is not None or thinking is None:
            # A content delta carries its text (or, in a thinking block, its
            # thinking); null or missing is a piece without what it is for.
            if type(text) is not str:
                raise ShapeError("delta.message.content.text", "a string", text)
            if text:
                out.append(_text(text, 0))
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
