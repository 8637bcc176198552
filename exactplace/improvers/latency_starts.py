"""Warm starts of the latency program: the placements it starts from, and the linear latency DP.

:func:`warm_start_candidates` gathers the starts; the one of its own is the best split of a
DFS topological order into accelerator segments (:func:`linear_latency_split`): the units of
the Appendix B contraction in DPL's depth-first topological order, consecutive runs of it on
distinct accelerators (each run fitting one accelerator's memory and supported there), every
other unit on the CPU. A dynamic program over (units placed, accelerators used) minimizes a
*serial surrogate* of the latency: the sum of every run's duration (copy-in + compute +
copy-out, as the §4 semantics charge it) plus every CPU node's time. The surrogate is exact on
a chain and overestimates where branches run in parallel; the latency program only starts from
the result, scored by the real evaluator. On chain-like graphs latency is dominated by where
the cuts fall, which the surrogate prices exactly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.contraction import Contraction, dfs_topological_order
from exactplace.core.graph import Graph
from exactplace.core.problem import Problem

__all__ = ["linear_latency_split", "linear_latency_splits", "warm_start_candidates"]


def warm_start_candidates(problem: Problem,
                          start_from: Callable[[str, Problem], np.ndarray | None]) -> dict[str, np.ndarray]:
    """Placements to start from, by name: the user's, and (``warm_start="auto"``) all-CPU, greedy,
    the linear latency DP over six DFS orders, the max-load DP split and DPL (those two within a
    fifth of the time left). ``start_from(name, problem)`` runs a registered method
    (:func:`exactplace.methods.registry.start_from`): improvers never import a method."""
    graph, cluster = problem.graph, problem.cluster
    found: dict[str, np.ndarray] = {}
    if problem.warm_start is not None:
        found["user"] = np.asarray(problem.warm_start)
    if not problem.default_start:
        return found
    if cluster.cpus:
        found["cpu"] = np.full(graph.n, cluster.accelerators, dtype=np.int64)
    greedy = start_from("greedy", problem)
    if greedy is not None:
        found["greedy"] = greedy
    for i, split in enumerate(linear_latency_splits(graph, cluster, problem.contraction)):
        found[f"linear_dp{i}" if i else "linear_dp"] = split
    remaining = problem.remaining()
    throughput = Problem(graph, cluster, "throughput",
                         deadline=None if math.isinf(remaining) else time.monotonic() + remaining / 5,
                         cache=problem.cache)
    for name, method in (("maxload_dp", "dp"), ("dpl", "dpl")):
        device = start_from(method, throughput)
        if device is not None:
            found[name] = device
    return found


def linear_latency_splits(graph: Graph, cluster: Cluster, contraction: Contraction,
                          orders: int = 6, seed: int = 0) -> list[np.ndarray]:
    """Surrogate-optimal splits along ``orders`` DFS orders: the DPL order, then orders with the
    units' tie-breaking shuffled (seeded). Where the cuts can fall depends on the order, so a
    shuffled order may beat DPL's."""
    rng = np.random.default_rng(seed)
    splits = []
    for attempt in range(orders):
        rank = np.arange(contraction.num_units) if attempt == 0 else rng.permutation(contraction.num_units)
        order = dfs_topological_order(contraction.num_units, rank[contraction.src], rank[contraction.dst])
        inverse = np.empty_like(rank)
        inverse[rank] = np.arange(len(rank))
        split = linear_latency_split(graph, cluster, contraction, inverse[order])
        if split is not None:
            splits.append(split)
    return splits


def linear_latency_split(graph: Graph, cluster: Cluster, contraction: Contraction,
                         order: np.ndarray | None = None) -> np.ndarray | None:
    """The surrogate-optimal split (device array) along ``order`` (a topological order of the
    units; default DPL's DFS order), or None when no split places every unit.

    >>> from exactplace.core.cluster import Cluster
    >>> from exactplace.core.contraction import contract
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 5.0, 1.0, memory=1, comm=9.0), Node(1, 5.0, 1.0, memory=1, comm=1.0),
    ...            Node(2, 5.0, 1.0, memory=1)], [(0, 1), (1, 2)])
    >>> linear_latency_split(g, Cluster(2, memory=2.0, cpus=1), contract(g)).tolist()  # cut the cheap edge
    [0, 0, 1]
    """
    k, units = cluster.accelerators, contraction.num_units
    if order is None:
        order = dfs_topological_order(units, contraction.src, contraction.dst)
    position = np.empty(units, dtype=np.int64)
    position[order] = np.arange(units)
    pos = position[contraction.unit]  # position of each node's unit
    cap = cluster.memory_cap
    memory = contraction.memory[order]
    supported = contraction.supported[order]
    cpu_cost = np.bincount(pos, weights=graph.cpu_time, minlength=units)
    acc_cost = np.bincount(pos, weights=np.where(graph.supported, graph.acc_time, 0.0), minlength=units)

    # Communication groups: source position, the positions of their targets, cost.
    group_pos = pos[graph.group_source]
    last = np.full(len(graph.group_cost), -1, dtype=np.int64)
    np.maximum.at(last, graph.edge_group, pos[graph.dst])
    entering: list[list[tuple[int, int]]] = [[] for _ in range(units)]  # at each target unit: (group, source pos)
    for g, t in zip(graph.edge_group.tolist(), pos[graph.dst].tolist()):
        if group_pos[g] != t:
            entering[t].append((g, int(group_pos[g])))
    sources: list[list[int]] = [[] for _ in range(units)]
    ends: list[list[int]] = [[] for _ in range(units)]
    for g in range(len(graph.group_cost)):
        if last[g] > group_pos[g]:
            sources[group_pos[g]].append(g)
            ends[last[g]].append(g)
    cost = graph.group_cost.tolist()

    # duration[i][j]: run of units i..j (inclusive) on one accelerator; inf where it cannot fit.
    inf = math.inf
    best = np.full((units + 1, k + 1), inf)
    choice: dict[tuple[int, int], int] = {}
    best[0, 0] = 0.0
    duration = [dict() for _ in range(units)]
    for i in range(units):
        used, copy_in, copy_out, compute = 0.0, 0.0, 0.0, 0.0
        seen: set[int] = set()
        out: set[int] = set()
        for j in range(i, units):
            used += memory[j]
            if not supported[j] or used > cap:
                break
            compute += acc_cost[j]
            for g, s in entering[j]:
                if s < i and g not in seen:
                    seen.add(g)
                    copy_in += cost[g]
            for g in sources[j]:
                out.add(g)
                copy_out += cost[g]
            for g in ends[j]:
                if g in out:
                    out.discard(g)
                    copy_out -= cost[g]
            duration[i][j] = copy_in + compute + copy_out
    for i in range(units):
        for a in range(k + 1):
            here = best[i, a]
            if here == inf:
                continue
            if cluster.cpus and here + cpu_cost[i] < best[i + 1, a]:
                best[i + 1, a] = here + cpu_cost[i]
                choice[(i + 1, a)] = -1
            if a < k:
                for j, length in duration[i].items():
                    if here + length < best[j + 1, a + 1]:
                        best[j + 1, a + 1] = here + length
                        choice[(j + 1, a + 1)] = i
    a = int(np.argmin(best[units]))
    if best[units, a] == inf:
        return None
    unit_device = np.full(units, k, dtype=np.int64)
    i = units
    while i > 0:
        start = choice[(i, a)]
        if start < 0:
            i -= 1
        else:
            a -= 1
            unit_device[start:i] = a
            i = start
    return unit_device[pos]
