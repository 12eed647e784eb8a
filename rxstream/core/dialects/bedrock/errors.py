"""The `"bedrock"` dialect: the provider's HTTP error answers."""

from __future__ import annotations

from ....models import (
    JSONObject,
)
from .._shared import dumps

__all__ = ["ERROR_TYPES", "STREAM_EXCEPTIONS", "http_error", "stream_exception"]

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


#: The exception events ConverseStream's service model names (the only ones botocore knows).
STREAM_EXCEPTIONS = (
    "internalServerException",
    "modelStreamErrorException",
    "validationException",
    "throttlingException",
    "serviceUnavailableException",
)

_BY_LOWER = {name.lower(): name for name in (*STREAM_EXCEPTIONS, *ERROR_TYPES.values())}

# Words in another dialect's error type (Anthropic `overloaded_error`, OpenAI
# `rate_limit_exceeded`, Gemini `RESOURCE_EXHAUSTED`, ...), first match wins.
_STREAM_WORDS = (
    (("rate", "throttl", "exhausted", "quota", "too_many"), "throttlingException"),
    (("overload", "unavailable"), "serviceUnavailableException"),
    (("invalid", "validation", "argument", "bad_request"), "validationException"),
    (("model", "stream"), "modelStreamErrorException"),
)
_STREAM_STATUS = {
    400: "validationException",
    429: "throttlingException",
    503: "serviceUnavailableException",
    529: "serviceUnavailableException",
}


def stream_exception(type: str | None, code: str | int | None = None) -> str:
    """The modelled ConverseStream exception event for an error of any dialect.

    botocore turns only the exception events of the service model into
    exceptions (`EventStreamError` with the code and message); any other
    `:exception-type` reaches the caller with an empty code and message. A
    modelled name (in any case) is kept; another dialect's type is mapped by
    its words or its status code; anything else is `internalServerException`.

    >>> stream_exception("overloaded_error"), stream_exception("ThrottlingException")
    ('serviceUnavailableException', 'throttlingException')
    >>> stream_exception(None, 429), stream_exception("server_error")
    ('throttlingException', 'internalServerException')
    """
    for word in (type, code if isinstance(code, str) else None):
        if not word:
            continue
        known = _BY_LOWER.get(word.lower())
        if known is not None and known[0].lower() + known[1:] in STREAM_EXCEPTIONS:
            return known[0].lower() + known[1:]
        lower = word.lower()
        for needles, name in _STREAM_WORDS:
            if any(needle in lower for needle in needles):
                return name
    if isinstance(code, int) and code in _STREAM_STATUS:
        return _STREAM_STATUS[code]
    return "internalServerException"


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """The content type and body of a Bedrock error answer (before the stream).

    Bedrock's REST-JSON answer is `{"message": ...}` with the error's name in
    the `x-amzn-ErrorType` header; the name is also put in the body's
    `__type` (which botocore reads when the header is absent): `type` (or a
    string `code`) when it is one of Bedrock's error names (in any case),
    else the name Bedrock uses for the status, so boto3 raises its modelled
    exception (a 429 is always `ThrottlingException`, whatever another
    dialect's scenario called it).

    >>> http_error(429, "Too many requests, please wait before trying again.")
    ('application/json', b'{"message":"Too many requests, please wait before trying again.",\
"__type":"ThrottlingException"}')
    """
    name = None
    for word in (type, code if isinstance(code, str) else None):
        known = _BY_LOWER.get(word.lower()) if word else None
        if known is not None and known[0].isupper():
            name = known
            break
    name = name or ERROR_TYPES.get(status) or _fallback(type, code)
    body: JSONObject = {"message": message}
    if name:
        body["__type"] = name
    return "application/json", dumps(body).encode()


def _fallback(type: str | None, code: str | int | None) -> str | None:
    # A status Bedrock does not answer with: the caller's own name, as before.
    return type or (code if isinstance(code, str) else None)
