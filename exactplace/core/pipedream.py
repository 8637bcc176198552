"""Read PipeDream profiles (``graph.txt``) as exactplace workloads.

PipeDream (msr-fiddle/pipedream, MIT license) profiles a model into a text graph::

    node4 -- Conv2d(...) -- forward_compute_time=F, backward_compute_time=B, activation_size=A, parameter_size=P
    \tnode4 -- node5

Mapping choices (each one deliberate):

* Times stay in the profile's unit (milliseconds); CPU and accelerator time are both the profiled time.
* ``training=True`` (default): every profiled node ``v`` becomes a forward node (time F) and a
  backward node (time B) sharing one colour class, so both halves land on the same device, as PipeDream's
  stages do. Forward edges ``u -> v`` are mirrored as backward edges ``bw(v) -> bw(u)`` and each
  forward node feeds its own backward node. ``training=False`` keeps the forward pass only.
* Edge cost = bytes / ``bandwidth`` (bytes per second, as PipeDream's ``-b``) in milliseconds, the
  profile's unit: ``1000 * bytes / bandwidth`` (activation bytes of the source forward, the same bytes
  of gradient backward); the default ``bandwidth=inf`` makes transfers free, PipeDream's optimizer default.
* Parameter synchronisation (data-parallel replication, paper Appendix C.2): the forward node's
  ``Node.sync`` = ``4 P / sync_bandwidth`` (PipeDream's all-reduce model: a stage replicated ``r`` times
  pays ``4 (r - 1) P / (r B)``), bytes per second again, in milliseconds; ``sync_bandwidth`` defaults to
  ``bandwidth``, so ``bandwidth=inf`` makes replication free (PipeDream's ``-b 1e30``). PipeDream's
  optimizer ignores activation transfers (without a compression ratio) but prices the all-reduce:
  ``bandwidth=inf, sync_bandwidth=B`` is that model.
* Memory: parameters ``P`` plus the activation ``A`` on the forward node; when training the
  backward node adds gradients and optimizer state (``2 P``). One version of each: PipeDream's
  hierarchical optimizer multiplies a stage's activations and parameters by the number of
  versions in flight (``ceil((K - (m + 1)) / (m + 1))``), which depends on the stage's position and
  so is no per-node weight; stated budgets must leave room for it.
* Input sources (``Input*`` modules) are free (zero time, zero memory): the data is already there.
* ``__getitem__`` nodes without successors are dropped, as PipeDream's optimizer drops them.
* A list activation ``[a; b]`` is summed.
* ``stage_id=K`` fields (a profile PipeDream's optimizer partitioned) are ignored by the workload and
  read as a split by :func:`pipedream_stages`: stage ``K`` runs on accelerator ``K``, a node's backward
  half with its forward half. A replicated stage is read as one device (the profile does not say how
  many replicas it has).

Malformed files raise :class:`InputFormatError` naming the line number and field.
"""

from __future__ import annotations

import math
import re
from typing import Any

from exactplace.core.errors import InputFormatError, check_param

#: Bandwidths are in bytes per second (PipeDream's ``-b``); the profile's times, and so every cost, in ms.
MS_PER_S = 1e3

_NODE = re.compile(r"^(node\w+) -- (.*) -- (.*)$")
_EDGE = re.compile(r"^\t(node\w+) -- (node\w+)\s*$")
_FIELDS = ("forward_compute_time", "backward_compute_time", "activation_size", "parameter_size")


def looks_like_pipedream(text: str) -> bool:
    """True when the first non-blank line of ``text`` is a PipeDream node line."""
    for line in text.splitlines():
        if line.strip():
            return bool(_NODE.match(line))
    return False


def _number(value: str, lineno: int, field: str) -> float:
    value = value.strip()
    parts = value[1:-1].split(";") if value.startswith("[") and value.endswith("]") else [value]
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        raise InputFormatError(f"Line {lineno}: field {field} is not a number: {value!r}") from None
    total = sum(numbers)
    if not math.isfinite(total) or any(x < 0 for x in numbers):
        raise InputFormatError(f"Line {lineno}: field {field} must be finite and >= 0, got {value!r}")
    return total


