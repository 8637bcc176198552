"""The native max-load DP ("dp") and its linearization ("dpl"), through ``solve``.

Search space. The DP returns the best *chain split* (the reference implementation's
semantics): colour classes share a device, and the devices can be ordered so that every
edge of the forward colour-class graph stays on a device or goes to a later one. That class
graph has the forward edges and, for each backward edge ``ub -> vb`` touching a backward-only
(orphaned) class, the mirrored edge ``class(vb) -> class(ub)``. The brute force
(``tests/oracle.py``, notion ``units``) enumerates every placement of a small random
instance, keeps exactly the chain splits, and must find the DP's value. The preprocessing's
trivial merges narrow the DP's space further,
so this also checks that they never lose the optimum.

Relationship to Definition 3.1 (``check_feasibility(space="contiguous")``): every chain split
has contiguous forward parts, and the backward parts are contiguous on these generated
graphs (their backward edges mirror the forward ones), so the DP's placement passes the
check and its value is at least the best placement the check accepts. It can be larger:
the chain condition also orders the orphaned classes' forward images, and a check of each
part alone accepts parts that send each other data.
"""

from __future__ import annotations

import _thread
import csv
import dataclasses
import math
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima, is_unit_chain
from strategies import dags, instances, training_graphs

from exactplace import (
    Cluster,
    Graph,
    Limit,
    Node,
    ParameterError,
    Status,
    TooManyIdealsError,
    check_feasibility,
    max_load,
    read_workload,
    solve,
    workload_path,
)
from exactplace.core.contraction import contract
from exactplace.core.problem import Problem
from exactplace.methods import dp as dp_module
from exactplace.methods import dp_sizing
from exactplace.methods.dp_sizing import DEFAULT_DP
from exactplace.methods.ideals import count_ideals
from exactplace.methods.registry import registered_methods

pytest.importorskip("exactplace._native")

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"


# -- brute force over the DP's search space (tests/oracle.py) ----------------------------------------


def check_against_brute_force(graph: Graph, cluster: Cluster, overlap: bool) -> None:
    optima = brute_force_optima(graph, cluster, "throughput", overlap=overlap)
    chain, contiguous = optima.units, optima.chain
    exact = solve(graph, cluster, method="dp", overlap=overlap)
    linear = solve(graph, cluster, method="dpl", overlap=overlap)
    if chain is None:
        assert exact.status is Status.INFEASIBLE and exact.device is None and exact.info["reason"]
        # solve's own check (some node fits on no device) says infeasible; else DPL found nothing
        assert linear.status in (Status.INFEASIBLE, Status.NO_SOLUTION) and linear.device is None
        return
    assert exact.status is Status.OPTIMAL
    assert exact.objective == pytest.approx(chain, rel=1e-9, abs=1e-9)
    assert exact.bound == exact.objective and exact.gap == 0.0
    assert contiguous is None or exact.objective >= contiguous - 1e-9
    # DPL searches one linear order only, so it may find nothing even when a chain split fits.
    assert linear.status in (Status.FEASIBLE, Status.NO_SOLUTION) and linear.bound is None
    for placement in (exact, linear):
        if placement.device is None:
            continue
        assert is_unit_chain(graph, placement.device)
        assert check_feasibility(graph, cluster, placement.device, space="contiguous") == []
        assert placement.info["backward_contiguous"]
        assert placement.objective >= exact.objective - 1e-9


@settings(max_examples=250)
@given(instances(dags(min_nodes=3), min_accelerators=1), st.booleans())
def test_dp_equals_brute_force_on_inference_graphs(instance: tuple[Graph, Cluster], overlap: bool) -> None:
    check_against_brute_force(*instance, overlap)


@settings(max_examples=250)
@given(instances(training_graphs(max_forward=4), min_accelerators=1), st.booleans())
def test_dp_equals_brute_force_on_training_graphs(instance: tuple[Graph, Cluster], overlap: bool) -> None:
    check_against_brute_force(*instance, overlap)


