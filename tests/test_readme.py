"""README.md cannot rot: every ```python block runs, and the demo output it shows is the demo's.

(The docs' blocks run in tests/test_docs_examples.py; docs/cli.md shows the same demo output,
and says what in it varies: both are checked here.)

The convention, so the snippets stay honest for a reader: each block is complete
as printed and reads its key and base URL from the provider's usual variables
(`OPENAI_API_KEY`, `OPENAI_BASE_URL`). The test runs it as printed, `python
block.py` in a fresh interpreter, with only the environment pointing it at a local
`FakeLLMServer` (the variables `rxstream fake-server` prints: tests/support/docs_blocks.py),
and it must print the fake server's answer.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rxstream.cli import main
from rxstream.cli._fake_server import FAKE_KEY
from rxstream.testing.server import FakeLLMServer, Scenario
from tests.support.docs_blocks import fake_server_command, request_problems, run_block, run_python

README = Path(__file__).resolve().parent.parent / "README.md"
TEXT = README.read_text(encoding="utf-8")
CLI_PAGE = README.parent / "docs" / "cli.md"
PROVIDER_URL = re.compile(r"https://[\w.-]*(openai|anthropic|googleapis|cohere|amazonaws)\.com")
ANSWER = ("Hello", " from", " the", " README", " test.")


def blocks(language: str, text: str = TEXT) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


PYTHON = blocks("python")


def test_the_readme_has_python_blocks() -> None:
    assert len(PYTHON) >= 1


@pytest.mark.parametrize("code", PYTHON, ids=[f"block{i + 1}" for i in range(len(PYTHON))])
def test_a_python_block_runs_as_printed(code: str, tmp_path: Path) -> None:
    assert not PROVIDER_URL.search(code), "the URL comes from the environment, not the block"
    with FakeLLMServer(Scenario.text(*ANSWER)) as server:
        run = run_block(code, server, tmp_path)
    assert run.returncode == 0, run.describe()
    assert "Hello from the README test." in run.stdout.replace("\n", ""), run.describe()
    assert run.requests
    assert not request_problems(code, run.requests)
    for request in run.requests:
        assert request.json is not None
        assert request.json["stream"] is True
        assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"


@pytest.mark.parametrize("code", PYTHON, ids=[f"block{i + 1}" for i in range(len(PYTHON))])
def test_a_python_block_runs_against_the_fake_server_command(code: str, tmp_path: Path) -> None:
    """`rxstream fake-server`, its `export` lines pasted, then the block: the fake's answer,
    which quotes the user's message back."""
    with fake_server_command() as env:
        run = run_python(code, tmp_path, env)
    assert run.returncode == 0, run.describe()
    assert 'You said: "Hi"' in run.stdout, run.describe()


FOOTER = re.compile(
    r"-- time to first token \d+\.\d\d s · \d+\.\d tokens/s · (?P<tokens>\d+) tokens "
    r"\(reasoning (?P<reasoning>\d+), text (?P<text>\d+), tool arguments (?P<args>\d+); "
    r"counted with (?P<encoding>\w+)\) · provider usage: prompt 58, completion (?P=tokens), "
    r"reasoning (?P=reasoning), total \d+ · finish: tool_calls"
)


def demo_block(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    [shown] = [b for b in blocks("text", text) if b.startswith("rxstream demo:")]
    return shown.splitlines()


@pytest.mark.parametrize("page", [README, CLI_PAGE], ids=["README.md", "docs/cli.md"])
def test_the_demo_output_shown_is_the_demo_output(
    page: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = demo_block(page)
    capsys.readouterr()
    assert main(["demo", "--delay", "0"]) == 0
    real = capsys.readouterr().out.splitlines()
    assert shown[:-1] == real[:-1]  # everything but the footer, line for line
    shown_footer, real_footer = FOOTER.fullmatch(shown[-1]), FOOTER.fullmatch(real[-1])
    assert shown_footer is not None, shown[-1]
    if real_footer is None:  # no encoding on this install: the README says what it shows then
        assert "deltas (tokens not counted; " in real[-1]
        return
    if real_footer["encoding"] == shown_footer["encoding"]:
        assert real_footer.groupdict() == shown_footer.groupdict()


def test_what_the_docs_say_varies_is_what_the_footer_says(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    capsys.readouterr()
    assert main(["demo", "--delay", "0"]) == 0
    footer = capsys.readouterr().out.splitlines()[-1]
    for quoted in [
        "54 deltas (tokens not counted; tiktoken not installed",
        "tokens/s (provider's count)",
    ]:
        assert quoted in footer
        assert quoted in CLI_PAGE.read_text(encoding="utf-8")


def test_the_readme_commands_are_what_ci_runs() -> None:
    ci = (README.parent / ".ci" / "run").read_text()
    for command in [
        'pip install -e ".[cli]" && rxstream demo',
        'pip install -e ".[test]" && python -m pytest --full',
    ]:
        assert command in TEXT
        assert command in ci
    # The newcomer's test command is the everyday selection, printed on its own line.
    assert 'pip install -e ".[test]" && python -m pytest\n' in TEXT
