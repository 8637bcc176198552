"""Graph primitives on edge arrays, for the hot paths: strong components and a deterministic topological order.

networkx builds a Python object per node and edge; on a 100,000-node graph its condensation and
lexicographic topological sort take seconds each (measured: 2.6 s and 3.6 s), longer than a
whole greedy placement should. These take the edge arrays the model already holds: strong
components through ``scipy.sparse.csgraph`` (C), the topological order through a heap over
plain lists. networkx stays where graphs are small (device quotients) or a result is reported
(a cycle, named in an error).

>>> import numpy as np
>>> strong_components(4, np.array([0, 1, 2]), np.array([1, 0, 3])).tolist()
[0, 0, 1, 2]
>>> topological_order(4, np.array([3, 2]), np.array([0, 0])).tolist()   # lowest ready position first
[1, 2, 3, 0]
"""

from __future__ import annotations

import heapq

import numpy as np

__all__ = ["strong_components", "topological_order"]


def strong_components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A component label per vertex ``0..n-1``, numbered by each component's lowest vertex."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    if n == 0:
        return np.zeros(0, dtype=np.int64)
    adjacency = coo_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n)).tocsr()
    _, labels = connected_components(adjacency, directed=True, connection="strong")
    first = np.full(labels.max() + 1, n, dtype=np.int64)
    np.minimum.at(first, labels, np.arange(n))
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[labels]


def topological_order(n: int, src: np.ndarray, dst: np.ndarray, key: np.ndarray | None = None) -> np.ndarray | None:
    """The topological order that always takes the ready vertex of least ``key`` (default: the vertex
    itself), as ``networkx.lexicographical_topological_sort`` does; None when there is a cycle."""
    key = np.arange(n) if key is None else np.asarray(key)
    indegree = np.bincount(dst, minlength=n).tolist()
    order = np.argsort(src, kind="stable")
    starts = np.searchsorted(src[order], np.arange(n + 1)).tolist()
    targets = dst[order].tolist()
    keys = key.tolist()
    ready = [(keys[v], v) for v in range(n) if indegree[v] == 0]
    heapq.heapify(ready)
    result = []
    while ready:
        _, v = heapq.heappop(ready)
        result.append(v)
        for w in targets[starts[v]:starts[v + 1]]:
            indegree[w] -= 1
            if indegree[w] == 0:
                heapq.heappush(ready, (keys[w], w))
    return np.array(result, dtype=np.int64) if len(result) == n else None
