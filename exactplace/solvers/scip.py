"""SCIP through OR-Tools' ``pywraplp`` (SCIP is bundled in the ``ortools`` wheel).

Warm start through ``SetHint``; the time limit and ``InterruptSolve`` (Ctrl-C) are honoured.
``pywraplp`` has no progress callbacks, so the trace holds the final point only, and its log
goes to the process's stdout (``EnableOutput``) rather than a Python sink. Indicator rows
become big-M rows.
"""

from __future__ import annotations

import math
import time

import numpy as np

from exactplace.formulations.model import Kind, Model

from .base import Capabilities, Request, Result, Solver, Trace, big_m_rows, run_interruptibly
from .statuses import interpret

__all__ = ["ScipSolver"]


class ScipSolver(Solver):
    """SCIP (Apache 2.0) through OR-Tools' linear solver wrapper."""

    name = "scip"
    module = "ortools.linear_solver.pywraplp"
    install = "ortools"
    capabilities = Capabilities(warm_start=True, interrupt=True, log=False)

    def run(self, model: Model, request: Request) -> Result:
        self.require()
        from ortools.linear_solver import pywraplp

        clock = time.monotonic()
        s = pywraplp.Solver.CreateSolver("SCIP")
        trace = Trace(request.progress)  # now: its one point is timed from the start
        inf = s.infinity()
        kind = model.kind
        lb = np.where(np.isfinite(model.lb), model.lb, -inf).tolist()
        ub = np.where(np.isfinite(model.ub), model.ub, inf).tolist()
        xs = [s.IntVar(a, b, "") if k == Kind.INTEGER else s.NumVar(a, b, "")
              for a, b, k in zip(lb, ub, kind.tolist())]
        for indptr, indices, data, rlb, rub in ((*model.csr(), model.row_lb, model.row_ub), big_m_rows(model)):
            lows = np.where(np.isfinite(rlb), rlb, -inf).tolist()
            highs = np.where(np.isfinite(rub), rub, inf).tolist()
            cols, vals = indices.tolist(), data.tolist()
            for r in range(len(lows)):
                row = s.RowConstraint(lows[r], highs[r], "")
                for i in range(indptr[r], indptr[r + 1]):
                    row.SetCoefficient(xs[cols[i]], vals[i])
        objective = s.Objective()
        for i in np.flatnonzero(model.objective).tolist():
            objective.SetCoefficient(xs[i], float(model.objective[i]))
        objective.SetOffset(model.offset)
        objective.SetMinimization()
        if request.warm_start is not None:
            s.SetHint(xs, np.nan_to_num(request.warm_start).tolist())
        remaining = request.remaining()
        if math.isfinite(remaining):
            s.SetTimeLimit(max(1, int(remaining * 1000)))
        s.SetNumThreads(max(1, int(request.threads)))
        if request.log is not None:
            s.EnableOutput()
        params = pywraplp.MPSolverParameters()
        params.SetDoubleParam(params.RELATIVE_MIP_GAP, float(request.rel_gap))
        code, interrupted = run_interruptibly(lambda: s.Solve(params), s.InterruptSolve, request.cancel)
        names = {s.OPTIMAL: "OPTIMAL", s.FEASIBLE: "FEASIBLE", s.INFEASIBLE: "INFEASIBLE", s.UNBOUNDED: "UNBOUNDED",
                 s.ABNORMAL: "ABNORMAL", s.NOT_SOLVED: "NOT_SOLVED", s.MODEL_INVALID: "MODEL_INVALID"}
        raw = names.get(code, str(code))
        if raw in ("FEASIBLE", "NOT_SOLVED"):
            if interrupted:
                raw += "/interrupt"
            elif math.isfinite(remaining) and time.monotonic() - clock >= 0.98 * remaining:
                raw += "/time"
        has_solution = raw.startswith(("OPTIMAL", "FEASIBLE"))
        status, limit = interpret(self.name, raw, has_solution=has_solution)
        values = value = bound = None
        if has_solution:
            values = np.array([x.solution_value() for x in xs])
            value = model.objective_value(values)
            bound = objective.BestBound() if any(kind == Kind.INTEGER) else value
            bound = bound if math.isfinite(bound) else None
        trace.record(value, bound)
        return Result(status, limit, values, value, bound, raw, self.name, time.monotonic() - clock, trace.points)
