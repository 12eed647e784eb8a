"""The command's views: tool calls as the core groups them, the footer, the rich live view."""

from __future__ import annotations

import io
import itertools
import json
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.cli._view import JSONView, LiveView, PlainView, Stats, _ObjectEnd, _Tail, make_view
from rxstream.core import wire as codec
from rxstream.core.tools import ToolCallAccumulator, is_generated_call_id
from rxstream.models import (
    Citation,
    Delta,
    Finish,
    ReasoningDelta,
    RefusalDelta,
    ServerToolCall,
    ServerToolResult,
    TextDelta,
    TokenCount,
    ToolCallDelta,
    Usage,
)

# --------------------------------------------------------------------------- tool calls

CALL_CASES: dict[str, list[Delta]] = {
    "one index, two ids": [
        ToolCallDelta(0, '{"city": ', id="call_a", name="weather"),
        ToolCallDelta(0, '{"q": ', id="call_b", name="search"),
        ToolCallDelta(0, '"x"}'),
        ToolCallDelta(0, '"Paris"}', id="call_a"),
    ],
    "no index, ids": [
        ToolCallDelta(None, '{"a": ', id="m1", name="f"),
        ToolCallDelta(None, "1}"),
        ToolCallDelta(None, '{"b": 2}', id="m2", name="g"),
    ],
    "no index, no ids": [
        ToolCallDelta(None, '{"a"', name="f"),
        ToolCallDelta(None, ": 1}"),
    ],
    "begun without an index, then with one": [
        ToolCallDelta(None, '{"a": ', id="c1", name="f"),
        ToolCallDelta(0, "1}"),
    ],
    "parallel, interleaved": [
        ToolCallDelta(0, "", id="p", name="f"),
        ToolCallDelta(1, "", id="t", name="f"),
        ToolCallDelta(0, '{"city": "Paris"'),
        ToolCallDelta(1, '{"city": "Tokyo"'),
        ToolCallDelta(1, "}"),
        ToolCallDelta(0, "}"),
    ],
    "id repeated empty on every fragment": [
        ToolCallDelta(0, '{"a"', id="c1", name="f"),
        ToolCallDelta(0, ":1}", id="", name=""),
    ],
    "two choices": [
        ToolCallDelta(0, '{"a": 1}', id="x", name="f", choice=0),
        ToolCallDelta(0, '{"b": 2}', id="y", name="g", choice=1),
    ],
}


def core_calls(deltas: Sequence[Delta]) -> list[tuple[int, str | None, str | None, str]]:
    accumulator = ToolCallAccumulator()
    calls = [c for d in deltas for c in accumulator.feed(d)] + accumulator.close()
    # The view shows a call's id as the wire had it, not the one the core made for an id-less call.
    return sorted(
        (c.choice, None if is_generated_call_id(c.id) else c.id, c.name, c.arguments) for c in calls
    )


@pytest.mark.parametrize("deltas", list(CALL_CASES.values()), ids=list(CALL_CASES))
def test_the_view_groups_fragments_as_the_core_does(deltas: list[Delta]) -> None:
    view = PlainView(io.StringIO(), counting="")
    for delta in deltas:
        view.delta(delta)
    shown = sorted((c.choice, c.id, c.name, c.arguments) for c in view.calls)
    assert shown == core_calls(deltas)


def test_two_calls_under_one_index_are_two_lines() -> None:
    out = io.StringIO()
    view = PlainView(out, counting="counted")
    for delta in [*CALL_CASES["one index, two ids"], Finish("tool_calls")]:
        view.delta(delta)
    lines = out.getvalue().splitlines()
    assert lines == [
        'tool call: search (call_b) {"q": "x"}',
        'tool call: weather (call_a) {"city": "Paris"}',
    ]


def plain(deltas: Sequence[Delta], *, interrupted: bool = False) -> list[str]:
    out = io.StringIO()
    view = PlainView(out, counting="c", clock=lambda: 0.0)
    view.start()
    for delta in deltas:
        view.delta(delta)
    view.end(interrupted=interrupted)
    return out.getvalue().splitlines()[:-1]  # without the footer


