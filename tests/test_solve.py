"""solve(): parameter validation, the referee, greedy end to end, and every registered method vs brute force."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import time

import numpy as np
import pytest

import exactplace
from exactplace import (
    Cluster,
    ExactplaceError,
    Graph,
    Node,
    ParameterError,
    Placement,
    PlacementError,
    Status,
    available_methods,
    check_feasibility,
    evaluate,
    read_workload,
    shipped_workloads,
    solve,
    workload_path,
)
from exactplace.core.errors import ContractError
from exactplace.core.params import Integer, Option
from exactplace.core.placement import Limit, Space
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators.feasibility import Guarantees
from exactplace.methods import registry
from exactplace.methods.base import Method
from exactplace.methods.catalog import AUTO_ORDER, BUILTIN_METHODS
from exactplace.testing import check_method

PARAMETER_MESSAGE = re.compile(r"^The '(\w+)' parameter of solve must be .+\. Got .+ instead\.$", re.S)


def small() -> tuple[Graph, Cluster]:
    g = Graph([Node(1, 4.0, 1.0, comm=0.5, memory=2.0), Node(2, 3.0, 2.0, comm=0.5, memory=2.0), Node(3, 1.0, None)],
              [(1, 2), (2, 3)])
    return g, Cluster(accelerators=2, memory=3.0, cpus=1)


# -- parameter validation ----------------------------------------------------------------------------


def test_time_limit_message_format() -> None:
    g, c = small()
    with pytest.raises(ParameterError) as info:
        solve(g, c, method="greedy", time_limit=-3)
    assert str(info.value) == "The 'time_limit' parameter of solve must be a positive number or None. Got -3 instead."


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"time_limit": 0}, "time_limit"),
        ({"time_limit": math.nan}, "time_limit"),
        ({"time_limit": -math.inf}, "time_limit"),
        ({"time_limit": "10"}, "time_limit"),
        ({"time_limit": True}, "time_limit"),
        ({"rel_gap": -0.1}, "rel_gap"),
        ({"rel_gap": 1.0}, "rel_gap"),
        ({"rel_gap": math.nan}, "rel_gap"),
        ({"rel_gap": "0.01"}, "rel_gap"),
        ({"rel_gap": None}, "rel_gap"),
        ({"rel_gap": False}, "rel_gap"),
        ({"objective": "speed"}, "objective"),
        ({"objective": None}, "objective"),
        ({"method": 3}, "method"),
        ({"method": None}, "method"),
        ({"method": "no-such-method"}, "method"),
        ({"cluster": "2 gpus"}, "cluster"),
        ({"overlap": "yes"}, "overlap"),
        ({"gpipe": 1}, "gpipe"),
        ({"warm_start": [0, 0]}, "warm_start"),
        ({"warm_start": [0, 0, 9]}, "warm_start"),
        ({"warm_start": {1: "gpu7", 2: 0, 3: 2}}, "warm_start"),
        ({"warm_start": {1: 0, 2: 0}}, "warm_start"),
        ({"warm_start": {99: 0}}, "warm_start"),
        ({"warm_start": "acc0"}, "warm_start"),
    ],
)
def test_bad_parameters(kwargs: dict, name: str) -> None:
    g, c = small()
    kwargs = {"cluster": c, "method": "greedy", **kwargs}
    with pytest.raises(ParameterError) as info:
        solve(g, **kwargs)
    match = PARAMETER_MESSAGE.match(str(info.value))
    assert match, str(info.value)
    assert match.group(1) == name


def test_bad_graph_and_missing_cluster() -> None:
    g, c = small()
    pattern = r"The 'graph' parameter of solve must be a Graph or a Workload\. Got 'dict'"
    with pytest.raises(ParameterError, match=pattern):
        solve({"nodes": []}, c)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match=r"The 'cluster' parameter of solve must be a Cluster .*Got None instead"):
        solve(g)


def test_parameters_are_checked_before_feasibility() -> None:
    # a hopeless instance still reports the bad parameter, not the infeasibility
    g = Graph([Node(1, 1.0, None)], [])
    c = Cluster(accelerators=1, cpus=0)
    with pytest.raises(ParameterError, match="'method'"):
        solve(g, c, method="nope")
    with pytest.raises(ParameterError, match="'depth'"):
        solve(g, c, method="greedy", depth=2)


def test_unknown_method_lists_the_registered_ones() -> None:
    g, c = small()
    with pytest.raises(ParameterError) as info:
        solve(g, c, method="simulated-annealing")
    for name in [*registry.registered_methods(), "auto"]:
        assert repr(name) in str(info.value)


def test_unknown_option_names_the_allowed_ones() -> None:
    g, c = small()
    pattern = r"^solve has no option 'foo' for objective 'throughput'; the options are \[.*'gpipe'.*'threads'"
    with pytest.raises(ParameterError, match=pattern):
        solve(g, c, method="greedy", foo=1)
    with pytest.raises(ParameterError, match=r"solve has no option 'overlap' for objective 'latency'"):
        solve(g, c, objective="latency", method="greedy", overlap=True)  # throughput-only option


def test_an_option_of_another_method_names_the_methods_that_take_it() -> None:
    g, c = small()
    pattern = r"^Method 'greedy' takes no option 'threads'; the methods that take it: dp, dpl"
    with pytest.raises(ParameterError, match=pattern):
        solve(g, c, method="greedy", threads=2)


def test_numpy_numbers_are_numbers() -> None:
    g, c = small()
    for limit in (np.int64(5), np.float64(5.0), 5, 5.0):
        assert solve(g, c, method="greedy", time_limit=limit).has_solution
    with pytest.raises(ParameterError, match="'time_limit'"):
        solve(g, c, method="greedy", time_limit=np.bool_(True))


def test_gap_keyword_is_deprecated_for_rel_gap(scripted: type[Scripted]) -> None:
    g, c = small()
    seen = []
    scripted.script = lambda problem: seen.append(problem.rel_gap) or MethodResult(np.array([2, 2, 2]), Status.FEASIBLE)
    with pytest.warns(DeprecationWarning, match="rel_gap"):
        solve(g, c, method=scripted.name, gap=0.05)
    solve(g, c, method=scripted.name, rel_gap=0.02)
    assert seen == [0.05, 0.02]
    with pytest.raises(ParameterError, match="'rel_gap'"):
        solve(g, c, method=scripted.name, rel_gap=1.5)


# -- a scripted method, to exercise the front door and the referee ----------------------------------------


class Scripted(Method):
    """Returns whatever the test put in ``script``; handles throughput only."""

    name = "scripted-test-method"
    objectives = ("throughput",)
    options = {"depth": Option("depth", Integer(low=0), 1, "how deep")}
    script: object = None

    def run(self, problem: Problem) -> MethodResult:
        action = type(self).script
        if isinstance(action, BaseException):
            raise action
        return action(problem)  # type: ignore[operator]


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> type[Scripted]:
    registry.registered_methods()  # load the built-in methods first
    monkeypatch.setitem(registry._REGISTRY, Scripted.name, Scripted)
    monkeypatch.setattr(Scripted, "script", None)
    return Scripted


def test_method_objective_mismatch(scripted: type[Scripted]) -> None:
    g, c = small()
    with pytest.raises(ParameterError, match=r"handles objective throughput, not 'latency'.*'greedy'"):
        solve(g, c, objective="latency", method=scripted.name)


def test_method_options_reach_the_method(scripted: type[Scripted]) -> None:
    g, c = small()
    seen = {}

    def run(problem: Problem) -> MethodResult:
        seen.update(problem.options)
        return MethodResult(np.array([2, 2, 2]), Status.FEASIBLE)

    scripted.script = run
    p = solve(g, c, method=scripted.name, depth=3, overlap=True)
    assert seen == {"depth": 3, "overlap": True} and p.info["options"] == seen
    assert p.objective == evaluate(g, c, [2, 2, 2], overlap=True)


def test_referee_rejects_infeasible_placements(scripted: type[Scripted]) -> None:
    g, c = small()
    scripted.script = lambda problem: MethodResult(np.array([0, 0, 1]), Status.FEASIBLE)  # memory, unsupported
    with pytest.raises(ExactplaceError, match=r"returned an infeasible placement .*bug in the method"):
        solve(g, c, method=scripted.name)
    scripted.script = lambda problem: MethodResult(np.array([0, 1]), Status.FEASIBLE)
    with pytest.raises(PlacementError, match="one device per node"):
        solve(g, c, method=scripted.name)


def test_referee_rejects_a_bound_above_the_objective(scripted: type[Scripted]) -> None:
    g, c = small()
    scripted.script = lambda problem: MethodResult(np.array([2, 2, 2]), Status.OPTIMAL, bound=100.0)
    with pytest.raises(ExactplaceError, match=r"claims a lower bound 100\.0 above the evaluated objective 8\.0"):
        solve(g, c, method=scripted.name)


def test_objective_is_recomputed_and_gap_follows_the_bound(scripted: type[Scripted]) -> None:
    g, c = small()
    scripted.script = lambda problem: MethodResult(np.array([0, 1, 2]), Status.FEASIBLE, bound=2.0, solver="s")
    p = solve(g, c, method=scripted.name)
    assert p.objective == evaluate(g, c, [0, 1, 2]) and p.bound == 2.0
    assert p.gap == pytest.approx((p.objective - 2.0) / p.objective)
    assert p.solver == "s" and p.method == scripted.name


def test_interrupt_keeps_the_warm_start(scripted: type[Scripted]) -> None:
    g, c = small()
    scripted.script = KeyboardInterrupt()
    p = solve(g, c, method=scripted.name, warm_start={1: "acc0", 2: "acc1", 3: 2})
    assert p.status is Status.FEASIBLE and p.limit is Limit.INTERRUPT and p.device.tolist() == [0, 1, 2]
    p = solve(g, c, method=scripted.name)
    assert p.status is Status.NO_SOLUTION and p.device is None and p.objective is None and p.limit is Limit.INTERRUPT


def test_warm_start_forms_are_equivalent(scripted: type[Scripted]) -> None:
    g, c = small()
    seen = []
    def run(problem: Problem) -> MethodResult:
        seen.append(problem.warm_start)
        return MethodResult(problem.warm_start, Status.FEASIBLE)

    scripted.script = run
    first = solve(g, c, method=scripted.name, warm_start=np.array([0, 1, 2]))
    solve(g, c, method=scripted.name, warm_start=first)
    solve(g, c, method=scripted.name, warm_start={1: "acc0", 2: "acc1", 3: "cpu0"})
    solve(g, c, method=scripted.name, warm_start=[0.0, 1.0, 2.0])
    assert [w.tolist() for w in seen] == [[0, 1, 2]] * 4


def test_infeasible_method_result(scripted: type[Scripted]) -> None:
    g, c = small()
    scripted.script = lambda problem: MethodResult(None, Status.INFEASIBLE)
    p = solve(g, c, method=scripted.name)
    assert p.status is Status.INFEASIBLE and not p.has_solution and p.objective is None and p.gap is None
    assert p.assignment() == {} and json.loads(p.to_json())["placement"] is None


# -- infeasible instances ------------------------------------------------------------------------------------


def infeasible_reason(p: Placement) -> str:
    """Infeasibility is returned, never raised: status INFEASIBLE, no devices, the reason in info."""
    assert p.status is Status.INFEASIBLE and p.device is None and p.objective is None
    return p.info["reason"]


def test_unsupported_node_without_cpu() -> None:
    g = Graph([Node(1, 1.0, 1.0), Node(2, 1.0, None, name="gather")], [(1, 2)])
    reason = infeasible_reason(solve(g, Cluster(accelerators=3, cpus=0), method="greedy"))
    assert reason == "Node 2 ('gather') cannot run on an accelerator and the cluster has no CPU: it needs a CPU core."


def test_node_too_big_for_every_accelerator() -> None:
    g = Graph([Node(1, 1.0, 1.0, memory=1.0), Node(2, 1.0, 1.0, memory=9.0)], [(1, 2)])
    for method, memory in (("greedy", [4.0, 8.0]), ("auto", [4.0, 8.0]), ("dp", [8.0, 8.0])):
        reason = infeasible_reason(solve(g, Cluster(accelerators=2, memory=memory, cpus=0), method=method))
        assert reason.startswith("Node 2 needs 9 bytes, more than the largest accelerator (8 bytes)")
        assert reason.endswith("it needs a CPU core, or at least 9 bytes per accelerator.")
    assert solve(g, Cluster(accelerators=2, memory=[4.0, 8.0], cpus=1), method="greedy").has_solution


def test_colour_class_too_big() -> None:
    g = Graph([Node(1, 1.0, 1.0, memory=3.0, color=5), Node(2, 1.0, 1.0, memory=3.0, color=5)], [(1, 2)])
    reason = infeasible_reason(solve(g, Cluster(accelerators=2, memory=4.0, cpus=0), method="greedy",
                                     objective="latency"))
    assert reason.startswith("The color class of node 1 (2 nodes) needs 6 bytes")


# -- greedy end to end -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("objective", ["throughput", "latency"])
@pytest.mark.parametrize("name", shipped_workloads())
def test_greedy_on_shipped_workloads(name: str, objective: str) -> None:
    w = read_workload(workload_path(name))
    p = solve(w, objective=objective, method="greedy")
    g, c = w.graph, w.cluster
    assert p.status is Status.FEASIBLE and p.method == "greedy" and p.objective_name == objective
    assert p.device.shape == (g.n,) and p.device.dtype == np.int64
    assert check_feasibility(g, c, p.device) == []
    if not g.is_training:  # consecutive runs of a topological order are contiguous
        assert check_feasibility(g, c, p.device, space="contiguous") == []
    assert p.objective == evaluate(g, c, p.device, objective)
    assert math.isfinite(p.objective) and p.objective > 0
    assert p.bound is None and p.gap is None and p.limit is None and p.wall_seconds >= 0
    assert p.graph is g and p.cluster is c


def test_placement_is_frozen() -> None:
    g, c = small()
    p = solve(g, c, method="greedy")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.objective = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        p.device[0] = 1
    assert len(p.assignment()) == g.n and sum(map(len, p.devices_used().values())) == g.n
    assert list(p.to_frame().index) == g.ids.tolist()
    assert "greedy" in p.summary() and "greedy" in repr(p)
    data = json.loads(p.to_json())
    for key in ("objective", "status", "method", "bound", "gap", "wall_seconds", "placement", "version"):
        assert key in data


def test_placement_checks_its_status() -> None:
    g, c = small()
    with pytest.raises(ValueError, match="does not match"):
        Placement(g, c, None, "throughput", None, Status.FEASIBLE, "x")
    with pytest.raises(ValueError, match="does not match"):
        Placement(g, c, np.zeros(3, dtype=np.int64), "throughput", 1.0, Status.INFEASIBLE, "x")
    with pytest.raises(ValueError, match="'patience' is not a valid Limit"):
        Placement(g, c, np.zeros(3, dtype=np.int64), "throughput", 1.0, Status.FEASIBLE, "x", limit="patience")


def test_auto_picks_an_available_method() -> None:
    w = read_workload(workload_path("layer_bert24_inference"))
    for objective in ("throughput", "latency"):
        p = solve(w, objective=objective)
        assert p.method in AUTO_ORDER[objective] and p.method in available_methods(objective)
        assert p.has_solution and p.objective == evaluate(w.graph, w.cluster, p.device, objective)


def test_workload_cluster_can_be_overridden() -> None:
    w = read_workload(workload_path("layer_bert24_inference"))
    p = solve(w, Cluster(accelerators=1, memory=math.inf, cpus=1), method="greedy")
    assert p.cluster.accelerators == 1 and set(p.device.tolist()) <= {0, 1}


def test_available_methods() -> None:
    for objective in ("throughput", "latency"):
        names = available_methods(objective)
        assert "greedy" in names
        for name in names:
            assert objective in registry.registered_methods()[name].objectives
    assert set(available_methods()) >= set(available_methods("throughput")) | set(available_methods("latency"))
    assert exactplace.available_methods is available_methods


# -- the contract every registered method keeps (scikit-learn's estimator_checks idea) ------------------------

TINY = Graph([Node(1, 4.0, 1.0, comm=0.5, memory=1.0), Node(2, 3.0, 2.0, comm=0.5, memory=1.0),
              Node(3, 2.0, 1.0, comm=0.25, memory=1.0), Node(4, 1.0, None)], [(1, 2), (1, 3), (2, 4), (3, 4)])


@pytest.mark.parametrize("name", list(BUILTIN_METHODS))
def test_every_builtin_method_keeps_the_contract(name: str) -> None:
    """exactplace.testing.check_method, the contract a third-party method is held to, holds every built-in one."""
    check_method(registry.registered_methods()[name])


def test_the_contract_catches_a_broken_method(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind of breach fails check_method with a ContractError naming it."""

    class Broken(Method):
        name = "broken-contract"
        objectives = ("throughput",)
        description = "for the contract's own test"
        behaviour = "ok"

        def run(self, problem: Problem) -> MethodResult:
            device = np.full(problem.graph.n, problem.cluster.accelerators, dtype=np.int64)  # all on cpu0
            if Broken.behaviour == "slow":
                time.sleep(5.0)
            if Broken.behaviour == "random":  # one node, drawn at random, on a random accelerator
                g = problem.graph
                v = int(rng.choice(np.flatnonzero(g.supported & (g.memory <= problem.cluster.memory_cap))))
                device[v] = int(rng.integers(0, problem.cluster.accelerators))
            return MethodResult(device, Status.FEASIBLE)

    rng = np.random.default_rng(1)
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry.registered_methods()))
    check_method(Broken)  # all on a CPU: feasible, deterministic, on time
    for behaviour, fragment in (("slow", "time limit"), ("random", "different placements")):
        Broken.behaviour = behaviour
        with pytest.raises(ContractError, match=fragment):
            check_method(Broken, time_limit=1.0)
    Broken.behaviour = "ok"
    Broken.options = {"depth": Option("depth", Integer(low=1), 0, "how deep")}
    with pytest.raises(ContractError, match="default 0 breaks its own constraint"):
        check_method(Broken)