@settings(max_examples=40)
@given(instances(), st.booleans())
def test_dp_equals_brute_force_on_any_instance(instance: tuple[Graph, Cluster], overlap: bool) -> None:
    """Also CPU-only clusters, single nodes and the like."""
    check_against_brute_force(*instance, overlap)


# -- the published workloads ---------------------------------------------------------------------


def _throughput_rows() -> list:
    if not (SHARED / "reference.csv").is_file():
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"shared workloads not found at {SHARED}"))]
    with open(SHARED / "reference.csv", newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if row["objective"] == "throughput"]
    return [pytest.param(row, marks=pytest.mark.shared, id=Path(row["workload"]).stem) for row in rows]


@pytest.mark.parametrize("row", _throughput_rows())
def test_published_workloads(row: dict) -> None:
    workload = read_workload(SHARED / row["workload"])
    graph, cluster = workload.graph, workload.cluster
    exact = solve(workload, method="dp")
    assert exact.status is Status.OPTIMAL
    assert exact.info["ideals"] == int(row["ideals"])
    assert exact.objective == pytest.approx(float(row["dp"]), rel=1e-6)
    linear = solve(workload, method="dpl")
    assert linear.objective <= float(row["dpl"]) * 1.01
    for placement in (exact, linear):
        assert max_load(graph, cluster, placement.device) == placement.objective
        assert check_feasibility(graph, cluster, placement.device, space="contiguous") == []
        assert abs(placement.info["dp_value"] - placement.objective) <= 1e-9 * placement.objective


# -- options, limits and errors ------------------------------------------------------------------


def parallel_chains(branches: int = 4, length: int = 12) -> Graph:
    """``branches`` independent chains between a source and a sink: (length + 1) ** branches + 2 ideals."""
    rng = np.random.default_rng(1)
    nodes = [Node(0, 1.0, 0.1), Node(1, 1.0, 0.1)]
    edges = []
    for b in range(branches):
        previous = 0
        for i in range(length):
            node_id = 100 * (b + 1) + i
            acc = float(rng.uniform(0.5, 2.0))
            nodes.append(Node(node_id, 8 * acc, acc, comm=float(rng.uniform(0.05, 0.3))))
            edges.append((previous, node_id))
            previous = node_id
        edges.append((previous, 1))
    return Graph(nodes, edges)


HARD = Cluster(accelerators=6, cpus=1)


def slow_graph() -> Graph:
    """161,053 ideals: seconds of DP on HARD, far beyond the stops below."""
    return parallel_chains(branches=5, length=10)


def test_time_limit_stops_the_dp_and_keeps_a_feasible_warm_start() -> None:
    graph = slow_graph()
    limit = 0.2
    start = time.monotonic()
    stopped = solve(graph, HARD, method="dp", time_limit=limit)
    assert time.monotonic() - start < 15 * limit  # the limit, with room for DPL's incumbent and a loaded machine
    # Without a warm start, a DP with a time limit keeps DPL's placement as its incumbent.
    assert stopped.status is Status.FEASIBLE and stopped.limit is Limit.TIME
    assert stopped.info["returned"] == "DPL incumbent"
    assert np.array_equal(stopped.device, solve(graph, HARD, method="dpl").device)
    warm = solve(graph, HARD, method="greedy").device
    kept = solve(graph, HARD, method="dp", time_limit=limit, warm_start=warm)
    assert kept.status is Status.FEASIBLE and kept.limit is Limit.TIME
    assert np.array_equal(kept.device, warm)


def test_ctrl_c_stops_the_dp() -> None:
    after = 0.3  # seconds before the Ctrl-C
    timer = threading.Timer(after, _thread.interrupt_main)
    timer.start()
    try:
        start = time.monotonic()
        stopped = solve(slow_graph(), HARD, method="dp")
        elapsed = time.monotonic() - start
    finally:
        timer.cancel()
    # The DP always computes DPL's placement first (its cutoff), and keeps it as the incumbent.
    assert stopped.status is Status.FEASIBLE and stopped.limit is Limit.INTERRUPT
    assert stopped.info["returned"] == "DPL incumbent"
    assert elapsed < 10 * after  # stopped soon after the Ctrl-C, not after the DP's seconds


