"""The test run's clean stop: descendants found in /proc and ended; SIGTERM tears fixtures down.

These test the test run itself (`tests/conftest.py` and its helper `tests.support.processes`),
not a module of rxstream: they live at the root of `tests/`, with the tests of the whole.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.processes import descendants, end_descendants

pytestmark = pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs Linux's /proc")

# A child that starts a grandchild and prints its pid, then both sleep.
FAMILY = textwrap.dedent(
    """
    import subprocess, sys, time
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(grandchild.pid, flush=True)
    time.sleep(600)
    """
)


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2 :].split()[0] == "Z"


def test_descendants_and_end_descendants_reach_grandchildren() -> None:
    with subprocess.Popen([sys.executable, "-c", FAMILY], stdout=subprocess.PIPE) as child:
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        assert {child.pid, grandchild} <= set(descendants())
        assert descendants(child.pid) == [grandchild]
        ended = end_descendants(grace=5.0)
        assert {child.pid, grandchild} <= set(ended)
        assert child.wait(timeout=30) is not None
        deadline = time.monotonic() + 30
        while not _gone(grandchild) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(grandchild)


def test_a_child_that_ignores_sigterm_is_killed() -> None:
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " + (
        "print('ready', flush=True); time.sleep(600)"
    )
    with subprocess.Popen([sys.executable, "-c", stubborn], stdout=subprocess.PIPE) as child:
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"
        assert child.pid in end_descendants(grace=0.2)
        assert child.wait(timeout=30) == -signal.SIGKILL


def test_sigterm_to_a_run_tears_down_and_leaves_no_process(pytester: pytest.Pytester) -> None:
    """A run stopped by SIGTERM runs its fixtures' teardown and leaves no child alive."""
    root = Path(__file__).resolve().parents[1]
    marker = pytester.path / "torn-down"
    pids = pytester.path / "pids"
    pytester.makeconftest(
        f"""
        import sys
        sys.path.insert(0, {str(root)!r})
        from tests.conftest import (
            pytest_addoption, pytest_configure, pytest_keyboard_interrupt, pytest_unconfigure,
        )
        """
    )
    pytester.makepyfile(
        test_sleepy=f"""
        import pathlib, subprocess, sys, time
        import pytest

        @pytest.fixture
        def server():
            process = subprocess.Popen([sys.executable, "-c", {FAMILY!r}], stdout=subprocess.PIPE)
            grandchild = process.stdout.readline().strip().decode()
            pathlib.Path({str(pids)!r}).write_text(f"{{process.pid}} {{grandchild}}")
            yield process
            pathlib.Path({str(marker)!r}).write_text("yes")

        def test_waits(server):
            time.sleep(600)
        """
    )
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-p", "no:rxstream"],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    try:
        deadline = time.monotonic() + 120
        while not pids.exists() and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if not pids.exists():
            run.kill()
            pytest.fail(f"the inner run never started its server: {run.communicate()[0]!r}")
        time.sleep(0.2)  # let the pid file be written whole
        started = [int(pid) for pid in pids.read_text().split()]
        run.send_signal(signal.SIGTERM)
        out, _ = run.communicate(timeout=120)
        assert marker.exists(), out.decode(errors="replace")[-2000:]
        deadline = time.monotonic() + 30
        while not all(_gone(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(_gone(pid) for pid in started), started
    finally:
        run.kill()
        run.wait()
