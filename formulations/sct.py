"""The LP relaxation of scheduling with small communication times (SCT), as Baechi's m-SCT uses it.

Variables: ``x[e] in [0, 1]`` per edge ``e = (i, j)`` (1: the edge pays its communication
cost; 0: ``j`` is ``i``'s *favorite child*, run right after ``i`` on the same device),
start times ``s[i] >= 0`` and the makespan ``w``.

* precedence: ``s[i] + p[i] + c[e] * x[e] <= s[j]`` for every edge;
* one favorite child: ``sum_j x[i, j] >= outdeg(i) - 1``;
* one favorite parent: ``sum_i x[i, j] >= indeg(j) - 1``;
* makespan: ``s[i] + p[i] <= w``; minimize ``w``.

With communication times at most the processing times (the SCT assumption), ``w`` is a lower
bound on the makespan of any schedule on any number of devices; with ``x = 1`` everywhere
it would be the critical path with all communication, with ``x = 0`` without any.

>>> from exactplace.core.graph import Graph, Node
>>> g = Graph([Node(0, 1, 2, comm=1), Node(1, 1, 3), Node(2, 1, 4)], [(0, 1), (0, 2)])
>>> lp = sct_lp(g, np.array([2.0, 3.0, 4.0]))
>>> lp.model.num_vars, lp.model.num_rows   # 2 edges, 3 starts, w; 2 + 1 + 0 + 3 rows
(6, 6)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exactplace.core.graph import Graph

from .model import Model

__all__ = ["SctLP", "favorite_children", "sct_lp"]


@dataclass
class SctLP:
    """The built LP and the index arrays of its variables."""

    model: Model
    x: np.ndarray   # per edge
    s: np.ndarray   # per node
    w: np.ndarray   # (1,)


def sct_lp(graph: Graph, p: np.ndarray) -> SctLP:
    """The SCT LP of ``graph`` with processing times ``p`` (per node position) and the edge costs."""
    n, m = graph.n, graph.m
    model = Model("SCT LP relaxation")
    horizon = float(p.sum() + graph.edge_cost.sum())
    x = model.add_vars(m, ub=1.0, name="x: edge pays its communication")
    s = model.add_vars(n, ub=horizon, name="s: start time")
    w = model.add_vars(1, ub=horizon, name="w: makespan")
    e = np.arange(m)
    # s[i] + c x - s[j] <= -p[i]
    model.add_rows("precedence", m, ub=-p[graph.src], rows=np.concatenate([e, e, e]),
                   cols=np.concatenate([s[graph.src], x, s[graph.dst]]),
                   vals=np.concatenate([np.ones(m), graph.edge_cost, -np.ones(m)]))
    for label, end in (("one favorite child", graph.src), ("one favorite parent", graph.dst)):
        degree = np.bincount(end, minlength=n)
        nodes = np.flatnonzero(degree >= 2)  # degree 1 gives x >= 0, already a bound
        if len(nodes):
            local = np.full(n, -1)
            local[nodes] = np.arange(len(nodes))
            keep = local[end] >= 0
            model.add_rows(label, len(nodes), lb=(degree[nodes] - 1).astype(float), rows=local[end[keep]],
                           cols=x[keep], vals=1.0)
    model.add_rows("makespan", n, ub=-p, rows=np.concatenate([np.arange(n)] * 2),
                   cols=np.concatenate([s, np.full(n, w[0])]), vals=np.concatenate([np.ones(n), -np.ones(n)]))
    model.minimize(w, [1.0])
    return SctLP(model, x, s, w)


def favorite_children(graph: Graph, x: np.ndarray, threshold: float = 0.5) -> dict[int, int]:
    """Round the LP: node id -> its favorite child's id, at most one child per node and one parent per node.

    Edges with ``x < threshold`` are candidates; conflicts (a node with two candidate children,
    or a child with two candidate parents) keep the edge with the smallest ``x``, then the
    largest communication cost (what the favorite saves), then the first in edge order.

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
