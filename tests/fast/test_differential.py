"""The fast paths against the plain one on mutated recordings: the same bytes, any chunking.

`tests/fast/test_switch.py` runs the recordings as they are, cut and damaged
byte-wise; here each recording's events are first changed as JSON (a string
replaced by an awkward one: a lone surrogate, a quote, the name of a field;
a value replaced by another shape: `{}`, `{"trafficType": "ON_DEMAND"}`, null,
a number; events dropped; events repeated with another text, which is what
teaches the repeated-event templates), written back in one of two spellings,
and cut into reads anywhere. Read with every fast path off, with the standard
library's shortcuts, and with msgspec's typed decoding, a stream must give the
same items, the same error and the same completion.

Each SSE and NDJSON dialect runs (Bedrock's binary event stream is left to the
byte-wise sweep). A few examples every day, 150 a dialect under `--full`.
"""

from __future__ import annotations

import itertools
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core import dialects
from tests.support.fast import Outcome, Pipeline, outcome

DATA = Path(__file__).parents[1] / "data"

#: An event: its SSE event name (None: none, or an NDJSON line) and its JSON data
#: (or, where it is no JSON, such as `[DONE]`, its text as a `Raw`).
Event = tuple[str | None, Any]


class Raw(str):
    """The data of an event that is no JSON, written back as it is."""


#: Strings that have set fast readers apart from the plain one, and their kin.
AWKWARD = [
    "\ud800",
    "a\udfffb",
    "usageMetadata",
    '"usageMetadata": {"totalTokenCount": 1}',
    '"text":"',
    "\\",
    '"',
    "\n",
    "é😀",
    "",
    "delta",
    "[DONE]",
]
#: Values that have: a usage without counts, an empty object, null, wrong kinds.
SHAPES: list[Any] = [{}, {"trafficType": "ON_DEMAND"}, None, 0, -1, 2**70, 1.5, "", [], True]


def _front(suffix: str) -> list[Any]:
    return [rs.lines()] if suffix == ".ndjson" else [rs.lines(), rs.sse_frames()]


@cache
def _recordings() -> dict[str, list[tuple[str, tuple[Event, ...]]]]:
    """Each dialect's recordings (the SSE and NDJSON ones), as their events."""
    found: dict[str, list[tuple[str, tuple[Event, ...]]]] = {}
    for path in sorted(DATA.glob("*/*.*")):
        if path.suffix not in (".sse", ".ndjson"):
            continue
        items: list[Any] = []
        reactivex.of(path.read_bytes()).pipe(*_front(path.suffix)).subscribe(
            items.append, lambda _: None
        )
        dialect = next((d for d in map(_detected, items) if d is not None), None)
        if dialect is not None:
            name = f"{path.parent.name}/{path.name}"
            found.setdefault(dialect, []).append((name, tuple(map(_event, items))))
    return found


def _detected(item: Any) -> str | None:
    try:
        return dialects.detect(item)
    except rs.StreamError:  # a provider's error event: no dialect
        return None


