"""The restricted master LP at one threshold: the relaxation over the columns generated so far, on HiGHS.

.. math::

    \\min \\sum_S x_S \\;\\text{s.t.}\\; \\sum_{S \\ni c} x_S + \\sum_{C \\ni c} y_C \\;(= \\text{ or } \\ge)\\; 1
    \\;(\\text{each class } c), \\quad \\sum_C y_C \\le l, \\quad x, y \\ge 0

One artificial column per class (cost ``k + 1``) keeps it feasible; the refutation never rests on it, only on Farley's
bound from its duals. So the master may first *cover* the classes (rows ``>= 1``: a split's sets are a cover too, and a
cover's solutions improve by overlapping sets, where a partition's improve only by sets that fit together exactly) and
hand over to the partition (rows ``= 1``, the relaxation itself) near ``k``.
"""

from __future__ import annotations

import numpy as np

from exactplace.formulations.device_sets import SetRelaxation
from exactplace.solvers.highs_lp import HighsLP

from .columns import Column
from .settings import DEFAULT_DEVICE_SETS, DeviceSetSettings

__all__ = ["Master"]


class Master:
    """The restricted master LP at one threshold (:class:`~exactplace.solvers.highs_lp.HighsLP`): class rows ``= 1``
    (``>= 1`` while ``covering``), the CPU-core row ``<= l``.

    ``covering`` (True: the generation's way): the class rows start as ``>= 1`` until :meth:`partition`; False, they
    are ``= 1`` from the start (the partition alone, as the tests compare)."""

    def __init__(self, sets: SetRelaxation, *, covering: bool = True,
                 settings: DeviceSetSettings = DEFAULT_DEVICE_SETS) -> None:
        self.lp = HighsLP(threads=1)
        self.settings = settings
        n = sets.classes
        self.classes = n
        self.covering = covering
        self.lp.add_rows(np.concatenate([np.ones(n), [-np.inf]]),
                         np.concatenate([np.full(n, np.inf if covering else 1.0), [float(sets.cpus)]]))
        # Artificial columns, one per class: keep the master feasible; at full level costlier than any k-device
        # split, at fractional levels not always (see raise_artificial_cost).
        self.base_cost = self.artificial_cost = float(sets.accelerators + 1)
        self._add(np.eye(n, dtype=bool), cost=self.artificial_cost, cpu=False)

    def _add(self, chosen: np.ndarray, cost: float, cpu: bool) -> None:
        """Columns, one per row of ``chosen`` (bool, sets x classes), in one call."""
        if cpu:
            chosen = np.hstack([chosen, np.ones((len(chosen), 1), dtype=bool)])
        rows = np.nonzero(chosen)[1].astype(np.int32)  # row-major: column by column
        starts = np.concatenate([[0], np.cumsum(chosen.sum(axis=1))[:-1]]).astype(np.int32)
        count = len(chosen)
        self.lp.add_columns(np.full(count, cost), np.zeros(count), np.full(count, np.inf), starts, rows,
                            np.ones(len(rows)))

    def raise_artificial_cost(self) -> bool:
        """Ten times the artificial columns' cost, while below ``settings.artificial_cost_cap`` times ``k + 1``; False
        when there. (Half an artificial column costs less than ``k``: the master may settle at or below ``k`` on
        artificial columns where the relaxation itself is above ``k``, and its duals, capped by their cost, then
        never refute; e.g. one accelerator and every node on two CPU cores.)"""
        if self.artificial_cost >= self.settings.artificial_cost_cap * self.base_cost:
            return False
        self.artificial_cost *= 10.0
        self.lp.change_costs(np.arange(self.classes, dtype=np.int32), np.full(self.classes, self.artificial_cost))
        return True

    def partition(self) -> None:
        """Class rows ``= 1`` from now on (the relaxation itself). The covering optimum's basis stays dual feasible
        (the reduced costs do not change), so the next solve is by dual simplex from it, the first solve's way."""
        self.covering = False
        self.lp.change_row_bounds(range(self.classes), 1.0, 1.0)
        self.lp.dual_next()

    def add(self, chosen: np.ndarray, cpu: bool) -> None:
        """Columns (bool, sets x classes): accelerators' sets (cost 1) or CPU cores' (cost 0, on the CPU row)."""
        if len(chosen):
            self._add(chosen, 0.0 if cpu else 1.0, cpu)

    def solve(self, deadline: float) -> tuple[np.ndarray, float, float] | None:
        """Solve the LP: the classes' duals, the CPU row's dual, and the LP's value when no artificial column is
        in its solution (then its columns form a solution of the relaxation, of the cover's while ``covering``:
        its value is an upper bound on that relaxation's), else infinity. (Farley's bound, from the duals, is what
        refutes; this value only says when refuting is hopeless.) None when HiGHS is still at it at the ``deadline``
        (``time.monotonic()``)."""
        if not self.lp.solve(deadline):
            return None
        values, duals = self.lp.solution()
        artificial = values[:self.classes]
        upper = self.lp.objective() if artificial.max() <= 1e-9 else np.inf
        return duals[:self.classes], float(duals[self.classes]), float(upper)

    def solution(self, columns: list[tuple[np.ndarray, bool]]) -> list[Column]:
        """The last solve's columns of positive value (``columns``: the generated ones, in the order added)."""
        values = self.lp.solution()[0][self.classes:]
        fractional = self.settings.fractional
        return [Column(chosen, cpu, float(v)) for (chosen, cpu), v in zip(columns, values) if v > fractional]

