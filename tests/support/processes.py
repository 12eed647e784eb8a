"""Every process a test starts ends with the run, however the run ends.

A test that starts a server (`rxstream fake-server`, uvicorn, redis-server, node)
stops it in a `finally` or a fixture's teardown. That is not enough when the run
itself is stopped: Python's default answer to SIGTERM ends the interpreter at
once, no `finally` runs, and the children live on, orphaned. So the plugin in
`tests/conftest.py` turns SIGTERM into `KeyboardInterrupt` (pytest then tears its
fixtures down, as on Ctrl-C), and at the very end of the run, and again on any
interrupt, ends whatever descendant of the run's process is still alive: first
politely (SIGTERM), then SIGKILL after a short grace.

Descendants are found in `/proc` (Linux); elsewhere `descendants()` finds none and
only the fixtures' own teardown applies.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

__all__ = ["descendants", "end_descendants"]

_PROC = Path("/proc")


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process `/proc` shows (empty where there is no /proc)."""
    parents: dict[int, int] = {}
    if not _PROC.is_dir():
        return parents
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # it ended while we looked
            continue
        # The command name (field 2) is in parentheses and may hold spaces: split after it.
        fields = stat[stat.rfind(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
    return parents


def descendants(pid: int | None = None) -> list[int]:
    """The pids below `pid` (default: this process), children before grandchildren."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    queue = [root]
    while queue:
        below = children.get(queue.pop(0), [])
        found += below
        queue += below
    return found


def _alive(pid: int) -> bool:
    try:
        stat = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :].split()[0] != "Z"  # a zombie has ended


def end_descendants(grace: float = 2.0) -> list[int]:
    """SIGTERM every live descendant, SIGKILL those still alive after `grace` s; their pids."""
    pids = [pid for pid in descendants() if _alive(pid)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in pids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    # No waitpid here: a child's Popen object reaps it (and would read a status of 0 from a
    # child reaped behind its back); what no Popen holds is reaped when the run exits.
    return pids
