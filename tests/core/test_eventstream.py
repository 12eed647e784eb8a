"""EventStreamParser and encode_message (AWS event-stream framing): tables and properties."""

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
    DEFAULT_LIMIT,
    MAX_HEADERS_LENGTH,
    EventStreamParser,
    encode_message,
)
from rxstream.errors import MalformedChunkError, StreamError, TruncatedStreamError
from rxstream.models import EventStreamMessage
from tests.support.chunking import chunkings, outputs_for_all_chunkings, run

FIXTURE = Path(__file__).parent.parent / "data" / "bedrock" / "converse-stream-text.eventstream"


def frame(headers: bytes = b"", payload: bytes = b"", *, total: int | None = None) -> bytes:
    """A message with the given raw header bytes and valid checksums (a `total` may lie)."""
    size = 16 + len(headers) + len(payload) if total is None else total
    prelude = struct.pack(">II", size, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    body = prelude + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def header(name: str, kind: int, value: bytes = b"") -> bytes:
    raw = name.encode()
    return bytes((len(raw),)) + raw + bytes((kind,)) + value


def feed_and_close(
    parser: EventStreamParser, pieces: list[bytes], out: list[EventStreamMessage]
) -> None:
    for piece in pieces:
        out += parser.feed(piece)
    out += parser.close()


def messages(data: bytes, **options: Any) -> list[EventStreamMessage]:
    out: list[EventStreamMessage] = outputs_for_all_chunkings(
        lambda: EventStreamParser(**options), data
    )
    return out


# ----------------------------------------------------------------------------- good input


def test_the_recorded_bedrock_stream_under_every_chunking() -> None:
    data = FIXTURE.read_bytes()
    got = messages(data)
    events = [m.headers[":event-type"] for m in got]
    assert events == [
        "messageStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    for m in got:
        assert m.headers[":content-type"] == "application/json"
        assert m.headers[":message-type"] == "event"
    assert got[1].payload == b'{"contentBlockIndex":0,"delta":{"text":"2 + 2 = 4."},"p":"abcdefg"}'
    assert got[4].payload.endswith(
        b'"usage":{"inputTokens":37,"outputTokens":15,"totalTokens":52}}'
    )
    # encode_message is the inverse: the recording comes back byte for byte.
    assert b"".join(encode_message(m.headers, m.payload) for m in got) == data


UUID = bytes(range(16))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(header("t", 0), {"t": True}, id="true"),
        pytest.param(header("f", 1), {"f": False}, id="false"),
        pytest.param(header("b", 2, b"\xff"), {"b": -1}, id="byte"),
        pytest.param(header("s", 3, struct.pack(">h", -300)), {"s": -300}, id="short"),
        pytest.param(header("i", 4, struct.pack(">i", 2**31 - 1)), {"i": 2**31 - 1}, id="int"),
        pytest.param(header("l", 5, struct.pack(">q", -(2**63))), {"l": -(2**63)}, id="long"),
        pytest.param(header("y", 6, b"\x00\x03\x00\xff\x01"), {"y": b"\x00\xff\x01"}, id="bytes"),
        pytest.param(header("s", 7, b"\x00\x05caf\xc3\xa9"), {"s": "café"}, id="string"),
        pytest.param(
            header("ts", 8, struct.pack(">q", 1_700_000_000_123)),
            {"ts": 1_700_000_000_123},
            id="timestamp-ms",
        ),
        pytest.param(header("id", 9, UUID), {"id": UUID}, id="uuid"),
        pytest.param(header("e", 7, b"\x00\x00"), {"e": ""}, id="empty-string"),
        pytest.param(b"", {}, id="no-headers"),
        pytest.param(
            header(":event-type", 7, b"\x00\x04ping") + header("n", 4, b"\x00\x00\x00\x07"),
            {":event-type": "ping", "n": 7},
            id="two-headers-in-order",
        ),
    ],
)
def test_header_types(raw: bytes, expected: dict[str, Any]) -> None:
    got = messages(frame(raw, b"body"))
    assert got == [EventStreamMessage(expected, b"body")]
    assert list(got[0].headers) == list(expected)


def test_an_empty_message_and_several_in_one_chunk() -> None:
    data = frame() + frame(header("a", 0)) + frame(b"", b"x" * 300)
    assert messages(data) == [
        EventStreamMessage({}, b""),
        EventStreamMessage({"a": True}, b""),
        EventStreamMessage({}, b"x" * 300),
    ]


