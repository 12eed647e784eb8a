"""ToolCallAccumulator: fragments -> complete tool calls, every fragmenting the issue lists."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.core import tools as tools_module
from rxstream.core.json_stream import JSONStreamParser
from rxstream.core.tokens import TokenCounter
from rxstream.core.tools import (
    SNAPSHOT_EVERY_FRAGMENT_BELOW,
    SNAPSHOT_GROWTH,
    ToolCallAccumulator,
    ToolCallMatcher,
    generated_call_id,
    parse_partial_json,
)
from rxstream.errors import ToolArgumentsError
from rxstream.models import ChatChunk, Delta, Finish, Reset, TextDelta, ToolCall, ToolCallDelta
from rxstream.operators._chunk_input import chunks_or_deltas
from tests.support.chunking import outputs_for_all_chunkings


def with_chunks(partial: bool = False) -> Any:
    """The machines `rs.accumulate_tool_calls()` runs: chunks go through a delta decoder first."""
    return chunks_or_deltas(
        lambda: ToolCallAccumulator(partial=partial), "rs.accumulate_tool_calls()"
    )()


def run(items: list[Any], *, partial: bool = False) -> list[ToolCall]:
    acc = with_chunks(partial)
    out: list[ToolCall] = []
    for item in items:
        out.extend(acc.feed(item))
    out.extend(acc.close())
    return out


def tc(
    index: int | None,
    arguments: str = "",
    id: str | None = None,
    name: str | None = None,
    choice: int = 0,
) -> ToolCallDelta:
    return ToolCallDelta(index, arguments, id=id, name=name, choice=choice)


def call(index: int, id: str | None, name: str | None, arguments: str, choice: int = 0) -> ToolCall:
    return ToolCall(index, id, name, arguments, choice=choice)


def tool_chunk(*calls: dict[str, Any], finish: str | None = None) -> ChatChunk:
    return ChatChunk(
        {"choices": [{"index": 0, "delta": {"tool_calls": list(calls)}, "finish_reason": finish}]}
    )


CASES: list[tuple[str, list[Any], list[ToolCall]]] = [
    (
        "openai fragmenting",
        [tc(0, "", "c1", "f"), tc(0, '{"a"'), tc(0, ": 1}"), Finish("tool_calls")],
        [call(0, "c1", "f", '{"a": 1}')],
    ),
    (
        "interleaved parallel calls",
        [
            tc(0, "", "c1", "f"),
            tc(1, "", "c2", "g"),
            tc(0, "[1"),
            tc(1, "[2"),
            tc(1, "]"),
            tc(0, "]"),
            Finish("tool_calls"),
        ],
        [call(0, "c1", "f", "[1]"), call(1, "c2", "g", "[2]")],
    ),
    (
        "id, type and name repeated on every fragment are never doubled",
        [
            tool_chunk(
                {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a":'},
                }
            ),
            tool_chunk(
                {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": "1}"},
                }
            ),
        ],
        [call(0, "c1", "f", '{"a":1}')],
    ),
    ("whole call in one fragment", [tc(0, '{"x":1}', "c1", "f")], [call(0, "c1", "f", '{"x":1}')]),
    (
        "index missing: matched by id, new id makes a new call",
        [tc(None, "{", "a", "f"), tc(None, "{", "b", "g"), tc(None, "}", "a"), tc(None, "}", "b")],
        [call(0, "a", "f", "{}"), call(1, "b", "g", "{}")],
    ),
    (
        "index missing and no id: the latest call continues",
        [tc(None, '{"q":', "a", "f"), tc(None, '"x"'), tc(None, "}")],
        [call(0, "a", "f", '{"q":"x"}')],
    ),
    (
        "index missing or null via chunks (mistral, odd servers)",
        [
            tool_chunk({"id": "m1", "function": {"name": "f", "arguments": "{}"}}),
            tool_chunk({"index": None, "id": "m2", "function": {"name": "g", "arguments": "{"}}),
            tool_chunk({"index": None, "function": {"arguments": "}"}}, finish="tool_calls"),
        ],
        [call(0, "m1", "f", "{}"), call(1, "m2", "g", "{}")],
    ),
    (
        "two different ids under one index in one chunk: two calls",
        [
            tool_chunk(
                {"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"n":1}'}},
                {"index": 0, "id": "b", "function": {"name": "g", "arguments": '{"n":2}'}},
                finish="tool_calls",
            )
        ],
        [call(0, "a", "f", '{"n":1}'), call(1, "b", "g", '{"n":2}')],
    ),
    (
        "a second id under an index: later id-less fragments continue the latest",
        [tc(0, "{", "a", "f"), tc(0, "}"), tc(0, "{", "b", "g"), tc(0, "}")],
        [call(0, "a", "f", "{}"), call(1, "b", "g", "{}")],
    ),
    (
        "name after id",
        [tc(0, "", "c1"), tc(0, "", name="f"), tc(0, "{}")],
        [call(0, "c1", "f", "{}")],
    ),
    (
        "qwen follow-ups with id empty keep the first id",
        [
            tool_chunk(
                {
                    "index": 0,
                    "id": "call_q",
                    "type": "function",
                    "function": {"name": "f", "arguments": '{"a"'},
                }
            ),
            tool_chunk(
                {"index": 0, "id": "", "type": "function", "function": {"arguments": ":2}"}}
            ),
            tool_chunk({"index": 0, "id": "", "type": "function", "function": {"arguments": ""}}),
        ],
        [call(0, "call_q", "f", '{"a":2}')],
    ),
    (
        "arguments sent as a JSON object",
        [
            tool_chunk(
                {
                    "index": 0,
                    "id": "o",
                    "function": {"name": "f", "arguments": {"city": "Paris", "n": [1]}},
                }
            )
        ],
        [call(0, "o", "f", '{"city":"Paris","n":[1]}')],
    ),
    ("no arguments at all", [tc(0, "", "c1", "f"), Finish("tool_calls")], [call(0, "c1", "f", "")]),
    (
        "indexes starting at 1 are kept",
        [tc(1, "{}", "a", "f"), tc(2, "{}", "b", "g")],
        [call(1, "a", "f", "{}"), call(2, "b", "g", "{}")],
    ),
    (
        "emitted in index order",
        [tc(1, "{}", "b", "g"), tc(0, "{}", "a", "f"), Finish("tool_calls")],
        [call(0, "a", "f", "{}"), call(1, "b", "g", "{}")],
    ),
    (
        "choices kept apart",
        [
            tc(0, "{", "a", "f", choice=0),
            tc(0, "{", "b", "g", choice=1),
            tc(0, "}", choice=1),
            tc(0, "}", choice=0),
        ],
        [call(0, "a", "f", "{}"), call(0, "b", "g", "{}", choice=1)],
    ),
    (
        "legacy function_call",
        [
            ChatChunk(
                {
                    "choices": [
                        {"index": 0, "delta": {"function_call": {"name": "f", "arguments": '{"a'}}}
                    ]
                }
            ),
            ChatChunk(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"function_call": {"arguments": '":1}'}},
                            "finish_reason": "function_call",
                        }
                    ]
                }
            ),
        ],
        # The legacy shape has no id: the call gets the one rxstream makes.
        [call(0, generated_call_id(0, "f", '{"a":1}'), "f", '{"a":1}')],
    ),
    ("other deltas ignored", [TextDelta("hi"), Finish("stop")], []),
]


@pytest.mark.parametrize(("items", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_accumulate(items: list[Any], expected: list[ToolCall]) -> None:
    assert run(items) == expected


def test_calls_come_out_when_their_choice_finishes() -> None:
    acc = ToolCallAccumulator()
    assert acc.feed(tc(0, "{}", "a", "f")) == []
    assert acc.feed(tc(0, "{}", "b", "g", choice=1)) == []
    assert acc.feed(Finish("tool_calls", choice=1)) == [call(0, "b", "g", "{}", choice=1)]
    assert acc.feed(Finish("tool_calls")) == [call(0, "a", "f", "{}")]
    assert acc.close() == []


def test_unfinished_choices_come_out_at_close_in_choice_order() -> None:
    acc = ToolCallAccumulator()
    acc.feed(tc(0, "{}", "b", "g", choice=1))
    acc.feed(tc(0, "{}", "a", "f", choice=0))
    assert acc.close() == [call(0, "a", "f", "{}"), call(0, "b", "g", "{}", choice=1)]


@pytest.mark.parametrize(
    ("arguments", "finish", "complete"),
    [
        pytest.param('{"city": "Paris", ', Finish("cancelled"), False, id="cut-by-a-stop"),
        pytest.param("", Finish("cancelled"), False, id="stopped-before-any-argument"),
        pytest.param('{"city": "Paris"}', Finish("cancelled"), True, id="whole-before-the-stop"),
        pytest.param("12", Finish("cancelled"), False, id="a-prefix-that-parses-is-no-object"),
        pytest.param('{"city": "Pa', Finish("stop"), True, id="the-providers-end-is-not-a-stop"),
        pytest.param(
            '{"city": "Pa', Finish("cancelled", raw="cancelled"), True, id="a-providers-own-word"
        ),
    ],
)
def test_a_call_cut_by_a_stop_is_not_complete(
    arguments: str, finish: Finish, complete: bool
) -> None:
    acc = ToolCallAccumulator()
    acc.feed(tc(0, arguments, "c1", "weather"))
    [got] = acc.feed(finish)
    assert (got.arguments, got.complete) == (arguments, complete)
    assert got.partial is None
    assert acc.close() == []


def test_a_call_cut_by_a_stop_carries_its_partial_parse_with_partial_on() -> None:
    acc = ToolCallAccumulator(partial=True)
    acc.feed(tc(0, '{"city": "Paris", "unit', "c1", "weather"))
    [got] = acc.feed(Finish("cancelled"))
    assert not got.complete
    assert got.partial == {"city": "Paris"}


def test_mistral_call_in_the_finish_chunk_comes_out_at_that_chunk() -> None:
    acc = with_chunks()
    out = acc.feed(
        tool_chunk(
            {"id": "gSIMJiOkT", "function": {"name": "weather", "arguments": '{"location": "SF"}'}},
            finish="tool_calls",
        )
    )
    assert out == [call(0, "gSIMJiOkT", "weather", '{"location": "SF"}')]
    assert out[0].parse_arguments() == {"location": "SF"}


def test_partial_snapshots_carry_the_best_effort_parse() -> None:
    out = run(
        [
            tc(0, "", "c1", "f"),
            tc(0, '{"city": "Par'),
            tc(0, 'is", "n": [1'),
            tc(0, "]}"),
            Finish("tool_calls"),
        ],
        partial=True,
    )
    snapshots = [c for c in out if not c.complete]
    assert [(s.arguments, s.partial) for s in snapshots] == [
        ("", None),
        ('{"city": "Par', {"city": "Par"}),
        # A number at the end of an array is not complete before what follows it.
        ('{"city": "Paris", "n": [1', {"city": "Paris", "n": []}),
        ('{"city": "Paris", "n": [1]}', {"city": "Paris", "n": [1]}),
    ]
    assert all((s.id, s.name, s.index) == ("c1", "f", 0) for s in snapshots)
    assert out[-1] == call(0, "c1", "f", '{"city": "Paris", "n": [1]}')
    assert out[-1].complete


def test_partial_off_gives_no_snapshots() -> None:
    assert all(c.complete for c in run([tc(0, "{", "c1", "f"), tc(0, "}")]))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", None),
        ("   ", None),
        ('{"a": 1', {"a": 1}),
        ('{"a": "x', {"a": "x"}),
        ('{"a": [1, 2', {"a": [1, 2]}),
        ('{"a": {"b": "c\\"d', {"a": {"b": 'c"d'}}),
        ('{"a": 1, "b', {"a": 1}),
        ('{"a": 1, "b": ', {"a": 1}),
        ('{"a": tr', {}),
        ("{", {}),
        ('{"a": 1}', {"a": 1}),
    ],
    ids=[
        "empty",
        "blank",
        "number",
        "open string",
        "open list",
        "escaped quote",
        "open key",
        "no value",
        "partial literal",
        "brace",
        "complete",
    ],
)
def test_parse_partial_json(text: str, expected: Any) -> None:
    assert parse_partial_json(text) == expected


def test_parse_partial_json_of_garbage_is_none() -> None:
    assert parse_partial_json("}{not json") is None


def test_parse_arguments_error_names_the_call_and_quotes_an_excerpt() -> None:
    [bad] = run([tc(0, '{"a": ' + "x" * 500, "call_9", "lookup")])
    with pytest.raises(ToolArgumentsError) as info:
        bad.parse_arguments()
    error = info.value
    assert (error.name, error.id) == ("lookup", "call_9")
    assert "lookup" in str(error)
    assert "call_9" in str(error)
    assert "(506 chars)" in str(error)
    assert len(str(error)) < 400


def test_parse_arguments_of_no_arguments_is_an_empty_object() -> None:
    [empty] = run([tc(0, "", "c", "f")])
    assert empty.parse_arguments() == {}


def test_refuses_after_close_and_bad_items() -> None:
    acc = ToolCallAccumulator()
    acc.close()
    with pytest.raises(RuntimeError, match="is closed; it takes no more input"):
        acc.feed(Finish("stop"))
    acc = ToolCallAccumulator()
    with pytest.raises(TypeError, match=r"rs\.accumulate_tool_calls\(\) takes .* add rs"):
        acc.feed("not a delta")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        acc.feed(Finish("stop"))


class _ArgumentsMachine:
    """Adapter for `outputs_for_all_chunkings`: each str piece is one arguments fragment."""

    def __init__(self) -> None:
        self.acc = ToolCallAccumulator()
        self.acc.feed(tc(0, "", "c1", "f"))

    def feed(self, piece: str) -> list[ToolCall | Reset]:
        return self.acc.feed(tc(0, piece))

    def close(self) -> list[ToolCall]:
        return self.acc.close()


def test_any_split_of_the_arguments_gives_the_same_call() -> None:
    text = '{"city": "Zürich", "days": [1, 2], "q": "a\\"b"}'
    assert outputs_for_all_chunkings(_ArgumentsMachine, text) == [call(0, "c1", "f", text)]


@st.composite
def fragmented_calls(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[Delta]]:
    """1-5 parallel calls, each cut at random places, the fragments randomly interleaved."""
    n = draw(st.integers(1, 5))
    specs = []
    queues: list[list[Delta]] = []
    for i in range(n):
        args = json.dumps(
            draw(
                st.dictionaries(
                    st.text(max_size=5), st.integers() | st.text(max_size=8), max_size=3
                )
            )
        )
        cuts = sorted(draw(st.sets(st.integers(1, max(1, len(args) - 1)), max_size=6)))
        pieces = [args[a:b] for a, b in zip([0, *cuts], [*cuts, len(args)], strict=True)]
        repeat = draw(st.booleans())
        first: Delta = tc(i, pieces[0], f"id{i}", f"fn{i}")
        rest: list[Delta] = [
            tc(i, p, f"id{i}" if repeat else None, f"fn{i}" if repeat else None) for p in pieces[1:]
        ]
        queues.append([first, *rest])
        specs.append({"index": i, "id": f"id{i}", "name": f"fn{i}", "arguments": args})
    order: list[Delta] = []
    while any(queues):
        live = [q for q in queues if q]
        order.append(draw(st.sampled_from(live)).pop(0))
    return specs, order


@settings(max_examples=200, deadline=None)
@given(fragmented_calls())
def test_random_fragmenting_reassembles_every_call(
    case: tuple[list[dict[str, Any]], list[Delta]],
) -> None:
    specs, deltas = case
    got = run([*deltas, Finish("tool_calls")])
    assert [(c.index, c.id, c.name, c.arguments) for c in got] == [
        (s["index"], s["id"], s["name"], s["arguments"]) for s in specs
    ]
    assert all(
        c.parse_arguments() == json.loads(s["arguments"]) for c, s in zip(got, specs, strict=True)
    )


def test_a_call_begun_without_an_index_goes_on_under_index_0() -> None:
    def fragment(delta: dict[str, Any], finish: str | None = None) -> ChatChunk:
        return ChatChunk({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    first = {"index": None, "id": "a", "function": {"name": "f", "arguments": '{"x":'}}
    chunks = [
        fragment({"tool_calls": [first]}),
        fragment({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
        fragment({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g"}}]}),
        fragment({}, "tool_calls"),
    ]
    accumulator = with_chunks()
    calls = [c for chunk in chunks for c in accumulator.feed(chunk)] + accumulator.close()
    assert calls == [ToolCall(0, "a", "f", '{"x":1}'), ToolCall(1, "b", "g", "")]
    counter = chunks_or_deltas(lambda: TokenCounter(list), "rs.count_tokens()")()
    counts = [n for chunk in chunks for n in counter.feed(chunk)] + counter.close()
    assert counts[-1].tool_arguments == len('{"x":1}')


# -- partial=True needs jiter ----------------------------------------------------------


@pytest.fixture
def without_jiter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jiter", None)  # import jiter now fails
    monkeypatch.setattr(tools_module, "_jiter_from_json", None)


@pytest.mark.usefixtures("without_jiter")
def test_without_jiter_parse_partial_json_names_the_extra() -> None:
    with pytest.raises(ImportError, match=r'needs jiter: pip install "rxstream\[partial\]"'):
        parse_partial_json('{"a": 1')


@pytest.mark.usefixtures("without_jiter")
def test_without_jiter_partial_snapshots_still_work() -> None:
    out = run([tc(0, '{"a": [1, "b', "c1", "f"), tc(0, '"]}')], partial=True)
    assert [c.partial for c in out if not c.complete] == [{"a": [1, "b"]}, {"a": [1, "b"]}]


def test_arguments_that_are_not_json_give_no_partial_and_no_error() -> None:
    out = run([tc(0, '{"a": 1', "c1", "f"), tc(0, ",,}"), Finish("tool_calls")], partial=True)
    assert [c.partial for c in out if not c.complete] == [{}, None]
    assert out[-1] == call(0, "c1", "f", '{"a": 1,,}')


@pytest.mark.usefixtures("without_jiter")
def test_without_jiter_complete_calls_still_work() -> None:
    assert run([tc(0, "{}", "c1", "f")]) == [call(0, "c1", "f", "{}")]


def test_deeply_nested_partial_json_is_no_parse_not_a_crash() -> None:
    assert parse_partial_json("[" * 100_000) is None


# -- linear: snapshots at a growing stride ---------------------------------------------


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of the arguments text read at every snapshot the accumulator takes."""
    lengths: list[int] = []
    snapshot = JSONStreamParser.snapshot

    def counting(self: JSONStreamParser) -> Any:
        lengths.append(self.offset)
        return snapshot(self)

    monkeypatch.setattr(JSONStreamParser, "snapshot", counting)
    return lengths


