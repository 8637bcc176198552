"""A lower bound on contiguous latency (paper §4, ``q = 1``): a DP over ideals, charged along one path.

Why: the latency program's LP relaxation is weak where latency is a sum of subgraph invocations
along a chain (layer graphs); this bound is tight there.

The argument: fix a path ``P``. A contiguous subgraph ``X`` is entered by ``P`` at most once, and
``P``'s first node in ``X`` finishes only after ``X`` has started, copied its inputs in, computed
and copied its outputs out, so ``latency >= sum of load(X) over the subgraphs P meets + CPU time
of P's CPU nodes``. The subgraphs and CPU nodes of a placement that runs, in run order, form a
chain of ideals ``{} = I_0 < ... < I_t = V`` whose steps are one subgraph (at most ``k``, each
within one accelerator's memory) or one CPU node; a shortest-path DP over the ideals finds the
least charge, a bound on every placement. Assumptions, all relaxations: colocation is ignored,
and every subgraph gets the largest memory and the fastest speed. :func:`reductions` keeps the
lattice small; :func:`path_bound` describes the DP and the placements it yields.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph

__all__ = ["DEFAULT_MEMORY_BUDGET", "MAX_IDEALS", "PathBound", "path_bound", "reductions"]

#: Ideals of the reduced graph beyond which no bound is computed.
MAX_IDEALS = 1_000_000

#: Bytes the lattice and the DP's tables may take (estimated before they exist); past it, no bound.
DEFAULT_MEMORY_BUDGET = 2 * 2**30


@dataclass(frozen=True)
class PathBound:
    """A lower bound on the latency of every contiguous placement, and how it was found.

    Attributes
    ----------
    value : float
        The bound (``inf``: not even the relaxation has a placement).
    path : numpy array of int
        Node positions of the path the bound charges, in order.
    ideals : int
        Ideals of the reduced graph the DP ran over.
    subgraphs : int
        Candidate subgraphs (pairs of ideals within the memory) it examined.
    placements : tuple of numpy arrays of int
        Legal ``q = 1`` placements (device arrays) built from the DP's argmin chains, the
        bound's path's first; empty when no chain gives one.
    """

    value: float
    path: np.ndarray
    ideals: int
    subgraphs: int
    placements: tuple[np.ndarray, ...] = ()


def reductions(graph: Graph, cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    """The nodes the reductions take out of the path DP, as boolean masks: free inputs put on a
    CPU, and trivial sinks. Without CPUs there are none.

    Each reduction moves nodes so that no subgraph's load or start grows, hence no latency
    grows, so the bound stays valid:

    * a node with no CPU time whose predecessors were all reduced this way and whose outgoing
      communication is free (e.g. a model's inputs) is put on a CPU: it finishes at time 0 and
      costs no subgraph anything;
    * a *trivial sink* (no successors, one predecessor ``u``, no CPU time, and no accelerator
      time or no accelerator support) is either in ``u``'s subgraph or on a CPU (anywhere else
      it only adds an input copy). The DP charges each subgraph ``u``'s output copy unless it
      can *absorb* ``u``'s trivial sinks within its memory, a knapsack relaxed to its fractional
      optimum over the sinks that fit at all (only ever lower; exact when they all fit).

    >>> from exactplace.core.graph import Node
    >>> g = Graph([Node(0, 0.0, 0.0), Node(1, 5.0, 1.0, comm=1.0), Node(2, 0.0, 0.0)], [(0, 1), (1, 2)])
    >>> [mask.tolist() for mask in reductions(g, Cluster(1, cpus=1))]
    [[True, False, False], [False, False, True]]
    """
    n = graph.n
    preds, succs = graph.predecessors, graph.successors
    out_free = np.ones(n, dtype=bool)
    np.logical_and.at(out_free, graph.group_source, graph.group_cost == 0)
    free_cpu = graph.cpu_time == 0
    on_cpu = np.zeros(n, dtype=bool)
    sink = np.zeros(n, dtype=bool)
    if cluster.cpus:  # both reductions move nodes to a CPU
        for v in graph.topological_order.tolist():
            on_cpu[v] = free_cpu[v] and out_free[v] and bool(on_cpu[preds[v]].all())
        # A sink with accelerator time stays: putting it beside u costs time, so it is no free choice.
        sink = (~on_cpu & free_cpu & (~graph.supported | (graph.acc_time == 0))
                & np.array([len(s) == 0 and len(p) == 1 for s, p in zip(succs, preds)]))
    return on_cpu, sink


class _Reduced:
    """The graph after the reductions, as arrays over the kept nodes (numbered in position order)."""

    def __init__(self, graph: Graph, cluster: Cluster) -> None:
        n, k = graph.n, cluster.accelerators
        speed = float(np.max(cluster.speed)) if k else 1.0
        self.cap = float(np.max(cluster.memory_limit)) if k else 0.0
        preds = graph.predecessors
        on_cpu, sink = reductions(graph, cluster)
        self.on_cpu, self.sink = on_cpu, sink
        self.absorbable = sink & graph.supported
        kept = np.flatnonzero(~on_cpu & ~sink)
        index = np.full(n, -1, dtype=np.int64)
        index[kept] = np.arange(len(kept))
        self.kept, self.index = kept, index
        self.cpus = bool(cluster.cpus)
        inner = (index[graph.src] >= 0) & (index[graph.dst] >= 0)
        self.edge_src, self.edge_dst = index[graph.src[inner]], index[graph.dst[inner]]
        self.order = index[graph.topological_order][index[graph.topological_order] >= 0]
        self.acc = np.where(graph.supported[kept], graph.acc_time[kept] / speed, math.inf)
        self.cpu = graph.cpu_time[kept]
        self.memory = graph.memory[kept]
        # Communication groups with a kept source and a cost: their kept targets, the memory of
        # their absorbable trivial sinks (-1: none), and whether a sink must stay on a CPU.
        groups = len(graph.group_cost)
        target_kept = index[graph.dst] >= 0
        into_sink = self.absorbable[graph.dst]
        has_sinks = np.zeros(groups, dtype=bool)
        has_sinks[graph.edge_group[into_sink]] = True
        sink_memory = np.zeros(groups)
        np.add.at(sink_memory, graph.edge_group[into_sink], graph.memory[graph.dst[into_sink]])
        stuck = np.zeros(groups, dtype=bool)
        stuck[graph.edge_group[sink[graph.dst] & ~into_sink]] = True
        self.groups = np.flatnonzero((index[graph.group_source] >= 0) & (graph.group_cost > 0))
        renumber = np.full(groups, -1, dtype=np.int64)
        renumber[self.groups] = np.arange(len(self.groups))
        member = target_kept & (renumber[graph.edge_group] >= 0)
        by_group = np.argsort(renumber[graph.edge_group[member]], kind="stable")
        self.group_target = index[graph.dst[member]][by_group]
        self.group_ptr = np.concatenate(
            [[0], np.cumsum(np.bincount(renumber[graph.edge_group[member]], minlength=len(self.groups)))])
        self.group_source = index[graph.group_source[self.groups]]
        self.group_cost = graph.group_cost[self.groups]
        self.group_stuck = stuck[self.groups]
        self.group_sink_memory = np.where(has_sinks, sink_memory, -1.0)[self.groups]
        self.preds = [np.sort(index[p][index[p] >= 0]).tolist() for p in (preds[v] for v in kept.tolist())]

    def heaviest_path(self, weight: list[float]) -> list[int]:
        """Kept nodes of a heaviest path under ``weight`` (ties: the first in topological order,
        the lowest-numbered predecessor)."""
        best: dict[int, float] = {}
        parent: dict[int, int | None] = {}
        for v in self.order.tolist():
            prev = max(self.preds[v], key=best.__getitem__, default=None)
            best[v] = weight[v] + (best[prev] if prev is not None else 0.0)
            parent[v] = prev
        end: int | None = max(best, key=best.__getitem__, default=None)
        path = []
        while end is not None:
            path.append(end)
            end = parent[end]
        return path[::-1]

    def paths(self) -> list[list[int]]:
        """The paths to charge (the bound is the best of their DPs): a heaviest path by each node's
        cheapest time, and a path through the most nodes (it meets the most subgraphs)."""
        cheapest = np.minimum(self.acc, self.cpu if self.cpus else math.inf)
        cheapest = np.where(np.isfinite(cheapest), cheapest, 0.0).tolist()
        paths = [self.heaviest_path(cheapest), self.heaviest_path([1.0] * len(cheapest))]
        return [p for i, p in enumerate(paths) if p not in paths[:i]]


def path_bound(graph: Graph, cluster: Cluster, max_ideals: int = MAX_IDEALS, deadline: float | None = None,
               memory_budget: float = DEFAULT_MEMORY_BUDGET, info: dict | None = None) -> PathBound | None:
    """A lower bound on the latency of every contiguous placement; None when out of budget.

    The DP runs in C++ (``dp_native/path.cpp``) over the lattice of ``dp_native/ideals.hpp``:
    the candidate subgraphs of an ideal are its supersets within the memory, grown one node at
    a time in a fixed order so that each is reached once, with the load kept up to date in
    O(degree) per node. It charges two paths in the same walk (a heaviest path by each node's
    cheapest time, a path through the most nodes) and keeps the larger bound. Graphs whose
    reduced lattice has more than ``max_ideals`` ideals, whose tables do not fit
    ``memory_budget``, or that run out of time get no bound (None), never a wrong one.

    The DP's argmin chain is almost a placement. Many chains reach the bound (a step the path
    misses charges nothing, on a CPU or an accelerator alike), so the DP keeps, among chains of
    least charge, one with the least work off the path (a CPU node's time, a subgraph's load):
    off-path nodes then go to accelerators where that is free, a better placement for the same
    bound. Its subgraph steps go to accelerators, its CPU steps and the nodes reduced onto CPUs
    to a CPU, and each trivial sink beside its predecessor's subgraph where that saves a copy
    and fits, else to a CPU. What the relaxation ignored may make it illegal: colour classes
    split across devices are moved whole to a CPU, subgraphs go to the accelerators by size
    (unequal memories); a chain that is still not a legal ``q = 1`` placement
    (``check_feasibility``) gives none. The latency program scores these placements and starts
    from the best (``latency_mip``).

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    max_ideals : int
        Give up (None) when the reduced graph has more ideals (at most 2**30 - 1).
    deadline : float, optional
        A ``time.monotonic()`` instant after which it gives up (None).
    memory_budget : float
        Give up (None) when the lattice and the tables would take more bytes.
    info : dict, optional
        Filled with how the DP ended (``status``: ``done``, ``too_many_ideals``, ``over_budget``
        or ``time``), its ``ideals``, ``pairs``, ``bytes`` and seconds.

    Returns
    -------
    PathBound or None

    Raises
    ------
    KeyboardInterrupt
        Ctrl-C while the DP runs.
    SolverUnavailableError
        The native extension is not built.

    Examples
    --------
    Three layers in a chain, two accelerators of memory 2 for three layers of memory 1: one
    subgraph boundary is unavoidable, so the bound is the compute plus one copy out and in, and
    the chain's placement (two layers, then one on the other accelerator) reaches it.

    >>> from exactplace.core.graph import Node
    >>> g = Graph([Node(i, 10.0, 1.0, memory=1.0, comm=0.5) for i in range(3)], [(0, 1), (1, 2)])
    >>> found = path_bound(g, Cluster(2, memory=2.0, cpus=1))
    >>> found.value, [p.tolist() for p in found.placements]
    (4.0, [[0, 0, 1]])
    """
    from exactplace.native import load

    native = load()
    reduced = _Reduced(graph, cluster)
    paths = reduced.paths()
    seconds = math.inf if deadline is None else max(deadline - time.monotonic(), 0.0)
    out = native.latency_path_bound(
        units=len(reduced.kept), edge_src=reduced.edge_src, edge_dst=reduced.edge_dst, cpu_time=reduced.cpu,
        acc_time=reduced.acc, memory=reduced.memory, memory_cap=reduced.cap, accelerators=cluster.accelerators,
        cpus=reduced.cpus, group_cost=reduced.group_cost, group_source=reduced.group_source,
        group_ptr=reduced.group_ptr, group_target=reduced.group_target,
        group_stuck=reduced.group_stuck.astype(np.uint8), group_sink_memory=reduced.group_sink_memory,
        path_ptr=np.cumsum([0, *map(len, paths)]), path_node=np.array([v for p in paths for v in p], dtype=np.int64),
        max_ideals=int(max_ideals), memory_budget=int(min(memory_budget, 2**62)), time_limit=seconds)
    if info is not None:
        info.update({key: out[key] for key in ("status", "ideals", "pairs", "bytes", "seconds_ideals", "seconds_dp")})
    if out["status"] != "done":
        return None
    values = out["values"].tolist()
    charged = max(range(len(paths)), key=values.__getitem__)  # the first best, as the paths are listed
    placements: list[np.ndarray] = []
    for p in [charged, *(p for p in range(len(paths)) if p != charged)]:
        device = None if out["chains"][p] is None else _placement(graph, cluster, reduced, *out["chains"][p])
        if device is not None and not any(np.array_equal(device, other) for other in placements):
            placements.append(device)
    return PathBound(values[charged], reduced.kept[paths[charged]], int(out["ideals"]), int(out["pairs"]),
                     tuple(placements))


def _placement(graph: Graph, cluster: Cluster, reduced: _Reduced, step: np.ndarray,
               on_accelerator: np.ndarray) -> np.ndarray | None:
    """The chain (``step`` of each kept node, each step's kind) as a legal ``q = 1`` device array, or None."""
    from exactplace.evaluators import check_feasibility

    k = cluster.accelerators
    cpu = k  # the first CPU: CPU nodes run on cores of their own in the §4 semantics
    device = np.full(graph.n, cpu, dtype=np.int64)
    subgraphs = [np.flatnonzero(step == s) for s in np.flatnonzero(on_accelerator)]
    # Largest subgraph on the largest accelerator (all equal: in chain order).
    sizes = [float(reduced.memory[s].sum()) for s in subgraphs]
    accelerators = sorted(range(k), key=lambda d: (-cluster.memory_limit[d], -cluster.speed[d], d))
    for d, s in zip(accelerators, sorted(range(len(subgraphs)), key=lambda s: -sizes[s])):
        device[reduced.kept[subgraphs[s]]] = d
    # Trivial sinks beside their source's subgraph where every other target is there too (the
    # group's copy is saved) and they fit, best saving per byte first; the rest on a CPU.
    used = np.bincount(device[device < k], weights=graph.memory[device < k], minlength=k)
    targets_of: dict[int, list[int]] = {}
    for g, w in zip(graph.edge_group.tolist(), graph.dst.tolist()):
        targets_of.setdefault(g, []).append(w)
    options = []
    for g, targets in targets_of.items():
        d = int(device[graph.group_source[g]])
        sinks = [w for w in targets if reduced.absorbable[w]]
        # Saved only if no target is elsewhere: no other sink stuck on a CPU, every kept target on d.
        closed = all(reduced.absorbable[w] or (not reduced.sink[w] and device[w] == d) for w in targets)
        if sinks and d < k and graph.group_cost[g] > 0 and closed:
            size = float(graph.memory[sinks].sum())
            options.append((graph.group_cost[g] / size if size > 0 else math.inf, g, d, sinks, size))
    for _, _, d, sinks, size in sorted(options, key=lambda o: -o[0]):
        if used[d] + size <= cluster.memory_limit[d]:
            device[sinks] = d
            used[d] += size
    if not check_feasibility(graph, cluster, device, objective="latency", q=1):
        return device
    # Colour classes the relaxation split: each moved whole to a CPU, if that is legal.
    if not cluster.cpus:
        return None
    split = [c for c in np.unique(graph.color) if len(np.unique(device[graph.color == c])) > 1]
    if not split:
        return None
    device[np.isin(graph.color, split)] = cpu
    return None if check_feasibility(graph, cluster, device, objective="latency", q=1) else device
