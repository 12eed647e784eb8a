"""The `"openai-chat"` dialect: `/v1/chat/completions` streams, frames to deltas in one machine.

Input: `SSEFrame`s of a chat-completion stream (`stream: true`), as every
OpenAI-compatible server sends them. Output: the deltas `deltas()` gives.

`OpenAIChatDecoder` is `ChunkDecoder` followed by `DeltaDecoder`, fused: one
machine that reads each chunk once, with the same items and the same errors
as the long spelling `decode_chunks(), deltas()` (which stays for
chunk-level access), the dialect named in `MalformedChunkError`.
It is done at `data: [DONE]`; a stream that stops before it with a choice
unfinished is `TruncatedStreamError`, one that brought no choice at all
`EmptyStreamError`.

Finish reasons are OpenAI's own words already (`stop`, `length`,
`tool_calls`, `content_filter`); the legacy `function_call` is normalised to
`tool_calls`. `Finish.raw` keeps what was sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import ClassVar

from ...errors import ProviderError
from ...models import (
    JSON,
    Delta,
    Finish,
    JSONObject,
    ReasoningDelta,
    RefusalDelta,
    SSEFrame,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from ..chunks import ChatFrameDecoder
from ._base import Wire, WireKind

__all__ = ["OpenAIChatDecoder", "OpenAIChatRenderer", "http_error"]


class OpenAIChatDecoder(ChatFrameDecoder):
    """Decode an OpenAI-compatible chat stream's frames into deltas (see the module docstring).

    The chunk decoder's machine giving the deltas of each chunk rather than
    the chunk: what `decode_chunks(), deltas()` gives, each chunk read once,
    with the dialect named in `MalformedChunkError`.

    Args:
        on_malformed: `"raise"` (the default) or `"skip"` frames that are not
            valid chat chunks.

    >>> decoder = OpenAIChatDecoder()
    >>> decoder.feed(SSEFrame('{"choices": [{"index": 0, "delta": {"content": "Hi"}}]}'))
    [TextDelta(text='Hi', choice=0)]
    >>> decoder.feed(SSEFrame("[DONE]")), decoder.done
    ([], True)
    """

    __slots__ = ()
    dialect: ClassVar[str] = "openai-chat"
    gives_deltas: ClassVar[bool] = True

    def feed(self, frame: SSEFrame) -> list[Delta]:
        """Take one frame; return its deltas (see `ChunkDecoder.feed`)."""
        out: list[Delta] = []
        self._decode((frame,), out)
        return out

    def feed_all(self, frames: Iterable[SSEFrame], out: list[Delta]) -> None:
        """`out += feed(frame)` for each frame, stopping at `[DONE]`."""
        self._decode(frames, out)

    def close(self) -> list[Delta]:
        """End the input (see `ChunkDecoder.close`)."""
        self._check_end()
        return []


_FINISH_WORDS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})


class OpenAIChatRenderer:
    """Render deltas as an OpenAI chat-completion stream (`SSEFrame`s, then `[DONE]`).

    Every choice opens with a role chunk; text, reasoning (as DeepSeek's
    `reasoning_content`), refusals and tool-call fragments become one chunk
    each; a `Finish` the chunk with its `finish_reason`; `Usage` the usage-only
    chunk OpenAI sends with `stream_options.include_usage`. `close()` gives
    `[DONE]`; `error(exc)` the `{"error": {...}}` data event OpenAI-compatible
    servers send mid-stream.

    Not expressed (left out): citations, server-side tools, reasoning state and
    metadata, which chat completions have no place for.

    Args:
        model: the model name in every chunk.
        id: the completion id in every chunk.
        created: the creation timestamp in every chunk.

    >>> r = OpenAIChatRenderer()
    >>> [f.data for f in r.feed(TextDelta("Hi"))][-1]
    '{"id":"chatcmpl-rxstream","object":"chat.completion.chunk","created":0,"model":"rxstream-fake","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}'
    >>> r.close()
    [SSEFrame(data='[DONE]', event='message', id=None, retry=None)]
    """

    wire: ClassVar[WireKind] = "sse"
    newline: ClassVar[str] = "\n"

    def __init__(
        self, *, model: str = "rxstream-fake", id: str = "chatcmpl-rxstream", created: int = 0
    ) -> None:
        self._head = {
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }
        self._opened: set[int] = set()

    def feed(self, delta: Delta) -> list[Wire]:
        """The frames that send `delta` (none for what chat completions cannot express)."""
        out: list[Wire] = []
        if isinstance(delta, Usage):
            out.append(self._frame([], usage=_usage_json(delta)))
            return out
        body: JSONObject | None
        finish: str | None = None
        match delta:
            case TextDelta(text=text):
                body = {"content": text}
            case ReasoningDelta(text=text):
                body = {"reasoning_content": text}
            case RefusalDelta(text=text):
                body = {"refusal": text}
            case ToolCallDelta():
                body = {"tool_calls": [_fragment(delta)]}
            case Finish(reason=reason, raw=raw):
                body = {}
                finish = raw if raw in _FINISH_WORDS else reason
            case _:
                return out
        choice = delta.choice
        if choice not in self._opened:
            self._opened.add(choice)
            out.append(self._choice_frame(choice, {"role": "assistant", "content": ""}, None))
        out.append(self._choice_frame(choice, body, finish))
        return out

    def close(self) -> list[Wire]:
        """`data: [DONE]`."""
        return [SSEFrame("[DONE]")]

    def error(self, error: ProviderError) -> list[Wire]:
        """The error event an OpenAI-compatible server sends mid-stream."""
        payload: JSONObject = {"message": error.message, "type": error.type, "code": error.code}
        return [SSEFrame(_dumps({"error": payload}))]

    def _choice_frame(self, choice: int, delta: JSONObject, finish: str | None) -> SSEFrame:
        return self._frame([{"index": choice, "delta": delta, "finish_reason": finish}])

    def _frame(self, choices: list[JSONObject], **extra: JSON) -> SSEFrame:
        return SSEFrame(_dumps({**self._head, "choices": choices, **extra}))


def _fragment(delta: ToolCallDelta) -> JSONObject:
    function: JSONObject = {"arguments": delta.arguments}
    if delta.name is not None:
        function["name"] = delta.name
    fragment: JSONObject = {}
    if delta.index is not None:
        fragment["index"] = delta.index
    if delta.id is not None:
        fragment["id"] = delta.id
        fragment["type"] = "function"
    fragment["function"] = function
    return fragment


def _usage_json(usage: Usage) -> JSONObject:
    out: JSONObject = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.cached_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_tokens}
    if usage.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return out


def _dumps(value: JSON) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """(content type, body) of an HTTP error answer in OpenAI's shape.

    >>> http_error(429, "Rate limit reached")[1]
    b'{"error":{"message":"Rate limit reached","type":"rate_limit_error","param":null,"code":null}}'
    """
    kind = type or _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return "application/json", _dumps(body).encode()
