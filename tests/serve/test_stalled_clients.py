"""A live stream fanned out by `rs.multicast` to `sse_response` clients, one of which never reads.

The client that stalls is a real socket on 127.0.0.1 with a small receive buffer that reads
nothing until the stream is over; the server's socket buffers are small too, so the writer
for that client is soon stuck in `send`. Behind a hub its pause reaches no source: the
per-client `overflow` policy must keep that client's buffer bounded, and the other client,
which reads everything, must get every item.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from typing import Any, cast

import httpx
import pytest
from reactivex import Observable, abc
from reactivex.subject import Subject
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import rxstream as rs
from rxstream.io.multicast import Overflow
from rxstream.models import StreamEntry
from rxstream.serve import responses, sse_response
from rxstream.serve._connection import Connection
from tests.support.serve import serving

ITEMS = 400
TEXT = "x" * 2000  # 400 items of 2 kB: far more than the socket buffers on the way hold
MAXSIZE = 8


class LiveStream:
    """A hub over a subject, fed on the server's loop once both clients joined."""

    def __init__(self) -> None:
        self.subject: Subject[StreamEntry] = Subject()
        self.hub = rs.multicast(self.subject)
        self.hub.subscribe(lambda _: None)  # the server's own observer keeps the hub alive
        self.hub.connect()
        self.joined = threading.Semaphore(0)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.connections: list[Any] = []
        self.widest = 0  # the most items that ever waited for the stalled client
        self.done = threading.Event()

    def observe(self) -> Observable[StreamEntry]:
        def subscribe(
            observer: abc.ObserverBase[StreamEntry], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            subscription = self.hub.observe().subscribe(observer)
            self.joined.release()
            return subscription

        return Observable(subscribe)

    async def produce(self) -> None:
        for n in range(ITEMS):
            self.subject.on_next(StreamEntry(f"{n}-0", rs.TextDelta(f"{n} {TEXT}")))
            self.widest = max([self.widest, *(c.waiting for c in self.connections[:1])])
            await asyncio.sleep(0.001)
        self.subject.on_completed()
        self.done.set()


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch) -> LiveStream:
    stream = LiveStream()

    class Recorded(Connection):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            stream.connections.append(self)

    monkeypatch.setattr(responses, "Connection", Recorded)
    return stream


def app_for(live: LiveStream) -> Starlette:
    async def endpoint(request: Request) -> Response:
        live.loop = asyncio.get_running_loop()
        overflow = cast(Overflow, request.query_params["overflow"])
        maxsize = MAXSIZE if overflow != "block" else 10 * ITEMS
        return sse_response(
            live.observe(), dialect="rxstream", overflow=overflow, maxsize=maxsize, keepalive=0.5
        )

    return Starlette(routes=[Route("/sse", endpoint)])


