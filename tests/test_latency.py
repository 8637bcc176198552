"""latency against an event simulation written from the workloads README §4, and the published splits.

The reference simulation below knows only the README's words:

* an accelerator subgraph S is invoked when all its inputs are in RAM (every node outside S
  with an edge into S has finished); it copies its inputs in (each moving output once: each
  (node, cost) pair, as the per-edge subdivision says), computes its nodes in sequence, and
  copies its outputs out (each once); all its nodes are done at that moment;
* a CPU node runs as soon as its predecessors are done (enough cores), paying no communication;
* with several subgraphs on one accelerator, the accelerator runs them one at a time.

It repeatedly starts any block whose inputs are all done, until every block ran (or none can
start: the placement deadlocks).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from checks import close, matches_printed
from hypothesis import event, given, settings
from hypothesis import strategies as st
from strategies import clusters, dags, placements

from exactplace import Cluster, Graph, Node, PlacementError, read_split, read_workload
from exactplace.evaluators.latency import contiguous_pieces, latency, latency_schedule


def naive_latency(graph: Graph, cluster: Cluster, device, pieces: dict[int, list[set[int]]] | None = None,
                  *, serial: bool = True) -> float | None:
    """Latency by event simulation; None when the subgraphs wait on each other forever.

    ``pieces[d]``: the subgraphs (sets of node ids) of accelerator ``d`` in the order it runs
    them; by default each accelerator runs all its nodes as one subgraph. ``serial=False``
    lets the pieces of one accelerator run in parallel (a lower bound).
    """
    nodes = {v.id: v for v in graph.nodes()}
    where = {int(graph.ids[i]): int(device[i]) for i in range(graph.n)}
    edges = graph.edges()
    k = cluster.accelerators
    blocks: list[tuple[int, frozenset[int]]] = []
    previous: dict[int, int | None] = {}
    for d in range(k):
        sets = pieces.get(d, []) if pieces is not None else [{v for v in nodes if where[v] == d}]
        for position, members in enumerate(s for s in sets if s):
            previous[len(blocks)] = len(blocks) - 1 if position and serial else None
            blocks.append((d, frozenset(members)))
    for v in nodes:
        if where[v] >= k:
            previous[len(blocks)] = None
            blocks.append((where[v], frozenset([v])))
    inputs = [{u for u, w, _ in edges if w in members and u not in members} for _, members in blocks]
    finish: dict[int, float] = {}
    block_end: dict[int, float] = {}
    remaining = list(range(len(blocks)))
    while remaining:
        started = False
        for b in list(remaining):
            d, members = blocks[b]
            before = previous[b]
            if not all(u in finish for u in inputs[b]) or (before is not None and before not in block_end):
                continue
            waits = [finish[u] for u in inputs[b]] + ([block_end[before]] if before is not None else [])
            start = max(waits, default=0.0)
            if d < k:
                copy_in = {(u, c) for u, w, c in edges if u not in members and w in members}
                copy_out = {(u, c) for u, w, c in edges if u in members and w not in members}
                compute = 0.0
                for v in members:  # "computes its nodes in sequence"
                    acc = nodes[v].acc_time
                    compute += math.inf if acc is None else acc / float(cluster.speed[d])
                end = start + sum(c for _, c in copy_in) + compute + sum(c for _, c in copy_out)
            else:
                (v,) = members
                end = start + nodes[v].cpu_time
            for v in members:
                finish[v] = end
            block_end[b] = end
            remaining.remove(b)
            started = True
        if not started:
            return None
    return max(finish.values())


def is_contiguous_naive(graph: Graph, members: set[int]) -> bool:
    """Definition 3.1 by reachability: no u in S, v outside, w in S with u ~> v ~> w."""
    digraph = graph.to_networkx()
    for u in members:
        for v in nx.descendants(digraph, u) - members:
            if nx.descendants(digraph, v) & members:
                return False
    return True


@st.composite
def contiguous_instances(draw: st.DrawFn) -> tuple[Graph, Cluster, np.ndarray]:
    """Inference graph, cluster and a placement whose accelerator sets are all contiguous.

    Half the time a random placement that happens to be contiguous (these may deadlock),
    otherwise consecutive runs of a random topological order (never deadlock).
    """
    graph = draw(dags())
    cluster = draw(clusters(min_cpus=1))
    device = draw(placements(graph, cluster))
    k = cluster.accelerators
    ids = graph.ids.tolist()
    if all(is_contiguous_naive(graph, {ids[i] for i in np.flatnonzero(device == d)}) for d in range(k)):
        return graph, cluster, device
    order = list(nx.topological_sort(graph.to_networkx()))
    if draw(st.booleans()):
        order = draw(st.sampled_from(list(itertools.islice(nx.all_topological_sorts(graph.to_networkx()), 50))))
    cuts = sorted(draw(st.lists(st.integers(0, graph.n), min_size=k, max_size=k)))
    device = np.empty(graph.n, dtype=np.int64)
    bounds = [0, *cuts, graph.n]
    for segment in range(len(bounds) - 1):
        for node_id in order[bounds[segment]:bounds[segment + 1]]:
            d = segment if segment < k else k + draw(st.integers(0, cluster.cpus - 1))
            device[graph.index_of(node_id)] = d
    return graph, cluster, device


# -- (a) brute force on tiny graphs ----------------------------------------------------------------


@settings(max_examples=150)
@given(contiguous_instances())
def test_contiguous_latency_matches_simulation(instance) -> None:
    graph, cluster, device = instance
    expected = naive_latency(graph, cluster, device)
    event("deadlock" if expected is None else "runs")
    if expected is None:
        with pytest.raises(PlacementError, match="No invocation order exists"):
            latency(graph, cluster, device)
    else:
        assert close(latency(graph, cluster, device), expected)


@settings(max_examples=50)
@given(contiguous_instances())
def test_heterogeneous_speeds(instance) -> None:
    graph, cluster, device = instance
    fast = Cluster(cluster.accelerators, cluster.memory.tolist(), cluster.cpus, speed=[2.0] * cluster.accelerators)
    expected = naive_latency(graph, fast, device)
    if expected is None:
        with pytest.raises(PlacementError):
            latency(graph, fast, device)
    else:
        assert close(latency(graph, fast, device), expected)


@settings(max_examples=100)
@given(dags(), clusters(), st.data())
def test_pieces_are_contiguous_and_partition_the_set(graph: Graph, cluster: Cluster, data: st.DataObject) -> None:
    member = np.array(data.draw(st.lists(st.booleans(), min_size=graph.n, max_size=graph.n)))
    pieces = contiguous_pieces(graph, member)
    ids = graph.ids.tolist()
    assert np.all((pieces > 0) == member)
    count = int(pieces.max())
    assert set(pieces[member].tolist()) == set(range(1, count + 1))  # numbered 1..count, none empty
    for p in range(1, count + 1):
        assert is_contiguous_naive(graph, {ids[i] for i in np.flatnonzero(pieces == p)})
    assert (count <= 1) == is_contiguous_naive(graph, {ids[i] for i in np.flatnonzero(member)})
    for u, v in zip(graph.src.tolist(), graph.dst.tolist()):  # no edge goes back to an earlier piece
        if member[u] and member[v]:
            assert pieces[u] <= pieces[v]


@settings(max_examples=150)
@given(dags(), clusters(min_accelerators=1, min_cpus=1), st.data())
def test_noncontiguous_latency(graph: Graph, cluster: Cluster, data: st.DataObject) -> None:
    device = data.draw(placements(graph, cluster))
    k = cluster.accelerators
    ids = graph.ids.tolist()
    pieces = {}
    for d in range(k):
        numbered = contiguous_pieces(graph, device == d)
        pieces[d] = [{ids[i] for i in np.flatnonzero(numbered == p)} for p in range(1, int(numbered.max()) + 1)]
    serial = naive_latency(graph, cluster, device, pieces)
    parallel = naive_latency(graph, cluster, device, pieces, serial=False)
    event(f"max pieces per accelerator: {max(len(p) for p in pieces.values())}, deadlock: {serial is None}")
    if serial is None:
        with pytest.raises(PlacementError, match="No invocation order exists"):
            latency_schedule(graph, cluster, device)
        return
    schedule = latency_schedule(graph, cluster, device)
    assert close(schedule.latency, serial)
    assert parallel is not None and schedule.latency >= parallel - 1e-9
    assert close(latency(graph, cluster, device), schedule.latency)
    # one accelerator runs its subgraphs one at a time, and every subgraph is one of its pieces
    for d in range(k):
        runs = sorted((start, end, {ids[i] for i in members}) for dev, members, start, end in schedule.subgraphs
                      if dev == d)
        assert sorted(map(sorted, (r[2] for r in runs))) == sorted(map(sorted, pieces[d]))
        for (_, end, _), (start, _, _) in itertools.pairwise(runs):
            assert end <= start + 1e-9
    # every node finishes no earlier than its predecessors
    for u, v in zip(graph.src.tolist(), graph.dst.tolist()):
        assert schedule.finish[v] >= schedule.finish[u] - 1e-9
    assert [s[2] for s in schedule.subgraphs] == sorted(s[2] for s in schedule.subgraphs)


def test_doc_example_by_hand() -> None:
    g = Graph([Node(1, 4.0, 1.0, comm=0.5), Node(2, 3.0, 2.0, comm=0.5), Node(3, 1.0, 1.0)], [(1, 2), (2, 3)])
    c = Cluster(accelerators=1, cpus=1)
    assert latency(g, c, [0, 0, 1]) == naive_latency(g, c, [0, 0, 1]) == 1.0 + 2.0 + 0.5 + 1.0


def test_two_pieces_on_one_accelerator_run_in_turn() -> None:
    # 1 -> 2 -> 3 with 1, 3 on acc0 and 2 on the CPU: acc0 runs {1}, then {3} after the CPU
    g = Graph([Node(1, 9.0, 1.0, comm=0.25), Node(2, 2.0, 9.0, comm=0.5), Node(3, 9.0, 1.0)], [(1, 2), (2, 3)])
    c = Cluster(accelerators=1, cpus=1)
    schedule = latency_schedule(g, c, [0, 1, 0])
    assert [(d, m.tolist(), s, e) for d, m, s, e in schedule.subgraphs] == [(0, [0], 0.0, 1.25), (0, [2], 3.25, 4.75)]
    assert schedule.latency == naive_latency(g, c, [0, 1, 0], {0: [{1}, {3}]}) == 4.75


def test_deadlock_is_named() -> None:
    # a -> b and c -> d with {a, d} on acc0 and {b, c} on acc1: each waits for the other
    g = Graph([Node(i, 1.0, 1.0) for i in range(4)], [(0, 1), (2, 3)])
    c = Cluster(accelerators=2, cpus=1)
    assert naive_latency(g, c, [0, 1, 1, 0]) is None
    with pytest.raises(PlacementError, match=r"cycle \(acc\d -> acc\d\)"):
        latency(g, c, [0, 1, 1, 0])


def test_unsupported_on_accelerator_is_infinite() -> None:
    g = Graph([Node(1, 1.0, None), Node(2, 1.0, 1.0)], [(1, 2)])
    assert latency(g, Cluster(1, cpus=1), [0, 1]) == math.inf


# -- (b) published splits ---------------------------------------------------------------------------


def test_published_split_latency(split_latency_case) -> None:
    assert split_latency_case is not None, "the workloads README lists no split latency"
    workload_path, split_path, published = split_latency_case
    w = read_workload(workload_path)
    device = read_split(split_path, w.graph, w.cluster)
    value = latency(w.graph, w.cluster, device)
    assert matches_printed(value, published), f"{value} vs published {published}"
    total = json.loads(split_path.read_text()).get("totalLatency")
    if total is not None:  # the greedy splits carry the reference evaluator's full-precision value
        assert close(value, total)


def test_published_split_latency_matches_simulation(shared_workloads: Path) -> None:
    # The reference simulation on one real split of each kind (the op graphs are too slow for it).
    for name in ("layer_bert24_inference", "layer_gnmt_inference"):
        w = read_workload(shared_workloads / "latency" / f"{name}.json")
        for kind in ("greedy", "maxload_dp"):
            device = read_split(shared_workloads / "splits" / f"latency_{name}_{kind}.json", w.graph, w.cluster)
            assert close(latency(w.graph, w.cluster, device), naive_latency(w.graph, w.cluster, device))
