"""Feed a core machine the same input cut in many ways, and demand the same output.

`outputs_for_all_chunkings(factory, data)` feeds `data` whole, one element at a
time, and split in two at every index, and returns the one output they all
agree on (or fails the test, naming the chunking that differed).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

T = TypeVar("T", str, bytes)


def chunkings(data: T) -> Iterator[tuple[str, list[T]]]:
    """Yield (name, pieces) for: whole, one element at a time, split at every index."""
    yield "whole", [data]
    yield "one at a time", [data[i : i + 1] for i in range(len(data))]
    for i in range(1, len(data)):
        yield f"split at {i}", [data[:i], data[i:]]


def run(factory: Callable[[], Any], pieces: Sequence[Any]) -> list[Any]:
    """Feed `pieces` to a fresh machine, close it, and return everything it gave."""
    machine = factory()
    out: list[Any] = []
    for piece in pieces:
        out.extend(machine.feed(piece))
    out.extend(machine.close())
    return out


def outputs_for_all_chunkings(factory: Callable[[], Any], data: T) -> list[Any]:
    """The output of `factory()` machines for every chunking of `data`, checked equal."""
    expected = run(factory, [data])
    for name, pieces in chunkings(data):
        got = run(factory, pieces)
        assert got == expected, f"chunking {name!r} gave {got!r}, whole gave {expected!r}"
    return expected
