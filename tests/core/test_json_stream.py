"""The incremental JSON reader: exact against json.loads, strict, never an incomplete scalar."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rxstream import JSONStreamError
from rxstream.core.json_stream import (
    JSONCompleted,
    JSONEvent,
    JSONGrew,
    JSONOpened,
    JSONStreamParser,
    Path,
    pointer,
)
from tests.support.chunking import chunkings
from tests.support.json_documents import damaged, documents


def strict_loads(text: str) -> Any:
    """json.loads, with NaN and Infinity refused (the reader is strict JSON)."""

    def refuse(name: str) -> Any:
        raise ValueError(name)

    return json.loads(text, parse_constant=refuse)


def read(pieces: list[str]) -> tuple[Any, list[JSONEvent], list[Any]]:
    """The value, the events and the snapshot after each piece."""
    parser = JSONStreamParser()
    events: list[JSONEvent] = []
    snapshots = []
    for piece in pieces:
        events += parser.feed(piece)
        snapshots.append((parser.snapshot(), parser.growing))
    events += parser.close()
    return parser.value, events, snapshots


def rebuilt(events: list[JSONEvent]) -> Any:
    """The value the events describe, applied in order (as a consumer would)."""
    root: dict[str, Any] = {}

    def put(path: Path, value: Any) -> None:
        parent: Any = root
        steps: list[Any] = ["top", *path]
        for step in steps[:-1]:
            parent = parent[step]
        last = steps[-1]
        if isinstance(parent, list) and last == len(parent):
            parent.append(value)
        else:
            parent[last] = value

    growing: dict[Path, list[str]] = {}
    for event in events:
        match event:
            case JSONOpened(path=path, kind=kind):
                put(path, {"object": {}, "array": [], "string": ""}[kind])
                if kind == "string":
                    growing[path] = []
            case JSONGrew(path=path, text=text):
                growing[path].append(text)
                put(path, "".join(growing[path]))
            case JSONCompleted(path=path, value=value):
                if isinstance(value, str) and path in growing:
                    assert "".join(growing.pop(path)) == value
                put(path, value)
    return root["top"]


def prefix_of(snapshot: Any, final: Any, growing: Path | None, here: Path = ()) -> bool:
    """Whether `snapshot` can still become `final`: no scalar in it changes later."""
    if type(snapshot) is not type(final):
        return False
    if isinstance(final, dict):
        return all(
            k in final and prefix_of(v, final[k], growing, (*here, k)) for k, v in snapshot.items()
        )
    if isinstance(final, list):
        return len(snapshot) <= len(final) and all(
            prefix_of(v, final[i], growing, (*here, i)) for i, v in enumerate(snapshot)
        )
    if isinstance(final, str) and here == growing:
        return final.startswith(snapshot)
    if isinstance(final, float) and math.isnan(final):
        return False  # never: NaN is refused
    return bool(snapshot == final)


# -- the edge cases, each a test -------------------------------------------------

EDGE_CASES = [
    # (pieces, snapshot after each piece)
    pytest.param(["[1, 2", "]"], [[1], [1, 2]], id="number at the end of an array"),
    pytest.param(["[12", "3]"], [[], [123]], id="number cut in two"),
    pytest.param(["[1.", "5e", "+3 ", "]"], [[], [], [1500.0], [1500.0]], id="float cut"),
    pytest.param(['{"a": tr', "ue}"], [{}, {"a": True}], id="literal cut"),
    pytest.param(
        ['{"a": null, "b": ', "1}"], [{"a": None}, {"a": None, "b": 1}], id="null vs missing"
    ),
    pytest.param(['{"a": "x\\u00', 'e9y"}'], [{"a": "x"}, {"a": "xéy"}], id="cut inside uXXXX"),
    pytest.param(
        ['["\\ud83d', '\\ude00"]'], [[""], ["😀"]], id="surrogate pair cut between halves"
    ),
    pytest.param(
        ['["\\ud83d\\', 'ude00"]'], [[""], ["😀"]], id="surrogate pair cut at its backslash"
    ),
    pytest.param(['["\\ud83dx', '"]'], [["\ud83dx"], ["\ud83dx"]], id="lone high surrogate"),
    pytest.param(['{"k', 'ey": "v', 'al"}'], [{}, {"key": "v"}, {"key": "val"}], id="key cut"),
    pytest.param(['"ab\\', 'nc"'], ["ab", "ab\nc"], id="escape cut at its backslash"),
    pytest.param(
        ["[[1], {", '"a": [2, 3', "]}]"],
        [[[1], {}], [[1], {"a": [2]}], [[1], {"a": [2, 3]}]],
        id="nested",
    ),
    pytest.param(["-", "0"], [None, None], id="top-level number only at close"),
]


@pytest.mark.parametrize(("pieces", "snapshots"), EDGE_CASES)
def test_edge_cases_show_no_incomplete_scalar(pieces: list[str], snapshots: list[Any]) -> None:
    value, events, got = read(pieces)
    assert [snapshot for snapshot, _ in got] == snapshots
    assert value == strict_loads("".join(pieces))
    assert rebuilt(events) == value


@pytest.mark.parametrize(
    "text",
    [
        '{"a": [1, 2.5e-3, -0, "x\\"y\\\\z\\/"], "b": {"c": null, "d": [true, false]}}',
        '"\\ud83d\\ude00é"',
        "  7 ",
    ],
)
def test_every_chunking_gives_the_same_value_and_rebuilt_events(text: str) -> None:
    for name, pieces in chunkings(text):
        value, events, _ = read(pieces)
        assert value == strict_loads(text), name
        assert rebuilt(events) == value, name


def test_events_of_a_finely_cut_document() -> None:
    # Whole in one fragment, a value may come as one event; cut, piece by piece.
    assert read(["[1]"])[1] == [JSONCompleted((), [1])]
    assert read(["[", "1]"])[1] == [
        JSONOpened((), "array"),
        JSONCompleted((0,), 1),
        JSONCompleted((), [1], was_open=True),
    ]
    events = read(list('{"a": ["x"]}'))[1]
    assert events == [
        JSONOpened((), "object"),
        JSONOpened(("a",), "array"),
        JSONOpened(("a", 0), "string"),
        JSONGrew(("a", 0), "x"),
        JSONCompleted(("a", 0), "x", was_open=True),
        JSONCompleted(("a",), ["x"], was_open=True),
        JSONCompleted((), {"a": ["x"]}, was_open=True),
    ]


BAD = [
    # (pieces, offset of the error, words in it)
    pytest.param(["[1,", "]"], 3, "trailing comma", id="trailing comma in an array"),
    pytest.param(['{"a": 1,', "}"], 8, "trailing comma", id="trailing comma in an object"),
    pytest.param(["[01]"], 1, "leading zero", id="leading zero"),
    pytest.param(["[0", "1]"], 1, "leading zero", id="leading zero cut"),
    pytest.param(["[-]"], 2, "digit after '-'", id="lone minus"),
    pytest.param(["-"], 1, "inside a number", id="lone minus at the end"),
    pytest.param(['"abc\\q', 'rest"'], 4, "invalid escape", id="invalid escape, at the escape"),
    pytest.param(['"ab\\u12', "G4 and more"], 3, "invalid escape", id="bad hex, at the escape"),
    pytest.param(['"a\x01"'], 2, "control character", id="control character"),
    pytest.param(["[NaN]"], 1, "NaN and Infinity", id="NaN"),
    pytest.param(["[-Infinity]"], 2, "-Infinity", id="minus Infinity"),
    pytest.param(["{} x"], 3, "after the complete top value", id="trailing garbage"),
    pytest.param(["[1 2]"], 3, "expected ','", id="missing comma"),
    pytest.param(['{"a" 1}'], 5, "expected ':'", id="missing colon"),
    pytest.param(["[tru", "e1]"], 5, "expected ','", id="literal run on"),
    pytest.param(["[nul]"], 1, "expected 'null'", id="bad literal"),
    pytest.param(['{"a": [1', ", 2"], 11, "still open", id="unfinished"),
    pytest.param(['"ab'], 3, "inside a string", id="unterminated string"),
    pytest.param(["  "], 2, "no JSON value", id="no value"),
    pytest.param([], 0, "no JSON value", id="nothing"),
]


@pytest.mark.parametrize(("pieces", "offset", "words"), BAD)
def test_refusals_say_what_and_where(pieces: list[str], offset: int, words: str) -> None:
    parser = JSONStreamParser()

    def read_all() -> None:
        for piece in pieces:
            parser.feed(piece)
        parser.close()

    with pytest.raises(JSONStreamError) as info:
        read_all()
    assert info.value.offset == offset
    assert words in str(info.value)
    with pytest.raises(ValueError, match=r"\w"):
        strict_loads("".join(pieces))
    with pytest.raises(RuntimeError, match="takes no more input"):
        parser.feed("1")


def test_an_invalid_escape_fails_before_its_closing_quote_arrives() -> None:
    parser = JSONStreamParser()
    parser.feed('{"a": "ok')
    with pytest.raises(JSONStreamError, match="invalid escape") as info:
        parser.feed("\\x")
    assert info.value.path == "/a"


def test_nesting_past_the_limit_is_refused() -> None:
    parser = JSONStreamParser(max_depth=3)
    with pytest.raises(JSONStreamError, match="deeper than 3"):
        parser.feed("[[[[")


def test_misuse_is_a_caller_error() -> None:
    parser = JSONStreamParser()
    with pytest.raises(TypeError, match="str fragments"):
        parser.feed(b"[]")  # type: ignore[arg-type]
    parser = JSONStreamParser()
    parser.feed("[")
    with pytest.raises(RuntimeError, match="not complete"):
        _ = parser.value


def test_pointer_escapes() -> None:
    assert pointer(()) == ""
    assert pointer(("a/b", "m~n", 3)) == "/a~1b/m~0n/3"


def test_a_snapshot_shares_closed_values_and_copies_open_ones() -> None:
    parser = JSONStreamParser()
    parser.feed('{"done": {"x": [1]}, "open": [1, "ab')
    first = parser.snapshot()
    assert parser.snapshot_size() == 2 + 1 + 2  # two keys, one element, two characters
    parser.feed('c"]}')
    assert first == {"done": {"x": [1]}, "open": [1, "ab"]}
    assert parser.value["done"] is first["done"]


# -- properties --------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(documents(), st.data())
def test_random_chunkings_give_json_loads_and_prefix_snapshots(
    text: str, data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    value, events, snapshots = read(pieces)
    expected = strict_loads(text)
    assert value == expected or (value != value and expected != expected)
    assert rebuilt(events) == value
    for snapshot, growing in snapshots:
        if snapshot is not None:
            assert prefix_of(snapshot, expected, growing), (snapshot, growing)


@settings(max_examples=100, deadline=None)
@given(documents())
def test_every_single_cut_and_one_at_a_time_agree(text: str) -> None:
    expected = strict_loads(text)
    for name, pieces in [*chunkings(text)][:60]:
        value, _, snapshots = read(pieces)
        assert value == expected, name
        assert all(s is None or prefix_of(s, expected, g) for s, g in snapshots), name


@settings(max_examples=400, deadline=None)
@given(damaged(), st.integers(1, 7))
def test_refused_iff_json_loads_refuses(text: str, step: int) -> None:
    try:
        expected = strict_loads(text)
    except ValueError:
        expected = JSONStreamError
    parser = JSONStreamParser()
    try:
        for i in range(0, len(text), step):
            parser.feed(text[i : i + step])
        parser.close()
        got: Any = parser.value
    except JSONStreamError:
        got = JSONStreamError
    assert got == expected or (got != got and expected != expected)


# -- skimming (`skim=`: the elements of an array decoded whole, each once) -----------------


def outcome(text: str, pieces: list[str], skim: Any) -> Any:
    """The value and events (or the error's reason, offset and path) of reading `pieces`."""
    parser = JSONStreamParser(skim=skim)
    try:
        events = [e for piece in pieces for e in parser.feed(piece)] + parser.close()
    except JSONStreamError as exc:
        return ("refused", exc.reason, exc.offset, exc.path)
    return ("read", parser.value, events)


def same(a: Any, b: Any) -> bool:
    return a == b or json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)  # NaN-free


