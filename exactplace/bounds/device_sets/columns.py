"""The columns of the device-set master, and the pool of every column generated that each master starts from.

A column is a variable of the relaxation (:mod:`exactplace.formulations.device_sets`): ``x_S`` for a set ``S`` of
classes one accelerator holds, ``y_C`` for a set one CPU core runs. The pool keeps each column with its load
(communication included for an accelerator's), so that columns carry over between thresholds: all of them up a
threshold, those within it down.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from exactplace.formulations.device_sets import SetRelaxation

__all__ = ["Column", "Pool"]


@dataclasses.dataclass(frozen=True)
class Column:
    """A column of a master's solution: its class set, whether a CPU core's, its value."""

    chosen: np.ndarray
    cpu: bool
    value: float


@dataclasses.dataclass
class Pool:
    """Every column generated, with its load, across thresholds."""

    sets: SetRelaxation
    acc: list[np.ndarray] = dataclasses.field(default_factory=list)
    acc_load: list[float] = dataclasses.field(default_factory=list)
    cpu: list[np.ndarray] = dataclasses.field(default_factory=list)
    cpu_load: list[float] = dataclasses.field(default_factory=list)

    @classmethod
    def seeded(cls, sets: SetRelaxation, seeds: tuple[np.ndarray, ...]) -> Pool:
        """The device sets of the ``seeds`` (placements: node position -> device) and every single class."""
        pool = cls(sets)
        for device in seeds:
            acc_sets, cpu_sets = sets.device_sets(device)
            for chosen in acc_sets:
                pool.add(chosen, cpu=False)
            for chosen in cpu_sets:
                pool.add(chosen, cpu=True)
        # The single classes' loads as SetRelaxation.load sums them (the same groups, in the same order), without
        # its pass over every group and class for each (quadratic in the classes).
        split = sets.incidence.sum(axis=1) > 1
        for c in range(sets.classes):
            single = np.arange(sets.classes) == c
            if sets.on_acc[c]:
                pool.acc.append(single)
                crossing = sets.incidence[:, c] & split
                pool.acc_load.append(float(sets.acc[single].sum() + sets.group_cost[crossing].sum()))
            if sets.cpus:
                pool.add(single, cpu=True)
        return pool

    def add(self, chosen: np.ndarray, cpu: bool) -> None:
        """A column of an accelerator (its load with communication) or of a CPU core (its CPU time)."""
        if cpu:
            self.cpu.append(chosen)
            self.cpu_load.append(float(self.sets.cpu[chosen].sum()))
        else:
            self.acc.append(chosen)
            self.acc_load.append(self.sets.load(chosen))
