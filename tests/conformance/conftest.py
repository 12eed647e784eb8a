"""One `FakeLLMServer` per module, and the bytes a request to it gets."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
import pytest

from rxstream.testing.checks import minimal_body
from rxstream.testing.server import FakeLLMServer


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as running:
        yield running


def root(server: FakeLLMServer) -> str:
    """The server's root URL (each SDK appends its own API path)."""
    return f"http://127.0.0.1:{server.port}"


def body_of(server: FakeLLMServer, dialect: str) -> bytes:
    """The bytes the server answers a streaming request of `dialect` with (all of them)."""
    chunks: list[bytes] = []
    payload = minimal_body(dialect)
    # A cut stream: what arrived is what a client reads.
    with (
        httpx.stream("POST", server.url_for(dialect), json=payload) as response,
        contextlib.suppress(httpx.RemoteProtocolError),
    ):
        chunks.extend(response.iter_raw())
    return b"".join(chunks)