def streamed_arguments(size: int, step: int) -> tuple[str, list[ToolCallDelta]]:
    text = json.dumps({"data": "x" * size})[:size]
    pieces = [text[i : i + step] for i in range(0, len(text), step)]
    return text, [tc(0, pieces[0], "c1", "f"), *(tc(0, p) for p in pieces[1:])]


def test_small_arguments_give_a_snapshot_per_fragment(parsed: list[int]) -> None:
    text, deltas = streamed_arguments(SNAPSHOT_EVERY_FRAGMENT_BELOW - 1, 7)
    snapshots = [c for c in run(deltas, partial=True) if not c.complete]
    assert len(snapshots) == len(deltas)
    assert [len(s.arguments) for s in snapshots] == parsed
    assert snapshots[-1].arguments == text


def test_large_arguments_give_snapshots_as_they_grow_by_a_fraction(parsed: list[int]) -> None:
    text, deltas = streamed_arguments(100_000, 5)
    out = run([*deltas, Finish("tool_calls")], partial=True)
    lengths = [len(c.arguments) for c in out if not c.complete]
    assert lengths == parsed
    below = [n for n in lengths if n < SNAPSHOT_EVERY_FRAGMENT_BELOW]
    assert below == list(range(5, SNAPSHOT_EVERY_FRAGMENT_BELOW, 5))  # one per fragment
    above = lengths[len(below) :]
    for before, after in itertools.pairwise([below[-1], *above]):
        assert after - before >= before * SNAPSHOT_GROWTH  # a fixed fraction at least
        assert after - before < before * SNAPSHOT_GROWTH + 5  # and at the first fragment past it
    assert len(above) < 40
    assert out[-1] == call(0, "c1", "f", text)  # the complete call at the finish


