"""The test run's own plugin: the rxstream pytest plugin, the everyday selection, clean stops.

- The rxstream plugin is loaded here rather than through its entry point:
  pyproject's addopts disable the installed entry point (`-p no:rxstream`), because
  entry points are imported before coverage starts, so the package's module-level
  code would count as never run.
- `python -m pytest` alone runs the everyday selection: every module of the
  package, in a few minutes on two cores. Tests marked `matrix` (the official SDKs
  and JavaScript clients reading what rxstream writes, browsers, Redis Cluster,
  exhaustive sweeps over every recorded event) are left out of it and run with
  `--full` (as `.ci/run` does), or when named on the command line, or by `-m`.
- In the everyday selection a property runs at most EVERYDAY_EXAMPLES examples (the
  `everyday` profile), and some sweeps run a fixed sample of their cases (SAMPLED);
  `--full` runs them all, with each property's own number of examples.
- The whole suite (no test path named, no `-n` given) runs on every core with
  pytest-xdist (`-n auto`): the controller decides everyday or `--full` and tells its
  workers, which collect the same selection. A file or test named on the command line
  runs in one process; `-n 0` keeps the whole suite in one. With `--cov` give `-n auto`
  yourself (pytest-cov decides how to measure before this file is read).
- SIGTERM stops the run as Ctrl-C does (fixtures are torn down), and every process
  the run started that is still alive at its end is ended (`tests.support.processes`).
"""

from __future__ import annotations

import fnmatch
import signal
import zlib
from types import FrameType

import pytest
from _pytest.config import Config as _Config
from hypothesis import settings

from tests.support.processes import end_descendants

pytest_plugins = ["rxstream.testing.plugin", "pytester"]

#: Examples a property runs in the everyday selection, its own setting notwithstanding.
EVERYDAY_EXAMPLES = 6

settings.register_profile("full", deadline=None)
settings.register_profile("everyday", deadline=None, max_examples=EVERYDAY_EXAMPLES)


#: What the everyday selection leaves to `--full`, by node id (fnmatch patterns), and why.
#: Every module of the package stays covered by the rest; these are the other clients,
#: the other machines, and the exhaustive sweeps whose smaller cousins run every day.
MATRIX = {
    "tests/conformance/*": "the official Python SDKs read every rendering",
    "tests/aisdk_client/*": "the AI SDK's own JavaScript client (Node, npm)",
    "tests/js_clients/*": "the official JavaScript SDKs and @ai-sdk providers (Node, npm)",
    "tests/examples/test_browser.py::*": "a real Chromium drives the example",
    "tests/io/redis/test_cluster.py::*": "a Redis Cluster of six redis-server processes",
    "tests/runs/test_redis_limits.py::test_processes_share_one_budget_*": (
        "three worker processes on one RedisLimiter, Redis restarted mid-run"
    ),
    "tests/cli/test_terminal.py::*": "the live view in a real terminal (tmux)",
    "tests/io/test_sources_sdk_clients.py::*": "the official SDKs' own HTTP responses as sources",
    "tests/io/test_sources_concurrency.py::test_a_thousand_*": "a thousand streams at once",
    "tests/io/test_sources_concurrency.py::test_five_hundred_*": "five hundred streams at once",
    "tests/io/test_sources_dispose_race.py::*under_load": "a stress test beside a CPU burner",
    "tests/core/tokens/test_pieces.py::test_each_cut_holds_for_every_pair_*": (
        "every pair of ASCII characters under three encodings"
    ),
    "tests/typed/test_long_digits.py::*": "every integer of every recorded event made too long",
    "tests/test_package.py::test_core_imports_neither_reactivex_nor_httpx*": (
        "a fresh interpreter per core module (the whole core at once runs every day)"
    ),
    "tests/fast/test_switch.py::test_cut_and_damaged_recordings_agree*": (
        "every recording cut and damaged, fast paths against plain (whole ones run every day)"
    ),
    "tests/typed/test_recordings.py::test_cut_and_damaged_recordings_agree*": (
        "every recording cut and damaged, typed against standard library"
    ),
    "tests/test_docs_examples.py::test_a_block_runs_against_the_fake_server_command*": (
        "the docs' first blocks again, against the command's printed variables"
    ),
    "tests/test_docs_examples.py::test_the_commands_on_the_cli_page_run*": "the CLI page commands",
    "tests/cli/test_fake_server_command.py::test_each_fault_by_flag_and_by_header*": (
        "every fault by flag and by header through the command (in-process faults run every day)"
    ),
    "tests/cli/test_replay.py::test_replay_plain_shows_the_answer_calls_and_finish*": (
        "the command's plain replay of every recording"
    ),
    "tests/cli/test_fake_server_command.py::test_the_command_listens_in_every_dialect*": (
        "the command in every dialect (the echoing server runs in every dialect every day)"
    ),
    "tests/serve/test_responses.py::test_a_client_that_never_reads_holds_the_source_*": (
        "a client that never reads, until the server's buffers fill"
    ),
    "tests/examples/test_fastapi_chat.py::*": (
        "the example app: two uvicorn workers and Redis (rxstream.serve runs every day)"
    ),
    "tests/core/dialects/openai_chat/test_logprobs.py::test_the_openai_sdk_*": (
        "the openai SDK reads the logprobs the chat renderer writes (rs.chat reads them every day)"
    ),
}


