"""The max-load (throughput) IPs; here the contiguous one (``Space.CHAIN``): a chain of ideals over units.

Both IPs minimize the time per sample ``L`` (``LF + LB`` with ``gpipe``), paper Fig. 6 linearized
as in Lemma 4.1. :func:`contiguous_ip` places the Appendix B contraction's units (the DP's) along
a chain of ideals, exactly the DP's search space; the non-contiguous IP
(:func:`~.noncontiguous.noncontiguous_ip`), the built IP (:class:`~.decoding.ThroughputIP`) and the
unit data (:func:`~.units.unit_data`) are importable from here too. Two-level clusters take
:mod:`.two_level`, built from :func:`ideal_vars` and :func:`chain_rows`.

>>> from exactplace import read_workload, workload_path
>>> from exactplace.core.contraction import contract
>>> w = read_workload(workload_path("layer_bert24_inference"))
>>> ip = contiguous_ip(w.graph, w.cluster, contract(w.graph, w.cluster.memory_cap))
>>> ip.model.num_vars > 0, ip.space
(True, 'chain')
"""

from __future__ import annotations

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.constraints import DeviceRules
from exactplace.core.contraction import Contraction
from exactplace.core.graph import Graph

from .decoding import ThroughputIP
from .model import Kind, Model
from .noncontiguous import noncontiguous_ip
from .units import (
    UnitData,
    communication_rows,
    fits_accelerator,
    load_cap,
    load_rows,
    memory_rows,
    objective_and_bounds,
    stage_rows,
    typed_accelerators,
    unit_data,
)

__all__ = ["ThroughputIP", "UnitData", "chain_rows", "contiguous_ip", "fits_accelerator", "ideal_vars",
           "noncontiguous_ip", "unit_data"]


