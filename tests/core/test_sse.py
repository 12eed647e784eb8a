"""SSEParser: the WHATWG "interpreting an event stream" rules, plus dispatch at end of input.

Many cases follow the web-platform-tests `eventsource/format-*` tests; their
streams are rewritten here as plain text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.core.lines import LineSplitter, Unterminated
from rxstream.core.pipeline import Handoff
from rxstream.core.sse import SSEParser
from rxstream.models import SSEFrame
from tests.support.chunking import outputs_for_all_chunkings

F = SSEFrame


class Pipeline:
    """Bytes -> LineSplitter -> SSEParser, as one machine for `outputs_for_all_chunkings`."""

    def __init__(self) -> None:
        self.splitter = LineSplitter()
        self.parser = SSEParser()

    def feed(self, chunk: bytes) -> list[SSEFrame]:
        return [f for line in self.splitter.feed(chunk) for f in self.parser.feed(line)]

    def close(self) -> list[SSEFrame]:
        frames = [f for line in self.splitter.close() for f in self.parser.feed(line)]
        return frames + self.parser.close()


LONG = "x" * 2048

# (id, stream text, expected frames)
CASES = [
    ("empty-stream", "", []),
    ("simple", "data: hello\n\n", [F("hello")]),
    ("no-space-after-colon", "data:hello\n\n", [F("hello")]),
    ("two-spaces-keep-one", "data:  two\n\n", [F(" two")]),
    ("tab-is-not-stripped", "data:\tx\n\n", [F("\tx")]),
    ("trailing-space-kept", "data: x \n\n", [F("x ")]),
    ("colon-in-value", "data: a:b: c\n\n", [F("a:b: c")]),
    ("multi-line-data", "data: a\ndata: b\ndata: c\n\n", [F("a\nb\nc")]),
    ("data-without-colon", "data\n\n", [F("")]),
    ("data-colon-alone", "data:\n\n", [F("")]),
    ("two-empty-data-lines", "data\ndata\n\n", [F("\n")]),
    # wpt format-field-data
    ("wpt-field-data", "data:\n\ndata\ndata\n\ndata:test\n\n", [F(""), F("\n"), F("test")]),
    ("comment-ignored", ": hello\ndata: x\n\n", [F("x")]),
    ("comment-only-colon", ":\n\n", []),
    ("keep-alive-ping", ": ping\n\n: ping\n\ndata: x\n\n: ping\n\n", [F("x")]),
    (
        "openrouter-keep-alives",
        ": OPENROUTER PROCESSING\n\n" * 3 + 'data: {"a":1}\n\n',
        [F('{"a":1}')],
    ),
    # wpt format-comments (dispatched at close: see "deviation" below)
    (
        "wpt-comment-fest",
        f"data:1\r:\0\n:\r\ndata:2\n:{LONG}\rdata:3\n:data:fail\r:{LONG}\ndata:4\n",
        [F("1\n2\n3\n4")],
    ),
    # wpt format-field-parsing
    (
        "wpt-field-parsing",
        "data:\0\ndata:  2\rData:1\ndata\0:2\ndata:1\r\0data:4\nda-ta:3\rdata_5\ndata:3\r"
        "data:\r\n data:32\ndata:4\n",
        [F("\0\n 2\n1\n3\n\n4")],
    ),
    # wpt format-field-unknown
    (
        "wpt-unknown-fields",
        "data:test\n data\ndata\nfoobar:xxx\njustsometext\n:thisisacommentyay\ndata:test\n\n",
        [F("test\n\ntest")],
    ),
    # wpt format-newlines
    ("wpt-newlines", "data:test\r\ndata\ndata:test\r\n\r", [F("test\n\ntest")]),
    # wpt format-leading-space
    ("wpt-leading-space", "data:\ttest\rdata: \ndata:test\n\n", [F("\ttest\n\ntest")]),
    ("crlf-gemini", 'data: {"a": 1}\r\n\r\ndata: {"b": 2}\r\n\r\n', [F('{"a": 1}'), F('{"b": 2}')]),
    ("cr-only", "data: a\r\rdata: b\r\r", [F("a"), F("b")]),
    ("field-names-are-case-sensitive", "Data: x\nDATA: y\n\n", []),
    ("space-before-colon-is-another-field", "data : x\n\n", []),
    ("leading-space-is-another-field", " data: x\n\n", []),
    ("unknown-field-ignored", "foo: bar\ndata: x\nbaz\n\n", [F("x")]),
    ("blank-lines-only", "\n\n\n\r\n", []),
    # event
    ("event-type", "event: delta\ndata: x\n\n", [F("x", event="delta")]),
    ("event-reset-after-dispatch", "event: a\ndata: x\n\ndata: y\n\n", [F("x", "a"), F("y")]),
    ("event-empty-is-message", "event: \ndata:data\n\n", [F("data")]),  # wpt event-empty
    ("event-without-colon-is-message", "event\ndata: x\n\n", [F("x")]),
    ("event-last-wins", "event: a\nevent: b\ndata: x\n\n", [F("x", "b")]),
    ("event-after-data-counts", "data: x\nevent: late\n\n", [F("x", "late")]),
    ("event-reset-by-empty-dispatch", "event: a\n\ndata: x\n\n", [F("x")]),
    ("event-colon-in-value", "event:x:y\ndata: z\n\n", [F("z", "x:y")]),
    ("event-without-data-dropped", "event: ping\n\n", []),
    # id
    ("id", "id: 1\ndata: a\n\n", [F("a", id="1")]),
    ("id-persists", "id: 1\ndata: a\n\ndata: b\n\n", [F("a", id="1"), F("b", id="1")]),
    ("id-set-without-data-persists", "id: 7\n\ndata: a\n\n", [F("a", id="7")]),
    ("id-after-data-counts", "data: a\nid: 2\n\n", [F("a", id="2")]),
    ("id-reset-to-empty", "id: 1\ndata: a\n\nid\ndata: b\n\n", [F("a", id="1"), F("b", id="")]),
    ("id-colon-empty", "id: 1\ndata: a\n\nid:\ndata: b\n\n", [F("a", id="1"), F("b", id="")]),
    (
        "id-with-nul-ignored",
        "id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n",
        [F("a", id="1"), F("b", id="1")],
    ),
    ("id-spaces-kept", "id:  a b \ndata: x\n\n", [F("x", id=" a b ")]),
    # retry
    ("retry", "retry: 3000\ndata: x\n\n", [F("x", retry=3000)]),
    ("retry-zero", "retry:0\ndata: x\n\n", [F("x", retry=0)]),
    ("retry-leading-zeros", "retry: 0042\ndata: x\n\n", [F("x", retry=42)]),
    ("retry-persists", "retry: 5\ndata: a\n\ndata: b\n\n", [F("a", retry=5), F("b", retry=5)]),
    # wpt format-field-retry-bogus: the bogus value leaves the earlier one
    ("retry-bogus-ignored", "retry:3000\nretry:1000x\ndata:x\n\n", [F("x", retry=3000)]),
    ("retry-empty-ignored", "retry\nretry:\ndata:test\n\n", [F("test")]),  # wpt retry-empty
    ("retry-negative-ignored", "retry: -1\ndata: x\n\n", [F("x")]),
    ("retry-float-ignored", "retry: 1.5\ndata: x\n\n", [F("x")]),
    ("retry-trailing-space-ignored", "retry: 10 \ndata: x\n\n", [F("x")]),
    ("retry-non-ascii-digits-ignored", "retry: \u0663\u0660\ndata: x\n\n", [F("x")]),
    ("retry-without-data", "retry: 9\n\ndata: x\n\n", [F("x", retry=9)]),
    # end of input: the deliberate deviation from the browser rule
    ("final-frame-without-blank-line", "data: a\n\ndata: b\n", [F("a"), F("b")]),
    ("final-frame-without-newline", "data: a\n\ndata: b", [F("a"), F("b")]),
    ("final-empty-data-dispatched", "data:", [F("")]),
    ("final-event-without-data-dropped", "data: a\n\nevent: x\nid: 3", [F("a")]),
    # wpt format-data-before-final-empty-line, where a browser drops "test2"
    (
        "wpt-data-before-final-empty-line",
        "retry:1000\ndata:test1\n\nid:test\ndata:test2",
        [F("test1", retry=1000), F("test2", id="test", retry=1000)],
    ),
    ("bom-at-stream-start", "\ufeffdata: x\n\n", [F("x")]),
    (
        "unicode-separators-inside-data",
        'data: {"t":"a\u2028b\u0085c"}\n\n',
        [F('{"t":"a\u2028b\u0085c"}')],
    ),
    (
        "all-fields",
        "event: e\nid: 9\nretry: 10\ndata: 1\ndata: 2\n\n",
        [F("1\n2", event="e", id="9", retry=10)],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_stream(text: str, expected: list[SSEFrame]) -> None:
    assert outputs_for_all_chunkings(Pipeline, text.encode()) == expected


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["\ufeffdata: x", ""], [F("x")]),
        (["\ufeff: comment", "data: x", ""], [F("x")]),
        # wpt format-bom-2: only the first BOM goes; the second spoils the field name
        (["\ufeff\ufeffdata:1", "", "data:2", "", "data:3", ""], [F("2"), F("3")]),
        (["data: a", "", "\ufeffdata: b", ""], [F("a")]),
        (["", "\ufeffdata: b", ""], []),
    ],
    ids=["first-line", "first-line-comment", "wpt-double-bom", "later-line-kept", "after-blank"],
)
def test_bom_only_on_the_first_line(lines: list[str], expected: list[SSEFrame]) -> None:
    parser = SSEParser()
    out = [frame for line in lines for frame in parser.feed(line)]
    assert out + parser.close() == expected


def test_dispatch_happens_at_the_blank_line() -> None:
    parser = SSEParser()
    assert parser.feed("data: a") == []
    assert parser.feed("data: b") == []
    assert parser.feed("") == [F("a\nb")]
    assert parser.feed("") == []
    assert parser.close() == []


def test_retry_too_long_for_int_is_ignored() -> None:
    parser = SSEParser()
    parser.feed("retry: 5")
    parser.feed("retry: " + "9" * 5000)
    parser.feed("data: x")
    assert parser.feed("") == [F("x", retry=5)]


def test_feed_or_close_after_close_is_refused() -> None:
    parser = SSEParser()
    assert parser.feed("data: x") == []
    assert parser.close() == [F("x")]
    with pytest.raises(RuntimeError, match="closed"):
        parser.feed("data: y")
    with pytest.raises(RuntimeError, match="closed"):
        parser.close()


@pytest.mark.parametrize("line", [b"data: x", None, 1], ids=["bytes", "none", "int"])
def test_non_str_line_is_a_type_error(line: object) -> None:
    with pytest.raises(TypeError):
        SSEParser().feed(line)  # type: ignore[arg-type]


def reference_frames(lines: list[str]) -> list[SSEFrame]:
    """The spec's algorithm written out literally (string buffers), plus dispatch at the end."""
    data, event, last_id, retry = "", "", None, None
    out: list[SSEFrame] = []

    def dispatch() -> None:
        nonlocal data, event
        if data:
            out.append(SSEFrame(data[:-1] if data.endswith("\n") else data, event or "message",
                                last_id, retry))  # fmt: skip
        data, event = "", ""

    for i, line in enumerate(lines):
        if i == 0 and line.startswith("\ufeff"):
            line = line[1:]
        if line == "":
            dispatch()
            continue
        if line.startswith(":"):
            continue
        if ":" in line:
            name, value = line.split(":", 1)
            if value.startswith(" "):
                value = value[1:]
        else:
            name, value = line, ""
        if name == "event":
            event = value
        elif name == "data":
            data += value + "\n"
        elif name == "id" and "\0" not in value:
            last_id = value
        elif name == "retry" and value and all("0" <= c <= "9" for c in value):
            retry = int(value)
    dispatch()
    return out


