"""The rxstream command, run as a subprocess (plain output, a pty, Ctrl-C, failures)."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rxstream.testing.server import FakeLLMServer, Scenario, Stall

DATA = Path(__file__).parent.parent / "data"
KEY = "sk-test-0123456789abcdef-secret"
TIMEOUT = 30.0


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    clean.pop("TERM", None)
    return {**clean, "PYTHONIOENCODING": "utf-8", **extra}


def rxstream(*args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rxstream.cli", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env(**extra),
        check=False,
    )


def test_demo_plain_output_has_every_part() -> None:
    done = rxstream("demo", "--delay", "0")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "\x1b[" not in out  # not a terminal: no colours, no redraw
    assert "thinking: The user wants the current weather in two cities." in out
    assert "answer: Let me check the weather in Paris and Tokyo for you." in out
    assert 'tool call: get_weather (call_paris) {"city": "Paris", "unit": "celsius"}' in out
    assert 'tool call: get_weather (call_tokyo) {"city": "Tokyo", "unit": "celsius"}' in out
    footer = out.strip().splitlines()[-1]
    for part in ("time to first token", "/s", "provider usage: prompt 58", "finish: tool_calls"):
        assert part in footer


def test_demo_log_holds_every_frame_and_replays_the_same(tmp_path: Path) -> None:
    log = tmp_path / "demo.sse"
    demo = rxstream("demo", "--delay", "0", "--log", str(log))
    assert demo.returncode == 0, demo.stderr
    frames = [line for line in log.read_text().splitlines() if line.startswith("data: ")]
    assert frames[-1] == "data: [DONE]"
    assert len(frames) > 40
    replay = rxstream("replay", str(log))
    assert replay.returncode == 0, replay.stderr
    # The same view of the same frames: all but the title lines and the timed footer.
    assert replay.stdout.splitlines()[1:-1] == demo.stdout.splitlines()[2:-1]


def test_replay_json_prints_one_object_per_delta() -> None:
    done = rxstream("replay", str(DATA / "openai" / "chat-text-usage.sse"), "--json")
    assert done.returncode == 0, done.stderr
    items = [json.loads(line) for line in done.stdout.splitlines()]
    assert items
    assert all(set(item) >= {"type", "choice"} for item in items)
    assert {"type": "finish", "reason": "stop", "choice": 0, "raw": "stop"} in items
    assert items[-1]["type"] == "usage"
    text = "".join(item["text"] for item in items if item["type"] == "text")
    assert text
    assert items[0] == {"type": "text", "text": items[0]["text"], "choice": 0}


def test_replay_of_a_provider_error_fixture_fails_in_one_line() -> None:
    done = rxstream("replay", str(DATA / "groq" / "error-event-tool-use-failed.sse"))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("rxstream: error: provider error")


def test_chat_streams_and_never_prints_the_key() -> None:
    with FakeLLMServer(Scenario.text("Hel", "lo, you")) as server:
        done = rxstream(
            "chat", "hi there", "--model", "m1", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY
        )
        request = server.requests[0]
    assert done.returncode == 0, done.stderr
    assert "answer: Hello, you" in done.stdout
    assert KEY not in done.stdout + done.stderr
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json["model"] == "m1"
    assert request.json["messages"] == [{"role": "user", "content": "hi there"}]
    assert request.json["stream"] is True


def test_chat_base_url_option_wins() -> None:
    with FakeLLMServer(Scenario.text("ok")) as server:
        done = rxstream(
            "chat",
            "x",
            "--base-url",
            server.base_url,
            "--json",
            OPENAI_BASE_URL="http://127.0.0.1:9",
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0]) == {"type": "text", "text": "ok", "choice": 0}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize(
    ("scenario", "args", "needle"),
    [
        (Scenario.error(401, "Incorrect API key provided: sk-test-***"), (), "HTTP 401"),
        (None, (), "Connection refused"),
        (Scenario(steps=(Stall(5.0),)), ("--timeout", "0.3"), "timed out"),
    ],
    ids=["401", "refused", "timeout"],
)
def test_failures_are_one_clear_line(scenario: Scenario | None, args: Any, needle: str) -> None:
    if scenario is None:
        done = rxstream("chat", "x", "--base-url", f"http://127.0.0.1:{closed_port()}/v1")
    else:
        with FakeLLMServer(scenario) as server:
            done = rxstream("chat", "x", *args, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("rxstream: error: ")
    assert needle in lines[0]
    assert "Traceback" not in done.stderr
    assert KEY not in done.stdout + done.stderr
    if scenario is not None and scenario.status == 401:
        assert "Incorrect API key provided" in lines[0]


def test_debug_shows_the_traceback() -> None:
    done = rxstream("chat", "x", "--debug", "--base-url", f"http://127.0.0.1:{closed_port()}/v1")
    assert done.returncode == 1
    assert "Traceback" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("rxstream: error:")


def test_usage_errors_exit_2() -> None:
    done = rxstream("nonsense")
    assert done.returncode == 2
    missing = rxstream("replay", "/no/such/file.sse")
    assert missing.returncode == 1
    assert missing.stderr == "rxstream: error: no such file: '/no/such/file.sse'\n"


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
        os.execv(sys.executable, [sys.executable, "-m", "rxstream.cli", "demo", "--delay", "0.005"])
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
            [sys.executable, "-m", "rxstream.cli", "chat", "x", "--base-url", server.base_url],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(),
        )
        assert proc.stdout is not None
        head = read_until(proc.stdout.fileno(), b"word3", time.monotonic() + TIMEOUT)
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=TIMEOUT)
        assert server.wait_for_disconnect(timeout=5.0)
    out = (head + rest).decode()
    assert proc.returncode == 130
    assert "answer: word0 word1 word2 word3" in out
    assert "word199" not in out
    assert out.strip().splitlines()[-1].endswith("interrupted")
    assert err.decode() == "rxstream: interrupted\n"


def test_without_tiktoken_the_footer_says_deltas_were_counted() -> None:
    code = (
        "import sys; sys.modules['tiktoken'] = None\n"
        "from rxstream.cli import main; sys.exit(main(['demo', '--delay', '0']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    footer = done.stdout.strip().splitlines()[-1]
    assert "deltas (tiktoken not installed" in footer
    assert "counted deltas" in footer
    assert "provider usage: prompt 58" in footer


def test_replay_of_a_recording_larger_than_one_read(tmp_path: Path) -> None:
    # Lines crossing a 64 KiB read boundary must not be cut (deepseek's recording is 67 KB).
    done = rxstream("replay", str(DATA / "deepseek" / "reasoning-content.sse"), "--json")
    assert done.returncode == 0, done.stderr
    items = [json.loads(line) for line in done.stdout.splitlines()]
    assert {"type": "finish", "reason": "stop", "choice": 0, "raw": "stop"} in items
    assert items[-1]["completion_tokens"] == 212


def test_debug_traceback_never_prints_the_key() -> None:
    scenario = Scenario.error(401, f"Incorrect API key provided: {KEY}.")
    with FakeLLMServer(scenario) as server:
        done = rxstream(
            "chat",
            "x",
            "--model",
            "m",
            "--debug",
            "--base-url",
            server.base_url,
            OPENAI_API_KEY=KEY,
        )
    assert done.returncode == 1
    assert "Traceback" in done.stderr
    assert KEY not in done.stdout + done.stderr