@settings(max_examples=300, deadline=None)
@given(documents(), st.data())
def test_skimming_reads_what_json_loads_reads(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    every = outcome(text, pieces, lambda path: True)
    assert every[0] == "read"
    _, value, events = every
    assert same(value, strict_loads(text))
    assert same(rebuilt(events), value)
    # Skimming one array changes what is reported about it, never the completed elements.
    usual = outcome(text, pieces, None)
    elements = [
        e for e in usual[2] if type(e) is JSONCompleted and e.path and type(e.path[-1]) is int
    ]
    if any(len(e.path) == 1 for e in elements):  # a top-level array
        skimmed = outcome(text, pieces, lambda path: path == ())[2]
        got = [e.value for e in skimmed if type(e) is JSONCompleted and len(e.path) == 1]
        assert same(got, [e.value for e in elements if len(e.path) == 1])


@settings(max_examples=400, deadline=None)
@given(damaged(), st.integers(1, 7))
@example("[ ", 1)  # the text ends in whitespace before a skimmed array's first element
def test_skimming_refuses_what_the_usual_reading_refuses_with_its_error(
    text: str, step: int
) -> None:
    pieces = [text[i : i + step] for i in range(0, len(text), step)]
    usual = outcome(text, pieces, None)
    skimmed = outcome(text, pieces, lambda path: True)
    if usual[0] == "refused":
        # The same place and reason; what the reason quotes of the text ("got 'nl'") is what
        # the reader had at hand, which a skimmed element has whole.
        assert skimmed[0] == "refused"
        assert skimmed[2:] == usual[2:]
        assert skimmed[1].split(", got ")[0] == usual[1].split(", got ")[0]
    else:
        assert skimmed[0] == "read"
        assert same(skimmed[1], usual[1])


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (['[{"a": "x\\', '"y"}, "s\\', '\\", [1, [2', "]]]"], [{"a": 'x"y'}, "s\\", [1, [2]]]),
        (["[", "]"], []),
        (['[ 1, {"b": null}, true', ", 2.5]"], [1, {"b": None}, True, 2.5]),
        (['["]{[,", {"', '}": "]"}]'], ["]{[,", {"}": "]"}]),
        (['[{"a": {"b"', ': 1}, "c"', ": 2}, [3", "]]"], [{"a": {"b": 1}, "c": 2}, [3]]),
        (['["ab', 'c\\"d"', ', "e"]'], ['abc"d', "e"]),
    ],
    ids=[
        "escapes cut at a fragment's end",
        "empty",
        "scalars read the usual way",
        "brackets in strings",
        "a closing brace inside, before its own (read whole, then skimmed)",
        "an escaped quote before its own (read whole, then skimmed)",
    ],
)
def test_skimmed_elements(pieces: list[str], expected: Any) -> None:
    result = outcome("".join(pieces), pieces, lambda path: True)
    assert result[0] == "read"
    assert result[1] == expected
    assert [e.value for e in result[2] if len(e.path) == 1] == expected


