"""Replicated stages (paper Appendix C.2, PipeDream's data-parallel stages).

A stage on ``r`` identical accelerators has load ``(compute + comm + sync (r-1)/r) / r``; the
replicas in use add up to at most ``k``. On random tiny instances (homogeneous clusters of 1-4
accelerators, CPUs, memory caps, training graphs with colour classes, random ``Node.sync``):

* ``dp`` with ``replication=True`` = the contiguous IP with ``replication=True`` = the brute force
  over chain splits with every replica count (``tests/oracle.py``, ``brute_force_replicated``);
* the evaluator recomputes every reported value, and the plan round-trips through JSON;
* ``replication=False`` is the plain DP; misuse is refused with a message naming the option.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import brute_force_replicated, is_unit_chain
from strategies import clusters, dags, node_values, training_graphs

from exactplace import Cluster, Graph, Node, ParameterError, PlacementError, Status, check_feasibility, max_load, solve
from exactplace.evaluators import device_loads
from exactplace.io import split_file_from_dict
from exactplace.solvers import get_solver

pytest.importorskip("exactplace._native")

SOLVER = "highs" if get_solver("highs").available() else "cpsat"
FEW = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def synced(draw: st.DrawFn, graphs: st.SearchStrategy[Graph]) -> Graph:
    """A drawn graph whose nodes get random sync times (some zero)."""
    graph = draw(graphs)
    syncs = draw(st.lists(st.one_of(st.just(0.0), node_values(8.0)), min_size=graph.n, max_size=graph.n))
    return Graph([Node(**{**v.__dict__, "sync": s}) for v, s in zip(graph.nodes(), syncs)], graph.edges())


def graphs() -> st.SearchStrategy[Graph]:
    return synced(st.one_of(dags(min_nodes=1, max_nodes=4), training_graphs(max_forward=2)))


def homogeneous() -> st.SearchStrategy[Cluster]:
    return clusters(min_accelerators=1, max_accelerators=4, max_cpus=1)


def approx(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


@FEW
@given(graphs(), homogeneous())
def test_dp_equals_the_best_replicated_chain_split(graph: Graph, cluster: Cluster) -> None:
    best = brute_force_replicated(graph, cluster)
    p = solve(graph, cluster, method="dp", replication=True)
    if best is None:
        assert p.status is Status.INFEASIBLE
        return
    assert p.status is Status.OPTIMAL and p.bound == p.objective
    assert approx(p.objective, best[0]), (p.objective, best)
    # The evaluator recomputes the reported value from the reported devices and replicas.
    assert p.objective == max_load(graph, cluster, p.device, replicas=p.replicas)
    assert check_feasibility(graph, cluster, p.device, replicas=p.replicas, space="chain") == []
    assert is_unit_chain(graph, p.device)
    assert int(p.replicas[np.unique(p.device[p.device < cluster.accelerators])].sum()) <= cluster.accelerators
    # Without replication: the plain DP, never better than with it.
    plain = solve(graph, cluster, method="dp")
    assert plain.replicas is None and p.objective <= plain.objective * (1 + 1e-9) + 1e-12


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), homogeneous())
def test_contiguous_ip_equals_the_replicated_dp(graph: Graph, cluster: Cluster) -> None:
    dp = solve(graph, cluster, method="dp", replication=True)
    ip = solve(graph, cluster, method="mip", solver=SOLVER, rel_gap=0.0, warm_start=None, replication=True)
    if dp.device is None:
        assert ip.status is Status.INFEASIBLE
        return
    assert ip.device is not None and approx(ip.objective, dp.objective), (ip.objective, dp.objective)
    assert ip.objective == max_load(graph, cluster, ip.device, replicas=ip.replicas)
    assert check_feasibility(graph, cluster, ip.device, replicas=ip.replicas, space="chain") == []
    # The default warm start (the plain DP's split, one replica each) is a point of the model.
    warm = solve(graph, cluster, method="mip", solver=SOLVER, rel_gap=0.0, replication=True)
    assert approx(warm.objective, dp.objective)


def test_ip_misuse_is_refused() -> None:
    g = Graph([Node(0, 1.0, 1.0, sync=1.0), Node(1, 1.0, 1.0)], [(0, 1)])
    with pytest.raises(ParameterError, match="contiguous"):
        solve(g, Cluster(2, cpus=0), method="mip", replication=True, contiguous=False)
    with pytest.raises(ParameterError, match="homogeneous"):
        solve(g, Cluster(2, memory=[4.0, 8.0], cpus=0), method="mip", replication=True)
    with pytest.raises(ParameterError, match="gpipe"):
        solve(g, Cluster(2, cpus=0), method="mip", replication=True, gpipe=True)


@FEW
@given(graphs(), homogeneous())
def test_plan_round_trip_keeps_the_replicas(graph: Graph, cluster: Cluster) -> None:
    p = solve(graph, cluster, method="dp", replication=True)
    if p.device is None:
        return
    plan = split_file_from_dict(json.loads(p.to_json()), graph, cluster)
    assert plan.device.tolist() == p.device.tolist() and plan.replicas.tolist() == p.replicas.tolist()
    assert max_load(graph, cluster, plan.device, replicas=plan.replicas) == p.objective
    frame = p.to_frame()
    assert frame["replicas"].tolist() == [int(p.replicas[d]) if d < cluster.accelerators else 1 for d in p.device]


def test_replicated_load_is_pipedreams() -> None:
    """PipeDream's A[i][j][m] = (compute + 4 m P / (B (m + 1))) / (m + 1), with sync = 4 P / B."""
    compute, sync = 12.0, 3.0
    g = Graph([Node(0, compute, compute, sync=sync)], [])
    for r in range(1, 5):
        m = r - 1
        assert math.isclose(max_load(g, Cluster(4, cpus=0), [0], replicas=[r, 1, 1, 1]),
                            (compute + m * sync / (m + 1)) / (m + 1))
    p = solve(g, Cluster(4, cpus=0), method="dp", replication=True)
    assert p.replicas[0] == 4 and math.isclose(p.objective, (compute + 3 * sync / 4) / 4)
    loads = device_loads(g, Cluster(4, cpus=0), [0], replicas=[4, 1, 1, 1])
    assert math.isclose(loads.load()[0], p.objective) and loads.to_frame(Cluster(4, cpus=0))["replicas"].iloc[0] == 4


