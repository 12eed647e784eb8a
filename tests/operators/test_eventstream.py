"""eventstream_frames(): the EventStreamParser under Rx: values, completion, errors and the
upstream window."""

from __future__ import annotations

import json

import pytest
import reactivex
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.core.eventstream import encode_message
from rxstream.errors import MalformedChunkError, TruncatedStreamError
from rxstream.models import EventStreamMessage
from tests.support.operators import (
    error_of,
    marbles_testing,
    on_completed,
    on_error,
    on_next,
    subscribe,
)

M1 = EventStreamMessage({":event-type": "messageStart"}, b'{"role":"assistant"}')
M2 = EventStreamMessage({":event-type": "contentBlockDelta", "n": 2}, b'{"delta":{"text":"a"}}')
M3 = EventStreamMessage({":event-type": "messageStop", "ok": True}, b'{"stopReason":"end_turn"}')
B1, B2, B3 = (encode_message(m.headers, m.payload) for m in (M1, M2, M3))


def test_marbles_a_message_cut_in_its_prelude_and_two_in_one_chunk() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        chunks = {"a": B1[:5], "b": B1[5:] + B2[:20], "c": B2[20:] + B3}
        source = cold("-a-b-c----|", chunks)
        # a group spans its width: (y,z) covers ticks 5-9
        expected = exp("---x-(y,z)|", {"x": M1, "y": M2, "z": M3})
        assert start(source.pipe(rs.eventstream_frames())) == expected


def test_values_completion_and_upstream_window() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(150, B3),  # before the subscription: never seen
        on_next(210, B1[:11]),
        on_next(220, B1[11:12]),
        on_next(230, B1[12:] + B2),
        on_next(240, b""),
        on_next(250, bytearray(B3)),
        on_completed(260),
    )
    results = scheduler.start(lambda: source.pipe(rs.eventstream_frames()))
    assert results.messages == [
        on_next(230, M1),
        on_next(230, M2),
        on_next(250, M3),
        on_completed(260),
    ]
    assert source.subscriptions == [subscribe(200, 260)]


def test_a_bad_checksum_comes_after_the_good_messages_and_disposes_the_upstream() -> None:
    broken = B2[:-1] + bytes((B2[-1] ^ 0xFF,))
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, B1 + broken + B3), on_next(220, B3), on_completed(300)
    )
    results = scheduler.start(lambda: source.pipe(rs.eventstream_frames()))
    assert results.messages[0] == on_next(210, M1)
    assert results.messages[1].time == 210
    error = error_of(results.messages[1])
    assert isinstance(error, MalformedChunkError)
    assert f"at byte {len(B1)}: message CRC32" in str(error)
    assert len(results.messages) == 2
    assert source.subscriptions == [subscribe(200, 210)]


def test_input_ending_inside_a_message_is_truncated_at_completion() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(on_next(10, B1 + B2[:30]), on_completed(20))
    results = scheduler.start(lambda: source.pipe(rs.eventstream_frames()))
    assert results.messages[0] == on_next(210, M1)
    assert results.messages[1].time == 220
    error = error_of(results.messages[1])
    assert isinstance(error, TruncatedStreamError)
    assert f"30 of its {len(B2)} bytes" in str(error)
    assert source.subscriptions == [subscribe(200, 220)]


def test_a_str_chunk_errors_and_disposes_the_upstream() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, "data: {}\n"), on_next(220, B1), on_completed(300)
    )
    results = scheduler.start(lambda: source.pipe(rs.eventstream_frames()))
    assert len(results.messages) == 1
    error = error_of(results.messages[0])
    assert isinstance(error, TypeError)
    assert "body='bytes'" in str(error)
    assert source.subscriptions == [subscribe(200, 210)]


def test_an_upstream_error_passes_through() -> None:
    scheduler = TestScheduler()
    boom = RuntimeError("boom")
    source = scheduler.create_hot_observable(on_next(210, B1), on_error(220, boom))
    results = scheduler.start(lambda: source.pipe(rs.eventstream_frames()))
    assert results.messages[0] == on_next(210, M1)
    assert error_of(results.messages[1]) is boom


def test_each_subscription_gets_its_own_parser() -> None:
    source = reactivex.of(B1[:7], B1[7:])
    frames = source.pipe(rs.eventstream_frames())
    first: list[EventStreamMessage] = []
    second: list[EventStreamMessage] = []
    frames.subscribe(first.append)
    frames.subscribe(second.append)
    assert first == second == [M1]


def test_the_limit_is_checked_when_the_pipe_is_built() -> None:
    with pytest.raises(ValueError, match="at least 16"):
        rs.eventstream_frames(frame_limit=8)
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(on_next(210, B2), on_completed(300))
    results = scheduler.start(lambda: source.pipe(rs.eventstream_frames(frame_limit=len(B2) - 1)))
    assert isinstance(error_of(results.messages[0]), MalformedChunkError)


def test_fused_with_decode_the_stream_ends_at_the_end_marker() -> None:
    # eventstream_frames -> decode("bedrock") fuse into one subscription; the decoder's
    # end (metadata after messageStop) disposes the byte source.
    def event(name: str, payload: dict[str, object]) -> bytes:
        headers = {":event-type": name, ":message-type": "event"}
        return encode_message(headers, json.dumps(payload).encode())

    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "a"}})),
        on_next(220, event("messageStop", {"stopReason": "end_turn"})),
        on_next(230, event("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1}})),
        on_next(240, b"never read"),
        on_completed(300),
    )
    results = scheduler.start(lambda: source.pipe(rs.eventstream_frames(), rs.decode("bedrock")))
    assert [m.time for m in results.messages] == [210, 220, 230, 230]
    assert results.messages[-1] == on_completed(230)
    assert source.subscriptions == [subscribe(200, 230)]
