"""The `"openai-responses"` dialect: OpenAI Responses API streams (`response.*` events).

Input: `SSEFrame`s of a `/v1/responses` stream (`stream: true`), with or
without `event:` lines (OpenAI, Azure, DeepSeek and Bedrock-mantle send them,
OpenRouter and the converted recordings do not), with or without
`sequence_number` (absent before mid-2025), with `obfuscation` padding or not.
Output: the common deltas.

Mapping (what each event becomes):

- `output_text.delta` -> `TextDelta`, `refusal.delta` -> `RefusalDelta`,
  `reasoning_summary_text.delta` and `reasoning_text.delta` ->
  `ReasoningDelta`: the text of every output item and content part in wire
  order, with nothing added between them. A delta's `logprobs` come as
  `Metadata({"logprobs": [...]})` just before its text.
- `function_call` items -> `ToolCallDelta`: `id` is the item's `call_id`
  (what the client answers with; the `fc_...` item id only when a server
  sends no `call_id`), the name from `output_item.added`, the arguments from
  `function_call_arguments.delta`; `index` is the order in which client calls
  appear. `custom_tool_call` items are client calls too (their free-text
  `input` is the arguments: not JSON), and so are the built-in tools the
  client runs (`shell_call` without a server `environment`, `local_shell_call`,
  `apply_patch_call`, `computer_call`, `tool_search_call` with `execution:
  "client"`, any other `*_call` with a `call_id`): named by the type without
  `_call`, the item's other fields as the JSON arguments, the item itself also
  under `Metadata` `items` (what is sent back with the call's output).
- `reasoning` items -> `ReasoningState(kind="reasoning_item", id, data=
  encrypted_content or "", raw=item)` at the end, taken from
  `response.completed`'s `output` (the encrypted content differs between
  `output_item.added`, `output_item.done` and `response.completed`, and
  OpenRouter changes the item id: the last word is kept); a `compaction` item
  (the earlier turns summarised, encrypted) -> `ReasoningState(kind=
  "compaction", id, data=encrypted_content, raw=item)` when it is done.
- `output_text.annotation.added` -> `Citation` (`kind` the annotation type;
  `url`, `title` or `filename`, `start_index`/`index`, `end_index`).
- Items the provider ran (`web_search_call`, `file_search_call`,
  `code_interpreter_call`, `image_generation_call`, `mcp_call`,
  `mcp_list_tools`, `mcp_approval_request`, and any other `*_call` without a
  `call_id`, with `execution: "server"` or run in a container) ->
  `ServerToolCall(id, name, input)` when the item is done: the
  name is the type without `_call` (`mcp_call` is `"mcp"`), the input the
  item's other fields; their results (`results`, `outputs`, `result`,
  `output`, `tools`) -> `ServerToolResult`.
- `response.completed` -> `Finish("tool_calls")` when the output holds a client
  call, else `Finish("stop")` (raw: the status, `"completed"`);
  `response.incomplete` -> `Finish` from `incomplete_details.reason`
  (`max_output_tokens` -> `"length"`, `content_filter` -> `"content_filter"`,
  any other reason as it is; raw: the reason). Both end the stream; `Usage`
  comes from `response.usage` (`input_tokens`, `output_tokens` with reasoning
  in them, `reasoning_tokens`, `cached_tokens`).
- `Metadata`: `id` and `model` (from `response.created`, again at the end),
  the whole terminal `response` object, Azure's `content_filters`, output
  items of other kinds (`shell_call_output`, ...) under `items`,
  partial images under `partial_images`, and events of `response.*` types
  this module does not know under `events` (OpenAI adds event types often).
  Keep-alives (`{"type": "keepalive"}`, which OpenAI sends on long streams
  without documenting it) give nothing.
- `error` (flat `{"code", "message"}` as documented, or nested `{"error":
  {...}}` as sent) and `response.failed` (with `response.error`) ->
  `ProviderError` with the provider's type, code and message.

Invariants:

- Text is never doubled: each `.done` event, `output_item.done` item and
  `response.completed` output item only fills in what no finer event
  delivered (LM Studio sends `function_call_arguments.done` without any delta;
  a server that sends only whole items still gives all their text).
  `response.completed`'s output items are matched to the streamed ones by
  id, by position only when a gateway gave the item a new id.
- Items may interleave (OpenRouter streams a message inside a reasoning
  item): everything is keyed by `output_index` and part index.
- Done at `response.completed` / `response.incomplete`; a `data: [DONE]` that
  follows (OpenRouter) is never read, and one before them is ignored. The end
  of input before them is `TruncatedStreamError` (`EmptyStreamError` when no
  event came at all). A frame of another dialect, a field of the wrong type,
  or an `event:` name that contradicts `data.type` is `MalformedChunkError`.
- Linear: a constant amount of work per delta; whole items are read once.

`ResponsesRenderer` turns deltas back into such a stream, and `http_error`
gives an HTTP error body in OpenAI's shape.

Follows the OpenAI Responses streaming reference (the event types of the
openai SDK's `ResponseStreamEvent`) and the recordings in tests/data.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from ...errors import EmptyStreamError, ProviderError, TruncatedStreamError
from ...models import (
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
    opt_int,
    opt_list,
    opt_object,
    opt_str,
    usage,
)

__all__ = ["ResponsesDecoder", "ResponsesRenderer", "http_error"]

#: The deltas of the hot path, built the cheap way (every field, positionally).
_text_delta: Callable[[str, int], TextDelta] = constructor(TextDelta)

#: Client-side call items, and the field that holds their arguments.
_CLIENT_CALLS = {"function_call": "arguments", "custom_tool_call": "input"}

#: Provider-side items: the tool name they get, and the field that holds their result.
_SERVER_ITEMS: dict[str, tuple[str, str | None]] = {
    "web_search_call": ("web_search", None),
    "file_search_call": ("file_search", "results"),
    "code_interpreter_call": ("code_interpreter", "outputs"),
    "image_generation_call": ("image_generation", "result"),
    "mcp_call": ("mcp", "output"),
    "mcp_list_tools": ("mcp_list_tools", "tools"),
    "mcp_approval_request": ("mcp_approval_request", None),
}
#: The result field of a provider-side `*_call` item of a type not listed above.
_OTHER_RESULT = "output"
#: Item fields that are bookkeeping, not a server tool's input.
_ITEM_KEYS = ("type", "id", "status")

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
#: A content part: (output_index, which index space, index in it).
_PartKey = tuple[int, str, int]


class _Unexpected(Exception):
    """An event that does not fit the stream so far (reported as malformed)."""


@dataclass(slots=True)
class _Call:
    """A client call as the decoder knows it."""

    index: int
    name: str | None
    streamed: bool = False  # arguments arrived (from deltas, `.done` or the item)


def _part(payload: JSONObject, which: str) -> _PartKey:
    """The key of the content part an event is about."""
    oi = payload.get("output_index")
    if type(oi) is not int:
        raise ShapeError("output_index", "an integer", oi)
    n = payload.get(which, 0)
    if type(n) is not int:
        raise ShapeError(which, "an integer", n)
    return (oi, which, n)


def _output_index(payload: JSONObject) -> int:
    oi = payload.get("output_index")
    if type(oi) is not int:
        raise ShapeError("output_index", "an integer", oi)
    return oi


def _text(payload: JSONObject, key: str) -> str:
    """A `.done` event's whole text ("" when it has none: the deltas had it all)."""
    return opt_str(payload, key, "") or ""


