"""No secret in an error from a raw body: a Bedrock event stream that echoes the credentials.

A real server on 127.0.0.1 answers `application/vnd.amazon.eventstream` (the
binary AWS framing: lengths and CRC32 checksums) whose messages quote the
request's credentials back: in an exception's JSON message (as text, and
`\\u`-escaped), in an `:error-message` header, in a payload that is not JSON,
in the text of a content delta, split across network blocks, in a message
whose checksum or prelude is already broken, and in a message cut short. The
source reads it with `body="bytes"`, the pipeline is
`rs.eventstream_frames(), rs.decode("bedrock")`, and:

- the whole exception graph (`leaks.places`) and every item are free of the
  credentials;
- the items and the error are the same as when the server had sent
  `[redacted]` in their place (the messages were redacted, not dropped, and
  re-encoded with checksums `rs.eventstream_frames()` accepts);
- a stream that echoes nothing goes through byte for byte.

A raw body of another content type is redacted in its bytes.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rxstream as rs
from rxstream.core.eventstream import EventStreamParser, encode_message
from rxstream.models import EventStreamMessage
from rxstream.testing.server import FakeLLMServer, RecordedRequest, WireAnswer
from tests.support.credentials import KEY, PLACES, credentials_of, secrets
from tests.support.leaks import places
from tests.support.sources import MODES, Outcome, drive

RECORDING = Path(__file__).parent.parent / "data" / "bedrock" / "converse-stream-text.eventstream"
DATA = RECORDING.read_bytes()
# messageStart, a text delta ("2 + 2 = 4."), contentBlockStop, messageStop, metadata.
MESSAGES = EventStreamParser().feed(DATA)
EVENTSTREAM = "application/vnd.amazon.eventstream"
PIPE = (rs.eventstream_frames(), rs.decode("bedrock"))
INVALID = "The security token included in the request is invalid: "


def wire(*messages: EventStreamMessage) -> bytes:
    return b"".join(encode_message(m.headers, m.payload) for m in messages)


def event(name: str, payload: bytes) -> bytes:
    headers = {":event-type": name, ":content-type": "application/json", ":message-type": "event"}
    return encode_message(headers, payload)


def exception(payload: bytes, kind: str = "validationException") -> bytes:
    headers = {
        ":exception-type": kind,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_message(headers, payload)


def escaped(text: str) -> str:
    """Every character as a JSON `\\u` escape."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


def flip_last_byte(message: bytes) -> bytes:
    return message[:-1] + bytes((message[-1] ^ 1,))


#: The start of every shape: messageStart and a text delta, which arrive as items.
START = wire(*MESSAGES[:2])
REST = wire(*MESSAGES[2:])


def split_echo(echo: str) -> tuple[bytes, ...]:
    """The exception, cut into network blocks inside a prelude and inside the echoed key."""
    body = START + exception(json.dumps({"message": INVALID + echo}).encode())
    first = len(encode_message(MESSAGES[0].headers, MESSAGES[0].payload))
    at = body.find(KEY.encode()[:12]) if KEY[:12] in echo else len(body) - 20
    cuts = sorted({first - 3, first + 5, len(START) + 7, at + 6, len(body) - 2})
    bounds = [0, *cuts, len(body)]
    return tuple(body[a:b] for a, b in itertools.pairwise(bounds))


#: Each shape: the body's network blocks, given what the server echoes.
SHAPES: dict[str, Callable[[str], tuple[bytes, ...]]] = {
    "exception": lambda echo: (
        START,
        exception(json.dumps({"message": INVALID + echo, "originalStatusCode": 403}).encode()),
    ),
    "exception-escaped": lambda echo: (
        START,
        exception(('{"message": "' + escaped(INVALID + echo) + '"}').encode()),
    ),
    "error-header": lambda echo: (
        START,
        encode_message(
            {
                ":message-type": "error",
                ":error-code": "UnrecognizedClientException",
                ":error-message": INVALID + echo,
            }
        ),
    ),
    "not-json": lambda echo: (START, event("contentBlockDelta", f"not JSON: {echo}".encode())),
    "text-delta": lambda echo: (
        START,
        event(
            "contentBlockDelta",
            json.dumps({"contentBlockIndex": 0, "delta": {"text": f" You sent {echo}"}}).encode(),
        ),
        REST,
    ),
    "split": split_echo,
    # Broken before the echo arrives: these can only be masked, not re-encoded.
    "broken-crc": lambda echo: (
        START,
        flip_last_byte(exception(json.dumps({"message": INVALID + echo}).encode())),
        REST,
    ),
    "broken-prelude": lambda echo: (
        START,
        # (One block: the parser quotes what it holds when it fails.)
        b"\x00\x00\x01\x00\x00\x00\x00\x00\xde\xad\xbe\xef" + f"garbage {echo}".encode(),
    ),
    "cut": lambda echo: (START, exception(json.dumps({"message": INVALID + echo}).encode())[:-20]),
}

