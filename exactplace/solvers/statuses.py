"""The one table mapping every solver's raw termination status to exactplace's vocabulary.

Each entry says what the raw status *means* (an :class:`Outcome`); :func:`interpret` turns
that into a :class:`~exactplace.core.placement.Status` and :class:`~exactplace.core.placement.Limit`
depending on whether the solver has a solution. A limit is never read as optimality: a
time limit with a solution is ``FEASIBLE`` with ``Limit.TIME``, without one ``NO_SOLUTION``.
A raw status missing from the table is an error (a new solver version must be looked at,
not guessed).

>>> interpret("highs", "kTimeLimit", has_solution=True)
(<Status.FEASIBLE: 'feasible'>, <Limit.TIME: 'time'>)
>>> interpret("cpsat", "OPTIMAL", has_solution=True)
(<Status.OPTIMAL: 'optimal'>, None)
"""

from __future__ import annotations

import enum

from exactplace.core.errors import ExactplaceError
from exactplace.core.placement import Limit, Status

__all__ = ["STATUS_TABLE", "Outcome", "interpret"]


class Outcome(enum.Enum):
    """What a raw status means."""

    OPTIMAL = "optimal"          # proven optimal within the requested gap
    INFEASIBLE = "infeasible"    # proven infeasible
    TIME = "time"                # stopped by the time limit
    INTERRUPT = "interrupt"      # stopped by Ctrl-C / a user interrupt
    ITERATION = "iteration"      # stopped by an iteration / node / solution limit
    MEMORY = "memory"            # ran out of memory
    FEASIBLE = "feasible"        # stopped with a solution, reason unknown
    ERROR = "error"              # the solver failed (model error, unbounded: a bug in the formulation)


STATUS_TABLE: dict[str, dict[str, Outcome]] = {
    "highs": {  # highspy.HighsModelStatus names
        "kOptimal": Outcome.OPTIMAL, "kInfeasible": Outcome.INFEASIBLE, "kTimeLimit": Outcome.TIME,
        "kInterrupt": Outcome.INTERRUPT, "kHighsInterrupt": Outcome.INTERRUPT,
        "kIterationLimit": Outcome.ITERATION, "kSolutionLimit": Outcome.ITERATION,
        "kMemoryLimit": Outcome.MEMORY, "kObjectiveBound": Outcome.ITERATION, "kObjectiveTarget": Outcome.ITERATION,
        "kUnknown": Outcome.FEASIBLE, "kNotset": Outcome.ERROR, "kLoadError": Outcome.ERROR,
        "kModelError": Outcome.ERROR, "kPresolveError": Outcome.ERROR, "kSolveError": Outcome.ERROR,
        "kPostsolveError": Outcome.ERROR, "kModelEmpty": Outcome.OPTIMAL,
        "kUnboundedOrInfeasible": Outcome.INFEASIBLE, "kUnbounded": Outcome.ERROR,
    },
    "cpsat": {  # CpSolver.status_name(); UNKNOWN/FEASIBLE are refined by the adapter's stop reason
        "OPTIMAL": Outcome.OPTIMAL, "INFEASIBLE": Outcome.INFEASIBLE, "MODEL_INVALID": Outcome.ERROR,
        "FEASIBLE": Outcome.FEASIBLE, "UNKNOWN": Outcome.FEASIBLE,
        "FEASIBLE/time": Outcome.TIME, "UNKNOWN/time": Outcome.TIME,
        "FEASIBLE/interrupt": Outcome.INTERRUPT, "UNKNOWN/interrupt": Outcome.INTERRUPT,
    },
    "scip": {  # pywraplp.Solver result codes, by name
        "OPTIMAL": Outcome.OPTIMAL, "INFEASIBLE": Outcome.INFEASIBLE, "FEASIBLE": Outcome.FEASIBLE,
        "NOT_SOLVED": Outcome.FEASIBLE, "ABNORMAL": Outcome.ERROR, "UNBOUNDED": Outcome.ERROR,
        "MODEL_INVALID": Outcome.ERROR,
        "FEASIBLE/time": Outcome.TIME, "NOT_SOLVED/time": Outcome.TIME,
        "FEASIBLE/interrupt": Outcome.INTERRUPT, "NOT_SOLVED/interrupt": Outcome.INTERRUPT,
    },
    "cbc": {  # pulp: LpStatus of the problem, refined by the solution status
        "Optimal": Outcome.OPTIMAL, "Infeasible": Outcome.INFEASIBLE, "Not Solved": Outcome.FEASIBLE,
        "Unbounded": Outcome.ERROR, "Undefined": Outcome.ERROR,
        "Optimal/time": Outcome.TIME, "Not Solved/time": Outcome.TIME,
    },
    "gurobi": {  # gurobipy GRB.Status codes, by name
        "OPTIMAL": Outcome.OPTIMAL, "INFEASIBLE": Outcome.INFEASIBLE, "INF_OR_UNBD": Outcome.INFEASIBLE,
        "UNBOUNDED": Outcome.ERROR, "TIME_LIMIT": Outcome.TIME, "INTERRUPTED": Outcome.INTERRUPT,
        "NODE_LIMIT": Outcome.ITERATION, "ITERATION_LIMIT": Outcome.ITERATION,
        "SOLUTION_LIMIT": Outcome.ITERATION, "MEM_LIMIT": Outcome.MEMORY, "SUBOPTIMAL": Outcome.FEASIBLE,
        "NUMERIC": Outcome.ERROR, "CUTOFF": Outcome.ITERATION, "USER_OBJ_LIMIT": Outcome.ITERATION,
        "WORK_LIMIT": Outcome.ITERATION, "LOADED": Outcome.ERROR, "INPROGRESS": Outcome.ERROR,
    },
}

_LIMITS = {Outcome.TIME: Limit.TIME, Outcome.INTERRUPT: Limit.INTERRUPT, Outcome.ITERATION: Limit.ITERATION,
           Outcome.MEMORY: Limit.MEMORY}


def interpret(solver: str, raw: str, *, has_solution: bool) -> tuple[Status, Limit | None]:
    """Status and limit for ``solver``'s raw status ``raw``; raises ExactplaceError on an unknown or error status."""
    outcome = STATUS_TABLE.get(solver, {}).get(raw)
    if outcome is None or outcome is Outcome.ERROR:
        what = "an unknown status" if outcome is None else "an error status"
        raise ExactplaceError(f"Solver {solver!r} ended with {what} {raw!r}. This is a bug; please report it.")
    if outcome is Outcome.INFEASIBLE:
        return Status.INFEASIBLE, None
    if outcome is Outcome.OPTIMAL:
        if not has_solution:
            raise ExactplaceError(f"Solver {solver!r} reported {raw!r} without a solution. This is a bug.")
        return Status.OPTIMAL, None
    status = Status.FEASIBLE if has_solution else Status.NO_SOLUTION
    return status, _LIMITS.get(outcome)
