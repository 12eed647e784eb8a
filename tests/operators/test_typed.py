"""rs.partial_object, rs.elements, rs.json_patches: marbles on the virtual clock."""

from __future__ import annotations

import sys
from typing import Any

import pydantic
import pytest
import reactivex
from reactivex import operators as ops

import rxstream as rs
from rxstream.models import JSONPatch, Partial, TextDelta
from rxstream.testing.marbles import DONE, StreamMarbles, finish, text, tool
from tests.support.operators import error_of


class City(pydantic.BaseModel):
    name: str
    population: int | None = None


V: dict[str, Any] = {
    "a": text('{"name": "Pa'),
    "b": text('ris", "population": 2'),
    "c": text("1}"),
    "f": finish(),
    "D": DONE,
}


def test_partial_object_snapshots_then_the_validated_object() -> None:
    m = StreamMarbles()
    source = m.deltas("-a-b-c-f-D", V)
    got = m.start(source.pipe(rs.partial_object(City)))
    assert got == m.expected(
        "-P-Q---O-|",
        {
            "P": Partial({"name": "Pa"}, growing=("name",)),
            "Q": Partial({"name": "Paris"}),
            "O": City(name="Paris", population=21),
        },
    )
    assert source.subscriptions == [m.subscription("^--------!")]


def test_partial_object_from_chunks_and_tool_arguments() -> None:
    m = StreamMarbles()
    calls = {
        "a": tool(0, '{"name": ', id="c1", name="city"),
        "b": tool(0, '"Oslo"}'),
        "f": finish("tool_calls"),
        "D": DONE,
    }
    got = m.start(m.chunks("-a-b-f-D", calls).pipe(rs.partial_object(City, tool="city")))
    # The object closes in b: no snapshot of it, the validated object comes at the finish.
    assert got == m.expected("-P---O-|", {"P": Partial({}), "O": City(name="Oslo")})


def test_a_final_object_that_does_not_validate_errors_and_disposes() -> None:
    m = StreamMarbles()
    values = {
        "a": text('{"population": '),
        "b": text('"x"}'),
        "f": finish(),
        "g": text("never read"),
    }
    source = m.hot("-a-b-f-g-|", values)
    got = m.start(source.pipe(rs.partial_object(City)))
    assert got[:-1] == m.expected("-P", {"P": Partial({})})
    assert got[-1].time == 205
    error = error_of(got[-1])
    assert isinstance(error, rs.OutputValidationError)
    assert error.text == '{"population": "x"}'
    assert {e["loc"] for e in error.errors} == {("name",), ("population",)}
    assert source.subscriptions == [m.subscription("^----!")]


def test_a_stream_with_no_json_errors_at_its_end() -> None:
    m = StreamMarbles()
    got = m.start(m.deltas("-f-D", V).pipe(rs.partial_object()))
    assert isinstance(error_of(got[-1]), rs.JSONStreamError)
    assert "no JSON value" in str(error_of(got[-1]))


def test_elements_each_once_closed_and_validated() -> None:
    m = StreamMarbles()
    values = {
        "a": text('{"cities": [{"name": "Oslo"}, {"na'),
        "b": text('me": "Rome", "population": 3}, {"name": "Lima"}]'),
        "c": text("}"),
        "D": DONE,
    }
    got = m.start(m.deltas("-a-b-c-D", values).pipe(rs.elements("/cities", item=City)))
    oslo, rome, lima = City(name="Oslo"), City(name="Rome", population=3), City(name="Lima")
    assert [(r.time, r.value.kind, getattr(r.value, "value", None)) for r in got] == [
        (201, "N", oslo),
        (203, "N", rome),  # Rome and Lima both close in b
        (203, "N", lima),
        (207, "C", None),
    ]


def test_an_element_that_does_not_validate_names_its_path() -> None:
    m = StreamMarbles()
    # (An error in a fragment wins over the elements that closed before it in the same fragment.)
    values = {"a": text('[{"name": "Oslo"}, '), "b": text('{"name": 3}'), "D": DONE}
    got = m.start(m.deltas("-a-b-D", values).pipe(rs.elements(item=City)))
    assert got[0].value.value == City(name="Oslo")
    error = error_of(got[1])
    assert isinstance(error, rs.OutputValidationError)
    assert error.path == "/1"


def test_json_patches_and_their_way_through_the_rxstream_format() -> None:
    m = StreamMarbles()
    values = {"a": text('{"t": "Hel'), "b": text('lo", "n": [1, 2]}'), "D": DONE}
    got = m.start(m.deltas("-a-b-D", values).pipe(rs.json_patches()))
    first = JSONPatch(
        ({"op": "add", "path": "", "value": {}}, {"op": "add", "path": "/t", "value": "Hel"})
    )
    second = JSONPatch(
        (
            {"op": "replace", "path": "/t", "value": "Hello"},
            {"op": "add", "path": "/n", "value": [1, 2]},
        )
    )
    assert got == m.expected("-P-Q-|", {"P": first, "Q": second})
    # Written by to_sse in rxstream's own format, read back by rs.decode.
    wire: list[bytes] = []
    reactivex.of(TextDelta('{"t": "Hel'), TextDelta('lo", "n": [1, 2]}')).pipe(
        rs.json_patches(), rs.to_sse(dialect="rxstream", keepalive=None)
    ).subscribe(wire.append)
    back: list[Any] = []
    reactivex.of(b"".join(wire)).pipe(rs.lines(), rs.sse_frames(), rs.decode("rxstream")).subscribe(
        back.append
    )
    assert back == [first, second]