def contiguous_ip(graph: Graph, cluster: Cluster, contraction: Contraction, *, overlap: bool = False,
                  gpipe: bool = False, replication: bool = False, rules: DeviceRules | None = None) -> ThroughputIP:
    """The chain-of-ideals max-load IP over units ``u`` and positions ``j = 0..P-1`` (``P = k + l`` devices)::

        min  L                                          (LF + LB with gpipe: one load row per part)
        s.t. w[u, j-1] <= w[u, j]                       chain: I_{j-1} ⊆ I_j; w[u, P-1] = 1
             w[v, j] <= w[u, j]                         ideal: down-closed along every unit edge u -> v
             a[u, j] + p[u, j] = w[u, j] - w[u, j-1]    the position's units (Lemma 4.1: no big-M)
             a[u, j] <= 1 - c[j],  p[u, j] <= c[j],  sum_j c[j] = l
             e[g, j] >= |a[t, j] - a[src(g), j]|        each target t of communication group g
             sum_u mem_u a[u, j] <= cap                 memory
             L >= sum_u acc_u a[u, j] + sum_g cost_g e[g, j]   (two rows with overlap),  L >= sum_u cpu_u p[u, j]
             P L >= sum_u min work_u,  L >= max_u min work_u   simple lower bounds

    ``w[u, j] = 1`` puts unit ``u`` in the ideal ``I_j``; the device at position ``j`` gets ``I_j \\ I_{j-1}``
    and binary ``c[j]`` says it is a CPU core, so accelerators and CPUs interleave freely. Unlike Fig. 6's
    per-device contiguity variables ``z``, the chain also orders the devices (no two feed each other in a
    cycle, the referee's ``order`` check) and fixes the order of identical accelerators by the data flow,
    which removes most of Fig. 6's ``k!`` symmetry.

    Typed clusters (accelerators of differing memory or speed, grouped by ``Cluster.accelerator_types``):
    binary ``h[j, t]`` makes position ``j`` an accelerator of type ``t`` (``sum_t h[j, t] + c[j] = 1``, exactly
    ``count[t]`` positions of type ``t``) and ``a[t, u, j] <= h[j, t]`` replaces ``a <= 1 - c``: the position's
    compute is divided by its type's speed and its memory row has its type's cap.

    Replication (homogeneous, neither variant; Appendix C.2): binary ``rho[j, r]`` gives accelerator
    position ``j`` its ``r = 0..k`` replicas (:func:`_replica_rows`).

    Device rules (a user's pins to one device, forbidden devices, ``max_stages``; ``rules``): the types
    are split where the rules tell accelerators apart, so each type's accelerators are interchangeable
    under them, and ``a[t, u, j] = 0`` where a node of ``u`` may not use type ``t``, ``p[u, j] = 0``
    where it may not use a CPU core (rules that tell CPU cores apart are not held here). ``max_stages``:
    binary ``z[j] >= a[., u, j]`` and ``sum_j z[j] <= max_stages``.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    contraction : Contraction
        ``Problem.contraction``: the units and the DAG on them.
    overlap, gpipe : bool
        The objective variants (Appendix C.1; max FW + max BW).
    replication : bool
        Replicated accelerator positions; homogeneous clusters, neither variant.
    rules : DeviceRules, optional
        The device rules above; none with replication.
    """
    data = unit_data(graph, contraction.unit)
    U, k, cpus = data.units, cluster.accelerators, cluster.cpus
    P = k + cpus
    typed = typed_accelerators(cluster, rules)
    if replication and (typed is not None or overlap or gpipe or rules is not None):
        raise ValueError("contiguous_ip: replication takes a homogeneous cluster, no device rules and neither "
                         "overlap nor gpipe")
    if rules is not None and rules.tells_cpus_apart(k):
        raise ValueError("contiguous_ip: device rules that tell CPU cores apart are not held by the chain IP")
    allowed = None if rules is None or rules.allowed is None else rules.unit_allowed(contraction.unit, U)
    m = Model("throughput, contiguous (chain of ideals)")

    # ---- Variables ----------------------------------------------------------------------------------------------
    w = ideal_vars(m, U, P)
    c = m.add_vars(P, lb=1.0 if k == 0 else 0.0, ub=0.0 if cpus == 0 else 1.0, kind=Kind.INTEGER,
                   name="c: position j is a CPU core")
    if typed is None:
        fits = fits_accelerator(data, cluster.memory_cap)
        if allowed is not None and k:
            fits = fits & allowed[:, 0]
        a = m.add_vars((U, P), ub=np.repeat(fits.astype(float), P),
                       kind=Kind.IMPLIED_INTEGER, name="a: unit at accelerator position j")
    else:  # a[t, u, j]: unit u at position j, an accelerator of type t
        devices, limit, speed = typed
        fits = np.stack([fits_accelerator(data, cap) for cap in limit])  # (T, U)
        if allowed is not None:
            fits = fits & allowed[:, [int(group[0]) for group in devices]].T
        a = m.add_vars((len(devices), U, P), ub=np.repeat(fits.astype(float), P), kind=Kind.IMPLIED_INTEGER,
                       name="a: unit at accelerator position j of type t")
    on_cores = np.ones(U) if allowed is None or not cpus else allowed[:, k].astype(float)
    p = m.add_vars((U, P), ub=np.repeat(on_cores, P) if cpus else 0.0, kind=Kind.IMPLIED_INTEGER,
                   name="p: unit at CPU position j")
    e = m.add_vars((data.groups, P), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="e: group crosses position j")
    L = m.add_vars(2 if gpipe else 1, ub=load_cap(data, 1.0 if typed is None else float(speed.min()), cpus > 0),
                   name="L: max load")
    if typed is not None:
        h = m.add_vars((P, len(devices)), ub=1.0, kind=Kind.INTEGER, name="h: position j is an accelerator of type t")
    if replication:
        rho, b, f = _replica_vars(m, data, k, P)
    on_cpu = p if cpus else p[:, :0]  # no CPU core, no CPU load rows

    # ---- Chain of ideals: w[u, j-1] <= w[u, j]; w[v, j] <= w[u, j] for every unit edge u -> v -----------------
    edges = chain_rows(m, contraction, w)
    # ---- The position's units (Lemma 4.1): a + p = w[u, j] - w[u, j-1] --------------------------------------------
    _position_rows(m, w, a, p)
    # ---- Device of each position: a <= 1 - c (typed: a[t] <= h[t], one type or a CPU, count[t] of type t) -------
    if typed is None:
        _accelerator_rows(m, a, c)
    else:
        _typed_rows(m, a, c, h, [float(len(d)) for d in devices])
    # ---- CPU positions: p <= c, sum_j c[j] = l ---------------------------------------------------------------------
    _cpu_rows(m, p, c, cpus)
    # ---- Communication (Lemma 4.1): e[g, j] >= |a[t, j] - a[src(g), j]| -------------------------------------------
    communication_rows(m, data, a, e)
    # ---- Memory: sum_u mem_u a[u, j] <= cap (of the position's type) -----------------------------------------------
    if typed is None:
        memory_rows(m, data, a, cluster.memory_cap, "memory per accelerator position")
    else:
        for t, cap in enumerate(limit):
            memory_rows(m, data, a[t], cap, f"memory per accelerator position of type {t}")
    # ---- Loads: L >= compute (/ speed) + communication, L >= CPU time ----------------------------------------------
    sync = np.bincount(contraction.unit, weights=graph.sync, minlength=U) if replication else None
    if replication:
        _replica_rows(m, data, sync, k, a, on_cpu, c, e, L, rho, b, f)
    else:
        load_rows(m, data, a, on_cpu, e, L, overlap, gpipe, "load",
                  speed=None if typed is None else speed[:, None, None])
    # ---- Device rules: at most max_stages accelerator positions in use --------------------------------------------
    if rules is not None and rules.max_stages is not None:
        stage_rows(m, a, rules.max_stages)
    # ---- Objective: min L, with the simple lower bounds (no "largest unit" with replication) -------------------
    objective_and_bounds(m, data, L, P, gpipe, fastest=1.0 if typed is None else float(speed.max()),
                         largest=not replication)

    index = {"w": w, "c": c, "a": a, "p": p, "e": e, "L": L, "edges": edges}
    if replication:
        index["rho"] = rho
    if typed is not None:
        index["h"] = h
    return ThroughputIP(m, "chain", graph, cluster, data, overlap, gpipe, index, rules=rules)


