"""Run an ASGI app under uvicorn on 127.0.0.1, in a thread, for the length of a test.

And the small pieces around it: an app of one `/sse` route, a body read back as SSE frames
or as rxstream items.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import reactivex
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

import rxstream as rs
from rxstream.core import wire as codec


@contextmanager
def serving(app: Any, *, sndbuf: int | None = None) -> Iterator[str]:
    """Serve `app` on a free loopback port; yield its base URL; stop it afterwards.

    `sndbuf` fixes the send buffer of the connections (they inherit the listening
    socket's), so what the kernel holds for a client that reads nothing is small.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if sndbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # log_config=None: uvicorn's loggers propagate to the root, where pytest captures them.
    config = uvicorn.Config(
        app,
        http="h11",
        ws="none",
        loop="asyncio",
        lifespan="off",
        log_level="warning",
        log_config=None,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def app_of(endpoint: Callable[[Request], Any]) -> Starlette:
    return Starlette(routes=[Route("/sse", endpoint)])


def events_of(body: bytes) -> list[rs.SSEFrame]:
    frames: list[rs.SSEFrame] = []
    reactivex.of(body).pipe(rs.lines(), rs.sse_frames()).subscribe(frames.append)
    return frames


def items_of(body: bytes) -> list[Any]:
    """The items of an rxstream-format body (the `done` event left out)."""
    return [codec.decode(json.loads(f.data)) for f in events_of(body) if f.event != "done"]
