"""Two-level clusters (paper Appendix C.3): machines of accelerators, transfers between hosts dearer.

* the evaluator's premium rule against a naive per-edge reference;
* ``dp`` (the two-level DP) = the contiguous IP = the brute-force best two-level chain split
  (``tests/oracle.py``, every accelerator told apart) on random tiny graphs, inference and
  training, with memory caps and CPUs;
* the hierarchy changes the answer where it should, and every misuse is refused in one line.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from exactplace.formulations.two_level import two_level_ip
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima, is_unit_chain
from strategies import brute_force_graphs, node_values

from exactplace import (
    Cluster,
    Graph,
    Node,
    ParameterError,
    Status,
    TooManyIdealsError,
    check_feasibility,
    evaluate,
    max_load,
    read_workload,
    replay,
    solve,
    workload_path,
)
from exactplace.core.contraction import contract
from exactplace.solvers import get_solver

pytest.importorskip("exactplace._native")

SOLVER = "highs" if get_solver("highs").available() else "cpsat"
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def two_level_clusters(draw: st.DrawFn) -> Cluster:
    """2 or 3 machines of 1 or 2 accelerators, 0-1 CPUs, a memory cap (a third of the time), premium 1.5-8."""
    machines, per = draw(st.sampled_from([(2, 1), (2, 2), (3, 1)]))
    memory = draw(st.one_of(st.just(math.inf), st.just(math.inf), node_values(40.0)))
    return Cluster(machines * per, memory=memory, cpus=draw(st.sampled_from([0, 1, 1])), machines=machines,
                   inter_machine_cost=draw(st.sampled_from([1.5, 3.0, 8.0])))


def naive_loads(graph: Graph, cluster: Cluster, device: np.ndarray) -> list[float]:
    """Per device: compute, plus for every communication group one payment at the source (f times when
    some receiver is on another host) and one per receiving accelerator (f times from another host)."""
    host, f, k = cluster.hosts, cluster.inter_machine_cost, cluster.accelerators
    load = [0.0] * cluster.num_devices
    for v in range(graph.n):
        d = int(device[v])
        load[d] += float(graph.acc_time[v]) / float(cluster.speed[d]) if d < k else float(graph.cpu_time[v])
    receivers: dict[int, set[int]] = {}
    for s, t, g in zip(graph.src.tolist(), graph.dst.tolist(), graph.edge_group.tolist()):
        if device[s] != device[t]:
            receivers.setdefault(g, set()).add(int(device[t]))
    for g, devices in receivers.items():
        cost, source = float(graph.group_cost[g]), int(device[graph.group_source[g]])
        if source < k:
            load[source] += cost * (f if any(host[r] != host[source] for r in devices) else 1.0)
        for r in devices:
            if r < k:
                load[r] += cost * (f if host[r] != host[source] else 1.0)
    return load


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_the_evaluator_charges_the_premium_between_hosts(data: st.DataObject) -> None:
    cluster = data.draw(two_level_clusters())
    graph = data.draw(brute_force_graphs())
    device = np.array(data.draw(st.lists(st.integers(0, cluster.num_devices - 1), min_size=graph.n,
                                         max_size=graph.n)), dtype=np.int64)
    expected = naive_loads(graph, cluster, device)
    assert np.allclose(evaluate(graph, cluster, device), max(expected), rtol=1e-12, atol=1e-12)


@FEW
@given(brute_force_graphs(), two_level_clusters(), st.booleans())
def test_dp_and_contiguous_ip_equal_the_best_two_level_chain_split(graph: Graph, cluster: Cluster,
                                                                   overlap: bool) -> None:
    optima = brute_force_optima(graph, cluster, "throughput", overlap=overlap)
    event(f"{cluster.machines}x{cluster.per_machine}, {'no' if optima.units is None else 'a'} chain split")
    dp = solve(graph, cluster, method="dp", overlap=overlap)
    ip = solve(graph, cluster, method="mip", solver=SOLVER, rel_gap=0.0, warm_start=None, overlap=overlap)
    if optima.units is None:
        assert dp.status is Status.INFEASIBLE and dp.device is None and dp.info["reason"]
        assert ip.status is Status.INFEASIBLE and ip.device is None
        return
    assert dp.status is Status.OPTIMAL and dp.bound == dp.objective
    assert math.isclose(dp.objective, optima.units, rel_tol=1e-9, abs_tol=1e-9), (dp.objective, optima.units)
    assert ip.bound is not None and ip.objective - ip.bound <= 1e-5 * max(1.0, ip.objective)
    assert math.isclose(ip.objective, optima.units, rel_tol=1e-6, abs_tol=1e-6), (ip.objective, optima.units)
    for p in (dp, ip):
        assert p.objective == max_load(graph, cluster, p.device, overlap=overlap)
        assert check_feasibility(graph, cluster, p.device, space="contiguous") == []
        assert is_unit_chain(graph, p.device) and is_unit_chain(graph, cluster.hosts[p.device])


def test_the_hierarchy_changes_the_split() -> None:
    """A 4-stage pipeline over two machines pays the slow link at both ends; one machine's two stages win."""
    graph = Graph([Node(i, 99.0, 4.0, comm=1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
    flat = solve(graph, Cluster(4, cpus=0), method="dp")
    two = Cluster(4, cpus=0, machines=2, inter_machine_cost=5.0)
    dp, ip = solve(graph, two, method="dp"), solve(graph, two, method="mip", solver=SOLVER, rel_gap=0.0)
    assert flat.objective == 6.0 and len(set(flat.device.tolist())) == 4
    assert dp.objective == ip.objective == 9.0
    assert set(two.hosts[dp.device].tolist()) == {0}  # one machine
    # Scored on the flat cluster, the two-level optimum is worse: the hierarchy is what changed it.
    assert max_load(graph, Cluster(4, cpus=0), dp.device) == 9.0


def test_a_real_workload_on_two_machines() -> None:
    """layer_bert24_inference (30 ideals): auto runs the two-level DP; the IP agrees; slower links never help."""
    w = read_workload(workload_path("layer_bert24_inference"))
    k = w.cluster.accelerators
    values = []
    for cost in (1.0, 2.0, 8.0):
        cluster = Cluster(k, memory=w.cluster.memory, cpus=w.cluster.cpus, machines=2, inter_machine_cost=cost)
        p = solve(w.graph, cluster)
        assert p.method == "dp" and p.status is Status.OPTIMAL
        values.append(p.objective)
    assert values[0] == pytest.approx(solve(w, method="dp").objective)  # cost 1: the one-level problem
    assert values == sorted(values)
    ip = solve(w.graph, cluster, method="mip", solver=SOLVER, time_limit=60)
    assert ip.objective == pytest.approx(values[-1], rel=1e-4)


def test_misuse_is_refused_in_one_line() -> None:
    graph = Graph([Node(0, 1.0, 1.0), Node(1, 1.0, 1.0)], [(0, 1)])
    two = Cluster(4, cpus=1, machines=2, inter_machine_cost=3.0)
    cases = [
        (lambda: Cluster(4, machines=3), "'machines' parameter of Cluster"),
        (lambda: Cluster(4, machines=2, inter_machine_cost=0.5), "'inter_machine_cost'"),
        (lambda: solve(graph, two, method="dpl"), "one-level cluster for method 'dpl'"),
        (lambda: solve(graph, two, method="mip", contiguous=False), "contiguous=False"),
        (lambda: solve(graph, two, method="dp", replication=True), "replication=True"),
        (lambda: solve(graph, two, objective="latency"), "does not model two-level clusters"),
        (lambda: evaluate(graph, two, [0, 1], "makespan"), "does not model two-level clusters"),
        (lambda: replay(graph, [0, 1], cluster=two, devices="cpu:2"), "replay does not model two-level clusters"),
        (lambda: solve(graph, Cluster(4, speed=[1, 1, 1, 2], machines=2, inter_machine_cost=2.0), method="dp"),
         "differing memory or speed"),
    ]
    for call, words in cases:
        with pytest.raises(ParameterError) as raised:
            call()
        assert words in str(raised.value) and "\n" not in str(raised.value)


def test_the_cluster_round_trips_and_describes_itself() -> None:
    two = Cluster(4, memory=8.0, cpus=1, machines=2, inter_machine_cost=4.0)
    assert Cluster.from_dict(two.to_dict()) == two
    assert eval(repr(two), {"Cluster": Cluster}) == two
    assert two.hosts.tolist() == [0, 0, 1, 1, 2] and two.per_machine == 2
    assert "machines" not in Cluster(4).to_dict()  # one-level clusters are written as before
    assert not Cluster(4, machines=2).is_two_level  # equal bandwidths: one level
    graph = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1), (1, 2)])
    [violation] = check_feasibility(graph, two, [0, 2, 1], space="chain")
    assert violation.kind == "order" and "machine0 -> machine1 -> machine0" in str(violation)