# -- the chain of ideals (shared with the two-level IP) ------------------------------------------------------------
def ideal_vars(m: Model, units: int, positions: int) -> np.ndarray:
    """Binary ``w[u, j]``: unit ``u`` in the ideal ``I_j`` (``j < positions``; the last ideal holds every unit)."""
    return m.add_vars((units, positions), lb=np.where(np.arange(positions) == positions - 1, 1.0, 0.0)[None, :]
                      .repeat(units, 0), ub=1.0, kind=Kind.INTEGER, name="w: unit in ideal I_j")


def chain_rows(m: Model, contraction: Contraction, w: np.ndarray) -> np.ndarray:
    """Chain ``w[u, j-1] <= w[u, j]`` (``I_{j-1} ⊆ I_j``) and ideals ``w[v, j] <= w[u, j]`` for every unit edge
    ``u -> v`` (down-closed); returns the unit edges ``(E, 2)``."""
    U, P = w.shape
    edges = np.stack([contraction.src, contraction.dst], axis=1) if len(contraction.src) else np.zeros((0, 2), int)
    if P > 1:
        n = U * (P - 1)
        r = np.arange(n)
        m.add_rows("chain: w[u, j-1] <= w[u, j]", n, ub=0.0, rows=np.concatenate([r, r]),
                   cols=np.concatenate([w[:, :-1].reshape(-1), w[:, 1:].reshape(-1)]),
                   vals=np.concatenate([np.ones(n), -np.ones(n)]))
    if len(edges):
        n = len(edges) * P
        r = np.arange(n)
        m.add_rows("ideal: w[v, j] <= w[u, j] for u -> v", n, ub=0.0, rows=np.concatenate([r, r]),
                   cols=np.concatenate([w[edges[:, 1]].reshape(-1), w[edges[:, 0]].reshape(-1)]),
                   vals=np.concatenate([np.ones(n), -np.ones(n)]))
    return edges


# -- the positions' rows ---------------------------------------------------------------------------------------------
def _position_rows(m: Model, w: np.ndarray, a: np.ndarray, p: np.ndarray) -> None:
    """``a[u, j] + p[u, j] - w[u, j] + w[u, j-1] = 0`` (typed: ``a[u, j]`` is the sum of ``a[t, u, j]`` over types)."""
    U, P = w.shape
    n = U * P
    T = 1 if a.ndim == 2 else a.shape[0]
    r = np.arange(n)
    prev = np.concatenate([np.full((U, 1), -1), w[:, :-1]], axis=1).reshape(-1)
    cols = np.concatenate([a.reshape(-1), p.reshape(-1), w.reshape(-1), prev[prev >= 0]])
    rows = np.concatenate([np.tile(r, T), r, r, r[prev >= 0]])
    vals = np.concatenate([np.ones(T * n), np.ones(n), -np.ones(n), np.ones(int((prev >= 0).sum()))])
    m.add_rows("device: a + p = w[u, j] - w[u, j-1]", n, lb=0.0, ub=0.0, rows=rows, cols=cols, vals=vals)


