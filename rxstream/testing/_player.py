"""Plays a scenario's steps as the bytes of one response, in the dialect that was asked.

`Player` renders each step with the core's dialect renderers (OpenAI-shaped
`Chunk`s are decoded into deltas first, so every scenario plays in every
dialect); `completion` is the JSON answer to a non-streaming chat request.
No sockets: the handler (`rxstream.testing._handler`) writes what comes out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from ..core import DeltaDecoder, dialects
from ..core.dialects import AI_SDK, Wire
from ..core.dialects.ai_sdk import HEADERS as AI_SDK_HEADERS
from ..core.dialects.bedrock import event_message
from ..core.provider_errors import provider_error
from ..core.sse import comment_lines, event_text
from ..errors import ProviderError
from ..models import ChatChunk, Delta, SSEFrame, TextDelta
from ._scenario import (
    JSON,
    Chunk,
    Comment,
    Done,
    End,
    Fail,
    Keepalive,
    Raw,
    Say,
    Scenario,
    Step,
)

__all__ = ["Player", "completion"]

_CONTENT_TYPES = {
    "sse": "text/event-stream; charset=utf-8",
    "ndjson": "application/x-ndjson",
    "eventstream": "application/vnd.amazon.eventstream",
}


class Player:
    """Turns the steps of one scenario into the bytes of one response, in one dialect.

    At `/v1/chat/completions` the OpenAI-shaped steps (`Chunk`, `Done`) go out
    as they are; in any other dialect they are decoded into deltas and
    rendered like `Say` steps, so every scenario plays in every dialect.
    """

    def __init__(self, dialect: str, number: int = 1, model: str | None = None) -> None:
        self.dialect = dialect
        #: Response headers the dialect's clients look for (beside the content type).
        self.headers: Mapping[str, str] = {}
        options: dict[str, Any] = {} if model is None else {"model": model}
        if dialect == AI_SDK:
            # A new messageId per answer: the client keys its UI messages by it.
            self._renderer = dialects.renderer(dialect, id=f"msg-fake-{number}", **options)
            self.headers = AI_SDK_HEADERS
        else:
            self._renderer = dialects.renderer(dialect, **options)
        self.wire: str = self._renderer.wire
        self.content_type = _CONTENT_TYPES[self.wire]
        self._literal = dialect == "openai-chat"
        self._decoder = DeltaDecoder()
        # The renderer's one event for a text delta, asked first (see `_render`), if it has it.
        self._text_event: Callable[[TextDelta], tuple[str, str] | None] | None = getattr(
            self._renderer, "text_event", None
        )

    def play(self, step: Step) -> bytes:
        renderer = self._renderer
        match step:
            case Raw():
                return step.encode()
            case Comment():
                return step.encode() if self.wire == "sse" else b""
            case Keepalive():
                return self._keepalive()
            case Chunk() | Done() if self._literal:
                return step.encode()
            case Chunk(payload=payload, event=event):
                if not isinstance(payload, dict):
                    return self._bytes(renderer.error(provider_error(payload, data="")))
                if event == "error" or payload.get("error") is not None:
                    error = provider_error(payload, data=json.dumps(payload), event=event or "")
                    return self._bytes(renderer.error(error))
                items: list[Wire] = []
                for delta in self._decoder.feed(ChatChunk(payload)):
                    items += self._render(delta)
                return self._bytes(items)
            case Done() | End():
                return self._bytes(renderer.close())
            case Say(deltas=deltas):
                items = []
                for delta in deltas:
                    items += self._render(delta)
                return self._bytes(items)
            case Fail(message=message, type=kind, code=code):
                return self._bytes(renderer.error(ProviderError(message, type=kind, code=code)))
        raise TypeError(f"a step the server cannot play: {step!r}")  # pragma: no cover

    def http_error(
        self,
        status: int,
        message: str,
        kind: str | None = None,
        code: str | int | None = None,
    ) -> tuple[str, bytes]:
        """(content type, body) of an HTTP error in this dialect's shape."""
        result: tuple[str, bytes] = dialects.http_error(
            self.dialect, status, message, type=kind, code=code
        )
        return result

    def _keepalive(self) -> bytes:
        if self.wire != "sse":
            return b""
        if self.dialect == "anthropic":
            return event_text('{"type": "ping"}', event="ping").encode()
        if self.dialect == "gemini":
            # google-genai parses every line but `data:` and blank ones as JSON.
            return self._renderer.newline.encode()
        return ("\n".join(comment_lines("keep-alive")) + "\n").encode()

    def _render(self, delta: Delta) -> list[Wire]:
        """The wire items of one delta: a text delta's one event through the renderer's
        `text_event` where it answers (what `feed` would give), else `feed`."""
        if type(delta) is TextDelta and self._text_event is not None:
            event = self._text_event(delta)
            if event is not None:
                name, data = event
                if self.wire == "sse":
                    return [SSEFrame(data, event=name)]
                if self.wire == "ndjson":
                    return [data]
                return [event_message(name, data)]
        return self._renderer.feed(delta)

    def _bytes(self, items: list[Wire]) -> bytes:
        return dialects.wire_bytes(self._renderer, items)


def completion(scenario: Scenario) -> JSON:
    """The chat completion (non-streaming) a scenario answers: its text in choice 0."""
    text = scenario.answer_text()
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": scenario.model or "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
