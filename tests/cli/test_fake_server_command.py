"""`rxstream fake-server` as a real process: the URL line, the printed variables, Ctrl-C,
the answer that listens to the request, and the faults."""

from __future__ import annotations

import json
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
from typing import Any

import httpx
import pytest

import rxstream as rs
from rxstream.cli import main
from rxstream.cli._fake_server import FAKE_KEY, banner, environment
from rxstream.cli._fault_help import FAULT_EXAMPLES
from rxstream.core.dialects import DIALECTS
from rxstream.testing import FAULT_HEADER, parse_fault
from rxstream.testing.checks import minimal_body
from rxstream.testing.server import FakeLLMServer
from tests.support.schema_check import problems

TIMEOUT = 30.0
COMMAND = [sys.executable, "-m", "rxstream.cli", "fake-server"]
WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 16},
    },
    "required": ["city", "unit"],
}
TOOLS = [
    {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}},
]
ASK = [{"role": "user", "content": "What's the weather in Paris and in Tokyo?"}]
QUOTE = 'You said: "What\'s the weather in Paris and in Tokyo?"'


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
        with httpx.Client() as client:
            for dialect, model in [("openai-chat", "gpt-4o-mini"), ("anthropic", "claude-x")]:
                deltas = rs.chat(client, dialect, model=model, messages=ASK, tools=TOOLS)
                message = deltas.pipe(rs.accumulate_message()).run()
                [call] = message.tool_calls
                assert call.name == "get_weather"
                assert problems(json.loads(call.arguments), WEATHER) == []
                assert message.usage is not None
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
        assert message.content == 'You said: "hi"'
        assert refused.status_code == 400
        assert "messages parameter must be provided" in refused.json()["error"]["message"]
        assert stop(process)[0] == 0


# --------------------------------------------------------------------------- it listens


def chat(port: int, dialect: str, messages: Any, fault: str | None = None, **options: Any) -> Any:
    """`rs.chat` against the command's port (the fault, if any, in the request's header)."""
    root = f"http://127.0.0.1:{port}"

    def script(request: httpx.Request) -> None:
        if fault is not None:
            request.headers[FAULT_HEADER] = fault

    with httpx.Client(timeout=TIMEOUT, event_hooks={"request": [script]}) as client:
        deltas = rs.chat(
            client,
            dialect,
            messages=messages,
            base_url=f"{root}/v1" if dialect.startswith("openai") else root,
            api_key=FAKE_KEY,
            max_tokens=100,
            **{"model": f"asked-{dialect}", **options},
        )
        return deltas.pipe(rs.accumulate_message()).run()


def test_the_command_listens_in_every_dialect() -> None:
    """The request's tools get a call of one of them, valid for its schema; no tools, a
    quote; a tool result, a final text; the model asked for is the one reported."""
    port = free_port()
    after_call = [
        *ASK,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": '{"celsius": 21}'},
    ]
    with fake_server("--port", str(port), "--delay", "0") as (process, _):
        for dialect in DIALECTS:
            called = chat(port, dialect, ASK, tools=TOOLS)
            [call] = called.tool_calls
            assert call.name == "get_weather", dialect
            assert problems(json.loads(call.arguments), WEATHER) == [], dialect
            assert chat(port, dialect, ASK).content == QUOTE, dialect
            final = chat(port, dialect, after_call, tools=TOOLS)
            assert (final.content, final.tool_calls) == ('The tool returned: {"celsius": 21}', ())
            # Where the dialect's stream names a model, it is the one asked for.
            if dialect not in ("openai-chat", "cohere", "bedrock"):
                assert called.metadata["model"] == f"asked-{dialect}", dialect
        wire = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions",
            json={**minimal_body("openai-chat"), "model": "gpt-5-mini"},
        )
        assert {json.loads(line[6:])["model"] for line in wire.text.split("\n\n")[:-2]} == {
            "gpt-5-mini"
        }
        assert stop(process)[0] == 0


