"""Preprocessing for the max-load DP (paper Appendix B): the graph whose ideals the DP enumerates.

The DP places *units*, sets of original nodes that always share a device: a colour class's
forward nodes with their backward partners, an orphaned backward class with an artificial
zero-cost forward image, classes on a common directed cycle fused (a contiguous split can never
separate them), and free units with one neighbour merged into it (:func:`contract` states the
rules). Why: fewer units mean fewer ideals, and none of these steps changes the optimum.

Communication stays on original nodes: each communication group of the graph (one per source
node and distinct outgoing cost, the implicit form of the paper's edge subdivision) becomes a
group of its source unit and the distinct other units it reaches. The DP charges a group's cost
once on a set of units when the group crosses the set's boundary, exactly as the max-load
evaluator does. :func:`linearize` adds DPL's chain of edges (paper §5.1.2).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from exactplace.core.dag import strong_components
from exactplace.core.graph import Graph

__all__ = ["Contraction", "contract", "dfs_topological_order", "linearize"]


@dataclass(frozen=True)
class Contraction:
    """The DP's view of a graph: units, the DAG on them, and communication groups.

    Attributes
    ----------
    unit : numpy array of int, shape (graph.n,)
        ``unit[i]``: the unit of the node at position ``i``. Units are numbered by their
        first node position.
    cpu_time, acc_time, memory : numpy arrays of float, shape (num_units,)
        Sums over each unit's nodes; ``acc_time`` is ``inf`` when a node is unsupported.
    supported : numpy array of bool, shape (num_units,)
        Whether every node of the unit can run on an accelerator.
    src, dst : numpy arrays of int
        Edges of the unit DAG (forward edges, artificial edges), without duplicates.
    group_cost, group_source : numpy arrays
        One entry per communication group that can cross between units: its cost and source unit.
    group_ptr, group_target : numpy arrays of int
        CSR lists of the distinct units each group reaches (never its own source unit).
    orphans : int
        Backward-only colour classes that received an artificial forward image.
    fused : int
        Colour classes absorbed by cycle fusion (step 3 of :func:`contract`).
    merged : int
        Trivial merges performed (step 4 of :func:`contract`).
    sync : numpy array of float, shape (num_units,), or None
        Sums of ``Node.sync`` over each unit's nodes (None from callers that build units by hand:
        read as zeros).
    """

    unit: np.ndarray
    cpu_time: np.ndarray
    acc_time: np.ndarray
    memory: np.ndarray
    supported: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    group_cost: np.ndarray
    group_source: np.ndarray
    group_ptr: np.ndarray
    group_target: np.ndarray
    orphans: int = 0
    fused: int = 0
    merged: int = 0
    sync: np.ndarray | None = None

    @property
    def num_units(self) -> int:
        """Number of units (nodes of the DAG whose ideals the DP enumerates)."""
        return len(self.cpu_time)


def _class_edges(graph: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edges of the forward colour-class graph (with mirrored orphan edges), and the orphan mask."""
    color = graph.color
    classes = int(color.max()) + 1
    forward = ~graph.backward
    has_forward = np.zeros(classes, dtype=bool)
    has_forward[color[forward]] = True
    orphan = ~has_forward
    cs, cd = color[graph.src], color[graph.dst]
    between = cs != cd
    both_forward = between & forward[graph.src] & forward[graph.dst]
    both_backward = between & ~forward[graph.src] & ~forward[graph.dst]
    mirrored = both_backward & (orphan[cs] | orphan[cd])
    src = np.concatenate([cs[both_forward], cd[mirrored]])
    dst = np.concatenate([cd[both_forward], cs[mirrored]])
    return src, dst, orphan


