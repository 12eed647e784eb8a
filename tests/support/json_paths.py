"""Run a test module on both JSON paths of `ChunkDecoder`: the standard library and `fast`.

Import the fixture into a test module (`from tests.support.json_paths import json_path`)
and every test there runs twice: once with the `fast` extra's decoder switched
off, once with it on (skipped when msgspec is not installed). Both paths must
give the same chunks and the same errors.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import rxstream._fast as fast
from tests.support.fast import typed_decoding


@pytest.fixture(autouse=True, params=["stdlib", "fast"])
def json_path(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "fast" and fast.msgspec_loads is None:
        pytest.skip("the fast extra (msgspec) is not installed")
    # Read by each decoder when it is built, so the tests' decoders use json alone (stdlib).
    with typed_decoding(request.param == "fast"):
        yield str(request.param)
