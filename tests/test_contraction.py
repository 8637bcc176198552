"""The DP's preprocessing (exactplace.core.contraction) and the ideal counter.

Invariants on random graphs, each against an independent computation: colour classes stay
whole, forward edges survive as unit edges, the unit graph is a DAG, and communication
computed from the contraction's groups equals the max-load evaluator's for any split of the
units. Then one example per preprocessing rule, and the ideal counter against enumeration.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_graphs, dags

from exactplace import Cluster, Graph, Node, ParameterError
from exactplace.core.contraction import Contraction, contract, dfs_topological_order, linearize
from exactplace.evaluators import device_loads
from exactplace.methods.ideals import count_ideals, count_unit_ideals

native = pytest.importorskip("exactplace._native")


def unit_dag(c: Contraction) -> nx.DiGraph:
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(c.num_units))
    digraph.add_edges_from(zip(c.src.tolist(), c.dst.tolist()))
    return digraph


def enumerate_ideals(digraph: nx.DiGraph) -> int:
    """Ideals by brute force over all subsets (few nodes only)."""
    nodes = list(digraph)
    count = 0
    for mask in range(1 << len(nodes)):
        chosen = {v for i, v in enumerate(nodes) if mask >> i & 1}
        count += all(u in chosen for v in chosen for u in digraph.predecessors(v))
    return count


def group_comm(c: Contraction, inside: np.ndarray) -> float:
    """Communication of a set of units on an accelerator, from the contraction's groups."""
    total = 0.0
    for g in range(len(c.group_cost)):
        targets = c.group_target[c.group_ptr[g]:c.group_ptr[g + 1]]
        source_in = inside[c.group_source[g]]
        if (source_in and not inside[targets].all()) or (not source_in and inside[targets].any()):
            total += c.group_cost[g]
    return total


@given(any_graphs(), st.sampled_from([math.inf, 0.0, 10.0]))
def test_contraction_invariants(graph: Graph, memory: float) -> None:
    c = contract(graph, memory)
    assert c.unit.shape == (graph.n,) and set(c.unit.tolist()) == set(range(c.num_units))
    # Units are numbered by first node position.
    firsts = [int(np.flatnonzero(c.unit == u)[0]) for u in range(c.num_units)]
    assert firsts == sorted(firsts)
    # Colour classes are never split.
    for cls in np.unique(graph.color):
        assert len(set(c.unit[graph.color == cls].tolist())) == 1
    dag = unit_dag(c)
    assert nx.is_directed_acyclic_graph(dag)
    forward = ~graph.backward
    for s, d in zip(graph.src.tolist(), graph.dst.tolist()):
        if forward[s] and forward[d] and c.unit[s] != c.unit[d]:
            assert dag.has_edge(c.unit[s], c.unit[d])
    # Unit aggregates.
    np.testing.assert_allclose(c.cpu_time, np.bincount(c.unit, weights=graph.cpu_time, minlength=c.num_units))
    np.testing.assert_allclose(c.memory, np.bincount(c.unit, weights=graph.memory, minlength=c.num_units))
    assert np.array_equal(c.supported, np.array([graph.supported[c.unit == u].all() for u in range(c.num_units)]))
    assert np.all(np.isinf(c.acc_time) == ~c.supported)
    # Groups never target their own unit.
    for g in range(len(c.group_cost)):
        assert c.group_source[g] not in c.group_target[c.group_ptr[g]:c.group_ptr[g + 1]].tolist()


@settings(max_examples=60)
@given(any_graphs(), st.data())
def test_group_communication_matches_the_evaluator(graph: Graph, data: st.DataObject) -> None:
    """For any set S of units on acc0 (the rest on acc1), the groups' cost equals acc0's communication."""
    c = contract(graph)
    inside = np.array(data.draw(st.lists(st.booleans(), min_size=c.num_units, max_size=c.num_units)))
    device = np.where(inside[c.unit], 0, 1)
    loads = device_loads(graph, Cluster(accelerators=2, cpus=0), device)
    assert group_comm(c, inside) == pytest.approx(loads.comm[0].sum(), abs=1e-9)


@settings(max_examples=60)
@given(any_graphs())
def test_ideal_count_matches_enumeration(graph: Graph) -> None:
    c = contract(graph)
    expected = enumerate_ideals(unit_dag(c))
    assert count_unit_ideals(c) == (expected, cover_pairs(unit_dag(c)))
    assert count_ideals(graph) == expected
    assert count_ideals(graph, limit=expected) == expected
    assert count_ideals(graph, limit=expected - 1) is None


def cover_pairs(digraph: nx.DiGraph) -> int:
    """Pairs (ideal, node that can be added to it): the lattice's edges, by brute force."""
    nodes = list(digraph)
    count = 0
    for mask in range(1 << len(nodes)):
        chosen = {v for i, v in enumerate(nodes) if mask >> i & 1}
        if all(u in chosen for v in chosen for u in digraph.predecessors(v)):
            count += sum(v not in chosen and all(u in chosen for u in digraph.predecessors(v)) for v in nodes)
    return count


@given(dags())
def test_dfs_order_is_topological_and_linearize_makes_a_chain(graph: Graph) -> None:
    c = contract(graph)
    order = dfs_topological_order(c.num_units, c.src, c.dst)
    assert sorted(order.tolist()) == list(range(c.num_units))
    position = np.empty(c.num_units, dtype=np.int64)
    position[order] = np.arange(c.num_units)
    assert np.all(position[c.src] < position[c.dst])
    lin = linearize(c)
    assert count_unit_ideals(lin) == (c.num_units + 1, c.num_units)


# -- one example per preprocessing rule -------------------------------------------------------


