"""The rxstream pytest plugin (entry point `pytest11`): a `fake_llm_server` fixture.

Loading the plugin costs nothing beyond `pytest` itself: the server module is
imported only when a test asks for the fixture.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .server import FakeLLMServer

__all__ = ["fake_llm_server"]


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
