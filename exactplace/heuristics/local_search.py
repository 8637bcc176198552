"""The paper's local-search baseline for max-load: best single moves from random starts.

From a random placement, repeatedly apply the best single move -- one colour class (a node,
when uncoloured: a class is the smallest thing that can move without breaking colocation) to
another device it fits on -- until no move lowers the max-load; restart ``restarts`` times from
new random placements and keep the best. :class:`LoadState` keeps the loads incrementally and
finds the best move; :func:`descend` (also METIS's refinement) makes the moves.

The search space is every placement (not contiguous): the result can beat the DP.
Deterministic for a given ``seed`` (restart ``r`` uses seed ``seed + r``). Honours the time
limit (best placement so far, ``limit=time``).
"""

from __future__ import annotations

import math
import time

import numpy as np

from exactplace.core.errors import ExactplaceError, check_param
from exactplace.core.params import Integer, Option
from exactplace.core.placement import Limit, Status
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators.max_load import max_load
from exactplace.heuristics.memory import settle_memory
from exactplace.methods.base import Method

__all__ = ["SEED", "LoadState", "LocalSearch", "descend"]

#: The ``seed`` option of the randomized placers (local search, metis).
SEED = Option("seed", Integer(low=0), 0, "random seed (the result is deterministic for a given seed)")


