"""Reading and writing the dnn-partitioning JSON format and the reference split format.

Workload format (the paper's published instances)::

    {"maxSizePerFPGA": float, "maxFPGAs": int, "maxCPUs": int,
     "machines"?: int, "interMachineCost"?: float,     # a two-level cluster (exactplace's extension)
     "nodes": [{"id", "supportedOnFpga", "cpuLatency", "fpgaLatency", "isBackwardNode",
                "size"?, "colorClass"?, "name"?, "layerId"?}],
     "edges": [{"sourceId", "destId", "cost", "size"?}]}

Booleans may be JSON booleans or 0/1. :func:`read_workload` also reads PipeDream profiles
(:mod:`exactplace.frontends.pipedream`) and ONNX models (:mod:`exactplace.frontends.onnx`). Split format::

    {"maxLoad": float, "cpus": [{"nodes": [ids], "load": float}], "fpgas": [...]}
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import importlib.util
import inspect
import json
import math
import os
import re
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from exactplace.core.cluster import MAX_INTER_MACHINE_COST, Cluster
from exactplace.core.errors import InputFormatError, ParameterError, PlacementError
from exactplace.core.graph import MAX_SUM, Graph, Node
from exactplace.core.params import Boolean, Integer, Option, Real, brief, validate_options
from exactplace.core.placement import Space
from exactplace.core.placement_array import as_replicas_array
from exactplace.frontends.onnx import onnx_to_dict, parse_model
from exactplace.frontends.pipedream import check_stage_file, looks_like_pipedream, pipedream_stages, pipedream_to_dict

__all__ = [
    "SplitFile",
    "Workload",
    "extend_to_colocated",
    "load_json",
    "parse_json",
    "placement_from_dict",
    "read_bytes",
    "read_placement",
    "read_split",
    "read_split_file",
    "read_text",
    "read_workload",
    "split_file_from_dict",
    "split_file_from_text",
    "split_from_dict",
    "split_from_stages",
    "split_to_dict",
    "with_cluster",
    "workload_format",
    "workload_from_dict",
    "workload_from_text",
    "workload_to_dict",
    "write_workload",
]

PathLike = str | os.PathLike


@dataclass(frozen=True)
class Workload:
    """A graph with the cluster it is to be placed on, as one workload file describes it.

    ``stated`` holds the file's ``maxFPGAs`` and ``maxCPUs`` when they exceed the number of
    nodes: more devices than nodes is the same problem as one device per node, so ``cluster``
    has at most ``graph.n`` of each (nothing is ever sized by a count the input states), while
    reports and :func:`workload_to_dict` use the stated counts.
    """

    graph: Graph
    cluster: Cluster
    name: str = "workload"
    extra: Mapping[str, Any] = field(default_factory=dict)
    stated: Mapping[str, int] = field(default_factory=dict)

    @property
    def accelerators(self) -> int:
        """The number of accelerators the workload states (``cluster`` may hold fewer: at most one per node)."""
        return int(self.stated.get("maxFPGAs", self.cluster.accelerators))

    @property
    def cpus(self) -> int:
        """The number of CPUs the workload states (``cluster`` may hold fewer: at most one per node)."""
        return int(self.stated.get("maxCPUs", self.cluster.cpus))


def _check_path(path: Any, function: str) -> None:
    # An int would be taken as a file descriptor by open(): refuse everything but real paths.
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise ParameterError(
            f"The 'path' parameter of {function} must be a str or os.PathLike file name. Got {path!r} instead."
        )


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members, refusing a key given twice (json.loads would keep the last silently)."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


class _DuplicateKey(ValueError):
    pass


def parse_json(text: str, what: str, source: str) -> Any:
    """Parse JSON text (from a file or standard input), turning every failure into InputFormatError.

    A key given twice in one object is an error naming it: the paper's format has no
    repeated fields, and keeping either value silently would solve another problem.

    >>> parse_json('{"maxFPGAs": 2, "maxFPGAs": 3}', "Workload", "file 'w.json'")
    Traceback (most recent call last):
    ...
    exactplace.core.errors.InputFormatError: Workload file 'w.json' gives the key 'maxFPGAs' twice in one object.
    """
    try:
        return json.loads(text.removeprefix("\ufeff"), object_pairs_hook=_unique_keys)  # (a UTF-8 BOM: no JSON)
    except _DuplicateKey as error:
        raise InputFormatError(f"{what} {source} gives the key {error.args[0]!r} twice in one object.") from None
    except json.JSONDecodeError as error:
        raise InputFormatError(
            f"{what} {source} is not valid JSON: {error.msg} at line {error.lineno}, column {error.colno}."
        ) from None
    except RecursionError:
        raise InputFormatError(f"{what} {source} nests JSON too deeply.") from None
    except ValueError as error:  # e.g. an integer literal with more digits than Python converts
        raise InputFormatError(f"{what} {source} is not valid JSON: {error}.") from None


def load_json(path: PathLike, what: str) -> Any:
    """Parse a JSON file, turning OS and syntax errors into InputFormatError."""
    return parse_json(read_text(path, what), what, f"file {os.fspath(path)!r}")


def read_text(path: PathLike, what: str) -> str:
    """A UTF-8 text file's content, turning OS and decoding errors into InputFormatError naming ``what``."""
    _check_path(path, f"read_{what.lower()}")
    with _reading(path, what):
        with open(path, encoding="utf-8") as handle:
            return handle.read()


