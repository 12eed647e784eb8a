"""The layers of docs/concepts/architecture.md, checked on the source: every import of every module.

Two rules, read with `ast` from each module (imports inside functions and under
`TYPE_CHECKING` count too: they are dependencies all the same):

- no package imports another top-level subpackage's private module or private
  name (`rxstream.io._http`, `from ..io import _x`); what another layer needs is
  public in its package. Root-level private modules (`rxstream._flow`) are the
  shared internals of every layer and allowed, but not their private names;
- an import points down the layer list only (`LAYERS`, top first), or stays
  within its row; no module is exempt.

The front door (`rxstream/__init__.py`) re-exports every layer and is exempt.
The page's layer table is checked against `LAYERS`: its rows are these rows,
in this order, naming these modules, so the page cannot drift from the test.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import rxstream

ROOT = Path(rxstream.__file__).parent

#: The layers, top first: each row's name on the page and the top-level modules and
#: packages of rxstream in it. An import may point down this list, or within a row.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("command", ("cli",)),
    ("test kit", ("testing",)),
    ("serving", ("serve",)),
    ("runs", ("runs",)),
    ("I/O", ("io",)),
    ("operators", ("operators",)),
    ("core", ("core",)),
    ("typed decoding", ("_typed",)),
    ("fast paths", ("_fast",)),
    ("tokenizer data", ("_encodings",)),
    ("foundation", ("models", "errors", "_flow", "_deprecate", "__about__")),
]

#: Each top-level module's or package's height: the bottom row is 0.
HEIGHTS = {top: len(LAYERS) - 1 - row for row, (_, tops) in enumerate(LAYERS) for top in tops}

#: The public layers (subpackages): another one's private modules and names are out of reach.
SUBPACKAGES = ("cli", "testing", "serve", "runs", "io", "operators", "core")

#: Imports that break a rule today and are being fixed on other branches; each entry
#: is (importing module, imported module). Empty this list once those fixes are merged.
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Import:
    importer: str  # the importing module, e.g. "rxstream.cli._app"
    target: str  # the imported module, e.g. "rxstream.io._http"
    name: str | None  # the imported name for `from X import name`, else None
    line: int
    deferred: bool = False  # inside a function or an `if TYPE_CHECKING:` block

    def __str__(self) -> str:
        what = f"{self.target}.{self.name}" if self.name else self.target
        return f"{self.importer}:{self.line} imports {what}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> list[tuple[str, Path]]:
    return sorted((module_name(path), path) for path in ROOT.rglob("*.py"))


def imports_of(name: str, path: Path) -> Iterator[Import]:
    """Every rxstream import of the module `name` (at `path`), resolved to absolute names."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    deferred = {
        id(inner)
        for outer in ast.walk(tree)
        if isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef)
        or (isinstance(outer, ast.If) and "TYPE_CHECKING" in ast.unparse(outer.test))
        for inner in ast.walk(outer)
        if inner is not outer
    }
    for node in ast.walk(tree):
        later = id(node) in deferred
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "rxstream":
                    yield Import(name, alias.name, None, node.lineno, later)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != "rxstream":
                continue
            for alias in node.names:
                yield Import(name, target, alias.name, node.lineno, later)


