"""rxstream.testing.marble_diff: a failed marble assertion reads as two diagrams and one difference.

The difference is the one equality saw (time, kind, the compared fields), never a field the
items' equality leaves out (`Finish.raw`), and ticks count from the subscription (tick 200).
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from reactivex.notification import OnCompleted, OnError, OnNext
from reactivex.testing.recorded import Recorded

import rxstream as rs
from rxstream.models import Finish, TextDelta
from rxstream.testing.marble_diff import ExpectedRecords, explain, is_recording
from rxstream.testing.marbles import StreamMarbles, error, finish, text

V = {"a": text("Hi"), "f": finish("stop")}


def got(*records: tuple[float, Any]) -> list[Recorded[Any]]:
    """What `StreamMarbles.start` returns: absolute ticks, sometimes floats (timers)."""
    return [Recorded(time, note) for time, note in records]  # type: ignore[arg-type]


A = OnNext(TextDelta("Hi"))
DONE = OnCompleted[Any]()


@pytest.mark.parametrize(
    ("expected", "actual", "first", "diagrams"),
    [
        pytest.param(
            "-a--(f,|)",
            got((201, A), (203.0, OnNext(Finish("stop", raw="stop"))), (203.0, DONE)),
            "record 1 differs: f = Finish(reason='stop', choice=0, raw='stop') came at tick 3, "
            "expected at tick 4 (the items are equal: equality ignores raw, where they differ)",
            ("-a--(f,|)", "-a-(f,|)"),
            id="only-the-time-differs-not-the-uncompared-raw",
        ),
        pytest.param(
            "-a-f-|",
            got((201, A), (203, OnNext(Finish("length", raw="stop"))), (205, DONE)),
            "record 1 differs: item at tick 3: expected f, got b: Finish differs in "
            "reason: expected 'stop', got 'length'",
            ("-a-f-|", "-a-b-|"),
            id="a-compared-field-differs",
        ),
        pytest.param(
            "-a-f-|",
            got((201, A), (203, OnNext(TextDelta("f"))), (205, DONE)),
            "record 1 differs: item at tick 3: expected f, got b: "
            "expected a Finish, got a TextDelta",
            ("-a-f-|", "-a-b-|"),
            id="another-kind-of-item",
        ),
        pytest.param(
            "-a-f-|",
            got((201, A), (203, OnNext(Finish("stop"))), (204, DONE)),
            "record 2 differs: completion came at tick 4, expected at tick 5",
            ("-a-f-|", "-a-f|"),
            id="completion-early",
        ),
        pytest.param(
            "-a-f-|",
            got((201, A)),
            "record 1 differs: expected f = Finish(reason='stop', choice=0, raw=None) at tick 3, "
            "got nothing more",
            ("-a-f-|", "-a"),
            id="missing-records",
        ),
        pytest.param(
            "-a",
            got((201, A), (202, DONE)),
            "record 1 differs: got completion at tick 2, expected nothing more",
            ("-a", "-a|"),
            id="extra-records",
        ),
        pytest.param(
            "-a-e",
            got((201, A), (202, OnError(rs.TransportError("reset")))),
            "record 1 differs: at tick 2 (expected at 3): expected OnError(like "
            "ProviderError('provider error: overloaded')), got the error TransportError('reset')",
            ("-a-#", "-a#"),
            id="another-error-and-time",
        ),
    ],
)
def test_the_message_shows_diagrams_and_the_first_real_difference(
    expected: str, actual: list[Recorded[Any]], first: str, diagrams: tuple[str, str]
) -> None:
    values = {**V, "e": error("overloaded")}
    want = StreamMarbles().expected(expected, values)
    assert actual != want
    lines = explain(actual, want)
    assert lines[0] == first
    assert lines[1:3] == [f"  expected: {diagrams[0]}", f"  actual:   {diagrams[1]}"]
    assert lines[3].startswith("  ticks count from the subscription (tick 200)")
    assert "    a = TextDelta(text='Hi', choice=0)" in lines


def test_the_diagrams_read_back_as_the_records() -> None:
    m = StreamMarbles()
    out = m.start(m.deltas("-a-(f,|)", V))
    wrong = m.expected("-a--f-|", V)
    [_, expected_line, actual_line, *_] = explain(out, wrong)
    assert m.expected(actual_line.split(": ", 1)[1].strip(), V) == out
    assert m.expected(expected_line.split(": ", 1)[1].strip(), V) == wrong


def test_items_outside_the_value_map_get_free_symbols_and_a_legend() -> None:
    actual = got((201, OnNext("x")), (202, OnNext("y")))
    lines = explain(actual, [Recorded(201, OnNext("x"))])
    assert lines[1:3] == ["  expected: -a", "  actual:   -ab"]
    assert lines[-2:] == ["    a = 'x'", "    b = 'y'"]


def test_expected_records_compare_as_a_plain_list_and_keep_the_map() -> None:
    want = StreamMarbles().expected("-a|", V)
    assert isinstance(want, ExpectedRecords)
    assert want == [Recorded(201, OnNext(TextDelta("Hi"))), Recorded(202, DONE)]
    assert want.values == V
    assert is_recording(want)
    assert not is_recording([1])


def test_a_failed_assert_in_pytest_prints_the_diagrams(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_marbles_fail=textwrap.dedent(
            """
            from rxstream.testing.marbles import StreamMarbles, finish, text

            def test_late(stream_marbles: StreamMarbles) -> None:
                m, V = stream_marbles, {"a": text("Hi"), "f": finish()}
                out = m.start(m.deltas("-a-(f,|)", V))
                assert out == m.expected("-a--(f,|)", V)

            def test_reversed(stream_marbles: StreamMarbles) -> None:
                m, V = stream_marbles, {"a": text("Hi"), "f": finish()}
                out = m.start(m.deltas("-a-(f,|)", V))
                assert m.expected("-a--(f,|)", V) == out
            """
        )
    )
    result = pytester.runpytest_inprocess(
        *("-p", "no:rxstream", "-p", "rxstream.testing.plugin", "-p", "no:cacheprovider"),
    )
    result.assert_outcomes(failed=2)
    # Under CI=true pytest repeats each failure's whole message in the short summary;
    # the diagrams are counted in the failure reports only.
    output = result.stdout.str().split("short test summary info")[0]
    assert (
        output.count(
            "record 1 differs: f = Finish(reason='stop', choice=0, raw=None) came at tick 3, "
            "expected at tick 4"
        )
        == 2
    )
    assert output.count("expected: -a--(f,|)") == 2
    assert output.count("actual:   -a-(f,|)") == 2
    assert "@203" not in output
