"""A griffe extension: rxstream's docstrings, read as the API reference's Markdown.

The docstrings are written for `help()` and for doctest: examples are bare
`>>>` runs and literal blocks (marble sketches) follow a line ending in `::`.
In Markdown a `>>>` line is a triple-nested quote, so this extension fences
each doctest run as a `pycon` code block (dropping `# doctest:` directives,
which say nothing to a reader) and turns a trailing `::` into `:` (the
indented block after it is already code in Markdown). The docstrings
themselves are not changed.
"""

from __future__ import annotations

import re
from typing import Any

from griffe import Extension

_DIRECTIVE = re.compile(r"\s*# doctest:.*$")


def fence_doctests(text: str) -> str:
    """`text` with every doctest run fenced and every literal-block `::` made `:`."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            run = []
            while i < len(lines) and lines[i].strip():
                current = lines[i]
                if not current.startswith(indent):
                    break
                run.append(indent + _DIRECTIVE.sub("", current[len(indent) :]))
                i += 1
            out += [f"{indent}```pycon", *run, f"{indent}```"]
            continue
        if line.rstrip().endswith("::") and not line.rstrip().endswith(":::"):
            line = line.rstrip()[:-1]
        out.append(line)
        i += 1
    return "\n".join(out)


class FenceDoctests(Extension):
    """Fence doctest runs in every docstring the reference renders."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        docstring = getattr(obj, "docstring", None)
        if docstring is not None and (">>>" in docstring.value or "::" in docstring.value):
            docstring.value = fence_doctests(docstring.value)
