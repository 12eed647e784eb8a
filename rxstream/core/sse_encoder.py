"""Deprecated: `SSEEncoder` moved to `rxstream.core.dialects.sse_encoder`.

This path goes in the next release.

Rendering in a dialect belongs to the dialect registry; the SSE text itself
is written by `rxstream.core.sse` (`event_text`, `comment_text`). The names
are loaded from the new module on first use, so importing this module does
not make the core import the registry.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .dialects.sse_encoder import KEEPALIVE, RXSTREAM, SSE_FORMATS, SSEEncoder

__all__ = ["KEEPALIVE", "RXSTREAM", "SSE_FORMATS", "SSEEncoder"]

warnings.warn(
    "rxstream.core.sse_encoder is deprecated; import from rxstream.core.dialects.sse_encoder "
    "instead",
    DeprecationWarning,
    stacklevel=2,
)


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("rxstream.core.dialects.sse_encoder"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
