"""A HiGHS LP kept between solves, for column generation: rows once, then columns added and costs and row bounds
changed, each solve warm from the last basis, its duals read back.

Why its own adapter: :func:`~exactplace.solvers.solve_model` builds and solves a model once, where a column
generation solves one master hundreds of times, a few columns more each time. The first solve is by dual simplex
(primal simplex from scratch, over thousands of columns, can stall in phase 2); after it columns only join, the last
basis stays primal feasible, and primal simplex restarts from it. A warm restart that ends without a verdict is solved
again from scratch, by dual simplex.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["HighsLP"]

#: HiGHS's ``simplex_strategy`` values: dual simplex, primal simplex.
_DUAL, _PRIMAL = 1, 4


class HighsLP:
    """A minimisation LP on HiGHS, kept between solves (``output_flag`` off, ``threads`` threads).

    ``highs`` is the ``highspy.Highs`` object itself (a test may wrap it to stand in for HiGHS's answers).

    >>> lp = HighsLP()
    >>> lp.add_rows(np.array([1.0]), np.array([np.inf]))  # x_0 + x_1 >= 1
    >>> lp.add_columns(np.array([2.0, 3.0]), np.zeros(2), np.full(2, np.inf), np.array([0, 1]), np.array([0, 0]),
    ...                np.ones(2))
    >>> lp.solve(deadline=time.monotonic() + 10.0)
    True
    >>> values, duals = lp.solution()
    >>> values.tolist(), duals.tolist(), lp.objective()
    ([1.0, 0.0], [2.0], 2.0)
    """

    def __init__(self, threads: int = 1) -> None:
        import highspy

        self._highspy = highspy
        self.highs = highspy.Highs()
        self.highs.setOptionValue("output_flag", False)
        self.highs.setOptionValue("threads", threads)
        self.highs.setOptionValue("simplex_strategy", _DUAL)
        self._restarted = False  # solved once since the last dual-simplex start: primal simplex restarts from here

    def _bounds(self, values: np.ndarray) -> np.ndarray:
        """Bounds with HiGHS's infinity for the infinite ones."""
        inf = self._highspy.kHighsInf
        return np.where(np.isfinite(values), values, np.where(values > 0, inf, -inf))

    def add_rows(self, lower: np.ndarray, upper: np.ndarray) -> None:
        """Rows ``lower <= a x <= upper`` with no entries yet (the columns added bring them)."""
        self.highs.addRows(len(lower), self._bounds(np.asarray(lower, dtype=np.float64)),
                           self._bounds(np.asarray(upper, dtype=np.float64)), 0, np.zeros(0, dtype=np.int32),
                           np.zeros(0, dtype=np.int32), np.zeros(0))

    def add_columns(self, cost: np.ndarray, lower: np.ndarray, upper: np.ndarray, starts: np.ndarray,
                    index: np.ndarray, value: np.ndarray) -> None:
        """Columns in one call, compressed by column: column ``j``'s entries are ``index[starts[j]:starts[j + 1]]``
        (rows) and ``value`` at the same places."""
        self.highs.addCols(len(cost), np.asarray(cost, dtype=np.float64), self._bounds(np.asarray(lower, np.float64)),
                           self._bounds(np.asarray(upper, dtype=np.float64)), len(index),
                           np.asarray(starts, dtype=np.int32), np.asarray(index, dtype=np.int32),
                           np.asarray(value, dtype=np.float64))

    def change_costs(self, columns: np.ndarray, cost: np.ndarray) -> None:
        """The cost of each of ``columns`` (indices) becomes ``cost`` at the same place."""
        self.highs.changeColsCost(len(columns), np.asarray(columns, dtype=np.int32), np.asarray(cost, np.float64))

    def change_row_bounds(self, rows: range, lower: float, upper: float) -> None:
        """Each of ``rows`` becomes ``lower <= a x <= upper`` (one call a row: highspy binds no batch call)."""
        for row in rows:
            self.highs.changeRowBounds(row, lower, upper)

    def dual_next(self) -> None:
        """The next solve by dual simplex from the current basis (still dual feasible: after a change of row bounds
        the reduced costs stay), as the first solve; primal simplex again after it."""
        self.highs.setOptionValue("simplex_strategy", _DUAL)
        self._restarted = False

    def solve(self, deadline: float) -> bool:
        """Solve by the ``deadline`` (``time.monotonic()``); whether HiGHS proved the LP's optimum."""
        h = self.highs
        # (HiGHS's time limit counts its run time over every run of this model.)
        h.setOptionValue("time_limit", h.getRunTime() + max(0.0, deadline - time.monotonic()))
        h.run()
        if not self._restarted:
            h.setOptionValue("simplex_strategy", _PRIMAL)
            self._restarted = True
        elif h.getModelStatus() == self._highspy.HighsModelStatus.kUnknown and time.monotonic() < deadline:
            # A warm primal-simplex restart may end without a verdict, with time left: solved again from scratch by
            # dual simplex, the first solve's way.
            h.clearSolver()
            h.setOptionValue("simplex_strategy", _DUAL)
            h.setOptionValue("time_limit", h.getRunTime() + max(0.0, deadline - time.monotonic()))
            h.run()
            h.setOptionValue("simplex_strategy", _PRIMAL)
        return bool(h.getModelStatus() == self._highspy.HighsModelStatus.kOptimal)

    def solution(self) -> tuple[np.ndarray, np.ndarray]:
        """The last solve's column values and row duals."""
        solution = self.highs.getSolution()
        return np.asarray(solution.col_value), np.asarray(solution.row_dual)

    def objective(self) -> float:
        """The last solve's objective value."""
        return float(self.highs.getInfo().objective_function_value)
