"""``exactplace.sct_relaxation``: the SCT LP bound and its favorite-child rounding.

The bound must be at least the critical path without communication (with each node's least
time), and at most the simulated makespan of every placement and execution order on every
cluster, also where Baechi's small-communication assumption fails (zero-time nodes, costly
edges, free CPU-to-CPU edges). Where the assumption holds and at most one CPU core is there,
the LP is Baechi's: every edge delay is its communication cost.
"""

from __future__ import annotations

import dataclasses

import networkx as nx
import numpy as np
import pytest
from exactplace.formulations.sct import edge_delays
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from strategies import clusters, dags

import exactplace
from exactplace import Cluster, Graph, Node, ParameterError
from exactplace.evaluators.makespan import makespan


def least_times(graph: Graph, cluster: Cluster) -> np.ndarray:
    acc = np.where(graph.supported & (cluster.accelerators > 0), graph.acc_time, np.inf)
    if cluster.accelerators:
        acc = acc / float(np.max(cluster.speed))
    return np.minimum(acc, graph.cpu_time if cluster.cpus else np.inf)


def critical_path(graph: Graph, p: np.ndarray) -> float:
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(graph.n))
    digraph.add_edges_from(zip(graph.src.tolist(), graph.dst.tolist()))
    longest = {}
    for v in nx.topological_sort(digraph):
        longest[v] = p[v] + max((longest[u] for u in digraph.predecessors(v)), default=0.0)
    return max(longest.values())


def costly_edges(graph: Graph) -> Graph:
    """The graph with every communication cost times 8: mostly above the node times (no SCT assumption)."""
    nodes = [dataclasses.replace(v, comm=8 * v.comm) for v in graph.nodes()]
    return Graph(nodes, [(u, v, 8 * c) for u, v, c in graph.edges()])


@settings(max_examples=80, deadline=None)
@given(st.one_of(dags(max_nodes=7), dags(max_nodes=7).map(costly_edges)),
       clusters(max_cpus=3, memory=False, heterogeneous=True), st.data(), st.booleans())
def test_bound_is_below_every_simulated_schedule(graph: Graph, cluster: Cluster, data: st.DataObject,
                                                 contention: bool) -> None:
    assume(cluster.cpus or graph.supported.all())
    r = exactplace.sct_relaxation(graph, cluster)
    assert r.bound >= critical_path(graph, least_times(graph, cluster)) - 1e-7
    k, devices = cluster.accelerators, cluster.num_devices
    device = [data.draw(st.integers(0 if graph.supported[v] else k, devices - 1)) for v in range(graph.n)]
    priority = data.draw(st.permutations(range(graph.n)))
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(graph.n))
    digraph.add_edges_from(zip(graph.src.tolist(), graph.dst.tolist()))
    order = list(nx.lexicographical_topological_sort(digraph, key=lambda v: priority[v]))
    for schedule_order in (None, order):
        span = makespan(graph, cluster, device, order=schedule_order, contention=contention)
        assert r.bound <= span * (1 + 1e-9) + 1e-7, (device, schedule_order)


@st.composite
def sct_graphs(draw: st.DrawFn) -> Graph:
    """DAGs with accelerator times in [1, 4], slower CPUs and communication costs in [0, 1] (c <= p everywhere)."""
    n = draw(st.integers(1, 8))
    times = st.integers(4, 16).map(lambda v: v / 4)
    nodes = [Node(i, 4 * draw(times), draw(times), comm=draw(st.integers(0, 4)) / 4) for i in range(n)]
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if draw(st.integers(0, 2)) == 0]
    return Graph(nodes, edges)


@settings(max_examples=40, deadline=None)
@given(sct_graphs(), st.integers(1, 3))
def test_baechis_lp_where_the_sct_assumption_holds(graph: Graph, k: int) -> None:
    p = least_times(graph, Cluster(k, cpus=1))
    assert np.array_equal(edge_delays(graph, p, cpu_slack=None), graph.edge_cost)
    r = exactplace.sct_relaxation(graph, Cluster(k, cpus=1))
    ids = {int(v) for v in graph.ids}
    edges = set(map(tuple, np.stack([graph.ids[graph.src], graph.ids[graph.dst]], axis=1).tolist()))
    assert set(r.favorite_child) <= ids and len(set(r.favorite_child.values())) == len(r.favorite_child)
    assert all((i, j) in edges for i, j in r.favorite_child.items())