def test_the_ip_layout_leaves_room_for_every_cpu_position() -> None:
    graph = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1), (1, 2)])
    ip = two_level_ip(graph, Cluster(4, cpus=2, machines=2, inter_machine_cost=2.0), contract(graph))
    assert ip.positions == "CC AA CC AA CC"


def test_workload_files_and_the_command_line_state_the_two_levels(tmp_path) -> None:
    """The JSON keeps the two levels; ``--machines`` / ``--inter-machine-cost`` state them for any workload."""
    from exactplace import write_workload
    from exactplace.cli.main import main

    w = read_workload(workload_path("layer_bert24_inference"))
    two = Cluster(w.cluster.accelerators, memory=w.cluster.memory, cpus=w.cluster.cpus, machines=3,
                  inter_machine_cost=2.5)
    path = tmp_path / "two.json"
    write_workload(type(w)(graph=w.graph, cluster=two, name="two"), path)
    assert read_workload(path).cluster == two
    plan = tmp_path / "plan.json"
    assert main(["solve", str(workload_path("layer_bert24_inference")), "--machines", "3",
                 "--inter-machine-cost", "2.5", "--out", str(plan)]) == 0
    assert main(["evaluate", str(path), str(plan)]) == 0


def test_auto_takes_the_ip_where_the_two_level_dp_would_take_too_long() -> None:
    """Twelve independent branches: 4,096 ideals, past the Python DP's limit; refused at once, the IP answers."""
    graph = Graph([Node(0, 1.0, 1.0, comm=0.5)] + [Node(i, 5.0, 1.0 + i / 10, comm=0.5) for i in range(1, 13)],
                  [(0, i) for i in range(1, 13)])
    two = Cluster(4, cpus=1, machines=2, inter_machine_cost=3.0)
    with pytest.raises(TooManyIdealsError, match="method='mip'"):
        solve(graph, two, method="dp")
    p = solve(graph, two, time_limit=60)
    assert p.method == "mip" and p.status is Status.OPTIMAL
    assert p.objective == max_load(graph, two, p.device)
    assert check_feasibility(graph, two, p.device, space="chain") == []
