"""The rxstream command, run in-process through `rxstream.cli.main` (plain output, failures).

What needs a real process (a terminal, Ctrl-C, a closed pipe) is in test_process.py.
"""

from __future__ import annotations

import _thread
import importlib
import io
import json
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rxstream.cli import _app, main
from rxstream.cli._app import EXIT_BROKEN_PIPE, EXIT_ERROR, EXIT_INTERRUPTED, chat_url
from rxstream.cli._wire import Recording
from rxstream.testing import builders
from rxstream.testing.server import Chunk, FakeLLMServer, Raw, Scenario, Stall

from .conftest import Run

DATA = Path(__file__).parent.parent / "data"
KEY = "sk-test-0123456789abcdef-secret"


def test_demo_plain_output_has_every_part(rxstream: Run) -> None:
    done = rxstream("demo", "--delay", "0")
    assert done.code == 0, done.err
    out = done.out
    assert "\x1b[" not in out  # not a terminal: no colours, no redraw
    assert out.startswith("rxstream demo: a scripted answer from a local FakeLLMServer")
    assert "thinking: The user wants the current weather in two cities." in out
    assert "answer: Let me check the weather in Paris and Tokyo for you." in out
    assert 'tool call: get_weather (call_paris) {"city": "Paris", "unit": "celsius"}' in out
    assert 'tool call: get_weather (call_tokyo) {"city": "Tokyo", "unit": "celsius"}' in out
    for part in ("time to first token", "/s", "provider usage: prompt 58", "finish: tool_calls"):
        assert part in done.footer
    assert done.err == ""


def test_demo_log_holds_every_frame_and_replays_the_same(rxstream: Run, tmp_path: Path) -> None:
    log = tmp_path / "demo.sse"
    demo = rxstream("demo", "--delay", "0", "--log", str(log))
    assert demo.code == 0, demo.err
    lines = log.read_text().splitlines()
    frames = [line for line in lines if line.startswith("data: ")]
    assert frames[-1] == "data: [DONE]"
    assert len(frames) > 40
    stamps = [float(line.removeprefix(": t=")) for line in lines if line.startswith(": t=")]
    assert len(stamps) == len(frames)  # one stamp before each frame
    assert stamps == sorted(stamps)
    replay = rxstream("replay", str(log), "--fast")
    assert replay.code == 0, replay.err
    # The same view of the same frames: all but the title lines and the footer.
    assert replay.out.splitlines()[1:-1] == demo.out.splitlines()[2:-1]


def write_log(path: Path, stamps_and_frames: list[tuple[float, str]]) -> Path:
    path.write_text("".join(f": t={t:.3f}\ndata: {data}\n\n" for t, data in stamps_and_frames))
    return path


def timed_log(path: Path) -> Path:
    ids: dict[str, Any] = {"id": "chatcmpl-1", "model": "m", "created": 1}
    return write_log(
        path,
        [
            (0.0, json.dumps(builders.chunk({"role": "assistant", "content": ""}, **ids))),
            (0.25, json.dumps(builders.text_chunk("Hi", **ids))),
            (0.75, json.dumps(builders.text_chunk(" there", **ids))),
            (0.8, json.dumps(builders.finish_chunk("stop", **ids))),
            (0.81, "[DONE]"),
        ],
    )


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "paced"])
def test_replay_footer_reports_the_recorded_timings(
    rxstream: Run, tmp_path: Path, fast: bool
) -> None:
    log = timed_log(tmp_path / "timed.sse")
    done = rxstream("replay", str(log), *(["--fast"] if fast else []))
    assert done.code == 0, done.err
    assert "answer: Hi there" in done.out
    # First content at 0.25 s, last at 0.75 s: "Hi there" is two tokens (cl100k_base and
    # o200k_base alike) or, without an encoding, two deltas: 4.0 per second either way.
    assert done.footer.startswith("-- time to first token 0.25 s · 4.0 ")
    assert "finish: stop" in done.footer


def test_replay_without_stamps_uses_the_wall_clock(rxstream: Run) -> None:
    done = rxstream("replay", str(DATA / "openai" / "chat-text-usage.sse"))
    assert done.code == 0, done.err
    assert "time to first token" in done.footer
    assert "provider usage:" in done.footer


