"""A source that knows its wire: `sse_frames()` lets what is not SSE through, `decode()` frames.

`rs.from_request(client, request)` labels its source with the wire of the
request's dialect (`WireSource`); the sources tests and tests/test_first_pipeline.py
run that over a real server. Here the operators' side, on labelled cold
observables: the same pipeline `sse_frames(), decode(d)` reads each wire, the
upstream is subscribed once and released at the end marker, and an unlabelled
source is framed only by what the pipeline names, as before.
"""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.core.eventstream import encode_message
from rxstream.models import TextDelta
from rxstream.operators.wire import SourceWire, WireSource, wire_of
from tests.support.operators import on_completed, on_next, subscribe

SSE = ['data: {"choices":[{"delta":{"content":"Hi"}}]}', "", "data: [DONE]", ""]
NDJSON = [
    '{"model":"m","message":{"role":"assistant","content":"Hi"},"done":false}',
    '{"model":"m","message":{"role":"assistant","content":""},"done":true,"done_reason":"stop"}',
]
EVENTSTREAM = [
    encode_message(
        {":message-type": "event", ":event-type": "contentBlockDelta"},
        b'{"contentBlockIndex":0,"delta":{"text":"Hi"}}',
    ),
    encode_message(
        {":message-type": "event", ":event-type": "messageStop"}, b'{"stopReason":"end_turn"}'
    ),
]
CASES: list[tuple[str, SourceWire, list[Any]]] = [
    ("openai-chat", "sse", SSE),
    ("ollama", "ndjson", NDJSON),
    ("bedrock", "eventstream", [b"".join(EVENTSTREAM)[:7], b"".join(EVENTSTREAM)[7:]]),
]


def texts(source: Observable[Any], *operators: Any) -> list[str]:
    got: list[Any] = []
    source.pipe(*operators).subscribe(got.append)
    return [item.text for item in got if isinstance(item, TextDelta)]


@pytest.mark.parametrize(("dialect", "wire", "items"), CASES, ids=[c[0] for c in CASES])
def test_the_same_pipeline_reads_each_wire(
    dialect: str, wire: SourceWire, items: list[Any]
) -> None:
    source = WireSource(reactivex.from_iterable(items), wire)
    assert texts(source, rs.sse_frames(), rs.decode(dialect)) == ["Hi"]
    assert texts(source, rs.sse_frames(), rs.decode()) == ["Hi"]  # detected as well
    assert texts(source, rs.decode(dialect)) == ["Hi"]  # decode frames what it needs


def test_an_explicit_framing_is_not_doubled() -> None:
    source = WireSource(reactivex.from_iterable([b"".join(EVENTSTREAM)]), "eventstream")
    assert texts(source, rs.eventstream_frames(), rs.decode("bedrock")) == ["Hi"]
    lines = WireSource(reactivex.from_iterable(SSE), "sse")
    assert texts(lines, rs.sse_frames(), rs.decode("openai-chat")) == ["Hi"]


def test_an_unlabelled_source_is_framed_as_the_pipeline_says() -> None:
    # NDJSON lines read as SSE fields (unknown ones, ignored): nothing comes through.
    errors: list[Exception] = []
    reactivex.from_iterable(NDJSON).pipe(rs.sse_frames(), rs.decode("ollama")).subscribe(
        on_error=errors.append
    )
    assert [type(e) for e in errors] == [rs.EmptyStreamError]
    assert wire_of(reactivex.of(1)) is None


def test_sse_frames_passes_the_labelled_source_itself() -> None:
    source = WireSource(reactivex.from_iterable(NDJSON), "ndjson")
    passed: object = rs.sse_frames()(source)
    assert passed is source
    assert wire_of(source) == "ndjson"


def test_one_subscription_released_at_the_end_marker() -> None:
    scheduler = TestScheduler()
    hot = scheduler.create_hot_observable(
        on_next(210, NDJSON[0]), on_next(220, NDJSON[1]), on_next(230, "late"), on_completed(300)
    )
    source = WireSource(hot, "ndjson")
    results = scheduler.start(lambda: source.pipe(rs.sse_frames(), rs.decode("ollama")))
    assert results.messages[0] == on_next(210, TextDelta("Hi"))
    assert results.messages[-1] == on_completed(220)
    assert hot.subscriptions == [subscribe(200, 220)]


def test_a_wire_of_no_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="wire must be one of"):
        WireSource(reactivex.empty(), "json")  # type: ignore[arg-type]
