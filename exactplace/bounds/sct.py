"""``exactplace.sct_relaxation``: the SCT LP relaxation (``formulations/sct.py``) solved by HiGHS.

The m-SCT placer (Baechi) is built on it: its ``bound`` is a lower bound on the makespan
(``objective="makespan"``) of one sample under any placement, execution order and number of
devices (the edge delays of ``formulations/sct.py`` make it one without Baechi's
small-communication assumption), and ``favorite_child`` says which child each node should
be followed by on its own device.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ExactplaceError, check_param
from exactplace.core.graph import Graph
from exactplace.core.placement import Limit

__all__ = ["SctRelaxation", "sct_relaxation"]


@dataclass(frozen=True)
class SctRelaxation:
    """The solved LP: makespan bound, favorite children (node id -> node id), edge values, start times."""

    bound: float
    favorite_child: dict[int, int]
    x: np.ndarray
    start: np.ndarray


def sct_relaxation(graph: Graph, cluster: Cluster | None = None, threshold: float = 0.5, *,
                   time_limit: float | None = None) -> SctRelaxation | None:
    """Solve the SCT LP relaxation of ``graph`` and round it to favorite children.

    Parameters
    ----------
    graph : Graph
    cluster : Cluster, optional
        Processing time ``p_i`` is the node's least time on any device of the cluster: its
        accelerator time divided by the fastest accelerator's speed when it is supported and
        the cluster has an accelerator, its CPU time when the cluster has a CPU core (the
        smaller of the two when both; a bound needs the least). Without a cluster: any
        number of accelerators and CPU cores.
    threshold : float, default 0.5
        An edge with LP value ``x < threshold`` is a favorite-child candidate.
    time_limit : float, optional
        Seconds the LP may take (it has one variable per edge and one row per edge and node: on a
        100,000-node graph HiGHS needs minutes).

    Returns
    -------
    SctRelaxation or None
        None when the time limit came before the LP was solved.

    Examples
    --------
    >>> from exactplace import Cluster, Graph, Node
    >>> g = Graph([Node(0, 5, 2, comm=1), Node(1, 5, 3), Node(2, 5, 4)], [(0, 1), (0, 2)])
    >>> r = sct_relaxation(g)
    >>> r.bound, r.favorite_child      # 0 -> 2 stays on one device, 0 -> 1 pays 1
    (6.0, {0: 2})

    On a graph that breaks the small-communication assumption the delay is capped by what a
    schedule must pay instead: here both children can follow their parent on its device for
    1 + 1 + 1 = 3, so the second child waits 1 (a sibling's time), not a transfer of 10. The
    LP splits that wait over the two edges (x = 1/2 each): 2.5, below the best schedule's 3.

    >>> g = Graph([Node(0, 5, 1, comm=10), Node(1, 5, 1), Node(2, 5, 1)], [(0, 1), (0, 2)])
    >>> sct_relaxation(g, Cluster(2, cpus=1)).bound
    2.5
    """
    from exactplace.formulations.sct import edge_delays, favorite_children, sct_lp
    from exactplace.solvers import Request, solve_model

    check_param(isinstance(graph, Graph), "graph", "sct_relaxation", "a Graph", type(graph).__name__)
    check_param(cluster is None or isinstance(cluster, Cluster), "cluster", "sct_relaxation", "a Cluster or None",
                cluster)
    check_param(isinstance(threshold, (int, float)) and 0 < threshold <= 1, "threshold", "sct_relaxation",
                "a number in (0, 1]", threshold)
    check_param(time_limit is None or (isinstance(time_limit, (int, float)) and time_limit >= 0), "time_limit",
                "sct_relaxation", "None or seconds >= 0", time_limit)
    deadline = None if time_limit is None else time.monotonic() + time_limit
    has_acc = cluster is None or cluster.accelerators > 0
    cpus = 2 if cluster is None else cluster.cpus  # only "two or more" matters: CPU to CPU is free
    speed = 1.0 if cluster is None or not has_acc else float(cluster.speed.max())
    acc = np.where(graph.supported & has_acc, np.where(graph.supported, graph.acc_time, 0.0) / speed, np.inf)
    p = np.minimum(acc, graph.cpu_time if cpus else np.inf)
    lp = sct_lp(graph, p, edge_delays(graph, p, graph.cpu_time - p if cpus >= 2 else None))
    out = solve_model(lp.model, "highs", Request(rel_gap=0.0, deadline=deadline))
    if out.limit is Limit.INTERRUPT:
        raise KeyboardInterrupt  # the solver layer stopped on Ctrl-C; a half-solved LP is no bound
    if out.limit is Limit.TIME:
        return None
    if out.values is None or out.status.value != "optimal":
        raise ExactplaceError(f"The SCT LP ended with {out.raw_status!r}; it is always feasible, so this is a bug.")
    x = out.values[lp.x]
    return SctRelaxation(float(out.values[lp.w[0]]), favorite_children(graph, x, threshold), x, out.values[lp.s])
