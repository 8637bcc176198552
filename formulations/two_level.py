"""The contiguous max-load IP on a two-level cluster (paper Appendix C.3; PipeDream's hierarchical split).

The space is the two-level DP's (:mod:`exactplace.methods.two_level`): a chain of ideals in
which each machine takes consecutive accelerator stages and CPU stages lie between machines.
The chain's positions are laid out in advance, and only the ideals are variables::

    gap 0 (l CPU slots) | machine 0 (p accelerator slots) | gap 1 | machine 1 | ... | machine m-1 | gap m

Positions may stay empty (``I_j = I_{j-1}``) and machines are identical, so this fixed layout
loses nothing: any two-level chain split fits it with its machines in chain order. Warm starts
are not encoded (the fixed layout would need each start's machines renamed into chain order).
The program: :func:`two_level_ip`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.contraction import Contraction
from exactplace.core.graph import Graph

from .decoding import ThroughputIP
from .model import Kind, Model
from .throughput import chain_rows, ideal_vars
from .units import (
    UnitData,
    communication_rows,
    fits_accelerator,
    load_cap,
    load_rows,
    memory_rows,
    objective_and_bounds,
    unit_data,
)

__all__ = ["TwoLevelIP", "two_level_ip"]


@dataclass
class TwoLevelIP(ThroughputIP):
    """A built two-level IP: the positions' layout, and decoding by it."""

    positions: str = ""
    """The layout, one letter per position (``C`` a CPU slot, ``A`` an accelerator slot), machines spaced."""

    def decode(self, values: np.ndarray) -> np.ndarray:
        """Device of every node position: slot ``s`` of machine ``b`` is accelerator ``b * p + s``; the
        non-empty CPU slots take the CPU cores in chain order."""
        k = self.cluster.accelerators
        w = values[self.index["w"]] > 0.5
        position = np.argmax(w, axis=1)                        # first ideal holding each unit
        is_cpu = self.index["is_cpu"]
        device_of_position = np.full(len(is_cpu), -1, dtype=np.int64)
        device_of_position[~is_cpu] = np.arange(k)
        held = np.zeros(len(is_cpu), dtype=bool)
        held[position] = True
        cpu_positions = np.flatnonzero(is_cpu & held)
        device_of_position[cpu_positions] = k + np.arange(len(cpu_positions))
        return device_of_position[position][self.data.unit]

    def encode(self, device: np.ndarray, replicas: np.ndarray | None = None) -> np.ndarray | None:
        """Warm starts are not encoded (module docstring): always None."""
        return None


def _layout(cluster: Cluster) -> np.ndarray:
    """Whether each position is a CPU slot: ``l`` CPU slots around and between the machines' ``p`` slots."""
    machine_then_gap = [False] * cluster.per_machine + [True] * cluster.cpus
    return np.array([True] * cluster.cpus + machine_then_gap * cluster.machines, dtype=bool)


