"""The path DP's lower bound on contiguous latency (exactplace/bounds/latency_path.py).

Against brute force on tiny random DAGs (valid for every placement, with the reductions' zero
times made frequent and with unequal accelerators; exact on chains), on the shared layer
graphs (equal to the optimum the latency program finds), and in ``solve`` (a start it
certifies is returned at once, optimal). The native DP against the pure-Python one it replaced
(``latency_bound_oracle``): the same value on random graphs and on the shared workloads. The
placements of its argmin chains: legal, never below the bound. Its limits: beyond the old
20,000 ideals, a deadline, a memory budget, Ctrl-C.
"""

from __future__ import annotations

import _thread
import math
import threading
import time
from dataclasses import replace
from pathlib import Path

import latency_bound_oracle
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from oracle import latency_subgraph_optimum
from strategies import clusters, dags
from timing import on_time

from exactplace import Cluster, Graph, Node, Status, evaluate, read_workload, solve
from exactplace.bounds.latency_path import path_bound
from exactplace.evaluators import check_feasibility

SHARED = Path(__file__).resolve().parents[2] / "shared" / "workloads"


@st.composite
def zero_heavy_dags(draw: st.DrawFn, max_nodes: int = 5) -> Graph:
    """Random DAGs where many nodes have no time and no outgoing cost: the reductions' cases."""
    graph = draw(dags(max_nodes=max_nodes))
    nodes, silent = [], set()
    for node in graph.nodes():
        kind = draw(st.sampled_from(["keep", "free", "free_time", "free_cpu", "silent"]))
        if kind in ("free", "free_time"):
            node = replace(node, cpu_time=0.0, acc_time=0.0 if node.acc_time is not None else None)
        if kind == "free_cpu":  # no CPU time, but time on an accelerator
            node = replace(node, cpu_time=0.0)
        if kind in ("free", "silent"):
            silent.add(node.id)
        nodes.append(node)
    return Graph(nodes, [(u, v, 0.0 if u in silent else cost) for u, v, cost in graph.edges()])


def _check_valid(graph: Graph, cluster: Cluster) -> None:
    found = path_bound(graph, cluster)
    assert found is not None  # tiny graphs are never out of budget
    best = latency_subgraph_optimum(graph, cluster, 1)
    if best is None:
        return
    assert found.value <= best * (1 + 1e-12) + 1e-12, (found.value, best)


