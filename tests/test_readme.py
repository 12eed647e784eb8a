"""README.md cannot rot: every ```python block runs, and the demo output it shows is the demo's.

(The docs' blocks run in tests/test_docs_examples.py; docs/cli.md shows the same demo output,
and says what in it varies: both are checked here.)

The convention, so the snippets stay honest for a reader: each block is complete
as printed (imports, the full URL, `"stream": True`, the key read from
`OPENAI_API_KEY`). The test changes exactly one thing: the URL literal
`https://api.openai.com/v1/chat/completions` becomes a local `FakeLLMServer`'s
URL, and `OPENAI_API_KEY` is set to a fake key. The block then runs as a script
(`__name__ == "__main__"`) and must print the fake server's answer.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rxstream.cli import main
from rxstream.testing.server import FakeLLMServer, Scenario

README = Path(__file__).resolve().parent.parent / "README.md"
TEXT = README.read_text(encoding="utf-8")
CLI_PAGE = README.parent / "docs" / "cli.md"
REAL_URL = "https://api.openai.com/v1/chat/completions"
FAKE_KEY = "sk-readme-test-key"
ANSWER = ("Hello", " from", " the", " README", " test.")


def blocks(language: str, text: str = TEXT) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


PYTHON = blocks("python")


def test_the_readme_has_python_blocks() -> None:
    assert len(PYTHON) >= 1


@pytest.mark.parametrize("code", PYTHON, ids=[f"block{i + 1}" for i in range(len(PYTHON))])
def test_a_python_block_runs_as_printed(
    code: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert code.count(REAL_URL) == 1, "each block names the full URL once"
    assert '"stream": True' in code
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with FakeLLMServer(Scenario.text(*ANSWER)) as server:
        script = code.replace(REAL_URL, server.url)
        exec(compile(script, f"{README.name} ```python block", "exec"), {"__name__": "__main__"})
        requests = server.requests
    out = capsys.readouterr().out
    assert "Hello from the README test." in out.replace("\n", "")
    assert "failed" not in out
    assert requests
    for request in requests:
        assert request.json is not None
        assert request.json["stream"] is True
        assert request.headers["authorization"] == f"Bearer {FAKE_KEY}"


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
        "53 deltas (tokens not counted; tiktoken not installed",
        "tokens/s (provider's count)",
    ]:
        assert quoted in footer
        assert quoted in CLI_PAGE.read_text(encoding="utf-8")


def test_the_readme_commands_are_what_ci_runs() -> None:
    ci = (README.parent / ".ci" / "run").read_text()
    for command in [
        'pip install -e ".[cli]" && rxstream demo',
        'pip install -e ".[test]" && python -m pytest',
    ]:
        assert command in TEXT
        assert command in ci
