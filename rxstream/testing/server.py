"""A fake OpenAI-compatible chat server on 127.0.0.1, driven by scripted scenarios.

`FakeLLMServer` serves `POST /v1/chat/completions` over real sockets (HTTP/1.1,
chunked transfer encoding, a flush after every step), so sources, timeouts and
disposal are tested against the network stack they meet in production:

    with FakeLLMServer(Scenario.text("Hel", "lo")) as server:
        rs.from_request(client, "POST", server.url, json={"stream": True, ...})

A `Scenario` is a status, headers and a tuple of steps: `Chunk` (one `data:`
event holding a JSON chunk), `Raw` (bytes as they are), `Comment` (a keep-alive
comment), `Done` (`data: [DONE]`), `Stall` (send nothing for a while) and
`Disconnect` (drop the connection mid-stream). Every step may wait first
(`delay=`). Requests are served by the given scenarios in order, the last one
repeating.

The server records each request (`server.requests`) and notices when a client
goes away before its response is finished (`server.disconnects`,
`server.wait_for_disconnect()`), which is how tests prove that disposing a
subscription closes the connection. Every wait is bounded and `stop()` ends
everything promptly.
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import struct
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, TypeAlias

from ..core.sse import comment_lines, event_text
from . import builders

__all__ = [
    "Chunk",
    "Comment",
    "Disconnect",
    "Done",
    "FakeLLMServer",
    "Raw",
    "RecordedRequest",
    "Scenario",
    "Stall",
    "Step",
]

JSON: TypeAlias = Any

#: The id and creation time of the chunks `Scenario.text` sends.
FAKE_ID = "chatcmpl-fake"
FAKE_CREATED = 1_700_000_000

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
    """Send nothing for `seconds` (a client that leaves meanwhile is noticed)."""

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


Step: TypeAlias = Chunk | Raw | Comment | Done | Stall | Disconnect


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
    content_type: str = "text/event-stream; charset=utf-8"
    body: JSON = None
    framing: Literal["chunked", "close"] = "chunked"

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
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
        body: JSON = None,
    ) -> Scenario:
        """An HTTP error answer with an OpenAI-style JSON body (or `body` as given).

        Example:
            >>> Scenario.error(429, "slow down", headers={"Retry-After": "2"}).status
            429
        """
        if body is None:
            body = {"error": {"message": message, "type": type, "param": None, "code": code}}
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
    def from_stream(cls, stream: Any, *, delay: float = 0.0) -> Scenario:
        """A streamed answer from a `ChatStream` builder (or any SSE text), one step per event.

        Args:
            stream: a `rxstream.testing.builders.ChatStream`, or event-stream
                text (`str`) whose events are separated by blank lines.
            delay: seconds to wait before each event (see `paced` to vary it).

        Example:
            >>> from rxstream.testing.builders import ChatStream
            >>> s = Scenario.from_stream(ChatStream().text("Hi").finish().done(), delay=0.01)
            >>> len(s.steps), s.steps[0].delay
            (3, 0.01)
        """
        lines: list[str] = stream.lines() if hasattr(stream, "lines") else stream.splitlines()
        steps: list[Step] = []
        event: list[str] = []
        for line in lines:
            event.append(line)
            if line == "":
                steps.append(Raw("\n".join(event) + "\n", delay))
                event = []
        if event:
            steps.append(Raw("\n".join(event) + "\n\n", delay))
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
            steps.append(
                step if isinstance(step, Stall | Disconnect) else replace(step, delay=wait)
            )
        return replace(self, steps=tuple(steps))

    def answer_text(self) -> str:
        """The text the steps stream (for the non-streaming answer)."""
        parts: list[str] = []
        for step in self.steps:
            if isinstance(step, Chunk) and isinstance(step.payload, dict):
                for choice in step.payload.get("choices") or ():
                    content = (choice.get("delta") or {}).get("content")
                    if isinstance(content, str) and choice.get("index", 0) == 0:
                        parts.append(content)
        return "".join(parts)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the server received.

    Attributes:
        method, path: as sent (the path with its query string).
        headers: the request headers, names lower-cased.
        body: the raw body.
        json: the body decoded as JSON, or None.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: JSON

    @property
    def stream(self) -> bool:
        """Whether the request asked for a stream (`"stream": true`)."""
        return isinstance(self.json, dict) and self.json.get("stream") is True


# --------------------------------------------------------------------------- server


class _ClientGone(Exception):
    pass


class _Server(ThreadingHTTPServer):
    # The default listen backlog (5) refuses bursts of concurrent clients.
    request_queue_size = 128


class FakeLLMServer:
    """A threaded HTTP server on 127.0.0.1 (a random port) answering from scenarios.

    Args:
        scenarios: answers for successive requests; the last one repeats
            (default: `Scenario.text()`, a short text answer).
        idle_timeout: seconds an idle keep-alive connection is kept open.

    Attributes:
        base_url: `"http://127.0.0.1:PORT/v1"`, for an SDK's `base_url`.
        url: `base_url + "/chat/completions"`, for `rs.from_request`.
        requests: the `RecordedRequest`s received so far.

    Example:
        >>> with FakeLLMServer(Scenario.error(429, headers={"Retry-After": "1"})) as server:
        ...     httpx.post(server.url, json={}).status_code  # doctest: +SKIP
        429
    """

    def __init__(self, *scenarios: Scenario, idle_timeout: float = 5.0) -> None:
        self._scenarios: list[Scenario] = list(scenarios) or [Scenario.text()]
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
        """Bind to 127.0.0.1 on a free port and serve in a background thread."""
        if self._httpd is not None:
            raise RuntimeError("this FakeLLMServer is already started")
        httpd = _Server(("127.0.0.1", 0), _make_handler(self))
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

    def serve(self, *scenarios: Scenario) -> None:
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

    def wait_for_requests(self, count: int = 1, timeout: float = 1.0) -> bool:
        """Wait until `count` requests arrived; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._requests) >= count, timeout)

    # ----------------------------------------------------------------- internals

    def _next_scenario(self, request: RecordedRequest) -> Scenario:
        with self._lock:
            self._requests.append(request)
            scenario = self._scenarios[min(self._served, len(self._scenarios) - 1)]
            self._served += 1
            self._lock.notify_all()
            return scenario

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
        self._read_body()
        self._send_json(404, {"error": {"message": f"no route {self.path!r}", "type": "not_found"}})

    def do_POST(self) -> None:
        body = self._read_body()
        try:
            decoded = json.loads(body) if body else None
        except ValueError:
            decoded = None
        headers = {key.lower(): value for key, value in self.headers.items()}
        request = RecordedRequest(self.command, self.path, headers, body, decoded)
        if self.path.split("?", 1)[0].rstrip("/") != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": f"no route {self.path!r}"}})
            return
        scenario = self.owner._next_scenario(request)
        try:
            if scenario.body is not None or not 200 <= scenario.status < 300:
                self._send_whole(scenario)
            elif not request.stream:
                self._send_json(200, _completion(scenario), scenario.headers)
            else:
                self._stream(scenario)
            self.owner._note(disconnect=False)
        except _ClientGone:
            self.close_connection = True
            self.owner._note(disconnect=True)

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
        self._send_bytes(scenario.status, data, scenario.content_type, scenario.headers)

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

    def _stream(self, scenario: Scenario) -> None:
        chunked = scenario.framing == "chunked"
        try:
            self.send_response(scenario.status)
            self.send_header("Content-Type", scenario.content_type)
            self.send_header("Cache-Control", "no-cache")
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
                self._write(step.encode(), chunked)
        if chunked:
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
        deadline = time.monotonic() + min(max(seconds, 0.0), MAX_WAIT)
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


def _completion(scenario: Scenario) -> JSON:
    text = scenario.answer_text()
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "fake-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
