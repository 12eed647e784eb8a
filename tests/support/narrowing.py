"""Narrow a list of a union (wire items, a group's deltas) to the one kind a test expects.

A renderer's `feed` returns `list[Wire]` (SSE frames, NDJSON lines or AWS
event-stream messages) and `split_by_delta_type` groups plain `Delta`s; a test
that knows which kind it holds says so with `only(kind, items)`, which checks
every item rather than casting.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

T = TypeVar("T")


def only(kind: type[T], items: Iterable[object]) -> list[T]:
    """`items` as a list of `kind`, failing the test on the first item of another type."""
    out: list[T] = []
    for item in items:
        assert isinstance(item, kind), f"expected only {kind.__name__} items, got {item!r}"
        out.append(item)
    return out
