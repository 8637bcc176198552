"""``exactplace.sct_relaxation``: the SCT LP bound and its favorite-child rounding.

The bound must be at least the critical path without communication, and at most the makespan
of any list schedule of the graph on any number of devices when communication times are at
most the processing times (the SCT assumption the relaxation is valid under).
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import exactplace
from exactplace import Cluster, Graph, Node, ParameterError


@st.composite
def sct_graphs(draw: st.DrawFn) -> Graph:
    """DAGs with processing times in [1, 4] and communication costs in [0, 1] (c <= p everywhere)."""
    n = draw(st.integers(1, 8))
    times = st.integers(4, 16).map(lambda v: v / 4)
    nodes = [Node(i, draw(times), draw(times), comm=draw(st.integers(0, 4)) / 4) for i in range(n)]
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if draw(st.integers(0, 2)) == 0]
    return Graph(nodes, edges)


def list_schedule(graph: Graph, p: np.ndarray, device: list[int]) -> float:
    """Makespan of the list schedule in topological order: one node at a time per device,
    communication paid on edges between devices."""
    finish = np.zeros(graph.n)
    free: dict[int, float] = {}
    for j in graph.topological_order.tolist():
        ready = free.get(device[j], 0.0)
        for e in np.flatnonzero(graph.dst == j).tolist():
            i = int(graph.src[e])
            ready = max(ready, finish[i] + (graph.edge_cost[e] if device[i] != device[j] else 0.0))
        finish[j] = ready + p[j]
        free[device[j]] = finish[j]
    return float(finish.max())


def critical_path(graph: Graph, p: np.ndarray) -> float:
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(graph.n))
    digraph.add_edges_from(zip(graph.src.tolist(), graph.dst.tolist()))
    longest = {}
    for v in nx.topological_sort(digraph):
        longest[v] = p[v] + max((longest[u] for u in digraph.predecessors(v)), default=0.0)
    return max(longest.values())


@settings(max_examples=40, deadline=None)
@given(sct_graphs(), st.lists(st.integers(0, 3), min_size=8, max_size=8))
def test_bound_between_critical_path_and_any_list_schedule(graph: Graph, devices: list[int]) -> None:
    r = exactplace.sct_relaxation(graph)
    p = graph.acc_time
    assert r.bound >= critical_path(graph, p) - 1e-7
    assert r.bound <= list_schedule(graph, p, devices[:graph.n]) + 1e-7
    assert r.bound <= list_schedule(graph, p, [0] * graph.n) + 1e-7          # one device
    assert r.bound <= list_schedule(graph, p, list(range(graph.n))) + 1e-7   # one device per node
    ids = {int(v) for v in graph.ids}
    edges = set(map(tuple, np.stack([graph.ids[graph.src], graph.ids[graph.dst]], axis=1).tolist()))
    assert set(r.favorite_child) <= ids and len(set(r.favorite_child.values())) == len(r.favorite_child)
    assert all((i, j) in edges for i, j in r.favorite_child.items())


def test_processing_times_follow_support_and_cluster() -> None:
    g = Graph([Node(0, 5.0, 1.0), Node(1, 7.0, None)], [(0, 1)])
    assert exactplace.sct_relaxation(g).bound == pytest.approx(8.0)                   # acc 1 + CPU 7
    assert exactplace.sct_relaxation(g, Cluster(0, cpus=2)).bound == pytest.approx(12.0)   # CPU only
    assert exactplace.sct_relaxation(g, Cluster(1, speed=2.0)).bound == pytest.approx(7.5)  # faster accelerator


def test_favorite_child_resolves_conflicts_and_threshold() -> None:
    # A fork where the heavier child should follow its parent: x = 0 on that edge, 1 on the other.
    g = Graph([Node(0, 1.0, 1.0, comm=1.0), Node(1, 1.0, 1.0, comm=1.0), Node(2, 1.0, 1.0), Node(3, 1.0, 2.0)],
              [(0, 1), (1, 2), (1, 3)])
    assert exactplace.sct_relaxation(g).favorite_child == {0: 1, 1: 3}
    # A symmetric fork: the LP splits 0.5 / 0.5, so no favorite below 0.5, and one (not two) above it.
    sym = Graph([Node(i, 1.0, 1.0, comm=1.0) for i in range(3)], [(0, 1), (0, 2)])
    assert exactplace.sct_relaxation(sym).favorite_child == {}
    assert len(exactplace.sct_relaxation(sym, threshold=0.75).favorite_child) == 1


@pytest.mark.parametrize("bad", [0, 1.5, "half", None])
def test_bad_threshold(bad: object) -> None:
    with pytest.raises(ParameterError, match="'threshold'"):
        exactplace.sct_relaxation(Graph([Node(0, 1.0, 1.0)], []), threshold=bad)
