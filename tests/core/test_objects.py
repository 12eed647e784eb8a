"""Typed objects as they stream: snapshots, elements and patches over the incremental reader."""

from __future__ import annotations

import dataclasses
import itertools
import json
import sys
from collections.abc import Sequence
from typing import Any
from unittest import mock

import msgspec
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import TypedDict

from rxstream import JSONStreamError, Output, OutputValidationError
from rxstream.core import objects
from rxstream.core.json_stream import JSONCompleted, JSONStreamParser
from rxstream.core.objects import (
    COPY_BUDGET,
    SNAPSHOT_FREE,
    ElementSplitter,
    JSONPatchEncoder,
    ObjectTextDecoder,
    PartialObjectAccumulator,
    parse_pointer,
)
from rxstream.core.schema import output_spec
from rxstream.core.validation import Invalid, validator
from rxstream.models import (
    Delta,
    Finish,
    JSONPatch,
    Partial,
    Reset,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from tests.support.json_documents import damaged, documents
from tests.support.json_patch import apply


def run(machine: Any, deltas: Sequence[Delta]) -> list[Any]:
    out: list[Any] = []
    for delta in deltas:
        out += machine.feed(delta)
    out += machine.close()
    return out


def texts(*pieces: str) -> list[Delta]:
    return [TextDelta(p) for p in pieces]


class City(pydantic.BaseModel):
    name: str
    population: int | None = None
    tags: list[str] = []


# -- partial_object ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        pytest.param(
            ['{"name": "Pa', 'ris", "population": 21', "0", "0000}"],
            [
                Partial({"name": "Pa"}, growing=("name",)),
                Partial({"name": "Paris"}),
                {"name": "Paris", "population": 2100000},
            ],
            id="a number shows only when whole",
        ),
        pytest.param(
            ['{"tags": ["a", "b', '"], "x": nu', "ll}"],
            [
                Partial({"tags": ["a", "b"]}, growing=("tags", 1)),
                Partial({"tags": ["a", "b"]}),
                {"tags": ["a", "b"], "x": None},
            ],
            id="null only when whole",
        ),
        pytest.param(["  ", "[1, ", "2]  "], [Partial([1]), [1, 2]], id="leading blank text"),
    ],
)
def test_snapshots_then_the_final_value(pieces: list[str], expected: list[Any]) -> None:
    assert run(PartialObjectAccumulator(), [*texts(*pieces), Finish("stop")]) == expected


def test_the_final_object_is_validated_once_and_null_differs_from_missing() -> None:
    calls: list[Any] = []

    class Counted(City):
        @pydantic.model_validator(mode="before")
        @classmethod
        def count(cls, value: Any) -> Any:
            calls.append(value)
            return value

    pieces = ['{"name": "Lyon", ', '"population": null', ', "tags": ["x"]}']
    out = run(PartialObjectAccumulator(Counted), [*texts(*pieces), Finish("stop")])
    assert len(out) > 2
    assert all(isinstance(o, Partial) for o in out[:-1])
    final = out[-1]
    assert isinstance(final, Counted)
    assert final.population is None
    assert "population" in final.model_fields_set  # an explicit null, not a default
    assert len(calls) == 1  # snapshots are never validated
    missing = run(PartialObjectAccumulator(City), texts('{"name": "Nice"}'))[-1]
    assert "population" not in missing.model_fields_set


def test_a_final_object_that_fails_validation_carries_text_and_errors() -> None:
    machine = PartialObjectAccumulator(City)
    with pytest.raises(OutputValidationError) as info:
        run(machine, texts('{"name": 5, ', '"population": "many"}'))
    error = info.value
    assert error.text == '{"name": 5, "population": "many"}'
    assert {e["loc"] for e in error.errors} == {("name",), ("population",)}
    assert "does not validate" in str(error)
    assert "name" in str(error)
    with pytest.raises(RuntimeError):
        machine.feed(TextDelta("x"))


@pytest.mark.parametrize(
    ("deltas", "words"),
    [
        pytest.param([Usage(1, 0, 1), Finish("stop")], "no JSON value", id="no JSON at all"),
        pytest.param(texts("Sure! Here it is"), "expected a value", id="prose"),
        pytest.param(texts('{"a": 1'), "still open", id="cut"),
    ],
)
def test_a_stream_without_a_whole_value_is_an_error(deltas: list[Delta], words: str) -> None:
    with pytest.raises(JSONStreamError, match=words):
        run(PartialObjectAccumulator(), deltas)