class FakeWait:
    """Stands in for the recording's wait: notes each wait instead of sleeping."""

    def __init__(self, cancel_at: int | None = None) -> None:
        self.waits: list[float] = []
        self.cancel_at = cancel_at

    def __call__(self, seconds: float) -> bool:
        self.waits.append(seconds)
        return len(self.waits) == self.cancel_at  # True: cancelled


@pytest.mark.parametrize(
    ("paced", "cancel_at", "waits", "lines"),
    [
        (True, None, [0.25, 0.75, 0.8, 0.81], 15),
        (False, None, [], 15),
        (True, 2, [0.25, 0.75], 6),  # cancelled while waiting for the 0.75 s frame
    ],
    ids=["paced", "fast", "cancelled"],
)
def test_a_recording_waits_for_each_stamp(
    tmp_path: Path, paced: bool, cancel_at: int | None, waits: list[float], lines: int
) -> None:
    recording = Recording(str(timed_log(tmp_path / "t.sse")), "sse", paced=paced)
    recording._monotonic = lambda: 100.0  # a clock that stands still: waits are the stamps
    fake = FakeWait(cancel_at)
    recording._wait = fake
    assert recording.timed
    assert recording.clock() == 0.0
    got = list(recording.pieces())
    assert fake.waits == pytest.approx(waits)
    assert len(got) == lines
    assert recording.clock() == (0.81 if cancel_at is None else 0.25)


def finished(items: list[dict[str, Any]], reason: str) -> bool:
    """Whether a JSON line says choice 0 finished with `reason` (other fields may follow)."""
    return any(
        item["type"] == "finish" and item["reason"] == reason and item["choice"] == 0
        for item in items
    )


def test_replay_json_prints_one_object_per_delta(rxstream: Run) -> None:
    done = rxstream("replay", str(DATA / "openai" / "chat-text-usage.sse"), "--json")
    assert done.code == 0, done.err
    items = [json.loads(line) for line in done.out.splitlines()]
    assert items
    assert all(set(item) >= {"type", "choice"} for item in items)
    assert finished(items, "stop")
    assert items[-1]["type"] == "usage"
    assert "".join(item["text"] for item in items if item["type"] == "text")
    assert items[0] == {
        "type": "metadata",
        "data": {"id": "chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL", "model": "gpt-4o-2024-08-06"},
        "choice": 0,
    }
    assert items[1] == {"type": "text", "text": items[1]["text"], "choice": 0}


def test_replay_of_a_recording_larger_than_one_read(rxstream: Run) -> None:
    # Lines crossing a 64 KiB read boundary must not be cut (deepseek's recording is 67 KB).
    done = rxstream("replay", str(DATA / "deepseek" / "reasoning-content.sse"), "--json")
    assert done.code == 0, done.err
    items = [json.loads(line) for line in done.out.splitlines()]
    assert finished(items, "stop")
    assert items[-1]["completion_tokens"] == 212


def test_replay_shows_a_tool_call_of_a_recording(rxstream: Run) -> None:
    done = rxstream("replay", str(DATA / "mistral" / "chat-tool-call-whole-done.sse"))
    assert done.code == 0, done.err
    assert "tool call: WeatherPlugin-GetWeather (u2ef3Udel) {" in done.out
    assert "finish: tool_calls" in done.footer