examples = dict(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(**examples)
@given(st.one_of(dags(max_nodes=5), zero_heavy_dags()), clusters(max_accelerators=2, max_cpus=2))
def test_bound_is_at_most_the_best_contiguous_latency(graph: Graph, cluster: Cluster) -> None:
    _check_valid(graph, cluster)


@settings(**examples)
@given(zero_heavy_dags(max_nodes=4), clusters(max_accelerators=3, max_cpus=1, heterogeneous=True))
def test_bound_is_valid_on_unequal_accelerators(graph: Graph, cluster: Cluster) -> None:
    _check_valid(graph, cluster)


layers = st.tuples(st.sampled_from([0.0, 0.0, 1.0, 4.0, 10.0]), st.sampled_from([None, 0.0, 0.0, 0.5, 2.0]),
                   st.sampled_from([0.0, 1.0, 3.0]), st.sampled_from([0.0, 0.5, 2.0]))


@settings(**{**examples, "max_examples": 300})
@given(st.lists(layers, min_size=1, max_size=5), clusters(max_accelerators=3, max_cpus=1))
@example([(1.0, 0.0, 0.0, 2.0), (0.0, 0.5, 0.0, 0.0)], Cluster(1, cpus=1))  # a sink with accelerator time
def test_bound_is_exact_on_chains(chain: list[tuple], cluster: Cluster) -> None:
    """On a chain every subgraph and CPU node lies on the path and they run one after another:
    the bound is the optimum (no colocation, equal accelerators, nothing to relax). Free times
    are frequent, so the reductions (a free first node, a free last node) are exercised."""
    nodes = [Node(i, cpu, acc, memory=mem, comm=comm) for i, (cpu, acc, mem, comm) in enumerate(chain)]
    graph = Graph(nodes, [(i, i + 1) for i in range(len(nodes) - 1)])
    best = latency_subgraph_optimum(graph, cluster, 1)
    found = path_bound(graph, cluster)
    if best is None:
        assert found.value == math.inf
    else:
        assert found.value == pytest.approx(best, rel=1e-12, abs=1e-12)


def test_trivial_sinks_are_absorbed_only_within_memory() -> None:
    """a -> b with a's output also feeding a free sink s: with room for s, {a, b} copies nothing
    out; without, a's output leaves for s on the CPU (a copy the bound must charge)."""
    a, b, s = Node(0, 10.0, 1.0, memory=1.0, comm=2.0), Node(1, 10.0, 1.0, memory=1.0), Node(2, 0.0, 0.0, memory=1.0)
    graph = Graph([a, b, s], [(0, 1), (0, 2)])
    roomy, tight = Cluster(1, memory=3.0, cpus=1), Cluster(1, memory=2.0, cpus=1)
    assert path_bound(graph, roomy).value == pytest.approx(2.0) == latency_subgraph_optimum(graph, roomy, 1)
    assert path_bound(graph, tight).value == pytest.approx(4.0) == latency_subgraph_optimum(graph, tight, 1)


def test_free_inputs_and_sinks_leave_the_lattice() -> None:
    """Twenty free inputs and twenty free sinks around one layer: 2 ideals, not 2**40."""
    layer = Node(100, 5.0, 1.0, memory=1.0, comm=1.0)
    inputs = [Node(i, 0.0, 0.0) for i in range(20)]
    sinks = [Node(50 + i, 0.0, 0.0) for i in range(20)]
    graph = Graph([layer, *inputs, *sinks], [(i, 100) for i in range(20)] + [(100, 50 + i) for i in range(20)])
    found = path_bound(graph, Cluster(1, memory=2.0, cpus=1))
    assert found.ideals == 2 and found.value == pytest.approx(1.0)


def test_out_of_budget_gives_no_bound() -> None:
    graph = Graph([Node(i, 1.0, 1.0) for i in range(12)], [])  # 4096 ideals
    assert path_bound(graph, Cluster(1, cpus=1), max_ideals=100) is None


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(zero_heavy_dags(max_nodes=5), clusters(max_accelerators=2, max_cpus=2))
def test_solve_with_the_bound_is_the_brute_force_optimum(graph: Graph, cluster: Cluster) -> None:
    pytest.importorskip("ortools")
    best = latency_subgraph_optimum(graph, cluster, 1)
    assume(best is not None)
    p = solve(graph, cluster, objective="latency", method="mip", rel_gap=0.0, time_limit=30, threads=1)
    assert p.status is Status.OPTIMAL
    assert p.objective == pytest.approx(best, rel=1e-6, abs=1e-6)
    assert p.bound <= p.objective


LAYER_GRAPHS = ["layer_bert24_inference", "layer_gnmt_inference", "layer_resnet50_inference"]


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/workloads")
@pytest.mark.parametrize("name", LAYER_GRAPHS)
def test_layer_graph_optimum_is_certified_at_once(name: str) -> None:
    """The bound equals the best start's latency on the published layer graphs: optimal, no solver."""
    w = read_workload(SHARED / "latency" / f"{name}.json")
    p = solve(w, objective="latency", method="mip", time_limit=60, rel_gap=0.0)
    assert p.status is Status.OPTIMAL and p.info["certified_by"] == "path_bound"
    assert p.bound == pytest.approx(p.objective, rel=1e-9)
    assert p.objective == pytest.approx(path_bound(w.graph, w.cluster).value, rel=1e-12)


def test_a_certified_start_is_logged_and_shown_as_progress(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("ortools")
    graph = Graph([Node(i, 10.0, 1.0, memory=1.0, comm=0.5) for i in range(3)], [(0, 1), (1, 2)])
    p = solve(graph, Cluster(2, memory=2.0, cpus=1), objective="latency", method="mip", log=True, progress=True)
    err = capsys.readouterr().err
    assert p.solver == "path_bound" and p.objective == pytest.approx(4.0)
    assert "path bound 4 certifies the warm start" in err and "gap 0.00%" in err


def test_ctrl_c_in_the_bound_returns_the_best_start(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ortools")
    from exactplace import Limit
    from exactplace.bounds import latency_path as latency_bound

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(latency_bound, "path_bound", interrupted)
    graph = Graph([Node(i, 10.0, 1.0, memory=1.0, comm=0.5) for i in range(3)], [(0, 1), (1, 2)])
    p = solve(graph, Cluster(2, memory=2.0, cpus=1), objective="latency", method="mip")
    assert p.status is Status.FEASIBLE and p.limit is Limit.INTERRUPT
    assert p.objective == pytest.approx(min(v for v in p.info["warm_start_candidates"].values() if v is not None))


def _same_as_the_python_dp(graph: Graph, cluster: Cluster, max_ideals: int = 20_000, exact: bool = False) -> None:
    new = path_bound(graph, cluster, max_ideals=max_ideals)
    old = latency_bound_oracle.path_bound(graph, cluster, max_ideals=max_ideals)
    assert (new is None) == (old is None)
    if new is None:
        return
    assert new.ideals == old.ideals
    # Both add the same charges along a chain; only a load's own terms are summed in another
    # order (label vs position order), a last-bit difference at most.
    assert new.value == (old.value if exact else pytest.approx(old.value, rel=1e-12, abs=1e-12))
    if new.value == old.value:
        assert new.path.tolist() == old.path.tolist()


graphs = st.one_of(dags(max_nodes=6), zero_heavy_dags(max_nodes=6))
any_clusters = st.one_of(clusters(max_accelerators=3, max_cpus=2),
                         clusters(max_accelerators=3, max_cpus=1, heterogeneous=True))


def _quarters(graph: Graph, cluster: Cluster) -> bool:
    """Every time, size and cost a multiple of 1/4 at speed 1: sums exact in any order."""
    values = np.concatenate([graph.cpu_time, graph.acc_time[graph.supported], graph.memory, graph.edge_cost])
    return bool(np.all(values * 4 == np.round(values * 4))) and bool(np.all(cluster.speed == 1.0))


@settings(**{**examples, "max_examples": 150})
@given(graphs, any_clusters)
def test_native_dp_equals_the_python_dp(graph: Graph, cluster: Cluster) -> None:
    """Bit for bit where sums are exact; otherwise within the rounding of a sum's order."""
    _same_as_the_python_dp(graph, cluster, exact=_quarters(graph, cluster))


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/workloads")
@pytest.mark.parametrize("path", sorted((SHARED / "latency").glob("*.json")) if SHARED.exists() else [],
                         ids=lambda p: p.stem)
def test_native_dp_equals_the_python_dp_on_the_shared_workloads(path: Path) -> None:
    """Bit for bit on the layer graphs; the operator graphs are beyond both (here: 2,000 ideals)."""
    w = read_workload(path)
    _same_as_the_python_dp(w.graph, w.cluster, max_ideals=20_000 if path.stem.startswith("layer") else 2_000,
                           exact=True)


def _check_placements(graph: Graph, cluster: Cluster) -> None:
    found = path_bound(graph, cluster)
    for device in found.placements:
        assert check_feasibility(graph, cluster, device, objective="latency", q=1) == []
        assert evaluate(graph, cluster, device, "latency") >= found.value * (1 - 1e-12) - 1e-12


@settings(**{**examples, "max_examples": 150})
@given(graphs, any_clusters)
def test_chain_placements_are_legal_and_never_below_the_bound(graph: Graph, cluster: Cluster) -> None:
    _check_placements(graph, cluster)


def test_a_chain_placement_is_found_on_a_random_graph() -> None:
    """Not vacuous: on most small instances the argmin chain is a legal placement."""
    rng = np.random.default_rng(3)
    found = 0
    for _ in range(20):
        n = 8
        nodes = [Node(i, float(rng.integers(1, 20)), float(rng.integers(1, 5)), memory=float(rng.integers(1, 4)),
                      comm=float(rng.integers(0, 3))) for i in range(n)]
        edges = [(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.3]
        graph, cluster = Graph(nodes, edges), Cluster(3, memory=6.0, cpus=2)
        _check_placements(graph, cluster)
        found += bool(path_bound(graph, cluster).placements)
    assert found >= 15


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/workloads")
@pytest.mark.parametrize("name", LAYER_GRAPHS)
def test_the_chain_placement_reaches_the_bound_on_the_layer_graphs(name: str) -> None:
    w = read_workload(SHARED / "latency" / f"{name}.json")
    found = path_bound(w.graph, w.cluster)
    device = found.placements[0]
    assert check_feasibility(w.graph, w.cluster, device, objective="latency", q=1) == []
    assert evaluate(w.graph, w.cluster, device, "latency") == pytest.approx(found.value, rel=1e-12)


def _antichain(n: int) -> Graph:
    """n unrelated layers: 2**n ideals."""
    return Graph([Node(i, 2.0, 1.0, memory=1.0, comm=1.0) for i in range(n)], [])


def test_beyond_the_python_dps_limit() -> None:
    """2**15 = 32,768 ideals, past the old 20,000: a bound (each path is one layer: 1 on an accelerator)."""
    graph, cluster = _antichain(15), Cluster(2, memory=2.0, cpus=1)
    assert latency_bound_oracle.path_bound(graph, cluster) is None
    found = path_bound(graph, cluster)
    assert found is not None and found.ideals == 2**15 and found.value == 1.0


def test_the_deadline_is_honoured() -> None:
    """2**18 ideals, every subset fits: minutes of pairs; stopped at the deadline, no bound."""
    info: dict = {}
    start = time.monotonic()
    assert path_bound(_antichain(18), Cluster(4, cpus=1), deadline=start + 0.3, info=info) is None
    assert info["status"] == "time" and on_time(time.monotonic() - start, 0.3)


def test_the_memory_budget_is_refused_before_allocating() -> None:
    info: dict = {}
    assert path_bound(_antichain(12), Cluster(2, cpus=1), memory_budget=100_000, info=info) is None
    assert info["status"] == "over_budget" and info["bytes"] > 100_000 and info["pairs"] == 0
    assert path_bound(_antichain(12), Cluster(2, cpus=1), max_ideals=4095, info=info) is None
    assert info["status"] == "too_many_ideals"


def test_ctrl_c_stops_the_bound() -> None:
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            path_bound(_antichain(18), Cluster(4, cpus=1))
    finally:
        timer.cancel()
    assert on_time(time.monotonic() - start, 0.3)  # the Ctrl-C came at 0.3 s


def test_the_chain_starts_the_latency_program() -> None:
    pytest.importorskip("ortools")
    graph = Graph([Node(i, 10.0, 1.0, memory=1.0, comm=0.5) for i in range(3)], [(0, 1), (1, 2)])
    p = solve(graph, Cluster(2, memory=2.0, cpus=1), objective="latency", method="mip")
    assert p.info["warm_start_candidates"]["path_chain"] == pytest.approx(4.0)
