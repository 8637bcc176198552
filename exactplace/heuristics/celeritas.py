"""Celeritas: CPD-TOPO order, Optimal Operation Fusion, Adjusting Placement (and its Order-Place variant).

Celeritas places the units of the Appendix B contraction
(:func:`~exactplace.heuristics.scheduling.unit_task_graph`: colour classes with their backward
partners, so fusing or moving a unit never splits a class) in three steps:
:func:`cpd_topo_order` orders them so the critical path stays together, :func:`optimal_fusion`
fuses consecutive units to keep communication inside segments, and
:func:`adjusting_placement` keeps each segment on the previous one's device unless moving pays
for its transfer. ``celeritas-order-place`` is the simpler variant without fusion.

On inference graphs the execution order (segments by start) is part of the result; on training
graphs a unit mixes forward and backward nodes, so none is given and the simulator derives one.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from exactplace.core.errors import ExactplaceError
from exactplace.core.params import Integer, Option, Real
from exactplace.core.placement import Limit
from exactplace.core.problem import MethodResult, Problem
from exactplace.heuristics.scheduling import Memory, TaskGraph, finish, schedule_order, unit_task_graph
from exactplace.methods.base import Method

__all__ = ["Celeritas", "CeleritasOrderPlace", "cpd_topo_order", "optimal_fusion"]


def cpd_topo_order(tasks: TaskGraph) -> list[int]:
    """The CPD-TOPO order: a depth-first topological order that keeps the critical path together.

    ``tlevel`` (longest path to a unit's start) plus ``blevel`` (longest path from its start to
    the end), with unit weights = accelerator time (CPU time where unsupported) and edge weights =
    their costs; the order always descends into the ready unit of highest ``tlevel + blevel``
    (ties: topological order).

    >>> from exactplace.core.graph import Graph, Node
    >>> from exactplace.heuristics.scheduling import task_graph
    >>> g = Graph([Node(0, 1, 1), Node(1, 1, 1), Node(2, 1, 5), Node(3, 1, 1)], [(0, 1), (0, 2), (1, 3), (2, 3)])
    >>> cpd_topo_order(task_graph(g, False))   # the heavy branch first
    [0, 2, 1, 3]
    """
    w = np.where(tasks.supported, tasks.acc_time, tasks.cpu_time)
    tlevel, blevel = np.zeros(tasks.size), np.zeros(tasks.size)
    for t in tasks.order:
        tlevel[t] = max((tlevel[u] + w[u] + c for u, c in tasks.pred[t]), default=0.0)
    for t in reversed(tasks.order):
        blevel[t] = w[t] + max((c + blevel[s] for s, c in tasks.succ[t]), default=0.0)
    priority = tlevel + blevel
    waiting = [len(p) for p in tasks.pred]

    def key(t: int) -> tuple[float, int]:  # sorted ascending, so the stack pops the best first
        return priority[t], -int(tasks.rank[t])

    stack = sorted((t for t in range(tasks.size) if not waiting[t]), key=key)
    order = []
    while stack:
        t = stack.pop()
        order.append(t)
        freed = []
        for s, _ in tasks.succ[t]:
            waiting[s] -= 1
            if waiting[s] == 0:
                freed.append(s)
        stack.extend(sorted(freed, key=key))
    return order


def optimal_fusion(
    tasks: TaskGraph, order: list[int], reach: int, memory_cap: float, deadline: float | None = None,
) -> list[list[int]]:
    """Optimal Operation Fusion of ``order`` into segments.

    The optimal partition of ``order`` into consecutive segments of at most ``reach`` units (R,
    ``fusion_range``) and at most ``memory_cap`` memory (``fusion_memory`` x the accelerator
    memory), maximising the communication kept inside segments (ties: fewer segments); a unit
    unsupported on accelerators is a segment of its own. Choice the paper leaves to its
    implementation: the loop-avoidance condition (fusing must not close a cycle) holds by
    construction here, because segments of a topological order have only forward edges between
    them; the implementation checks it anyway.

    When the ``time.monotonic()`` instant ``deadline`` passes, the prefix of ``order`` done so far
    keeps its optimal fusion and every later unit is a segment of its own (still a valid fusion:
    segments of a topological order).

    >>> from exactplace.core.graph import Graph, Node
    >>> from exactplace.heuristics.scheduling import task_graph
    >>> g = Graph([Node(i, 1, 1, comm=float(i), memory=1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
    >>> optimal_fusion(task_graph(g, False), [0, 1, 2, 3], 2, 2.0)   # keeps the costly 2 -> 3 inside
    [[0, 1], [2, 3]]
    """
    m = len(order)
    position = {t: i for i, t in enumerate(order)}
    mem = np.concatenate([[0.0], np.cumsum(tasks.memory[order])])
    best = [(-np.inf, 0)] * (m + 1)
    best[0] = (0.0, 0)
    choice = [0] * (m + 1)
    done = m
    for j in range(1, m + 1):
        if deadline is not None and j % 256 == 0 and time.monotonic() > deadline:
            done = j - 1
            break
        inside = 0.0
        for i in range(j - 1, max(j - reach, 0) - 1, -1):  # segment order[i:j], growing to the left
            t = order[i]
            if i < j - 1 and (not tasks.supported[t] or not tasks.supported[order[j - 1]]):
                break
            if i < j - 1 and mem[j] - mem[i] > memory_cap:
                break
            inside += sum(c for s, c in tasks.succ[t] if i < position[s] < j)
            value = (best[i][0] + inside, best[i][1] - 1)
            if value > best[j]:
                best[j], choice[j] = value, i
    segments = [[t] for t in reversed(order[done:])]
    j = done
    while j > 0:
        segments.append(order[choice[j]:j])
        j = choice[j]
    segments.reverse()
    segment_of = {t: s for s, members in enumerate(segments) for t in members}
    if any(segment_of[s] < segment_of[t] for t in range(tasks.size) for s, _ in tasks.succ[t]):
        raise ExactplaceError("Celeritas fusion closed a cycle; this is a bug, please report it.")
    return segments


def adjusting_placement(problem: Problem, tasks: TaskGraph, segments: list[list[int]]) -> MethodResult:
    """Adjusting Placement: place the segments in order and build the result.

    A segment stays on the previous segment's device unless another device's estimated finish
    beats it by more than the segment's largest outgoing transfer (``2 c``: accelerator to
    accelerator through RAM). Our choice: Celeritas compares *start* times on identical GPUs,
    where it is the same thing; with this model's slow CPU cores finish times are what matter.
    When the stay-device's memory is full the segment moves to the next accelerator in id order
    that fits, then a CPU; when all are full, to the accelerator with the most free memory,
    flagged best-effort (:mod:`~exactplace.heuristics.scheduling`). Estimates append to each
    device (no insertion).

    Once ``problem.deadline`` passes, every later segment takes the stay device (the previous one,
    else the next that fits) without looking at the others, and the result has ``limit=Limit.TIME``:
    the rest of the placement then costs one estimate per segment instead of one per device.
    """
    graph, cluster = problem.graph, problem.cluster
    k, num_devices = cluster.accelerators, cluster.num_devices
    memory = Memory(cluster, tasks, True)
    device = np.full(tasks.size, -1, dtype=np.int64)
    start, end = np.zeros(tasks.size), np.zeros(tasks.size)
    free = [0.0] * num_devices
    previous = 0 if k else k
    limit = None
    segment_of = {t: i for i, members in enumerate(segments) for t in members}

    def fits(need: float, supported: bool, d: int) -> bool:
        """Whether a segment of memory ``need`` (all ``supported`` on accelerators) may go to ``d`` now."""
        return d >= k or (supported and need <= memory.free[d])

    def stay_device(need: float, supported: bool) -> int:
        """The previous device if it fits, else the next accelerator in id order that fits, then a CPU."""
        if fits(need, supported, previous):
            return previous
        following = (d for d in (*range(previous + 1, k), *range(k)) if fits(need, supported, d))
        d = next(following, None)
        if d is not None:
            return d
        if num_devices > k:
            return k
        memory.overfull = True
        return int(np.argmax(memory.free[:k]))

    def estimate(members: list[int], d: int) -> tuple[float, list[float]]:
        clock, starts = free[d], []
        inside = set(members)
        for t in members:
            ready = max((end[u] + (0.0 if device[u] == d else c * ((device[u] < k) + (d < k)))
                         for u, c in tasks.pred[t] if u not in inside), default=0.0)
            clock = max(clock, ready)
            starts.append(clock)
            clock += tasks.duration(t, d, cluster)
        return clock, starts

    for index, members in enumerate(segments):
        if limit is None and problem.deadline is not None and time.monotonic() > problem.deadline:
            limit = Limit.TIME
        need, supported = float(tasks.memory[members].sum()), bool(all(tasks.supported[members]))
        if limit is not None:  # out of time: stay, without looking at the other devices
            chosen = stay_device(need, supported)
            finish_time, starts = estimate(members, chosen)
        else:
            candidates = [d for d in range(num_devices) if fits(need, supported, d)]
            if not candidates:
                memory.overfull = True
                candidates = [int(np.argmax(memory.free[:k]))]
            if previous in candidates:
                stay = previous
            else:  # memory full (or unsupported): the next accelerator in id order that fits, then a CPU
                following = [d for d in candidates if d < k and d > previous] + [d for d in candidates if d < k]
                stay = following[0] if following else candidates[0]
            times = {d: estimate(members, d) for d in candidates}
            threshold = max((c * 2 for t in members for s, c in tasks.succ[t] if segment_of[s] != index),
                            default=0.0)
            best = min(candidates, key=lambda d: (times[d][0], d))
            chosen = best if times[best][0] + threshold < times[stay][0] else stay
            finish_time, starts = times[chosen]
        for t, begin in zip(members, starts):
            memory.place(t, chosen)
            device[t], start[t] = chosen, begin
            end[t] = begin + tasks.duration(t, chosen, cluster)
        free[chosen] = finish_time
        previous = chosen
    order = None if graph.is_training else schedule_order(tasks, start)
    result = finish(problem, tasks, device, order, {"segments": len(segments), "units": tasks.size})
    return dataclasses.replace(result, limit=result.limit or limit) if limit else result


class CeleritasOrderPlace(Method):
    """Celeritas's Order-Place: CPD-TOPO order and Adjusting Placement of single units, no fusion."""

    name = "celeritas-order-place"
    objectives = ("makespan",)
    description = "Celeritas Order-Place: CPD-TOPO order, then stay-or-move placement of single units"

    def segments(self, problem: Problem, tasks: TaskGraph, order: list[int]) -> list[list[int]]:
        return [[t] for t in order]

    def run(self, problem: Problem) -> MethodResult:
        tasks = unit_task_graph(problem.graph, problem.contraction)
        order = cpd_topo_order(tasks)
        return adjusting_placement(problem, tasks, self.segments(problem, tasks, order))


class Celeritas(CeleritasOrderPlace):
    """Celeritas: CPD-TOPO, Optimal Operation Fusion, Adjusting Placement.

    Examples
    --------
    >>> from exactplace import Cluster, Graph, Node, solve
    >>> g = Graph([Node(i, 9.0, 1.0, comm=0.5, memory=1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
    >>> solve(g, Cluster(2, memory=2.0, cpus=1), objective="makespan", method="celeritas").device.tolist()
    [0, 0, 1, 1]
    """

    name = "celeritas"
    description = "Celeritas: CPD-TOPO order, optimal fusion of consecutive units, stay-or-move placement"
    options = {
        "fusion_range": Option("fusion_range", Integer(low=1, high=1000), 8,
                               "R: the most units Optimal Operation Fusion puts in one segment"),
        "fusion_memory": Option("fusion_memory", Real(low=0, high=1, low_closed=False), 0.25,
                                "the most memory of a fused segment, as a fraction of the accelerator memory"),
    }

    def segments(self, problem: Problem, tasks: TaskGraph, order: list[int]) -> list[list[int]]:
        cap = problem.cluster.memory_cap * float(self.setting(problem, "fusion_memory"))
        return optimal_fusion(tasks, order, int(self.setting(problem, "fusion_range")), cap, problem.deadline)
