"""The Node side of the JavaScript client tests: `node`, the pinned clients installed (once)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent
HOW = (
    "the JavaScript client tests need Node 20+ and npm: apt-get install nodejs npm "
    "(Debian), then they run `npm ci` in tests/js_clients themselves"
)


def _missing(reason: str) -> None:
    # Where CI installs Node it sets RXSTREAM_REQUIRE_NODE: a skip there would hide a gap.
    if os.environ.get("RXSTREAM_REQUIRE_NODE"):
        pytest.fail(f"{reason} (RXSTREAM_REQUIRE_NODE is set)", pytrace=False)
    pytest.skip(f"{reason}: {HOW}")


@pytest.fixture(scope="session")
def node() -> str:
    """The node executable, with package-lock.json's clients installed here (`npm ci`, once)."""
    found, npm = shutil.which("node"), shutil.which("npm")
    if found is None or npm is None:
        _missing("no node or npm on PATH")
    assert found is not None
    assert npm is not None
    lock = (HERE / "package-lock.json").read_bytes()
    installed = HERE / "node_modules" / ".package-lock.json"
    stamp = HERE / "node_modules" / ".rxstream-lock"
    if not (installed.exists() and stamp.exists() and stamp.read_bytes() == lock):
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            _missing(f"npm ci failed in {HERE}: {done.stderr[-800:]}")
        stamp.write_bytes(lock)
    return found
