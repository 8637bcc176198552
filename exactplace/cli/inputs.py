"""What the commands read: a workload named on the command line (a file, ``-`` for standard input, or a
shipped workload's name), checked at the boundary."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from exactplace.cli.files import STDIO
from exactplace.core.errors import ParameterError
from exactplace.core.io import Workload, parse_json, read_workload, workload_from_dict
from exactplace.data import shipped_workloads, workload_path

__all__ = ["input_path", "load_workload", "read_stdin"]


def input_path(argument: str) -> str:
    """The file a workload argument names: a path, ``-`` (standard input) or a shipped workload's name."""
    if argument != STDIO and not Path(argument).exists() and argument in shipped_workloads():
        return str(workload_path(argument))
    return argument


def read_stdin(what: str) -> Any:
    """Parsed JSON from standard input; ``what`` names it in errors ("Workload", "Split")."""
    try:
        text = sys.stdin.read()
    except UnicodeDecodeError:
        raise ParameterError(f"{what} on standard input is not UTF-8 text.") from None
    return parse_json(text, what, "on standard input")


def load_workload(argument: str) -> Workload:
    """The workload an argument names (see :func:`input_path`), read and checked."""
    path = input_path(argument)
    if path == STDIO:
        return workload_from_dict(read_stdin("Workload"), name="stdin")
    return read_workload(path)