def _obj(payload: JSONObject, key: str, path: str) -> JSONObject:
    value = opt_object(payload, key, path)
    if value is None:
        raise ShapeError(f"{path}.{key}" if path else key, "an object", None)
    return value


def _logprobs(payload: JSONObject, path: str) -> list[Metadata]:
    value = opt_list(payload, "logprobs", path)
    return [Metadata({"logprobs": value})] if value else []


def _citation(annotation: JSONObject, path: str) -> Citation:
    """A Responses annotation (`url_citation`, `file_citation`, ...) as a `Citation`."""
    start = opt_int(annotation, "start_index", path)
    return Citation(
        opt_str(annotation, "type", path) or "annotation",
        url=opt_str(annotation, "url", path),
        title=opt_str(annotation, "title", path) or opt_str(annotation, "filename", path),
        start=start if start is not None else opt_int(annotation, "index", path),
        end=opt_int(annotation, "end_index", path),
        raw=annotation,
    )


def _server_tool(kind: str, item: JSONObject, path: str) -> list[Delta] | None:
    """A provider-side item as `ServerToolCall` (and its `ServerToolResult`); None if not one."""
    spec = _SERVER_ITEMS.get(kind)
    if spec is None:
        if not kind.endswith("_call") or not _ran_on_server(item):
            return None
        spec = (kind[: -len("_call")], _OTHER_RESULT)
    name, result_key = spec
    id = opt_str(item, "id", path)
    args = {k: v for k, v in item.items() if k not in _ITEM_KEYS and k != result_key}
    out: list[Delta] = [ServerToolCall(id, name, args, raw=item)]
    if result_key is not None and item.get(result_key) is not None:
        out.append(ServerToolResult(id, name, item[result_key], raw=item))
    return out


