"""`SSEEncoder`: items to the bytes of SSE events, in a dialect or in rxstream's own format.

Table tests: each case feeds items (or ends with an error) and compares the
exact bytes. The decoding side (bytes back to items, for every format) is the
property in tests/operators/test_to_sse.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxstream.core import wire
from rxstream.core.dialects import decoder
from rxstream.core.dialects.sse_encoder import KEEPALIVE, SSE_DIALECTS, SSEEncoder
from rxstream.core.lines import LineSplitter
from rxstream.core.sse import SSEParser, comment_lines, comment_text, event_lines, event_text
from rxstream.errors import (
    HTTPStatusError,
    ProviderError,
    StreamError,
    StreamTimeoutError,
)
from rxstream.models import (
    ChatChunk,
    Finish,
    Message,
    Metadata,
    ReasoningDelta,
    Reset,
    SSEFrame,
    StreamEntry,
    TextDelta,
    ToolCall,
    Usage,
)

END = object()  # in a script: close the encoder


def run(encoder: SSEEncoder, script: list[Any]) -> bytes:
    """Feed the script (END closes, an exception ends with the error event); join the bytes."""
    out: list[bytes] = []
    for step in script:
        if step is END:
            out += encoder.close()
        elif isinstance(step, BaseException):
            out += encoder.error(step)
        else:
            out += encoder.feed(step)
    return b"".join(out)


def chat(content: str, **extra: Any) -> str:
    """The data of one openai-chat chunk the renderer writes (its default id and model)."""
    head = '{"id":"chatcmpl-rxstream","object":"chat.completion.chunk","created":0,'
    return (
        head
        + f'"model":"rxstream-fake","choices":[{{"index":0,"delta":{content},'
        + ('"finish_reason":null}]}' if not extra else f'"finish_reason":"{extra["finish"]}"}}]}}')
    )


ROLE = chat('{"role":"assistant","content":""}')
HI = chat('{"content":"Hi"}')
BANG = chat('{"content":"!"}')
STOP = chat("{}", finish="stop")

CASES = [
    pytest.param(
        "rxstream",
        {},
        [TextDelta("Hel"), TextDelta("lo"), Finish("stop"), END],
        b'event: text\nid: 1\ndata: {"type":"text","text":"Hel","choice":0}\n\n'
        b'event: text\nid: 2\ndata: {"type":"text","text":"lo","choice":0}\n\n'
        b'event: finish\nid: 3\ndata: {"type":"finish","reason":"stop","choice":0,"raw":null}\n\n'
        b'event: done\nid: 4\ndata: {"type":"done","version":1}\n\n',
        id="rxstream-counter-ids-and-done",
    ),
    pytest.param(
        "rxstream",
        {},
        [
            TextDelta("Hi"),
            ProviderError("Overloaded", type="overloaded_error", code=529),
        ],
        b'event: text\nid: 1\ndata: {"type":"text","text":"Hi","choice":0}\n\n'
        b'event: error\nid: 2\ndata: {"type":"error","error":"ProviderError",'
        b'"message":"provider error (overloaded_error, code 529): Overloaded",'
        b'"attributes":{"message":"Overloaded","type":"overloaded_error","code":529,'
        b'"payload":null,"event":"message"}}\n\n',
        id="rxstream-error-event-ends-the-stream",
    ),
    pytest.param(
        "rxstream",
        {},
        [RuntimeError("secret at /home/me/.env")],
        b'event: error\nid: 1\ndata: {"type":"error","error":"StreamError",'
        b'"message":"internal error in the stream (RuntimeError)","attributes":{}}\n\n',
        id="rxstream-a-bug-is-reported-by-class-only",
    ),
    pytest.param(
        "rxstream",
        {},
        [StreamEntry("1700-0", TextDelta("a")), StreamEntry("1700-1", TextDelta("b")), END],
        b'event: text\nid: 1700-0\ndata: {"type":"text","text":"a","choice":0}\n\n'
        b'event: text\nid: 1700-1\ndata: {"type":"text","text":"b","choice":0}\n\n'
        b'event: done\nid: 1700-1\ndata: {"type":"done","version":1}\n\n',
        id="rxstream-entry-ids-the-end-repeats-the-last",
    ),
    pytest.param(
        "rxstream",
        {},
        [
            ToolCall(0, "call_1", "f", '{"a":1}'),
            Message(0, content="Hi"),
            END,
        ],
        b'event: call\nid: 1\ndata: {"type":"call","index":0,"id":"call_1","name":"f",'
        b'"arguments":"{\\"a\\":1}","choice":0,"complete":true,"partial":null}\n\n'
        # A Message is the event "message", the SSE default: no `event:` line is needed.
        b'id: 2\ndata: {"type":"message","choice":0,"role":"assistant",'
        b'"content":"Hi","reasoning":"","refusal":"","tool_calls":[],"finish_reason":null,'
        b'"usage":null,"finish_raw":null,"citations":[],"server_tools":[],"reasoning_state":[],'
        b'"metadata":{}}\n\n'
        b'event: done\nid: 3\ndata: {"type":"done","version":1}\n\n',
        id="rxstream-any-codec-item",
    ),
    pytest.param(
        "rxstream",
        {"retry": 2500},
        [TextDelta("a"), END],
        b'event: text\nid: 1\nretry: 2500\ndata: {"type":"text","text":"a","choice":0}\n\n'
        b'event: done\nid: 2\ndata: {"type":"done","version":1}\n\n',
        id="retry-on-the-first-event-only",
    ),
    pytest.param(
        "rxstream",
        {"after": "1700-5"},
        [END],
        b'event: done\nid: 1700-5\ndata: {"type":"done","version":1}\n\n',
        id="resumed-with-nothing-new-repeats-the-last-event-id",
    ),
    pytest.param(
        "rxstream",
        {},
        [TextDelta("\ud83d"), TextDelta("\ude00 \u2028"), END],
        b'event: text\nid: 1\ndata: {"type":"text","text":"\\ud83d","choice":0}\n\n'
        b'event: text\nid: 2\ndata: {"type":"text","text":"\\ude00 \xe2\x80\xa8","choice":0}\n\n'
        b'event: done\nid: 3\ndata: {"type":"done","version":1}\n\n',
        id="lone-surrogates-escaped-other-text-as-utf8",
    ),
    pytest.param(
        "openai-chat",
        {},
        [TextDelta("Hi"), Finish("stop"), END],
        f"id: 1\ndata: {ROLE}\n\n"
        f"id: 2\ndata: {HI}\n\n"
        f"id: 3\ndata: {STOP}\n\n"
        "id: 4\ndata: [DONE]\n\n".encode(),
        id="openai-chat-every-event-numbered",
    ),
    pytest.param(
        "openai-chat",
        {},
        [StreamEntry("9-0", TextDelta("Hi")), StreamEntry("9-1", TextDelta("!")), END],
        f"data: {ROLE}\n\n"
        f"id: 9-0\ndata: {HI}\n\n"
        f"id: 9-1\ndata: {BANG}\n\n"
        "id: 9-1\ndata: [DONE]\n\n".encode(),
        id="openai-chat-entry-id-on-the-last-event-of-its-group",
    ),
    pytest.param(
        "openai-chat",
        {"after": "9-0"},
        [StreamEntry("9-1", TextDelta("!")), END],
        f"id: 9-0\ndata: {ROLE}\n\nid: 9-1\ndata: {BANG}\n\nid: 9-1\ndata: [DONE]\n\n".encode(),
        id="resumed-group-head-carries-the-position-before",
    ),
    pytest.param(
        "openai-chat",
        {},
        [TextDelta("Hi"), StreamTimeoutError("idle", 30, "no new item for 30 s")],
        f"id: 1\ndata: {ROLE}\n\n"
        f"id: 2\ndata: {HI}\n\n"
        'id: 3\ndata: {"error":{"message":"no new item for 30 s",'
        '"type":"StreamTimeoutError","code":null}}\n\n'.encode(),
        id="openai-chat-any-stream-error-is-the-error-event",
    ),
    pytest.param(
        "openai-chat",
        {},
        [HTTPStatusError(429, body="slow down")],
        b'id: 1\ndata: {"error":{"message":"HTTP 429: slow down",'
        b'"type":"HTTPStatusError","code":429}}\n\n',
        id="openai-chat-http-status-is-the-code",
    ),
    pytest.param(
        "openai-chat",
        {"model": "m", "id": "chatcmpl-1", "created": 5},
        [TextDelta("x")],
        b'id: 1\ndata: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,'
        b'"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},'
        b'"finish_reason":null}]}\n\n'
        b'id: 2\ndata: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":5,'
        b'"model":"m","choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}\n\n',
        id="renderer-options-pass-through",
    ),
    pytest.param(
        "openai-chat",
        {},
        [
            SSEFrame('{"choices":[]}', id="upstream-7", retry=10),
            SSEFrame("[DONE]"),
            END,
        ],
        b'id: 1\ndata: {"choices":[]}\n\nid: 2\ndata: [DONE]\n\n',
        id="frames-pass-through-with-our-ids-the-end-is-theirs",
    ),
    pytest.param(
        "anthropic",
        {},
        [SSEFrame('{"type":"ping"}', event="ping"), ProviderError("x", type="api_error")],
        b'event: ping\nid: 1\ndata: {"type":"ping"}\n\n'
        b'event: error\nid: 2\ndata: {"type":"error","error":{"type":"api_error","message":"x"}}'
        b"\n\n",
        id="anthropic-frame-event-names-kept-error-event",
    ),
    pytest.param(
        "anthropic",
        {},
        [END],
        b'event: message_start\nid: 1\ndata: {"type":"message_start","message":{"id":'
        b'"msg_01rxstreamRenderedMessage","type":"message","role":"assistant","model":'
        b'"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":'
        b'{"input_tokens":0,"output_tokens":0}}}\n\n'
        b'event: message_delta\nid: 2\ndata: {"type":"message_delta","delta":{"stop_reason":'
        b'null,"stop_sequence":null},"usage":{"output_tokens":0}}\n\n'
        b'event: message_stop\nid: 3\ndata: {"type":"message_stop"}\n\n',
        id="anthropic-empty-stream-is-still-a-whole-message",
    ),
    pytest.param(
        "gemini",
        {},
        [StreamEntry("3-0", ReasoningDelta("hm")), StreamError("gone")],
        b'data: {"candidates": [{"content": {"parts": [{"text": "hm","thought": '
        b'true}],"role": "model"},"index": 0}],"modelVersion": "gemini-2.5-flash",'
        b'"responseId": "rxstream-gemini-0001"}\r\n\r\n'
        b'data: {"error": {"code": 500,"message": "gone","status": "StreamError"}}'
        b"\r\n\r\n",
        id="gemini-crlf-no-ids-google-genai-reads-data-lines-only",
    ),
]


@pytest.mark.parametrize(("format", "options", "script", "expected"), CASES)
def test_events(format: str, options: dict[str, Any], script: list[Any], expected: bytes) -> None:
    assert run(SSEEncoder(format, **options), script) == expected


def test_every_event_parses_back_to_its_id_and_data() -> None:
    # The bytes are a well-formed event stream: the parser gives back each event's data and id.
    encoder = SSEEncoder("rxstream")
    body = run(encoder, [TextDelta("a\nb"), Usage(1, 2, 3), END])
    lines = LineSplitter().feed(body)
    parser = SSEParser()
    frames = [frame for line in lines for frame in parser.feed(line)]
    assert [(f.event, f.id) for f in frames] == [("text", "1"), ("usage", "2"), ("done", "3")]
    assert wire.decode(json.loads(frames[0].data)) == TextDelta("a\nb")
    assert json.loads(frames[2].data) == {"type": "done", "version": wire.FORMAT_VERSION}


def test_decoding_the_dialect_events_gives_the_deltas_back() -> None:
    body = run(SSEEncoder("cohere"), [TextDelta("Hi"), Finish("stop"), END])
    lines = LineSplitter().feed(body)
    parser, decode = SSEParser(), decoder("cohere")
    deltas = [d for line in lines for frame in parser.feed(line) for d in decode.feed(frame)]
    assert [d for d in deltas if isinstance(d, TextDelta)] == [TextDelta("Hi")]
    assert decode.done


@pytest.mark.parametrize("format", SSE_DIALECTS)
def test_keepalive_is_what_the_format_client_passes_over(format: str) -> None:
    encoder = SSEEncoder(format)
    expected = {
        # The openai SDK dispatches an empty event on a blank line once ids were seen.
        "openai-chat": b": keep-alive\n",
        "openai-responses": b": keep-alive\n",
        # google-genai parses every line but `data:` and blank ones as JSON.
        "gemini": b"\r\n",
    }.get(format, KEEPALIVE)
    assert encoder.keepalive() == expected
    encoder.close()
    with pytest.raises(RuntimeError, match="closed"):
        encoder.keepalive()


def test_gemini_events_carry_no_id_and_refuse_retry() -> None:
    encoder = SSEEncoder("gemini")
    events = [*encoder.feed(StreamEntry("7-0", TextDelta("Hi"))), *encoder.close()]
    assert events
    assert not any(line.startswith(b"id:") for e in events for line in e.splitlines())
    with pytest.raises(ValueError, match="cannot carry retry"):
        SSEEncoder("gemini", retry=1000)


def test_a_delta_the_dialect_cannot_express_gives_no_event_but_moves_the_position() -> None:
    from rxstream.models import Citation

    encoder = SSEEncoder("openai-chat")
    assert encoder.feed(StreamEntry("4-0", Citation("url_citation", url="https://x"))) == []
    assert encoder.position == "4-0"
    assert encoder.close() == [b"id: 4-0\ndata: [DONE]\n\n"]


@pytest.mark.parametrize(
    ("format", "options", "error", "match"),
    [
        pytest.param("ollama", {}, ValueError, "NDJSON lines, not server-sent events", id="ollama"),
        pytest.param("bedrock", {}, ValueError, "AWS event-stream messages", id="bedrock"),
        pytest.param("openai", {}, ValueError, "unknown SSE format 'openai'", id="unknown"),
        pytest.param("rxstream", {"model": "m"}, ValueError, "no renderer options", id="options"),
        pytest.param("rxstream", {"retry": -1}, ValueError, "at least 0", id="negative-retry"),
        pytest.param("rxstream", {"retry": 1.5}, TypeError, "retry must be an int", id="retry"),
        pytest.param("rxstream", {"after": "a\nb"}, ValueError, "line break", id="bad-last-id"),
    ],
)
def test_bad_arguments(
    format: str, options: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        SSEEncoder(format, **options)


def test_an_item_the_dialect_cannot_send_names_the_fix() -> None:
    encoder = SSEEncoder("anthropic")
    with pytest.raises(TypeError, match=r"not a ChatChunk: add rs.decode\(\)"):
        encoder.feed(ChatChunk({"choices": []}))
    # Failed: no more input, no close, but the error event can still end the stream.
    with pytest.raises(RuntimeError, match="failed"):
        encoder.feed(TextDelta("x"))
    with pytest.raises(RuntimeError, match="failed"):
        encoder.close()
    assert encoder.error(TypeError("boom"))[-1].startswith(b"event: error\nid: 1\n")


@pytest.mark.parametrize(
    ("entry", "error", "match"),
    [
        pytest.param(StreamEntry("1\r\n2", TextDelta("x")), ValueError, "line break", id="crlf"),
        pytest.param(StreamEntry("1\x002", TextDelta("x")), ValueError, "NUL", id="nul"),
        pytest.param(StreamEntry(7, TextDelta("x")), TypeError, "must be a str", id="int"),  # type: ignore[arg-type]
    ],
)
def test_an_entry_id_that_would_break_the_stream(
    entry: StreamEntry, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        SSEEncoder("rxstream").feed(entry)


def test_rxstream_refuses_what_the_codec_cannot_encode() -> None:
    with pytest.raises(TypeError, match="cannot encode a dict"):
        SSEEncoder("rxstream").feed({"text": "hi"})


def test_lifecycle_after_the_end() -> None:
    encoder = SSEEncoder("rxstream")
    encoder.close()
    with pytest.raises(RuntimeError, match="closed; it takes no more input"):
        encoder.feed(TextDelta("x"))
    with pytest.raises(RuntimeError, match="cannot be closed"):
        encoder.close()
    with pytest.raises(RuntimeError, match="cannot end again"):
        encoder.error(StreamError("x"))
    ended = SSEEncoder("openai-chat")
    ended.error(StreamError("x"))
    with pytest.raises(RuntimeError, match="ended"):
        ended.close()


def test_dialect_property() -> None:
    assert SSEEncoder().dialect == "openai-chat"
    assert SSEEncoder("rxstream").position is None


def test_the_former_format_spellings_warn_and_work() -> None:
    with pytest.warns(DeprecationWarning, match=r"SSEEncoder\(\): format= is deprecated"):
        encoder = SSEEncoder(format="rxstream")
    assert encoder.dialect == "rxstream"
    with pytest.warns(DeprecationWarning, match=r"SSEEncoder\.format is deprecated"):
        assert encoder.format == "rxstream"
    assert SSEEncoder(dialect="anthropic").dialect == "anthropic"


# ------------------------------------------------------------------ the one writer: no injection

BREAKS = {"lf": "\n", "cr": "\r", "crlf": "\r\n", "nul": "\x00"}


def parse(body: bytes) -> list[SSEFrame]:
    parser = SSEParser()
    splitter = LineSplitter()
    frames = [frame for line in splitter.feed(body) for frame in parser.feed(line)]
    return frames + [f for line in splitter.close() for f in parser.feed(line)] + parser.close()


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(SSEFrame("hello", event="x\n\ndata: injected"), id="event-lf-event"),
        pytest.param(SSEFrame("hello", event="x\r\nid: 9"), id="event-crlf-id"),
        pytest.param(SSEFrame("hello", event="x\rid: 9"), id="event-cr-id"),
    ],
)
@pytest.mark.parametrize("format", ["openai-chat", "anthropic", "gemini"])
def test_an_event_name_that_would_inject_is_refused_and_the_stream_ends_with_its_error(
    format: str, frame: SSEFrame
) -> None:
    encoder = SSEEncoder(format)
    with pytest.raises(ValueError, match="SSE event field cannot hold a line break") as caught:
        encoder.feed(frame)
    body = b"".join(encoder.error(caught.value))
    assert b"injected" not in body
    frames = parse(body)
    assert len(frames) == 1
    assert frames[0].id != "9"
    assert "x" not in frames[0].event


def test_to_sse_refuses_an_injecting_event_name() -> None:
    import reactivex

    import rxstream as rs

    sent: list[bytes] = []
    errors: list[Exception] = []
    reactivex.of(SSEFrame("ok", event="fine"), SSEFrame("hello", event="x\n\ndata: injected")).pipe(
        rs.to_sse("openai-chat", keepalive=None)
    ).subscribe(on_next=sent.append, on_error=errors.append)
    assert len(errors) == 1
    assert isinstance(errors[0], ValueError)
    assert "event" in str(errors[0])
    frames = parse(b"".join(sent))
    assert [f.data for f in frames if f.data in ("ok", "hello", "injected")] == ["ok"]


def write(field: str, value: str) -> Any:
    """Write `value` as the named field of an event (or as a comment)."""
    if field == "comment":
        return comment_lines(value)
    if field == "event":
        return event_lines("x", event=value)
    return event_lines("x", id=value)


@pytest.mark.parametrize("brk", BREAKS.values(), ids=BREAKS.keys())
@pytest.mark.parametrize("field", ["event", "id", "comment"])
def test_every_named_field_refuses_a_line_break_and_an_id_nul(field: str, brk: str) -> None:
    bad = f"a{brk}data: injected"
    if brk == "\x00" and field != "id":
        # NUL injects nothing: an event name keeps it, a comment is not read.
        lines = write(field, bad)
        frames = parse(("\n".join(lines) + "\n").encode())
        assert [f.event for f in frames] == ([bad] if field == "event" else [])
        return
    with pytest.raises(
        ValueError, match=f"an SSE {field} field cannot hold a line break"
    ) as caught:
        write(field, bad)
    assert repr(bad)[1:-1] in str(caught.value)


@pytest.mark.parametrize("brk", BREAKS.values(), ids=BREAKS.keys())
def test_the_encoder_refuses_a_line_break_or_nul_in_ids(brk: str) -> None:
    with pytest.raises(ValueError, match="StreamEntry id cannot hold a line break or NUL"):
        SSEEncoder("rxstream").feed(StreamEntry(f"1{brk}id: 9", TextDelta("x")))
    with pytest.raises(ValueError, match="after cannot hold a line break or NUL"):
        SSEEncoder("rxstream", after=f"1{brk}id: 9")
    with pytest.raises(ValueError, match="SSE id field cannot hold"):
        event_text("x", id=f"1{brk}2")


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        pytest.param("a\nb", ["data: a", "data: b"], id="lf"),
        pytest.param("a\rb", ["data: a", "data: b"], id="cr"),
        pytest.param("a\r\nb", ["data: a", "data: b"], id="crlf"),
        pytest.param("a\n\ndata: x", ["data: a", "data: ", "data: data: x"], id="lflf"),
        pytest.param("a\r\n", ["data: a", "data: "], id="trailing"),
        pytest.param("a\x00b", ["data: a\x00b"], id="nul-kept"),
    ],
)
def test_data_is_split_into_data_lines_at_every_line_break(data: str, lines: list[str]) -> None:
    assert event_lines(data) == [*lines, ""]
    (frame,) = parse(event_text(data).encode())
    assert frame.data == data.replace("\r\n", "\n").replace("\r", "\n")
    assert frame.event == "message"


@pytest.mark.parametrize(
    ("retry", "error", "match"),
    [
        pytest.param(-1, ValueError, "at least 0", id="negative"),
        pytest.param(True, TypeError, "must be an int", id="bool"),
        pytest.param("5\n", TypeError, "must be an int", id="text"),
    ],
)
def test_the_writer_refuses_a_retry_it_cannot_write(
    retry: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        event_lines("x", retry=retry)


@pytest.mark.parametrize("field", ["event", "id", "comment"])
def test_a_refused_field_shows_a_bounded_excerpt(field: str) -> None:
    bad = "x" * 10_000 + "\n"
    with pytest.raises(ValueError, match=f"SSE {field} field") as caught:
        write(field, bad)
    assert len(str(caught.value)) < 400


def test_wire_bytes_writes_through_the_same_writer() -> None:
    from rxstream.core.dialects import renderer, wire_bytes

    with pytest.raises(ValueError, match="SSE event field"):
        wire_bytes(renderer("anthropic"), [SSEFrame("{}", event="a\nb")])
    with pytest.raises(ValueError, match="SSE id field"):
        wire_bytes(renderer("gemini"), [SSEFrame("{}", id="1\r2")])
    assert wire_bytes(renderer("gemini"), [SSEFrame("a\nb")]) == b"data: a\r\ndata: b\r\n\r\n"


def test_the_keepalive_comment_comes_from_the_writer() -> None:
    assert KEEPALIVE == comment_text("keep-alive").encode() == b": keep-alive\n\n"
    assert comment_text("keep-alive", newline="\r\n") == ": keep-alive\r\n\r\n"
    assert comment_lines() == [":", ""]
    with pytest.raises(ValueError, match="LF, CRLF or CR"):
        comment_text("x", newline="\n\n")


_field_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_frames = st.builds(
    SSEFrame,
    _field_text,
    _field_text | st.sampled_from(["message", "a\nb", "a\r\nid: 1", "x\x00"]),
    st.none() | _field_text | st.sampled_from(["1\x002", "1\n"]),
    st.none() | st.integers(-3, 10**12),
)


@settings(max_examples=300)
@given(_frames)
def test_any_frame_the_writer_accepts_parses_back_the_same(frame: SSEFrame) -> None:
    unwritable = {"event": "\r\n", "id": "\r\n\x00"}
    bad = [
        name
        for name, chars in unwritable.items()
        if any(c in (getattr(frame, name) or "") for c in chars)
    ]
    if frame.retry is not None and frame.retry < 0:
        bad.append("retry")
    if bad:
        # Refused, for a reason it names: a field it cannot write.
        with pytest.raises(ValueError, match="|".join(bad)):
            event_text(frame.data, event=frame.event, id=frame.id, retry=frame.retry)
        return
    text = event_text(frame.data, event=frame.event, id=frame.id, retry=frame.retry)
    (back,) = parse(text.encode())
    # SSE carries LF line breaks only in data; "" and "message" are the default event type.
    data = frame.data.replace("\r\n", "\n").replace("\r", "\n")
    assert back == SSEFrame(data, frame.event or "message", frame.id, frame.retry)


def test_the_former_last_event_id_spelling_warns_and_works() -> None:
    with pytest.warns(DeprecationWarning, match=r"last_event_id= is deprecated, use after="):
        encoder = SSEEncoder("rxstream", last_event_id="9-0")
    assert encoder.close() == SSEEncoder("rxstream", after="9-0").close()


# --------------------------------------------------------------------------- encoded once


def _fresh_copy(item: Any) -> Any:
    """An equal item that is another object (so no cached event can serve it)."""
    if isinstance(item, StreamEntry):
        return StreamEntry(item.id, _fresh_copy(item.item))
    return wire.decode(json.loads(json.dumps(wire.encode(item))))


SHARED_SCRIPT: list[Any] = [
    TextDelta("Hel"),
    StreamEntry("7-0", TextDelta("lo \ud83d")),  # a lone surrogate, escaped in the bytes
    Message(choice=0, role="assistant", content="Hello"),  # the default event: no event line
    Finish("stop"),
    StreamEntry("7-1", Usage(1, 2, 3)),
]


@pytest.mark.parametrize("retry", [None, 1500])
@pytest.mark.parametrize("after", [None, "6-9"])
def test_encoders_sharing_item_objects_write_what_each_would_write_alone(
    retry: int | None, after: str | None
) -> None:
    # A hub hands the same objects to every connection; the cache must not show.
    alone = SSEEncoder("rxstream", retry=retry, after=after)
    expected = [alone.feed(_fresh_copy(item)) for item in SHARED_SCRIPT] + [alone.close()]
    for _ in range(3):
        encoder = SSEEncoder("rxstream", retry=retry, after=after)
        got = [encoder.feed(item) for item in SHARED_SCRIPT] + [encoder.close()]
        assert got == expected
    # A late joiner starts its own numbering on the same objects.
    late = SSEEncoder("rxstream")
    assert late.feed(SHARED_SCRIPT[3]) == SSEEncoder("rxstream").feed(Finish("stop"))
    assert late.position is None


def test_an_entry_id_is_checked_before_its_event_is_kept() -> None:
    bad = StreamEntry("1\n2", TextDelta("x"))
    for _ in range(2):
        with pytest.raises(ValueError, match="a StreamEntry id cannot hold a line break"):
            SSEEncoder("rxstream").feed(bad)


def test_the_shared_events_are_bounded() -> None:
    from rxstream.core.dialects import sse_encoder

    encoder = SSEEncoder("rxstream")
    for n in range(sse_encoder._CACHE_ITEMS + 100):
        encoder.feed(StreamEntry(f"{n}-0", TextDelta("x")))
    encoder.feed(TextDelta("y" * (sse_encoder._CACHE_EVENT_BYTES + 1)))  # too big to keep
    assert len(sse_encoder._EVENTS) <= sse_encoder._CACHE_ITEMS
    kept = sse_encoder._EVENTS.values()
    assert all(len(a) + len(b) <= sse_encoder._CACHE_EVENT_BYTES for _, a, b in kept)


@pytest.mark.parametrize(
    ("dialect", "after", "expected"),
    [
        ("rxstream", None, [b": skipped 3 items\n\n"]),
        ("rxstream", "5-0", [b": skipped 3 items; resume after 5-0\n\n"]),
        ("anthropic", "5-0", [b": skipped 3 items; resume after 5-0\n\n"]),
        # The OpenAI SDKs would dispatch an empty event at a lone blank line: the line alone.
        ("openai-chat", "5-0", [b": skipped 3 items; resume after 5-0\n"]),
        ("gemini", None, []),  # google-genai reads no comment at all
    ],
)
def test_skipped_tells_the_gap_and_where_to_resume(
    dialect: str, after: str | None, expected: list[bytes]
) -> None:
    encoder = SSEEncoder(dialect, after=after)
    assert encoder.skipped(3) == expected
    assert SSEEncoder("rxstream").skipped(1) == [b": skipped 1 item\n\n"]
    entries = SSEEncoder("rxstream")
    entries.feed(StreamEntry("8-1", TextDelta("a")))
    assert entries.skipped(2) == [b": skipped 2 items; resume after 8-1\n\n"]
    entries.close()
    with pytest.raises(RuntimeError, match="sends nothing more"):
        entries.skipped(1)


# --------------------------------------------------------------------------- the text event first

TEXT_SCRIPT: list[Any] = [
    Metadata({"id": "msg_1", "model": "m"}),
    TextDelta("Hel"),
    TextDelta(""),
    TextDelta('lo \u2028 "q" \n'),
    TextDelta("other choice", choice=1),
    ReasoningDelta("hmm"),
    TextDelta("after thinking"),
    TextDelta(" more"),
    Reset(0, "cut"),
    TextDelta("again"),
    Finish("stop"),
    Usage(3, 4, 7),
]


def test_the_renderers_text_event_is_what_feed_writes_where_it_answers() -> None:
    from rxstream.core.dialects.anthropic.render import AnthropicRenderer

    renderer = AnthropicRenderer()
    answered: list[str] = []
    for delta in TEXT_SCRIPT:
        event = renderer.text_event(delta) if type(delta) is TextDelta else None
        frames = renderer.feed(delta)
        if event is not None:
            answered.append(delta.text)
            assert [(f.event, f.data) for f in frames] == [event]
    # The texts of an open text block; not one that opens a block, another choice's, an empty one.
    assert answered[:2] == ['lo \u2028 "q" \n', " more"]


@pytest.mark.parametrize("ways", ["plain", "stdlib"])
def test_an_encoder_writes_the_same_bytes_with_or_without_the_text_event(ways: str) -> None:
    from tests.support.fast import way

    with way("plain"):
        slow = SSEEncoder("anthropic", retry=1000)
        expected = [slow.feed(delta) for delta in TEXT_SCRIPT] + [slow.close()]
    with way(ways):
        encoder = SSEEncoder("anthropic", retry=1000)
        got = [encoder.feed(delta) for delta in TEXT_SCRIPT] + [encoder.close()]
    assert got == expected
