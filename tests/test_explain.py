"""Why this plan (:mod:`exactplace.explain`): each constraint it lifts is checked against brute force, the
bottleneck against the evaluator, the first move against every move; the command line.

The brute force restates each lifted instance on its own (no colour classes, uncapped memory, the user's
constraints less one) and takes its optimum over chain splits, the space the plans certify: a constraint
``explain`` calls binding must have a lifted optimum below the plan's, one it calls not binding the same.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima
from strategies import clusters
from test_constraints import constrained, graphs, satisfies

from exactplace import Cluster, Graph, ParameterError, read_workload, solve, workload_path
from exactplace.cli import main as cli
from exactplace.evaluators import check_feasibility, evaluate
from exactplace.evaluators.max_load import device_loads, load_contributions
from exactplace.explain import explain, first_move, judge

EXAMPLES = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _brute(graph: Graph, cluster: Cluster, spec: dict | None) -> float | None:
    def keep(device: np.ndarray) -> bool:
        return spec is None or satisfies(graph, cluster, spec, device, exactly=False)

    return brute_force_optima(graph, cluster, "throughput", keep).chain


def _with_int_keys(spec: dict | None) -> dict | None:
    """A plan's constraints (JSON: node ids as strings in ``pin`` and ``forbid``) as the brute force names nodes."""
    if spec is None:
        return None
    return {key: ({int(node): where for node, where in value.items()} if isinstance(value, dict) else value)
            for key, value in spec.items()}


def _check(graph: Graph, cluster: Cluster, spec: dict | None) -> None:
    plan = solve(graph, cluster, rel_gap=0.0, constraints=spec)
    assume(plan.has_solution)
    why = explain(plan, rel_gap=0.0)
    loads = device_loads(graph, cluster, plan.device).load()
    assert why.load == pytest.approx(loads.max()) and why.bottleneck in cluster.device_names()
    assert loads[cluster.device_names().index(why.bottleneck)] == loads.max()
    assert why.contributions["seconds"].sum() == pytest.approx(why.load)
    for lifted in why.lifted:
        if lifted.constraint == "the memory limit of the accelerators":
            lifted_graph, lifted_spec = graph, spec
            lifted_cluster = Cluster(cluster.accelerators, math.inf, cluster.cpus)
        elif lifted.constraint.startswith("the memory limit of acc"):
            fullest = int(lifted.constraint.split()[4][3:])
            memory = cluster.memory.astype(float).copy()
            memory[fullest] = math.inf
            lifted_graph, lifted_spec = graph, spec
            lifted_cluster = Cluster(cluster.accelerators, memory.tolist(), cluster.cpus)
        elif lifted.constraint.startswith("the colour classes"):
            lifted_graph = Graph([dataclasses.replace(n, color=None) for n in graph.nodes()], graph.edges())
            lifted_cluster, lifted_spec = cluster, spec
        else:
            lifted_graph, lifted_cluster = graph, cluster
            lifted_spec = _with_int_keys(lifted.placement.info.get("constraints"))
        optimum = _brute(lifted_graph, lifted_cluster, lifted_spec)
        assert optimum is not None  # the plan itself satisfies the lifted problem
        assert lifted.optimum == pytest.approx(optimum, rel=1e-6, abs=1e-9), lifted
        assert lifted.binding == (optimum < plan.objective * (1 - 1e-6)), (lifted, optimum, plan.objective)
        assert lifted.saving == pytest.approx(max(0.0, 1 - optimum / plan.objective) if plan.objective else 0.0,
                                              abs=1e-6)


@EXAMPLES
@given(data=st.data())
def test_each_lifted_constraint_is_the_brute_force_optimum_without_it(data: st.DataObject) -> None:
    graph = data.draw(graphs())
    cluster = data.draw(clusters(min_accelerators=1, max_accelerators=3, max_cpus=1))
    _check(graph, cluster, None)


@EXAMPLES
@given(data=st.data(), family=st.sampled_from(["pins", "together", "no_cut", "limits"]))
def test_each_user_constraint_lifted_is_the_brute_force_optimum_without_it(data: st.DataObject,
                                                                           family: str) -> None:
    graph, cluster, spec = data.draw(constrained(family))
    _check(graph, cluster, spec)