def test_too_many_ideals_is_raised_before_solving() -> None:
    graph = parallel_chains(branches=3, length=5)
    ideals = count_ideals(graph)
    assert ideals == 6**3 + 2
    with pytest.raises(TooManyIdealsError, match="method='dpl'") as error:
        solve(graph, HARD, method="dp", memory_budget=10_000)
    assert error.value.count > error.value.limit >= 0
    with pytest.raises(TooManyIdealsError, match="'memory_budget'") as error:
        solve(parallel_chains(branches=4, length=12), HARD, method="dpl", memory_budget=2**12)
    assert "method='dpl'" not in str(error.value)
    # Enough budget for the ideals' tables but not for the lattice's edges as well.
    from exactplace.native import load

    _native = load()
    contraction = contract(graph)
    budget = _native.memory_estimate(contraction.num_units, HARD.accelerators, HARD.cpus, ideals, 0)
    assert dp_module.ideal_capacity(contraction, HARD, budget) == ideals
    with pytest.raises(TooManyIdealsError, match=f"{ideals} ideals") as error:
        solve(graph, HARD, method="dp", memory_budget=budget)
    assert error.value.count == ideals and error.value.limit < ideals


def test_no_chain_split_fits_is_infeasible_for_dp_only() -> None:
    # {0, 2} and {1} fit two accelerators of 4, but that split is not contiguous, and no chain split fits
    graph = Graph([Node(0, 1, 1, memory=2.0), Node(1, 1, 1, memory=3.0), Node(2, 1, 1, memory=2.0)], [(0, 1), (1, 2)])
    cluster = Cluster(accelerators=2, memory=4.0, cpus=0)
    dp = solve(graph, cluster, method="dp")
    assert dp.status is Status.INFEASIBLE and "contiguous=False" in dp.info["reason"]
    assert solve(graph, cluster, method="dpl").status is Status.NO_SOLUTION
    assert solve(graph, cluster, method="mip", contiguous=False).status is Status.OPTIMAL


@pytest.mark.parametrize(
    ("options", "cluster", "message"),
    [
        ({"gpipe": True}, Cluster(2, cpus=1), "'gpipe' parameter of solve must be False"),
        ({"overlap": "yes"}, Cluster(2, cpus=1), "'overlap' parameter"),
        ({"threads": 0}, Cluster(2, cpus=1), "'threads' parameter"),
        ({"threads": 1.5}, Cluster(2, cpus=1), "'threads' parameter"),
        ({"memory_budget": -1}, Cluster(2, cpus=1), "'memory_budget' parameter"),
        ({"memory_budget": math.inf}, Cluster(2, cpus=1), "'memory_budget' parameter"),
        ({"memory_budget": 1}, Cluster(2, cpus=1), "'memory_budget' parameter"),
    ],
)
@pytest.mark.parametrize("method", ["dp", "dpl"])
def test_bad_options_raise_parameter_errors(method: str, options: dict, cluster: Cluster, message: str) -> None:
    graph = Graph([Node(0, 1, 1), Node(1, 1, 1)], [(0, 1)])
    with pytest.raises(ParameterError, match=message):
        solve(graph, cluster, method=method, **options)


@pytest.mark.parametrize("cluster", [Cluster(2, memory=[4.0, 5.0], cpus=1), Cluster(2, speed=[1.0, 2.0], cpus=1)])
def test_dpl_refuses_a_heterogeneous_cluster_that_dp_takes(cluster: Cluster) -> None:
    graph = Graph([Node(0, 1, 1), Node(1, 1, 1)], [(0, 1)])
    with pytest.raises(ParameterError, match=r"homogeneous cluster.*methods 'dp' and 'mip' take heterogeneous"):
        solve(graph, cluster, method="dpl")
    assert solve(graph, cluster, method="dp").status is Status.OPTIMAL