def contract(graph: Graph, memory: float = math.inf, ruled: np.ndarray | None = None) -> Contraction:
    """Contract ``graph`` into the units the DP places.

    1. Each colour class contributes its forward nodes and its backward nodes (the backward
       nodes follow their forward partners, so a unit is "forward part + backward partners").
    2. A colour class with only backward nodes (an *orphaned backward* class) gets an
       artificial zero-cost forward image; for every backward edge ``ub -> vb`` between
       different classes where either class is orphaned, the forward images get the mirrored
       edge ``fwd(vb) -> fwd(ua)``, as the reference implementation does.
    3. Classes on a common directed cycle of that forward class graph are fused (a contiguous
       split can never separate them).
    4. *Trivial merges*: a unit with zero CPU and accelerator time whose nodes are all
       supported, that touches exactly one other unit (through forward edges, artificial edges
       and original edges alike), and whose memory is zero or cannot matter (the whole graph
       fits in one accelerator), is merged into that neighbour. This cannot change the
       optimum: moving such a unit onto its neighbour's device adds no compute or memory that
       could matter, only removes crossing edges, and keeps the split a chain of ideals (the
       unit has no other neighbour to order it against). It is a provably safe subset of the
       reference's ``performTrivialNodeOptimizations``. A unit with a node in ``ruled`` (a user's
       rule restricts its devices) is not free to move, so it never merges into another.

    Parameters
    ----------
    graph : Graph
    memory : float, default inf
        Accelerator memory cap. It only decides whether memory can ever bind (the whole
        graph fits in one accelerator), which lets trivial merges ignore memory.
    ruled : numpy array of bool, shape (graph.n,), optional
        The nodes whose devices a user's device rules restrict (``Problem.rules``).

    Returns
    -------
    Contraction

    Examples
    --------
    Node 2 (free, one neighbour) joins node 1:

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 1.0, 1.0, comm=0.5), Node(1, 2.0, 1.0, comm=0.5), Node(2, 0.0, 0.0)],
    ...           [(0, 1), (2, 1)])
    >>> c = contract(g)
    >>> c.num_units, c.unit.tolist(), c.merged
    (2, [0, 1, 1], 1)
    >>> c.src.tolist(), c.dst.tolist()
    ([0], [1])

    A training graph: forward ``a -> b``, backward ``b' -> a'``, and an orphaned backward
    node ``o`` fed by ``a'``. ``o`` gets a forward image (unit 2) with the mirrored edge
    ``o -> a``: backward data flows against the forward order.

    >>> nodes = [Node(0, 1, 1, color=0), Node(1, 1, 1, color=1), Node(2, 1, 1, color=1, backward=True),
    ...          Node(3, 1, 1, color=0, backward=True), Node(4, 1, 1, backward=True)]
    >>> c = contract(Graph(nodes, [(0, 1), (2, 3), (3, 4)]))
    >>> c.unit.tolist(), c.orphans, sorted(zip(c.src.tolist(), c.dst.tolist()))
    ([0, 1, 1, 0, 2], 1, [(0, 1), (2, 0)])
    """
    color = graph.color
    classes = int(color.max()) + 1
    class_src, class_dst, orphan = _class_edges(graph)

    # Step 3: fuse classes on a common cycle.
    component = strong_components(classes, class_src, class_dst)
    components = int(component.max()) + 1 if classes else 0
    fused = classes - components

    # Step 4: trivial merges, on the components, with a union-find.
    parent = np.arange(components)
    node_component = component[color]
    # A unit with a synchronisation cost is not free to move: a replicated stage pays for it.
    time = np.bincount(node_component,
                       weights=graph.cpu_time + np.where(graph.supported, graph.acc_time, 0.0) + graph.sync,
                       minlength=components)
    unsupported = np.bincount(node_component, weights=~graph.supported, minlength=components) > 0
    size = np.bincount(node_component, weights=graph.memory, minlength=components)
    memory_never_binds = bool(graph.memory.sum() <= memory)
    pairs = np.concatenate([
        np.stack([component[class_src], component[class_dst]]),
        np.stack([node_component[graph.src], node_component[graph.dst]]),
    ], axis=1)
    pairs = pairs[:, pairs[0] != pairs[1]]
    # Only a zero-time component can merge; only its neighbours are ever looked at (a neighbour
    # with time just loses it from its set), so the sets are built for those alone.
    candidate = (time == 0) & ~unsupported
    if ruled is not None:
        candidate &= np.bincount(node_component, weights=ruled, minlength=components) == 0
    neighbours: dict[int, set[int]] = {int(x): set() for x in np.flatnonzero(candidate)}
    touching = pairs[:, candidate[pairs[0]] | candidate[pairs[1]]]
    for a, b in touching.T.tolist():
        if a in neighbours:
            neighbours[a].add(b)
        if b in neighbours:
            neighbours[b].add(a)

    def mergeable(x: int) -> bool:
        return x in neighbours and (size[x] == 0 or memory_never_binds) and len(neighbours[x]) == 1

    merged = 0
    pending = [x for x in neighbours if mergeable(x)]
    while pending:
        x = pending.pop()
        if parent[x] != x or not mergeable(x):
            continue
        (y,) = neighbours[x]
        parent[x] = y
        if y in neighbours:
            neighbours[y].discard(x)  # x's only neighbour was y, so no other set mentions x
        neighbours[x] = set()
        size[y] += size[x]
        merged += 1
        if mergeable(y):
            pending.append(y)
    root = np.arange(components)
    for x in np.flatnonzero(parent != np.arange(components)).tolist():
        r = x
        while parent[r] != r:
            r = parent[r]
        root[x] = r

    # Units numbered by their first node position, for deterministic output.
    raw = root[node_component]
    present, first = np.unique(raw, return_index=True)
    rank = np.empty(len(present), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(present))
    relabel = np.full(components, -1, dtype=np.int64)
    relabel[present] = rank
    unit = relabel[raw]
    units = len(present)
    class_unit = relabel[root[component]]

    src, dst = class_unit[class_src], class_unit[class_dst]
    keep = src != dst
    edges = np.unique(np.stack([src[keep], dst[keep]], axis=1), axis=0) if keep.any() else np.empty((0, 2), np.int64)

    supported = np.bincount(unit, weights=~graph.supported, minlength=units) == 0
    acc = np.bincount(unit, weights=np.where(graph.supported, graph.acc_time, 0.0), minlength=units)

    # Communication groups between units: (group, distinct target unit) pairs off the source unit.
    group_unit = unit[graph.group_source]
    target = unit[graph.dst]
    crossing = target != group_unit[graph.edge_group]
    key = np.unique(graph.edge_group[crossing] * units + target[crossing])
    groups, targets = key // units, key % units
    kept, group_index = np.unique(groups, return_inverse=True)
    group_ptr = np.concatenate([[0], np.cumsum(np.bincount(group_index, minlength=len(kept)))])

    return Contraction(
        unit=unit,
        cpu_time=np.bincount(unit, weights=graph.cpu_time, minlength=units),
        acc_time=np.where(supported, acc, math.inf),
        memory=np.bincount(unit, weights=graph.memory, minlength=units),
        supported=supported,
        src=edges[:, 0].astype(np.int64),
        dst=edges[:, 1].astype(np.int64),
        group_cost=graph.group_cost[kept],
        group_source=group_unit[kept].astype(np.int64),
        group_ptr=group_ptr.astype(np.int64),
        group_target=targets.astype(np.int64),
        orphans=int(orphan.sum()),
        fused=int(fused),
        merged=merged,
        sync=np.bincount(unit, weights=graph.sync, minlength=units),
    )


