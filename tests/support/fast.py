"""The fast-path switch for tests: one context for the three ways a stream can be read.

- `"plain"`: every fast path off (`fast_paths(False)`, as `RXSTREAM_NO_FAST=1`);
- `"stdlib"`: the fast paths on without the `fast` extra's msgspec (the standard
  library's shortcuts: the direct JSON scanner, the repeated-event templates);
- `"typed"`: the fast paths on with msgspec (the typed decoding of `rxstream._typed`).

`way(name)` switches to one of them for what is built inside it (decoders read
`rxstream._fast.msgspec_loads` when they are built); `outcome(...)` runs reads
through a pipeline built inside it and returns what a subscriber saw, to compare.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import reactivex
from reactivex import Observable

import rxstream._fast as fast

__all__ = ["WAYS", "Outcome", "Pipeline", "outcome", "way"]

#: The ways a stream can be read, by name: (fast paths on, msgspec on).
WAYS: dict[str, tuple[bool, bool]] = {
    "plain": (False, False),
    "stdlib": (True, False),
    "typed": (True, True),
}

Operator = Callable[[Observable[Any]], Observable[Any]]
#: A pipeline's operators, built anew for each run (under the switch).
Pipeline = Callable[[], list[Operator]]
#: What a subscriber saw: the items, their repr (which tells -0.0 from 0.0 and 1
#: from 1.0), the errors as (type name, message), whether it completed.
Outcome = tuple[list[Any], str, list[tuple[str, str]], bool]


@contextmanager
def way(name: str) -> Iterator[None]:
    """The fast paths as `WAYS[name]` says, for what is built inside; restored after."""
    on, typed = WAYS[name]
    saved = fast.msgspec_loads
    previous = fast.fast_paths(on)
    if not typed:
        fast.msgspec_loads = None
    try:
        yield
    finally:
        fast.msgspec_loads = saved
        fast.fast_paths(previous)


def outcome(reads: list[bytes], pipeline: Pipeline, name: str) -> Outcome:
    """What a subscriber sees of `reads` through `pipeline`, read the way `name`."""
    items: list[Any] = []
    errors: list[tuple[str, str]] = []
    completed: list[bool] = []
    with way(name):
        reactivex.from_iterable(reads).pipe(*pipeline()).subscribe(
            items.append,
            lambda exc: errors.append((type(exc).__name__, str(exc))),
            lambda: completed.append(True),
        )
    return items, repr(items), errors, bool(completed)
