"""Deprecated: `SSEEncoder` moved to `rxstream.core.dialects.sse_encoder`.

This path goes in the next release; each use of a name through it warns
(`DeprecationWarning`). `SSE_FORMATS` is `SSE_DIALECTS` there.

Rendering in a dialect belongs to the dialect registry; the SSE text itself
is written by `rxstream.core.sse` (`event_text`, `comment_text`). The names
are loaded from the new module on first use, so importing this module does
not make the core import the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._deprecate import moved_names

if TYPE_CHECKING:
    from .dialects.sse_encoder import KEEPALIVE, RXSTREAM, SSEEncoder
    from .dialects.sse_encoder import SSE_DIALECTS as SSE_FORMATS

__all__ = ["KEEPALIVE", "RXSTREAM", "SSE_FORMATS", "SSEEncoder"]

_NEW = "rxstream.core.dialects.sse_encoder"

if not TYPE_CHECKING:
    __getattr__ = moved_names(
        __name__,
        {
            "KEEPALIVE": _NEW,
            "RXSTREAM": _NEW,
            "SSEEncoder": _NEW,
            "SSE_FORMATS": f"{_NEW}:SSE_DIALECTS",
        },
    )