def test_a_fault_sequence_from_the_flags_429_then_a_cut_then_success() -> None:
    port = free_port()
    args = (
        "--port",
        str(port),
        "--delay",
        "0",
        "--fault",
        "429:retry-after=2,cut:2",
        "--fault",
        "ok",
    )
    with fake_server(*args) as (process, shown):
        assert "request 1: HTTP 429 (Retry-After: 2)" in shown
        assert "request 2: the connection closed after 2 pieces" in shown
        assert "request 3 and after: no fault" in shown
        outcomes: list[str] = []
        for dialect in ("anthropic", "gemini", "openai-responses", "bedrock"):
            try:
                outcomes.append(chat(port, dialect, ASK).content)
            except rs.HTTPStatusError as exc:
                outcomes.append(f"HTTP {exc.status_code}, retry after {exc.retry_after:g} s")
            except (rs.TransportError, rs.TruncatedStreamError):
                outcomes.append("cut")
        assert outcomes == ["HTTP 429, retry after 2 s", "cut", QUOTE, QUOTE]
        assert stop(process)[0] == 0


@pytest.mark.parametrize(
    ("fault", "dialect", "expected"),
    [
        ("429", "cohere", (rs.HTTPStatusError, "HTTP 429")),
        ("529", "anthropic", (rs.HTTPStatusError, "Overloaded")),
        ("overloaded", "ollama", (rs.HTTPStatusError, "HTTP 503")),
        ("error:rate-limit@1", "openai-chat", (rs.ProviderError, "Rate limit exceeded")),
        ("error", "bedrock", (rs.ProviderError, "Internal server error")),
        ("reset:1", "gemini", (rs.TransportError, "Connection reset by peer")),
        ("cut:1", "openai-responses", (rs.TransportError, "closed the connection")),
    ],
    ids=[
        "429-cohere",
        "529-anthropic",
        "overloaded-ollama",
        "error-openai",
        "error-bedrock",
        "reset-gemini",
        "cut-responses",
    ],
)
def test_each_fault_by_flag_and_by_header(
    fault: str, dialect: str, expected: tuple[type[Exception], str]
) -> None:
    kind, text = expected
    flag_port, header_port = free_port(), free_port()
    with (
        fake_server("--port", str(flag_port), "--delay", "0", "--fault", fault) as (flagged, _),
        fake_server("--port", str(header_port), "--delay", "0") as (plain, _),
    ):
        for port, header in ((flag_port, None), (header_port, fault)):
            with pytest.raises(kind, match=text):
                chat(port, dialect, ASK, fault=header)
        assert chat(header_port, dialect, ASK).content == QUOTE  # no header: no fault
        for process in (flagged, plain):
            assert stop(process)[0] == 0


def test_a_stall_by_header_outlasts_the_clients_timeout() -> None:
    port = free_port()
    with fake_server("--port", str(port), "--delay", "0") as (process, _):
        root = f"http://127.0.0.1:{port}"
        request = rs.request("anthropic", model="m", messages=ASK, base_url=root, api_key="k")
        request.headers[FAULT_HEADER] = "stall:forever@1"
        with httpx.Client(timeout=httpx.Timeout(TIMEOUT, read=0.5)) as client:
            deltas = rs.from_request(client, request).pipe(rs.sse_frames(), rs.decode("anthropic"))
            with pytest.raises(rs.StreamError, match=r"timed out|timeout|Timeout"):
                deltas.pipe(rs.accumulate_message()).run()
        assert stop(process)[0] == 0


def test_a_bad_fault_is_an_argument_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["fake-server", "--fault", "429,explode"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "argument --fault: not a fault: 'explode'; the syntax: ok | cut:N" in err


def test_every_example_in_the_help_is_a_valid_spec() -> None:
    for spec, _ in FAULT_EXAMPLES:
        assert parse_fault(spec).spec == spec
