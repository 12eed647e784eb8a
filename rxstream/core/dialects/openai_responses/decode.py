"""The `"openai-responses"` dialect: the decoder (wire events -> deltas).

See the package docstring for the wire format and the rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ...._fast import constructor, enabled
from ...._typed import typed
from ....errors import EmptyStreamError, ProviderError, TruncatedStreamError
from ....models import (
    JSON,
    Delta,
    Finish,
    JSONObject,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    RefusalDelta,
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
    opt_list,
    opt_object,
    opt_str,
    pair_type,
)
from .._shared import Budget, Template, dumps
from .fields import (
    _ITEM_KEYS,
    _citation,
    _code,
    _logprobs,
    _obj,
    _output_index,
    _part,
    _PartKey,
    _server_tool,
    _text,
    _usage,
)

__all__ = ["CALL_ITEM_IDS", "ResponsesDecoder"]

#: The terminal `Metadata` key of the function_call items' own ids (`fc_...`) by
#: `call_id`, which `Message.metadata` keeps and the request renderer sends back.
CALL_ITEM_IDS = "function_call_item_ids"

#: The deltas of the hot path, built the cheap way (every field, positionally).
_text_delta: Callable[[str, int], TextDelta] = constructor(TextDelta)

#: Client-side call items, and the field that holds their arguments.
_CLIENT_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}


#: `incomplete_details.reason` -> the normalised finish reason.
_INCOMPLETE = {"max_output_tokens": LENGTH, "content_filter": CONTENT_FILTER}

#: Events whose content the finished item repeats (or that carry none): nothing to emit.
_PROGRESS = frozenset(
    f"response.{name}"
    for name in (
        "queued",
        "in_progress",
        "content_part.added",
        "content_part.done",
        "reasoning_summary_part.added",
        "reasoning_summary_part.done",
        "web_search_call.in_progress",
        "web_search_call.searching",
        "web_search_call.completed",
        "file_search_call.in_progress",
        "file_search_call.searching",
        "file_search_call.completed",
        "code_interpreter_call.in_progress",
        "code_interpreter_call.interpreting",
        "code_interpreter_call.completed",
        "code_interpreter_call_code.delta",
        "code_interpreter_call_code.done",
        "image_generation_call.in_progress",
        "image_generation_call.generating",
        "image_generation_call.completed",
        "mcp_call.in_progress",
        "mcp_call.completed",
        "mcp_call.failed",
        "mcp_call_arguments.delta",
        "mcp_call_arguments.done",
        "mcp_list_tools.in_progress",
        "mcp_list_tools.completed",
        "mcp_list_tools.failed",
    )
)

#: Keep-alives: OpenAI's undocumented `keepalive` on long streams (its SDKs pass it over),
#: and OpenRouter's former `response.keep_alive`.
_NOTHING = frozenset({"keepalive", "response.keep_alive"})

_CONTENT, _SUMMARY = "content_index", "summary_index"

#: The fields of a text delta event that change from one to the next without
#: the decoder reading them, and their kinds: the holes of its `Template`.
_FREE = {"sequence_number": int, "obfuscation": str}

_TEXT_DELTA = "response.output_text.delta"


class _Unexpected(Exception):
    """An event that does not fit the stream so far (reported as malformed)."""


@dataclass(slots=True)
class _Call:
    """A client call as the decoder knows it."""

    index: int
    name: str | None
    streamed: bool = False  # arguments arrived (from deltas, `.done` or the item)


class ResponsesDecoder(DialectDecoder):
    """Decode an OpenAI Responses stream's frames into deltas (see the module docstring).

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` frames that are not
            valid Responses events. Provider errors are raised either way.

    Raises:
        ProviderError: an `error` or `response.failed` event.
        MalformedChunkError: a frame that is not a Responses event (another
            dialect's, not JSON, a field of the wrong type).
        TruncatedStreamError: (at `close()`) no `response.completed` /
            `response.incomplete` arrived; `EmptyStreamError` if no event did.

    >>> d = ResponsesDecoder()
    >>> d.feed(SSEFrame('{"type": "response.output_text.delta", "output_index": 0, '
    ...                 '"content_index": 0, "delta": "Hi"}'))
    [TextDelta(text='Hi', choice=0)]
    >>> end = d.feed(SSEFrame('{"type": "response.completed", "response": {}}'))
    >>> end[-1], d.done
    (Finish(reason='stop', choice=0, raw='completed'), True)
    """

    dialect: ClassVar[str] = "openai-responses"
    end_marker: ClassVar[str] = "response.completed"
    #: What it takes, fused (`Handoff`): an `SSEParser` fused in front hands each
    #: frame as an `(event, data)` tuple; the last, unterminated frame still whole.
    takes = Handoff.PAIRS
    gives_deltas_only = True

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._frame = SSEFrame("")
        self._filled: set[_PartKey] = set()  # parts whose text was delivered
        self._annotated: set[_PartKey] = set()  # parts whose annotations were delivered
        self._calls: dict[int, _Call] = {}  # client calls by output_index
        self._finished: dict[int, str | None] = {}  # output indexes whose item is done: its id
        # The typed decoding of the usual deltas (the `fast` extra), or None.
        self._typed: Any = typed("openai_responses")
        # function_call items' own ids (`fc_...`) by their call_id, sent back with the call.
        self._item_ids: dict[str, str] = {}
        # The last item to end was a message with text, and no item began since: a message
        # item beginning now would run into its text (`TextBlockStart`).
        self._after_message = False
        self._messages_begun: set[int] = set()  # message items whose output_item.added came
        # The last text delta read inline, as a `Template`: a later event made of
        # the same JSON but for its text (and the free fields) is read by its text.
        self._around: Template | None = None
        # How often templates are learnt; None: never (typed decoding, or the fast paths off).
        self._budget = Budget() if enabled() and self._typed is None else None
        self._handlers = {
            "response.output_text.delta": self._text_delta,
            "response.reasoning_summary_text.delta": self._summary_delta,
            "response.reasoning_text.delta": self._reasoning_delta,
            "response.function_call_arguments.delta": self._arguments_delta,
            "response.custom_tool_call_input.delta": self._arguments_delta,
            "response.refusal.delta": self._refusal_delta,
            "response.output_text.done": self._text_done,
            "response.refusal.done": self._refusal_done,
            "response.reasoning_summary_text.done": self._summary_done,
            "response.reasoning_text.done": self._reasoning_done,
            "response.function_call_arguments.done": self._arguments_done,
            "response.custom_tool_call_input.done": self._arguments_done,
            "response.output_text.annotation.added": self._annotation,
            "response.output_item.added": self._item_added,
            "response.output_item.done": self._item_done_event,
            "response.created": self._created,
            "response.image_generation_call.partial_image": self._partial_image,
            "response.completed": self._terminal,
            "response.incomplete": self._terminal,
            "response.failed": self._failed,
            "error": self._error,
        }

    def _reader(self, out: list[Delta]) -> Reader | None:
        """The usual events' reader (see `DialectDecoder._reader`).

        The answer's text deltas (nearly all a stream holds), the JSON decoded
        once; with the `fast` extra also the deltas of reasoning, refusals and
        function-call arguments, decoded into the typed module's msgspec types
        (`_typed_reader`); on the standard library, text deltas only
        (`_plain_reader`). What they say is applied as their handlers would.
        An `(event, data)` tuple is a frame from the SSE parser fused in front
        (`_take`).
        """
        if self._typed is not None:
            return self._typed_reader(out)
        return self._plain_reader(out)

    def _typed_reader(self, out: list[Delta]) -> Reader:
        """Text, reasoning, refusal and argument deltas decoded into the typed module's types."""
        typed: Any = self._typed
        decode = typed.decode
        text_type, arguments_type = typed.Text, typed.Arguments
        summary_type, refusal_type = typed.Summary, typed.Refusal
        names = _typed_names(typed)
        text_tag = names[text_type]
        append, filled, calls = out.append, self._filled, self._calls
        pair, text_delta = pair_type(self._pairs), _text_delta

        def typed_events(items: list[Any], start: int) -> int:
            # The text part the last text delta was in (already in `filled`).
            last_oi: object = None
            last_ci: object = None
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
                if kind is text_type:
                    # The usual event, first: its logprobs (their Metadata) and another
                    # event name take `_decode`.
                    if (event != text_tag and event != "message") or value.logprobs:
                        return at
                    oi, ci = value.output_index, value.content_index
                    if oi != last_oi or ci != last_ci:
                        filled.add((oi, _CONTENT, ci))
                        last_oi, last_ci = oi, ci
                    append(text_delta(value.delta, 0))
                    continue
                if value is None or (event != "message" and event != names[kind]):
                    return at
                if kind is arguments_type:
                    call = calls.get(value.output_index)
                    if call is None:
                        return at  # `_call_at` says what is wrong
                    call.streamed = True
                    append(ToolCallDelta(call.index, value.delta))
                    continue
                if kind is summary_type:
                    filled.add((value.output_index, _SUMMARY, value.summary_index))
                else:
                    filled.add((value.output_index, _CONTENT, value.content_index))
                if kind is refusal_type:
                    append(RefusalDelta(value.delta))
                else:
                    append(ReasoningDelta(value.delta))
            return len(items)

        return typed_events

    def _plain_reader(self, out: list[Delta]) -> Reader:
        """Text deltas on the standard library; by their text alone where they repeat the last.

        The template of the last text delta read as a dict (see `_learn`): what
        it stood for (a text delta of a part already in `filled`) no event changes.
        """
        append, filled, loads = out.append, self._filled, self._loads
        pair, text_delta = pair_type(self._pairs), _text_delta

        def plain_events(items: list[Any], start: int) -> int:
            last_oi: object = None
            last_ci: object = None
            for at in range(start, len(items)):
                item = items[at]
                if type(item) is pair:
                    event, data = item
                elif type(item) is SSEFrame:
                    event, data = item.event, item.data
                else:
                    return at
                if event != "message" and event != _TEXT_DELTA:
                    return at
                around = self._around
                if around is not None:
                    text = around.read(data)
                    if text is not None:
                        append(text_delta(text, 0))
                        continue
                try:
                    value = loads(data)
                except Exception:
                    return at
                if type(value) is not dict or value.get("type") != _TEXT_DELTA:
                    return at
                text = value.get("delta")
                oi = value.get("output_index")
                ci = value.get("content_index", 0)
                if (
                    type(text) is not str
                    or type(oi) is not int
                    or type(ci) is not int
                    or value.get("logprobs")
                ):
                    return at
                if oi != last_oi or ci != last_ci:
                    filled.add((oi, _CONTENT, ci))
                    last_oi, last_ci = oi, ci
                if text and self._budget is not None:
                    self._around = self._learn(data, text) or self._around
                append(text_delta(text, 0))
            return len(items)

        return plain_events

    def _learn(self, data: str, text: str) -> Template | None:
        """The template of a text delta event just read inline (its text not empty), or None.

        As often as the `Budget` allows.
        """
        if self._budget is None or not self._budget.take():
            return None
        return Template.learn(data, "delta", text, _FREE)

    def _decode(self, frame: SSEFrame) -> list[Delta]:
        if type(frame) is not SSEFrame and not isinstance(frame, SSEFrame):
            raise TypeError(
                f"the openai-responses decoder takes SSEFrame items, got {type(frame).__name__}"
            )
        data = frame.data
        try:
            payload = self._loads(data)
        except (ValueError, TypeError, RecursionError):
            payload = None
        if type(payload) is not dict:
            stripped = data.strip()
            if not stripped or stripped == "[DONE]":
                return []  # OpenRouter's [DONE] (after the end, so never read in practice)
            payload = self._object(data, frame)  # its error (or None when skipped)
            if payload is None:
                return []
        self._frame = frame
        kind = payload.get("type")
        event = frame.event
        if event != kind and event != "message" and type(kind) is str:
            return self._malformed(f"the event is {event!r} but its data.type is {kind!r}", frame)
        handler = self._handlers.get(kind) if type(kind) is str else None
        if handler is None:
            return self._other(payload, kind)
        self._answered = True
        try:
            return handler(payload)
        except _Unexpected as exc:
            return self._malformed(str(exc), frame)

    def _end(self) -> list[Delta]:
        if self._done:
            return []
        if not self._answered:
            raise EmptyStreamError(
                f"the openai-responses stream ended after {self._items} item(s) without any "
                "response event"
            )
        raise TruncatedStreamError(
            "the openai-responses stream ended before response.completed (or "
            f"response.incomplete), after {self._items} item(s)"
        )

    def _other(self, payload: JSONObject, kind: JSON) -> list[Delta]:
        frame = self._frame
        if type(kind) is str:
            if kind in _NOTHING:
                return []  # a keep-alive: like an SSE comment, not yet an answer
            if kind.startswith("response."):
                self._answered = True
                return [] if kind in _PROGRESS else [Metadata({"events": [payload]})]
            return self._foreign(f"an event of type {kind!r}, not a Responses event", frame)
        if kind is not None:
            raise ShapeError("type", "a string", kind)
        if "error" in payload or frame.event == "error":
            raise provider_error(payload, data=frame.data, event=frame.event)
        return self._foreign("an event without a type, not a Responses event", frame)

    # -- text ---------------------------------------------------------------------

    def _text_delta(self, payload: JSONObject) -> list[Delta]:
        text = payload.get("delta")
        if type(text) is not str:
            raise ShapeError("delta", "a string", text)
        self._filled.add(_part(payload, _CONTENT))
        logprobs = payload.get("logprobs")
        if logprobs:
            if type(logprobs) is not list:
                raise ShapeError("logprobs", "an array", logprobs)
            return [Metadata({"logprobs": logprobs}), _text_delta(text, 0)]
        if text and self._budget is not None:
            # The next text delta like it may be read by its text (`_plain_reader`).
            self._around = self._learn(self._frame.data, text) or self._around
        return [_text_delta(text, 0)]

    def _summary_delta(self, payload: JSONObject) -> list[Delta]:
        text = payload.get("delta")
        if type(text) is not str:
            raise ShapeError("delta", "a string", text)
        self._filled.add(_part(payload, _SUMMARY))
        return [ReasoningDelta(text)]

    def _reasoning_delta(self, payload: JSONObject) -> list[Delta]:
        text = payload.get("delta")
        if type(text) is not str:
            raise ShapeError("delta", "a string", text)
        self._filled.add(_part(payload, _CONTENT))
        return [ReasoningDelta(text)]

    def _refusal_delta(self, payload: JSONObject) -> list[Delta]:
        text = payload.get("delta")
        if type(text) is not str:
            raise ShapeError("delta", "a string", text)
        self._filled.add(_part(payload, _CONTENT))
        return [RefusalDelta(text)]

    def _fill(self, key: _PartKey) -> bool:
        """Mark a part delivered; True if nothing had delivered it before."""
        if key in self._filled:
            return False
        self._filled.add(key)
        return True

    def _text_done(self, payload: JSONObject) -> list[Delta]:
        text = _text(payload, "text")
        if not self._fill(_part(payload, _CONTENT)):
            return []
        return [*_logprobs(payload, ""), TextDelta(text)] if text else []

    def _refusal_done(self, payload: JSONObject) -> list[Delta]:
        text = _text(payload, "refusal")
        fresh = self._fill(_part(payload, _CONTENT))
        return [RefusalDelta(text)] if fresh and text else []

    def _summary_done(self, payload: JSONObject) -> list[Delta]:
        text = _text(payload, "text")
        fresh = self._fill(_part(payload, _SUMMARY))
        return [ReasoningDelta(text)] if fresh and text else []

    def _reasoning_done(self, payload: JSONObject) -> list[Delta]:
        text = _text(payload, "text")
        fresh = self._fill(_part(payload, _CONTENT))
        return [ReasoningDelta(text)] if fresh and text else []

    def _annotation(self, payload: JSONObject) -> list[Delta]:
        key = _part(payload, _CONTENT)
        self._annotated.add(key)
        return [_citation(_obj(payload, "annotation", ""), "annotation")]

    # -- client calls ---------------------------------------------------------------

    def _arguments_delta(self, payload: JSONObject) -> list[Delta]:
        piece = payload.get("delta")
        if type(piece) is not str:
            raise ShapeError("delta", "a string", piece)
        oi = payload.get("output_index")
        call = self._calls.get(oi) if type(oi) is int else None
        if call is None:
            call = self._call_at(payload)  # which says what is wrong
        call.streamed = True
        return [ToolCallDelta(call.index, piece)]

    def _arguments_done(self, payload: JSONObject) -> list[Delta]:
        key = (
            "arguments"
            if payload.get("type") == "response.function_call_arguments.done"
            else "input"
        )
        text = _text(payload, key)
        call = self._call_at(payload)
        if call.streamed:
            return []
        call.streamed = True
        return [ToolCallDelta(call.index, text)] if text else []

    def _call_at(self, payload: JSONObject) -> _Call:
        oi = _output_index(payload)
        call = self._calls.get(oi)
        if call is None:
            raise _Unexpected(
                f"{payload.get('type')} for output_index {oi}, where no output_item.added "
                "began a call"
            )
        return call

    def _begin_call(self, oi: int, item: JSONObject, kind: str, path: str) -> list[Delta]:
        call_id = opt_str(item, "call_id", path) or opt_str(item, "id", path)
        self._keep_item_id(item, kind, path)
        name = opt_str(item, "name", path) or None
        arguments = opt_str(item, _CLIENT_CALLS[kind], path)
        call = self._calls[oi] = _Call(len(self._calls), name, bool(arguments))
        return [ToolCallDelta(call.index, arguments or "", id=call_id, name=name)]

    def _end_call(self, oi: int, item: JSONObject, kind: str, path: str) -> list[Delta]:
        call = self._calls.get(oi)
        if call is None:
            return self._begin_call(oi, item, kind, path)
        self._keep_item_id(item, kind, path)
        out: list[Delta] = []
        name = opt_str(item, "name", path)
        if call.name is None and name:
            call.name = name
            out.append(ToolCallDelta(call.index, name=name))
        arguments = opt_str(item, _CLIENT_CALLS[kind], path)
        if not call.streamed:
            call.streamed = True
            if arguments:
                out.append(ToolCallDelta(call.index, arguments))
        return out

    def _keep_item_id(self, item: JSONObject, kind: str, path: str) -> None:
        """Note a function_call item's own id under its call_id (the last word wins)."""
        if kind != "function_call":
            return
        call_id, item_id = opt_str(item, "call_id", path), opt_str(item, "id", path)
        if call_id and item_id:
            self._item_ids[call_id] = item_id

    # -- items ----------------------------------------------------------------------

    def _item_added(self, payload: JSONObject) -> list[Delta]:
        oi = _output_index(payload)
        item = _obj(payload, "item", "")
        kind = _item_type(item, "item")
        after_message, self._after_message = self._after_message, False
        if kind == "message":
            self._messages_begun.add(oi)
            # A message item of its own, not the end of the one before.
            return [TextBlockStart(raw=item)] if after_message else []
        if kind in _CLIENT_CALLS and oi not in self._calls:
            return self._begin_call(oi, item, kind, "item")
        return []

    def _item_done_event(self, payload: JSONObject) -> list[Delta]:
        oi = _output_index(payload)
        item = _obj(payload, "item", "")
        self._finished[oi] = opt_str(item, "id", "item")
        return self._item_done(oi, item, "item")

    def _item_done(self, oi: int, item: JSONObject, path: str) -> list[Delta]:
        """A finished item: whatever of it no finer event delivered."""
        kind = _item_type(item, path)
        after_message, self._after_message = self._after_message, False
        if kind == "message":
            rest = self._message_rest(oi, item, path)
            if after_message and oi not in self._messages_begun and _gives_text(rest):
                rest.insert(0, TextBlockStart(raw=item))  # a whole item, never added
            self._after_message = _has_text(item)
            return rest
        if kind == "reasoning":
            # The state where the item is done: before the items after it, as the API
            # wants them back (a call's reasoning item goes before it).
            return [*self._reasoning_rest(oi, item, path), _reasoning_item(item, path)]
        if kind in _CLIENT_CALLS:
            return self._end_call(oi, item, kind, path)
        if kind == "compaction":  # the earlier turns, summarised: sent back as it is
            data = opt_str(item, "encrypted_content", path) or ""
            return [ReasoningState("compaction", data, id=opt_str(item, "id", path), raw=item)]
        server = _server_tool(kind, item, path) if kind else None
        if server is not None:
            return server
        return [*self._builtin_call(oi, item, kind, path), Metadata({"items": [item]})]

    def _builtin_call(self, oi: int, item: JSONObject, kind: str | None, path: str) -> list[Delta]:
        """A call of a built-in tool the client runs (`shell_call`, `apply_patch_call`, ...).

        Its name is the type without `_call`, its arguments the item's other
        fields as JSON text; the whole item also goes on as `Metadata`.
        """
        call_id = opt_str(item, "call_id", path)
        if not kind or not kind.endswith("_call") or not call_id or oi in self._calls:
            return []
        name = kind[: -len("_call")]
        args = {k: v for k, v in item.items() if k not in _ITEM_KEYS and k != "call_id"}
        call = self._calls[oi] = _Call(len(self._calls), name, streamed=True)
        return [ToolCallDelta(call.index, dumps(args), id=call_id, name=name)]

    def _parts(self, item: JSONObject, key: str, path: str) -> list[JSONObject]:
        parts = opt_list(item, key, path) or []
        for j, part in enumerate(parts):
            if type(part) is not dict:
                raise ShapeError(f"{path}.{key}[{j}]", "an object", part)
        return parts

    def _message_rest(self, oi: int, item: JSONObject, path: str) -> list[Delta]:
        out: list[Delta] = []
        for j, part in enumerate(self._parts(item, "content", path)):
            where, key = f"{path}.content[{j}]", (oi, _CONTENT, j)
            kind = opt_str(part, "type", where)
            if kind == "output_text":
                text = opt_str(part, "text", where)
                if self._fill(key) and text:
                    out += _logprobs(part, where)
                    out.append(TextDelta(text))
                if key not in self._annotated:
                    self._annotated.add(key)
                    for k, note in enumerate(opt_list(part, "annotations", where) or ()):
                        if type(note) is not dict:
                            raise ShapeError(f"{where}.annotations[{k}]", "an object", note)
                        out.append(_citation(note, f"{where}.annotations[{k}]"))
            elif kind == "refusal":
                text = opt_str(part, "refusal", where)
                if self._fill(key) and text:
                    out.append(RefusalDelta(text))
        return out

    def _reasoning_rest(self, oi: int, item: JSONObject, path: str) -> list[Delta]:
        out: list[Delta] = []
        for which, field_name in ((_SUMMARY, "summary"), (_CONTENT, "content")):
            for j, part in enumerate(self._parts(item, field_name, path)):
                text = opt_str(part, "text", f"{path}.{field_name}[{j}]")
                if self._fill((oi, which, j)) and text:
                    out.append(ReasoningDelta(text))
        return out

    # -- the response -----------------------------------------------------------------

    def _created(self, payload: JSONObject) -> list[Delta]:
        response = opt_object(payload, "response", "") or {}
        data = {
            key: value
            for key in ("id", "model")
            if (value := opt_str(response, key, "response")) is not None
        }
        return [Metadata(data)] if data else []

    def _partial_image(self, payload: JSONObject) -> list[Delta]:
        return [Metadata({"partial_images": [payload]})]

    def _terminal(self, payload: JSONObject) -> list[Delta]:
        response = _obj(payload, "response", "")
        out: list[Delta] = []
        output = opt_list(response, "output", "response") or []
        for i, item in enumerate(output):
            if type(item) is not dict:
                raise ShapeError(f"response.output[{i}]", "an object", item)
            _item_type(item, f"response.output[{i}]")  # streamed or not, each item has one
        streamed = self._streamed(output)
        for i, item in enumerate(output):
            oi = streamed[i]
            if oi is None:
                # Not streamed: keyed apart from every streamed index.
                oi = i if i not in self._finished else -1 - i
                out += self._item_done(oi, item, f"response.output[{i}]")
            elif item.get("type") == "function_call":
                self._keep_item_id(item, "function_call", f"response.output[{i}]")
        meta: JSONObject = {"response": response}
        for key in ("id", "model"):
            value = opt_str(response, key, "response")
            if value is not None:
                meta[key] = value
        filters = opt_list(response, "content_filters", "response")
        if filters is not None:
            meta["content_filters"] = filters
        if self._item_ids:
            meta[CALL_ITEM_IDS] = dict(self._item_ids)
        out.append(Metadata(meta))
        status = opt_str(response, "status", "response")
        if payload["type"] == "response.incomplete":
            details = opt_object(response, "incomplete_details", "response") or {}
            raw = opt_str(details, "reason", "response.incomplete_details") or status
            raw = raw or "incomplete"
            out.append(Finish(_INCOMPLETE.get(raw, raw), raw=raw))
        else:
            out.append(Finish(TOOL_CALLS if self._calls else STOP, raw=status or "completed"))
        used = _usage(response)
        if used is not None:
            out.append(used)
        self._done = True
        return out

    def _streamed(self, output: list[JSONObject]) -> list[int | None]:
        """The `output_index` each final output item was streamed at (None: not streamed).

        An item is known by its id; by its position only when the item done
        there has an id found nowhere in the output (OpenRouter and Copilot
        give an item a new id in each event). A position alone would double
        the text when an item's place in `output` is not its `output_index`.
        """
        by_id = {id: oi for oi, id in self._finished.items() if id is not None}
        ids = [opt_str(item, "id", f"response.output[{i}]") for i, item in enumerate(output)]
        out: list[int | None] = []
        for i, id in enumerate(ids):
            if id is not None and id in by_id:
                out.append(by_id[id])
            elif i in self._finished and self._finished[i] not in ids:
                out.append(i)
            else:
                out.append(None)
        return out

    def _failed(self, payload: JSONObject) -> list[Delta]:
        response = _obj(payload, "response", "")
        error = opt_object(response, "error", "response") or {}
        message = opt_str(error, "message", "response.error")
        raise ProviderError(
            message or f"the response failed (status {response.get('status')!r}) without a message",
            type=opt_str(error, "type", "response.error"),
            code=_code(error.get("code")),
            payload=payload,
            event=self._frame.event,
        )

    def _error(self, payload: JSONObject) -> list[Delta]:
        raise provider_error(payload, data=self._frame.data, event=self._frame.event)


def _reasoning_item(item: JSONObject, path: str) -> ReasoningState:
    """A reasoning item's state: its id and encrypted content (when asked for), the item as raw."""
    data = opt_str(item, "encrypted_content", path) or ""
    return ReasoningState("reasoning_item", data=data, id=opt_str(item, "id", path), raw=item)


def _item_type(item: JSONObject, path: str) -> str:
    """An output item's `type`: every item has one, a string (null or missing is malformed)."""
    kind = item.get("type")
    if type(kind) is not str:
        raise ShapeError(f"{path}.type", "a string", kind)
    return kind


def _typed_names(typed: Any) -> dict[type, str]:
    """The event name of each typed event class (its tag)."""
    return {
        kind: kind.__struct_config__.tag
        for kind in (typed.Text, typed.Summary, typed.Reasoning, typed.Refusal, typed.Arguments)
    }


def _gives_text(deltas: list[Delta]) -> bool:
    return any(type(d) is TextDelta for d in deltas)


def _has_text(item: JSONObject) -> bool:
    """Whether a message item holds answer text (an `output_text` part with text)."""
    parts = item.get("content")
    return type(parts) is list and any(
        type(p) is dict and p.get("type") == "output_text" and p.get("text") for p in parts
    )
