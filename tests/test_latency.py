"""Issue 6, target 4: the pipeline holds nothing back.

A server on 127.0.0.1 sends one chunk, then waits until the client's observer
has seen that chunk's delta before it sends the next one. A pipeline that held
a delta back until more bytes arrived would leave the server waiting: the
server then gives up after a generous guard, notes which chunk was held back,
and sends the rest, so the test fails with that list instead of hanging. No
time is measured or asserted; the wait only guards against a deadlock.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import reactivex
from reactivex import Observable
from reactivex import operators as ops

import rxstream as rs

#: How long the server waits for the client's reaction before it notes a held-back delta.
GUARD = 10.0
TOKENS = ["Hel", "lo", ", ", "wor", "ld", "!"]


def _event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    # No `id` (nor `model`): each chunk gives exactly one delta, which the lockstep counts.
    chunk = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


@dataclass
class LockstepServer:
    """Send one event, then wait for `reacted[i]` before sending the next one."""

    events: list[bytes]
    reacted: list[threading.Event] = field(init=False)
    held_back: list[int] = field(default_factory=list)
    sent: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reacted = [threading.Event() for _ in self.events]
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def _serve(self) -> None:
        conn, _ = self._listener.accept()
        # A client that hung up early shows in the test's own assertions.
        with conn, contextlib.suppress(OSError):
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                b"transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            )
            for i, event in enumerate(self.events):
                # Noted before sending: the client may react before sendall returns.
                self.sent.append(i)
                conn.sendall(b"%x\r\n%s\r\n" % (len(event), event))
                if not self.reacted[i].wait(GUARD):
                    self.held_back.append(i)
            done = b"data: [DONE]\n\n"
            conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))

    def close(self) -> None:
        self._thread.join(GUARD)
        self._listener.close()


@pytest.fixture
def server() -> Iterator[LockstepServer]:
    events = [_event({"role": "assistant", "content": TOKENS[0]})]
    events += [_event({"content": token}) for token in TOKENS[1:]]
    events.append(_event({}, "stop"))
    lockstep = LockstepServer(events)
    yield lockstep
    lockstep.close()


def _react(
    server: LockstepServer, seen: list[rs.Delta], ahead: list[int]
) -> Callable[[rs.Delta], None]:
    def on_next(delta: rs.Delta) -> None:
        # Each event carries exactly one delta: the i-th delta answers event i,
        # and the server must not have sent event i+1 yet (recorded, not
        # asserted here, so the verdict never depends on how Rx reports it).
        if server.sent[-1] != len(seen):
            ahead.append(len(seen))
        seen.append(delta)
        server.reacted[len(seen) - 1].set()

    return on_next


EXPECTED = [rs.TextDelta(token) for token in TOKENS] + [rs.Finish("stop")]

PIPELINES: dict[str, Callable[[Observable[str]], Observable[rs.Delta]]] = {
    "sse-chunks-deltas": reactivex.compose(rs.sse_frames(), rs.decode_chunks(), rs.deltas()),
    "with-think-tags": reactivex.compose(
        rs.sse_frames(), rs.decode_chunks(), rs.deltas(), rs.think_tags()
    ),
    "unfused": reactivex.compose(
        rs.sse_frames(), ops.map(lambda f: f), rs.decode_chunks(), rs.deltas()
    ),
}


@pytest.mark.parametrize("pipeline", PIPELINES.values(), ids=PIPELINES.keys())
def test_sync_client_each_delta_arrives_before_the_next_read(
    server: LockstepServer, pipeline: Callable[[Observable[str]], Observable[rs.Delta]]
) -> None:
    seen: list[rs.Delta] = []
    ahead: list[int] = []
    errors: list[Exception] = []
    completed: list[bool] = []
    with httpx.Client() as client:
        rs.from_request(client, "POST", server.url, json={}).pipe(pipeline).subscribe(
            _react(server, seen, ahead), errors.append, lambda: completed.append(True)
        )
    assert errors == []
    assert server.held_back == []
    assert ahead == []
    assert seen == EXPECTED
    assert completed == [True]


def test_async_client_each_delta_arrives_before_the_next_read(server: LockstepServer) -> None:
    seen: list[rs.Delta] = []
    ahead: list[int] = []

    async def main() -> None:
        done = asyncio.Event()
        async with httpx.AsyncClient() as client:
            rs.from_request(client, "POST", server.url, json={}).pipe(
                rs.sse_frames(), rs.decode_chunks(), rs.deltas()
            ).subscribe(_react(server, seen, ahead), lambda _: done.set(), done.set)
            await asyncio.wait_for(done.wait(), 4 * GUARD)

    # The server blocks in a thread, so the loop stays free to run the stream.
    asyncio.run(main())
    assert server.held_back == []
    assert ahead == []
    assert seen == EXPECTED


def test_bytes_pipeline_with_lines_holds_nothing_back(server: LockstepServer) -> None:
    """The same from raw body bytes: rs.lines() and the whole fused chain."""
    seen: list[rs.Delta] = []
    ahead: list[int] = []
    reads: list[int] = []  # how many deltas had been seen when each read began
    messages: list[rs.Message] = []

    def body() -> Iterator[bytes]:
        with httpx.Client() as client, client.stream("POST", server.url, json={}) as response:
            iterator = response.iter_raw()
            while True:
                reads.append(len(seen))
                piece = next(iterator, None)
                if piece is None:
                    return
                yield piece

    deltas = reactivex.from_iterable(body()).pipe(
        rs.lines(), rs.sse_frames(), rs.decode_chunks(), rs.deltas(), ops.share()
    )
    deltas.pipe(ops.do_action(_react(server, seen, ahead)), rs.accumulate_message()).subscribe(
        messages.append
    )
    assert server.held_back == []
    assert ahead == []
    assert seen == EXPECTED
    assert [m.content for m in messages] == ["".join(TOKENS)]
    # Reads only ever started after the deltas of everything read before.
    assert reads == sorted(reads)
    assert reads[-1] == len(EXPECTED)
