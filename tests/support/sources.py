"""Helpers the tests of sources and servers share: run an observable to its end, sync or async."""

from __future__ import annotations

import asyncio
import functools
import socket
import ssl
import threading
from dataclasses import dataclass, field
from typing import Any

from reactivex import Observable

from rxstream.testing.checks import minimal_body

#: The bound on every wait for something that must happen; a healthy run is far quicker (generous:
#: the CI machine runs the suite under coverage beside other work).
TIMEOUT = 30.0


@dataclass
class Outcome:
    """What an observer saw."""

    items: list[Any] = field(default_factory=list)
    error: BaseException | None = None
    completed: bool = False
    ended: threading.Event = field(default_factory=threading.Event)

    def on_next(self, item: Any) -> None:
        self.items.append(item)

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self.ended.set()

    def on_completed(self) -> None:
        self.completed = True
        self.ended.set()


def run(observable: Observable[Any]) -> Outcome:
    """Subscribe on the current thread (a sync source ends before subscribe returns)."""
    outcome = Outcome()
    observable.subscribe(outcome.on_next, outcome.on_error, outcome.on_completed)
    assert outcome.ended.is_set(), "a sync source on the default scheduler must end in subscribe"
    return outcome


async def arun(observable: Observable[Any]) -> Outcome:
    """Subscribe inside the running loop and wait (bounded) for the end."""
    outcome = Outcome()
    done = asyncio.Event()

    def on_error(error: Exception) -> None:
        outcome.on_error(error)
        done.set()

    def on_completed() -> None:
        outcome.on_completed()
        done.set()

    observable.subscribe(outcome.on_next, on_error, on_completed)
    await asyncio.wait_for(done.wait(), TIMEOUT)
    return outcome


@functools.cache
def tls_context() -> ssl.SSLContext:
    """A TLS context shared by the tests' clients."""
    return ssl.create_default_context()


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --------------------------------------------------------------------------- four ways in

#: The four ways a response reaches rxstream: a request made by the source, or a
#: response opened by the caller (`from_response`), each with a sync and an async client.
MODES = ("request", "arequest", "response", "aresponse")


def drive(
    mode: str,
    url: str,
    *,
    request: dict[str, Any] | None = None,
    source: dict[str, Any] | None = None,
    client: dict[str, Any] | None = None,
    pipe: tuple[Any, ...] = (),
) -> Outcome:
    """Run one stream of `url` the way `mode` says and return what the observer saw.

    Args:
        request: keyword arguments of the request (`json=`, `headers=`, `params=`).
        source: keyword arguments of the source (`body=`, `line_limit=`).
        client: keyword arguments of the httpx client.
        pipe: operators applied to the source.
    """
    import httpx

    import rxstream as rs

    request = {"json": minimal_body("openai-chat"), **(request or {})}
    source = source or {}
    # One TLS context for every client: making one per client costs ~0.1 s (plain
    # HTTP on 127.0.0.1 never uses it).
    client = {"verify": tls_context(), **(client or {})}
    if mode == "request":
        with httpx.Client(**client) as sync_client:
            return run(rs.from_request(sync_client, "POST", url, **request, **source).pipe(*pipe))
    if mode == "response":
        with httpx.Client(**client) as sync_client:
            send = {k: request.pop(k) for k in ("auth",) if k in request}
            opened = sync_client.send(
                sync_client.build_request("POST", url, **request), stream=True, **send
            )
            return run(rs.from_response(opened, **source).pipe(*pipe))

    async def main() -> Outcome:
        async with httpx.AsyncClient(**client) as async_client:
            if mode == "arequest":
                return await arun(
                    rs.from_request(async_client, "POST", url, **request, **source).pipe(*pipe)
                )
            send = {k: request.pop(k) for k in ("auth",) if k in request}
            opened = await async_client.send(
                async_client.build_request("POST", url, **request), stream=True, **send
            )
            return await arun(rs.from_response(opened, **source).pipe(*pipe))

    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return asyncio.run(main())
