"""Heterogeneous clusters (accelerators of differing memory and speed) in the exact methods.

``dp`` groups the accelerators into types of equal memory and speed and counts the devices
used of each type; the contiguous IP types each chain position; the non-contiguous IP gives
every accelerator its own memory row and speed, and sorts by load only accelerators of one
type. On random tiny instances (2-3 accelerators that differ, CPUs, training graphs with colour
classes, memory caps that sometimes leave nothing feasible) the brute force of
``tests/oracle.py`` enumerates every placement with every accelerator told apart
(``canonical_placements``), so:

* DP = contiguous IP = the best chain split (notion ``units``), the DP's placement naming the
  accelerators the evaluator scores it on;
* non-contiguous IP = the best placement of all (notion ``any``);
* a homogeneous cluster still takes the one-type path, and a uniformly faster cluster equals
  the homogeneous DP on accelerator times divided by the speed.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from exactplace.formulations.throughput import contiguous_ip, noncontiguous_ip
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima, is_unit_chain
from strategies import brute_force_graphs, clusters, placements
from timing import on_time

from exactplace import (
    Cluster,
    Graph,
    Limit,
    Node,
    Placement,
    Space,
    Status,
    TooManyIdealsError,
    check_feasibility,
    max_load,
    read_workload,
    solve,
    workload_path,
)
from exactplace.core.contraction import contract
from exactplace.solvers import get_solver

pytest.importorskip("exactplace._native")

SOLVER = "highs" if get_solver("highs").available() else "cpsat"
FEW = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def heterogeneous() -> st.SearchStrategy[Cluster]:
    """2-3 accelerators of drawn memory (sometimes uncapped) and speed (0.5-2), 0-2 CPUs; most differ."""
    return clusters(min_accelerators=2, max_accelerators=3, heterogeneous=True)


def approx(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def proven(p: Placement) -> bool:
    """Optimal, or feasible only because the solver stopped with its bound within its own tolerance
    (HiGHS may end 1e-6 below the objective, over the referee's rel_gap=0 noise; speeds such as 0.5 and 1
    in one program make that more likely)."""
    return p.status is Status.OPTIMAL or (
        p.status is Status.FEASIBLE and p.bound is not None and p.objective - p.bound <= 1e-5 * max(1.0, p.objective))


@FEW
@given(brute_force_graphs(), heterogeneous(), st.booleans())
def test_dp_and_contiguous_ip_equal_the_best_chain_split(graph: Graph, cluster: Cluster, overlap: bool) -> None:
    optima = brute_force_optima(graph, cluster, "throughput", overlap=overlap)
    event(f"{len(cluster.accelerator_types())} accelerator types, {'no' if optima.units is None else 'a'} chain split")
    dp = solve(graph, cluster, method="dp", overlap=overlap)
    ip = solve(graph, cluster, method="mip", solver=SOLVER, rel_gap=0.0, warm_start=None, overlap=overlap)
    if optima.units is None:
        assert dp.status is Status.INFEASIBLE and dp.device is None and dp.info["reason"]
        assert ip.status is Status.INFEASIBLE and ip.device is None
        return
    assert dp.status is Status.OPTIMAL and dp.bound == dp.objective
    assert approx(dp.objective, optima.units), (dp.objective, optima.units)
    assert proven(ip) and ip.space is Space.CHAIN and approx(ip.objective, optima.units)
    for p in (dp, ip):
        # The objective is the evaluator's for the reported devices (their own memory and speed).
        assert p.objective == max_load(graph, cluster, p.device, overlap=overlap)
        assert check_feasibility(graph, cluster, p.device, space="contiguous") == []
        assert is_unit_chain(graph, p.device)


@FEW
@given(brute_force_graphs(), heterogeneous())
def test_noncontiguous_ip_equals_the_best_split(graph: Graph, cluster: Cluster) -> None:
    optima = brute_force_optima(graph, cluster, "throughput")
    event(f"{len(cluster.accelerator_types())} accelerator types, {'no' if optima.any is None else 'a'} split")
    p = solve(graph, cluster, method="mip", solver=SOLVER, contiguous=False, rel_gap=0.0, warm_start=None)
    if optima.any is None:
        assert p.status is Status.INFEASIBLE
        return
    assert proven(p) and p.space is Space.ANY
    assert approx(p.objective, optima.any) and check_feasibility(graph, cluster, p.device) == []
    # The default warm start (the DP's chain split, when one exists) changes nothing but the start.
    warm = solve(graph, cluster, method="mip", solver=SOLVER, contiguous=False, rel_gap=0.0)
    assert proven(warm) and approx(warm.objective, optima.any)
    assert warm.info["warm_start"] == "dp" if optima.units is not None else warm.info["warm_start"] != "dp"


@settings(max_examples=30, deadline=None)
@given(brute_force_graphs(), heterogeneous(), st.booleans(), st.data())
def test_encoded_placements_satisfy_the_typed_models(graph: Graph, cluster: Cluster, overlap: bool,
                                                    data: st.DataObject) -> None:
    """A feasible placement is a point of both models at the evaluator's value, and decodes to one
    of the same value (accelerators of one type may swap)."""
    device = data.draw(placements(graph, cluster, colocated=True, supported=True))
    if check_feasibility(graph, cluster, device):
        return
    value = max_load(graph, cluster, device, overlap=overlap)
    for ip in (noncontiguous_ip(graph, cluster, overlap=overlap),
               contiguous_ip(graph, cluster, contract(graph, cluster.memory_cap), overlap=overlap)):
        x = ip.encode(device)
        if x is None:
            assert ip.space == "chain"  # not a chain split
            continue
        assert ip.model.violation(x) <= 1e-9
        assert approx(ip.model.objective_value(x), value)
        decoded = ip.decode(x)
        assert check_feasibility(graph, cluster, decoded) == []
        assert approx(max_load(graph, cluster, decoded, overlap=overlap), value)


def test_results_name_the_accelerator_of_each_node() -> None:
    """The fast accelerator is the last one: every method must put the work there, by its number."""
    graph = Graph([Node(i, cpu_time=8.0, acc_time=4.0, memory=1.0, comm=0.5) for i in range(3)], [(0, 1), (1, 2)])
    cluster = Cluster(3, memory=[8.0, 8.0, 8.0], speed=[1.0, 1.0, 8.0], cpus=1)
    for method, options in (("dp", {}), ("mip", {"solver": SOLVER}), ("mip", {"solver": SOLVER, "contiguous": False})):
        p = solve(graph, cluster, method=method, warm_start=None, **options) if method == "mip" else \
            solve(graph, cluster, method=method)
        assert p.device.tolist() == [2, 2, 2] and p.objective == 1.5, (method, options)
    # Its memory holds one node only: the other two go to the slow accelerators or the CPU.
    small = Cluster(3, memory=[8.0, 8.0, 1.0], speed=[1.0, 1.0, 8.0], cpus=1)
    p = solve(graph, small, method="dp")
    assert p.objective == max_load(graph, small, p.device) and np.sum(p.device == 2) == 1
    assert p.info["accelerator_types"] == [{"devices": [0, 1], "memory": 8.0, "speed": 1.0},
                                           {"devices": [2], "memory": 1.0, "speed": 8.0}]
    assert solve(graph, small).method == "dp"  # auto takes the exact DP on a heterogeneous cluster too


def test_homogeneous_path_and_uniform_speed_regression() -> None:
    """A homogeneous cluster keeps the one-type DP (published value); speed s on every accelerator
    equals the homogeneous DP with accelerator times divided by s (s = 2: exact)."""
    w = read_workload(workload_path("layer_bert24_inference"))
    p = solve(w, method="dp")
    assert p.objective == pytest.approx(17.78990625, rel=1e-12) and "accelerator_types" not in p.info
    k, cpus, memory = w.cluster.accelerators, w.cluster.cpus, float(w.cluster.memory[0])
    fast = solve(w.graph, Cluster(k, memory=memory, cpus=cpus, speed=[2.0] * k), method="dp")
    halved = Graph([Node(int(i), float(c), float(a) / 2 if s else None, memory=float(m))
                    for i, c, a, s, m in zip(w.graph.ids, w.graph.cpu_time, w.graph.acc_time, w.graph.supported,
                                             w.graph.memory)],
                   [(int(w.graph.ids[u]), int(w.graph.ids[v]), float(c)) for u, v, c in
                    zip(w.graph.src, w.graph.dst, w.graph.edge_cost)])
    plain = solve(halved, w.cluster, method="dp")
    assert fast.info["accelerator_types"][0]["speed"] == 2.0
    assert fast.objective == pytest.approx(plain.objective, rel=1e-12) and fast.objective < p.objective


def test_too_many_types_are_refused_before_any_table() -> None:
    graph = Graph([Node(i, 1.0, 1.0, memory=1.0) for i in range(40)], [(i, i + 1) for i in range(39)])
    many = Cluster(40, memory=[10.0 + i for i in range(40)], cpus=1)  # 40 types: 2 * 2**40 counts per ideal
    with pytest.raises(TooManyIdealsError, match="accelerator types"):
        solve(graph, many, method="dp")
    few = Cluster(4, memory=[10.0, 11.0, 12.0, 13.0], cpus=1)
    with pytest.raises(TooManyIdealsError, match="memory budget"):
        solve(graph, few, method="dp", memory_budget=2**12)
    assert solve(graph, few, method="dp").status is Status.OPTIMAL


def test_a_stopped_heterogeneous_dp_returns_a_feasible_incumbent() -> None:
    """Five chains of 10 between a source and a sink (161,053 ideals, 32 device counts each): the
    typed DP is stopped by its time limit and returns DPL's split (every accelerator given the
    smallest memory, scored at its true speed)."""
    nodes = [Node(0, 1.0, 0.1), Node(1, 1.0, 0.1)]
    edges = []
    for b in range(5):
        previous = 0
        for i in range(10):
            nodes.append(Node(100 * (b + 1) + i, 8.0 + i % 3, 1.0 + i % 3, memory=1.0, comm=0.1))
            edges.append((previous, 100 * (b + 1) + i))
            previous = 100 * (b + 1) + i
        edges.append((previous, 1))
    graph = Graph(nodes, edges)
    cluster = Cluster(6, memory=[20.0] * 3 + [40.0] * 3, speed=[2.0] * 3 + [1.0] * 3, cpus=1)
    start = time.monotonic()
    stopped = solve(graph, cluster, method="dp", time_limit=0.3)
    assert on_time(time.monotonic() - start, 0.3)
    assert stopped.status is Status.FEASIBLE and stopped.limit is Limit.TIME
    assert stopped.info["returned"] == "DPL incumbent"
    assert check_feasibility(graph, cluster, stopped.device) == []


@pytest.mark.parametrize("cluster", [Cluster(3, memory=[1e9, 2e9, 2e9], speed=[1.0, 2.0, 2.0], cpus=1),
                                     Cluster(2, speed=[1.0, 1.5]), Cluster(2, memory=4e9, cpus=0)])
def test_repr_states_what_differs_and_rebuilds_the_cluster(cluster: Cluster) -> None:
    """A heterogeneous cluster's repr shows each device's memory and speed (not numpy scalars)."""
    text = repr(cluster)
    assert "np.float64" not in text
    rebuilt = eval(text, {"Cluster": Cluster, "inf": math.inf})
    assert rebuilt.memory.tolist() == cluster.memory.tolist() and rebuilt.speed.tolist() == cluster.speed.tolist()
    assert rebuilt.cpus == cluster.cpus and ("speed=" in text) == (not np.all(cluster.speed == 1.0))
