"""PipeDream's partitioning DP, run as the paper ran it (§7): branches contracted into a path.

PipeDream's optimizer splits a *chain* of layers into consecutive stages, one device each,
minimizing the slowest stage; the paper runs it on general graphs by contracting branches into
a path. :func:`path_contraction` builds that path from the units of the Appendix B contraction
(:mod:`exactplace.core.contraction`) and :class:`PipeDream` runs the stage DP over it. A stage's
time is exactly its max-load, so the DP's value is the evaluator's. Choices the paper leaves
open: no data-parallel replication (this model has none); stages take the accelerators in id
order, then the CPU cores.

Stages are consecutive runs of the path, so the placement is a contiguous chain split (its
forward parts are; like ``dp``, backward parts are contiguous when the backward graph follows
the forward one). Its value can never beat ``dp``'s optimum.
"""

from __future__ import annotations

import math
import time

import numpy as np

from exactplace.core.contraction import Contraction
from exactplace.core.dag import topological_order
from exactplace.core.errors import ExactplaceError, check_param
from exactplace.core.placement import Limit, Status
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators.feasibility import Guarantees
from exactplace.evaluators.max_load import max_load
from exactplace.heuristics.memory import settle_memory
from exactplace.methods.base import Method

__all__ = ["PipeDream", "path_contraction"]


def path_contraction(contraction: Contraction, branches: bool = True) -> np.ndarray:
    """The path node of every unit, numbered along the path.

    1. The units are taken in a lexicographic topological order.
    2. Branches: an edge ``u -> v`` that jumps over other positions spans a branch, from its
       fork ``u`` to its join ``v`` inclusive; overlapping spans are merged, and each merged
       span becomes one path node (every other unit is a path node of its own). Edges out of
       units without compute time (inputs, masks, shape nodes: one attention mask feeds every
       BERT layer, one encoder state every GNMT decoder layer) do not make branches. This
       reading of "contracting branches" is the one that reproduces the paper's published
       ``pipedream`` values. The path nodes are intervals of a topological order, so every
       stage is contiguous and the stages form a chain.

    ``branches=False``: every unit its own path node, in the same order (the fallback).

    >>> from exactplace.core.contraction import contract
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(5)], [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)])
    >>> path_contraction(contract(g)).tolist()   # the diamond 0..3 is one branch
    [0, 0, 0, 0, 1]
    """
    m = contraction.num_units
    src, dst = np.asarray(contraction.src), np.asarray(contraction.dst)
    topo = topological_order(m, src, dst).tolist()
    acc = np.where(contraction.supported, contraction.acc_time, 0.0)
    free = ((acc == 0) & (np.asarray(contraction.cpu_time) == 0)).tolist()
    position = {u: p for p, u in enumerate(topo)}
    # Each edge that jumps over positions spans a branch, fork and join included; overlapping spans merge.
    reach = [-1] * m
    for a, b in zip(src.tolist(), dst.tolist()):
        if branches and not free[a] and position[b] > position[a] + 1:
            reach[position[a]] = max(reach[position[a]], position[b])
    path = np.empty(m, dtype=np.int64)
    current, covered = -1, -1
    for p, u in enumerate(topo):
        if p > covered:
            current += 1
        covered = max(covered, reach[p])
        path[u] = current
    return path


