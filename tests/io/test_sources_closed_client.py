"""A closed client is a StreamError that says so, and shows the pattern that works.

The README's pipeline, copied with `httpx.AsyncClient` as written, subscribes
inside `async with` and leaves the block: the stream runs as a task after
`subscribe()` returned, so the client closes under it (or before it sent
anything), or the event loop ends under it. Each way must reach the observer's
`on_error` as a `TransportError` that says what happened and names the working
patterns (`await` the observable inside the block, or `rs.to_async_iterator`);
never a bare `RuntimeError`, never silence.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from reactivex.scheduler import ThreadPoolScheduler

import rxstream as rs
from rxstream.testing.server import FakeLLMServer, Scenario
from tests.support.sources import TIMEOUT, Outcome, run, tls_context

PAYLOAD = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
GUIDANCE = ("keep the client open", "await source", "rs.to_async_iterator")


@pytest.fixture
def slow_server() -> Iterator[FakeLLMServer]:
    """A text answer whose steps come 50 ms apart: a client can close mid-stream."""
    with FakeLLMServer(Scenario.text("Hel", "lo", delay=0.05)) as server:
        yield server


def says(error: BaseException | None, *words: str) -> None:
    assert isinstance(error, rs.TransportError), repr(error)
    for word in (*words, *GUIDANCE):
        assert word in str(error), (word, str(error))


def test_a_sync_client_closed_before_subscribe(slow_server: FakeLLMServer) -> None:
    client = httpx.Client(verify=tls_context())
    client.close()
    outcome = run(rs.from_request(client, "POST", slow_server.url, json=PAYLOAD))
    says(outcome.error, "closed before the request was sent", slow_server.url)
    assert outcome.items == []
    assert slow_server.requests == []


def test_a_sync_client_closed_under_a_background_stream(slow_server: FakeLLMServer) -> None:
    outcome = Outcome()
    first = threading.Event()

    def on_next(line: str) -> None:
        outcome.on_next(line)
        first.set()

    with httpx.Client(verify=tls_context()) as client:
        rs.from_request(
            client, "POST", slow_server.url, json=PAYLOAD, scheduler=ThreadPoolScheduler(1)
        ).subscribe(on_next, outcome.on_error, outcome.on_completed)
        assert first.wait(TIMEOUT)
    # The `with` block closed the client while the pool thread was reading.
    assert outcome.ended.wait(TIMEOUT)
    says(outcome.error, "client was closed while")


def readme_pipeline(client: httpx.AsyncClient, url: str, seen: list[Any]) -> None:
    """The README's pipeline, with an AsyncClient, as a user would copy it."""
    rs.from_request(client, "POST", url, json=PAYLOAD).pipe(
        rs.sse_frames(),
        rs.decode_chunks(),
        rs.deltas(),
        rs.accumulate_message(),
    ).subscribe(on_next=seen.append, on_error=seen.append, on_completed=lambda: seen.append("done"))


@pytest.mark.parametrize(
    ("inside", "words"),
    [
        (None, ("closed before the request was sent",)),  # nothing awaited in the block
        (0.08, ("client was closed while",)),  # the block ends mid-stream
    ],
    ids=["block-ends-at-once", "block-ends-mid-stream"],
)
def test_the_readme_pipeline_with_an_async_client_says_what_went_wrong(
    slow_server: FakeLLMServer, inside: float | None, words: tuple[str, ...]
) -> None:
    async def main() -> list[Any]:
        seen: list[Any] = []
        async with httpx.AsyncClient(verify=tls_context()) as client:
            readme_pipeline(client, slow_server.url, seen)
            if inside is not None:
                await asyncio.sleep(inside)
        # The program goes on (the loop keeps running): the stream ends on its own.
        for _ in range(200):
            if seen:
                break
            await asyncio.sleep(0.01)
        return seen

    seen = asyncio.run(main())
    assert len(seen) == 1, seen
    says(seen[0], *words)


# Cancelled while it connects, anyio's happy-eyeballs `connect_tcp` leaves a coroutine it
# never awaited (its own doing, not rxstream's): collected here, it is ignored here.
ANYIO_CONNECT = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


@pytest.mark.parametrize(
    "inside",
    [None, pytest.param(0.0, marks=ANYIO_CONNECT), 0.08],
    ids=["at-once", "sending", "mid-stream"],
)
def test_the_loop_ending_under_a_stream_is_an_error_not_silence(
    slow_server: FakeLLMServer, inside: float | None
) -> None:
    seen: list[Any] = []

    async def main() -> None:
        async with httpx.AsyncClient(verify=tls_context()) as client:
            readme_pipeline(client, slow_server.url, seen)
            if inside is not None:
                await asyncio.sleep(inside)
        # main returns at once: asyncio.run cancels the stream's task.

    asyncio.run(main())
    gc.collect()
    assert len(seen) == 1, seen
    error = seen[0]
    assert isinstance(error, rs.TransportError), repr(error)
    for word in ("before the request was sent", "cancelled", "client was closed"):
        if word in str(error):
            break
    else:
        raise AssertionError(str(error))
    for word in GUIDANCE:
        assert word in str(error)


def test_the_working_patterns_inside_the_block(slow_server: FakeLLMServer) -> None:
    async def main() -> tuple[rs.Message, str]:
        async with httpx.AsyncClient(verify=tls_context()) as client:
            source = rs.from_request(client, "POST", slow_server.url, json=PAYLOAD)
            message = await source.pipe(
                rs.sse_frames(), rs.decode_chunks(), rs.deltas(), rs.accumulate_message()
            )
            text = ""
            async for delta in rs.to_async_iterator(
                source.pipe(rs.sse_frames(), rs.decode_chunks(), rs.deltas())
            ):
                if isinstance(delta, rs.TextDelta):
                    text += delta.text
            return message, text

    message, text = asyncio.run(main())
    assert message.content == "Hello"
    assert text == "Hello"
