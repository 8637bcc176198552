"""Baechi's m-ETF: memory-constrained earliest-task-first list scheduling.

Event-driven ETF (Hwang et al., as Baechi adapts it): among every ready task and every device
that may take it, the pair with the earliest start is placed and scheduled, append-only; a CPU
is a candidate only for a task no accelerator can take (:func:`etf_schedule` states the rules).
The execution order (tasks by start time) is part of the result, in ``info["order"]``.
:func:`etf_schedule` also takes the favourite children of m-SCT (:mod:`exactplace.heuristics.m_sct`);
:mod:`~exactplace.heuristics.scheduling` says how colour classes, co-placement and fusion are
handled and how estimates are made.
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

    Event-driven ETF (Hwang et al., as Baechi adapts it): among every ready task (all
    predecessors placed) and every device that may take it, pick the pair with the earliest
    start time (device free, every input arrived), ties by topological order, then device id;
    place and schedule it there, append-only (no insertion into idle gaps). A device is not a
    candidate for a task that does not fit its remaining memory. Baechi schedules on GPUs only;
    this model's CPU cores are much slower, and earliest-*start* would send every task to an
    idle CPU, so (our choice) a CPU is a candidate only for a task no accelerator can take when
    it becomes ready (unsupported, or too large for what is left); a task whose accelerators fill
    up while it waits is placed, once nothing else can be, on the CPU where it starts first.

    ``favorite[t]`` (m-SCT): the favourite child task of ``t``, or -1. A device whose last
    task's favourite child is still unplaced and fits it is *reserved*: it runs that child as
    soon as the child is ready, meanwhile only *urgent* tasks (inputs already there when the
    device is free) and it waits otherwise. When no device has a candidate, reservations are
    dropped for that step (so waiting can never deadlock).
    """
    etf = _ETF(cluster, tasks, memory, favorite)
    for t in range(tasks.size):
        if etf.waiting[t] == 0:
            etf.make_ready(t)
    for _ in range(tasks.size):
        best = etf.best()
        if best is None:  # no device can take any ready task: best effort
            t, d = etf.fallback()
            est = max(etf.free[d], etf.arrival[t][d])
        else:
            est, _, t, d = best
        etf.place(t, d, est)
    return np.array(etf.dev, dtype=np.int64), np.array(etf.start)


