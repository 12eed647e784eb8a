"""Deprecated: the chat delta decoder moved to `rxstream.core.dialects.openai_chat.deltas`.

Each name this module had is still given, for one release, with a
`DeprecationWarning` that names where it lives now.
(`FieldError` is now `rxstream.core.dialects.ShapeError`, which takes
`(path, expected, value)`; the `FieldError` given here is a `ShapeError` that
still takes the old order, `(path, value, expected)`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._deprecate import moved_names
from ..models import JSON
from .dialects import ShapeError


class _FieldError(ShapeError):
    """`ShapeError` with the old argument order of `FieldError`: `(path, value, expected)`."""

    def __init__(self, path: str, value: JSON, expected: str) -> None:
        super().__init__(path, expected, value)


# name -> "module" or "module:name" where it lives now (or: the new spelling, the object given).
_MOVED: dict[str, str | tuple[str, object]] = {
    "DELTA_CLASSES": "rxstream.models",
    "TOO_DEEP": "rxstream.core.dialects.openai_chat.reader",
    "ChunkReader": "rxstream.core.dialects.openai_chat.reader",
    "DeltaDecoder": "rxstream.core.dialects.openai_chat.deltas",
    "FieldError": ("rxstream.core.dialects.ShapeError", _FieldError),
    "chunk_text": "rxstream.core.dialects.openai_chat.reader",
    "deltas_of": "rxstream.core.dialects.openai_chat.deltas",
    "json_kind": "rxstream.core.dialects",
    "parse_usage": "rxstream.core.dialects.openai_chat.reader",
}

__all__ = sorted(_MOVED)


if not TYPE_CHECKING:
    __getattr__ = moved_names(__name__, _MOVED)
