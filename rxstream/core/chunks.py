"""Deprecated: the chat chunk decoder moved to `rxstream.core.dialects.openai_chat.chunks`.

Each name this module had is still given, for one release, with a
`DeprecationWarning` that names where it lives now.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

# name -> "module" or "module:name" where it lives now.
_MOVED = {
    "ChatFrameDecoder": "rxstream.core.dialects.openai_chat.chunks",
    "ChunkDecoder": "rxstream.core.dialects.openai_chat.chunks",
    "OnMalformed": "rxstream.core.dialects",
}

__all__ = sorted(_MOVED)


def __getattr__(name: str) -> Any:
    where = _MOVED.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attribute = where.partition(":")
    warnings.warn(
        f"rxstream.core.chunks.{name} is deprecated: use {module}.{attribute or name}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module), attribute or name)