def test_misuse_is_refused() -> None:
    g = Graph([Node(0, 1.0, 1.0, sync=1.0), Node(1, 1.0, 1.0)], [(0, 1)])
    hetero = Cluster(2, memory=[4.0, 8.0], cpus=0)
    with pytest.raises(ParameterError, match="homogeneous"):
        solve(g, hetero, method="dp", replication=True)
    with pytest.raises(ParameterError, match="overlap"):
        solve(g, Cluster(2, cpus=0), method="dp", replication=True, overlap=True)
    with pytest.raises(ParameterError, match="replication"):
        solve(g, Cluster(2, cpus=0), method="dpl", replication=True)
    with pytest.raises(ParameterError, match="overlap"):
        max_load(g, Cluster(2, cpus=0), [0, 1], replicas=[1, 1], overlap=True)
    with pytest.raises(ParameterError, match="gpipe"):
        max_load(g, Cluster(2, cpus=0), [0, 1], replicas=[1, 1], gpipe=True)
    with pytest.raises(PlacementError, match="homogeneous"):
        max_load(g, hetero, [0, 1], replicas=[2, 1])
    with pytest.raises(PlacementError, match="one integer per accelerator"):
        max_load(g, Cluster(2, cpus=0), [0, 1], replicas=[1])
    with pytest.raises(PlacementError, match="at least 1"):
        max_load(g, Cluster(2, cpus=0), [0, 1], replicas=[0, 1])
    [violation] = check_feasibility(g, Cluster(2, cpus=0), [0, 1], replicas=[2, 1])
    assert violation.kind == "replicas"
    with pytest.raises(ParameterError, match="throughput"):
        check_feasibility(g, Cluster(2, cpus=0), [0, 1], objective="latency", replicas=[1, 1])


def test_pipedream_importer_fills_sync(tmp_path) -> None:
    from test_pipedream_import import GOOD

    from exactplace import read_workload

    path = tmp_path / "graph.txt"
    path.write_text(GOOD)
    by_name = {v.name: v for v in read_workload(path, bandwidth=2.0).graph.nodes()}
    assert by_name["node2"].sync == 1e3 * 4 * 5.0 / 2.0  # 4 P / B (bytes per second), in ms, on the forward node
    assert by_name["node2.backward"].sync == 0 and by_name["node1"].sync == 0  # the input source is free
    assert not read_workload(path).graph.has_sync  # bandwidth inf: replication is free
    split = read_workload(path, sync_bandwidth=4.0).graph
    assert {v.name: v.sync for v in split.nodes()}["node2"] == 5e3 and all(c == 0 for *_, c in split.edges())
    with pytest.raises(ParameterError, match="sync_bandwidth"):
        read_workload(path, sync_bandwidth=0.0)
