"""How many ideals the exact DP would enumerate: for ``method="auto"`` and ``exactplace info``.

The count is taken on the DP's own graph (:mod:`exactplace.core.contraction`), by the
native enumerator, and stops as soon as it passes ``limit``, so asking about a graph with
astronomically many ideals is cheap. It needs the compiled extension ``exactplace._native``.
"""

from __future__ import annotations

import math

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.contraction import Contraction, contract
from exactplace.core.errors import check_param
from exactplace.core.graph import Graph
from exactplace.io import Workload

__all__ = ["count_ideals", "count_unit_ideals"]


def count_unit_ideals(contraction: Contraction, limit: int | None = None) -> tuple[int, int] | None:
    """``(ideals, covers)`` of a contraction's unit DAG, or None when there are more than ``limit`` ideals.

    ``covers`` is the number of pairs of ideals that differ by one unit (the lattice's edges);
    it sizes the DP's tables. Ctrl-C interrupts the count (KeyboardInterrupt).

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1), (0, 2)])
    >>> count_unit_ideals(contract(g))  # {}, {0}, {0,1}, {0,2}, {0,1,2}
    (5, 5)
    """
    from exactplace.native import load

    bound = 2**62 if limit is None else int(limit)
    return load().count_ideals(contraction.num_units, contraction.src, contraction.dst, bound)


def count_ideals(graph: Graph | Workload, limit: int | None = None, cluster: Cluster | None = None) -> int | None:
    """Number of ideals the exact DP enumerates for ``graph``, or None when there are more than ``limit``.

    Parameters
    ----------
    graph : Graph or Workload
        A Workload also supplies the cluster (unless ``cluster`` is given), as in :func:`exactplace.solve`.
    limit : int, optional
        Stop counting past this many (None: count them all, which may take very long;
        Ctrl-C interrupts).
    cluster : Cluster, optional
        The cluster the DP would run on. It matters only through the accelerator memory:
        zero-time nodes carrying memory are merged away when memory can never bind. Without
        a cluster, memory is assumed uncapped (as in every published workload but the
        ResNet-50 ones, whose counts do not depend on it).

    Returns
    -------
    int or None

    Raises
    ------
    ParameterError
        ``limit`` is not a non-negative integer.

    Examples
    --------
    >>> from exactplace.io import read_workload
    >>> from exactplace.data import workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> count_ideals(w.graph, cluster=w.cluster)
    30
    >>> count_ideals(w.graph, limit=10) is None
    True
    """
    if isinstance(graph, Workload):
        graph, cluster = graph.graph, cluster if cluster is not None else graph.cluster
    check_param(isinstance(graph, Graph), "graph", "count_ideals", "a Graph or a Workload", graph)
    check_param(cluster is None or isinstance(cluster, Cluster), "cluster", "count_ideals", "a Cluster or None",
                cluster)
    check_param(
        limit is None or (isinstance(limit, (int, np.integer)) and not isinstance(limit, bool) and limit >= 0),
        "limit", "count_ideals", "a non-negative integer or None", limit,
    )
    limit = None if limit is None else min(int(limit), 2**62)  # beyond any count the native core can reach
    counted = count_unit_ideals(contract(graph, math.inf if cluster is None else cluster.memory_cap), limit)
    return None if counted is None else counted[0]