def test_auto_prefers_dp_then_bb_then_mip_then_dpl_then_greedy(monkeypatch: pytest.MonkeyPatch) -> None:
    from exactplace.methods import bounded as bb_module
    from exactplace.methods import mip as mip_module
    from exactplace.methods.mip_settings import DEFAULT_MIP

    graph = parallel_chains(branches=2, length=3)
    assert solve(graph, HARD).method == "dp"
    # auto takes the registered class: its settings, no trial run (the estimate decides), 5 ideals in time
    monkeypatch.setattr(dp_module.DP, "settings", dataclasses.replace(
        DEFAULT_DP, pairs_per_ideal=DEFAULT_DP.auto_seconds / 5 / DEFAULT_DP.seconds_per_pair, trial_fraction=0.0))
    searched = solve(graph, HARD)  # too slow for the DP: the bounded search certifies in its trial
    assert searched.method == "bb" and searched.status is Status.OPTIMAL and "trial" in searched.info
    assert "the DP is expected to finish in 60 s" in searched.info["passed_over"]["dp"]
    # an option the search does not take (threads) passes over it
    assert solve(graph, HARD, threads=1).info["passed_over"]["bb"] == "takes no option 'threads'"
    # no time for a trial of the search either: the contiguous IP proves the same optimum
    monkeypatch.setattr(bb_module.BoundedSearch, "settings", dataclasses.replace(bb_module.DEFAULT_BB,
                                                                                trial_fraction=0.0))
    certified = solve(graph, HARD)
    assert certified.method == "mip" and certified.status is Status.OPTIMAL
    assert certified.objective == pytest.approx(solve(graph, HARD, method="dp").objective)
    assert certified.info["passed_over"]["bb"] == "its running time is not known in advance"
    monkeypatch.setattr(mip_module.MIP, "settings", dataclasses.replace(DEFAULT_MIP, max_nonzeros=10))
    assert solve(graph, HARD).method == "dpl"
    assert solve(graph, Cluster(2, memory=[1e9, 2e9], cpus=1)).method == "greedy"
    gpipe = solve(graph, HARD, gpipe=True)
    assert gpipe.method == "greedy"
    for name in ("dp", "dpl"):  # auto says why it passed over the DP
        assert "'gpipe' parameter of solve must be False" in gpipe.info["passed_over"][name]


