"""The device-set relaxation of the non-contiguous max-load IP, and the class order its pricing runs in.

The assignment IP's LP (:func:`~.noncontiguous.noncontiguous_ip`) spreads every colour class evenly
over the accelerators, so it charges no communication at all. Here the variables are whole *device
sets*, whose loads include their communication exactly (:class:`SetRelaxation`, the relaxation and
why a value above ``k`` refutes a threshold). The pricing DP of :mod:`exactplace.bounds.device_sets`
runs over the classes in :func:`frontier_order`; :func:`lightest_heavy_set` is a MIP for the least
load of a heavy set.

>>> from exactplace import read_workload, workload_path
>>> w = read_workload(workload_path("layer_bert24_inference"))
>>> sets = SetRelaxation.of(w.graph, w.cluster)
>>> sorted(frontier_order(sets).tolist()) == list(range(sets.classes))
True
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.dag import strong_components
from exactplace.core.graph import Graph

from .model import Kind, Model
from .units import unit_data

__all__ = ["DEFAULT_ORDER", "LOAD_TOLERANCE", "OrderSettings", "SetRelaxation", "first_node_positions",
           "frontier_order", "lightest_heavy_set", "order_cost"]

#: Loads within this of the threshold count as within it (the relaxation only grows: still a bound).
LOAD_TOLERANCE = 1e-9


@dataclass(frozen=True)
class SetRelaxation:
    """A homogeneous one-machine instance by colour class: what the relaxation's columns are built from.

    The relaxation, for a threshold ``T`` (one machine of ``k`` identical accelerators, ``l`` CPU cores;
    loads are the plain sums of the evaluator, forward plus backward):

    .. math::

        \\min \\sum_{S \\in \\mathcal{A}} x_S \\quad\\text{s.t.}\\quad
        \\sum_{S \\ni c} x_S + \\sum_{C \\ni c} y_C = 1 \\;(\\text{each class } c), \\quad
        \\sum_{C \\in \\mathcal{C}} y_C \\le l, \\quad x, y \\ge 0

    ``A``: the class sets one accelerator can hold within ``T``, by :meth:`load` (accelerator time plus
    each communication group whose members are not all on one side of ``S``, once: the evaluator's
    charge), every class supported and alone within the memory cap (the memory *sum* is dropped: a
    relaxation). ``C``: the class sets one CPU core runs within ``T``. A split with max load ``<= T``
    gives an integer solution of value ``<= k``, so a value above ``k`` *refutes* ``T``: every split's
    max load exceeds ``T``.

    Farley's bound makes the refutation exact whatever the LP solver's accuracy: for *any* duals ``pi``
    (one per class), with ``z = max(1, max_{S in A} pi(S))`` and ``z_C = max_{C in C} pi(C)`` (both
    ``>= 0``: the empty set), ``(sum(pi) - l z_C) / z`` is a dual feasible value, hence a lower bound on
    the relaxation. Both maxima are computed exactly (a dynamic program: the pricing of
    :mod:`exactplace.bounds.device_sets`, in C++ in ``dp_native/set_pricing.hpp``), so a bound above
    ``k`` proves the refutation.

    >>> from exactplace import read_workload, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> sets = SetRelaxation.of(w.graph, w.cluster)
    >>> whole = np.ones(sets.classes, dtype=bool)
    >>> bool(sets.load(whole) == sets.acc.sum())  # one accelerator holding everything copies nothing
    True
    """

    acc: np.ndarray         # (U,) accelerator time, forward plus backward
    cpu: np.ndarray         # (U,) CPU time
    on_acc: np.ndarray      # (U,) bool: supported and alone within the memory cap
    memory: np.ndarray      # (U,) memory (not summed by the relaxation; a split's rounding checks it)
    memory_cap: float       # an accelerator's memory, the cluster's shared slack included
    group_cost: np.ndarray  # (G,)
    members: tuple[np.ndarray, ...]  # (G,) the distinct classes of each group (none alike, each of two or more)
    incidence: np.ndarray   # (G, U) bool: class in group
    unit: np.ndarray        # node position -> class
    accelerators: int
    cpus: int

    @classmethod
    def of(cls, graph: Graph, cluster: Cluster) -> SetRelaxation:
        """The classes of ``graph`` on ``cluster`` (one machine of identical accelerators)."""
        if not cluster.is_homogeneous or cluster.is_two_level:
            raise ValueError("the device-set relaxation takes one machine of identical accelerators")
        data = unit_data(graph, graph.color)
        members: list[list[int]] = [[int(s)] for s in data.group_source]
        for g, t in zip(data.pair_group.tolist(), data.pair_target.tolist()):
            members[g].append(int(t))
        group_cost, kept, incidence = _distinct_groups([np.array(m) for m in members], data.group_cost, data.units)
        return cls(acc=data.acc.sum(axis=1), cpu=data.cpu.sum(axis=1),
                   on_acc=data.supported & (data.memory <= cluster.memory_cap), memory=data.memory,
                   memory_cap=cluster.memory_cap, group_cost=group_cost, members=kept,
                   incidence=incidence, unit=data.unit, accelerators=cluster.accelerators, cpus=cluster.cpus)

    @property
    def classes(self) -> int:
        """Number of colour classes (the relaxation's rows, less the CPU row)."""
        return len(self.acc)

    def load(self, chosen: np.ndarray) -> float:
        """An accelerator's load holding the classes ``chosen`` (bool per class): their accelerator time plus
        every group with members on both sides, once (the evaluator's charge)."""
        inside = (self.incidence & chosen[None, :]).any(axis=1)
        outside = (self.incidence & ~chosen[None, :]).any(axis=1)
        return float(self.acc[chosen].sum() + self.group_cost[inside & outside].sum())

    def merged(self, pairs: tuple[tuple[int, int], ...]) -> tuple[SetRelaxation, np.ndarray]:
        """The relaxation with each pair of classes (and so every chain of pairs) made one class, and the map
        class -> merged class: a merged class's times are its members' sums, it may be on an accelerator when
        all of them may, and a group whose members all fall in one merged class is dropped (never split), as
        :func:`_distinct_groups` does."""
        first, second = np.array(pairs, dtype=np.int64).reshape(-1, 2).T
        # Each pair an edge both ways: the strong components are the chains of pairs.
        into = strong_components(self.classes, np.concatenate([first, second]), np.concatenate([second, first]))
        count = int(into.max()) + 1 if self.classes else 0
        group_cost, members, incidence = _distinct_groups([np.unique(into[m]) for m in self.members],
                                                          self.group_cost, count)
        on_acc = np.ones(count, dtype=bool)
        np.logical_and.at(on_acc, into, self.on_acc)
        return SetRelaxation(acc=np.bincount(into, self.acc, count), cpu=np.bincount(into, self.cpu, count),
                             on_acc=on_acc, memory=np.bincount(into, self.memory, count),
                             memory_cap=self.memory_cap, group_cost=group_cost, members=members,
                             incidence=incidence, unit=into[self.unit], accelerators=self.accelerators,
                             cpus=self.cpus), into

    def device_sets(self, device: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The accelerators' and the CPU cores' class sets of a placement (node position -> device)."""
        of_class = np.zeros(self.classes, dtype=np.int64)
        of_class[self.unit] = device
        acc = [of_class == d for d in range(self.accelerators)]
        cpu = [of_class == d for d in range(self.accelerators, self.accelerators + self.cpus)]
        return [s for s in acc if s.any()], [s for s in cpu if s.any()]


def _distinct_groups(members: list[np.ndarray], cost: np.ndarray,
                     classes: int) -> tuple[np.ndarray, tuple[np.ndarray, ...], np.ndarray]:
    """The groups a set's load can tell apart: those of one class set made one, their costs summed (a set splits
    all of them or none: a training graph's forward and backward groups of one edge), and those within one class or
    of no cost dropped (they never change a load); as ``(cost, members, incidence)``. The pricing DP keeps a state
    per side of each open group, so every group dropped is a distinction fewer and the pricing faster."""
    at: dict[bytes, int] = {}
    kept: list[np.ndarray] = []
    summed: list[float] = []
    for group, chosen in enumerate(members):
        classes_in = np.unique(chosen)
        if len(classes_in) < 2 or not cost[group] > 0:
            continue
        key = classes_in.tobytes()
        if key not in at:
            at[key] = len(kept)
            kept.append(chosen)
            summed.append(0.0)
        summed[at[key]] += float(cost[group])
    incidence = np.zeros((len(kept), classes), dtype=bool)
    for row, chosen in enumerate(kept):
        incidence[row, chosen] = True
    return np.array(summed, dtype=np.float64), tuple(kept), incidence


@dataclass(frozen=True)
class OrderSettings:
    """How :func:`frontier_order` searches."""

    tries: int = 14
    """Greedy runs with ties broken at random (seeded), beside its two deterministic ones."""
    stop_every: int = 16
    """The greedy asks its ``stop`` every this many steps."""


DEFAULT_ORDER = OrderSettings()


def frontier_order(sets: SetRelaxation, stop: Callable[[], bool] | None = None,
                   settings: OrderSettings = DEFAULT_ORDER) -> np.ndarray:
    """The classes in an order that keeps few groups open: the best, by :func:`order_cost`, of a greedy
    (:func:`_greedy_order`) with ties broken by the earliest node position (the input's order), by the most groups
    closed, and at random (``settings.tries`` seeded draws: the same order each call).

    ``stop``: asked as the greedy runs (each try takes time quadratic in the classes: minutes on thousands); once it
    says so, the best of the tries finished is returned, and TimeoutError is raised when none has."""
    first_node = first_node_positions(sets)
    rng = np.random.default_rng(0)
    ties = [(first_node, False), (first_node, True), *((rng.permutation(sets.classes), False)
                                                        for _ in range(settings.tries))]
    best, best_cost = None, math.inf
    for tie, closing_first in ties:
        try:
            order = _greedy_order(sets, tie, closing_first=closing_first, stop=stop, stop_every=settings.stop_every)
        except TimeoutError:
            if best is None:
                raise
            break
        cost = order_cost(sets, order)
        if cost < best_cost:
            best, best_cost = order, cost
    return best


def first_node_positions(sets: SetRelaxation) -> np.ndarray:
    """Per class, the earliest position of its nodes (the input's order): the greedy's first tie-break."""
    first_node = np.full(sets.classes, np.iinfo(np.int64).max)
    np.minimum.at(first_node, sets.unit, np.arange(len(sets.unit)))
    return first_node


def order_cost(sets: SetRelaxation, order: np.ndarray) -> float:
    """The pricing DP's states along ``order`` at most: the sum over its steps of ``2 ** (groups open)``."""
    undecided = sets.incidence.sum(axis=1)
    opened = np.zeros(len(undecided), dtype=bool)
    total = 0.0
    for u in order.tolist():
        groups = sets.incidence[:, u]
        opened |= groups
        undecided = undecided - groups
        total += 2.0 ** int((opened & (undecided > 0)).sum())
    return total


def _greedy_order(sets: SetRelaxation, ties: np.ndarray, *, closing_first: bool,
                  stop: Callable[[], bool] | None = None, stop_every: int = DEFAULT_ORDER.stop_every) -> np.ndarray:
    """Greedily the class that opens the fewest groups net of those it closes (``closing_first``: then the one that
    closes the most), among the classes sharing an open group when there are any; ties: the lowest ``ties`` (one
    number per class). TimeoutError when ``stop`` says so before the order is complete."""
    incidence = sets.incidence
    undecided = incidence.sum(axis=1)
    opened = np.zeros(len(undecided), dtype=bool)
    done = np.zeros(sets.classes, dtype=bool)
    order = []
    for step in range(sets.classes):
        if stop is not None and step % stop_every == 0 and stop():
            raise TimeoutError("the class order was stopped")
        live = opened & (undecided > 0)
        touching = np.flatnonzero(incidence[live].any(axis=0) & ~done) if live.any() else np.zeros(0, np.int64)
        pool = touching if touching.size else np.flatnonzero(~done)
        groups = incidence[:, pool]
        closes = (groups & (undecided == 1)[:, None]).sum(axis=0)
        net = (groups & ~opened[:, None]).sum(axis=0) - closes
        keys = (ties[pool], -closes, net) if closing_first else (ties[pool], net)
        best = int(pool[np.lexsort(keys)[0]])
        order.append(best)
        done[best] = True
        opened |= incidence[:, best]
        undecided = undecided - incidence[:, best]
    return np.array(order, dtype=np.int64)


def lightest_heavy_set(sets: SetRelaxation, need: float) -> tuple[Model, np.ndarray]:
    """The least load of one accelerator's class set holding at least ``need`` accelerator time, as a MIP; and the
    set's variables ``x`` (per class).

    .. math::

        \\min \\sum_c acc_c x_c + \\sum_g cost_g\\, cut_g \\quad\\text{s.t.}\\quad
        \\sum_c acc_c x_c \\ge need, \\quad
        cut_g \\ge x_t - x_s,\\; cut_g \\ge x_s - x_t \\;(\\text{each group } g, \\text{its first member } s,
        \\text{each other member } t), \\quad x_c \\in \\{0, 1\\}, \\; 0 \\le cut_g \\le 1

    with ``x_c = 0`` for a class no accelerator may hold. A group is charged exactly when a member lies on the other
    side from its first one (its members are not all on one side), so the objective at an integral ``x`` is
    :meth:`SetRelaxation.load`; the memory sum is dropped, as in the relaxation. Its use, a lower bound on every
    split's max load: :func:`exactplace.bounds.device_sets.heaviest_bound`.

    >>> from exactplace import read_workload, workload_path
    >>> from exactplace.solvers import solve_model
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> sets = SetRelaxation.of(w.graph, w.cluster)
    >>> model, x = lightest_heavy_set(sets, need=15.0)
    >>> out = solve_model(model, "highs")
    >>> chosen = out.values[x] > 0.5
    >>> bool(sets.acc[chosen].sum() >= 15.0), bool(abs(sets.load(chosen) - out.objective) < 1e-6)
    (True, True)
    """
    model = Model("the lightest accelerator set holding `need`")
    acc = np.where(sets.on_acc, sets.acc, 0.0)
    x = model.add_vars(sets.classes, ub=sets.on_acc.astype(np.float64), kind=Kind.INTEGER, name="x: class in the set")
    cut = model.add_vars(len(sets.group_cost), ub=1.0, name="cut: group split by the set")
    model.add_terms("the set holds `need`", (x[None, :], acc[None, :]), lb=need)
    group = np.concatenate([np.full(len(m) - 1, g) for g, m in enumerate(sets.members)] or [np.zeros(0, np.int64)])
    source = np.concatenate([np.full(len(m) - 1, m[0]) for m in sets.members] or [np.zeros(0, np.int64)])
    target = np.concatenate([m[1:] for m in sets.members] or [np.zeros(0, np.int64)])
    model.add_terms("a member in, the first one out: the group is cut", (cut[group], 1.0), (x[target], -1.0),
                    (x[source], 1.0), lb=0.0)
    model.add_terms("the first member in, another out: the group is cut", (cut[group], 1.0), (x[source], -1.0),
                    (x[target], 1.0), lb=0.0)
    model.minimize(np.concatenate([x, cut]), np.concatenate([acc, sets.group_cost]))
    return model, x
