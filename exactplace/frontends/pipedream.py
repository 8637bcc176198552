"""Read PipeDream profiles (``graph.txt``) as exactplace workloads.

PipeDream (msr-fiddle/pipedream, MIT license) profiles a model into a text graph::

    node4 -- Conv2d(...) -- forward_compute_time=F, backward_compute_time=B, activation_size=A, parameter_size=P
    \tnode4 -- node5

:func:`pipedream_to_dict` converts a profile (its docstring states each mapping choice). A profile
PipeDream's optimizer partitioned (``stage_id=K`` fields) is also a split: :func:`pipedream_stages`
reads it (stage ``K`` runs on accelerator ``K``), :func:`check_stage_file` refuses one that is not
of the scored graph.

Malformed files raise :class:`InputFormatError` naming the line number and field; messages name nodes as the
profile does (``node12 (Conv2d, line 4)``). A UTF-8 byte order mark and Windows line ends are accepted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

from exactplace.core.errors import InputFormatError, ParameterError, PlacementError, check_param
from exactplace.core.graph import MAX_SUM

if TYPE_CHECKING:
    from exactplace.core.cluster import Cluster
    from exactplace.core.graph import Graph

#: Bandwidths are in bytes per second (PipeDream's ``-b``); the profile's times, and so every cost, in ms.
MS_PER_S = 1e3

_NODE = re.compile(r"^(node\w+) -- (.*) -- (.*)$")
_EDGE = re.compile(r"^\t(node\w+) -- (node\w+)\s*$")
_FIELDS = ("forward_compute_time", "backward_compute_time", "activation_size", "parameter_size")


def _lines(text: str) -> list[str]:
    """The lines of ``text`` as an editor numbers them: a leading byte order mark dropped, ``\\r\\n`` and ``\\r``
    read as line ends, and no other character (form feed, U+2028, ...) splitting a line, so line numbers in
    messages are the file's."""
    return text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def looks_like_pipedream(text: str) -> bool:
    """True when the first non-blank line of ``text`` is a PipeDream line: one starting with ``node`` (a node
    line, even a malformed one, which the parser then names) or an edge line. No JSON text starts so."""
    for line in _lines(text):
        if line.strip():
            return line.lstrip(" ").startswith("node") or bool(_EDGE.match(line))
    return False


def _label(name: str, fields: dict[str, Any]) -> str:
    """How messages name a profile node: ``node12 (Conv2d, line 4)``, its module without arguments."""
    module = fields["module"].split("(", 1)[0].strip() or fields["module"]
    return f"{name} ({module}, line {fields['line']})"


def _shown(text: str, limit: int = 80) -> str:
    """``repr(text)``, cut to about ``limit`` characters: a message stays one readable line however long the
    file's line is."""
    return repr(text) if len(text) <= limit else f"{text[:limit]!r}... ({len(text)} characters)"


def _number(value: str, lineno: int, field: str) -> float:
    value = value.strip()
    parts = value[1:-1].split(";") if value.startswith("[") and value.endswith("]") else [value]
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        raise InputFormatError(f"Line {lineno}: field {field} is not a number: {_shown(value)}") from None
    total = sum(numbers)
    if not math.isfinite(total) or any(x < 0 for x in numbers):
        raise InputFormatError(f"Line {lineno}: field {field} must be finite and >= 0, got {_shown(value)}")
    return total


