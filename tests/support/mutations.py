"""Every field of every recorded event, set to a wrong value: the mutation sweep's cases.

`MUTATIONS` holds one case per dialect, event type and field path of the recordings under
tests/data (`(file, dialect, wire items, index of the item, path)`); `mutated(value, path,
new)` is the event's JSON with that field set to `new`, one of `WRONG`; `text_of` and
`with_text` read and replace an item's text whatever its wire kind. The wrong-type sweep
(`tests/core/dialects/test_every_dialect_strict_shapes.py`) and the typed-decoding tests use them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import reactivex

import rxstream as rs
from rxstream.core import dialects

DATA = Path(__file__).parent.parent / "data"

#: What each field is set to in turn: the empty and falsy values of each JSON type.
WRONG: list[Any] = [{}, [], 0, "", False, None]

Step = str | int


def wire_items(path: Path) -> tuple[str, list[Any]]:
    """(dialect, wire items) of a recording, the dialect as auto-detection names it."""
    body = path.read_bytes()
    source = reactivex.from_iterable([body])
    items: list[Any] = []
    if path.suffix == ".eventstream":
        source.pipe(rs.eventstream_frames()).subscribe(items.append)
    elif path.suffix == ".ndjson":
        source.pipe(rs.lines()).subscribe(items.append)
    else:
        source.pipe(rs.lines(), rs.sse_frames()).subscribe(items.append)
    auto = dialects.AutoDecoder()
    for item in items:
        try:
            auto.feed(item)
        except rs.StreamError:
            break
        if auto.dialect is not None:
            break
    assert auto.dialect is not None, path
    return auto.dialect, items


def text_of(item: Any) -> str:
    if isinstance(item, rs.SSEFrame):
        return item.data
    if isinstance(item, rs.EventStreamMessage):
        return item.payload.decode()
    return str(item)


def with_text(item: Any, text: str) -> Any:
    if isinstance(item, rs.SSEFrame):
        return rs.SSEFrame(text, item.event, item.id, item.retry)
    if isinstance(item, rs.EventStreamMessage):
        return rs.EventStreamMessage(item.headers, text.encode())
    return text


def kind_of(value: Any) -> str:
    """The event type an item's JSON names (for one mutation per type and path)."""
    for key in ("type", "event"):
        if isinstance(value.get(key), str):
            return str(value[key])
    return "+".join(sorted(value)[:3])


def paths(value: Any, prefix: tuple[Step, ...] = ()) -> Iterator[tuple[Step, ...]]:
    children: Any = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for step, child in children:
        yield (*prefix, step)
        yield from paths(child, (*prefix, step))


def pattern(path: tuple[Step, ...]) -> str:
    return "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)


def normal(path: tuple[Step, ...]) -> str:
    return re.sub(r"\[\d+\]", "[]", pattern(path))


def mutated(value: Any, path: tuple[Step, ...], new: Any) -> Any:
    copy = json.loads(json.dumps(value))
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new
    return copy


Mutation = tuple[str, str, list[Any], int, tuple[Step, ...]]


def mutations() -> list[Mutation]:
    """(file, dialect, items, index of the item, path): one per dialect, event type and path."""
    out: list[Mutation] = []
    seen: set[tuple[str, str, str]] = set()
    for file in sorted(DATA.glob("*/*")):
        if file.suffix not in (".sse", ".ndjson", ".eventstream"):
            continue
        dialect, items = wire_items(file)
        for n, item in enumerate(items):
            try:
                value = json.loads(text_of(item))
            except ValueError:
                continue
            if not isinstance(value, dict):
                continue
            if isinstance(item, rs.EventStreamMessage):
                kind = str(item.headers.get(":event-type"))
            elif isinstance(item, rs.SSEFrame) and item.event != "message":
                kind = item.event
            else:
                kind = kind_of(value)
            for path in paths(value):
                key = (dialect, kind, normal(path))
                if key not in seen:
                    seen.add(key)
                    out.append((f"{file.parent.name}/{file.name}", dialect, items, n, path))
    return out


MUTATIONS = mutations()