@pytest.mark.parametrize("step", [1, 4, 64])
def test_the_characters_parsed_grow_linearly_with_the_arguments(
    parsed: list[int], step: int
) -> None:
    totals = []
    for size in (50_000, 100_000, 200_000):
        parsed.clear()
        _, deltas = streamed_arguments(size, step)
        run(deltas, partial=True)
        totals.append(sum(parsed))
    # Past the first SNAPSHOT_EVERY_FRAGMENT_BELOW characters, at most (1 + 1/growth) times
    # the arguments: linear, where a parse per fragment is quadratic.
    # (At 200,000 characters in fragments of 64, one parse per fragment would be
    # 312 million characters; the bound below is under 2 million.)
    small = SNAPSHOT_EVERY_FRAGMENT_BELOW**2 // step
    for size, total in zip((50_000, 100_000, 200_000), totals, strict=True):
        assert total <= small + (1 + 1 / SNAPSHOT_GROWTH) * size


def test_a_new_id_or_name_always_gives_a_snapshot(parsed: list[int]) -> None:
    _, deltas = streamed_arguments(20_000, 100)
    deltas[0] = tc(0, deltas[0].arguments)  # no id, no name yet
    deltas.insert(150, tc(0, "", name="late_name"))
    deltas.insert(170, tc(0, "", id="late_id"))
    snapshots = [c for c in run(deltas, partial=True) if not c.complete]
    named = [s for s in snapshots if s.name == "late_name"]
    assert named[0].arguments == "".join(d.arguments for d in deltas[:150])
    assert named[0].id is None
    identified = [s for s in snapshots if s.id == "late_id"]
    assert identified[0].arguments == "".join(d.arguments for d in deltas[:170])


