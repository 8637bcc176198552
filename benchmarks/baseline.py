"""An earlier revision of exactplace beside this one, so that a benchmark can run both in one run.

:func:`checkout` makes (once, cached under the system's temporary directory) a worktree of
``REV`` with its C++ extension built in place; :func:`run` runs a Python command with that tree
first on ``sys.path``, so ``import exactplace`` there is the earlier revision. A benchmark then
alternates base and head solve by solve (same machine load for both), and prints them side by
side with their ratio. Needs git, the checkout's history and a C++ compiler.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["checkout", "run"]


def checkout(revision: str) -> Path:
    """A built worktree of ``revision`` (reused when it exists)."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", revision], capture_output=True, text=True,
                            check=True).stdout.strip()
    tree = Path(tempfile.gettempdir()) / f"exactplace-baseline-{commit[:12]}"
    if not (tree / ".built").exists():
        if not tree.exists():
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True,
                           capture_output=True)
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, check=True,
                       capture_output=True)
        formulations = tree / "exactplace" / "formulations"
        if not formulations.exists():  # installed under exactplace's name (setup.py's package_dir)
            formulations.symlink_to(tree / "formulations", target_is_directory=True)
        (tree / ".built").write_text(commit)
    return tree


def run(tree: Path | None, arguments: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``python arguments...`` importing exactplace from ``tree`` (None: this checkout's installed one)."""
    environment = dict(os.environ)
    if tree is not None:
        environment["PYTHONPATH"] = os.pathsep.join([str(tree), environment.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run([sys.executable, *arguments], capture_output=True, text=True, timeout=timeout,
                          env=environment, cwd=tempfile.gettempdir())