def two_level_ip(graph: Graph, cluster: Cluster, contraction: Contraction, *, overlap: bool = False,
                 gpipe: bool = False) -> TwoLevelIP:
    """The contiguous IP over two-level chain splits, on the fixed layout of positions ``j`` (module docstring)::

        min  L                                           (LF + LB with gpipe)
        s.t. chain and ideal rows on w                   as :func:`~.throughput.contiguous_ip`'s
             a[u, s] or p[u, s] = w[u, j] - w[u, j-1]    at slot s's position j
             p[u, s] <= used[s],  sum_s used[s] <= l     at most l CPU slots hold units, one per core
             e[g, s] >= |a[t, s] - a[src(g), s]|         communication, as the one-level IP
             q[g, s] >= a[src(g), s] - in_B(t),  q[g, s] >= a[t, s] - in_B(src(g))   the inter-machine premium
             sum_u mem_u a[u, s] <= cap                  memory
             L >= compute + sum_g c_g (e[g, s] + (f - 1) q[g, s])   per accelerator slot (two rows with overlap)
             L >= sum_u cpu_u p[u, s]                    per CPU slot
             (k + l) L >= total work,  L >= largest unit  simple lower bounds

    ``w[u, j]``: unit ``u`` in the ideal ``I_j``; ``a[u, s]`` / ``p[u, s]``: unit ``u`` at accelerator / CPU
    slot ``s``; ``e[g, s]``: group ``g`` crosses accelerator slot ``s``; ``q[g, s]``: the slot pays group ``g``'s
    premium, with ``in_B(u) = w[u, end] - w[u, start - 1]`` the membership of ``u`` in the slot's machine block
    (the source here and a target on another host, or a target here and the source on another host:
    exactly the evaluator's rule, since each host's nodes are its block's); ``f = inter_machine_cost``.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
        A two-level cluster of identical accelerators.
    contraction : Contraction
        ``Problem.contraction``: the units and the DAG on them.
    overlap, gpipe : bool
        The objective variants (Appendix C.1; max FW + max BW).

    Examples
    --------
    >>> from exactplace.core.contraction import contract
    >>> from exactplace.core.graph import Node
    >>> g = Graph([Node(i, 99.0, 4.0, comm=1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
    >>> c = Cluster(4, cpus=1, machines=2, inter_machine_cost=5.0)
    >>> ip = two_level_ip(g, c, contract(g))
    >>> ip.positions  # gap, machine 0, gap, machine 1, gap
    'C AA C AA C'
    """
    data = unit_data(graph, contraction.unit)
    U, k, cpus = data.units, cluster.accelerators, cluster.cpus
    is_cpu = _layout(cluster)
    P = len(is_cpu)
    acc_position, cpu_position = np.flatnonzero(~is_cpu), np.flatnonzero(is_cpu)
    m = Model("throughput, contiguous, two-level (chain of ideals, one block per machine)")

    # ---- Variables ----------------------------------------------------------------------------------------------
    w = ideal_vars(m, U, P)
    a = m.add_vars((U, k), ub=np.repeat(fits_accelerator(data, cluster.memory_cap).astype(float), k),
                   kind=Kind.IMPLIED_INTEGER, name="a: unit at accelerator slot s")
    p = m.add_vars((U, len(cpu_position)), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="p: unit at CPU slot s")
    used = m.add_vars(len(cpu_position), ub=1.0, kind=Kind.INTEGER, name="used: CPU slot s is not empty")
    e = m.add_vars((data.groups, k), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="e: group crosses accelerator slot s")
    q = m.add_vars((data.groups, k), ub=1.0, kind=Kind.IMPLIED_INTEGER,
                   name="q: accelerator slot s pays the inter-machine premium of group g")
    L = m.add_vars(2 if gpipe else 1, ub=load_cap(data, cpus=cluster.cpus > 0) * cluster.inter_machine_cost,
                   name="L: max load")

    # ---- Chain of ideals -------------------------------------------------------------------------------------------
    edges = chain_rows(m, contraction, w)
    # ---- The slot's units: a (accelerator slot) or p (CPU slot) = w[u, j] - w[u, j-1] -------------------------------
    _slot_rows(m, w, a, p, acc_position, cpu_position)
    # ---- At most l CPU slots hold units: p[u, s] <= used[s], sum_s used[s] <= l ---------------------------------
    if len(cpu_position):
        _cpu_slot_rows(m, p, used, cpus)
    # ---- Communication: e[g, s] >= |a[t, s] - a[src(g), s]|; the premium q -------------------------------------------
    communication_rows(m, data, a, e)
    _premium(m, data, cluster, w, a, q, acc_position)
    # ---- Memory and loads; objective with the simple lower bounds ---------------------------------------------------
    memory_rows(m, data, a, cluster.memory_cap, "memory per accelerator slot")
    load_rows(m, data, a, p, e, L, overlap, gpipe, "load", premium=(q, cluster.inter_machine_cost - 1.0))
    objective_and_bounds(m, data, L, k + cpus, gpipe)
    return TwoLevelIP(m, "chain", graph, cluster, data, overlap, gpipe,
                      {"w": w, "a": a, "p": p, "e": e, "q": q, "L": L, "edges": edges, "is_cpu": is_cpu},
                      positions=" ".join(x for x in ["C" * cpus, *(["A" * cluster.per_machine, "C" * cpus]
                                                                     * cluster.machines)] if x))


