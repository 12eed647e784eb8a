"""The `"ai-sdk"` dialect: HTTP error answers and the response headers the client expects."""

from __future__ import annotations

__all__ = ["HEADERS", "PROTOCOL_HEADER", "http_error"]

#: The header that tells the `ai` package's client the body is a UI message stream (v1).
PROTOCOL_HEADER = "x-vercel-ai-ui-message-stream"

#: What `sse_response(..., dialect="ai-sdk")` adds to its headers
#: (as the `ai` package's `UI_MESSAGE_STREAM_HEADERS` do).
HEADERS = {PROTOCOL_HEADER: "v1"}


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """An HTTP error answer as an AI SDK backend sends one: the message as plain text.

    The `ai` package's chat transport throws `Error(await response.text())` on
    any status other than 2xx, so the body is the message and nothing else;
    `type` and `code` are accepted for the common signature and not sent.

    Returns:
        (content type, body).

    >>> http_error(500, "model overloaded")
    ('text/plain; charset=utf-8', b'model overloaded')
    """
    return "text/plain; charset=utf-8", message.encode("utf-8")
