"""The latency program: ``solve(objective="latency", method="mip")``.

Runs :mod:`exactplace.formulations.latency` (paper Fig. 3, and Fig. 4 with the ``q``
option) on OR-Tools CP-SAT (``solver="auto"`` or ``"cpsat"``), or translated into the MIP
layer's neutral model on HiGHS, SCIP, CBC or Gurobi. By default (``warm_start="auto"``) it
starts from the best of several placements scored by the latency evaluator: all-CPU, greedy,
the linear latency DP (:mod:`exactplace.heuristics.linear_latency`), the max-load DP split
(when the DP suits the instance) and DPL; a given ``warm_start`` is one more candidate,
``warm_start=None`` starts from nothing. The start is a complete solution of the model (a
CP-SAT hint, a MIP start) and its latency the makespan's upper bound.

With ``q=1`` (and unless ``path_bound=False``) it first computes the path DP's lower bound
(:mod:`exactplace.backends.latency_bound`, within a tenth of the time): when the best start is
within ``rel_gap`` of it, that start is returned at once, optimal, without a solver
(``solver == info["certified_by"] == "path_bound"``); otherwise the bound is the model's
floor (a row on the makespan) and the reported bound is at least it. On the published layer
graphs it certifies the start in under a second.

Without a ``time_limit`` the solve still stops after
:data:`exactplace.backends.mip.DEFAULT_TIME_LIMIT` seconds and says so in
``info["time_limit"]``; it returns the best placement with the solver's bound and gap. The
result's bound covers the model's space: at most ``q`` subgraphs per accelerator
(``Space.SUBGRAPHS`` with the result's ``q``; CPU nodes are free).

Examples
--------
>>> from exactplace import read_workload, solve, workload_path
>>> w = read_workload(workload_path("layer_bert24_inference"))
>>> p = solve(w, objective="latency", method="mip", time_limit=30, threads=2)
>>> p.status.value, round(p.objective, 3), p.info["certified_by"]
('optimal', 92.406, 'path_bound')
>>> p = solve(w, objective="latency", method="mip", time_limit=30, threads=2, path_bound=False)
>>> p.status.value, round(p.objective, 3), p.solver
('optimal', 92.406, 'cpsat')
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from typing import Any

import numpy as np

from exactplace.core.errors import ExactplaceError, PlacementError, check_param
from exactplace.core.placement import Limit, Space, Status, TracePoint
from exactplace.evaluators.latency import latency
from exactplace.methods.base import MethodResult, Problem, usable_cpus

__all__ = ["check_latency", "solve_latency", "warm_start_candidates"]

#: CP-SAT workers when ``threads`` is not given: its portfolio needs several even on two cores.
DEFAULT_WORKERS = 8

def check_latency(solver: str, options: dict) -> None:
    """Reject what the latency program cannot do, naming the option."""
    check_param("contiguous" not in options, "contiguous", "solve",
                "left out for objective 'latency' (use q: q=1 is contiguous, q>=2 allows q subgraphs "
                "per accelerator)", options.get("contiguous"))


def warm_start_candidates(problem: Problem) -> dict[str, np.ndarray]:
    """Placements to start from, by name: the user's, all-CPU, greedy, the linear latency DP
    (:mod:`exactplace.heuristics.linear_latency`), the max-load DP split and DPL."""
    from exactplace.backends.dp import DP, DPL
    from exactplace.heuristics.greedy import Greedy
    from exactplace.heuristics.linear_latency import linear_latency_splits

    graph, cluster = problem.graph, problem.cluster
    found: dict[str, np.ndarray] = {}
    if problem.warm_start is not None:
        found["user"] = np.asarray(problem.warm_start)
    if not problem.default_start:
        return found
    if cluster.cpus:
        found["cpu"] = np.full(graph.n, cluster.accelerators, dtype=np.int64)
    greedy = Greedy().run(problem)
    if greedy.device is not None:
        found["greedy"] = greedy.device
    for i, split in enumerate(linear_latency_splits(graph, cluster, problem.contraction)):
        found[f"linear_dp{i}" if i else "linear_dp"] = split
    remaining = math.inf if problem.deadline is None else problem.deadline - time.monotonic()
    throughput = Problem(graph, cluster, "throughput",
                         deadline=None if math.isinf(remaining) else time.monotonic() + max(remaining, 0) / 5,
                         cache=problem.cache)
    for name, cls in (("maxload_dp", DP), ("dpl", DPL)):
        try:
            cls.check(throughput)
            if not cls.available() or cls.unsuited(throughput) is not None:
                continue
            result = cls().run(throughput)
        except ExactplaceError:
            continue
        if result.device is not None:
            found[name] = result.device
    return found


def _best_start(problem: Problem, lm: Any, candidates: dict[str, np.ndarray]) -> tuple[str, np.ndarray, dict] | None:
    """The candidate of least latency that lies in the model's space, with its hint."""
    from exactplace.formulations.latency import hint_values

    scored = []
    for name, device in candidates.items():
        try:
            value = latency(problem.graph, problem.cluster, device)
        except PlacementError:  # deadlocks under the §4 semantics
            continue
        if math.isfinite(value):
            scored.append((value, name, device))
    for value, name, device in sorted(scored, key=lambda s: s[0]):
        hint = hint_values(lm, device)
        if hint is not None:
            return name, device, {"value": value, "hint": hint}
    return None


