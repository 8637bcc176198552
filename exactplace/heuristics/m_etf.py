"""Baechi's m-ETF: memory-constrained earliest-task-first list scheduling.

Event-driven ETF (Hwang et al., as Baechi adapts it): among every ready task (all
predecessors placed) and every device that may take it, pick the pair with the earliest
start time (device free, every input arrived), ties by topological order, then device id;
place and schedule it there, append-only (no insertion into idle gaps). A device is not a
candidate for a task that does not fit its remaining memory. Baechi schedules on GPUs only;
this model's CPU cores are much slower, and earliest-*start* would send every task to an
idle CPU, so (our choice) a CPU is a candidate only for a task no accelerator can take when
it becomes ready (unsupported, or too large for what is left); a task whose accelerators fill
up while it waits is placed, once nothing else can be, on the CPU where it starts first.
(:mod:`~exactplace.heuristics.scheduling` says how colour classes, co-placement and fusion are
handled and how estimates are made.)
The execution order (tasks by start time) is part of the result, in ``info["order"]``.

:func:`etf_schedule` also takes the favourite children of m-SCT
(:mod:`exactplace.heuristics.m_sct`).

Examples
--------
>>> from exactplace import Cluster, Graph, Node, solve
>>> g = Graph([Node(0, 9.0, 1.0, comm=0.1), Node(1, 9.0, 1.0, comm=0.1), Node(2, 9.0, 1.0)], [(0, 2), (1, 2)])
>>> p = solve(g, Cluster(2, cpus=1), objective="makespan", method="m-etf")
>>> p.device.tolist(), round(p.objective, 6)   # the two sources in parallel, then 2 pays one transfer
([0, 1, 0], 2.2)
"""

from __future__ import annotations

import heapq

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.problem import MethodResult, Problem
from exactplace.heuristics.scheduling import CO_PLACEMENT, FUSION, Memory, TaskGraph, finish, schedule_order, task_graph
from exactplace.methods.base import Method

__all__ = ["METF", "etf_schedule"]


def etf_schedule(
    cluster: Cluster, tasks: TaskGraph, memory: Memory, favorite: list[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Place and schedule every task; returns (device, start) per task.

    ``favorite[t]`` (m-SCT): the favourite child task of ``t``, or -1. A device whose last
    task's favourite child is still unplaced and fits it is *reserved*: it runs that child as
    soon as the child is ready, meanwhile only *urgent* tasks (inputs already there when the
    device is free) and it waits otherwise. When no device has a candidate, reservations are
    dropped for that step (so waiting can never deadlock).
    """
    size, num_devices, k = tasks.size, cluster.num_devices, cluster.accelerators
    rank = tasks.rank.tolist()
    device = np.full(size, -1, dtype=np.int64)
    dev = [-1] * size
    start, end = [0.0] * size, [0.0] * size
    free = [0.0] * num_devices
    reserved = [-1] * num_devices
    waiting = [len(p) for p in tasks.pred]
    arrival: list[list[float]] = [[] for _ in range(size)]
    later: list[list[tuple[float, int, int]]] = [[] for _ in range(num_devices)]  # (data ready, rank, task)
    now_ready: list[list[tuple[int, int]]] = [[] for _ in range(num_devices)]  # (rank, task): data there
    ready: list[tuple[int, int]] = []
    duration = [[tasks.duration(t, d, cluster) for d in range(num_devices)] for t in range(size)]

    def make_ready(t: int) -> None:
        times = [0.0] * num_devices
        for u, c in tasks.pred[t]:
            du, fu = dev[u], end[u]
            for d in range(num_devices):
                delay = 0.0 if du == d else c * ((du < k) + (d < k))
                if fu + delay > times[d]:
                    times[d] = fu + delay
        arrival[t] = times
        # CPUs only for what no accelerator takes (Baechi places on GPUs; see the module docstring)
        cpu_only = not any(memory.fits(t, d) for d in range(k))
        for d in range(num_devices if cpu_only else k):
            heapq.heappush(later[d], (times[d], rank[t], t))
        heapq.heappush(ready, (rank[t], t))

    def usable(t: int, d: int) -> bool:
        return dev[t] < 0 and memory.fits(t, d)

    def candidate(d: int, use_reservation: bool) -> tuple[float, int, int] | None:
        pending, there = later[d], now_ready[d]
        while pending and pending[0][0] <= free[d]:
            _, r, t = heapq.heappop(pending)
            heapq.heappush(there, (r, t))
        while there and not usable(there[0][1], d):
            heapq.heappop(there)
        while pending and not usable(pending[0][2], d):
            heapq.heappop(pending)
        f = reserved[d]
        if use_reservation and f >= 0 and usable(f, d):
            if arrival[f]:  # the favourite child is ready: it goes first
                return max(free[d], arrival[f][d]), rank[f], f
            return (free[d], there[0][0], there[0][1]) if there else None
        if there:
            return free[d], there[0][0], there[0][1]
        if pending:
            return pending[0]
        return None

    for t in range(size):
        if waiting[t] == 0:
            make_ready(t)
    for _ in range(size):
        best = None
        for use_reservation in ((True, False) if favorite is not None else (False,)):
            for d in range(num_devices):
                found = candidate(d, use_reservation)
                if found is not None and (best is None or (found[0], found[1], d) < (best[0], best[1], best[3])):
                    best = (*found, d)
            if best is not None:
                break
        if best is None:  # no device can take any ready task: best effort (common's module docstring)
            while dev[ready[0][1]] >= 0:
                heapq.heappop(ready)
            t = ready[0][1]
            cpus = range(k, num_devices)
            d = min(cpus, key=lambda d: max(free[d], arrival[t][d])) if cpus else memory.fallback(t)
            if int(tasks.color[t]) in memory.class_device:
                d = memory.class_device[int(tasks.color[t])]
            est = max(free[d], arrival[t][d])
        else:
            est, _, t, d = best
        memory.place(t, d)
        dev[t] = d
        start[t], end[t] = est, est + duration[t][d]
        free[d] = end[t]
        if favorite is not None:
            reserved[d] = favorite[t]
        for s, _ in tasks.succ[t]:
            waiting[s] -= 1
            if waiting[s] == 0:
                make_ready(s)
    device[:] = dev
    return device, np.array(start)


class METF(Method):
    """Baechi's m-ETF (module docstring)."""

    name = "m-etf"
    objectives = ("makespan",)
    description = "Baechi m-ETF: earliest (task, device) start first under memory limits, list-scheduled"
    options = {"co_placement": CO_PLACEMENT, "fusion": FUSION}

    def run(self, problem: Problem) -> MethodResult:
        graph, cluster = problem.graph, problem.cluster
        tasks = task_graph(graph, self.setting(problem, "fusion"))
        memory = Memory(cluster, tasks, self.setting(problem, "co_placement"))
        device, start = etf_schedule(cluster, tasks, memory)
        return finish(problem, tasks, device, schedule_order(tasks, start), {"tasks": tasks.size})