class LoadState:
    """Per-device compute and communication under a class -> device assignment, updated per move.

    Loads are updated incrementally (per communication group: which devices receive it), and
    equal the max-load evaluator's (:func:`descend` checks them at the end of every descent).
    """

    def __init__(self, problem: Problem) -> None:
        graph, cluster = problem.graph, problem.cluster
        self.k, self.num_devices = cluster.accelerators, cluster.num_devices
        self.overlap = bool(problem.option("overlap"))
        classes = int(graph.color.max()) + 1
        self.color = graph.color.tolist()
        # Node positions per class, ascending (one stable sort: a scan per class is quadratic in huge graphs).
        order = np.argsort(graph.color, kind="stable").tolist()
        ends = np.cumsum(np.bincount(graph.color, minlength=classes)).tolist()
        self.members = [order[a:b] for a, b in zip([0, *ends[:-1]], ends)]
        acc = np.bincount(graph.color, weights=np.where(graph.supported, graph.acc_time, 0.0), minlength=classes)
        cpu = np.bincount(graph.color, weights=graph.cpu_time, minlength=classes)
        self.supported = (np.bincount(graph.color, weights=~graph.supported, minlength=classes) == 0).tolist()
        self.memory = np.bincount(graph.color, weights=graph.memory, minlength=classes).tolist()
        self.time = [[acc[c] / cluster.speed[d] if d < self.k else cpu[c] for d in range(self.num_devices)]
                     for c in range(classes)]
        self.limit = cluster.memory_limit.tolist()
        self.cost = graph.group_cost.tolist()
        self.group_class = graph.color[graph.group_source].tolist()
        receivers: list[list[int]] = [[] for _ in self.cost]  # receiving classes, one per edge
        for g, v in zip(graph.edge_group.tolist(), graph.dst.tolist()):
            receivers[g].append(self.color[v])
        self.receivers = receivers
        self.out_groups: list[list[int]] = [[] for _ in range(classes)]
        self.in_groups: list[list[int]] = [[] for _ in range(classes)]
        self.received: list[dict[int, int]] = [{} for _ in range(classes)]  # class -> {group: its receiving edges}
        for g, c in enumerate(self.group_class):
            self.out_groups[c].append(g)
            for r in receivers[g]:
                self.received[r][g] = self.received[r].get(g, 0) + 1
        for r, groups in enumerate(self.received):
            self.in_groups[r] = sorted(groups)
        self.touched = [sorted(set(self.out_groups[c]) | set(self.in_groups[c])) for c in range(classes)]
        self.neighbours = [sorted({self.group_class[g] for g in self.in_groups[c]}
                                  | {r for g in self.out_groups[c] for r in receivers[g]}) for c in range(classes)]

    def reset(self, device: list[int]) -> None:
        self.device = list(device)
        self.compute = [0.0] * self.num_devices
        self.used = [0.0] * self.k
        for c, d in enumerate(device):
            self.compute[d] += self.time[c][d]
            if d < self.k:
                self.used[d] += self.memory[c]
        self.count = [dict() for _ in self.cost]  # group -> {device: receiving edges}
        for g, classes in enumerate(self.receivers):
            for r in classes:
                d = device[r]
                self.count[g][d] = self.count[g].get(d, 0) + 1
        self.comm = [0.0] * self.num_devices
        self.charged = [self._charges(g, device[self.group_class[g]], self.count[g]) for g in range(len(self.cost))]
        for charges in self.charged:
            for d, c in charges:
                self.comm[d] += c

    def _charges(self, g: int, source: int, count: dict[int, int]) -> list[tuple[int, float]]:
        cost, k = self.cost[g], self.k
        others = [d for d, n in count.items() if n and d != source]
        if not others:
            return []
        charges = [(d, cost) for d in others if d < k]
        if source < k:
            charges.append((source, cost))
        return charges

    def load(self, d: int, compute: float, comm: float) -> float:
        return max(compute, comm) if self.overlap else compute + comm

    def loads(self) -> list[float]:
        return [self.load(d, self.compute[d], self.comm[d]) for d in range(self.num_devices)]

    def fits(self, c: int, d: int) -> bool:
        if d >= self.k:
            return True
        return self.supported[c] and self.used[d] + self.memory[c] <= self.limit[d]

    def delta(self, c: int, target: int) -> dict[int, tuple[float, float]]:
        """Device -> (compute change, communication change) if class ``c`` moves to ``target``."""
        source = self.device[c]
        change: dict[int, list[float]] = {source: [-self.time[c][source], 0.0], target: [self.time[c][target], 0.0]}
        received = self.received[c]
        for g in self.touched[c]:
            count = self.count[g]
            moved = received.get(g, 0)
            if moved:
                count = dict(count)
                count[source] -= moved
                count[target] = count.get(target, 0) + moved
            own = self.group_class[g] == c
            after = self._charges(g, target if own else self.device[self.group_class[g]], count)
            for d, cost in self.charged[g]:
                change.setdefault(d, [0.0, 0.0])[1] -= cost
            for d, cost in after:
                change.setdefault(d, [0.0, 0.0])[1] += cost
        return {d: (a, b) for d, (a, b) in change.items()}

    def apply(self, c: int, target: int) -> None:
        source = self.device[c]
        for d, (dc, dm) in self.delta(c, target).items():
            self.compute[d] += dc
            self.comm[d] += dm
        for g, moved in self.received[c].items():
            self.count[g][source] -= moved
            self.count[g][target] = self.count[g].get(target, 0) + moved
        self.device[c] = target
        for g in self.touched[c]:
            self.charged[g] = self._charges(g, self.device[self.group_class[g]], self.count[g])
        if source < self.k:
            self.used[source] -= self.memory[c]
        if target < self.k:
            self.used[target] += self.memory[c]

    def best_move(self) -> tuple[int, int] | None:
        """The best single class move, or None when none lowers the max-load.

        Only moves that can change the bottleneck device's load are scored (a class on it, or a
        class exchanging data with it): no other move can lower the maximum. The best is the
        lowest resulting max-load, ties by the lower class then device number.
        """
        loads = self.loads()
        current = max(loads)
        bottleneck = [d for d, x in enumerate(loads) if x == current]
        candidates = sorted({c for c, d in enumerate(self.device) if d in bottleneck}
                            | {n for c, d in enumerate(self.device) if d in bottleneck for n in self.neighbours[c]})
        best, best_value = None, current * (1 - 1e-12) - 1e-12
        for c in candidates:
            for target in range(self.num_devices):
                if target == self.device[c] or not self.fits(c, target):
                    continue
                change = self.delta(c, target)
                value = max(
                    self.load(d, self.compute[d] + change[d][0], self.comm[d] + change[d][1]) if d in change
                    else loads[d] for d in range(self.num_devices)
                )
                if value < best_value:
                    best, best_value = (c, target), value
        return best


