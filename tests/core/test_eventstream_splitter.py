"""EventStreamSplitter (whole AWS event-stream messages as undecoded bytes): tables, properties."""

from __future__ import annotations

import itertools
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxstream.core.eventstream import (
    MAX_HEADERS_LENGTH,
    EventStreamParser,
    EventStreamSplitter,
    encode_message,
)
from rxstream.errors import MalformedChunkError, TruncatedStreamError
from tests.support.chunking import chunkings

DATA = (
    Path(__file__).parent.parent / "data" / "bedrock" / "converse-stream-text.eventstream"
).read_bytes()
A = encode_message({":event-type": "a"}, b"{}")
B = encode_message({}, b"")  # the 16-byte empty message
C = encode_message({"n": 1}, b"x" * 300)


def prelude(total: int, headers: int) -> bytes:
    head = struct.pack(">II", total, headers)
    return head + struct.pack(">I", zlib.crc32(head))


def split(pieces: list[bytes], **options: Any) -> tuple[list[bytes], bytes, bool]:
    """The messages, the bytes held at the end and whether a prelude was broken."""
    splitter = EventStreamSplitter(**options)
    out: list[bytes] = []
    for piece in pieces:
        out += splitter.feed(piece)
    return out, splitter.rest(), splitter.broken


def split_every_way(data: bytes, **options: Any) -> tuple[list[bytes], bytes, bool]:
    expected = split([data], **options)
    for name, pieces in chunkings(data):
        assert split(pieces, **options) == expected, f"chunking {name!r} differs"
    return expected


CASES: dict[str, tuple[bytes, dict[str, Any], list[bytes], bytes, bool]] = {
    # name: (input, options, messages, rest, broken)
    "nothing": (b"", {}, [], b"", False),
    "one message": (A, {}, [A], b"", False),
    "the empty message": (B, {}, [B], b"", False),
    "several": (A + B + C + A, {}, [A, B, C, A], b"", False),
    "a partial prelude at the end": (A + C[:7], {}, [A], C[:7], False),
    "a partial message at the end": (A + C[:100], {}, [A], C[:100], False),
    "the message CRC is not checked": (A[:-1] + b"\x00", {}, [A[:-1] + b"\x00"], b"", False),
    "a broken prelude CRC after a message": (
        A + b"\x00" * 12 + C,
        {},
        [A],
        b"\x00" * 12 + C,
        True,
    ),
    "a total length below 16": (A + prelude(15, 0) + b"x", {}, [A], prelude(15, 0) + b"x", True),
    "headers that do not fit": (
        prelude(20, 5) + b"12345678",
        {},
        [],
        prelude(20, 5) + b"12345678",
        True,
    ),
    "headers over 128 KiB": (
        prelude(MAX_HEADERS_LENGTH + 17, MAX_HEADERS_LENGTH + 1),
        {},
        [],
        prelude(MAX_HEADERS_LENGTH + 17, MAX_HEADERS_LENGTH + 1),
        True,
    ),
    "a message over the limit": (A + C, {"frame_limit": 100}, [A], C, True),
    "a message of exactly the limit": (C, {"frame_limit": len(C)}, [C], b"", False),
}


@pytest.mark.parametrize(
    ("data", "options", "messages", "rest", "broken"), CASES.values(), ids=CASES
)
def test_cases_under_every_chunking(
    data: bytes, options: dict[str, Any], messages: list[bytes], rest: bytes, broken: bool
) -> None:
    assert split_every_way(data, **options) == (messages, rest, broken)


def test_the_recorded_bedrock_stream_comes_out_message_by_message() -> None:
    messages, rest, broken = split_every_way(DATA)
    assert (b"".join(messages), rest, broken) == (DATA, b"", False)
    parsed = EventStreamParser().feed(DATA)
    assert [EventStreamParser().feed(m) for m in messages] == [[m] for m in parsed]


def test_a_message_is_handed_out_with_its_last_byte() -> None:
    splitter = EventStreamSplitter()
    assert splitter.feed(C[:-1]) == []
    assert splitter.feed(C[-1:] + A[:3]) == [C]
    assert splitter.feed(A[3:]) == [A]


def test_after_a_broken_prelude_everything_is_held_for_rest() -> None:
    splitter = EventStreamSplitter()
    assert splitter.feed(A + b"\xff" * 12) == [A]
    assert splitter.broken
    assert splitter.feed(A) == []  # a good message after it cannot be found any more
    assert splitter.rest() == b"\xff" * 12 + A
    assert splitter.feed(b"more") == []
    assert splitter.rest() == b"more"


# --------------------------------------------------------------------------- close


def test_close_after_whole_messages_gives_nothing() -> None:
    splitter = EventStreamSplitter()
    splitter.feed(A)
    assert splitter.close() == []


@pytest.mark.parametrize(
    ("data", "error", "match"),
    [
        (
            A + C[:5],
            TruncatedStreamError,
            rf"message at byte {len(A)} was cut: 5 of its 12 prelude",
        ),
        (A + C[:50], TruncatedStreamError, rf"50 of its {len(C)} bytes arrived"),
        (A + b"\x00" * 12, MalformedChunkError, rf"message at byte {len(A)} has a broken prelude"),
    ],
    ids=["in the prelude", "in the message", "broken prelude"],
)
def test_close_says_what_was_left(data: bytes, error: type[Exception], match: str) -> None:
    splitter = EventStreamSplitter()
    splitter.feed(data)
    with pytest.raises(error, match=match):
        splitter.close()


def test_rest_then_close_is_a_clean_end() -> None:
    splitter = EventStreamSplitter()
    splitter.feed(A + C[:50])
    assert splitter.rest() == C[:50]
    assert splitter.close() == []


def test_feed_after_close_is_refused() -> None:
    splitter = EventStreamSplitter()
    splitter.close()
    with pytest.raises(RuntimeError, match="closed"):
        splitter.feed(A)
    with pytest.raises(RuntimeError, match="closed"):
        splitter.close()


def test_a_str_chunk_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="bytes chunks, got str"):
        EventStreamSplitter().feed("text")  # type: ignore[arg-type]


def test_bytearray_and_memoryview_chunks() -> None:
    splitter = EventStreamSplitter()
    assert splitter.feed(bytearray(A)) + splitter.feed(memoryview(C)) == [A, C]


@pytest.mark.parametrize(
    ("limit", "error"), [(15, ValueError), ("16", TypeError), (True, TypeError)]
)
def test_bad_limits(limit: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        EventStreamSplitter(frame_limit=limit)


# --------------------------------------------------------------------------- properties

header_values = st.one_of(
    st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=20), st.binary(max_size=20)
)
wire_messages = st.lists(
    st.builds(
        encode_message,
        st.dictionaries(st.text(min_size=1, max_size=8), header_values, max_size=4),
        st.binary(max_size=120),
    ),
    max_size=6,
)


@st.composite
def cut(draw: st.DrawFn, data: bytes) -> list[bytes]:
    points = sorted(draw(st.sets(st.integers(0, len(data)), max_size=12)))
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@given(wire_messages, st.data())
def test_any_messages_under_any_chunking_come_out_whole(
    messages: list[bytes], data: st.DataObject
) -> None:
    assert split(data.draw(cut(b"".join(messages)))) == (messages, b"", False)


@given(st.binary(max_size=300), st.data())
def test_any_bytes_come_out_whole_and_in_order(garbage: bytes, data: st.DataObject) -> None:
    whole = split([garbage], frame_limit=4096)
    got = split(data.draw(cut(garbage)), frame_limit=4096)
    assert got == whole
    messages, rest, _ = got
    assert b"".join(messages) + rest == garbage
