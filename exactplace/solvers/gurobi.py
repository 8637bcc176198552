"""Gurobi through ``gurobipy``, used only when it imports and is licensed (it is not a dependency).

Indicator rows become Gurobi indicator constraints; warm start through ``Start``; the
progress callback reads the incumbent and bound at MIP events; Ctrl-C calls ``terminate``.
Not exercised by this project's CI (no licence there).
"""

from __future__ import annotations

import math
import time

import numpy as np

from exactplace.formulations.model import Kind, Model

from .base import Capabilities, Request, Result, Solver, Trace, run_interruptibly
from .statuses import interpret

__all__ = ["GurobiSolver"]


class GurobiSolver(Solver):
    """Gurobi (commercial)."""

    name = "gurobi"
    module = "gurobipy"
    install = "gurobipy (and a Gurobi licence)"
    capabilities = Capabilities(indicators=True, warm_start=True, callbacks=True, interrupt=True)

    def run(self, model: Model, request: Request) -> Result:
        self.require()
        import gurobipy as gp
        from gurobipy import GRB

        clock = time.monotonic()
        env = gp.Env(params={"OutputFlag": int(request.log is not None)})
        g = gp.Model("exactplace", env=env)
        vtype = np.where(model.kind == Kind.INTEGER, GRB.INTEGER, GRB.CONTINUOUS)
        x = g.addMVar(model.num_vars, lb=model.lb, ub=model.ub, vtype=vtype)
        indptr, indices, data = model.csr()
        for r in range(model.num_rows):
            cols, vals = indices[indptr[r]:indptr[r + 1]], data[indptr[r]:indptr[r + 1]]
            expr = gp.LinExpr(vals.tolist(), [x[i].item() for i in cols.tolist()])
            lo, hi = model.row_lb[r], model.row_ub[r]
            if lo == hi:
                g.addConstr(expr == lo)
                continue
            if math.isfinite(lo):
                g.addConstr(expr >= lo)
            if math.isfinite(hi):
                g.addConstr(expr <= hi)
        if model.indicators.count:
            arrays = model.indicator_arrays()
            iptr, iidx, idata = model.indicator_csr()
            for r in range(model.indicators.count):
                expr = gp.LinExpr(idata[iptr[r]:iptr[r + 1]].tolist(),
                                  [x[i].item() for i in iidx[iptr[r]:iptr[r + 1]].tolist()])
                b, v = x[int(arrays["binary"][r])].item(), bool(arrays["value"][r])
                if math.isfinite(arrays["ub"][r]):
                    g.addGenConstrIndicator(b, v, expr <= arrays["ub"][r])
                if math.isfinite(arrays["lb"][r]):
                    g.addGenConstrIndicator(b, v, expr >= arrays["lb"][r])
        g.setObjective(model.objective @ x + model.offset, GRB.MINIMIZE)
        if request.warm_start is not None:
            x.Start = np.nan_to_num(request.warm_start, nan=GRB.UNDEFINED)
        remaining = request.remaining()
        if math.isfinite(remaining):
            g.Params.TimeLimit = max(remaining, 1e-3)
        g.Params.MIPGap = float(request.rel_gap)
        g.Params.Threads = max(1, int(request.threads))
        trace = Trace(request.progress)
        log = request.log

        def callback(m: object, where: int) -> None:
            if where == GRB.Callback.MIP:
                trace.record(m.cbGet(GRB.Callback.MIP_OBJBST), m.cbGet(GRB.Callback.MIP_OBJBND))
            elif where == GRB.Callback.MESSAGE and log is not None:
                log(m.cbGet(GRB.Callback.MSG_STRING).rstrip("\n"))

        run_interruptibly(lambda: g.optimize(callback), g.terminate, request.cancel)  # Ctrl-C: status INTERRUPTED
        names = {getattr(GRB.Status, n): n for n in dir(GRB.Status) if n.isupper()}
        raw = names.get(g.Status, str(g.Status))
        has_solution = g.SolCount > 0
        status, limit = interpret(self.name, raw, has_solution=has_solution)
        values = value = bound = None
        if has_solution:
            values = np.asarray(x.X, dtype=np.float64)
            value = model.objective_value(values)
            bound = float(g.ObjBound) if g.IsMIP else value
        trace.record(value, bound)
        return Result(status, limit, values, value, bound, raw, self.name, time.monotonic() - clock, trace.points)