LINE = st.one_of(
    st.just(""),
    st.sampled_from(["data", "data:", "data: ", "event", "id", "retry:", ": ping", ":"]),
    st.builds(
        "{}{}{}".format,
        st.sampled_from(["data", "event", "id", "retry", "", "x", "Data", " data"]),
        st.sampled_from([":", ": ", ":  ", ""]),
        st.text(st.sampled_from("ab :1\0\u2028é"), max_size=5),
    ),
)


@st.composite
def _stream(draw: st.DrawFn) -> tuple[list[str], bytes]:
    lines = draw(st.lists(LINE, max_size=25))
    parts, previous = [], ""
    for line in lines:
        # An empty line after a CR must not start with LF, or the two would merge into CRLF.
        choices = ["\r"] if (not line and previous == "\r") else ["\n", "\r", "\r\n"]
        previous = draw(st.sampled_from(choices))
        parts.append(line + previous)
    return lines, "".join(parts).encode()


@settings(max_examples=200, deadline=None)
@given(_stream(), st.lists(st.integers(0, 300), max_size=6))
def test_matches_the_spec_algorithm_for_any_chunking(
    case: tuple[list[str], bytes], cuts: list[int]
) -> None:
    lines, data = case
    expected = reference_frames(lines)
    parser = SSEParser()
    assert [f for line in lines for f in parser.feed(line)] + parser.close() == expected
    bounds = sorted(min(c, len(data)) for c in cuts)
    pieces = [data[i:j] for i, j in zip([0, *bounds], [*bounds, len(data)], strict=True)]
    pipeline = Pipeline()
    assert [f for p in pieces for f in pipeline.feed(p)] + pipeline.close() == expected


