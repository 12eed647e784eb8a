"""An integer of more digits than `json.loads` takes, in a field the typed decoding does not read.

msgspec skips a field declared `msgspec.Raw` without making a number of it, so
it would take an integer that `json.loads` refuses (more digits than
`sys.get_int_max_str_digits()`): the event would be read on the typed path and
called malformed on the standard library's. No typed module declares one (the
fields the decoders do not read are `Any`, which msgspec builds under the same
limit as Python), and every integer of every recorded event, made too long,
gives the same error both ways.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

import rxstream as rs
from rxstream.core.eventstream import encode_message
from tests.support.mutations import (
    mutated,
    paths,
    text_of,
    wire_items,
    with_text,
)
from tests.support.typed import DATA, assert_same

LIMIT = sys.get_int_max_str_digits()
refused = pytest.mark.skipif(not LIMIT, reason="this Python takes integers of any length")


@pytest.fixture(params=[LIMIT, 640], ids=["default limit", "limit 640"])
def limit(request: pytest.FixtureRequest) -> Iterator[int]:
    """The interpreter's limit on an integer's digits, as it is and lowered to 640."""
    sys.set_int_max_str_digits(request.param)
    try:
        yield request.param
    finally:
        sys.set_int_max_str_digits(LIMIT)


def _recordings() -> list[Path]:
    return sorted(p for p in DATA.glob("*/*") if p.suffix in (".sse", ".ndjson", ".eventstream"))


def _first_per_dialect() -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for path in _recordings():
        dialect, items = wire_items(path)
        if dialect != "rxstream" and dialect not in found and len(items) > 3:
            found[dialect] = items
    return found


STREAMS = _first_per_dialect()


_HOLE = "\x00digits\x00"


def _with_digits(item: Any, kind: str, limit: int) -> Iterator[Any]:
    """The item with each value of `kind` in its JSON in turn made a long run of digits.

    "integer": each integer becomes an integer of more digits than json takes
    (where the typed decoding declares a field `msgspec.Raw`, it is not read);
    "float": each number a number of that many digits with a fraction (json
    takes it); "string": each string a string of those digits (json takes it).
    """
    try:
        data = json.loads(text_of(item))
    except ValueError:
        return
    digits = "7" * (limit + 1)
    new = {"integer": digits, "float": digits + ".5", "string": f'"{digits}"'}[kind]
    for path in paths(data):
        value = data
        for step in path:
            value = value[step]
        if kind == "string" and type(value) is not str:
            continue
        if kind != "string" and type(value) is not int:
            continue
        text = json.dumps(mutated(data, path, _HOLE)).replace(json.dumps(_HOLE), new)
        yield with_text(item, text)


def _wire(items: list[Any]) -> bytes:
    """The bytes a provider sent for these wire items."""
    if isinstance(items[0], rs.EventStreamMessage):
        return b"".join(encode_message(item.headers, item.payload) for item in items)
    if isinstance(items[0], rs.SSEFrame):
        return "".join(f"event: {f.event}\ndata: {f.data}\n\n" for f in items).encode()
    return "".join(f"{line}\n" for line in items).encode()


def _pipeline(dialect: str) -> list[Any]:
    if dialect == "bedrock":
        return [rs.eventstream_frames(), rs.decode(dialect), rs.accumulate_message()]
    if dialect == "ollama":
        return [rs.lines(), rs.decode(dialect), rs.accumulate_message()]
    return [rs.lines(), rs.sse_frames(), rs.decode(dialect), rs.accumulate_message()]


@refused
@pytest.mark.parametrize("dialect", sorted(STREAMS))
@pytest.mark.parametrize("kind", ["integer", "float", "string"])
def test_every_event_with_a_long_run_of_digits_reads_as_on_the_standard_library(
    dialect: str, kind: str, limit: int
) -> None:
    items = STREAMS[dialect]
    assert assert_same([_wire(items)], lambda: _pipeline(dialect))[2] == []
    for n in range(len(items)):
        for changed in _with_digits(items[n], kind, limit):
            body = _wire([*items[:n], changed, *items[n + 1 :]])
            _, _, errors, _ = assert_same([body], lambda: _pipeline(dialect))
            if kind == "integer":
                assert errors, n  # json's own words, both ways


@pytest.mark.parametrize(
    "name",
    ["anthropic", "bedrock", "cohere", "gemini", "ollama", "openai_chat", "openai_responses"],
)
def test_no_typed_field_is_skipped_unread(name: str) -> None:
    module = importlib.import_module(f"rxstream._typed.{name}")
    structs = [
        kind
        for kind in vars(module).values()
        if isinstance(kind, type) and issubclass(kind, msgspec.Struct)
    ]
    assert structs, name
    for kind in structs:
        info = msgspec.inspect.type_info(kind)
        assert isinstance(info, msgspec.inspect.StructType)
        assert info.forbid_unknown_fields, f"{kind.__name__} skips fields it does not declare"
        for field in info.fields:
            assert "Raw" not in repr(field.type), f"{kind.__name__}.{field.name} is skipped unread"
