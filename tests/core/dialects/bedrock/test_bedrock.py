"""The "bedrock" dialect (ConverseStream): the recording, a real socket, the decoder
event by event, bad input, the renderer and the round trip."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex.testing import TestScheduler

import rxstream as rs
from rxstream.core.dialects import AutoDecoder, decoder, renderer
from rxstream.core.dialects.bedrock import BedrockDecoder, BedrockRenderer, http_error
from rxstream.core.eventstream import EventStreamParser, encode_message
from rxstream.core.message import MessageAccumulator
from rxstream.errors import (
    EmptyStreamError,
    HTTPStatusError,
    MalformedChunkError,
    ProviderError,
    StreamError,
    TruncatedStreamError,
)
from rxstream.models import (
    Citation,
    Delta,
    EventStreamMessage,
    Finish,
    Message,
    Metadata,
    ReasoningDelta,
    ReasoningState,
    ServerToolCall,
    ServerToolResult,
    SSEFrame,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from tests.support.bedrock_events import (
    MESSAGE_START,
    delta,
    event,
    exception,
    message_stop,
    metadata,
    start,
    stop,
)
from tests.support.chunking import chunkings
from tests.support.dialects import runner
from tests.support.operators import error_of, on_completed, on_next, subscribe
from tests.support.recordings.bedrock import check_recording
from tests.support.sources import TIMEOUT, run

pipeline = runner("bedrock", wire="eventstream")


DATA = Path(__file__).parents[3] / "data" / "bedrock"
RECORDING = DATA / "converse-stream-text.eventstream"


def feed_each(machine: BedrockDecoder, items: list[EventStreamMessage]) -> list[Delta]:
    out: list[Delta] = []
    for item in items:
        out += machine.feed(item)
    return out


def decode_all(items: list[EventStreamMessage], **options: Any) -> list[Delta]:
    machine = BedrockDecoder(**options)
    out: list[Delta] = []
    for item in items:
        out += machine.feed(item)
    return out + machine.close()


def message_of(items: list[EventStreamMessage]) -> Message:
    accumulator = MessageAccumulator()
    for item in decode_all(items):
        accumulator.feed(item)
    (message,) = accumulator.close()
    return message


# ----------------------------------------------------------------------------- the recording


@pytest.mark.parametrize("dialect", ["bedrock", "auto"])
def test_the_recording_under_every_chunking(dialect: str) -> None:
    data = RECORDING.read_bytes()
    for name, pieces in chunkings(data):
        (message,) = pipeline(pieces, dialect)
        try:
            check_recording(message)
        except AssertionError as exc:  # pragma: no cover - names the chunking
            raise AssertionError(f"chunking {name!r}: {exc}") from exc


def test_the_recording_event_by_event() -> None:
    messages = EventStreamParser().feed(RECORDING.read_bytes())
    machine = BedrockDecoder()
    got = [machine.feed(m) for m in messages]
    assert got == [
        [],
        [TextDelta("2 + 2 = 4.")],
        [],
        [Finish("stop")],
        [Usage(37, 15, 52), Metadata({"metrics": {"latencyMs": 1382}})],
    ]
    assert machine.done
    assert machine.close() == []


# ----------------------------------------------------------------------------- a real socket


class _Server(ThreadingHTTPServer):
    daemon_threads = True


@pytest.fixture
def serve() -> Iterator[Any]:
    """Serve bytes on 127.0.0.1 as an event stream, in pieces; `hold` keeps the answer open."""
    state: dict[str, Any] = {
        "release": threading.Event(),
        "answered": threading.Event(),
        "held_until_timeout": None,
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            status, content_type, pieces, hold = state["answer"]
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                for piece in pieces:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                if hold:
                    # Nothing more, and no end: only the client can end this stream.
                    state["held_until_timeout"] = not state["release"].wait(TIMEOUT)
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass  # the client went away
            finally:
                state["answered"].set()

        def log_message(self, *args: Any) -> None:
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()

    def answer(
        pieces: list[bytes],
        *,
        status: int = 200,
        content_type: str = "application/vnd.amazon.eventstream",
        hold: bool = False,
    ) -> str:
        state["answer"] = (status, content_type, pieces, hold)
        return f"http://127.0.0.1:{server.server_address[1]}/model/m/converse-stream"

    answer.state = state  # type: ignore[attr-defined]
    try:
        yield answer
    finally:
        state["release"].set()
        server.shutdown()
        server.server_close()
        thread.join(TIMEOUT)


def test_the_whole_pipeline_from_a_real_socket(serve: Any) -> None:
    data = RECORDING.read_bytes()
    url = serve([data[:5], data[5:300], data[300:301], data[301:]])
    with httpx.Client() as client:
        outcome = run(
            rs.from_request(client, "POST", url, body="bytes", json={"messages": []}).pipe(
                rs.eventstream_frames(), rs.decode("bedrock"), rs.accumulate_message()
            )
        )
    assert outcome.error is None
    (message,) = outcome.items
    check_recording(message)


def test_the_stream_ends_at_the_metadata_without_waiting_for_the_end_of_the_body(
    serve: Any,
) -> None:
    url = serve([RECORDING.read_bytes()], hold=True)
    with httpx.Client() as client:
        outcome = run(
            rs.from_request(client, "POST", url, body="bytes").pipe(
                rs.eventstream_frames(), rs.decode(), rs.accumulate_message()
            )
        )
    # The answer is still open: the pipeline ended at the metadata, not at the
    # end of the body (which would have come only with the server's timeout).
    assert outcome.completed
    check_recording(outcome.items[0])
    serve.state["release"].set()
    assert serve.state["answered"].wait(TIMEOUT)
    assert serve.state["held_until_timeout"] is False


def test_end_of_body_right_after_message_stop_is_a_normal_end(serve: Any) -> None:
    messages = EventStreamParser().feed(RECORDING.read_bytes())[:4]
    url = serve([b"".join(encode_message(m.headers, m.payload) for m in messages)])
    with httpx.Client() as client:
        outcome = run(
            rs.from_request(client, "POST", url, body="bytes").pipe(
                rs.eventstream_frames(), rs.decode("bedrock"), rs.accumulate_message()
            )
        )
    assert outcome.completed
    (message,) = outcome.items
    assert (message.content, message.finish_reason, message.usage) == ("2 + 2 = 4.", "stop", None)


def test_a_body_cut_inside_a_message_is_truncated(serve: Any) -> None:
    url = serve([RECORDING.read_bytes()[:400]])
    with httpx.Client() as client:
        outcome = run(
            rs.from_request(client, "POST", url, body="bytes").pipe(
                rs.eventstream_frames(), rs.decode("bedrock")
            )
        )
    assert outcome.items == [TextDelta("2 + 2 = 4.")]
    assert isinstance(outcome.error, TruncatedStreamError)
    assert "inside the message at byte 335" in str(outcome.error)


def test_an_http_error_in_bedrocks_shape(serve: Any) -> None:
    content_type, body = http_error(429, "Too many requests, please wait before trying again.")
    url = serve([body], status=429, content_type=content_type)
    with httpx.Client() as client:
        outcome = run(rs.from_request(client, "POST", url, body="bytes"))
    assert isinstance(outcome.error, HTTPStatusError)
    assert outcome.error.status_code == 429
    assert outcome.error.provider_message == "Too many requests, please wait before trying again."


# ----------------------------------------------------------------------------- done semantics


def test_the_operator_ends_at_the_metadata_after_message_stop() -> None:
    scheduler = TestScheduler()
    items = [MESSAGE_START, delta(0, {"text": "a"}), stop(0), message_stop(), metadata()]
    source = scheduler.create_hot_observable(
        *[on_next(210 + 10 * i, item) for i, item in enumerate(items)],
        on_next(300, event("neverSeen")),
        on_completed(400),
    )
    results = scheduler.start(lambda: source.pipe(rs.decode("bedrock")))
    assert results.messages == [
        on_next(220, TextDelta("a")),
        on_next(240, Finish("stop")),
        on_next(250, Usage(0, 0, 0)),
        on_next(250, Metadata({"metrics": {"latencyMs": 5}})),
        on_completed(250),
    ]
    assert source.subscriptions == [subscribe(200, 250)]


def test_the_operator_keeps_reading_after_message_stop_until_the_end() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, delta(0, {"text": "a"})),
        on_next(220, message_stop("max_tokens")),
        on_completed(300),
    )
    results = scheduler.start(lambda: source.pipe(rs.decode("bedrock")))
    assert results.messages == [
        on_next(210, TextDelta("a")),
        on_next(220, Finish("length")),
        on_completed(300),
    ]
    assert source.subscriptions == [subscribe(200, 300)]


def test_the_operator_reports_a_stream_without_message_stop() -> None:
    scheduler = TestScheduler()
    source = scheduler.create_hot_observable(
        on_next(210, delta(0, {"text": "a"})), on_completed(220)
    )
    results = scheduler.start(lambda: source.pipe(rs.decode("bedrock")))
    assert results.messages[0] == on_next(210, TextDelta("a"))
    assert isinstance(error_of(results.messages[1]), TruncatedStreamError)
    assert "before messageStop" in str(error_of(results.messages[1]))


# ----------------------------------------------------------------------------- events, table


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        pytest.param(
            [MESSAGE_START, delta(0, {"text": "Hel"}), delta(0, {"text": "lo"}), stop(0)],
            [TextDelta("Hel"), TextDelta("lo")],
            id="text-without-block-start",
        ),
        pytest.param(
            [start(0, {}), delta(0, {"text": "Hi"}), stop(0)],
            [TextDelta("Hi")],
            id="text-with-an-empty-block-start",
        ),
        pytest.param(
            [
                delta(0, {"reasoningContent": {"text": "so", "sealed": "b3BhcXVl"}}),
                delta(0, {"reasoningContent": {"sealed": "bW9yZQ=="}}),
                stop(0),
            ],
            [
                ReasoningDelta("so"),
                Metadata(
                    {
                        "events": [
                            {
                                "event": "contentBlockDelta",
                                "data": {
                                    "contentBlockIndex": 0,
                                    "delta": {
                                        "reasoningContent": {"text": "so", "sealed": "b3BhcXVl"}
                                    },
                                },
                            }
                        ]
                    }
                ),
                Metadata(
                    {
                        "events": [
                            {
                                "event": "contentBlockDelta",
                                "data": {
                                    "contentBlockIndex": 0,
                                    "delta": {"reasoningContent": {"sealed": "bW9yZQ=="}},
                                },
                            }
                        ]
                    }
                ),
            ],
            id="reasoning-member-unknown-kept",
        ),
        pytest.param(
            [
                start(1, {"toolUse": {"toolUseId": "tooluse_1", "name": "f"}}),
                delta(1, {"toolUse": {"input": '{"a":'}}),
                delta(1, {"toolUse": {"input": ""}}),
                delta(1, {"toolUse": {"input": "1}"}}),
                stop(1),
            ],
            [
                ToolCallDelta(0, "", "tooluse_1", "f"),
                ToolCallDelta(0, '{"a":'),
                ToolCallDelta(0, "1}"),
            ],
            id="tool-use-fragments",
        ),
        pytest.param(
            [start(3, {"toolUse": {"toolUseId": "t", "name": "now"}}), stop(3)],
            [ToolCallDelta(0, "", "t", "now"), ToolCallDelta(0, "{}")],
            id="tool-use-without-input-is-empty-object",
        ),
        pytest.param(
            [
                delta(0, {"reasoningContent": {"text": "Let me "}}),
                delta(0, {"reasoningContent": {"text": "think."}}),
                delta(0, {"reasoningContent": {"signature": "sig=="}}),
                stop(0),
            ],
            [
                ReasoningDelta("Let me "),
                ReasoningDelta("think."),
                ReasoningState("thinking", "sig==", "Let me think."),
            ],
            id="reasoning-with-signature",
        ),
        pytest.param(
            [delta(0, {"reasoningContent": {"text": "hm"}}), stop(0)],
            [ReasoningDelta("hm")],
            id="reasoning-without-signature-needs-nothing-back",
        ),
        pytest.param(
            [delta(0, {"reasoningContent": {"redactedContent": "ZW5j"}}), stop(0)],
            [ReasoningState("redacted_thinking", "ZW5j")],
            id="redacted-reasoning",
        ),
        pytest.param(
            [
                delta(
                    0,
                    {
                        "citation": {
                            "title": "Paris",
                            "sourceContent": [{"text": "Paris is "}, {"text": "the capital"}],
                            "location": {"web": {"url": "https://x.test/p", "domain": "x.test"}},
                        }
                    },
                ),
                stop(0),
            ],
            # A block with no text of its own: the citation has no span.
            [Citation("web", "https://x.test/p", "Paris", "Paris is the capital")],
            id="citation-web",
        ),
        pytest.param(
            [
                delta(
                    0,
                    {
                        "citation": {
                            "location": {"documentChar": {"documentIndex": 0, "start": 3, "end": 9}}
                        }
                    },
                ),
                stop(0),
            ],
            [Citation("documentChar")],
            id="citation-document-offsets-are-not-answer-offsets",
        ),
        pytest.param(
            [
                start(
                    0, {"toolUse": {"toolUseId": "s1", "name": "web", "type": "server_tool_use"}}
                ),
                delta(0, {"toolUse": {"input": '{"q":"x"}'}}),
                stop(0),
                start(1, {"toolResult": {"toolUseId": "s1", "type": "web_result"}}),
                delta(1, {"toolResult": [{"text": "found"}]}),
                delta(1, {"toolResult": [{"json": {"n": 1}}]}),
                stop(1),
            ],
            [
                ServerToolCall("s1", "web", {"q": "x"}),
                ServerToolResult("s1", "web_result", [{"text": "found"}, {"json": {"n": 1}}]),
            ],
            id="server-tool-and-result",
        ),
        pytest.param(
            [start(0, {"image": {"format": "png"}}), stop(0)],
            [
                Metadata(
                    {
                        "events": [
                            {
                                "event": "contentBlockStart",
                                "data": {
                                    "contentBlockIndex": 0,
                                    "start": {"image": {"format": "png"}},
                                },
                            }
                        ]
                    }
                )
            ],
            id="image-block-kept",
        ),
        pytest.param(
            [event("somethingNew", {"x": 1})],
            [Metadata({"events": [{"event": "somethingNew", "data": {"x": 1}}]})],
            id="unknown-event-type-kept",
        ),
        pytest.param(
            [delta(0, {"newKind": {"y": 2}})],
            [
                Metadata(
                    {
                        "events": [
                            {
                                "event": "contentBlockDelta",
                                "data": {"contentBlockIndex": 0, "delta": {"newKind": {"y": 2}}},
                            }
                        ]
                    }
                )
            ],
            id="unknown-delta-kind-kept",
        ),
        pytest.param(
            [message_stop("stop_sequence", additionalModelResponseFields={"stop_sequence": "END"})],
            [
                Finish("stop", raw="stop_sequence"),
                Metadata({"additionalModelResponseFields": {"stop_sequence": "END"}}),
            ],
            id="message-stop-extras",
        ),
        pytest.param(
            [
                message_stop(),
                metadata(
                    inputTokens=10,
                    outputTokens=4,
                    totalTokens=22,
                    cacheReadInputTokens=5,
                    cacheWriteInputTokens=3,
                ),
            ],
            [
                Finish("stop"),
                Usage(18, 4, 22, None, 5, cache_write_tokens=3),
                Metadata({"metrics": {"latencyMs": 5}}),
            ],
            id="usage-with-cache-reads-and-writes",
        ),
        pytest.param(
            [
                message_stop(),
                event(
                    "metadata",
                    {
                        "usage": {"inputTokens": 1, "outputTokens": 2},
                        "trace": {"promptRouter": {"invokedModelId": "m"}},
                        "serviceTier": {"type": "flex"},
                    },
                ),
            ],
            [
                Finish("stop"),
                Usage(1, 2, 3),
                Metadata(
                    {
                        "trace": {"promptRouter": {"invokedModelId": "m"}},
                        "serviceTier": {"type": "flex"},
                    }
                ),
            ],
            id="metadata-extras-and-computed-total",
        ),
    ],
)
def test_events(items: list[EventStreamMessage], expected: list[Delta]) -> None:
    machine = BedrockDecoder()
    got: list[Delta] = []
    for item in items:
        got += machine.feed(item)
    assert got == expected
    # What `==` leaves out: the provider's objects.
    for got_delta in got:
        if isinstance(got_delta, ReasoningState | Citation | ServerToolCall | ServerToolResult):
            assert got_delta.raw is not None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("tool_use", "tool_calls"),
        ("guardrail_intervened", "content_filter"),
        ("content_filtered", "content_filter"),
        ("malformed_model_output", "malformed_model_output"),
        ("malformed_tool_use", "malformed_tool_use"),
        ("a_new_reason", "a_new_reason"),
    ],
)
def test_stop_reasons(raw: str, reason: str) -> None:
    (finish,) = decode_all([message_stop(raw)])
    assert finish == Finish(reason)
    assert isinstance(finish, Finish)
    assert finish.raw == raw


def test_a_turn_that_asks_for_tools_finishes_with_tool_calls_even_on_end_turn() -> None:
    items = [
        MESSAGE_START,
        delta(0, {"text": "Let me look."}),
        stop(0),
        start(1, {"toolUse": {"toolUseId": "tooluse_a", "name": "weather"}}),
        delta(1, {"toolUse": {"input": '{"city": "Paris"}'}}),
        stop(1),
        start(2, {"toolUse": {"toolUseId": "tooluse_b", "name": "time"}}),
        stop(2),
        message_stop("end_turn"),
        metadata(inputTokens=1, outputTokens=2, totalTokens=3),
    ]
    message = message_of(items)
    assert message.content == "Let me look."
    assert message.tool_calls == (
        ToolCall(0, "tooluse_a", "weather", '{"city": "Paris"}'),
        ToolCall(1, "tooluse_b", "time", "{}"),
    )
    assert [call.parse_arguments() for call in message.tool_calls] == [{"city": "Paris"}, {}]
    assert (message.finish_reason, message.finish_raw) == ("tool_calls", "end_turn")


def test_thinking_then_tool_use_keeps_what_the_next_turn_needs() -> None:
    items = [
        MESSAGE_START,
        delta(0, {"reasoningContent": {"text": "Need the weather."}}),
        delta(0, {"reasoningContent": {"signature": "EqQBCkYIBxgCKkA"}}),
        stop(0),
        delta(1, {"reasoningContent": {"redactedContent": "c2VjcmV0"}}),
        stop(1),
        start(2, {"toolUse": {"toolUseId": "tooluse_x", "name": "weather"}}),
        delta(2, {"toolUse": {"input": "{}"}}),
        stop(2),
        message_stop("tool_use"),
    ]
    message = message_of(items)
    assert message.reasoning == "Need the weather."
    assert message.reasoning_state == (
        ReasoningState("thinking", "EqQBCkYIBxgCKkA", "Need the weather."),
        ReasoningState("redacted_thinking", "c2VjcmV0"),
    )
    # `raw` is the reasoningContent block to send back on the next turn, as it is.
    assert [state.raw for state in message.reasoning_state] == [
        {"reasoningText": {"text": "Need the weather.", "signature": "EqQBCkYIBxgCKkA"}},
        {"redactedContent": "c2VjcmV0"},
    ]
    assert message.tool_calls == (ToolCall(0, "tooluse_x", "weather", "{}"),)
    assert (message.finish_reason, message.finish_raw) == ("tool_calls", "tool_use")


def test_blocks_left_open_are_completed_at_message_stop() -> None:
    items = [
        delta(0, {"reasoningContent": {"text": "a"}}),
        delta(0, {"reasoningContent": {"signature": "s"}}),
        start(1, {"toolUse": {"toolUseId": "t", "name": "f"}}),
        message_stop("tool_use"),
    ]
    assert decode_all(items) == [
        ReasoningDelta("a"),
        ToolCallDelta(0, "", "t", "f"),
        ReasoningState("thinking", "s", "a"),
        ToolCallDelta(0, "{}"),
        Finish("tool_calls"),
    ]


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("kind", "payload", "code"),
    [
        ("internalServerException", {"message": "boom"}, None),
        (
            "modelStreamErrorException",
            {"message": "boom", "originalStatusCode": 424, "originalMessage": "model failed"},
            424,
        ),
        ("throttlingException", {"message": "boom"}, None),
        ("validationException", {"message": "boom"}, None),
        ("serviceUnavailableException", {"message": "boom"}, None),
    ],
)
def test_exceptions_in_the_stream_are_provider_errors(
    kind: str, payload: dict[str, Any], code: int | None
) -> None:
    machine = BedrockDecoder()
    assert machine.feed(delta(0, {"text": "partial"})) == [TextDelta("partial")]
    with pytest.raises(ProviderError) as info:
        machine.feed(exception(kind, payload))
    assert (info.value.type, info.value.code, info.value.message) == (kind, code, "boom")
    assert info.value.payload == payload
    with pytest.raises(RuntimeError, match="failed"):
        machine.feed(delta(0, {"text": "more"}))


def test_an_exception_first_is_a_provider_error_under_auto_too() -> None:
    with pytest.raises(ProviderError, match="Too many tokens"):
        AutoDecoder().feed(exception("throttlingException", {"message": "Too many tokens"}))


def test_an_exception_without_json_quotes_its_payload() -> None:
    item = EventStreamMessage(
        {":message-type": "exception", ":exception-type": "internalServerException"}, b"oops"
    )
    with pytest.raises(ProviderError, match="oops") as info:
        BedrockDecoder().feed(item)
    assert info.value.type == "internalServerException"


def test_an_error_message_type_uses_its_headers() -> None:
    item = EventStreamMessage(
        {":message-type": "error", ":error-code": "InternalFailure", ":error-message": "bad"}, b""
    )
    with pytest.raises(ProviderError) as info:
        BedrockDecoder().feed(item)
    assert (info.value.type, info.value.message) == ("InternalFailure", "bad")


@pytest.mark.parametrize(
    ("items", "reason"),
    [
        pytest.param([delta(0, {"text": 5})], "delta.text is a JSON number", id="text-number"),
        pytest.param(
            [event("contentBlockDelta", {"contentBlockIndex": "0", "delta": {"text": "a"}})],
            "contentBlockIndex is a JSON string, not an integer",
            id="index-string",
        ),
        pytest.param(
            [event("contentBlockDelta", {"contentBlockIndex": 0, "delta": "a"})],
            "delta is a JSON string, not an object",
            id="delta-string",
        ),
        pytest.param(
            [event("messageStop", {"stopReason": None})],
            "stopReason is a JSON null, not a string",
            id="stop-reason-null",
        ),
        pytest.param(
            [event("metadata", {"usage": {"inputTokens": "3"}})],
            "usage.inputTokens is a JSON string, not an integer",
            id="usage-string",
        ),
        pytest.param(
            [
                start(0, {"toolUse": {"toolUseId": "t", "name": "f"}}),
                delta(0, {"toolUse": {"input": {"a": 1}}}),
            ],
            "delta.toolUse.input is a JSON object, not a string",
            id="tool-input-object",
        ),
        pytest.param(
            [start(0, {"toolUse": {"toolUseId": "t", "name": 1}})],
            "start.toolUse.name is a JSON number",
            id="tool-name-number",
        ),
        pytest.param(
            [delta(0, {"reasoningContent": {"text": ["a"]}})],
            "delta.reasoningContent.text is a JSON array",
            id="reasoning-array",
        ),
        pytest.param(
            [delta(0, {"citation": {"title": 3}})], "delta.citation.title", id="citation-title"
        ),
        pytest.param([event("messageStart", b"not json")], "invalid JSON", id="not-json"),
        pytest.param([event("messageStart", b"[1, 2]")], "a JSON array, not an object", id="array"),
        pytest.param(
            [delta(0, {"toolUse": {"input": "{}"}})],
            "no toolUse contentBlockStart opened",
            id="tool-input-without-start",
        ),
        pytest.param(
            [delta(0, {"toolResult": [{"text": "x"}]})],
            "no toolResult contentBlockStart opened",
            id="tool-result-without-start",
        ),
        pytest.param(
            [
                start(0, {"toolUse": {"toolUseId": "t", "name": "f"}}),
                delta(0, {"reasoningContent": {"text": "x"}}),
            ],
            "a reasoningContent delta in content block 0, a tool block",
            id="reasoning-in-a-tool-block",
        ),
        pytest.param(
            [message_stop(), delta(0, {"text": "late"})],
            "contentBlockDelta after messageStop",
            id="text-after-stop",
        ),
        pytest.param([message_stop(), message_stop()], "a second messageStop", id="two-stops"),
        pytest.param(
            [event("chunk", {"bytes": "eyJ0eXBlIjoibWVzc2FnZV9zdGFydCJ9"})],
            "InvokeModelWithResponseStream",
            id="invoke-model-chunk",
        ),
        pytest.param(
            [event("message_start", {"type": "message_start"})],
            "an event of another API ('message_start')",
            id="anthropic-event",
        ),
        pytest.param(
            [event("response.created", {"type": "response.created"})],
            "another API",
            id="responses-event",
        ),
        pytest.param(
            [EventStreamMessage({":message-type": "weird", ":event-type": "x"}, b"{}")],
            "unknown :message-type header 'weird'",
            id="unknown-message-type",
        ),
        pytest.param(
            [EventStreamMessage({":message-type": "event", ":event-type": b"x"}, b"{}")],
            ":event-type header is a JSON bytes, not a string",
            id="event-type-bytes",
        ),
    ],
)
def test_bad_input_is_malformed_naming_the_dialect(
    items: list[EventStreamMessage], reason: str
) -> None:
    with pytest.raises(MalformedChunkError) as info:
        feed_each(BedrockDecoder(), items)
    assert info.value.dialect == "bedrock"
    assert reason in info.value.reason
    assert "malformed bedrock data" in str(info.value)


def test_skip_drops_bad_events_and_goes_on() -> None:
    items = [
        delta(0, {"text": 5}),
        event("messageStart", b"nope"),
        event("chunk", {}),
        delta(0, {"text": "ok"}),
        message_stop(),
    ]
    assert decode_all(items, on_malformed="skip") == [TextDelta("ok"), Finish("stop")]


def test_items_of_another_kind_are_a_type_error_with_a_hint() -> None:
    with pytest.raises(TypeError, match=r"add rs.eventstream_frames\(\)"):
        BedrockDecoder().feed(SSEFrame("hello"))
    with pytest.raises(TypeError, match="EventStreamMessage items"):
        BedrockDecoder().feed("hello")


def test_items_of_another_dialect_name_it() -> None:
    with pytest.raises(MalformedChunkError, match="looks like the anthropic dialect"):
        BedrockDecoder().feed(SSEFrame('{"type": "message_start"}'))
    with pytest.raises(MalformedChunkError, match=r"an NDJSON line.*looks like the ollama dialect"):
        BedrockDecoder().feed('{"done": true}')


@pytest.mark.parametrize(
    ("items", "error", "said"),
    [
        pytest.param([], EmptyStreamError, "without any content", id="nothing"),
        pytest.param([MESSAGE_START], EmptyStreamError, "1 item", id="message-start-only"),
        pytest.param(
            [MESSAGE_START, delta(0, {"text": "a"})],
            TruncatedStreamError,
            r"ended before messageStop, after 2 item\(s\)",
            id="no-message-stop",
        ),
        pytest.param(
            [MESSAGE_START, start(0, {"toolUse": {"toolUseId": "t", "name": "f"}})],
            TruncatedStreamError,
            "before messageStop",
            id="inside-a-tool-call",
        ),
    ],
)
def test_ends_before_message_stop(
    items: list[EventStreamMessage], error: type[Exception], said: str
) -> None:
    machine = BedrockDecoder()
    for item in items:
        machine.feed(item)
    with pytest.raises(error, match=said):
        machine.close()


def test_nothing_after_the_metadata_is_taken() -> None:
    machine = BedrockDecoder()
    machine.feed(message_stop())
    assert not machine.done
    machine.feed(metadata(inputTokens=1, outputTokens=1))
    assert machine.done
    with pytest.raises(RuntimeError, match="done"):
        machine.feed(metadata())
    assert machine.close() == []


def test_metadata_before_message_stop_is_usage_but_not_the_end() -> None:
    machine = BedrockDecoder()
    assert machine.feed(metadata(inputTokens=1, outputTokens=1))[0] == Usage(1, 1, 2)
    assert not machine.done
    machine.feed(message_stop())
    assert machine.close() == []


def test_auto_detects_bedrock_from_the_first_message() -> None:
    auto = decoder("auto")
    assert isinstance(auto, AutoDecoder)
    assert auto.feed(MESSAGE_START) == []
    assert auto.dialect == "bedrock"


# ----------------------------------------------------------------------------- random input

header_values = st.one_of(
    st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=20), st.binary(max_size=20)
)
names = st.sampled_from(
    [
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
        "chunk",
        "other",
    ]
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
payloads = st.one_of(
    st.binary(max_size=60),
    st.dictionaries(
        st.sampled_from(
            ["contentBlockIndex", "delta", "start", "stopReason", "usage", "role", "p", "text"]
        ),
        json_values,
        max_size=4,
    ).map(lambda d: json.dumps(d).encode()),
)
random_messages = st.builds(
    lambda kind, name, extra, payload: EventStreamMessage(
        {":message-type": kind, ":event-type": name, **extra}, payload
    ),
    st.sampled_from(["event", "event", "event", "exception", "error", "other"]),
    names,
    st.dictionaries(st.text(max_size=8), header_values, max_size=2),
    payloads,
)


@given(st.lists(random_messages, max_size=8))
def test_random_messages_give_deltas_or_a_stream_error(items: list[EventStreamMessage]) -> None:
    machine = BedrockDecoder()
    try:
        for item in items:
            machine.feed(item)
            if machine.done:
                break
        machine.close()
    except StreamError:
        pass


@given(st.binary(max_size=300))
def test_random_bytes_through_the_pipeline_give_only_stream_errors(data: bytes) -> None:
    errors: list[Exception] = []
    reactivex.from_iterable([data[:7], data[7:]]).pipe(
        rs.eventstream_frames(), rs.decode("bedrock"), rs.accumulate_message()
    ).subscribe(lambda _: None, errors.append)
    assert all(isinstance(error, StreamError) for error in errors)


# ----------------------------------------------------------------------------- the renderer


def events_of(items: list[Any]) -> list[tuple[str, Any]]:
    return [
        (str(m.headers.get(":event-type") or m.headers[":exception-type"]), json.loads(m.payload))
        for m in items
    ]


def test_the_renderer_writes_conversestream_events() -> None:
    r = renderer("bedrock")
    assert r.wire == "eventstream"
    out: list[Any] = []
    deltas: list[Delta] = [
        ReasoningDelta("think"),
        ReasoningState("thinking", "sig", "think"),
        TextDelta("Hi"),
        ToolCallDelta(0, "", "tooluse_1", "f"),
        ToolCallDelta(0, '{"a":1}'),
        Finish("tool_calls"),
        Usage(10, 2, 12, None, 4),
        Metadata({"metrics": {"latencyMs": 7}, "unknown": 1}),
    ]
    for item in deltas:
        out += r.feed(item)
    out += r.close()
    assert all(m.headers[":message-type"] == "event" for m in out)
    assert all(m.headers[":content-type"] == "application/json" for m in out)
    assert events_of(out) == [
        ("messageStart", {"role": "assistant"}),
        (
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "think"}}},
        ),
        (
            "contentBlockDelta",
            {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig"}}},
        ),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "Hi"}}),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        (
            "contentBlockStart",
            {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "f"}}},
        ),
        ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"a":1}'}}}),
        ("contentBlockStop", {"contentBlockIndex": 2}),
        ("messageStop", {"stopReason": "tool_use"}),
        (
            "metadata",
            {
                "usage": {
                    "inputTokens": 6,
                    "outputTokens": 2,
                    "totalTokens": 12,
                    "cacheReadInputTokens": 4,
                },
                "metrics": {"latencyMs": 7},
            },
        ),
    ]


def test_the_renderer_takes_whole_calls_without_an_index_and_interleaved_fragments() -> None:
    r = BedrockRenderer()
    items: list[Any] = []
    deltas: list[Delta] = [
        ToolCallDelta(None, '{"a":1}', "t1", "f"),  # Mistral: whole calls, no index
        ToolCallDelta(None, '{"b":2}', "t2", "g"),
        ToolCallDelta(None, "", None, None),  # goes on with the last call
        ToolCallDelta(5, "", "t3", "h"),  # OpenAI: fragments of two calls interleave
        ToolCallDelta(6, '{"d":', "t4", "k"),
        ToolCallDelta(5, '{"c":3}'),
        ToolCallDelta(6, "4}"),
        Finish("tool_calls"),
    ]
    for item in deltas:
        items += r.feed(item)
    items += r.close()
    message = message_of(items)
    assert [(c.index, c.id, c.name, c.arguments) for c in message.tool_calls] == [
        (0, "t1", "f", '{"a":1}'),
        (1, "t2", "g", '{"b":2}'),
        (2, "t3", "h", '{"c":3}'),
        (3, "t4", "k", '{"d":4}'),
    ]
    assert message.finish_reason == "tool_calls"


def test_the_renderer_keeps_the_providers_stop_word_when_it_fits() -> None:
    r = BedrockRenderer()
    assert events_of(r.feed(Finish("content_filter", raw="guardrail_intervened")))[-1] == (
        "messageStop",
        {"stopReason": "guardrail_intervened"},
    )
    r = BedrockRenderer()
    assert events_of(r.feed(Finish("stop", raw="STOP")))[-1] == (
        "messageStop",
        {"stopReason": "end_turn"},
    )


def test_the_renderer_ends_a_stream_without_finish() -> None:
    r = BedrockRenderer()
    assert events_of(r.close()) == [
        ("messageStart", {"role": "assistant"}),
        ("messageStop", {"stopReason": "end_turn"}),
    ]
    with pytest.raises(RuntimeError, match="closed"):
        r.feed(TextDelta("x"))


def test_the_renderer_refuses_content_after_the_finish() -> None:
    r = BedrockRenderer()
    r.feed(Finish("stop"))
    assert r.feed(Usage(1, 1, 2)) == []
    with pytest.raises(ValueError, match="after the Finish"):
        r.feed(TextDelta("late"))


def test_the_renderer_error_is_an_exception_message_the_decoder_reads() -> None:
    r = BedrockRenderer()
    items = r.feed(TextDelta("a")) + r.error(ProviderError("slow down", type="throttlingException"))
    assert items[-1].headers == {
        ":exception-type": "throttlingException",
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    data = b"".join(encode_message(m.headers, m.payload) for m in items)
    with pytest.raises(ProviderError) as info:
        pipeline([data])
    assert (info.value.type, info.value.message) == ("throttlingException", "slow down")
    assert events_of(BedrockRenderer().error(ProviderError("x")))[-1][0] == (
        "internalServerException"
    )


@pytest.mark.parametrize(
    ("status", "kwargs", "body"),
    [
        (429, {}, {"message": "m", "__type": "ThrottlingException"}),
        (400, {}, {"message": "m", "__type": "ValidationException"}),
        (500, {"type": "ModelErrorException"}, {"message": "m", "__type": "ModelErrorException"}),
        (418, {}, {"message": "m"}),
        (418, {"code": "TeapotException"}, {"message": "m", "__type": "TeapotException"}),
    ],
)
def test_http_error_bodies(status: int, kwargs: dict[str, Any], body: dict[str, Any]) -> None:
    content_type, raw = http_error(status, "m", **kwargs)
    assert content_type == "application/json"
    assert json.loads(raw) == body


# ----------------------------------------------------------------------------- round trip


@st.composite
def scripts(draw: st.DrawFn) -> list[Delta]:
    """A scripted answer in what ConverseStream can express."""
    text = st.text(max_size=8)
    out: list[Delta] = []
    calls = 0
    thinking: list[str] = []  # the open reasoning block's text
    chars = 0  # the answer's text so far
    last = ""
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(
            st.sampled_from(
                ["text", "reasoning", "redacted", "tool", "citation", "cited", "server", "result"]
            )
        )
        if kind == "cited" and last == "text":
            kind = "text"  # the renderer cannot part two runs of text that follow each other
        last = kind
        if kind != "reasoning":
            thinking = []
        if kind == "text":
            pieces = draw(st.lists(text, min_size=1, max_size=3))
            chars += sum(map(len, pieces))
            out += [TextDelta(t) for t in pieces]
        elif kind == "cited":
            # A text block with citations, as the decoder gives it: its span at its end.
            pieces = draw(st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=3))
            out += [TextDelta(t) for t in pieces]
            start, chars = chars, chars + sum(map(len, pieces))
            for n in range(draw(st.integers(1, 2))):
                raw: dict[str, Any] = {"location": {"documentChar": {"documentIndex": n}}}
                title = draw(st.none() | text)
                if title is not None:
                    raw["title"] = title
                out.append(
                    Citation(
                        "documentChar", None, title, None, start, chars, raw=raw, whole_block=True
                    )
                )
        elif kind == "reasoning":
            pieces = draw(st.lists(text, max_size=3))
            thinking += pieces
            out += [ReasoningDelta(t) for t in pieces]
            if draw(st.booleans()):
                signature = draw(st.text(min_size=1, max_size=12))
                out.append(ReasoningState("thinking", signature, "".join(thinking)))
                thinking = []
        elif kind == "redacted":
            out.append(ReasoningState("redacted_thinking", draw(st.text(min_size=1, max_size=12))))
        elif kind == "tool":
            arguments = json.dumps(
                draw(st.dictionaries(st.text(max_size=5), json_values, max_size=3)),
                separators=(",", ":"),
                ensure_ascii=False,
            )
            cuts = sorted(draw(st.sets(st.integers(1, max(len(arguments) - 1, 1)), max_size=3)))
            bounds = [0, *cuts, len(arguments)]
            call_id = f"tooluse_{draw(st.text('abcdef0123', min_size=4, max_size=8))}"
            name = draw(st.text("abcdefgh_", min_size=1, max_size=8))
            out.append(ToolCallDelta(calls, "", call_id, name))
            out += [ToolCallDelta(calls, arguments[a:b]) for a, b in itertools.pairwise(bounds)]
            calls += 1
        elif kind == "citation":
            # Without a location a Bedrock citation has no kind: it is "citation".
            url = draw(st.none() | st.just("https://x.test/a"))
            out.append(
                Citation(
                    "citation" if url is None else "web",
                    url,
                    draw(st.none() | text),
                    draw(st.none() | text),
                )
            )
        elif kind == "server":
            out.append(
                ServerToolCall(
                    draw(st.text("xyz", min_size=1, max_size=4)),
                    draw(st.sampled_from(["web_search", "code"])),
                    draw(st.dictionaries(st.text(max_size=4), json_values, max_size=2)),
                )
            )
        else:
            out.append(
                ServerToolResult(
                    draw(st.text("xyz", min_size=1, max_size=4)),
                    draw(st.sampled_from(["toolResult", "web_search_result"])),
                    [{"text": t} for t in draw(st.lists(text, min_size=1, max_size=2))],
                )
            )
    reasons = ["stop", "length", "content_filter", "malformed_model_output"]
    out.append(Finish("tool_calls" if calls else draw(st.sampled_from(reasons))))
    if draw(st.booleans()):
        prompt = draw(st.integers(0, 10_000))
        cached = draw(st.none() | st.integers(0, prompt))
        completion = draw(st.integers(0, 10_000))
        total = draw(st.sampled_from([prompt + completion, prompt + completion + 7]))
        out.append(Usage(prompt, completion, total, None, cached))
    if draw(st.booleans()):
        out.append(Metadata({"metrics": {"latencyMs": draw(st.integers(0, 10**6))}}))
    return out


@st.composite
def cut(draw: st.DrawFn, data: bytes) -> list[bytes]:
    points = sorted(draw(st.sets(st.integers(0, len(data)), max_size=10)))
    return [data[a:b] for a, b in itertools.pairwise([0, *points, len(data)])]


def expected_message(script: list[Delta]) -> Message:
    accumulator = MessageAccumulator()
    for item in script:
        accumulator.feed(item)
    (message,) = accumulator.close()
    return message


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(scripts(), st.data())
def test_render_then_decode_gives_the_same_message(
    script: list[Delta], data: st.DataObject
) -> None:
    r = BedrockRenderer()
    items: list[Any] = []
    for item in script:
        items += r.feed(item)
    items += r.close()
    wire = b"".join(encode_message(m.headers, m.payload) for m in items)
    dialect = data.draw(st.sampled_from(["bedrock", "auto"]))
    (got,) = pipeline(data.draw(cut(wire)), dialect)
    want = expected_message(script)
    assert got == want
    assert got.finish_raw in {
        "end_turn",
        "max_tokens",
        "tool_use",
        "content_filtered",
        "malformed_model_output",
    }
    assert got.reasoning_state == want.reasoning_state
    assert got.citations == want.citations
    assert [c.whole_block for c in got.citations] == [c.whole_block for c in want.citations]
    assert got.server_tools == want.server_tools
    # The documented rule: a metadata event always carries the required
    # metrics.latencyMs (0 when the script gave none), which decodes back.
    sent_usage = any(isinstance(item, Usage) and item.choice == 0 for item in script)
    added = {"metrics": {"latencyMs": 0}} if sent_usage and "metrics" not in want.metadata else {}
    assert got.metadata == {**want.metadata, **added}
