"""The examples run as a user would run them: a fresh interpreter, exit status 0.

`PYTHONPATH` puts this checkout first, so the examples use the rxstream under
test even where another copy is installed.
"""

from __future__ import annotations

from tests.support.example_scripts import EXAMPLES, run


def test_quickstart_prints_the_streamed_text_and_the_final_message() -> None:
    result = run("quickstart.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    answer = "Reactive streams make LLM output composable."
    assert lines[0] == answer
    assert lines[1] == "final message (assistant, finish_reason='stop'):"
    assert lines[2].strip() == answer
    assert "6 completion tokens" in result.stdout
    assert result.stderr == ""


def test_quickstart_uses_a_hub_not_publish() -> None:
    source = (EXAMPLES / "quickstart.py").read_text()
    assert "rs.multicast(" in source
    assert "publish()" not in source


def test_multicast_example_feeds_four_observers_from_one_request() -> None:
    result = run("multicast_ui_logger.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "One request, three observers: a UI, a logger and a counter."
    assert lines[1].endswith("repaints for 15 text pieces")
    assert lines[2].startswith("15 words (a stand-in; pass --tiktoken for real tokens)")
    assert lines[3] == "the status line's last frame: [DONE]"
    assert lines[4] == "HTTP requests: 1"
    # The logger saw every frame, and never the key.
    assert result.stderr.count("DEBUG rxstream.example: frame:") == 19
    assert "sk-fake-EXAMPLE" not in result.stderr
    assert "'Authorization': '<redacted>'" in result.stderr
    assert "WARNING" not in result.stderr
