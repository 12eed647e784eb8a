"""No secret in an error: a server that echoes the request's credentials back never gets them out.

A real server on 127.0.0.1 quotes every credential it received (the headers
`Authorization`, `api-key`, `x-api-key`, `x-goog-api-key`, the `?key=` of the
query string, raw and decoded, and the password of HTTP Basic auth) in every
place an answer can carry text: a 401 JSON body, a 500 text body listing the
request headers, the reason phrase, a 200 stream with an `event: error` frame,
chunk content, a malformed chunk, keep-alive comments, a JSON body sent as an
event stream, an HTML page, an over-long line. Then the whole exception graph
(`leaks.places`) must be free of them, for `from_request` and
`from_response`, sync and async; and so must every line the source emitted.

Transport failures (refused, reset, read timeout, a cut body, too many
redirects) likewise: their `__cause__` is a bare copy of the httpx exception
that keeps neither the request nor its headers.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.testing.server import FakeLLMServer, RecordedRequest, WireAnswer
from tests.support.credentials import KEY, PASSWORD, PLACES, credentials_of, echoed, secrets
from tests.support.leaks import places
from tests.support.sources import MODES, drive, free_port


def chunk(content: str) -> str:
    payload = {"choices": [{"index": 0, "delta": {"content": content}}]}
    return "data: " + json.dumps(payload) + "\n\n"


SHAPES: dict[str, Callable[[str], WireAnswer]] = {
    # (Each gets what the server echoes; see `answer` below.)
    "401-json": lambda echo: WireAnswer(
        status=401,
        reason="Unauthorized",
        headers=(("Content-Type", "application/json"),),
        body=(json.dumps({"error": {"message": f"Incorrect API key provided: {echo}"}}).encode(),),
        framing="length",
    ),
    "500-text": lambda echo: WireAnswer(
        status=500,
        reason="Internal Server Error",
        headers=(("Content-Type", "text/plain"),),
        body=(f"request headers were:\n{echo.replace('; ', chr(10))}\n".encode(),),
        framing="length",
    ),
    "403-reason-phrase": lambda echo: WireAnswer(
        status=403,
        reason=f"Forbidden for {echo}"[:900],
        headers=(("Content-Type", "text/plain"),),
        body=(b"no",),
        framing="length",
    ),
    "200-event-error": lambda echo: WireAnswer.stream(
        chunk("Hel"),
        "event: error\ndata: "
        + json.dumps({"error": {"message": f"key rejected: {echo}", "type": "auth"}})
        + "\n\n",
    ),
    "200-chunk-content-then-cut": lambda echo: WireAnswer(
        body=(chunk(f"you sent {echo}").encode(),), then="cut"
    ),
    "200-malformed-chunk": lambda echo: WireAnswer.stream(
        'data: {"choices": [{"delta": "' + echo + "\n\n"
    ),
    "200-keep-alive-comments": lambda echo: WireAnswer.stream(f": {echo}\n\n"),
    "200-json-as-event-stream": lambda echo: WireAnswer.stream(
        json.dumps({"error": {"message": echo}})
    ),
    "200-html": lambda echo: WireAnswer(
        headers=(("Content-Type", "text/html"),),
        body=(f"<html>{echo}</html>".encode(),),
        framing="length",
    ),
    # The credential straddles the 200th character of the line, where the excerpt is cut.
    "200-line-too-long": lambda echo: WireAnswer.stream(
        "data: " + "x" * 180 + echo + "y" * 4000 + "\n\n", framing="close"
    ),
}

PIPE = (rs.sse_frames(), rs.decode_chunks())


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    def answer(request: RecordedRequest) -> WireAnswer:
        shape = request.path.rpartition("/")[2].partition("?")[0]
        if shape == "200-line-too-long":
            return SHAPES[shape](credentials_of(request))
        return SHAPES[shape](echoed(request))

    with FakeLLMServer.scripted(answer) as wire:
        yield wire


def assert_clean(outcome_error: BaseException | None, items: list[Any]) -> None:
    assert isinstance(outcome_error, rs.StreamError), repr(outcome_error)
    leaks = places(outcome_error, secrets())
    assert leaks == [], "\n".join(leaks[:10])
    shown = repr(items)
    assert [s for s in secrets() if s in shown] == [], shown[:500]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("where", list(PLACES))
@pytest.mark.parametrize("shape", list(SHAPES))
def test_an_echoed_credential_appears_nowhere(
    server: FakeLLMServer, mode: str, where: str, shape: str
) -> None:
    url = server.url.rpartition("/")[0] + "/" + shape
    source = {"line_limit": 1000} if shape == "200-line-too-long" else {}
    outcome = drive(mode, url, request=dict(PLACES[where]), source=source, pipe=PIPE)
    # The server did get (and echo) the credential: the test proves something.
    assert any(KEY in echoed(r) or PASSWORD in echoed(r) for r in server.requests[-1:])
    assert_clean(outcome.error, outcome.items)


EXPECTED = {
    "401-json": rs.HTTPStatusError,
    "500-text": rs.HTTPStatusError,
    "403-reason-phrase": rs.HTTPStatusError,
    "200-event-error": rs.ProviderError,
    "200-chunk-content-then-cut": rs.TransportError,
    "200-malformed-chunk": rs.MalformedChunkError,
    "200-keep-alive-comments": rs.EmptyStreamError,
    "200-json-as-event-stream": rs.EmptyStreamError,
    "200-html": rs.UnexpectedContentTypeError,
    "200-line-too-long": rs.LineTooLongError,
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_shape_ends_in_the_error_it_stands_for(server: FakeLLMServer, shape: str) -> None:
    url = server.url.rpartition("/")[0] + "/" + shape
    source = {"line_limit": 1000} if shape == "200-line-too-long" else {}
    outcome = drive("request", url, request=dict(PLACES["authorization"]), source=source, pipe=PIPE)
    assert type(outcome.error) is EXPECTED[shape], repr(outcome.error)
    assert "[redacted]" in str(outcome.error) or shape in ("200-chunk-content-then-cut",)


def test_the_provider_message_keeps_what_is_not_secret(server: FakeLLMServer) -> None:
    url = server.url.rpartition("/")[0] + "/401-json"
    error = drive("request", url, request=dict(PLACES["authorization"])).error
    assert isinstance(error, rs.HTTPStatusError)
    assert error.status_code == 401
    assert error.provider_message is not None
    assert error.provider_message.startswith("Incorrect API key provided: ")
    assert "authorization: [redacted]" in error.provider_message


# --------------------------------------------------------------------------- transport errors


def stall(request: RecordedRequest) -> WireAnswer:
    return WireAnswer.stream(chunk("a"), then="stall")


TRANSPORT: dict[
    str, tuple[Callable[[RecordedRequest], WireAnswer] | None, type[Exception], dict[str, Any]]
] = {
    "refused": (None, httpx.ConnectError, {}),
    "reset": (lambda r: WireAnswer.stream(chunk("a"), then="reset"), httpx.TransportError, {}),
    "read-timeout": (stall, httpx.ReadTimeout, {"timeout": httpx.Timeout(5.0, read=0.1)}),
    "cut": (lambda r: WireAnswer.stream(chunk("a"), then="cut"), httpx.RemoteProtocolError, {}),
}


# from_response is handed a response: its connection was made, it cannot be refused.
FAILURES_BY_MODE = [
    (failure, mode)
    for failure in TRANSPORT
    for mode in MODES
    if not (TRANSPORT[failure][0] is None and mode.endswith("response"))
]


@pytest.mark.parametrize("where", list(PLACES))
@pytest.mark.parametrize(("failure", "mode"), FAILURES_BY_MODE)
def test_a_transport_error_keeps_no_request(mode: str, where: str, failure: str) -> None:
    answer, cause_type, client = TRANSPORT[failure]
    if answer is None:
        url = f"http://127.0.0.1:{free_port()}/v1/chat/completions"
        outcome = drive(mode, url, request=dict(PLACES[where]), client=client)
    else:
        with FakeLLMServer.scripted(answer) as wire:
            outcome = drive(mode, wire.url, request=dict(PLACES[where]), client=client)
    error = outcome.error
    assert isinstance(error, rs.TransportError), repr(error)
    cause = error.__cause__
    assert isinstance(cause, cause_type), repr(cause)
    assert error.__context__ is None or error.__suppress_context__
    # The bare copy has no request: httpx raises when asked for it.
    with pytest.raises(RuntimeError):
        _ = cause.request  # type: ignore[attr-defined]
    assert_clean(error, outcome.items)


def test_too_many_redirects_is_a_transport_error_without_the_request() -> None:
    def answer(request: RecordedRequest) -> WireAnswer:
        return WireAnswer(
            status=307, reason="Temporary Redirect", headers=(("Location", request.path),)
        )

    with FakeLLMServer.scripted(answer) as wire:
        outcome = drive(
            "request",
            wire.url,
            request={**PLACES["authorization"], "follow_redirects": True},
        )
    error = outcome.error
    assert isinstance(error, rs.TransportError), repr(error)
    assert "redirect" in str(error).lower()
    assert_clean(error, outcome.items)