@pytest.mark.parametrize(
    ("pieces", "reason"),
    [
        (['[{"a": 01', "}]"], "a number with a leading zero"),
        (['[{"a": "\\q"', "}]"], "invalid escape '\\\\q' in a string"),
        (['[{"a": NaN', "}]"], "expected a value, got 'N' (NaN and Infinity are not JSON)"),
        (['[{"a": 1', "]]"], "expected ',' or '}', got ']'"),
        (['[{"a": 1}', ",]"], "a trailing comma before ']'"),
        (['[{"a": [1', "2"], "the text ended after a number in an unfinished document"),
    ],
)
def test_a_skimmed_element_is_refused_as_the_usual_reading_refuses_it(
    pieces: list[str], reason: str
) -> None:
    text = "".join(pieces)
    skimmed = outcome(text, pieces, lambda path: True)
    assert skimmed == outcome(text, pieces, None)
    assert reason in skimmed[1]


def test_skimming_is_linear_in_an_element_cut_into_many_fragments() -> None:
    # One element of 200,000 characters, one character at a time: each character is read a
    # bounded number of times (no re-scan of the element so far per fragment).
    text = '[{"s": "' + "ab" * 100_000 + '"}]'
    parser = JSONStreamParser(skim=lambda path: True)
    for c in text:
        parser.feed(c)
    parser.close()
    assert parser.value == [{"s": "ab" * 100_000}]


