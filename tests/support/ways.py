"""One stream decoded the ways a shortcut must agree with: shortcut on, fast paths off, msgspec.

The "same event but its text" shortcuts (`_shared.skeleton`, `_shared.Template`)
run on the standard library only; a stream read with them must give what it
gives with every fast path off (`fast_paths(False)`) and what the `fast`
extra's typed decoding gives: the same items, the same error (type and
message).
"""

from __future__ import annotations

from typing import Any

import pytest
import reactivex

import rxstream as rs
from rxstream.core.dialects import _shared
from tests.support.fast import typed_decoding, way

Outcome = tuple[list[Any], list[str]]


def decoded(dialect: str, body: str | bytes, *, typed: bool, size: int = 0) -> Outcome:
    """The items and the errors (`"Type: message"`) of `lines, sse_frames, decode(dialect)`.

    `size`: the body is cut into reads of that many bytes (0: one read).
    """
    items: list[Any] = []
    errors: list[str] = []
    data = body.encode() if isinstance(body, str) else body
    reads = [data[i : i + size] for i in range(0, len(data), size)] if size else [data]
    with typed_decoding(typed):
        pipeline = reactivex.from_iterable(reads).pipe(
            rs.lines(), rs.sse_frames(), rs.decode(dialect)
        )
        pipeline.subscribe(items.append, lambda e: errors.append(f"{type(e).__name__}: {e}"))
    return items, errors


def same_every_way(
    dialect: str, body: str | bytes, *, typed: bool = True, size: int = 0
) -> Outcome:
    """The standard library's outcome, asserted equal to the plain and (`typed`) msgspec ones."""
    with_shortcut = decoded(dialect, body, typed=False, size=size)
    with way("plain"):
        plain = decoded(dialect, body, typed=False, size=size)
    assert with_shortcut == plain
    if typed:
        assert with_shortcut == decoded(dialect, body, typed=True, size=size)
    return with_shortcut


def template_reads(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """What every `Template.read` gives from now on, in order (to see the shortcut taken)."""
    read: list[str | None] = []
    original = _shared.Template.read

    def counted(self: _shared.Template, data: object) -> str | None:
        read.append(original(self, data))
        return read[-1]

    monkeypatch.setattr(_shared.Template, "read", counted)
    return read
