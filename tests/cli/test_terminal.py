"""The live view draws right: each line once, in a real terminal too.

Issue 21: an answer taller than the terminal used to leave its content twice in the
scrollback, and Ctrl-C printed the last visible line twice. In a real terminal (tmux
runs the command at a fixed size, and `capture-pane -S -` shows what a user can scroll
back to) every piece of the answer must be there exactly once, in order, after a long
answer and after Ctrl-C, in `replay` and in `chat`, at 120x40 and at 100x15. Without
tmux those tests skip and say why; the rules they rest on (which lines are final, the
order of sections) are checked here without a terminal as well.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from rxstream.cli._app import EXIT_INTERRUPTED
from rxstream.cli._view import LiveView, _settled
from rxstream.models import Delta, Finish, ReasoningDelta, TextDelta, ToolCallDelta
from rxstream.testing import builders
from rxstream.testing.server import FakeLLMServer, Scenario

from .conftest import Run

ROOT = Path(__file__).parent.parent.parent
DATA = ROOT / "tests" / "data"
LONG = DATA / "azure" / "foundry-deepseek-v4-reasoning-matched-stop.sse"
TIMEOUT = 60.0
SIZES = [(120, 40), (100, 15)]
WORD = re.compile(r"\bword(\d+)\b")
#: `python -c` this, with a file and the command's arguments: `rxstream ARGS` as the
#: `rxstream` script runs it (`rxstream.cli.main`), its exit status written to the file.
RUN_AND_SAY_STATUS = """
import sys
from rxstream.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w") as file:
    file.write(str(code))
sys.exit(code)
"""


def _tmux_reason() -> str | None:
    """Why the terminal tests cannot run here (None: they can)."""
    if sys.platform == "win32":
        return "tmux runs on POSIX systems only"
    if shutil.which("tmux") is None:
        return "tmux is not installed (Debian: apt-get install tmux; .ci/run installs it)"
    return None


class Terminal:
    """One command in a tmux pane of a fixed size, on a tmux server of its own."""

    def __init__(self, tmp: Path, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.socket = f"rxstream-test-{uuid.uuid4().hex[:12]}"
        self.config = tmp / "tmux.conf"
        self.status = tmp / f"status-{self.socket}"
        # The pane stays after the command exits (its scrollback and exit status are
        # read then); enough history for the longest answer here.
        self.config.write_text("set -g remain-on-exit on\nset -g history-limit 50000\n")

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, "-f", str(self.config), *args],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=True,
        )
        return done.stdout

    def run(self, *args: str, **env: str) -> None:
        """Start `rxstream ARGS` in the pane (in this checkout, a clean environment)."""
        unset = [f"-u{name}" for name in ("COLUMNS", "LINES", "NO_COLOR", "TERM_PROGRAM")]
        unset += [f"-u{name}" for name in os.environ if name.startswith("OPENAI_")]
        settings = [f"{k}={v}" for k, v in {"PYTHONIOENCODING": "utf-8", **env}.items()]
        # The command's own process runs in the pane (no shell between: Ctrl-C reaches it
        # as it would from a user's shell), and leaves its exit status in a file: tmux's
        # `pane_dead_status` is sometimes never set.
        command = [
            "env",
            *unset,
            *settings,
            sys.executable,
            "-c",
            RUN_AND_SAY_STATUS,
            str(self.status),
            *args,
        ]
        self.tmux(
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            str(self.width),
            "-y",
            str(self.height),
            "-c",
            str(ROOT),
            "exec " + shlex.join(command),
        )

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def wait_for(self, pattern: str) -> None:
        """Until `pattern` (a regular expression) is on the screen."""
        deadline = time.monotonic() + TIMEOUT
        while not re.search(pattern, self.screen()):
            assert time.monotonic() < deadline, f"{pattern!r} never showed:\n{self.screen()}"
            time.sleep(0.05)

    def exit_status(self) -> int:
        """The command's exit status, once it has exited (and tmux has read all it wrote)."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            dead = self.tmux("display-message", "-p", "-t", "t", "#{pane_dead}").strip()
            said = self.status.read_text() if self.status.exists() else ""
            if dead == "1" and said:
                return int(said)
            assert time.monotonic() < deadline, f"the command did not end:\n{self.screen()}"
            time.sleep(0.05)

    def scrollback(self) -> list[str]:
        """Every line the pane holds, history first, without tmux's own note on its end."""
        lines = self.tmux("capture-pane", "-p", "-t", "t", "-S", "-").splitlines()
        text = [line.rstrip() for line in lines if not line.startswith("Pane is dead")]
        while text and not text[-1]:
            text.pop()
        return text

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, check=False)
        # The server's socket file stays behind otherwise.
        base = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
        (base / self.socket).unlink(missing_ok=True)