def read_bytes(path: PathLike, what: str) -> bytes:
    """A file's content as bytes (a binary format such as ONNX), turning OS errors into InputFormatError."""
    _check_path(path, f"read_{what.lower()}")
    with _reading(path, what):
        with open(path, "rb") as handle:
            return handle.read()


@contextlib.contextmanager
def _reading(path: PathLike, what: str) -> Iterator[None]:
    """Turn the errors of reading ``path`` into InputFormatError naming ``what``."""
    try:
        yield
    except FileNotFoundError:
        raise InputFormatError(f"{what} file {os.fspath(path)!r} does not exist.") from None
    except IsADirectoryError:
        raise InputFormatError(f"{what} file {os.fspath(path)!r} is a directory.") from None
    except PermissionError:
        raise InputFormatError(f"{what} file {os.fspath(path)!r} cannot be read (permission denied).") from None
    except UnicodeDecodeError:
        raise InputFormatError(f"{what} file {os.fspath(path)!r} is not UTF-8 text.") from None
    except OSError as error:
        raise InputFormatError(f"{what} file {os.fspath(path)!r} cannot be read: {error.strerror or error}.") from None


class _Fields:
    """Typed access to one JSON object's fields, naming the object in every error."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise InputFormatError(f"{where} must be a JSON object. Got {type(data).__name__} instead.")
        self.data, self.where = data, where

    def only(self, known: Collection[str], *, free: Collection[str] = ()) -> None:
        """Refuse a field outside ``known`` and ``free`` (free-form annotations), naming the nearest known one.

        An unknown field is refused rather than ignored: a misspelt or unsupported one
        (``"interMachinecost"``, ``"speed"``) would otherwise solve another problem than the file states.
        """
        for key in self.data:
            if key in known or key in free or (free and isinstance(key, str) and key.startswith("_")):
                continue
            close = difflib.get_close_matches(str(key), list(known), n=1)
            if close:
                hint = f"did you mean {close[0]!r}?"
            else:
                hint = f"the fields are {', '.join(map(repr, known))}" + (
                    f"; free-form annotations may be named {', '.join(map(repr, sorted(free)))} or start with '_'"
                    if free else "")
            raise InputFormatError(f"{self.where} has an unknown field {_shown(key)} ({hint}).")

    def _get(self, key: str, default: Any) -> Any:
        if key not in self.data:
            if default is _REQUIRED:
                raise InputFormatError(f"{self.where} is missing the required field {key!r}.")
            return default
        return self.data[key]

    def number(self, key: str, default: Any = None, *, allow_inf: bool = False) -> float:
        """A finite, non-negative number (every number of the format is a time, a size or a cost);
        ``allow_inf`` also takes infinity (an unlimited memory), never NaN."""
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputFormatError(f"{self.where}: field {key!r} must be a number. Got {_shown(value)} instead.")
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the largest float
            number = math.nan  # refused below even with allow_inf: the integer is not infinity
        if math.isnan(number) or (math.isinf(number) and not allow_inf) or number < 0:
            kind = "a non-negative number (inf for unlimited)" if allow_inf else "a finite, non-negative number"
            raise InputFormatError(f"{self.where}: field {key!r} must be {kind}. Got {_shown(value)} instead.")
        return number

    def integer(self, key: str, default: Any = None, *, low: int = -(2**63), high: int = 2**63 - 1) -> int:
        value = self._get(key, default)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputFormatError(f"{self.where}: field {key!r} must be an integer. Got {_shown(value)} instead.")
        if not low <= value <= high:
            raise InputFormatError(f"{self.where}: field {key!r} must be an integer in [{_limit(low)}, "
                                   f"{_limit(high)}]. Got {_shown(value)} instead.")
        return value

    def optional_integer(self, key: str) -> int | None:
        return None if self.data.get(key) is None else self.integer(key)

    def boolean(self, key: str, default: Any = None) -> bool:
        value = self._get(key, default)
        if (value in (0, 1) and not isinstance(value, float)) or isinstance(value, bool):
            return bool(value)
        raise InputFormatError(f"{self.where}: field {key!r} must be a boolean or 0/1. Got {value!r} instead.")

    def array(self, key: str, default: Any = None) -> list:
        value = self._get(key, default)
        if not isinstance(value, list):
            raise InputFormatError(f"{self.where}: field {key!r} must be a list. Got {type(value).__name__} instead.")
        return value


_REQUIRED = object()


def _limit(bound: int) -> str:
    """A range end for a message: ``2**62``, ``2**63 - 1``, ``-2**63`` rather than their digits.

    >>> _limit(2**1000), _limit(2**63 - 1), _limit(-(2**63)), _limit(1)
    ('2**1000', '2**63 - 1', '-2**63', '1')
    """
    sign, size = ("-" if bound < 0 else ""), abs(bound)
    if size < 2**20:
        return str(bound)
    if size & (size - 1) == 0:
        return f"{sign}2**{size.bit_length() - 1}"
    if (size + 1) & size == 0:
        return f"{sign}2**{size.bit_length()} - 1"
    return str(bound)


def _shown(value: Any) -> str:
    """A value for an error message, cut short (a JSON number may have thousands of digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return repr(brief(value))
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_sums(columns: Mapping[str, list[float]]) -> None:
    for name, values in columns.items():
        total = sum(values, 0.0)  # plain float sum: inf on overflow, never an exception
        if not total <= MAX_SUM:
            raise InputFormatError(
                f"The workload's {name!r} values add up to more than {MAX_SUM:g}, so loads would overflow; "
                "express them in a larger unit (e.g. seconds instead of nanoseconds)."
            )


#: The fields of a workload file, at each level. ``size`` of an edge (bytes), ``layerId`` and ``name`` of a
#: node are debug fields of the published instances: read, and ``name`` kept.
WORKLOAD_FIELDS = ("maxSizePerFPGA", "maxFPGAs", "maxCPUs", "machines", "interMachineCost", "nodes", "edges")
NODE_FIELDS = ("id", "supportedOnFpga", "cpuLatency", "fpgaLatency", "isBackwardNode", "size", "colorClass", "name",
               "layerId", "syncLatency")
EDGE_FIELDS = ("sourceId", "destId", "cost", "size")
#: Free-form top-level annotations a workload may carry (as may any top-level field whose name starts with
#: ``_``): kept in ``Workload.extra`` and written back, never read. Every other unknown field is an error.
ANNOTATION_FIELDS = ("comment", "description", "name", "notes", "source", "version")


def workload_from_dict(data: Any, name: str = "workload") -> Workload:
    """Build a :class:`Workload` from the parsed dnn-partitioning JSON.

    Raises
    ------
    InputFormatError
        A required field is missing, has the wrong type, or a field is unknown (the message names it and
        the nearest known field; see ``WORKLOAD_FIELDS``, ``NODE_FIELDS``, ``EDGE_FIELDS`` and the free-form
        ``ANNOTATION_FIELDS``).
    GraphError
        The graph is invalid (cycle, unknown node, duplicate id, bad value).
    """
    top = _Fields(data, "The workload")
    if data.get("format") == "exactplace-plan":
        raise InputFormatError("The workload is an exactplace plan (what solve --out writes), not a workload.")
    if "nodes" not in data and {"fpgas", "cpus"} & data.keys():
        raise InputFormatError("The workload is a split (fields 'fpgas' and 'cpus'), not a workload.")
    top.only(WORKLOAD_FIELDS, free=ANNOTATION_FIELDS)
    sizes = _cluster_sizes(top)  # (read before the nodes: a missing or bad one is named first)
    nodes = []
    for position, raw in enumerate(top.array("nodes", _REQUIRED)):
        named = isinstance(raw, dict) and "id" in raw
        where = f"Node {_shown(raw['id'])}" if named else f"Node at position {position}"
        f = _Fields(raw, where)
        f.only(NODE_FIELDS)
        node_id = f.integer("id", _REQUIRED)
        supported = f.boolean("supportedOnFpga", _REQUIRED)
        acc_time = f.number("fpgaLatency", _REQUIRED)  # required even when unused (unsupported node)
        nodes.append(
            Node(
                id=node_id,
                cpu_time=f.number("cpuLatency", _REQUIRED),
                acc_time=acc_time if supported else None,
                memory=f.number("size", 0.0),
                backward=f.boolean("isBackwardNode", _REQUIRED),
                color=f.optional_integer("colorClass"),
                name=str(raw["name"]) if raw.get("name") is not None else None,
                sync=f.number("syncLatency", 0.0),
            )
        )
    edges = []
    for position, raw in enumerate(top.array("edges", _REQUIRED)):
        where = f"Edge at position {position}"
        if isinstance(raw, dict) and "sourceId" in raw and "destId" in raw:
            where += f" ({_shown(raw['sourceId'])} -> {_shown(raw['destId'])})"
        f = _Fields(raw, where)
        f.only(EDGE_FIELDS)
        edges.append((f.integer("sourceId", _REQUIRED), f.integer("destId", _REQUIRED), f.number("cost", _REQUIRED)))
    _check_sums({
        "cpuLatency": [v.cpu_time for v in nodes],
        "fpgaLatency and cost": [v.acc_time for v in nodes if v.acc_time is not None] + [c for *_, c in edges],
        "size": [v.memory for v in nodes],
        "syncLatency": [v.sync for v in nodes],
    })
    # A node's own comm cost is the cost of its outgoing edges (they normally agree);
    # it matters only for writing and for nodes given without per-edge costs.
    out_cost: dict[int, float] = {}
    for u, _, c in edges:
        out_cost.setdefault(u, c)
    nodes = [Node(**{**v.__dict__, "comm": out_cost.get(v.id, 0.0)}) for v in nodes]
    graph = Graph(nodes, edges)
    cluster, stated = _cluster_of(top, graph, sizes)
    extra = {k: v for k, v in data.items() if k not in WORKLOAD_FIELDS}
    return Workload(graph=graph, cluster=cluster, name=name, extra=extra, stated=stated)


#: The workload's fields that describe its cluster.
CLUSTER_FIELDS = ("maxSizePerFPGA", "maxFPGAs", "maxCPUs", "machines", "interMachineCost")


def _cluster_sizes(top: _Fields) -> tuple[float, int, int]:
    """The workload's required cluster fields: memory per accelerator, accelerators and CPUs, as stated."""
    return (top.number("maxSizePerFPGA", _REQUIRED, allow_inf=True),
            top.integer("maxFPGAs", _REQUIRED, low=0, high=2**1000),
            top.integer("maxCPUs", _REQUIRED, low=0, high=2**1000))


def _cluster_of(top: _Fields, graph: Graph, sizes: tuple[float, int, int]) -> tuple[Cluster, dict[str, int]]:
    """The cluster the workload's fields state for ``graph`` (``sizes``: :func:`_cluster_sizes`), and the device
    counts it states beyond one per node."""
    memory, accelerators, cpus = sizes
    if accelerators + cpus == 0:
        raise InputFormatError("The workload's maxFPGAs and maxCPUs are both 0: there is no device to place on.")
    # More devices than nodes is the same problem as one device per node: the cluster (and so every
    # table and array built from it) is sized by the graph; the stated counts are kept for reports.
    machines = top.integer("machines", 1, low=1, high=2**62)
    inter_machine_cost = top.number("interMachineCost", 1.0)
    if accelerators % machines:
        raise InputFormatError(
            f"The workload's 'machines' ({machines}) must divide its 'maxFPGAs' ({_shown(accelerators)}).")
    if not 1.0 <= inter_machine_cost <= MAX_INTER_MACHINE_COST:
        raise InputFormatError(f"The workload's 'interMachineCost' ({inter_machine_cost:g}) must be in [1, "
                               f"{MAX_INTER_MACHINE_COST:.0f}] (the intra-machine bandwidth over the inter-machine "
                               "one).")
    # A two-level cluster keeps every accelerator: its machines are what the split is priced by.
    two_level = inter_machine_cost > 1.0
    stated = {key: count for key, count in (("maxFPGAs", accelerators), ("maxCPUs", cpus))
              if count > graph.n and not (two_level and key == "maxFPGAs")}
    if two_level and accelerators > 2**62:
        raise InputFormatError(f"The workload's 'maxFPGAs' ({_shown(accelerators)}) is more than a two-level "
                               "cluster holds (2**62).")
    cluster = Cluster(accelerators=accelerators if two_level else min(accelerators, graph.n), memory=memory,
                      cpus=min(cpus, graph.n), machines=machines if two_level else 1,
                      inter_machine_cost=inter_machine_cost)
    return cluster, stated


def with_cluster(workload: Workload, **fields: Any) -> Workload:
    """``workload`` on another cluster: ``fields`` (named as the file names them, :data:`CLUSTER_FIELDS`) replace
    the workload's and are checked as a file's are; the graph is kept as it is, not read again (a command line's
    ``--accelerators`` on a 200,000-node profile).

    >>> from exactplace import read_workload, workload_path
    >>> w = with_cluster(read_workload(workload_path("layer_bert24_inference")), maxFPGAs=3, maxSizePerFPGA=math.inf)
    >>> w.cluster.accelerators, w.cluster.max_memory
    (3, inf)
    """
    unknown = sorted(set(fields) - set(CLUSTER_FIELDS))
    if unknown:
        raise ParameterError(f"with_cluster: {unknown} are no cluster fields; they are {list(CLUSTER_FIELDS)}.")
    if not workload.cluster.is_homogeneous:
        raise ParameterError("with_cluster: the workload's cluster is heterogeneous; the file's fields state none.")
    cluster = workload.cluster
    stated = {"maxSizePerFPGA": cluster.max_memory if cluster.accelerators else 0.0,
              "maxFPGAs": workload.accelerators, "maxCPUs": workload.cpus, "machines": cluster.machines,
              "interMachineCost": cluster.inter_machine_cost}
    top = _Fields({**stated, **fields}, "The workload")
    cluster, beyond = _cluster_of(top, workload.graph, _cluster_sizes(top))
    return dataclasses.replace(workload, cluster=cluster, stated=beyond)


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
    _check_path(path, "read_workload")
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


def workload_to_dict(workload: Workload) -> dict[str, Any]:
    """Inverse of :func:`workload_from_dict` (homogeneous clusters only: the format has one memory)."""
    graph, cluster = workload.graph, workload.cluster
    if not cluster.is_homogeneous:
        raise InputFormatError(
            "The dnn-partitioning format holds one memory size and no speeds; this cluster is heterogeneous."
        )
    nodes = []
    for v in graph.nodes():
        entry: dict[str, Any] = {
            "id": v.id, "supportedOnFpga": v.acc_time is not None, "cpuLatency": v.cpu_time,
            "fpgaLatency": v.acc_time if v.acc_time is not None else 0.0, "isBackwardNode": v.backward,
            "size": v.memory,
        }
        if v.color is not None:
            entry["colorClass"] = v.color
        if v.name != str(v.id):
            entry["name"] = v.name
        if v.sync:
            entry["syncLatency"] = v.sync
        nodes.append(entry)
    memory = cluster.max_memory if cluster.accelerators else 0.0
    return {
        **workload.extra,  # fields this format does not define are written back untouched
        "maxSizePerFPGA": memory if math.isfinite(memory) else 1e300,
        "maxFPGAs": workload.accelerators, "maxCPUs": workload.cpus, "nodes": nodes,
        "edges": [{"sourceId": u, "destId": v, "cost": c} for u, v, c in graph.edges()],
        **({"machines": cluster.machines, "interMachineCost": cluster.inter_machine_cost}
           if cluster.is_two_level else {}),
    }


def write_workload(workload: Workload, path: PathLike) -> None:
    """Write a workload in the dnn-partitioning JSON format."""
    Path(path).write_text(json.dumps(workload_to_dict(workload), indent=1), encoding="utf-8")


def split_from_dict(data: Any, graph: Graph, cluster: Cluster, *, where: str = "The split") -> np.ndarray:
    """Turn a reference split (``{"cpus": [{"nodes": ...}], "fpgas": [...]}``) into a device array.

    Nodes the split omits are filled in through colocation (see :func:`extend_to_colocated`),
    which is how a forward-only expert split covers a training graph.

    Raises
    ------
    InputFormatError
        Malformed split.
    PlacementError
        Unknown node id, a node listed twice, more devices than the cluster has, or a node
        that colocation cannot place.
    """
    top = _Fields(data, where)
    groups = {"fpgas": top.array("fpgas", []), "cpus": top.array("cpus", [])}
    limits = {"fpgas": cluster.accelerators, "cpus": cluster.cpus}
    device = np.full(graph.n, -1, dtype=np.int64)
    for kind, entries in groups.items():
        used = [i for i, e in enumerate(entries) if _Fields(e, f"{where}: {kind}[{i}]").array("nodes", _REQUIRED)]
        if used and used[-1] >= limits[kind]:
            label = "accelerators" if kind == "fpgas" else "CPUs"
            raise PlacementError(
                f"{where} uses {used[-1] + 1} {label} but the cluster has {limits[kind]}."
            )
        for i, entry in enumerate(entries):
            d = i if kind == "fpgas" else cluster.accelerators + i
            for node_id in entry["nodes"]:
                if isinstance(node_id, bool) or not isinstance(node_id, int):
                    raise InputFormatError(f"{where}: {kind}[{i}] lists {node_id!r}, which is not a node id.")
                try:
                    position = graph.index_of(node_id)
                except Exception:
                    raise PlacementError(
                        f"{where}: {kind}[{i}] lists node {node_id}, which is not in the graph."
                    ) from None
                if device[position] != -1:
                    raise PlacementError(f"{where} places {graph.describe(position)} twice.")
                device[position] = d
    return extend_to_colocated(graph, device, where=where)


def extend_to_colocated(graph: Graph, device: np.ndarray, *, where: str = "The split") -> np.ndarray:
    """Place every unplaced node (``-1``) on the device of its colocation class.

    This is how the paper extends a forward split to a training graph: each backward node
    follows the forward nodes of its color class.
    """
    device = device.copy()
    missing = np.flatnonzero(device < 0)
    if missing.size == 0:
        return device
    class_device: dict[int, int] = {}
    for i in np.flatnonzero(device >= 0):
        class_device.setdefault(int(graph.color[i]), int(device[i]))
    for i in missing:
        c = int(graph.color[i])
        if c not in class_device:
            raise PlacementError(
                f"{where} does not place {graph.describe(i)}, and no node of its color class is placed."
            )
        device[i] = class_device[c]
    return device


def read_split(path: PathLike, graph: Graph, cluster: Cluster) -> np.ndarray:
    """Read a split file (the reference format) as a device array."""
    return split_from_dict(load_json(path, "Split"), graph, cluster, where=f"Split {Path(path).name!r}")


def split_to_dict(
    graph: Graph, cluster: Cluster, device: np.ndarray, loads: np.ndarray | None = None
) -> dict[str, Any]:
    """Write a device array in the reference split format (``load`` per device when given)."""
    def entry(d: int) -> dict[str, Any]:
        nodes = sorted(int(graph.ids[i]) for i in np.flatnonzero(device == d))
        return {"nodes": nodes, "load": float(loads[d]) if loads is not None else -1}

    return {
        "maxLoad": float(loads.max()) if loads is not None else -1,
        "fpgas": [entry(d) for d in range(cluster.accelerators)],
        "cpus": [entry(d) for d in range(cluster.accelerators, cluster.num_devices)],
    }


@dataclass(frozen=True)
class SplitFile:
    """What a split file states: the devices and, for an exactplace plan, how it was solved.

    ``objective``, ``space`` and ``q`` are the plan's (None for a reference split);
    ``subgraph`` each accelerator node's subgraph index (latency plans with ``q >= 2``);
    ``options`` the scoring options it was solved with (``overlap``, ``gpipe``, ``contention``);
    ``order`` the execution order (node positions) a makespan plan was scored with;
    ``replicas`` each accelerator's replicas (a throughput plan solved with ``replication=True``).
    """

    device: np.ndarray
    objective: str | None = None
    space: Space | None = None
    q: int | None = None
    subgraph: np.ndarray | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    order: list[int] | None = None
    replicas: np.ndarray | None = None


def _plan_from_dict(data: Any, graph: Graph, cluster: Cluster, *, where: str) -> SplitFile:
    """An exactplace plan (``Placement.to_json``): ``placement`` lists id, device name and, for latency
    plans with several subgraphs per accelerator, the subgraph index."""
    from exactplace.core.objectives import OBJECTIVES, SCORING_OPTIONS

    top = _Fields(data, where)
    names = {name: d for d, name in enumerate(cluster.device_names())}
    device = np.full(graph.n, -1, dtype=np.int64)
    subgraph = np.full(graph.n, -1, dtype=np.int64)
    for position, raw in enumerate(top.array("placement", _REQUIRED)):
        entry = _Fields(raw, f"{where}: placement[{position}]")
        node_id = entry.integer("id", _REQUIRED)
        name = entry.data.get("device")
        if name not in names:
            raise PlacementError(
                f"{where} puts node {node_id} on device {name!r}, which the cluster lacks ({', '.join(names)})."
            )
        try:
            index = graph.index_of(node_id)
        except Exception:
            raise PlacementError(f"{where} lists node {node_id}, which is not in the graph.") from None
        if device[index] != -1:
            raise PlacementError(f"{where} places {graph.describe(index)} twice.")
        device[index] = names[name]
        if entry.data.get("subgraph") is not None:
            subgraph[index] = entry.integer("subgraph", low=0, high=2**31)
    missing = np.flatnonzero(device < 0)
    if missing.size:
        raise PlacementError(f"{where} does not place {graph.describe(int(missing[0]))}.")
    on_acc = device < cluster.accelerators
    stated = subgraph[on_acc] >= 0
    if stated.any() and not stated.all():
        node = graph.describe(int(np.flatnonzero(on_acc & (subgraph < 0))[0]))
        raise InputFormatError(f"{where} gives some accelerator nodes a 'subgraph' but not {node}.")
    objective = top.data.get("objective_name")
    if objective is not None and objective not in OBJECTIVES:
        raise InputFormatError(f"{where}: field 'objective_name' must be one of {list(OBJECTIVES)}. "
                               f"Got {_shown(objective)} instead.")
    space = top.data.get("space")
    if space is not None and space not in {s.value for s in Space}:
        raise InputFormatError(f"{where}: field 'space' must be one of {[s.value for s in Space]} or null. "
                               f"Got {_shown(space)} instead.")
    q = None if top.data.get("q") is None else top.integer("q", low=1, high=2**31)
    info = top.data.get("info") if isinstance(top.data.get("info"), dict) else {}
    given = info.get("options") if isinstance(info.get("options"), dict) else {}
    scoring = {key for keys in SCORING_OPTIONS.values() for key in keys}
    options = {key: value for key, value in given.items() if key in scoring and isinstance(value, bool)}
    order = info.get("order")
    if order is not None and not (isinstance(order, list) and all(isinstance(i, int) for i in order)):
        raise InputFormatError(f"{where}: field 'info.order' must be a list of node positions.")
    replicas = None
    if top.data.get("replicas") is not None:
        raw = top.array("replicas")
        if len(raw) != cluster.accelerators or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 1
                                                       for r in raw):
            raise InputFormatError(f"{where}: field 'replicas' must list one integer >= 1 per accelerator "
                                   f"({cluster.accelerators}). Got {_shown(raw)} instead.")
        replicas = as_replicas_array(graph, cluster, device, np.array(raw, dtype=np.int64))
    return SplitFile(device, objective, None if space is None else Space(space), q,
                     subgraph if stated.any() else None, options, order, replicas)