def subpackage(module: str) -> str | None:
    """The top-level subpackage a module belongs to (`"io"`), or None for a root-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in SUBPACKAGES else None


def is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def private_reach(imp: Import) -> bool:
    """Whether `imp` reaches a private module or name of another subpackage, or a private
    name of a root-level module (`from ..._encodings import _loaded`) from another module."""
    theirs = subpackage(imp.target)
    if theirs is None:
        root_level = imp.target.count(".") == 1 and imp.target != imp.importer
        return root_level and imp.name is not None and is_private(imp.name)
    if theirs == subpackage(imp.importer):
        return False
    inside = imp.target.split(".")[2:]  # below rxstream.<subpackage>
    if imp.name is not None:
        inside.append(imp.name)
    return any(is_private(part) for part in inside)


def height(module: str) -> int:
    """The height of the row `module` (`rxstream.<top>...`) is in; the front door's is the top's."""
    parts = module.split(".")
    return HEIGHTS[parts[1]] if len(parts) > 1 else len(LAYERS) - 1


def upward(imp: Import) -> bool:
    """Whether `imp` points up the layer list (the front door is exempt)."""
    if imp.importer == "rxstream":
        return False
    target = imp.target
    if imp.name is not None and target == "rxstream" and imp.name in HEIGHTS:
        target = f"rxstream.{imp.name}"  # `from .. import io`
    return height(target) > height(imp.importer)


ALL_IMPORTS = [imp for name, path in modules() for imp in imports_of(name, path)]


def known(imp: Import) -> bool:
    target = f"{imp.target}.{imp.name}" if imp.name else imp.target
    return any(
        imp.importer == importer and (imp.target == module or target == module)
        for importer, module in KNOWN_EXCEPTIONS
    )


def test_the_walk_sees_the_package() -> None:
    importers = {imp.importer for imp in ALL_IMPORTS}
    assert {"rxstream.cli._app", "rxstream.io.sources", "rxstream.operators"} <= importers
    assert len(ALL_IMPORTS) > 300


def test_no_package_imports_another_packages_private_module_or_name() -> None:
    found = [str(imp) for imp in ALL_IMPORTS if private_reach(imp) and not known(imp)]
    assert found == [], "\n".join(found)


def test_no_import_points_up_the_layers() -> None:
    found = [str(imp) for imp in ALL_IMPORTS if upward(imp) and not known(imp)]
    assert found == [], "\n".join(found)


def test_every_known_exception_is_still_there() -> None:
    # An exception that no longer occurs goes from the list, so the list only shrinks.
    gone = [
        pair for pair in KNOWN_EXCEPTIONS if not any(known_as(imp, pair) for imp in ALL_IMPORTS)
    ]
    assert gone == [], f"fixed, remove from KNOWN_EXCEPTIONS: {gone}"


def known_as(imp: Import, pair: tuple[str, str]) -> bool:
    importer, module = pair
    target = f"{imp.target}.{imp.name}" if imp.name else imp.target
    return imp.importer == importer and module in (imp.target, target)


@pytest.mark.parametrize(
    ("source", "importer", "expected"),
    [
        ("from ..io._http import shown_url", "rxstream.cli._app", (True, False)),
        ("from ..io import _loop_for", "rxstream.cli._app", (True, False)),
        ("from ..io import Handle", "rxstream.cli._app", (False, False)),
        ("from .._flow import Demand", "rxstream.io.sources", (False, False)),
        ("from ..._encodings import _loaded", "rxstream.core.tokens.counter", (True, False)),
        ("from ..._encodings import R50K_PAT", "rxstream.core.tokens._pieces", (False, False)),
        ("from ._http import Exchange", "rxstream.io.sources", (False, False)),
        ("import rxstream.core._machine", "rxstream.operators.lines", (True, False)),
        ("from ..operators import lines", "rxstream.core.lines", (False, True)),
        ("from .. import io", "rxstream.core.lines", (False, True)),
        ("from ...io.sources import from_lines", "rxstream.core.dialects.x", (False, True)),
        ("from ..core.lines import LineSplitter", "rxstream.io.sources", (False, False)),
        ("def f():\n    from .core.sse import SSEParser", "rxstream._fast", (False, True)),
        ("from .._fast import constructor", "rxstream._typed.gemini", (False, False)),
        ("from . import _typed", "rxstream._fast", (False, True)),
        ("from ...._typed import typed", "rxstream.core.dialects.x.decode", (False, False)),
        ("from rxstream import cli", "rxstream.core.lines", (False, True)),
    ],
)
def test_the_rules_read_imports_as_meant(
    tmp_path: Path, source: str, importer: str, expected: tuple[bool, bool]
) -> None:
    path = tmp_path / "module.py"
    path.write_text(source + "\n", encoding="utf-8")
    [imp] = list(imports_of(importer, path))
    assert (private_reach(imp), upward(imp)) == expected, imp


# --------------------------------------------------------------------------- the page's table

PAGE = ROOT.parent / "docs" / "concepts" / "architecture.md"


def layer_table() -> list[tuple[str, list[str]]]:
    """The rows of the page's layer table, top first: (layer, the packages it names)."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## The layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert rows[0].startswith("| layer | package |"), rows[0]
    table = []
    for row in rows[1:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        table.append((cells[0], re.findall(r"`(rxstream[\w.]*)`", cells[1])))
    return table


def top_level_names() -> set[str]:
    """Every top-level module and package of rxstream (`rxstream.models`, `rxstream.core`)."""
    found = {f"rxstream.{path.stem}" for path in ROOT.glob("*.py") if path.name != "__init__.py"}
    found |= {f"rxstream.{path.parent.name}" for path in ROOT.glob("*/__init__.py")}
    return found


def test_the_pages_layer_table_is_the_layers_this_test_enforces() -> None:
    # Row for row, top first, the page's table names what LAYERS names.
    expected = [(name, [f"rxstream.{top}" for top in tops]) for name, tops in LAYERS]
    assert layer_table() == expected
    # Every top-level module and package is in exactly one row.
    named = [top for _, tops in LAYERS for top in tops]
    assert sorted(named) == sorted(set(named)), named
    assert {f"rxstream.{top}" for top in named} == top_level_names()


def test_every_subpackage_is_a_layer_of_its_own() -> None:
    assert all((top,) in [tops for _, tops in LAYERS] for top in SUBPACKAGES)
