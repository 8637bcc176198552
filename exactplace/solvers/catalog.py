"""The one explicit catalog of solver adapters (cvxpy's ``defines.py``).

``SOLVERS`` maps a solver name to ``"module:Class"``; the module is imported only when the
solver is used, and the solver's own package only inside its ``run``. ``AUTO_SOLVER`` is the
preference order of ``solver="auto"``, fastest first on this project's workloads.

>>> sorted(SOLVERS)
['cbc', 'cpsat', 'gurobi', 'highs', 'scip']
>>> get_solver("highs").name
'highs'
"""

from __future__ import annotations

import importlib

from exactplace.core.errors import ParameterError

from .base import Solver

__all__ = ["AUTO_SOLVER", "SOLVERS", "get_solver"]

SOLVERS: dict[str, str] = {
    "highs": "exactplace.solvers.highs:HighsSolver",
    "cpsat": "exactplace.solvers.cpsat:CpSatSolver",
    "scip": "exactplace.solvers.scip:ScipSolver",
    "cbc": "exactplace.solvers.cbc:CbcSolver",
    "gurobi": "exactplace.solvers.gurobi:GurobiSolver",
}

#: ``solver="auto"``: the first installed of these (fastest first on this project's workloads).
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
