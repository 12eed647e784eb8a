"""Build OpenAI-format chat-completion streams for tests.

Two levels:

- chunk helpers (`text_chunk`, `tool_call_chunk`, `usage_chunk`, ...) return
  one `chat.completion.chunk` as a dict, shaped as OpenAI sends it;
- `ChatStream` assembles a whole stream, fluently, and renders it as SSE lines,
  text or bytes (or as the chunk dicts / `SSEFrame`s it holds), including the
  awkward parts real servers send: keep-alive comments, `event: error`
  frames, provider errors inside a chunk, malformed data, no `[DONE]`.

    >>> stream = ChatStream(model="m").role().text("Hi").finish("stop").done()
    >>> print(stream.sse())  # doctest: +ELLIPSIS
    data: {"id":"chatcmpl-test",...,"model":"m","choices":[{...,"delta":{"role":"assistant"},...}]}
    <BLANKLINE>
    data: {...,"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}
    <BLANKLINE>
    data: {...,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}
    <BLANKLINE>
    data: [DONE]
    <BLANKLINE>
    <BLANKLINE>

Chunks are serialised compactly (`separators=(",", ":")`, non-ASCII kept), so
every event is one `data:` line.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Self

from ..core import DeltaDecoder
from ..core.sse import comment_lines, event_lines
from ..models import ChatChunk, Delta, JSONObject, SSEFrame, ToolCall

__all__ = [
    "DEFAULT_ID",
    "DEFAULT_MODEL",
    "ChatStream",
    "StreamEvent",
    "chunk",
    "done",
    "error_chunk",
    "finish_chunk",
    "reasoning_chunk",
    "refusal_chunk",
    "role_chunk",
    "split_text",
    "text_chunk",
    "tool_call_chunk",
    "tool_call_fragment",
    "tool_calls_chunk",
    "usage_chunk",
]

#: The completion id the builders use unless told otherwise.
DEFAULT_ID = "chatcmpl-test"
#: The model name the builders use unless told otherwise.
DEFAULT_MODEL = "test-model"


def done() -> str:
    """The data of the event that ends an OpenAI stream.

    >>> done()
    '[DONE]'
    """
    return "[DONE]"


def chunk(
    delta: JSONObject | None = None,
    *,
    choice: int = 0,
    finish_reason: str | None = None,
    id: str = DEFAULT_ID,
    model: str = DEFAULT_MODEL,
    created: int = 0,
) -> JSONObject:
    """One chat chunk with a single choice carrying `delta` (the other helpers build on it).

    Args:
        delta: the choice's delta object (`{}` when None).
        choice: the choice index.
        finish_reason: the choice's finish reason, or None while it streams.
        id: the completion id.
        model: the model name.
        created: the creation timestamp.

    Returns:
        The chunk as a dict.

    >>> chunk({"content": "Hi"})["choices"]
    [{'index': 0, 'delta': {'content': 'Hi'}, 'finish_reason': None}]
    """
    return {
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": choice,
                "delta": {} if delta is None else delta,
                "finish_reason": finish_reason,
            }
        ],
    }


def role_chunk(role: str = "assistant", *, choice: int = 0, **common: Any) -> JSONObject:
    """The chunk that opens a choice, naming its role (`{"role": "assistant"}`).

    `common` takes `chunk`'s `id`, `model` and `created`.

    >>> role_chunk()["choices"][0]["delta"]
    {'role': 'assistant'}
    """
    return chunk({"role": role}, choice=choice, **common)


def text_chunk(text: str, *, choice: int = 0, **common: Any) -> JSONObject:
    """A chunk carrying a piece of visible text (`delta.content`).

    >>> text_chunk("Hi")["choices"][0]["delta"]
    {'content': 'Hi'}
    """
    return chunk({"content": text}, choice=choice, **common)


def reasoning_chunk(
    text: str, *, choice: int = 0, field: str = "reasoning_content", **common: Any
) -> JSONObject:
    """A chunk carrying a piece of reasoning text.

    Args:
        text: the piece.
        choice: the choice index.
        field: the delta key: `"reasoning_content"` (DeepSeek, the default) or
            `"reasoning"` (OpenRouter, Groq).
        **common: `chunk`'s `id`, `model` and `created`.

    >>> reasoning_chunk("hmm")["choices"][0]["delta"]
    {'reasoning_content': 'hmm'}
    """
    return chunk({field: text}, choice=choice, **common)


def refusal_chunk(text: str, *, choice: int = 0, **common: Any) -> JSONObject:
    """A chunk carrying a piece of a refusal (`delta.refusal`).

    >>> refusal_chunk("No.")["choices"][0]["delta"]
    {'refusal': 'No.'}
    """
    return chunk({"refusal": text}, choice=choice, **common)


def tool_call_fragment(
    index: int, *, id: str | None = None, name: str | None = None, arguments: str = ""
) -> JSONObject:
    """One entry of `delta.tool_calls`: a fragment of tool call `index`.

    The fragment that carries `id` or `name` also carries `"type": "function"`,
    as OpenAI's first fragment does; later fragments carry only arguments.

    >>> tool_call_fragment(0, id="call_1", name="f")
    {'index': 0, 'id': 'call_1', 'type': 'function', 'function': {'name': 'f', 'arguments': ''}}
    >>> tool_call_fragment(0, arguments='{"a"')
    {'index': 0, 'function': {'arguments': '{"a"'}}
    """
    fragment: JSONObject = {"index": index}
    function: JSONObject = {}
    if id is not None or name is not None:
        if id is not None:
            fragment["id"] = id
        fragment["type"] = "function"
        if name is not None:
            function["name"] = name
    function["arguments"] = arguments
    fragment["function"] = function
    return fragment


def tool_calls_chunk(*fragments: JSONObject, choice: int = 0, **common: Any) -> JSONObject:
    """A chunk whose delta carries the given tool-call fragments (see `tool_call_fragment`).

    >>> c = tool_calls_chunk(tool_call_fragment(0, arguments="{}"), tool_call_fragment(1))
    >>> [f["index"] for f in c["choices"][0]["delta"]["tool_calls"]]
    [0, 1]
    """
    return chunk({"tool_calls": list(fragments)}, choice=choice, **common)


def tool_call_chunk(
    index: int = 0,
    *,
    id: str | None = None,
    name: str | None = None,
    arguments: str = "",
    choice: int = 0,
    **common: Any,
) -> JSONObject:
    """A chunk carrying one fragment of tool call `index`.

    >>> tool_call_chunk(0, arguments="{}")["choices"][0]["delta"]
    {'tool_calls': [{'index': 0, 'function': {'arguments': '{}'}}]}
    """
    fragment = tool_call_fragment(index, id=id, name=name, arguments=arguments)
    return tool_calls_chunk(fragment, choice=choice, **common)


def finish_chunk(reason: str = "stop", *, choice: int = 0, **common: Any) -> JSONObject:
    """The chunk that finishes a choice: an empty delta and a `finish_reason`.

    >>> finish_chunk("length")["choices"]
    [{'index': 0, 'delta': {}, 'finish_reason': 'length'}]
    """
    return chunk({}, choice=choice, finish_reason=reason, **common)


def usage_chunk(
    prompt_tokens: int,
    completion_tokens: int,
    total_tokens: int | None = None,
    *,
    reasoning_tokens: int | None = None,
    cached_tokens: int | None = None,
    cache_write_tokens: int | None = None,
    id: str = DEFAULT_ID,
    model: str = DEFAULT_MODEL,
    created: int = 0,
) -> JSONObject:
    """The usage chunk OpenAI sends last with `stream_options.include_usage`: `choices: []`.

    Args:
        prompt_tokens: tokens in the prompt.
        completion_tokens: tokens generated.
        total_tokens: the sum (computed when None).
        reasoning_tokens: set `completion_tokens_details.reasoning_tokens`.
        cached_tokens: set `prompt_tokens_details.cached_tokens`.
        cache_write_tokens: set `prompt_tokens_details.cache_write_tokens`.
        id: the completion id.
        model: the model name.
        created: the creation timestamp.

    >>> usage_chunk(3, 5)["usage"]
    {'prompt_tokens': 3, 'completion_tokens': 5, 'total_tokens': 8}
    """
    usage: JSONObject = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens if total_tokens is None else total_tokens,
    }
    details = {"cached_tokens": cached_tokens, "cache_write_tokens": cache_write_tokens}
    if any(count is not None for count in details.values()):
        usage["prompt_tokens_details"] = {k: v for k, v in details.items() if v is not None}
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return {
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
        "usage": usage,
    }


def error_chunk(
    message: str, *, type: str | None = None, code: str | int | None = None, **extra: Any
) -> JSONObject:
    """An error payload: `{"error": {"message": ..., "type": ..., "code": ...}}`.

    This is what Groq sends as the data of an `event: error` frame; `extra`
    adds fields to the error object (Groq's `failed_generation`,
    `status_code`). Absent `type` and `code` are left out.

    >>> error_chunk("Overloaded", code=529)
    {'error': {'message': 'Overloaded', 'code': 529}}
    """
    error: JSONObject = {"message": message}
    if type is not None:
        error["type"] = type
    if code is not None:
        error["code"] = code
    error.update(extra)
    return {"error": error}


def split_text(text: str, pieces: int) -> list[str]:
    """Cut `text` into exactly `pieces` consecutive parts whose lengths differ by at most one.

    Parts are empty when `pieces > len(text)`; `"".join` gives `text` back.

    Raises:
        ValueError: `pieces` is less than 1.

    >>> split_text('{"a":1}', 3)
    ['{"a', '":', '1}']
    """
    if pieces < 1:
        raise ValueError(f"pieces must be at least 1, not {pieces!r}")
    size, extra = divmod(len(text), pieces)
    out, start = [], 0
    for i in range(pieces):
        end = start + size + (1 if i < extra else 0)
        out.append(text[start:end])
        start = end
    return out


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event of a built stream: a data event, or a comment when `comment` is set.

    Attributes:
        data: the event's data (for a chunk, its JSON text).
        event: the SSE event type, or None for the default.
        payload: the chunk (or error payload) the data encodes, or None for raw data.
        comment: the comment's text, for a comment.
    """

    data: str = ""
    event: str | None = None
    payload: JSONObject | None = None
    comment: str | None = None