def _event(item: Any) -> Event:
    event, data = (None, item) if isinstance(item, str) else (item.event, item.data)
    try:
        return event, json.loads(data)
    except ValueError:
        return event, Raw(data)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value inside `value` (the whole one first)."""
    found = [at]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*at, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*at, index))
    return found


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _replaced(value[head], rest, new)}
    return [*value[:head], _replaced(value[head], rest, new), *value[head + 1 :]]


def _strings(value: Any) -> list[tuple[Any, ...]]:
    return [p for p in _paths(value) if isinstance(_get(value, p), str)]


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


#: The keys of a model's text in the dialects' events (changed more often than others).
TEXT_KEYS = frozenset({"text", "content", "delta", "thinking", "response", "partial_json"})


def _awkward() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(AWKWARD), st.text(max_size=8))


@st.composite
def _mutated(draw: st.DrawFn, events: tuple[Event, ...]) -> list[Event]:
    """The events with a few changes (see the module docstring)."""
    out = list(events)
    for _ in range(draw(st.integers(1, 6))):
        how = draw(st.sampled_from(["string", "shape", "drop", "repeat", "everywhere", "usage"]))
        if how in ("everywhere", "usage"):
            out = _everywhere(draw, out, usage=how == "usage")
            continue
        if not out:
            break
        at = draw(st.integers(0, len(out) - 1))
        event, data = out[at]
        if how == "drop":
            del out[at]
        elif not isinstance(data, Raw) and how == "shape":
            path = draw(st.sampled_from(_paths(data)))
            out[at] = (event, _replaced(data, path, draw(st.sampled_from(SHAPES))))
        elif not isinstance(data, Raw) and (strings := _strings(data)):
            texts = [p for p in strings if p and p[-1] in TEXT_KEYS]
            textual = bool(texts) and draw(st.booleans())
            path = draw(st.sampled_from(texts if textual else strings))
            copies = 1 if how == "string" else draw(st.integers(1, 3))
            new = [(event, _replaced(data, path, draw(_awkward()))) for _ in range(copies)]
            # "repeat": the same event again with other strings (what templates learn from)
            out[at : at + 1] = new if how == "string" else [out[at], *new]
    return out


def _everywhere(draw: st.DrawFn, events: list[Event], *, usage: bool) -> list[Event]:
    """The events with one key's value replaced, or the key dropped, in every object.

    `usage`: every key that names usage (`usage`, `usageMetadata`, ...), by a shape.
    """
    keys = sorted({key for _, data in events for key in _keys(data)})
    if usage:
        keys = [key for key in keys if "usage" in key.lower()]
    if not keys:
        return events
    chosen = [draw(st.sampled_from(keys))] if not usage else keys
    values = [_DROP, *SHAPES] if usage else [_DROP, *SHAPES, *AWKWARD]
    new = draw(st.sampled_from(values))
    for key in chosen:
        events = [(event, _with_key(data, key, new)) for event, data in events]
    return events


#: `_everywhere`'s value that drops the key.
_DROP = object()


def _keys(value: Any) -> set[str]:
    if isinstance(value, Raw):
        return set()
    if isinstance(value, dict):
        return set(value).union(*map(_keys, value.values()))
    if isinstance(value, list):
        return set().union(*map(_keys, value))
    return set()


def _with_key(value: Any, key: str, new: Any) -> Any:
    if isinstance(value, Raw):
        return value
    if isinstance(value, dict):
        inner = {k: _with_key(v, key, new) for k, v in value.items() if k != key}
        if key in value and new is not _DROP:
            inner[key] = new
        return inner
    if isinstance(value, list):
        return [_with_key(v, key, new) for v in value]
    return value


def _body(events: list[Event], ndjson: bool, compact: bool, ascii_only: bool) -> bytes:
    separators = (",", ":") if compact else (", ", ": ")
    lines = []
    for event, data in events:
        if isinstance(data, Raw):
            text = str(data)
        else:
            text = json.dumps(data, separators=separators, ensure_ascii=ascii_only)
        if ndjson:
            lines.append(text + "\n")
        else:
            head = "" if event is None or event == "message" else f"event: {event}\n"
            lines.append(f"{head}data: {text}\n\n")
    # A lone surrogate written raw is no UTF-8: the reader's replacement decides.
    return "".join(lines).encode("utf-8", "surrogatepass")


def _cut(body: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted(p % (len(body) + 1) for p in points), len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


def _pipeline(dialect: str, ndjson: bool) -> Pipeline:
    if ndjson:
        return lambda: [rs.lines(), rs.decode(dialect)]
    return lambda: [rs.lines(), rs.sse_frames(), rs.decode(dialect)]


def _assert_alike(reads: list[bytes], pipeline: Pipeline) -> Outcome:
    plain = outcome(reads, pipeline, "plain")
    assert bool(plain[2]) != plain[3]  # it ended one way or the other
    assert outcome(reads, pipeline, "stdlib") == plain
    assert outcome(reads, pipeline, "typed") == plain
    return plain


DIALECTS = ["gemini", "openai-chat", "openai-responses", "anthropic", "cohere", "ollama"]


def test_every_dialect_here_has_recordings() -> None:
    assert set(DIALECTS) <= set(_recordings())


@pytest.mark.parametrize("dialect", DIALECTS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_recordings_read_alike_every_way(dialect: str, data: st.DataObject) -> None:
    name, events = data.draw(st.sampled_from(_recordings()[dialect]), label="recording")
    ndjson = name.endswith(".ndjson")
    mutated = data.draw(_mutated(events), label="events")
    body = _body(mutated, ndjson, data.draw(st.booleans()), data.draw(st.booleans()))
    points = data.draw(st.lists(st.integers(0, 2**16), max_size=6), label="cuts")
    _assert_alike(_cut(body, points), _pipeline(dialect, ndjson))