def test_tool_call_arguments_and_the_pick_of_a_call() -> None:
    calls: list[Delta] = [
        ToolCallDelta(0, '{"name": "Ro', id="c0", name="city"),
        ToolCallDelta(0, 'me"}'),
        Finish("tool_calls"),
    ]
    assert run(PartialObjectAccumulator(City), calls)[-1] == City(name="Rome")
    two: list[Delta] = [
        TextDelta("Let me look."),
        ToolCallDelta(0, '{"q": 1}', id="a", name="search"),
        ToolCallDelta(1, '{"name": "Oslo"}', id="b", name="city"),
    ]
    assert run(PartialObjectAccumulator(tool="city"), two)[-1] == {"name": "Oslo"}
    assert run(PartialObjectAccumulator(tool=0), two)[-1] == {"q": 1}
    with pytest.raises(ValueError, match="pick one with tool="):
        run(PartialObjectAccumulator(), two[1:])
    with pytest.raises(TypeError, match="tool="):
        PartialObjectAccumulator(tool=1.5)  # type: ignore[arg-type]


CITY_CALL: list[Delta] = [
    TextDelta("\n"),  # whitespace decides nothing
    ToolCallDelta(0, '{"q": 1}', id="a", name="search"),  # another call: passed over
    ToolCallDelta(1, '{"name": ', id="b", name="City"),
    TextDelta("Not the answer: the call started first."),
    ToolCallDelta(1, '"Oslo"}'),
    Finish("tool_calls"),
]
CITY_TEXT: list[Delta] = [
    ToolCallDelta(0, '{"q": 1}', id="a", name="search"),
    *texts('{"name": "Oslo"', "}"),
    ToolCallDelta(1, '{"name": "Rome"}', id="b", name="City"),
    Finish("stop"),
]


@pytest.mark.parametrize("via", ["native", "tool"])
@pytest.mark.parametrize("deltas", [CITY_CALL, CITY_TEXT], ids=["forced call", "text"])
@pytest.mark.parametrize("resolved", [False, True], ids=["Output", "OutputSpec"])
def test_the_requests_output_says_where_the_answer_is(
    via: Any, deltas: list[Delta], resolved: bool
) -> None:
    output: Any = Output(City, via=via)
    if resolved:
        output = output_spec(output)
    assert run(PartialObjectAccumulator(output), deltas)[-1] == City(name="Oslo")
    search = ToolCallDelta(0, '{"q": 1}', id="a", name="search")
    answer = ToolCallDelta(1, "[1, 2]", id="c", name="City")
    array = [search, answer] if deltas is CITY_CALL else [search, *texts("[1, 2]")]
    assert run(ElementSplitter("", output=output), array) == [1, 2]


def test_the_output_names_its_tool_and_is_the_requests() -> None:
    named = Output({"title": "T", "type": "object"}, name="place", via="tool")
    deltas: list[Delta] = [ToolCallDelta(0, '{"a": 1}', id="c", name="place")]
    assert run(PartialObjectAccumulator(named), deltas) == [{"a": 1}]
    with pytest.raises(ValueError, match="give one"):
        PartialObjectAccumulator(named, tool="place")
    with pytest.raises(ValueError, match="give one"):
        ElementSplitter("", output=named, tool=0)
    with pytest.raises(TypeError, match="item="):
        ElementSplitter("", output=City)  # type: ignore[arg-type]


def test_a_reset_starts_again() -> None:
    out = run(PartialObjectAccumulator(), [*texts('{"a": [1, '), Reset(2), *texts('{"b": 2}')])
    assert out == [Partial({"a": [1]}), Reset(2), {"b": 2}]


def test_other_choices_and_what_follows_the_finish_are_not_read() -> None:
    deltas: list[Delta] = [
        TextDelta("[1]"),
        TextDelta("garbage", choice=1),
        Finish("stop"),
        Usage(1, 1, 2),
    ]
    assert run(PartialObjectAccumulator(), deltas) == [[1]]


