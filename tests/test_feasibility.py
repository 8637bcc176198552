"""Feasibility: contiguity against Definition 3.1 by brute force, and every violation named."""

from __future__ import annotations

import math
import re

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_graphs, dags, placed_instances, training_graphs

from exactplace import Cluster, Graph, Node, PlacementError, check_feasibility, is_contiguous
from exactplace.evaluators.feasibility import contiguity_violations


def contiguous_by_definition(graph: Graph, positions: set[int]) -> bool:
    """Definition 3.1: no u in S, v outside S, w in S with v reachable from u and w from v."""
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(graph.n))
    digraph.add_edges_from(zip(graph.src.tolist(), graph.dst.tolist()))
    reach = {u: nx.descendants(digraph, u) for u in range(graph.n)}
    return not any(
        w in reach[v]
        for u in positions for v in reach[u] if v not in positions for w in positions
    )


def contiguous_by_ideals(graph: Graph, positions: set[int]) -> bool:
    """The equivalent form: S = I minus I' for down-closed sets I' within I (I = S plus its ancestors)."""
    digraph = graph.to_networkx()
    ids = graph.ids.tolist()
    members = {ids[i] for i in positions}
    ideal = set(members)
    for v in members:
        ideal |= nx.ancestors(digraph, v)
    inner = ideal - members
    return all(nx.ancestors(digraph, v) <= inner for v in inner)


@settings(max_examples=150)
@given(any_graphs(), st.data())
def test_is_contiguous_matches_definition(graph: Graph, data: st.DataObject) -> None:
    positions = set(data.draw(st.sets(st.integers(0, graph.n - 1))))
    expected = contiguous_by_definition(graph, positions)
    assert is_contiguous(graph, sorted(positions)) == expected
    assert contiguous_by_ideals(graph, positions) == expected


@given(any_graphs())
def test_trivial_sets_are_contiguous(graph: Graph) -> None:
    assert is_contiguous(graph, [])
    assert is_contiguous(graph, list(range(graph.n)))
    for v in range(graph.n):
        assert is_contiguous(graph, [v])


@settings(max_examples=100)
@given(any_graphs(), st.data())
def test_contiguity_violations_for_every_label(graph: Graph, data: st.DataObject) -> None:
    label = np.array(data.draw(st.lists(st.integers(0, 3), min_size=graph.n, max_size=graph.n)))
    found = contiguity_violations(graph, label)
    bad_labels = {lab for lab, _ in found}
    for lab in range(4):
        members = set(np.flatnonzero(label == lab).tolist())
        assert (lab in bad_labels) == (bool(members) and not contiguous_by_definition(graph, members))
    for lab, v in found:  # the named node is outside the set, on a path that leaves and returns
        members = set(np.flatnonzero(label == lab).tolist())
        assert v not in members
        assert not contiguous_by_definition(graph, members)
        digraph = graph.to_networkx()
        node = int(graph.ids[v])
        ids = {int(graph.ids[i]) for i in members}
        assert nx.ancestors(digraph, node) & ids and nx.descendants(digraph, node) & ids


def expected_violations(graph: Graph, cluster: Cluster, device: np.ndarray) -> dict[str, set]:
    """Every broken constraint, computed plainly: what check_feasibility must report."""
    k = cluster.accelerators
    names = cluster.device_names()
    unsupported = {graph.describe(i) for i in range(graph.n) if device[i] < k and not graph.supported[i]}
    memory = set()
    for d in range(k):
        used = sum(graph.memory[i] for i in range(graph.n) if device[i] == d)
        if used > cluster.memory[d] * (1 + 1e-9) + 1e-9:
            memory.add(names[d])
    split_classes = set()
    for label in set(graph.color_labels) - {None}:
        devices = {int(device[i]) for i in range(graph.n) if graph.color_labels[i] == label}
        if len(devices) > 1:
            split_classes.add(label)
    contiguity = set()
    for d in range(cluster.num_devices):
        for part, flag in (("forward", False), ("backward", True)):
            members = {i for i in range(graph.n) if device[i] == d and graph.backward[i] == flag}
            if members and not contiguous_by_definition(graph, members):
                contiguity.add((part, names[d]))
    # order: the devices' forward parts, as vertices of a quotient graph, must admit a topological order
    quotient = nx.DiGraph()
    for u, v, _ in graph.edges():
        a, b = graph.index_of(u), graph.index_of(v)
        if not graph.backward[a] and not graph.backward[b] and device[a] != device[b]:
            quotient.add_edge(int(device[a]), int(device[b]))
    order = {"cycle"} if not nx.is_directed_acyclic_graph(quotient) else set()
    return {"unsupported": unsupported, "memory": memory, "colocation": split_classes, "contiguity": contiguity,
            "order": order}


