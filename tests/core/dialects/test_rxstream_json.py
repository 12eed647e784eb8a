"""The "rxstream" format read back: what SSEEncoder("rxstream") writes, decoded to its items."""

from __future__ import annotations

import json
from typing import Any

import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex.testing import ReactiveTest, TestScheduler

import rxstream as rs
from rxstream.core import wire
from rxstream.core.dialects import (
    DIALECTS,
    FORMATS,
    AutoDecoder,
    decoder,
    detect,
    http_error,
    renderer,
)
from rxstream.core.dialects.rxstream_json import RxstreamDecoder
from rxstream.core.dialects.sse_encoder import SSEEncoder
from rxstream.core.lines import LineSplitter
from rxstream.core.sse import SSEParser
from rxstream.errors import (
    EmptyStreamError,
    HTTPStatusError,
    MalformedChunkError,
    ProviderError,
    StoredStreamError,
    StreamError,
    StreamTimeoutError,
    TruncatedStreamError,
)
from rxstream.models import SSEFrame, StreamEntry
from tests.support.chunking import outputs_for_all_chunkings
from tests.support.codec_strategies import every_field, items

ANSWER: list[Any] = [
    rs.ReasoningDelta("Think"),
    rs.TextDelta("Hel"),
    rs.TextDelta("lo\nthere"),  # a line break inside the data stays one event
    rs.ToolCallDelta(0, '{"city": "Par', id="call_1", name="get_weather"),
    rs.ToolCallDelta(0, 'is"}'),
    rs.Finish("tool_calls", raw="tool_use"),
    rs.Usage(12, 7, 19, reasoning_tokens=3),
    rs.ToolCall(0, "call_1", "get_weather", '{"city": "Paris"}'),
    rs.Message(0, content="Hello", tool_calls=(rs.ToolCall(0, "c", "f", "{}"),)),
]


class _Frames:
    """Bytes -> SSEFrames -> the rxstream decoder: one machine for `outputs_for_all_chunkings`."""

    def __init__(self, **options: Any) -> None:
        self._lines = LineSplitter()
        self._sse = SSEParser()
        self._decoder = RxstreamDecoder(**options)

    def _frames(self, lines: list[str]) -> list[Any]:
        out: list[Any] = []
        for line in lines:
            for frame in self._sse.feed(line):
                out += self._decoder.feed(frame)
        return out

    def feed(self, data: bytes) -> list[Any]:
        return self._frames(self._lines.feed(data))

    def close(self) -> list[Any]:
        out = self._frames(self._lines.close())
        out += [f for frame in self._sse.close() for f in self._decoder.feed(frame)]
        return out + self._decoder.close()


def encoded(items: list[Any], *, ids: list[str] | None = None, end: object = None) -> bytes:
    """What `to_sse(format="rxstream")` sends for `items` (as entries when `ids` are given)."""
    encoder = SSEEncoder("rxstream")
    out = b""
    for n, item in enumerate(items):
        events = encoder.feed(StreamEntry(ids[n], item) if ids else item)
        out += b"".join(events)
    if isinstance(end, BaseException):
        out += b"".join(encoder.error(end))
    elif end is None:
        out += b"".join(encoder.close())
    return out


def frame(obj: Any, event: str | None = None, id: str | None = None) -> SSEFrame:
    data = obj if isinstance(obj, str) else json.dumps(obj)
    if event is None:
        event = obj["type"] if isinstance(obj, dict) else "message"
    return SSEFrame(data, event=event, id=id)


def decoded(data: bytes, **options: Any) -> list[Any]:
    out: list[Any] = []
    errors: list[Exception] = []
    reactivex.of(data).pipe(
        rs.lines(), rs.sse_frames(), rs.decode("rxstream", **options)
    ).subscribe(out.append, errors.append)
    if errors:
        raise errors[0]
    return out


# --------------------------------------------------------------------------- round trips


def test_every_chunking_gives_the_items_back() -> None:
    assert outputs_for_all_chunkings(_Frames, encoded(ANSWER)) == ANSWER


def test_ids_give_entries_with_the_event_ids() -> None:
    ids = [f"1700000000000-{n}" for n in range(len(ANSWER))]
    got = outputs_for_all_chunkings(lambda: _Frames(ids=True), encoded(ANSWER, ids=ids))
    assert got == [StreamEntry(i, item) for i, item in zip(ids, ANSWER, strict=True)]
    # Plain items are numbered by the encoder: the ids are its counter.
    assert [e.id for e in decoded(encoded(ANSWER[:3]), ids=True)] == ["1", "2", "3"]


@settings(max_examples=150)
@given(st.lists(items, max_size=6), st.data())
def test_any_items_come_back_equal_through_the_operators(values: list[Any], data: Any) -> None:
    text = encoded(values)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    out: list[Any] = []
    errors: list[Exception] = []
    reactivex.from_iterable(pieces).pipe(
        rs.lines(), rs.sse_frames(), rs.decode("rxstream")
    ).subscribe(out.append, errors.append)
    assert errors == []
    assert out == values
    assert [every_field(v) for v in out] == [every_field(v) for v in values]


