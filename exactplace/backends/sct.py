"""``exactplace.sct_relaxation``: the SCT LP relaxation (``formulations/sct.py``) solved by HiGHS.

The m-SCT placer (Baechi) is built on it: its ``bound`` is a lower bound on the makespan of
one sample on any number of devices (under the small-communication assumption), and
``favorite_child`` says which child each node should be followed by on its own device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ExactplaceError, check_param
from exactplace.core.graph import Graph

__all__ = ["SctRelaxation", "sct_relaxation"]


@dataclass(frozen=True)
class SctRelaxation:
    """The solved LP: makespan bound, favorite children (node id -> node id), edge values, start times."""

    bound: float
    favorite_child: dict[int, int]
    x: np.ndarray
    start: np.ndarray


def sct_relaxation(graph: Graph, cluster: Cluster | None = None, threshold: float = 0.5) -> SctRelaxation:
    """Solve the SCT LP relaxation of ``graph`` and round it to favorite children.

    Parameters
    ----------
    graph : Graph
    cluster : Cluster, optional
        Processing time ``p_i`` is the node's accelerator time when it is supported and the
        cluster has an accelerator (divided by the fastest accelerator's speed), else its CPU
        time. Without a cluster: accelerator time when supported.
    threshold : float, default 0.5
        An edge with LP value ``x < threshold`` is a favorite-child candidate.

    Returns
    -------
    SctRelaxation

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 5, 2, comm=1), Node(1, 5, 3), Node(2, 5, 4)], [(0, 1), (0, 2)])
    >>> r = sct_relaxation(g)
    >>> r.bound, r.favorite_child      # 0 -> 2 stays on one device, 0 -> 1 pays 1
    (6.0, {0: 2})
    """
    from exactplace.backends.solvers import Request, solve_model
    from exactplace.formulations.sct import favorite_children, sct_lp

    check_param(isinstance(graph, Graph), "graph", "sct_relaxation", "a Graph", type(graph).__name__)
    check_param(cluster is None or isinstance(cluster, Cluster), "cluster", "sct_relaxation", "a Cluster or None",
                cluster)
    check_param(isinstance(threshold, (int, float)) and 0 < threshold <= 1, "threshold", "sct_relaxation",
                "a number in (0, 1]", threshold)
    use_acc = graph.supported.copy()
    speed = 1.0
    if cluster is not None:
        if cluster.accelerators == 0:
            use_acc[:] = False
        else:
            speed = float(cluster.speed.max())
    p = np.where(use_acc, np.where(use_acc, graph.acc_time, 0.0) / speed, graph.cpu_time)
    lp = sct_lp(graph, p)
    out = solve_model(lp.model, "highs", Request(rel_gap=0.0))
    if out.values is None or out.status.value != "optimal":
        raise ExactplaceError(f"The SCT LP ended with {out.raw_status!r}; it is always feasible, so this is a bug.")
    x = out.values[lp.x]
    return SctRelaxation(float(out.values[lp.w[0]]), favorite_children(graph, x, threshold), x, out.values[lp.s])