def split_file_from_dict(data: Any, graph: Graph, cluster: Cluster, *, where: str = "The split") -> SplitFile:
    """A split in either format (reference split or exactplace plan); a workload or anything else is refused."""
    if isinstance(data, dict) and data.get("format") == "exactplace-plan":
        return _plan_from_dict(data, graph, cluster, where=where)
    if isinstance(data, dict) and "nodes" in data and "edges" in data:
        raise InputFormatError(f"{where} is a workload (it has 'nodes' and 'edges'), not a split.")
    if not isinstance(data, dict) or not ({"fpgas", "cpus"} & data.keys()):
        raise InputFormatError(
            f"{where} is not a split: expected a reference split (fields 'fpgas' and 'cpus') or an exactplace plan."
        )
    return SplitFile(split_from_dict(data, graph, cluster, where=where))


def split_from_stages(stages: Mapping[str, int], graph: Graph, cluster: Cluster, *, where: str) -> np.ndarray:
    """The device array of a PipeDream partition: stage ``K`` on accelerator ``K``, matched by node name
    (a backward node ``nodeN.backward`` follows its forward node ``nodeN``)."""
    device = np.empty(graph.n, dtype=np.int64)
    for i, name in enumerate(graph.names):
        stage = stages.get(name.removesuffix(".backward"))
        if stage is None:
            raise PlacementError(f"{where} does not place {graph.describe(i)}: it names no such PipeDream node.")
        if stage >= cluster.accelerators:
            raise PlacementError(f"{where} puts {graph.describe(i)} in stage {stage}, but the cluster has "
                                 f"{cluster.accelerators} accelerators (stage K runs on accelerator K).")
        device[i] = stage
    return device


