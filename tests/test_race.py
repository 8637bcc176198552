"""Two seeds of one IP racing, and a solve with a bound beside it (``exactplace.improvers.race``): who stops whom,
what the result keeps, and both inside ``method="mip"`` against brute force."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima
from strategies import any_graphs, clusters

from exactplace import Cluster, Graph, Node, solve
from exactplace.core.placement import Limit, Space, Status, TracePoint
from exactplace.core.problem import MethodResult
from exactplace.evaluators import max_load
from exactplace.improvers.race import DEFAULT_RACE, beside_bound, race

#: The second side's seed.
RACE_SEED = DEFAULT_RACE.second_seed

def split(value: float) -> np.ndarray:
    """A one-node 'split' whose value (below) is ``value``: the race compares splits only through ``value``."""
    return np.array([value])


def result(status: Status, value: float | None, bound: float | None, limit: Limit | None = None,
           at: float = 1.0) -> tuple[MethodResult, SimpleNamespace]:
    device = None if value is None else split(value)
    trace = [TracePoint(at, value, bound)]
    return (MethodResult(device, status, bound=bound, limit=limit, solver="highs", space=Space.ANY, trace=trace,
                         timings={"solve": at}, info={"reason": "none fits"} if status is Status.INFEASIBLE else {}),
            SimpleNamespace(values=device))


def solves(first: object, second: object) -> tuple[object, dict]:
    """A ``solve(seed, stop)`` whose sides return ``first`` / ``second``: a tuple at once, or, for a callable, what
    it returns when the side's stop is set (within 10 s, else the test fails); records which sides were stopped."""
    stopped: dict[int, bool] = {}

    def solve(seed: int, stop: threading.Event) -> tuple[MethodResult, SimpleNamespace]:
        side = first if seed == 0 else second
        if callable(side):
            stopped[seed] = stop.wait(10)
            return side()
        stopped[seed] = stop.is_set()
        return side

    return solve, stopped


def value(device: np.ndarray) -> float:
    return float(device[0])


def test_the_second_seed_deciding_stops_the_first_and_its_split_and_bound_are_kept() -> None:
    solve, stopped = solves(lambda: result(Status.FEASIBLE, 10.0, 8.0, Limit.INTERRUPT, at=2.0),
                            result(Status.OPTIMAL, 9.0, 8.95, at=1.0))
    got, out, record = race(solve, value)
    assert stopped[0] and got.status is Status.OPTIMAL and got.limit is None
    assert value(got.device) == 9.0 and got.bound == 8.95 and value(out.values) == 9.0
    assert record["decided"] == [RACE_SEED] and record["split_from"] == RACE_SEED
    assert record["second"] == {"status": "optimal", "bound": 8.95, "seconds": 1.0, "value": 9.0}
    assert [point.seconds for point in got.trace] == [1.0, 2.0]  # one trace, both sides, in time order


def test_the_first_deciding_stops_the_second_whose_worse_split_is_left() -> None:
    solve, stopped = solves(result(Status.OPTIMAL, 9.0, 8.95), lambda: result(Status.FEASIBLE, 9.5, 9.0,
                                                                              Limit.INTERRUPT))
    got, out, record = race(solve, value)
    assert stopped[RACE_SEED] and got.status is Status.OPTIMAL and value(got.device) == 9.0
    assert got.bound == 9.0  # the higher bound holds for the same IP
    assert record["decided"] == [0] and "split_from" not in record and value(out.values) == 9.0


def test_neither_deciding_keeps_the_time_limit_with_the_better_of_each() -> None:
    solve, _ = solves(result(Status.FEASIBLE, 9.0, 7.0, Limit.TIME), result(Status.FEASIBLE, 9.5, 8.0, Limit.TIME))
    got, _, record = race(solve, value)
    assert got.status is Status.FEASIBLE and got.limit is Limit.TIME and record["decided"] == []
    assert value(got.device) == 9.0 and got.bound == 8.0


def test_ctrl_c_stops_both_and_keeps_what_they_found() -> None:
    """The first side returns interrupted (run_interruptibly caught the Ctrl-C): the second is stopped, and the
    result stays interrupted, with the second's split when better."""
    solve, stopped = solves(result(Status.FEASIBLE, 9.0, 7.0, Limit.INTERRUPT),
                            lambda: result(Status.FEASIBLE, 8.5, 7.5, Limit.INTERRUPT))
    got, _, _ = race(solve, value)
    assert stopped[RACE_SEED] and got.status is Status.FEASIBLE and got.limit is Limit.INTERRUPT
    assert value(got.device) == 8.5 and got.bound == 7.5


def test_the_second_proving_infeasible_decides() -> None:
    solve, stopped = solves(lambda: result(Status.NO_SOLUTION, None, None, Limit.INTERRUPT),
                            result(Status.INFEASIBLE, None, None))
    got, _, record = race(solve, value)
    assert stopped[0] and got.status is Status.INFEASIBLE and got.device is None and got.limit is None
    assert got.info["reason"] == "none fits" and record["decided"] == [RACE_SEED]


