"""`to_sse`: items to SSE event bytes, keep-alives while idle, the end and errors as events.

Virtual time (TestScheduler): subscribed at 200, disposed at 1000, one tick is one second.
The property at the end decodes the bytes back (rs.lines, rs.sse_frames, rs.decode, or the
codec for the "rxstream" format) and finds the items that went in.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex import abc
from reactivex import operators as ops
from reactivex.subject import Subject
from reactivex.testing import ReactiveTest, TestScheduler

import rxstream as rs
from rxstream.core import dialects
from rxstream.core import wire as codec
from rxstream.core.dialects.sse_encoder import SSE_DIALECTS, SSEEncoder
from rxstream.models import ChatChunk, StreamEntry
from tests.support.operators import error_of, marbles_testing, on_error

on_next, on_completed = ReactiveTest.on_next, ReactiveTest.on_completed
subscribe = ReactiveTest.subscribe

A, B = rs.TextDelta("a"), rs.TextDelta("b")
KA = b": keep-alive\n\n"
DONE = b'event: done\nid: {}\ndata: {{"type":"done","version":1}}\n\n'


def ev(item: Any, id: int | str) -> bytes:
    """The rxstream event of `item` with `id`."""
    obj = codec.encode(item)
    data = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return f"event: {obj['type']}\nid: {id}\ndata: {data}\n\n".encode()


def done(id: int | str) -> bytes:
    return DONE.decode().format(id).encode()


CASES = [
    pytest.param(
        [on_next(210, A), on_next(220, B), on_completed(230)],
        [on_next(210, ev(A, 1)), on_next(220, ev(B, 2)), on_next(230, done(3)), on_completed(230)],
        subscribe(200, 230),
        id="items-then-done",
    ),
    pytest.param(
        [on_next(210, A), on_error(230, rs.ProviderError("boom"))],
        [
            on_next(210, ev(A, 1)),
            on_next(220, KA),
            on_next(230, ev(rs.ProviderError("boom"), 2)),
            on_completed(230),
        ],
        subscribe(200, 230),
        id="error-becomes-the-error-event-then-completes",
    ),
    pytest.param(
        [on_next(205, A), on_next(225, B), on_completed(250)],
        [
            on_next(205, ev(A, 1)),
            on_next(215, KA),
            on_next(225, ev(B, 2)),
            on_next(235, KA),
            on_next(245, KA),
            on_next(250, done(3)),
            on_completed(250),
        ],
        subscribe(200, 250),
        id="keepalive-after-ten-silent-ticks-clock-restarts-on-each-event",
    ),
    pytest.param(
        [on_next(225, A), on_completed(226)],
        [
            on_next(210, KA),
            on_next(220, KA),
            on_next(225, ev(A, 1)),
            on_next(226, done(2)),
            on_completed(226),
        ],
        subscribe(200, 226),
        id="keepalive-before-the-first-item",
    ),
    pytest.param(
        [on_next(209, StreamEntry("7-0", A)), on_next(219, StreamEntry("7-1", B))],
        [
            on_next(209, ev(A, "7-0")),
            on_next(219, ev(B, "7-1")),
            on_next(229, KA),
            on_next(239, KA),
        ],
        subscribe(200, 245),
        id="entries-and-disposal-stops-the-timer",
    ),
]


@pytest.mark.parametrize(("messages", "expected", "window"), CASES)
def test_marbles(messages: list[Any], expected: list[Any], window: Any) -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(messages)
    disposed = window.unsubscribe if window.unsubscribe != 1000 else 1000
    results = scheduler.start(
        lambda: source.pipe(rs.to_sse("rxstream", keepalive=10, scheduler=scheduler)),
        disposed=disposed,
    )
    assert results.messages == expected
    assert source.subscriptions == [window]


def test_marble_sketch_of_the_docstring() -> None:
    with marbles_testing(timespan=1.0) as (start, cold, _hot, exp):
        bad = rs.ProviderError("no")
        source = cold("-a----#", {"a": A}, bad)
        expected = exp("-A--k-(E,|)", {"A": ev(A, 1), "k": KA, "E": ev(bad, 2)})
        assert start(source.pipe(rs.to_sse("rxstream", keepalive=3))) == expected


def test_a_dialect_gives_several_events_for_one_delta() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, A), on_completed(220))
    results = scheduler.start(lambda: source.pipe(rs.to_sse("anthropic", keepalive=None)))
    heads = [
        (m.time, *m.value.value.split(b"\n")[:2]) for m in results.messages if m.value.kind == "N"
    ]
    assert heads == [
        (210, b"event: message_start", b"id: 1"),
        (210, b"event: content_block_start", b"id: 2"),
        (210, b"event: ping", b"id: 3"),
        (210, b"event: content_block_delta", b"id: 4"),
        (220, b"event: content_block_stop", b"id: 5"),
        (220, b"event: message_delta", b"id: 6"),
        (220, b"event: message_stop", b"id: 7"),
    ]


def test_an_item_the_format_cannot_send_is_an_error_event_then_the_error() -> None:
    scheduler = TestScheduler()
    messages: list[Any] = [on_next(210, A), on_next(220, ChatChunk({"choices": []}))]
    source = scheduler.create_hot_observable([*messages, on_next(230, B)])
    results = scheduler.start(lambda: source.pipe(rs.to_sse("openai-chat", keepalive=None)))
    assert [m.time for m in results.messages] == [210, 210, 220, 220]
    assert results.messages[2].value.value.startswith(b'id: 3\ndata: {"error":')
    assert b"internal error in the stream (TypeError)" in results.messages[2].value.value
    error = error_of(results.messages[3])
    assert isinstance(error, TypeError)
    assert "add rs.decode()" in str(error)
    assert source.subscriptions == [subscribe(200, 220)]


def test_bad_arguments_fail_at_once() -> None:
    with pytest.raises(ValueError, match="streams NDJSON lines"):
        rs.to_sse("ollama")
    with pytest.raises(ValueError, match="keepalive must be a positive"):
        rs.to_sse(keepalive=0)
    with pytest.raises(ValueError, match="no renderer options"):
        rs.to_sse("rxstream", model="m")


def test_renderer_options_and_retry_and_last_event_id() -> None:
    out = (
        reactivex.of(StreamEntry("2-0", A))
        .pipe(
            rs.to_sse("openai-chat", keepalive=None, retry=500, after="1-0", model="x"),
            ops.to_list(),
        )
        .run()
    )
    assert out[0].startswith(b"id: 1-0\nretry: 500\ndata: {")
    assert b'"model":"x"' in out[0]
    assert out[-1] == b"id: 2-0\ndata: [DONE]\n\n"


def test_two_subscribers_count_their_own_ids() -> None:
    events = reactivex.of(A).pipe(rs.to_sse("rxstream", keepalive=None))
    assert events.pipe(ops.to_list()).run() == events.pipe(ops.to_list()).run()


def test_keepalive_timer_on_threads_while_the_source_is_silent() -> None:
    subject: Subject[rs.Delta] = Subject()
    got: list[bytes] = []
    seen = threading.Condition()

    def on_next(event: bytes) -> None:
        with seen:
            got.append(event)
            seen.notify_all()

    disposable = subject.pipe(rs.to_sse("rxstream", keepalive=0.01)).subscribe(on_next)
    with seen:
        assert seen.wait_for(lambda: got.count(KA) >= 2, timeout=5)
    subject.on_next(A)
    subject.on_completed()
    disposable.dispose()
    with seen:
        assert ev(A, 1) in got
        assert got[-1] == done(2)
        assert got.count(ev(A, 1)) == 1


# --------------------------------------------------------------------------- decoding back

text = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(["\ud83d", "\ude00", "\r", "\u2028"])),
    max_size=12,
)
script_items = st.one_of(
    st.builds(rs.TextDelta, text),
    st.builds(rs.ReasoningDelta, text),
    # A whole call per delta (numbered in the test): Gemini sends arguments as one object.
    st.builds(lambda t: rs.ToolCallDelta(0, json.dumps({"q": t}), "call", "f"), text),
    st.builds(rs.Usage, st.integers(0, 99), st.integers(0, 99), st.integers(0, 198)),
)


def numbered(script: list[Any]) -> list[Any]:
    """The script with its tool calls numbered 0, 1, ... (ids to match)."""
    out: list[Any] = []
    calls = 0
    for item in script:
        if isinstance(item, rs.ToolCallDelta):
            item = rs.ToolCallDelta(calls, item.arguments, f"call_{calls}", item.name)
            calls += 1
        out.append(item)
    return out


def decode_back(body: bytes, format: str, cuts: list[int]) -> tuple[list[Any], list[Any]]:
    """Decode `body` cut at `cuts` through the operators; (items, frames)."""
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    frames: list[rs.SSEFrame] = []
    reactivex.from_iterable(pieces).pipe(rs.lines(), rs.sse_frames()).subscribe(frames.append)
    if format == "rxstream":
        items = [codec.decode(json.loads(f.data)) for f in frames if f.event != "done"]
        return items, frames
    items = []
    errors: list[Exception] = []
    reactivex.from_iterable(frames).pipe(rs.decode(format)).subscribe(items.append, errors.append)
    return items + errors, frames


def reference(format: str, script: list[Any], error: Exception | None) -> list[Any]:
    """What the dialect's own frames decode to: the renderer's frames, fed as they are."""
    renderer, decoder = dialects.renderer(format), dialects.decoder(format)
    frames = [f for d in script for f in renderer.feed(d)]
    frames += renderer.close() if error is None else renderer.error(rs.ProviderError(str(error)))
    out: list[Any] = []
    try:
        for frame in frames:
            out += decoder.feed(frame)
        out += decoder.close() if error is None else []
    except (rs.ProviderError, rs.EmptyStreamError) as exc:
        # A script of nothing but its plain "stop" brings no answer (EmptyStreamError).
        out.append(exc)
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    format=st.sampled_from(SSE_DIALECTS),
    script=st.lists(script_items, max_size=8),
    entries=st.booleans(),
    fail=st.booleans(),
    data=st.data(),
)
def test_decoding_the_bytes_gives_the_items_back(
    format: str, script: list[Any], entries: bool, fail: bool, data: st.DataObject
) -> None:
    script = numbered(script)
    if format != "rxstream":
        # Every dialect expresses these only for choice 0 and needs a finish to be whole.
        script = [*script, rs.Finish("stop")]
    items = [StreamEntry(f"{i}-0", d) for i, d in enumerate(script)] if entries else script
    error = rs.ProviderError("went away") if fail else None
    source = reactivex.from_iterable(items)
    if error is not None:
        source = source.pipe(ops.concat(reactivex.throw(error)))
    events: list[bytes] = source.pipe(rs.to_sse(format, keepalive=None), ops.to_list()).run()
    # Keep-alives may come between any two events: decoding ignores them.
    ka = SSEEncoder(format).keepalive()
    spots = data.draw(st.lists(st.integers(0, len(events)), max_size=3))
    for spot in sorted(spots, reverse=True):
        events.insert(spot, ka)
    body = b"".join(events)
    cuts = sorted(data.draw(st.sets(st.integers(1, max(1, len(body) - 1)), max_size=6)))
    cuts = [c for c in cuts if 0 < c < len(body)]
    got, frames = decode_back(body, format, cuts)

    if format == "rxstream":
        if error is None:
            assert got == script
            assert frames[-1].event == "done"
        else:
            assert got[:-1] == script
            assert isinstance(got[-1], rs.ProviderError)
            assert (got[-1].message, str(got[-1])) == (error.message, str(error))
    else:
        want = reference(format, script, error)
        assert [type(x) for x in got] == [type(x) for x in want]
        assert [x for x in got if not isinstance(x, Exception)] == [
            x for x in want if not isinstance(x, Exception)
        ]
        if error is not None:
            assert isinstance(got[-1], rs.ProviderError)
            assert "went away" in str(got[-1])
    # The ids: numbered events count up; entry streams end on the last entry's id.
    ids = [frame.id for frame in frames]
    if format == "gemini":
        # google-genai reads data lines only: Gemini events carry no id.
        assert ids == [None] * len(frames)
    elif entries and script:
        assert ids[-1] == f"{len(script) - 1}-0"
    elif not entries:
        assert ids == [str(n) for n in range(1, len(frames) + 1)]


# ------------------------------------------------------------------------ the subscription object


class Recorder(abc.ObserverBase[bytes]):
    """An observer that keeps what it was told."""

    def __init__(self) -> None:
        self.events: list[bytes] = []
        self.done: list[str] = []

    def on_next(self, event: bytes) -> None:
        self.events.append(event)

    def on_error(self, error: Exception) -> None:
        self.done.append(f"error: {error}")

    def on_completed(self) -> None:
        self.done.append("completed")


def test_writer_a_keepalive_timer_armed_before_the_last_event_is_stale() -> None:
    from rxstream.operators.to_sse import SSEWriter

    seen = Recorder()
    writer = SSEWriter(seen, SSEEncoder("rxstream"), TestScheduler(), 3.0)
    writer.run(reactivex.never())
    armed = writer.generation
    writer.on_next(A)
    writer.keepalive_due(armed)  # the clock restarted with the event
    assert seen.events == SSEEncoder("rxstream").feed(A)
    writer.keepalive_due(writer.generation)
    assert seen.events[-1] == b": keep-alive\n\n"


def test_writer_nothing_after_the_end() -> None:
    from rxstream.operators.to_sse import SSEWriter

    seen = Recorder()
    writer = SSEWriter(seen, SSEEncoder("rxstream"), TestScheduler(), 3.0)
    writer.run(reactivex.never())
    writer.on_error(ValueError("boom"))
    armed = writer.generation
    writer.keepalive_due(armed)
    writer.on_next(A)
    writer.on_completed()
    assert seen.done == ["completed"]  # an upstream error is the error event, then the end
    assert b"event: error" in seen.events[-1]
    assert not any(event.startswith(b":") for event in seen.events)


def test_writer_without_keepalive_arms_no_timer() -> None:
    from rxstream.operators.to_sse import SSEWriter

    seen = Recorder()
    writer = SSEWriter(seen, SSEEncoder("rxstream"))
    writer.run(reactivex.of(A))
    assert writer.generation == 0
    assert seen.done == ["completed"]
