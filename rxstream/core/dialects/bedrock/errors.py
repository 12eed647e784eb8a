"""The `"bedrock"` dialect: the provider's HTTP error answers."""

from __future__ import annotations

from ....models import (
    JSONObject,
)
from .._shared import dumps

__all__ = ["ERROR_TYPES", "http_error"]

# --------------------------------------------------------------------------- HTTP errors

#: The ConverseStream error names by HTTP status (the `x-amzn-ErrorType` a server sends).
ERROR_TYPES = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """The content type and body of a Bedrock error answer (before the stream).

    Bedrock's REST-JSON answer is `{"message": ...}` with the error's name in
    the `x-amzn-ErrorType` header; the name is also put in the body's
    `__type` (which botocore reads when the header is absent): `type` (or a
    string `code`), else the name Bedrock uses for the status.

    >>> http_error(429, "Too many requests, please wait before trying again.")
    ('application/json', b'{"message":"Too many requests, please wait before trying again.",\
"__type":"ThrottlingException"}')
    """
    name = type or (code if isinstance(code, str) else None) or ERROR_TYPES.get(status)
    body: JSONObject = {"message": message}
    if name:
        body["__type"] = name
    return "application/json", dumps(body).encode()
