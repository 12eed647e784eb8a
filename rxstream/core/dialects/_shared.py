"""What every dialect package shares: JSON text in (the loaders) and out (`dumps`).

Input: JSON text (`str` or `bytes`) from a frame, a line or an event-stream
payload; output: the decoded value, or the compact text a renderer writes.
Invariant: whichever loader runs, the values and the error messages are the
standard library's (the fast loaders of `rxstream._fast` only go first; the
standard library has the last word on anything they refuse).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ..._fast import enabled, loaders, scan_loads
from ...models import JSON

__all__ = [
    "ShapeError",
    "dumps",
    "json_kind",
    "load_json",
    "load_with",
    "stdlib_loads",
]


def stdlib_loads(data: str) -> JSON:
    """`json.loads` (with the fast paths on, the direct scanner first: see `rxstream._fast`)."""
    if enabled():
        return scan_loads(data)
    return json.loads(data)


def load_json(data: str | bytes) -> JSON:
    """Decode JSON text; raise `ValueError` for anything that is not JSON (deep nesting too)."""
    return load_with(data, loaders()[0])


def load_with(data: str | bytes, fast: Callable[[str], JSON] | None) -> JSON:
    """`load_json` with the given fast loader first (None: the standard library only)."""
    if isinstance(data, bytes | bytearray):
        data = bytes(data).decode("utf-8", "replace")
    try:
        if fast is not None:
            try:
                return fast(data)
            except ValueError:
                pass  # the standard library has the last word (and the message)
        return stdlib_loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def dumps(value: JSON, *, colon: str = ":") -> str:
    """Compact JSON text as the providers write it, not ASCII-escaped (Gemini: `colon=": "`)."""
    return json.dumps(value, separators=(",", colon), ensure_ascii=False)


def json_kind(value: JSON) -> str:
    """The JSON name of a decoded value's type, for messages.

    >>> json_kind(1.5), json_kind(True), json_kind(None), json_kind([])
    ('number', 'boolean', 'null', 'array')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__  # pragma: no cover - json.loads makes no other types


class ShapeError(ValueError):
    """A decoded field has the wrong JSON type (raised inside a decoder, reported by `feed`).

    The decoder that knows the item's text raises `MalformedChunkError` (naming
    its dialect) in its place, with `reason` as the message.

    Args:
        path: where, as a JSON path (`delta.text`, `choices[0].delta.content`).
        expected: what was expected, in words (`"a string"`).
        value: what arrived.

    Attributes:
        path: the path given.
        reason: the message, e.g. `"choices[0].delta.content is a JSON number,
            not a string, an array or null"`.

    >>> ShapeError("choices", "an array or null", 1).reason
    'choices is a JSON number, not an array or null'
    """

    def __init__(self, path: str, expected: str, value: JSON) -> None:
        self.path = path
        self.reason = f"{path} is a JSON {json_kind(value)}, not {expected}"
        super().__init__(self.reason)
