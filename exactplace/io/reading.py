"""Reading any workload file: dnn-partitioning JSON, a PipeDream profile or an ONNX model.

:func:`read_workload` detects the format (:func:`workload_format`) and dispatches to the
importers of :mod:`exactplace.frontends.pipedream` and :mod:`exactplace.frontends.onnx`, which
turn a profile or a model into the JSON format's dictionary (:mod:`exactplace.io.workload`).
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
from pathlib import Path
from typing import Any

from exactplace.core.errors import InputFormatError, ParameterError
from exactplace.core.params import Boolean, Integer, Option, Real, validate_options
from exactplace.frontends.onnx import onnx_to_dict, parse_model
from exactplace.frontends.pipedream import looks_like_pipedream, pipedream_to_dict
from exactplace.io.files import PathLike, check_path, parse_json, read_bytes
from exactplace.io.workload import Workload, workload_from_dict

__all__ = ["FORMATS", "read_workload", "workload_format", "workload_from_text"]


#: The workload formats :func:`read_workload` reads (``format=``), and the function that converts each.
FORMATS = ("json", "pipedream", "onnx")
_IMPORTERS = {"pipedream": pipedream_to_dict, "onnx": onnx_to_dict}
_KINDS = {"json": "JSON workloads", "pipedream": "PipeDream profiles", "onnx": "ONNX models"}

# Bytes no text format holds (C0 controls but tab, newline, form feed, carriage return): an ONNX protobuf
# starts with one (0x08, the tag of ir_version), so a small model that happens to be valid UTF-8 is binary too.
_BINARY = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f]")


def read_workload(path: PathLike, format: str | None = None, **options: Any) -> Workload:
    """Read a workload file: dnn-partitioning JSON, a PipeDream ``graph.txt`` profile or an ONNX model.

    The format is detected from the file (see :func:`workload_format`); ``format="json"``,
    ``format="pipedream"`` or ``format="onnx"`` forces it. ``options`` go to
    :func:`exactplace.frontends.pipedream.pipedream_to_dict` (``training``, ``bandwidth``, ``accelerators``,
    ``memory``, ``cpus``) or :func:`exactplace.frontends.onnx.onnx_to_dict` (``bandwidth``,
    ``accelerators``, ``memory``, ``cpus``, ``accelerator_rate``, ``cpu_rate``, ``dims``, ``profile``,
    ``runs``).

    Examples
    --------
    >>> from exactplace.data import workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> w.graph.n, w.cluster.accelerators
    (32, 6)
    """
    check_path(path, "read_workload")
    _check_format(format)
    return workload_from_text(read_bytes(path, "Workload"), path, format, **options)


def workload_format(content: bytes | str, path: PathLike) -> str:
    """The format of a workload file, from its name and content: ``"onnx"``, ``"pipedream"`` or ``"json"``.

    A ``.onnx`` file is ONNX, and so is binary content (not UTF-8, or holding control characters no text
    format has); text whose first line is a PipeDream node line is a PipeDream profile; the rest is JSON.

    >>> workload_format(b'{"nodes": []}', "w.json"), workload_format(b"\\x08\\x07\\x12\\x05torch", "model")
    ('json', 'onnx')
    """
    if Path(path).suffix.lower() == ".onnx":
        return "onnx"
    if isinstance(content, bytes):
        if _BINARY.search(content):
            return "onnx"
        try:
            content = content.decode("utf-8")
        except UnicodeDecodeError as error:
            # Text up to a stray byte is a text file with a bad byte (reported as such, at its line), not ONNX.
            head = content[:error.start].decode("utf-8").removeprefix("\ufeff")
            if head.lstrip().startswith(("{", "[")):
                return "json"
            return "pipedream" if head.strip() and looks_like_pipedream(head) else "onnx"
    return "pipedream" if looks_like_pipedream(content) else "json"


def _check_format(format: str | None) -> None:
    if format is not None and format not in FORMATS:
        raise ParameterError(f"read_workload: format must be one of {', '.join(map(repr, FORMATS))}, got {format!r}")


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent that fails, or sys.modules[module] set to None
        return False


#: The cluster options of the importers, checked here, before any conversion (a NaN memory or bandwidth
#: would otherwise read as unlimited).
_IMPORT_OPTIONS = {
    "memory": Option("memory", Real(low=0, finite=False), None, "bytes per accelerator, inf for unlimited"),
    "bandwidth": Option("bandwidth", Real(low=0, low_closed=False, finite=False), None, "bytes per second, or inf"),
    "accelerators": Option("accelerators", Integer(low=0), None, "number of accelerators"),
    "cpus": Option("cpus", Integer(low=0), None, "number of CPUs"),
    "training": Option("training", Boolean(), None, "add backward nodes"),
}


def workload_from_text(text: str | bytes, path: PathLike, format: str | None = None, **options: Any) -> Workload:
    """The workload in ``text`` (the file's content, as text or bytes), read from ``path`` (its name
    comes from the file name; ``"-"``: standard input): see :func:`read_workload`, which reads the file and calls
    this."""
    _check_format(format)
    chosen = format or workload_format(text, path)
    stdin = os.fspath(path) == "-"
    source = "Workload on standard input" if stdin else f"Workload file {os.fspath(path)!r}"
    importer = _IMPORTERS.get(chosen)
    known = set(inspect.signature(importer).parameters) - {"data", "text", "source", "path"} if importer else set()
    if set(options) - known:
        applies = "apply only to PipeDream profiles and ONNX models" if importer is None else (
            f"do not apply to {_KINDS[chosen]} (they take {', '.join(sorted(known))})")
        raise ParameterError(f"read_workload: options {sorted(set(options) - known)} {applies}")
    validate_options(options, _IMPORT_OPTIONS, "read_workload")
    if chosen == "onnx":
        data = text.encode("utf-8") if isinstance(text, str) else text
        guessed = format is None and Path(path).suffix.lower() != ".onnx"
        if guessed and not _installed("onnx"):
            raise InputFormatError(f"{source} is not UTF-8 text (to read it as an ONNX model, install onnx: "
                                   "pip install 'exactplace[onnx]').")
        model = parse_model(data, source, also="binary, not UTF-8 text (JSON or a PipeDream profile), and "
                            if guessed else "")
        return workload_from_dict(onnx_to_dict(model, source=source, path=path, **options),
                                  name="stdin" if stdin else Path(path).stem)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as open() in text mode
        except UnicodeDecodeError as error:
            line = text.count(b"\n", 0, error.start) + 1
            raise InputFormatError(
                f"{source} is not UTF-8 text: byte {text[error.start]:#04x} at line {line}.") from None
    if chosen == "pipedream":
        # vgg16.graph.txt -> vgg16; PipeDream's own profiles are all named graph.txt
        name = Path(path).name.removesuffix(".txt").removesuffix("graph").rstrip("._") or "pipedream"
        return workload_from_dict(pipedream_to_dict(text, **options), name="stdin" if stdin else name)
    origin = "on standard input" if stdin else f"file {os.fspath(path)!r}"
    return workload_from_dict(parse_json(text, "Workload", origin), name="stdin" if stdin else Path(path).stem)

