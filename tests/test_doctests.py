"""Run every docstring example in the installed package, so the docs cannot drift from the code."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import exactplace.formulations
import pytest

import exactplace

# exactplace.formulations lives in its own folder (setup.py's package_dir), so walk it too.
MODULES = sorted(
    info.name
    for path, prefix in ((exactplace.__path__, "exactplace."),
                         (exactplace.formulations.__path__, "exactplace.formulations."))
    for info in pkgutil.walk_packages(path, prefix=prefix)
    if not info.name.endswith("__main__")
)


def test_modules_found() -> None:
    assert "exactplace.core.graph" in MODULES and "exactplace.evaluators.max_load" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
