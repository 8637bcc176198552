"""CP-SAT through ``ortools.sat``: integer programming by clause learning, LP and parallel portfolios.

CP-SAT only takes integer variables and coefficients, so the adapter scales the model (which
itself stays in floating point): a continuous ``x`` becomes an integer ``X = x * S`` for one
global power of two ``S``, and every row is scaled to integral coefficients
(:func:`scale_for_cpsat`). Rounding makes the CP-SAT objective approximate: the adapter reports
the model's own objective of the decoded values, and a dual bound lowered by the worst rounding
error of any row, so the bound stays a valid lower bound of the unscaled model (the evaluator
then recomputes the placement's exact objective). Indicator rows become enforcement literals.

CP-SAT 9.15's presolve sums a row's Boolean coefficients in a 32-bit integer (google/or-tools#5293):
past ``2**31`` it wraps and may drop an enforcement literal, declaring a feasible model infeasible
or certifying a wrong optimum. Every model with such a row gets the bug's own workaround: the
presolve inclusion step that reaches it is off (``presolve_inclusion_work_limit = 0``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from exactplace.core.errors import ExactplaceError
from exactplace.formulations.model import Kind, Model

from .base import POINT_TOLERANCE, Capabilities, Request, Result, Solver, Trace, run_interruptibly
from .statuses import interpret

__all__ = ["CpSatSolver", "refutation_margin", "scale_for_cpsat"]

_RESOLUTION = 2.0**32  # continuous variables: their largest bound times S is about this
_MAX_COEF = 2.0**40    # ... unless that makes a coefficient larger than this
_EXACT_MAX = 2.0**30  # rows of integer variables: exact scaling up to this factor
_INT32 = 2.0**31      # google/or-tools#5293: a row whose integer coefficients sum past this wraps
#: :meth:`CpSatSolver.declines` no model whose objective it rounds by less than this (whatever the objective's size:
#: loads near the smallest float are rounded to nothing and still decided).
DECLINE_ABSOLUTE = 1e-9


_MAX_SCALE = 2.0**512  # a factor past this lifts nothing that matters (values below 2**-480) and overflows to inf


def _pow2_at_most(x: float) -> float:
    """The largest power of two at most ``x`` (and at most :data:`_MAX_SCALE`, which tiny times make ``x`` exceed)."""
    return 2.0 ** math.floor(math.log2(min(x, _MAX_SCALE))) if x > 0 else 1.0


def refutation_margin(model: Model) -> float:
    """How far below a threshold CP-SAT's "infeasible" for a decision ``model`` (objective at most the
    threshold, as a row or a bound) is a proof for the unscaled model: CP-SAT decided the scaled copy, its
    threshold rounded to the grid ``1/S`` and its rows' coefficients rounded (the worst row's error). So a
    refutation at ``T`` proves the bound ``T - refutation_margin(model)``.

    >>> from exactplace.formulations.model import Model, Kind
    >>> m = Model()
    >>> y = m.add_vars(2, ub=1, kind=Kind.INTEGER); L = m.add_vars(1, ub=10.0)
    >>> _ = m.add_rows("load", 1, ub=0.0, rows=[0, 0, 0], cols=[y[0], y[1], L[0]], vals=[1.5, 2.25, -1.0])
    >>> refutation_margin(m) == 2.0 / scale_for_cpsat(m)["scale"]
    True
    """
    form = scale_for_cpsat(model)
    return float(form["error"]) + 2.0 / float(form["scale"])


def scale_for_cpsat(model: Model) -> dict:
    """The integer form of ``model``: scale ``S``, integer rows, bounds and the bound correction.

    * Integer and implied-integer variables become CP-SAT integers (their bounds must be finite).
    * A continuous variable ``x`` becomes an integer ``X`` with ``x = X / S`` for one global
      power of two ``S``, chosen so that the widest continuous bound times ``S`` is about
      ``2**32`` (a resolution far below any time that matters) while no coefficient exceeds
      ``2**40`` (continuous variables must have integral coefficients, as the load variables'
      ``-1`` do, and finite bounds).
    * A row with a continuous variable is multiplied by ``S`` and its other coefficients rounded
      to the nearest integer; a row of integer variables only is scaled by the smallest power of
      two making it integral (rounded at ``2**30`` when none does), its bounds rounded inwards.

    ``error`` is the worst rounding error of any row, in the model's units; ``wraps_int32``
    whether a row reaches google/or-tools#5293 (module docstring); ``smallest_load`` the smallest
    nonzero coefficient of an integer variable in a row with a continuous one (a node's time in a
    load row; 0 without one).

    >>> from exactplace.formulations.model import Model, Kind
    >>> m = Model()
    >>> y = m.add_vars(2, ub=1, kind=Kind.INTEGER); L = m.add_vars(1, ub=10.0)
    >>> _ = m.add_rows("load", 1, ub=0.0, rows=[0, 0, 0], cols=[y[0], y[1], L[0]], vals=[1.5, 2.25, -1.0])
    >>> m.minimize(L, [1.0])
    >>> s = scale_for_cpsat(m)
    >>> s["scale"], s["error"], s["smallest_load"]
    (268435456.0, 0.0, 1.5)
    """
    indptr, indices, data = model.csr()
    kind = model.kind
    continuous = kind == Kind.CONTINUOUS
    row_of = np.repeat(np.arange(model.num_rows), np.diff(indptr))
    has_cont = np.zeros(model.num_rows, dtype=bool)
    has_cont[row_of[continuous[indices]]] = True
    in_cont_row = has_cont[row_of] & ~continuous[indices]
    loads = np.abs(data[in_cont_row])
    biggest = float(np.max(loads, initial=0.0))
    span_cont = np.maximum(np.abs(model.lb), np.abs(model.ub))[continuous]
    widest = float(np.max(span_cont[np.isfinite(span_cont)], initial=1.0))
    scale = _pow2_at_most(_RESOLUTION / widest)
    if biggest > 0:
        scale = min(scale, _pow2_at_most(_MAX_COEF / biggest))
    if np.any(continuous[indices] & ~np.isclose(data, np.round(data))):
        raise ExactplaceError("CP-SAT needs integral coefficients on continuous variables; this model has others.")
    # Per-row factors: S for rows with a continuous variable, else the smallest exact power of two.
    factor = np.ones(model.num_rows)
    factor[has_cont] = scale
    # Rows of integer variables: the smallest power of two 2**k (k <= 30) making every coefficient integral.
    need = np.full(len(data), 31)
    for k in range(31):
        f = 2.0**k
        need[(need == 31) & (data * f == np.round(data * f))] = k
    row_need = np.zeros(model.num_rows, dtype=np.int64)
    np.maximum.at(row_need, row_of, need)
    absmax = np.zeros(model.num_rows)
    np.maximum.at(absmax, row_of, np.abs(data))
    exact = ~has_cont & (row_need <= 30)
    factor[exact] = 2.0 ** row_need[exact]
    for r in np.flatnonzero(~has_cont & (row_need > 30)).tolist():
        factor[r] = _pow2_at_most(_EXACT_MAX / max(absmax[r], 1e-300))
    scaled = np.where(continuous[indices], data, data * factor[row_of])
    coef = np.round(scaled)
    lb, ub = model.lb, model.ub
    span = np.maximum(np.abs(lb), np.abs(ub))[indices]
    row_error = np.bincount(row_of, weights=np.abs(scaled - coef) * span, minlength=model.num_rows)
    error = float(np.max(row_error[has_cont], initial=0.0)) / scale
    integral = ~continuous[indices]
    heavy = bool(np.any(np.bincount(row_of[integral], weights=np.abs(coef[integral]), minlength=model.num_rows)
                        >= _INT32))
    return {"scale": scale, "factor": factor, "coef": coef.astype(np.int64), "indptr": indptr, "indices": indices,
            "error": error, "wraps_int32": heavy,
            "smallest_load": float(loads[loads > 0].min()) if np.any(loads > 0) else 0.0}


class CpSatSolver(Solver):
    """CP-SAT (Apache 2.0), from Google OR-Tools."""

    name = "cpsat"
    module = "ortools.sat.python.cp_model"
    install = "ortools"
    capabilities = Capabilities(indicators=True, warm_start=True, callbacks=True, interrupt=True, seed=True)

    @classmethod
    def declines(cls, model: Model, request: Request) -> str | None:
        """Models CP-SAT's integer form cannot hold: an infinite or non-integral continuous bound or coefficient,
        or a scale so coarse (a huge bound, say CPU times of 1e9 that mean "never on a CPU") that the rounding of
        the objective exceeds :data:`~.base.POINT_TOLERANCE` of the warm start's objective (and
        :data:`DECLINE_ABSOLUTE`): its point could break the model past what the referee accepts, and its bound
        would certify nothing. A start whose objective is below the smallest load a row can hold (a start of 0)
        is measured against that load instead: placements differ by whole coefficients, not by the start."""
        continuous = model.kind == Kind.CONTINUOUS
        if not (np.all(np.isfinite(model.lb[continuous])) and np.all(np.isfinite(model.ub[continuous]))):
            return "CP-SAT needs finite bounds on every variable"
        indices, data = model.csr()[1:]
        if np.any(continuous[indices] & ~np.isclose(data, np.round(data))):
            return "CP-SAT needs integral coefficients on continuous variables"
        if request.warm_start is None or np.isnan(request.warm_start).any():
            return None
        form = scale_for_cpsat(model)
        weight = float(np.abs(model.objective[continuous]).sum())
        rounding = weight * (1.0 / form["scale"] + form["error"])
        start = abs(model.objective_value(request.warm_start))
        if rounding > max(POINT_TOLERANCE * max(start, form["smallest_load"]), DECLINE_ABSOLUTE):
            return (f"its integer scaling rounds the objective by up to {rounding:.3g}, more than "
                    f"{POINT_TOLERANCE:g} of the start's {start:.6g} (a variable's bound or a coefficient is far "
                    "larger than the objective)")
        return None

    def run(self, model: Model, request: Request) -> Result:
        self.require()
        from ortools.sat.python import cp_model

        clock = time.monotonic()
        form = scale_for_cpsat(model)
        S = form["scale"]
        kind, lb, ub = model.kind, model.lb, model.ub
        continuous = kind == Kind.CONTINUOUS
        if not (np.all(np.isfinite(lb)) and np.all(np.isfinite(ub))):
            raise ExactplaceError("CP-SAT needs finite bounds on every variable; the formulation must supply them.")
        lo = np.where(continuous, np.floor(lb * S), np.ceil(lb - 1e-9)).astype(np.int64)
        hi = np.where(continuous, np.ceil(ub * S), np.floor(ub + 1e-9)).astype(np.int64)
        cp = cp_model.CpModel()
        xs = [cp.new_int_var(int(a), int(b), "") for a, b in zip(lo.tolist(), hi.tolist())]
        indptr, indices, coef, factor = form["indptr"], form["indices"], form["coef"], form["factor"]
        row_lb, row_ub = model.row_lb * factor, model.row_ub * factor
        for r in range(model.num_rows):
            a, b = indptr[r], indptr[r + 1]
            expr = cp_model.LinearExpr.weighted_sum([xs[i] for i in indices[a:b].tolist()], coef[a:b].tolist())
            low = math.ceil(row_lb[r] - 1e-9) if math.isfinite(row_lb[r]) else cp_model.INT_MIN
            high = math.floor(row_ub[r] + 1e-9) if math.isfinite(row_ub[r]) else cp_model.INT_MAX
            cp.add_linear_constraint(expr, low, high)
        if model.indicators.count:
            self._indicators(cp, cp_model, model, xs, continuous, S)
        # Objective: continuous terms keep their (integral) coefficients, integer terms are scaled by S.
        obj = model.objective
        nz = np.flatnonzero(obj)
        obj_coef = np.round(np.where(continuous[nz], obj[nz], obj[nz] * S)).astype(np.int64)
        cp.minimize(cp_model.LinearExpr.weighted_sum([xs[i] for i in nz.tolist()], obj_coef.tolist()))
        # A valid lower bound of the unscaled objective from CP-SAT's: lower by rounding of L and of each row.
        slack = float(np.abs(obj[nz][continuous[nz]]).sum()) * (1.0 / S + form["error"])
        if request.warm_start is not None:
            hint = np.where(continuous, np.round(np.nan_to_num(request.warm_start) * S),
                            np.round(np.nan_to_num(request.warm_start)))
            for x, v in zip(xs, hint.astype(np.int64).tolist()):
                cp.add_hint(x, v)

        solver = cp_model.CpSolver()
        params = solver.parameters
        remaining = request.remaining()
        if math.isfinite(remaining):
            params.max_time_in_seconds = max(remaining, 1e-3)
        params.relative_gap_limit = float(request.rel_gap)
        params.num_workers = max(1, int(request.threads))
        if request.seed:
            params.random_seed = int(request.seed)
        if form["wraps_int32"]:  # google/or-tools#5293 (module docstring)
            params.presolve_inclusion_work_limit = 0
        params.catch_sigint_signal = False  # Ctrl-C reaches Python, which stops the search (run_interruptibly)
        if request.log is not None:
            params.log_search_progress = True
            params.log_to_stdout = False
            log = request.log
            solver.log_callback = lambda line: log(line.rstrip("\n"))
        trace = Trace(request.progress)
        offset = model.offset

        def unscale(v: float) -> float:
            return v / S + offset

        def lower(v: float) -> float:
            return v / S - slack + offset

        sink = request.incumbent

        class Progress(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                trace.record(unscale(self.objective_value), lower(self.best_objective_bound))
                if sink is not None:
                    integral = np.asarray(self.response_proto.solution, dtype=np.float64)
                    sink(np.where(continuous, integral / S, integral))

        solver.best_bound_callback = lambda bound: trace.record(None, lower(bound))
        status_code, interrupted = run_interruptibly(lambda: solver.solve(cp, Progress()), solver.stop_search,
                                                        request.cancel)
        raw = solver.status_name(status_code)
        if raw in ("FEASIBLE", "UNKNOWN"):
            # Without a stop of ours, CP-SAT ends short of a proof only at its time limit, which its presolve may
            # reach well before the limit's last second (its checks are coarse there).
            if interrupted:
                raw += "/interrupt"
            elif math.isfinite(remaining):
                raw += "/time"
        has_solution = raw.startswith(("OPTIMAL", "FEASIBLE"))
        status, limit = interpret(self.name, raw, has_solution=has_solution)
        values = objective = bound = None
        if has_solution:
            integral = np.array(solver.values(xs), dtype=np.float64)
            values = np.where(continuous, integral / S, integral)
            objective = model.objective_value(values)
            bound = min(lower(solver.best_objective_bound), objective)
        trace.record(objective, bound)
        return Result(status, limit, values, objective, bound, raw, self.name, time.monotonic() - clock, trace.points)

    @staticmethod
    def _indicators(cp: object, cp_model: object, model: Model, xs: list, continuous: np.ndarray, S: float) -> None:
        arrays = model.indicator_arrays()
        indptr, indices, data = model.indicator_csr()
        for r in range(model.indicators.count):
            cols, vals = indices[indptr[r]:indptr[r + 1]], data[indptr[r]:indptr[r + 1]]
            has_cont = bool(continuous[cols].any())
            f = S if has_cont else 1.0
            if not has_cont:
                while f < _EXACT_MAX and not np.all(vals * f == np.round(vals * f)):
                    f *= 2.0
            coefs = np.round(np.where(continuous[cols], vals, vals * f)).astype(np.int64)
            expr = cp_model.LinearExpr.weighted_sum([xs[i] for i in cols.tolist()], coefs.tolist())
            lo, hi = arrays["lb"][r] * f, arrays["ub"][r] * f
            ct = cp.add_linear_constraint(expr, math.ceil(lo - 1e-9) if math.isfinite(lo) else cp_model.INT_MIN,
                                          math.floor(hi + 1e-9) if math.isfinite(hi) else cp_model.INT_MAX)
            literal = xs[int(arrays["binary"][r])]
            ct.only_enforce_if(literal if arrays["value"][r] else ~literal)
