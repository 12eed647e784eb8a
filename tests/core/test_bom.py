"""One BOM per stream: the line layer and the SSE layer never both remove one.

Both `lines()` and `sse_frames()` remove a BOM at the start of their input
(the line rule, and the WHATWG event-stream rule), but a stream carries at
most one: when the splitter has removed it, a second BOM starts the first
field name, which is then unknown and ignored (web-platform-tests
eventsource/format-bom-2).
"""

from __future__ import annotations

from typing import Any

import pytest
import reactivex as rx

import rxstream as rs
from rxstream.core import LineSplitter, SSEParser
from rxstream.core.lines import LineAfterBOM
from tests.support.chunking import chunkings

BOM = b"\xef\xbb\xbf"
CASES = [
    pytest.param(BOM + b"data: x\n\n", ["x"], id="one-bom"),
    pytest.param(BOM + BOM + b"data: x\n\ndata: y\n\n", ["y"], id="two-boms"),
    pytest.param(b"data: x\n\n", ["x"], id="no-bom"),
    pytest.param(BOM + b"data: x", ["x"], id="one-bom-unterminated"),
    pytest.param(b"data: x\n\n" + BOM + b"data: y\n\n", ["x"], id="bom-mid-stream"),
]


def frames_from_machines(pieces: list[bytes]) -> list[str]:
    splitter, parser = LineSplitter(), SSEParser()
    lines = [line for piece in pieces for line in splitter.feed(piece)] + splitter.close()
    return [f.data for line in lines for f in parser.feed(line)] + [f.data for f in parser.close()]


def collect(observable: rx.Observable[Any]) -> list[Any]:
    out: list[Any] = []
    observable.subscribe(out.append, out.append)
    return out


@pytest.mark.parametrize(("body", "data"), CASES)
def test_machines_remove_one_bom_per_stream(body: bytes, data: list[str]) -> None:
    for name, pieces in chunkings(body):
        assert frames_from_machines(pieces) == data, name


@pytest.mark.parametrize(("body", "data"), CASES)
def test_operators_remove_one_bom_per_stream(body: bytes, data: list[str]) -> None:
    frames = collect(rx.from_iterable([body]).pipe(rs.lines(), rs.sse_frames()))
    assert [f.data for f in frames] == data


@pytest.mark.parametrize(("body", "data"), CASES)
def test_from_lines_removes_one_bom_per_stream(body: bytes, data: list[str]) -> None:
    frames = collect(rs.from_lines([body]).pipe(rs.sse_frames()))
    assert [f.data for f in frames] == data


def test_lines_alone_remove_one_bom_and_hand_out_plain_equal_strings() -> None:
    splitter = LineSplitter()
    first, second = splitter.feed(BOM + BOM + b"a\nb\n")
    assert first == "\ufeffa"
    assert type(first) is LineAfterBOM
    assert type(second) is str


def test_parser_alone_removes_a_bom_from_plain_lines() -> None:
    parser = SSEParser()
    assert [f.data for f in parser.feed("\ufeffdata: x") + parser.feed("")] == ["x"]
