"""The fake server split into modules of one job each: every name still imports from `server`."""

from __future__ import annotations

import subprocess
import sys

import pytest

import rxstream.testing.server as server
from rxstream.testing import _handler, _player, _routes, _scenario

#: Where each name importable from `rxstream.testing.server` is defined now.
HOMES = {
    "Chunk": _scenario,
    "Comment": _scenario,
    "Disconnect": _scenario,
    "Done": _scenario,
    "End": _scenario,
    "Fail": _scenario,
    "HTTPError": _scenario,
    "Keepalive": _scenario,
    "Raw": _scenario,
    "RecordedRequest": _scenario,
    "Reply": _scenario,
    "Say": _scenario,
    "Scenario": _scenario,
    "Stall": _scenario,
    "Step": _scenario,
    "WireAnswer": _scenario,
    "JSON": _scenario,
    "MAX_WAIT": _scenario,
    "FAKE_ID": _scenario,
    "FAKE_CREATED": _scenario,
    "SERVED": _routes,
    "FAULT_HEADER": _routes,
    "route": _routes,
    "FakeLLMServer": server,
}

#: The modules of the fake server, and the ones built on them.
MODULES = [
    "rxstream.testing._scenario",
    "rxstream.testing._routes",
    "rxstream.testing._player",
    "rxstream.testing._handler",
    "rxstream.testing._faults",
    "rxstream.testing._echo",
    "rxstream.testing.server",
    "rxstream.testing",
]


def test_the_public_names_are_what_they_were() -> None:
    assert set(server.__all__) == {
        *("SERVED", "Chunk", "Comment", "Disconnect", "Done", "End", "Fail"),
        *("FakeLLMServer", "HTTPError", "Keepalive", "Raw", "RecordedRequest", "Reply"),
        *("Say", "Scenario", "Stall", "Step", "WireAnswer", "route"),
    }
    assert set(server.__all__) <= set(HOMES)


@pytest.mark.parametrize("name", sorted(HOMES), ids=sorted(HOMES))
def test_every_name_imports_from_server_as_the_object_its_module_defines(name: str) -> None:
    assert getattr(server, name) is getattr(HOMES[name], name)


def test_the_handler_and_player_are_no_public_names_of_server() -> None:
    assert "make_handler" in _handler.__all__
    assert "Player" in _player.__all__
    assert not {"make_handler", "Player", "completion", "asks_stream"} & set(server.__all__)


def test_each_module_imports_first_in_a_fresh_interpreter() -> None:
    # An import cycle shows only when a module of the cycle is the first one imported:
    # each goes first in turn, in one fresh interpreter (rxstream forgotten in between).
    script = (
        "import importlib, sys\n"
        f"for name in {MODULES!r}:\n"
        "    for loaded in [m for m in sys.modules if m.startswith('rxstream')]:\n"
        "        del sys.modules[loaded]\n"
        "    importlib.import_module(name)\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
