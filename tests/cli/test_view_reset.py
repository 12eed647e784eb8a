"""The command's views after a `Reset`: printed lines stay, a line says the answer starts again."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence

from rxstream.cli._view import JSONView, LiveView, PlainView
from rxstream.models import Delta, Finish, Reset, TextDelta, ToolCallDelta

RESTARTED: list[Delta] = [
    TextDelta("Hel"),
    ToolCallDelta(0, '{"city":', id="a", name="weather"),
    Reset(2, "the connection closed"),
    TextDelta("Hello"),
    ToolCallDelta(0, '{"city":"Paris"}', id="b", name="weather"),
    Finish("tool_calls"),
]
LINE = "-- the answer starts again (attempt 2: the connection closed) --"


def test_plain_view() -> None:
    out = io.StringIO()
    view = PlainView(out, counting="c", clock=lambda: 0.0)
    for delta in RESTARTED:
        view.delta(delta)
    view.end()
    lines = out.getvalue().splitlines()[:-1]  # without the footer
    assert lines == [
        "answer: Hel",
        LINE,
        "answer: Hello",
        'tool call: weather (b) {"city": "Paris"}',
    ]
    # The view's partial result is the new answer's.
    assert view.text == {0: "Hello"}
    assert [call.summary() for call in view.calls] == ['weather (b) {"city": "Paris"}']


def test_plain_view_drops_the_held_choices() -> None:
    out = io.StringIO()
    view = PlainView(out, counting="c", clock=lambda: 0.0)
    deltas: Sequence[Delta] = [
        TextDelta("a"),
        TextDelta("held", choice=1),
        Reset(3),
        TextDelta("b", choice=1),
        Finish("stop", choice=1),
    ]
    for delta in deltas:
        view.delta(delta)
    view.end()
    lines = out.getvalue().splitlines()[:-1]
    assert lines == [
        "answer: a",
        "-- the answer starts again (attempt 3) --",
        "[choice 1] answer: b",
    ]


def test_live_view() -> None:
    out = io.StringIO()
    view = LiveView(out, counting="c")
    view.console.width = 80
    for delta in RESTARTED:
        view.delta(delta)
        view._tick()
    view.end()
    lines = out.getvalue().splitlines()
    at = lines.index(LINE)
    assert "Hel" in lines[0]
    assert any("Hello" in line for line in lines[at + 1 :])
    assert any("Paris" in line for line in lines[at + 1 :])
    assert not any("Paris" in line for line in lines[:at])


def test_json_view() -> None:
    out = io.StringIO()
    view = JSONView(out, counting="c")
    view.delta(Reset(2, "x"))
    assert json.loads(out.getvalue().splitlines()[0]) == {
        "type": "reset",
        "attempt": 2,
        "reason": "x",
        "choice": 0,
    }
