"""Hypothesis strategies for small random exactplace instances, shared by the whole test suite.

Import them in a test module with ``from strategies import dags, clusters, placements``
(``tests`` is on ``pythonpath``). Everything here is small on purpose (1-7 nodes, at most
5 devices) so that brute-force references can enumerate every placement.

Strategies
----------
``graph_specs()``      -> ``(nodes, edges)``: the raw ``Node`` list and edge specs of an inference DAG.
``dags()``             -> ``Graph``: a random inference DAG (``graph_specs`` built into a Graph).
``training_specs()``   -> ``(nodes, edges)`` of a training graph (forward nodes, backward partners).
``training_graphs()``  -> ``Graph``: a random training graph.
``any_graphs()``       -> ``Graph``: an inference DAG or a training graph.
``clusters()``         -> ``Cluster``: k accelerators (0-3) and l CPUs (0-2), at least one device.
``placements(g, c)``   -> a device array for ``g`` on ``c`` (optionally respecting colour classes).
``instances()``        -> ``(graph, cluster)``.
``placed_instances()`` -> ``(graph, cluster, device)``.

Values are drawn from quarter-integers most of the time, so sums are exact in binary
floating point and ties (the interesting cases for optimizers) are frequent; costs and
times are sometimes arbitrary floats.

Helper
------
``canonical_placements(graph, cluster)`` enumerates every placement up to renaming identical
devices, one device per colour class: the brute-force search space.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np
from hypothesis import strategies as st

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph, Node

__all__ = [
    "any_graphs",
    "canonical_placements",
    "clusters",
    "dags",
    "graph_specs",
    "instances",
    "node_values",
    "placed_instances",
    "placements",
    "training_graphs",
    "training_specs",
]

MAX_NODES = 7


def node_values(max_value: float = 10.0) -> st.SearchStrategy[float]:
    """Non-negative finite floats: mostly quarter-integers in [0, max_value], sometimes any float."""
    quarters = st.integers(0, int(4 * max_value)).map(lambda x: x / 4)
    return st.one_of(quarters, quarters, quarters, st.floats(0, max_value, allow_nan=False, allow_subnormal=False))


def _node_ids(count: int) -> st.SearchStrategy[list[int]]:
    """Distinct ids, not in position order (positions and ids must never be confused)."""
    return st.lists(st.integers(-3, 60), min_size=count, max_size=count, unique=True)


@st.composite
def _node(
    draw: st.DrawFn,
    node_id: int,
    *,
    backward: bool = False,
    color: int | None = None,
    unsupported: bool = True,
    memory: bool = True,
    named: bool = True,
) -> Node:
    supported = not unsupported or draw(st.integers(0, 7)) > 0  # 1 in 8 unsupported
    return Node(
        id=node_id,
        cpu_time=draw(node_values()),
        acc_time=draw(node_values()) if supported else None,
        memory=draw(node_values(8.0)) if memory else 0.0,
        comm=draw(node_values(3.0)),
        color=color,
        backward=backward,
        name=draw(st.sampled_from([None, None, f"op{node_id}", f"layer {node_id}"])) if named else None,
    )


@st.composite
def _edges(
    draw: st.DrawFn, sources_to_targets: list[tuple[int, int]], nodes: list[Node], per_edge_costs: bool
) -> list[tuple[int, int] | tuple[int, int, float]]:
    """Edge specs for the given (source id, target id) pairs; some sources get per-edge costs."""
    comm = {v.id: v.comm for v in nodes}
    special = set()
    if per_edge_costs and sources_to_targets:
        sources = sorted({u for u, _ in sources_to_targets})
        special = set(draw(st.lists(st.sampled_from(sources), max_size=2)))
    edges: list[tuple[int, int] | tuple[int, int, float]] = []
    for u, v in sources_to_targets:
        if u in special:
            edges.append((u, v, draw(st.sampled_from([comm[u], 0.0, 0.5, 1.25, 2.0]))))
        elif draw(st.booleans()):
            edges.append((u, v, comm[u]))  # explicit cost equal to the node's comm
        else:
            edges.append((u, v))  # uses the source's comm
    return edges


@st.composite
def graph_specs(
    draw: st.DrawFn,
    *,
    min_nodes: int = 1,
    max_nodes: int = MAX_NODES,
    colors: bool = True,
    per_edge_costs: bool = True,
    unsupported: bool = True,
    memory: bool = True,
    edge_density: float | None = None,
) -> tuple[list[Node], list[tuple]]:
    """``(nodes, edges)`` of a random inference DAG (all nodes forward).

    Node positions are a random permutation of a hidden topological order, so position
    order is generally not topological. ``colors`` puts some nodes in shared colour classes;
    ``per_edge_costs`` gives up to two source nodes outgoing edges of differing costs;
    ``unsupported`` makes about a quarter of the nodes unsupported on accelerators;
    ``memory`` draws non-zero memory sizes.
    """
    n = draw(st.integers(min_nodes, max_nodes))
    ids = draw(_node_ids(n))
    rank = draw(st.permutations(range(n)))  # rank[i]: place of node i in a topological order
    labels = [None] * n
    if colors:
        labels = draw(st.lists(st.sampled_from([None, None, 100, 101]), min_size=n, max_size=n))
    nodes = [
        draw(_node(ids[i], color=labels[i], unsupported=unsupported, memory=memory)) for i in range(n)
    ]
    density = edge_density if edge_density is not None else draw(st.sampled_from([0.2, 0.4, 0.7]))
    pairs = []
    for i, j in itertools.permutations(range(n), 2):
        if rank[i] < rank[j] and draw(st.floats(0, 1)) < density:
            pairs.append((ids[i], ids[j]))
    return nodes, draw(_edges(pairs, nodes, per_edge_costs))


def dags(**kwargs) -> st.SearchStrategy[Graph]:
    """A random inference :class:`Graph` (see :func:`graph_specs` for the keyword arguments)."""
    return graph_specs(**kwargs).map(lambda spec: Graph(*spec))


@st.composite
def training_specs(
    draw: st.DrawFn,
    *,
    max_forward: int = 3,
    orphans: bool = True,
    extra_colors: bool = True,
    per_edge_costs: bool = True,
    unsupported: bool = True,
    memory: bool = True,
) -> tuple[list[Node], list[tuple]]:
    """``(nodes, edges)`` of a random training graph, at most ``2 * max_forward + 1`` nodes.

    Every forward node ``f`` has a backward partner ``b(f)`` in the same colour class; each
    forward edge ``u -> v`` is mirrored by a backward edge ``b(v) -> b(u)``; each ``f`` feeds
    ``b(f)`` (stashed activation) and sometimes ``b(g)`` of another node. With ``orphans``
    an extra uncoloured backward node without forward partner may appear: either a backward
    sink, or fed by a forward node and feeding a backward node. With ``extra_colors`` two
    forward nodes (and so their partners) may share a class.
    Edges only go forward->forward, forward->backward or backward->backward.
    """
    nf = draw(st.integers(1, max_forward))
    fw_nodes, fw_edges = draw(
        graph_specs(min_nodes=nf, max_nodes=nf, colors=False, per_edge_costs=per_edge_costs,
                    unsupported=unsupported, memory=memory)
    )
    fw_ids = [v.id for v in fw_nodes]
    bw_ids = [i + 1000 for i in fw_ids]
    color = {f: 200 + k for k, f in enumerate(fw_ids)}
    if extra_colors and nf >= 2 and draw(st.booleans()):
        a, b = draw(st.permutations(fw_ids))[:2]
        color[b] = color[a]
    fw_nodes = [Node(**{**v.__dict__, "color": color[v.id]}) for v in fw_nodes]
    bw_nodes = [
        draw(_node(b, backward=True, color=color[f], unsupported=unsupported, memory=memory))
        for f, b in zip(fw_ids, bw_ids)
    ]
    partner = dict(zip(fw_ids, bw_ids))
    pairs = [(partner[e[1]], partner[e[0]]) for e in fw_edges]  # mirrored backward edges
    pairs += [(f, partner[f]) for f in fw_ids]
    for f, g in itertools.permutations(fw_ids, 2):
        if draw(st.integers(0, 4)) == 0:
            pairs.append((f, partner[g]))
    nodes = fw_nodes + bw_nodes
    if orphans and draw(st.booleans()):
        orphan = draw(_node(2000, backward=True, unsupported=unsupported, memory=memory))
        nodes.append(orphan)
        if draw(st.booleans()):
            pairs.append((draw(st.sampled_from(bw_ids)), orphan.id))  # a backward sink
        else:
            # fed by forward nodes only, so it may feed a backward node without closing a cycle
            pairs.append((draw(st.sampled_from(fw_ids)), orphan.id))
            pairs.append((orphan.id, draw(st.sampled_from(bw_ids))))
    bw_edges = draw(_edges(pairs, nodes, per_edge_costs))
    order = draw(st.permutations(range(len(nodes))))
    return [nodes[i] for i in order], fw_edges + bw_edges


def training_graphs(**kwargs) -> st.SearchStrategy[Graph]:
    """A random training :class:`Graph` (see :func:`training_specs` for the keyword arguments)."""
    return training_specs(**kwargs).map(lambda spec: Graph(*spec))


def any_graphs(max_forward: int = 3, **kwargs) -> st.SearchStrategy[Graph]:
    """An inference DAG (``dags(**kwargs)``) or a training graph of up to ``max_forward`` forward nodes."""
    return st.one_of(dags(**kwargs), training_graphs(max_forward=max_forward))


@st.composite
def clusters(
    draw: st.DrawFn,
    *,
    min_accelerators: int = 0,
    max_accelerators: int = 3,
    min_cpus: int = 0,
    max_cpus: int = 2,
    memory: bool = True,
    heterogeneous: bool = False,
) -> Cluster:
    """k accelerators and l CPUs with at least one device.

    ``memory``: the accelerator memory is a random cap (or, sometimes, unlimited); otherwise unlimited.
    ``heterogeneous``: per-accelerator memory and speed (the brute-force enumerator
    :func:`canonical_placements` then tells every accelerator apart).
    """
    k = draw(st.integers(min_accelerators, max_accelerators))
    l_min = max(min_cpus, 1 if k == 0 else 0)
    cpus = draw(st.integers(l_min, max(l_min, max_cpus)))
    cap = st.one_of(st.just(math.inf), node_values(20.0)) if memory else st.just(math.inf)
    if heterogeneous:
        mem = draw(st.lists(cap, min_size=k, max_size=k))
        speed = draw(st.lists(st.sampled_from([0.5, 1.0, 2.0, 1.5]), min_size=k, max_size=k))
        return Cluster(accelerators=k, memory=mem, cpus=cpus, speed=speed)
    return Cluster(accelerators=k, memory=draw(cap), cpus=cpus)


def brute_force_graphs() -> st.SearchStrategy[Graph]:
    """Inference DAGs of 2-5 nodes or training graphs of up to 2 forward nodes: small enough for a
    brute force over every split on 3-4 devices."""
    return any_graphs(max_forward=2, min_nodes=2, max_nodes=5)


def mixed_clusters() -> st.SearchStrategy[Cluster]:
    """Homogeneous clusters (up to 3 accelerators, 2 CPUs) or heterogeneous ones (2-3 accelerators)."""
    return st.one_of(clusters(max_accelerators=3, max_cpus=2),
                     clusters(min_accelerators=2, max_accelerators=3, heterogeneous=True))


@st.composite
def placements(
    draw: st.DrawFn, graph: Graph, cluster: Cluster, *, colocated: bool = False, supported: bool = False
) -> np.ndarray:
    """A device array for ``graph`` on ``cluster`` (``device[i]``: device of position ``i``).

    ``colocated``: colour classes share a device. ``supported``: nodes unsupported on
    accelerators go to CPUs (needs a CPU when some node is unsupported; otherwise ignored).
    """
    num_devices = cluster.num_devices
    k = cluster.accelerators
    if colocated:
        per_class = draw(st.lists(st.integers(0, num_devices - 1), min_size=int(graph.color.max()) + 1,
                                  max_size=int(graph.color.max()) + 1))
        device = np.array([per_class[c] for c in graph.color.tolist()], dtype=np.int64)
    else:
        device = np.array(draw(st.lists(st.integers(0, num_devices - 1), min_size=graph.n, max_size=graph.n)),
                          dtype=np.int64)
    if supported and cluster.cpus:
        bad = ~graph.supported & (device < k)
        device[bad] = k + draw(st.integers(0, cluster.cpus - 1))
    return device


def instances(graphs: st.SearchStrategy[Graph] | None = None, **cluster_kwargs) -> st.SearchStrategy:
    """``(graph, cluster)`` pairs; ``graphs`` defaults to :func:`any_graphs`."""
    return st.tuples(graphs if graphs is not None else any_graphs(), clusters(**cluster_kwargs))


@st.composite
def placed_instances(
    draw: st.DrawFn, graphs: st.SearchStrategy[Graph] | None = None, *, colocated: bool = False,
    supported: bool = False, **cluster_kwargs,
) -> tuple[Graph, Cluster, np.ndarray]:
    """``(graph, cluster, device)`` triples."""
    graph, cluster = draw(instances(graphs, **cluster_kwargs))
    return graph, cluster, draw(placements(graph, cluster, colocated=colocated, supported=supported))


def canonical_placements(graph: Graph, cluster: Cluster, labelled: bool = False) -> Iterator[np.ndarray]:
    """Every colocation-respecting placement, up to renaming interchangeable devices (``labelled``: none are).

    Accelerators are interchangeable when the cluster is homogeneous and one-level (else every one is tried);
    CPU cores always are, unless ``labelled``. Classes are assigned in order; a class may open an interchangeable
    accelerator ``j`` (CPU ``j``) only when ``0..j-1`` are already used, so every placement is
    equivalent to exactly one yielded array. Placements that break colocation are never
    optimal-feasible, so they are not generated.
    """
    k, cpus = cluster.accelerators, cluster.cpus
    interchangeable = cluster.is_homogeneous and not cluster.is_two_level and not labelled
    classes = int(graph.color.max()) + 1
    members = [np.flatnonzero(graph.color == c) for c in range(classes)]
    device = np.empty(graph.n, dtype=np.int64)

    def rec(c: int, acc_used: int, cpu_used: int) -> Iterator[np.ndarray]:
        if c == classes:
            yield device.copy()
            return
        for d in range(min(acc_used + 1, k) if interchangeable else k):
            device[members[c]] = d
            yield from rec(c + 1, max(acc_used, d + 1), cpu_used)
        for j in range(cpus if labelled else min(cpu_used + 1, cpus)):
            device[members[c]] = k + j
            yield from rec(c + 1, acc_used, max(cpu_used, j + 1))

    yield from rec(0, 0, 0)


def banded_graph(n: int = 40) -> Graph:
    """A seeded random graph of ``n`` nodes whose edges join nodes at most 3 apart: at 40 nodes too big to prove
    in a blink on 4 accelerators."""
    rng = np.random.default_rng(0)
    nodes = [Node(i, float(rng.uniform(1, 5)), float(rng.uniform(0.5, 2)), comm=float(rng.uniform(0, 1)))
             for i in range(n)]
    return Graph(nodes, [(i, j) for i in range(n) for j in range(i + 1, min(n, i + 4)) if rng.uniform() < 0.6])