def _dumps(value: JSONObject) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class ChatStream:
    """A whole OpenAI-format chat stream, built fluently (every method returns the builder).

    Each call appends events in order; `lines()`, `sse()`, `bytes()`,
    `frames()` and `chunks()` render what was built so far. Text and
    reasoning pieces become one chunk each; `choice=` addresses one of n > 1
    choices. Nothing is added implicitly: call `.done()` for `[DONE]`.

    Args:
        model: the model name every chunk carries.
        id: the completion id every chunk carries.
        created: the creation timestamp every chunk carries.

    >>> s = ChatStream().role().text("Hel", "lo").finish().usage(3, 2).done()
    >>> [c["choices"][0]["delta"].get("content") for c in s.chunks()[1:3]]
    ['Hel', 'lo']
    >>> s.chunks()[-1]["usage"]["total_tokens"]
    5
    >>> s.sse().endswith("data: [DONE]\\n\\n")
    True
    """

    __slots__ = ("_common", "_events")

    def __init__(
        self, *, model: str = DEFAULT_MODEL, id: str = DEFAULT_ID, created: int = 0
    ) -> None:
        self._common: dict[str, Any] = {"id": id, "model": model, "created": created}
        self._events: list[StreamEvent] = []

    # -- building -----------------------------------------------------------------

    def chunk(self, payload: JSONObject, *, event: str | None = None) -> Self:
        """Append any JSON object as a data event (optionally with an `event:` line)."""
        self._events.append(StreamEvent(data=_dumps(payload), event=event, payload=payload))
        return self

    def raw(self, data: str, *, event: str | None = None) -> Self:
        """Append a data event with `data` verbatim (one `data:` line per line of it)."""
        self._events.append(StreamEvent(data=data, event=event))
        return self

    def role(self, role: str = "assistant", *, choice: int = 0) -> Self:
        """Append the chunk that names the choice's role."""
        return self.chunk(role_chunk(role, choice=choice, **self._common))

    def text(self, *pieces: str, choice: int = 0) -> Self:
        """Append one `delta.content` chunk per piece."""
        for piece in pieces:
            self.chunk(text_chunk(piece, choice=choice, **self._common))
        return self

    def reasoning(self, *pieces: str, choice: int = 0, field: str = "reasoning_content") -> Self:
        """Append one reasoning chunk per piece (`field` as in `reasoning_chunk`)."""
        for piece in pieces:
            self.chunk(reasoning_chunk(piece, choice=choice, field=field, **self._common))
        return self

    def refusal(self, *pieces: str, choice: int = 0) -> Self:
        """Append one `delta.refusal` chunk per piece."""
        for piece in pieces:
            self.chunk(refusal_chunk(piece, choice=choice, **self._common))
        return self

    def tool_call(
        self,
        index: int = 0,
        *,
        id: str | None = None,
        name: str | None = None,
        arguments: str | Sequence[str] = "",
        fragments: int = 1,
        choice: int = 0,
    ) -> Self:
        """Append one tool call, as one chunk per arguments fragment.

        The first fragment carries `id`, `name` and the first piece of the
        arguments; the others carry only arguments.

        Args:
            index: the call's index in the choice's `tool_calls`.
            id: the call id (e.g. `"call_1"`).
            name: the function name.
            arguments: the arguments text, cut into `fragments` near-equal
                pieces by `split_text`; or a sequence of explicit pieces (then
                `fragments` is ignored).
            fragments: how many pieces to cut a `str` `arguments` into.
            choice: the choice index.

        Raises:
            ValueError: `fragments` is less than 1, or `arguments` is an empty sequence.

        >>> s = ChatStream().tool_call(0, id="call_1", name="f", arguments='{"a":1}', fragments=3)
        >>> [c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for c in s.chunks()]
        ['{"a', '":', '1}']
        """
        for fragment in _call_fragments(index, id, name, arguments, fragments):
            self.chunk(tool_calls_chunk(fragment, choice=choice, **self._common))
        return self

    def tool_calls(
        self, calls: Iterable[ToolCall], *, fragments: int = 1, interleave: bool = False
    ) -> Self:
        """Append several (parallel) tool calls, each cut into `fragments` pieces.

        Args:
            calls: the calls; each one's `index`, `id`, `name`, `arguments` and
                `choice` are used.
            fragments: how many pieces to cut each call's arguments into.
            interleave: False sends the calls one after the other; True sends
                them round-robin (first fragment of every call, then the
                second, ...), as some providers stream parallel calls.

        Raises:
            ValueError: `fragments` is less than 1.

        >>> calls = [ToolCall(0, "c0", "f", "{}"), ToolCall(1, "c1", "g", "{}")]
        >>> s = ChatStream().tool_calls(calls, fragments=2, interleave=True)
        >>> [c["choices"][0]["delta"]["tool_calls"][0]["index"] for c in s.chunks()]
        [0, 1, 0, 1]
        """
        per_call = [
            [
                (call.choice, fragment)
                for fragment in _call_fragments(
                    call.index, call.id, call.name, call.arguments, fragments
                )
            ]
            for call in calls
        ]
        if interleave:
            ordered = [item for group in zip(*per_call, strict=True) for item in group]
        else:
            ordered = [item for call in per_call for item in call]
        for choice, fragment in ordered:
            self.chunk(tool_calls_chunk(fragment, choice=choice, **self._common))
        return self

    def finish(self, reason: str = "stop", *, choice: int = 0) -> Self:
        """Append the chunk that finishes the choice with `reason`."""
        return self.chunk(finish_chunk(reason, choice=choice, **self._common))

    def usage(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        total_tokens: int | None = None,
        *,
        reasoning_tokens: int | None = None,
        cached_tokens: int | None = None,
        cache_write_tokens: int | None = None,
    ) -> Self:
        """Append a usage chunk (`choices: []`); see `usage_chunk`."""
        return self.chunk(
            usage_chunk(
                prompt_tokens,
                completion_tokens,
                total_tokens,
                reasoning_tokens=reasoning_tokens,
                cached_tokens=cached_tokens,
                cache_write_tokens=cache_write_tokens,
                **self._common,
            )
        )

    def error(
        self,
        message: str,
        *,
        type: str | None = None,
        code: str | int | None = None,
        in_chunk: bool = False,
        **extra: Any,
    ) -> Self:
        """Append a provider error inside the stream.

        Args:
            message: the provider's message.
            type: the error type (e.g. `"invalid_request_error"`).
            code: the error code (e.g. `"tool_use_failed"` or `400`).
            in_chunk: False (the default) sends Groq's form, an `event: error`
                frame whose data is `error_chunk(...)`; True sends OpenRouter's,
                an ordinary data chunk (`id`, `model`, `choices: []`) with an
                `"error"` key.
            **extra: more fields of the error object (`failed_generation`, ...).
        """
        payload = error_chunk(message, type=type, code=code, **extra)
        if not in_chunk:
            return self.chunk(payload, event="error")
        head: JSONObject = {"object": "chat.completion.chunk", **self._common, "choices": []}
        return self.chunk({**head, **payload})

    def keepalive(self, comment: str = "keep-alive") -> Self:
        """Append an SSE comment (`: keep-alive`) and its blank line, as proxies send."""
        self._events.append(StreamEvent(comment=comment))
        return self

    def malformed(self, data: str = '{"choices": [') -> Self:
        """Append a data event whose data is not valid JSON (a cut-off chunk by default)."""
        return self.raw(data)

    def done(self) -> Self:
        """Append `data: [DONE]`."""
        return self.raw(done())

    # -- rendering ----------------------------------------------------------------

    def events(self) -> list[StreamEvent]:
        """The events built so far, in order (what every rendering below is made of)."""
        return list(self._events)

    def deltas(self) -> list[Delta]:
        """The deltas the stream's chunks carry (errors, comments and raw data carry none)."""
        decoder = DeltaDecoder()
        out: list[Delta] = []
        for item in self._events:
            payload = item.payload
            if payload is not None and item.event != "error" and payload.get("error") is None:
                out += decoder.feed(ChatChunk(payload))
        return out

    def lines(self) -> list[str]:
        """The stream as SSE lines without terminators; each event ends with a blank line `""`."""
        out: list[str] = []
        for item in self._events:
            if item.comment is not None:
                out += comment_lines(item.comment)
            else:
                out += event_lines(item.data, event=item.event)
        return out

    def sse(self, newline: str = "\n") -> str:
        """The stream as event-stream text, every line ended by `newline` (LF, CRLF or CR).

        Raises:
            ValueError: `newline` is not one of `"\\n"`, `"\\r\\n"`, `"\\r"`.
        """
        if newline not in ("\n", "\r\n", "\r"):
            raise ValueError(f"newline must be LF, CRLF or CR, not {newline!r}")
        return "".join(line + newline for line in self.lines())

    def bytes(self, newline: str = "\n") -> builtins.bytes:
        """The stream as the UTF-8 bytes a server would send (see `sse`)."""
        return self.sse(newline).encode("utf-8")

    def frames(self) -> list[SSEFrame]:
        """The `SSEFrame`s an SSE parser makes of the stream (comments make none)."""
        return [
            SSEFrame(item.data, item.event or "message")
            for item in self._events
            if item.comment is None
        ]

    def chunks(self) -> list[JSONObject]:
        """The JSON objects sent, in order, error payloads included.

        Not included: `[DONE]`, comments, and data added with `raw()` or
        `malformed()`. For a stream without errors, this is the `.raw` of
        every chunk `decode_chunks` gives.
        """
        return [item.payload for item in self._events if item.payload is not None]


def _call_fragments(
    index: int,
    id: str | None,
    name: str | None,
    arguments: str | Sequence[str],
    fragments: int,
) -> list[JSONObject]:
    """The `tool_calls` entries of one call: `id` and `name` ride on the first."""
    pieces = split_text(arguments, fragments) if isinstance(arguments, str) else list(arguments)
    if not pieces:
        raise ValueError("arguments must have at least one piece")
    return [
        tool_call_fragment(index, id=id, name=name, arguments=pieces[0]),
        *(tool_call_fragment(index, arguments=piece) for piece in pieces[1:]),
    ]
