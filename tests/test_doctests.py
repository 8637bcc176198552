"""Run every docstring example in the installed package, so the docs cannot drift from the code."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import exactplace

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(exactplace.__path__, prefix="exactplace.")
    if not info.name.endswith("__main__")
)


def test_modules_found() -> None:
    assert "exactplace.core.graph" in MODULES and "exactplace.evaluators.max_load" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