DATA = Path(__file__).parent.parent / "data"


def _recorded(name: str) -> list[SSEFrame]:
    return outputs_for_all_chunkings(Pipeline, (DATA / name).read_bytes())


def test_recorded_gemini_crlf_stream() -> None:
    frames = _recorded("google/text-crlf.sse")
    assert [f.event for f in frames] == ["message"] * 3
    chunks = [json.loads(f.data) for f in frames]
    text = "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)
    assert text == "The capital of France is Paris.\n"
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_recorded_openrouter_keep_alives_are_dropped() -> None:
    frames = _recorded("openrouter/keepalive-then-midstream-error.sse")
    assert len(frames) == 5  # 17 keep-alive comments give nothing
    assert frames[-1] == SSEFrame("[DONE]")
    assert json.loads(frames[3].data)["error"]["message"] == "Token limit reached"


def test_recorded_anthropic_events_and_unterminated_last_frame() -> None:
    frames = _recorded("anthropic/tool-use-input-json.sse")
    events = [f.event for f in frames]
    assert events[:3] == ["message_start", "content_block_start", "ping"]
    assert events[-1] == "message_stop"  # the file ends without a newline: flushed at close
    assert len(frames) == 15
    assert all(json.loads(f.data)["type"] == f.event for f in frames)