def test_repeated_header_blocks_give_headers_of_their_own() -> None:
    # Header blocks are parsed once and remembered; each message still owns its dict.
    small = header(":event-type", 7, b"\x00\x04ping")
    large = header("big", 6, struct.pack(">H", 2000) + b"z" * 2000)
    data = frame(small) * 3 + frame(large) * 2
    got = EventStreamParser().feed(data)
    assert [m.headers for m in got] == [{":event-type": "ping"}] * 3 + [{"big": b"z" * 2000}] * 2
    got[0].headers[":event-type"] = "changed"
    assert got[1].headers == {":event-type": "ping"}
    assert len({id(m.headers) for m in got}) == 5


def test_nothing_at_all_is_no_message_and_no_error() -> None:
    parser = EventStreamParser()
    assert parser.feed(b"") == []
    assert parser.close() == []


def test_bytearray_and_memoryview_chunks() -> None:
    data = frame(header("a", 1), b"{}")
    parser = EventStreamParser()
    assert parser.feed(bytearray(data[:7])) == []
    assert parser.feed(memoryview(data)[7:]) == [EventStreamMessage({"a": False}, b"{}")]


def test_a_message_of_exactly_the_limit_passes() -> None:
    data = frame(b"", b"x" * 84)
    assert len(data) == 100
    assert messages(data, frame_limit=100) == [EventStreamMessage({}, b"x" * 84)]


# ----------------------------------------------------------------------------- bad input


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes((data[at] ^ 0x01,)) + data[at + 1 :]


GOOD = frame(header(":event-type", 7, b"\x00\x04ping"), b'{"a":1}')


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param(_flip(GOOD, 9), "prelude CRC32", id="bad-prelude-crc"),
        pytest.param(_flip(GOOD, 3), "prelude CRC32", id="length-changed-under-its-crc"),
        pytest.param(_flip(GOOD, 20), "message CRC32", id="bad-header-byte"),
        pytest.param(_flip(GOOD, len(GOOD) - 3), "message CRC32", id="bad-payload-byte"),
        pytest.param(_flip(GOOD, len(GOOD) - 1), "message CRC32", id="bad-message-crc"),
        pytest.param(frame(total=15) + b"\x00", "below the minimum of 16", id="total-below-16"),
        pytest.param(frame(total=0), "below the minimum", id="total-zero"),
        pytest.param(frame(total=2**32 - 1), "over the limit", id="total-4-gib"),
        pytest.param(
            struct.pack(">II", 20, 5) + struct.pack(">I", zlib.crc32(struct.pack(">II", 20, 5))),
            "headers length 5 does not fit in a message of 20 bytes",
            id="headers-past-the-message",
        ),
        pytest.param(frame(header("n", 0)[:-2]), "header name runs past", id="name-past-headers"),
        pytest.param(frame(b"\x05ab"), "header name runs past", id="name-length-past-headers"),
        pytest.param(frame(header("i", 4, b"\x00\x00")), "int value", id="int-past-headers"),
        pytest.param(frame(header("l", 5, b"\x00" * 7)), "long value", id="long-past-headers"),
        pytest.param(frame(header("s", 7, b"\x00")), "string value", id="length-past-headers"),
        pytest.param(frame(header("s", 7, b"\x00\x09abc")), "string value", id="string-past"),
        pytest.param(frame(header("y", 6, b"\x01\x00abc")), "bytes value", id="bytes-past"),
        pytest.param(frame(header("u", 9, b"\x00" * 15)), "uuid value", id="uuid-past"),
        pytest.param(frame(header("t", 8, b"\x00" * 3)), "timestamp value", id="timestamp-past"),
        pytest.param(frame(header("z", 10)), "unknown type 10", id="unknown-type-10"),
        pytest.param(frame(header("z", 255)), "unknown type 255", id="unknown-type-255"),
        pytest.param(frame(header("a", 0) + header("a", 1)), "appears twice", id="duplicate"),
        pytest.param(frame(b"\x02\xff\xfe\x00"), "header name is not UTF-8", id="name-not-utf8"),
        pytest.param(frame(header("s", 7, b"\x00\x01\xff")), "not UTF-8", id="string-not-utf8"),
    ],
)
def test_broken_messages_are_malformed(data: bytes, reason: str) -> None:
    for name, pieces in chunkings(data):
        with pytest.raises(MalformedChunkError, match=reason) as info:
            run(EventStreamParser, pieces)
        assert info.value.reason.startswith("event-stream message at byte 0: "), name
        assert isinstance(info.value.data, bytes)
        assert len(info.value.data) <= 256


