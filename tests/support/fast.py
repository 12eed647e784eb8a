"""The fast-path switch for tests: one context for the three ways a stream can be read.

- `"plain"`: every fast path off (`fast_paths(False)`, as `RXSTREAM_NO_FAST=1`);
- `"stdlib"`: the fast paths on without the `fast` extra's msgspec (the standard
  library's shortcuts: the direct JSON scanner, the repeated-event templates);
- `"typed"`: the fast paths on with msgspec (the typed decoding of `rxstream._typed`).

`way(name)` switches to one of them for what is built inside it (decoders read
`rxstream._fast.msgspec_loads` when they are built); `outcome(...)` runs reads
through a pipeline built inside it and returns what a subscriber saw, to compare.
`typed_decoding(on)` switches msgspec alone, leaving the fast paths as they are
(inside `fast_paths(False)` it changes nothing: the plain path reads either way).
`fast_paths_as(on)` switches the fast paths alone (msgspec as installed), and the `fast`
fixture (`fast_switch`) runs each test of a module that imports it twice, with them on
(`fast`) and off (`plain`). This module is the one place tests switch the fast paths and
touch `rxstream._fast.msgspec_loads`.

`learning_at_once()` lets a decoder learn its repeated-event template at the
first event it could (`Budget.wait` 0), for the tests of what a learnt
template reads, whose streams are a few events long.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import reactivex

import rxstream._fast as fast_module
from rxstream.core.dialects._shared import Budget
from tests.support.pipelines import Pipeline

__all__ = [
    "WAYS",
    "Outcome",
    "Pipeline",
    "fast_paths_as",
    "fast_switch",
    "learning_at_once",
    "outcome",
    "typed_decoding",
    "way",
]

#: The ways a stream can be read, by name: (fast paths on, msgspec on).
WAYS: dict[str, tuple[bool, bool]] = {
    "plain": (False, False),
    "stdlib": (True, False),
    "typed": (True, True),
}

#: What a subscriber saw: the items, their repr (which tells -0.0 from 0.0 and 1
#: from 1.0), the errors as (type name, message), whether it completed.
Outcome = tuple[list[Any], str, list[tuple[str, str]], bool]


@contextmanager
def typed_decoding(on: bool) -> Iterator[None]:
    """msgspec's typed decoding as installed (`on`) or off, for what is built inside."""
    saved = fast_module.msgspec_loads
    if not on:
        fast_module.msgspec_loads = None
    try:
        yield
    finally:
        fast_module.msgspec_loads = saved


@contextmanager
def fast_paths_as(on: bool) -> Iterator[None]:
    """The fast paths on (msgspec as installed) or off, for what runs inside; restored after."""
    previous = fast_module.fast_paths(on)
    try:
        yield
    finally:
        fast_module.fast_paths(previous)


@pytest.fixture(name="fast", params=[True, False], ids=["fast", "plain"])
def fast_switch(request: pytest.FixtureRequest) -> Iterator[bool]:
    """Each test twice: with the fast paths on (`fast`), then off (`plain`); gives which."""
    with fast_paths_as(request.param):
        yield request.param


@contextmanager
def learning_at_once() -> Iterator[None]:
    """Decoders learn a template at the first offer (`Budget.wait` 0) inside; restored after.

    For the tests of what a learnt template reads, on streams of a few events:
    the wait itself (a short stream learns nothing) has tests of its own.
    """
    saved = Budget.wait
    Budget.wait = 0
    try:
        yield
    finally:
        Budget.wait = saved


@contextmanager
def way(name: str) -> Iterator[None]:
    """The fast paths as `WAYS[name]` says, for what is built inside; restored after."""
    on, typed = WAYS[name]
    with fast_paths_as(on), typed_decoding(typed):
        yield


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
