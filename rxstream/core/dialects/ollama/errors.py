"""The `"ollama"` dialect: the provider's HTTP error answers."""

from __future__ import annotations

from .._shared import dumps

__all__ = ["http_error"]


def http_error(
    status: int, message: str, *, type: str | None = None, code: str | int | None = None
) -> tuple[str, bytes]:
    """The content type and body of an Ollama error answer (before the stream).

    Ollama answers `{"error": message}` with the status; `type` and `code`
    have no place in it.

    >>> http_error(404, "model 'x' not found")
    ('application/json', b'{"error":"model \\'x\\' not found"}')
    """
    return "application/json", dumps({"error": message}).encode()