@EXAMPLES
@given(data=st.data())
def test_the_first_move_is_the_best_single_move_off_the_bottleneck(data: st.DataObject) -> None:
    graph = data.draw(graphs())
    cluster = data.draw(clusters(min_accelerators=1, max_accelerators=3, max_cpus=1))
    device = np.array(data.draw(st.lists(st.integers(0, cluster.num_devices - 1), min_size=graph.n,
                                         max_size=graph.n)))
    assume(not check_feasibility(graph, cluster, device))
    before = evaluate(graph, cluster, device)
    bottleneck = int(np.argmax(device_loads(graph, cluster, device).load()))
    best = before
    for colour in set(graph.color[device == bottleneck].tolist()):
        for target in range(cluster.num_devices):
            moved = device.copy()
            moved[graph.color == colour] = target
            if target != bottleneck and not check_feasibility(graph, cluster, moved):
                best = min(best, evaluate(graph, cluster, moved))
    move = first_move(graph, cluster, device)
    if best < before:
        assert move is not None and move.after == pytest.approx(best) and move.before == before
        assert evaluate(graph, cluster, move.device) == move.after
        assert not check_feasibility(graph, cluster, move.device)
    else:
        assert move is None
    verdict = judge(graph, cluster, device, rel_gap=0.0)
    optimum = _brute(graph, cluster, None)
    assert verdict.optimum.objective == pytest.approx(optimum)
    assert (verdict.move is None) == (before <= verdict.optimum.bound * (1 + 1e-9) + 1e-12 or move is None)


def test_the_contributions_add_up_to_every_load() -> None:
    workload = read_workload(workload_path("op_bert3_inference"))
    plan = solve(workload, method="greedy")
    loads = device_loads(workload.graph, workload.cluster, plan.device).load()
    for d in range(workload.cluster.num_devices):
        parts = load_contributions(workload.graph, workload.cluster, plan.device, d)
        assert parts["seconds"].sum() == pytest.approx(loads[d], rel=1e-9, abs=1e-9)
        assert list(parts["seconds"]) == sorted(parts["seconds"], reverse=True)
    with pytest.raises(ParameterError, match="'on'"):
        load_contributions(workload.graph, workload.cluster, plan.device, workload.cluster.num_devices)


def test_plans_it_does_not_cover_are_refused_by_name() -> None:
    workload = read_workload(workload_path("layer_bert24_inference"))
    with pytest.raises(ParameterError, match="latency"):
        explain(solve(workload, objective="latency", method="greedy"))
    with pytest.raises(ParameterError, match="placement"):
        explain("plan.json")


def test_the_command_explains_a_plan_and_a_split(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    plan = tmp_path / "plan.json"
    assert cli.main(["solve", "layer_bert24_training", "--max-stages", "5", "--out", str(plan)]) == 0
    capsys.readouterr()
    assert cli.main(["explain", "layer_bert24_training", str(plan), "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out.strip().splitlines()[-1])
    assert report["excess"] == 0.0 and report["first_move"] is None
    assert {c["constraint"]: c["binding"] for c in report["constraints"]} == {
        "the memory limit of the accelerators": False, "the memory limit of acc0 alone": False, "max_stages 5": True}
    assert "binding: max_stages 5: lifting it would save" in out
    # a split that is not optimal: everything on one accelerator
    workload = read_workload(workload_path("layer_bert24_training"))
    split = tmp_path / "split.json"
    others = [{"nodes": []} for _ in range(workload.cluster.accelerators - 1)]
    split.write_text(json.dumps({"fpgas": [{"nodes": workload.graph.ids.tolist()}, *others],
                                 "cpus": [{"nodes": []} for _ in range(workload.cluster.cpus)]}))
    assert cli.main(["evaluate", "layer_bert24_training", str(split), "--explain", "--json"]) == 0
    out = capsys.readouterr().out
    verdict = json.loads(out.strip().splitlines()[-1])
    assert verdict["excess"] > 1 and verdict["first_move"]["from"] == "acc0"
    assert "first move: node" in out
    assert cli.main(["explain", "layer_bert24_training", str(split)]) == 0
    assert "why the optimum is what it is" in capsys.readouterr().out


def test_nodes_without_an_accelerator_time_are_named_as_held() -> None:
    from exactplace import Node

    graph = Graph([Node(0, 1.0, 1.0), Node(1, 2.0, None), Node(2, 1.0, 1.0)], [(0, 1), (1, 2)])
    why = explain(solve(graph, Cluster(2, cpus=1)))
    assert why.cpu_only == (1,)
    assert "held by the model: 1 node(s) without an accelerator time run on a CPU (1)" in why.report()
    assert explain(solve(graph, Cluster(2, cpus=1)), constraints=False).lifted == ()
