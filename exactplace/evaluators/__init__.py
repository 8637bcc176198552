"""Exact, solver-independent evaluators: the referee for every method's result."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import check_param
from exactplace.core.graph import Graph
from exactplace.core.objectives import OBJECTIVES
from exactplace.evaluators.feasibility import (
    Guarantees,
    Violation,
    check_feasibility,
    check_fits,
    is_contiguous,
    summarize_violations,
)
from exactplace.evaluators.max_load import DeviceLoads, device_loads, max_load

__all__ = [
    "DeviceLoads", "Guarantees", "Violation", "check_feasibility", "check_fits", "device_loads", "evaluate",
    "is_contiguous", "max_load", "summarize_violations",
]


def evaluate(
    graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray, objective: str = "throughput", **options: Any
) -> float:
    """Score a placement under ``objective`` (``"throughput"``: max-load; ``"latency"``; ``"makespan"``).

    ``options`` are passed to the objective's evaluator (``overlap``, ``gpipe``, ``replicas`` for throughput;
    ``subgraph`` for latency; ``contention``, ``order`` for makespan). It scores, it does not
    judge: :func:`check_feasibility` says which rules of the objective a placement breaks.
    """
    check_param(isinstance(graph, Graph), "graph", "evaluate", "a Graph", type(graph).__name__)
    check_param(isinstance(cluster, Cluster), "cluster", "evaluate", "a Cluster", cluster)
    check_param(objective in OBJECTIVES, "objective", "evaluate", f"one of {list(OBJECTIVES)}", objective)
    check_param(options.get("replicas") is None or objective == "throughput", "objective", "evaluate",
                "'throughput' for a plan with replicas (the latency and makespan simulators run one device per "
                "stage, not replicated stages)", objective)
    if objective == "throughput":
        return max_load(graph, cluster, device, **options)
    cluster.require_one_level(f"The {objective} objective")
    if objective == "makespan":
        from exactplace.evaluators.makespan import makespan

        return makespan(graph, cluster, device, **options)
    from exactplace.evaluators.latency import latency

    return latency(graph, cluster, device, **options)