@pytest.mark.parametrize(
    ("deltas", "lines"),
    [
        (
            [ToolCallDelta(0, '{"a": 1}', id="c", name="f"), TextDelta("after")],
            ['tool call: f (c) {"a": 1}', "answer: after"],  # shown before the choice ends
        ),
        ([ToolCallDelta(0, "", id="c", name="f"), Finish("tool_calls")], ["tool call: f (c) {}"]),
        (
            [ToolCallDelta(0, "[1, 2]", id="c", name="f"), Finish("tool_calls")],
            ["tool call (not a JSON object): f (c) [1, 2]"],
        ),
        (
            [ToolCallDelta(0, '{"a": ', id="c", name="f")],
            ['tool call (incomplete): f (c) {"a": '],
        ),
        (
            [ToolCallDelta(0, '{"a": 1}', id="c", name="f"), ToolCallDelta(0, "x")],
            [
                'tool call: f (c) {"a": 1}',
                'tool call (arguments are not one JSON object): f (c) {"a": 1}x',
            ],
        ),
        (
            [ToolCallDelta(1, '{"a": 1}', id="c", name="f", choice=2)],
            ['[choice 2] tool call: f (c) {"a": 1}'],
        ),
        (
            [ReasoningDelta(" hm"), TextDelta(" Hi"), RefusalDelta("no"), TextDelta("!", choice=1)],
            ["thinking: hm", "answer: Hi", "refusal: no", "[choice 1] answer: !"],
        ),
    ],
    ids=["whole", "empty-args", "array", "cut", "spoiled", "choice", "sections"],
)
def test_plain_view_lines(deltas: list[Delta], lines: list[str]) -> None:
    assert plain(deltas) == lines


def test_a_call_of_a_new_turn_after_a_finish_is_a_new_call() -> None:
    deltas: list[Delta] = [
        ToolCallDelta(0, '{"a": 1}', id="c1", name="f"),
        Finish("tool_calls"),
        ToolCallDelta(0, '{"b": 2}', id="c2", name="g"),
        Finish("tool_calls"),
    ]
    assert plain(deltas) == ['tool call: f (c1) {"a": 1}', 'tool call: g (c2) {"b": 2}']


# --------------------------------------------------------------------------- the object's end

OBJECT_END_CASES = [
    ('{"a": 1}', True),
    ('{"a": "}"}', True),
    ('{"a": "\\"}"}', True),
    ('{"a": "\\\\"}', True),
    ('{"a": {"b": [1, {"c": "]"}]}}', True),
    ('{"a": "\\\\\\"}', False),  # the quote is escaped: the string is still open
    ('{"a": [1, 2}', False),
    ("  ", False),
    ('"}"', False),
]


