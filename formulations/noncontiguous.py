"""The non-contiguous max-load IP (``Space.ANY``): colour classes assigned to devices (paper Fig. 6, Lemma 4.1).

Each colour class (the forward and backward nodes of a colour share a device) goes on one
device, each accelerator with its own memory cap and speed; the objective is the max load
``L`` (``LF + LB`` with ``gpipe``). Rank fixings remove the symmetry of interchangeable devices.
:func:`noncontiguous_ip` states the program; decoding and warm starts: :class:`~.decoding.ThroughputIP`.

>>> from exactplace import read_workload, workload_path
>>> w = read_workload(workload_path("layer_bert24_inference"))
>>> noncontiguous_ip(w.graph, w.cluster).space
'any'
"""

from __future__ import annotations

import itertools

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.constraints import DeviceRules
from exactplace.core.graph import Graph

from .decoding import ThroughputIP
from .model import Kind, Model
from .units import (
    UnitData,
    communication_rows,
    fits_accelerator,
    interchangeable_sets,
    load_cap,
    load_rows,
    memory_rows,
    objective_and_bounds,
    stage_rows,
    typed_accelerators,
    unit_data,
)

__all__ = ["noncontiguous_ip"]


def noncontiguous_ip(graph: Graph, cluster: Cluster, *, overlap: bool = False, gpipe: bool = False,
                     symmetry: bool | str = "first", lower_bound: float | None = None,
                     at_most: float | None = None, rules: DeviceRules | None = None) -> ThroughputIP:
    """The assignment max-load IP over colour classes ``c`` and devices ``d`` (``k`` accelerators, then the CPUs)::

        min  L                                      (LF + LB with gpipe: one load row per part)
        s.t. sum_d y[c, d] = 1                      each class on one device
             e[g, d] >= |y[t, d] - y[src(g), d]|    each target t of group g, accelerator d (Lemma 4.1)
             sum_c mem_c y[c, d] <= cap_d           memory of accelerator d
             L >= sum_c acc_c / speed_d y[c, d] + sum_g cost_g e[g, d]   accelerator d (two rows with overlap)
             L >= sum_c cpu_c y[c, d]               CPU core d
             D L >= sum_c min work_c,  L >= max_c min work_c             simple lower bounds
             y binary; y[c, d] = 0 where c is unsupported or alone over d's memory

    Symmetry (``symmetry="first"``, the default, or ``True``): the interchangeable sets are the
    accelerators of one type (all of them when homogeneous) and the CPU cores. Rank the classes by
    total time (accelerator + CPU, heaviest first, ties by index); the class of rank ``i`` is fixed
    off every device at position ``> i`` of each set (``y = 0`` by variable bound). Valid: rename the
    devices of each set in the order of the lowest rank they hold (empty devices last); identical
    devices keep every load, and the device at position ``p`` then holds no class of rank ``< p``.
    Sets of different types are renamed separately (rows across types would cut off optima).
    ``"load"`` instead adds rows sorting each type's accelerators by load (non-increasing);
    ``False`` adds neither. :meth:`~.decoding.ThroughputIP.encode` renames a warm start the same way.

    Device rules (``rules``: a user's pins to one device, forbidden devices, ``max_stages``):
    ``y[c, d] = 0`` where a node of ``c`` may not use ``d``; the interchangeable sets are split where the
    rules tell devices apart (the renaming above stays within devices the rules treat alike);
    ``max_stages``: binary ``z[d] >= y[c, d]`` per accelerator and ``sum_d z[d] <= max_stages``.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    overlap, gpipe : bool
        The objective variants (Appendix C.1; max FW + max BW).
    symmetry : bool or str
        ``"first"`` (``True``), ``"load"`` or ``False`` (above).
    lower_bound : float, optional
        A proven lower bound on the objective (e.g. the packing relaxation's,
        :mod:`exactplace.bounds.packing`): ``L``'s variable lower bound (a row on ``LF + LB`` with ``gpipe``).
        A bound rather than a row ``L >= b``: HiGHS's postsolve can fail on that row.
    at_most : float, optional
        The decision version (:mod:`exactplace.bounds.gap_probe`): objective at most that (``L``'s upper
        bound; a row on ``LF + LB`` with ``gpipe``). Not below ``lower_bound``.
    rules : DeviceRules, optional
        The device rules above.
    """
    data = unit_data(graph, graph.color)
    U, k, cpus = data.units, cluster.accelerators, cluster.cpus
    D = k + cpus
    typed = typed_accelerators(cluster, rules)
    mode = "first" if symmetry is True else symmetry
    rank = _heaviest_first(data)
    m = Model("throughput, non-contiguous (assignment)")

    # ---- Variables ----------------------------------------------------------------------------------------------
    ub = _assignment_bounds(data, cluster, typed is None, rank if mode == "first" else None, rules)
    y = m.add_vars((U, D), ub=ub.reshape(-1), kind=Kind.INTEGER, name="y: class on device")
    e = m.add_vars((data.groups, k), ub=1.0, kind=Kind.IMPLIED_INTEGER, name="e: group crosses accelerator")
    cap = load_cap(data, 1.0 if typed is None else float(cluster.speed.min()), cluster.cpus > 0)
    floor = float(lower_bound) if lower_bound is not None and lower_bound > 0 and not gpipe else 0.0
    if at_most is not None and not gpipe:
        cap = min(cap, float(at_most))
    L = m.add_vars(2 if gpipe else 1, lb=min(floor, cap), ub=cap, name="L: max load")

    # ---- Assignment: sum_d y[c, d] = 1 --------------------------------------------------------------------------
    m.add_rows("assignment: each class on one device", U, lb=1.0, ub=1.0,
               rows=np.repeat(np.arange(U), D), cols=y.reshape(-1), vals=1.0)
    # ---- Communication (Lemma 4.1): e[g, d] >= |y[t, d] - y[src(g), d]| -------------------------------------------
    communication_rows(m, data, y[:, :k], e)
    # ---- Memory: sum_c mem_c y[c, d] <= cap_d ---------------------------------------------------------------------
    memory_rows(m, data, y[:, :k], cluster.memory_cap if typed is None else cluster.memory_limit,
                "memory per accelerator")
    # ---- Loads: L >= compute / speed + communication (accelerators), L >= CPU time (CPU cores) -----------------
    load_rows(m, data, y[:, :k], y[:, k:], e, L, overlap, gpipe, "load", speed=None if typed is None else cluster.speed)
    # ---- Symmetry ("load"): each type's accelerators sorted by load, non-increasing ----------------------------
    if mode == "load":
        _load_order_rows(m, data, cluster, y, e, rules)
    # ---- Device rules: at most max_stages accelerators in use -------------------------------------------------
    if rules is not None and rules.max_stages is not None:
        stage_rows(m, y[:, :k], rules.max_stages)
    # ---- Objective: min L, with the simple lower bounds ---------------------------------------------------------
    if typed is None:
        objective_and_bounds(m, data, L, D, gpipe)
    else:
        objective_and_bounds(m, data, L, D, gpipe, fastest=float(cluster.speed.max()))
    # ---- With gpipe, the given bounds on the objective are rows on LF + LB ----------------------------------
    if lower_bound is not None and lower_bound > 0 and gpipe:
        m.add_rows("lower bound: packing relaxation", 1, lb=float(lower_bound), rows=np.zeros(len(L), int), cols=L,
                   vals=1.0)
    if at_most is not None and gpipe:
        m.add_rows("decision: objective at most", 1, ub=float(at_most), rows=np.zeros(len(L), int), cols=L, vals=1.0)
    return ThroughputIP(m, "any", graph, cluster, data, overlap, gpipe,
                        {"y": y, "e": e, "L": L, "rank": rank if mode == "first" else np.zeros(0, np.int64)},
                        rules=rules)