def _slot_rows(m: Model, w: np.ndarray, a: np.ndarray, p: np.ndarray, acc_position: np.ndarray,
               cpu_position: np.ndarray) -> None:
    """``slot[u, j] - w[u, j] + w[u, j-1] = 0``, ``slot`` the unit's ``a`` or ``p`` at position ``j``."""
    U, P = w.shape
    slot_var = np.empty((U, P), dtype=np.int64)
    slot_var[:, acc_position], slot_var[:, cpu_position] = a, p
    n = U * P
    r = np.arange(n)
    prev = np.concatenate([np.full((U, 1), -1), w[:, :-1]], axis=1).reshape(-1)
    m.add_rows("slot: a or p = w[u, j] - w[u, j-1]", n, lb=0.0, ub=0.0,
               rows=np.concatenate([r, r, r[prev >= 0]]),
               cols=np.concatenate([slot_var.reshape(-1), w.reshape(-1), prev[prev >= 0]]),
               vals=np.concatenate([np.ones(n), -np.ones(n), np.ones(int((prev >= 0).sum()))]))


def _cpu_slot_rows(m: Model, p: np.ndarray, used: np.ndarray, cpus: int) -> None:
    """``p[u, s] <= used[s]`` and ``sum_s used[s] <= l``."""
    n = p.size
    r = np.arange(n)
    m.add_rows("CPU slot used: p[u, s] <= used[s]", n, ub=0.0, rows=np.concatenate([r, r]),
               cols=np.concatenate([p.reshape(-1), np.broadcast_to(used, p.shape).reshape(-1)]),
               vals=np.concatenate([np.ones(n), -np.ones(n)]))
    m.add_rows("at most l CPU slots used", 1, ub=float(cpus), rows=np.zeros(len(used), int), cols=used, vals=1.0)


def _premium(m: Model, data: UnitData, cluster: Cluster, w: np.ndarray, a: np.ndarray, q: np.ndarray,
             acc_position: np.ndarray) -> None:
    """``q[g, s] >= a[src, s] - in_B(t)`` and ``q[g, s] >= a[t, s] - in_B(src)`` for every target ``t`` of ``g``
    and accelerator slot ``s`` of machine block ``B`` (:func:`two_level_ip`)."""
    pairs, k = len(data.pair_group), cluster.accelerators
    if not pairs or not k:
        return
    per = cluster.per_machine
    block_first = acc_position[np.arange(k) // per * per]        # (k,) the first position of each slot's block
    block_last = acc_position[np.arange(k) // per * per + per - 1]
    source = data.group_source[data.pair_group]
    for here, other, label in ((source, data.pair_target, "source here, a target on another host"),
                               (data.pair_target, source, "a target here, the source on another host")):
        # q[g, s] - a[here, s] + w[other, last] - w[other, first - 1] >= 0
        n = pairs * k
        r = np.arange(n).reshape(pairs, k)
        before = block_first - 1                                   # -1: the block starts the chain (w = 0)
        has_before = np.broadcast_to(before >= 0, (pairs, k))
        cols = [q[data.pair_group].reshape(-1), a[here].reshape(-1), w[other][:, block_last].reshape(-1),
                w[other][:, np.maximum(before, 0)][has_before]]
        m.add_rows(f"inter-machine premium: {label}", n, lb=0.0,
                   rows=np.concatenate([r.reshape(-1), r.reshape(-1), r.reshape(-1), r[has_before]]),
                   cols=np.concatenate(cols),
                   vals=np.concatenate([np.ones(n), -np.ones(n), np.ones(n), -np.ones(int(has_before.sum()))]))

