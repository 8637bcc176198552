"""The duals a generation prices at: Wentges smoothing towards a center, from the packing bound's point of the dual.

A pricing is asked at ``w * center + (1 - w) * pi`` (``pi`` the master's duals, the center the duals of the best
Farley bound so far); the weight ``w`` adapts after each pricing (:func:`adapted_weight`, Pessoa et al.'s automatic
smoothing). A generation's first center is the packing bound as a point of the dual (:func:`work_center`,
``pi_c = acc_c / T``): its Farley bound is known without an accelerator pricing, and generations refute or converge
sooner from it than from the first master's duals.
"""

from __future__ import annotations

import numpy as np

from exactplace.formulations.device_sets import SetRelaxation

from .pricing import capacity, fractional_knapsack
from .settings import DEFAULT_DEVICE_SETS, DeviceSetSettings

__all__ = ["adapted_weight", "first_set", "work_center"]


def work_center(sets: SetRelaxation, threshold: float) -> tuple[float, np.ndarray, float]:
    """The packing bound as a point of the dual: ``pi_c = acc_c / T`` (``T`` with its tolerance,
    :func:`~exactplace.bounds.device_sets.pricing.capacity`) for the classes an accelerator may hold (0 for the
    others), with its Farley bound and the CPU row's dual ``-z_C``. No pricing is needed: a set's load is at least its
    accelerator time, so ``pi(S) <= 1`` on every set within ``T``; ``z_C`` is the CPU cores' fractional knapsack, an
    upper bound on their best set (the exact knapsack, at values proportional to the CPU times, keeps every subset
    sum)."""
    room = capacity(threshold)
    pi = np.where(sets.on_acc, sets.acc, 0.0) / room
    # (Over the classes a CPU core's pricing allows, those within the threshold alone.)
    z_cpu = fractional_knapsack(np.where(sets.cpu <= threshold, pi, 0.0), sets.cpu, room) if sets.cpus else 0.0
    return float(pi.sum() - sets.cpus * z_cpu), pi, -z_cpu


def first_set(found: list[np.ndarray], classes: int) -> np.ndarray:
    """The best of a pricing's sets as 0/1 per class (all 0 when it found none)."""
    return found[0].astype(float) if found else np.zeros(classes)


def adapted_weight(weight: float, devices_at_best: np.ndarray, direction: np.ndarray,
                   settings: DeviceSetSettings = DEFAULT_DEVICE_SETS) -> float:
    """The smoothing's next weight (Pessoa, Sadykov, Uchoa and Vanderbeck 2018, "Automation and combination of
    linear-programming based stabilization techniques in column generation"): the Lagrangian's subgradient at the
    smoothed duals, ``1 - devices_at_best`` (``k`` for each class in the best accelerator set priced there, plus
    ``l`` for each in the best CPU core's), pointing towards the master's duals (``direction``: the master's minus the
    center) says the bound rises that way: the weight falls by 0.1 (towards the master); else it rises a tenth of the
    way to ``settings.smoothing_cap``.

    >>> adapted_weight(0.5, np.array([2.0, 0.0]), np.array([-1.0, 1.0]))  # subgradient (-1, 1): towards the master
    0.4
    >>> round(adapted_weight(0.5, np.array([2.0, 0.0]), np.array([1.0, -1.0])), 3)
    0.549
    """
    if (1.0 - devices_at_best) @ direction > 0.0:
        return max(0.0, weight - 0.1)
    return weight + (settings.smoothing_cap - weight) * 0.1