@settings(max_examples=150)
@given(placed_instances())
def test_check_feasibility_matches_brute_force(instance) -> None:
    graph, cluster, device = instance
    expected = expected_violations(graph, cluster, device)
    found = check_feasibility(graph, cluster, device, space="contiguous")
    by_kind: dict[str, list[str]] = {}
    for violation in found:
        by_kind.setdefault(violation.kind, []).append(violation.message)
        assert str(violation) == f"{violation.kind}: {violation.message}"
    assert set(by_kind) <= set(expected)
    # unsupported: one violation per node, naming it and its accelerator
    named = {m.split(" cannot run")[0] for m in by_kind.get("unsupported", [])}
    assert named == expected["unsupported"]
    # memory: one per overfull accelerator, naming it
    assert {m.split(" holds")[0] for m in by_kind.get("memory", [])} == expected["memory"]
    # colocation: reported exactly when a class is split, naming two nodes of one broken class
    assert bool(by_kind.get("colocation")) == bool(expected["colocation"])
    for message in by_kind.get("colocation", []):
        first, second = re.findall(r"node (-?\d+)", message)[:2]
        a, b = graph.index_of(int(first)), graph.index_of(int(second))
        assert graph.color_labels[a] == graph.color_labels[b] in expected["colocation"]
        assert device[a] != device[b]
    # contiguity: one per (device, part) that is not contiguous
    pairs = {re.match(r"the (\w+) part of (\w+) is not contiguous", m).groups() for m in by_kind.get("contiguity", [])}
    assert pairs == expected["contiguity"]
    # order: one violation exactly when the devices cannot be ordered
    assert len(by_kind.get("order", [])) == len(expected["order"])
    # without the contiguity requirement the other kinds are unchanged
    relaxed = check_feasibility(graph, cluster, device)
    assert [v for v in found if v.kind not in ("contiguity", "order")] == relaxed


@given(training_graphs(orphans=False, extra_colors=False), st.data())
def test_mirrored_training_split_is_contiguous_when_forward_is(graph: Graph, data: st.DataObject) -> None:
    forward = np.flatnonzero(~graph.backward)
    chosen = set(data.draw(st.sets(st.sampled_from(forward.tolist()))))
    partners = {i for i in range(graph.n) if graph.backward[i]
                and any(graph.color[i] == graph.color[f] for f in chosen)}
    # backward edges mirror forward ones, so the backward images of a contiguous forward set are contiguous
    if contiguous_by_definition(graph, chosen):
        assert is_contiguous(graph, sorted(partners))


def test_named_violations() -> None:
    g = Graph(
        [Node(0, 1.0, None, name="embed"), Node(1, 1.0, 1.0, memory=5.0, color=7), Node(2, 1.0, 1.0, color=7),
         Node(3, 1.0, 1.0, memory=1.0)],
        [(0, 1), (1, 3), (3, 2)],
    )
    c = Cluster(accelerators=2, memory=4.0, cpus=1)
    messages = [str(v) for v in check_feasibility(g, c, [0, 0, 1, 1])]
    assert "unsupported: node 0 ('embed') cannot run on an accelerator but is placed on acc0" in messages
    assert "memory: acc0 holds 5 bytes, more than its 4 bytes" in messages
    assert "colocation: node 2 is on acc1 but node 1 of the same color class is on acc0" in messages
    assert not any(m.startswith("contiguity") for m in messages)
    roomy = Cluster(accelerators=2, memory=10.0, cpus=1)
    messages = [str(v) for v in check_feasibility(g, roomy, [2, 0, 0, 1], space="contiguous")]
    assert messages == [
        "contiguity: the forward part of acc0 is not contiguous: a path leaves it through node 3 and comes back",
        "order: the devices' forward parts wait on each other in a cycle (acc0 -> acc1 -> acc0): no chain of ideals",
    ]
    assert check_feasibility(g, roomy, [2, 0, 0, 0], space="contiguous") == []
    assert check_feasibility(g, roomy, [2, 0, 0, 1]) == []  # any split is a throughput split


def test_memory_per_accelerator_and_uncapped_cpus() -> None:
    g = Graph([Node(0, 1.0, 1.0, memory=3.0), Node(1, 1.0, 1.0, memory=3.0)], [])
    c = Cluster(accelerators=2, memory=[2.0, 6.0], cpus=1)
    assert [v.kind for v in check_feasibility(g, c, [0, 1])] == ["memory"]
    assert check_feasibility(g, c, [1, 1]) == []
    assert check_feasibility(g, c, [2, 2]) == []
    assert check_feasibility(g, Cluster(1, memory=math.inf, cpus=0), [0, 0]) == []


def test_backward_part_contiguity_is_separate() -> None:
    # forward 0 -> 1, backward 11 -> 10 mirrored; 0 and 10 on acc0 with 1 and 11 on acc1 is fine
    nodes = [Node(0, 1.0, 1.0, color=0), Node(1, 1.0, 1.0, color=1),
             Node(10, 1.0, 1.0, color=0, backward=True), Node(11, 1.0, 1.0, color=1, backward=True)]
    g = Graph(nodes, [(0, 1), (11, 10), (0, 10), (1, 11)])
    c = Cluster(accelerators=2, cpus=0)
    assert check_feasibility(g, c, [0, 1, 0, 1], space="contiguous") == []
    # acc0's whole set {0, 10} is not contiguous (0 -> 1 -> 11 -> 10), but each part is
    assert not is_contiguous(g, [0, 2])


@given(dags(), st.integers(0, 5))
def test_bad_placement_raises(graph: Graph, extra: int) -> None:
    c = Cluster(1, cpus=1)
    with pytest.raises(PlacementError):
        check_feasibility(graph, c, np.zeros(graph.n + extra + 1, dtype=int))
    with pytest.raises(PlacementError, match="placed on device 2"):
        check_feasibility(graph, c, np.full(graph.n, 2))