# -- without events (`events=False`: what snapshots need; whole runs read at once) ---------


def shows(events: list[JSONEvent]) -> bool:
    """Whether `events` change a snapshot (a container closing in place does not)."""
    return any(
        not (type(e) is JSONCompleted and e.was_open and type(e.value) is not str) for e in events
    )


def per_piece(pieces: list[str], *, events: bool, max_depth: int = 1000) -> list[Any]:
    """After each piece: the snapshot, the growing path, whether it changed; then the value.

    A refusal ends the list with its reason, offset and path.
    """
    parser = JSONStreamParser(events=events, max_depth=max_depth)
    seen: list[Any] = []
    try:
        for piece in pieces:
            changed = (
                shows(parser.feed(piece)) if events else (parser.feed(piece), parser.changed)[1]
            )
            seen.append((parser.snapshot(), parser.growing, changed))
        parser.close()
    except JSONStreamError as exc:
        return [*seen, ("refused", exc.reason, exc.offset, exc.path)]
    return [*seen, ("read", parser.value)]


@settings(max_examples=300, deadline=None)
@given(documents(), st.data())
def test_without_events_the_snapshots_changes_and_value_are_the_same(
    text: str, data: st.DataObject
) -> None:
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(text) - 1)), max_size=12)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    quiet = per_piece(pieces, events=False)
    assert same(quiet, per_piece(pieces, events=True))
    assert same(quiet[-1][1], strict_loads(text))


