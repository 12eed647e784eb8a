"""The rxstream pytest plugin (entry point `pytest11`): `fake_llm_server` and `stream_marbles`.

Loading the plugin costs nothing beyond `pytest` itself: the server and marble
modules are imported only when a test asks for their fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .marbles import StreamMarbles
    from .server import FakeLLMServer

__all__ = ["fake_llm_server", "stream_marbles"]


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
