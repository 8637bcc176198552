"""The pipeline IP under a schedule ("schedule-mip"): one IP per stage count, the best of them.

Same problem as :class:`~exactplace.methods.schedule_dp.ScheduleDP`; the IP of
:mod:`exactplace.formulations.pipeline` fixes the stage count ``p`` (so the in-flight counts and
the bubble ``(M + p - 1) / M`` are constants), and the answer is the least scaled optimum over
``p``. Its bound is the least scaled bound over every ``p``, so a stopped run keeps a true gap.
It takes any DAG the solver can close, where the DP enumerates ideals.
"""

from __future__ import annotations

import math

import numpy as np

from exactplace.core.params import Choice, Option
from exactplace.core.placement import Status
from exactplace.core.problem import MethodResult, Problem
from exactplace.core.schedule import bubble_factor, in_flight
from exactplace.formulations.pipeline import pipeline_ip
from exactplace.methods.base import THREADS, usable_cpus
from exactplace.methods.mip_options import SOLVER_NAMES
from exactplace.methods.scheduled import STAGE_OPTIONS, ScheduledMethod, stage_counts, stage_words
from exactplace.solvers import Request, solve_model

__all__ = ["ScheduleMIP"]


class ScheduleMIP(ScheduledMethod):
    """Exact pipeline under a schedule by one IP per stage count."""

    name = "schedule-mip"
    requires = ("highspy",)
    description = "exact pipeline split under a GPipe or 1F1B schedule, one IP per stage count"
    # CP-SAT would need the loads scaled to integers (as the throughput IP does); the LP-based solvers take them.
    options = {"solver": Option("solver", Choice(tuple(s for s in SOLVER_NAMES if s not in ("auto", "cpsat"))),
                                "highs", "the MIP solver"),
               "threads": THREADS, **STAGE_OPTIONS}

    def run(self, problem: Problem) -> MethodResult:
        graph, cluster = problem.graph, problem.cluster
        if not graph.supported.all():
            i = int(np.flatnonzero(~graph.supported)[0])
            return MethodResult(None, Status.INFEASIBLE, solver="precheck", info={
                "reason": f"{graph.describe(i)} cannot run on an accelerator, and a CPU is not a pipeline stage"})
        schedule, microbatches = problem.option("schedule"), problem.option("microbatches")
        request = Request(deadline=problem.deadline, rel_gap=problem.rel_gap,
                          threads=self.setting(problem, "threads") or usable_cpus())
        best: tuple[float, np.ndarray] | None = None
        bound, limit, solver, proven = math.inf, None, "", True
        for stages in stage_counts(problem, type(self), min(cluster.accelerators, int(graph.color.max()) + 1)):
            factor = bubble_factor(stages, microbatches)
            model, variables = pipeline_ip(graph, stages, in_flight(schedule, stages, microbatches),
                                           cluster.memory_cap, overlap=bool(problem.option("overlap")))
            result = solve_model(model, self.setting(problem, "solver"), request)
            solver = result.solver
            if result.values is not None and result.objective is not None and (
                    best is None or factor * result.objective < best[0]):
                best = (factor * result.objective, np.argmax(result.values[variables.x], axis=1))
            if result.status is not Status.INFEASIBLE:
                bound = min(bound, factor * (result.bound if result.bound is not None else 0.0))
            proven = proven and result.status in (Status.OPTIMAL, Status.INFEASIBLE)
            if result.limit is not None:
                limit = result.limit
                break
        if best is None:
            if limit is None and proven:
                return MethodResult(None, Status.INFEASIBLE, solver=solver, info={
                    "reason": f"no pipeline of {stage_words(problem, type(self), cluster.accelerators)} fits its "
                              f"memory under {schedule!r}"})
            return MethodResult(None, Status.NO_SOLUTION, limit=limit, solver=solver)
        value, stage_of_class = best
        # Stopped before every stage count was tried, the others are unbounded: no bound.
        finished = limit is None
        return MethodResult(stage_of_class[graph.color], Status.OPTIMAL if finished and proven else Status.FEASIBLE,
                            bound=min(bound, value) if finished else None, limit=limit, solver=solver,
                            info={"schedule": schedule, "microbatches": microbatches})
