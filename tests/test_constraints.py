"""A user's constraints (``solve(..., constraints=...)``) against brute force on tiny random graphs.

Each family draws one kind of constraint; the brute force restates it as a plain predicate on
placements (up to renaming identical devices, as the enumeration is) and takes the optimum over
the placements it keeps. Every exact method's certified value must equal that optimum in its own
space, its placement must satisfy the constraints exactly (pins on the very device named), and
pins to particular devices, forbidden devices and max_stages on accelerators that differ (the device
rules, which only the MIPs hold) are held by them exactly, against a brute force over every labelled
placement, and refused by name by every other method.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima, fits_only_on_the_slack, latency_subgraph_optimum
from strategies import clusters, dags, training_graphs

from exactplace import Cluster, Graph, Node, ParameterError, Placement, Status, available_methods, evaluate, solve
from exactplace.core.constraints import Constraints
from exactplace.evaluators import check_feasibility
from exactplace.methods import registry

EXAMPLES = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

FAMILIES = ("pins", "together", "no_cut", "limits")

#: The exact methods of each objective (those with a schedule have their own brute force).
EXACT = {objective: [m for m in available_methods(objective) if registry.registered_methods()[m].exact
                     and not registry.registered_methods()[m].schedules] for objective in ("throughput", "latency")}


def graphs() -> st.SearchStrategy[Graph]:
    """Graphs on which the exact models are Definition 3.1 with colocation (see test_methods_brute_force)."""
    return st.one_of(dags(min_nodes=2, max_nodes=5, colors=False),
                     training_graphs(max_forward=3, orphans=False, extra_colors=False))


@st.composite
def constrained(draw: st.DrawFn, family: str) -> tuple[Graph, Cluster, dict]:
    graph = draw(graphs())
    cluster = draw(clusters(min_accelerators=1, max_accelerators=3, max_cpus=2))
    ids, k = graph.ids.tolist(), cluster.accelerators
    nodes = st.sampled_from(ids)
    spec: dict = {}
    if family == "pins":
        where = ["cpu", *(f"cpu{j}" for j in range(cluster.cpus))] if cluster.cpus else []
        if cluster.cpus == 0:  # one accelerator, named, is held exactly on a cluster without CPU cores
            where = [f"acc{draw(st.integers(0, k - 1))}"]
        else:
            where = [w for w in where if w == "cpu" or w == where[-1]]  # any core, or one core
        spec["pin"] = {node: draw(st.sampled_from(where)) for node in draw(st.lists(nodes, min_size=1, max_size=2,
                                                                                      unique=True))}
    elif family == "together":
        spec["together"] = draw(st.lists(st.lists(nodes, min_size=2, max_size=2, unique=True), min_size=1,
                                         max_size=2))
    elif family == "no_cut":
        edges = sorted(set(zip(graph.src.tolist(), graph.dst.tolist())))
        assume(edges)
        spec["no_cut"] = [[ids[u], ids[v]] for u, v in draw(st.lists(st.sampled_from(edges), min_size=1, max_size=2,
                                                                      unique=True))]
    else:
        spec["max_stages"] = draw(st.integers(1, k))
        if math.isfinite(cluster.memory[0]):
            spec["reserve"] = draw(st.sampled_from([0.0, 0.25, 0.5])) * float(cluster.memory[0])
    return graph, cluster, spec


def satisfies(graph: Graph, cluster: Cluster, spec: dict, device: np.ndarray, exactly: bool) -> bool:
    """The constraints, restated; ``exactly=False`` up to renaming identical devices (a pin to a core or an
    accelerator: the pinned nodes together on one such device)."""
    k = cluster.accelerators
    at = {int(node_id): i for i, node_id in enumerate(graph.ids.tolist())}
    pinned: dict[str, set[int]] = {}
    for node, where in spec.get("pin", {}).items():
        d = int(device[at[node]])
        if where == "cpu" or where.startswith("cpu"):
            if d < k:
                return False
        elif d >= k:
            return False
        if where != "cpu":
            pinned.setdefault(where, set()).add(d)
            if exactly and d != (k + int(where[3:]) if where.startswith("cpu") else int(where[3:])):
                return False
    if any(len(devices) > 1 for devices in pinned.values()):
        return False
    for a, b in [*spec.get("together", []), *spec.get("no_cut", [])]:
        if device[at[a]] != device[at[b]]:
            return False
    if "max_stages" in spec and len(set(device[device < k].tolist())) > spec["max_stages"]:
        return False
    if spec.get("reserve"):
        on = device < k
        held = np.bincount(device[on], weights=graph.memory[on], minlength=k)
        left = (cluster.memory - spec["reserve"]) * (1 + 1e-9) + 1e-9
        if np.any(held > left):
            return False
    return True


def check_optimal(p: Placement, spec: dict, optimum: float | None, tolerance: float,
                  holds: Callable[[np.ndarray], bool], run: object) -> None:
    """``p`` (the run ``run``) against the brute-force ``optimum`` over the placements that hold ``spec``: infeasible
    exactly when there is none, else holding the constraints (``holds``, and as check_feasibility says), scored
    by the evaluator, its bound at most the optimum and, unless stopped, optimal at it."""
    graph, cluster = p.graph, p.cluster
    if not p.has_solution:
        assert p.status is Status.INFEASIBLE and optimum is None, (run, spec, optimum)
        return
    assert holds(p.device), (run, spec, p.device)
    assert check_feasibility(graph, cluster, p.device, constraints=spec) == []
    assert p.objective == evaluate(graph, cluster, p.device, p.objective_name)
    assert optimum is not None, f"{run} placed {spec} where no placement satisfies it"
    scale = tolerance * max(1.0, abs(optimum))
    assert p.bound is None or p.bound <= optimum + scale
    if p.limit is None:
        assert p.status is Status.OPTIMAL and abs(p.objective - optimum) <= scale, (run, spec, p.objective, optimum)


def check_exact_methods(graph: Graph, cluster: Cluster, spec: dict, objective: str) -> None:
    def keep(device: np.ndarray) -> bool:
        return satisfies(graph, cluster, spec, device, exactly=False)

    if objective == "latency":
        reserved = Cluster(cluster.accelerators, cluster.memory - spec.get("reserve", 0.0), cluster.cpus)
        if fits_only_on_the_slack(graph, reserved):
            return  # the latency model's memory rows are conservative by the evaluator's slack
        optimum = latency_subgraph_optimum(graph, cluster, 1, keep)
        tolerance = 1e-6
    else:
        optimum = brute_force_optima(graph, cluster, objective, keep).chain
        tolerance = 1e-9
    for method in EXACT[objective]:
        p = solve(graph, cluster, objective=objective, method=method, time_limit=30, rel_gap=0.0, constraints=spec)
        assert p.info["constraints"] == Constraints.from_dict(spec).to_dict()
        assert p.graph is graph and p.cluster is cluster
        check_optimal(p, spec, optimum, tolerance, lambda device: satisfies(graph, cluster, spec, device, True),
                      method)


@pytest.mark.parametrize("objective", ["throughput", "latency"])
@pytest.mark.parametrize("family", FAMILIES)
@EXAMPLES
@given(data=st.data())
def test_exact_methods_are_optimal_under_constraints(objective: str, family: str, data: st.DataObject) -> None:
    graph, cluster, spec = data.draw(constrained(family))
    check_exact_methods(graph, cluster, spec, objective)


#: The constraints lowering leaves as device rules, which only the MIPs hold (``DeviceRules``).
RULE_FAMILIES = ("device_pins", "forbidden", "stages_on_differing")


@st.composite
def ruled(draw: st.DrawFn, family: str) -> tuple[Graph, Cluster, dict]:
    graph = draw(graphs())
    differing = family == "stages_on_differing" or draw(st.booleans())
    cluster = draw(clusters(min_accelerators=2 if family == "stages_on_differing" else 1, max_accelerators=3,
                            max_cpus=2, heterogeneous=differing))
    ids, names = graph.ids.tolist(), cluster.device_names()
    nodes = st.lists(st.sampled_from(ids), min_size=1, max_size=3, unique=True)
    spec: dict = {}
    if family == "device_pins":
        spec["pin"] = {node: draw(st.sampled_from(names)) for node in draw(nodes)}
    elif family == "forbidden":
        spec["forbid"] = {node: draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names) - 1,
                                              unique=True)) if len(names) > 1 else [] for node in draw(nodes)}
        spec["forbid"] = {node: devices for node, devices in spec["forbid"].items() if devices}
        assume(spec["forbid"])
    else:
        spec["max_stages"] = draw(st.integers(1, cluster.accelerators - 1))
        if draw(st.booleans()):
            spec["pin"] = {draw(st.sampled_from(ids)): draw(st.sampled_from(names[:cluster.accelerators]))}
    if draw(st.booleans()) and len(ids) > 1:
        spec["together"] = [draw(st.lists(st.sampled_from(ids), min_size=2, max_size=2, unique=True))]
    assume(Constraints.from_dict(spec).lowering(graph, cluster).rules is not None)  # else a family above
    return graph, cluster, spec


def holds_exactly(graph: Graph, cluster: Cluster, spec: dict, device: np.ndarray) -> bool:
    """The constraints of :func:`ruled`, restated on the very devices they name."""
    names = cluster.device_names()
    at = {int(node_id): i for i, node_id in enumerate(graph.ids.tolist())}
    if any(names[device[at[node]]] != where for node, where in spec.get("pin", {}).items()):
        return False
    if any(names[device[at[node]]] in devices for node, devices in spec.get("forbid", {}).items()):
        return False
    if any(device[at[a]] != device[at[b]] for a, b in spec.get("together", [])):
        return False
    k = cluster.accelerators
    return "max_stages" not in spec or len(set(device[device < k].tolist())) <= spec["max_stages"]


def check_rule_holders(graph: Graph, cluster: Cluster, spec: dict, objective: str) -> None:
    """The MIPs against the brute force over every labelled placement that holds ``spec``; every other exact
    method refuses the rules by name (or, where lowering holds them after all, is optimal too)."""
    def keep(device: np.ndarray) -> bool:
        return holds_exactly(graph, cluster, spec, device)

    rules = Constraints.from_dict(spec).lowering(graph, cluster).rules
    cores_told_apart = rules is not None and rules.tells_cpus_apart(cluster.accelerators)
    runs: list[tuple[str, dict, float | None]] = []
    if objective == "latency":
        if fits_only_on_the_slack(graph, cluster):
            return  # the latency model's memory rows are conservative by the evaluator's slack
        runs.append(("mip", {}, latency_subgraph_optimum(graph, cluster, 1, keep, labelled=True)))
    else:
        optima = brute_force_optima(graph, cluster, objective, keep, labelled=True)
        runs += [("mip", {}, optima.chain), ("mip", {"contiguous": False}, optima.any)]
    for method in EXACT[objective]:
        if method != "mip":
            runs.append((method, {}, runs[0][2]))
    for method, options, optimum in runs:
        # the chain IP and the latency program run the CPU cores alike; the other methods hold no rules
        refused = (rules is not None and method != "mip") or (cores_told_apart and not options)
        if refused:
            with pytest.raises(ParameterError, match=r"does not hold|only with contiguous=False"):
                solve(graph, cluster, objective=objective, method=method, constraints=spec, **options)
            continue
        p = solve(graph, cluster, objective=objective, method=method, time_limit=30, rel_gap=0.0, constraints=spec,
                  **options)
        check_optimal(p, spec, optimum, 1e-6 if objective == "latency" else 1e-9, keep, (method, options))


@pytest.mark.parametrize("objective", ["throughput", "latency"])
@pytest.mark.parametrize("family", RULE_FAMILIES)
@EXAMPLES
@given(data=st.data())
def test_the_mips_hold_device_rules_exactly(objective: str, family: str, data: st.DataObject) -> None:
    graph, cluster, spec = data.draw(ruled(family))
    check_rule_holders(graph, cluster, spec, objective)


def test_auto_takes_the_mip_for_device_rules_and_says_why() -> None:
    g = Graph([Node(i, 1.0 + i, 2.0, memory=1.0, comm=0.5) for i in range(6)], [(i, i + 1) for i in range(5)])
    c = Cluster(3, memory=10.0, cpus=1)
    p = solve(g, c, constraints={"forbid": {0: ["acc0", "acc1"]}, "pin": {5: "acc0"}})
    assert p.method == "mip" and p.status is Status.OPTIMAL
    assert p.device[0] not in (0, 1) and p.device[5] == 0
    assert "does not hold forbidden devices" in p.info["passed_over"]["dp"]
    with pytest.raises(ParameterError, match="Method 'dp' does not hold forbidden devices"):
        solve(g, c, method="dp", constraints={"forbid": {0: ["acc0"]}})
    with pytest.raises(ParameterError, match="only with contiguous=False"):
        solve(g, Cluster(3, memory=10.0, cpus=2), method="mip", constraints={"forbid": {0: ["cpu0"]}})
    held = solve(g, Cluster(3, memory=10.0, cpus=2), method="mip", contiguous=False,
                 constraints={"pin": {0: "cpu1", 5: "cpu0", 2: "acc2"}})
    assert held.device[[0, 5, 2]].tolist() == [4, 3, 2]


def test_bad_constraints_name_what_is_wrong() -> None:
    g = Graph([Node(i, 1.0, 1.0, memory=1.0, name=f"n{i}") for i in range(3)],
              [(0, 1), (1, 2)])
    c = Cluster(2, memory=4.0, cpus=1)
    cases = [({"pin": {"nope": "cpu"}}, "names 'nope', which is no node"),
             ({"pin": {"n0": "acc7"}}, "names device 'acc7'"),
             ({"no_cut": [["n0", "n2"]]}, "no edge between them"),
             ({"reserve": 5.0}, "more than its memory"),
             ({"max_stages": 0}, "max_stages must be a positive integer"),
             ({"together": [["n0"]]}, "pairs of nodes"),
             ({"colour": []}, "unknown key 'colour'")]
    for spec, said in cases:
        with pytest.raises(ParameterError, match=said):
            solve(g, c, constraints=spec)
    # names and ids both name nodes; a violated constraint is one line naming it
    assert [str(v) for v in check_feasibility(g, c, [0, 1, 2], constraints={"together": [["n0", 2]]})] == [
        "constraint: together (node 0 ('n0'), node 2 ('n2')): node 0 ('n0') is on acc0, node 2 ('n2') on cpu0"]


def test_cli_solves_under_constraints_and_evaluate_holds_the_plan_to_them(tmp_path, capsys) -> None:
    import json

    from exactplace.cli.main import main
    from exactplace.io import Workload, write_workload

    g = Graph([Node(i, 1.0 + i, 1.0, memory=2.0, name=f"n{i}") for i in range(5)],
              [(0, 1), (1, 2), (2, 3), (3, 4)])
    workload, plan, file = tmp_path / "w.json", tmp_path / "plan.json", tmp_path / "c.json"
    write_workload(Workload(g, Cluster(3, memory=5.0, cpus=1), name="chain"), workload)
    file.write_text(json.dumps({"no_cut": [["n1", "n2"]]}))
    assert main(["solve", str(workload), "--pin", "n4=cpu", "--constraints", str(file), "--max-stages", "2",
                 "--out", str(plan)]) == 0
    said = capsys.readouterr().out
    assert 'under the constraints {"pin": {"n4": "cpu"}, "no_cut": [["n1", "n2"]], "max_stages": 2}' in said
    placed = {entry["name"]: entry["device"] for entry in json.loads(plan.read_text())["placement"]}
    assert placed["n4"] == "cpu0" and placed["n1"] == placed["n2"]
    assert len({d for d in placed.values() if d.startswith("acc")}) <= 2
    assert main(["evaluate", str(workload), str(plan)]) == 0  # the plan's own constraints hold
    assert "feasible" in capsys.readouterr().out
    assert main(["evaluate", str(workload), str(plan), "--pin", "n4=acc0"]) != 0
    assert "constraint: pin node 4 ('n4') to acc0: it is on cpu0" in capsys.readouterr().out
    assert main(["solve", str(workload), "--forbid", "n0=acc0", "--out", str(plan)]) == 0
    capsys.readouterr()
    assert json.loads(plan.read_text())["placement"][0]["device"] != "acc0"
    assert main(["solve", str(workload), "--forbid", "n0=acc0", "--method", "dp"]) == 2
    assert "Method 'dp' does not hold forbidden devices" in capsys.readouterr().err
    assert main(["solve", str(workload), "--together", "n1"]) == 2
    assert "--together takes A,B (two nodes)" in capsys.readouterr().err


def test_schedule_methods_take_constraints_too() -> None:
    g = Graph([Node(i, 1.0, 1.0, memory=1.0, activation=0.5) for i in range(6)], [(i, i + 1) for i in range(5)])
    c = Cluster(3, memory=10.0, cpus=0)
    free = solve(g, c, schedule="1f1b", microbatches=4)
    held = solve(g, c, schedule="1f1b", microbatches=4, constraints={"no_cut": [[1, 2], [3, 4]], "max_stages": 2})
    assert held.status is Status.OPTIMAL and held.objective >= free.objective
    assert held.device[1] == held.device[2] and held.device[3] == held.device[4]
    assert len(set(held.device.tolist())) <= 2
    with pytest.raises(ParameterError, match="a pin to one accelerator under a pipeline schedule"):
        solve(g, c, schedule="1f1b", microbatches=4, constraints={"pin": {0: "acc1"}})


def test_a_workload_file_states_its_constraints(tmp_path, capsys) -> None:
    import json

    from exactplace import InputFormatError, read_workload, workload_path, write_workload
    from exactplace.cli.main import main
    from exactplace.io import workload_to_dict

    data = workload_to_dict(read_workload(workload_path("layer_bert24_inference")))
    data["constraints"] = {"pin": {"node1": "cpu"}, "max_stages": 3}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(data))
    w = read_workload(path)
    assert w.constraints == {"pin": {"node1": "cpu"}, "max_stages": 3}
    plan = solve(w)
    assert plan.info["constraints"] == w.constraints
    assert check_feasibility(w.graph, w.cluster, plan.device, constraints=w.constraints) == []
    assert solve(w, constraints={}).objective < plan.objective  # the caller's own replace the file's
    write_workload(w, tmp_path / "again.json")
    assert read_workload(tmp_path / "again.json").constraints == w.constraints
    # the command line adds its flags to the file's
    assert main(["solve", str(path), "--max-stages", "2"]) == 0
    assert '"pin": {"node1": "cpu"}, "max_stages": 2' in capsys.readouterr().out
    data["constraints"] = {"pin": {"nodeX": "cpu"}}
    path.write_text(json.dumps(data))
    with pytest.raises(InputFormatError, match="nodeX"):
        read_workload(path)
    data["constraints"] = {"pin": {"node1": "cpu"}, "apart": []}
    path.write_text(json.dumps(data))
    with pytest.raises(InputFormatError, match="apart"):
        read_workload(path)


def test_a_node_the_rules_restrict_is_not_merged_into_its_neighbour() -> None:
    # Node 2 costs nothing and touches only node 1, so the contraction would merge it into node 1's unit;
    # pinned to acc1 while node 1 may not use acc1, the only placements split them.
    g = Graph([Node(0, 2.0, 2.0, comm=0.1), Node(1, 2.0, 2.0), Node(2, 0.0, 0.0)], [(0, 1), (1, 2)])
    c = Cluster(2, memory=10.0, cpus=1)
    spec = {"pin": {2: "acc1"}, "forbid": {1: ["acc1"]}}
    optimum = brute_force_optima(g, c, "throughput", lambda d: holds_exactly(g, c, spec, d), labelled=True).chain
    for options in ({}, {"contiguous": False}):
        p = solve(g, c, method="mip", constraints=spec, rel_gap=0.0, **options)
        assert p.status is Status.OPTIMAL and p.device[2] == 1 and p.device[1] != 1
        assert abs(p.objective - optimum) <= 1e-9
