"""Deprecated: rxstream's own event format moved to `rxstream.core.wire`.

This path goes in the next release.

`encode`, `decode`, `encode_error`, `decode_error`, `FORMAT_VERSION` and
`TYPES` are the same functions and values there.
"""

from __future__ import annotations

import warnings

from .wire import FORMAT_VERSION, TYPES, decode, decode_error, encode, encode_error

__all__ = ["FORMAT_VERSION", "TYPES", "decode", "decode_error", "encode", "encode_error"]

warnings.warn(
    "rxstream.core.codec is deprecated; import from rxstream.core.wire instead",
    DeprecationWarning,
    stacklevel=2,
)