@settings(max_examples=400, deadline=None)
@given(damaged(), st.integers(1, 40))
def test_without_events_the_same_refusals_at_the_same_piece(text: str, step: int) -> None:
    pieces = [text[i : i + step] for i in range(0, len(text), step)]
    assert same(per_piece(pieces, events=False), per_piece(pieces, events=True))


RUNS = [
    pytest.param(
        '[{"a": 1, "t": ["x", "y"]}, {"a": 2, "t": []}, {"a": 3, "t": ["z"]}]', id="containers"
    ),
    pytest.param('{"a": 1, "b": "x", "c": [1, {"d": null}], "e": true, "f": -2.5e3}', id="members"),
    pytest.param('{"a": {"b": 1}, "c": 2, "d": {"e": {"f": [3]}}}', id="same kind inside"),
    pytest.param('{"a": "}", "b": "]", "c": "\\"}", "d": 1}', id="closers in strings"),
    pytest.param('[1, 2.5, -0, 1e400, "a", true, null, [], {}, 12]', id="scalars"),
    pytest.param('{"a": 1, "a": 2, "b": [1, 1, 1], "a": 3}', id="duplicate keys"),
    pytest.param("[[[[1]], [[2]]], [[[3]]]]", id="deep"),
    pytest.param('[{"a": 01}, {"b": 2}]', id="leading zero in a run"),
    pytest.param('[{"a": "\\q"}, 1]', id="bad escape in a run"),
    pytest.param('{"a": 1, "b": 2,}', id="trailing comma after a run"),
    pytest.param("[1, 2, ]", id="trailing comma in an array run"),
    pytest.param('{"a": [1, 2}, "b": 3}', id="brackets that do not match"),
    pytest.param('{"a": "x\x01y", "b": 2}', id="control character in a run"),
    pytest.param("[NaN, 1]", id="NaN"),
    pytest.param("[1, 2] 3", id="text after the value"),
    pytest.param("[" + "9" * 5000 + ", 1]", id="an integer past the digit limit"),
]


