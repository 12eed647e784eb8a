"""A decoder handed another dialect's stream says which dialect it looks like.

Every recorded stream of the seven dialects goes through every decoder, in the
pipeline a reader writes (`from_request(client, request).pipe(rs.sse_frames(),
rs.decode(d))`: a source labelled with the stream's wire), with the fast paths
on and off. The right decoder reads it; each of the six wrong ones fails with
`MalformedChunkError` naming its own dialect and the stream's (as `rs.decode()`
detects it), never with an empty stream, a silent drop or a `TypeError`. The
same holds for the pipelines that frame by hand (no label): SSE frames, NDJSON
lines, event-stream messages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import reactivex
from reactivex import Observable

import rxstream as rs
from rxstream.core.dialects import DIALECTS
from rxstream.models import Message
from rxstream.operators.wire import SourceWire, WireSource
from tests.support.fast import fast_switch  # noqa: F401  (the `fast` fixture: on, then off)

DATA = Path(__file__).resolve().parents[2] / "data"

#: One recorded stream of each dialect, and its wire.
RECORDED: dict[str, tuple[str, SourceWire]] = {
    "openai-chat": ("openai/chat-text-usage.sse", "sse"),
    "openai-responses": ("openai-responses/text.sse", "sse"),
    "anthropic": ("anthropic/text-minimal-padded.sse", "sse"),
    "gemini": ("google/text-crlf.sse", "sse"),
    "cohere": ("cohere/v2-text.sse", "sse"),
    "ollama": ("ollama/chat-phi3-tail-excerpt.ndjson", "ndjson"),
    "bedrock": ("bedrock/converse-stream-text.eventstream", "eventstream"),
}
assert set(RECORDED) == set(DIALECTS)

PAIRS = [(stream, dialect) for stream in DIALECTS for dialect in DIALECTS]


def source(stream: str, *, labelled: bool) -> Observable[Any]:
    """The recorded body in 61-byte reads, as a source hands it out (lines, or bytes)."""
    path, wire = RECORDED[stream]
    body = (DATA / path).read_bytes()
    reads: Observable[Any] = reactivex.from_iterable(
        [body[i : i + 61] for i in range(0, len(body), 61)]
    )
    if wire != "eventstream":
        reads = reads.pipe(rs.lines())
    if labelled:
        return WireSource(reads, wire)
    if wire == "sse":
        return reads.pipe(rs.sse_frames())
    return reads.pipe(rs.eventstream_frames()) if wire == "eventstream" else reads


def run(observable: Observable[Any]) -> tuple[list[Any], list[Exception]]:
    items: list[Any] = []
    errors: list[Exception] = []
    observable.subscribe(items.append, errors.append)
    return items, errors


@pytest.mark.parametrize("labelled", [True, False], ids=["labelled", "framed"])
@pytest.mark.parametrize(("stream", "dialect"), PAIRS, ids=[f"{s}-as-{d}" for s, d in PAIRS])
def test_a_wrong_decoder_names_the_dialect_the_stream_looks_like(
    stream: str, dialect: str, labelled: bool, fast: bool
) -> None:
    wired = source(stream, labelled=labelled)
    if labelled:
        wired = wired.pipe(rs.sse_frames())  # as printed: it lets what is not SSE through
    items, errors = run(wired.pipe(rs.decode(dialect), rs.accumulate_message()))
    if stream == dialect:
        assert errors == []
        assert isinstance(items[0], Message)
        assert items[0].content
        return
    assert [type(e) for e in errors] == [rs.MalformedChunkError], errors
    message = str(errors[0])
    assert message.startswith(f"malformed {dialect} data (")
    assert f"this looks like the {stream} dialect (read it with rs.decode({stream!r}))" in message
    assert len(message) < 700  # a bounded excerpt of what arrived


def test_skipping_drops_another_dialects_events() -> None:
    _, errors = run(
        source("anthropic", labelled=True).pipe(
            rs.sse_frames(), rs.decode("openai-chat", on_malformed="skip")
        )
    )
    assert [type(e) for e in errors] == [rs.EmptyStreamError]


def test_an_event_of_no_known_dialect_keeps_its_own_message() -> None:
    frames = reactivex.of(rs.SSEFrame('{"type": "message_start", "x": 1}'), rs.SSEFrame('{"a": 1}'))
    _, errors = run(frames.pipe(rs.decode("cohere")))
    assert [type(e) for e in errors] == [rs.MalformedChunkError]
    assert "looks like the anthropic dialect" in str(errors[0])  # detect's reading of the type
    _, errors = run(reactivex.of(rs.SSEFrame('{"a": 1}')).pipe(rs.decode("gemini")))
    assert "looks like" not in str(errors[0])
    assert "not a Gemini chunk" in str(errors[0])
