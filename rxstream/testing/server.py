"""A fake LLM server on 127.0.0.1, driven by scripted scenarios, in every provider's dialect.

`FakeLLMServer` serves real sockets (HTTP/1.1, chunked transfer encoding, a
flush after every step), so sources, timeouts and disposal are tested against
the network stack they meet in production. It answers each provider's
streaming endpoint at its real path, in that provider's wire format:

| path | dialect |
|---|---|
| `POST /v1/chat/completions` | `"openai-chat"` |
| `POST /v1/responses` | `"openai-responses"` |
| `POST /v1/messages` | `"anthropic"` |
| `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` | `"gemini"` |
| `POST /v2/chat` | `"cohere"` |
| `POST /api/chat` | `"ollama"` (NDJSON) |
| `POST /api/chat`, the body `useChat` sends | `"ai-sdk"` (the AI SDK's UI message stream) |
| `POST /model/{id}/converse-stream` | `"bedrock"` (AWS event stream) |

Ollama and the AI SDK's `DefaultChatTransport` share `/api/chat`: the body
tells them apart (see `route`). An `"ai-sdk"` answer carries the header
`x-vercel-ai-ui-message-stream: v1`, a new `messageId` in its `start` chunk
per request (`msg-fake-N`), keep-alives as SSE comments, and `data: [DONE]`
at its end; `GET /api/chat/{id}/stream` (the AI SDK's resume) answers 204,
nothing to resume.

    with FakeLLMServer(Scenario.text("Hel", "lo")) as server:
        rs.from_request(client, "POST", server.url, json={"stream": True, ...})
        rs.from_request(client, "POST", server.url_for("anthropic"), json={...})

A `Scenario` is a status, headers and a tuple of steps. Dialect-neutral steps
are rendered in the dialect of the path that was asked (by the core's
renderers): `Say` (deltas), `Keepalive` (a comment, or Anthropic's `ping`),
`Fail` (the provider's error event mid-stream) and `End` (the dialect's end
marker). The OpenAI-shaped steps `Chunk` (one chunk as JSON) and `Done`
(`data: [DONE]`) are sent as they are at `/v1/chat/completions` and
translated into the asked dialect elsewhere, so every scenario plays in every
dialect. `Raw` bytes are sent as they are; `Stall` sends nothing for a while;
`Disconnect` drops the connection. Every step may wait first (`delay=`).
`Scenario.error(...)` answers an HTTP error in the asked provider's shape.
Requests are served by the given scenarios in order, the last one repeating.
A `Reply` (a function of the `RecordedRequest`) may stand for a scenario:
`FakeLLMServer.echoing()` answers with `rxstream.testing.echo_answer`, made from
each request (its model, one of its tools, its tool results). Faults
(`faults=["429:retry-after=2", "cut:3", "ok"]`, or a request's
`x-rxstream-fault: SPEC` header) turn an answer into a failing one in the asked
dialect's terms (`rxstream.testing.parse_fault` reads the syntax).

For the misbehaving servers a client must survive, `FakeLLMServer.scripted(answer)`
answers every request (any path) with `answer(request)`, a `WireAnswer` that puts
exactly the bytes it says on the wire: any status line (a reason phrase that
quotes the request), any headers (no content type at all), framing by length,
chunks or connection close, and after the body a proper end, a stall, a cut or
a TCP reset, or no answer at all (`hold`); `keep_alive` serves the next request
on the same connection (`RecordedRequest.connection` tells which).

The server records each request (`server.requests`) and notices when a client
goes away before its response is finished (`server.disconnects`,
`server.wait_for_disconnect()`), which is how tests prove that disposing a
subscription closes the connection. Every wait is bounded and `stop()` ends
everything promptly.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import re
import select
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Literal, TypeAlias
from urllib.parse import parse_qsl, urlsplit

from ..core import DeltaDecoder, dialects
from ..core.dialects import AI_SDK, DIALECTS, Wire
from ..core.dialects.ai_sdk import HEADERS as AI_SDK_HEADERS
from ..core.provider_errors import provider_error
from ..core.sse import comment_lines, event_lines, event_text
from ..errors import ProviderError
from ..models import ChatChunk, Delta, TextDelta
from . import builders
from .checks import Rejection, check_request

if TYPE_CHECKING:
    from ._faults import Fault

#: The request header that scripts one request's fault (see `rxstream.testing.parse_fault`).
FAULT_HEADER = "x-rxstream-fault"

__all__ = [
    "SERVED",
    "Chunk",
    "Comment",
    "Disconnect",
    "Done",
    "End",
    "Fail",
    "FakeLLMServer",
    "HTTPError",
    "Keepalive",
    "Raw",
    "RecordedRequest",
    "Reply",
    "Say",
    "Scenario",
    "Stall",
    "Step",
    "WireAnswer",
    "route",
]

JSON: TypeAlias = Any

#: The id and creation time of the chunks `Scenario.text` sends.
FAKE_ID = "chatcmpl-fake"
FAKE_CREATED = 1_700_000_000

#: Every dialect the server answers in: the provider dialects, then the AI SDK's UI
#: message stream. A tuple of its own, because `rxstream.core.dialects.DIALECTS` means
#: "the providers' dialects" wherever it is used (the conformance matrix with each
#: provider's SDK, the renderer and request-builder tables, the benchmarks), and the
#: AI SDK's stream is what a backend writes for `useChat`, no provider's: it has no
#: `rs.request` builder and no official Python client.
SERVED = (*DIALECTS, AI_SDK)

#: The longest any single step may wait (a guard against a test hanging forever).
MAX_WAIT = 30.0
_POLL = 0.02


# --------------------------------------------------------------------------- steps


@dataclass(frozen=True, slots=True)
class Chunk:
    """Send one event, `data: <payload as JSON>` and a blank line (optionally `event:`)."""

    payload: JSON
    delay: float = 0.0
    event: str | None = None

    def encode(self) -> bytes:
        data = json.dumps(self.payload, separators=(",", ":"), ensure_ascii=False)
        return event_text(data, event=self.event).encode()


@dataclass(frozen=True, slots=True)
class Raw:
    """Send `data` exactly as given, in one write (str is UTF-8 encoded)."""

    data: str | bytes
    delay: float = 0.0

    def encode(self) -> bytes:
        return self.data.encode() if isinstance(self.data, str) else self.data


@dataclass(frozen=True, slots=True)
class Comment:
    """Send an SSE comment line (`: text`) and a blank line, as keep-alives do."""

    text: str = "keep-alive"
    delay: float = 0.0

    def encode(self) -> bytes:
        return ("\n".join(comment_lines(self.text)) + "\n").encode()


@dataclass(frozen=True, slots=True)
class Done:
    """Send `data: [DONE]` and a blank line."""

    delay: float = 0.0

    def encode(self) -> bytes:
        return event_text(builders.done()).encode()


@dataclass(frozen=True, slots=True)
class Stall:
    """Send nothing for `seconds` (a client that leaves meanwhile is noticed).

    At most `MAX_WAIT` seconds, except `math.inf`: until the client leaves or
    the server stops.
    """

    seconds: float
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class Disconnect:
    """Drop the connection here, without finishing the body.

    `reset=True` sends a TCP RST (the client sees "connection reset") instead of
    a plain close (the client sees an incomplete body).
    """

    reset: bool = False
    delay: float = 0.0


@dataclass(frozen=True, slots=True, init=False)
class Say:
    """Send deltas, rendered in the dialect of the request (one write for all of them).

    Example:
        >>> from rxstream.models import Finish, TextDelta
        >>> Say(TextDelta("Hi"), Finish("stop"), delay=0.01).deltas
        (TextDelta(text='Hi', choice=0), Finish(reason='stop', choice=0, raw=None))
    """

    deltas: tuple[Delta, ...]
    delay: float

    def __init__(self, *deltas: Delta, delay: float = 0.0) -> None:
        object.__setattr__(self, "deltas", deltas)
        object.__setattr__(self, "delay", delay)


@dataclass(frozen=True, slots=True)
class Keepalive:
    """Send the dialect's keep-alive: an SSE comment, Anthropic's `ping` event, a
    blank line for Gemini (google-genai parses any other line as JSON; nothing in
    NDJSON and AWS event streams, which have none: only the wait)."""

    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class Fail:
    """Send the dialect's error event mid-stream (then the scenario goes on, if it has more)."""

    message: str = "fake error"
    type: str | None = None
    code: str | int | None = None
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class End:
    """Send the dialect's end marker (`[DONE]`, `message_stop`, `response.completed`, ...)."""

    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class HTTPError:
    """An HTTP error answer, with a body in the shape of the asked provider."""

    message: str = "fake error"
    type: str | None = None
    code: str | int | None = None


