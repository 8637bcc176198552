"""The dnn-partitioning JSON workload format (the paper's published instances)::

    {"maxSizePerFPGA": float, "maxFPGAs": int, "maxCPUs": int,
     "machines"?: int, "interMachineCost"?: float,     # a two-level cluster (exactplace's extension)
     "nodes": [{"id", "supportedOnFpga", "cpuLatency", "fpgaLatency", "isBackwardNode",
                "size"?, "colorClass"?, "name"?, "layerId"?, "syncLatency"?,
                "activationSize"?}],               # bytes of "size" one microbatch in flight holds
     "edges": [{"sourceId", "destId", "cost", "size"?}],
     "constraints"?: {"pin"?, "forbid"?, "together"?, "no_cut"?, "max_stages"?, "reserve"?}}

``constraints`` (exactplace's extension) are the user's, as :class:`~exactplace.core.constraints.Constraints` takes
them; ``solve`` holds a workload to them unless it is given others.

Booleans may be JSON booleans or 0/1. :class:`Workload` is what one file describes: the graph
and the cluster it is to be placed on.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exactplace.core.cluster import MAX_INTER_MACHINE_COST, Cluster
from exactplace.core.constraints import Constraints
from exactplace.core.errors import InputFormatError, ParameterError
from exactplace.core.graph import MAX_SUM, Graph, Node
from exactplace.io.checks import REQUIRED, Fields, shown
from exactplace.io.files import PathLike

__all__ = [
    "ANNOTATION_FIELDS",
    "CLUSTER_FIELDS",
    "EDGE_FIELDS",
    "NODE_FIELDS",
    "WORKLOAD_FIELDS",
    "Workload",
    "cluster_of",
    "cluster_sizes",
    "with_cluster",
    "workload_from_dict",
    "workload_to_dict",
    "write_workload",
]


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
    #: The user's constraints the file states (``Constraints.to_dict()``), None when it states none.
    constraints: Mapping[str, Any] | None = None

    @property
    def accelerators(self) -> int:
        """The number of accelerators the workload states (``cluster`` may hold fewer: at most one per node)."""
        return int(self.stated.get("maxFPGAs", self.cluster.accelerators))

    @property
    def cpus(self) -> int:
        """The number of CPUs the workload states (``cluster`` may hold fewer: at most one per node)."""
        return int(self.stated.get("maxCPUs", self.cluster.cpus))

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
WORKLOAD_FIELDS = ("maxSizePerFPGA", "maxFPGAs", "maxCPUs", "machines", "interMachineCost", "nodes", "edges",
                   "constraints")
NODE_FIELDS = ("id", "supportedOnFpga", "cpuLatency", "fpgaLatency", "isBackwardNode", "size", "colorClass", "name",
               "layerId", "syncLatency", "activationSize")
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
    top = Fields(data, "The workload")
    if data.get("format") == "exactplace-plan":
        raise InputFormatError("The workload is an exactplace plan (what solve --out writes), not a workload.")
    if "nodes" not in data and {"fpgas", "cpus"} & data.keys():
        raise InputFormatError("The workload is a split (fields 'fpgas' and 'cpus'), not a workload.")
    top.only(WORKLOAD_FIELDS, free=ANNOTATION_FIELDS)
    sizes = cluster_sizes(top)  # (read before the nodes: a missing or bad one is named first)
    nodes = []
    for position, raw in enumerate(top.array("nodes", REQUIRED)):
        named = isinstance(raw, dict) and "id" in raw
        where = f"Node {shown(raw['id'])}" if named else f"Node at position {position}"
        f = Fields(raw, where)
        f.only(NODE_FIELDS)
        node_id = f.integer("id", REQUIRED)
        supported = f.boolean("supportedOnFpga", REQUIRED)
        acc_time = f.number("fpgaLatency", REQUIRED)  # required even when unused (unsupported node)
        nodes.append(
            Node(
                id=node_id,
                cpu_time=f.number("cpuLatency", REQUIRED),
                acc_time=acc_time if supported else None,
                memory=f.number("size", 0.0),
                backward=f.boolean("isBackwardNode", REQUIRED),
                color=f.optional_integer("colorClass"),
                name=str(raw["name"]) if raw.get("name") is not None else None,
                sync=f.number("syncLatency", 0.0),
                activation=f.number("activationSize", 0.0),
            )
        )
    edges = []
    for position, raw in enumerate(top.array("edges", REQUIRED)):
        where = f"Edge at position {position}"
        if isinstance(raw, dict) and "sourceId" in raw and "destId" in raw:
            where += f" ({shown(raw['sourceId'])} -> {shown(raw['destId'])})"
        f = Fields(raw, where)
        f.only(EDGE_FIELDS)
        edges.append((f.integer("sourceId", REQUIRED), f.integer("destId", REQUIRED), f.number("cost", REQUIRED)))
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
    cluster, stated = cluster_of(top, graph, sizes)
    extra = {k: v for k, v in data.items() if k not in WORKLOAD_FIELDS}
    return Workload(graph=graph, cluster=cluster, name=name, extra=extra, stated=stated,
                    constraints=_constraints(data.get("constraints"), graph, cluster))


def _constraints(data: Any, graph: Graph, cluster: Cluster) -> dict[str, Any] | None:
    """The file's ``constraints``, checked against its graph and cluster (each node and device named exists)."""
    if data is None:
        return None
    try:
        constraints = Constraints.from_dict(data, where="The workload's 'constraints'")
        constraints.resolved(graph, cluster)
    except ParameterError as error:
        raise InputFormatError(str(error)) from None
    return constraints.to_dict() if constraints else None


