"""The example app as a user starts it: `python -m examples.fastapi_chat`, in a process of its own.

`launched(...)` runs the launcher with the test's Redis and the test's scripted
model (`REDIS_URL`, `CHAT_BASE_URL`), waits until both uvicorn workers answer
on the one port, and stops the whole process group afterwards.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class App:
    """A running launcher: its base URL, process, and the worker PIDs seen answering."""

    url: str
    process: subprocess.Popen[bytes]
    workers: set[int] = field(default_factory=set)
    log: Path = Path()

    def output(self) -> str:
        return self.log.read_text("utf-8", "replace")[-4000:]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def launched(
    *, redis_url: str, base_url: str, workers: int = 2, env: dict[str, str] | None = None
) -> Iterator[App]:
    """Run the launcher until both workers answer; yield it; stop it (and its workers)."""
    port = free_port()
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "REDIS_URL": redis_url,
        "CHAT_BASE_URL": base_url,
        "CHAT_API_KEY": "sk-test",  # the scripted model takes any key
        **(env or {}),
    }
    with tempfile.TemporaryDirectory(prefix="rxstream-chat-") as tmp:
        log = Path(tmp, "launcher.log")
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "examples.fastapi_chat",
                    "--port",
                    str(port),
                    "--workers",
                    str(workers),
                    "--log-level",
                    "warning",
                ],
                cwd=ROOT,
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: the workers are stopped with it
            )
        app = App(f"http://127.0.0.1:{port}", process, log=log)
        try:
            wait_for_workers(app, workers)
            yield app
        finally:
            stop(process)


def wait_for_workers(app: App, count: int, timeout: float = 60.0) -> None:
    """Ask /healthz on fresh connections until `count` worker PIDs answered."""
    deadline = time.monotonic() + timeout
    while len(app.workers) < count:
        if app.process.poll() is not None:
            raise RuntimeError(f"the launcher exited ({app.process.returncode}):\n{app.output()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"only workers {app.workers} answered:\n{app.output()}")
        try:
            answer = httpx.get(f"{app.url}/healthz", timeout=5)
        except httpx.TransportError:
            time.sleep(0.1)
            continue
        assert answer.status_code == 200, answer.text
        assert answer.json()["redis"] is True
        app.workers.add(int(answer.headers["x-worker-pid"]))


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (the launcher stops uvicorn, its workers and what it started), then SIGKILL."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)
