"""The device-set relaxation of the non-contiguous max-load IP, and its exact pricing (issue 21).

Why: the assignment IP's LP (:func:`~.throughput.noncontiguous_ip`) spreads every colour class
evenly over the accelerators, so it charges no communication at all; on the ResNet-50 layer graphs
its bound is the packing bound ``W / (k + 1/10)`` and every bit of communication a balanced split
must pay (the whole gap, 0.6%) is left to branching. Here the variables are whole *device sets*,
whose loads include their communication exactly.

The relaxation, for a threshold ``T`` (one machine of ``k`` identical accelerators, ``l`` CPU cores;
loads are the plain sums of the evaluator, forward plus backward):

.. math::

    \\min \\sum_{S \\in \\mathcal{A}} x_S \\quad\\text{s.t.}\\quad
    \\sum_{S \\ni c} x_S + \\sum_{C \\ni c} y_C = 1 \\;(\\text{each class } c), \\quad
    \\sum_{C \\in \\mathcal{C}} y_C \\le l, \\quad x, y \\ge 0

``A``: the class sets one accelerator can hold within ``T``, by :func:`set_load` (accelerator time
plus each communication group whose members are not all on one side of ``S``, once: exactly the
evaluator's charge), every class supported and alone within the memory cap (the memory *sum* is
dropped: a relaxation). ``C``: the class sets one CPU core runs within ``T``. A split with max load
``<= T`` gives an integer solution of value ``<= k`` (its accelerators' sets and CPU cores' sets), so a
value above ``k`` *refutes* ``T``: every split's max load exceeds ``T``.

Farley's bound makes the refutation exact whatever the LP solver's accuracy: for *any* duals
``pi`` (one per class), with ``z = max(1, max_{S in A} pi(S))`` and ``z_C = max_{C in C} pi(C)`` (both
``>= 0``: the empty set), ``(sum(pi) - l z_C) / z`` is a dual feasible value of the relaxation, hence a
lower bound on it. Both maxima are computed exactly by :class:`Pricer` (a dynamic program, not a
MIP), so a bound above ``k`` proves the refutation.

Pricing, ``max pi(S)`` over ``S`` in ``A``: a dynamic program over the classes in a fixed order
(:func:`frontier_order`). A communication group is *open* while some of its members are decided and
some are not; an open group whose decided members all lie on one side of ``S`` is recorded in the
state by that side, a group already split is charged (once) and forgotten. Per state, the Pareto
front of (load, value) pairs. The state count is ``2^w`` for ``w`` open groups; the greedy order keeps
``w`` at 2 on layer_resnet50_inference, 4 on its training graph, 5 on op_bert6_inference and
layer_gnmt_inference. Partial sets whose value plus the fractional-knapsack bound of the classes left
cannot exceed the floor asked for (1 for ``A``) are dropped, so the result is exact above it.
Measured: 0.1-0.2 s a pricing on layer_resnet50_inference, where a HiGHS MIP pricer took 0.3-10 s.

Examples
--------
>>> from exactplace import read_workload, workload_path
>>> w = read_workload(workload_path("layer_bert24_inference"))
>>> sets = SetRelaxation.of(w.graph, w.cluster)
>>> pricer = Pricer(sets.acc, sets.on_acc, sets.group_cost, sets.members, frontier_order(sets))
>>> value, found = pricer.price(np.full(sets.classes, 0.2), threshold=17.7147)
>>> bool(value > 1.0), all(sets.load(s) <= 17.7147 + 1e-9 for s in found)
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph

from .throughput import unit_data

__all__ = ["Pricer", "SetRelaxation", "frontier_order"]

#: Loads within this of the threshold count as within it (the relaxation only grows: still a bound).
LOAD_TOLERANCE = 1e-9


@dataclass(frozen=True)
class SetRelaxation:
    """A homogeneous one-machine instance by colour class: what the relaxation's columns are built from."""

    acc: np.ndarray         # (U,) accelerator time, forward plus backward
    cpu: np.ndarray         # (U,) CPU time
    on_acc: np.ndarray      # (U,) bool: supported and alone within the memory cap
    group_cost: np.ndarray  # (G,)
    members: tuple[np.ndarray, ...]  # (G,) the distinct classes of each group: source first, then targets
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
        incidence = np.zeros((data.groups, data.units), dtype=bool)
        for g, m in enumerate(members):
            incidence[g, m] = True
        return cls(acc=data.acc.sum(axis=1), cpu=data.cpu.sum(axis=1),
                   on_acc=data.supported & (data.memory <= cluster.memory_cap),
                   group_cost=data.group_cost.astype(np.float64), members=tuple(np.array(m) for m in members),
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

    def device_sets(self, device: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The accelerators' and the CPU cores' class sets of a placement (node position -> device)."""
        of_class = np.zeros(self.classes, dtype=np.int64)
        of_class[self.unit] = device
        acc = [of_class == d for d in range(self.accelerators)]
        cpu = [of_class == d for d in range(self.accelerators, self.accelerators + self.cpus)]
        return [s for s in acc if s.any()], [s for s in cpu if s.any()]


def frontier_order(sets: SetRelaxation) -> np.ndarray:
    """The classes in an order that keeps few groups open: greedily the class that opens the fewest groups
    net of those it closes, among the classes sharing an open group when there are any (ties: the class
    holding the earliest node position, which follows the input's order)."""
    units = sets.classes
    first_node = np.full(units, np.iinfo(np.int64).max)
    np.minimum.at(first_node, sets.unit, np.arange(len(sets.unit)))
    groups_of = [np.flatnonzero(sets.incidence[:, u]) for u in range(units)]
    undecided = sets.incidence.sum(axis=1)
    opened = np.zeros(len(undecided), dtype=bool)
    done = np.zeros(units, dtype=bool)
    order = []
    for _ in range(units):
        live = np.flatnonzero(opened & (undecided > 0))
        touching = np.flatnonzero(sets.incidence[live].any(axis=0) & ~done) if live.size else np.zeros(0, int)
        pool = touching if touching.size else np.flatnonzero(~done)
        net = [int((~opened[groups_of[u]]).sum() - (undecided[groups_of[u]] == 1).sum()) for u in pool.tolist()]
        best = int(pool[np.lexsort((first_node[pool], net))[0]])
        order.append(best)
        done[best] = True
        opened[groups_of[best]] = True
        undecided[groups_of[best]] -= 1
    return np.array(order, dtype=np.int64)


class Pricer:
    """``max pi(S)`` over the class sets within a threshold, by the module's dynamic program.

    ``acc``: each class's time; ``allowed``: classes that may be in a set; ``group_cost`` and
    ``members``: the communication groups (empty for a CPU core: a plain knapsack); ``order``: the
    classes' processing order.
    """

    def __init__(self, acc: np.ndarray, allowed: np.ndarray, group_cost: np.ndarray,
                 members: tuple[np.ndarray, ...] | list[np.ndarray], order: np.ndarray) -> None:
        self.acc, self.allowed, self.cost, self.order = acc.astype(np.float64), allowed, group_cost, order
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        self.first = np.array([position[m].min() for m in members], dtype=np.int64)
        self.last = np.array([position[m].max() for m in members], dtype=np.int64)
        self.groups_of: list[list[int]] = [[] for _ in range(len(acc))]
        for g, m in enumerate(members):
            for u in np.unique(m).tolist():
                self.groups_of[u].append(g)

    def _fill_bounds(self, pi: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each position ``i``: the fractional knapsack of the positive-value classes at ``i`` and after, as
        breakpoints (capacity, value) of a concave piecewise-linear function."""
        bounds = []
        for i in range(len(self.order) + 1):
            rest = self.order[i:]
            rest = rest[pi[rest] > 0]
            rest = rest[np.argsort(-pi[rest] / np.maximum(self.acc[rest], 1e-300), kind="stable")]
            bounds.append((np.concatenate([[0.0], np.cumsum(self.acc[rest])]),
                           np.concatenate([[0.0], np.cumsum(pi[rest])])))
        return bounds

    def price(self, duals: np.ndarray, threshold: float, floor: float = 1.0,
              keep: int = 10) -> tuple[float, list[np.ndarray]]:
        """``(max pi(S), sets)``: the maximum when it exceeds ``floor`` (else ``floor``: no set exceeds it),
        and up to ``keep`` sets (bool per class) of value above ``floor``, best first."""
        pi = np.where(self.allowed, duals, 0.0)
        bounds = self._fill_bounds(pi)
        cap = threshold + LOAD_TOLERANCE * max(1.0, threshold)
        # State: the sides of the open, unsplit groups -> (loads, values), a Pareto front by ascending load.
        states: dict[tuple, tuple[np.ndarray, np.ndarray]] = {(): (np.zeros(1), np.zeros(1))}
        history: list[tuple[list[tuple], dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]]]] = []
        for i, u in enumerate(self.order.tolist()):
            grown: dict[tuple, list[tuple[np.ndarray, ...]]] = {}
            keys = list(states)
            xs, ys = bounds[i + 1]
            for s, key in enumerate(keys):
                loads, values = states[key]
                side = dict(key)
                for x in (0, 1) if self.allowed[u] else (0,):
                    charge, after = 0.0, dict(side)
                    for g in self.groups_of[u]:
                        if g in side:
                            if side[g] != x:
                                charge += self.cost[g]  # split now: charged once, then forgotten
                                del after[g]
                            elif self.last[g] == i:
                                del after[g]  # closed on one side: never charged
                        elif self.first[g] == i:
                            after[g] = x
                    new_loads = loads + (self.acc[u] * x + charge)
                    new_values = values + pi[u] * x
                    hope = new_values + np.interp(threshold - new_loads, xs, ys, right=ys[-1])
                    kept = np.flatnonzero((new_loads <= cap) & (hope > floor + 1e-12))
                    if kept.size:
                        grown.setdefault(tuple(sorted(after.items())), []).append(
                            (new_loads[kept], new_values[kept], np.full(kept.size, s), kept,
                             np.full(kept.size, x, dtype=np.int8)))
            states, steps = {}, {}
            for key, parts in grown.items():
                loads, values, parent, entry, x = (np.concatenate(column) for column in zip(*parts))
                by_load = np.lexsort((-values, loads))
                loads, values = loads[by_load], values[by_load]
                best_before = np.maximum.accumulate(np.concatenate([[-np.inf], values[:-1]]))
                on_front = values > best_before + 1e-12
                states[key] = (loads[on_front], values[on_front])
                front = by_load[on_front]  # positions in the unsorted candidates, where the parent pointers are
                steps[key] = (parent[front], entry[front], x[front])
            history.append((keys, steps))
            if not states:
                return floor, []
        values = states[()][1]
        top = [int(e) for e in np.argsort(-values, kind="stable")[:keep] if values[e] > floor + 1e-12]
        return (float(values.max()) if top else floor), [self._trace_back(history, e) for e in top]

    def _trace_back(self, history: list, entry: int) -> np.ndarray:
        """The set of the final front's ``entry``, following the parent pointers back."""
        chosen = np.zeros(len(self.order), dtype=bool)
        key: tuple = ()
        for i in range(len(self.order) - 1, -1, -1):
            keys, steps = history[i]
            parent, index, x = steps[key]
            chosen[self.order[i]] = bool(x[entry])
            key, entry = keys[int(parent[entry])], int(index[entry])
        return chosen