EXPECTED = {
    "exception": rs.ProviderError,
    "exception-escaped": rs.ProviderError,
    "error-header": rs.ProviderError,
    "not-json": rs.MalformedChunkError,
    "text-delta": None,
    "split": rs.ProviderError,
    "broken-crc": rs.MalformedChunkError,
    "broken-prelude": rs.MalformedChunkError,
    "cut": rs.TruncatedStreamError,
}
#: Shapes whose error quotes lengths or checksums of the (masked) bytes: the
#: same kind of error as with `[redacted]` on the wire, not the same message.
MASKED = ("broken-crc", "broken-prelude", "cut")


def echo_of(request: RecordedRequest, *, redacted: bool) -> str:
    """The credentials the request carried, or as many `[redacted]` (what a redacted echo reads)."""
    echo = credentials_of(request)
    if not redacted:
        return echo
    return " ".join("[redacted]" for _ in echo.split(" ")) if echo else ""


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    """`/<shape>?echo=key|redacted[&untyped=1]`: the shape, echoing the credentials or `[redacted]`.

    With `untyped`, the answer has no content type.
    """

    def answer(request: RecordedRequest) -> WireAnswer:
        shape = request.path.partition("?")[0].rpartition("/")[2]
        echo = echo_of(request, redacted=request.query.get("echo") == "redacted")
        pause = 0.02 if shape == "split" else 0.0
        headers = () if "untyped" in request.query else (("Content-Type", EVENTSTREAM),)
        return WireAnswer(headers=headers, body=SHAPES[shape](echo), pause=pause)

    with FakeLLMServer.scripted(answer) as wire:
        yield wire


def run_shape(
    server: FakeLLMServer,
    shape: str,
    *,
    mode: str,
    where: str,
    echo: str,
    pipe: tuple[Any, ...] = PIPE,
) -> Outcome:
    url = f"{server.url.rpartition('/')[0]}/{shape}?echo={echo}"
    return drive(mode, url, request=dict(PLACES[where]), source={"body": "bytes"}, pipe=pipe)


def assert_no_secret(outcome: Outcome) -> None:
    if outcome.error is not None:
        leaks = places(outcome.error, secrets())
        assert leaks == [], "\n".join(leaks[:10])
    shown = repr(outcome.items)
    assert [s for s in secrets() if s in shown] == [], shown[:500]


# Every credential place with a sync request; every way in with a bearer token
# (Bedrock API keys, `AWS_BEARER_TOKEN_BEDROCK`, travel as `Authorization: Bearer`).
COMBINATIONS = [(where, "request") for where in PLACES] + [
    ("authorization", mode) for mode in MODES if mode != "request"
]


@pytest.mark.parametrize(("where", "mode"), COMBINATIONS)
@pytest.mark.parametrize("shape", list(SHAPES))
def test_an_echoed_credential_appears_nowhere(
    server: FakeLLMServer, shape: str, where: str, mode: str
) -> None:
    outcome = run_shape(server, shape, mode=mode, where=where, echo="key")
    # The server did echo a credential: the test proves something.
    assert echo_of(server.requests[-1], redacted=False)
    expected = EXPECTED[shape]
    if expected is None:
        assert outcome.error is None
        assert outcome.completed
    else:
        assert type(outcome.error) is expected, repr(outcome.error)
    assert_no_secret(outcome)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_items_and_the_error_are_those_of_a_redacted_echo(
    server: FakeLLMServer, shape: str
) -> None:
    got = run_shape(server, shape, mode="request", where="authorization", echo="key")
    want = run_shape(server, shape, mode="request", where="authorization", echo="redacted")
    assert got.items == want.items
    assert got.completed == want.completed
    assert type(got.error) is type(want.error)
    if shape not in MASKED:
        assert str(got.error) == str(want.error)
        assert repr(got.error) == repr(want.error)
        assert getattr(got.error, "payload", None) == getattr(want.error, "payload", None)


@pytest.mark.parametrize("shape", ["exception", "split", "text-delta"])
def test_a_body_without_a_content_type_is_redacted_as_an_event_stream(
    server: FakeLLMServer, shape: str
) -> None:
    got = run_shape(server, shape, mode="request", where="authorization", echo="key&untyped=1")
    want = run_shape(server, shape, mode="request", where="authorization", echo="redacted")
    assert_no_secret(got)
    assert got.items == want.items
    assert repr(got.error) == repr(want.error)


def test_the_provider_error_keeps_what_is_not_secret(server: FakeLLMServer) -> None:
    error = run_shape(server, "exception", mode="request", where="authorization", echo="key").error
    assert isinstance(error, rs.ProviderError)
    assert error.message == INVALID + "[redacted]"
    assert error.type == "validationException"
    assert error.code == 403
    assert error.payload == {"message": INVALID + "[redacted]", "originalStatusCode": 403}