def pieces_at(text: str, cuts: Sequence[int]) -> list[str]:
    bounds = [0, *sorted(cuts), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize(("text", "closes"), OBJECT_END_CASES)
def test_the_object_end_is_found_however_the_text_is_cut(text: str, closes: bool) -> None:
    for cuts in [(), *((i,) for i in range(1, len(text))), tuple(range(1, len(text)))]:
        end = _ObjectEnd()
        results = [end.feed(piece) for piece in pieces_at(text, cuts)]
        assert any(results) is closes, (text, cuts)
        if closes:
            assert results.index(True) == len(results) - 1  # at the last brace, not before
            assert end.feed("}") is False  # once


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab{}[]"\\ \n'),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(st.text(alphabet='a{}"\\', max_size=4), JSON_VALUES), data=st.data())
def test_a_json_object_closes_exactly_at_its_end(
    value: dict[str, object], data: st.DataObject
) -> None:
    text = json.dumps(value)
    cuts = data.draw(st.lists(st.integers(1, max(1, len(text) - 1)), max_size=6, unique=True))
    end = _ObjectEnd()
    results = [end.feed(piece) for piece in pieces_at(text, cuts) if piece]
    assert results[-1] is True
    assert not any(results[:-1])


# --------------------------------------------------------------------------- the footer


class Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        return self.now


def stats_after(*steps: tuple[float, Delta | TokenCount]) -> Stats:
    clock = Clock()
    view = PlainView(io.StringIO(), counting="counted with o200k_base", clock=clock)
    for at, item in steps:
        clock.now = at
        if isinstance(item, TokenCount):
            view.count(item)
        else:
            view.delta(item)
    clock.now += 1.0
    view.end()
    return view.stats


USAGE = Usage(prompt_tokens=5, completion_tokens=30, total_tokens=35)


@pytest.mark.parametrize(
    ("steps", "footer"),
    [
        (
            [(10.5, TextDelta("a")), (12.5, TextDelta("b")), (12.5, TokenCount(0, 0, 0, 0))],
            "time to first token 0.50 s · - tokens/s",
        ),
        (
            [
                (10.5, TextDelta("a")),
                (12.5, TextDelta("b")),
                (12.5, TokenCount(text=20, reasoning=0, refusal=0, tool_arguments=0, final=True)),
                (12.6, USAGE),
            ],
            "time to first token 0.50 s · 10.0 tokens/s · 20 tokens (reasoning 0, text 20, "
            "tool arguments 0; counted with o200k_base) · provider usage: prompt 5, completion 30, "
            "total 35",
        ),
        (
            [(10.5, TextDelta("a")), (12.5, TextDelta("b")), (12.6, USAGE), (12.6, Finish("stop"))],
            "time to first token 0.50 s · 15.0 tokens/s (provider's count) · 4 deltas",
        ),
        (
            [(11.0, ReasoningDelta("a")), (12.0, ToolCallDelta(0, "{}")), (12.0, Finish("stop"))],
            "time to first token 1.00 s · 2.0 deltas/s (not tokens) · 3 deltas",
        ),
        ([], "no tokens yet · 0 deltas"),
        (
            [
                (10.5, TextDelta("a")),
                (12.5, TextDelta("b", choice=1)),
                (12.5, TokenCount(text=3, reasoning=1, refusal=0, tool_arguments=0)),
                (12.5, TokenCount(text=4, reasoning=0, refusal=2, tool_arguments=0, choice=1)),
            ],
            "time to first token 0.50 s · 5.0 tokens/s · 10 tokens (reasoning 1, text 7, "
            "tool arguments 0, refusal 2; ",
        ),
    ],
    ids=["zero-tokens", "counted", "provider", "deltas", "nothing", "two-choices"],
)
def test_the_footer_says_what_its_rate_counts(
    steps: list[tuple[float, Delta | TokenCount]], footer: str
) -> None:
    assert stats_after(*steps).footer().startswith(footer)


def test_the_footer_of_an_interrupted_stream_says_so() -> None:
    assert Stats(clock=lambda: 0.0).footer(interrupted=True).endswith(" · interrupted")


# --------------------------------------------------------------------------- other views

DEMO_LIKE: list[Delta] = [
    ReasoningDelta("Thinking it over."),
    TextDelta("Checking."),
    RefusalDelta("Not that."),
    TextDelta("Other choice.", choice=1),
    ToolCallDelta(0, '{"city": "Paris"}', id="call_p", name="get_weather"),
    ToolCallDelta(1, '{"city": "To', id="call_t", name="get_weather"),
    Finish("tool_calls"),
    ToolCallDelta(0, "[1]", id="call_x", name="odd", choice=1),
    Finish("tool_calls", choice=1),
    Usage(1, 2, 3),
]


def test_the_live_view_renders_every_part() -> None:
    out = io.StringIO()
    view = LiveView(out, counting="counted", title="a title")
    view.start()
    for delta in DEMO_LIKE:
        view.delta(delta)
    view.end()
    text = out.getvalue()
    for needle in [
        "a title",
        "thinking: Thinking it over.",
        "Checking.",
        "refusal: Not that.",
        "[choice 1] Other choice.",
        '✓ tool call get_weather(call_p) {"city": "Paris"}',
        '✗ tool call (not a JSON object) get_weather(call_t) {"city": "To',
        "✗ tool call (not a JSON object) odd(call_x) [1]",
        "provider usage: prompt 1, completion 2, total 3",
    ]:
        assert needle in text, needle


def test_the_live_view_shows_a_call_in_progress_by_its_size() -> None:
    view = LiveView(io.StringIO(), counting="c")
    view.delta(ToolCallDelta(0, '{"city": "Pa', id="c", name="get_weather"))
    console_out = io.StringIO()
    from rich.console import Console

    Console(file=console_out, width=80).print(view._render())
    assert "… tool call get_weather (12 chars of arguments)" in console_out.getvalue()
    view.end(interrupted=True)


def test_the_live_view_of_a_failed_request_shows_nothing() -> None:
    out = io.StringIO()
    view = LiveView(out, counting="c")
    view.end(error=RuntimeError("refused"))
    assert out.getvalue() == ""


def test_while_streaming_the_newest_lines_stay_in_view() -> None:
    from rich.console import Console, Group
    from rich.text import Text

    out = io.StringIO()
    console = Console(file=out, width=40, height=4, force_terminal=False)
    console.print(_Tail(Group(*(Text(f"line {i}") for i in range(10)))))
    assert out.getvalue().splitlines() == ["line 7", "line 8", "line 9"]


def test_the_json_view_prints_each_delta() -> None:
    out = io.StringIO()
    view = make_view("json", counting="", out=out)
    assert isinstance(view, JSONView)
    view.delta(TextDelta("Hi"))
    view.delta(ToolCallDelta(0, "{}", id="c", name="f"))
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"type": "text", "text": "Hi", "choice": 0},
        {"type": "tool_call", "index": 0, "arguments": "{}", "id": "c", "name": "f", "choice": 0},
    ]