def test_headers_over_128_kib_are_malformed() -> None:
    big = header("b", 6, struct.pack(">H", 65_535) + b"x" * 65_535)
    raw = big + header("c", 6, struct.pack(">H", 65_535) + b"y" * 65_535)
    assert len(raw) > MAX_HEADERS_LENGTH
    with pytest.raises(MalformedChunkError, match="over the limit of 131072"):
        EventStreamParser().feed(frame(raw))


def test_a_length_over_the_limit_fails_at_the_prelude_without_waiting() -> None:
    # Only the 12 prelude bytes of a 1 MiB message: no waiting for the rest.
    parser = EventStreamParser(frame_limit=1000)
    with pytest.raises(MalformedChunkError, match="total length 1048576 is over the limit of 1000"):
        parser.feed(frame(b"", b"x" * (1_048_576 - 16))[:12])


def test_random_prelude_bytes_fail_fast() -> None:
    # A prelude claiming 3.9 GB with a wrong checksum: an error at byte 12, not a wait.
    with pytest.raises(MalformedChunkError, match="prelude CRC32"):
        EventStreamParser().feed(b"\xe8\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00")


def test_good_messages_come_before_the_error_under_every_chunking() -> None:
    data = frame(header("a", 0)) + frame(header("b", 0)) + _flip(GOOD, 9)
    for name, pieces in chunkings(data):
        parser = EventStreamParser()
        out: list[EventStreamMessage] = []
        with pytest.raises(MalformedChunkError, match="at byte 38: prelude CRC32"):
            feed_and_close(parser, pieces, out)
        assert out == [
            EventStreamMessage({"a": True}, b""),
            EventStreamMessage({"b": True}, b""),
        ], name
        with pytest.raises(RuntimeError, match="failed"):
            parser.feed(b"")


def test_the_error_found_after_good_messages_is_raised_by_close_too() -> None:
    parser = EventStreamParser()
    assert parser.feed(frame() + _flip(GOOD, 20)) == [EventStreamMessage({}, b"")]
    with pytest.raises(MalformedChunkError, match="message CRC32"):
        parser.close()
    with pytest.raises(RuntimeError):
        parser.close()


PING = EventStreamMessage({":event-type": "ping"}, b'{"a":1}')


def test_feed_all_raises_at_once_with_the_good_messages_already_out() -> None:
    parser = EventStreamParser()
    out: list[EventStreamMessage] = []
    with pytest.raises(MalformedChunkError, match="at byte 19: message CRC32"):
        parser.feed_all(
            [frame(header("a", 0))[:5], frame(header("a", 0))[5:] + _flip(GOOD, 20)], out
        )
    assert out == [EventStreamMessage({"a": True}, b"")]
    with pytest.raises(RuntimeError, match="failed"):
        parser.feed_all([GOOD], out)


@pytest.mark.parametrize(
    ("data", "said", "before"),
    [
        pytest.param(GOOD[:1], "1 of its 12 prelude bytes", [], id="one-byte"),
        pytest.param(GOOD[:11], "11 of its 12 prelude bytes", [], id="prelude-less-one"),
        pytest.param(GOOD[:12], f"12 of its {len(GOOD)} bytes", [], id="prelude-only"),
        pytest.param(GOOD[:-1], f"{len(GOOD) - 1} of its {len(GOOD)} bytes", [], id="less-one"),
        pytest.param(
            GOOD + GOOD[:20], f"at byte {len(GOOD)}: 20 of its {len(GOOD)}", [PING], id="second"
        ),
    ],
)
def test_input_ending_inside_a_message_is_truncated(
    data: bytes, said: str, before: list[EventStreamMessage]
) -> None:
    for name, pieces in chunkings(data):
        parser, out = EventStreamParser(), []
        for piece in pieces:
            out += parser.feed(piece)
        assert out == before, name
        with pytest.raises(TruncatedStreamError, match=said):
            parser.close()


# ----------------------------------------------------------------------------- lifecycle


