"""Pipeline schedules: the evaluator's rules, solve's options, and the schedule DP against brute force."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactplace import Status, solve
from exactplace.cli.main import main
from exactplace.core.cluster import Cluster
from exactplace.core.errors import GraphError, ParameterError, SolverUnavailableError
from exactplace.core.graph import Graph, Node
from exactplace.core.schedule import SCHEDULES, bubble_factor, in_flight
from exactplace.evaluators import check_feasibility, evaluate
from exactplace.evaluators.schedule import pipeline_score
from exactplace.io.workload import workload_from_dict, workload_to_dict
from tests.strategies import dags, node_values, training_graphs


def chain(times, memory=4.0, activation=1.0):
    nodes = [Node(i, 1.0, float(t), memory=memory, activation=activation) for i, t in enumerate(times)]
    return Graph(nodes, [(i, i + 1) for i in range(len(times) - 1)])


def test_in_flight_and_bubble():
    assert in_flight("1f1b", 4, 2) == (2, 2, 2, 1)
    assert in_flight("gpipe", 3, 5) == (5, 5, 5)
    assert bubble_factor(1, 7) == 1.0
    assert bubble_factor(3, 2) == 2.0


def test_score_counts_bubble_and_memory_per_position():
    g = chain([3, 1, 2])
    score = pipeline_score(g, Cluster(3, cpus=0), [0, 1, 2], "1f1b", 2)
    assert score.in_flight == (2, 2, 1)
    assert score.memory.tolist() == [5.0, 5.0, 4.0]
    assert score.time_per_microbatch == pytest.approx((2 + 3 - 1) / 2 * 3)
    assert score.step_time == pytest.approx(4 * 3)
    assert evaluate(g, Cluster(3, cpus=0), [0, 1, 2], schedule="gpipe", microbatches=2) == score.time_per_microbatch


def test_pipeline_rules_name_the_node_or_edge():
    g = chain([1, 1, 1])
    c = Cluster(2, memory=9.0, cpus=1)
    [violation] = check_feasibility(g, c, [0, 2, 1], schedule="1f1b", microbatches=4)
    assert violation.kind == "pipeline" and "node 1" in str(violation) and "cpu0" in str(violation)
    [violation] = check_feasibility(g, c, [1, 0, 0], schedule="1f1b", microbatches=4)
    assert "forward edge from node 0 on acc1 to node 1 on acc0 runs to an earlier stage" in str(violation)
    assert evaluate(g, c, [1, 0, 0], schedule="1f1b", microbatches=4) == math.inf
    # Two nodes on acc0 keep 2 microbatches each in flight: 2 * (4 + 1) = 10 > 9; gpipe keeps 4.
    [violation] = check_feasibility(g, c, [0, 0, 1], schedule="1f1b", microbatches=4)
    assert violation.kind == "memory" and "acc0 holds 10 bytes with the microbatches 1f1b keeps" in str(violation)
    assert check_feasibility(g, c, [0, 1, 1], schedule="1f1b", microbatches=4) == []
    assert [v.device for v in check_feasibility(g, c, [0, 1, 1], schedule="gpipe", microbatches=4)] == [1]


def test_activation_is_part_of_memory():
    with pytest.raises(GraphError, match=r"Node 0: field 'activation' \(2\) must be at most its 'memory' \(1\)"):
        Graph([Node(0, 1.0, 1.0, memory=1.0, activation=2.0)], [])


@pytest.mark.parametrize("options, message", [
    ({"schedule": "1f1b"}, "'microbatches' parameter of solve must be a positive integer"),
    ({"microbatches": 4}, "'schedule' parameter of solve must be one of"),
    ({"schedule": "zb-h1", "microbatches": 4}, "'schedule' parameter of solve must be one of"),
    ({"schedule": "1f1b", "microbatches": 0}, "'microbatches' parameter of solve must be an integer >= 1"),
])
def test_solve_refuses_incomplete_schedules(options, message):
    with pytest.raises(ParameterError, match=message):
        solve(chain([1, 2]), Cluster(2, cpus=0), **options)


def test_methods_without_the_schedule_refuse_it():
    with pytest.raises(ParameterError, match=r"Method 'dp' does not model a pipeline schedule.*schedule-dp"):
        solve(chain([1, 2]), Cluster(2, cpus=0), method="dp", schedule="1f1b", microbatches=4)
    with pytest.raises(ParameterError, match="'schedule' parameter of solve must be a pipeline schedule"):
        solve(chain([1, 2]), Cluster(2, cpus=0), method="schedule-dp")
    with pytest.raises(SolverUnavailableError, match=r"schedule-dp: .* identical accelerators"):
        solve(chain([1, 2]), Cluster(2, memory=[4.0, 8.0], cpus=0), schedule="1f1b", microbatches=4)


def test_the_bubble_can_make_fewer_stages_win():
    # Max-load splits [2, 2] onto two devices (load 2); with 1 microbatch the bubble doubles it,
    # so one stage (load 4, no bubble) ties and 2 microbatches favour two stages again: 1.5 * 2 = 3.
    g = chain([2, 2], memory=0.0, activation=0.0)
    one = solve(g, Cluster(2, cpus=0), schedule="1f1b", microbatches=1)
    assert one.status is Status.OPTIMAL and one.objective == 4.0
    two = solve(g, Cluster(2, cpus=0), schedule="1f1b", microbatches=2)
    assert two.objective == 3.0 and two.info["stages"] == 2


@st.composite
def scheduled_instances(draw):
    """A tiny graph with activations (a share of each node's memory), identical accelerators
    (memory capped or not, sometimes with CPUs the schedule leaves unused), a schedule and M."""
    base = draw(st.one_of(dags(min_nodes=2, max_nodes=5, unsupported=False),
                          training_graphs(max_forward=2, unsupported=False)))
    shares = draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=base.n, max_size=base.n))
    nodes = [Node(**{**base.node(i).__dict__, "activation": base.memory[i] * shares[i]}) for i in range(base.n)]
    graph = Graph(nodes, list(base.edges()))
    k = draw(st.sampled_from([1, 2, 2, 3, 3]))
    cap = draw(st.one_of(st.just(math.inf), node_values(30.0)))
    cluster = Cluster(k, memory=cap, cpus=draw(st.integers(0, 1)))
    return graph, cluster, draw(st.sampled_from([1, 2, 3, 4, 8, 64]))


def brute_force(graph, cluster, schedule, microbatches):
    """The least objective over every placement of the colour classes on the accelerators."""
    classes = int(graph.color.max()) + 1
    best = math.inf
    for assignment in itertools.product(range(cluster.accelerators), repeat=classes):
        device = np.array(assignment)[graph.color]
        if not check_feasibility(graph, cluster, device, schedule=schedule, microbatches=microbatches):
            best = min(best, evaluate(graph, cluster, device, schedule=schedule, microbatches=microbatches))
    return best


@pytest.mark.parametrize("method", ["schedule-dp", "schedule-mip"])
@pytest.mark.parametrize("schedule", SCHEDULES)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=scheduled_instances())
def test_schedule_methods_equal_brute_force(method, schedule, instance):
    graph, cluster, microbatches = instance
    expected = brute_force(graph, cluster, schedule, microbatches)
    placement = solve(graph, cluster, method=method, schedule=schedule, microbatches=microbatches, rel_gap=0)
    if math.isinf(expected):
        assert placement.status is Status.INFEASIBLE
        return
    assert placement.status is Status.OPTIMAL
    assert placement.objective == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert placement.bound <= expected * (1 + 1e-9) + 1e-9


WORKLOAD = {"maxSizePerFPGA": 12, "maxFPGAs": 4, "maxCPUs": 0, "nodes": [
    {"id": i, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": t, "isBackwardNode": 0, "size": 4,
     "activationSize": 1} for i, t in enumerate([3, 1, 2, 2])],
    "edges": [{"sourceId": i, "destId": i + 1, "cost": 0} for i in range(3)]}


def test_workload_keeps_activations():
    workload = workload_from_dict(WORKLOAD)
    assert workload.graph.activation.tolist() == [1.0] * 4
    assert workload_to_dict(workload)["nodes"][0]["activationSize"] == 1
    with pytest.raises(GraphError, match="'activation'"):
        workload_from_dict({**WORKLOAD, "nodes": [{**WORKLOAD["nodes"][0], "activationSize": 5}]})


def test_cli_solves_and_evaluates_under_a_schedule(tmp_path, capsys):
    path, plan = tmp_path / "w.json", tmp_path / "plan.json"
    path.write_text(json.dumps(WORKLOAD))
    main(["solve", str(path), "--schedule", "1f1b", "--microbatches", "4", "--out", str(plan)])
    said = capsys.readouterr().out
    assert "time per microbatch under 1f1b, 4 microbatches a step (throughput objective): 4.5" in said
    main(["evaluate", str(path), str(plan), "--json"])  # the plan keeps its schedule
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["objective"] == 4.5
    code = main(["evaluate", str(path), str(plan), "--schedule", "gpipe", "--microbatches", "4"])
    out = capsys.readouterr().out
    assert code != 0 and "acc1 holds 14 bytes with the microbatches gpipe keeps in flight" in out


@pytest.mark.parametrize("method", ["schedule-dp", "schedule-mip"])
def test_stage_counts_can_be_asked_for(method):
    # 2 microbatches over 4 equal nodes: p stages take (2 + p - 1) / 2 x the slowest, so 4 stages
    # (2.5 x 2 = 5) beat 2 (1.5 x 4 = 6), 3 (2 x 4 = 8) and 1 (8).
    g = chain([2, 2, 2, 2], memory=0.0, activation=0.0)
    c = Cluster(4, cpus=0)
    options = {"method": method, "schedule": "1f1b", "microbatches": 2}
    assert solve(g, c, **options).objective == pytest.approx(5.0)
    two = solve(g, c, stages=2, **options)
    assert len(set(two.device.tolist())) == 2 and two.objective == pytest.approx(6.0)
    divisor = solve(g, c, ranks=6, **options)  # 1, 2 or 3 stages
    assert len(set(divisor.device.tolist())) == 2 and divisor.objective == pytest.approx(6.0)
    none = solve(g, c, stages=4, ranks=6, **options)
    assert none.status is Status.INFEASIBLE and "4 stages" in none.info["reason"]
    with pytest.raises(ParameterError, match="'stages' parameter of solve must be an integer >= 1"):
        solve(g, c, stages=0, **options)


def test_units_merged_by_a_gradient_edge_stay_together():
    # The gradient edge from a's backward to b's backward puts b's stage at or before a's, and the
    # forward edge a -> b the other way round: a and b are one item of the DP, c and d items of their own.
    nodes = [Node(i, 1.0, 1.0, color=i) for i in range(4)] + [Node(10 + i, 1.0, 1.0, color=i, backward=True)
                                                               for i in range(4)]
    edges = [(0, 1), (1, 2), (2, 3), (10, 11)] + [(i, 10 + i) for i in range(4)]
    g = Graph(nodes, edges)
    c = Cluster(3, cpus=0)
    for method in ("schedule-dp", "schedule-mip"):
        p = solve(g, c, method=method, schedule="1f1b", microbatches=64)
        assert p.status is Status.OPTIMAL and p.device[0] == p.device[1]
        assert p.objective == pytest.approx(brute_force(g, c, "1f1b", 64))