class _ETF:
    """The state of :func:`etf_schedule`: what is placed where, when each device is free, what is ready."""

    def __init__(self, cluster: Cluster, tasks: TaskGraph, memory: Memory, favorite: list[int] | None) -> None:
        size, num_devices = tasks.size, cluster.num_devices
        self.tasks, self.memory, self.favorite = tasks, memory, favorite
        self.num_devices, self.k = num_devices, cluster.accelerators
        self.rank = tasks.rank.tolist()
        self.dev = [-1] * size
        self.start, self.end = [0.0] * size, [0.0] * size
        self.free = [0.0] * num_devices
        self.reserved = [-1] * num_devices
        self.waiting = [len(p) for p in tasks.pred]
        self.arrival: list[list[float]] = [[] for _ in range(size)]
        self.later: list[list[tuple[float, int, int]]] = [[] for _ in range(num_devices)]  # (data ready, rank, task)
        self.now_ready: list[list[tuple[int, int]]] = [[] for _ in range(num_devices)]  # (rank, task): data there
        self.ready: list[tuple[int, int]] = []
        self.duration = [[tasks.duration(t, d, cluster) for d in range(num_devices)] for t in range(size)]

    def make_ready(self, t: int) -> None:
        """Task ``t``'s predecessors are all placed: when its inputs arrive on each device, and where it waits."""
        num_devices, k, dev, end = self.num_devices, self.k, self.dev, self.end
        times = [0.0] * num_devices
        for u, c in self.tasks.pred[t]:
            du, fu = dev[u], end[u]
            for d in range(num_devices):
                delay = 0.0 if du == d else c * ((du < k) + (d < k))
                if fu + delay > times[d]:
                    times[d] = fu + delay
        self.arrival[t] = times
        # CPUs only for what no accelerator takes (Baechi places on GPUs; see etf_schedule)
        cpu_only = not any(self.memory.fits(t, d) for d in range(k))
        for d in range(num_devices if cpu_only else k):
            heapq.heappush(self.later[d], (times[d], self.rank[t], t))
        heapq.heappush(self.ready, (self.rank[t], t))

    def usable(self, t: int, d: int) -> bool:
        return self.dev[t] < 0 and self.memory.fits(t, d)

    def candidate(self, d: int, use_reservation: bool) -> tuple[float, int, int] | None:
        """Device ``d``'s next task: ``(start, rank, task)``, or None when it has none."""
        pending, there, free = self.later[d], self.now_ready[d], self.free
        while pending and pending[0][0] <= free[d]:
            _, r, t = heapq.heappop(pending)
            heapq.heappush(there, (r, t))
        while there and not self.usable(there[0][1], d):
            heapq.heappop(there)
        while pending and not self.usable(pending[0][2], d):
            heapq.heappop(pending)
        f = self.reserved[d]
        if use_reservation and f >= 0 and self.usable(f, d):
            if self.arrival[f]:  # the favourite child is ready: it goes first
                return max(free[d], self.arrival[f][d]), self.rank[f], f
            return (free[d], there[0][0], there[0][1]) if there else None
        if there:
            return free[d], there[0][0], there[0][1]
        if pending:
            return pending[0]
        return None

    def best(self) -> tuple[float, int, int, int] | None:
        """The earliest ``(start, rank, task, device)`` over every device (reservations first, for m-SCT)."""
        best = None
        for use_reservation in ((True, False) if self.favorite is not None else (False,)):
            for d in range(self.num_devices):
                found = self.candidate(d, use_reservation)
                if found is not None and (best is None or (found[0], found[1], d) < (best[0], best[1], best[3])):
                    best = (*found, d)
            if best is not None:
                break
        return best

    def fallback(self) -> tuple[int, int]:
        """``(task, device)`` when no device can take any ready task: the first ready task on the CPU where it
        starts first (else the memory's fallback), or on the device its colour class is on."""
        ready, dev, free = self.ready, self.dev, self.free
        while dev[ready[0][1]] >= 0:
            heapq.heappop(ready)
        t = ready[0][1]
        cpus = range(self.k, self.num_devices)
        d = min(cpus, key=lambda d: max(free[d], self.arrival[t][d])) if cpus else self.memory.fallback(t)
        if int(self.tasks.color[t]) in self.memory.class_device:
            d = self.memory.class_device[int(self.tasks.color[t])]
        return t, d

    def place(self, t: int, d: int, est: float) -> None:
        """Run task ``t`` on device ``d`` from ``est``; its successors whose inputs are now all placed get ready."""
        self.memory.place(t, d)
        self.dev[t] = d
        self.start[t], self.end[t] = est, est + self.duration[t][d]
        self.free[d] = self.end[t]
        if self.favorite is not None:
            self.reserved[d] = self.favorite[t]
        for s, _ in self.tasks.succ[t]:
            self.waiting[s] -= 1
            if self.waiting[s] == 0:
                self.make_ready(s)


class METF(Method):
    """Baechi's m-ETF (:func:`etf_schedule`), on the task graph of :mod:`~exactplace.heuristics.scheduling`.

    Examples
    --------
    >>> from exactplace import Cluster, Graph, Node, solve
    >>> g = Graph([Node(0, 9.0, 1.0, comm=0.1), Node(1, 9.0, 1.0, comm=0.1), Node(2, 9.0, 1.0)], [(0, 2), (1, 2)])
    >>> p = solve(g, Cluster(2, cpus=1), objective="makespan", method="m-etf")
    >>> p.device.tolist(), round(p.objective, 6)   # the two sources in parallel, then 2 pays one transfer
    ([0, 1, 0], 2.2)
    """

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