def test_feed_after_close_is_refused() -> None:
    parser = EventStreamParser()
    parser.close()
    with pytest.raises(RuntimeError, match="closed"):
        parser.feed(GOOD)
    with pytest.raises(RuntimeError, match="closed"):
        parser.close()


def test_feed_after_an_error_is_refused() -> None:
    parser = EventStreamParser()
    with pytest.raises(MalformedChunkError):
        parser.feed(_flip(GOOD, 9))
    with pytest.raises(RuntimeError, match="failed"):
        parser.feed(GOOD)


def test_a_str_chunk_is_a_type_error_with_a_hint() -> None:
    with pytest.raises(
        TypeError, match=r"takes bytes chunks, got str \(read the body with body='bytes'"
    ):
        EventStreamParser().feed("data: {}")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("limit", "error"),
    [(15, ValueError), (0, ValueError), (True, TypeError), (1.5, TypeError)],
)
def test_bad_limits(limit: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        EventStreamParser(frame_limit=limit)


def test_the_default_limit_holds_botocores_largest_message() -> None:
    assert DEFAULT_LIMIT >= 24 * 1024 * 1024 + MAX_HEADERS_LENGTH + 16


# ----------------------------------------------------------------------------- encode_message


@pytest.mark.parametrize(
    ("headers", "error", "match"),
    [
        pytest.param({"x" * 256: True}, ValueError, "over 255 bytes", id="long-name"),
        pytest.param({"s": "x" * 65_536}, ValueError, "over 65,535", id="long-string"),
        pytest.param({"b": b"x" * 65_536}, ValueError, "over 65,535", id="long-bytes"),
        pytest.param({"i": 2**63}, ValueError, "64 bits", id="int-too-big"),
        pytest.param({"f": 1.5}, TypeError, "got float", id="float"),
        pytest.param({"n": None}, TypeError, "got NoneType", id="none"),
        pytest.param(
            {f"h{i}": b"x" * 60_000 for i in range(3)}, ValueError, "over 131072", id="too-many"
        ),
    ],
)
def test_encode_refuses_what_the_format_cannot_carry(
    headers: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        encode_message(headers, b"")


def test_encode_picks_int_or_long() -> None:
    message = encode_message({"small": -(2**31), "big": 2**31}, b"")
    # name length, name, type: the int is type 4, the long type 5.
    assert b"\x05small\x04" in message
    assert b"\x03big\x05" in message
    assert EventStreamParser().feed(message) == [
        EventStreamMessage({"small": -(2**31), "big": 2**31}, b"")
    ]


# ----------------------------------------------------------------------------- properties

header_values = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=30),
    st.binary(max_size=30),
)
message_strategy = st.builds(
    EventStreamMessage,
    st.dictionaries(st.text(min_size=1, max_size=12), header_values, max_size=5),
    st.binary(max_size=200),
)


@st.composite
def cut(draw: st.DrawFn, data: bytes) -> list[bytes]:
    points = sorted(draw(st.sets(st.integers(0, len(data)), max_size=12)))
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@given(st.lists(message_strategy, max_size=6), st.data())
def test_any_messages_under_any_chunking_come_back(
    sent: list[EventStreamMessage], data: st.DataObject
) -> None:
    wire = b"".join(encode_message(m.headers, m.payload) for m in sent)
    assert run(EventStreamParser, data.draw(cut(wire))) == sent


@given(st.binary(max_size=400), st.data())
def test_random_bytes_give_messages_or_a_stream_error(garbage: bytes, data: st.DataObject) -> None:
    pieces = data.draw(cut(garbage))
    parser = EventStreamParser(frame_limit=4096)
    try:
        for piece in pieces:
            for message in parser.feed(piece):
                assert isinstance(message, EventStreamMessage)
        parser.close()
    except StreamError:
        pass


@given(st.lists(message_strategy, min_size=1, max_size=4), st.integers(0, 10_000), st.data())
def test_a_corrupted_byte_is_always_caught(
    sent: list[EventStreamMessage], where: int, data: st.DataObject
) -> None:
    wire = b"".join(encode_message(m.headers, m.payload) for m in sent)
    broken = _flip(wire, where % len(wire))
    # CRC32 catches every single-bit error; the prelude's is checked before its length is used.
    with pytest.raises(MalformedChunkError, match="CRC32"):
        run(EventStreamParser, data.draw(cut(broken)))
