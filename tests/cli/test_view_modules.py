"""The command's views, one module each: what other modules import from `_view` still imports."""

from __future__ import annotations

import io
import subprocess
import sys
from types import ModuleType

import pytest

from rxstream.cli import (
    _view,
    _view_base,
    _view_calls,
    _view_json,
    _view_live,
    _view_plain,
    _view_stats,
)

#: Where each name importable from `rxstream.cli._view` is defined now.
HOMES: dict[str, ModuleType] = {
    "View": _view_base,
    "PlainView": _view_plain,
    "LiveView": _view_live,
    "JSONView": _view_json,
    "delta_json": _view_json,
    "Stats": _view_stats,
    "Clock": _view_stats,
    "server_tool_line": _view_calls,
    "_ObjectEnd": _view_calls,
    "_Tail": _view_live,
    "_settled": _view_live,
}


@pytest.mark.parametrize("name", sorted(HOMES), ids=sorted(HOMES))
def test_every_name_imports_from_view_as_the_object_its_module_defines(name: str) -> None:
    assert getattr(_view, name) is getattr(HOMES[name], name)


def test_the_public_names_are_what_they_were() -> None:
    assert set(_view.__all__) == {
        *("JSONView", "LiveView", "PlainView", "Stats", "View"),
        *("delta_json", "server_tool_line"),
    }


@pytest.mark.parametrize(
    ("kind", "view"),
    [
        ("json", _view_json.JSONView),
        ("live", _view_live.LiveView),
        ("plain", _view_plain.PlainView),
    ],
    ids=["json", "live", "plain"],
)
def test_make_view_picks_the_view_of_its_module(kind: str, view: type[_view.View]) -> None:
    assert type(_view.make_view(kind, counting="none", out=io.StringIO())) is view


def test_each_view_module_imports_first_in_a_fresh_interpreter() -> None:
    # An import cycle shows only when a module of the cycle is the first one imported.
    modules = [
        module.__name__
        for module in (_view_stats, _view_calls, _view_base, _view_plain, _view_live, _view_json)
    ]
    script = (
        "import importlib, sys\n"
        f"for name in {[*modules, _view.__name__]!r}:\n"
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
