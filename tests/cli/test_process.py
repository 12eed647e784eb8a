"""The rxstream command as a real process: a pseudo-terminal, Ctrl-C, a reader that leaves early.

Everything else runs in-process (test_cli.py), where coverage sees it.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rxstream.cli._app import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED
from rxstream.testing import builders
from rxstream.testing.server import FakeLLMServer, Scenario

TIMEOUT = 30.0
COMMAND = [sys.executable, "-m", "rxstream.cli"]


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    clean.pop("TERM", None)
    return {**clean, "PYTHONIOENCODING": "utf-8", **extra}


def read_until(fd: int, needle: bytes, deadline: float) -> bytes:
    out = b""
    while needle not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
    return out


def test_the_live_view_through_a_pseudo_terminal() -> None:
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.environ.update(env(TERM="xterm-256color", COLUMNS="120"))
        os.execv(sys.executable, [*COMMAND, "demo", "--delay", "0.005"])
    out = read_until(fd, b"\x1b[?25h", time.monotonic() + TIMEOUT)  # the cursor comes back
    out += read_until(fd, b"never", time.monotonic() + 0.5)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    assert b"\x1b[2" in out  # dimmed reasoning / footer
    assert b"\x1b[1A" in out or b"\x1b[2K" in out  # redrawn in place
    text = out.decode("utf-8", "replace")
    assert "Let me check the weather" in text
    assert '{"city": "Tokyo", "unit": "celsius"}' in text
    assert "time to first token" in text


def test_ctrl_c_closes_the_connection_keeps_the_partial_answer_and_exits_130() -> None:
    slow = Scenario.text(*[f" word{i}" for i in range(200)]).paced(0.05)
    with FakeLLMServer(slow) as server:
        proc = subprocess.Popen(
            [*COMMAND, "chat", "x", "--base-url", server.base_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(OPENAI_API_KEY="sk-process-test"),  # a key: no warning line on stderr
        )
        assert proc.stdout is not None
        head = read_until(proc.stdout.fileno(), b"word3", time.monotonic() + TIMEOUT)
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=TIMEOUT)
        assert server.wait_for_disconnect(timeout=30.0)
    out = (head + rest).decode()
    assert proc.returncode == EXIT_INTERRUPTED
    assert "answer: word0 word1 word2 word3" in out
    assert "word199" not in out
    assert out.strip().splitlines()[-1].endswith("interrupted")
    assert err.decode() == "rxstream: interrupted\n"


def test_a_reader_that_leaves_early_ends_the_command_quietly(tmp_path: Path) -> None:
    # `rxstream replay FILE | head -1`: the later frames are written after the reader left.
    ids: dict[str, Any] = {"id": "chatcmpl-1", "model": "m", "created": 1}
    frames = [
        (0.0, builders.text_chunk("first", **ids)),
        (1.0, builders.text_chunk(" second", **ids)),
        (1.5, builders.finish_chunk("stop", **ids)),
    ]
    log = tmp_path / "timed.sse"
    log.write_text(
        "".join(f": t={t}\ndata: {json.dumps(chunk)}\n\n" for t, chunk in frames)
        + ": t=1.6\ndata: [DONE]\n\n"
    )
    proc = subprocess.Popen(
        [*COMMAND, "replay", str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env()
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `head -1` does after its line
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=TIMEOUT) == EXIT_BROKEN_PIPE
    assert (
        first.decode()
        == f"rxstream replay {log}: openai-chat (detected), a server-sent event stream\n"
    )
    assert err == b""  # no "Broken pipe" message, no "Exception ignored"