def parse_pipedream(text: str) -> tuple[dict[str, dict[str, Any]], list[tuple[str, str]]]:
    """Parse the profile text into ``{node: fields}`` and edge list, checking every line."""
    nodes: dict[str, dict[str, Any]] = {}
    edges: list[tuple[str, str, int]] = []
    for lineno, line in enumerate(_lines(text), start=1):
        if not line.strip():
            continue
        if line.startswith("\t"):
            m = _EDGE.match(line)
            if not m:
                raise InputFormatError(f"Line {lineno}: edge line must read '\\tnodeU -- nodeV', got "
                                       f"{_shown(line.strip())}")
            edges.append((m.group(1), m.group(2), lineno))
            continue
        m = _NODE.match(line)
        if not m and _EDGE.match("\t" + line.lstrip(" ")):
            raise InputFormatError(f"Line {lineno}: an edge line must start with a tab ('\\tnodeU -- nodeV'), got "
                                   f"{_shown(line)}")
        if not m:
            raise InputFormatError(f"Line {lineno}: node line must read 'nodeN -- module -- fields', got "
                                   f"{_shown(line)}")
        name, module, rest = m.groups()
        if name in nodes:
            raise InputFormatError(f"Line {lineno}: node {name} is defined twice (first on line "
                                   f"{nodes[name]['line']})")
        fields: dict[str, Any] = {"module": module, "line": lineno}
        for item in rest.split(", ") if rest.strip() else []:
            key, eq, value = item.partition("=")
            key = key.strip()
            if not eq:
                raise InputFormatError(f"Line {lineno}: field {_shown(item)} has no '='")
            if key in fields:
                raise InputFormatError(f"Line {lineno}: field {key} given twice")
            if key == "stage_id":
                try:
                    fields[key] = int(value)
                except ValueError:
                    raise InputFormatError(f"Line {lineno}: field stage_id is not an integer: "
                                           f"{_shown(value)}") from None
                if fields[key] < 0:
                    raise InputFormatError(f"Line {lineno}: field stage_id must be >= 0, got {_shown(value)}")
            elif key in _FIELDS:
                fields[key] = _number(value, lineno, key)
            else:
                raise InputFormatError(f"Line {lineno}: unknown field {_shown(key)}")
        for key in _FIELDS:
            if key not in fields:
                raise InputFormatError(f"Line {lineno}: field {key} is missing")
        nodes[name] = fields
    for u, v, lineno in edges:
        for end in (u, v):
            if end not in nodes:
                raise InputFormatError(f"Line {lineno}: edge names unknown node {end}")
    if not nodes:
        raise InputFormatError("The profile has no node line ('nodeN -- module -- fields').")
    _check_acyclic(nodes, edges)
    return nodes, [(u, v) for u, v, _ in edges]


def _check_acyclic(nodes: dict[str, dict[str, Any]], edges: list[tuple[str, str, int]]) -> None:
    """Refuse a profile whose edges close a cycle, naming its nodes and the lines of its edges.

    Iterative depth-first search (a profile may hold a long chain): a grey node reached again closes a cycle.
    """
    out: dict[str, list[tuple[str, int]]] = {n: [] for n in nodes}
    for u, v, lineno in edges:
        out[u].append((v, lineno))
    state = dict.fromkeys(nodes, 0)  # 0 unseen, 1 on the current path, 2 done
    for root in nodes:
        if state[root]:
            continue
        state[root] = 1
        path: list[tuple[str, int]] = [(root, 0)]  # (node, line of the edge that reached it)
        stack = [iter(out[root])]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                state[path.pop()[0]] = 2
                stack.pop()
                continue
            v, lineno = step
            if state[v] == 1:
                start = next(i for i, (n, _) in enumerate(path) if n == v)
                cycle = [*path[start:], (v, lineno)]
                labels = [_label(n, nodes[n]) for n, _ in cycle]
                lines = [str(line) for _, line in cycle[1:]]
                if len(cycle) > 8:  # a long cycle: its start and its end, so the message stays one readable line
                    labels[4:-2] = [f"... ({len(cycle) - 6} more)"]
                    lines[4:-2] = ["..."]
                raise InputFormatError(f"The profile's edges form a cycle: {' -> '.join(labels)} (edge lines "
                                       f"{', '.join(lines)}); a profile must be acyclic.")
            if state[v] == 0:
                state[v] = 1
                path.append((v, lineno))
                stack.append(iter(out[v]))


def pipedream_stages(text: str) -> dict[str, int]:
    """The stage of every node of a partitioned profile, by node name (``stage_id=K`` lines).

    Stage ``K`` runs on accelerator ``K``, a node's backward half with its forward half. A replicated
    stage is read as one device (the profile does not say how many replicas it has). Nodes the workload
    drops (unused ``__getitem__`` sinks) need none; every other node must state one, else
    :class:`InputFormatError` names its line.
    """
    return _stages(*parse_pipedream(text))