@pytest.mark.parametrize("batched", [False, True], ids=["feed", "feed_all"])
def test_a_cut_event_line_marks_the_last_frame_cut_in_feed_and_feed_all(batched: bool) -> None:
    # The last line `event: r` (no terminator) may be `event: response.completed`
    # cut short: the frame's data is a `Cut` whichever way the lines went in.
    from rxstream.core.lines import Cut, Unterminated

    lines = ['data: {"type":"response.completed"}', Unterminated("event: r")]
    parser = SSEParser()
    out: list[SSEFrame] = []
    if batched:
        parser.feed_all(lines, out)
    else:
        for line in lines:
            out += parser.feed(line)
    assert out == []
    (frame,) = parser.close()
    assert type(frame.data) is Cut
    assert (frame.event, frame.data) == ("r", '{"type":"response.completed"}')


# -- feed_all: a list of lines read in bulk gives what feed gives line by line ---------------

_VALUE = st.text(st.sampled_from('ab :{}"\n\r\u2028é'), max_size=6)
_EVENT = st.one_of(
    # Events of three lines (which `feed_all` reads in bulk), of two, and lines that break them.
    st.builds(lambda name, data: [f"event: {name}", f"data: {data}", ""], _VALUE, _VALUE),
    st.builds(lambda data: [f"data: {data}", ""], _VALUE),
    st.lists(LINE, max_size=3),
    st.builds(lambda name: [Unterminated(f"event: {name}")], _VALUE),
)