@pytest.mark.parametrize("text", RUNS)
def test_without_events_every_chunking_reads_as_the_usual_reading(text: str) -> None:
    for name, pieces in [
        *chunkings(text),
        ("pairs", [text[i : i + 2] for i in range(0, len(text), 2)]),
    ]:
        assert same(per_piece(pieces, events=False), per_piece(pieces, events=True)), name


def test_without_events_the_depth_limit_holds_for_runs() -> None:
    text = '{"a": [1, [2, [3]]], "b": 1}'
    for name, pieces in chunkings(text):
        quiet = per_piece(pieces, events=False, max_depth=3)
        assert same(quiet, per_piece(pieces, events=True, max_depth=3)), name
        assert quiet[-1][:2] == ("refused", "nested deeper than 3 levels"), name


def test_without_events_feed_reports_nothing_and_a_key_is_no_change() -> None:
    parser = JSONStreamParser(events=False)
    assert parser.feed('{"ke') == []
    assert parser.changed
    assert parser.feed('y"') == []
    assert not parser.changed
    assert parser.feed(": [1, 2, 3") == []
    assert parser.changed
    assert parser.snapshot() == {"key": [1, 2]}
    assert parser.feed("]}") == []
    assert parser.changed
    assert parser.close() == []
    assert parser.value == {"key": [1, 2, 3]}


def test_without_events_a_long_run_cut_into_many_fragments_stays_linear() -> None:
    # 100,000 elements one character at a time, and whole: the runs never re-read the text.
    text = json.dumps([{"i": i, "s": "x" * (i % 7)} for i in range(20_000)])
    for size in (1, len(text)):
        parser = JSONStreamParser(events=False)
        for i in range(0, len(text), size):
            parser.feed(text[i : i + size])
        parser.close()
        assert parser.value == json.loads(text)


def test_a_skimmed_element_past_the_depth_limit_is_refused_as_usual() -> None:
    pieces = ['[{"a"', ": 1}]"]
    errors = []
    for skim in (None, lambda path: True):
        parser = JSONStreamParser(max_depth=1, skim=skim)
        with pytest.raises(JSONStreamError) as caught:
            [parser.feed(piece) for piece in pieces]
        errors.append((caught.value.reason, caught.value.offset, caught.value.path))
    assert errors[0] == errors[1] == ("nested deeper than 1 levels", 1, "/0")


DEEP = [
    ("an array in arrays", "[[[[1]]]]", 2),
    ("an object in an array", '[{"a": {"b": 1}}]', 2),
    ("a run of members", '{"a": [1, [2, [3]]], "b": 1}', 3),
    ("a run of elements", "[[1], [2], [[[3]]], 4]", 3),
    ("elements of containers", '[{"a": 1}, {"b": {"c": [1]}}]', 3),
    ("brackets in a string are not depth", '[["[[[[", "{{{{"]]', 2),
]


@pytest.mark.parametrize(("name", "text", "depth"), DEEP, ids=[row[0] for row in DEEP])
def test_the_depth_limit_holds_for_what_the_scanner_reads_whole(
    name: str, text: str, depth: int
) -> None:
    # Read one character at a time, nothing is scanned whole: that reading is the reference.
    one_by_one = per_piece(list(text), events=True, max_depth=depth)
    for skim in (None, lambda path: True):
        for events in (True, False):
            for label, pieces in chunkings(text):
                parser = JSONStreamParser(events=events, max_depth=depth, skim=skim)
                try:
                    for piece in pieces:
                        parser.feed(piece)
                    parser.close()
                    got: tuple[Any, ...] = ("read", parser.value)
                except JSONStreamError as exc:
                    got = ("refused", exc.reason, exc.offset, exc.path)
                assert got == one_by_one[-1], (label, events, skim)
    if json.loads(text) == [["[[[[", "{{{{"]]:
        assert one_by_one[-1] == ("read", json.loads(text))
    else:
        assert one_by_one[-1][:2] == ("refused", f"nested deeper than {depth} levels")
