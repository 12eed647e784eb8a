"""Provider error shapes: the one place that knows how providers spell an error.

Input: a decoded JSON payload (or the raw bytes of an HTTP error body).
Output: the provider's own message (and, for payloads, a `ProviderError`).

Shapes known here: `{"error": {"message", "type", "code"}}` (OpenAI and its
compatibles, Anthropic inside `{"type": "error", ...}`), `{"error": "text"}`
(Ollama), `{"message": ...}` (flat), and Google's list-wrapped
`[{"error": {"code", "message", "status"}}]`.
"""

from __future__ import annotations

import json

from ..errors import ProviderError, excerpt
from ..models import JSON

__all__ = ["error_message", "provider_error"]


def error_message(body: bytes | str) -> str | None:
    """The provider's message in an error body, or None when it holds none.

    >>> error_message(b'{"error": {"message": "Invalid key", "type": "auth"}}')
    'Invalid key'
    >>> error_message(b'[{"error": {"code": 429, "message": "Quota", "status": "X"}}]')
    'Quota'
    >>> error_message(b"<html>") is None
    True
    """
    try:
        payload = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        payload = payload[0]  # Google wraps its error object in a list
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        error = error.get("message")
    if not isinstance(error, str):
        error = payload.get("message")
    return excerpt(error) if isinstance(error, str) and error else None


def provider_error(payload: JSON, *, data: str, event: str = "message") -> ProviderError:
    """The `ProviderError` an error payload inside a stream stands for, whatever its shape.

    Args:
        payload: the decoded error event or object (None if it was not JSON).
        data: the raw data it came in, quoted when no message can be found.
        event: the SSE event name it came with.

    >>> provider_error({"type": "error", "error": {"type": "overloaded_error",
    ...     "message": "Overloaded"}}, data="").type
    'overloaded_error'
    >>> provider_error({"error": {"code": 429, "message": "Quota", "status": "EXHAUSTED"}},
    ...     data="").code
    429
    """
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        payload = payload[0]
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict):
            return ProviderError(
                _message(error.get("message"), data),
                type=_word(error.get("type")) or _word(error.get("status")),
                code=_code(error.get("code")),
                payload=payload,
                event=event,
            )
        if isinstance(error, str) and error:
            return ProviderError(error, payload=payload, event=event)
        kind = _word(payload.get("type"))
        # {"type": "error", ...} is an envelope tag (OpenAI Responses), not an error type.
        return ProviderError(
            _message(payload.get("message"), data),
            type=None if kind in (None, "error") else kind,
            code=_code(payload.get("code")),
            payload=payload,
            event=event,
        )
    return ProviderError(_message(None, data), payload=payload, event=event)


def _message(value: JSON, data: str) -> str:
    if isinstance(value, str) and value:
        return value
    return excerpt(data) if data.strip() else "(no message)"


def _word(value: JSON) -> str | None:
    return value if isinstance(value, str) and value else None


def _code(value: JSON) -> str | int | None:
    """A provider error code, if it is one (a string or an integer)."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None
