"""Exactplace plans (what ``solve --out`` writes, ``Placement.to_json``) read back as a split.

:class:`SplitFile` is what a split file states, in either format: the devices and, for a plan,
how it was solved (objective, space, scoring options, execution order, replicas).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import InputFormatError, PlacementError
from exactplace.core.graph import Graph
from exactplace.core.placement import Space
from exactplace.core.placement_array import as_replicas_array
from exactplace.io.checks import REQUIRED, Fields, shown

__all__ = ["SplitFile", "plan_from_dict"]


@dataclass(frozen=True)
class SplitFile:
    """What a split file states: the devices and, for an exactplace plan, how it was solved.

    ``objective``, ``space`` and ``q`` are the plan's (None for a reference split);
    ``subgraph`` each accelerator node's subgraph index (latency plans with ``q >= 2``);
    ``options`` the scoring options it was solved with (``overlap``, ``gpipe``, ``contention``);
    ``order`` the execution order (node positions) a makespan plan was scored with;
    ``replicas`` each accelerator's replicas (a throughput plan solved with ``replication=True``);
    ``constraints`` the user's constraints it was solved under (``info.constraints``; None: none).
    """

    device: np.ndarray
    objective: str | None = None
    space: Space | None = None
    q: int | None = None
    subgraph: np.ndarray | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    order: list[int] | None = None
    replicas: np.ndarray | None = None
    constraints: Mapping[str, Any] | None = None


def plan_from_dict(data: Any, graph: Graph, cluster: Cluster, *, where: str) -> SplitFile:
    """An exactplace plan (``Placement.to_json``): ``placement`` lists id, device name and, for latency
    plans with several subgraphs per accelerator, the subgraph index."""
    from exactplace.core.objectives import OBJECTIVES, SCORING_OPTIONS
    from exactplace.core.problem import OBJECTIVE_OPTIONS

    top = Fields(data, where)
    names = {name: d for d, name in enumerate(cluster.device_names())}
    device = np.full(graph.n, -1, dtype=np.int64)
    subgraph = np.full(graph.n, -1, dtype=np.int64)
    for position, raw in enumerate(top.array("placement", REQUIRED)):
        entry = Fields(raw, f"{where}: placement[{position}]")
        node_id = entry.integer("id", REQUIRED)
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
                               f"Got {shown(objective)} instead.")
    space = top.data.get("space")
    if space is not None and space not in {s.value for s in Space}:
        raise InputFormatError(f"{where}: field 'space' must be one of {[s.value for s in Space]} or null. "
                               f"Got {shown(space)} instead.")
    q = None if top.data.get("q") is None else top.integer("q", low=1, high=2**31)
    info = top.data.get("info") if isinstance(top.data.get("info"), dict) else {}
    given = info.get("options") if isinstance(info.get("options"), dict) else {}
    scoring = {key for keys in SCORING_OPTIONS.values() for key in keys}
    options = {key: value for key, value in given.items() if key in scoring}
    for key, value in options.items():
        if not OBJECTIVE_OPTIONS[key].constraint.accepts(value):
            raise InputFormatError(f"{where}: field 'info.options.{key}' must be {OBJECTIVE_OPTIONS[key].constraint}. "
                                   f"Got {shown(value)} instead.")
    order = info.get("order")
    if order is not None and not (isinstance(order, list) and all(isinstance(i, int) for i in order)):
        raise InputFormatError(f"{where}: field 'info.order' must be a list of node positions.")
    replicas = None
    if top.data.get("replicas") is not None:
        raw = top.array("replicas")
        if len(raw) != cluster.accelerators or not all(isinstance(r, int) and not isinstance(r, bool) and r >= 1
                                                       for r in raw):
            raise InputFormatError(f"{where}: field 'replicas' must list one integer >= 1 per accelerator "
                                   f"({cluster.accelerators}). Got {shown(raw)} instead.")
        replicas = as_replicas_array(graph, cluster, device, np.array(raw, dtype=np.int64))
    constraints = info.get("constraints")
    if constraints is not None:
        from exactplace.core.constraints import Constraints

        Constraints.from_dict(constraints, where=f"{where}: field 'info.constraints'").resolved(graph, cluster)
    return SplitFile(device, objective, None if space is None else Space(space), q,
                     subgraph if stated.any() else None, options, order, replicas, constraints)

