"""A proven lower bound on the non-contiguous max load by column generation over device sets.

For a threshold ``T`` the relaxation of :mod:`exactplace.formulations.device_sets` is
``min sum_S x_S`` s.t. each class covered once by accelerator sets ``S`` and CPU-core sets ``C`` (``sum_C y_C <= l``),
every set's load within ``T``; a value above ``k`` *refutes* ``T`` (every split's max load exceeds it), proven by
Farley's bound ``(sum(pi) - l z_C) / max(1, z)`` at any duals ``pi``, its two maxima priced exactly.
:func:`set_bound` searches the thresholds (:mod:`.threshold`), starting from :func:`heaviest_bound` (:mod:`.heaviest`);
each threshold is a column generation (:mod:`.generation`) over a restricted master LP (:mod:`.master`), priced by the
native DP (:mod:`.pricing`) at smoothed duals (:mod:`.smoothing`); past the relaxation's limit a branch-and-price
(:mod:`.branching`, nodes :mod:`.node`, a dive :mod:`.diving`) decides the target; converged masters are rounded to
starts for a local search (:mod:`.rounding`). Tuning: :class:`DeviceSetSettings` (:mod:`.settings`).
"""

from __future__ import annotations

from .heaviest import heaviest_bound
from .pricing import Pricer
from .settings import DEFAULT_DEVICE_SETS, DeviceSetSettings
from .threshold import SetBound, set_bound, set_bound_applies

__all__ = ["DEFAULT_DEVICE_SETS", "DeviceSetSettings", "Pricer", "SetBound", "heaviest_bound", "set_bound",
           "set_bound_applies"]
