"""The device-set bound's first threshold: what the heaviest accelerator of any split must load.

One accelerator of any split holds at least its share of the accelerator time, ``need = (W - l z_C) / k``, and the
least load of a set that heavy, communication included (a MIP:
:func:`~exactplace.formulations.device_sets.lightest_heavy_set`), is a bound every split reaches. Where being that
heavy costs communication it lies above the packing bound, and the thresholds start there.
"""

from __future__ import annotations

import threading

import numpy as np

from exactplace.core.placement import Limit, TracePoint
from exactplace.formulations.device_sets import SetRelaxation, lightest_heavy_set

from .pricing import capacity
from .settings import DEFAULT_DEVICE_SETS, DeviceSetSettings
from .smoothing import work_center

__all__ = ["heaviest_bound"]


def heaviest_bound(sets: SetRelaxation, target: float, *, lower: float | None = None, deadline: float = np.inf,
                   cancel: threading.Event | None = None,
                   settings: DeviceSetSettings = DEFAULT_DEVICE_SETS) -> float | None:
    """A threshold below ``target`` that no split reaches, from its heaviest accelerator; None when it proves nothing
    above ``lower`` (or above 0).

    A split with max load ``T <= target`` puts at most ``z_C`` accelerator time on each CPU core (the fractional
    knapsack of :func:`~exactplace.bounds.device_sets.smoothing.work_center`, within ``target``), so one of its ``k``
    accelerators holds at least ``need = (W - l z_C) / k`` of the accelerators' total ``W``, and that accelerator's
    load, at most ``T``, is at least the least load of any set that heavy:
    :func:`~exactplace.formulations.device_sets.lightest_heavy_set`, a MIP on HiGHS whose dual bound (a stopped
    solve's too) is lowered by ``settings.heaviest_margin``. (The set relaxation's Farley bound at the duals
    ``acc / A(T)``, ``A(T)`` the heaviest set within ``T``, decides the same thresholds one at a time.) Where a set
    that heavy needs little communication, the MIP stops at its first set that heavy within ``lower``.
    Ctrl-C (or ``cancel``) during the MIP raises :class:`KeyboardInterrupt`; past the ``deadline``
    (``time.monotonic()``) the MIP's bound so far is taken.
    """
    from exactplace.solvers import Request, solve_model

    if cancel is not None and cancel.is_set():
        raise KeyboardInterrupt
    # The work center's Farley bound is (W - l z_C) / T, in the units of T (its values are acc / T): T times it is
    # the accelerators' share, and 1 / k of that is what the heaviest one holds at least.
    farley, _, _ = work_center(sets, target)
    need = capacity(target) * farley / sets.accelerators
    if need <= 0.0:
        return None
    enough = threading.Event()  # the solve stops on it: a set that heavy within `lower` met, or `cancel`

    def watch(point: TracePoint) -> None:
        if (lower is not None and point.incumbent is not None and point.incumbent <= lower) or (
                cancel is not None and cancel.is_set()):
            enough.set()

    model, _ = lightest_heavy_set(sets, need)
    out = solve_model(model, "highs", Request(deadline=deadline, rel_gap=1e-6, threads=1, cancel=enough,
                                              progress=watch))
    if lower is not None and out.objective is not None and out.objective <= lower:
        return None  # the least load is no higher than `lower`: nothing proven above it
    if out.limit is Limit.INTERRUPT:
        raise KeyboardInterrupt
    if out.bound is None or not np.isfinite(out.bound):
        return None
    refuted = min(out.bound - settings.heaviest_margin * (1.0 + abs(out.bound)), target)
    return refuted if refuted > (0.0 if lower is None else lower) else None  # (loads are never below 0)
