"""Starts for a local search from a master's (fractional) solution: each rounded to a legal split.

The relay's polish beside the bound restarts from the splits the bound offers (``offer`` of
:func:`~exactplace.bounds.device_sets.set_bound`): a converged master near the relaxation's limit is a fractional
solution of value ``<= k`` at a threshold near the best split's max load, so its rounding is a start near such a split.
"""

from __future__ import annotations

import numpy as np

from exactplace.formulations.device_sets import SetRelaxation

from .columns import Column

__all__ = ["rounded_split"]


def rounded_split(sets: SetRelaxation, solution: list[Column]) -> np.ndarray | None:
    """A split near a master's (fractional) solution, class -> device: its columns by decreasing value, each
    onto a free device of its kind while disjoint from the columns taken (an accelerator's within the memory);
    then each class left, the heaviest first, onto the device where the max load ends lowest (then its own load;
    an accelerator only when the class is allowed there and fits). None when a class fits nowhere."""
    k, cpus = sets.accelerators, sets.cpus
    device = np.full(sets.classes, -1, dtype=np.int64)
    free = {False: list(range(k)), True: list(range(k, k + cpus))}
    for column in sorted(solution, key=lambda column: -column.value):
        if (not free[column.cpu] or (device[column.chosen] >= 0).any() or (not column.cpu and (
                not sets.on_acc[column.chosen].all() or sets.memory[column.chosen].sum() > sets.memory_cap))):
            continue
        device[column.chosen] = free[column.cpu].pop(0)
    # Placing a class changes only its own device's load: every other device had it outside already.
    loads = np.array([sets.load(device == d) for d in range(k)]
                     + [float(sets.cpu[device == d].sum()) for d in range(k, k + cpus)])
    memory = np.array([sets.memory[device == d].sum() for d in range(k)])
    for c in np.argsort(-sets.acc, kind="stable"):
        if device[c] >= 0:
            continue
        best: tuple[float, float, int] | None = None
        for d in range(k + cpus):
            if d < k:
                if not sets.on_acc[c] or memory[d] + sets.memory[c] > sets.memory_cap:
                    continue
                load = sets.load((device == d) | (np.arange(sets.classes) == c))
            else:
                load = loads[d] + sets.cpu[c]
            others = np.delete(loads, d)
            candidate = (max(load, float(others.max()) if others.size else 0.0), load, d)
            best = candidate if best is None or candidate < best else best
        if best is None:
            return None
        _, load, d = best
        device[c], loads[d] = d, load
        if d < k:
            memory[d] += sets.memory[c]
    return device
