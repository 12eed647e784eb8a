"""The `"cohere"` dialect: the provider's HTTP error answers."""

from __future__ import annotations

import json

from ....models import (
    JSONObject,
)

__all__ = ["http_error"]


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """An HTTP error answer in Cohere's shape: `{"message": ...}`.

    Cohere's error bodies hold only the message; `type` and `code`, when
    given, are kept as extra fields (`"type"`, `"code"`) that clients ignore.

    Returns:
        (content type, body).

    >>> http_error(401, "invalid api token")
    ('application/json', b'{"message":"invalid api token"}')
    """
    body: JSONObject = {"message": message}
    if type is not None:
        body["type"] = type
    if code is not None:
        body["code"] = code
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    return "application/json", text.encode("utf-8")
