"""ToolCallAccumulator: fragments -> complete tool calls, every fragmenting the issue lists."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.core import tools as tools_module
from rxstream.core.tokens import TokenCounter
from rxstream.core.tools import ToolCallAccumulator, parse_partial_json
from rxstream.errors import ToolArgumentsError
from rxstream.models import ChatChunk, Delta, Finish, TextDelta, ToolCall, ToolCallDelta
from tests.chunking import outputs_for_all_chunkings


def run(items: list[Any], *, partial: bool = False) -> list[ToolCall]:
    acc = ToolCallAccumulator(partial=partial)
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
        [call(0, None, "f", '{"a":1}')],
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


def test_mistral_call_in_the_finish_chunk_comes_out_at_that_chunk() -> None:
    acc = ToolCallAccumulator()
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
        ('{"city": "Paris", "n": [1', {"city": "Paris", "n": [1]}),
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
@pytest.mark.parametrize("parser", ["jiter", "stdlib"])
def test_parse_partial_json(
    monkeypatch: pytest.MonkeyPatch, parser: str, text: str, expected: Any
) -> None:
    if parser == "stdlib":
        monkeypatch.setattr(tools_module, "_partial_parser", tools_module._stdlib_partial)
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
    with pytest.raises(RuntimeError, match="after close"):
        acc.feed(Finish("stop"))
    acc = ToolCallAccumulator()
    with pytest.raises(TypeError):
        acc.feed("not a delta")  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        acc.feed(Finish("stop"))


class _ArgumentsMachine:
    """Adapter for `outputs_for_all_chunkings`: each str piece is one arguments fragment."""

    def __init__(self) -> None:
        self.acc = ToolCallAccumulator()
        self.acc.feed(tc(0, "", "c1", "f"))

    def feed(self, piece: str) -> list[ToolCall]:
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
    accumulator = ToolCallAccumulator()
    calls = [c for chunk in chunks for c in accumulator.feed(chunk)] + accumulator.close()
    assert calls == [ToolCall(0, "a", "f", '{"x":1}'), ToolCall(1, "b", "g", "")]
    counter = TokenCounter(list)  # one token per character
    counts = [n for chunk in chunks for n in counter.feed(chunk)] + counter.close()
    assert counts[-1].tool_arguments == len('{"x":1}')
