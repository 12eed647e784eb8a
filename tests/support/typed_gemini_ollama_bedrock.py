"""What the typed-decoding tests of gemini, ollama and bedrock share: one input, both paths.

The typed path (`rxstream._typed.<dialect>`, msgspec types) runs when the fast
paths are on and `rxstream._fast.msgspec_loads` is set; the general path when
it is None (what the standard library does). `both(...)` runs the same input
through each and returns the two outcomes, which must be equal: the items (by
value and by `repr`, which tells -0.0 from 0.0 and 1 from 1.0), the error
(class and message) and whether the stream completed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import reactivex

import rxstream as rs
from rxstream.core import dialects
from tests.support.fast import way
from tests.support.pipelines import Operator, framing

DATA = Path(__file__).parent.parent / "data"

Outcome = tuple[list[Any], str, list[tuple[str, str]], list[bool]]

#: The recordings of each dialect, by the extension of its wire.
SUFFIX = {"gemini": ".sse", "ollama": ".ndjson", "bedrock": ".eventstream"}


def recordings(dialect: str) -> list[Path]:
    """Every recording under tests/data that `decode()` reads as `dialect`."""
    found = []
    for path in sorted(DATA.glob(f"*/*{SUFFIX[dialect]}")):
        for item in wire_items(path.read_bytes(), dialect):
            try:
                name = dialects.detect(item)
            except rs.StreamError:  # a provider's error event: says no dialect
                break
            if name is not None:
                if name == dialect:
                    found.append(path)
                break
    return found


def wire_items(body: bytes, dialect: str) -> list[Any]:
    """The wire items (frames, lines, event-stream messages) of a whole, good body."""
    items: list[Any] = []
    reactivex.of(body).pipe(*framing(dialect)).subscribe(items.append, lambda _: None)
    return items


def outcome(pieces: list[bytes], pipeline: Callable[[], list[Operator]], *, typed: bool) -> Outcome:
    items: list[Any] = []
    errors: list[tuple[str, str]] = []
    completed: list[bool] = []
    with way("typed" if typed else "stdlib"):
        reactivex.from_iterable(pieces).pipe(*pipeline()).subscribe(
            items.append,
            lambda exc: errors.append((type(exc).__name__, str(exc))),
            lambda: completed.append(True),
        )
    return items, repr(items), errors, completed


def assert_both_alike(pieces: list[bytes], pipeline: Callable[[], list[Operator]]) -> Outcome:
    """The typed and general paths give the same outcome; returns it."""
    typed = outcome(pieces, pipeline, typed=True)
    general = outcome(pieces, pipeline, typed=False)
    assert typed == general
    assert bool(typed[2]) != bool(typed[3])  # it ended one way or the other
    return typed


def decoded(dialect: str, items: list[Any], *, typed: bool, at_once: bool) -> Outcome:
    """The dialect's core decoder fed `items` (one by one, or in one `feed_all`), then closed."""
    out: list[Any] = []
    errors: list[tuple[str, str]] = []
    with way("typed" if typed else "stdlib"):
        decoder = dialects.decoder(dialect)
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
        errors.append((type(exc).__name__, str(exc)))
    return out, repr(out), errors, [not errors]


def assert_decoded_alike(dialect: str, items: list[Any]) -> Outcome:
    """The core decoder gives the same outcome on both paths, fed either way."""
    first = decoded(dialect, items, typed=True, at_once=False)
    for typed, at_once in itertools.product((True, False), repeat=2):
        assert decoded(dialect, items, typed=typed, at_once=at_once) == first, (typed, at_once)
    return first


def cut(body: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted(p % (len(body) + 1) for p in points), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


def damaged(body: bytes, damage: str, where: int, bit: int) -> bytes:
    at = where % len(body)
    if damage == "truncate":
        return body[:at]
    if damage == "flip":
        return body[:at] + bytes((body[at] ^ (1 << bit),)) + body[at + 1 :]
    return body