def stalled_client(url: str, overflow: str) -> socket.socket:
    """A client that sends its request and reads nothing (a small receive window)."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    sock.connect((host, int(port)))
    sock.sendall(f"GET /sse?overflow={overflow} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return sock


def read_to_the_end(sock: socket.socket, timeout: float = 20.0) -> bytes:
    """Everything the server sends until it closes the connection or ends the body."""
    sock.settimeout(timeout)
    seen = b""
    while not seen.endswith(b"\r\n0\r\n\r\n"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        seen += chunk
    return seen


def body_of(raw: bytes) -> bytes:
    """The body of a chunked HTTP/1.1 response, up to where it stops."""
    rest = raw.split(b"\r\n\r\n", 1)[1]
    body = b""
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0 or len(rest) < size:
            break
        body, rest = body + rest[:size], rest[size + 2 :]
    return body


def events_of(body: bytes) -> list[bytes]:
    return [event for event in body.split(b"\n\n") if event]


def read_everything(url: str, got: list[bytes]) -> None:
    with httpx.stream("GET", f"{url}/sse?overflow=block", timeout=30) as response:
        got.append(response.read())


def run(live: LiveStream, stalled_overflow: str) -> tuple[bytes, bytes]:
    """Serve both clients, feed the stream; what the stalled client and the reader got."""
    got: list[bytes] = []
    with serving(app_for(live), sndbuf=16384) as url:
        stalled = stalled_client(url, stalled_overflow)
        assert live.joined.acquire(timeout=10)
        reader = threading.Thread(target=read_everything, args=(url, got))
        reader.start()
        assert live.joined.acquire(timeout=10)
        assert live.loop is not None
        asyncio.run_coroutine_threadsafe(live.produce(), live.loop)
        assert live.done.wait(30)
        reader.join(30)
        time.sleep(1.0)  # past the grace period (keepalive=0.5)
        raw = read_to_the_end(stalled)
        stalled.close()
    assert got, "the reading client got nothing"
    return raw, got[0]


def check_the_reader_got_everything(body: bytes) -> None:
    events = events_of(body)
    ids = [event.split(b"\n")[1] for event in events]
    assert ids == [f"id: {n}-0".encode() for n in range(ITEMS)] + [f"id: {ITEMS - 1}-0".encode()]
    assert events[-1].startswith(b"event: done")


def test_error_drops_the_stalled_client_and_the_others_get_everything(
    live: LiveStream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rxstream.serve")
    raw, body = run(live, "error")
    check_the_reader_got_everything(body)
    # Bounded: the stalled client's buffer never held more than maxsize items.
    assert live.widest <= MAXSIZE
    assert "fell 8 items behind (overflow='error')" in caplog.text
    assert "cutting its connection" in caplog.text
    # Cut: the server closed the connection (read_to_the_end returned at EOF), after a
    # prefix of the stream with nothing missing in it.
    events = events_of(body_of(raw))
    ids = [event.split(b"\n")[1] for event in events if event.startswith(b"event: text")]
    assert 0 < len(ids) < ITEMS
    assert ids == [f"id: {n}-0".encode() for n in range(len(ids))]


def test_error_lets_a_client_that_reads_again_take_what_waited_and_the_error_event(
    live: LiveStream,
) -> None:
    # The stalled client reads as soon as the stream is over, within the grace period
    # (keepalive=0.5 s): it gets its prefix, then the error event, then a clean end.
    got: list[bytes] = []
    with serving(app_for(live), sndbuf=16384) as url:
        stalled = stalled_client(url, "error")
        assert live.joined.acquire(timeout=10)
        reader = threading.Thread(target=read_everything, args=(url, got))
        reader.start()
        assert live.joined.acquire(timeout=10)
        assert live.loop is not None
        asyncio.run_coroutine_threadsafe(live.produce(), live.loop)
        while not live.connections[0].overflowed.done():
            time.sleep(0.005)
        raw = read_to_the_end(stalled)
        stalled.close()
        reader.join(30)
    check_the_reader_got_everything(got[0])
    assert raw.endswith(b"\r\n0\r\n\r\n")  # a whole response
    events = events_of(body_of(raw))
    last = json.loads(events[-1].split(b"data: ", 1)[1])
    assert last["type"] == "error"
    assert last["error"] == "BufferOverflowError"
    texts = [event for event in events if event.startswith(b"event: text")]
    assert [t.split(b"\n")[1] for t in texts] == [f"id: {n}-0".encode() for n in range(len(texts))]
    # The error event carries the id of the last item sent: where to resume from.
    assert events[-1].split(b"\n")[1] == texts[-1].split(b"\n")[1]


def test_latest_skips_the_stalled_client_ahead_and_tells_it_where_to_resume(
    live: LiveStream, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="rxstream.serve")
    raw, body = run(live, "latest")
    assert "an SSE client fell behind (overflow='latest')" in caplog.text
    check_the_reader_got_everything(body)
    assert live.widest <= MAXSIZE
    assert raw.endswith(b"\r\n0\r\n\r\n")  # a whole response, ended by the done event
    events = events_of(body_of(raw))
    notices = [n for n, event in enumerate(events) if event.startswith(b": skipped")]
    assert notices, "no skip was announced"
    ids = [
        int(event.split(b"\n")[1].removeprefix(b"id: ").split(b"-")[0])
        for event in events
        if event.startswith(b"event: text")
    ]
    assert ids == sorted(set(ids))  # in order, none twice
    assert ids[-1] == ITEMS - 1  # it ends with the newest items
    assert events[-1].startswith(b"event: done")
    # Each notice names the id of the event right before it, and counts the gap after it.
    for n in notices:
        before = events[n - 1].split(b"\n")[1].removeprefix(b"id: ")
        after = int(events[n + 1].split(b"\n")[1].removeprefix(b"id: ").split(b"-")[0])
        count, _, resume = events[n].removeprefix(b": skipped ").partition(b" items; resume after ")
        assert resume == before
        assert int(before.split(b"-")[0]) + int(count) + 1 == after