def split_file_from_text(text: str, graph: Graph, cluster: Cluster, *, where: str = "The split",
                         source: str = "on standard input") -> SplitFile:
    """A split in any format: JSON (see :func:`split_file_from_dict`) or a PipeDream profile partitioned
    by its optimizer (``stage_id=K`` on every node, see :func:`exactplace.frontends.pipedream.pipedream_stages`).

    ``where`` names the split in errors about its content, ``source`` where its text came from.
    """
    if looks_like_pipedream(text):
        # A stage file must be one of this very graph: one for another model would be scored on the nodes the
        # two happen to share.
        check_stage_file(text, graph, cluster, where=where)
        try:
            stages = pipedream_stages(text)
        except InputFormatError as error:
            raise InputFormatError(f"{where}: {error}") from None
        return SplitFile(split_from_stages(stages, graph, cluster, where=where))
    return split_file_from_dict(parse_json(text, "Split", source), graph, cluster, where=where)


def read_split_file(path: PathLike, graph: Graph, cluster: Cluster) -> SplitFile:
    """Read a split in any format (see :func:`split_file_from_text`)."""
    return split_file_from_text(read_text(path, "Split"), graph, cluster, where=f"Split {Path(path).name!r}",
                                source=f"file {os.fspath(path)!r}")


def read_placement(path: PathLike, graph: Graph, cluster: Cluster) -> np.ndarray:
    """The device array of a split in either format: the reference split format or an exactplace plan."""
    return read_split_file(path, graph, cluster).device


def placement_from_dict(data: Any, graph: Graph, cluster: Cluster, *, where: str = "The split") -> np.ndarray:
    """The device array of parsed JSON in either split format; a workload or anything else is refused."""
    return split_file_from_dict(data, graph, cluster, where=where).device