def test_snapshots_are_paced_to_copy_at_most_a_budget_per_character() -> None:
    text = json.dumps({"items": [{"id": i, "name": f"n{i}"} for i in range(3000)]})
    machine = PartialObjectAccumulator()
    sizes = []
    reader: JSONStreamParser = machine._reader
    read = 0
    for i in range(0, len(text), 16):
        out = machine.feed(TextDelta(text[i : i + 16]))
        read += 16
        if out and isinstance(out[0], Partial):
            sizes.append(reader.snapshot_size())
    final = machine.close()
    assert final == [json.loads(text)]
    assert sum(sizes) <= COPY_BUDGET * len(text) + SNAPSHOT_FREE * len(sizes)
    assert len(sizes) > 500  # still frequent: many elements between two snapshots is wrong


def test_a_small_object_gets_a_snapshot_after_every_change() -> None:
    text = '{"a": [1, 2, 3], "b": "xyz"}'
    out = run(PartialObjectAccumulator(), texts(*text))
    snapshots = out[:-1]
    assert all(a != b for a, b in itertools.pairwise(snapshots))
    assert [s.value for s in snapshots] == [
        {},
        {"a": []},
        {"a": [1]},
        {"a": [1, 2]},
        {"a": [1, 2, 3]},
        {"a": [1, 2, 3], "b": ""},
        {"a": [1, 2, 3], "b": "x"},
        {"a": [1, 2, 3], "b": "xy"},
        {"a": [1, 2, 3], "b": "xyz"},
        {"a": [1, 2, 3], "b": "xyz"},  # the string has closed: growing is None
    ]
    assert out[-1] == {"a": [1, 2, 3], "b": "xyz"}


# The text a snapshot cannot be due for is held and read with the next piece: with every
# snapshot counted as large (SNAPSHOT_FREE 0), even small documents are read that way.


def eager(pieces: list[str]) -> list[Any]:
    """After each piece, what a reader fed every piece at once shows (or the refusal).

    Blank pieces before the first other one are not read (nor are they by the machines).
    """
    reader = JSONStreamParser()
    shown: list[Any] = []
    try:
        for piece in pieces:
            if reader.offset or piece.strip():
                reader.feed(piece)
            shown.append(Partial(reader.snapshot(), reader.growing))
        reader.close()
    except JSONStreamError as exc:
        shown.append(("refused", exc.offset, exc.path, exc.reason.split(", got ")[0]))
    return shown


def paced(pieces: list[str]) -> list[Any]:
    """After each piece, what `PartialObjectAccumulator` gave (its last item, or None)."""
    machine = PartialObjectAccumulator()
    given: list[Any] = []
    try:
        for piece in pieces:
            out = machine.feed(TextDelta(piece))
            assert len(out) <= 1
            given.append(out[-1] if out else None)
        given.append(machine.close()[-1])
    except JSONStreamError as exc:
        given.append(("refused", exc.offset, exc.path, exc.reason.split(", got ")[0]))
    return given


