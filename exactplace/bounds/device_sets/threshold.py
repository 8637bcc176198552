"""The device-set bound's outer search over thresholds ``T``, from the heaviest accelerator's bound up to a target.

While the target (``U (1 - rel_gap)`` for the best split ``U``: its refutation certifies ``U``) is more than
``approach`` above the highest refuted threshold, the next lies halfway between them (each a bound proven on the way);
then the target itself; once a threshold converges at or below the target, a bisection between the highest refuted
threshold and the lowest converged one (the relaxation's limit, the most it can prove). A threshold neither refuted nor
converged within ``patience`` of the time limit is left undecided, and the next ones lie halfway below it. At the
limit, a branch-and-price (:mod:`~exactplace.bounds.device_sets.branching`) decides a threshold beyond it: the target
or, when ``rel_gap`` is positive, ``L / (1 - rel_gap)`` for the highest refuted ``L`` when that is lower (a split
found there is certified at once). Columns carry over between thresholds (:class:`~.columns.Pool`).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph
from exactplace.evaluators import check_feasibility, max_load
from exactplace.formulations.device_sets import SetRelaxation, frontier_order

from .branching import branch_and_price
from .columns import Column, Pool
from .generation import refute
from .heaviest import heaviest_bound
from .rounding import rounded_split
from .settings import DEFAULT_DEVICE_SETS, DeviceSetSettings

__all__ = ["SetBound", "set_bound", "set_bound_applies"]


@dataclasses.dataclass(frozen=True)
class SetBound:
    """What :func:`set_bound` proved.

    ``value``: the highest refuted threshold (a lower bound on every split's max load), None when none
    was refuted. ``ceiling``: the lowest threshold the relaxation could not refute without branching (None: none
    converged; ``value`` lies above it when branching refuted more). ``outcome``: ``"target refuted"``,
    ``"limit reached"`` (refuted and converged thresholds within ``resolution``, then branching, if on, ended
    without deciding), ``"undecided"`` (the first threshold neither refuted nor converged within
    ``patience``: it gave up early, nothing proven beyond ``heaviest``), ``"time"`` or ``"interrupted"``. ``trace``:
    (seconds since the start, bound) at each refutation, branching's included. ``split``: the best split
    branching found (node position -> device; None: none), ``split_value`` its max load (the evaluator's);
    ``nodes``: branch nodes solved; ``dives``: generations in dives (:mod:`~exactplace.bounds.device_sets.diving`);
    ``heaviest``: the threshold :func:`~exactplace.bounds.device_sets.heaviest_bound` refuted first (None: nothing
    above ``lower``)."""

    value: float | None
    ceiling: float | None
    outcome: str
    trace: tuple[tuple[float, float], ...]
    thresholds: int
    pricings: int
    columns: int
    seconds: float
    split: np.ndarray | None = None
    split_value: float | None = None
    nodes: int = 0
    dives: int = 0
    heaviest: float | None = None


def set_bound_applies(graph: Graph, cluster: Cluster, *, overlap: bool = False, gpipe: bool = False) -> str | None:
    """Why the device-set relaxation does not apply to the instance (None: it does)."""
    if gpipe or overlap:
        return "GPipe's and overlapped loads are not sums over a device's set"
    if not cluster.is_homogeneous or cluster.is_two_level:
        return "it takes one machine of identical accelerators"
    if cluster.accelerators == 0:
        return "no accelerators"
    return None


def set_bound(graph: Graph, cluster: Cluster, *, target: float, lower: float | None = None,
              time_limit: float = 60.0, seeds: tuple[np.ndarray, ...] = (),
              aim: Callable[[], float] | None = None, rel_gap: float = 0.0, branch: bool = True,
              offer: Callable[[np.ndarray], None] | None = None,
              cancel: threading.Event | None = None, patience: float | None = None,
              settings: DeviceSetSettings = DEFAULT_DEVICE_SETS) -> SetBound:
    """Refute thresholds up to ``target`` within ``time_limit`` seconds (module docstring).

    ``lower``: a bound already proven (the thresholds start halfway above it); ``seeds``: placements
    (node position -> device) whose device sets start the pool; ``aim``: asked before each threshold for the
    target now, ``U (1 - rel_gap)`` for the best split ``U`` known (a better split found meanwhile lowers it; a value
    above ``target`` is ignored), and before each master solve (a target at or below the bound proven ends the run; a
    split below the threshold being generated ends that generation: no refutation is left to it); ``branch``: at the
    relaxation's limit, decide the target by branch-and-price (a split found there lowers the target to its
    max load times ``1 - rel_gap``); ``offer``: called with a legal split (node position -> device) rounded from each
    master solution that converged (:func:`~exactplace.bounds.device_sets.rounding.rounded_split`: a start for a local
    search beside it); ``cancel``: set it to stop; ``patience``: the share of ``time_limit`` a threshold's generation
    may take before it is left undecided (None: ``settings.patience``; beside a solver, where nothing waits for the
    bound, all of it); ``settings``: the tuning.

    >>> from exactplace import read_workload, solve, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> start = solve(w, method="dp")
    >>> found = set_bound(w.graph, w.cluster, target=17.70, seeds=(start.device,), time_limit=30)
    >>> found.outcome, found.value
    ('target refuted', 17.7)
    """
    clock = time.monotonic()
    sets = SetRelaxation.of(graph, cluster)
    try:
        order = frontier_order(sets, stop=lambda: time.monotonic() - clock >= time_limit or (
            cancel is not None and cancel.is_set()))
    except TimeoutError:  # (thousands of classes: not even one order within the time given)
        return SetBound(value=None, ceiling=None, outcome="interrupted" if cancel is not None and cancel.is_set()
                        else "time", trace=(), thresholds=0, pricings=0, columns=0, seconds=time.monotonic() - clock)
    search = _Search(graph, cluster, sets, order, Pool.seeded(sets, seeds), clock, time_limit, target, lower, aim,
                     rel_gap, branch, offer, cancel, settings.patience if patience is None else patience, settings)
    try:
        search.run()
    except KeyboardInterrupt:
        search.outcome = "interrupted"
    if cancel is not None and cancel.is_set():
        search.outcome = "interrupted"
    return search.result()


@dataclasses.dataclass
class _Search:
    """One :func:`set_bound` run's state: the thresholds proven and seen, the target, the best split branching met."""

    graph: Graph
    cluster: Cluster
    sets: SetRelaxation
    order: np.ndarray
    pool: Pool
    clock: float
    time_limit: float
    target: float
    bound: float | None  # the highest threshold proven (or given) refuted
    aim: Callable[[], float] | None
    rel_gap: float
    branch: bool
    offer: Callable[[np.ndarray], None] | None
    cancel: threading.Event | None
    patience: float
    settings: DeviceSetSettings
    ceiling: float | None = None  # the lowest threshold converged
    reach: float | None = None  # the lowest threshold whose generation ran out of patience, undecided
    trace: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    counts: dict[str, int] = dataclasses.field(
        default_factory=lambda: {"thresholds": 0, "pricings": 0, "nodes": 0, "dives": 0})
    outcome: str = "time"
    split: np.ndarray | None = None  # the best split branching found (node position -> device)
    split_value: float = np.inf  # its max load
    heaviest: float | None = None

    def run(self) -> None:
        """The heaviest accelerator's bound, then one threshold after another until the outcome is known."""
        self.heaviest = heaviest_bound(self.sets, self.target, lower=self.bound, cancel=self.cancel,
                                       deadline=time.monotonic() + self.settings.heaviest_share * self.time_limit,
                                       settings=self.settings)
        if self.heaviest is not None:
            self.proven(self.heaviest)
        while not self.out_of_time():
            if self.aim is not None:
                self.target = min(self.target, self.aim())
            if self.bound is not None and self.trace and self.bound >= self.target:
                self.outcome = "target refuted"  # the target fell below what is proven already
                return
            if self.reach is not None and self.reach - (self.bound or 0.0) <= self.settings.resolution * self.target:
                self.reach = None  # refuted up to it: try above it again, with the columns gathered since
            threshold = self.next_threshold()
            if threshold is None:  # the target lies beyond the relaxation, at its limit
                self.outcome = "limit reached"
                if not self.branch or not self.branched():
                    return
            elif not self.generated(threshold):
                return

    def next_threshold(self) -> float | None:
        """The next threshold to generate at (halfway up, the target, or a bisection to the relaxation's limit);
        None at the limit (or with no float between the refuted and the converged: tiny loads, nothing to halve)."""
        low = self.bound or 0.0
        if self.ceiling is not None and self.ceiling <= self.target:
            threshold = (low + min(self.ceiling, self.reach or self.ceiling)) / 2.0
            if self.ceiling - low <= self.settings.resolution * self.target or not low < threshold < self.ceiling:
                return None
            return threshold
        if self.reach is not None and self.reach < self.target:
            return (low + self.reach) / 2.0  # below the undecided one
        if self.bound is None or self.target - self.bound <= self.settings.approach * self.target:
            return self.target
        return (self.bound + self.target) / 2.0

    def generated(self, threshold: float) -> bool:
        """One threshold's column generation, its verdict recorded; whether the search goes on."""
        self.counts["thresholds"] += 1
        until = min(self.clock + self.time_limit, time.monotonic() + self.patience * self.time_limit)
        generation = refute(self.sets, self.pool, threshold, until, self.cancel, self.counts,
                            settled=lambda at=threshold: self.settled() or self.beaten(at), settings=self.settings)
        if generation.verdict == "stopped":
            if self.settled() or self.beaten(threshold):
                return True  # (at the top of the loop: the target, lowered, is refuted already or lies below)
            if self.out_of_time():
                return False
            if len(self.trace) == (self.heaviest is not None):  # no generation refuted yet: too slow here to bound
                self.outcome = "undecided"
                return False
            self.reach = threshold if self.reach is None else min(self.reach, threshold)
            return True
        if generation.verdict == "converged":
            self.ceiling = threshold
            self.offered(generation.solution)
            return True
        return self.refuted(threshold)

    def branched(self) -> bool:
        """One branch-and-price beyond the relaxation's limit, its verdict recorded; whether the search goes on."""
        # At the target or, nearer the limit, where a split found is certified by the bound (within rel_gap of it):
        # the closer to the limit, the fewer branches either way.
        threshold = self.target if self.rel_gap <= 0.0 or self.bound is None else min(
            self.target, self.bound / (1.0 - self.rel_gap))
        self.counts["thresholds"] += 1
        verdict, device = branch_and_price(self.sets, self.order, self.pool, threshold, self.clock + self.time_limit,
                                           self.cancel, self.counts, self.settled, self.offered,
                                           settings=self.settings)
        if verdict == "settled":
            return True  # (the target, lowered, is below the bound: refuted, at the top of the loop)
        if verdict == "refuted":
            return self.refuted(threshold)  # (above the ceiling now: the next pass comes straight back here)
        value = max_load(self.graph, self.cluster, device[self.sets.unit]) if device is not None else np.inf
        if not (value < self.split_value and not check_feasibility(self.graph, self.cluster, device[self.sets.unit])):
            return False  # stopped (time, or a solution it could not branch on), or a split over memory
        self.split, self.split_value = device[self.sets.unit], value
        self.target = min(self.target, value * (1.0 - self.rel_gap))
        return True

    def proven(self, threshold: float) -> None:
        """``threshold`` proven a lower bound of every split: the bound, a point of the trace."""
        self.bound = threshold
        self.trace.append((time.monotonic() - self.clock, threshold))

    def refuted(self, threshold: float) -> bool:
        """``threshold`` refuted (:meth:`proven`); whether the search goes on (not once the target is refuted)."""
        self.proven(threshold)
        if threshold >= self.target:
            self.outcome = "target refuted"
            return False
        return True

    def out_of_time(self) -> bool:
        return time.monotonic() - self.clock >= self.time_limit or (self.cancel is not None and self.cancel.is_set())

    def settled(self) -> bool:
        """A split found meanwhile (``aim``) is certified by the bound proven already: any generation may stop."""
        return self.aim is not None and bool(self.trace) and self.bound is not None and self.aim() <= self.bound

    def beaten(self, threshold: float) -> bool:
        """A split found meanwhile has a max load below ``threshold`` (``aim`` names ``U (1 - rel_gap)`` for the best
        split ``U``): no generation can refute it, a lower one would do."""
        return self.aim is not None and self.aim() < threshold * (1.0 - self.rel_gap)

    def offered(self, solution: list[Column]) -> None:
        """Offer the rounding of a converged master's solution, when legal (memory, which the relaxation drops)."""
        if self.offer is None or not solution:
            return
        rounded = rounded_split(self.sets, solution)
        if rounded is None:
            return
        placement = rounded[self.sets.unit]
        if not check_feasibility(self.graph, self.cluster, placement):
            self.offer(placement)

    def result(self) -> SetBound:
        return SetBound(value=self.bound if self.trace else None, ceiling=self.ceiling, outcome=self.outcome,
                        trace=tuple(self.trace), thresholds=self.counts["thresholds"],
                        pricings=self.counts["pricings"], columns=len(self.pool.acc) + len(self.pool.cpu),
                        seconds=time.monotonic() - self.clock, split=self.split,
                        split_value=self.split_value if self.split is not None else None, nodes=self.counts["nodes"],
                        dives=self.counts["dives"], heaviest=self.heaviest)
