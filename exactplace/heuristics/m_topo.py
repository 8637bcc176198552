"""Baechi's m-TOPO: fill devices in topological order up to a balanced memory cap.

Walk the tasks (nodes, or fused runs, :mod:`~exactplace.heuristics.scheduling`) in topological
order (``graph.topological_order``: lexicographic by node position, deterministic) and fill the
accelerators in id order: a task stays on the current accelerator while the device's memory
stays within ``cap = total node memory / accelerators + largest task memory`` (Baechi's
balancing cap; also never beyond the device's real memory), else the next accelerator is
opened. m-TOPO gives no execution order: the simulator derives one (ready time, then
topological order). :class:`MTopo` states the choices made for this model's CPUs.
"""

from __future__ import annotations

import numpy as np

from exactplace.core.problem import MethodResult, Problem
from exactplace.heuristics.scheduling import CO_PLACEMENT, FUSION, Memory, finish, task_graph
from exactplace.methods.base import Method

__all__ = ["MTopo"]


class MTopo(Method):
    """Baechi's m-TOPO.

    Choices Baechi leaves open, for this model's CPUs: a task unsupported on accelerators, and
    every task once the last accelerator is full, goes to the first CPU core (Baechi has no
    CPUs); a task that fits no accelerator from the current one on goes to the CPU without
    closing the current accelerator.

    Examples
    --------
    >>> from exactplace import Cluster, Graph, Node, solve
    >>> g = Graph([Node(i, 1.0, 1.0, memory=1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
    >>> solve(g, Cluster(2, memory=4.0, cpus=1), objective="makespan", method="m-topo").device.tolist()
    [0, 0, 0, 1]
    """

    name = "m-topo"
    objectives = ("makespan",)
    description = "Baechi m-TOPO: fill accelerators in topological order up to total memory / devices + largest"
    options = {"co_placement": CO_PLACEMENT, "fusion": FUSION}

    def run(self, problem: Problem) -> MethodResult:
        graph, cluster = problem.graph, problem.cluster
        tasks = task_graph(graph, self.setting(problem, "fusion"))
        memory = Memory(cluster, tasks, self.setting(problem, "co_placement"))
        k = cluster.accelerators
        cap = float(graph.memory.sum()) / max(k, 1) + float(tasks.memory.max(initial=0.0))
        used = [0.0] * k
        device = np.empty(tasks.size, dtype=np.int64)
        current = 0
        for t in tasks.order:
            c = int(tasks.color[t])
            if c in memory.class_device:
                d = memory.class_device[c]
            elif not memory.class_supported[c]:
                d = k
            else:
                need = memory.need(t)
                # The first fitting accelerator only: listing every one is O(tasks x devices) on huge clusters.
                opened = next((d for d in range(current, k) if memory.fits(t, d) and used[d] + need <= cap), None)
                if opened is not None:
                    d = current = opened
                    used[d] += need
                else:  # no accelerator from the current one on takes it
                    d = k if cluster.cpus else memory.fallback(t)
            memory.place(t, d)
            device[t] = d
        return finish(problem, tasks, device, None, {"cap": cap, "tasks": tasks.size})
