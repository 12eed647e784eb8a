"""Deprecated: rxstream's own event format moved to `rxstream.core.wire`.

This path goes in the next release. `encode`, `decode`, `encode_error`,
`decode_error`, `FORMAT_VERSION` and `TYPES` are the same functions and values
there; each use of one through this module warns (`DeprecationWarning`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._deprecate import moved_names

if TYPE_CHECKING:
    from .wire import FORMAT_VERSION, TYPES, decode, decode_error, encode, encode_error

__all__ = ["FORMAT_VERSION", "TYPES", "decode", "decode_error", "encode", "encode_error"]

if not TYPE_CHECKING:
    __getattr__ = moved_names(__name__, dict.fromkeys(__all__, "rxstream.core.wire"))
