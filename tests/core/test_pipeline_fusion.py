"""The SSE parser fused with the anthropic, openai-responses and cohere decoders.

Fused (the fast paths on), the parser hands each frame over as an `(event,
data)` tuple, and the delta decoder that `accumulate_message()` and the other
delta operators put in front of their machine is left out behind those
decoders (they give deltas only). Neither may change a thing: the same items,
errors and completion as the plain chain, also for frames with `id:` and
`retry:` fields, comments, and a last event no blank line ended.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import reactivex

import rxstream as rs
from rxstream.core import DeltaDecoder, LineSplitter, MessageAccumulator, SSEParser, dialects
from rxstream.core.lines import Unterminated
from rxstream.core.pipeline import Chained, Handoff, chain
from tests.support.fast import fast_paths_as
from tests.support.typed import assert_same

DIALECTS = ["anthropic", "openai-responses", "cohere"]


def machines_of(whole: Any) -> list[Any]:
    """The machines of a chain, first to last."""
    if type(whole) is Chained:
        upper, lower = whole.parts
        return machines_of(upper) + machines_of(lower)
    return [whole]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_parser_hands_pairs_and_the_delta_decoder_is_left_out(dialect: str) -> None:
    parser, decoder = SSEParser(), dialects.decoder(dialect)
    delta_decoder = DeltaDecoder()
    accumulator = MessageAccumulator(chunks=delta_decoder.reader)
    run = machines_of(chain([LineSplitter(), parser, decoder, Chained(delta_decoder, accumulator)]))
    assert parser._pairs
    assert [type(m) for m in run] == [LineSplitter, SSEParser, type(decoder), MessageAccumulator]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_decoder_fed_before_takes_no_pairs(dialect: str) -> None:
    decoder: Any = dialects.decoder(dialect, on_malformed="skip")
    decoder.feed(rs.SSEFrame("{}"))  # skipped, but fed
    parser = SSEParser()
    run = machines_of(chain([parser, decoder]))
    assert not parser._pairs
    assert run == [parser, decoder]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_unfused_decoder_refuses_a_tuple_as_before(dialect: str) -> None:
    decoder = dialects.decoder(dialect)
    with pytest.raises(TypeError, match="SSEFrame"):
        decoder.feed_all([("message", "{}")], [])


def test_the_parser_in_pairs_mode_gives_each_frame_as_event_and_data() -> None:
    lines = [
        "event: a",
        "data: 1",
        "",
        ": a comment",
        "id: 7",
        "retry: 10",
        "data: 2",
        "data:3",
        "",
        "event: b",
        "",
        "data: 4",
        "",
        "event: c",
        "data: last",
    ]
    plain, fused = SSEParser(), SSEParser()
    fused._hand(Handoff.PAIRS)
    frames: list[Any] = []
    pairs: list[Any] = []
    plain.feed_all(lines, frames)
    fused.feed_all(lines, pairs)
    assert pairs == [(f.event, f.data) for f in frames]
    assert pairs == [("a", "1"), ("message", "2\n3"), ("message", "4")]
    one_by_one = SSEParser()
    one_by_one._hand(Handoff.PAIRS)
    assert [p for line in lines for p in one_by_one.feed(line)] == pairs
    # The last event, which no blank line ended, goes whole: its data is marked as cut.
    [last] = fused.close()
    assert last == plain.close()[0] == rs.SSEFrame("last", "c", "7", 10)
    assert type(last.data) is Unterminated


def sse(*events: tuple[str, Any], extra: str = "") -> bytes:
    body = "".join(f"event: {name}\n{extra}data: {json.dumps(data)}\n\n" for name, data in events)
    return body.encode()


STREAMS = {
    "anthropic": sse(
        ("message_start", {"type": "message_start", "message": {"id": "m"}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "a"},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
        extra="id: 3\nretry: 5\n: note\n",
    ),
    "openai-responses": sse(
        ("response.created", {"type": "response.created", "response": {"id": "r"}}),
        (
            "response.output_text.delta",
            {"type": "response.output_text.delta", "output_index": 0, "delta": "a"},
        ),
        (
            "response.completed",
            {"type": "response.completed", "response": {"id": "r", "status": "completed"}},
        ),
        extra="id: 3\nretry: 5\n: note\n",
    ),
    "cohere": sse(
        ("message-start", {"type": "message-start", "id": "m"}),
        (
            "content-delta",
            {"type": "content-delta", "delta": {"message": {"content": {"text": "a"}}}},
        ),
        ("message-end", {"type": "message-end", "delta": {"finish_reason": "COMPLETE"}}),
        extra="id: 3\nretry: 5\n: note\n",
    ),
}


def plain_and_fused(body: bytes, dialect: str) -> tuple[Any, Any]:
    def run(on: bool) -> Any:
        items: list[Any] = []
        errors: list[str] = []
        with fast_paths_as(on):
            reactivex.from_iterable([body]).pipe(
                rs.lines(), rs.sse_frames(), rs.decode(dialect), rs.accumulate_message()
            ).subscribe(items.append, lambda e: errors.append(f"{type(e).__name__}: {e}"))
        return repr(items), errors

    return run(True), run(False)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("cut", [None, -1, -3, -30])
def test_fields_the_decoders_do_not_read_change_nothing(dialect: str, cut: int | None) -> None:
    body = STREAMS[dialect][:cut]
    fused, plain = plain_and_fused(body, dialect)
    assert fused == plain
    assert_same([body], lambda: [rs.lines(), rs.sse_frames(), rs.decode(dialect)])
