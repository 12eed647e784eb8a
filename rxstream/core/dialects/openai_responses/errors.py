"""The `"openai-responses"` dialect: the provider's HTTP error answers."""

from __future__ import annotations

from .._shared import dumps

__all__ = ["http_error"]


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
    return "application/json", dumps(body).encode("utf-8")