def _heaviest_first(data: UnitData) -> np.ndarray:
    """Each unit's rank by total time (accelerator + CPU), heaviest first (rank 0), ties by index."""
    rank = np.empty(data.units, dtype=np.int64)
    rank[np.argsort(-(data.acc.sum(axis=1) + data.cpu.sum(axis=1)), kind="stable")] = np.arange(data.units)
    return rank


def _assignment_bounds(data: UnitData, cluster: Cluster, homogeneous: bool, rank: np.ndarray | None,
                       rules: DeviceRules | None) -> np.ndarray:
    """``y``'s upper bounds (U, D): 0 on an accelerator the class cannot go on (unsupported, or alone over its
    memory) and on a device the rules forbid it, and, with ``rank``, 0 on each interchangeable set's devices at
    positions past the class's rank."""
    k = cluster.accelerators
    ub = np.ones((data.units, k + cluster.cpus))
    if homogeneous:
        ub[~fits_accelerator(data, cluster.memory_cap), :k] = 0.0  # unsupported or too big: only on CPU cores
    else:  # per accelerator: its own memory
        ub[:, :k] = fits_accelerator(data, cluster.memory_limit)
    if rules is not None and rules.allowed is not None:
        ub[~rules.unit_allowed(data.unit, data.units)] = 0.0
    if rank is not None:
        for group in interchangeable_sets(cluster, rules):
            for position, d in enumerate(group.tolist()):
                ub[rank < position, d] = 0.0
    return ub


def _load_order_rows(m: Model, data: UnitData, cluster: Cluster, y: np.ndarray, e: np.ndarray,
                     rules: DeviceRules | None) -> None:
    """``load(d) >= load(d')`` for consecutive accelerators ``d, d'`` of one type, load = compute / speed +
    communication."""
    k = cluster.accelerators
    typed = typed_accelerators(cluster, rules)
    pairs = [(int(d), int(d_next)) for group in ([np.arange(k)] if typed is None else typed[0])
             for d, d_next in itertools.pairwise(group.tolist())]
    if not pairs:
        return
    total_acc = data.acc.sum(axis=1)
    rows, cols, vals = [], [], []
    for row, pair in enumerate(pairs):
        rate = 1.0 if typed is None else float(cluster.speed[pair[0]])
        for sign, dev in zip((1.0, -1.0), pair):
            rows += [np.full(data.units + data.groups, row)]
            cols += [np.concatenate([y[:, dev], e[:, dev]])]
            vals += [sign * np.concatenate([total_acc / rate if rate != 1.0 else total_acc, data.group_cost])]
    m.add_rows("symmetry: accelerator loads non-increasing", len(pairs), lb=0.0,
               rows=np.concatenate(rows), cols=np.concatenate(cols), vals=np.concatenate(vals))