def test_chat_streams_and_never_prints_the_key(rxstream: Run) -> None:
    with FakeLLMServer(Scenario.text("Hel", "lo, you")) as server:
        done = rxstream(
            "chat", "hi there", "--model", "m1", OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY
        )
        request = server.requests[0]
        title = f"rxstream chat: m1 via {server.base_url} (openai-chat)\n"
    assert done.code == 0, done.err
    assert "answer: Hello, you" in done.out
    assert done.out.startswith(title)
    assert KEY not in done.out + done.err
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json == {
        "model": "m1",
        "messages": [{"role": "user", "content": "hi there"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def test_chat_system_message_no_usage_and_a_log(rxstream: Run, tmp_path: Path) -> None:
    log = tmp_path / "chat.sse"
    with FakeLLMServer(Scenario.text("ok", usage=False)) as server:
        done = rxstream(
            "chat",
            "x",
            "--system",
            "be brief",
            "--no-usage",
            "--log",
            str(log),
            "--model",
            "m",
            OPENAI_BASE_URL=server.base_url,
        )
        request = server.requests[0]
    assert done.code == 0, done.err
    assert request.json is not None
    assert request.json["messages"][0] == {"role": "system", "content": "be brief"}
    assert "stream_options" not in request.json
    assert "authorization" not in request.headers  # no key, no header
    assert log.read_text().count("data: ") == 4  # role, text, finish, [DONE]


def test_chat_base_url_option_wins(rxstream: Run) -> None:
    with FakeLLMServer(Scenario.text("ok")) as server:
        done = rxstream(
            "chat",
            "x",
            "--base-url",
            server.base_url,
            "--json",
            OPENAI_BASE_URL="http://127.0.0.1:9",
        )
    assert done.code == 0, done.err
    assert json.loads(done.out.splitlines()[1]) == {"type": "text", "text": "ok", "choice": 0}


@pytest.mark.parametrize(
    ("base", "url"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1/chat/completions"),
        ("https://api.openai.com/v1/", "https://api.openai.com/v1/chat/completions"),
        (
            "https://r.openai.azure.com/openai/deployments/d?api-version=2024-10-21",
            "https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21",
        ),
        ("http://127.0.0.1:8000/v1/?a=1&b=2", "http://127.0.0.1:8000/v1/chat/completions?a=1&b=2"),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/chat/completions"),
    ],
    ids=["plain", "slash", "azure", "slash-query", "root"],
)
def test_the_path_goes_before_the_query_string(base: str, url: str) -> None:
    assert chat_url(base) == url


def test_a_base_url_with_a_query_string_reaches_the_right_path(rxstream: Run) -> None:
    with FakeLLMServer(Scenario.text("ok")) as server:
        base = f"{server.base_url}?api-version=2024-10-21"
        done = rxstream("chat", "x", "--base-url", base, OPENAI_API_KEY=KEY)
        request = server.requests[0]
    assert done.code == 0, done.err
    assert request.path == "/v1/chat/completions?api-version=2024-10-21"
    assert "api-version" not in done.out  # the title shows no query string


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


IDS: dict[str, Any] = {"id": "chatcmpl-1", "model": "m", "created": 1}
PROVIDER_ERROR = 'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'


@pytest.mark.parametrize(
    ("scenario", "args", "needle"),
    [
        (Scenario.error(401, "Incorrect API key provided: sk-test-***"), (), "HTTP 401"),
        (None, (), "Connection refused"),
        (Scenario(steps=(Stall(5.0),)), ("--timeout", "0.3"), "timed out"),
        (Scenario(steps=()), (), "the stream brought no answer: an empty body"),
        (Scenario(content_type="text/html", body="<html>hi</html>"), (), "type 'text/html'"),
        (
            Scenario(content_type="text/html", steps=(Raw("<html>\r\nhi\n</html>\n"),)),
            (),
            "text/html",
        ),
        (Scenario(steps=(Raw("data: {nope\n\n"),)), (), "malformed openai-chat data (invalid JSON"),
        (
            Scenario(steps=(Chunk(builders.text_chunk("Hi", **IDS)), Raw(PROVIDER_ERROR))),
            (),
            "provider error (server_error): overloaded",
        ),
        (
            Scenario(steps=(Chunk(builders.text_chunk("Hi", **IDS)),), framing="close"),
            (),
            "ended before",
        ),
    ],
    ids=[
        "401",
        "refused",
        "timeout",
        "EmptyStreamError",
        "UnexpectedContentTypeError",
        "html-with-line-breaks",
        "MalformedChunkError",
        "ProviderError",
        "TruncatedStreamError",
    ],
)
def test_chat_failures_are_one_clear_line(
    rxstream: Run, scenario: Scenario | None, args: tuple[str, ...], needle: str
) -> None:
    if scenario is None:
        # With a key: without one, a warning line would come first (see test_chat_apis).
        done = rxstream(
            "chat", "x", "--base-url", f"http://127.0.0.1:{closed_port()}/v1", OPENAI_API_KEY=KEY
        )
    else:
        with FakeLLMServer(scenario) as server:
            done = rxstream("chat", "x", *args, OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY=KEY)
    assert done.code == EXIT_ERROR
    assert done.err.count("\n") == 1, done.err
    assert done.err.startswith("rxstream: error: ")
    assert needle in done.err
    assert "Traceback" not in done.err
    assert KEY not in done.out + done.err
    if scenario is not None and scenario.status == 401:
        assert "Incorrect API key provided" in done.err


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "provider error"),  # the groq fixture: an error event
        ("data: {nope\n\n", "malformed chunk"),
        (f"data: {json.dumps(builders.text_chunk('Hi', **IDS))}\n\n", "ended before"),
    ],
    ids=["ProviderError", "MalformedChunkError", "TruncatedStreamError"],
)
def test_replay_failures_are_one_clear_line(
    rxstream: Run, tmp_path: Path, content: str | None, needle: str
) -> None:
    if content is None:
        path = DATA / "groq" / "error-event-tool-use-failed.sse"
    else:
        path = tmp_path / "bad.sse"
        path.write_text(content)
    done = rxstream("replay", str(path))
    assert done.code == EXIT_ERROR
    assert done.err.count("\n") == 1, done.err
    assert done.err.startswith("rxstream: error: ")
    assert needle in done.err


