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

from ..errors import excerpt

__all__ = ["error_message"]


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