OpenTerminal = Callable[[int, int], Terminal]


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[OpenTerminal]:
    """`terminal(width, height)`: a tmux pane of that size (closed after the test)."""
    reason = _tmux_reason()
    if reason is not None:
        pytest.skip(reason)
    opened: list[Terminal] = []

    def open_terminal(width: int, height: int) -> Terminal:
        opened.append(Terminal(tmp_path, width, height))
        return opened[-1]

    yield open_terminal
    for each in opened:
        each.close()


def words(text: str) -> list[str]:
    return text.split()


@pytest.mark.parametrize(("width", "height"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_an_answer_taller_than_the_terminal_is_in_the_scrollback_once(
    terminal: OpenTerminal, rxstream: Run, width: int, height: int
) -> None:
    plain = rxstream("replay", str(LONG), "--fast", "--plain")
    assert plain.code == 0, plain.err
    # The answer as the plain view prints it, without its labels and footer: the same words.
    expected = [
        word
        for line in plain.out.splitlines()[1:-1]
        for word in words(line.removeprefix("answer: "))
    ]

    term = terminal(width, height)
    term.run("replay", str(LONG.relative_to(ROOT)), "--fast", TERM="xterm-256color")
    assert term.exit_status() == 0
    lines = term.scrollback()
    assert len(lines) > 2 * height  # taller than the terminal: most of it scrolled off
    assert lines[0].startswith("rxstream replay tests/data/azure/")
    begin = next(n for n, line in enumerate(lines) if line.startswith("thinking: "))
    footer = next(n for n, line in enumerate(lines) if line.startswith("time to first token"))
    shown = [word for line in lines[begin:footer] for word in words(line)]
    assert shown == expected  # each piece once, in order: nothing twice, nothing lost
    assert "finish: stop" in " ".join(lines[footer:])
    assert sum(line.startswith("time to first token") for line in lines) == 1


def timed_recording(path: Path, count: int, step: float) -> Path:
    """An OpenAI chat stream of `count` words, one every `step` seconds, as `--log` writes it."""
    ids = {"id": "chatcmpl-1", "model": "m", "created": 1}

    def event(at: float, chunk: object) -> str:
        return f": t={at:.3f}\ndata: {json.dumps(chunk)}\n\n"

    # A paragraph break now and then: blank lines are content too.
    pieces = [f" word{n}" + ("\n\n" if n % 97 == 96 else "") for n in range(count)]
    events = [event(n * step, {**builders.text_chunk(p), **ids}) for n, p in enumerate(pieces)]
    events.append(event(count * step, {**builders.finish_chunk("stop"), **ids}))
    path.write_text("".join(events) + f": t={count * step:.3f}\ndata: [DONE]\n\n")
    return path


def check_interrupted(term: Terminal, shown_before: int) -> None:
    """After Ctrl-C: exit 130, every word that arrived once and in order, the last line once."""
    assert term.exit_status() == EXIT_INTERRUPTED
    lines = term.scrollback()
    numbers = [int(n) for line in lines for n in WORD.findall(line)]
    assert len(numbers) > shown_before
    assert numbers == list(range(len(numbers))), "a word twice, or lost"
    last = next(line for line in reversed(lines) if WORD.search(line))
    assert lines.count(last) == 1
    assert sum(line.startswith("time to first token") for line in lines) == 1
    footer = next(n for n, line in enumerate(lines) if line.startswith("time to first token"))
    assert " ".join(lines[footer:]).endswith("· interrupted rxstream: interrupted")


def interrupt_after(term: Terminal, shown: int) -> None:
    """Ctrl-C once word number `shown` is on the screen (the answer is taller than it by then)."""
    term.wait_for(rf"\bword{shown}\b")
    term.tmux("send-keys", "-t", "t", "C-c")


@pytest.mark.parametrize(("width", "height"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_ctrl_c_in_replay_leaves_each_line_once(
    terminal: OpenTerminal, tmp_path: Path, width: int, height: int
) -> None:
    shown = height * 16  # more lines than the terminal has
    recording = timed_recording(tmp_path / "slow.sse", 4 * shown, 0.004)
    term = terminal(width, height)
    term.run("replay", str(recording), TERM="xterm-256color")
    interrupt_after(term, shown)
    check_interrupted(term, shown)


@pytest.mark.parametrize(("width", "height"), SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
def test_ctrl_c_in_chat_leaves_each_line_once(
    terminal: OpenTerminal, width: int, height: int
) -> None:
    shown = height * 16
    slow = Scenario.text(*[f" word{n}" for n in range(4 * shown)]).paced(0.004)
    with FakeLLMServer(slow) as server:
        term = terminal(width, height)
        term.run("chat", "x", "--base-url", server.base_url, TERM="xterm-256color")
        interrupt_after(term, shown)
        check_interrupted(term, shown)
        assert server.wait_for_disconnect(timeout=TIMEOUT)


# --------------------------------------------------------------------------- without a terminal


def wrapped(text: Text, width: int) -> list[str]:
    return [line.plain for line in text.wrap(Console(width=width), width)]


@pytest.mark.parametrize(
    ("text", "width", "final"),
    [
        ("one line", 20, ""),
        ("aaa bbb ccc ddd", 8, "aaa bbb "),
        ("one\ntwo three four", 9, "one\ntwo three "),
        ("ends a paragraph\n", 40, "ends a paragraph\n"),
        ("x" * 25, 10, "x" * 20),  # a word longer than a line is folded
        ("", 10, ""),
    ],
    ids=["one-line", "wrapped", "paragraphs", "newline-last", "folded", "empty"],
)
def test_every_line_but_the_last_is_final(text: str, width: int, final: str) -> None:
    assert _settled(Text(text), Console(width=width), width) == len(final)


@settings(max_examples=1000, deadline=None)
@given(text=st.text(alphabet="ab \n", max_size=60), width=st.integers(2, 12))
def test_what_is_final_and_the_rest_wrap_as_the_whole_does(text: str, width: int) -> None:
    # The lines printed above the region, then the region's lines, are the lines the
    # whole text wraps into: nothing twice, nothing lost, the same breaks. (Not in a
    # terminal one column wide, where a line of spaces printed alone is dropped.)
    cut = _settled(Text(text), Console(width=width), width)
    done = text[:cut].removesuffix("\n")
    above = wrapped(Text(done), width) if cut else []
    rest = wrapped(Text(text[cut:]), width)
    assert len(rest) == 1 or not "".join(rest[:-1]).strip()  # leading spaces wait for a word
    assert above + rest == wrapped(Text(text), width)


def live_output(deltas: Sequence[Delta], *, width: int = 40) -> list[str]:
    """What the live view prints (to a file: the final lines only) for `deltas`."""
    out = io.StringIO()
    view = LiveView(out, counting="c")
    view.console.width = width
    for delta in deltas:
        view.delta(delta)
        view._tick()  # as the refresh thread does, so lines settle as they come
    view.end()
    return out.getvalue().splitlines()


def test_the_live_view_prints_each_line_once() -> None:
    words = [f" word{n}" for n in range(300)]
    lines = live_output([*(TextDelta(w) for w in words), Finish("stop")])
    footer = next(n for n, line in enumerate(lines) if line.startswith("time to first token"))
    assert lines[:footer] == wrapped(Text("".join(words).lstrip()), 40)
    assert lines[-1].endswith("finish: stop")


def test_sections_are_printed_in_the_order_they_arrive() -> None:
    lines = live_output(
        [
            ReasoningDelta("First I think."),
            TextDelta("Then I say."),
            ToolCallDelta(0, '{"a": 1}', id="c1", name="f"),
            ReasoningDelta("Then I think again."),
            TextDelta("And say more."),
            Finish("tool_calls"),
        ],
        width=80,
    )
    assert lines[:5] == [
        "thinking: First I think.",
        "Then I say.",
        '✓ tool call f(c1) {"a": 1}',
        "thinking: Then I think again.",
        "And say more.",
    ]


def test_a_call_shown_whole_whose_arguments_go_on_gets_a_line_that_says_so() -> None:
    lines = live_output(
        [
            ToolCallDelta(0, '{"a": 1}', id="c1", name="f"),
            ToolCallDelta(0, " and more"),
            Finish("tool_calls"),
        ],
        width=80,
    )
    assert lines[:2] == [
        '✓ tool call f(c1) {"a": 1}',
        '✗ tool call (not a JSON object) f(c1) {"a": 1} and more',
    ]


def test_a_later_choice_waits_below_the_choice_being_written() -> None:
    lines = live_output(
        [
            TextDelta("zero starts"),
            TextDelta("one starts", choice=1),
            TextDelta(" and zero goes on"),
            Finish("stop"),
            TextDelta(" and one goes on", choice=1),
            Finish("stop", choice=1),
        ],
        width=80,
    )
    assert lines[:2] == ["zero starts and zero goes on", "[choice 1] one starts and one goes on"]
