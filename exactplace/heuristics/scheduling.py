"""What the list-scheduling placers share: the task graph they schedule, and memory book-keeping while they place.

Choices the papers leave open are made once here for every list scheduler (m-topo, m-etf,
m-sct, FastT, Celeritas), so they differ only in their own rules:

* time estimates inside the placers are contention-free and follow the simulator's
  communication accounting (:func:`transfer`);
* a colour class always shares one device, its whole memory reserved at once with Baechi's
  co-placement (:class:`Memory`);
* fusion follows Baechi's safe rule and never fuses a forward node with a backward one
  (:func:`task_graph`);
* when no device can take a node, it goes to the accelerator with the most free memory; the
  placement is then settled like every placer's (:func:`exactplace.heuristics.memory.settle_memory`).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.contraction import Contraction
from exactplace.core.errors import ExactplaceError
from exactplace.core.graph import Graph
from exactplace.core.params import Boolean, Option
from exactplace.core.problem import MethodResult, Problem
from exactplace.heuristics.memory import settle_memory

__all__ = [
    "CO_PLACEMENT", "FUSION", "Memory", "TaskGraph", "finish", "schedule_order", "task_graph", "transfer",
    "unit_task_graph",
]

CO_PLACEMENT = Option("co_placement", Boolean(), True,
                      "placing a colour class's first node reserves the whole class's memory (Baechi)")
FUSION = Option("fusion", Boolean(), True,
                "fuse u -> v inside a colour class when out-degree(u) <= 1 or in-degree(v) <= 1 (Baechi)")


@dataclass
class TaskGraph:
    """The DAG a placer schedules: tasks are nodes, or fused runs of nodes of one colour class.

    ``pred[t]`` / ``succ[t]``: (task, edge cost) pairs, one per original edge between tasks.
    """

    members: list[list[int]]
    acc_time: np.ndarray
    cpu_time: np.ndarray
    supported: np.ndarray
    memory: np.ndarray
    color: np.ndarray
    pred: list[list[tuple[int, float]]]
    succ: list[list[tuple[int, float]]]
    order: list[int]
    """A topological order of the tasks (by the first member's topological position)."""
    rank: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.rank = np.empty(len(self.members), dtype=np.int64)
        self.rank[np.asarray(self.order, dtype=np.int64)] = np.arange(len(self.members))

    @property
    def size(self) -> int:
        return len(self.members)

    def duration(self, t: int, d: int, cluster: Cluster) -> float:
        """Run time of task ``t`` on device ``d`` (``inf`` when unsupported on an accelerator)."""
        if d < cluster.accelerators:
            return float(self.acc_time[t]) / float(cluster.speed[d]) if self.supported[t] else float("inf")
        return float(self.cpu_time[t])


def transfer(cost: float, a: int, b: int, k: int) -> float:
    """Contention-free delay of an edge of cost ``cost`` from device ``a`` to device ``b`` (k accelerators).

    The simulator's communication accounting (:mod:`exactplace.evaluators.makespan`): an edge of
    cost ``c`` from ``a`` to ``b != a`` delays its destination by ``c`` per accelerator among ``a``
    and ``b`` (through host RAM; CPU to CPU is free).
    """
    if a == b:
        return 0.0
    return cost * ((a < k) + (b < k))


def task_graph(graph: Graph, fusion: bool) -> TaskGraph:
    """One task per node, or with ``fusion`` Baechi's safe contraction.

    Fusion contracts an edge ``u -> v`` inside one colour class when ``u`` has at most one
    successor task or ``v`` at most one predecessor task in the current task graph, which can
    never close a cycle. A fused task runs its nodes back to back, in topological order, once
    every input of every member has arrived; so (our choice) a forward node is never fused with
    a backward one, which would hold the forward node back until the backward pass reaches it.

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 1.0, 1.0, color=7), Node(1, 1.0, 1.0, color=7), Node(2, 1.0, 1.0)], [(0, 1), (1, 2)])
    >>> task_graph(g, True).members, task_graph(g, False).size
    ([[0, 1], [2]], 3)
    """
    n = graph.n
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    if fusion:
        succs = [set(s.tolist()) for s in graph.successors]
        preds = [set(p.tolist()) for p in graph.predecessors]
        for u, v in zip(graph.src.tolist(), graph.dst.tolist()):
            if graph.color[u] != graph.color[v] or graph.backward[u] != graph.backward[v]:
                continue
            a, b = find(u), find(v)
            if a == b or not (len(succs[a]) <= 1 or len(preds[b]) <= 1) or b not in succs[a]:
                continue
            # contract b into a: neighbours of b become neighbours of a
            parent[b] = a
            succs[a] = (succs[a] | succs[b]) - {a, b}
            preds[a] = (preds[a] | preds[b]) - {a, b}
            for x in succs[b]:
                preds[x] = (preds[x] - {b}) | ({a} if x != a else set())
            for x in preds[b]:
                succs[x] = (succs[x] - {b}) | ({a} if x != a else set())
            succs[b], preds[b] = set(), set()
    roots = [find(v) for v in range(n)]
    topo = graph.topological_order.tolist()
    task_of_root: dict[int, int] = {}
    members: list[list[int]] = []
    for v in topo:  # tasks numbered by first member in topological order, members in topological order
        t = task_of_root.setdefault(roots[v], len(task_of_root))
        if t == len(members):
            members.append([])
        members[t].append(v)
    task = np.empty(n, dtype=np.int64)
    for t, nodes in enumerate(members):
        task[nodes] = t
    size = len(members)
    pred: list[list[tuple[int, float]]] = [[] for _ in range(size)]
    succ: list[list[tuple[int, float]]] = [[] for _ in range(size)]
    for u, v, c in zip(task[graph.src].tolist(), task[graph.dst].tolist(), graph.edge_cost.tolist()):
        if u != v:
            pred[v].append((u, c))
            succ[u].append((v, c))
    acc = np.bincount(task, weights=np.where(graph.supported, graph.acc_time, 0.0), minlength=size)
    supported = np.bincount(task, weights=~graph.supported, minlength=size) == 0
    return TaskGraph(
        members=members, acc_time=acc, cpu_time=np.bincount(task, weights=graph.cpu_time, minlength=size),
        supported=supported, memory=np.bincount(task, weights=graph.memory, minlength=size),
        color=graph.color[[m[0] for m in members]], pred=pred, succ=succ, order=list(range(size)),
    )


def unit_task_graph(graph: Graph, contraction: Contraction) -> TaskGraph:
    """The units of the Appendix B contraction as tasks: each unit its own class, edges with group costs.

    A unit holds whole colour classes (with their backward partners), so placing units never
    splits a class. The edge cost between two units sums the costs of the communication groups
    of the first that reach the second.

    >>> from exactplace.core.contraction import contract
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 1.0, 1.0, comm=0.5, color=3), Node(1, 1.0, 1.0, color=3), Node(2, 1.0, 1.0)],
    ...           [(0, 2), (2, 1)])
    >>> t = unit_task_graph(g, contract(g))
    >>> t.members, t.succ
    ([[0, 2, 1]], [[]])
    """
    size = contraction.num_units
    members: list[list[int]] = [[] for _ in range(size)]
    for v in graph.topological_order.tolist():
        members[int(contraction.unit[v])].append(v)
    cost: dict[tuple[int, int], float] = {}
    for g in range(len(contraction.group_cost)):
        a = int(contraction.group_source[g])
        for b in contraction.group_target[contraction.group_ptr[g]:contraction.group_ptr[g + 1]].tolist():
            if a != b:
                cost[a, b] = cost.get((a, b), 0.0) + float(contraction.group_cost[g])
    pred: list[list[tuple[int, float]]] = [[] for _ in range(size)]
    succ: list[list[tuple[int, float]]] = [[] for _ in range(size)]
    for a, b in set(zip(contraction.src.tolist(), contraction.dst.tolist())):
        pred[b].append((a, cost.get((a, b), 0.0)))
        succ[a].append((b, cost.get((a, b), 0.0)))
    for lists in (pred, succ):
        for items in lists:
            items.sort()
    return TaskGraph(
        members=members, acc_time=np.where(contraction.supported, contraction.acc_time, 0.0),
        cpu_time=np.asarray(contraction.cpu_time, dtype=float), supported=np.asarray(contraction.supported),
        memory=np.asarray(contraction.memory, dtype=float), color=np.arange(size), pred=pred, succ=succ,
        order=_smallest_first_order(pred, succ),
    )


def _smallest_first_order(pred: list[list[tuple[int, float]]], succ: list[list[tuple[int, float]]]) -> list[int]:
    """The lexicographically smallest topological order (the ready task of lowest id first).

    What ``networkx.lexicographical_topological_sort`` returns, without building a networkx graph
    (slow on large graphs). ``pred``/``succ`` hold each edge once.
    """
    waiting = [len(p) for p in pred]
    ready = [t for t, w in enumerate(waiting) if not w]
    heapq.heapify(ready)
    order = []
    while ready:
        t = heapq.heappop(ready)
        order.append(t)
        for s, _ in succ[t]:
            waiting[s] -= 1
            if not waiting[s]:
                heapq.heappush(ready, s)
    if len(order) != len(pred):
        raise ExactplaceError("The units of the contraction form a cycle; this is a bug, please report it.")
    return order


class Memory:
    """Accelerator memory and colour-class devices, as tasks are placed.

    Colocation: a colour class always shares one device. With ``co_placement`` (Baechi's
    co-placement, the default) placing a class's first node reserves the whole class's memory on
    that device, and a device that cannot hold the whole class is not a candidate; without it
    only the node's own memory is checked, so later members may overfill the device.
    """

    def __init__(self, cluster: Cluster, tasks: TaskGraph, co_placement: bool) -> None:
        self.k = cluster.accelerators
        self.cpus = list(range(self.k, cluster.num_devices))
        self.free = cluster.memory_limit.astype(float).tolist()
        self.class_memory = np.bincount(tasks.color, weights=tasks.memory).tolist()
        self.class_supported = (np.bincount(tasks.color, weights=~tasks.supported) == 0).tolist()
        self.class_device: dict[int, int] = {}
        self.tasks = tasks
        self.co_placement = co_placement
        self.overfull = False

    def need(self, t: int) -> float:
        """Memory that placing task ``t`` first of its class reserves."""
        return self.class_memory[int(self.tasks.color[t])] if self.co_placement else float(self.tasks.memory[t])

    def fits(self, t: int, d: int) -> bool:
        """True when task ``t`` may go to device ``d`` now."""
        c = int(self.tasks.color[t])
        if c in self.class_device:
            return self.class_device[c] == d
        if d >= self.k:
            return True
        return self.class_supported[c] and self.need(t) <= self.free[d]

    def candidates(self, t: int) -> list[int]:
        """The devices task ``t`` may go to now."""
        c = int(self.tasks.color[t])
        if c in self.class_device:
            return [self.class_device[c]]
        return [d for d in range(self.k + len(self.cpus)) if self.fits(t, d)]

    def fallback(self, t: int) -> int:
        """Where a task no device can take goes: its class's device, else the accelerator with most room."""
        c = int(self.tasks.color[t])
        if c in self.class_device:
            return self.class_device[c]
        if not self.class_supported[c] or not self.k:
            return self.cpus[0]  # check_fits guarantees a CPU for such a class
        self.overfull = True
        return int(np.argmax(self.free[: self.k]))

    def place(self, t: int, d: int) -> None:
        """Record task ``t`` on device ``d`` (reserving memory as the class docstring says)."""
        c = int(self.tasks.color[t])
        first = c not in self.class_device
        self.class_device.setdefault(c, d)
        if d < self.k:
            if first:
                self.free[d] -= self.need(t)
            elif not self.co_placement:
                self.free[d] -= float(self.tasks.memory[t])


def schedule_order(tasks: TaskGraph, start: np.ndarray) -> np.ndarray:
    """Node positions in execution order: tasks by start time (ties by topological rank), members in sequence."""
    task_order = np.lexsort((tasks.rank, start))
    return np.array([v for t in task_order.tolist() for v in tasks.members[t]], dtype=np.int64)


def finish(
    problem: Problem, tasks: TaskGraph, task_device: np.ndarray, order: np.ndarray | None, info: dict | None = None,
) -> MethodResult:
    """The MethodResult of a list-scheduling placer: its tasks' devices per node, settled (:func:`settle_memory`)."""
    graph, cluster = problem.graph, problem.cluster
    device = np.empty(graph.n, dtype=np.int64)
    for t, nodes in enumerate(tasks.members):
        device[nodes] = task_device[t]
    info = dict(info or {})
    if order is not None:
        info["order"] = order.tolist()
    return settle_memory(graph, cluster, device, info, deadline=problem.deadline)