def parse_pipedream(text: str) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str]]]:
    """Parse the profile text into ``{node: fields}`` and edge list, checking every line."""
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[tuple[str, str, int]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.startswith("\t"):
            m = _EDGE.match(line)
            if not m:
                raise InputFormatError(f"Line {lineno}: edge line must read '\\tnodeU -- nodeV', got {line.strip()!r}")
            edges.append((m.group(1), m.group(2), lineno))
            continue
        m = _NODE.match(line)
        if not m:
            raise InputFormatError(f"Line {lineno}: node line must read 'nodeN -- module -- fields', got {line!r}")
        name, module, rest = m.groups()
        if name in nodes:
            raise InputFormatError(f"Line {lineno}: node {name} is defined twice")
        fields: dict[str, Any] = {"module": module, "line": lineno}
        for item in rest.split(", "):
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq:
                raise InputFormatError(f"Line {lineno}: field {item!r} has no '='")
            if key in fields:
                raise InputFormatError(f"Line {lineno}: field {key} given twice")
            if key == "stage_id":
                try:
                    fields[key] = int(value)
                except ValueError:
                    raise InputFormatError(f"Line {lineno}: field stage_id is not an integer: {value!r}") from None
                if fields[key] < 0:
                    raise InputFormatError(f"Line {lineno}: field stage_id must be >= 0, got {value!r}")
            elif key in _FIELDS:
                fields[key] = _number(value, lineno, key)
            else:
                raise InputFormatError(f"Line {lineno}: unknown field {key!r}")
        for key in _FIELDS:
            if key not in fields:
                raise InputFormatError(f"Line {lineno}: field {key} is missing")
        nodes[name] = fields
    for u, v, lineno in edges:
        for end in (u, v):
            if end not in nodes:
                raise InputFormatError(f"Line {lineno}: edge names unknown node {end}")
    return nodes, [(u, v) for u, v, _ in edges]


def pipedream_stages(text: str) -> dict[str, int]:
    """The stage of every node of a partitioned profile, by node name (``stage_id=K`` lines).

    Nodes the workload drops (unused ``__getitem__`` sinks) need none; every other node must state
    one, else :class:`InputFormatError` names its line.
    """
    nodes, edges = parse_pipedream(text)
    stages = {}
    for name in _kept(nodes, edges):
        if "stage_id" not in nodes[name]:
            raise InputFormatError(f"Line {nodes[name]['line']}: field stage_id is missing (node {name}): "
                                   "a split read from a PipeDream profile needs a stage for every node")
        stages[name] = nodes[name]["stage_id"]
    return stages


def _kept(nodes: dict[str, dict[str, Any]], edges: list[tuple[str, str]]) -> list[str]:
    """The nodes a workload keeps: all but ``__getitem__`` nodes without successors (PipeDream drops them)."""
    has_out = {u for u, _ in edges}
    return [n for n in nodes if not (nodes[n]["module"].startswith("__getitem__") and n not in has_out)]


def pipedream_to_dict(
    text: str, *, training: bool = True, bandwidth: float = math.inf, accelerators: int = 4,
    memory: float = math.inf, cpus: int = 0, sync_bandwidth: float | None = None,
) -> dict[str, Any]:
    """Convert a PipeDream profile to the dnn-partitioning dictionary (see the module docstring)."""
    if sync_bandwidth is None:
        sync_bandwidth = bandwidth
    check_param(isinstance(sync_bandwidth, (int, float)) and not isinstance(sync_bandwidth, bool)
                and sync_bandwidth > 0, "sync_bandwidth", "read_workload",
                "a positive number of bytes per second, or inf", sync_bandwidth)
    nodes, edges = parse_pipedream(text)
    kept = _kept(nodes, edges)
    kept_set = set(kept)
    edges = [(u, v) for u, v in edges if u in kept_set and v in kept_set]
    ids = {n: i for i, n in enumerate(kept)}
    offset = len(kept)
    out_nodes: list[dict[str, Any]] = []
    for n in kept:
        f = nodes[n]
        source = f["module"].startswith("Input")
        fw = 0.0 if source else f["forward_compute_time"]
        bw = 0.0 if source else f["backward_compute_time"]
        mem = 0.0 if source else f["parameter_size"] + f["activation_size"]
        sync = MS_PER_S * 4 * f["parameter_size"] / sync_bandwidth if not source and math.isfinite(sync_bandwidth) \
            else 0.0
        out_nodes.append({"id": ids[n], "name": n, "supportedOnFpga": True, "cpuLatency": fw, "fpgaLatency": fw,
                          "isBackwardNode": False, "size": mem, "colorClass": ids[n],
                          **({"syncLatency": sync} if sync else {})})
        if training:
            out_nodes.append({"id": offset + ids[n], "name": f"{n}.backward", "supportedOnFpga": True,
                              "cpuLatency": bw, "fpgaLatency": bw, "isBackwardNode": True,
                              "size": 0.0 if source else 2 * f["parameter_size"], "colorClass": ids[n]})
    out_edges = []
    for u, v in edges:
        cost = MS_PER_S * nodes[u]["activation_size"] / bandwidth if math.isfinite(bandwidth) else 0.0
        out_edges.append({"sourceId": ids[u], "destId": ids[v], "cost": cost})
        if training:
            out_edges.append({"sourceId": offset + ids[v], "destId": offset + ids[u], "cost": cost})
    if training:
        out_edges += [{"sourceId": ids[n], "destId": offset + ids[n], "cost": 0.0} for n in kept]
    return {"maxSizePerFPGA": memory if math.isfinite(memory) else 1e300, "maxFPGAs": accelerators,
            "maxCPUs": cpus, "nodes": out_nodes, "edges": out_edges}