def test_a_stream_resumed_after_its_last_item_is_complete_and_empty() -> None:
    encoder = SSEEncoder("rxstream", after="1700-3")
    assert decoded(b"".join(encoder.close())) == []


@pytest.mark.parametrize(
    "error",
    [
        ProviderError("Overloaded", type="overloaded_error", code=529),
        HTTPStatusError(429, body="slow down", retry_after=2.0),
        TruncatedStreamError("cut", unfinished=(0,)),
        StreamTimeoutError("heartbeat", 10.0, "the producer stopped writing"),
        StoredStreamError("chat:1", "entries 5-0 to 9-0 were trimmed"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_the_stored_error_is_raised_as_its_class_after_the_items(error: StreamError) -> None:
    out: list[Any] = []
    errors: list[Exception] = []
    reactivex.of(encoded(ANSWER[:2], end=error)).pipe(
        rs.lines(), rs.sse_frames(), rs.decode("rxstream")
    ).subscribe(out.append, errors.append)
    assert out == ANSWER[:2]
    [raised] = errors
    assert type(raised) is type(error)
    assert str(raised) == str(error)
    attributes = dict(vars(raised))
    partial = attributes.pop("partial")  # what the client read before it, not what was sent
    assert attributes == json.loads(json.dumps(vars(error)))
    assert partial is not None
    assert (partial.reasoning, partial.content) == ("Think", "Hel")


def test_an_error_of_a_class_this_version_does_not_know_is_a_plain_stream_error() -> None:
    obj = {"type": "error", "error": "QuantumError", "message": "entangled", "attributes": {}}
    with pytest.raises(StreamError, match="entangled") as raised:
        RxstreamDecoder().feed(frame(obj))
    assert type(raised.value) is StreamError


def test_a_server_bug_arrives_as_a_stream_error_naming_only_its_class() -> None:
    with pytest.raises(StreamError, match=r"internal error in the stream \(KeyError\)"):
        decoded(encoded([rs.TextDelta("a")], end=KeyError("secret")))


# --------------------------------------------------------------------------- bad input

TEXT = {"type": "text", "text": "a", "choice": 0}


@pytest.mark.parametrize(
    ("item", "match"),
    [
        (SSEFrame("not json", event="text"), "invalid JSON"),
        (SSEFrame("[1, 2]", event="text"), "a JSON array, not an object"),
        (frame(TEXT, event="reasoning"), "an event named 'reasoning' whose data has type 'text'"),
        (frame(TEXT, event="message"), "an event named 'message' whose data has type 'text'"),
        (frame({"type": "telepathy"}), "unknown item type 'telepathy'"),
        (frame({**TEXT, "colour": "red"}), r"unknown field\(s\) \['colour'\]"),
        (frame({"type": "text"}), "cannot be built"),
        (frame({"type": "done", "version": "1"}), "a done event whose version is '1'"),
        (frame({"type": "done"}), "a done event whose version is None"),
        (SSEFrame('{"choices": [{"delta": {"content": "a"}}]}'), "whose data has type None"),
        (SSEFrame("[DONE]"), "invalid JSON"),
    ],
    ids=[
        "not json",
        "array",
        "event disagrees",
        "default event for text",
        "unknown type",
        "unknown field",
        "missing field",
        "version not int",
        "no version",
        "an openai chunk",
        "openai done",
    ],
)
def test_what_is_not_of_the_format_is_malformed_naming_the_dialect(item: Any, match: str) -> None:
    with pytest.raises(MalformedChunkError, match=match) as raised:
        RxstreamDecoder().feed(item)
    assert raised.value.dialect == "rxstream"
    # Skipped instead, the stream goes on.
    skipping = RxstreamDecoder(on_malformed="skip")
    assert skipping.feed(item) == []
    assert skipping.feed(frame(TEXT)) == [rs.TextDelta("a")]


def test_the_end_before_done_is_truncated_and_nothing_at_all_is_empty() -> None:
    with pytest.raises(TruncatedStreamError, match="rxstream stream ended before the done event"):
        decoded(encoded(ANSWER[:2], end=False))
    with pytest.raises(EmptyStreamError, match="without any content or the done event"):
        decoded(b": keep-alive\n\n")


def test_lifecycle_and_the_kind_of_input() -> None:
    with pytest.raises(TypeError, match="the rxstream decoder takes SSEFrame items, got str"):
        RxstreamDecoder().feed("text")
    with pytest.raises(MalformedChunkError, match=r"an NDJSON line.*the ollama dialect"):
        RxstreamDecoder().feed('{"model": "m", "done": true}')
    machine = RxstreamDecoder()
    machine.feed(frame({"type": "done", "version": 1}))
    assert machine.done
    with pytest.raises(RuntimeError, match="is done \\(the done event arrived\\)"):
        machine.feed(frame(TEXT))
    assert machine.close() == []
    with pytest.raises(TypeError, match="ids must be a bool"):
        RxstreamDecoder(ids="yes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- registration


def test_it_is_a_format_beside_the_dialects_not_one_of_them() -> None:
    assert "rxstream" not in DIALECTS
    assert (*DIALECTS, "rxstream") == FORMATS
    assert isinstance(decoder("rxstream"), RxstreamDecoder)
    with pytest.raises(ValueError, match="rxstream's own event format, not a provider's dialect"):
        renderer("rxstream")
    with pytest.raises(ValueError, match="rxstream's own event format, not a provider's dialect"):
        http_error("rxstream", 500, "boom")
    with pytest.raises(ValueError, match="or 'rxstream' for rxstream's own event format"):
        decoder("rxstreem")


@pytest.mark.parametrize("name", ["openai-chat", "auto"])
def test_ids_are_for_the_rxstream_format_only(name: str) -> None:
    with pytest.raises(ValueError, match=f"ids=True is for the 'rxstream' format.*not '{name}'"):
        decoder(name, ids=True)
    with pytest.raises(ValueError, match="ids=True is for the 'rxstream' format"):
        rs.decode(name, ids=True)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    "item",
    [
        frame(TEXT),
        frame(wire.encode(rs.Message(0, content="Hi"))),
        frame({"type": "done", "version": 1}),
        frame({"type": "error", "error": "ProviderError", "message": "m", "attributes": {}}),
    ],
    ids=["text", "message (the default event)", "done", "error"],
)
def test_detect_tells_the_format_by_event_name_and_type(item: SSEFrame) -> None:
    assert detect(item) == "rxstream"


@pytest.mark.parametrize(
    ("item", "dialect"),
    [
        # Anthropic's error event: its "error" is an object, not a class name.
        (
            frame({"type": "error", "error": {"type": "overloaded_error", "message": "m"}}),
            ProviderError,
        ),
        # OpenAI Responses' error event: no "error" key at all.
        (frame({"type": "error", "code": "server_error", "message": "m"}), ProviderError),
        # An item type named by the data but not by the event.
        (SSEFrame(json.dumps(TEXT)), MalformedChunkError),
    ],
    ids=["anthropic error", "responses error", "type without its event"],
)
def test_detect_leaves_other_dialects_errors_alone(item: SSEFrame, dialect: type) -> None:
    with pytest.raises(dialect):
        detect(item)


def test_auto_decodes_the_format_and_raises_its_error() -> None:
    out: list[Any] = []
    errors: list[Exception] = []
    reactivex.of(encoded(ANSWER, end=ProviderError("Overloaded", type="overloaded_error"))).pipe(
        rs.lines(), rs.sse_frames(), rs.decode()
    ).subscribe(out.append, errors.append)
    assert out == ANSWER
    assert [type(e) for e in errors] == [ProviderError]
    auto = AutoDecoder()
    auto.feed(frame(TEXT))
    assert auto.dialect == "rxstream"


# --------------------------------------------------------------------------- the operator


def test_the_operator_completes_at_done_and_disposes_the_upstream() -> None:
    scheduler = TestScheduler()
    done = frame({"type": "done", "version": 1}, id="3")
    source = scheduler.create_hot_observable(
        ReactiveTest.on_next(210, frame(TEXT, id="1")),
        ReactiveTest.on_next(220, frame({**TEXT, "text": "b"}, id="2")),
        ReactiveTest.on_next(230, done),
        ReactiveTest.on_next(240, frame(TEXT, id="4")),
        ReactiveTest.on_completed(250),
    )
    result = scheduler.start(lambda: source.pipe(rs.decode("rxstream", ids=True)))
    assert result.messages == [
        ReactiveTest.on_next(210, StreamEntry("1", rs.TextDelta("a"))),
        ReactiveTest.on_next(220, StreamEntry("2", rs.TextDelta("b"))),
        ReactiveTest.on_completed(230),
    ]
    assert source.subscriptions == [ReactiveTest.subscribe(200, 230)]


def test_the_operator_ends_with_the_stored_error_and_disposes_the_upstream() -> None:
    scheduler = TestScheduler()
    error = wire.encode_error(StreamTimeoutError("heartbeat", 10.0, "producer gone"))
    source = scheduler.create_hot_observable(
        ReactiveTest.on_next(210, frame(TEXT)),
        ReactiveTest.on_next(220, frame(error)),
        ReactiveTest.on_completed(250),
    )
    result = scheduler.start(lambda: source.pipe(rs.decode("rxstream")))
    assert result.messages[0] == ReactiveTest.on_next(210, rs.TextDelta("a"))
    assert result.messages[1].time == 220
    failure = result.messages[1].value.exception
    assert isinstance(failure, StreamTimeoutError)
    assert failure.limit == "heartbeat"
    assert source.subscriptions == [ReactiveTest.subscribe(200, 220)]
