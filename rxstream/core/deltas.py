"""Deprecated: the chat delta decoder moved to `rxstream.core.dialects.openai_chat.deltas`.

This module re-exports its names for one release and warns when imported
(`FieldError` is now `rxstream.core.dialects.ShapeError`, `json_kind` lives in
`rxstream.core.dialects`). `rxstream.core.DeltaDecoder` stays where it is.
"""

from __future__ import annotations

import warnings

from ..models import DELTA_CLASSES
from .dialects import ShapeError, json_kind
from .dialects.openai_chat.deltas import DeltaDecoder, deltas_of
from .dialects.openai_chat.reader import TOO_DEEP, ChunkReader, chunk_text, parse_usage

#: Deprecated spelling of `rxstream.core.dialects.ShapeError` (which takes
#: `(path, expected, value)`).
FieldError = ShapeError

__all__ = [
    "DELTA_CLASSES",
    "TOO_DEEP",
    "ChunkReader",
    "DeltaDecoder",
    "FieldError",
    "chunk_text",
    "deltas_of",
    "json_kind",
    "parse_usage",
]

warnings.warn(
    "rxstream.core.deltas is deprecated: import from rxstream.core.dialects.openai_chat.deltas "
    "(or rxstream.core) instead",
    DeprecationWarning,
    stacklevel=2,
)
