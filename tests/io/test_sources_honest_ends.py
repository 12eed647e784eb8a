"""Honest ends at the source: a 2xx answer that brings no stream is an error that says what arrived.

Over real sockets, for the four ways in (`from_request` and `from_response`,
each with a sync and an async client): a wrong content type is
`UnexpectedContentTypeError` before any parsing; a stream content type with
no event in the body is `EmptyStreamError`. Each error names the status, the
content type and quotes a bounded excerpt of the body, in its message and in
its attributes. And `line_limit=` reaches every source.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import rxstream as rs
from rxstream.testing.server import FakeLLMServer, RecordedRequest, WireAnswer
from tests.support.sources import MODES, drive, tls_context

COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}}],
}
OVERLOADED = {"error": {"message": "The model is overloaded", "type": "server_error"}}


@dataclass(frozen=True)
class Case:
    answer: WireAnswer
    error: type[rs.StreamError]
    content_type: str | None
    said: tuple[str, ...]  # words the message must hold (beyond status and content type)
    body: str  # what the body excerpt must hold ("" for an empty body)


def whole(content_type: str, body: bytes, framing: str = "length") -> WireAnswer:
    return WireAnswer(headers=(("Content-Type", content_type),), body=(body,), framing=framing)  # type: ignore[arg-type]


CASES = {
    "empty-chunked": Case(
        WireAnswer.stream(), rs.EmptyStreamError, "text/event-stream", ("empty body",), ""
    ),
    "empty-close-delimited": Case(
        WireAnswer.stream(framing="close"),
        rs.EmptyStreamError,
        "text/event-stream",
        ("empty body",),
        "",
    ),
    "empty-content-length": Case(
        WireAnswer.stream(framing="length"),
        rs.EmptyStreamError,
        "text/event-stream",
        ("empty body",),
        "",
    ),
    "keep-alives-only": Case(
        WireAnswer.stream(": keep-alive\n\n", ": ping\n\n", "\n"),
        rs.EmptyStreamError,
        "text/event-stream",
        ("keep-alive",),
        ": keep-alive",
    ),
    "keep-alives-close-delimited": Case(
        WireAnswer.stream(": ping\n\n", framing="close"),
        rs.EmptyStreamError,
        "text/event-stream",
        ("keep-alive",),
        ": ping",
    ),
    "json-error-sent-as-event-stream": Case(
        whole("text/event-stream", json.dumps(OVERLOADED).encode()),
        rs.EmptyStreamError,
        "text/event-stream",
        ("JSON", "The model is overloaded"),
        "The model is overloaded",
    ),
    "html-sent-as-event-stream": Case(
        WireAnswer.stream("<html><body>Bad gateway</body></html>"),
        rs.EmptyStreamError,
        "text/event-stream",
        ("HTML",),
        "Bad gateway",
    ),
    "ndjson-of-blank-lines": Case(
        WireAnswer.stream("\n\n", "\r\n", content_type="application/x-ndjson"),
        rs.EmptyStreamError,
        "application/x-ndjson",
        ("blank",),
        "",
    ),
    "no-content-type-empty": Case(
        WireAnswer(headers=(), framing="close"), rs.EmptyStreamError, None, ("empty body",), ""
    ),
    "text-html": Case(
        whole("text/html; charset=utf-8", b"<!doctype html><title>Sign in</title>"),
        rs.UnexpectedContentTypeError,
        "text/html; charset=utf-8",
        ("HTML",),
        "Sign in",
    ),
    "text-plain": Case(
        whole("text/plain", b"upstream connect error"),
        rs.UnexpectedContentTypeError,
        "text/plain",
        (),
        "upstream connect error",
    ),
    "text-plain-chunked-stream": Case(
        WireAnswer.stream('data: {"choices":[]}\n\n', content_type="text/plain"),
        rs.UnexpectedContentTypeError,
        "text/plain",
        (),
        "data: ",
    ),
    "json-completion": Case(
        whole("application/json", json.dumps(COMPLETION).encode()),
        rs.UnexpectedContentTypeError,
        "application/json",
        ("stream",),
        "chat.completion",
    ),
    "eventstream-as-lines": Case(
        whole("application/vnd.amazon.eventstream", b"\x00\x00\x00\x10binary"),
        rs.UnexpectedContentTypeError,
        "application/vnd.amazon.eventstream",
        ("body='bytes'",),
        "binary",
    ),
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    """Answers each request with the case its `?case=` names."""

    def answer(request: RecordedRequest) -> WireAnswer:
        name = request.query["case"]
        return STREAMS[name] if name in STREAMS else CASES[name].answer

    with FakeLLMServer.scripted(answer) as wire:
        yield wire


STREAMS = {
    "sse": WireAnswer.stream('data: {"a":1}\n\n', ": ping\n", "data: [DONE]\n\n"),
    "ndjson": WireAnswer.stream(
        '{"done":false}\n', '{"done":true}\n', content_type="application/x-ndjson"
    ),
    "no-content-type": WireAnswer(headers=(), body=(b"data: x\n\n",), framing="close"),
    "eventstream": whole("application/vnd.amazon.eventstream", b"\x00\x01binary\xff"),
    "eventstream-empty": whole("application/vnd.amazon.eventstream", b""),
    "long-line": WireAnswer.stream("data: " + "x" * 100 + "\n\n", "data: [DONE]\n\n"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_a_2xx_answer_without_a_stream_is_an_error_that_says_what_arrived(
    server: FakeLLMServer, mode: str, name: str
) -> None:
    case = CASES[name]
    outcome = drive(mode, f"{server.url}?case={name}")
    error = outcome.error
    # Keep-alive comments pass through as they arrive; no event does.
    assert not [item for item in outcome.items if not item.startswith(":") and item]
    assert isinstance(error, rs.EmptyStreamError | rs.UnexpectedContentTypeError)
    assert type(error) is case.error, repr(error)
    assert error.status_code == 200
    assert error.content_type == case.content_type
    assert case.body in error.body
    message = str(error)
    for word in ("200", str(case.content_type or "(none)"), *case.said):
        assert word in message, (word, message)
    if case.body:
        assert case.body in message
    assert len(message) < 700  # a bounded excerpt, never the whole body


def test_a_long_body_is_quoted_in_bounded_form(server: FakeLLMServer) -> None:
    big = json.dumps({"error": {"message": "x" * 100_000}}).encode()
    CASES["big"] = Case(whole("text/plain", big), rs.UnexpectedContentTypeError, None, (), "")
    try:
        error = drive("request", f"{server.url}?case=big").error
    finally:
        del CASES["big"]
    assert isinstance(error, rs.UnexpectedContentTypeError)
    assert len(error.body) < 300
    # Only the head was read: the excerpt says so instead of naming a length.
    assert error.body.endswith("… (at least 65536 bytes)")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("name", "items"),
    [
        ("sse", ['data: {"a":1}', "", ": ping", "data: [DONE]", ""]),
        ("ndjson", ['{"done":false}', '{"done":true}']),
        ("no-content-type", ["data: x", ""]),
    ],
)
def test_a_stream_passes(server: FakeLLMServer, mode: str, name: str, items: list[str]) -> None:
    outcome = drive(mode, f"{server.url}?case={name}")
    assert outcome.error is None
    assert outcome.completed
    assert outcome.items == items


@pytest.mark.parametrize("mode", MODES)
def test_bytes_body_accepts_an_aws_event_stream(server: FakeLLMServer, mode: str) -> None:
    outcome = drive(mode, f"{server.url}?case=eventstream", source={"body": "bytes"})
    assert outcome.error is None
    assert outcome.completed
    assert b"".join(outcome.items) == b"\x00\x01binary\xff"
    assert all(isinstance(item, bytes) for item in outcome.items)


@pytest.mark.parametrize("mode", MODES)
def test_bytes_body_empty_body_is_an_empty_stream(server: FakeLLMServer, mode: str) -> None:
    outcome = drive(mode, f"{server.url}?case=eventstream-empty", source={"body": "bytes"})
    error = outcome.error
    assert isinstance(error, rs.EmptyStreamError), repr(error)
    assert error.status_code == 200
    assert error.content_type == "application/vnd.amazon.eventstream"
    assert "empty body" in str(error)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["text-html", "json-completion"])
def test_bytes_body_still_refuses_what_is_not_a_stream(
    server: FakeLLMServer, mode: str, name: str
) -> None:
    error = drive(mode, f"{server.url}?case={name}", source={"body": "bytes"}).error
    assert isinstance(error, rs.UnexpectedContentTypeError), repr(error)


# --------------------------------------------------------------------------- line_limit


@pytest.mark.parametrize("mode", MODES)
def test_line_limit_reaches_every_http_source(server: FakeLLMServer, mode: str) -> None:
    url = f"{server.url}?case=long-line"
    over = drive(mode, url, source={"line_limit": 50})
    assert isinstance(over.error, rs.LineTooLongError), repr(over.error)
    assert over.error.limit == 50
    assert "xxxx" in str(over.error)
    assert over.items == []
    within = drive(mode, url, source={"line_limit": 106})
    assert within.error is None
    assert within.items[0] == "data: " + "x" * 100


def test_line_limit_of_from_lines_sync_and_async() -> None:
    lines = ["data: ok", "data: " + "y" * 100]
    sync = rs.from_lines(lines, line_limit=50)
    seen: list[str] = []
    errors: list[Exception] = []
    sync.subscribe(seen.append, errors.append)
    assert seen == ["data: ok"]
    assert isinstance(errors[0], rs.LineTooLongError)
    assert errors[0].limit == 50

    async def agen() -> AsyncIterator[str]:
        for line in lines:
            yield line

    async def main() -> tuple[list[str], list[Exception]]:
        aseen: list[str] = []
        aerrors: list[Exception] = []
        done = asyncio.Event()

        def on_error(error: Exception) -> None:
            aerrors.append(error)
            done.set()

        rs.from_lines(agen(), line_limit=50).subscribe(aseen.append, on_error, done.set)
        await asyncio.wait_for(done.wait(), 5)
        return aseen, aerrors

    aseen, aerrors = asyncio.run(main())
    assert aseen == ["data: ok"]
    assert isinstance(aerrors[0], rs.LineTooLongError)
    assert aerrors[0].limit == 50


@pytest.mark.parametrize("source", ["from_request", "from_response", "from_lines"])
@pytest.mark.parametrize(("limit", "error"), [(0, ValueError), (-1, ValueError), ("9", TypeError)])
def test_a_bad_line_limit_is_a_caller_mistake(
    source: str, limit: Any, error: type[Exception]
) -> None:
    import httpx

    make: Callable[[], object] = {
        "from_request": lambda: rs.from_request(
            httpx.Client(verify=tls_context()), "POST", "http://127.0.0.1:9/", line_limit=limit
        ),
        "from_response": lambda: rs.from_response(httpx.Response(200), line_limit=limit),
        "from_lines": lambda: rs.from_lines(["x"], line_limit=limit),
    }[source]
    with pytest.raises(error, match="line_limit"):
        make()


def test_a_binary_body_is_quoted_printable(server: FakeLLMServer) -> None:
    # An AWS event stream read as lines: its framing bytes escaped, never dumped raw.
    body = b"\x00\x00\x00\xa5\x00\x00\x00R\x80\xffW\x0b:event-type\x07\x00\x0cmessageStart" * 40
    CASES["binary"] = Case(
        whole("application/vnd.amazon.eventstream", body),
        rs.UnexpectedContentTypeError,
        None,
        (),
        "",
    )
    try:
        error = drive("request", f"{server.url}?case=binary").error
    finally:
        del CASES["binary"]
    assert isinstance(error, rs.UnexpectedContentTypeError)
    message = str(error)
    assert message.isprintable(), message
    assert "\\x00\\x00\\x00\\xa5\\x00\\x00\\x00R\\x80\\xffW\\x0b:event-type\\x07" in error.body
    assert len(message) < 700