def _accelerator_rows(m: Model, a: np.ndarray, c: np.ndarray) -> None:
    """``a[u, j] + c[j] <= 1``: an accelerator's units only at a position that is not a CPU core."""
    U, P = a.shape
    n = U * P
    r = np.arange(n)
    m.add_rows("type: a[u, j] <= 1 - c[j]", n, ub=1.0, rows=np.concatenate([r, r]),
               cols=np.concatenate([a.reshape(-1), np.broadcast_to(c[None, :], (U, P)).reshape(-1)]),
               vals=np.ones(2 * n))


def _typed_rows(m: Model, a: np.ndarray, c: np.ndarray, h: np.ndarray, count: list[float]) -> None:
    """``a[t, u, j] <= h[j, t]``, ``sum_t h[j, t] + c[j] = 1``, ``sum_j h[j, t] = count[t]``.

    Positions of one type stay interchangeable only up to the chain order, as in the homogeneous IP;
    positions of different types are told apart.
    """
    T, U, P = a.shape
    rt = np.arange(T * U * P)
    ht = np.broadcast_to(h.T[:, None, :], (T, U, P)).reshape(-1)
    m.add_rows("type: a[t, u, j] <= h[j, t]", T * U * P, ub=0.0, rows=np.concatenate([rt, rt]),
               cols=np.concatenate([a.reshape(-1), ht]), vals=np.concatenate([np.ones(T * U * P), -np.ones(T * U * P)]))
    m.add_rows("position: sum_t h[j, t] + c[j] = 1", P, lb=1.0, ub=1.0,
               rows=np.concatenate([np.repeat(np.arange(P), T), np.arange(P)]),
               cols=np.concatenate([h.reshape(-1), c]), vals=1.0)
    m.add_rows("type t on count[t] positions", T, lb=count, ub=count, rows=np.repeat(np.arange(T), P),
               cols=h.T.reshape(-1), vals=1.0)


def _cpu_rows(m: Model, p: np.ndarray, c: np.ndarray, cpus: int) -> None:
    """``p[u, j] <= c[j]`` (a CPU core's units only at a CPU position) and ``sum_j c[j] = l``."""
    U, P = p.shape
    n = U * P
    r = np.arange(n)
    m.add_rows("type: p[u, j] <= c[j]", n, ub=0.0, rows=np.concatenate([r, r]),
               cols=np.concatenate([p.reshape(-1), np.broadcast_to(c[None, :], (U, P)).reshape(-1)]),
               vals=np.concatenate([np.ones(n), -np.ones(n)]))
    m.add_rows("exactly l CPU positions", 1, lb=float(cpus), ub=float(cpus), rows=np.zeros(P, int), cols=c, vals=1.0)


