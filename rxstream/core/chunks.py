"""Deprecated: the chat chunk decoder moved to `rxstream.core.dialects.openai_chat.chunks`.

Each name this module had is still given, for one release, with a
`DeprecationWarning` that names where it lives now.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._deprecate import moved_names

# name -> "module" or "module:name" where it lives now.
_MOVED: dict[str, str | tuple[str, object]] = {
    "ChatFrameDecoder": "rxstream.core.dialects.openai_chat.chunks",
    "ChunkDecoder": "rxstream.core.dialects.openai_chat.chunks",
    "OnMalformed": "rxstream.core.dialects",
}

__all__ = sorted(_MOVED)


if not TYPE_CHECKING:
    __getattr__ = moved_names(__name__, _MOVED)