def test_the_second_failing_costs_only_its_draw() -> None:
    def solve(seed: int, stop: threading.Event) -> tuple[MethodResult, SimpleNamespace]:
        if seed != 0:
            raise RuntimeError("solver crashed")
        return result(Status.FEASIBLE, 9.0, 7.0, Limit.TIME)

    got, _, record = race(solve, value)
    assert got.status is Status.FEASIBLE and value(got.device) == 9.0
    assert record["second"] == "failed (solver crashed)"


def test_an_error_in_the_first_side_stops_the_second_and_is_raised() -> None:
    solve, stopped = solves(None, lambda: result(Status.FEASIBLE, 9.0, 7.0, Limit.INTERRUPT))

    def failing(seed: int, stop: threading.Event) -> tuple[MethodResult, SimpleNamespace]:
        if seed == 0:
            raise RuntimeError("build failed")
        return solve(seed, stop)

    with pytest.raises(RuntimeError, match="build failed"):
        race(failing, value)
    assert stopped[RACE_SEED]


def test_the_mip_races_highs_only_with_a_core_to_spare() -> None:
    """HiGHS on the non-contiguous IP, nothing beside it (no packing bound known: polish cannot aim), two threads:
    the set bound takes the idle core where it applies (``info["set_bound"]["beside"]``), else (``set_bound=False``,
    or no start to aim at) two seeds race and ``info["race"]`` says what the second did; one thread, ``race=False`` or
    CP-SAT: neither."""
    graph = Graph([Node(i, 3.0 + i % 4, 1.0 + i % 3, comm=0.25) for i in range(8)],
                  [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5), (4, 6), (5, 7), (6, 7)])
    cluster = Cluster(3, cpus=1)
    optimum = brute_force_optima(graph, cluster, "throughput").any
    options = {"method": "mip", "contiguous": False, "rel_gap": 0.0, "packing_bound": False}
    beside = solve(graph, cluster, solver="highs", threads=2, **options)
    assert beside.status is Status.OPTIMAL and beside.objective == pytest.approx(optimum)
    assert beside.info["set_bound"]["beside"] == "solver" and "race" not in beside.info
    for raced in (solve(graph, cluster, solver="highs", threads=2, set_bound=False, **options),
                  solve(graph, cluster, solver="highs", threads=2, warm_start=None, **options)):
        assert raced.status is Status.OPTIMAL and raced.objective == pytest.approx(optimum)
        assert raced.info["race"]["seeds"] == [0, RACE_SEED] and raced.info["race"]["decided"]
    for alone in (solve(graph, cluster, solver="highs", threads=1, **options),
                  solve(graph, cluster, solver="highs", threads=2, race=False, **options),
                  solve(graph, cluster, solver="cpsat", threads=2, **options)):
        assert "race" not in alone.info and alone.objective == pytest.approx(optimum)
        assert not isinstance(alone.info.get("set_bound"), dict)


def test_the_bound_beside_stops_the_solve_and_the_solve_stops_the_bound() -> None:
    """``beside_bound``: a prover that decides stops the solve (its event set, as by Ctrl-C) and hears the solver's
    incumbents; a solve that ends stops the prover; a prover that fails costs only its help."""
    def solve(stop: threading.Event, heard) -> tuple[MethodResult, str]:
        heard(7.0)
        heard(8.0)  # (not better: the best stays 7)
        assert stop.wait(10.0), "the prover's decision did not stop the solve"
        return result(Status.FEASIBLE, 7.0, None, Limit.INTERRUPT)[0], "raw"

    def decide(best, stop: threading.Event) -> tuple[bool, float]:
        while best() > 7.0 and not stop.wait(0.01):
            pass
        return True, best()

    got, out, found = beside_bound(solve, decide, start=9.0)
    assert out == "raw" and found == 7.0 and got.limit is Limit.INTERRUPT

    ended = threading.Event()

    def wait_for_stop(best, stop: threading.Event) -> tuple[bool, str]:
        assert stop.wait(10.0), "the solve's end did not stop the prover"
        ended.set()
        return False, "stopped"

    got, out, found = beside_bound(lambda stop, heard: (result(Status.OPTIMAL, 5.0, 5.0)[0], "raw"), wait_for_stop,
                                   start=9.0)
    assert ended.is_set() and found == "stopped" and got.status is Status.OPTIMAL

    def fail(best, stop: threading.Event) -> tuple[bool, str]:
        raise RuntimeError("pricing failed")

    got, out, found = beside_bound(lambda stop, heard: (result(Status.OPTIMAL, 5.0, 5.0)[0], "raw"), fail, start=9.0)
    assert isinstance(found, RuntimeError) and got.status is Status.OPTIMAL


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_graphs(max_nodes=6), clusters(min_accelerators=1, max_accelerators=3, max_cpus=2),
       st.sampled_from([0.0, 0.05]))
