"""A scripted HTTP/1.1 server on 127.0.0.1 that puts exactly the bytes a test asks for on the wire.

`FakeLLMServer` speaks for a well-behaved chat server; the tests of honest ends,
redaction and disposal need the misbehaving ones too: a body with no framing at
all, a 200 answer with the wrong content type, a reason phrase or body that
quotes the request's own credentials back, headers and then silence, a reset.
`WireServer(answer)` calls `answer(request)` for every request and writes what
the returned `Answer` says; a connection carries one request, or more while the
answers say `keep_alive`.

Every wait is bounded and `stop()` ends every connection at once.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qsl, urlsplit

#: The longest a connection is kept open by a stalling answer.
MAX_STALL = 10.0


@dataclass(frozen=True)
class Request:
    """What the server received: the request line, headers (names lower-cased) and body."""

    method: str
    target: str
    headers: Mapping[str, str]
    body: bytes
    connection: int = 0  # which connection it came on (numbered from 1)

    @property
    def query(self) -> dict[str, str]:
        return dict(parse_qsl(urlsplit(self.target).query))


@dataclass(frozen=True)
class Answer:
    """What to send back.

    Attributes:
        status, reason: the status line.
        headers: response headers, in order (`Content-Type` among them, or not).
        body: the body's pieces, each written (and flushed) on its own.
        framing: `"length"` (Content-Length), `"chunked"`, or `"close"` (no
            framing: the body ends when the connection closes).
        then: after the body: `"end"` (finish properly), `"stall"` (send
            nothing more until the client leaves), `"cut"` (close without
            ending a chunked body), `"reset"` (a TCP RST).
        pause: seconds to wait before each piece.
        hold: send nothing at all, not even the status line, until the client leaves.
        keep_alive: keep the connection open for the next request (needs
            `"length"` or `"chunked"` framing and `then="end"`).
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


def sse(
    *pieces: bytes | str,
    content_type: str = "text/event-stream",
    framing: Literal["length", "chunked", "close"] = "chunked",
    then: Literal["end", "stall", "cut", "reset"] = "end",
    keep_alive: bool = False,
) -> Answer:
    """A 200 answer of `pieces` with one content type."""
    body = tuple(p.encode() if isinstance(p, str) else p for p in pieces)
    return Answer(
        headers=(("Content-Type", content_type),),
        body=body,
        framing=framing,
        then=then,
        keep_alive=keep_alive,
    )


@dataclass
class _State:
    lock: threading.Condition = field(default_factory=threading.Condition)
    requests: list[Request] = field(default_factory=list)
    disconnects: int = 0
    connections: int = 0


class WireServer:
    """Serve `answer(request)` for every request on 127.0.0.1 (a thread per connection).

    Attributes:
        url: `http://127.0.0.1:PORT/v1/chat/completions`.
        requests: what arrived so far.
        disconnects: how many clients left a stalling (or holding) answer.
    """

    def __init__(self, answer: Callable[[Request], Answer]) -> None:
        self._answer = answer
        self._state = _State()
        self._stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self._listener.settimeout(0.05)
        self._conns: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._acceptor = threading.Thread(target=self._accept, name="wire-accept", daemon=True)

    def __enter__(self) -> WireServer:
        self._acceptor.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    @property
    def requests(self) -> list[Request]:
        with self._state.lock:
            return list(self._state.requests)

    @property
    def disconnects(self) -> int:
        with self._state.lock:
            return self._state.disconnects

    def wait_for_requests(self, count: int, timeout: float) -> bool:
        """Wait until `count` requests arrived; False on timeout."""
        with self._state.lock:
            return self._state.lock.wait_for(lambda: len(self._state.requests) >= count, timeout)

    def wait_for_disconnects(self, count: int, timeout: float) -> bool:
        """Wait until `count` clients left stalling answers; False on timeout."""
        with self._state.lock:
            return self._state.lock.wait_for(lambda: self._state.disconnects >= count, timeout)

    def stop(self) -> None:
        self._stopping.set()
        self._acceptor.join(2.0)
        with self._state.lock:
            conns, threads = list(self._conns), list(self._threads)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in threads:
            thread.join(2.0)
        self._listener.close()

    # ----------------------------------------------------------------- internals

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            with self._state.lock:
                self._conns.add(conn)
                self._threads.add(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with self._state.lock:
            self._state.connections += 1
            number = self._state.connections
        try:
            while not self._stopping.is_set():
                conn.settimeout(MAX_STALL)
                request = _read_request(conn, number)
                if request is None:
                    break
                with self._state.lock:
                    self._state.requests.append(request)
                    self._state.lock.notify_all()
                answer = self._answer(request)
                self._write(conn, answer)
                if not answer.keep_alive or answer.hold or answer.then != "end":
                    break
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()
            with self._state.lock:
                self._conns.discard(conn)
                self._threads.discard(threading.current_thread())

    def _write(self, conn: socket.socket, answer: Answer) -> None:
        if answer.hold:
            self._note_leaving(conn)
            return
        head = [f"HTTP/1.1 {answer.status} {answer.reason}"]
        head += [f"{name}: {value}" for name, value in answer.headers]
        if answer.framing == "length":
            head.append(f"Content-Length: {sum(map(len, answer.body))}")
        elif answer.framing == "chunked":
            head.append("Transfer-Encoding: chunked")
        if not answer.keep_alive:
            head.append("Connection: close")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        for piece in answer.body:
            if answer.pause:
                time.sleep(answer.pause)
            if answer.framing == "chunked":
                if not piece:
                    continue
                piece = b"%x\r\n%s\r\n" % (len(piece), piece)
            conn.sendall(piece)
        if answer.then == "stall":
            self._note_leaving(conn)
            return
        if answer.then == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if answer.then == "end" and answer.framing == "chunked":
            conn.sendall(b"0\r\n\r\n")
        if answer.keep_alive:
            return
        conn.shutdown(socket.SHUT_WR)
        # Let the client read to the end before the socket goes.
        with contextlib.suppress(OSError):
            conn.settimeout(2.0)
            while conn.recv(65536):
                pass

    def _note_leaving(self, conn: socket.socket) -> None:
        if self._wait_for_client_to_leave(conn):
            with self._state.lock:
                self._state.disconnects += 1
                self._state.lock.notify_all()

    def _wait_for_client_to_leave(self, conn: socket.socket) -> bool:
        deadline = time.monotonic() + MAX_STALL
        conn.settimeout(0.05)
        while time.monotonic() < deadline and not self._stopping.is_set():
            try:
                if conn.recv(65536) == b"":
                    return True
            except TimeoutError:
                continue
            except OSError:
                return True
        return False


def _read_request(conn: socket.socket, number: int) -> Request | None:
    data = b""
    while b"\r\n\r\n" not in data:
        block = conn.recv(65536)
        if not block:
            return None
        data += block
    head, _, body = data.partition(b"\r\n\r\n")
    line, *fields = head.decode("latin-1").split("\r\n")
    method, target, _ = line.split(" ", 2)
    headers: dict[str, str] = {}
    for item in fields:
        name, _, value = item.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0") or 0)
    while len(body) < length:
        block = conn.recv(65536)
        if not block:
            break
        body += block
    return Request(method, target, headers, body, number)