def test_delays_are_capped_by_what_every_schedule_pays() -> None:
    # 0 -> {1, 2} and {0, 3} -> 2, transfers of 10: a sibling (1), a co-parent (3) or CPU time (slack 4) is cheaper.
    g = Graph([Node(0, 5.0, 1.0, comm=10.0), Node(1, 5.0, 2.0), Node(2, 5.0, 3.0), Node(3, 7.0, 4.0, comm=10.0)],
              [(0, 1), (0, 2), (3, 2)])
    p = g.acc_time
    # (0, 1): sibling 2 has p 3 -> 3; (0, 2): sibling 1 has p 2, co-parent 3 has p 4 -> 2; (3, 2): co-parent 0 -> 1
    assert edge_delays(g, p, cpu_slack=None).tolist() == [3.0, 2.0, 1.0]
    assert edge_delays(g, p, cpu_slack=g.cpu_time - p).tolist() == [3.0, 2.0, 1.0]
    assert edge_delays(g, p, cpu_slack=np.zeros(4)).tolist() == [0.0, 0.0, 0.0]


def test_processing_times_follow_support_and_cluster() -> None:
    g = Graph([Node(0, 5.0, 1.0), Node(1, 7.0, None)], [(0, 1)])
    assert exactplace.sct_relaxation(g).bound == pytest.approx(8.0)                   # acc 1 + CPU 7
    assert exactplace.sct_relaxation(g, Cluster(0, cpus=2)).bound == pytest.approx(12.0)   # CPU only
    assert exactplace.sct_relaxation(g, Cluster(1, speed=2.0)).bound == pytest.approx(7.5)  # faster accelerator


def test_favorite_child_resolves_conflicts_and_threshold() -> None:
    # A fork where the heavier child should follow its parent: x = 0 on that edge, 1 on the other.
    g = Graph([Node(0, 9.0, 1.0, comm=1.0), Node(1, 9.0, 1.0, comm=1.0), Node(2, 9.0, 1.0), Node(3, 9.0, 2.0)],
              [(0, 1), (1, 2), (1, 3)])
    assert exactplace.sct_relaxation(g).favorite_child == {0: 1, 1: 3}
    # A symmetric fork: the LP splits 0.5 / 0.5, so no favorite below 0.5, and one (not two) above it.
    sym = Graph([Node(i, 9.0, 1.0, comm=1.0) for i in range(3)], [(0, 1), (0, 2)])
    assert exactplace.sct_relaxation(sym).favorite_child == {}
    assert len(exactplace.sct_relaxation(sym, threshold=0.75).favorite_child) == 1


@pytest.mark.parametrize("bad", [0, 1.5, "half", None])
def test_bad_threshold(bad: object) -> None:
    with pytest.raises(ParameterError, match="'threshold'"):
        exactplace.sct_relaxation(Graph([Node(0, 1.0, 1.0)], []), threshold=bad)


FORK3 = Graph([Node(0, 1.5, 1.0, comm=5.0)] + [Node(i, 1.0, 1.0) for i in (1, 2, 3)], [(0, 1), (0, 2), (0, 3)])
JOIN = Graph([Node(0, 9.0, 1.0, comm=10.0), Node(1, 9.0, 1.0, comm=10.0), Node(2, 9.0, 1.0)], [(0, 2), (1, 2)])


@pytest.mark.parametrize(("graph", "cluster", "device", "makes"), [
    (FORK3, Cluster(0, cpus=3), [0, 0, 1, 2], 2.5),   # children on other CPU cores wait only for the CPU time
    (JOIN, Cluster(1, cpus=0), [0, 0, 0], 3.0),       # both parents before their child on one device
])
def test_each_cap_is_needed(graph: Graph, cluster: Cluster, device: list[int], makes: float) -> None:
    assert makespan(graph, cluster, device) == pytest.approx(makes)
    assert exactplace.sct_relaxation(graph, cluster).bound <= makes + 1e-9


def random_graph_for_time_limits(n: int = 3000) -> tuple[Graph, Cluster]:
    """A random DAG large enough that HiGHS does not solve its LP before checking the clock."""
    rng = np.random.default_rng(0)
    edges = {(u, u + int(d)) for u in range(n) for d in rng.integers(1, 30, 2) if u + d < n}
    nodes = [Node(i, float(rng.uniform(1, 5)), float(rng.uniform(0.1, 1)), comm=float(rng.uniform(0, 0.3)))
             for i in range(n)]
    return Graph(nodes, sorted(edges)), Cluster(accelerators=4, cpus=1)


def test_lp_past_its_time_limit_gives_no_relaxation_and_m_sct_schedules_without_favourites():
    graph, cluster = random_graph_for_time_limits()
    assert exactplace.sct_relaxation(graph, cluster, time_limit=0.0) is None
    p = exactplace.solve(graph, cluster, objective="makespan", method="m-sct", time_limit=1e-3)
    assert p.limit is exactplace.Limit.TIME and p.bound is None and p.device is not None
    assert p.info["favorite_children"].startswith("none")
    plain = exactplace.solve(graph, cluster, objective="makespan", method="m-etf")
    assert p.objective == pytest.approx(plain.objective)  # without favourites m-SCT is m-ETF