def test_partial_snapshots_go_through_the_rxstream_format_too() -> None:
    wire: list[bytes] = []
    reactivex.of(TextDelta('{"a": [1, "x'), TextDelta('y"]}')).pipe(
        rs.partial_object(),
        ops.filter(lambda x: isinstance(x, Partial)),
        rs.to_sse(dialect="rxstream", keepalive=None),
    ).subscribe(wire.append)
    back: list[Any] = []
    reactivex.of(b"".join(wire)).pipe(rs.lines(), rs.sse_frames(), rs.decode("rxstream")).subscribe(
        back.append
    )
    assert back == [Partial({"a": [1, "x"]}, growing=("a", 1))]


def test_bad_arguments_fail_when_the_pipe_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="JSON Pointer"):
        rs.elements("results")
    monkeypatch.setitem(sys.modules, "pydantic", None)
    monkeypatch.setitem(sys.modules, "msgspec", None)
    with pytest.raises(TypeError, match="needs pydantic or msgspec"):
        rs.partial_object(City)


def test_object_text_gives_the_checked_pieces_and_stops_at_bad_json() -> None:
    m = StreamMarbles()
    values = {"a": text('{"t": "Hel'), "b": text('lo"}'), "x": text('", }'), "D": DONE}
    got = m.start(m.deltas("-a-b-D", values).pipe(rs.object_text()))
    assert got == m.expected("-x-y-|", {"x": '{"t": "Hel', "y": 'lo"}'})
    m = StreamMarbles()
    source = m.hot("-a-x-b-|", values)
    bad = m.start(source.pipe(rs.object_text()))
    assert bad[0].value.value == '{"t": "Hel'
    assert isinstance(error_of(bad[1]), rs.JSONStreamError)
    assert source.subscriptions == [m.subscription("^--!")]


# The request's output= read the forced way: its call (named after the output), another call
# passing unread; or the text, whichever starts first.
CALLED: dict[str, Any] = {
    "o": tool(0, '{"x": 1}', id="c0", name="lookup"),
    "a": tool(1, '{"name": "Pa', id="c1", name="City"),
    "b": tool(1, 'ris"}'),
    "t": text('{"name": "Pa'),
    "u": text('ris"}'),
    "f": finish("tool_calls"),
    "D": DONE,
}


def test_json_patches_read_the_call_the_output_names() -> None:
    m = StreamMarbles()
    source = m.deltas("-o-a-b-f-D", CALLED)
    got = m.start(source.pipe(rs.json_patches(output=rs.Output(City, via="tool"))))
    first = JSONPatch(
        ({"op": "add", "path": "", "value": {}}, {"op": "add", "path": "/name", "value": "Pa"})
    )
    second = JSONPatch(({"op": "replace", "path": "/name", "value": "Paris"},))
    assert got == m.expected("---P-Q---|", {"P": first, "Q": second})
    assert source.subscriptions == [m.subscription("^--------!")]


def test_json_patches_with_output_read_the_text_when_it_starts_first() -> None:
    m = StreamMarbles()
    got = m.start(m.deltas("-t-u-D", CALLED).pipe(rs.json_patches(output=rs.Output(City))))
    first = JSONPatch(
        ({"op": "add", "path": "", "value": {}}, {"op": "add", "path": "/name", "value": "Pa"})
    )
    second = JSONPatch(({"op": "replace", "path": "/name", "value": "Paris"},))
    assert got == m.expected("-P-Q-|", {"P": first, "Q": second})


def test_object_text_reads_the_call_the_output_names_or_the_text() -> None:
    output = rs.Output(City, via="tool")
    m = StreamMarbles()
    source = m.deltas("-o-a-b-f-D", CALLED)
    got = m.start(source.pipe(rs.object_text(output=output)))
    assert got == m.expected("---x-y---|", {"x": '{"name": "Pa', "y": 'ris"}'})
    assert source.subscriptions == [m.subscription("^--------!")]
    m = StreamMarbles()
    got = m.start(m.deltas("-t-u-D", CALLED).pipe(rs.object_text(output=output)))
    assert got == m.expected("-x-y-|", {"x": '{"name": "Pa', "y": 'ris"}'})
    # Without output=, the first call decides: the other call is read, then the second fails.
    m = StreamMarbles()
    plain = m.start(m.deltas("-o-a-b-f-D", CALLED).pipe(rs.object_text()))
    assert plain[0].value.value == '{"x": 1}'
    assert isinstance(error_of(plain[1]), ValueError)


@pytest.mark.parametrize("operator", [rs.json_patches, rs.object_text])
def test_output_takes_the_requests_output_alone(operator: Any) -> None:
    with pytest.raises(ValueError, match="give one"):
        operator(output=rs.Output(City), tool="City")
    with pytest.raises(TypeError, match="the request's output"):
        operator(output=City)
