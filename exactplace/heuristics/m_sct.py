"""Baechi's m-SCT: m-ETF with favourite children from the SCT LP relaxation.

Why: the SCT LP says which child should run right after its parent on the parent's device
(saving that edge's transfer), so m-ETF is made to wait for it. The LP's makespan is the
result's ``bound`` (and ``info["sct_bound"]``): a lower bound on the makespan of every
placement, so ``Placement.gap`` says how far m-SCT can be from the optimum. It needs no
small-communication assumption: ``formulations/sct.py`` caps each edge's delay by what every
schedule must pay (the published graphs have zero-time nodes with costly edges, where Baechi's
LP with the raw costs is no bound). :class:`MSCT` gives the steps.
"""

from __future__ import annotations

import dataclasses

from exactplace.core.placement import Limit
from exactplace.core.problem import MethodResult, Problem
from exactplace.heuristics.m_etf import etf_schedule
from exactplace.heuristics.scheduling import CO_PLACEMENT, FUSION, Memory, finish, schedule_order, task_graph
from exactplace.methods.base import Method

__all__ = ["MSCT"]


class MSCT(Method):
    """Baechi's m-SCT.

    1. Favourite children from :func:`exactplace.sct_relaxation` (the SCT LP, rounded: at most
       one favourite child per node and one favourite parent per node). With fusion on, a
       task's favourite child is the task holding the favourite child of the task's last node.
    2. m-ETF (:mod:`~exactplace.heuristics.m_etf`), except that a device whose last task has an
       unplaced favourite child that fits it is reserved for that child: it runs the child as
       soon as the child is ready; meanwhile it takes only *urgent* tasks (inputs already there
       when the device is free), and otherwise waits. When no device has a candidate the
       reservations are dropped for that step, so waiting never deadlocks. Choice Baechi leaves
       to its implementation: "urgent" is read per device, as above.

    On a graph whose LP does not solve in half the time limit (it has a variable per edge) the
    devices reserve nothing: the placement is m-ETF's, ``limit=Limit.TIME`` and
    ``info["favorite_children"]`` say so, and there is no bound.

    Examples
    --------
    >>> from exactplace import Cluster, Graph, Node, solve
    >>> g = Graph([Node(0, 9.0, 2.0, comm=1.0), Node(1, 9.0, 3.0), Node(2, 9.0, 4.0)], [(0, 1), (0, 2)])
    >>> p = solve(g, Cluster(2, cpus=1), objective="makespan", method="m-sct")
    >>> p.device.tolist(), p.objective, p.bound   # 2 follows its parent; 1 pays 2 x 1
    ([0, 1, 0], 7.0, 6.0)
    """

    name = "m-sct"
    objectives = ("makespan",)
    description = "Baechi m-SCT: m-ETF where a device waits for its last node's favourite child (SCT LP)"
    requires = ("highspy",)
    options = {"co_placement": CO_PLACEMENT, "fusion": FUSION}

    def run(self, problem: Problem) -> MethodResult:
        from exactplace.bounds.sct import sct_relaxation

        graph, cluster = problem.graph, problem.cluster
        # Half the time for the LP: the schedule after it takes about as long on large graphs.
        budget = None if problem.deadline is None else problem.remaining() / 2
        relaxation = sct_relaxation(graph, cluster, time_limit=budget)
        tasks = task_graph(graph, self.setting(problem, "fusion"))
        task_of = {v: t for t, members in enumerate(tasks.members) for v in members}
        favorite = [-1] * tasks.size
        for parent, child in ({} if relaxation is None else relaxation.favorite_child).items():
            t, c = task_of[graph.index_of(parent)], task_of[graph.index_of(child)]
            if t != c and tasks.members[t][-1] == graph.index_of(parent):
                favorite[t] = c
        memory = Memory(cluster, tasks, self.setting(problem, "co_placement"))
        device, start = etf_schedule(cluster, tasks, memory, favorite)
        info: dict = {"tasks": tasks.size}
        if relaxation is None:
            info["favorite_children"] = "none: the SCT LP did not solve in half the time limit"
        else:
            info.update(sct_bound=relaxation.bound, favorite_children=len(relaxation.favorite_child))
        result = finish(problem, tasks, device, schedule_order(tasks, start), info)
        if relaxation is None:
            return dataclasses.replace(result, limit=result.limit or Limit.TIME)
        return dataclasses.replace(result, bound=relaxation.bound)
