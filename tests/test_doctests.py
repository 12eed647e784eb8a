"""Every example in the package's docstrings runs, so none can rot."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import warnings

import pytest

import rxstream

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(rxstream.__path__, "rxstream.")
    # The CLI's entry module runs the command when imported.
    if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    with warnings.catch_warnings():
        # Old paths kept one release import without a warning; using their names warns.
        warnings.simplefilter("error", DeprecationWarning)
        module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=True)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
