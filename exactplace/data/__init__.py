"""Workloads shipped inside the package (MIT licensed, from the NeurIPS 2020 paper's release).

They make the README's first command and the doctests work without ``../shared``.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["shipped_workloads", "workload_path"]


def shipped_workloads() -> list[str]:
    """Names of the workloads inside the package."""
    folder = resources.files(__name__) / "workloads"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def workload_path(name: str) -> Path:
    """Path of a shipped workload, e.g. ``workload_path("layer_bert24_inference")``."""
    path = Path(str(resources.files(__name__) / "workloads" / f"{name}.json"))
    if not path.is_file():
        from exactplace.core.errors import InputFormatError

        raise InputFormatError(f"No shipped workload named {name!r}; shipped: {', '.join(shipped_workloads())}.")
    return path
