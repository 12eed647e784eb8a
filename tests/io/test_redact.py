"""The raw-body redactors: whatever the network blocks, the same redacted bytes come out.

`EventStreamRedactor` (AWS event streams) and `BytesRedactor` (any other raw
body) are fed each case whole, one byte at a time and split at every index;
the output joined must be the same every time, valid where the input was, and
free of the credential.
"""

from __future__ import annotations

import itertools
import json
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxstream.core.eventstream import EventStreamParser, encode_message
from rxstream.errors import MalformedChunkError, TruncatedStreamError
from rxstream.io._redact import (
    BytesRedactor,
    EventStreamRedactor,
    UntypedRedactor,
    raw_redactor,
)
from rxstream.io.credentials import Credentials
from rxstream.models import EventStreamMessage
from tests.support.chunking import chunkings

KEY = "sk-ant-api03-Zq81XkPw0aT7+mYb3/RcLd5uVe"
DATA = (
    Path(__file__).parent.parent / "data" / "bedrock" / "converse-stream-text.eventstream"
).read_bytes()
MESSAGES = EventStreamParser().feed(DATA)
EXCEPTION = {":exception-type": "validationException", ":message-type": "exception"}


def credentials() -> Credentials:
    creds = Credentials()
    creds.add_headers({"Authorization": f"Bearer {KEY}"})
    return creds


Redactor = EventStreamRedactor | BytesRedactor | UntypedRedactor


def redacted(factory: Callable[[], Redactor], data: bytes) -> bytes:
    """The output for `data`, checked the same for every chunking."""
    expected: bytes | None = None
    for name, pieces in chunkings(data):
        redactor = factory()
        out: list[bytes] = []
        for piece in pieces:
            out += redactor.feed(piece)
        out += redactor.close()
        assert all(out), f"{name}: an empty block was handed out"
        got = b"".join(out)
        if expected is None:
            expected = got
        assert got == expected, f"chunking {name!r} differs"
    assert expected is not None
    return expected


def events(data: bytes) -> list[EventStreamMessage]:
    parser = EventStreamParser()
    return [*parser.feed(data), *parser.close()]


def escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" for c in text)


# --------------------------------------------------------------------------- event streams

GOOD_CASES = {
    "no echo": (DATA, DATA),
    "key in the exception's message": (
        encode_message(EXCEPTION, json.dumps({"message": f"bad key {KEY}"}).encode()),
        encode_message(EXCEPTION, b'{"message": "bad key [redacted]"}'),
    ),
    "bearer value, JSON-escaped slash": (
        encode_message(EXCEPTION, ('{"m":"Bearer ' + KEY.replace("/", "\\/") + '"}').encode()),
        encode_message(EXCEPTION, b'{"m":"[redacted]"}'),
    ),
    "key u-escaped in a JSON string": (
        encode_message(
            EXCEPTION, ('{"message":"' + escaped(f"bad key {KEY}") + '","n":1.50}').encode()
        ),
        encode_message(EXCEPTION, b'{"message":"bad key [redacted]","n":1.50}'),
    ),
    "key in a string header and a byte-array header": (
        encode_message({":error-message": f"no {KEY}", "x-echo": KEY.encode(), "n": 7}),
        encode_message({":error-message": "no [redacted]", "x-echo": b"[redacted]", "n": 7}),
    ),
    "payload that is not JSON or UTF-8": (
        encode_message(EXCEPTION, b"\xff\xfe not JSON " + KEY.encode()),
        encode_message(EXCEPTION, b"\xff\xfe not JSON [redacted]"),
    ),
    "a u-escape without a key is left alone": (
        encode_message(EXCEPTION, b'{"message":"caf\\u00e9"}'),
        encode_message(EXCEPTION, b'{"message":"caf\\u00e9"}'),
    ),
    "key between two good messages": (
        DATA[:335] + encode_message(EXCEPTION, KEY.encode()) + DATA[335:],
        DATA[:335] + encode_message(EXCEPTION, b"[redacted]") + DATA[335:],
    ),
}


@pytest.mark.parametrize(("data", "expected"), GOOD_CASES.values(), ids=GOOD_CASES)
def test_messages_holding_the_key_are_re_encoded(data: bytes, expected: bytes) -> None:
    out = redacted(lambda: EventStreamRedactor(credentials()), data)
    assert out == expected
    assert KEY[:10].encode() not in out
    assert len(events(out)) == len(events(data))


def with_crc(body: bytes) -> bytes:
    return body + struct.pack(">I", zlib.crc32(body))


def prelude(total: int, headers: int) -> bytes:
    head = struct.pack(">II", total, headers)
    return head + struct.pack(">I", zlib.crc32(head))


