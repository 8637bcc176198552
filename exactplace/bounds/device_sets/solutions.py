"""What a master's solution says about splits: the pair of classes to branch on, or the split it is.

A pair's *share* of one device is the sum of the values of the solution's columns holding both. When every share is
0 or 1 the distinct sets are disjoint and the solution is a split (:func:`integral_split`); else a pair with a
fractional share is one on one device in some columns and on two in others, the branching pair of Ryan and Foster
(:func:`fractional_pair`).
"""

from __future__ import annotations

import numpy as np

from exactplace.formulations.device_sets import SetRelaxation

from .columns import Column
from .settings import DEFAULT_DEVICE_SETS, DeviceSetSettings

__all__ = ["fractional_pair", "integral_split"]


def fractional_pair(solution: list[Column], position: np.ndarray,
                    settings: DeviceSetSettings = DEFAULT_DEVICE_SETS) -> tuple[tuple[int, int] | None, float]:
    """A pair of classes whose share of one device (the sum of the values of the columns holding both) is near
    the furthest from 0 and 1 (within ``settings.near_spread``), the nearest such pair in the pricing's processing
    order (``position``: class -> place; a pair kept together is a group open from one to the other in the DP), with
    its share; None when every share is 0 or 1."""
    held = np.array([column.chosen for column in solution], dtype=np.float64)
    values = np.array([column.value for column in solution])
    share = held.T @ (values[:, None] * held)
    spread = np.triu(np.minimum(share, 1.0 - share), k=1)
    widest = float(spread.max())
    if widest <= settings.fractional:
        return None, 0.0
    first, second = np.nonzero(spread >= max(widest - settings.near_spread, settings.fractional * 2))
    nearest = int(np.argmin(np.abs(position[first] - position[second])))
    i, j = int(first[nearest]), int(second[nearest])
    return (i, j), float(share[i, j])


def integral_split(sets: SetRelaxation, solution: list[Column],
                   settings: DeviceSetSettings = DEFAULT_DEVICE_SETS) -> tuple[str, np.ndarray | None]:
    """The split of a master solution whose pairs' shares are all 0 or 1: its distinct sets are disjoint; each
    becomes one device when all of its value lies on accelerators or all on CPU cores. ``("split", device)``
    (class -> device, accelerators first), else ``("stopped", None)``."""
    device = np.full(sets.classes, -1, dtype=np.int64)
    share: dict[bytes, list[float]] = {}
    chosen_of: dict[bytes, np.ndarray] = {}
    for column in solution:
        key = column.chosen.tobytes()
        chosen_of[key] = column.chosen
        share.setdefault(key, [0.0, 0.0])[int(column.cpu)] += column.value
    acc, cpu = 0, sets.accelerators
    for key, (on_acc, on_cpu) in share.items():
        if min(on_acc, on_cpu) > settings.fractional:
            return "stopped", None
        if on_acc >= on_cpu:
            device[chosen_of[key]], acc = acc, acc + 1
        else:
            device[chosen_of[key]], cpu = cpu, cpu + 1
    if (device < 0).any() or acc > sets.accelerators or cpu > sets.accelerators + sets.cpus:
        return "stopped", None
    return "split", device