# -- linear: many calls without an index -----------------------------------------------


class CountingSet(set[int]):
    """A set that counts how often it is walked through."""

    walks = 0

    def __iter__(self) -> Iterator[int]:
        CountingSet.walks += 1
        return super().__iter__()


@pytest.mark.parametrize(
    ("make", "indexes"),
    [
        pytest.param(lambda i: tc(None, "{}", f"id{i}", "f"), range(3000), id="no index"),
        pytest.param(lambda i: tc(0, "{}", f"id{i}", "f"), range(3000), id="one index, many ids"),
        pytest.param(
            lambda i: tc(5 if i % 2 else None, "{}", f"id{i}", "f"),
            [0, 5, *range(6, 6 + 2998)],
            id="mixed",
        ),
    ],
)
def test_calls_without_their_own_index_take_constant_time_each(
    monkeypatch: pytest.MonkeyPatch, make: Callable[[int], ToolCallDelta], indexes: Any
) -> None:
    created: list[ToolCallMatcher] = []
    init = ToolCallMatcher.__init__

    def counting_init(self: ToolCallMatcher) -> None:
        init(self)
        self._used = CountingSet()
        created.append(self)

    monkeypatch.setattr(ToolCallMatcher, "__init__", counting_init)
    CountingSet.walks = 0
    calls = run([make(i) for i in range(3000)])
    assert [c.index for c in calls] == list(indexes)
    assert [c.id for c in sorted(calls, key=lambda c: int((c.id or "")[2:]))] == [
        f"id{i}" for i in range(3000)
    ]
    assert created
    assert CountingSet.walks == 0  # the used indexes are never scanned


def test_a_generated_id_takes_a_name_or_arguments_holding_a_lone_surrogate() -> None:
    # A provider that split an escape pair leaves a lone surrogate, which UTF-8
    # cannot encode: the id is still made (it crashed the partial of a cut stream).
    generated_call_id = tools_module.generated_call_id
    made = generated_call_id(0, "f\ud800", '{"a": "\udc00"}')
    assert made.startswith("rxcall_0_f_")
    assert generated_call_id(0, "get_weather", '{"city": "Paris"}') == (
        "rxcall_0_get_weather_c19071fa"  # other text: the id it always had
    )
