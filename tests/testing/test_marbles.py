"""rxstream.testing.marbles: sources at each level, expectations, error matching, windows."""

from __future__ import annotations

import json
from typing import Any

import pytest
from reactivex import operators as ops

import rxstream as rs
from rxstream.models import ChatChunk, SSEFrame, TextDelta, ToolCall
from rxstream.testing.marbles import (
    DONE,
    KEEPALIVE,
    StreamMarbles,
    diagram,
    error,
    finish,
    malformed,
    reasoning,
    refusal,
    text,
    tool,
    usage,
)

PIPELINE = (rs.sse_frames(), rs.decode_chunks(), rs.deltas())

V = {
    "a": text("Hel"),
    "b": text("lo"),
    "r": reasoning("hmm"),
    "x": refusal("no"),
    "t": tool(0, '{"q":', id="call_1", name="search"),
    "s": tool(0, '"rx"}'),
    "f": finish("stop"),
    "u": usage(3, 2),
    "e": error("overloaded", code=529),
    "k": KEEPALIVE,
    "D": DONE,
}


def test_a_whole_stream_from_lines_to_deltas(stream_marbles: StreamMarbles) -> None:
    m = stream_marbles
    source = m.lines("-r-a-k-b-t-s-f-u-D", V)
    out = m.start(source.pipe(*PIPELINE))
    assert out == m.expected("-r-a---b-t-s-f-u-|", V)
    # [DONE] ends the upstream subscription at its own tick.
    assert source.subscriptions == [m.subscription("^----------------!")]


def test_each_value_becomes_its_sse_lines() -> None:
    m = StreamMarbles()
    out = m.start(m.lines("-a-k-e-D", V))
    lines = [r.value.value for r in out if r.value.kind == "N"]
    assert lines[0].startswith("data: {")
    assert json.loads(lines[0][6:])["choices"][0]["delta"] == {"content": "Hel"}
    assert lines[1:4] == ["", ": keep-alive", ""]
    assert lines[4] == "event: error"
    assert json.loads(lines[5][6:]) == {"error": {"message": "overloaded", "code": 529}}
    assert lines[6:] == ["", "data: [DONE]", ""]
    assert [r.time for r in out][:2] == [201, 201]  # one event's lines share its tick


def test_a_provider_error_mid_stream_matches_by_type_and_message() -> None:
    m = StreamMarbles()
    out = m.start(m.lines("-a-e-b-D", V).pipe(*PIPELINE))
    assert out == m.expected("-a-e", V)
    assert m.expected("-a-e", V) == out  # either side of ==
    assert out != m.expected("-a-e", {**V, "e": error("something else")})
    assert out == m.expected("-a-#", V, error=rs.ProviderError("overloaded", code=529))


def test_an_exception_class_matches_any_error_of_it() -> None:
    m = StreamMarbles()
    out = m.start(m.lines("-a-m", {**V, "m": malformed()}).pipe(*PIPELINE))
    assert out == m.expected("-a-E", {**V, "E": rs.MalformedChunkError})
    assert out != m.expected("-a-E", {**V, "E": rs.ProviderError})
    assert out == m.expected("-a-#", V)  # a bare '#' matches any exception


def test_frames_chunks_and_deltas_sources_agree_with_lines() -> None:
    diagram_in, diagram_out = "-a-t-s-f-u-D", "-a-t-s-f-u-|"
    results = []
    for level in ("lines", "frames"):
        m = StreamMarbles()
        results.append(
            (
                m,
                m.start(
                    getattr(m, level)(diagram_in, V).pipe(
                        *PIPELINE[1:] if level == "frames" else PIPELINE
                    )
                ),
            )
        )
    m = StreamMarbles()
    results.append((m, m.start(m.chunks(diagram_in, V).pipe(rs.deltas()))))
    m = StreamMarbles()
    results.append((m, m.start(m.deltas(diagram_in, V))))
    for marbles, out in results:
        assert out == marbles.expected(diagram_out, V)


def test_frames_and_chunks_hold_the_wire_objects() -> None:
    m = StreamMarbles()
    frames = [r.value.value for r in m.start(m.frames("-e-k-a|", V)) if r.value.kind == "N"]
    assert frames[0].event == "error"
    assert len(frames) == 2
    assert isinstance(frames[1], SSEFrame)
    assert json.loads(frames[1].data)["choices"]
    m = StreamMarbles()
    chunks = [r.value.value for r in m.start(m.chunks("-u|", V)) if r.value.kind == "N"]
    assert isinstance(chunks[0], ChatChunk)
    assert chunks[0].choices == []
    assert chunks[0].usage == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def test_downstream_take_disposes_the_source_early() -> None:
    m = StreamMarbles()
    source = m.lines("-a--b--f--D", V)
    out = m.start(source.pipe(*PIPELINE, ops.take(2)))
    assert out == m.expected("-a--(b,|)", V)
    assert source.subscriptions == [m.subscription("^---!")]