def test_a_failure_after_some_text_keeps_it_and_the_footer(rxstream: Run, tmp_path: Path) -> None:
    path = tmp_path / "cut.sse"
    path.write_text(f"data: {json.dumps(builders.text_chunk('Partial answer', **IDS))}\n\n")
    done = rxstream("replay", str(path))
    assert done.code == EXIT_ERROR
    assert "answer: Partial answer" in done.out
    assert done.footer.startswith("-- time to first token")


def test_debug_shows_the_traceback(rxstream: Run) -> None:
    done = rxstream("chat", "x", "--debug", "--base-url", f"http://127.0.0.1:{closed_port()}/v1")
    assert done.code == EXIT_ERROR
    assert "Traceback" in done.err
    assert done.err.strip().splitlines()[-1].startswith("rxstream: error:")


def test_debug_traceback_never_prints_the_key(rxstream: Run) -> None:
    scenario = Scenario.error(401, f"Incorrect API key provided: {KEY}.")
    with FakeLLMServer(scenario) as server:
        args = ("chat", "x", "--model", "m", "--debug", "--base-url", server.base_url)
        done = rxstream(*args, OPENAI_API_KEY=KEY)
    assert done.code == EXIT_ERROR
    assert "Traceback" in done.err
    assert KEY not in done.out + done.err


def test_usage_errors(rxstream: Run) -> None:
    with pytest.raises(SystemExit) as exit_:
        rxstream("nonsense")
    assert exit_.value.code == 2
    missing = rxstream("replay", "/no/such/file.sse")
    assert missing.code == EXIT_ERROR
    assert missing.err == "rxstream: error: no such file: '/no/such/file.sse'\n"
    bad = rxstream("chat", "x", "--base-url", "ftp://user:pw@host/v1?key=1")
    assert bad.code == EXIT_ERROR
    assert bad.err == (
        "rxstream: error: the base URL must start with http:// or https://, got 'ftp://host/v1'\n"
    )