def _pieces(graph: Any, cluster: Any, device: np.ndarray) -> int:
    """Most contiguous pieces (the evaluator's rule) any accelerator's node set falls into."""
    from exactplace.evaluators.latency import contiguous_pieces

    return max((int(contiguous_pieces(graph, device == d).max(initial=0)) for d in range(cluster.accelerators)),
               default=0)


def _path_bound(problem: Problem, deadline: float, info: dict, timings: dict) -> float | None:
    """The path DP's lower bound (:mod:`exactplace.backends.latency_bound`), within a tenth of the time left."""
    from exactplace.backends.latency_bound import path_bound

    clock = time.monotonic()
    found = path_bound(problem.graph, problem.cluster, deadline=clock + max(deadline - clock, 0.0) / 10)
    timings["path_bound"] = time.monotonic() - clock
    if found is None or not math.isfinite(found.value):
        info["path_bound"] = "none (too many ideals, or out of time)" if found is None else "none (infinite)"
        return None
    # The DP adds floats in another order than the evaluator (relative error about n * 1e-16):
    # keep a hair below its value, well inside the 1e-12 by which a gap counts as closed.
    value = found.value * (1 - 1e-13)
    info["path_bound"] = value
    return value


def solve_latency(problem: Problem, q: int = 1, threads: int | None = None, log: bool = False,
                  progress: bool = False, solver_name: str = "auto", use_path_bound: bool = True,
                  info: dict | None = None) -> MethodResult:
    """Solve the latency program for ``problem``; see the module docstring."""
    from ortools.sat.python import cp_model

    from exactplace.backends.mip import _progress_printer
    from exactplace.formulations.latency import build_model, decode, prepare

    graph, cluster = problem.graph, problem.cluster
    clock = time.monotonic()
    info = {**(info or {}), "q": q}
    deadline = problem.deadline if problem.deadline is not None else math.inf
    timings: dict[str, float] = {}

    candidates = warm_start_candidates(problem)
    timings["warm_start"] = time.monotonic() - clock
    values = {}
    for name, device in candidates.items():
        try:
            values[name] = latency(graph, cluster, device)
        except PlacementError:
            values[name] = None
    info["warm_start_candidates"] = values

    inside = {name: values[name] for name, device in candidates.items()
              if values[name] is not None and math.isfinite(values[name]) and _pieces(graph, cluster, device) <= q}
    space = Space.SUBGRAPHS
    best = min(inside, key=inside.__getitem__) if inside else None
    try:
        lower = _path_bound(problem, deadline, info, timings) if q == 1 and use_path_bound else None
    except KeyboardInterrupt:  # Ctrl-C in the (pure Python) DP: the best start is still a placement
        info.update(interrupted=True, returned="warm start")
        return MethodResult(candidates[best] if best else None, Status.FEASIBLE if best else Status.NO_SOLUTION,
                            limit=Limit.INTERRUPT, space=space, timings=timings, info=info)
    if lower is not None and best is not None:
        name, value = best, inside[best]
        if value - lower <= problem.rel_gap * value + 1e-12 * value:  # the start is certified: no solver needed
            info.update(warm_start=name, warm_start_latency=value, certified_by="path_bound")
            trace = [TracePoint(time.monotonic() - clock, value, lower)]
            if log:
                print(f"path bound {lower:.6g} certifies the warm start {name!r} (latency {value:.6g}); "
                      "no solver run", file=sys.stderr, flush=True)
            if progress:
                from exactplace.backends.mip import _progress_printer

                _progress_printer()(trace[0])
            # A gap within the DP's float noise is no gap: report the start as its own bound.
            bound = value if value - lower <= 1e-12 * value else lower
            return MethodResult(candidates[name], Status.OPTIMAL, bound=bound, solver="path_bound",
                                space=space, trace=trace, timings=timings, info=info)

    built = time.monotonic()
    finite = [v for v in values.values() if v is not None and math.isfinite(v)]
    data = prepare(graph, cluster, q, upper=min(finite) if finite else None, lower=lower)
    # The best candidate's latency bounds every time window [head, UB]: in model units its
    # schedule is at most UB * scale plus one unit per block (the one-unit block minimum).
    upper = math.ceil(min(inside.values()) * data.scale) + cluster.accelerators * q + 1 if inside else None
    lm = build_model(data, upper=upper)
    start = _best_start(problem, lm, candidates)
    if upper is not None and (start is None or start[2]["hint"][lm.makespan] > upper):
        lm = build_model(data)  # the horizon came from a start the model rejects (memory rounding): none
        start = _best_start(problem, lm, candidates)
    if start is not None:
        name, device, found = start
        hint = found["hint"]
        lm.model.Add(lm.makespan <= hint[lm.makespan])
        for var, value in hint.items():
            lm.model.AddHint(var, value)
        info["warm_start"] = name
        info["warm_start_latency"] = found["value"]
    timings["build"] = time.monotonic() - built
    info.update(model=lm.stats, scale=data.scale)
    if solver_name not in ("auto", "cpsat"):
        return _solve_translated(problem, lm, solver_name, start, info, timings, space, threads, log, progress)

    solver = cp_model.CpSolver()
    params = solver.parameters
    remaining = deadline - time.monotonic()
    params.max_time_in_seconds = max(remaining, 0.01)
    params.num_workers = int(threads or max(DEFAULT_WORKERS, usable_cpus()))
    params.relative_gap_limit = problem.rel_gap
    params.log_search_progress = bool(log)
    if log:
        params.log_to_stdout = False
        solver.log_callback = lambda line: print(line, file=sys.stderr, flush=True)
    scale, slack = data.scale, lm.bound_slack
    lower = data.lower_bound
    trace: list[TracePoint] = []
    state = {"incumbent": start[2]["value"] if start else None, "bound": lower}

    show = _progress_printer() if progress else None

    def record(incumbent: float | None, bound: float | None) -> None:
        if incumbent is not None and (state["incumbent"] is None or incumbent < state["incumbent"]):
            state["incumbent"] = incumbent
        if bound is not None and bound > state["bound"]:
            state["bound"] = bound
        point = TracePoint(time.monotonic() - clock, state["incumbent"], state["bound"])
        if trace and (trace[-1].incumbent, trace[-1].bound) == (point.incumbent, point.bound):
            return
        trace.append(point)
        if show is not None:
            show(point)

    class Progress(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            record(self.ObjectiveValue() / scale, (self.BestObjectiveBound() - slack) / scale)

    if start is not None:
        record(start[2]["value"], lower)
    solver.best_bound_callback = lambda b: record(None, (b - slack) / scale)
    solving = time.monotonic()
    try:
        status = solver.Solve(lm.model, Progress())
    except KeyboardInterrupt:  # CP-SAT stops itself on SIGINT; this covers the Python side
        status = cp_model.UNKNOWN
        info["interrupted"] = True
    timings["solve"] = time.monotonic() - solving
    info["cpsat_status"] = solver.StatusName(status)

    if status == cp_model.MODEL_INVALID:
        raise ExactplaceError(f"CP-SAT rejected the latency model: {lm.model.Validate()}. This is a bug.")
    # CP-SAT stops itself on Ctrl-C (SIGINT) and returns what it has: a stop well before the
    # time limit without a proof can only be that.
    stopped_early = (status in (cp_model.FEASIBLE, cp_model.UNKNOWN)
                     and solver.WallTime() < params.max_time_in_seconds - 1)
    limit = Limit.INTERRUPT if info.get("interrupted") or stopped_early else None
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        device = decode(lm, solver.Value)
        model_value = solver.ObjectiveValue() / scale
        value = latency(graph, cluster, device)
        bound = max(lower, (solver.BestObjectiveBound() - slack) / scale)
        bound = min(bound, value)
        info["model_latency"] = model_value
        # The model rounds times down to its units: it may understate by that much, never more.
        tolerance = (graph.n + 2 * len(graph.group_cost) + slack + 1) / scale
        if model_value < value - tolerance - 1e-9 * value:
            info["model_mismatch"] = (model_value, value)
            warnings.warn(f"Latency model value {model_value} is below the evaluator's {value} for its own "
                          "placement; please report this bug.", RuntimeWarning, stacklevel=2)
        gap = (value - bound) / value if value > 0 else 0.0
        optimal = gap <= problem.rel_gap + 1e-12 or status == cp_model.OPTIMAL
        if limit is None and not optimal:
            limit = Limit.TIME
        record(value, bound)
        return MethodResult(device, Status.OPTIMAL if optimal and limit is None else Status.FEASIBLE,
                            bound=bound, limit=limit, solver="cpsat", space=space, trace=trace,
                            timings=timings, info=info)
    if status == cp_model.INFEASIBLE:
        info["reason"] = (f"no placement with at most {q} subgraph(s) per accelerator fits the memory, support "
                          "and colocation constraints without accelerators waiting on each other")
        return MethodResult(None, Status.INFEASIBLE, solver="cpsat", space=space, timings=timings, info=info)
    # Unknown: stopped before the solver found anything; the warm start is still a placement.
    limit = limit or Limit.TIME
    if start is not None:
        info["returned"] = "warm start"
        return MethodResult(start[1], Status.FEASIBLE, bound=min(lower, start[2]["value"]), limit=limit,
                            solver="cpsat", space=space, trace=trace, timings=timings, info=info)
    return MethodResult(None, Status.NO_SOLUTION, limit=limit, solver="cpsat", space=space, trace=trace,
                        timings=timings, info=info)


def _solve_translated(problem: Problem, lm: Any, solver: str, start: tuple | None, info: dict, timings: dict,
                      space: Space, threads: int | None, log: bool, progress: bool) -> MethodResult:
    """The program on a MIP solver (HiGHS, SCIP, CBC, Gurobi) through the neutral model's adapters."""
    from exactplace.backends.mip import solve_ip
    from exactplace.formulations.latency import LatencyMIPForm

    clock = time.monotonic()
    form = LatencyMIPForm(lm)
    timings["translate"] = time.monotonic() - clock
    info.update(variables=form.model.num_vars, rows=form.model.num_rows,
                indicator_rows=form.model.indicators.count)
    warm = start[1] if start is not None else None
    result, out = solve_ip(problem, form, solver, warm=warm, threads=int(threads or usable_cpus()), log=log,
                           progress=progress, space=space, info=info, timings=timings)
    if result.device is not None:
        value = latency(problem.graph, problem.cluster, result.device)
        slack = lm.bound_slack / lm.data.scale
        bound = out.bound if out.bound is not None else lm.data.lower_bound
        result.bound = min(max(bound - slack, lm.data.lower_bound), value)
        if out.objective is not None:
            info["model_latency"] = out.objective
    return result