#: Sweeps over every recording, page or case whose every Nth case (by a fixed hash of the
#: node id, so the same ones each run) runs every day; the rest are `matrix`.
SAMPLED = {
    "tests/test_docs_examples.py::test_a_python_block_runs_as_printed[*": 8,
    "tests/fast/test_paths.py::test_fused_decode_chains_emit_what_unfused_ones_emit[*": 4,
    "tests/fast/test_paths.py::test_fused_chains_emit_what_unfused_ones_emit[*": 4,
    "tests/typed/test_recordings.py::test_a_wrong_type_anywhere_gives_the_same_error_*": 6,
    "tests/cli/test_replay.py::test_replay_json_gives_each_recording_its_full_meaning[*": 4,
    "tests/cli/test_replay.py::test_every_dialect_logs_what_replay_reads_back[*": 3,
    "tests/core/dialects/anthropic/test_anthropic.py::test_small_recordings_split_*": 4,
    "tests/testing/test_request_checks.py::test_a_broken_request_gets_the_providers_error[*": 3,
    "tests/testing/test_request_checks.py::test_the_error_body_has_the_providers_shape[*": 3,
    "tests/io/test_sources_secrets.py::*": 3,
    "tests/testing/test_server_dialects.py::*": 2,
    "tests/io/redis/test_faults.py::*": 2,
    "tests/core/dialects/openai_chat/test_strict_shapes.py::test_no_wrong_type_is_skipped_*": 2,
    "tests/io/test_sources_bedrock_secrets.py::*": 3,
    "tests/runs/test_retry_server.py::test_fallback_between_dialects[*": 6,
    "tests/runs/test_after_output.py::test_restart_after_a_cut_gives_the_answer_once[*": 4,
    "tests/runs/test_after_output.py::test_continue_after_a_cut_when_the_model_*": 3,
    "tests/runs/test_after_output.py::test_continue_on_another_route_*": 4,
    "tests/test_error_partial.py::test_a_cut_after_k_events_keeps_the_first_k[*": 16,
    "tests/test_error_partial.py::test_a_malformed_event_at_k_keeps_what_came_before[*": 8,
    "tests/test_error_partial.py::test_a_timeout_after_k_events_keeps_them[*": 8,
    "tests/testing/test_run_script.py::test_the_same_three_step_run_plays_in_every_dialect[*": 2,
    "tests/runs/test_run_script_run.py::test_rs_run_sends_each_steps_results_back_in_every_*": 2,
    "tests/request_oracle/test_turns.py::*": 4,
    "tests/request_oracle/test_run_oracle.py::*": 3,
    "tests/core/dialects/openai_chat/test_logprobs.py::test_a_wrong_type_is_malformed_*": 5,
}


def _in_matrix(nodeid: str) -> bool:
    if any(fnmatch.fnmatchcase(nodeid, pattern) for pattern in MATRIX):
        return True
    for pattern, every in SAMPLED.items():
        if fnmatch.fnmatchcase(nodeid, pattern):
            return zlib.crc32(nodeid.encode()) % every != 0
    return False


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="run the full matrix too: the tests marked `matrix` (.ci/run does)",
    )


def _full(config: pytest.Config) -> bool:
    """Whether this run takes the matrix: `--full`, a `-m` of its own, or tests named by hand.

    An xdist worker is started with the controller's paths named, so it asks the controller.
    """
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "rxstream_full" in workerinput:
        return bool(workerinput["rxstream_full"])
    named = config.args_source != _Config.ArgsSource.TESTPATHS
    return bool(config.getoption("--full") or config.getoption("-m") or named)


def _whole_suite_on_every_core(config: pytest.Config) -> bool:
    """No path and no `-n` given, xdist installed, nothing that needs one process."""
    return (
        config.pluginmanager.hasplugin("xdist")
        and config.args_source == _Config.ArgsSource.TESTPATHS
        and getattr(config.option, "numprocesses", 0) is None
        and getattr(config, "workerinput", None) is None
        and not config.getoption("collectonly")
        and not config.getoption("usepdb")
        # pytest-cov chose how to measure before this hook: with --cov, `-n auto` is given
        # on the command line (as .ci/run does) or the run stays in one process.
        and not getattr(config.option, "cov_source", None)
    )


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    # Runs before xdist's own hook, which turns "auto" into the number of cores.
    if _whole_suite_on_every_core(config):
        config.option.numprocesses = "auto"


class _TellWorkers:
    """An xdist hook: each worker learns the controller's everyday-or-full decision."""

    def __init__(self, full: bool) -> None:
        self.full = full

    def pytest_configure_node(self, node: object) -> None:
        node.workerinput["rxstream_full"] = self.full  # type: ignore[attr-defined]


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum} (SIGTERM)")


def pytest_configure(config: pytest.Config) -> None:
    settings.load_profile("full" if _full(config) else "everyday")
    if config.pluginmanager.hasplugin("xdist") and getattr(config, "workerinput", None) is None:
        config.pluginmanager.register(_TellWorkers(_full(config)), "rxstream-tell-workers")
    signal.signal(signal.SIGTERM, _on_sigterm)
    # A run started with SIGINT ignored (in the background of a shell without job control)
    # would pass that on to every child: the tests that stop a command with Ctrl-C need it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _cap_examples(item: pytest.Item) -> None:
    """Run at most EVERYDAY_EXAMPLES examples of a property that asks for more itself."""
    test = getattr(item, "obj", None)
    test = getattr(test, "__func__", test)  # a method: its function holds the settings
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if isinstance(own, settings) and own.max_examples > EVERYDAY_EXAMPLES:
        capped = settings(own, max_examples=EVERYDAY_EXAMPLES, deadline=None)
        test._hypothesis_internal_use_settings = capped


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _in_matrix(item.nodeid):
            item.add_marker(pytest.mark.matrix)
    if _full(config):
        return
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    for item in items:
        (kept if item.get_closest_marker("matrix") is None else left).append(item)
        _cap_examples(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def pytest_keyboard_interrupt(excinfo: pytest.ExceptionInfo[BaseException]) -> None:
    end_descendants()


def pytest_unconfigure(config: pytest.Config) -> None:
    end_descendants()
