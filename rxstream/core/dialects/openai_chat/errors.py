"""The `"openai-chat"` dialect: the provider's HTTP error answers."""

from __future__ import annotations

from .._shared import dumps

__all__ = ["http_error"]

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
    return "application/json", dumps(body).encode()