def test_cycle_through_a_colour_class_fuses_the_classes() -> None:
    # Class 7 = {a1, a3}; a1 -> b -> a3 makes classes 7 and b one unit.
    g = Graph([Node(0, 1, 1, color=7), Node(1, 1, 1), Node(2, 1, 1, color=7), Node(3, 1, 1)],
              [(0, 1), (1, 2), (2, 3)])
    c = contract(g)
    assert c.unit.tolist() == [0, 0, 0, 1] and c.fused == 1
    assert c.src.tolist() == [0] and c.dst.tolist() == [1]


def test_orphaned_backward_nodes_get_mirrored_forward_images() -> None:
    # forward a -> b; backward b' -> a'; orphan o1 fed by a', orphan o2 feeding b'.
    nodes = [Node(0, 1, 1, color=0), Node(1, 1, 1, color=1), Node(2, 1, 1, color=1, backward=True),
             Node(3, 1, 1, color=0, backward=True), Node(4, 1, 1, backward=True), Node(5, 1, 1, backward=True)]
    c = contract(Graph(nodes, [(0, 1), (2, 3), (3, 4), (5, 2)]))
    assert c.orphans == 2 and c.unit.tolist() == [0, 1, 1, 0, 2, 3]
    # a' -> o1 mirrors to o1 -> a; o2 -> b' mirrors to b -> o2.
    assert sorted(zip(c.src.tolist(), c.dst.tolist())) == [(0, 1), (1, 3), (2, 0)]


@pytest.mark.parametrize(
    ("free", "memory", "merged"),
    [
        (Node(9, 0.0, 0.0), math.inf, True),                     # free and weightless
        (Node(9, 0.0, 0.0, memory=5.0), math.inf, True),         # memory cannot bind
        (Node(9, 0.0, 0.0, memory=5.0), 6.0, False),             # memory might bind (total 7 > 6)
        (Node(9, 0.0, 0.0, memory=5.0), 7.0, True),              # the whole graph fits one accelerator
        (Node(9, 0.0, None), math.inf, False),                   # unsupported
        (Node(9, 0.5, 0.0), math.inf, False),                    # takes CPU time
    ],
)
def test_trivial_merge_conditions(free: Node, memory: float, merged: bool) -> None:
    g = Graph([Node(0, 1, 1, memory=1.0), Node(1, 1, 1, memory=1.0), free], [(0, 1), (9, 1)])
    c = contract(g, memory)
    assert (c.num_units == 2) == merged
    assert c.merged == int(merged)
    if merged:
        assert c.unit.tolist() == [0, 1, 1]


def test_no_merge_with_two_neighbours_and_chains_of_free_nodes_collapse() -> None:
    # 5 -> 6 -> 0 -> 1, and 7 between 0 and 1: 5 and 6 collapse into 0; 7 has two neighbours.
    nodes = [Node(0, 1, 1), Node(1, 1, 1), Node(5, 0, 0), Node(6, 0, 0), Node(7, 0, 0)]
    c = contract(Graph(nodes, [(5, 6), (6, 0), (0, 1), (0, 7), (7, 1)]))
    assert c.merged == 2 and c.unit.tolist() == [0, 1, 0, 0, 2]


def test_orphan_merge_needs_every_edge_to_stay_with_its_neighbour() -> None:
    # A zero-time orphan fed by b' and feeding a': two neighbours, not merged.
    nodes = [Node(0, 1, 1, color=0), Node(1, 1, 1, color=1), Node(2, 1, 1, color=1, backward=True),
             Node(3, 1, 1, color=0, backward=True), Node(4, 0, 0, backward=True)]
    c = contract(Graph(nodes, [(0, 1), (2, 4), (4, 3)]))
    assert c.merged == 0 and c.num_units == 3


def test_count_ideals_parameters_and_cluster_memory() -> None:
    g = Graph([Node(0, 1, 1, memory=1.0), Node(1, 1, 1, memory=1.0), Node(9, 0, 0, memory=5.0)],
              [(0, 1), (9, 1)])
    assert count_ideals(g) == 3                                   # 9 merged: {}, {0}, {0,1}
    assert count_ideals(g, cluster=Cluster(1, memory=6.0)) == 5   # memory may bind: 9 stays
    assert Cluster(2, memory=[3.0, 2.0]).memory_cap == Cluster(1, memory=2.0).memory_limit[0]
    for bad in (-1, 2.5, True, "3"):
        with pytest.raises(ParameterError, match="'limit' parameter of count_ideals"):
            count_ideals(g, limit=bad)


def test_count_of_a_wide_antichain_stops_at_the_limit() -> None:
    g = Graph([Node(i, 1, 1) for i in range(40)], [])  # 2**40 ideals
    assert count_ideals(g, limit=100_000) is None


def test_native_rejects_malformed_graphs_without_crashing() -> None:
    with pytest.raises(ValueError, match="cycle"):
        native.count_ideals(2, np.array([0, 1]), np.array([1, 0]), 10)
    with pytest.raises(ValueError, match="outside"):
        native.count_ideals(2, np.array([0]), np.array([5]), 10)
    with pytest.raises(ValueError, match="self-loop"):
        native.count_ideals(2, np.array([1]), np.array([1]), 10)
    with pytest.raises(ValueError, match="same length"):
        native.count_ideals(2, np.array([0, 1]), np.array([1]), 10)
    with pytest.raises(ValueError, match="one-dimensional"):
        native.count_ideals(2, np.zeros((1, 1)), np.array([1]), 10)
    assert native.count_ideals(3, np.array([], dtype=np.int64), np.array([], dtype=np.int64), 100) == (8, 12)
