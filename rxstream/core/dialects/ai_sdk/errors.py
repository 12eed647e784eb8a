"""The `"ai-sdk"` dialect: HTTP error answers and the response headers the client expects."""

from __future__ import annotations

import json

__all__ = ["HEADERS", "PROTOCOL_HEADER", "http_error"]

#: The header that tells the `ai` package's client the body is a UI message stream (v1).
PROTOCOL_HEADER = "x-vercel-ai-ui-message-stream"

#: What `sse_response(..., dialect="ai-sdk")` adds to its headers
#: (as the `ai` package's `UI_MESSAGE_STREAM_HEADERS` do).
HEADERS = {PROTOCOL_HEADER: "v1"}


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """An HTTP error answer of an AI SDK backend: `{"error": {"message", "type", "code"}}`.

    The protocol has no error shape before the stream starts: the `ai`
    package's chat transport throws `Error(await response.text())` on any
    status other than 2xx, whatever the body. A JSON object is what a backend
    that answers with `Response.json(...)` sends, and it keeps the type and
    code next to the message, where every JSON reader finds them (rxstream's
    `HTTPStatusError.provider_message` is the message); `type` and `code` are
    left out when None.

    Returns:
        (content type, body).

    >>> http_error(429, "Rate limit reached", type="rate_limit_error")
    ('application/json', b'{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}')
    """
    error: dict[str, str | int] = {"message": message}
    if type is not None:
        error["type"] = type
    if code is not None:
        error["code"] = code
    body = json.dumps({"error": error}, separators=(",", ":"), ensure_ascii=False)
    return "application/json", body.encode("utf-8")