def _ran_on_server(item: JSONObject) -> bool:
    """Whether a `*_call` item of a type not listed above was run by the provider.

    The item says so where it can (`execution`, a shell's `environment`);
    otherwise a call without a `call_id` (null or `""` counts as none) has
    nothing for the client to answer.
    """
    execution = item.get("execution")
    if execution is not None:
        return bool(execution == "server")
    environment = item.get("environment")
    if type(environment) is dict:
        return bool(environment.get("type") != "local")
    return not item.get("call_id")


def _usage(response: JSONObject) -> Usage | None:
    raw = opt_object(response, "usage", "response")
    if raw is None:
        return None
    path = "response.usage"
    inputs = opt_object(raw, "input_tokens_details", path) or {}
    outputs = opt_object(raw, "output_tokens_details", path) or {}
    return usage(
        opt_int(raw, "input_tokens", path),
        opt_int(raw, "output_tokens", path),
        total=opt_int(raw, "total_tokens", path),
        reasoning=opt_int(outputs, "reasoning_tokens", f"{path}.output_tokens_details"),
        cached=opt_int(inputs, "cached_tokens", f"{path}.input_tokens_details"),
        raw=raw,
    )


def _code(value: JSON) -> str | int | None:
    if type(value) is str or type(value) is int:
        return value
    return None


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

    def __init__(self, *, on_malformed: OnMalformed = "raise") -> None:
        super().__init__(on_malformed=on_malformed)
        self._frame = SSEFrame("")
        self._filled: set[_PartKey] = set()  # parts whose text was delivered
        self._annotated: set[_PartKey] = set()  # parts whose annotations were delivered
        self._calls: dict[int, _Call] = {}  # client calls by output_index
        self._finished: dict[int, JSON] = {}  # output indexes whose item is done: its id
        self._reasoning: dict[int, JSONObject] = {}  # reasoning items, latest word
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

    def _decode(self, frame: SSEFrame) -> list[Delta]:
        if type(frame) is not SSEFrame and not isinstance(frame, SSEFrame):
            raise TypeError(
                f"the openai-responses decoder takes SSEFrame items, got {type(frame).__name__}"
            )
        data = frame.data
        try:
            payload = self._loads(data)
        except (ValueError, RecursionError):
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
            return self._malformed(
                f"{_foreign(frame)} (type {kind!r}), not a Responses event", frame
            )
        if kind is not None:
            raise ShapeError("type", "a string", kind)
        if "error" in payload or frame.event == "error":
            raise provider_error(payload, data=frame.data, event=frame.event)
        return self._malformed(f"{_foreign(frame)} (no type), not a Responses event", frame)

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
        name = opt_str(item, "name", path) or None
        arguments = opt_str(item, _CLIENT_CALLS[kind], path)
        call = self._calls[oi] = _Call(len(self._calls), name, bool(arguments))
        return [ToolCallDelta(call.index, arguments or "", id=call_id, name=name)]

    def _end_call(self, oi: int, item: JSONObject, kind: str, path: str) -> list[Delta]:
        call = self._calls.get(oi)
        if call is None:
            return self._begin_call(oi, item, kind, path)
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

    # -- items ----------------------------------------------------------------------

    def _item_added(self, payload: JSONObject) -> list[Delta]:
        oi = _output_index(payload)
        item = _obj(payload, "item", "")
        kind = opt_str(item, "type", "item")
        if kind in _CLIENT_CALLS and oi not in self._calls:
            return self._begin_call(oi, item, kind, "item")
        return []

    def _item_done_event(self, payload: JSONObject) -> list[Delta]:
        oi = _output_index(payload)
        item = _obj(payload, "item", "")
        self._finished[oi] = item.get("id")
        return self._item_done(oi, item, "item")

    def _item_done(self, oi: int, item: JSONObject, path: str) -> list[Delta]:
        """A finished item: whatever of it no finer event delivered."""
        kind = opt_str(item, "type", path)
        if kind == "message":
            return self._message_rest(oi, item, path)
        if kind == "reasoning":
            self._reasoning[oi] = item
            return self._reasoning_rest(oi, item, path)
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
        return [ToolCallDelta(call.index, _dumps(args), id=call_id, name=name)]

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
        streamed = self._streamed(output)
        for i, item in enumerate(output):
            oi = streamed[i]
            if oi is None:
                # Not streamed: keyed apart from every streamed index.
                oi = i if i not in self._finished else -1 - i
                out += self._item_done(oi, item, f"response.output[{i}]")
            elif item.get("type") == "reasoning":
                self._reasoning[oi] = item
        for i in sorted(self._reasoning):
            item = self._reasoning[i]
            path = f"response.output[{i}]"
            out.append(
                ReasoningState(
                    "reasoning_item",
                    data=opt_str(item, "encrypted_content", path) or "",
                    id=opt_str(item, "id", path),
                    raw=item,
                )
            )
        meta: JSONObject = {"response": response}
        for key in ("id", "model"):
            value = opt_str(response, key, "response")
            if value is not None:
                meta[key] = value
        filters = opt_list(response, "content_filters", "response")
        if filters is not None:
            meta["content_filters"] = filters
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
        by_id = {id: oi for oi, id in self._finished.items() if type(id) is str}
        ids = {item.get("id") for item in output}
        out: list[int | None] = []
        for i, item in enumerate(output):
            id = item.get("id")
            if type(id) is str and id in by_id:
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


