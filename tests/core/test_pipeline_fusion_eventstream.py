"""The event-stream parser fused with the Bedrock decoder.

Fused (the fast paths on), `EventStreamParser` hands each message over as a
`(headers, payload)` tuple, the headers being the very dict of every message
with the same header block, and the Bedrock decoder builds a message only
where it needs one. Nothing may change: the same items, errors and completion
as the plain chain (every fast path off), on the standard library and with
msgspec, however the bytes are cut; and the parser's dicts stay as parsed.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st

import rxstream as rs
from rxstream.core import DeltaDecoder, EventStreamParser, MessageAccumulator, dialects
from rxstream.core.dialects.bedrock import BedrockDecoder
from rxstream.core.eventstream import encode_message
from rxstream.core.pipeline import Chained, Handoff, _Batch, chain
from tests.support.fast import fast_paths_as, typed_decoding


def machines_of(whole: Any) -> list[Any]:
    """The machines of a chain, first to last."""
    if type(whole) is Chained:
        upper, lower = whole.parts
        return machines_of(upper) + machines_of(lower)
    if type(whole) is _Batch:
        return [whole._machine]  # a machine with `feed_all` but no `done`
    return [whole]


def event(name: str, payload: Any, kind: str = "event") -> bytes:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return encode_message(
        {":event-type": name, ":content-type": "application/json", ":message-type": kind}, data
    )


def text(piece: Any, index: int = 0, pad: str = "ab") -> bytes:
    return event(
        "contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}, "p": pad}
    )


START = event("messageStart", {"role": "assistant"})
STOP = event("messageStop", {"stopReason": "end_turn"})
METADATA = event("metadata", {"usage": {"inputTokens": 3, "outputTokens": 4}, "metrics": {}})

# The events a stream is made of, the usual ones many times over.
EVENTS = {
    "text": text("hi"),
    "text2": text("there, "),
    "padded": text("yo", pad="abcdefgh"),
    "escaped": text('q"\u00e9\n'),
    "empty": text(""),
    "tool start": event(
        "contentBlockStart",
        {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "f"}}},
    ),
    "tool input": event(
        "contentBlockDelta", {"contentBlockIndex": 1, "delta": {"toolUse": {"input": '{"a":'}}}
    ),
    "tool stop": event("contentBlockStop", {"contentBlockIndex": 1}),
    "reasoning": event(
        "contentBlockDelta",
        {"contentBlockIndex": 2, "delta": {"reasoningContent": {"text": "hm"}}, "p": "x"},
    ),
    "unknown": event("somethingNew", {"a": 1}),
    "other api": event("chunk", {"bytes": "e30="}),
    "null text": text(None),
    "not json": event("contentBlockDelta", b"{nope"),
    "no index": event("contentBlockDelta", {"delta": {"text": "x"}}),
    "bad message type": event("contentBlockDelta", {"contentBlockIndex": 0}, kind="weird"),
    "exception": encode_message(
        {":message-type": "exception", ":exception-type": "throttlingException"},
        b'{"message":"slow down"}',
    ),
    "stop": STOP,
    "metadata": METADATA,
}
USUAL = ["text", "text2", "padded", "escaped", "empty", "tool start", "tool input", "reasoning"]


def run(pieces: list[bytes], *, fast: bool, skip: bool = False) -> tuple[Any, ...]:
    items: list[Any] = []
    errors: list[str] = []
    done: list[bool] = []
    with fast_paths_as(fast):
        reactivex.from_iterable(pieces).pipe(
            rs.eventstream_frames(),
            rs.decode("bedrock", on_malformed="skip" if skip else "raise"),
            rs.accumulate_message(),
        ).subscribe(
            items.append,
            lambda e: errors.append(f"{type(e).__name__}: {e}"),
            lambda: done.append(True),
        )
    return repr(items), errors, done


def assert_fused_as_plain(pieces: list[bytes], *, skip: bool = False) -> None:
    fused = run(pieces, fast=True, skip=skip)
    assert fused == run(pieces, fast=False, skip=skip)
    with typed_decoding(False):
        assert run(pieces, fast=True, skip=skip) == fused


def test_the_parser_hands_pairs_to_the_bedrock_decoder() -> None:
    parser, decoder = EventStreamParser(), BedrockDecoder()
    delta_decoder = DeltaDecoder()
    accumulator = MessageAccumulator(chunks=delta_decoder.reader)
    whole = machines_of(chain([parser, decoder, Chained(delta_decoder, accumulator)]))
    assert parser._pairs
    assert decoder._pairs
    assert [type(m) for m in whole] == [EventStreamParser, type(decoder), MessageAccumulator]


def test_a_parser_or_a_decoder_fed_before_hands_or_takes_no_pairs() -> None:
    fed_parser = EventStreamParser()
    fed_parser.feed(START[:5])
    assert machines_of(chain([fed_parser, dialects.decoder("bedrock")]))[0] is fed_parser
    assert not fed_parser._pairs
    fed_decoder: Any = dialects.decoder("bedrock")
    fed_decoder.feed(rs.EventStreamMessage({":event-type": "messageStart"}, b"{}"))
    parser = EventStreamParser()
    assert machines_of(chain([parser, fed_decoder])) == [parser, fed_decoder]
    assert not parser._pairs


def test_an_unfused_decoder_refuses_a_tuple_as_before() -> None:
    decoder = dialects.decoder("bedrock")
    with pytest.raises(TypeError, match="EventStreamMessage"):
        decoder.feed_all([({":event-type": "messageStart"}, b"{}")], [])


def test_the_parser_in_pairs_mode_gives_headers_and_payload_sharing_each_header_dict() -> None:
    body = START + EVENTS["text"] + EVENTS["text2"] + STOP
    plain, fused = EventStreamParser(), EventStreamParser()
    fused._hand(Handoff.MESSAGE_PAIRS)
    messages = plain.feed(body)
    pairs: list[Any] = []
    fused.feed_all([body], pairs)
    assert pairs == [(m.headers, m.payload) for m in messages]
    assert pairs[1][0] is pairs[2][0]  # one header block, one dict
    assert messages[1].headers is not messages[2].headers  # a message's are its own


def test_the_message_a_decoder_builds_from_a_pair_has_its_own_headers() -> None:
    # An unknown message type fails with the message the decoder built: the
    # parser's dict is left as it was parsed.
    parser = EventStreamParser()
    decoder = dialects.decoder("bedrock")
    machines = chain([parser, decoder])
    out: list[Any] = []
    body = START + EVENTS["text"] + EVENTS["bad message type"]
    with pytest.raises(rs.MalformedChunkError, match="weird"):
        machines.feed_all([body], out)
    assert [type(d) for d in out] == [rs.TextDelta]
    for headers in parser._known.values():
        assert headers[":content-type"] == "application/json" or ":exception-type" in headers


@pytest.mark.parametrize("name", sorted(EVENTS))
@pytest.mark.parametrize("skip", [False, True])
def test_every_event_after_an_answer_decodes_as_on_the_plain_chain(name: str, skip: bool) -> None:
    body = START + EVENTS["text"] + EVENTS["text2"] + EVENTS[name] + EVENTS["text"] + STOP
    assert_fused_as_plain([body], skip=skip)
    assert_fused_as_plain([body[:k] for k in (30, len(body))], skip=skip)


@settings(max_examples=150, deadline=None)
@given(
    names=st.lists(st.sampled_from(USUAL * 4 + sorted(EVENTS)), min_size=0, max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=8),
    end=st.sampled_from(["stop", "stop and metadata", "none", "cut"]),
    skip=st.booleans(),
)
def test_any_stream_cut_anywhere_gives_what_the_plain_chain_gives(
    names: list[str], cuts: list[int], end: str, skip: bool
) -> None:
    body = START + b"".join(EVENTS[name] for name in names)
    if end.startswith("stop"):
        body += STOP
    if end == "stop and metadata":
        body += METADATA
    if end == "cut":
        body += STOP[:-3]
    points = sorted({0, len(body), *(c % (len(body) + 1) for c in cuts)})
    pieces = [body[a:b] for a, b in itertools.pairwise(points)]
    assert_fused_as_plain(pieces, skip=skip)
