"""FastT's DPOS placer: critical path on one device, then earliest-finish-time list scheduling with insertion.

The critical path bounds the makespan, so DPOS puts it on one device (no transfer along it) and
fits every other task around it: HEFT-style ranks (:func:`upward_rank`), the path they give
(:func:`critical_path`), and the placement loop (:class:`FastT`). Assumption (our choice): a
task's weight is its accelerator time (its CPU time when it cannot run on an accelerator), where
HEFT/DPOS average over processors, because this model's CPU cores are an order of magnitude
slower and would dominate the average; an edge's weight is its cost (one crossing). Devices that
cannot take a task (memory, support, colocation: :mod:`~exactplace.heuristics.scheduling`) are
skipped. The execution order (tasks by start time) is part of the result (``info["order"]``).
"""

from __future__ import annotations

import bisect
import dataclasses
import time

import numpy as np

from exactplace.core.placement import Limit
from exactplace.core.problem import MethodResult, Problem
from exactplace.heuristics.scheduling import CO_PLACEMENT, Memory, TaskGraph, finish, schedule_order, task_graph
from exactplace.methods.base import Method

__all__ = ["FastT", "critical_path", "upward_rank"]


def _weights(tasks: TaskGraph) -> np.ndarray:
    return np.where(tasks.supported, tasks.acc_time, tasks.cpu_time)


def upward_rank(tasks: TaskGraph) -> np.ndarray:
    """HEFT's upward rank, ``upward(t) = w(t) + max over successors (c + upward(s))``.

    (The downward rank is ``downward(t) = max over predecessors (downward + w + c)``.)
    """
    w = _weights(tasks)
    up = np.zeros(tasks.size)
    for t in reversed(tasks.order):
        up[t] = w[t] + max((c + up[s] for s, c in tasks.succ[t]), default=0.0)
    return up


def critical_path(tasks: TaskGraph, up: np.ndarray) -> list[int]:
    """The critical path by upward rank.

    From the entry task of largest upward rank, repeatedly the successor ``s`` maximising
    ``c + upward(s)`` (ties: topological order).
    """
    entries = [t for t in tasks.order if not tasks.pred[t]]
    t = max(entries, key=lambda t: (up[t], -tasks.rank[t]))
    path = [t]
    while tasks.succ[t]:
        t = max(tasks.succ[t], key=lambda sc: (sc[1] + up[sc[0]], -tasks.rank[sc[0]]))[0]
        path.append(t)
    return path


class FastT(Method):
    """FastT's DPOS.

    1. The tasks of :func:`critical_path` go to the *critical-path device*: the accelerator
       with the least total run time of the path that can hold it; tasks of the path that no
       longer fit there are placed like the others.
    2. Every task, in decreasing upward rank (ties: topological order, so the order is
       topological), goes to the device giving the earliest finish time, inserted into the
       first idle gap long enough after its inputs arrive (DPOS's insertion policy).

    The search for a gap scans a device's busy intervals after the task's inputs arrive, which
    is quadratic on large graphs. When ``time_limit`` runs out first, the remaining tasks go
    after each device's last busy interval instead (no insertion; one step each),
    ``info["appended"]`` counts them and the result has ``limit=Limit.TIME``.

    Examples
    --------
    >>> from exactplace import Cluster, Graph, Node, solve
    >>> g = Graph([Node(0, 9.0, 1.0, comm=0.1), Node(1, 9.0, 4.0, comm=0.1), Node(2, 9.0, 1.0)], [(0, 1), (0, 2)])
    >>> p = solve(g, Cluster(2, cpus=1), objective="makespan", method="fastt")
    >>> p.device.tolist(), round(p.objective, 6)   # path 0 -> 1 on acc0; 2 in parallel on acc1
    ([0, 0, 1], 5.0)
    """

    name = "fastt"
    objectives = ("makespan",)
    description = "FastT DPOS: critical path on its best device, the rest by earliest finish time with insertion"
    options = {"co_placement": CO_PLACEMENT}

    def run(self, problem: Problem) -> MethodResult:
        graph, cluster = problem.graph, problem.cluster
        tasks = task_graph(graph, False)
        memory = Memory(cluster, tasks, self.setting(problem, "co_placement"))
        k, num_devices = cluster.accelerators, cluster.num_devices
        up = upward_rank(tasks)
        path = critical_path(tasks, up)
        cp_device = -1
        if k:
            need = float(tasks.memory[path].sum())
            fitting = [d for d in range(k) if tasks.supported[path].all() and need <= cluster.memory_limit[d]]
            pool = fitting or list(range(k))
            cp_device = min(pool, key=lambda d: (sum(tasks.duration(t, d, cluster) for t in path
                                                     if tasks.supported[t]), d))
        on_path = set(path)
        starts: list[list[float]] = [[] for _ in range(num_devices)]
        ends: list[list[float]] = [[] for _ in range(num_devices)]
        device = np.full(tasks.size, -1, dtype=np.int64)
        start = np.zeros(tasks.size)
        end = np.zeros(tasks.size)
        appended = 0
        for t in sorted(range(tasks.size), key=lambda t: (-up[t], tasks.rank[t])):
            insert = problem.deadline is None or (not appended and time.monotonic() < problem.deadline)
            appended += not insert
            if t in on_path and cp_device >= 0 and memory.fits(t, cp_device):
                options = [cp_device]
            else:
                options = memory.candidates(t) or [memory.fallback(t)]
            best = None
            for d in options:
                ready = max((end[u] + (0.0 if device[u] == d else c * ((device[u] < k) + (d < k)))
                             for u, c in tasks.pred[t]), default=0.0)
                length = tasks.duration(t, d, cluster)
                if insert:
                    begin = _first_gap(starts[d], ends[d], ready, length)
                else:  # past the time limit (class docstring): after the device's last busy interval
                    begin = max(ready, ends[d][-1]) if ends[d] else ready
                if best is None or begin + length < best[0]:
                    best = (begin + length, begin, d)
            _, begin, d = best
            memory.place(t, d)
            device[t], start[t], end[t] = d, begin, begin + tasks.duration(t, d, cluster)
            i = bisect.bisect_right(starts[d], begin)
            starts[d].insert(i, begin)
            ends[d].insert(i, end[t])
        info = {"critical_path": len(path), "critical_path_device": cluster.device_name(cp_device) if k else None}
        if appended:
            info["appended"] = appended
        result = finish(problem, tasks, device, schedule_order(tasks, start), info)
        return dataclasses.replace(result, limit=result.limit or Limit.TIME) if appended else result


def _first_gap(starts: list[float], ends: list[float], ready: float, length: float) -> float:
    """Earliest start >= ready of an idle gap of ``length`` among busy intervals (sorted, disjoint)."""
    i = bisect.bisect_right(ends, ready)  # intervals ending after ``ready``
    begin = ready
    while i < len(starts):
        if begin + length <= starts[i]:
            return begin
        begin = max(begin, ends[i])
        i += 1
    return begin
