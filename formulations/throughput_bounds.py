"""Lower bounds on the max load of any split: the *packing relaxation* of the non-contiguous IP.

The LP relaxation of :func:`~.noncontiguous.noncontiguous_ip` spreads every colour class evenly
over the devices, so its bound is the fractional "total work / devices" bound, and what it misses
where communication is small is *integrality*: whole classes do not fill the devices evenly (a
bin-packing argument). That part is proved far faster on the much smaller program here,
:func:`packing_model`; the bound itself (the relaxation solved, then a bisection of decision
probes) is computed by :func:`exactplace.bounds.packing.packing_bound`.
"""

from __future__ import annotations

import itertools

import numpy as np

from exactplace.core.cluster import Cluster

from .model import Kind, Model
from .units import UnitData

__all__ = ["packing_model"]


def packing_model(data: UnitData, cluster: Cluster, *, gpipe: bool = False,
                  at_most: float | None = None, symmetry: str = "first") -> tuple[Model, np.ndarray, np.ndarray]:
    """The packing relaxation of the non-contiguous IP over ``data``'s classes ``c`` and devices ``d``::

        min  L                                   (LF + LB with gpipe: one load row per part)
        s.t. sum_d y[c, d] = 1                   each class on one device
             L >= sum_c work_cd y[c, d]          per device: acc_c / speed_d, or cpu_c on a CPU core
             D L >= sum_c min work_c,  L >= max_c min work_c
             y binary; y[c, d] = 0 where c is unsupported or alone over d's memory

    It drops every communication term, every memory row and the classes' data flow, and keeps each
    class whole, its support, its "fits alone" per accelerator, the speeds and the CPU cores. Every
    placement of the full problem is one of the relaxation with a load per device no larger
    (communication >= 0; with ``overlap`` a load is ``max(compute, comm) >= compute``), so
    ``OPT(packing relaxation) <= OPT(non-contiguous IP)`` and any proven lower bound of the relaxation
    (its solver's dual bound, lowered by the solver's own rounding correction) is a valid row
    ``L >= bound`` of the full IP (``LF + LB >= bound`` with ``gpipe``). Classes with no work anywhere
    (accelerator and CPU time 0, or accelerator time 0 where supported) cost nothing wherever they go:
    they are left out.

    Symmetry: the devices are interchangeable within a type and among the CPU cores.
    ``symmetry="first"`` fixes the ``i``-th heaviest class off all but the first ``i + 1`` devices of each
    such set, as the full IP does (valid: rename each set's devices by their heaviest class); ``"load"``
    adds rows sorting each set by compute load instead.

    Returns (model, ``y`` (kept classes x devices), ``L``). ``at_most``: the decision version,
    objective at most that (infeasible: every split's max load exceeds it).

    >>> from exactplace import read_workload, workload_path
    >>> from exactplace.formulations.units import unit_data
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> m, y, L = packing_model(unit_data(w.graph, w.graph.color), w.cluster)
    >>> y.shape, L.shape  # 5 of the 32 classes take no time anywhere: left out
    ((27, 7), (1,))
    """
    acc, cpu = data.acc, data.cpu
    k, cpus = cluster.accelerators, cluster.cpus
    D = k + cpus
    speed = np.ones(k) if cluster.is_homogeneous else np.asarray(cluster.speed, dtype=np.float64)
    # A class may go on an accelerator when supported and not alone over its memory (as in the IP).
    fits = data.supported[:, None] & (data.memory[:, None] <= np.asarray(cluster.memory_limit)[None, :])
    free_on_acc = fits.any(axis=1) & (acc.sum(axis=1) == 0)
    keep = np.flatnonzero(~free_on_acc & ((acc.sum(axis=1) > 0) | (cpu.sum(axis=1) > 0)))
    U = len(keep)
    parts = (0, 1) if gpipe else (None,)
    a_work = [acc[keep, p] if p is not None else acc[keep].sum(axis=1) for p in parts]
    c_work = [cpu[keep, p] if p is not None else cpu[keep].sum(axis=1) for p in parts]
    groups = [np.arange(k)] if cluster.is_homogeneous else [np.asarray(g) for g in cluster.accelerator_types()]
    groups.append(np.arange(k, D))
    m = Model("packing relaxation of the non-contiguous max-load IP")

    # ---- Variables ----------------------------------------------------------------------------------------------
    ub = np.ones((U, D))
    ub[:, :k] = fits[keep]
    if symmetry == "first" and U:
        # The i-th heaviest class goes on one of the first i+1 devices of each interchangeable set.
        order = np.argsort(-(sum(a_work) + sum(c_work)), kind="stable")
        for g in groups:
            for rank, u in enumerate(order.tolist()):
                for d in g[rank + 1:].tolist():
                    ub[u, d] = 0.0
    y = m.add_vars((U, D), ub=ub.reshape(-1), kind=Kind.INTEGER, name="y: class on device")
    cap = sum(float(np.maximum(a / speed.min(initial=1.0), c).sum()) for a, c in zip(a_work, c_work)) + 1.0
    L = m.add_vars(len(parts), ub=cap, name="L: max compute load")

    # ---- Assignment: sum_d y[c, d] = 1 --------------------------------------------------------------------------
    if U:
        m.add_rows("assignment", U, lb=1.0, ub=1.0, rows=np.repeat(np.arange(U), D), cols=y.reshape(-1), vals=1.0)
    # ---- Loads per part: L >= sum_c work_cd y[c, d]; total work and largest class -----------------------------
    for i, (a, c) in enumerate(zip(a_work, c_work)):
        coef = np.concatenate([a[:, None] / speed[None, :], np.broadcast_to(c[:, None], (U, cpus))], axis=1)
        m.add_rows(f"load{i}", D, ub=0.0, rows=np.concatenate([np.tile(np.arange(D), U), np.arange(D)]),
                   cols=np.concatenate([y.reshape(-1), np.full(D, L[i])]),
                   vals=np.concatenate([coef.reshape(-1), -np.ones(D)]))
        cheapest = np.where(fits[keep].any(axis=1), np.minimum(a / speed.max(initial=1.0), c), c)
        m.add_rows("total work", 1, lb=float(cheapest.sum()), rows=[0], cols=[L[i]], vals=[float(D)])
        m.add_rows("largest class", 1, lb=float(cheapest.max(initial=0.0)), rows=[0], cols=[L[i]], vals=[1.0])
    # ---- Symmetry ("load"): each set of identical devices sorted by compute load, non-increasing --------------
    if symmetry == "load" and U:
        _load_order_rows(m, y, sum(a_work), sum(c_work), speed, k, groups)
    # ---- Decision version: objective at most at_most ------------------------------------------------------------
    if at_most is not None:
        m.add_rows("decision: objective at most", 1, ub=float(at_most), rows=np.zeros(len(parts), int), cols=L,
                   vals=1.0)
    # ---- Objective ------------------------------------------------------------------------------------------------
    m.minimize(L, np.ones(len(parts)))
    return m, y, L


def _load_order_rows(m: Model, y: np.ndarray, work: np.ndarray, cwork: np.ndarray, speed: np.ndarray, k: int,
                     groups: list[np.ndarray]) -> None:
    """``load(d) >= load(d')`` for consecutive devices of each set (accelerators: ``work / speed``; CPU cores:
    ``cwork``)."""
    pairs = [(int(d), int(e)) for g in groups for d, e in itertools.pairwise(g.tolist())]
    if not pairs:
        return
    U = y.shape[0]
    rows, cols, vals = [], [], []
    for r, (d, e) in enumerate(pairs):
        w = cwork if d >= k else work / speed[d]
        rows += [np.full(2 * U, r)]
        cols += [np.concatenate([y[:, d], y[:, e]])]
        vals += [np.concatenate([w, -w])]
    m.add_rows("symmetry: identical devices sorted by load", len(pairs), lb=0.0, rows=np.concatenate(rows),
               cols=np.concatenate(cols), vals=np.concatenate(vals))
