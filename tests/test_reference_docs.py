"""Every public name (`rxstream.__all__`) has an entry in the API reference (docs/reference/).

The reference pages are mkdocstrings directives (`::: rxstream.models`, with an optional
`members:` list). A name has an entry when a directive names it exactly (`::: rxstream.operators.
lines.lines`), or names the module that defines it without leaving it out (`members: false`, or a
list without it) and the name has a docstring: mkdocstrings renders a module's members only when
they do (`show_if_no_docstring` is off), and a variable's docstring is the string right after its
assignment (a `#:` comment is not one). Read from the source with `ast`, as the docs build does:
no import of griffe or mkdocs, which the test extra does not bring.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import rxstream

ROOT = Path(rxstream.__file__).parent
REFERENCE = ROOT.parent / "docs" / "reference"


@dataclass(frozen=True)
class Directive:
    page: str
    path: str  # `rxstream.models`
    members: tuple[str, ...] | None  # None: every documented member; (): none


def directives(text: str, page: str) -> list[Directive]:
    """The `::: path` directives of a page, with their `members:` option."""
    found = []
    for match in re.finditer(r"^::: (\S+)\n((?:[ \t]+.*\n?)*)", text, re.MULTILINE):
        options = match.group(2)
        listed = re.search(r"^\s+members:\s*(.+)$", options, re.MULTILINE)
        members: tuple[str, ...] | None = None
        if listed is not None:
            value = listed.group(1).strip()
            names = value.strip("[]").split(",") if value.startswith("[") else []
            members = tuple(name.strip() for name in names if name.strip())
        found.append(Directive(page, match.group(1), members))
    return found


@cache
def all_directives() -> tuple[Directive, ...]:
    return tuple(
        directive
        for page in sorted(REFERENCE.glob("*.md"))
        for directive in directives(page.read_text(encoding="utf-8"), page.name)
    )


def module_source(module: str) -> ast.Module:
    spec = importlib.util.find_spec(module)
    assert spec is not None, module
    assert spec.origin is not None, module
    return ast.parse(Path(spec.origin).read_text(encoding="utf-8"))


def definition(name: str) -> tuple[str, str]:
    """(module, qualified name) where the public name `name` is defined, not re-exported."""
    value = getattr(rxstream, name)
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if isinstance(module, str) and isinstance(qualname, str) and module.startswith("rxstream"):
        return module, qualname
    # A variable (a union alias, the version): the module whose source assigns it.
    for path in sorted(ROOT.rglob("*.py")):
        dotted = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        if assigned_docstring(module_source(dotted.removesuffix(".__init__")), name) is not None:
            return dotted.removesuffix(".__init__"), name
    raise AssertionError(f"no module of rxstream defines {name}")


def assigned_docstring(tree: ast.Module, name: str) -> str | None:
    """The docstring of the top-level variable `name` ("" when assigned without one)."""
    body = tree.body
    for index, node in enumerate(body):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            after = body[index + 1] if index + 1 < len(body) else None
            if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                return str(after.value.value)
            return ""
    return None


def has_docstring(module: str, qualname: str) -> bool:
    tree = module_source(module)
    defined = [
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == qualname
    ]
    if defined:  # the last definition is the one that counts (after any `@overload`s)
        return bool(ast.get_docstring(defined[-1]))
    return bool(assigned_docstring(tree, qualname))


def entries(name: str) -> list[str]:
    """The reference pages that document `name`, as `page: directive`."""
    module, qualname = definition(name)
    found = []
    for directive in all_directives():
        exact = directive.path == f"{module}.{qualname}"
        member = (
            directive.path == module
            and (directive.members is None or qualname in directive.members)
            and not qualname.startswith("_")
            and has_docstring(module, qualname)
        )
        if exact or member:
            found.append(f"{directive.page}: ::: {directive.path}")
    return found


def test_the_pages_are_read() -> None:
    paths = {directive.path for directive in all_directives()}
    assert {"rxstream.models", "rxstream.errors", "rxstream.operators.lines.lines"} <= paths
    [models] = [d for d in all_directives() if d.path == "rxstream.models"]
    assert models.members is None


@pytest.mark.parametrize("name", sorted(rxstream.__all__))
def test_every_public_name_has_a_reference_entry(name: str) -> None:
    module, qualname = definition(name)
    assert entries(name), (
        f"rs.{name} ({module}.{qualname}) has no entry in docs/reference/: add `::: "
        f"{module}.{qualname}`, or list it under its module's directive (with a docstring)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("::: a.b\n", [("a.b", None)], id="bare"),
        pytest.param(
            "::: a.b\n    options:\n      members: [x, y]\n\nprose\n::: c\n",
            [("a.b", ("x", "y")), ("c", None)],
            id="listed-then-bare",
        ),
        pytest.param("::: a\n    options:\n      members: false\n", [("a", ())], id="none"),
    ],
)
def test_directives_are_read_as_mkdocstrings_reads_them(
    text: str, expected: list[tuple[str, tuple[str, ...] | None]]
) -> None:
    assert [(d.path, d.members) for d in directives(text, "x.md")] == expected


def test_a_variable_needs_a_docstring_string_not_a_comment() -> None:
    tree = ast.parse('#: a comment\nA = 1\nB = 2\n"""B\'s docstring."""\n')
    assert assigned_docstring(tree, "A") == ""
    assert assigned_docstring(tree, "B") == "B's docstring."
    assert assigned_docstring(tree, "C") is None
