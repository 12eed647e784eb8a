"""Run a docs block as printed (`python block.py`), pointed at a fake server by environment alone.

A reader runs a docs block against `rxstream fake-server` by pasting the `export`
lines it prints, then `python block.py`. The docs tests do the same: the block's
text is written to a file unchanged and run in a fresh interpreter, whose
environment is this one's without any provider variable (no real key or endpoint
leaks in), plus exactly the variables `rxstream fake-server` prints for the
server's origin (`rxstream.cli._fake_server.environment`). Nothing in the block
is substituted.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rxstream.cli._fake_server import environment
from rxstream.io.requests import ENDPOINTS
from rxstream.testing.checks import check_request
from rxstream.testing.server import FakeLLMServer, RecordedRequest, route

ROOT = Path(__file__).resolve().parent.parent.parent

#: Variables a provider's SDK or `rs.request` reads: none of the test process's goes through.
PROVIDER_VARIABLE = re.compile(r"^(OPENAI|ANTHROPIC|GEMINI|GOOGLE|CO|COHERE|OLLAMA|AWS)_")

#: A block that makes its own request to a provider (rather than to a server it starts itself).
READS_PROVIDER = re.compile(
    r"rs\.(chat|request)\(|os\.environ|^\s*(import|from) (openai|anthropic)\b", re.MULTILINE
)

#: A dialect a block names, as a string (`rs.decode("anthropic")`, `rs.chat(client, "gemini")`).
NAMED_DIALECT = re.compile(rf"""["']({"|".join(ENDPOINTS)})["']""")

#: A block gets this long to run (a stalled one is a failure, not a hung suite).
TIMEOUT = 120.0


@dataclass
class BlockRun:
    """What running one block gave."""

    returncode: int
    stdout: str
    stderr: str
    requests: list[RecordedRequest]

    def describe(self) -> str:
        return (
            f"exit status {self.returncode}\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"
        )


def block_environment(origin: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This environment without provider variables, plus what `rxstream fake-server` prints.

    `PYTHONPATH` puts this checkout first, so the block imports the rxstream under test.
    """
    env = {k: v for k, v in os.environ.items() if not PROVIDER_VARIABLE.match(k)}
    env.update(environment(origin))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def run_python(code: str, directory: Path, env: Mapping[str, str]) -> BlockRun:
    """Run `code` as `python block.py` in `directory` with `env` (warnings are errors)."""
    script = directory / "block.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", script.name],
        cwd=directory,
        env=dict(env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    return BlockRun(done.returncode, done.stdout, done.stderr, [])


def run_block(
    code: str,
    server: FakeLLMServer,
    directory: Path,
    extra: Mapping[str, str] | None = None,
) -> BlockRun:
    """Run `code` against `server` (see the module's docstring); with the requests it got."""
    before = len(server.requests)
    run = run_python(code, directory, block_environment(f"http://127.0.0.1:{server.port}", extra))
    run.requests = server.requests[before:]
    return run


@contextmanager
def fake_server_command() -> Iterator[dict[str, str]]:
    """`rxstream fake-server --port 0` as a reader starts it; the environment after its `export`s.

    This environment without provider variables, plus exactly the lines the
    command printed (and `PYTHONPATH`, as `block_environment`).
    """
    process = subprocess.Popen(
        [sys.executable, "-m", "rxstream.cli", "fake-server", "--port", "0", "--delay", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={k: v for k, v in os.environ.items() if not PROVIDER_VARIABLE.match(k)},
    )
    try:
        assert process.stdout is not None
        banner, deadline = b"", time.monotonic() + TIMEOUT
        while b"Ctrl-C stops it." not in banner:
            assert time.monotonic() < deadline, f"no banner from the command: {banner!r}"
            assert process.poll() is None, f"the command ended: {banner!r}"
            if select.select([process.stdout], [], [], 0.1)[0]:
                banner += os.read(process.stdout.fileno(), 65536)
        exports = re.findall(r"^  export (\w+)=(\S+)$", banner.decode(), re.MULTILINE)
        assert exports, banner
        env = {k: v for k, v in os.environ.items() if not PROVIDER_VARIABLE.match(k)}
        env.update(exports)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        yield env
    finally:
        process.kill()
        process.communicate(timeout=TIMEOUT)


def request_problems(code: str, requests: list[RecordedRequest]) -> list[str]:
    """What is wrong with the requests a block made to the fake server (empty: nothing).

    Each request must go to a streaming path of a dialect the block names, with a
    body that provider takes (`rxstream.testing.checks`).
    """
    named = set(NAMED_DIALECT.findall(code))
    problems = []
    for request in requests:
        dialect = route(request.path)
        if dialect is None:
            problems.append(f"{request.method} {request.path}: no provider's path")
            continue
        if named and dialect not in named:
            problems.append(f"{request.path} is {dialect}'s path; the block names {sorted(named)}")
        rejection = check_request(dialect, request.json)
        if rejection is not None:
            problems.append(f"{request.path}: the provider would refuse it: {rejection.message}")
    return problems