def _frames(parser: SSEParser, batches: list[list[object]]) -> tuple[list[object], str | None]:
    """What `parser` gives for `batches`, each fed with `feed_all` (or, when one holds, by
    `feed` line by line), then `close()`; and the error's type and message, if one came."""
    out: list[object] = []
    try:
        for batch in batches:
            parser.feed_all(batch, out)  # type: ignore[arg-type]
        out += parser.close()
    except TypeError as exc:
        return out, f"{type(exc).__name__}: {exc}"
    return out, None


@pytest.mark.parametrize("mode", [Handoff.FRAMES, Handoff.STRINGS, Handoff.PAIRS])
@settings(max_examples=150, deadline=None)
@given(
    events=st.lists(_EVENT, max_size=40),
    cuts=st.lists(st.integers(0, 120), max_size=5),
    bad=st.sampled_from([None, b"", 7]),
    bad_at=st.one_of(st.none(), st.integers(0, 120)),
)
def test_feed_all_in_batches_gives_what_feed_gives_line_by_line(
    mode: Handoff, events: list[list[str]], cuts: list[int], bad: object, bad_at: int | None
) -> None:
    lines: list[object] = [line for event in events for line in event]
    if bad_at is not None:
        lines.insert(min(bad_at, len(lines)), bad)  # a line of the wrong type, somewhere
    bounds = sorted(min(c, len(lines)) for c in cuts)
    batches = [lines[i:j] for i, j in zip([0, *bounds], [*bounds, len(lines)], strict=True)]
    bulk, one_by_one = SSEParser(), SSEParser()
    for parser in (bulk, one_by_one):
        if mode is not Handoff.FRAMES:
            parser._hand(mode)
    expected = _frames(one_by_one, [[line] for line in lines])
    assert _frames(bulk, batches) == expected


def test_feed_all_reads_long_runs_of_usual_events_as_feed_does() -> None:
    lines = ["data: first", ""]
    lines += [x for n in range(20) for x in (f"event: e{n}", f'data: {{"n": {n}}}', "")]
    lines += [x for n in range(20) for x in (f"data: {n}", "")]
    lines += ["id: 9", "event: last", "data: a", "data: b", "", "retry: 5", "event: x"]
    # Each batch but the first and last one run of one shape (the first read in bulk).
    cuts = [(0, 1), (1, 62), (62, 102), (102, len(lines))]
    for marked in (None, 29):
        if marked is not None:  # an event line marked cut inside a run: feed keeps the mark
            lines[marked] = Unterminated(lines[marked])
        for mode in (Handoff.FRAMES, Handoff.STRINGS, Handoff.PAIRS):
            bulk, one_by_one = SSEParser(), SSEParser()
            for parser in (bulk, one_by_one):
                if mode is not Handoff.FRAMES:
                    parser._hand(mode)
            out: list[SSEFrame] = []
            for start, stop in cuts:
                bulk.feed_all(lines[start:stop], out)
            expected = [item for line in lines for item in one_by_one.feed(line)]
            assert out == expected
            kinds = [type(getattr(item, "event", item)) for item in out]
            assert kinds == [type(getattr(item, "event", item)) for item in expected]
            assert bulk.close() == one_by_one.close()
