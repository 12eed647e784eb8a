"""Run a test module on both JSON paths of `ChunkDecoder`: the standard library and `fast`.

Import the fixture into a test module (`from tests.json_paths import json_path`)
and every test there runs twice: once with the `fast` extra's decoder switched
off, once with it on (skipped when msgspec is not installed). Both paths must
give the same chunks and the same errors.
"""

from __future__ import annotations

import pytest

import rxstream._fast as fast


@pytest.fixture(autouse=True, params=["stdlib", "fast"])
def json_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "stdlib":
        # Read by each decoder when it is built, so the tests' decoders use json alone.
        monkeypatch.setattr(fast, "msgspec_loads", None)
    elif fast.msgspec_loads is None:
        pytest.skip("the fast extra (msgspec) is not installed")
    return str(request.param)
