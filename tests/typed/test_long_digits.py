"""An integer of more digits than `json.loads` takes, where the typed decoding does not look.

msgspec skips a field its types do not declare without making a number of it,
so it would take an integer that `json.loads` refuses (more digits than
`sys.get_int_max_str_digits()`): the event would be read on the typed path and
called malformed on the standard library's. `rxstream._typed.decoder` sends any
text with such a run of digits to the general path, which has the last word.
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
from rxstream._typed import decoder
from rxstream.core.eventstream import encode_message
from tests.core.dialects.test_every_dialect_strict_shapes import (
    mutated,
    paths,
    text_of,
    wire_items,
    with_text,
)

from ._equivalence import DATA, assert_same

LIMIT = sys.get_int_max_str_digits()
refused = pytest.mark.skipif(not LIMIT, reason="this Python takes integers of any length")


class Event(msgspec.Struct):
    text: str


@pytest.fixture
def limit_of_640() -> Iterator[None]:
    sys.set_int_max_str_digits(640)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(LIMIT)


@pytest.mark.parametrize(
    ("digits", "refused_here"),
    [(LIMIT, False), (LIMIT + 1, True), (LIMIT + 500, True)],
)
@pytest.mark.parametrize("binary", [False, True])
@refused
def test_a_text_with_a_run_past_the_limit_is_refused(
    digits: int, refused_here: bool, binary: bool
) -> None:
    read = decoder(Event)
    text = '{"text":"hi","extra":%s}' % ("7" * digits)
    data: str | bytes = text.encode() if binary else text
    if refused_here:
        with pytest.raises(msgspec.DecodeError, match="digits"):
            read(data)
    else:
        assert read(data) == Event("hi")


@pytest.mark.usefixtures("limit_of_640")
def test_the_limit_is_read_when_the_text_is_read() -> None:
    read = decoder(Event)
    assert read('{"text":"hi","extra":%s}' % ("7" * 640)) == Event("hi")
    with pytest.raises(msgspec.DecodeError):
        read('{"text":"hi","extra":%s}' % ("7" * 641))


def test_short_texts_and_no_limit_pass_through() -> None:
    read = decoder(Event)
    assert read('{"text":"%s"}' % ("7" * 100)) == Event("7" * 100)
    previous = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        assert read('{"text":"hi","extra":%s}' % ("7" * 6000)) == Event("hi")
    finally:
        sys.set_int_max_str_digits(previous)


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


def _with_digits(item: Any, kind: str) -> Iterator[Any]:
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
    digits = "7" * (LIMIT + 1)
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
    dialect: str, kind: str
) -> None:
    items = STREAMS[dialect]
    assert assert_same([_wire(items)], lambda: _pipeline(dialect))[2] == []
    for n in range(len(items)):
        for changed in _with_digits(items[n], kind):
            body = _wire([*items[:n], changed, *items[n + 1 :]])
            _, _, errors, _ = assert_same([body], lambda: _pipeline(dialect))
            if kind == "integer":
                assert errors, n  # json's own words, both ways


def _raw_fields(module: Any) -> list[str]:
    """The fields of a module's msgspec types that msgspec skips unread."""
    found = []
    for name, kind in vars(module).items():
        if isinstance(kind, type) and issubclass(kind, msgspec.Struct):
            info = msgspec.inspect.type_info(kind)
            assert isinstance(info, msgspec.inspect.StructType)
            assert info.forbid_unknown_fields, f"{name} allows fields it does not declare"
            found += [f"{name}.{f.name}" for f in info.fields if "Raw" in repr(f.type)]
    return found


@pytest.mark.parametrize(
    "name",
    ["anthropic", "bedrock", "cohere", "gemini", "ollama", "openai_chat", "openai_responses"],
)
def test_a_typed_module_with_raw_fields_decodes_with_the_checking_decoder(name: str) -> None:
    module = importlib.import_module(f"rxstream._typed.{name}")
    decoders = [
        value
        for value in vars(module).values()
        if (callable(value) and getattr(value, "__self__", None).__class__ is msgspec.json.Decoder)
        or getattr(value, "__qualname__", "") == "decoder.<locals>.read"
    ]
    assert decoders, name
    if _raw_fields(module):
        assert all(d.__qualname__ == "decoder.<locals>.read" for d in decoders), name
