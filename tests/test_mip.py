"""The max-load IP (``method="mip"``) against the brute force and the DP, on every solver.

Contiguous IP: its space is the DP's (``tests/oracle.py`` notion ``units``), so on random
small instances contiguous IP = DP = brute force. Non-contiguous IP: notion ``any``.
``gpipe`` (the DP does not take it) is checked against the brute force alone. The solver's
objective never falls below the evaluator's (``method="mip"`` raises if it does), and the
bound is a valid lower bound.
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from unittest.mock import patch

import numpy as np
import pytest
from exactplace.formulations.throughput import contiguous_ip, noncontiguous_ip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima
from strategies import any_graphs, banded_graph, clusters, placements, training_graphs

from exactplace import (
    Cluster,
    ExactplaceError,
    Graph,
    Node,
    ParameterError,
    SolverUnavailableError,
    Space,
    Status,
    Workload,
    check_feasibility,
    max_load,
    read_workload,
    solve,
    workload_path,
)
from exactplace.core.contraction import contract
from exactplace.core.placement import Limit
from exactplace.methods.mip import MIP
from exactplace.methods.mip_settings import DEFAULT_MIP
from exactplace.solvers import SOLVERS, get_solver
from exactplace.solvers.statuses import STATUS_TABLE, Outcome, interpret

pytest.importorskip("exactplace._native")

INSTALLED = [name for name in SOLVERS if get_solver(name).available() and name != "gurobi"]
FAST = [s for s in ("highs", "cpsat") if s in INSTALLED]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def homogeneous() -> st.SearchStrategy[Cluster]:
    return clusters(min_accelerators=1, max_accelerators=3, max_cpus=2)


def approx(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def tuned(**fields: object) -> object:
    """``method="mip"`` run with ``fields`` of its settings changed, within the ``with`` block."""
    return patch.object(MIP, "settings", dataclasses.replace(DEFAULT_MIP, **fields))


@SETTINGS
@given(any_graphs(max_nodes=6), homogeneous(), st.booleans(), st.sampled_from(FAST))
def test_contiguous_ip_equals_dp_and_brute_force(graph: Graph, cluster: Cluster, overlap: bool, solver: str) -> None:
    optima = brute_force_optima(graph, cluster, "throughput", overlap=overlap)
    p = solve(graph, cluster, method="mip", solver=solver, rel_gap=0.0, warm_start=None, overlap=overlap)
    if optima.units is None:
        assert p.status in (Status.INFEASIBLE,) and p.device is None
        return
    dp = solve(graph, cluster, method="dp", overlap=overlap)
    assert p.status is Status.OPTIMAL and p.space is Space.CHAIN
    assert approx(p.objective, optima.units) and approx(dp.objective, p.objective)
    assert p.bound is not None and 0 <= p.objective - p.bound <= 1e-5 * max(1.0, p.objective)
    assert all(b.bound is None or a.bound is None or a.bound <= b.bound + 1e-9 for a, b in zip(p.trace, p.trace[1:]))


@SETTINGS
@given(any_graphs(max_nodes=6), homogeneous(), st.sampled_from(FAST))
def test_noncontiguous_ip_equals_brute_force(graph: Graph, cluster: Cluster, solver: str) -> None:
    optima = brute_force_optima(graph, cluster, "throughput")
    p = solve(graph, cluster, method="mip", solver=solver, contiguous=False, rel_gap=0.0, warm_start=None)
    if optima.any is None:
        assert p.status is Status.INFEASIBLE
        return
    assert p.status is Status.OPTIMAL and p.space is Space.ANY
    assert approx(p.objective, optima.any)


# No max_examples: the profile decides (50 by default; HYPOTHESIS_PROFILE=thorough runs 2000, past the
# bar of 500 random tiny graphs).
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_graphs(max_nodes=6), homogeneous(), st.booleans())
def test_default_options_are_optimal_within_the_default_gap(graph: Graph, cluster: Cluster, contiguous: bool) -> None:
    """What a user gets from ``solve(..., method="mip")``: default solver, rel_gap, time limit and start."""
    optima = brute_force_optima(graph, cluster, "throughput")
    expected = optima.units if contiguous else optima.any
    p = solve(graph, cluster, method="mip", contiguous=contiguous)
    if expected is None:
        assert p.status is Status.INFEASIBLE and p.device is None
        return
    assert p.objective >= expected - 1e-9 * max(1.0, expected)  # never below the optimum of its space
    if p.status is Status.OPTIMAL:
        assert p.objective <= expected * (1 + 1e-4) + 1e-9


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(training_graphs(max_forward=3), homogeneous(), st.booleans(), st.booleans(), st.sampled_from(FAST))
def test_gpipe_matches_brute_force(graph: Graph, cluster: Cluster, overlap: bool, contiguous: bool,
                                   solver: str) -> None:
    optima = brute_force_optima(graph, cluster, "throughput", gpipe=True, overlap=overlap)
    expected = optima.units if contiguous else optima.any
    p = solve(graph, cluster, method="mip", solver=solver, contiguous=contiguous, rel_gap=0.0,
              gpipe=True, overlap=overlap)
    if expected is None:
        assert p.status is Status.INFEASIBLE
        return
    assert p.status is Status.OPTIMAL and approx(p.objective, expected)


@pytest.mark.parametrize("contiguous", [True, False])
def test_every_installed_solver_finds_the_same_optimum(contiguous: bool) -> None:
    graph = Graph([Node(i, 2.0 + i % 3, 1.0 + (i % 2), comm=0.5, memory=1.0) for i in range(6)],
                  [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (3, 5)])
    cluster = Cluster(2, memory=3.0, cpus=1)
    values = {s: solve(graph, cluster, method="mip", solver=s, contiguous=contiguous, rel_gap=0.0,
                       warm_start=None).objective for s in INSTALLED}
    assert len(INSTALLED) >= 2
    assert all(approx(v, values[INSTALLED[0]]) for v in values.values()), values


def test_auto_solver_of_the_noncontiguous_ip_follows_the_accelerator_count() -> None:
    """solver='auto': HiGHS for contiguous=False on at most highs_max_accelerators accelerators, else the
    first of AUTO_SOLVER; the contiguous IP always the latter. The same optimum either way."""
    most = DEFAULT_MIP.highs_max_accelerators
    graph = Graph([Node(i, 2.0 + i % 3, 1.0 + (i % 2), comm=0.5, memory=1.0) for i in range(6)],
                  [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (3, 5)])
    few, many = Cluster(most, cpus=1), Cluster(most + 1, cpus=1)
    first = get_solver("auto").name
    for cluster, expected in ((few, "highs"), (many, first)):
        p = solve(graph, cluster, method="mip", contiguous=False, rel_gap=0.0)
        assert p.solver == expected and p.status is Status.OPTIMAL
        assert ("solver" in p.info) == (expected == "highs" != first)
        pinned = solve(graph, cluster, method="mip", contiguous=False, solver=first, rel_gap=0.0)
        assert pinned.solver == first and approx(pinned.objective, p.objective)
    assert solve(graph, few, method="mip").solver == first


# No max_examples: the profile decides (HYPOTHESIS_PROFILE=thorough: 2000).
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_graphs(max_nodes=5), clusters(min_accelerators=4, max_accelerators=4, max_cpus=1), st.booleans())
def test_relay_from_cpsat_to_highs_keeps_the_optimum(graph: Graph, cluster: Cluster, started: bool) -> None:
    """solver='auto' on more than highs_max_accelerators accelerators hands CP-SAT's split and bound to HiGHS
    after cpsat_leg_seconds (here none): the optimum is still brute force's, whichever leg proved it. With a
    start (the DP's), CP-SAT's leg hands HiGHS a split, and polish runs beside HiGHS (two threads)."""
    optima = brute_force_optima(graph, cluster, "throughput")
    with tuned(cpsat_leg_seconds=0.0):
        p = solve(graph, cluster, method="mip", contiguous=False, rel_gap=0.0, warm_start="auto" if started else None,
                  time_limit=30, threads=2)
    if optima.any is None:
        assert p.status is Status.INFEASIBLE
        return
    assert p.status is Status.OPTIMAL and p.solver in ("cpsat", "cpsat+highs")
    assert approx(p.objective, optima.any)


def test_relay_hands_cpsats_split_and_bound_to_highs() -> None:
    """A CP-SAT leg that runs out of time: HiGHS goes on from its split and bound within the time limit, the
    result says both solvers, and the trace is one run (incumbents falling, bounds rising)."""
    graph, cluster = banded_graph(), Cluster(4, cpus=1)
    with tuned(cpsat_leg_seconds=0.05):
        p = solve(graph, cluster, method="mip", contiguous=False, rel_gap=0.0, time_limit=4, threads=2)
        alone = solve(graph, cluster, method="mip", contiguous=False, rel_gap=0.0, time_limit=4, threads=1)
    assert p.solver == "cpsat+highs" and p.info["relay"]["cpsat"]["status"] == "feasible"
    # Polish ran beside HiGHS on the second thread (not with one): the result is the better split of the two.
    beside = p.info["relay"]["polish"]
    assert beside["start"] == pytest.approx(p.info["relay"]["cpsat"]["value"]) and beside["value"] <= beside["start"]
    assert p.objective <= beside["value"] * (1 + 1e-9)
    assert not beside.get("taken") or approx(p.objective, beside["value"])
    assert alone.solver == "cpsat+highs" and "polish" not in alone.info["relay"]
    assert "then highs" in p.info["solver"] and p.wall_seconds < 6
    assert p.status in (Status.OPTIMAL, Status.FEASIBLE) and p.bound is not None and p.bound <= p.objective
    incumbents = [t.incumbent for t in p.trace if t.incumbent is not None]
    bounds = [t.bound for t in p.trace if t.bound is not None]
    assert incumbents == sorted(incumbents, reverse=True) and bounds == sorted(bounds)
    assert math.isclose(incumbents[-1], p.objective, rel_tol=1e-6)
    unpatched = solve(graph, cluster, method="mip", contiguous=False, rel_gap=0.0, time_limit=4)
    assert unpatched.solver == "cpsat" and "relay" not in unpatched.info  # 4 s: no time for a second leg


def test_warm_start_is_used_and_reported() -> None:
    graph = Graph([Node(i, 3.0, 1.0, comm=0.25) for i in range(5)], [(0, 1), (1, 2), (2, 3), (3, 4)])
    cluster = Cluster(2, cpus=1)
    auto = solve(graph, cluster, method="mip", solver="highs")
    assert auto.info["warm_start"] == "dp" and auto.status is Status.OPTIMAL
    given_start = solve(graph, cluster, method="mip", solver="cpsat", warm_start=auto)
    assert given_start.info["warm_start"] == "given" and approx(given_start.objective, auto.objective)
    none = solve(graph, cluster, method="mip", solver="cpsat", warm_start=None)
    assert "warm_start" not in none.info


def test_time_limit_returns_feasible_with_limit_and_trace() -> None:
    graph, cluster = banded_graph(), Cluster(4, cpus=1)
    for solver in FAST:
        p = solve(graph, cluster, method="mip", solver=solver, contiguous=False, rel_gap=0.0, time_limit=0.5)
        assert p.has_solution and p.wall_seconds < 5
        if p.limit is not None:
            assert p.limit is Limit.TIME and p.status is Status.FEASIBLE
        incumbents = [t.incumbent for t in p.trace if t.incumbent is not None]
        assert incumbents == sorted(incumbents, reverse=True)


def test_bad_solver_and_missing_solver() -> None:
    graph, cluster = Graph([Node(0, 1.0, 1.0)], []), Cluster(1, cpus=1)
    with pytest.raises(ParameterError, match="'solver'"):
        solve(graph, cluster, method="mip", solver="cplex")
    if not get_solver("gurobi").available():
        with pytest.raises(SolverUnavailableError, match="pip install gurobipy"):
            solve(graph, cluster, method="mip", solver="gurobi")


def test_status_table_never_reads_a_limit_as_optimal() -> None:
    for solver, table in STATUS_TABLE.items():
        for raw, outcome in table.items():
            if outcome in (Outcome.TIME, Outcome.INTERRUPT, Outcome.ITERATION, Outcome.MEMORY, Outcome.FEASIBLE):
                for has in (True, False):
                    status, limit = interpret(solver, raw, has_solution=has)
                    assert status is (Status.FEASIBLE if has else Status.NO_SOLUTION)
                    assert outcome is Outcome.FEASIBLE or limit is not None
    assert interpret("highs", "kTimeLimit", has_solution=True) == (Status.FEASIBLE, Limit.TIME)
    assert interpret("cpsat", "UNKNOWN/time", has_solution=False) == (Status.NO_SOLUTION, Limit.TIME)


def test_highspy_and_ortools_load_in_one_process(tmp_path: Path) -> None:
    # Both ship libhighs.so.1; mismatched releases fail at import (pyproject pins them together).
    code = "import highspy\nfrom ortools.sat.python import cp_model\nfrom ortools.linear_solver import pywraplp\n"
    for order in (code, "\n".join(reversed(code.strip().split("\n")))):
        subprocess.run([sys.executable, "-c", order], check=True, cwd=tmp_path)


@pytest.mark.parametrize("solver", FAST)
def test_ctrl_c_returns_the_incumbent(solver: str) -> None:
    import _thread
    import threading
    import time

    from exactplace import read_workload, workload_path

    # Non-contiguous, at gap 0: minutes to prove for the solver; not for the set bound beside HiGHS, which can prove
    # the split within the 1.5 s (seen in CI: optimal, no interrupt), so it is off here.
    w = read_workload(workload_path("layer_bert24_inference"))
    timer = threading.Timer(1.5, _thread.interrupt_main)
    timer.start()
    try:
        start = time.monotonic()
        p = solve(w, method="mip", solver=solver, contiguous=False, rel_gap=0.0, set_bound=False)
        elapsed = time.monotonic() - start
    finally:
        timer.cancel()
    assert elapsed < 10
    assert p.limit is Limit.INTERRUPT and p.status is Status.FEASIBLE and p.has_solution
    # (no bound when Ctrl-C came before the solver started, on a very loaded machine: the start is returned)
    assert p.bound is None or p.bound <= p.objective


def test_progress_line_keeps_the_incumbent_known_through_points_without_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    from exactplace.core.placement import TracePoint
    from exactplace.solvers.program import progress_printer

    show = progress_printer(start=12.0)  # the warm start's objective
    show(TracePoint(0.5, None, 9.0))
    show(TracePoint(2.0, 10.0, 9.5))
    show(TracePoint(4.0, None, 9.9))  # a bound alone: the incumbent stays
    first, second, third = capsys.readouterr().err.splitlines()
    assert "incumbent 12 " in first and "gap 25.00%" in first
    assert "incumbent 10 " in second and "gap 5.00%" in second
    assert "incumbent 10 " in third and "gap 1.00%" in third
    progress_printer()(TracePoint(0.5, None, 9.0))
    assert "incumbent -  bound 9  gap -" in capsys.readouterr().err


def test_cli_solver_options_and_plan(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from exactplace.cli.main import main

    out = tmp_path / "plan.json"  # type: ignore[operator]
    code = main(["solve", "layer_bert24_inference", "--method", "mip", "--solver", "cpsat",
                 "--option", "warm_start=none", "--option", "threads=1", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0 and "method mip (cpsat): optimal" in captured.out
    assert "incumbent" in captured.err and "bound" in captured.err  # the progress line
    plan = json.loads(out.read_text())  # type: ignore[attr-defined]
    assert plan["solver"] == "cpsat" and plan["space"] == "chain" and plan["trace"]
    assert "warm_start" not in plan["info"]
    incumbents = [t[1] for t in plan["trace"] if t[1] is not None]
    bounds = [t[2] for t in plan["trace"] if t[2] is not None]
    assert incumbents == sorted(incumbents, reverse=True) and bounds == sorted(bounds)
    assert main(["solve", "layer_bert24_inference", "--method", "mip", "--option", "contiguous"]) == 2
    assert main(["solve", "layer_bert24_inference", "--method", "mip", "--option", "contiguous=maybe"]) == 2
    assert "'contiguous'" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(any_graphs(max_nodes=6), homogeneous(), st.booleans(), st.booleans(), st.data())
def test_encoded_placements_satisfy_the_model_at_their_value(graph: Graph, cluster: Cluster, overlap: bool,
                                                             gpipe: bool, data: st.DataObject) -> None:
    """Every feasible placement of the IP's space is a point of the model with the evaluator's objective:
    the formulation cuts off nothing it should keep, and its load rows are exact."""
    gpipe = gpipe and graph.is_training
    device = data.draw(placements(graph, cluster, colocated=True, supported=True))
    if check_feasibility(graph, cluster, device):
        return
    value = max_load(graph, cluster, device, overlap=overlap, gpipe=gpipe)
    for ip in (noncontiguous_ip(graph, cluster, overlap=overlap, gpipe=gpipe),
               contiguous_ip(graph, cluster, contract(graph, cluster.memory_cap), overlap=overlap, gpipe=gpipe)):
        x = ip.encode(device)
        if x is None:
            assert ip.space == "chain"  # not a chain split
            continue
        assert ip.model.violation(x) <= 1e-9
        assert approx(ip.model.objective_value(x), value)
        assert np.array_equal(ip.decode(x)[graph.color.argsort()] < cluster.accelerators,
                              device[graph.color.argsort()] < cluster.accelerators)


@pytest.mark.parametrize(("solver", "marker"), [("highs", "MIP has"), ("cpsat", "CP-SAT")])
def test_log_streams_the_solver_log_to_stderr(solver: str, marker: str, capfd: pytest.CaptureFixture[str]) -> None:
    graph, cluster = Graph([Node(0, 2.0, 1.0, comm=0.5), Node(1, 2.0, 1.0)], [(0, 1)]), Cluster(2, cpus=1)
    solve(graph, cluster, method="mip", solver=solver, log=True, warm_start=None)
    captured = capfd.readouterr()
    assert marker in captured.err and marker not in captured.out
    solve(graph, cluster, method="mip", solver=solver, warm_start=None)
    assert marker not in "".join(capfd.readouterr())


@pytest.mark.shared
def test_cbc_does_not_cut_off_the_optimum(shared_workloads: Path) -> None:
    # CBC 2.10.3 with two-step MIR cuts claimed the DP's 17.7899 optimal here (see solvers/cbc.py);
    # the non-contiguous optimum is 17.7147 (HiGHS, SCIP and CP-SAT prove it).
    w = read_workload(shared_workloads / "throughput" / "layer_bert24_inference.json")
    p = solve(w, method="mip", solver="cbc", contiguous=False, rel_gap=1e-4, time_limit=5)
    if p.status is Status.OPTIMAL:
        assert p.objective <= 17.7147 * (1 + 1e-4)
    assert p.bound is None or p.bound <= 17.7147


def test_a_point_that_breaks_the_model_is_dropped() -> None:
    from exactplace.formulations.model import Kind, Model

    from exactplace.solvers.base import Request, Result, Solver

    model = Model()
    x = model.add_vars(2, ub=1, kind=Kind.INTEGER)
    model.add_rows("cover", 1, lb=[1.0], rows=[0, 0], cols=x, vals=[1.0, 1.0])
    model.minimize(x, [1.0, 1.0])

    class Broken(Solver):  # claims optimal at a point that covers nothing (as CBC did at a time limit)
        name, module, install = "broken", "numpy", "numpy"

        def run(self, model: Model, request: Request) -> Result:
            return Result(Status.OPTIMAL, None, np.zeros(2), 0.0, 0.0, "Optimal", self.name, 0.0)

    out = Broken().solve(model, Request())
    assert out.status is Status.NO_SOLUTION and out.values is None and out.bound is None
    assert "breaks the model" in out.raw_status


@pytest.mark.parametrize("solver", ["scip", "cbc"])
def test_a_solver_without_callbacks_times_its_one_trace_point_from_the_start(solver: str) -> None:
    g = Graph([Node(i, 10.0, 1.0 + i % 3, comm=0.5) for i in range(12)], [(i, i + 1) for i in range(11)])
    p = solve(g, Cluster(3, cpus=1), method="mip", solver=solver, contiguous=False, warm_start=None, rel_gap=0.0)
    assert p.trace and p.trace[-1].seconds >= p.timings["solve"] * 0.5


def test_a_failing_cbc_process_leaves_the_warm_start(monkeypatch: pytest.MonkeyPatch) -> None:
    import pulp

    def fail(self: object, problem: object, **kwargs: object) -> None:
        raise pulp.PulpSolverError("Pulp: Error while trying to execute cbc")

    monkeypatch.setattr(pulp.PULP_CBC_CMD, "actualSolve", fail)
    g = Graph([Node(i, 10.0, 1.0, comm=0.5) for i in range(4)], [(i, i + 1) for i in range(3)])
    p = solve(g, Cluster(2, cpus=1), method="mip", solver="cbc", contiguous=False)
    assert p.status is Status.FEASIBLE and p.info["returned"] == "warm start"
    assert p.info["raw_status"].startswith("cbc failed")


@pytest.mark.parametrize("short_by", [0.0, 0.5e-4, 2e-4])
def test_a_bound_within_rel_gap_after_the_solver_stopped_certifies(short_by: float) -> None:
    """A solver stopped by its time limit whose split and bound (its own, or one proven before it) lie within rel_gap
    of each other: the result is optimal within rel_gap, says what certified it, and hit no limit; further apart it
    stays feasible at the time limit. (The relay met this: the polish's split taken at the end, 1.9e-5 above the set
    bound, reported feasible.)"""
    from exactplace.core.problem import MethodResult
    from exactplace.methods import throughput_steps
    graph = Graph([Node(i, 3.0, 1.0, comm=0.25) for i in range(5)], [(0, 1), (1, 2), (2, 3), (3, 4)])
    cluster = Cluster(2, cpus=1)
    optimum = brute_force_optima(graph, cluster, "throughput").any
    device = solve(graph, cluster, method="mip", solver="highs", contiguous=False, rel_gap=0.0).device

    def stopped(on, ip, solver, *, warm, info, timings, **_):  # the solver's run: its split, a bound, the time limit
        return (MethodResult(device, Status.FEASIBLE, bound=optimum * (1 - short_by), limit=Limit.TIME, solver=solver,
                             space=Space.ANY, info=info, timings=timings), SimpleNamespace(values=None))

    with patch.object(throughput_steps, "solve_ip", stopped):  # (no set bound beside it: its own bound would join in)
        p = solve(graph, cluster, method="mip", solver="highs", contiguous=False, rel_gap=1e-4, packing_bound=False,
                  polish=False, set_bound=False)
    assert approx(p.objective, optimum) and p.bound == pytest.approx(optimum * (1 - short_by))
    if short_by <= 1e-4:
        assert p.status is Status.OPTIMAL and p.limit is None and p.info["certified_by"] == "highs"
    else:
        assert p.status is Status.FEASIBLE and p.limit is Limit.TIME and "certified_by" not in p.info


def test_highs_takes_the_ip_without_a_floor_and_the_bound_still_holds() -> None:
    """The relay hands the set bound to HiGHS as ``L``'s lower bound: HiGHS's IP is built without it
    (``Capabilities.objective_floor``: a floor blinds its branching; CP-SAT's keeps it), and the result's bound is
    still at least the bound handed on."""
    from exactplace.formulations import throughput

    built = throughput.noncontiguous_ip
    floors: list[float | None] = []

    def recording(*args: object, **options: object) -> object:
        floors.append(options.get("lower_bound"))  # type: ignore[arg-type]
        return built(*args, **options)

    assert get_solver("cpsat").capabilities.objective_floor and not get_solver("highs").capabilities.objective_floor
    with tuned(cpsat_leg_seconds=0.05), patch.object(throughput, "noncontiguous_ip", recording):
        p = solve(banded_graph(), Cluster(4, cpus=1), method="mip", contiguous=False, rel_gap=0.0, time_limit=4,
                  threads=1)
    handed = p.info["set_bound"]["bound"]  # (the set bound runs before HiGHS's leg; its bound is HiGHS's lower bound)
    assert p.solver == "cpsat+highs" and handed is not None and handed > 0 and "solve" in p.timings
    assert floors[-1] is None and p.bound is not None and p.bound >= handed - 1e-9


def test_a_solve_stops_at_an_incumbent_a_bound_outside_the_ip_certifies() -> None:
    """``solve_ip(heard=sets_at_most(value, event))`` sets the event at the first incumbent at most ``value``; as
    ``cancel`` it stops the solve there, which would otherwise run on (here: HiGHS to the exact optimum of
    layer_bert24_inference within a minute)."""
    import threading
    import time

    from exactplace import workload_path
    from exactplace.core.interrupt import sets_at_most
    from exactplace.core.problem import Problem
    from exactplace.solvers.program import solve_ip
    w = read_workload(workload_path("layer_bert24_inference"))
    ip = noncontiguous_ip(w.graph, w.cluster)
    start = solve(w, method="dp").device
    problem = Problem(w.graph, w.cluster, "throughput", time.monotonic() + 60, 0.0, None, {})
    certified, target = threading.Event(), max_load(w.graph, w.cluster, start)
    result, out = solve_ip(problem, ip, "highs", warm=None, threads=1, log=False, progress=False, space=Space.ANY,
                           info={}, timings={}, cancel=certified, heard=sets_at_most(target, certified))
    assert certified.is_set() and out.limit is Limit.INTERRUPT and result.device is not None
    assert result.status is Status.FEASIBLE and max_load(w.graph, w.cluster, result.device) <= target * (1 + 1e-6)


def never_on_a_cpu_chain(cpus: int, comm: float) -> Workload:
    """An 8-node chain on 3 accelerators whose CPU times are a sentinel (1e9: "never on a CPU"), as public
    benchmark graphs state it."""
    times = [5.0, 3.0, 7.0, 4.0, 6.0, 2.0, 8.0, 5.0]
    nodes = [Node(i, cpu_time=1e9, acc_time=t, memory=1.0, comm=comm) for i, t in enumerate(times)]
    return Workload(Graph(nodes, [(i, i + 1) for i in range(7)]), Cluster(3, 1e12, cpus))


@pytest.mark.parametrize("comm", [0.5, 0.0])
def test_a_sentinel_cpu_time_without_cpus_builds_no_cpu_rows_and_cpsat_certifies(comm: float) -> None:
    """No CPU core: no CPU load rows, and the load's cap leaves the CPU times out, so CP-SAT's scale fits the
    loads (its point broke the model by 5% and its bound was 24 against 32 when the 1e9 times set the scale)."""
    w = never_on_a_cpu_chain(0, comm)
    ip = contiguous_ip(w.graph, w.cluster, contract(w.graph))
    assert not any("CPU load" in block.name for block in ip.model.row_blocks)
    cpsat, highs = (solve(w, method="mip", solver=s) for s in ("cpsat", "highs"))
    assert cpsat.status is highs.status is Status.OPTIMAL and "solver_failures" not in cpsat.info
    assert cpsat.objective == pytest.approx(highs.objective) and cpsat.bound == pytest.approx(highs.bound, rel=1e-4)


def test_cpsat_declines_a_model_it_would_round_past_the_gap_and_auto_takes_another() -> None:
    """With a CPU core the sentinel times stay in the model: CP-SAT's integer form would round the loads by more
    than the gap, so it declines up front; named, it is an error saying why; 'auto' runs the next solver."""
    w = never_on_a_cpu_chain(1, 0.5)
    with pytest.raises(ExactplaceError, match="'cpsat' declines this model: its integer scaling rounds"):
        solve(w, method="mip", solver="cpsat")
    chosen = solve(w, method="mip")
    assert chosen.status is Status.OPTIMAL and chosen.solver != "cpsat"
    assert "cpsat" in chosen.info["solvers_declined"]
    assert chosen.objective == pytest.approx(solve(w, method="mip", solver="highs").objective)


def test_cpsat_takes_a_model_whose_start_costs_nothing() -> None:
    """A start of objective 0 (every node free on the CPU) is measured against the smallest load a row holds,
    not against 0: a rounding of 1e-9 cannot reorder placements whose loads differ by 0.25 (a case hypothesis
    drew, with gpipe)."""
    free = [Node(i, 0.0, None, color=200 + i) for i in range(2)] + [Node(2, 0.0, 0.25, comm=1.0, color=202)]
    backward = [Node(1000 + i, 0.0, None, color=200 + i, backward=True) for i in range(3)]
    graph = Graph(free + backward, [(0, 1000), (1, 1001), (2, 1002), (0, 1001), (0, 1002), (1, 1000), (1, 1002),
                                    (2, 1000)])
    cluster = Cluster(1, cpus=1)
    for contiguous in (True, False):
        p = solve(graph, cluster, method="mip", solver="cpsat", contiguous=contiguous, rel_gap=0.0, gpipe=True)
        assert p.status is Status.OPTIMAL and p.objective == 0.0


@pytest.mark.parametrize("name", ["layer_bert24_inference", "layer_bert24_training", "op_bert3_inference"])
def test_cpsat_declines_neither_ip_of_a_shipped_workload(name: str) -> None:
    from exactplace.solvers import Request

    w = read_workload(workload_path(name))
    start = solve(w, method="greedy").device
    for ip in (contiguous_ip(w.graph, w.cluster, contract(w.graph, w.cluster.memory_cap)),
               noncontiguous_ip(w.graph, w.cluster)):
        values = ip.encode(start)
        assert values is not None
        assert get_solver("cpsat").declines(ip.model, Request(warm_start=values)) is None


@pytest.mark.parametrize("seconds", [0.05, 0.5])
def test_cpsat_stopped_short_of_a_proof_states_a_limit(seconds: float) -> None:
    """Within its time limit CP-SAT ends short of a proof only at that limit, however early its presolve checks it:
    the result says so (its status FEASIBLE or no solution, with a limit), never an unexplained end."""
    import time

    from exactplace.solvers import Request, solve_model

    w = read_workload(workload_path("op_bert3_inference"))
    ip = contiguous_ip(w.graph, w.cluster, contract(w.graph, w.cluster.memory_cap))
    out = solve_model(ip.model, "cpsat", Request(deadline=time.monotonic() + seconds, isolate=False))
    if out.status is not Status.OPTIMAL:
        assert out.limit is not None, out.raw_status