def _foreign(frame: SSEFrame) -> str:
    """What a frame that is no Responses event looks like, in words."""
    from . import detect  # the package imports this module lazily: no cycle at import time

    try:
        name = detect(frame)
    except Exception:
        name = None
    if name is not None and name != ResponsesDecoder.dialect:
        return f"an event of the {name} dialect"
    return "an object of no known dialect"


# ------------------------------------------------------------------------------ render


def _dumps(value: JSON) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


#: The annotation types of Responses output text.
_ANNOTATIONS = frozenset({"url_citation", "file_citation", "container_file_citation", "file_path"})

#: The finish reasons rendered as `response.incomplete`, with their `incomplete_details.reason`.
_INCOMPLETE_REASON = {LENGTH: "max_output_tokens", CONTENT_FILTER: "content_filter"}


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
    a reasoning item of its own), `Metadata` `logprobs` on the next text
    delta, `content_filters` on the final response, `items` as whole output
    items and `events` / `partial_images` as events again.

    What it cannot express: choices other than 0 (dropped), a `Finish` of
    `"stop"` with client calls or of `"tool_calls"` without (the decoder
    derives the reason from the output), `Citation.text`, other kinds of
    `ReasoningState` (Anthropic signatures, Gemini thought signatures), a
    `ServerToolCall` input that is not an object (it goes under `input`),
    other `Metadata` (the `id` and `model` options name the response), and
    arguments of a call whose item already ended (they open a new item with
    the same `call_id`, which accumulates into the same call).

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
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._logprobs: list[JSON] = []
        self._filters: list[JSON] | None = None

    # -- the protocol ---------------------------------------------------------------

    def feed(self, delta: Delta) -> list[Wire]:
        """The frames `delta` becomes (opening and closing items around it as needed).

        Raises:
            RuntimeError: after `close()` or `error()`.
        """
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

    def close(self) -> list[Wire]:
        """The frames that end the stream: open items closed, then the terminal event.

        Raises:
            RuntimeError: after `close()` or `error()`.
        """
        out = self._start()
        out += self._end_all()
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

        Raises:
            RuntimeError: after `close()` or `error()`.
        """
        out = self._start()
        self._state = "closed"
        body = {"type": error.type, "code": error.code, "message": error.message, "param": None}
        out.append(self._event("error", {"error": body}))
        response = self._response("failed", self._output)
        response["error"] = {"code": error.code, "message": error.message}
        out.append(self._event("response.failed", {"response": response}))
        return out

    # -- frames -----------------------------------------------------------------------

    def _event(self, kind: str, body: JSONObject) -> SSEFrame:
        payload = {"type": kind, "sequence_number": self._seq, **body}
        self._seq += 1
        return SSEFrame(_dumps(payload), event=kind)

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
        if opened.kind != "other":  # an item kept whole goes out as it came
            item["status"] = "completed"
        out.append(
            self._event("response.output_item.done", {"output_index": index, "item": dict(item)})
        )
        return out

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
            out.append(self._event("response.output_text.delta", {**where, "logprobs": logprobs}))
        return out

    def _citation(self, citation: Citation) -> list[SSEFrame]:
        out, message, part = self._message_part("output_text")
        raw = citation.raw
        if isinstance(raw, dict) and raw.get("type") in _ANNOTATIONS:
            annotation = raw  # a Responses annotation already: sent back as it came
        else:
            annotation = {"type": citation.kind}
            for key, value in (
                ("url", citation.url),
                ("title", citation.title),
                ("start_index", citation.start),
                ("end_index", citation.end),
            ):
                if value is not None:
                    annotation[key] = value
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
            if state.id is not None:
                item["id"] = state.id
            if state.data:
                item["encrypted_content"] = state.data
            return []
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
    if used.cached_tokens is not None:
        body["input_tokens_details"] = {"cached_tokens": used.cached_tokens}
    body["output_tokens"] = used.completion_tokens
    if used.reasoning_tokens is not None:
        body["output_tokens_details"] = {"reasoning_tokens": used.reasoning_tokens}
    body["total_tokens"] = used.total_tokens
    return body


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """An HTTP error answer in OpenAI's shape: (content type, body).

    `{"error": {"message", "type", "param", "code"}}`; without a `type`, the
    one OpenAI uses for the status (`server_error` for 5xx, `requests` for
    429, `invalid_request_error` otherwise).

    >>> http_error(401, "Bad key", code="invalid_api_key")
    ('application/json', b'{"error":{"message":"Bad key","type":"invalid_request_error",\
"param":null,"code":"invalid_api_key"}}')
    """
    if type is None:
        type = (
            "server_error"
            if status >= 500
            else "requests"
            if status == 429
            else ("invalid_request_error")
        )
    body = {"error": {"message": message, "type": type, "param": None, "code": code}}
    return "application/json", _dumps(body).encode("utf-8")
