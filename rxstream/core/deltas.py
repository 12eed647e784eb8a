"""Deprecated: the chat delta decoder moved to `rxstream.core.dialects.openai_chat.deltas`.

Each name this module had is still given, for one release, with a
`DeprecationWarning` that names where it lives now.
(`FieldError` is now `rxstream.core.dialects.ShapeError`, which takes
`(path, expected, value)`.)
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

# name -> "module" or "module:name" where it lives now.
_MOVED = {
    "DELTA_CLASSES": "rxstream.models",
    "TOO_DEEP": "rxstream.core.dialects.openai_chat.reader",
    "ChunkReader": "rxstream.core.dialects.openai_chat.reader",
    "DeltaDecoder": "rxstream.core.dialects.openai_chat.deltas",
    "FieldError": "rxstream.core.dialects:ShapeError",
    "chunk_text": "rxstream.core.dialects.openai_chat.reader",
    "deltas_of": "rxstream.core.dialects.openai_chat.deltas",
    "json_kind": "rxstream.core.dialects",
    "parse_usage": "rxstream.core.dialects.openai_chat.reader",
}

__all__ = sorted(_MOVED)


def __getattr__(name: str) -> Any:
    where = _MOVED.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = where.partition(":")
    warnings.warn(
        f"rxstream.core.deltas.{name} is deprecated: use {module}.{attribute or name}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module), attribute or name)
