"""Running a built integer program on a solver adapter, and turning what it returns into a method's result.

Every formulation's method goes this one way (throughput and latency alike): the formulation
builds a :class:`~exactplace.formulations.model.Model` with ``decode`` (values -> device array)
and ``encode`` (device array -> values, the warm start); :func:`solve_ip` runs an adapter from
the solver catalog with the problem's deadline, gap, threads, log and progress, maps its raw
status through :mod:`~exactplace.solvers.statuses` (inside the adapter), lowers the
bound by the formulation's ``bound_slack`` (what the model may overstate by its rounding), and
makes the :class:`~exactplace.methods.base.MethodResult` the referee then checks.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from exactplace.core.errors import ExactplaceError
from exactplace.core.placement import Space, Status, TracePoint
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators.feasibility import memory_summary

__all__ = ["progress_printer", "solve_ip"]


def _candidates(solver: str, model: Any, request: Any, info: dict) -> list[type]:
    """The adapters to try, in order: the one named; for ``"auto"``, every installed one of the catalog's order
    that does not decline the model (the first that declines none, when all do), saying why in ``info``."""
    from exactplace.solvers import AUTO_SOLVER, get_solver

    if solver != "auto":
        cls = get_solver(solver)
        cls.require()
        reason = cls.declines(model, request)
        if reason is not None:
            raise ExactplaceError(f"Solver {cls.name!r} declines this model: {reason}; choose another solver "
                                  f"(solver='auto' picks one that takes it).")
        return [cls]
    installed = [get_solver(name) for name in AUTO_SOLVER if get_solver(name).available()]
    if not installed:
        get_solver("auto").require()
    declined = {cls.name: reason for cls in installed if (reason := cls.declines(model, request)) is not None}
    if declined:
        info["solvers_declined"] = declined
    return [cls for cls in installed if cls.name not in declined] or installed[:1]


def progress_printer(every: float = 1.0, *, start: float | None = None) -> Callable[[TracePoint], None]:
    """A progress line on stderr: the best incumbent and bound so far and their gap, when the incumbent improves or
    ``every`` seconds (thread-safe: solves racing side by side may share one).

    A point without an incumbent (a bound proven before the solver, the solver's first report) shows the last one
    known, at first ``start``: the objective of the warm start the solver was given (what the method returns when
    the solver finds nothing better).
    """
    shown_at, best, bound = -math.inf, start, None  # the last line's time; the best incumbent and bound so far
    lock = threading.Lock()

    def show(point: TracePoint) -> None:
        nonlocal shown_at, best, bound
        with lock:
            if point.bound is not None and (bound is None or point.bound > bound):
                bound = point.bound
            improved = point.incumbent is not None and (best is None or point.incumbent < best)
            if not improved and point.seconds - shown_at < every:
                return
            if improved:
                best = point.incumbent
            shown_at = point.seconds
            inc = "-" if best is None else f"{best:.6g}"
            bnd = "-" if bound is None else f"{bound:.6g}"
            gap = "-" if best is None or bound is None or best == 0 else f"{100 * max(0.0, best - bound) / best:.2f}%"
            print(f"  {point.seconds:8.2f} s  incumbent {inc}  bound {bnd}  gap {gap}", file=sys.stderr, flush=True)
    return show


def solve_ip(problem: Problem, ip: Any, solver: str, *, warm: np.ndarray | None, threads: int, log: bool,
             progress: bool | Callable[[TracePoint], None], space: Space, info: dict, timings: dict,
             values: np.ndarray | None = None, cancel: threading.Event | None = None,
             seed: int = 0, heard: Callable[[float], None] | None = None) -> tuple[MethodResult, Any]:
    """Solve a built IP (``ip.model``, ``ip.decode``, ``ip.encode``, ``ip.bound_slack``) and make the MethodResult.

    ``warm``: the start's devices (returned when the solver finds nothing better); its model
    values are ``values`` when the caller encoded it, else ``ip.encode(warm)``. Returns the
    result and the adapter's raw :class:`~exactplace.solvers.Result` (bound corrected). Both traces
    are timed from ``problem.started`` (``solve``'s start), so they include what the method did before.
    ``cancel``: set it to stop the solve as Ctrl-C does (the result's limit is then ``INTERRUPT``); ``seed``: the
    solver's random seed (0: its default). ``progress``: print progress lines (:func:`progress_printer`), or the
    printer to give them to (one shared by solves racing side by side). ``heard``: called with each incumbent the
    solver reports (its objective, as the trace has it): say, :func:`~exactplace.core.interrupt.sets_at_most` on
    ``cancel``, to stop at the first a bound proven outside the IP certifies.
    """
    from exactplace.solvers import Request, solve_model

    if values is None and warm is not None:
        values = ip.encode(warm)
        if values is None:
            info["warm_start"] = f"{info.get('warm_start', 'given')} (outside the IP's space, not used)"
    slack = float(ip.bound_slack)
    shown = progress if callable(progress) else (
        progress_printer(start=None if values is None else ip.model.objective_value(values)) if progress else None)
    # The adapter times its trace from its own start; the method's trace is timed from solve()'s start.
    offset = time.monotonic() - problem.started

    def corrected(point: TracePoint) -> TracePoint:
        return TracePoint(point.seconds + offset, point.incumbent,
                          None if point.bound is None else point.bound - slack)

    def reported(point: TracePoint) -> None:
        point = corrected(point)
        if heard is not None and point.incumbent is not None:
            heard(point.incumbent)
        if shown is not None:
            shown(point)

    request = Request(
        deadline=problem.deadline, rel_gap=problem.rel_gap, threads=threads, warm_start=values,
        log=(lambda line: print(line, file=sys.stderr, flush=True)) if log else None,
        progress=reported if shown is not None or heard is not None else None, cancel=cancel,
        seed=seed,
    )
    candidates = _candidates(solver, ip.model, request, info)
    cls = candidates[0]
    out = solve_model(ip.model, cls.name, request)
    for other in candidates[1:]:
        # A solver that failed (its process died, its point broke the model) hands the time left to the next.
        if out.failure is None or request.remaining() <= 0 or (cancel is not None and cancel.is_set()):
            break
        cls = other
        out = solve_model(ip.model, cls.name, request)
    out = dataclasses.replace(out, bound=None if out.bound is None else out.bound - slack,
                              trace=[corrected(point) for point in out.trace])
    timings["solve"] = out.seconds
    info.update(raw_status=out.raw_status, solver_objective=out.objective)
    if out.values is None:
        if out.status is Status.INFEASIBLE:
            info["reason"] = (f"no {space} split fits the memory, support and colour classes "
                              f"({memory_summary(problem.graph, problem.cluster)})")
            return MethodResult(None, Status.INFEASIBLE, solver=cls.name, space=space, timings=timings,
                                info=info), out
        if warm is not None:
            info["returned"] = "warm start"
            return MethodResult(warm.copy(), Status.FEASIBLE, bound=out.bound, limit=out.limit, solver=cls.name,
                                space=space, trace=out.trace, timings=timings, info=info), out
        return MethodResult(None, Status.NO_SOLUTION, limit=out.limit, solver=cls.name, space=space,
                            trace=out.trace, timings=timings, info=info), out
    device = ip.decode(out.values)
    return MethodResult(device, out.status, bound=out.bound, limit=out.limit, solver=cls.name, space=space,
                        trace=out.trace, timings=timings, info=info), out