@pytest.mark.parametrize(
    ("command", "needles"),
    [
        (
            "chat",
            ["the user message to send", "--model NAME", "$OPENAI_MODEL", "Azure's"],
        ),
        ("replay", ["--fast", "recorded pace", "an event-stream file"]),
        (
            "demo",
            ["--log FILE", "--delay SECONDS", "--dialect NAME", "same in each", "FILE.timing"],
        ),
    ],
)
def test_every_argument_has_help(
    rxstream: Run, capsys: pytest.CaptureFixture[str], command: str, needles: list[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        rxstream(command, "--help")
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for needle in needles:
        assert needle in text


def test_without_tiktoken_the_footer_says_what_was_counted(
    rxstream: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    done = rxstream("demo", "--delay", "0")
    assert done.code == 0, done.err
    footer = done.footer
    assert "tokens/s (provider's count)" in footer
    assert "deltas (tokens not counted; tiktoken not installed" in footer
    # A hint that works from a checkout too (the package may not be on an index).
    assert 'pip install -e ".[tokens]" in a checkout of rxstream' in footer
    assert 'pip install "rxstream[tokens]"' in footer
    assert "provider usage: prompt 58" in footer


def test_an_unknown_encoding_is_an_error(rxstream: Run) -> None:
    # Asked for by name: it fails, instead of quietly counting deltas.
    done = rxstream("demo", "--delay", "0", "--encoding", "no_such_encoding")
    assert done.code == 1
    assert done.out == ""  # nothing ran
    assert done.err.startswith(
        "rxstream: error: --encoding no_such_encoding: "
        "unknown encoding or model name 'no_such_encoding'; tiktoken knows the encodings ["
    )


def test_without_rich_a_terminal_gets_plain_text(
    rxstream: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "rich", None)
    monkeypatch.setattr(_app, "_is_terminal", lambda out: True)
    done = rxstream("replay", str(DATA / "openai" / "chat-text-usage.sse"))
    assert done.code == 0, done.err
    assert done.err == (
        "rxstream: plain output (for the live view: "
        'pip install -e ".[cli]" in a checkout of rxstream, or pip install "rxstream[cli]")\n'
    )
    assert "answer: " in done.out


def test_a_terminal_gets_the_live_view(rxstream: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_app, "_is_terminal", lambda out: True)
    done = rxstream("demo", "--delay", "0")
    assert done.code == 0, done.err
    assert "✓ tool call get_weather" in done.out  # the live view's mark, not "tool call:"
    assert "time to first token" in done.out


@pytest.mark.parametrize("args", [("--plain",), ()], ids=["--plain", "TERM=dumb"])
def test_plain_on_a_terminal_when_asked(
    rxstream: Run, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    monkeypatch.setattr(_app, "_is_terminal", lambda out: True)
    env = {} if args else {"TERM": "dumb"}
    done = rxstream("demo", "--delay", "0", *args, **env)
    assert done.code == 0, done.err
    assert "tool call: get_weather (call_paris)" in done.out


def test_version(rxstream: Run, capsys: pytest.CaptureFixture[str]) -> None:
    from rxstream import __version__

    with pytest.raises(SystemExit) as exit_:
        rxstream("--version")
    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"rxstream {__version__}\n"


class ClosedPipe(io.StringIO):
    """A stdout whose reader has gone (`| head -1`): every write fails with EPIPE."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def fileno(self) -> int:
        raise io.UnsupportedOperation("no file descriptor")


@pytest.mark.parametrize("args", [("--json",), ()], ids=["json", "plain"])
def test_a_closed_stdout_ends_quietly_with_141(
    clean_env: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
) -> None:
    clean_env.setattr("sys.stdout", ClosedPipe())
    code = main(["replay", str(DATA / "openai" / "chat-text-usage.sse"), "--fast", *args])
    assert code == EXIT_BROKEN_PIPE == 141
    assert capsys.readouterr().err == ""


def test_ctrl_c_in_process_keeps_the_partial_answer(rxstream: Run) -> None:
    slow = Scenario.text(*[f" word{i}" for i in range(200)]).paced(0.05)
    with FakeLLMServer(slow) as server:

        def interrupt() -> None:
            if server.wait_for_requests(1, timeout=10.0):
                time.sleep(0.3)  # some words arrive first
                _thread.interrupt_main()  # what Ctrl-C does

        threading.Thread(target=interrupt, daemon=True).start()
        # A key: without one, a warning line would come first on stderr.
        done = rxstream("chat", "x", "--base-url", server.base_url, OPENAI_API_KEY=KEY)
        assert server.wait_for_disconnect(timeout=30.0)
    assert done.code == EXIT_INTERRUPTED
    assert "answer: word0" in done.out
    assert done.footer.endswith(" · interrupted")
    assert done.err == "rxstream: interrupted\n"


def test_python_dash_m(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # `python -m rxstream.cli` runs rxstream/cli/__main__.py: importing it is the same.
    monkeypatch.setattr("sys.argv", ["rxstream", "--version"])
    monkeypatch.delitem(sys.modules, "rxstream.cli.__main__", raising=False)
    with pytest.raises(SystemExit) as exit_:
        importlib.import_module("rxstream.cli.__main__")
    monkeypatch.delitem(sys.modules, "rxstream.cli.__main__", raising=False)
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith("rxstream ")


@pytest.mark.parametrize("command", ["demo", "chat"])
def test_api_is_a_hidden_deprecated_spelling_of_dialect(
    rxstream: Run, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    with pytest.raises(SystemExit):
        rxstream(command, "--help")
    assert "--api" not in capsys.readouterr().out


def test_api_still_picks_the_dialect_with_a_warning_on_stderr(rxstream: Run) -> None:
    old = rxstream("demo", "--delay", "0", "--api", "anthropic")
    new = rxstream("demo", "--delay", "0", "--dialect", "anthropic")
    assert old.code == new.code == 0
    assert old.out.splitlines()[1] == new.out.splitlines()[1] == "anthropic: POST /v1/messages"
    assert "rxstream: warning: --api is deprecated, use --dialect" in old.err
    assert new.err == ""
