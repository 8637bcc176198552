"""The steps every throughput IP solve takes, contiguous or not: its warm start, the solve of a built IP, its result.

:func:`warm_start` picks the start; :class:`IPSolve` is the one place a built IP goes to
:func:`~exactplace.solvers.program.solve_ip` (a race's sides included); :func:`finish` makes the result final
(the trace as the method knows it, :func:`best_known`; the bound proven before the solver; the evaluator's check
of the solver's objective, :func:`agree`); :func:`interrupted` is the result of a Ctrl-C before the solver ended.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from exactplace.core.errors import ExactplaceError
from exactplace.core.placement import Limit, Space, Status, TracePoint
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators import max_load
from exactplace.improvers.race import Racer
from exactplace.methods.registry import start_from
from exactplace.solvers.program import solve_ip

__all__ = ["IPSolve", "agree", "best_known", "default_start", "finish", "interrupted", "warm_start"]


def default_start(problem: Problem) -> tuple[np.ndarray | None, str]:
    """The default warm start: (devices, which method gave them): the DP's optimum when the DP suits the
    instance (as ``method="auto"`` judges it), else DPL, else greedy."""
    plain = Problem(problem.graph, problem.cluster, problem.objective, problem.deadline, problem.rel_gap, None,
                    {k: v for k, v in problem.options.items() if k == "overlap"}, cache=problem.cache)
    for name in ("dp", "dpl", "greedy"):
        device = start_from(name, plain)
        if device is not None:
            return device, name
    return None, "none"


def warm_start(problem: Problem, info: dict, timings: dict) -> np.ndarray | None:
    """The start the IP is solved from: the given ``warm_start``, else (``warm_start="auto"``) :func:`default_start`,
    else none; ``info["warm_start"]`` says which, ``timings["warm_start"]`` what the default took."""
    if problem.warm_start is not None:
        info["warm_start"] = "given"
        return problem.warm_start
    if not problem.default_start:
        return None
    clock = time.perf_counter()
    warm, origin = default_start(problem)
    timings["warm_start"] = time.perf_counter() - clock
    if warm is not None and problem.rules is not None and problem.rules.broken_by(warm, problem.cluster.accelerators):
        warm, origin = None, f"none ({origin}'s split breaks the device rules)"
    info["warm_start"] = origin
    return warm


@dataclass(frozen=True)
class IPSolve:
    """A built throughput IP handed to :func:`~exactplace.solvers.program.solve_ip` with the problem's log,
    progress and threads, writing into ``info`` and ``timings`` (a race's second side into its own)."""

    threads: int
    log: bool
    progress: bool
    space: Space
    info: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def __call__(self, ip: Any, on: Problem, solver: str, warm: np.ndarray | None,
                 cancel: threading.Event | None = None, workers: int | None = None, racer: Racer | None = None,
                 heard: Callable[[float], None] | None = None) -> tuple[MethodResult, Any]:
        """Solve ``ip`` by ``on``'s deadline on ``solver`` from ``warm`` (on ``workers`` threads, default all; until
        ``cancel`` is set; as ``racer`` says, in a race; ``heard``: told each incumbent). The result carries the
        replicas of its solution."""
        said, clocks = (self.info, self.timings) if racer is None else (racer.info, racer.timings)
        said.update(variables=ip.model.num_vars, rows=ip.model.num_rows, units=ip.data.units)
        result, out = solve_ip(
            on, ip, solver, warm=warm, threads=workers or self.threads,
            log=self.log and (racer is None or not racer.quiet),
            progress=racer.shown if racer is not None and racer.shown is not None else self.progress,
            space=self.space, info=said, timings=clocks, cancel=cancel,
            seed=0 if racer is None else racer.seed, heard=heard,
        )
        if result.device is not None and out.values is not None:
            result.replicas = ip.decode_replicas(out.values)
        return result, out


def best_known(points: Iterable[TracePoint]) -> list[TracePoint]:
    """The trace as the method knows it at each point: the lowest incumbent and the highest bound so far.

    Before its solver runs, the non-contiguous method holds the polished start and the packing bound; the
    solver's own trace restarts from the start it was given (its objective for it may differ by its
    rounding) and from its own bound, which may sit below the packing bound by its tolerances.

    >>> [(p.incumbent, p.bound) for p in best_known([TracePoint(0.1, None, 5.0), TracePoint(0.2, 9.0, 5.0),
    ...                                              TracePoint(0.3, 9.0000001, 4.9), TracePoint(0.4, 8.0, 6.0)])]
    [(None, 5.0), (9.0, 5.0), (9.0, 5.0), (8.0, 6.0)]
    """
    known: list[TracePoint] = []
    incumbent = bound = None
    for point in points:
        if point.incumbent is not None:
            incumbent = point.incumbent if incumbent is None else min(incumbent, point.incumbent)
        if point.bound is not None:
            bound = point.bound if bound is None else max(bound, point.bound)
        known.append(TracePoint(point.seconds, incumbent, bound))
    return known


def interrupted(warm: np.ndarray | None, lower: float | None, solver: str, space: Space,
                before: list[TracePoint], info: dict, timings: dict) -> MethodResult:
    """Ctrl-C before the solver ran (warm start, packing bound, polish, build, translation) or between the relay's
    legs: the start (CP-SAT's split, after its leg), if any, with ``L``'s lower bound ``lower`` if any."""
    status = Status.FEASIBLE if warm is not None else Status.NO_SOLUTION
    return MethodResult(warm, status, bound=lower if warm is not None else None, limit=Limit.INTERRUPT,
                        solver=solver, space=space, trace=best_known(before), timings=timings,
                        info={**info, "returned": "warm start" if warm is not None else "nothing"})


def finish(problem: Problem, result: MethodResult, out: Any, *, overlap: bool, gpipe: bool,
           before: Iterable[TracePoint] = (), beside: Iterable[TracePoint] = (), lower: float | None = None,
           lower_by: str | None = None, swapped: bool = False) -> MethodResult:
    """The solver's ``result`` made final: its trace merged with what was known ``before`` it ran and what ran
    ``beside`` it (:func:`best_known`); ``L``'s lower bound ``lower`` (proven by ``lower_by``) kept under its bound;
    the solver's objective checked against the evaluator's (:func:`agree`; not for a split ``swapped`` in from
    elsewhere); ``info["bound_by"]``: what proved the bound returned."""
    result.trace = best_known(sorted([*before, *result.trace, *beside], key=lambda point: point.seconds))
    if lower is not None and result.device is not None:  # L's lower bound holds whatever the solver proved
        result.bound = max(lower, result.bound if result.bound is not None else lower)
    if result.device is not None and out is not None and out.values is not None and not swapped:
        agree(problem, result, out, overlap, gpipe)
    if result.bound is not None:  # what proved the bound returned: what certifies the split, when the referee
        # finds them within rel_gap after the solver stopped (the polish's split taken at the end, say)
        result.info["bound_by"] = lower_by if lower is not None and result.bound <= lower else result.solver
    return result


def agree(problem: Problem, result: MethodResult, out: Any, overlap: bool, gpipe: bool) -> None:
    """The evaluator's objective never exceeds the solver's (beyond rounding): else the formulation is wrong.

    (The solver's may exceed the evaluator's: a load variable need not be tight at a non-optimal point.)
    """
    value = max_load(problem.graph, problem.cluster, result.device, overlap=overlap, gpipe=gpipe,
                     replicas=result.replicas)
    # CP-SAT's coefficients are rounded at about 2**-20 of the largest one (solvers/cpsat.py).
    tol = 1e-5 * max(1.0, abs(value))
    if not value <= out.objective + tol:
        raise ExactplaceError(
            f"Method 'mip' ({out.solver}): the evaluator's objective {value!r} exceeds the solver's "
            f"{out.objective!r} for its own solution. This is a bug in the formulation; please report it."
        )
    if result.bound is not None:
        # A dual bound from floating-point LPs may exceed the exact optimum by the solver's tolerances.
        result.bound = min(result.bound, value)