@settings(max_examples=200, deadline=None)
@given(documents(), st.data())
def test_held_text_gives_the_snapshots_a_reader_of_every_piece_gives(
    text: str, data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    with mock.patch.object(objects, "SNAPSHOT_FREE", 0):
        given = paced(pieces)
    shown = eager(pieces)
    for snapshot, expected in zip(given, shown, strict=False):
        assert snapshot is None or snapshot == expected
    assert given[-1] == json.loads(text)


@settings(max_examples=300, deadline=None)
@given(damaged(), st.integers(1, 9))
def test_held_text_is_refused_as_a_reader_of_every_piece_refuses_it(text: str, step: int) -> None:
    pieces = [text[i : i + step] for i in range(0, len(text), step)]
    with mock.patch.object(objects, "SNAPSHOT_FREE", 0):
        given = paced(pieces)
    shown = eager(pieces)
    if isinstance(shown[-1], tuple):  # refused: the same place and reason, maybe later
        assert given[-1] == shown[-1]
        assert len(given) >= len(shown)
    else:
        assert not isinstance(given[-1], tuple)


@settings(max_examples=100, deadline=None)
@given(documents(), st.data())
def test_patches_follow_held_snapshots(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=10)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    with mock.patch.object(objects, "SNAPSHOT_FREE", 0):
        snapshots, patches = PartialObjectAccumulator(), JSONPatchEncoder()
        document: Any = None
        for piece in pieces:
            shown = [s.value for s in snapshots.feed(TextDelta(piece))]
            sent = patches.feed(TextDelta(piece))
            for patch in sent:
                document = apply(document, patch.ops)
            if shown:
                assert document == shown[-1]
            else:  # the moments are the same
                assert not sent or patches._reader.complete


def test_an_error_in_held_text_comes_within_the_budget() -> None:
    items = [{"id": i, "name": f"n{i}"} for i in range(2000)]
    text = json.dumps({"items": items})
    bad = text.index('{"id": 1500')
    text = text[:bad] + '{"id": 01' + text[bad + len('{"id": 1') :]
    machine = PartialObjectAccumulator()
    reader: JSONStreamParser = machine._reader
    fed = [0, 0]  # characters fed, and the size of the last snapshot

    def feed_all() -> None:
        for i in range(0, len(text), 16):
            fed[0] = i + 16
            if machine.feed(TextDelta(text[i : i + 16])):
                fed[1] = reader.snapshot_size()

    with pytest.raises(JSONStreamError) as caught:
        feed_all()
    raised_at, size = fed
    assert caught.value.offset == bad + len('{"id": ')  # at the zero
    assert caught.value.reason == "a number with a leading zero"
    # Held no longer than a snapshot could be: the last one's size over COPY_BUDGET - 1.
    assert raised_at - caught.value.offset <= size // (COPY_BUDGET - 1) + 32
    assert raised_at - caught.value.offset > 16  # it was held: found later than at once


# -- elements ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pointer", "pieces", "expected"),
    [
        pytest.param("", ["[1, 2", ", 3]"], [[1], [2, 3]], id="top-level array"),
        pytest.param(
            "/results",
            ['{"n": 2, "results": [{"t": 1}, {"t"', ": 2}]}"],
            [[{"t": 1}], [{"t": 2}]],
            id="an array in an object",
        ),
        pytest.param(
            "/a~1b/0/~0",
            ['{"a/b": [{"~": ["x", "y"]}]}'],
            [["x", "y"]],
            id="escaped pointer, whole in one piece",
        ),
        pytest.param("/r", ['{"r": []}'], [[]], id="empty"),
        pytest.param("/r", ['{"r": ["a", ', '"b"], "s": [1]}'], [["a"], ["b"]], id="rest ignored"),
    ],
)
def test_each_element_once_it_has_closed(
    pointer: str, pieces: list[str], expected: list[list[Any]]
) -> None:
    splitter = ElementSplitter(pointer)
    got = [splitter.feed(TextDelta(p)) for p in pieces]
    got[-1] += splitter.close()
    assert got == expected


def test_elements_are_validated_one_by_one() -> None:
    splitter = ElementSplitter("/cities", item=City)
    first = splitter.feed(TextDelta('{"cities": [{"name": "Oslo"}, {"name": '))
    assert first == [City(name="Oslo")]
    with pytest.raises(OutputValidationError) as info:
        splitter.feed(TextDelta("3}]}"))
    assert info.value.path == "/cities/1"
    assert info.value.text == '{"name": 3}'


@pytest.mark.parametrize(
    ("pointer", "text", "words"),
    [
        pytest.param("/r", '{"r": {"a": 1}}', "expected an array here, got object", id="object"),
        pytest.param("/r", '{"r": 5}', "expected an array here, got number", id="scalar"),
        pytest.param("/r", '{"s": [1]}', "no value at this JSON Pointer", id="missing"),
        pytest.param(
            "/r/3", '{"r": [1]}', "no value at this JSON Pointer", id="index past the end"
        ),
    ],
)
def test_no_array_at_the_pointer_is_an_error(pointer: str, text: str, words: str) -> None:
    for pieces in ([text], list(text)):
        with pytest.raises(OutputValidationError, match=words):
            run(ElementSplitter(pointer), texts(*pieces))


def test_pointer_syntax() -> None:
    assert parse_pointer("") == ()
    assert parse_pointer("/") == ("",)
    assert parse_pointer("/~01") == ("~1",)
    with pytest.raises(ValueError, match="starts with '/'"):
        parse_pointer("results")


# -- JSON Patch --------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(documents(), st.data())
def test_patches_rebuild_every_snapshot_and_the_final_value(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=10)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    snapshots = PartialObjectAccumulator()
    patches = JSONPatchEncoder()
    document: Any = None
    for piece in pieces:
        shown = [s.value for s in snapshots.feed(TextDelta(piece))]
        sent = patches.feed(TextDelta(piece))
        for patch in sent:
            document = apply(document, patch.ops)
        assert len(sent) >= len(shown)  # a patch more when the value completes
        if shown:
            assert document == shown[-1]
    for patch in patches.close():
        document = apply(document, patch.ops)
    assert document == json.loads(text) == snapshots.close()[-1]


