"""The typed (msgspec Struct) path against the standard-library path: same items, same errors.

A typed module of `rxstream._typed` runs when a decoder is built with the
fast paths on and `rxstream._fast.msgspec_loads` set; with it set to None
the same decoder takes the standard-library path. `outcome` runs a pipeline
(or `decoded` a decoder) either way and reduces the run to what must agree:
the items (by value and by `repr`, which tells `-0.0` from `0.0` and shows
`raw` fields equality skips), the error (type, message, and its cause's),
and completion (or `done`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import reactivex
from reactivex import Observable

from rxstream.core import dialects
from tests.support.fast import typed_decoding
from tests.support.mutations import (
    MUTATIONS,
    WRONG,
    mutated,
    pattern,
    text_of,
    wire_items,
    with_text,
)
from tests.support.pipelines import Pipeline, pipelines

DATA = Path(__file__).parent.parent / "data"

__all__ = [
    "DATA",
    "assert_same",
    "assert_same_decoding",
    "cut",
    "damaged",
    "mutation_streams",
    "pipelines",
    "recordings",
]


def recordings(dialect: str) -> list[Path]:
    """The recordings under tests/data that `decode()` reads as `dialect`."""
    found = []
    for path in sorted(DATA.glob("*/*.sse")):
        if wire_items(path)[0] == dialect:
            found.append(path)
    assert found, dialect
    return found


def _error(exc: BaseException) -> tuple[str, str, str]:
    cause = exc.__cause__
    return type(exc).__name__, str(exc), "" if cause is None else f"{type(cause).__name__}: {cause}"


def _outcome(pieces: list[bytes], pipeline: Pipeline) -> tuple[Any, ...]:
    items: list[Any] = []
    errors: list[tuple[str, str, str]] = []
    completed: list[bool] = []
    source: Observable[Any] = reactivex.from_iterable(pieces)
    source.pipe(*pipeline()).subscribe(
        items.append, lambda exc: errors.append(_error(exc)), lambda: completed.append(True)
    )
    return items, repr(items), errors, completed


def assert_same(pieces: list[bytes], pipeline: Pipeline) -> tuple[Any, ...]:
    """Run the pipeline both ways; assert they agree; return the typed run's outcome."""
    typed = _outcome(pieces, pipeline)
    with typed_decoding(False):
        plain = _outcome(pieces, pipeline)
    assert typed == plain
    assert bool(typed[2]) != bool(typed[3])  # it ended one way or the other
    return typed


def _decoded(dialect: str, items: list[Any], *, at_once: bool, skip: bool) -> tuple[Any, ...]:
    decoder = dialects.decoder(dialect, on_malformed="skip" if skip else "raise")
    out: list[Any] = []
    try:
        if at_once:
            decoder.feed_all(items, out)
        else:
            for item in items:
                out += decoder.feed(item)
                if decoder.done:
                    break
        out += decoder.close()
    except Exception as exc:
        return out, repr(out), _error(exc), decoder.done
    return out, repr(out), None, decoder.done


def assert_same_decoding(
    dialect: str, items: list[Any], *, at_once: bool, skip: bool = False
) -> tuple[Any, ...]:
    """The dialect's decoder fed `items` both ways: the same deltas, error and `done`.

    `skip`: with `on_malformed="skip"`.
    """
    typed = _decoded(dialect, items, at_once=at_once, skip=skip)
    with typed_decoding(False):
        plain = _decoded(dialect, items, at_once=at_once, skip=skip)
    assert typed == plain, items
    return typed


def mutation_streams(dialect: str) -> Iterator[tuple[str, list[Any]]]:
    """Each recorded event of `dialect` with one field set in turn to a wrong-typed value.

    The wrong-type machinery of tests/core/dialects: one mutation per event
    type and field path, each value of `WRONG` in turn.
    """
    for name, where, items, n, path in MUTATIONS:
        if where != dialect:
            continue
        value = json.loads(text_of(items[n]))
        for new in WRONG:
            stream = list(items)
            stream[n] = with_text(items[n], json.dumps(mutated(value, path, new)))
            yield f"{name} item {n} {pattern(path)} = {new!r}", stream


def cut(body: bytes, points: list[int]) -> list[bytes]:
    """`body` cut at `points` (taken modulo its length)."""
    bounds = [0, *sorted(p % (len(body) + 1) for p in points), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


def damaged(body: bytes, damage: str, where: int, bit: int) -> bytes:
    """`body` as it is (`"none"`), cut short (`"truncate"`) or with one bit flipped (`"flip"`)."""
    at = where % len(body)
    if damage == "truncate":
        return body[:at]
    if damage == "flip":
        return body[:at] + bytes((body[at] ^ (1 << bit),)) + body[at + 1 :]
    return body
