"""The `"anthropic"` dialect: the provider's HTTP error answers."""

from __future__ import annotations

from .._shared import dumps

__all__ = ["ERROR_TYPES", "http_error"]

# =========================================================================== HTTP errors

#: HTTP status -> Anthropic's `error.type` (docs: "Errors"; 413 is sent by Cloudflare).
ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """The content type and body of an Anthropic HTTP error answer.

    `{"type": "error", "error": {"type": ..., "message": ...}}`, the type
    from `type` or else the status (`ERROR_TYPES`; other 4xx are
    `invalid_request_error`, anything else `api_error`). Anthropic's errors
    carry no code: `code` is accepted for the common signature and not sent.

    >>> http_error(529, "Overloaded")[1]
    b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    """
    kind = type or ERROR_TYPES.get(
        status, "invalid_request_error" if 400 <= status < 500 else "api_error"
    )
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return "application/json", dumps(body).encode()