#: The workload's fields that describe its cluster.
CLUSTER_FIELDS = ("maxSizePerFPGA", "maxFPGAs", "maxCPUs", "machines", "interMachineCost")


def cluster_sizes(top: Fields) -> tuple[float, int, int]:
    """The workload's required cluster fields: memory per accelerator, accelerators and CPUs, as stated."""
    return (top.number("maxSizePerFPGA", REQUIRED, allow_inf=True),
            top.integer("maxFPGAs", REQUIRED, low=0, high=2**1000),
            top.integer("maxCPUs", REQUIRED, low=0, high=2**1000))


def cluster_of(top: Fields, graph: Graph, sizes: tuple[float, int, int]) -> tuple[Cluster, dict[str, int]]:
    """The cluster the workload's fields state for ``graph`` (``sizes``: :func:`cluster_sizes`), and the device
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
            f"The workload's 'machines' ({machines}) must divide its 'maxFPGAs' ({shown(accelerators)}).")
    if not 1.0 <= inter_machine_cost <= MAX_INTER_MACHINE_COST:
        raise InputFormatError(f"The workload's 'interMachineCost' ({inter_machine_cost:g}) must be in [1, "
                               f"{MAX_INTER_MACHINE_COST:.0f}] (the intra-machine bandwidth over the inter-machine "
                               "one).")
    # A two-level cluster keeps every accelerator: its machines are what the split is priced by.
    two_level = inter_machine_cost > 1.0
    stated = {key: count for key, count in (("maxFPGAs", accelerators), ("maxCPUs", cpus))
              if count > graph.n and not (two_level and key == "maxFPGAs")}
    if two_level and accelerators > 2**62:
        raise InputFormatError(f"The workload's 'maxFPGAs' ({shown(accelerators)}) is more than a two-level "
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
    top = Fields({**stated, **fields}, "The workload")
    cluster, beyond = cluster_of(top, workload.graph, cluster_sizes(top))
    return dataclasses.replace(workload, cluster=cluster, stated=beyond)


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
        if v.activation:
            entry["activationSize"] = v.activation
        nodes.append(entry)
    memory = cluster.max_memory if cluster.accelerators else 0.0
    return {
        **workload.extra,  # fields this format does not define are written back untouched
        "maxSizePerFPGA": memory if math.isfinite(memory) else 1e300,
        "maxFPGAs": workload.accelerators, "maxCPUs": workload.cpus, "nodes": nodes,
        "edges": [{"sourceId": u, "destId": v, "cost": c} for u, v, c in graph.edges()],
        **({"machines": cluster.machines, "interMachineCost": cluster.inter_machine_cost}
           if cluster.is_two_level else {}),
        **({"constraints": dict(workload.constraints)} if workload.constraints else {}),
    }


def write_workload(workload: Workload, path: PathLike) -> None:
    """Write a workload in the dnn-partitioning JSON format."""
    Path(path).write_text(json.dumps(workload_to_dict(workload), indent=1), encoding="utf-8")