def test_space_and_limit_are_enums_and_reach_the_plan() -> None:
    g, c = small()
    p = solve(g, c, method="dp")
    assert p.space is Space.CHAIN and p.limit is None
    data = json.loads(p.to_json())
    assert data["space"] == "chain" and data["limit"] is None and data["trace"] == []
    assert "over chain splits" in p.summary()
    assert Limit("time") is Limit.TIME and Limit.TIME == "time" and str(Limit.INTERRUPT) == "interrupt"


def test_fallback_placement_carries_neither_the_methods_bound_nor_its_guarantee(
    scripted: type[Scripted], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A contiguity-promising method stopped with nothing but a bound: greedy's placement comes back,
    refereed as greedy's (it may lie outside the method's space), and the bound moves to info."""
    monkeypatch.setattr(scripted, "guarantee", Guarantees.contiguous_split())
    g, c = small()
    scripted.script = lambda problem: MethodResult(None, Status.NO_SOLUTION, bound=1e9, limit=Limit.TIME)
    p = solve(g, c, method=scripted.name, time_limit=5)
    assert p.status is Status.FEASIBLE and p.limit is Limit.TIME and p.info["returned"].startswith("greedy")
    assert p.bound is None and p.gap is None and p.info["bound_of_method"] == 1e9


def test_ctrl_c_during_the_fallback_placement_is_not_lost(
    scripted: type[Scripted], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The method stopped by its time limit with nothing; Ctrl-C while greedy runs in its place: the result says
    interrupt (the command line exits 130), not time."""
    from exactplace.methods.registry import registered_methods

    def ctrl_c(self: object, problem: object) -> MethodResult:
        raise KeyboardInterrupt

    monkeypatch.setattr(registered_methods()["greedy"], "run", ctrl_c)
    g, c = small()
    scripted.script = lambda problem: MethodResult(None, Status.NO_SOLUTION, bound=1e9, limit=Limit.TIME)
    p = solve(g, c, method=scripted.name, time_limit=5)
    assert p.status is Status.NO_SOLUTION and p.limit is Limit.INTERRUPT


@pytest.mark.parametrize("shown", [{"log": True}, {"progress": True}, {"log": True, "progress": True}])
def test_output_options_never_change_which_method_auto_picks(shown: dict) -> None:
    """``log`` and ``progress`` change what a method shows, not what it finds: 'auto' picks what it picks without
    them (the DP here, which takes neither), and the result is the same."""
    w = read_workload(workload_path("layer_bert24_inference"))
    quiet, loud = solve(w), solve(w, **shown)
    assert loud.method == quiet.method == "dp" and "passed_over" not in loud.info
    assert loud.objective == quiet.objective and loud.status is quiet.status
