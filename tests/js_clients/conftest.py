"""The Node side of the JavaScript client tests: `node`, the pinned clients installed (once)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.node import installed_node

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def node() -> str:
    """The node executable, with this directory's locked packages installed (`npm ci`, once)."""
    return installed_node(HERE, "the JavaScript client tests")