Step: TypeAlias = Chunk | Raw | Comment | Done | Stall | Disconnect | Say | Keepalive | Fail | End


@dataclass(frozen=True)
class Scenario:
    """What the server answers to one request.

    Attributes:
        steps: what the body is made of, in order (for a 2xx event stream).
        status: the HTTP status.
        headers: extra response headers (e.g. `{"Retry-After": "2"}`).
        content_type: the response's content type.
        body: for a non-streaming answer (an error, or a JSON 200): the whole
            body; a dict or list is sent as JSON. When set, `steps` is ignored.
        framing: `"chunked"` (HTTP/1.1 chunked transfer encoding, the default)
            or `"close"` (no framing: the body ends when the server closes the
            connection, so each `Raw` reaches the socket byte for byte).
        model: the model name the answer reports where its dialect's stream
            names one (`Say`, `Fail` and `End` steps, and `Chunk`s outside
            OpenAI chat; None: the dialect renderer's default).

    Example:
        >>> slow = Scenario.text("Hel", "lo", delay=0.05)
        >>> cut = Scenario.text("Hel", "lo").disconnect_after(2)
        >>> pinged = Scenario(steps=(Comment(), Chunk(builders.text_chunk("Hi")), Done()))
        >>> isinstance(cut.steps[-1], Disconnect)
        True
    """

    steps: tuple[Step, ...] = ()
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str | None = None
    body: JSON = None
    framing: Literal["chunked", "close"] = "chunked"
    http_error: HTTPError | None = None
    model: str | None = None

    @classmethod
    def answer(
        cls, *items: Delta | ProviderError, delay: float = 0.0, end: bool = True
    ) -> Scenario:
        """A streamed answer in any dialect: one `Say` per delta (a `ProviderError` is a
        `Fail`), then the dialect's end marker (unless `end=False`: a cut stream).

        Example:
            >>> from rxstream.models import Finish, TextDelta, Usage
            >>> s = Scenario.answer(TextDelta("Hi"), Finish("stop"), Usage(3, 1, 4))
            >>> [type(step).__name__ for step in s.steps]
            ['Say', 'Say', 'Say', 'End']
        """
        steps: list[Step] = []
        for item in items:
            if isinstance(item, ProviderError):
                steps.append(Fail(item.message, item.type, item.code, delay))
            else:
                steps.append(Say(item, delay=delay))
        if end:
            steps.append(End(delay))
        return cls(steps=tuple(steps))

    @classmethod
    def text(
        cls,
        *pieces: str,
        delay: float = 0.0,
        finish_reason: str = "stop",
        usage: bool = True,
        model: str = "fake-model",
    ) -> Scenario:
        """A streamed text answer: role, one chunk per piece, finish, usage, `[DONE]`.

        Args:
            pieces: the text pieces (default `"Hello", ", world!"`).
            delay: seconds to wait before each step.
            finish_reason: the final chunk's finish reason.
            usage: whether a usage-only chunk precedes `[DONE]`.
            model: the model name in each chunk.
        """
        pieces = pieces or ("Hello", ", world!")
        ids: dict[str, Any] = {"id": FAKE_ID, "model": model, "created": FAKE_CREATED}
        opening = builders.chunk({"role": "assistant", "content": ""}, **ids)
        steps: list[Step] = [Chunk(opening, delay)]
        steps += [Chunk(builders.text_chunk(piece, **ids), delay) for piece in pieces]
        steps.append(Chunk(builders.finish_chunk(finish_reason, **ids), delay))
        if usage:
            counts = builders.usage_chunk(5, len(pieces), **ids)
            steps.append(Chunk(counts, delay))
        steps.append(Done(delay))
        return cls(steps=tuple(steps))

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "fake error",
        *,
        type: str | None = None,
        code: str | int | None = None,
        headers: Mapping[str, str] | None = None,
        body: JSON = None,
    ) -> Scenario:
        """An HTTP error answer in the asked provider's shape (or with `body` as given).

        Example:
            >>> Scenario.error(429, "slow down", headers={"Retry-After": "2"}).status
            429
        """
        if body is None:
            return cls(
                status=status,
                headers=dict(headers or {}),
                http_error=HTTPError(message, type, code),
            )
        return cls(
            status=status,
            headers=dict(headers or {}),
            content_type="application/json" if not isinstance(body, str) else "text/plain",
            body=body,
        )

    def then(self, *steps: Step) -> Scenario:
        """This scenario with `steps` appended."""
        return replace(self, steps=(*self.steps, *steps))

    def disconnect_after(self, n: int, *, reset: bool = False) -> Scenario:
        """Only the first `n` steps, then the connection drops (no `[DONE]`)."""
        return replace(self, steps=(*self.steps[:n], Disconnect(reset=reset)))

    @classmethod
    def from_stream(
        cls, stream: Any, *, delay: float | None = None, speed: float = 1.0
    ) -> Scenario:
        """A streamed answer from a `ChatStream` builder (or any SSE text), one step per event.

        A `ChatStream`'s chunks, comments and `[DONE]` become `Chunk`,
        `Comment` and `Done` steps, which play in every dialect; its raw and
        malformed events, and SSE text, are sent as they are (`Raw`).

        A recording made by `rxstream chat --log FILE` (or `demo --log`) has a
        `: t=SECONDS` comment before each event: when it arrived, counted from
        the request. Such text plays at the recorded pace: each event waits as
        long after the one before as it did when recorded (the first, as long
        after the request), divided by `speed`; an event without a stamp goes
        out with the one before. The stamps themselves are not sent, so the
        client gets the provider's bytes at the provider's timing.

        Args:
            stream: a `rxstream.testing.builders.ChatStream`, or event-stream
                text (`str`) whose events are separated by blank lines.
            delay: seconds to wait before each event, the same for all; given,
                it replaces the recorded timing too (default: the stamps' timing,
                or no wait without stamps). `paced` sets the waits afterwards.
            speed: how much faster than recorded the stamps play (2.0: twice as
                fast, 0.5: half as fast).

        Raises:
            ValueError: `speed` is not a positive number.

        Example:
            >>> from rxstream.testing.builders import ChatStream
            >>> s = Scenario.from_stream(ChatStream().text("Hi").finish().done(), delay=0.01)
            >>> len(s.steps), s.steps[0].delay
            (3, 0.01)
            >>> log = ': t=0.250\\ndata: {"a":1}\\n\\n: t=0.400\\ndata: [DONE]\\n\\n'
            >>> [round(step.delay, 3) for step in Scenario.from_stream(log).steps]
            [0.25, 0.15]
            >>> [round(step.delay, 3) for step in Scenario.from_stream(log, speed=5).steps]
            [0.05, 0.03]
        """
        if not speed > 0:  # also refuses NaN
            raise ValueError(f"speed must be a positive number, got {speed!r}")
        if isinstance(stream, builders.ChatStream):
            return cls(steps=tuple(_steps_of(stream, delay or 0.0)))
        if not isinstance(stream, str):
            raise TypeError(
                f"from_stream takes a ChatStream or event-stream text (str), "
                f"got {type(stream).__name__}"
            )
        steps: list[Step] = []
        recorded = 0.0  # the latest stamp so far
        for lines, stamp in _recorded_events(stream):
            if stamp is None:
                wait = 0.0  # arrived with the event before
            else:
                wait = max(stamp - recorded, 0.0) / speed
                recorded = max(recorded, stamp)
            steps.append(Raw("\n".join(lines) + "\n", wait if delay is None else delay))
        return cls(steps=tuple(steps))

    def paced(self, delay: float, *, first: float | None = None) -> Scenario:
        """This scenario with every step waiting `delay` seconds first (`first` for step one).

        `Stall` and `Disconnect` steps keep their own timing.

        Example:
            >>> Scenario.text("a", "b").paced(0.02, first=0.3).steps[0].delay
            0.3
        """
        steps: list[Step] = []
        for i, step in enumerate(self.steps):
            wait = first if i == 0 and first is not None else delay
            if isinstance(step, Stall | Disconnect):
                steps.append(step)
            elif isinstance(step, Say):
                steps.append(Say(*step.deltas, delay=wait))
            else:
                steps.append(replace(step, delay=wait))
        return replace(self, steps=tuple(steps))

    def answer_text(self) -> str:
        """The text the steps stream in choice 0 (for the non-streaming answer)."""
        return "".join(
            delta.text
            for delta in self.deltas()
            if isinstance(delta, TextDelta) and delta.choice == 0
        )

    def deltas(self) -> list[Delta]:
        """The deltas the `Chunk` and `Say` steps carry, in order."""
        decoder = DeltaDecoder()
        out: list[Delta] = []
        for step in self.steps:
            if isinstance(step, Say):
                out += step.deltas
            elif (
                isinstance(step, Chunk)
                and isinstance(step.payload, dict)
                and step.event != "error"
                and step.payload.get("error") is None
            ):
                out += decoder.feed(ChatChunk(step.payload))
        return out


