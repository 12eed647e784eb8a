"""Read a provider's error out of the JSON it sent: one copy of every known shape.

Input: a decoded JSON payload (from a chunk, an `event: error` frame or the
body of an HTTP error answer). Output: the provider's message, type and code,
or a `ProviderError` built from them.

The shapes, as providers send them:

- `{"error": {"message": ..., "type": ..., "code": ...}}`: OpenAI and every
  compatible server; OpenRouter puts it inside an otherwise normal chunk;
  Groq sends it as `event: error`. A `status` stands in for a missing `type`
  (Google's `"RESOURCE_EXHAUSTED"`).
- `{"type": "error", "error": {"type": "overloaded_error", "message": ...}}`:
  Anthropic (the outer `type` is an envelope tag, the inner one the error's).
- `{"error": "text"}`, with TGI's `"error_type"` beside it.
- `{"type": "error", "code": ..., "message": ...}`: the OpenAI Responses API.
- `[{"error": {"code": 429, "message": ..., "status": ...}}]`: Google wraps
  its error object in a list.

Invariants: nothing here raises on any payload; a field of an unexpected type
is left out (an error report is never turned into a second error); every
`ProviderError` keeps the whole payload as `.payload`.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from ..errors import ProviderError, excerpt
from ..models import JSON

__all__ = [
    "ErrorFields",
    "error_fields",
    "event_error",
    "provider_error",
    "provider_message",
    "reported_error",
    "retry_delay",
]


class ErrorFields(NamedTuple):
    """What a provider said about its error (each None when it did not say)."""

    message: str | None
    type: str | None
    code: str | int | None


def error_fields(payload: JSON) -> ErrorFields | None:
    """The message, type and code of an error payload; None when it reports no error.

    A payload reports an error when it has a non-null `"error"`, or is tagged
    `"type": "error"`; a list counts by its first item (Google).

    >>> error_fields({"error": {"message": "Overloaded", "type": "overloaded_error"}})
    ErrorFields(message='Overloaded', type='overloaded_error', code=None)
    >>> error_fields({"choices": []}) is None
    True
    """
    if type(payload) is list and payload and type(payload[0]) is dict:
        payload = payload[0]
    if type(payload) is not dict:
        return None
    error = payload.get("error")
    if error is None:
        if payload.get("type") != "error":
            return None
        # The OpenAI Responses flat shape: the fields sit beside the tag.
        return ErrorFields(_text(payload.get("message")), None, _code(payload.get("code")))
    if type(error) is dict:
        kind = _text(error.get("type")) or _text(error.get("status"))
        return ErrorFields(_text(error.get("message")), kind, _code(error.get("code")))
    if type(error) is str:
        return ErrorFields(error or None, _text(payload.get("error_type")), None)
    return ErrorFields(None, None, None)


def reported_error(payload: JSON, *, data: str, event: str = "message") -> ProviderError | None:
    """The `ProviderError` a decoded payload reports, or None when it reports none.

    For payloads that may or may not be errors (a chat chunk with an `"error"`
    key is one, any other chunk is not).

    Args:
        payload: the decoded JSON.
        data: the text it was decoded from; a bounded excerpt of it is the
            message when the provider gave none.
        event: the SSE event name it arrived with.

    Returns:
        The error (the caller raises it), or None.

    >>> reported_error({"error": "rate limited"}, data="").message
    'rate limited'
    >>> reported_error({"choices": []}, data="") is None
    True
    """
    fields = error_fields(payload)
    if fields is None:
        return None
    return ProviderError(
        fields.message or excerpt(data),
        type=fields.type,
        code=fields.code,
        payload=payload,
        event=event,
    )


def provider_error(payload: JSON, *, data: str, event: str = "message") -> ProviderError:
    """The `ProviderError` for a payload known to be an error event, whatever its shape.

    The shapes above, an object with just a `"message"` (and maybe `"type"`,
    `"code"`), or anything else (then a bounded excerpt of `data` is the message).

    >>> provider_error({"type": "error", "error": {"type": "overloaded_error",
    ...     "message": "Overloaded"}}, data="").type
    'overloaded_error'
    >>> provider_error({"error": {"code": 429, "message": "Quota", "status": "EXHAUSTED"}},
    ...     data="").code
    429
    """
    error = reported_error(payload, data=data, event=event)
    if error is not None:
        return error
    if type(payload) is dict:
        message = _text(payload.get("message"))
        if message:
            kind = _text(payload.get("type"))
            return ProviderError(
                message,
                type=None if kind == "error" else kind,
                code=_code(payload.get("code")),
                payload=payload,
                event=event,
            )
    return ProviderError(
        excerpt(data) if data.strip() else "(no data)", payload=payload, event=event
    )


def event_error(data: str, event: str = "error") -> ProviderError:
    """The `ProviderError` of an `event: error` frame, whatever its data holds.

    The data may be any of the shapes above, an object with just a
    `"message"`, other JSON, or no JSON at all (then a bounded excerpt of it is
    the message).

    >>> event_error('{"message": "slow down", "type": "rate_limit"}').message
    'slow down'
    >>> event_error("").message
    '(no data)'
    """
    try:
        payload: JSON = json.loads(data)
    except (ValueError, RecursionError):
        payload = None
    return provider_error(payload, data=data, event=event)


def provider_message(body: str | bytes) -> str | None:
    """The provider's own message in the body of an HTTP error answer, if it holds one.

    Args:
        body: the body as received (any bytes; only JSON ones can match).

    Returns:
        A bounded excerpt of the message, or None when the body is not JSON or
        holds no message (in any of the shapes above, a top-level `"message"`
        or a `"detail"` string).

    >>> provider_message(b'[{"error": {"code": 429, "message": "Quota", "status": "X"}}]')
    'Quota'
    """
    try:
        payload: JSON = json.loads(body)
    except (ValueError, RecursionError):
        return None
    fields = error_fields(payload)
    message = fields.message if fields is not None else None
    if message is None:
        if type(payload) is list and payload:
            payload = payload[0]
        if type(payload) is dict:
            message = _text(payload.get("message")) or _text(payload.get("detail"))
    return excerpt(message) if message else None


def retry_delay(body: str | bytes) -> float | None:
    """Seconds the provider asks to wait, from Google's `RetryInfo` in an HTTP error body.

    Gemini sends no `Retry-After` header: a 429 names the wait in the error's
    `details`, as a `google.rpc.RetryInfo` whose `retryDelay` is a protobuf
    duration in JSON (`"37s"`, `"1.5s"`).

    Returns:
        The seconds (>= 0), or None when the body holds no such detail.

    >>> retry_delay(b'[{"error": {"code": 429, "details": [{"@type": '
    ...     b'"type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]}}]')
    37.0
    >>> retry_delay(b'{"error": {"message": "Quota"}}') is None
    True
    """
    try:
        payload: JSON = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if type(payload) is list and payload:
        payload = payload[0]
    error = payload.get("error") if type(payload) is dict else None
    details = error.get("details") if type(error) is dict else None
    for detail in details if type(details) is list else ():
        if type(detail) is not dict:
            continue
        kind, delay = detail.get("@type"), detail.get("retryDelay")
        if type(kind) is str and kind.endswith("google.rpc.RetryInfo") and type(delay) is str:
            text = delay.strip().removesuffix("s")
            try:
                seconds = float(text)
            except ValueError:
                return None
            return seconds if 0 <= seconds < float("inf") else None
    return None


def _text(value: JSON) -> str | None:
    """A non-empty string, or None."""
    return value if type(value) is str and value else None


def _code(value: JSON) -> str | int | None:
    """A provider error code, if it is one (a string or an integer, not a boolean)."""
    return value if type(value) is str or type(value) is int else None