# -- replication (paper Appendix C.2) ----------------------------------------------------------------------------------
def _replica_vars(m: Model, data: UnitData, k: int, P: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``rho[j, r]`` (position ``j`` on ``r = 0..k`` replicas), and the products ``b[u, j, r] = a[u, j] rho[j, r]``,
    ``f[g, j, r] = e[g, j] rho[j, r]`` for ``r >= 1``."""
    rho = m.add_vars((P, k + 1), ub=1.0, kind=Kind.INTEGER, name="rho: accelerator position j on r replicas")
    b = m.add_vars((data.units, P, k), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="b: unit at position j on r replicas")
    f = m.add_vars((data.groups, P, k), ub=1.0, kind=Kind.IMPLIED_INTEGER,
                   name="f: group crosses position j on r replicas")
    return rho, b, f


def _replica_rows(m: Model, data: UnitData, sync: np.ndarray, k: int, a: np.ndarray, p: np.ndarray, c: np.ndarray,
                  e: np.ndarray, L: np.ndarray, rho: np.ndarray, b: np.ndarray, f: np.ndarray) -> None:
    """The replicated positions' rows, then the CPU load rows as usual::

        sum_r rho[j, r] + c[j] = 1,   sum_j sum_r r rho[j, r] <= k,   a[u, j] <= 1 - rho[j, 0]
        sum_r b[u, j, r] = a[u, j],   b[u, j, r] <= rho[j, r],   f[g, j, r] >= e[g, j] + rho[j, r] - 1
        L >= sum_r (sum_u (acc_u + sync_u (r-1)/r) / r b[u, j, r] + sum_g cost_g / r f[g, j, r])

    The load of position ``j`` on ``r`` replicas, ``(X_j + sync_j (r-1)/r) / r`` (``X_j`` its compute plus
    communication, ``sync_j`` its units' ``Node.sync``), is linear in the disaggregated copies ``b`` and
    ``f``: one row per position and no big-M beyond 1, which keeps the LP tight and its solutions accurate.
    """
    U, P = a.shape
    R = k + 1
    m.add_rows("replicas: sum_r rho[j, r] + c[j] = 1", P, lb=1.0, ub=1.0,
               rows=np.concatenate([np.repeat(np.arange(P), R), np.arange(P)]),
               cols=np.concatenate([rho.reshape(-1), c]), vals=1.0)
    m.add_rows("replicas: sum_j sum_r r rho[j, r] <= k", 1, ub=float(k), rows=np.zeros(P * R, int),
               cols=rho.reshape(-1), vals=np.tile(np.arange(R, dtype=float), P))
    n = U * P
    r_ = np.arange(n)
    m.add_rows("replicas: a[u, j] <= 1 - rho[j, 0]", n, ub=1.0, rows=np.concatenate([r_, r_]),
               cols=np.concatenate([a.reshape(-1), np.broadcast_to(rho[:, 0][None, :], (U, P)).reshape(-1)]),
               vals=1.0)
    acc = data.acc.sum(axis=1)
    G, K = data.groups, R - 1
    if K:
        rows = np.arange(n)
        m.add_rows("replicas: sum_r b[u, j, r] = a[u, j]", n, lb=0.0, ub=0.0,
                   rows=np.concatenate([np.repeat(rows, K), rows]), cols=np.concatenate([b.reshape(-1), a.reshape(-1)]),
                   vals=np.concatenate([np.ones(n * K), -np.ones(n)]))
        nb = U * P * K
        rb = np.arange(nb)
        m.add_rows("replicas: b[u, j, r] <= rho[j, r]", nb, ub=0.0, rows=np.concatenate([rb, rb]),
                   cols=np.concatenate([b.reshape(-1), np.broadcast_to(rho[None, :, 1:], (U, P, K)).reshape(-1)]),
                   vals=np.concatenate([np.ones(nb), -np.ones(nb)]))
        if G:
            nf = G * P * K
            rf = np.arange(nf)
            m.add_rows("replicas: f[g, j, r] >= e[g, j] + rho[j, r] - 1", nf, lb=-1.0,
                       rows=np.concatenate([rf, rf, rf]),
                       cols=np.concatenate([f.reshape(-1), np.broadcast_to(e[:, :, None], (G, P, K)).reshape(-1),
                                            np.broadcast_to(rho[None, :, 1:], (G, P, K)).reshape(-1)]),
                       vals=np.concatenate([np.ones(nf), -np.ones(nf), -np.ones(nf)]))
        r = np.arange(1, R, dtype=float)
        ub_ = ((acc[:, None] + sync[:, None] * (r - 1) / r) / r)  # (U, K)
        fb = data.group_cost[:, None] / r  # (G, K)
        m.add_rows("load of a replicated accelerator position", P, ub=0.0,
                   rows=np.concatenate([np.broadcast_to(np.arange(P)[None, :, None], (U, P, K)).reshape(-1),
                                        np.broadcast_to(np.arange(P)[None, :, None], (G, P, K)).reshape(-1),
                                        np.arange(P)]),
                   cols=np.concatenate([b.reshape(-1), f.reshape(-1), np.full(P, L[0])]),
                   vals=np.concatenate([np.broadcast_to(ub_[:, None, :], (U, P, K)).reshape(-1),
                                        np.broadcast_to(fb[:, None, :], (G, P, K)).reshape(-1), -np.ones(P)]))
    load_rows(m, data, a[:, :0], p, e[:, :0], L, False, False, "load")  # CPU positions: the plain rows