def test_auto_takes_the_dp_when_it_is_expected_to_finish_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decision, not the clock: ideals x pairs_per_ideal x seconds_per_pair / threads against the time left."""
    graph = parallel_chains(branches=2, length=3)  # 17 ideals
    dp = registered_methods()["dp"]
    problem = Problem(graph, HARD, "throughput", options={"threads": 1})
    assert dp.unsuited(problem) is None
    dp = dp.with_settings(dataclasses.replace(  # no trial run: the estimate decides
        DEFAULT_DP, trial_fraction=0.0, seconds_per_pair=DEFAULT_DP.auto_seconds / 16 / DEFAULT_DP.pairs_per_ideal))
    # 16 ideals' worth in auto_seconds (no time limit): 17 is too many on one thread, not on two
    assert "more than 16 ideals" in dp.unsuited(Problem(graph, HARD, "throughput", options={"threads": 1}))
    assert dp.unsuited(Problem(graph, HARD, "throughput", options={"threads": 2})) is None
    # a time limit replaces auto_seconds: 10x the time, 10x the ideals
    later = time.monotonic() + 10 * DEFAULT_DP.auto_seconds
    assert dp.unsuited(Problem(graph, HARD, "throughput", deadline=later, options={"threads": 1})) is None
    assert dp.unsuited(Problem(graph, HARD, "throughput", deadline=math.inf, options={"threads": 1})) is None
    # the memory budget binds first: said so
    tight = Problem(graph, HARD, "throughput", deadline=math.inf, options={"threads": 1, "memory_budget": 4096})
    assert "memory budget of 4 KiB" in dp.unsuited(tight)


def test_auto_tries_the_dp_when_the_estimate_is_over_the_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """An estimate over the time left but tables in memory: a trial run for trial_fraction of the time
    decides. Finished: its answer, run once. Unfinished: the next method, saying why; not tried again."""
    graph = parallel_chains(branches=2, length=3)
    exact = solve(graph, HARD, method="dp")
    # every DP "expected" to take forever (auto takes the registered class, and its settings)
    monkeypatch.setattr(dp_module.DP, "settings", dataclasses.replace(DEFAULT_DP, seconds_per_pair=1e6))
    runs = []  # the DP's own solves (not DPL's, its incumbent)
    native_run = dp_module._NativeDP.run

    def counted(self: object, problem: Problem) -> object:
        runs.extend([1] if isinstance(self, dp_module.DP) else [])
        return native_run(self, problem)

    monkeypatch.setattr(dp_module._NativeDP, "run", counted)
    tried = solve(graph, HARD)
    assert tried.method == "dp" and tried.status is Status.OPTIMAL and len(runs) == 1
    assert tried.objective == pytest.approx(exact.objective)
    assert "finished in" in tried.info["trial"] and "expected to finish" in tried.info["trial"]

    def too_slow(self: object, problem: Problem) -> object:  # a DP that needs more than any trial
        runs.extend([1] if isinstance(self, dp_module.DP) else [])
        return dp_module._stopped(problem, Limit.TIME, {}, {})

    runs.clear()
    monkeypatch.setattr(dp_module._NativeDP, "run", too_slow)  # DP's own run, under the trial's cache lookup
    passed = solve(graph, HARD)  # the bounded search, whose trial certifies; the DP is not tried again
    assert passed.method == "bb" and passed.status is Status.OPTIMAL and len(runs) == 1
    assert passed.objective == pytest.approx(exact.objective)
    assert "a trial run did not finish in 6 s either" in passed.info["passed_over"]["dp"]
    with_limit = solve(graph, HARD, time_limit=20)
    assert "did not finish in 2 s either" in with_limit.info["passed_over"]["dp"]

    def interrupted(self: object, problem: Problem) -> object:  # Ctrl-C during the trial: that result
        return dp_module._stopped(problem, Limit.INTERRUPT, {}, {})

    monkeypatch.setattr(dp_module._NativeDP, "run", interrupted)
    stopped = solve(graph, HARD)
    assert stopped.method == "dp" and stopped.limit is Limit.INTERRUPT



def interrupted_run(self: object, problem: Problem) -> object:
    """A method's run that got Ctrl-C and handled it: its result says so."""
    return dp_module._stopped(problem, Limit.INTERRUPT, {}, {})


def test_a_ctrl_c_handled_by_dpl_as_the_dps_incumbent_stops_the_dp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dp_module.DPL, "run", interrupted_run)
    stopped = solve(slow_graph(), HARD, method="dp", time_limit=5)  # (seconds of DP, were the Ctrl-C lost)
    assert stopped.limit is Limit.INTERRUPT and stopped.status is Status.NO_SOLUTION


def test_a_ctrl_c_handled_by_the_warm_start_stops_the_method_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MIP's default start is the DP's (DPL's, greedy's): a Ctrl-C the DP handled stops the MIP, not only the
    DP, which would leave the MIP to run its time limit out."""
    monkeypatch.setattr(dp_module._NativeDP, "run", interrupted_run)
    stopped = solve(parallel_chains(branches=2, length=3), HARD, method="mip", contiguous=False, time_limit=30)
    assert stopped.method == "mip" and stopped.limit is Limit.INTERRUPT

def test_auto_validates_option_values_before_choosing() -> None:
    """A wrong value is an error about that value, not a fall-through to a method without the option."""
    graph = parallel_chains(branches=2, length=3)
    with pytest.raises(ParameterError, match=r"^The 'threads' parameter of solve must be an integer in \[1, 1024\]"):
        solve(graph, HARD, threads=0)
    with pytest.raises(ParameterError, match=r"'threads'.*Got 'many'"):
        solve(graph, HARD, threads="many")
    # a valid option that only the DPs take keeps auto on them
    assert solve(graph, HARD, threads=1).method == "dp"


def test_unsuited_and_check_explain_themselves() -> None:
    graph = parallel_chains(branches=2, length=3)
    methods = registered_methods()
    assert methods["dp"].unsuited(Problem(graph, HARD, "throughput")) is None
    methods["dp"].check(Problem(graph, Cluster(2, memory=[1.0, 2.0]), "throughput"))
    with pytest.raises(ParameterError, match="homogeneous"):
        methods["dpl"].check(Problem(graph, Cluster(2, memory=[1.0, 2.0]), "throughput"))


def test_preparation_is_shared_between_unsuited_and_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """auto's size check and the run contract the graph and count the ideals once."""
    from exactplace.core import contraction as contraction_module

    calls = {"contract": 0, "count": 0}
    real_contract, real_count = contraction_module.contract, dp_sizing.count_unit_ideals

    def counting_contract(*args: object, **kwargs: object) -> object:
        calls["contract"] += 1
        return real_contract(*args, **kwargs)

    def counting_count(*args: object, **kwargs: object) -> object:
        calls["count"] += 1
        return real_count(*args, **kwargs)

    import exactplace.core.problem as base

    monkeypatch.setattr(base, "contract", counting_contract)
    monkeypatch.setattr(dp_sizing, "count_unit_ideals", counting_count)
    p = solve(parallel_chains(branches=2, length=3), HARD)
    assert p.method == "dp" and calls == {"contract": 1, "count": 1}


