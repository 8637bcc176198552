"""Solver adapters: one small module per solver, listed in one catalog (cvxpy's way).

``SOLVERS`` maps a solver name to ``"module:Class"``; the module is imported only when the
solver is used, and the solver's own package only inside :meth:`Solver.solve`. ``AUTO_SOLVER``
is the preference order of ``solver="auto"``, from the measurements in ``benchmarks/RESULTS.md``.

>>> sorted(SOLVERS)
['cbc', 'cpsat', 'gurobi', 'highs', 'scip']
>>> get_solver("highs").name
'highs'
"""

from __future__ import annotations

import importlib

from exactplace.core.errors import ParameterError
from exactplace.formulations.model import Model

from .base import Capabilities, Request, Result, Solver

__all__ = ["AUTO_SOLVER", "SOLVERS", "Capabilities", "Request", "Result", "Solver", "get_solver", "solve_model"]

SOLVERS: dict[str, str] = {
    "highs": "exactplace.backends.solvers.highs:HighsSolver",
    "cpsat": "exactplace.backends.solvers.cpsat:CpSatSolver",
    "scip": "exactplace.backends.solvers.scip:ScipSolver",
    "cbc": "exactplace.backends.solvers.cbc:CbcSolver",
    "gurobi": "exactplace.backends.solvers.gurobi:GurobiSolver",
}

#: ``solver="auto"``: the first installed of these (fastest first, as measured in benchmarks/RESULTS.md).
AUTO_SOLVER: tuple[str, ...] = ("cpsat", "highs", "scip", "cbc")


def get_solver(name: str) -> type[Solver]:
    """The adapter class for ``name`` (``"auto"``: the first installed of ``AUTO_SOLVER``)."""
    if name == "auto":
        for candidate in AUTO_SOLVER:
            cls = get_solver(candidate)
            if cls.available():
                return cls
        get_solver(AUTO_SOLVER[0]).require()
    if name not in SOLVERS:
        raise ParameterError(
            f"The 'solver' parameter of solve must be one of {['auto', *SOLVERS]}. Got {name!r} instead."
        )
    module, _, attribute = SOLVERS[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def solve_model(model: Model, solver: str = "auto", request: Request | None = None) -> Result:
    """Solve ``model`` with the named solver (raises SolverUnavailableError if it is not installed).

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
    return cls().solve(model, request or Request())
