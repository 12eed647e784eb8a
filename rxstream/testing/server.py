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
each request (its model, one of its tools, its tool results, the schema its
structured output asks for). Faults
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

# This module holds `FakeLLMServer` and its bookkeeping, and re-exports every public
# name of the fake server. The other parts have a module each: the scenario language
# (`_scenario`), what a request asks for (`_routes`), the rendering of steps in a
# dialect (`_player`) and the request handler that writes them (`_handler`).

from __future__ import annotations

import contextlib
import functools
import socket
import threading
from collections.abc import Callable, Iterable
from http.server import ThreadingHTTPServer

from ..core.dialects import AI_SDK
from ._echo import echo_answer
from ._faults import Fault, parse_faults
from ._handler import make_handler
from ._routes import FAULT_HEADER as FAULT_HEADER
from ._routes import SERVED, route
from ._scenario import FAKE_CREATED as FAKE_CREATED
from ._scenario import FAKE_ID as FAKE_ID
from ._scenario import JSON as JSON
from ._scenario import MAX_WAIT as MAX_WAIT
from ._scenario import (
    Chunk,
    Comment,
    Disconnect,
    Done,
    End,
    Fail,
    HTTPError,
    Keepalive,
    Raw,
    RecordedRequest,
    Reply,
    Say,
    Scenario,
    Stall,
    Step,
    WireAnswer,
)

# FAULT_HEADER, MAX_WAIT, JSON, FAKE_ID and FAKE_CREATED are imported `as` themselves:
# importable from here as they were before the split, though not in `__all__`.
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
            httpd = _Server(("127.0.0.1", self._port), make_handler(self))
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
        schema, answers a tool result with a final text, answers a request for
        structured output (`rs.request(..., output=...)`, in the dialect's own
        field) with JSON valid for its schema, and quotes the user otherwise;
        `faults` as for the constructor.

        Example:
            >>> with FakeLLMServer.echoing(faults=["429", "ok"]) as server:  # doctest: +SKIP
            ...     rs.chat(client, "anthropic", model="claude-haiku-4-5", messages=[...])
        """
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
