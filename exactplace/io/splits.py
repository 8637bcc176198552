"""The reference split format, and reading a split in any format (reference split, plan, PipeDream stages)::

    {"maxLoad": float, "cpus": [{"nodes": [ids], "load": float}], "fpgas": [...]}

Nodes a split omits are placed through colocation (:func:`extend_to_colocated`); an exactplace
plan is read by :mod:`exactplace.io.plans`, a PipeDream profile partitioned by its optimizer
through :mod:`exactplace.frontends.pipedream`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import InputFormatError, PlacementError
from exactplace.core.graph import Graph
from exactplace.frontends.pipedream import check_stage_file, looks_like_pipedream, pipedream_stages
from exactplace.io.checks import REQUIRED, Fields
from exactplace.io.files import PathLike, load_json, parse_json, read_text
from exactplace.io.plans import SplitFile, plan_from_dict

__all__ = [
    "extend_to_colocated",
    "placement_from_dict",
    "read_placement",
    "read_split",
    "read_split_file",
    "split_file_from_dict",
    "split_file_from_text",
    "split_from_dict",
    "split_from_stages",
    "split_to_dict",
]


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
    top = Fields(data, where)
    groups = {"fpgas": top.array("fpgas", []), "cpus": top.array("cpus", [])}
    limits = {"fpgas": cluster.accelerators, "cpus": cluster.cpus}
    device = np.full(graph.n, -1, dtype=np.int64)
    for kind, entries in groups.items():
        used = [i for i, e in enumerate(entries) if Fields(e, f"{where}: {kind}[{i}]").array("nodes", REQUIRED)]
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

def split_file_from_dict(data: Any, graph: Graph, cluster: Cluster, *, where: str = "The split") -> SplitFile:
    """A split in either format (reference split or exactplace plan); a workload or anything else is refused."""
    if isinstance(data, dict) and data.get("format") == "exactplace-plan":
        return plan_from_dict(data, graph, cluster, where=where)
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
