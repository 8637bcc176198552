"""How exactplace installs: the formulations folder as ``exactplace.formulations``, never a top-level name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_formulations_install_under_exactplace(tmp_path: Path) -> None:
    """From a directory outside the checkout, ``formulations`` is not importable but ``exactplace.formulations`` is:
    a generic top-level name in site-packages would collide with the package index's ``formulations``."""
    code = (
        "import importlib.util, exactplace.formulations as f; "
        "print(importlib.util.find_spec('formulations') is None, f.__name__, f.__file__.replace('\\\\', '/'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    absent, name, path = out.stdout.split()
    assert absent == "True" and name == "exactplace.formulations" and path.endswith("formulations/__init__.py")