_UNKNOWN_TYPE = b"\x01x\x0c" + KEY.encode()  # a header of type 12: no such type
BROKEN_CASES = {
    # (input, the error the parser gives for it; the same for the redacted output)
    "message CRC broken": (
        DATA[:335] + encode_message(EXCEPTION, KEY.encode())[:-1] + b"\x00",
        "message CRC32",
    ),
    "unknown header type, CRC right": (
        with_crc(prelude(16 + len(_UNKNOWN_TYPE), len(_UNKNOWN_TYPE)) + _UNKNOWN_TYPE),
        "unknown type 12",
    ),
    "prelude broken": (DATA[:335] + b"\x00" * 12 + KEY.encode() + DATA[335:], "prelude CRC32"),
    "over the limit": (prelude(2**31, 0) + KEY.encode(), "over the limit"),
}


@pytest.mark.parametrize(("data", "reason"), BROKEN_CASES.values(), ids=BROKEN_CASES)
def test_broken_messages_are_masked_and_fail_as_before(data: bytes, reason: str) -> None:
    out = redacted(lambda: EventStreamRedactor(credentials()), data)
    assert len(out) == len(data)
    assert KEY[:4].encode() not in out
    with pytest.raises(MalformedChunkError, match=reason) as before:
        events(data)
    with pytest.raises(MalformedChunkError, match=reason) as after:
        events(out)
    # The same message, at the same byte, for the same reason (checksums aside).
    assert str(after.value).split(":")[0] == str(before.value).split(":")[0]


def test_a_message_cut_short_is_masked_and_still_truncated() -> None:
    data = DATA[:335] + encode_message(EXCEPTION, f"bad key {KEY}!".encode())[:-3]
    out = redacted(lambda: EventStreamRedactor(credentials()), data)
    assert len(out) == len(data)
    assert KEY[:4].encode() not in out
    with pytest.raises(TruncatedStreamError):
        events(out)


def test_a_message_is_held_back_until_its_last_byte() -> None:
    redactor = EventStreamRedactor(credentials())
    assert redactor.feed(DATA[:100]) == []
    assert redactor.feed(DATA[100:200]) == [DATA[:165]]  # the first message is 165 bytes
    assert redactor.close() == [DATA[165:200]]


@given(st.lists(st.sampled_from(["", KEY, f"Bearer {KEY}", "x" * 40]), max_size=4), st.data())
def test_any_echo_under_any_chunking(echoes: list[str], data: st.DataObject) -> None:
    wire = b"".join(
        encode_message(EXCEPTION, json.dumps({"message": echo}).encode()) for echo in echoes
    )
    cuts = sorted(data.draw(st.sets(st.integers(0, len(wire)), max_size=8)))
    bounds = [0, *cuts, len(wire)]
    redactor = EventStreamRedactor(credentials())
    out: list[bytes] = []
    for a, b in itertools.pairwise(bounds):
        out += redactor.feed(wire[a:b])
    out += redactor.close()
    got = b"".join(out)
    assert KEY[:10].encode() not in got
    shown = [json.loads(m.payload)["message"] for m in events(got)]
    assert shown == [echo if echo in ("", "x" * 40) else "[redacted]" for echo in echoes]


# --------------------------------------------------------------------------- other bodies


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"data: hello\n\n", b"data: hello\n\n"),
        (f"data: {KEY}\n\n".encode(), b"data: [redacted]\n\n"),
        (f"Bearer {KEY}|{KEY}{KEY}".encode(), b"[redacted]|[redacted][redacted]"),
        (f"{KEY}".encode(), b"[redacted]"),
    ],
    ids=["no echo", "one", "several and adjacent", "the whole body"],
)
def test_other_raw_bodies_are_redacted_in_their_bytes(data: bytes, expected: bytes) -> None:
    assert redacted(lambda: BytesRedactor(credentials()), data) == expected


def test_the_mask_keeps_the_length() -> None:
    data = f"a {KEY} b".encode()
    assert redacted(lambda: BytesRedactor(credentials(), mask=True), data) == (
        b"a " + b"*" * len(KEY) + b" b"
    )


def test_which_redactor() -> None:
    assert raw_redactor(Credentials(), "eventstream") is None
    assert isinstance(raw_redactor(credentials(), "eventstream"), EventStreamRedactor)
    assert isinstance(raw_redactor(credentials(), "sse"), BytesRedactor)
    assert isinstance(raw_redactor(credentials(), None), UntypedRedactor)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            GOOD_CASES["key in the exception's message"][0],
            GOOD_CASES["key in the exception's message"][1],
        ),
        (f"data: {KEY}\n\n".encode(), b"data: [redacted]\n\n"),
        (KEY[:8].encode(), KEY[:8].encode()),
        (b"", b""),
    ],
    ids=["an event stream", "anything else", "shorter than a prelude", "empty"],
)
def test_a_body_without_a_content_type_is_judged_by_its_first_bytes(
    data: bytes, expected: bytes
) -> None:
    assert redacted(lambda: UntypedRedactor(credentials()), data) == expected
