"""Test oracle: the latency path bound's pure-Python DP, as exactplace shipped it before the native one.

``exactplace.bounds.latency_path`` now runs the DP in C++ (``dp_native/path.cpp``); this is
the Python version it replaced (commit 41a022c, verbatim but for the native ideal-count
pre-check and the node reductions, which it now takes from the package's ``reductions``: the
brute-force tests check them), kept only so that tests can check the native bound against it. See the package
module's docstring for the argument.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from exactplace.bounds.latency_path import reductions
from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph

__all__ = ["PathBound", "path_bound"]

MAX_IDEALS = 20_000


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
    """

    value: float
    path: np.ndarray
    ideals: int
    subgraphs: int


class _OutOfBudget(Exception):
    """The reduced lattice is too large, or the deadline passed."""


def _bits(mask: int) -> Iterator[int]:
    """The members of a bitmask, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class _Reduced:
    """The graph after the reductions, as bitmasks over the kept nodes (position order)."""

    def __init__(self, graph: Graph, cluster: Cluster) -> None:
        n, k = graph.n, cluster.accelerators
        speed = float(np.max(cluster.speed)) if k else 1.0
        self.cap = float(np.max(cluster.memory_limit)) if k else 0.0
        preds, succs = graph.predecessors, graph.successors
        on_cpu, sink = reductions(graph, cluster)  # the same reduced graph as the native DP's
        absorbable = sink & graph.supported
        kept = np.flatnonzero(~on_cpu & ~sink)
        index = np.full(n, -1, dtype=np.int64)
        index[kept] = np.arange(len(kept))
        self.kept = kept
        self.cpus = bool(cluster.cpus)
        self.pred_mask = [sum(1 << int(index[u]) for u in preds[v] if index[u] >= 0) for v in kept]
        self.succ_mask = [sum(1 << int(index[w]) for w in succs[v] if index[w] >= 0) for v in kept]
        self.order = [int(index[v]) for v in graph.topological_order.tolist() if index[v] >= 0]
        self.acc = [float(graph.acc_time[v]) / speed if graph.supported[v] else math.inf for v in kept]
        self.cpu = graph.cpu_time[kept].tolist()
        self.memory = graph.memory[kept].tolist()
        # Per communication group with a kept source and a cost: its kept targets, the memory
        # of its absorbable trivial sinks, and whether it has a sink that must stay on a CPU.
        groups = len(graph.group_cost)
        targets, sink_memory = [0] * groups, [0.0] * groups
        sinks, stuck = [False] * groups, [False] * groups
        for g, w in zip(graph.edge_group.tolist(), graph.dst.tolist()):
            if index[w] >= 0:
                targets[g] |= 1 << int(index[w])
            elif absorbable[w]:
                sinks[g] = True
                sink_memory[g] += float(graph.memory[w])
            elif sink[w]:
                stuck[g] = True
        # out: (cost, kept targets, leaves whatever the subgraph, memory of absorbable sinks or -1)
        self.out_groups: list[list[tuple[float, int, bool, float]]] = [[] for _ in kept]
        self.in_groups: list[list[tuple[int, float, int]]] = [[] for _ in kept]
        for g, (u, cost) in enumerate(zip(graph.group_source.tolist(), graph.group_cost.tolist())):
            if index[u] < 0 or cost == 0:
                continue
            self.out_groups[index[u]].append((cost, targets[g], stuck[g], sink_memory[g] if sinks[g] else -1.0))
            for w in _bits(targets[g]):
                self.in_groups[w].append((g, cost, 1 << int(index[u])))

    def load(self, members: int, memory: float) -> float:
        """Least load of the subgraph ``members`` (inputs copied in + compute + outputs copied
        out) over the ways to absorb trivial sinks in the memory left, relaxed to fractions."""
        compute = copy_in = copy_out = 0.0
        entering: set[int] = set()
        options = []
        for v in _bits(members):
            compute += self.acc[v]
            for g, cost, source in self.in_groups[v]:
                if not source & members and g not in entering:
                    entering.add(g)
                    copy_in += cost
            for cost, targets, always, sink_memory in self.out_groups[v]:
                if always or targets & ~members:
                    copy_out += cost
                elif sink_memory >= 0:  # all targets inside but the sinks: absorb them, or copy out
                    copy_out += cost
                    options.append((cost, sink_memory))
        room = self.cap - memory
        # A sink larger than the room is never absorbed; the rest greedily, the last one in part.
        fitting = [o for o in options if o[1] <= room]
        for cost, size in sorted(fitting, key=lambda o: o[0] / o[1] if o[1] > 0 else math.inf, reverse=True):
            take = 1.0 if size <= room else room / size
            copy_out -= cost * take
            room -= size * take
        return copy_in + compute + copy_out

    def heaviest_path(self, weight: list[float]) -> list[int]:
        """Kept nodes (indices) of a heaviest path under ``weight``."""
        order = self.order
        best: dict[int, float] = {}
        parent: dict[int, int | None] = {}
        for v in order:
            prev = max(_bits(self.pred_mask[v]), key=best.__getitem__, default=None)
            best[v] = weight[v] + (best[prev] if prev is not None else 0.0)
            parent[v] = prev
        end: int | None = max(best, key=best.__getitem__, default=None)
        path = []
        while end is not None:
            path.append(end)
            end = parent[end]
        return path[::-1]

    def grow(self, ideal: int, addable: int, v: int) -> tuple[int, int]:
        """``ideal`` with ``v`` added, and the nodes addable to that (``addable``: those of ``ideal``)."""
        bigger = ideal | 1 << v
        ready = 0
        for w in _bits(self.succ_mask[v]):
            if self.pred_mask[w] & ~bigger == 0:
                ready |= 1 << w
        return bigger, (addable & ~(1 << v)) | ready


def _ideals(reduced: _Reduced, limit: int, deadline: float) -> dict[int, int]:
    """Every ideal (down-closed set, a bitmask) and the nodes addable to it, smallest first
    (the order the DP needs); _OutOfBudget past ``limit`` ideals or the deadline."""
    start = sum(1 << v for v, preds in enumerate(reduced.pred_mask) if not preds)
    found, layer = {0: start}, [0]
    while layer:
        if time.monotonic() > deadline:
            raise _OutOfBudget("time")
        grown = []
        for ideal in layer:
            addable = found[ideal]
            for v in _bits(addable):
                bigger, ready = reduced.grow(ideal, addable, v)
                if bigger not in found:
                    found[bigger] = ready
                    grown.append(bigger)
        if len(found) > limit:
            raise _OutOfBudget(f"more than {limit} ideals")
        layer = grown
    return found


def path_bound(graph: Graph, cluster: Cluster, max_ideals: int = MAX_IDEALS,
               deadline: float | None = None) -> PathBound | None:
    """A lower bound on the latency of every contiguous placement; None when out of budget.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    max_ideals : int
        Give up (None) when the reduced graph has more ideals.
    deadline : float, optional
        A ``time.monotonic()`` instant after which it gives up (None).

    Returns
    -------
    PathBound or None
    """
    stop = math.inf if deadline is None else deadline
    reduced = _Reduced(graph, cluster)
    try:
        ideals = _ideals(reduced, max_ideals, stop)
        candidates = _paths(reduced)
        best, examined, charged = -math.inf, 0, []
        for nodes in candidates:
            value, count = _charge(reduced, ideals, nodes, cluster.accelerators, stop)
            examined += count
            if value > best:
                best, charged = value, nodes
    except _OutOfBudget:
        return None
    return PathBound(best, reduced.kept[charged], len(ideals), examined)


def _paths(reduced: _Reduced) -> list[list[int]]:
    """The paths to charge (the bound is the best of their DPs): a heaviest path by each node's
    cheapest time, and a path through the most nodes (it meets the most subgraphs)."""
    cheapest = [min(a, c if reduced.cpus else math.inf) for a, c in zip(reduced.acc, reduced.cpu)]
    cheapest = [c if math.isfinite(c) else 0.0 for c in cheapest]
    paths = [reduced.heaviest_path(cheapest), reduced.heaviest_path([1.0] * len(cheapest))]
    return [p for i, p in enumerate(paths) if p not in paths[:i]]


def _charge(reduced: _Reduced, ideals: dict[int, int], path: list[int], accelerators: int,
            deadline: float) -> tuple[float, int]:
    """The DP: least charge of a chain of ideals from {} to everything, and the subgraphs examined.

    ``best[ideal][j]``: least charge to reach ``ideal`` with ``j`` subgraphs used; ``ideals``
    (ideal -> addable nodes) lists every ideal before its supersets.
    """
    on_path = sum(1 << v for v in path)
    cpu, memory, cap, k = reduced.cpu, reduced.memory, reduced.cap, accelerators
    best = {ideal: [math.inf] * (k + 1) for ideal in ideals}
    best[0][0] = 0.0
    examined = 0
    for ideal, addable in ideals.items():
        if time.monotonic() > deadline:
            raise _OutOfBudget("time")
        row = best[ideal]
        if min(row) == math.inf:
            continue
        if reduced.cpus:  # one CPU node
            for v in _bits(addable):
                charge = cpu[v] if on_path >> v & 1 else 0.0
                target = best[ideal | 1 << v]
                for j in range(k + 1):
                    target[j] = min(target[j], row[j] + charge)
        if min(row[:k], default=math.inf) == math.inf:
            continue
        # one accelerator subgraph: every bigger ideal whose difference fits the memory
        stack, visited = [(ideal, addable, 0.0)], {ideal}
        while stack:
            inner, inner_addable, used = stack.pop()
            for v in _bits(inner_addable):
                if used + memory[v] > cap:
                    continue
                bigger, ready = reduced.grow(inner, inner_addable, v)
                if bigger in visited:
                    continue
                visited.add(bigger)
                stack.append((bigger, ready, used + memory[v]))
                examined += 1
                if examined % 4096 == 0 and time.monotonic() > deadline:
                    raise _OutOfBudget("time")
                members = bigger & ~ideal
                charge = reduced.load(members, used + memory[v]) if members & on_path else 0.0
                if math.isinf(charge):  # a node that cannot run on an accelerator
                    continue
                target = best[bigger]
                for j in range(k):
                    target[j + 1] = min(target[j + 1], row[j] + charge)
    return min(best[(1 << len(reduced.kept)) - 1]), examined
