"""Node for the tests that drive a JavaScript client: found, its pinned packages installed, run.

Each client directory (`tests/aisdk_client`, `tests/js_clients`) has a package.json with
exact versions and its package-lock.json; `installed_node(directory, why)` runs `npm ci`
there once per lock (a stamp in node_modules remembers which lock was installed) and
returns the `node` executable. Without Node or npm the test skips, saying how to get
them; where CI installs Node it sets RXSTREAM_REQUIRE_NODE, and a skip would hide a gap,
so it fails instead. `run_node(node, script, cases)` sends the cases as JSON on stdin and
reads JSON from stdout: one Node process for a whole matrix.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

__all__ = ["installed_node", "run_node"]


def _missing(reason: str, how: str) -> None:
    if os.environ.get("RXSTREAM_REQUIRE_NODE"):
        pytest.fail(f"{reason} (RXSTREAM_REQUIRE_NODE is set)", pytrace=False)
    pytest.skip(f"{reason}: {how}")


def installed_node(directory: Path, why: str) -> str:
    """The node executable, with `directory`'s locked packages installed (`npm ci`, once).

    `why` names the tests in the skip reason ("the AI SDK client test needs ...").
    """
    how = (
        f"{why} needs Node 20+ and npm: apt-get install nodejs npm (Debian), "
        f"then it runs `npm ci` in {directory.name} itself"
    )
    found, npm = shutil.which("node"), shutil.which("npm")
    if found is None or npm is None:
        _missing("no node or npm on PATH", how)
    assert found is not None
    assert npm is not None
    # Test workers in other processes may ask at the same time: one installs, the others wait.
    with (directory / ".npm-ci.lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        _install(directory, npm, how)
    return found


def _install(directory: Path, npm: str, how: str) -> None:
    lock = (directory / "package-lock.json").read_bytes()
    installed = directory / "node_modules" / ".package-lock.json"
    stamp = directory / "node_modules" / ".rxstream-lock"
    if not (installed.exists() and stamp.exists() and stamp.read_bytes() == lock):
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if done.returncode != 0:
            _missing(f"npm ci failed in {directory}: {done.stderr[-800:]}", how)
        stamp.write_bytes(lock)


def run_node(node: str, script: Path, cases: list[dict[str, Any]]) -> Any:
    """Run `script` with `{"cases": cases}` on stdin; what it printed, read as JSON."""
    done = subprocess.run(
        [node, str(script)],
        cwd=script.parent,
        input=json.dumps({"cases": cases}),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)
