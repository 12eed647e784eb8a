"""Honest ends in every dialect (issue 18, items 1 and 7).

- A stream cut in the middle of a line, or of an event no blank line closed,
  is `TruncatedStreamError` (chained to the `MalformedChunkError` the cut text
  would be), in every dialect and every pipeline shape; a last line or event
  that merely lacks its terminator, and decodes, is no error (real servers
  end that way).
- A stream whose end arrives with no answer before it (see `EmptyStreamError`)
  is `EmptyStreamError`, in every dialect.

Only the public API is used: `rxstream` and `rxstream.core` by their public names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import httpx
import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex import Observable
from reactivex import operators as ops

import rxstream as rs
from rxstream.core import dialects
from rxstream.core.eventstream import encode_message
from rxstream.core.lines import LineSplitter, Unterminated
from rxstream.core.sse import SSEParser

DATA = Path(__file__).parent.parent.parent / "data"

Outcome = tuple[list[Any], Exception | None]


def run(observable: Observable[Any]) -> Outcome:
    items: list[Any] = []
    errors: list[Exception] = []
    observable.subscribe(items.append, errors.append)
    return items, errors[0] if errors else None


def pieces(body: bytes, size: int = 7) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)] or [b""]


def kind_of(dialect: str) -> str:
    return {"ollama": "ndjson", "bedrock": "eventstream"}.get(dialect, "sse")


def decoded(
    body: bytes, dialect: str = "auto", *, fused: bool = True, size: int = 7, wire: str = ""
) -> Outcome:
    """`body` through its wire kind's pipeline (docs/concepts/architecture.md), named or auto.

    Unfused, an identity map stands between the machine operators, so each
    runs as its own Rx stage (no `take_strings` shortcut, no fusion).
    """
    sep: list[Callable[[Observable[Any]], Observable[Any]]] = (
        [] if fused else [ops.map(lambda x: x)]
    )
    source: Any = reactivex.from_iterable(pieces(body, size))
    wire = wire or (kind_of(dialect) if dialect != "auto" else "sse")
    if wire == "eventstream":
        return run(source.pipe(rs.eventstream_frames(), *sep, rs.decode(dialect)))
    if wire == "ndjson":
        return run(source.pipe(rs.lines(), *sep, rs.decode(dialect)))
    return run(source.pipe(rs.lines(), *sep, rs.sse_frames(), *sep, rs.decode(dialect)))


def assert_cut(error: Exception | None, *, where: str = "") -> None:
    """A truncated stream (not an empty one) that says where, chained to the malformed text."""
    assert isinstance(error, rs.TruncatedStreamError), repr(error)
    assert not isinstance(error, rs.EmptyStreamError), repr(error)
    assert f"ended in the middle of {where}" in str(error), str(error)
    assert isinstance(error.__cause__, rs.MalformedChunkError), repr(error.__cause__)


# --------------------------------------------------------------------------- cut mid-line

CHAT_CUT = (
    b'data: {"choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
    b'data: {"choices":[{"delta":{"content":"Hel'
)
ANTHROPIC_START = (
    b"event: message_start\n"
    b'data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant",'
    b'"model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
)
ANTHROPIC_TEXT = (
    b"event: content_block_start\n"
    b'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    b"event: content_block_delta\n"
    b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n'
)
RESPONSES_START = (
    b"event: response.created\n"
    b'data: {"type":"response.created",'
    b'"response":{"id":"r","status":"in_progress","output":[]}}\n\n'
)
GEMINI_TEXT = (
    b'data: {"candidates": [{"content": {"parts": [{"text": "Hi"}],"role": "model"}}]}\r\n\r\n'
)
COHERE_START = (
    b"event: message-start\n"
    b'data: {"type":"message-start","id":"x","delta":{"message":{"role":"assistant"}}}\n\n'
)
OLLAMA_LINE = b'{"model":"m","message":{"role":"assistant","content":"Hi"},"done":false}\n'

# (id, dialect, body, what the message says the stream ended in the middle of:
# an event for event streams, whose last event is cut too, a line for NDJSON)
CUTS: list[tuple[str, str, bytes, str]] = [
    ("chat: a data line", "openai-chat", CHAT_CUT, "an event"),
    (
        "chat: the first event",
        "openai-chat",
        b'data: {"choices":[{"delta":{"content":"Hel',
        "an event",
    ),
    ("chat: [DONE] itself", "openai-chat", CHAT_CUT[:62] + b"data: [DO", "an event"),
    (
        "chat: inside a multi-line data frame",
        "openai-chat",
        b'data: {"choices":[{"index":0,\ndata: "delta":{"content":"a"}',
        "an event",
    ),
    (
        "chat: a multi-line data frame cut at a line end",
        "openai-chat",
        b'data: {"choices":[{"index":0,\ndata: "delta":\n',
        "an event",
    ),
    ("anthropic: message_start", "anthropic", ANTHROPIC_START[:90], "an event"),
    (
        "anthropic: a padded message_stop",
        "anthropic",
        ANTHROPIC_START + ANTHROPIC_TEXT + b'event: message_stop\ndata: {"type":"message_stop"   ',
        "an event",
    ),
    (
        "anthropic: a text delta",
        "anthropic",
        ANTHROPIC_START + ANTHROPIC_TEXT[:-30],
        "an event",
    ),
    (
        "responses: a delta",
        "openai-responses",
        RESPONSES_START + b'event: response.output_text.delta\ndata: {"type":"response.output_te',
        "an event",
    ),
    ("gemini: a chunk (CRLF)", "gemini", GEMINI_TEXT + GEMINI_TEXT[:40], "an event"),
    (
        "cohere: a delta",
        "cohere",
        COHERE_START
        + b'event: content-delta\ndata: {"type":"content-delta","index":0,"delta":{"mes',
        "an event",
    ),
    ("ollama: an NDJSON line", "ollama", OLLAMA_LINE + OLLAMA_LINE[:30], "a line"),
]


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("by_name", [True, False], ids=["by-name", "auto"])
@pytest.mark.parametrize(
    ("dialect", "body", "where"), [c[1:] for c in CUTS], ids=[c[0] for c in CUTS]
)
def test_a_cut_is_a_truncated_stream(
    dialect: str, body: bytes, where: str, by_name: bool, fused: bool
) -> None:
    for size in (1, 5, len(body)):
        name = dialect if by_name else "auto"
        _, error = decoded(body, name, fused=fused, size=size, wire=kind_of(dialect))
        assert_cut(error, where=where)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_a_cut_in_a_field_line_before_the_data_is_truncated(fused: bool) -> None:
    # `event: message_st`, then the end: an event with no data is no event (the
    # spec drops it), so the decoder says what it misses: its end marker.
    body = ANTHROPIC_START + ANTHROPIC_TEXT + b"event: message_st"
    for name in ("anthropic", "auto"):
        _, error = decoded(body, name, fused=fused)
        assert isinstance(error, rs.TruncatedStreamError), error
        assert not isinstance(error, rs.EmptyStreamError)
        assert "ended before message_stop" in str(error)
    _, error = decoded(b"event: message_st", "anthropic", fused=fused)
    assert isinstance(error, rs.TruncatedStreamError)  # nothing arrived: EmptyStreamError


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("tail", [b"data", b'data: {"error":{"mess'])
def test_a_cut_error_event_is_a_truncated_stream_not_a_provider_error(
    fused: bool, tail: bytes
) -> None:
    # Groq sends `event: error` then its data: cut inside the data line, what
    # the provider meant to say is unknown, so the stream was cut short.
    body = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\nevent: error\n' + tail
    for name in ("openai-chat", "auto"):
        _, error = decoded(body, name, fused=fused)
        assert type(error) is rs.TruncatedStreamError, error
        assert isinstance(error.__cause__, rs.ProviderError)
    whole = body[: -len(tail)] + b'data: {"error":{"message":"slow down"}}'  # no blank line after
    _, error = decoded(whole, "openai-chat", fused=fused)
    assert isinstance(error, rs.ProviderError)
    assert error.message == "slow down"


def test_the_message_quotes_the_end_of_the_cut_bounded() -> None:
    body = b'data: {"choices":[{"delta":{"content":"' + b"x" * 5000 + b"Hel"
    _, error = decoded(body, "openai-chat")
    assert_cut(error)
    assert "Hel'" in str(error)
    assert len(str(error)) < 300
    assert "the openai-chat stream ended in the middle of an event" in str(error)


def test_the_long_spelling_and_chunk_decoder_say_truncated_too() -> None:
    for chain in (
        [rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.deltas()],
        [rs.lines(), rs.sse_frames(), rs.decode_chunks()],
        [rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.accumulate_message()],
        [rs.lines(), rs.sse_frames(), rs.decode("openai-chat"), rs.accumulate_message()],
    ):
        source: Any = reactivex.from_iterable(pieces(CHAT_CUT))
        _, error = run(source.pipe(*chain))
        assert_cut(error)


def test_skipping_malformed_items_never_skips_a_cut() -> None:
    for dialect, body, *_ in [c[1:] for c in CUTS]:
        decoder = rs.decode(dialect, on_malformed="skip")
        source: Any = reactivex.from_iterable(pieces(body))
        frames = [] if dialect == "ollama" else [rs.sse_frames()]
        _, error = run(source.pipe(rs.lines(), *frames, decoder))
        assert isinstance(error, rs.TruncatedStreamError), (dialect, error)


def test_bedrock_cut_mid_frame_is_truncated() -> None:
    body = (DATA / "bedrock" / "converse-stream-text.eventstream").read_bytes()
    for cut in (5, len(body) // 2, len(body) - 3):
        _, error = decoded(body[:cut], "bedrock")
        assert isinstance(error, rs.TruncatedStreamError), (cut, error)
        assert "ended inside the message" in str(error)


def test_from_request_splits_the_last_line_the_same_way() -> None:
    key = "sk-honest-ends-0123456789"

    def answer(request: httpx.Request) -> httpx.Response:
        ollama = "ollama" in str(request.url)
        body = OLLAMA_LINE + OLLAMA_LINE[:30] if ollama else CHAT_CUT
        if "authorization" in request.headers:
            body = body.replace(b'"Hi"', f'"{key}"'.encode()) + key[:9].encode()
        kind = "application/x-ndjson" if ollama else "text/event-stream"
        return httpx.Response(200, headers={"content-type": kind}, content=body)

    # A server that echoes the key has what it sends redacted: the mark survives that too.
    for headers in ({}, {"Authorization": f"Bearer {key}"}):
        with httpx.Client(transport=httpx.MockTransport(answer)) as client:
            chat = rs.from_request(client, "POST", "http://127.0.0.1/chat", headers=headers)
            _, error = run(chat.pipe(rs.sse_frames(), rs.decode()))
            assert_cut(error, where="an event")
            ollama = rs.from_request(client, "POST", "http://127.0.0.1/ollama", headers=headers)
            _, error = run(ollama.pipe(rs.decode("ollama")))
            assert_cut(error, where="a line")
            assert key not in str(error)


def test_bare_machines_mark_what_the_input_ended_in() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"data: a\n\ndata: {") == ["data: a", ""]
    (last,) = splitter.close()
    assert type(last) is Unterminated
    assert last == "data: {"
    parser = SSEParser()
    assert parser.feed("data: a") == []
    (frame,) = parser.close()
    assert frame == rs.SSEFrame("a")
    assert rs.SSEFrame("a") == frame
    assert type(frame.data) is Unterminated
    # Only what the cut broke is a truncated stream: whole JSON was not cut
    # short, so what is wrong with it is its own fault.
    for data, error in (
        ('{"choices": 5}', rs.MalformedChunkError),
        ('{"choi', rs.TruncatedStreamError),
    ):
        decoder = dialects.decoder("openai-chat")
        with pytest.raises(error):
            decoder.feed(rs.SSEFrame(Unterminated(data)))
        with pytest.raises(rs.MalformedChunkError):  # not the last event: malformed
            dialects.decoder("openai-chat").feed(rs.SSEFrame(data))


def test_a_bom_and_no_line_end_together() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"\xef\xbb\xbfdata: x") == []
    (last,) = splitter.close()
    assert isinstance(last, Unterminated)
    assert last == "data: x"
    parser = SSEParser()
    parser.feed(last)
    assert parser.close() == [rs.SSEFrame("x")]


# ---------------------------------------------------------- real ends without a line end


@pytest.mark.parametrize(
    "name",
    [
        "ollama/chat-tool-call-llama3.1.ndjson",
        "mistral/chat-tool-call-whole-done.sse",
        "anthropic/tool-use-input-json.sse",
    ],
)
@pytest.mark.parametrize("fused", [True, False], ids=["fused", "unfused"])
def test_a_last_line_without_its_line_end_is_no_error(name: str, fused: bool) -> None:
    body = (DATA / name).read_bytes()
    assert not body.endswith(b"\n")
    wire = "ndjson" if name.endswith(".ndjson") else "sse"
    items, error = decoded(body, fused=fused, wire=wire)
    assert error is None, error
    assert any(isinstance(d, rs.Finish) for d in items)
    # ... and neither is the same end without its last blank line, or with it.
    for end in (b"\n", b"\n\n"):
        assert decoded(body + end, fused=fused, wire=wire) == (items, None)


# ------------------------------------------------------------ every cut of every recording


def recordings() -> list[Path]:
    return sorted(p for p in DATA.glob("*/*") if p.suffix in (".sse", ".ndjson", ".eventstream"))


#: The line that ends a stream, per dialect (or an error that ends it early).
END = {
    "openai-chat": rb'\[DONE\]|"finish_reason": ?"|"error"',
    "anthropic": rb'message_stop|"error"',
    "openai-responses": rb'"type": ?"(response\.(completed|incomplete|failed)|error)"',
    "gemini": rb'"finishReason"|"error"',
    "cohere": rb'message-end|"error"',
    "ollama": rb'"done": ?true|"error"',
}


def _line_ends(body: bytes) -> Iterable[int]:
    """The offset where each line's content ends (before its terminator), and the body's end."""
    for match in re.finditer(rb"\r\n|\r|\n", body):
        yield match.start()
    yield len(body)


def _eventstream_ends(body: bytes) -> Iterable[int]:
    at = 0
    while at + 4 <= len(body):
        at += int.from_bytes(body[at : at + 4], "big")
        yield at


def _ending(path: Path) -> tuple[bytes, str, int] | None:
    """(body, dialect, where its end is complete), or None for a recording that is no whole stream.

    The end is where the line of the end marker (or of an error that ends the
    stream early) is complete, line end or not: the first such line after
    which the stream is no longer truncated.
    """
    body = path.read_bytes()
    wire = {".ndjson": "ndjson", ".eventstream": "eventstream"}.get(path.suffix, "sse")
    _, error = decoded(body, size=len(body), wire=wire)
    if error is not None and not isinstance(error, rs.ProviderError):
        return None
    auto = dialects.AutoDecoder()
    for item in _wire_items(body, wire):
        auto.feed(item)
        if auto.dialect is not None:
            break
    dialect = auto.dialect
    assert dialect is not None, path
    if dialect == "bedrock":
        ends = list(_eventstream_ends(body))
    else:
        ends = [
            end
            for end in _line_ends(body)
            if re.search(END[dialect], body[body.rfind(b"\n", 0, end) + 1 : end])
        ]
    for end in ends:
        _, error = decoded(body[:end], dialect, size=len(body))
        if not isinstance(error, rs.TruncatedStreamError):
            return body, dialect, end
    raise AssertionError(f"{path}: no end marker completes the stream")


def _wire_items(body: bytes, wire: str) -> list[Any]:
    source = reactivex.from_iterable([body])
    if wire == "ndjson":
        return run(source.pipe(rs.lines()))[0]
    if wire == "eventstream":
        return run(source.pipe(rs.eventstream_frames()))[0]
    return run(source.pipe(rs.lines(), rs.sse_frames()))[0]


ENDINGS = [e for e in (_ending(p) for p in recordings()) if e is not None]


def test_the_recordings_are_enough() -> None:
    assert len(ENDINGS) >= 50
    assert {dialect for _, dialect, _ in ENDINGS} >= set(dialects.DIALECTS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_cut_before_the_end_is_a_truncated_stream(data: st.DataObject) -> None:
    body, dialect, end = data.draw(st.sampled_from(ENDINGS))
    cut = data.draw(st.integers(0, end - 1))
    name = data.draw(st.sampled_from([dialect, "auto"]))
    fused = data.draw(st.booleans())
    size = data.draw(st.integers(1, 64))
    _, error = decoded(body[:cut], name, fused=fused, size=size)
    assert isinstance(error, rs.TruncatedStreamError), (dialect, cut, body[:cut][-80:], error)


# --------------------------------------------------------------------------- empty answers


def sse(*events: tuple[str | None, str]) -> bytes:
    out = b""
    for event, data in events:
        out += (f"event: {event}\n" if event else "").encode() + f"data: {data}\n\n".encode()
    return out


def eventstream(*events: tuple[str, str]) -> bytes:
    headers = {":message-type": "event", ":content-type": "application/json"}
    return b"".join(
        encode_message({**headers, ":event-type": name}, data.encode()) for name, data in events
    )


def ndjson(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


ANTHROPIC_STOP = ("message_stop", '{"type":"message_stop"}')
PING = ("ping", '{"type": "ping"}')
ANTHROPIC_MESSAGE = (
    "message_start",
    '{"type":"message_start","message":{"id":"m","type":"message","role":"assistant",'
    '"model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}}',
)
RESPONSES_DONE = (
    "response.completed",
    '{"type":"response.completed","response":{"id":"r","status":"completed","output":[]}}',
)
RESPONSES_CREATED = (
    "response.created",
    '{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}',
)
COHERE_END = ("message-end", '{"type":"message-end"}')
COHERE_MESSAGE = ("message-start", '{"type":"message-start","id":"x"}')
OLLAMA_DONE = '{"model":"m","message":{"role":"assistant","content":""},"done":true}'
OLLAMA_MESSAGE = '{"model":"m","message":{"role":"assistant","content":""},"done":false}'
GEMINI_USAGE = '{"usageMetadata": {"promptTokenCount": 3},"modelVersion": "g"}'
GEMINI_MESSAGE = '{"candidates": [{"content": {"parts": [],"role": "model"}}]}'

RESPONSES_KEEPALIVE = ("keepalive", '{"type":"keepalive","sequence_number":1}')

# (id, dialect, body): the stream ends, nothing of an answer before it.
EMPTY: list[tuple[str, str, bytes]] = [
    ("openai-chat: [DONE] alone", "openai-chat", sse((None, "[DONE]"))),
    (
        "openai-chat: keep-alives, then [DONE]",
        "openai-chat",
        b": OPENROUTER PROCESSING\n\n" * 3 + sse((None, "[DONE]")),
    ),
    (
        "openai-chat: a role, then [DONE]",
        "openai-chat",
        sse((None, '{"choices":[{"index":0,"delta":{"role":"assistant"}}]}'), (None, "[DONE]")),
    ),
    ("anthropic: message_stop alone", "anthropic", sse(ANTHROPIC_STOP)),
    ("anthropic: pings, then message_stop", "anthropic", sse(PING, PING, ANTHROPIC_STOP)),
    (
        "anthropic: message_start, then message_stop",
        "anthropic",
        sse(ANTHROPIC_MESSAGE, PING, ANTHROPIC_STOP),
    ),
    ("openai-responses: nothing", "openai-responses", b""),
    (
        "openai-responses: keep-alives, then the end of input",
        "openai-responses",
        sse(RESPONSES_KEEPALIVE, RESPONSES_KEEPALIVE),
    ),
    ("gemini: usage alone", "gemini", sse((None, GEMINI_USAGE))),
    (
        "gemini: keep-alives, then usage",
        "gemini",
        b": keep-alive\r\n\r\n" * 2 + sse((None, GEMINI_USAGE)),
    ),
    ("cohere: message-end alone", "cohere", sse(COHERE_END)),
    ("cohere: keep-alives, then message-end", "cohere", b": ping\n\n" * 2 + sse(COHERE_END)),
    ("cohere: message-start, then message-end", "cohere", sse(COHERE_MESSAGE, COHERE_END)),
    ("ollama: blank lines only", "ollama", b"\n\n\n"),
    (
        "bedrock: messageStart alone",
        "bedrock",
        eventstream(("messageStart", '{"role":"assistant"}')),
    ),
    (
        "bedrock: messageStart, then metadata",
        "bedrock",
        eventstream(
            ("messageStart", '{"role":"assistant"}'),
            ("metadata", '{"usage":{"inputTokens":1,"outputTokens":0}}'),
        ),
    ),
]


def message_of(body: bytes, dialect: str) -> Outcome:
    source: Any = reactivex.from_iterable(pieces(body))
    head: list[Any]
    if kind_of(dialect) == "eventstream":
        head = [rs.eventstream_frames()]
    else:
        head = [rs.lines()] if kind_of(dialect) == "ndjson" else [rs.lines(), rs.sse_frames()]
    return run(source.pipe(*head, rs.decode(dialect), rs.accumulate_message()))


@pytest.mark.parametrize("by_name", [True, False], ids=["by-name", "auto"])
@pytest.mark.parametrize(("dialect", "body"), [c[1:] for c in EMPTY], ids=[c[0] for c in EMPTY])
def test_an_end_without_an_answer_is_an_empty_stream(
    dialect: str, body: bytes, by_name: bool
) -> None:
    items, error = decoded(body, dialect if by_name else "auto", wire=kind_of(dialect))
    assert isinstance(error, rs.EmptyStreamError), (items, error)
    assert all(isinstance(d, rs.Usage | rs.Metadata) for d in items), items
    # ... so a pipeline that gathers the message ends with a StreamError, never
    # with no item (which `.run()` reports as reactivex's SequenceContainsNoElementsError).
    messages, error = message_of(body, dialect)
    assert messages == []
    assert isinstance(error, rs.EmptyStreamError)


# (id, dialect, body): the end marker alone, where the dialect's end marker says
# why the answer ended: a finish, which is an answer (an empty one).
FINISHING_ENDS: list[tuple[str, str, bytes]] = [
    ("openai-responses", "openai-responses", sse(RESPONSES_CREATED, RESPONSES_DONE)),
    (
        "gemini",
        "gemini",
        sse(
            (
                None,
                '{"candidates": [{"content": {"parts": [],"role": "model"},'
                '"finishReason": "STOP"}]}',
            )
        ),
    ),
    (
        "cohere",
        "cohere",
        sse(("message-end", '{"type":"message-end","delta":{"finish_reason":"COMPLETE"}}')),
    ),
    ("ollama", "ollama", ndjson(OLLAMA_MESSAGE, OLLAMA_DONE)),
    (
        "bedrock",
        "bedrock",
        eventstream(
            ("messageStart", '{"role":"assistant"}'), ("messageStop", '{"stopReason":"end_turn"}')
        ),
    ),
    (
        "anthropic",
        "anthropic",
        sse(
            ANTHROPIC_MESSAGE,
            ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"end_turn"}}'),
            ANTHROPIC_STOP,
        ),
    ),
    (
        "openai-chat",
        "openai-chat",
        sse(
            (None, '{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}'), (None, "[DONE]")
        ),
    ),
]


@pytest.mark.parametrize(
    ("dialect", "body"), [c[1:] for c in FINISHING_ENDS], ids=[c[0] for c in FINISHING_ENDS]
)
def test_a_finish_alone_is_an_empty_answer_that_says_why(dialect: str, body: bytes) -> None:
    (message,), error = message_of(body, dialect)
    assert error is None
    assert (message.content, message.tool_calls, message.finish_reason) == ("", (), "stop")
