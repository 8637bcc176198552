"""Test oracle: the device-set pricing DP in pure Python, as exactplace shipped it before the native one.

``exactplace.bounds.device_sets`` now prices with the C++ DP (``dp_native/set_pricing.cpp``); this is the
Python version it replaced (``formulations/device_sets.py`` at commit 55f53b6, verbatim but for the
fractional-knapsack room, now measured from the threshold plus its tolerance as in the C++), kept only so
that tests can check the native DP against it. The algorithm: ``dp_native/set_pricing.hpp``.
"""

from __future__ import annotations

import numpy as np
from exactplace.formulations.device_sets import LOAD_TOLERANCE


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
                    hope = new_values + np.interp(cap - new_loads, xs, ys, right=ys[-1])
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
