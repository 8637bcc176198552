"""What the commands read: a workload named on the command line (a file, ``-`` for standard input, or a
shipped workload's name), checked at the boundary."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from exactplace.core.errors import ParameterError
from exactplace.data import shipped_workloads, workload_path
from exactplace.io import (
    Workload,
    read_bytes,
    with_cluster,
    workload_format,
    workload_from_text,
)
from exactplace.io.paths import STDIO

__all__ = ["CLUSTER_FIELDS", "input_path", "load_workload", "read_stdin_text"]

# command-line option -> the workload field it overrides
CLUSTER_FIELDS = {"accelerators": "maxFPGAs", "memory": "maxSizePerFPGA", "cpus": "maxCPUs", "machines": "machines",
                  "inter_machine_cost": "interMachineCost"}


def input_path(argument: str) -> str:
    """The file a workload argument names: a path, ``-`` (standard input) or a shipped workload's name."""
    if argument != STDIO and not Path(argument).exists() and argument in shipped_workloads():
        return str(workload_path(argument))
    return argument


def read_stdin_text(what: str) -> str:
    """Standard input as text; ``what`` names it in errors ("Workload", "Split")."""
    try:
        return sys.stdin.read()
    except UnicodeDecodeError:
        raise ParameterError(f"{what} on standard input is not UTF-8 text.") from None


def _stdin_bytes() -> bytes:
    """Standard input's bytes (a text stream put in its place, which has none, gives its text as UTF-8)."""
    stream = getattr(sys.stdin, "buffer", None)
    return stream.read() if stream is not None else read_stdin_text("Workload").encode("utf-8")


def load_workload(argument: str, cluster: dict[str, Any] | None = None) -> Workload:
    """The workload an argument names (see :func:`input_path`), read and checked, in any format (standard input
    too: JSON, a PipeDream profile or an ONNX model).

    ``cluster`` overrides the workload's cluster: keys ``accelerators``, ``memory``, ``cpus`` (counts
    and bytes), ``machines`` and ``inter_machine_cost`` (a two-level cluster) and ``bandwidth`` (bytes
    per second; only PipeDream profiles and ONNX models state edges in bytes).
    """
    given = {k: v for k, v in (cluster or {}).items() if v is not None}
    path = input_path(argument)
    bandwidth = given.pop("bandwidth", None)
    text = _stdin_bytes() if path == STDIO else read_bytes(path, "Workload")  # read once: detect, then parse
    if bandwidth is not None and workload_format(text, path) == "json":
        raise ParameterError("--bandwidth applies to PipeDream profiles and ONNX models only: a JSON workload "
                             "states its edge costs as times, not bytes.")
    workload = workload_from_text(text, path, **({} if bandwidth is None else {"bandwidth": bandwidth}))
    if not given:
        return workload
    return with_cluster(workload, **{CLUSTER_FIELDS[key]: value for key, value in given.items()})
