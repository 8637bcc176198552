"""The pricing of the device-set relaxation: ``max pi(S)`` over the class sets one device holds within a threshold.

:class:`Pricer` wraps the C++ dynamic program of ``dp_native/set_pricing.hpp`` (exact above the floor asked for;
the GIL released, Ctrl-C honoured), with the fractional knapsack as its cheap upper bound and a greedy cover as a
heuristic; :class:`MergedPricer` asks it within a branch node, whose pairs kept together are one class. Farley's bound
``(sum(pi) - l z_C) / max(1, z)`` needs both maxima exact (:mod:`exactplace.formulations.device_sets`).
"""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np

from exactplace.formulations.device_sets import LOAD_TOLERANCE

from .settings import DEFAULT_DEVICE_SETS

__all__ = ["MergedPricer", "Pricer", "capacity", "fractional_knapsack", "native_instance"]


class Pricer:
    """``max pi(S)`` over the class sets within a threshold, by the native dynamic program.

    ``time``: each class's time; ``allowed``: classes that may be in a set; ``group_cost`` and ``members``:
    the communication groups (none for a CPU core: a plain knapsack); ``order``: the classes' processing order
    (:func:`~exactplace.formulations.device_sets.frontier_order` keeps the DP's states few); ``apart``: pairs of
    classes no set may hold both of; ``memory``: the bytes one pricing's DP may hold (``pricing_memory`` of
    :class:`~exactplace.bounds.device_sets.settings.DeviceSetSettings`).

    >>> from exactplace import read_workload, workload_path
    >>> from exactplace.formulations.device_sets import SetRelaxation, frontier_order
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> sets = SetRelaxation.of(w.graph, w.cluster)
    >>> pricer = Pricer(sets.acc, sets.on_acc, sets.group_cost, sets.members, frontier_order(sets))
    >>> value, found = pricer.price(np.full(sets.classes, 0.2), threshold=17.7147)
    >>> bool(value > 1.0), all(sets.load(s) <= 17.7147 + 1e-9 for s in found)
    (True, True)
    """

    def __init__(self, time: np.ndarray, allowed: np.ndarray, group_cost: np.ndarray,
                 members: tuple[np.ndarray, ...] | list[np.ndarray], order: np.ndarray,
                 apart: tuple[tuple[int, int], ...] = (), *, memory: int = DEFAULT_DEVICE_SETS.pricing_memory) -> None:
        from exactplace.native import load

        self._native = load().SetPricer(**native_instance(time, allowed, group_cost, members, order, apart))
        self._time, self._allowed = np.asarray(time, dtype=np.float64), np.asarray(allowed, dtype=bool)
        self.memory = memory

    def price(self, duals: np.ndarray, threshold: float, floor: float = 1.0, keep: int = 10,
              raise_floor: bool = True, deadline: float = np.inf,
              cancel: threading.Event | None = None) -> tuple[float, list[np.ndarray]]:
        """``(max pi(S), sets)``: the maximum when it exceeds ``floor`` (else ``floor``: no set exceeds it),
        and up to ``keep`` sets (bool per class) of value above ``floor``, best first. Loads within
        :data:`~exactplace.formulations.device_sets.LOAD_TOLERANCE` of the threshold count as within it.
        ``raise_floor``: the DP raises its floor by the sets it meets (the same maximum, faster; only sets near it
        come back). ``deadline`` (``time.monotonic()``): past it, once ``cancel`` is set, or once its fronts hold
        ``memory`` bytes, the DP stops and :class:`TimeoutError` is raised (duals of nearly one value per time leave
        its fronts unpruned).
        """
        value, sets, stopped, over_budget = self._native.price(
            np.asarray(duals, dtype=np.float64), capacity(threshold), floor, keep, raise_floor,
            max(0.0, deadline - time.monotonic()), None if cancel is None else cancel.is_set, self.memory)
        if over_budget:
            raise TimeoutError(f"the set pricing outgrew its memory budget ({self.memory} bytes)")
        if stopped:
            raise TimeoutError("the set pricing ran past its deadline or was cancelled")
        return float(value), list(sets)

    def ceiling(self, duals: np.ndarray, threshold: float) -> float:
        """An upper bound on :meth:`price`'s maximum without a dynamic program: the fractional knapsack of the allowed
        classes' times (communication only adds to a set's load, and pairs kept apart only forbid sets)."""
        room = capacity(threshold)
        return fractional_knapsack(np.where(self._allowed & (self._time <= room), duals, 0.0), self._time, room)

    def cover(self, duals: np.ndarray, threshold: float, count: int) -> list[np.ndarray]:
        """Up to ``count`` disjoint, non-empty sets within the threshold (bool per class), each found greedily (by
        dual per time, then single moves and swaps) among the classes the ones before left: many columns at once for
        a master far from a solution (a heuristic: nothing is proven from it)."""
        return list(self._native.cover(np.asarray(duals, dtype=np.float64), capacity(threshold), count))


