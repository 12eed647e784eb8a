"""The examples run as a user would run them: a fresh interpreter, exit status 0."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_quickstart_prints_the_streamed_text_and_the_final_message() -> None:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    answer = "Reactive streams make LLM output composable."
    assert lines[0] == answer
    assert lines[1] == "final message (assistant, finish_reason='stop'):"
    assert lines[2].strip() == answer
    assert "6 completion tokens" in result.stdout
    assert result.stderr == ""