class PipeDream(Method):
    """PipeDream's stage DP on the branch-contracted path.

    ``best[a][c][j]`` is the least possible slowest stage when the first ``j`` path nodes form
    consecutive stages on at most ``a`` accelerators and ``c`` CPU cores. A stage's time is its
    max-load (compute plus each communication group crossing its boundary once; ``overlap``
    honoured; FW + BW for training), and an accelerator stage must fit the memory and hold only
    supported units.

    When no split of the path fits (a branch larger than an accelerator, and no CPU to take
    it), the DP runs again on the units one by one, in the same order (our choice: PipeDream
    itself would fail); ``info["fallback"]`` says so.

    Examples
    --------
    >>> from exactplace import Cluster, Graph, Node, solve
    >>> g = Graph([Node(0, 9.0, 1.0, comm=0.5), Node(1, 9.0, 1.0, comm=0.5), Node(2, 9.0, 1.0, comm=0.5),
    ...            Node(3, 9.0, 1.0, comm=0.5), Node(4, 9.0, 3.0)], [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)])
    >>> p = solve(g, Cluster(2, cpus=0), method="pipedream")
    >>> p.device.tolist(), p.objective   # the diamond moves as one: {0..3} (4 + 0.5 out), {4} (0.5 in + 3)
    ([0, 0, 0, 0, 1], 4.5)
    """

    name = "pipedream"
    objectives = ("throughput",)
    description = "PipeDream's stage DP on the layer path (branches contracted), as the paper ran it"
    guarantee = Guarantees(forward_contiguous=True, chain_order=True)

    @classmethod
    def check(cls, problem: Problem) -> None:
        """A homogeneous cluster and the PipeDream schedule (no ``gpipe``)."""
        check_param(problem.cluster.is_homogeneous, "cluster", "solve",
                    "a homogeneous cluster (one accelerator memory size, speed 1) for method 'pipedream'",
                    problem.cluster)
        check_param(not problem.option("gpipe"), "gpipe", "solve",
                    "False for method 'pipedream' (it scores FW + BW per stage)", problem.option("gpipe"))

    def run(self, problem: Problem) -> MethodResult:
        result = self._split(problem, path_contraction(problem.contraction))
        if result.device is None and result.limit is None:
            # No split of the branch path fits: single units, in the same order (class docstring).
            result = self._split(problem, path_contraction(problem.contraction, branches=False))
            result.info["fallback"] = "single units"
        return result

    def _split(self, problem: Problem, path: np.ndarray) -> MethodResult:
        """PipeDream's DP over ``path`` (the class docstring)."""
        graph, cluster = problem.graph, problem.cluster
        contraction = problem.contraction
        m = int(path.max()) + 1
        k, cpus = cluster.accelerators, cluster.cpus
        overlap = bool(problem.option("overlap"))

        def prefix(values: np.ndarray) -> np.ndarray:
            return np.concatenate([[0.0], np.cumsum(np.bincount(path, weights=values, minlength=m))])

        acc_p = prefix(np.where(contraction.supported, contraction.acc_time, 0.0))
        cpu_p = prefix(np.asarray(contraction.cpu_time, dtype=float))
        mem_p = prefix(np.asarray(contraction.memory, dtype=float))
        bad_p = prefix((~np.asarray(contraction.supported)).astype(float))
        # Communication groups on the path: (source node, sorted other path nodes reached, cost).
        groups = []
        touching: list[list[int]] = [[] for _ in range(m)]
        for g in range(len(contraction.group_cost)):
            s = int(path[contraction.group_source[g]])
            targets = sorted({int(path[u]) for u in contraction.group_target[contraction.group_ptr[g]:
                                                                            contraction.group_ptr[g + 1]]} - {s})
            if not targets or contraction.group_cost[g] == 0:
                continue
            groups.append((s, np.array(targets), float(contraction.group_cost[g])))
            for x in {s, *targets}:
                touching[x].append(len(groups) - 1)

        def charge(group: int, j: int) -> np.ndarray:
            """The group's communication on the stages [i, j), for every i < j."""
            s, targets, cost = groups[group]
            i = np.arange(j)
            leaves = (i <= s) & (s < j) & ((targets[0] < i) | (targets[-1] >= j))
            below = targets[targets < j]
            enters = ((s < i) | (s >= j)) & (i <= (below[-1] if below.size else -1))
            return cost * (leaves | enters)

        comm = np.zeros(m + 1)
        best = np.full((k + 1, cpus + 1, m + 1), math.inf)
        best[:, :, 0] = 0.0
        choice = np.zeros((k + 1, cpus + 1, m + 1), dtype=np.int64)
        cap = cluster.memory_cap
        for j in range(1, m + 1):
            if problem.deadline is not None and time.monotonic() > problem.deadline:
                # The DP is quadratic in the path's length; nothing to return before it ends.
                return MethodResult(None, Status.NO_SOLUTION, limit=Limit.TIME,
                                    info={"path": m, "reached": j - 1,
                                          "reason": f"the stage DP covered {j - 1:,} of {m:,} path nodes in time"})
            for g in touching[j - 1]:  # stages ending at j: update the groups that node j - 1 takes part in
                comm[:j] += charge(g, j)
                comm[:j - 1] -= charge(g, j - 1)
            compute = acc_p[j] - acc_p[:j]
            acc_stage = np.maximum(compute, comm[:j]) if overlap else compute + comm[:j]
            acc_stage[(mem_p[j] - mem_p[:j] > cap) | (bad_p[j] - bad_p[:j] > 0)] = math.inf
            cpu_stage = cpu_p[j] - cpu_p[:j]
            for a in range(k + 1):
                for c in range(cpus + 1):
                    value, how = math.inf, 0
                    if a:
                        v = np.maximum(best[a - 1, c, :j], acc_stage)
                        x = int(np.argmin(v))
                        value, how = float(v[x]), x + 1  # encoded: accelerator stage starting at x
                    if c:
                        v = np.maximum(best[a, c - 1, :j], cpu_stage)
                        x = int(np.argmin(v))
                        if float(v[x]) < value:
                            value, how = float(v[x]), -(x + 1)  # CPU stage starting at x
                    best[a, c, j], choice[a, c, j] = value, how
        if not math.isfinite(best[k, cpus, m]):
            # No stage split of the path fits the accelerators' memory (no CPU): refuted if nothing fits
            # (an exact packing); a repair would break the contiguity pipedream promises.
            info = {"stages": "none fits"}
            return settle_memory(graph, cluster, np.zeros(graph.n, dtype=np.int64), info, deadline=problem.deadline,
                                 repair=False)
        stages = []
        a, c, j = k, cpus, m
        while j > 0:
            how = int(choice[a, c, j])
            x = abs(how) - 1
            stages.append((x, j, how > 0))
            a, c, j = (a - 1, c, x) if how > 0 else (a, c - 1, x)
        stages.reverse()
        path_device = np.empty(m, dtype=np.int64)
        next_acc, next_cpu = 0, k
        for x, j, on_acc in stages:
            if on_acc:
                path_device[x:j], next_acc = next_acc, next_acc + 1
            else:
                path_device[x:j], next_cpu = next_cpu, next_cpu + 1
        device = path_device[path[contraction.unit]]
        value = max_load(graph, cluster, device, overlap=overlap)
        if not math.isclose(value, best[k, cpus, m], rel_tol=1e-9, abs_tol=1e-9):
            raise ExactplaceError(f"pipedream's DP value {best[k, cpus, m]} differs from the evaluator's {value}. "
                                  "This is a bug; please report it.")
        return MethodResult(device, Status.FEASIBLE, info={"path": m, "stages": len(stages)})