@pytest.mark.parametrize(("method", "options"), [("dp", {"time_limit": 60}), ("mip", {"time_limit": 60})])
def test_problems_a_method_derives_share_the_contraction(
    monkeypatch: pytest.MonkeyPatch, method: str, options: dict
) -> None:
    """The DP's DPL incumbent (a replaced problem) and mip's default start (a new problem on the same
    cache) reuse the contraction instead of computing it again."""
    if method == "mip":
        pytest.importorskip("ortools")
    import exactplace.core.problem as base

    calls = []
    real_contract = base.contract
    monkeypatch.setattr(base, "contract", lambda *a, **k: calls.append(1) or real_contract(*a, **k))
    p = solve(parallel_chains(branches=2, length=3), HARD, method=method, **options)
    assert p.has_solution and len(calls) == 1


def test_threads_do_not_change_the_result() -> None:
    graph = parallel_chains(branches=3, length=6)
    one = solve(graph, HARD, method="dp", threads=1)
    two = solve(graph, HARD, method="dp", threads=2)
    assert one.objective == two.objective and one.info["ideals"] == two.info["ideals"] == 7**3 + 2
    assert two.info["threads"] in (1, 2)


def test_overlap_is_never_worse_and_scored_with_overlap() -> None:
    graph = parallel_chains(branches=3, length=4)
    plain = solve(graph, HARD, method="dp")
    overlapped = solve(graph, HARD, method="dp", overlap=True)
    assert overlapped.objective <= plain.objective
    assert overlapped.objective == max_load(graph, HARD, overlapped.device, overlap=True)


def test_memory_sums_never_cancel() -> None:
    """Regression (found by hypothesis): the walks once subtracted a node's memory after adding it,
    and (1 + 1e17) - 1e17 == 0, so a node holding 1 byte seemed to fit on a 0.5-byte accelerator."""
    nodes = [Node(i, 0.0, None) for i in range(6)] + [Node(6, 2.25, 0.0, memory=1.0)]
    nodes[3] = Node(3, 0.0, None, memory=1e17)
    edges = [(0, 1), (0, 2), (0, 3), (4, 2), (4, 3), (4, 5), (5, 1), (5, 2), (6, 0), (6, 1)]
    cluster = Cluster(accelerators=1, memory=0.5, cpus=1)
    placement = solve(Graph(nodes, edges), cluster, method="dp")
    assert placement.status is Status.OPTIMAL and placement.objective == 2.25
    assert placement.device.tolist() == [1] * 7