def test_patches_of_a_growing_string_and_whole_values() -> None:
    out = run(JSONPatchEncoder(), texts('{"t": "He', 'llo", "n": [1, {"a": 2}]', "}"))
    assert out == [
        JSONPatch(
            ({"op": "add", "path": "", "value": {}}, {"op": "add", "path": "/t", "value": "He"})
        ),
        JSONPatch(
            (
                {"op": "replace", "path": "/t", "value": "Hello"},
                {"op": "add", "path": "/n", "value": [1, {"a": 2}]},
            )
        ),
    ]


# -- validators --------------------------------------------------------------------------


class Point(msgspec.Struct):
    x: int


@dataclasses.dataclass
class Pair:
    a: int
    b: str


class Movie(TypedDict):
    title: str


@pytest.mark.parametrize(
    ("output", "good", "bad"),
    [
        pytest.param(Point, {"x": 1}, {"x": "1"}, id="msgspec Struct"),
        pytest.param(Pair, {"a": 1, "b": "z"}, {"a": 1}, id="dataclass"),
        pytest.param(Movie, {"title": "Up"}, {"title": 3}, id="TypedDict"),
        pytest.param(
            {
                "type": "object",
                "properties": {"k": {"enum": ["a", "b"]}, "n": {"type": "integer"}},
                "required": ["k"],
                "additionalProperties": False,
            },
            {"k": "a", "n": 2},
            {"k": "c", "n": True, "z": 0},
            id="JSON Schema",
        ),
        pytest.param(
            {
                "type": "array",
                "items": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/n"}]},
                "minItems": 1,
                "$defs": {"n": {"type": "null"}},
            },
            ["x", None],
            [1],
            id="JSON Schema anyOf and $ref",
        ),
    ],
)
def test_validators(output: object, good: Any, bad: Any) -> None:
    validate = validator(output)
    result = validate(good)
    assert result == (
        Pair(**good)
        if output is Pair
        else msgspec.convert(good, Point)
        if output is Point
        else good
    )
    with pytest.raises(Invalid) as info:
        validate(bad)
    assert info.value.errors
    assert all("msg" in e and "loc" in e for e in info.value.errors)


def test_a_type_without_pydantic_or_msgspec_is_refused_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pydantic", None)
    monkeypatch.setitem(sys.modules, "msgspec", None)
    with pytest.raises(TypeError, match="needs pydantic or msgspec"):
        validator(Pair)
    assert validator({"type": "string"})("x") == "x"  # a schema needs neither


def test_msgspec_validates_dataclasses_without_pydantic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic", None)
    assert validator(Pair)({"a": 1, "b": "z"}) == Pair(1, "z")


# -- the object text stream --------------------------------------------------------------


def test_object_text_passes_each_piece_once_the_reader_took_it() -> None:
    decoder = ObjectTextDecoder()
    assert decoder.feed(TextDelta(' {"a": [1')) == [' {"a": [1']
    with pytest.raises(JSONStreamError, match="trailing comma"):
        decoder.feed(TextDelta(",]}"))  # never sent to the client
    assert run(ObjectTextDecoder(tool="f"), [ToolCallDelta(0, "[]", name="f")]) == ["[]"]
    with pytest.raises(JSONStreamError, match="still open"):
        run(ObjectTextDecoder(), texts('{"a": 1'))


def test_elements_keep_only_the_way_to_the_array() -> None:
    splitter = ElementSplitter("/items")
    text = '{"meta": {"a": [1, 2]}, "items": [{"t": [1]}, {"t": 2}, {"t"'
    assert splitter.feed(TextDelta(text[:9])) == []
    assert splitter.feed(TextDelta(text[9:])) == [{"t": [1]}, {"t": 2}]
    # The elements given out are not kept, and the one still open is skimmed: not built.
    assert splitter._reader.snapshot() == {"items": []}
    assert splitter.feed(TextDelta(": 3}]}")) + splitter.close() == [{"t": 3}]


def test_a_parser_keeps_what_it_is_asked_to_keep() -> None:
    parser = JSONStreamParser(keep=lambda path: path[:1] != ("skip",))
    events = parser.feed('{"skip": [1, {"x": 2}], "a": [1, ') + parser.feed("2]}")
    assert parser.value == {"a": [1, 2]}
    assert JSONCompleted(("skip",), [1, {"x": 2}], was_open=False) in events
