"""`rxstream fake-server` as a real process: the URL line, the printed variables, Ctrl-C."""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

import rxstream as rs
from rxstream.cli import main
from rxstream.cli._fake_server import FAKE_KEY, banner, environment
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import FakeLLMServer

TIMEOUT = 30.0
COMMAND = [sys.executable, "-m", "rxstream.cli", "fake-server"]
CALLS = [("get_weather", '{"city": "Paris", "unit": "celsius"}')]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def read_banner(process: subprocess.Popen[bytes]) -> str:
    """The command's output up to its "Ctrl-C stops it." line (bounded by TIMEOUT)."""
    assert process.stdout is not None
    fd, out, deadline = process.stdout.fileno(), b"", time.monotonic() + TIMEOUT
    while b"Ctrl-C stops it." not in out:
        assert time.monotonic() < deadline, f"no banner in time: {out!r}"
        assert process.poll() is None, f"the command ended: {out!r}"
        if select.select([fd], [], [], 0.1)[0]:
            out += os.read(fd, 65536)
    return out.decode()


@contextmanager
def fake_server(*args: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    process = subprocess.Popen(
        [*COMMAND, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    try:
        yield process, read_banner(process)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=TIMEOUT)


def exported(banner: str) -> dict[str, str]:
    """The `export NAME=VALUE` lines of the banner."""
    pairs = [line.strip().removeprefix("export ") for line in banner.splitlines()]
    return dict(p.split("=", 1) for p in pairs if "=" in p and p.isascii() and p[0].isupper())


def stop(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=TIMEOUT)
    return process.returncode, out.decode() + err.decode()


def test_the_printed_variables_reach_it_for_two_dialects(monkeypatch: pytest.MonkeyPatch) -> None:
    port = free_port()
    with fake_server("--port", str(port), "--delay", "0") as (process, banner):
        assert (
            banner.splitlines()[0] == f"rxstream fake-server: listening on http://127.0.0.1:{port}"
        )
        variables = exported(banner)
        assert variables["OPENAI_BASE_URL"] == f"http://127.0.0.1:{port}/v1"
        assert variables["OLLAMA_HOST"] == f"http://127.0.0.1:{port}"
        for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "CO_API_KEY"):
            assert variables[name] == FAKE_KEY
        for name in [*variables, "GEMINI_API_KEY", "OPENAI_BASE_URL"]:
            monkeypatch.delenv(name, raising=False)
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        messages = [{"role": "user", "content": "What's the weather in Paris and in Tokyo?"}]
        with httpx.Client() as client:
            for dialect, model in [("openai-chat", "gpt-4o-mini"), ("anthropic", "claude-x")]:
                deltas = rs.chat(client, dialect, model=model, messages=messages)
                message = deltas.pipe(rs.accumulate_message()).run()
                assert message.content == "Let me check the weather in Paris and Tokyo for you."
                assert message.reasoning.startswith("The user wants the current weather")
                assert [(c.name, c.arguments) for c in message.tool_calls][:1] == CALLS
                assert len(message.tool_calls) == 2
                assert message.usage is not None
                assert message.usage.prompt_tokens == 58
        code, rest = stop(process)
    assert code == 0, rest
    assert "rxstream fake-server: stopped" in rest


def test_one_dialect_prints_its_own_variables() -> None:
    with fake_server("--dialect", "ollama") as (process, banner):
        assert "ollama's streaming path" in banner
        assert list(exported(banner)) == ["OLLAMA_HOST"]
        assert stop(process)[0] == 0


def test_a_port_in_use_is_an_error_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    with FakeLLMServer() as taken:
        port = taken.port
        assert main(["fake-server", "--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert f"127.0.0.1:{port}" in err
    assert "in use" in err


def test_the_server_binds_the_port_given() -> None:
    port = free_port()
    with FakeLLMServer(port=port) as server:
        assert server.port == port
        assert httpx.post(server.url, json=minimal_body("openai-chat")).status_code == 200
    with pytest.raises(ValueError, match="65536"):
        FakeLLMServer(port=65536)
    with pytest.raises(TypeError, match="'80'"):
        FakeLLMServer(port="80")  # type: ignore[arg-type]


def test_the_variables_cover_every_dialect_rs_request_reads() -> None:
    every = dict(environment("http://127.0.0.1:1"))
    assert every["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] == "http://127.0.0.1:1"
    assert every["AWS_BEARER_TOKEN_BEDROCK"] == FAKE_KEY
    assert every["GOOGLE_GEMINI_BASE_URL"] == "http://127.0.0.1:1"
    assert every["CO_API_URL"] == "http://127.0.0.1:1"


def test_the_output_on_the_cli_page_is_the_commands() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    [shown] = re.findall(r"```console\n\$ rxstream fake-server --port 8080\n(.*?)```", page, re.S)
    assert shown == banner("http://127.0.0.1:8080", None) + "\n"


def test_ai_sdk_prints_the_chat_api_for_use_chat() -> None:
    text = banner("http://127.0.0.1:8080", "ai-sdk")
    assert "ai-sdk's streaming path" in text
    assert 'new DefaultChatTransport({ api: "http://127.0.0.1:8080/api/chat" })' in text
    assert exported(text) == {}
    assert "DefaultChatTransport" not in banner("http://127.0.0.1:8080", "ollama")


def test_the_command_answers_use_chat_at_its_path() -> None:
    port = free_port()
    with fake_server("--dialect", "ai-sdk", "--port", str(port), "--delay", "0") as (process, _):
        url = f"http://127.0.0.1:{port}/api/chat"
        with httpx.Client() as client:
            deltas = rs.from_request(client, "POST", url, json=minimal_body("ai-sdk")).pipe(
                rs.sse_frames(), rs.decode("ai-sdk")
            )
            message = deltas.pipe(rs.accumulate_message()).run()
            refused = client.post(url, json={"id": "chat-1", "trigger": "submit-message"})
        assert message.content == "Let me check the weather in Paris and Tokyo for you."
        assert [(c.name, c.arguments) for c in message.tool_calls][:1] == CALLS
        assert refused.status_code == 400
        assert "messages parameter must be provided" in refused.json()["error"]["message"]
        assert stop(process)[0] == 0