@dataclass(frozen=True)
class WireAnswer:
    """An answer written exactly as given, for `FakeLLMServer.scripted` (a misbehaving server).

    Attributes:
        status, reason: the status line (the reason phrase as given, even one
            that quotes the request's credentials back).
        headers: response headers, in order (`Content-Type` among them, or
            not); `Content-Length`, `Transfer-Encoding` and `Connection` are
            added by `framing` and `keep_alive`.
        body: the body's pieces, each written (and flushed) on its own.
        framing: `"length"` (Content-Length), `"chunked"`, or `"close"` (no
            framing: the body ends when the connection closes).
        then: after the body: `"end"` (finish properly), `"stall"` (send
            nothing more until the client leaves, bounded by `MAX_WAIT`),
            `"cut"` (close without ending a chunked body), `"reset"` (a TCP RST).
        pause: seconds to wait before each piece.
        hold: send nothing at all, not even the status line, until the client
            leaves (bounded by `MAX_WAIT`).
        keep_alive: keep the connection open for the next request (needs
            `"length"` or `"chunked"` framing and `then="end"`).

    A client that leaves a stalling or holding answer is counted in
    `FakeLLMServer.disconnects`.

    Example:
        >>> WireAnswer.stream('data: {"a":1}\\n\\n', then="cut").body
        (b'data: {"a":1}\\n\\n',)
        >>> WireAnswer(403, "Forbidden: key sk-123", framing="length").status
        403
    """

    status: int = 200
    reason: str = "OK"
    headers: tuple[tuple[str, str], ...] = (("Content-Type", "text/event-stream"),)
    body: tuple[bytes, ...] = ()
    framing: Literal["length", "chunked", "close"] = "chunked"
    then: Literal["end", "stall", "cut", "reset"] = "end"
    pause: float = 0.0
    hold: bool = False
    keep_alive: bool = False

    @classmethod
    def stream(
        cls,
        *pieces: bytes | str,
        content_type: str = "text/event-stream",
        framing: Literal["length", "chunked", "close"] = "chunked",
        then: Literal["end", "stall", "cut", "reset"] = "end",
        keep_alive: bool = False,
    ) -> WireAnswer:
        """A 200 answer of `pieces` (str is UTF-8 encoded) with one content type."""
        body = tuple(p.encode() if isinstance(p, str) else p for p in pieces)
        return cls(
            headers=(("Content-Type", content_type),),
            body=body,
            framing=framing,
            then=then,
            keep_alive=keep_alive,
        )


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received.

    Attributes:
        method, path: as sent (the path with its query string).
        headers: the request headers, names lower-cased.
        body: the raw body.
        json: the body decoded as JSON, or None.
        connection: which connection it came on (numbered from 1 in the
            order they were opened; 0 when not known).
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: JSON
    connection: int = 0

    @property
    def query(self) -> dict[str, str]:
        """The query string's parameters (the last value of each name).

        >>> RecordedRequest("POST", "/v1/x?case=a&n=1", {}, b"", None).query
        {'case': 'a', 'n': '1'}
        """
        return dict(parse_qsl(urlsplit(self.path).query))

    @property
    def stream(self) -> bool:
        """Whether the request asked for a stream (`"stream": true`)."""
        return isinstance(self.json, dict) and self.json.get("stream") is True