def test_dispose_at_a_chosen_tick_ends_the_window() -> None:
    m = StreamMarbles()
    source = m.lines("-a-----b-D", V)
    out = m.start(source.pipe(*PIPELINE), disposed=204)
    assert out == m.expected("-a", V)
    assert source.subscriptions == [m.subscription("^---!")]


def test_hot_sources_count_from_the_subscription() -> None:
    m = StreamMarbles()
    source = m.hot("-a-b-|", V)
    assert m.start(source.pipe(rs.accumulate_message())) == m.expected(
        "-----(m,|)", {"m": rs.Message(content="Hello")}
    )
    assert source.subscriptions == [m.subscription("^----!")]


def test_accumulators_read_as_diagrams() -> None:
    m = StreamMarbles()
    source = m.deltas("-t-s-f-|", V)
    call = ToolCall(0, "call_1", "search", '{"q":"rx"}')
    assert m.start(source.pipe(rs.accumulate_tool_calls())) == m.expected("-----c-|", {"c": call})


def test_digit_symbols_are_looked_up_not_cast() -> None:
    m = StreamMarbles()
    one = {"1": text("one"), "2": text("two")}
    assert m.start(m.deltas("-1-2-|", one)) == m.expected("-1-2-|", one)
    assert m.expected("-1-|", one)[0].value.value == TextDelta("one")


@pytest.mark.parametrize(
    ("item", "lines"),
    [
        ("data: raw", ["data: raw"]),
        ({"choices": []}, ['data: {"choices":[]}', ""]),
        (ChatChunk({"x": 1}), ['data: {"x":1}', ""]),
        (SSEFrame("a\nb", "ping"), ["event: ping", "data: a", "data: b", ""]),
        (malformed("{oops"), ["data: {oops", ""]),
    ],
    ids=["str-line", "dict", "chat-chunk", "frame", "malformed"],
)
def test_other_values_pass_through_as_lines(item: Any, lines: list[str]) -> None:
    m = StreamMarbles()
    got = [r.value.value for r in m.start(m.lines("-v|", {"v": item})) if r.value.kind == "N"]
    assert got == lines


def test_a_fragment_without_index_is_sent_without_one() -> None:
    m = StreamMarbles()
    fragment = tool(None, "{}")  # type: ignore[arg-type]  # no index, on purpose
    got = [r.value.value for r in m.start(m.lines("-v|", {"v": fragment}))[:1]]
    payload = json.loads(got[0][len("data: ") :])
    assert payload["choices"][0]["delta"]["tool_calls"] == [{"function": {"arguments": "{}"}}]


def test_sources_reject_what_they_cannot_send() -> None:
    m = StreamMarbles()
    with pytest.raises(TypeError, match="cannot send"):
        m.lines("-v|", {"v": object()})
    with pytest.raises(TypeError, match="exception instance"):
        m.deltas("-v|", {"v": ValueError})
    with pytest.raises(ValueError, match="needs a"):
        m.subscription("---!")


def test_a_source_error_value_is_on_error() -> None:
    m = StreamMarbles()
    boom = rs.TransportError("reset")
    out = m.start(m.deltas("-a-x", {"a": text("a"), "x": boom}))
    assert out[1].value.exception is boom


def test_diagram_renders_records_back() -> None:
    m = StreamMarbles()
    out = m.start(m.lines("-a-b-e", V).pipe(*PIPELINE))
    assert diagram(out, V) == "-a-b-#"
    assert diagram(m.expected("-(a,b,|)", V), V) == "-(a,b,|)"


@pytest.mark.parametrize(
    ("marbles", "spelled"),
    [
        pytest.param("-a-(b|)", "'-a-(b,|)'", id="completion-glued"),
        pytest.param("-a-(b#)", "'-a-(b,#)'", id="error-glued"),
        pytest.param("--(a, b|)", "'--(a,b,|)'", id="second-item"),
        pytest.param("(ab|)-", "'(ab,|)-'", id="long-name"),
    ],
)
def test_a_group_that_glues_a_value_to_its_end_is_refused(marbles: str, spelled: str) -> None:
    # The RxJS habit `(b|)` is one value named "b|" in reactivex: never a silent non-completion.
    m = StreamMarbles()
    for make in (m.cold, m.hot, m.lines, m.frames, m.chunks, m.deltas, m.expected):
        with pytest.raises(ValueError, match="separate the items of a group with commas") as info:
            make(marbles, V)
        assert spelled in str(info.value)


def test_the_comma_spelling_completes_at_the_group() -> None:
    m = StreamMarbles()
    out = m.start(m.deltas("-a-(b,|)", V))
    assert out == m.expected("-a-(b,|)", V)
    assert [r.time for r in out] == [201, 203, 203]
