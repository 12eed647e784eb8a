"""Deprecated: the chat chunk decoder moved to `rxstream.core.dialects.openai_chat.chunks`.

This module re-exports its names for one release and warns when imported.
`rxstream.core.ChunkDecoder` stays where it is.
"""

from __future__ import annotations

import warnings

from .dialects._base import OnMalformed
from .dialects.openai_chat.chunks import ChatFrameDecoder, ChunkDecoder

__all__ = ["ChatFrameDecoder", "ChunkDecoder", "OnMalformed"]

warnings.warn(
    "rxstream.core.chunks is deprecated: import from rxstream.core.dialects.openai_chat.chunks "
    "(or rxstream.core) instead",
    DeprecationWarning,
    stacklevel=2,
)