def test_an_escaped_echo_is_redacted_once_unescaped(server: FakeLLMServer) -> None:
    outcome = run_shape(
        server, "exception-escaped", mode="request", where="authorization", echo="key"
    )
    assert isinstance(outcome.error, rs.ProviderError)
    assert outcome.error.message == INVALID + "[redacted]"


def test_the_items_before_the_echo_all_arrive(server: FakeLLMServer) -> None:
    outcome = run_shape(server, "text-delta", mode="request", where="authorization", echo="key")
    assert outcome.completed
    text = "".join(item.text for item in outcome.items if isinstance(item, rs.TextDelta))
    assert text == "2 + 2 = 4. You sent [redacted]"
    assert any(isinstance(item, rs.Usage) for item in outcome.items)


def test_a_broken_message_still_fails_where_it_did(server: FakeLLMServer) -> None:
    got = run_shape(server, "broken-crc", mode="request", where="authorization", echo="key")
    assert isinstance(got.error, rs.MalformedChunkError)
    assert f"event-stream message at byte {len(START)}: message CRC32" in str(got.error)
    assert got.items == [rs.TextDelta("2 + 2 = 4.")]
    broken = run_shape(server, "broken-prelude", mode="request", where="authorization", echo="key")
    assert isinstance(broken.error, rs.MalformedChunkError)
    assert f"message at byte {len(START)}: prelude CRC32" in str(broken.error)


def test_the_raw_bytes_hold_no_credential_and_stay_a_valid_stream(server: FakeLLMServer) -> None:
    outcome = run_shape(server, "split", mode="request", where="authorization", echo="key", pipe=())
    assert outcome.error is None
    data = b"".join(outcome.items)
    assert KEY.encode()[:10] not in data
    parser = EventStreamParser()
    messages = parser.feed(data)
    assert parser.close() == []
    assert messages[:2] == MESSAGES[:2]
    assert json.loads(messages[2].payload) == {"message": INVALID + "[redacted]"}


# --------------------------------------------------------------------------- nothing to redact


@pytest.fixture(scope="module")
def recording() -> Iterator[FakeLLMServer]:
    """The recorded stream, in blocks that cut its messages anywhere."""
    cuts = (0, 5, 90, 91, 200, 333, len(DATA))
    blocks = tuple(DATA[a:b] for a, b in itertools.pairwise(cuts))

    def answer(request: RecordedRequest) -> WireAnswer:
        return WireAnswer(headers=(("Content-Type", EVENTSTREAM),), body=blocks, pause=0.005)

    with FakeLLMServer.scripted(answer) as wire:
        yield wire


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", [None, "authorization", "query-key"])
def test_a_stream_without_an_echo_goes_through_byte_for_byte(
    recording: FakeLLMServer, mode: str, where: str | None
) -> None:
    request = dict(PLACES[where]) if where else {}
    outcome = drive(mode, recording.url, request=request, source={"body": "bytes"})
    assert outcome.error is None
    assert outcome.completed
    assert b"".join(outcome.items) == DATA
    decoded = drive(mode, recording.url, request=request, source={"body": "bytes"}, pipe=PIPE)
    plain = drive(mode, recording.url, source={"body": "bytes"}, pipe=PIPE)
    assert decoded.completed
    assert decoded.items == plain.items


def test_without_credentials_an_echo_shaped_message_is_left_alone(server: FakeLLMServer) -> None:
    # No credential in the request, nothing to redact: the bytes are the server's.
    url = f"{server.url.rpartition('/')[0]}/exception-escaped?echo=key"
    outcome = drive("request", url, source={"body": "bytes"})
    assert b"".join(outcome.items) == b"".join(SHAPES["exception-escaped"](""))


# --------------------------------------------------------------------------- other raw bodies


def test_a_raw_body_of_another_kind_is_redacted_in_its_bytes() -> None:
    def answer(request: RecordedRequest) -> WireAnswer:
        echo = credentials_of(request)
        data = json.dumps({"error": {"message": f"bad key {echo}"}})
        body = f"data: {data}\n\n".encode()
        at = body.find(echo.encode()) + 9
        return WireAnswer(body=(body[:at], body[at:]), pause=0.02)

    with FakeLLMServer.scripted(answer) as wire:
        for where in ("authorization", "x-api-key", "basic-auth"):
            raw = drive("request", wire.url, request=dict(PLACES[where]), source={"body": "bytes"})
            assert raw.error is None
            data = b"".join(raw.items)
            assert b"[redacted]" in data
            assert_no_secret(raw)
            lines = (rs.lines(), rs.sse_frames(), rs.decode_chunks())
            pipe = drive(
                "arequest",
                wire.url,
                request=dict(PLACES[where]),
                source={"body": "bytes"},
                pipe=lines,
            )
            assert isinstance(pipe.error, rs.ProviderError)
            assert "[redacted]" in pipe.error.message
            assert_no_secret(pipe)
