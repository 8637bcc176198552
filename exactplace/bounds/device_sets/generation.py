"""Column generation at one threshold ``T``: refute "no split has max load ``<= T``", or see that it cannot.

Columns are generated until Farley's bound ``(sum(pi) - l z_C) / max(1, z)`` exceeds ``k`` (refuted: ``T`` is a lower
bound of every split) or the restricted master (:class:`~exactplace.bounds.device_sets.master.Master`) holds a
solution of value ``<= k`` free of artificial columns ("converged"), at the latest when no column prices out. Pricings
are asked at smoothed duals (:mod:`~exactplace.bounds.device_sets.smoothing`), with the master's own when the smoothed
ones price out nothing; a smoothed pricing past its slack, or a CPU core's past its cap, falls back (to the master's
duals, to the fractional knapsack). While an exact pricing costs more than ``greedy_when`` master solves, a greedy
cover (:meth:`~exactplace.bounds.device_sets.Pricer.cover`) joins its sets and prices up to ``greedy_rounds`` masters
in a row alone (no bound from those: Farley's needs the exact maximum).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

import numpy as np

from exactplace.formulations.device_sets import SetRelaxation

from .columns import Column, Pool
from .master import Master
from .node import Branch
from .pricing import MergedPricer
from .settings import DEFAULT_DEVICE_SETS, DeviceSetSettings
from .smoothing import adapted_weight, first_set, work_center

__all__ = ["Generation", "refute"]


@dataclasses.dataclass(frozen=True)
class Generation:
    """How a column generation ended: ``verdict`` ``"refuted"``, ``"converged"`` (not refuted) or ``"stopped"``;
    when converged, the restricted master's ``solution`` (of value ``<= k``, free of artificial columns; empty when
    it has none such) and its last ``duals`` (per class, and the CPU row's): a branch's children start from them.
    ``farley``: the best Farley bound met (the threshold is refuted once it exceeds ``k``); ``upper``: the last
    master's value (infinite while artificial columns are in its solution, or before any master was solved; the
    cover's while the master covered, at most the relaxation's)."""

    verdict: str
    solution: list[Column] = dataclasses.field(default_factory=list)
    duals: tuple[np.ndarray, float] | None = None
    farley: float = -np.inf
    upper: float = np.inf


def refute(sets: SetRelaxation, pool: Pool, threshold: float, deadline: float, cancel: threading.Event | None,
           counts: dict[str, int], node: Branch | None = None, center: tuple[np.ndarray, float] | None = None,
           settled: Callable[[], bool] = lambda: False, *, covering: bool = True,
           settings: DeviceSetSettings = DEFAULT_DEVICE_SETS) -> Generation:
    """Column generation at one threshold within a branch ``node`` (None: the root), its duals smoothed towards
    ``center`` (else towards the packing bound's duals,
    :func:`~exactplace.bounds.device_sets.smoothing.work_center`) until a pricing beats it.

    ``"stopped"`` at the ``deadline`` (a pricing's included), on ``cancel``, or once ``settled()`` (asked before each
    master solve: nothing left to prove). ``counts["pricings"]`` counts the exact pricings. ``covering``: the master
    covers the classes until its value nears ``k`` (the generation's way); False, it partitions them from the start
    (:class:`~exactplace.bounds.device_sets.master.Master`; the tests compare the two).
    """
    # (No shortcut "a class over T alone fits nowhere": a set's load is not monotone, the class may fit with
    # the classes it communicates with. The artificial columns cover it, and Farley's bound decides.)
    node = Branch() if node is None else node
    pricers = node.pricers(sets, threshold, settings.pricing_memory)
    if pricers is None:
        return Generation("refuted")
    generation = _ColumnGeneration(sets, pool, threshold, deadline, cancel, counts, pricers, node, center, covering,
                                   settings)
    if center is None:  # the center is the packing bound's point (until given up, in _ColumnGeneration.priced)
        generation.best, generation.stable, generation.stable_cpu = work_center(sets, threshold)
        if generation.best > sets.accelerators + settings.margin:
            return Generation("refuted", farley=generation.best)
    generation.proven = generation.best
    return generation.run(settled)


class _ColumnGeneration:
    """One generation's state: the master and its columns, the smoothing's center and weight, the best bound."""

    def __init__(self, sets: SetRelaxation, pool: Pool, threshold: float, deadline: float,
                 cancel: threading.Event | None, counts: dict[str, int], pricers: tuple[MergedPricer, MergedPricer],
                 node: Branch, center: tuple[np.ndarray, float] | None, covering: bool,
                 settings: DeviceSetSettings) -> None:
        self.sets, self.pool, self.threshold, self.deadline = sets, pool, threshold, deadline
        self.cancel, self.counts, self.settings = cancel, counts, settings
        self.acc_pricer, self.cpu_pricer = pricers
        self.master = Master(sets, covering=covering, settings=settings)
        self.columns: list[tuple[np.ndarray, bool]] = []  # the master's columns past the artificial ones, in order
        for cpu, chosen_sets, loads in ((False, pool.acc, pool.acc_load), (True, pool.cpu, pool.cpu_load)):
            held = np.array(chosen_sets, dtype=bool).reshape(len(chosen_sets), sets.classes)
            held = held[(np.array(loads) <= threshold) & node.admits(held, cpu)] if len(held) else held
            self.master.add(held, cpu=cpu)
            self.columns += [(chosen, cpu) for chosen in held]
        # The center's Farley bound and duals (``best`` starts again where the packing point is given up).
        self.best, (self.stable, self.stable_cpu) = -np.inf, center or (None, 0.0)
        self.packing = center is None  # the center is the packing bound's point
        self.proven = -np.inf  # the best Farley bound met
        self.weight, self.upper = settings.smoothing, np.inf
        self.pi, self.sigma = np.zeros(0), 0.0  # the last master's duals (the classes', the CPU row's)
        self.greedy_rounds = 0  # master solves since the last exact pricing
        self.master_seconds, self.pricing_seconds = 0.0, 0.0  # the last master solve's and the last exact pricing's

    def run(self, settled: Callable[[], bool]) -> Generation:
        """Master solves and pricings until a verdict; ``"stopped"`` at the deadline, on cancel or once settled."""
        try:
            while time.monotonic() < self.deadline and not (self.cancel is not None and self.cancel.is_set()) \
                    and not settled():
                ended = self.step()
                if ended is not None:
                    return ended
        except TimeoutError:  # a pricing ran past the deadline
            pass
        return self.stopped()

    def stopped(self) -> Generation:
        return Generation("stopped", farley=self.proven, upper=self.upper)

    def converged(self, solution: list[Column]) -> Generation:
        return Generation("converged", solution, (self.pi, self.sigma), self.proven, self.upper)

    def step(self) -> Generation | None:
        """One master solve and its pricing (greedy or exact); the verdict when it gives one, else None."""
        k, margin = self.sets.accelerators, self.settings.margin
        started = time.monotonic()
        solved = self.master.solve(self.deadline)
        self.master_seconds = time.monotonic() - started
        if solved is None:
            return self.stopped()
        self.pi, self.sigma, self.upper = solved
        if self.master.covering and self.upper <= k * (1.0 + self.settings.cover_room):  # near k: the partition's turn
            self.master.partition()
            return None
        if self.upper <= k - margin:  # the relaxation holds a solution of value <= k: this threshold cannot be refuted
            return self.converged(self.master.solution(self.columns))
        costly = self.pricing_seconds > self.settings.greedy_when * self.master_seconds  # the greedy cover helps
        if self.greedy_round(costly):
            return None
        added = self.priced(costly)
        if isinstance(added, Generation):
            return added
        if added:
            return None
        if self.upper == np.inf and self.master.raise_artificial_cost():
            return None  # the master's optimum rests on artificial columns: dearer, they may leave it
        if self.master.covering:  # the cover's optimum, not above k + margin: the partition may be higher
            self.master.partition()
            return None
        return self.converged(self.master.solution(self.columns) if self.upper <= k + margin else [])

    def greedy_round(self, costly: bool) -> bool:
        """Whether the master was priced by the greedy cover alone (while ``costly`` and it improves the master,
        up to ``settings.greedy_rounds`` solves in a row)."""
        if self.greedy_rounds < self.settings.greedy_rounds and costly and self.add(
                self.acc_pricer.cover(self.pi, self.threshold, self.sets.accelerators), cpu=False):
            self.greedy_rounds += 1
            return True
        self.greedy_rounds = 0
        return False

    def priced(self, costly: bool) -> Generation | int:
        """The exact pricings of one master: at the smoothed duals, then (where they add nothing) the master's own
        (the other way round the first time: a pricing's time to scale the caps); the columns added, or the
        refutation."""
        weight = self.weight
        points = [(weight * self.stable + (1 - weight) * self.pi, weight * self.stable_cpu + (1 - weight) * self.sigma),
                  (self.pi, self.sigma)]
        added = 0
        for duals, cpu_dual in points if self.pricing_seconds else points[::-1]:
            found = self.price_at(duals, cpu_dual, costly)
            if found is None:  # a smoothed pricing past its cap: the weight fell to 0
                continue
            if isinstance(found, Generation):
                return found
            added = found
            if added:
                break
        return added

    def price_at(self, duals: np.ndarray, cpu_dual: float, costly: bool) -> Generation | int | None:
        """One exact pricing at ``duals`` (and the CPU row's ``cpu_dual``): its Farley bound, the center and weight
        it moves, the columns it adds; the refutation when the bound exceeds ``k``; None when a pricing at smoothed
        duals ran past its cap."""
        s, k, cpus = self.settings, self.sets.accelerators, self.sets.cpus
        self.counts["pricings"] += 1
        started = time.monotonic()
        smoothed = duals is not self.pi
        cap = min(self.deadline, started + max(1.0, s.smoothed_pricing_slack * self.pricing_seconds)) if smoothed \
            else self.deadline
        try:
            z, acc_sets = self.acc_pricer.price(duals, self.threshold, floor=1.0, keep=s.columns_per_pricing,
                                                deadline=cap, cancel=self.cancel)
            z_cpu, cpu_sets, exact = self.cpu_priced(duals, min(cap, time.monotonic() + s.cpu_pricing_seconds)
                                                     if smoothed else cap)
        except TimeoutError:
            if cap >= self.deadline:
                raise
            self.weight = 0.0  # (it rises again as the pricings say)
            return None
        self.pricing_seconds = time.monotonic() - started
        if z > 1.0 and costly:
            acc_sets += self.acc_pricer.cover(duals, self.threshold, k)
        farley = (duals.sum() - cpus * z_cpu) / max(z, 1.0)
        if smoothed:
            self.weight = adapted_weight(self.weight, k * first_set(acc_sets, self.sets.classes) + cpus * first_set(
                cpu_sets, self.sets.classes), self.pi - self.stable, s)
        self.proven = max(self.proven, farley)
        if self.packing and not exact:
            # Near the packing point the CPU cores' values are their classes' accelerator times over T: where CPU
            # times are nearly proportional to those, their knapsack keeps every subset sum and only its ceiling
            # comes back, so no bound at smoothed duals beats the point's and every pricing near it is slow. The
            # master's duals become the center.
            self.packing, self.best, self.stable, self.stable_cpu = False, -np.inf, self.pi, self.sigma
        elif farley > self.best:
            self.best, self.stable, self.stable_cpu = farley, duals, cpu_dual
        if self.proven > k + s.margin:
            return Generation("refuted", farley=self.proven, upper=self.upper)
        return self.add(acc_sets, cpu=False) + self.add(cpu_sets, cpu=True)

    def cpu_priced(self, duals: np.ndarray, cap: float) -> tuple[float, list[np.ndarray], bool]:
        """The CPU cores' pricing, and whether it was exact: exact when done by ``cap``; past it at smoothed duals,
        their ceiling and a greedy set. A plain knapsack whose values are nearly proportional to its weights keeps
        every subset sum; Farley's bound needs only an upper bound, any set that prices out is a column. (At the
        master's duals it stays exact, ``cap`` the generation's deadline: "no column prices out" decides
        convergence.)"""
        if not self.sets.cpus:
            return 0.0, [], True
        try:
            return *self.cpu_pricer.price(duals, self.threshold, floor=0.0, keep=3, deadline=cap,
                                          cancel=self.cancel), True
        except TimeoutError:
            if cap >= self.deadline:
                raise
            return (self.cpu_pricer.ceiling(duals, self.threshold), self.cpu_pricer.cover(duals, self.threshold, 1),
                    False)

    def add(self, chosen_sets: list[np.ndarray], cpu: bool) -> int:
        """The columns among ``chosen_sets`` that improve the master at its own duals ``pi``, added; how many. (A
        smoothed pricing may return columns already there, a "misprice": adding them again would never end.)"""
        pi, sigma = self.pi, self.sigma
        reduced = (lambda s: pi[s].sum() + sigma > 1e-9) if cpu else (lambda s: pi[s].sum() > 1.0 + 1e-9)
        improving = list({chosen.tobytes(): chosen for chosen in chosen_sets if reduced(chosen)}.values())
        for chosen in improving:
            self.master.add(chosen[None, :], cpu=cpu)
            self.pool.add(chosen, cpu=cpu)
            self.columns.append((chosen, cpu))
        return len(improving)
