"""CBC through ``pulp`` (which runs its bundled ``cbc`` executable on an MPS file).

Warm start through pulp's ``warmStart`` (CBC's initial solution file). CBC runs as a child
process: the time limit is passed to it, Ctrl-C reaches it with the terminal's process
group; pulp offers no progress callbacks (the trace holds the final point) and reports no
dual bound, so at "optimal" the bound is the one CBC's stopping rule guarantees,
``objective * (1 - rel_gap)``, and at a time limit there is none. Indicator rows become
big-M rows.

Two-step MIR cuts are off: with them, the CBC 2.10.3 that pulp bundles cuts off the optimum
of the non-contiguous max-load IP of ``layer_bert24_inference`` started from the DP's
placement (its root bound rises to 17.843 while 17.7147 is feasible; HiGHS, SCIP and CP-SAT
all prove 17.7147) and reports that start, 17.7899, as optimal. Turning them off avoids it
(as do turning off probing or every cut); the test ``test_cbc_does_not_cut_off_the_optimum``
keeps the case.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np

from exactplace.core.placement import Status
from exactplace.formulations.model import Kind, Model

from .base import Capabilities, Request, Result, Solver, Trace, big_m_rows
from .statuses import interpret

__all__ = ["CbcSolver"]


class CbcSolver(Solver):
    """CBC (EPL) through PuLP."""

    name = "cbc"
    module = "pulp"
    install = "pulp"
    capabilities = Capabilities(warm_start=True)

    def run(self, model: Model, request: Request) -> Result:
        self.require()
        import pulp

        clock = time.monotonic()
        with warnings.catch_warnings():
            # PuLP 3.3 deprecates the constructors it still supports (for 4.0); pulp>=2.7 has only these.
            warnings.simplefilter("ignore", DeprecationWarning)
            return self._solve(pulp, model, request, clock)

    def _solve(self, pulp: object, model: Model, request: Request, clock: float) -> Result:
        trace = Trace(request.progress)  # now: its one point is timed from the start
        problem = pulp.LpProblem("exactplace", pulp.LpMinimize)
        kind = model.kind
        xs = [pulp.LpVariable(f"x{i}", None if not math.isfinite(a) else a, None if not math.isfinite(b) else b,
                              pulp.LpInteger if k == Kind.INTEGER else pulp.LpContinuous)
              for i, (a, b, k) in enumerate(zip(model.lb.tolist(), model.ub.tolist(), kind.tolist()))]
        for indptr, indices, data, rlb, rub in ((*model.csr(), model.row_lb, model.row_ub), big_m_rows(model)):
            cols, vals = indices.tolist(), data.tolist()
            for r in range(len(rlb)):
                expr = pulp.LpAffineExpression([(xs[cols[i]], vals[i]) for i in range(indptr[r], indptr[r + 1])])
                if rlb[r] == rub[r]:
                    problem += expr == float(rlb[r])
                    continue
                if math.isfinite(rlb[r]):
                    problem += expr >= float(rlb[r])
                if math.isfinite(rub[r]):
                    problem += expr <= float(rub[r])
        nz = np.flatnonzero(model.objective).tolist()
        problem += pulp.LpAffineExpression([(xs[i], float(model.objective[i])) for i in nz]) + model.offset
        if request.warm_start is not None:
            for x, v in zip(xs, np.nan_to_num(request.warm_start).tolist()):
                x.setInitialValue(v)
        remaining = request.remaining()
        cmd = pulp.PULP_CBC_CMD(
            msg=request.log is not None, timeLimit=None if not math.isfinite(remaining) else max(1.0, remaining),
            gapRel=float(request.rel_gap), threads=max(1, int(request.threads)),
            warmStart=request.warm_start is not None, options=["twoMirCuts off"],
        )
        try:
            problem.solve(cmd)
        except pulp.PulpSolverError as error:  # the cbc process failed (seen: the op_resnet50 latency model)
            trace.record(None, None)
            failure = f"cbc failed: {str(error)[:200]}"
            return Result(Status.NO_SOLUTION, None, None, None, None, failure, self.name, time.monotonic() - clock,
                          trace.points, failure=failure)
        raw = pulp.LpStatus[problem.status]
        timed_out = math.isfinite(remaining) and time.monotonic() - clock >= 0.98 * remaining
        if problem.sol_status == pulp.LpSolutionIntegerFeasible or (raw == "Not Solved" and timed_out):
            raw += "/time"
        has_solution = problem.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible)
        status, limit = interpret(self.name, raw, has_solution=has_solution)
        values = value = bound = None
        if has_solution:
            values = np.array([x.varValue if x.varValue is not None else 0.0 for x in xs], dtype=np.float64)
            value = model.objective_value(values)
            if raw == "Optimal":
                bound = value * (1 - float(request.rel_gap)) if value >= 0 else value
        trace.record(value, bound)
        return Result(status, limit, values, value, bound, raw, self.name, time.monotonic() - clock, trace.points)
