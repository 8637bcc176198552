"""A node of the branch-and-price over device sets (Ryan and Foster), and the pricings within it.

A node keeps pairs of classes *together* (on one device: one merged class in the pricing) and pairs *apart* (on two:
the DP's own constraint); a dive adds *fixed* columns (each takes a device of its kind, no other column touches its
classes). The root is the node with none of them; every node is closed by Farley's bound over its own pricing.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from exactplace.formulations.device_sets import SetRelaxation, frontier_order

from .pricing import MergedPricer, Pricer
from .settings import DEFAULT_DEVICE_SETS

__all__ = ["Branch"]


@dataclasses.dataclass(frozen=True)
class Branch:
    """A node of the branch-and-price (Ryan and Foster): pairs of classes on one device, pairs on two; and a dive's
    ``fixed`` columns (class sets, whether a CPU core's): each takes a device of its kind, no other column touches
    its classes."""

    together: tuple[tuple[int, int], ...] = ()
    apart: tuple[tuple[int, int], ...] = ()
    fixed: tuple[tuple[np.ndarray, bool], ...] = ()

    def admits(self, chosen: np.ndarray, cpu: bool = False) -> np.ndarray:
        """Which columns (bool, sets x classes; a CPU core's when ``cpu``) respect the node's pairs and fixed
        columns."""
        fits = np.ones(len(chosen), dtype=bool)
        for a, b in self.together:
            fits &= chosen[:, a] == chosen[:, b]
        for a, b in self.apart:
            fits &= ~(chosen[:, a] & chosen[:, b])
        if self.fixed:
            fits &= ~chosen[:, self.taken()].any(axis=1) | np.isin(
                [row.tobytes() for row in chosen], [f.tobytes() for f, on_cpu in self.fixed if on_cpu == cpu])
        return fits

    def taken(self) -> np.ndarray:
        """The fixed columns' classes (bool per class; only asked when there are some)."""
        return np.any([f for f, _ in self.fixed], axis=0)

    def pricers(self, sets: SetRelaxation, threshold: float,
                memory: int = DEFAULT_DEVICE_SETS.pricing_memory) -> tuple[MergedPricer, MergedPricer] | None:
        """The accelerators' and the CPU cores' pricings within the node (each DP holding at most ``memory`` bytes):
        each pair kept together one class (:meth:`~exactplace.formulations.device_sets.SetRelaxation.merged`), each
        pair kept apart the DP's own constraint, the fixed columns' classes in no new set. None when a pair kept apart
        is in one merged class (no split is in the node)."""
        merged, into = sets.merged(self.together)
        apart = tuple((int(into[a]), int(into[b])) for a, b in self.apart)
        if any(a == b for a, b in apart):
            return None
        free = np.ones(merged.classes, dtype=bool)
        if self.fixed:
            free[into[self.taken()]] = False
        acc = Pricer(merged.acc, merged.on_acc & free, merged.group_cost, merged.members, frontier_order(merged),
                     apart, memory=memory)
        cpu = Pricer(merged.cpu, (merged.cpu <= threshold) & free, np.zeros(0), [], np.arange(merged.classes), apart,
                     memory=memory)
        return (MergedPricer(acc, into, tuple(f for f, on_cpu in self.fixed if not on_cpu)),
                MergedPricer(cpu, into, tuple(f for f, on_cpu in self.fixed if on_cpu)))
