"""Two seeds of one IP racing (``exactplace.backends.race``): who stops whom, what the result keeps, and the race
inside ``method="mip"`` against brute force."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from oracle import brute_force_optima
from strategies import any_graphs, clusters

from exactplace import Cluster, Graph, Node, solve
from exactplace.backends.race import RACE_SEED, race
from exactplace.core.placement import Limit, Space, Status, TracePoint
from exactplace.methods.base import MethodResult


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
    two seeds race and ``info["race"]`` says what the second did; one thread, ``race=False`` or CP-SAT: no race."""
    graph = Graph([Node(i, 3.0 + i % 4, 1.0 + i % 3, comm=0.25) for i in range(8)],
                  [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (4, 5), (4, 6), (5, 7), (6, 7)])
    cluster = Cluster(3, cpus=1)
    optimum = brute_force_optima(graph, cluster, "throughput").any
    options = {"method": "mip", "contiguous": False, "rel_gap": 0.0, "packing_bound": False}
    raced = solve(graph, cluster, solver="highs", threads=2, **options)
    assert raced.status is Status.OPTIMAL and raced.objective == pytest.approx(optimum)
    assert raced.info["race"]["seeds"] == [0, RACE_SEED] and raced.info["race"]["decided"]
    for alone in (solve(graph, cluster, solver="highs", threads=1, **options),
                  solve(graph, cluster, solver="highs", threads=2, race=False, **options),
                  solve(graph, cluster, solver="cpsat", threads=2, **options)):
        assert "race" not in alone.info and alone.objective == pytest.approx(optimum)


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