@pytest.mark.parametrize(("kind", "cls"), [("live", LiveView), ("plain", PlainView)])
def test_make_view(kind: str, cls: type) -> None:
    assert type(make_view(kind, counting="", out=io.StringIO())) is cls


def test_a_failed_stream_with_nothing_shown_prints_no_footer() -> None:
    out = io.StringIO()
    view = PlainView(out, counting="c")
    view.end(error=RuntimeError("refused"))
    assert out.getvalue() == ""


PROVIDER_SIDE: list[Delta] = [
    TextDelta("Searching."),
    ServerToolCall("srv_1", "web_search", {"query": "x" * 300}),
    ServerToolResult("srv_1", "web_search_tool_result", [{"url": "https://a.test"}]),
    Citation("url_citation", url="https://a.test", title="A"),
    Citation("url_citation", url="https://b.test", title="B", choice=1),
    TextDelta(" Found it."),
    Finish("stop", raw="end_turn"),
]


def test_the_plain_view_shows_server_tools_citations_and_the_providers_finish() -> None:
    out = io.StringIO()
    view = PlainView(out, counting="c")
    for delta in PROVIDER_SIDE:
        view.delta(delta)
    view.end()
    lines = out.getvalue().splitlines()
    query = json.dumps({"query": "x" * 300})
    assert lines[:4] == [
        "answer: Searching.",
        f"server tool: web_search (srv_1) {query[:199]}…",  # long inputs are cut at 200
        "server tool result: web_search_tool_result (srv_1)",
        "answer: Found it.",
    ]
    assert lines[-1].endswith(" · 2 citations · finish: stop (end_turn)")


def test_the_live_view_shows_server_tools() -> None:
    out = io.StringIO()
    view = LiveView(out, counting="c")
    for delta in [*PROVIDER_SIDE[:2], ServerToolCall(None, "code", "print(1)", choice=1)]:
        view.delta(delta)
    view.end()
    text = out.getvalue()
    assert "server tool: web_search (srv_1) " in text
    assert '[choice 1] server tool: code "print(1)"' in text


@pytest.mark.parametrize(
    ("reason", "raw", "shown"),
    [
        ("stop", "stop", "finish: stop"),
        ("stop", None, "finish: stop"),
        ("length", "MAX_TOKENS", "finish: length (MAX_TOKENS)"),
    ],
)
def test_the_footer_says_the_providers_own_finish_word_when_it_differs(
    reason: str, raw: str | None, shown: str
) -> None:
    stats = Stats(clock=lambda: 0.0)
    stats.finish, stats.finish_raw = reason, raw
    assert stats.footer().endswith(shown)


def test_the_json_view_writes_rxstreams_encoding() -> None:
    out = io.StringIO()
    view = JSONView(out, counting="")
    for delta in PROVIDER_SIDE:
        view.delta(delta)
    decoded = [codec.decode(json.loads(line)) for line in out.getvalue().splitlines()]
    assert decoded == PROVIDER_SIDE
    assert decoded[-1].raw == "end_turn"  # fields outside equality too