def test_a_solve_with_the_bound_beside_is_brute_forces_optimum(graph: Graph, cluster: Cluster, rel_gap: float) -> None:
    """HiGHS with the set bound on the idle core (the default start to aim at): within ``rel_gap`` of brute force's
    optimum, the bound never above it, and a split the set bound certified within ``rel_gap`` of its bound."""
    optima = brute_force_optima(graph, cluster, "throughput")
    p = solve(graph, cluster, method="mip", solver="highs", contiguous=False, rel_gap=rel_gap, threads=2,
              packing_bound=False)
    if optima.any is None:
        assert p.status is Status.INFEASIBLE and p.device is None
        return
    assert p.status is Status.OPTIMAL and p.objective <= optima.any / (1.0 - rel_gap) + 1e-6
    assert p.bound <= optima.any * (1 + 1e-6) + 1e-9
    if p.info.get("certified_by") == "set_bound":
        assert p.info["set_bound"]["outcome"] == "target refuted"
        assert p.objective - p.bound <= rel_gap * p.objective + 1e-6


def _never_deciding(problem, ip, solver, *, warm, cancel, info, timings, heard=None,
                    **_) -> tuple[MethodResult, SimpleNamespace]:
    """A solve that reports its start and waits to be stopped (a search slower than the bound beside it)."""
    if heard is not None and warm is not None:
        heard(max_load(problem.graph, problem.cluster, warm))
    cancel.wait(60.0)
    status = Status.FEASIBLE if warm is not None else Status.NO_SOLUTION
    return (MethodResult(None if warm is None else warm.copy(), status, limit=Limit.INTERRUPT, solver="highs",
                         space=Space.ANY, info=info, timings=timings), SimpleNamespace(values=None))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_graphs(max_nodes=6), clusters(min_accelerators=2, max_accelerators=3, max_cpus=2),
       st.sampled_from([0.01, 0.05]))
def test_the_bound_beside_certifies_a_split_the_solver_never_decides(graph: Graph, cluster: Cluster,
                                                                     rel_gap: float) -> None:
    """With a solver that never decides, the set bound beside it (branching included) is what certifies: the split
    within ``rel_gap`` of brute force's optimum, the bound never above it; always where memory cannot bind (the
    relaxation leaves memory out, so a branch's integral sets may not fit, and the branching stops there). (At
    ``rel_gap=0`` it cannot: it refutes thresholds below the best split, never the split's own value.)"""
    optima = brute_force_optima(graph, cluster, "throughput")
    if optima.any is None or optima.any == 0.0 or not cluster.is_homogeneous:
        return  # (nothing to aim at: a zero optimum comes back from the start; the relaxation needs one machine type)
    with mock.patch("exactplace.methods.throughput_steps.solve_ip", _never_deciding):
        p = solve(graph, cluster, method="mip", solver="highs", contiguous=False, rel_gap=rel_gap, threads=2,
                  packing_bound=False, time_limit=5)
    assert p.bound is None or p.bound <= optima.any * (1 + 1e-6) + 1e-9
    if graph.memory.sum() <= cluster.memory_cap and optima.any >= 1e-3:  # (loads far below the tolerances: no proof)
        assert p.status is Status.OPTIMAL and p.info["certified_by"] == "set_bound", p.info
    if p.status is Status.OPTIMAL:
        if optima.any >= 1e-3:  # (loads of 1e-204 are within the gap's absolute tolerance of any bound: no refutation)
            assert p.info["set_bound"]["outcome"] == "target refuted"
        assert p.objective <= optima.any / (1.0 - rel_gap) + 1e-6
    said = p.info.get("set_bound")
    if isinstance(said, dict) and said["outcome"] == "target refuted":  # it stopped the solver: no Ctrl-C to report
        assert p.limit is not Limit.INTERRUPT


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_graphs(max_nodes=6), clusters(min_accelerators=1, max_accelerators=3, max_cpus=2))
def test_a_raced_solve_is_brute_forces_optimum(graph: Graph, cluster: Cluster) -> None:
    """Whichever seed decides, and whichever split is kept, the optimum is brute force's (memory limits,
    unsupported nodes, several CPUs: the strategies')."""
    optima = brute_force_optima(graph, cluster, "throughput")
    p = solve(graph, cluster, method="mip", solver="highs", contiguous=False, rel_gap=0.0, threads=2,
              packing_bound=False, warm_start=None)
    if optima.any is None:
        assert p.status is Status.INFEASIBLE and p.device is None
        return
    assert p.status is Status.OPTIMAL and p.objective == pytest.approx(optima.any, rel=1e-6, abs=1e-9)
    assert "race" in p.info