def descend(
    problem: Problem, state: LoadState, start: list[int], max_moves: int | None = None
) -> tuple[np.ndarray, float, int, Limit | None]:
    """Best single class moves from ``start`` (device per class) until none lowers the max-load.

    Returns the device per node position, its max-load (the evaluator's, checked against the
    incremental loads), the moves made, and ``Limit.TIME`` when ``problem.deadline`` stopped it
    (``Limit.ITERATION`` after ``max_moves`` moves, ``Limit.INTERRUPT`` on Ctrl-C: the placement
    reached so far).
    """
    graph, cluster = problem.graph, problem.cluster
    state.reset(start)
    moves, limit = 0, None
    try:
        while True:
            if max_moves is not None and moves >= max_moves:
                limit = Limit.ITERATION
                break
            if problem.deadline is not None and time.monotonic() > problem.deadline:
                limit = Limit.TIME
                break
            move = state.best_move()
            if move is None:
                break
            state.apply(*move)
            moves += 1
    except KeyboardInterrupt:
        # Each move assigns one class's device in one step, so the devices are a placement at any
        # moment (every move keeps memory); the incremental loads may be half updated: not compared.
        limit = Limit.INTERRUPT
    device = np.array(state.device, dtype=np.int64)[graph.color]
    checked = max_load(graph, cluster, device, overlap=state.overlap)
    if limit is Limit.INTERRUPT:
        return device, checked, moves, limit
    value = max(state.loads())
    if not math.isclose(value, checked, rel_tol=1e-9, abs_tol=1e-9):
        raise ExactplaceError(f"local-search's incremental load {value} differs from the evaluator's "
                              f"{checked}. This is a bug; please report it.")
    return device, checked, moves, limit


class LocalSearch(Method):
    """The paper's local search for max-load.

    Choice the paper leaves open: the random start puts the classes, in a random order, each on
    a uniformly random device among those with room for it (memory and support); a start that
    finds no room for some class is abandoned (on a cluster with a CPU this never happens).

    Examples
    --------
    >>> from exactplace import Cluster, Graph, Node, solve
    >>> g = Graph([Node(i, 10.0, 1.0, comm=0.1) for i in range(4)], [(0, 1), (2, 3)])
    >>> p = solve(g, Cluster(2, cpus=0), method="local-search")
    >>> round(p.objective, 6)   # each chain on its own accelerator
    2.0
    """

    name = "local-search"
    objectives = ("throughput",)
    description = "local search: best single class moves from seeded random placements, several restarts"
    options = {"seed": SEED, "restarts": Option("restarts", Integer(low=1, high=10_000), 10, "random restarts")}

    @classmethod
    def check(cls, problem: Problem) -> None:
        """The PipeDream schedule only (no ``gpipe``)."""
        check_param(not problem.option("gpipe"), "gpipe", "solve",
                    "False for method 'local-search' (it scores FW + BW per device)", problem.option("gpipe"))

    def run(self, problem: Problem) -> MethodResult:
        graph, cluster = problem.graph, problem.cluster
        state = LoadState(problem)
        seed, restarts = int(self.setting(problem, "seed")), int(self.setting(problem, "restarts"))
        best_value, best_device, limit, moves = math.inf, None, None, 0
        try:
            for restart in range(restarts):
                start = self._random_start(state, np.random.default_rng(seed + restart))
                if start is None:
                    continue
                device, checked, made, limit = descend(problem, state, start)
                moves += made
                if checked < best_value:
                    best_value, best_device = checked, device
                if limit is not None:
                    break
        except KeyboardInterrupt:
            limit = Limit.INTERRUPT
        info = {"moves": moves}
        if best_device is None:
            if limit is not None:
                return MethodResult(None, Status.NO_SOLUTION, limit=limit, info=info)
            # No random start found room for every class (no CPU): repaired from all on one accelerator, or refuted.
            return settle_memory(graph, cluster, np.zeros(graph.n, dtype=np.int64), info, deadline=problem.deadline)
        return MethodResult(best_device, Status.FEASIBLE, limit=limit, info=info)

    @staticmethod
    def _random_start(state: LoadState, rng: np.random.Generator) -> list[int] | None:
        device = [-1] * len(state.members)
        used = [0.0] * state.k
        for c in rng.permutation(len(state.members)).tolist():
            room = [d for d in range(state.num_devices)
                    if d >= state.k or (state.supported[c] and used[d] + state.memory[c] <= state.limit[d])]
            if not room:
                return None
            d = room[int(rng.integers(len(room)))]
            device[c] = d
            if d < state.k:
                used[d] += state.memory[c]
        return device
