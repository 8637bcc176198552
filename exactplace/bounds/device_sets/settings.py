"""The device-set bound's tuning: one frozen :class:`DeviceSetSettings`, :data:`DEFAULT_DEVICE_SETS` its default.

Every step of :mod:`exactplace.bounds.device_sets` takes ``settings`` (default :data:`DEFAULT_DEVICE_SETS`); a test or
a benchmark asks for another tuning with ``dataclasses.replace(DEFAULT_DEVICE_SETS, field=value)``.
"""

from __future__ import annotations

import dataclasses

__all__ = ["DEFAULT_DEVICE_SETS", "DeviceSetSettings"]


@dataclasses.dataclass(frozen=True)
class DeviceSetSettings:
    """How the column generation over device sets smooths, prices, branches and spends its time (each field below).

    >>> DEFAULT_DEVICE_SETS.patience, dataclasses.replace(DEFAULT_DEVICE_SETS, patience=1.0).patience
    (0.25, 1.0)
    """

    #: Weight of the best duals so far in the smoothed duals a pricing is asked at, at first (then adapted:
    #: :func:`~exactplace.bounds.device_sets.smoothing.adapted_weight`).
    smoothing: float = 0.5
    #: The most the smoothing's weight rises to (at 1 the pricing would be asked at the center again and again).
    smoothing_cap: float = 0.99
    #: The share of the time limit :func:`~exactplace.bounds.device_sets.set_bound`'s first step,
    #: :func:`~exactplace.bounds.device_sets.heaviest_bound` (a MIP), may take.
    heaviest_share: float = 0.1
    #: :func:`~exactplace.bounds.device_sets.heaviest_bound` takes HiGHS's dual bound ``b`` this much lower, times
    #: ``1 + |b|`` (relative, and absolute for loads near 0), below HiGHS's tolerances (1e-7 on feasibility and on the
    #: duals): what it refutes must hold for the exact loads.
    heaviest_margin: float = 1e-6
    #: The covering master hands over to the partitioning one once its value is within this of ``k`` (relative; at
    #: once when no column prices out).
    cover_room: float = 0.01
    #: Bytes one pricing's DP may hold (its fronts and their trace back), then it stops as at its deadline: duals of
    #: nearly one value per time leave its fronts unpruned, and without a cap such a pricing grows until the process
    #: is killed for memory.
    pricing_memory: int = 2 * 2**30
    #: A pricing at the smoothed duals may take this many times the last exact pricing (at least a second), then the
    #: weight falls to 0 and the master's own duals are priced: near the packing bound's duals (the first center)
    #: values nearly proportional to times leave the DP's fronts unpruned.
    smoothed_pricing_slack: float = 10.0
    #: At smoothed duals the CPU cores' exact pricing gets this many seconds, then their fractional knapsack stands in
    #: for it (an upper bound: Farley's bound still holds).
    cpu_pricing_seconds: float = 0.2
    #: Columns a pricing adds at most (the best sets of its final Pareto front).
    columns_per_pricing: int = 10
    #: Master solves priced greedily (:meth:`~exactplace.bounds.device_sets.Pricer.cover`, at the master's duals)
    #: while that finds improving columns, before an exact pricing (Farley's bound, smoothed duals) is due again.
    greedy_rounds: int = 10
    #: The greedy cover is used (as columns beside an exact pricing's, and alone for ``greedy_rounds``) only while the
    #: last exact pricing took more than this many master solves: where pricing is cheap, greedy rounds only delay
    #: the exact pricing's refutation.
    greedy_when: float = 5.0
    #: A refutation needs Farley's bound above ``k`` by at least this (floating-point sums of duals).
    margin: float = 1e-7
    #: A pair's share of one device counts as 0 or 1 within this (the master's solution, HiGHS's tolerance).
    fractional: float = 1e-6
    #: A branch node's generation is put off (to be taken up again, with four times the patience, once every other
    #: node is decided) after this share of the branching's time: near the threshold's own limit a node's generation
    #: tails off, while the split sought may lie in the next node.
    node_patience: float = 0.05
    #: A branch-and-price's dive (:func:`~exactplace.bounds.device_sets.diving.dive`, from its first fractional node)
    #: may take this share of the branching's time.
    dive_patience: float = 0.2
    #: A dive's fractional columns tried at each level, the largest first.
    dive_width: int = 2
    #: A dive runs at most this many times ``k + l`` generations (a threshold below the optimum refutes every path).
    dive_depths: int = 2
    #: Branching pairs: the nearest in the pricing's order among those whose share of one device is this close to the
    #: most fractional one's distance from 0 and 1.
    near_spread: float = 0.1
    #: The artificial columns' cost rises tenfold, up to this multiple of ``k + 1``, while the master's optimum rests
    #: on them.
    artificial_cost_cap: float = 1e6
    #: The bisection ends when the refuted and the converged thresholds are this close (relative).
    resolution: float = 1e-6
    #: A threshold's generation is left undecided after this share of the time limit; the next thresholds lie below
    #: it. When not even the first threshold is decided by then, the bound gives up (the relay's HiGHS leg gets the
    #: time): on some graphs thresholds stay undecided however long they run.
    patience: float = 0.25
    #: The target itself is tried once the highest refuted threshold is within this of it (relative); until then,
    #: halfway to it: a threshold above the relaxation's limit is only given up at convergence, the slowest way a
    #: generation ends.
    approach: float = 1e-3


#: The tuning every entry point uses unless given another.
DEFAULT_DEVICE_SETS = DeviceSetSettings()
