"""The fake LLM server's request handler: reads a request, plays its answer on the socket.

`make_handler` binds the `BaseHTTPRequestHandler` subclass to one
`FakeLLMServer`, whose bookkeeping (recorded requests, disconnects, the next
scenario) it reports to. The handler routes each request, checks its body,
reads its fault header, and writes the answer: a whole body, a chunked event
stream step by step (waits, stalls and drops included), or a scripted
`WireAnswer` byte for byte, noticing a client that leaves mid-response.
"""

from __future__ import annotations

import contextlib
import json
import math
import select
import socket
import struct
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from ..core import dialects
from ._faults import Fault, parse_fault
from ._player import Player, completion
from ._routes import FAULT_HEADER, RESUME, asks_stream, route
from ._scenario import JSON, MAX_WAIT, Disconnect, RecordedRequest, Scenario, Stall, WireAnswer
from .checks import Rejection, check_request

if TYPE_CHECKING:
    from .server import FakeLLMServer

__all__ = ["make_handler"]

#: How long one look for a departed client waits, while a step waits.
_POLL = 0.02


class _ClientGone(Exception):
    """The client left (or the server stops) before the response was finished."""


def make_handler(server: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    """The handler class for `server`'s connections (it reports to `server`)."""

    class Handler(_Handler):
        owner = server
        timeout = server._idle_timeout

    return Handler


class _Handler(BaseHTTPRequestHandler):
    """One connection's handler: answers each request from the owner's scenarios or script."""

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
        if RESUME.fullmatch(self.path.split("?", 1)[0]):
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
        player = Player(dialect, number, scenario.model)
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
                self._send_json(200, completion(scenario), scenario.headers)
            elif not asks_stream(dialect, request):
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

    def _stream(self, scenario: Scenario, player: Player) -> None:
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


def _header_fault(headers: Mapping[str, str]) -> Fault | None:
    """The fault a request's `x-rxstream-fault` header scripts (None: no header).

    Raises:
        ValueError: a spec outside the fault syntax.
    """
    spec = headers.get(FAULT_HEADER)
    return None if spec is None else parse_fault(spec)
