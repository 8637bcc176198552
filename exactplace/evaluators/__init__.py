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
from exactplace.evaluators.schedule import PipelineScore, pipeline_score

__all__ = [
    "DeviceLoads", "Guarantees", "PipelineScore", "Violation", "check_feasibility", "check_fits", "device_loads",
    "evaluate", "is_contiguous", "max_load", "pipeline_score", "summarize_violations",
]


def evaluate(
    graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray, objective: str = "throughput", **options: Any
) -> float:
    """Score a placement under ``objective`` (``"throughput"``: max-load; ``"latency"``; ``"makespan"``).

    ``options`` are passed to the objective's evaluator (``overlap``, ``gpipe``, ``replicas`` for throughput;
    ``subgraph`` for latency; ``contention``, ``order`` for makespan). Throughput with ``schedule`` and
    ``microbatches`` scores the step time per microbatch of that pipeline schedule
    (:func:`~exactplace.evaluators.schedule.pipeline_score`; inf for a placement that is not a pipeline).
    It scores, it does not judge: :func:`check_feasibility` says which rules of the objective a placement breaks.

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(1, 5.0, 1.0), Node(2, 6.0, 2.0)], [(1, 2)])
    >>> evaluate(g, Cluster(accelerators=2, cpus=0), [0, 1], schedule="1f1b", microbatches=4)  # (4 + 1) / 4 * 2
    2.5
    """
    check_param(isinstance(graph, Graph), "graph", "evaluate", "a Graph", type(graph).__name__)
    check_param(isinstance(cluster, Cluster), "cluster", "evaluate", "a Cluster", cluster)
    check_param(objective in OBJECTIVES, "objective", "evaluate", f"one of {list(OBJECTIVES)}", objective)
    check_param(options.get("replicas") is None or objective == "throughput", "objective", "evaluate",
                "'throughput' for a plan with replicas (the latency and makespan simulators run one device per "
                "stage, not replicated stages)", objective)
    if objective == "throughput" and (options.get("schedule") is not None or options.get("microbatches") is not None):
        check_param(not options.get("gpipe") and options.get("replicas") is None, "schedule", "evaluate",
                    "None with gpipe or replicas (a pipeline schedule replaces gpipe and runs one device per stage)",
                    options.get("schedule"))
        score = pipeline_score(graph, cluster, device, options.get("schedule"), options.get("microbatches"),
                               overlap=bool(options.get("overlap")))
        return score.time_per_microbatch
    if objective == "throughput":
        options = {k: v for k, v in options.items() if k not in ("schedule", "microbatches")}
        return max_load(graph, cluster, device, **options)
    cluster.require_one_level(f"The {objective} objective")
    if objective == "makespan":
        from exactplace.evaluators.makespan import makespan

        return makespan(graph, cluster, device, **options)
    from exactplace.evaluators.latency import latency

    return latency(graph, cluster, device, **options)