def _stages(nodes: dict[str, dict[str, Any]], edges: list[tuple[str, str]]) -> dict[str, int]:
    """:func:`pipedream_stages` on a parsed profile."""
    stages = {}
    for name in _kept(nodes, edges):
        if "stage_id" not in nodes[name]:
            raise InputFormatError(f"Line {nodes[name]['line']}: field stage_id is missing (node {name}): "
                                   "a split read from a PipeDream profile needs a stage for every node")
        stages[name] = nodes[name]["stage_id"]
    return stages


def check_stage_file(text: str, graph: Graph, cluster: Cluster, *, where: str) -> None:
    """Refuse a partitioned profile (a stage file) that is no split of ``graph`` on ``cluster``; other text passes.

    The stage file must describe the very graph being scored: a file for another model would otherwise be
    scored on the nodes the two happen to share. So its nodes (those the workload keeps) and edges must be the
    workload's, matched by name (a backward node ``nodeN.backward`` counts as ``nodeN``), and each stage must
    name an accelerator of the cluster. Every message names the file's nodes as the file does, with their
    lines; ``where`` names the file. Raises :class:`InputFormatError` (a malformed file) or
    :class:`PlacementError`.
    """
    if not looks_like_pipedream(text):
        return
    try:
        nodes, edges = parse_pipedream(text)
        stages = _stages(nodes, edges)
    except InputFormatError as error:
        raise InputFormatError(f"{where}: {error}") from None
    names = [str(name).removesuffix(".backward") for name in graph.names]
    known = set(names)
    for name in stages:
        if name not in known:
            raise PlacementError(f"{where} is for another graph: it places {_label(name, nodes[name])}, a node "
                                 "the workload does not have.")
    for name in dict.fromkeys(names):
        if name not in stages:
            raise PlacementError(f"{where} does not place the workload's node {name}: the file has no line for it "
                                 "(is it for another graph?).")
    backward = graph.backward
    ours = [(names[u], names[v]) for u, v in zip(graph.src.tolist(), graph.dst.tolist())
            if not backward[u] and not backward[v]]
    theirs, ours_set = {(u, v) for u, v in edges if u in stages and v in stages}, set(ours)
    for u, v in edges:
        if (u, v) in theirs and (u, v) not in ours_set:
            raise PlacementError(f"{where} is for another graph: its edge {_label(u, nodes[u])} -> "
                                 f"{_label(v, nodes[v])} is no edge of the workload.")
    for u, v in ours:
        if (u, v) not in theirs:
            raise PlacementError(f"{where} is for another graph: it lacks the workload's edge {u} -> {v}.")
    for name, stage in stages.items():
        if stage >= cluster.accelerators:
            raise PlacementError(f"{where} puts {_label(name, nodes[name])} in stage {stage}, but the cluster has "
                                 f"{cluster.accelerators} accelerators (stage K runs on accelerator K).")


def _kept(nodes: dict[str, dict[str, Any]], edges: list[tuple[str, str]]) -> list[str]:
    """The nodes a workload keeps: all but ``__getitem__`` nodes without successors (PipeDream drops them)."""
    has_out = {u for u, _ in edges}
    return [n for n in nodes if not (nodes[n]["module"].startswith("__getitem__") and n not in has_out)]


def _is_number(value: object) -> bool:
    """A real number (not a bool, not NaN); ``inf`` is one."""
    return isinstance(value, Real) and not isinstance(value, bool) and not math.isnan(value)


