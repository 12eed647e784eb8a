"""What a request asks the fake LLM server for: which dialect, whether a stream.

`route` reads the dialect from a request's path (and, at `/api/chat`, which
Ollama and the AI SDK share, from its body); `asks_stream` says whether the
request wants a streamed answer in its dialect's terms; `FAULT_HEADER` is the
header that scripts one request's fault. Pure functions of the request.
"""

from __future__ import annotations

import re

from ..core.dialects import AI_SDK, DIALECTS
from ._scenario import JSON, RecordedRequest

__all__ = ["FAULT_HEADER", "RESUME", "SERVED", "asks_stream", "route"]

#: The request header that scripts one request's fault (see `rxstream.testing.parse_fault`).
FAULT_HEADER = "x-rxstream-fault"

#: Every dialect the server answers in: the provider dialects, then the AI SDK's UI
#: message stream. A tuple of its own, because `rxstream.core.dialects.DIALECTS` means
#: "the providers' dialects" wherever it is used (the conformance matrix with each
#: provider's SDK, the renderer and request-builder tables, the benchmarks), and the
#: AI SDK's stream is what a backend writes for `useChat`, no provider's: it has no
#: `rs.request` builder and no official Python client.
SERVED = (*DIALECTS, AI_SDK)


_ROUTES = (
    (re.compile(r"(/v1)?/chat/completions"), "openai-chat"),
    (re.compile(r"(/openai)?/deployments/[^/]+/chat/completions"), "openai-chat"),
    (re.compile(r"(/v1)?/responses"), "openai-responses"),
    (re.compile(r"(/v1)?/messages"), "anthropic"),
    (re.compile(r"/v1(beta)?/(projects/.+/)?models/[^/:]+:streamGenerateContent"), "gemini"),
    (re.compile(r"/v2/chat"), "cohere"),
    (re.compile(r"/api/chat"), "ollama"),
    (re.compile(r"/model/[^/]+/converse-stream"), "bedrock"),
)


#: The AI SDK's resume path (`GET {api}/{chatId}/stream`, `DefaultChatTransport`'s default).
RESUME = re.compile(r"/api/chat/[^/]+/stream")


def route(path: str, body: JSON = None) -> str | None:
    """The dialect a request path (and, at `/api/chat`, its decoded JSON body) asks for, or None.

    `/api/chat` is Ollama's path and the AI SDK's default (`DefaultChatTransport`
    posts `{"id", "messages": [UIMessage...], "trigger", ...}` there): a body
    without `"model"` (which Ollama requires) that carries the AI SDK's
    `"trigger"` or chat `"id"`, or messages made of `"parts"`, is `"ai-sdk"`;
    any other body (none included) is Ollama's.

    >>> route("/v1/messages"), route("/v1beta/models/m:streamGenerateContent?alt=sse")
    ('anthropic', 'gemini')
    >>> route("/api/chat", {"model": "llama3.2", "messages": []})
    'ollama'
    >>> route("/api/chat", {"id": "chat-1", "messages": [], "trigger": "submit-message"})
    'ai-sdk'
    """
    bare = path.split("?", 1)[0].rstrip("/")
    for pattern, dialect in _ROUTES:
        if pattern.fullmatch(bare):
            if dialect == "ollama" and _ui_chat(body):
                return AI_SDK
            return dialect
    return None


def _ui_chat(body: JSON) -> bool:
    """Whether an `/api/chat` body is what the AI SDK's chat transport sends."""
    if not isinstance(body, dict) or "model" in body:
        return False
    if "trigger" in body or "id" in body:
        return True
    messages = body.get("messages")
    return isinstance(messages, list) and any(
        isinstance(message, dict) and "parts" in message for message in messages
    )


def asks_stream(dialect: str, request: RecordedRequest) -> bool:
    """Whether `request` asks for a streamed answer, in `dialect`'s terms."""
    body = request.json if isinstance(request.json, dict) else {}
    if dialect == "gemini":
        return "alt=sse" in request.path
    if dialect == "ollama":
        return body.get("stream", True) is not False  # Ollama streams unless told not to
    if dialect in ("bedrock", AI_SDK):
        return True  # the converse-stream path and the AI SDK's chat transport always stream
    return body.get("stream") is True
