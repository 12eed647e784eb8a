"""The tests mirror the package, as docs/concepts/architecture.md says ("Where the tests are").

`rxstream/<path>/<module>.py` is tested in `tests/<path>/test_<module>.py` (or
`test_<module>_<aspect>.py`, or a folder `tests/<path>/<module>/` when one module has
many files); a package of modules gets a test package. A leading underscore is dropped
(`tests/io/test_loops.py` for `rxstream/io/_loops.py`, `tests/typed/` for `rxstream/_typed/`).
A file of a test package named after none of its modules tests the package as a whole
(`tests/core/dialects/test_honest_ends.py`); `tests/` itself is the package's root, for its
root modules and for tests of the whole (the front door, the layers, the docs).

The test walks `tests/` and names every `test_*.py` out of place, with where it goes:
a directory that mirrors no package or module of rxstream; a file named after a
subpackage that sits beside that subpackage's test package instead of in it; a file at the
root of `tests/` named after one module of a subpackage; any test file in `tests/support/`,
which holds helpers only. Tests that span the package live in the cross-cutting directories
the page lists (`CROSS_CUTTING`, read from the page: one list).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import rxstream

PACKAGE = Path(rxstream.__file__).parent
TESTS = Path(__file__).parent
PAGE = PACKAGE.parent / "docs" / "concepts" / "architecture.md"


def cross_cutting(page: Path = PAGE) -> list[str]:
    """The cross-cutting directories the architecture page lists, in its order."""
    text = page.read_text(encoding="utf-8")
    section = text.split("## Where the tests are", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^- `tests/(\w+)/`", section, flags=re.MULTILINE)


#: The directories of `tests/` that mirror no module: what spans the package is there.
CROSS_CUTTING = frozenset(cross_cutting())

#: The cross-cutting directory of the helpers tests share: no test module is there.
HELPERS = "support"


def _named(folder: Path, part: str) -> tuple[Path, str] | None:
    """The package (a folder) or module (a `.py` file) `part` names in `folder`, with its kind."""
    for name in (part, f"_{part}"):
        if (folder / name / "__init__.py").is_file():
            return folder / name, "package"
        if (folder / f"{name}.py").is_file():
            return folder / f"{name}.py", "module"
    return None


def _units(package: Path) -> dict[str, str]:
    """The modules and subpackages of `package` by their test name (no leading underscore)."""
    units = {
        path.stem.lstrip("_"): "module"
        for path in package.glob("*.py")
        if path.name != "__init__.py"
    }
    units.update(
        {path.parent.name.lstrip("_"): "package" for path in package.glob("*/__init__.py")}
    )
    return units


def _unit_of(name: str, units: dict[str, str]) -> str | None:
    """The longest unit `name` (a test file's name without `test_`) is named after."""
    matches = [unit for unit in units if name == unit or name.startswith(f"{unit}_")]
    return max(matches, key=len, default=None)


def _modules_named(package: Path, name: str) -> list[Path]:
    """The modules (`.py` files) and packages (folders) in `package` that `name` is named after."""
    found = []
    for path in sorted(package.rglob("*.py")):
        unit = path.parent if path.name == "__init__.py" else path
        stem = unit.stem.lstrip("_")
        if unit != package and (name == stem or name.startswith(f"{stem}_")):
            found.append(unit)
    return found


def _test_folder(unit: Path, package: Path) -> str:
    """The test folder of `unit`: its package's for a module, its own for a package."""
    folder = unit.parent if unit.suffix == ".py" else unit
    return "/".join(["tests", *(part.lstrip("_") for part in folder.relative_to(package).parts)])


def misplaced(tests: Path, package: Path) -> list[str]:
    """Every `test_*.py` under `tests` out of place against `package`, with where it goes."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        where = path.relative_to(tests)
        if where.parts[0] == HELPERS:
            found.append(
                f"tests/{where.as_posix()}: tests/{HELPERS}/ holds the helpers tests share, "
                "not tests: move it to the tests of what it tests (tests/ for the run's own)"
            )
            continue
        if where.parts[0] in CROSS_CUTTING:
            continue
        problem = _misplaced(where, package)
        if problem is not None:
            found.append(f"tests/{where.as_posix()}: {problem}")
    return found


def _misplaced(where: Path, package: Path) -> str | None:
    folder, kind = package, "package"
    for part in where.parts[:-1]:
        named = _named(folder, part) if kind == "package" else None
        if named is None:
            return (
                f"tests/{where.parent.as_posix()} mirrors no package or module of rxstream: "
                "move it to tests/<package path>/ of the module it tests, or list a "
                "cross-cutting directory in CROSS_CUTTING (and on the architecture page)"
            )
        folder, kind = named
    if kind == "module":
        return None  # a module's folder of tests: any name
    name = where.stem.removeprefix("test_")
    unit = _unit_of(name, _units(folder))
    here = "/".join(["tests", *where.parts[:-1]])
    if unit is not None and _units(folder)[unit] == "package":
        rest = name.removeprefix(unit).lstrip("_") or unit
        return f"it tests the package {unit}: move it to {here}/{unit}/test_{rest}.py"
    if unit is None and folder == package and name != package.name:
        elsewhere = _modules_named(package, name)
        if len(elsewhere) == 1:
            unit_path = elsewhere[0]
            target = f"{_test_folder(unit_path, package)}/{where.name}"
            return f"it is named after {unit_path.relative_to(package.parent)}: move it to {target}"
    return None


def test_every_test_file_mirrors_the_module_it_tests() -> None:
    found = misplaced(TESTS, PACKAGE)
    assert found == [], "\n".join(found)


def test_the_cross_cutting_directories_are_the_pages_and_exist() -> None:
    listed = cross_cutting()
    assert len(listed) == len(set(listed)) >= 5, listed
    assert [name for name in listed if not (TESTS / name).is_dir()] == []
    # Every directory of tests/ is cross-cutting or mirrors a package or module.
    folders = [path.name for path in TESTS.iterdir() if path.is_dir() and path.name[0] not in "._"]
    mirrors_nothing = [
        name for name in folders if name not in CROSS_CUTTING and _named(PACKAGE, name) is None
    ]
    assert mirrors_nothing == [], mirrors_nothing


#: A small package to check the rule on: modules, packages, underscores.
FAKE_PACKAGE = [
    "_fast.py",
    "models.py",
    "testing/builders.py",
    "core/tokens/_pieces.py",
    "core/dialects/gemini/decode.py",
    "io/_loops.py",
    "_typed/gemini.py",
]


@pytest.mark.parametrize(
    ("test_file", "problem"),
    [
        ("test_models.py", None),
        ("test_the_whole.py", None),
        ("test_builders.py", "named after rxstream/testing/builders.py: move it to tests/testing/"),
        ("core/dialects/test_gemini.py", "move it to tests/core/dialects/gemini/test_gemini.py"),
        (
            "core/dialects/test_gemini_usage.py",
            "tests/core/dialects/gemini/test_usage.py",
        ),
        (
            "core/test_tokens_cuts.py",
            "package tokens: move it to tests/core/tokens/test_cuts.py",
        ),
        ("core/tokens/test_pieces.py", None),
        ("core/dialects/gemini/test_decode.py", None),
        ("core/dialects/gemini/test_gemini.py", None),
        ("core/dialects/test_every_end.py", None),
        ("io/test_loops.py", None),
        ("io/test_loops_stop.py", None),
        ("fast/test_anything.py", None),
        ("typed/test_gemini.py", None),
        ("speed/test_x.py", "tests/speed mirrors no package or module of rxstream"),
        ("io/loops/test_x.py", None),
        ("io/sources/test_x.py", "tests/io/sources mirrors no package or module"),
        ("conformance/test_x.py", None),
        ("support/test_x.py", "tests/support/ holds the helpers tests share, not tests"),
    ],
)
def test_the_rule_names_a_misplaced_file_and_where_it_goes(
    tmp_path: Path, test_file: str, problem: str | None
) -> None:
    package = tmp_path / "rxstream"
    for module in FAKE_PACKAGE:
        path = package / module
        path.parent.mkdir(parents=True, exist_ok=True)
        for folder in [path.parent, *path.parent.parents]:
            if folder == tmp_path:
                break
            (folder / "__init__.py").touch()
        path.touch()
    tests = tmp_path / "tests"
    (tests / test_file).parent.mkdir(parents=True, exist_ok=True)
    (tests / test_file).touch()
    found = misplaced(tests, package)
    if problem is None:
        assert found == []
    else:
        [message] = found
        assert message.startswith(f"tests/{test_file}: "), message
        assert problem in message, message


# -- imports between test modules ------------------------------------------------------------


def _module_of(path: Path, tests: Path, node: ast.ImportFrom) -> list[str]:
    """The dotted parts of the module an `import from` names, `tests.` first when relative."""
    parts = list(path.relative_to(tests.parent).parent.parts)
    base = parts[: len(parts) - node.level + 1] if node.level else []
    return base + (node.module.split(".") if node.module else [])


def _from_test_modules(path: Path, tests: Path) -> list[str]:
    """What `path` imports from a `test_*` module of `tests`: `importer: module.name` each."""
    found = []
    where = path.relative_to(tests.parent).as_posix()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules = [alias.name.split(".") for alias in node.names]
            found += [f"{where}: {'.'.join(m)}" for m in modules if _is_test_module(m, tests)]
        elif isinstance(node, ast.ImportFrom):
            module = _module_of(path, tests, node)
            if module[:1] != [tests.name]:
                continue
            for alias in node.names:
                if _is_test_module(module, tests):
                    found.append(f"{where}: {'.'.join(module)}.{alias.name}")
                elif _is_test_module([*module, alias.name], tests):
                    found.append(f"{where}: {'.'.join([*module, alias.name])}")
    return found


def _is_test_module(parts: list[str], tests: Path) -> bool:
    return parts[:1] == [tests.name] and any(part.startswith("test_") for part in parts[1:])


def imports_from_test_modules(tests: Path) -> list[str]:
    """Every import of a name from a `test_*` module under `tests`, with its importer."""
    return [
        found for path in sorted(tests.rglob("*.py")) for found in _from_test_modules(path, tests)
    ]


def test_no_test_module_imports_from_another() -> None:
    found = imports_from_test_modules(TESTS)
    assert found == [], (
        "a helper two test files share belongs in tests/support/ (one module per kind of "
        "helper), imported from there by both:\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("from tests.support.chunking import chunkings\n", []),
        ("from tests.core.test_x import helper\n", ["tests/a/test_y.py: tests.core.test_x.helper"]),
        (
            "from .test_x import A, b\n",
            ["tests/a/test_y.py: tests.a.test_x.A", "tests/a/test_y.py: tests.a.test_x.b"],
        ),
        ("from ..core import test_x\n", ["tests/a/test_y.py: tests.core.test_x"]),
        ("import tests.core.test_x\n", ["tests/a/test_y.py: tests.core.test_x"]),
        ("def f():\n    from tests.test_x import run\n", ["tests/a/test_y.py: tests.test_x.run"]),
        ("from rxstream.testing import test_helpers\n", []),
        ("from .conftest import HERE\n", []),
    ],
    ids=[
        "support",
        "absolute",
        "relative",
        "a-module",
        "import",
        "in-a-function",
        "not-tests",
        "conftest",
    ],
)
def test_the_import_rule_names_the_importer_and_the_name(
    tmp_path: Path, source: str, found: list[str]
) -> None:
    tests = tmp_path / "tests"
    (tests / "a").mkdir(parents=True)
    (tests / "a" / "test_y.py").write_text(source, encoding="utf-8")
    assert imports_from_test_modules(tests) == found
