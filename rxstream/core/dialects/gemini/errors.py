"""The `"gemini"` dialect: the provider's HTTP error answers."""

from __future__ import annotations

import json

from ....models import (
    JSONObject,
)

__all__ = ["http_error"]

#: The `status` Google gives each HTTP status.
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """An HTTP error answer in Google's shape: `[{"error": {"code", "message", "status"}}]`.

    Pretty-printed and wrapped in a one-element list, as the streaming
    endpoints send it. `code` is the HTTP status unless an integer is given;
    `type` is the `status` word (by default the one Google gives `status`);
    a string `code` goes in an `ErrorInfo` detail as its `reason`.

    Returns:
        (content type, body).

    >>> http_error(429, "Quota exceeded")[1].decode().split()[:6]
    ['[', '{', '"error":', '{', '"code":', '429,']
    """
    error: JSONObject = {
        "code": code if isinstance(code, int) and not isinstance(code, bool) else status,
        "message": message,
        "status": type or _STATUS.get(status, "UNKNOWN"),
    }
    if isinstance(code, str):
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": code}]
    body = json.dumps([{"error": error}], indent=2, ensure_ascii=False) + "\n"
    return "application/json; charset=UTF-8", body.encode("utf-8")