#: An answer made from the request it answers (e.g. `rxstream.testing.echo_answer`):
#: a `FakeLLMServer` takes one wherever it takes a `Scenario`.
Reply: TypeAlias = Callable[[RecordedRequest], Scenario]


# --------------------------------------------------------------------------- server


class _ClientGone(Exception):
    pass


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) refuses bursts of concurrent clients.
    request_queue_size = 128


class FakeLLMServer:
    """A threaded HTTP server on 127.0.0.1 (a free port, or `port=`) answering from scenarios.

    Args:
        scenarios: answers for successive requests; the last one repeats
            (default: `Scenario.text()`, a short text answer). A `Reply` (a
            function of the `RecordedRequest`) makes its answer per request.
        idle_timeout: seconds an idle keep-alive connection is kept open.
        check_requests: refuse a request body the provider would refuse, with
            that provider's HTTP error (see `rxstream.testing.checks`); False
            serves any body (for tests that send minimal or broken ones).
        port: the port to listen on (default 0: a free one the system picks);
            one already in use makes `start()` raise an `OSError` naming it.
        faults: faults for successive requests, the last one repeating: specs
            such as `"429:retry-after=2"`, `"cut:3"`, `"ok"` (see
            `rxstream.testing.parse_fault`), each rendered in the asked dialect.
            A request's `x-rxstream-fault: SPEC` header scripts its own fault
            instead (an invalid one is answered 400, saying why).

    Attributes:
        base_url: `"http://127.0.0.1:PORT/v1"`, for an SDK's `base_url`.
        url: `base_url + "/chat/completions"`, for `rs.from_request`.
        requests: the `RecordedRequest`s received so far.
        faults: the `Fault`s for successive requests (from `faults=`).

    Example:
        >>> with FakeLLMServer(Scenario.error(429, headers={"Retry-After": "1"})) as server:
        ...     httpx.post(server.url, json={}).status_code  # doctest: +SKIP
        429
    """

    def __init__(
        self,
        *scenarios: Scenario | Reply,
        idle_timeout: float = 5.0,
        check_requests: bool = True,
        port: int = 0,
        faults: str | Iterable[str] = (),
    ) -> None:
        from ._faults import parse_faults  # it builds on this module's steps

        self.check_requests = check_requests
        self.faults = parse_faults(faults)
        if isinstance(port, bool) or not isinstance(port, int):
            raise TypeError(f"port must be an int, got {port!r}")
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0 (a free one) to 65535, got {port!r}")
        self._port = port
        self._scenarios: list[Scenario | Reply] = list(scenarios) or [Scenario.text()]
        self._served = 0
        self._idle_timeout = idle_timeout
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._requests: list[RecordedRequest] = []
        self._disconnects = 0
        self._completed = 0
        self._connections: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- lifecycle

    def start(self) -> FakeLLMServer:
        """Bind to 127.0.0.1 (on `port=`, else a free port) and serve in a background thread.

        Raises:
            OSError: the port cannot be bound (in use, or not allowed); the
                message names it.
        """
        if self._httpd is not None:
            raise RuntimeError("this FakeLLMServer is already started")
        try:
            httpd = _Server(("127.0.0.1", self._port), _make_handler(self))
        except OSError as exc:
            raise OSError(
                exc.errno,
                f"the FakeLLMServer cannot listen on 127.0.0.1:{self._port}: "
                f"{exc.strerror or exc} (port=0 picks a free port)",
            ) from None
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop every open connection and join the threads (bounded)."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            connections = list(self._connections)
            threads = list(self._threads)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in [*threads, *([self._thread] if self._thread else [])]:
            thread.join(timeout=2.0)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @classmethod
    def scripted(
        cls, answer: Callable[[RecordedRequest], WireAnswer], *, idle_timeout: float = 5.0
    ) -> FakeLLMServer:
        """A server that answers every request (any method, any path) with `answer(request)`.

        For the servers a client must survive: the `WireAnswer` says exactly
        what goes on the wire (see there). `answer` runs in the connection's
        thread; what it raises drops the connection.

        Example:
            >>> def answer(request: RecordedRequest) -> WireAnswer:
            ...     if request.query.get("case") == "cut":
            ...         return WireAnswer.stream('data: {"a":1}\\n\\n', then="cut")
            ...     return WireAnswer(401, "Unauthorized", body=(b"no",), framing="length")
            >>> with FakeLLMServer.scripted(answer) as server:  # doctest: +SKIP
            ...     httpx.post(server.url).status_code
            401
        """
        server = cls(idle_timeout=idle_timeout)
        server._script = answer
        return server

    @classmethod
    def echoing(
        cls,
        *,
        delay: float = 0.0,
        faults: str | Iterable[str] = (),
        port: int = 0,
        check_requests: bool = True,
    ) -> FakeLLMServer:
        """A server whose answers listen to the request (what `rxstream fake-server` serves).

        Each answer (`rxstream.testing.echo_answer`) reports the model asked
        for, calls one of the request's own tools with arguments valid for its
        schema, answers a tool result with a final text, and quotes the user
        otherwise; `faults` as for the constructor.

        Example:
            >>> with FakeLLMServer.echoing(faults=["429", "ok"]) as server:  # doctest: +SKIP
            ...     rs.chat(client, "anthropic", model="claude-haiku-4-5", messages=[...])
        """
        from ._echo import echo_answer  # it builds on this module's scenarios

        reply: Reply = functools.partial(echo_answer, delay=delay) if delay else echo_answer
        return cls(reply, faults=faults, port=port, check_requests=check_requests)

    # ----------------------------------------------------------------- public state

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._httpd is None:
            raise RuntimeError("the FakeLLMServer is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def url_for(self, dialect: str, *, model: str = "fake-model") -> str:
        """The URL of `dialect`'s streaming endpoint on this server.

        Example:
            >>> server.url_for("gemini")  # doctest: +SKIP
            'http://127.0.0.1:PORT/v1beta/models/fake-model:streamGenerateContent?alt=sse'
        """
        paths = {
            "openai-chat": "/v1/chat/completions",
            "openai-responses": "/v1/responses",
            "anthropic": "/v1/messages",
            "gemini": f"/v1beta/models/{model}:streamGenerateContent?alt=sse",
            "cohere": "/v2/chat",
            "ollama": "/api/chat",
            "bedrock": f"/model/{model}/converse-stream",
            AI_SDK: "/api/chat",  # told from Ollama's by the body (see `route`)
        }
        if dialect not in paths:
            raise ValueError(f"unknown dialect {dialect!r}; one of {', '.join(paths)}")
        return f"http://127.0.0.1:{self.port}{paths[dialect]}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def disconnects(self) -> int:
        """How many clients left before their response was finished."""
        with self._lock:
            return self._disconnects

    @property
    def completed(self) -> int:
        """How many responses were sent to their end."""
        with self._lock:
            return self._completed

    def serve(self, *scenarios: Scenario | Reply) -> None:
        """Answer the next requests with `scenarios` (in order, the last repeating)."""
        if not scenarios:
            raise ValueError("serve() needs at least one scenario")
        with self._lock:
            self._scenarios = list(scenarios)
            self._served = 0

    def wait_for_disconnect(self, timeout: float = 1.0, *, count: int = 1) -> bool:
        """Wait until `count` client disconnects were seen; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self._disconnects >= count, timeout)

    def wait_for_completed(self, count: int = 1, timeout: float = 1.0) -> bool:
        """Wait until `count` responses were sent to their end; False on timeout.

        The server counts a response once its last byte is written, which can be
        a moment after the client has read it all.
        """
        with self._lock:
            return self._lock.wait_for(lambda: self._completed >= count, timeout)

    def wait_for_requests(self, count: int = 1, timeout: float = 1.0) -> bool:
        """Wait until `count` requests arrived; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._requests) >= count, timeout)

    # ----------------------------------------------------------------- internals

    #: What answers every request of a `scripted` server (None: the scenarios do).
    _script: Callable[[RecordedRequest], WireAnswer] | None = None
    _opened = 0

    def _connection_opened(self) -> int:
        with self._lock:
            self._opened += 1
            return self._opened

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()

    def _next_scenario(
        self, request: RecordedRequest, dialect: str, fault: Fault | None = None
    ) -> tuple[Scenario, int]:
        """The scenario that answers `request`, and the number of the request (from 1).

        A `Reply` is asked for its scenario; then the fault goes in: `fault`
        (the request's header's), else this request's of `self.faults`.
        """
        with self._lock:
            self._requests.append(request)
            served = self._served
            answer = self._scenarios[min(served, len(self._scenarios) - 1)]
            self._served += 1
            self._lock.notify_all()
            number = len(self._requests)
        scenario = answer if isinstance(answer, Scenario) else answer(request)
        if fault is None and self.faults:
            fault = self.faults[min(served, len(self.faults) - 1)]
        return (scenario if fault is None else fault.apply(scenario, dialect)), number

    def _note(self, *, disconnect: bool) -> None:
        with self._lock:
            if disconnect:
                self._disconnects += 1
            else:
                self._completed += 1
            self._lock.notify_all()

    def _track(self, conn: socket.socket, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
                self._threads.add(threading.current_thread())
            else:
                self._connections.discard(conn)
                self._threads.discard(threading.current_thread())


def _make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = server
        timeout = server._idle_timeout

    return Handler


class _Handler(BaseHTTPRequestHandler):
    owner: FakeLLMServer
    protocol_version = "HTTP/1.1"
    server_version = "FakeLLM/1.0"

    def setup(self) -> None:
        super().setup()
        self.owner._track(self.connection, True)

    def handle(self) -> None:
        # A client that drops an idle keep-alive connection is no server error.
        with contextlib.suppress(OSError, _ClientGone):
            super().handle()

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.owner._track(self.connection, False)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: tests read `server.requests` instead

    def do_GET(self) -> None:
        if self.owner._script is not None:
            self._answer_scripted(self.owner._script)
            return
        self._read_body()
        if _RESUME.fullmatch(self.path.split("?", 1)[0]):
            # The AI SDK's resume (`useChat({resume: true})` on page load): no answer of
            # this server runs on after its request, so there is never one to resume.
            self._send_bytes(204, b"", "text/plain", {})
            return
        self._send_json(404, {"error": {"message": f"no route {self.path!r}", "type": "not_found"}})

    def do_POST(self) -> None:
        if self.owner._script is not None:
            self._answer_scripted(self.owner._script)
            return
        body = self._read_body()
        try:
            decoded = json.loads(body) if body else None
        except ValueError:
            decoded = None
        headers = {key.lower(): value for key, value in self.headers.items()}
        request = RecordedRequest(self.command, self.path, headers, body, decoded)
        dialect = route(self.path, decoded)
        if dialect is None:
            self._send_json(404, {"error": {"message": f"no route {self.path!r}"}})
            return
        rejection = check_request(dialect, decoded) if self.owner.check_requests else None
        if rejection is not None:
            self.owner._record(request)  # the provider refuses before any scenario plays
            self._send_rejection(dialect, rejection)
            return
        try:
            fault = _header_fault(headers)
        except ValueError as exc:
            self.owner._record(request)  # the fault asked for cannot be played: say why
            self._send_rejection(dialect, Rejection(f"{FAULT_HEADER}: {exc}"))
            return
        scenario, number = self.owner._next_scenario(request, dialect, fault)
        player = _Player(dialect, number, scenario.model)
        try:
            if scenario.http_error is not None:
                error = scenario.http_error
                content_type, data = player.http_error(
                    scenario.status, error.message, error.type, error.code
                )
                self._send_bytes(scenario.status, data, content_type, scenario.headers)
            elif scenario.body is not None or not 200 <= scenario.status < 300:
                self._send_whole(scenario)
            elif dialect == "openai-chat" and not request.stream:
                self._send_json(200, _completion(scenario), scenario.headers)
            elif not _streaming(dialect, request):
                content_type, data = player.http_error(
                    400, "this fake server answers streaming requests only (ask for a stream)"
                )
                self._send_bytes(400, data, content_type, {})
            else:
                self._stream(scenario, player)
            self.owner._note(disconnect=False)
        except _ClientGone:
            self.close_connection = True
            self.owner._note(disconnect=True)

    def _send_rejection(self, dialect: str, rejection: Rejection) -> None:
        content_type, data = dialects.http_error(
            dialect, rejection.status, rejection.message, type=rejection.type, code=rejection.code
        )
        if rejection.param is not None:  # OpenAI's `error.param` names the field
            payload = json.loads(data)
            payload["error"]["param"] = rejection.param
            data = json.dumps(payload).encode()
        try:
            self._send_bytes(rejection.status, data, content_type, {})
            self.owner._note(disconnect=False)
        except _ClientGone:
            self.close_connection = True
            self.owner._note(disconnect=True)

    # ----------------------------------------------------------------- scripted answers

    _number = 0  # this connection's, once a scripted request came on it

    def _answer_scripted(self, script: Callable[[RecordedRequest], WireAnswer]) -> None:
        body = self._read_body()
        try:
            decoded = json.loads(body) if body else None
        except ValueError:
            decoded = None
        if not self._number:
            self._number = self.owner._connection_opened()
        headers = {key.lower(): value for key, value in self.headers.items()}
        request = RecordedRequest(self.command, self.path, headers, body, decoded, self._number)
        self.owner._record(request)
        answer = script(request)
        self.close_connection = not answer.keep_alive or answer.hold or answer.then != "end"
        try:
            if answer.hold:
                self._until_client_leaves()
                return
            self._write_answer(answer)
            if answer.then == "stall":
                self._until_client_leaves()
                return
            if answer.then in ("cut", "reset") or answer.framing == "close":
                self._drop(reset=answer.then == "reset")
            self.owner._note(disconnect=False)
        except _ClientGone:
            self.close_connection = True
            self.owner._note(disconnect=True)

    def _write_answer(self, answer: WireAnswer) -> None:
        head = [f"HTTP/1.1 {answer.status} {answer.reason}"]
        head += [f"{name}: {value}" for name, value in answer.headers]
        if answer.framing == "length":
            head.append(f"Content-Length: {sum(map(len, answer.body))}")
        elif answer.framing == "chunked":
            head.append("Transfer-Encoding: chunked")
        if self.close_connection:
            head.append("Connection: close")
        self._send_raw(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        for piece in answer.body:
            if answer.pause:
                self._wait(answer.pause)
            if answer.framing == "chunked":
                if not piece:
                    continue
                piece = b"%x\r\n%s\r\n" % (len(piece), piece)
            self._send_raw(piece)
        if answer.then == "end" and answer.framing == "chunked":
            self._send_raw(b"0\r\n\r\n")

    def _send_raw(self, data: bytes) -> None:
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError as exc:
            raise _ClientGone from exc

    def _until_client_leaves(self) -> None:
        """Send nothing until the client leaves (then `_ClientGone`), bounded by `MAX_WAIT`."""
        self._wait(MAX_WAIT)

    # ----------------------------------------------------------------- writing

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(
        self, status: int, payload: JSON, headers: Mapping[str, str] | None = None
    ) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers or {})

    def _send_whole(self, scenario: Scenario) -> None:
        body = scenario.body
        if isinstance(body, str):
            data = body.encode()
        elif isinstance(body, bytes):
            data = body
        elif body is None:
            data = b""
        else:
            data = json.dumps(body).encode()
        content_type = scenario.content_type or "application/json"
        self._send_bytes(scenario.status, data, content_type, scenario.headers)

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: Mapping[str, str]
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
        except OSError as exc:
            raise _ClientGone from exc

    def _stream(self, scenario: Scenario, player: _Player) -> None:
        chunked = scenario.framing == "chunked"
        try:
            self.send_response(scenario.status)
            self.send_header("Content-Type", scenario.content_type or player.content_type)
            self.send_header("Cache-Control", "no-cache")
            for name, value in player.headers.items():
                self.send_header(name, value)
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            for name, value in scenario.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.flush()
        except OSError as exc:
            raise _ClientGone from exc
        for step in scenario.steps:
            self._wait(step.delay)
            if isinstance(step, Stall):
                self._wait(step.seconds)
            elif isinstance(step, Disconnect):
                self._drop(reset=step.reset)
                return
            else:
                self._write(player.play(step), chunked)
        if chunked:
            # Every event is out: a client that closes on the stream's own end marker
            # (as it may) before the empty last chunk has not left mid-response.
            with contextlib.suppress(_ClientGone):
                self._write(b"", chunked, last=True)
        else:
            self._drop(reset=False)

    def _write(self, data: bytes, chunked: bool, *, last: bool = False) -> None:
        if self._client_left():
            raise _ClientGone
        if chunked:
            # An empty chunk would end the body: only the last one may be empty.
            if not data and not last:
                return
            data = b"%x\r\n%s\r\n" % (len(data), data) if data else b"0\r\n\r\n"
        try:
            self.wfile.write(data)
            self.wfile.flush()
        except OSError as exc:
            raise _ClientGone from exc

    def _drop(self, *, reset: bool) -> None:
        self.close_connection = True
        sock = self.connection
        try:
            if reset:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        if reset:
            sock.close()

    def _wait(self, seconds: float) -> None:
        """Sleep up to `seconds` (bounded), noticing a client that leaves meanwhile."""
        # Infinity is asked for on purpose (a stall "forever"): only the client or stop() ends it.
        bounded = seconds if math.isinf(seconds) else min(max(seconds, 0.0), MAX_WAIT)
        deadline = time.monotonic() + bounded
        while (left := deadline - time.monotonic()) > 0:
            if self.owner._stopping.is_set():
                raise _ClientGone
            if self._client_left(min(left, _POLL)):
                raise _ClientGone

    def _client_left(self, timeout: float = 0.0) -> bool:
        sock = self.connection
        try:
            readable, _, _ = select.select([sock], [], [], timeout)
            if not readable:
                return False
            # Readable with nothing to read is the client's FIN.
            if sock.recv(1, socket.MSG_PEEK) == b"":
                return True
        except (OSError, ValueError):
            return True
        # The client sent data mid-response (not expected); do not spin on it.
        time.sleep(timeout)
        return False


#: A `--log` recording's stamp: `: t=SECONDS`, the time its event arrived after the request.
_STAMP = re.compile(r": t=(\d+(?:\.\d*)?)")


def _recorded_events(text: str) -> list[tuple[list[str], float | None]]:
    """SSE text cut into events (their lines, the blank line that ends them included),
    each with its `: t=` stamp (None: no stamp), the stamp lines taken out.

    An unended last event gets its blank line; without any stamp in `text`, even
    a lone blank line is an event of its own (sent as it is).
    """
    events: list[tuple[list[str], float | None]] = []
    stamped = False
    event: list[str] = []
    stamp: float | None = None
    for line in [*text.splitlines(), None]:
        if line is not None:
            found = _STAMP.fullmatch(line)
            if found is not None:
                stamp, stamped = float(found.group(1)), True
                continue
            event.append(line)
        if line == "" or (line is None and event):
            if line is None:
                event.append("")
            # An event that was only a stamp has nothing to send.
            if any(event) or not stamped:
                events.append((event, stamp))
            event, stamp = [], None
    return events


def _steps_of(stream: builders.ChatStream, delay: float) -> list[Step]:
    steps: list[Step] = []
    for event in stream.events():
        if event.comment is not None:
            steps.append(Comment(event.comment, delay))
        elif event.payload is not None:
            steps.append(Chunk(event.payload, delay, event.event))
        elif event.data == builders.done() and event.event is None:
            steps.append(Done(delay))
        else:
            text = "\n".join(event_lines(event.data, event=event.event)) + "\n"
            steps.append(Raw(text, delay))
    return steps


_ROUTES = (
    (re.compile(r"(/v1)?/chat/completions"), "openai-chat"),
    (re.compile(r"(/openai)?/deployments/[^/]+/chat/completions"), "openai-chat"),
    (re.compile(r"(/v1)?/responses"), "openai-responses"),
    (re.compile(r"(/v1)?/messages"), "anthropic"),
    (re.compile(r"/v1(beta)?/(projects/.+/)?models/[^/:]+:streamGenerateContent"), "gemini"),
    (re.compile(r"/v2/chat"), "cohere"),
    (re.compile(r"/api/chat"), "ollama"),
    (re.compile(r"/model/[^/]+/converse-stream"), "bedrock"),
)


#: The AI SDK's resume path (`GET {api}/{chatId}/stream`, `DefaultChatTransport`'s default).
_RESUME = re.compile(r"/api/chat/[^/]+/stream")


def route(path: str, body: JSON = None) -> str | None:
    """The dialect a request path (and, at `/api/chat`, its decoded JSON body) asks for, or None.

    `/api/chat` is Ollama's path and the AI SDK's default (`DefaultChatTransport`
    posts `{"id", "messages": [UIMessage...], "trigger", ...}` there): a body
    without `"model"` (which Ollama requires) that carries the AI SDK's
    `"trigger"` or chat `"id"`, or messages made of `"parts"`, is `"ai-sdk"`;
    any other body (none included) is Ollama's.

    >>> route("/v1/messages"), route("/v1beta/models/m:streamGenerateContent?alt=sse")
    ('anthropic', 'gemini')
    >>> route("/api/chat", {"model": "llama3.2", "messages": []})
    'ollama'
    >>> route("/api/chat", {"id": "chat-1", "messages": [], "trigger": "submit-message"})
    'ai-sdk'
    """
    bare = path.split("?", 1)[0].rstrip("/")
    for pattern, dialect in _ROUTES:
        if pattern.fullmatch(bare):
            if dialect == "ollama" and _ui_chat(body):
                return AI_SDK
            return dialect
    return None


def _ui_chat(body: JSON) -> bool:
    """Whether an `/api/chat` body is what the AI SDK's chat transport sends."""
    if not isinstance(body, dict) or "model" in body:
        return False
    if "trigger" in body or "id" in body:
        return True
    messages = body.get("messages")
    return isinstance(messages, list) and any(
        isinstance(message, dict) and "parts" in message for message in messages
    )


def _header_fault(headers: Mapping[str, str]) -> Fault | None:
    """The fault a request's `x-rxstream-fault` header scripts (None: no header).

    Raises:
        ValueError: a spec outside the fault syntax.
    """
    from ._faults import parse_fault  # it builds on this module's steps

    spec = headers.get(FAULT_HEADER)
    return None if spec is None else parse_fault(spec)


def _streaming(dialect: str, request: RecordedRequest) -> bool:
    body = request.json if isinstance(request.json, dict) else {}
    if dialect == "gemini":
        return "alt=sse" in request.path
    if dialect == "ollama":
        return body.get("stream", True) is not False  # Ollama streams unless told not to
    if dialect in ("bedrock", AI_SDK):
        return True  # the converse-stream path and the AI SDK's chat transport always stream
    return body.get("stream") is True


_CONTENT_TYPES = {
    "sse": "text/event-stream; charset=utf-8",
    "ndjson": "application/x-ndjson",
    "eventstream": "application/vnd.amazon.eventstream",
}


class _Player:
    """Turns the steps of one scenario into the bytes of one response, in one dialect.

    At `/v1/chat/completions` the OpenAI-shaped steps (`Chunk`, `Done`) go out
    as they are; in any other dialect they are decoded into deltas and
    rendered like `Say` steps, so every scenario plays in every dialect.
    """

    def __init__(self, dialect: str, number: int = 1, model: str | None = None) -> None:
        self.dialect = dialect
        #: Response headers the dialect's clients look for (beside the content type).
        self.headers: Mapping[str, str] = {}
        options: dict[str, Any] = {} if model is None else {"model": model}
        if dialect == AI_SDK:
            # A new messageId per answer: the client keys its UI messages by it.
            self._renderer = dialects.renderer(dialect, id=f"msg-fake-{number}", **options)
            self.headers = AI_SDK_HEADERS
        else:
            self._renderer = dialects.renderer(dialect, **options)
        self.wire: str = self._renderer.wire
        self.content_type = _CONTENT_TYPES[self.wire]
        self._literal = dialect == "openai-chat"
        self._decoder = DeltaDecoder()

    def play(self, step: Step) -> bytes:
        renderer = self._renderer
        match step:
            case Raw():
                return step.encode()
            case Comment():
                return step.encode() if self.wire == "sse" else b""
            case Keepalive():
                return self._keepalive()
            case Chunk() | Done() if self._literal:
                return step.encode()
            case Chunk(payload=payload, event=event):
                if not isinstance(payload, dict):
                    return self._bytes(renderer.error(provider_error(payload, data="")))
                if event == "error" or payload.get("error") is not None:
                    error = provider_error(payload, data=json.dumps(payload), event=event or "")
                    return self._bytes(renderer.error(error))
                items: list[Wire] = []
                for delta in self._decoder.feed(ChatChunk(payload)):
                    items += renderer.feed(delta)
                return self._bytes(items)
            case Done() | End():
                return self._bytes(renderer.close())
            case Say(deltas=deltas):
                items = []
                for delta in deltas:
                    items += renderer.feed(delta)
                return self._bytes(items)
            case Fail(message=message, type=kind, code=code):
                return self._bytes(renderer.error(ProviderError(message, type=kind, code=code)))
        raise TypeError(f"a step the server cannot play: {step!r}")  # pragma: no cover

    def http_error(
        self,
        status: int,
        message: str,
        kind: str | None = None,
        code: str | int | None = None,
    ) -> tuple[str, bytes]:
        """(content type, body) of an HTTP error in this dialect's shape."""
        result: tuple[str, bytes] = dialects.http_error(
            self.dialect, status, message, type=kind, code=code
        )
        return result

    def _keepalive(self) -> bytes:
        if self.wire != "sse":
            return b""
        if self.dialect == "anthropic":
            return event_text('{"type": "ping"}', event="ping").encode()
        if self.dialect == "gemini":
            # google-genai parses every line but `data:` and blank ones as JSON.
            return self._renderer.newline.encode()
        return ("\n".join(comment_lines("keep-alive")) + "\n").encode()

    def _bytes(self, items: list[Wire]) -> bytes:
        return dialects.wire_bytes(self._renderer, items)


def _completion(scenario: Scenario) -> JSON:
    text = scenario.answer_text()
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": scenario.model or "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