def dfs_topological_order(units: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """A depth-first topological order of the DAG on ``0..units-1``.

    Kahn's algorithm with a stack, as the reference's linearization: units are pushed as
    they become available (the sources first), in increasing index order, and the top of
    the stack comes next. So the order follows the most recently enabled branch as far as
    it can before backtracking, and among units enabled together the largest index comes
    first. (The reference pushed in its hash-map order; this is the deterministic analogue.)

    Examples
    --------
    Two branches ``0 -> 1 -> 3`` and ``0 -> 2``: after 0, branch 2 is taken first, then 1 -> 3.

    >>> dfs_topological_order(4, np.array([0, 1, 0]), np.array([1, 3, 2])).tolist()
    [0, 2, 1, 3]
    """
    indegree = np.bincount(dst, minlength=units)
    order_edges = np.lexsort((dst, src))
    successors: list[list[int]] = [[] for _ in range(units)]
    for s, d in zip(src[order_edges].tolist(), dst[order_edges].tolist()):
        successors[s].append(d)
    remaining = indegree.tolist()
    stack = [v for v in range(units) if remaining[v] == 0]
    order = []
    while stack:
        v = stack.pop()
        order.append(v)
        for w in successors[v]:
            remaining[w] -= 1
            if remaining[w] == 0:
                stack.append(w)
    return np.array(order, dtype=np.int64)


def linearize(contraction: Contraction) -> Contraction:
    """DPL's graph (paper §5.1.2): add a depth-first topological order as a chain of edges.

    The ideals of the result are the ``num_units + 1`` prefixes of that order.

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1), (0, 2)])
    >>> lin = linearize(contract(g))
    >>> sorted(zip(lin.src.tolist(), lin.dst.tolist()))  # order 0, 2, 1 adds 2 -> 1
    [(0, 1), (0, 2), (2, 1)]
    """
    order = dfs_topological_order(contraction.num_units, contraction.src, contraction.dst)
    edges = np.concatenate([
        np.stack([contraction.src, contraction.dst], axis=1),
        np.stack([order[:-1], order[1:]], axis=1),
    ])
    edges = np.unique(edges, axis=0)
    return dataclasses.replace(contraction, src=edges[:, 0].astype(np.int64), dst=edges[:, 1].astype(np.int64))