def _native_args(**changes: object) -> dict:
    """A valid two-unit request for exactplace._native.solve, as fields, with some of them replaced."""
    args = dict(
        units=2, cpu_time=[1.0, 1.0], acc_time=[1.0, 1.0], memory=[0.0, 0.0], supported=[1, 1],
        edge_src=[0], edge_dst=[1], group_cost=[0.5], group_source=[0], group_ptr=[0, 1], group_target=[1],
        accelerators=1, cpus=1, memory_cap=math.inf, overlap=False, threads=1, time_limit=math.inf, max_ideals=10,
    )
    return {**args, **changes}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"units": 0}, "at least one unit"),
        ({"cpu_time": [1.0]}, "one value per unit"),
        ({"cpu_time": [1.0, math.nan]}, "unit 1"),
        ({"memory": [-1.0, 0.0]}, "unit 0"),
        ({"acc_time": [math.inf, 1.0]}, "unit 0"),
        ({"group_ptr": [0, 2]}, "do not describe the groups"),
        ({"group_cost": [-0.5]}, "group 0"),
        ({"group_target": [0]}, "invalid target"),
        ({"group_source": [7]}, "malformed"),
        ({"edge_dst": [0]}, "self-loop"),
        ({"edge_src": [0, 1], "edge_dst": [1, 0]}, "cycle"),
        ({"accelerators": -1}, "devices"),
        ({"memory_cap": math.nan}, "memory cap"),
        ({"threads": 0}, "threads"),
        ({"max_ideals": 0}, "max_ideals"),
    ],
)
def test_native_solve_rejects_malformed_instances(changes: dict, message: str) -> None:
    from exactplace.native import load, request

    with pytest.raises(ValueError, match=message):
        load().solve(request(**_native_args(**changes)))


def test_native_solve_limits_ideals_and_accepts_unsupported_infinite_times() -> None:
    from exactplace.native import load, request

    _native = load()
    with pytest.raises(_native.TooManyIdeals) as error:
        _native.solve(request(**_native_args(edge_src=[], edge_dst=[], max_ideals=3)))  # 4 ideals
    assert error.value.args[1:] == (4, 3)
    out = _native.solve(request(**_native_args(acc_time=[math.inf, 1.0], supported=[0, 1])))
    assert out.status == _native.Status.optimal and out.value == 1.5 and out.device.tolist() == [1, 0]
    with pytest.raises((TypeError, ValueError)):
        request(**_native_args(cpu_time="fast"))
    with pytest.raises(TypeError, match="no field"):
        request(**_native_args(colour=[1, 2]))


def test_native_status_is_an_enum_and_a_stale_build_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """The binding reports its status as an enum, and a module of another ABI version is refused clearly."""
    from exactplace import _native, native
    from exactplace.core.errors import SolverUnavailableError

    assert {s.name for s in _native.Status.__members__.values()} == {"optimal", "infeasible", "time", "interrupt"}
    out = _native.solve(native.request(**_native_args(memory=[5.0, 5.0], memory_cap=1.0, cpus=0)))
    assert out.status == _native.Status.infeasible and out.device is None
    monkeypatch.setattr(_native, "abi_version", native.ABI_VERSION - 1)
    with pytest.raises(SolverUnavailableError,
                       match=rf"ABI version {native.ABI_VERSION - 1}.*needs version {native.ABI_VERSION}.*rebuild"):
        native.load()
    w = read_workload(workload_path("layer_bert24_inference"))
    with pytest.raises(SolverUnavailableError, match="ABI version"):
        solve(w, method="dpl")


def test_chain_order_is_the_depth_first_order() -> None:
    """DPL's order: ``0..n-1`` found without the walk when every edge ``i -> i + 1`` is there, and the
    depth-first order otherwise; the same as :func:`dfs_topological_order` either way."""
    from exactplace.core.contraction import dfs_topological_order

    rng = np.random.default_rng(5)
    for _ in range(100):
        n = int(rng.integers(2, 30))
        edges = {(int(a), int(b)) for a, b in rng.integers(0, n, (n, 2)) if a < b}
        if rng.random() < 0.5:
            edges |= {(i, i + 1) for i in range(n - 1)}
        graph = Graph([Node(i, 1.0, 1.0) for i in range(n)], sorted(edges))
        c = contract(graph)
        assert dp_module._chain_order(c).tolist() == dfs_topological_order(c.num_units, c.src, c.dst).tolist()