def _check_sums(nodes: dict[str, dict[str, Any]], kept: list[str], edges: list[tuple[str, str]],
                out_nodes: list[dict[str, Any]], out_edges: list[dict[str, Any]], bandwidth: float,
                sync_name: str, sync_bandwidth: float) -> None:
    """Refuse a profile whose times, memory, transfers or synchronisations add up past what loads can hold,
    naming the profile line or the bandwidth at fault. The sums are the workload loader's, in its order, so
    whatever passes here passes there."""
    def passes(values: Iterable[float]) -> bool:
        return sum(values, 0.0) <= MAX_SUM  # plain float sum, as the loader's: inf (or nan) fails

    def culprit(key: str) -> str:
        """The profile node at which the running sum of ``key`` passes the bound (the sum only grows)."""
        running = 0.0
        for entry in out_nodes:
            running += entry.get(key, 0.0)
            if not running <= MAX_SUM:
                return str(entry["name"]).removesuffix(".backward")
        return kept[-1]

    for key, what, unit in (("cpuLatency", "compute times", "ms"), ("size", "parameter and activation sizes",
                                                                      "bytes")):
        if not passes(e[key] for e in out_nodes):
            name = culprit(key)
            raise InputFormatError(f"Line {nodes[name]['line']}: the profile's {what} pass {MAX_SUM:g} {unit} in "
                                   f"all at {_label(name, nodes[name])}, so loads would overflow.")
    option = "bandwidth (--bandwidth on the command line)"
    costs = [e["cost"] for e in out_edges]
    if edges and not (passes(costs) and passes([*(e["fpgaLatency"] for e in out_nodes), *costs])):
        worst = max((u for u, _ in edges), key=lambda u: nodes[u]["activation_size"])
        raise ParameterError(
            f"The {option} {bandwidth:g} bytes per second is too small for this profile: its transfers would take "
            f"more than {MAX_SUM:g} ms in all ({_label(worst, nodes[worst])} sends "
            f"{nodes[worst]['activation_size']:g} bytes); give a larger bandwidth, or inf for free transfers.")
    if not passes(e.get("syncLatency", 0.0) for e in out_nodes):
        worst = max(kept, key=lambda n: nodes[n]["parameter_size"])
        shown = option if sync_name == "bandwidth" else "sync_bandwidth"
        raise ParameterError(
            f"The {shown} {sync_bandwidth:g} bytes per second is too small for this profile: synchronising its "
            f"parameters would take more than {MAX_SUM:g} ms in all ({_label(worst, nodes[worst])} holds "
            f"{nodes[worst]['parameter_size']:g} bytes); give a larger bandwidth, or inf for free replication.")


def pipedream_to_dict(
    text: str, *, training: bool = True, bandwidth: float = math.inf, accelerators: int = 4,
    memory: float = math.inf, cpus: int = 0, sync_bandwidth: float | None = None,
) -> dict[str, Any]:
    """Convert a PipeDream profile to the dnn-partitioning dictionary.

    The mapping, each choice deliberate:

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
    * ``stage_id=K`` fields (a profile PipeDream's optimizer partitioned) are ignored: they are a split,
      read by :func:`pipedream_stages`.

    The parameters are checked here, and so are the sums the loader bounds, so that a problem is named as
    the profile (its lines and fields) or the parameter (``bandwidth``, ``--bandwidth`` on the command line)
    that causes it, never as a field of the converted dictionary.
    """
    sync_given = sync_bandwidth is not None
    for name, value in (("bandwidth", bandwidth), ("sync_bandwidth", bandwidth if sync_bandwidth is None
                                                      else sync_bandwidth)):
        check_param(_is_number(value) and value > 0, name, "read_workload",
                    "a positive number of bytes per second, or inf", value)
    for name, value in (("accelerators", accelerators), ("cpus", cpus)):
        check_param(isinstance(value, Integral) and not isinstance(value, bool) and 0 <= value <= 2**1000,
                    name, "read_workload", "a non-negative integer", value)
    check_param(_is_number(memory) and memory >= 0, "memory", "read_workload", "a number of bytes >= 0, or inf",
                memory)
    if accelerators + cpus == 0:
        raise ParameterError("read_workload: accelerators and cpus are both 0: there is no device to place on.")
    if sync_bandwidth is None:
        sync_bandwidth = bandwidth
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
    _check_sums(nodes, kept, edges, out_nodes, out_edges, bandwidth,
                "sync_bandwidth" if sync_given else "bandwidth", sync_bandwidth)
    return {"maxSizePerFPGA": memory if math.isfinite(memory) else 1e300, "maxFPGAs": accelerators,
            "maxCPUs": cpus, "nodes": out_nodes, "edges": out_edges}

