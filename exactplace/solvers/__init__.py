"""Solver adapters: one small module per solver, listed in one catalog (:mod:`.catalog`, cvxpy's way),
and :func:`solve_model`, the one way a model reaches a solver: in a child process stopped on time
(:mod:`.isolated`) unless the model is tiny, every returned point checked against the model.
"""

from __future__ import annotations

from exactplace.core.failures import record_failure
from exactplace.formulations.model import Model

from .base import Capabilities, Request, Result, Solver, checked
from .catalog import AUTO_SOLVER, SOLVERS, get_solver
from .isolated import isolate, solve_isolated

__all__ = ["AUTO_SOLVER", "SOLVERS", "Capabilities", "Request", "Result", "Solver", "get_solver", "solve_model"]

def solve_model(model: Model, solver: str = "auto", request: Request | None = None) -> Result:
    """Solve ``model`` with the named solver (raises SolverUnavailableError if it is not installed).

    Models with at least :data:`~.isolated.ISOLATE_NONZEROS` nonzeros run in a child process
    (``request.isolate`` overrides the rule), which the deadline and Ctrl-C stop within
    :data:`~.isolated.GRACE` seconds even when the solver itself does not look. A solve that failed (its process
    died, its point broke the model) is also told to :func:`~exactplace.core.failures.failures_during`.

    >>> from exactplace.formulations.model import Model, Kind
    >>> m = Model()
    >>> x = m.add_vars(2, ub=3, kind=Kind.INTEGER)
    >>> _ = m.add_rows("sum", 1, lb=[2.5], rows=[0, 0], cols=x, vals=[1.0, 1.0])
    >>> m.minimize(x, [1.0, 2.0])
    >>> r = solve_model(m, "highs")
    >>> r.status.value, r.objective, r.values.tolist()
    ('optimal', 3.0, [3.0, 0.0])
    """
    cls = get_solver(solver)
    cls.require()
    request = request or Request()
    if isolate(model, request):
        result = checked(model, solve_isolated(cls, model, request))
    else:
        result = cls().solve(model, request)
    if result.failure is not None:
        record_failure(result.failure)
    return result
