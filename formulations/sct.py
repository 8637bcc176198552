"""The LP relaxation of scheduling with small communication times (SCT), as Baechi's m-SCT uses it.

Baechi (after Hanen and Munier) rounds the LP of :func:`sct_lp` into *favorite children*
(:func:`favorite_children`): the child run right after its parent on the same device, without the
edge's delay. Baechi takes the delay to be the communication cost; its ``w`` is then a lower bound
on the makespan only when every communication time is at most every processing time (the SCT
assumption) and every edge between devices pays its cost. The published graphs break both
(zero-time nodes with costly edges; CPU cores read each other's results for free), so
:func:`edge_delays` lowers each delay to what *every* schedule of the simulator
(:mod:`exactplace.evaluators.makespan`) must pay, which makes ``w`` a lower bound on any graph,
placement, execution order and number of devices. When the SCT assumption holds and no two CPU
cores are available, the delays are the costs: Baechi's LP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exactplace.core.graph import Graph

from .model import Model

__all__ = ["SctLP", "edge_delays", "favorite_children", "sct_lp"]


@dataclass
class SctLP:
    """The built LP and the index arrays of its variables."""

    model: Model
    x: np.ndarray   # per edge
    s: np.ndarray   # per node
    w: np.ndarray   # (1,)


def _least_among_others(group: np.ndarray, value: np.ndarray, size: int) -> np.ndarray:
    """Per edge, the least ``value`` over the *other* edges of its ``group`` (inf when it has none)."""
    order = np.lexsort((value, group))
    g, v = group[order], value[order]
    opens = np.r_[True, g[1:] != g[:-1]] if len(g) else np.zeros(0, dtype=bool)
    least, second = np.full(size, np.inf), np.full(size, np.inf)
    least[g[opens]] = v[opens]
    follows = np.r_[False, opens[:-1]] & ~opens if len(g) else opens
    second[g[follows]] = v[follows]
    is_least = np.zeros(len(group), dtype=bool)
    is_least[order[opens]] = True
    return np.where(is_least, second[group], least[group])


def edge_delays(graph: Graph, p: np.ndarray, cpu_slack: np.ndarray | None) -> np.ndarray:
    """The delay ``d[e]`` every schedule pays on edge ``e = (i, j)`` unless ``j`` is ``i``'s favorite.

    ``d[e] = min(c[e], min p over i's other children, min p over j's other parents, cpu_slack[i])``,
    which keeps ``w`` a lower bound on every schedule (``p`` must be at most each node's time
    on any device): set ``x[e] = 0`` exactly on the edges with ``s[j] < s[i] + p[i] + d[e]``
    in a schedule. A child on another device waits for the transfer (at least ``c``, through
    host RAM), or, on another CPU core, for ``i``'s CPU time (``p[i] + cpu_slack[i]``, with
    ``cpu_slack`` the CPU time minus ``p``; None when there are not two CPU cores). Children
    on ``i``'s device run one at a time, so all but the first wait at least one sibling's
    ``p``: at most one child has ``x = 0``. Likewise on ``j``'s device every parent but the
    last finishes at least the last one's ``p`` before ``j`` starts: at most one parent has
    ``x = 0``.

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 1, 2, comm=1), Node(1, 1, 3), Node(2, 1, 4)], [(0, 1), (0, 2)])
    >>> edge_delays(g, np.array([2.0, 3.0, 4.0]), cpu_slack=None).tolist()   # c = 1 is below the sibling's 3 and 4
    [1.0, 1.0]
    """
    delay = np.minimum(graph.edge_cost, _least_among_others(graph.src, p[graph.dst], graph.n))
    delay = np.minimum(delay, _least_among_others(graph.dst, p[graph.src], graph.n))
    if cpu_slack is not None:
        delay = np.minimum(delay, cpu_slack[graph.src])
    return delay


def sct_lp(graph: Graph, p: np.ndarray, delay: np.ndarray) -> SctLP:
    """The SCT LP of ``graph`` with processing times ``p`` (per node position) and edge delays ``delay``::

        min  w
        s.t. s[i] + p[i] + d[e] x[e] <= s[j]       precedence, every edge e = (i, j)
             sum_j x[i, j] >= outdeg(i) - 1        one favorite child
             sum_i x[i, j] >= indeg(j) - 1         one favorite parent
             s[i] + p[i] <= w                      makespan
             0 <= x <= 1,  s >= 0

    ``x[e] = 1``: the edge pays its delay; ``x[e] = 0``: ``j`` is ``i``'s favorite child, run right after
    ``i`` on the same device.

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 1, 2, comm=1), Node(1, 1, 3), Node(2, 1, 4)], [(0, 1), (0, 2)])
    >>> p = np.array([2.0, 3.0, 4.0])
    >>> lp = sct_lp(g, p, edge_delays(g, p, cpu_slack=None))
    >>> lp.model.num_vars, lp.model.num_rows   # 2 edges, 3 starts, w; 2 + 1 + 0 + 3 rows
    (6, 6)
    """
    n, m = graph.n, graph.m
    model = Model("SCT LP relaxation")
    horizon = float(p.sum() + delay.sum())

    # ---- Variables ----------------------------------------------------------------------------------------------
    x = model.add_vars(m, ub=1.0, name="x: edge pays its communication")
    s = model.add_vars(n, ub=horizon, name="s: start time")
    w = model.add_vars(1, ub=horizon, name="w: makespan")

    # ---- Precedence: s[i] + d x - s[j] <= -p[i] -------------------------------------------------------------------
    e = np.arange(m)
    model.add_rows("precedence", m, ub=-p[graph.src], rows=np.concatenate([e, e, e]),
                   cols=np.concatenate([s[graph.src], x, s[graph.dst]]),
                   vals=np.concatenate([np.ones(m), delay, -np.ones(m)]))
    # ---- One favorite child, one favorite parent: sum x >= degree - 1 (degree 2 or more) ----------------------
    for label, end in (("one favorite child", graph.src), ("one favorite parent", graph.dst)):
        degree = np.bincount(end, minlength=n)
        nodes = np.flatnonzero(degree >= 2)  # degree 1 gives x >= 0, already a bound
        if len(nodes):
            local = np.full(n, -1)
            local[nodes] = np.arange(len(nodes))
            keep = local[end] >= 0
            model.add_rows(label, len(nodes), lb=(degree[nodes] - 1).astype(float), rows=local[end[keep]],
                           cols=x[keep], vals=1.0)
    # ---- Makespan: s[i] - w <= -p[i]; the objective --------------------------------------------------------------
    model.add_rows("makespan", n, ub=-p, rows=np.concatenate([np.arange(n)] * 2),
                   cols=np.concatenate([s, np.full(n, w[0])]), vals=np.concatenate([np.ones(n), -np.ones(n)]))
    model.minimize(w, [1.0])
    return SctLP(model, x, s, w)


def favorite_children(graph: Graph, x: np.ndarray, threshold: float = 0.5) -> dict[int, int]:
    """Round the LP: node id -> its favorite child's id, at most one child per node and one parent per node.

    Edges with ``x < threshold`` are candidates; conflicts (a node with two candidate children,
    or a child with two candidate parents) keep the edge with the smallest ``x``, then the
    largest communication cost (what the favorite saves), then the first in edge order.
    (An edge whose delay is 0 has an arbitrary ``x``; the cost still orders it.)

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1, 1, comm=1) for i in range(3)], [(0, 1), (0, 2)])
    >>> favorite_children(g, np.array([0.0, 0.0]))
    {0: 1}
    """
    candidates = np.flatnonzero(x < threshold)
    order = candidates[np.lexsort((candidates, -graph.edge_cost[candidates], x[candidates]))]
    has_child = np.zeros(graph.n, dtype=bool)
    has_parent = np.zeros(graph.n, dtype=bool)
    favorite: dict[int, int] = {}
    for e in order.tolist():
        i, j = int(graph.src[e]), int(graph.dst[e])
        if has_child[i] or has_parent[j]:
            continue
        has_child[i] = has_parent[j] = True
        favorite[int(graph.ids[i])] = int(graph.ids[j])
    return favorite