@dataclasses.dataclass(frozen=True)
class MergedPricer:
    """A pricing over merged classes, asked and answering in the relaxation's own classes; the node's ``fixed``
    columns of its kind (class sets) count in its maximum, never among its new sets."""

    pricer: Pricer
    into: np.ndarray  # class -> merged class
    fixed: tuple[np.ndarray, ...] = ()

    def price(self, duals: np.ndarray, threshold: float, floor: float, keep: int, deadline: float = np.inf,
              cancel: threading.Event | None = None) -> tuple[float, list[np.ndarray]]:
        """:meth:`Pricer.price` at the merged classes' duals (their members' sums), its sets mapped back; the
        maximum over the fixed columns too."""
        value, found = self.pricer.price(self._merged(duals), threshold, floor, keep, deadline=deadline, cancel=cancel)
        return max([value, *(float(duals[f].sum()) for f in self.fixed)]), [chosen[self.into] for chosen in found]

    def ceiling(self, duals: np.ndarray, threshold: float) -> float:
        """:meth:`Pricer.ceiling` at the merged classes' duals, the fixed columns' values too."""
        return max([self.pricer.ceiling(self._merged(duals), threshold), *(float(duals[f].sum()) for f in self.fixed)])

    def cover(self, duals: np.ndarray, threshold: float, count: int) -> list[np.ndarray]:
        """:meth:`Pricer.cover` at the merged classes' duals, its sets mapped back."""
        return [chosen[self.into] for chosen in self.pricer.cover(self._merged(duals), threshold, count)]

    def _merged(self, duals: np.ndarray) -> np.ndarray:
        """The merged classes' duals: their members' sums."""
        return np.bincount(self.into, duals, int(self.into.max()) + 1)


def native_instance(time: np.ndarray, allowed: np.ndarray, group_cost: np.ndarray,
                    members: tuple[np.ndarray, ...] | list[np.ndarray], order: np.ndarray,
                    apart: tuple[tuple[int, int], ...] = ()) -> dict[str, np.ndarray]:
    """The native ``SetPricer``'s keyword arguments for :class:`Pricer`'s (the groups as a CSR index over their
    members, the pairs kept apart flat), also for ``benchmarks/bench_set_pricing.py``'s build of another revision."""
    sizes = [len(m) for m in members]
    return {"time": np.asarray(time, dtype=np.float64), "allowed": np.asarray(allowed, dtype=np.uint8),
            "group_cost": np.asarray(group_cost, dtype=np.float64),
            "group_ptr": np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]),
            "group_member": np.concatenate([np.asarray(m, dtype=np.int64) for m in members]) if sizes
            else np.zeros(0, dtype=np.int64),
            "order": np.asarray(order, dtype=np.int64), "apart": np.asarray(apart, dtype=np.int64).reshape(-1)}


def capacity(threshold: float) -> float:
    """The most a set may load within ``threshold``: loads within
    :data:`~exactplace.formulations.device_sets.LOAD_TOLERANCE` of it count as within it."""
    return threshold + LOAD_TOLERANCE * max(1.0, threshold)


def fractional_knapsack(value: np.ndarray, weight: np.ndarray, capacity: float) -> float:
    """The knapsack's LP bound: the items of positive value that fit alone, best value per weight first, the last one
    in part (an upper bound on every set of weight within ``capacity``).

    >>> fractional_knapsack(np.array([3.0, 2.0, 1.0, 5.0]), np.array([3.0, 1.0, 2.0, 9.0]), 3.0)
    4.0
    """
    fits = (value > 0.0) & (weight <= capacity)
    weightless = fits & (weight <= 0.0)
    rest = np.flatnonzero(fits & ~weightless)
    with np.errstate(over="ignore"):  # (a weight near 0 makes the ratio infinite: first, as it should be)
        rest = rest[np.argsort(-value[rest] / weight[rest], kind="stable")]
    filled = np.cumsum(weight[rest])
    whole = int(np.searchsorted(filled, capacity, side="right"))
    total = float(value[weightless].sum() + value[rest[:whole]].sum())
    if whole < len(rest):
        room = capacity - (filled[whole - 1] if whole else 0.0)
        total += float(value[rest[whole]] * room / weight[rest[whole]])
    return total
