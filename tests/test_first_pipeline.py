"""The first pipeline, as README.md and docs/getting-started.md print it, reads every dialect.

Both pages say: another provider is another dialect name, in `rs.request` and in
`rs.decode`, and everything else stays the same. Each block runs as printed
(`python block.py` in a fresh interpreter, `tests/support/docs_blocks.py`) against a local
`FakeLLMServer` that answers every dialect's path in that dialect's wire (SSE,
Ollama's NDJSON, Bedrock's binary event stream), with only its dialect name
changed, in both places and nowhere else.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rxstream.core.dialects import DIALECTS
from rxstream.testing.server import FakeLLMServer, Scenario, route
from tests.support.docs_blocks import ROOT, request_problems, run_block

ANSWER = ("Hello", " from", " the", " first", " pipeline.")

PAGES = {
    "README.md": ("## A pipeline", ROOT / "README.md"),
    "getting-started.md": ("## The first pipeline", ROOT / "docs" / "getting-started.md"),
}


def first_block(heading: str, page: Path) -> str:
    """The first ```python block under `heading` on `page`."""
    text = page.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    found = re.search(r"^```python\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    assert found is not None, f"no python block under {heading!r} in {page.name}"
    return found.group(1)


def with_dialect(code: str, dialect: str) -> str:
    """`code` with its dialect name replaced: in `rs.request` and in `rs.decode`, only."""
    assert code.count('"openai-chat"') == 2, code
    assert 'rs.request("openai-chat"' in code
    assert 'rs.decode("openai-chat")' in code
    return code.replace('"openai-chat"', f'"{dialect}"')


CASES = [(page, dialect) for page in PAGES for dialect in DIALECTS]


@pytest.mark.parametrize(
    ("page", "dialect"), CASES, ids=[f"{page}-{dialect}" for page, dialect in CASES]
)
def test_the_first_pipeline_reads_every_dialect_as_printed(
    page: str, dialect: str, tmp_path: Path
) -> None:
    code = with_dialect(first_block(*PAGES[page]), dialect)
    with FakeLLMServer(Scenario.text(*ANSWER)) as server:
        run = run_block(code, server, tmp_path)
    assert run.returncode == 0, run.describe()
    assert "Hello from the first pipeline." in run.stdout, run.describe()
    assert "fail" not in run.stdout.lower(), run.describe()
    assert [route(r.path, r.json) for r in run.requests] == [dialect]
    assert not request_problems(code, run.requests)
