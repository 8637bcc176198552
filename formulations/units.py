"""What the max-load IPs share: per-unit data, the devices' types, and the row families on placed units.

A *unit* is a set of nodes that always shares a device (a colour class for the assignment IP, a
contraction unit for the chain IP). :func:`unit_data` sums the graph onto units; the row builders
then write, for any 0/1 placement matrix ``placed[u, s]`` (unit ``u`` on slot ``s``) and crossing
variables ``e[g, s]``, the families every max-load IP has: communication (Lemma 4.1's ``|.|``
split), memory, the load rows ``L >= load`` and the objective with its simple lower bounds.
Users: :mod:`.throughput` (contiguous), :mod:`.noncontiguous`, :mod:`.two_level`.

>>> from exactplace.core.graph import Graph, Node
>>> g = Graph([Node(0, 1, 1, comm=2), Node(1, 1, 1), Node(2, 1, None)], [(0, 1), (0, 2)])
>>> d = unit_data(g, np.array([0, 1, 1]))
>>> d.units, d.supported.tolist(), d.group_cost.tolist(), d.pair_target.tolist()
(2, [True, False], [2.0], [1])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.constraints import DeviceRules
from exactplace.core.graph import Graph

from .model import Kind, Model

__all__ = ["UnitData", "communication_rows", "fits_accelerator", "interchangeable_sets", "load_cap", "load_rows",
           "memory_rows", "objective_and_bounds", "stage_rows", "typed_accelerators", "unit_data"]


@dataclass(frozen=True)
class UnitData:
    """Per-unit times split by part (column 0 forward, 1 backward), memory, support, and groups."""

    unit: np.ndarray          # node position -> unit
    cpu: np.ndarray           # (U, 2)
    acc: np.ndarray           # (U, 2), 0 where unsupported
    memory: np.ndarray        # (U,)
    supported: np.ndarray     # (U,) bool
    group_cost: np.ndarray    # (G,)
    group_part: np.ndarray    # (G,) 0 forward, 1 backward (the part of the group's source node)
    group_source: np.ndarray  # (G,) source unit
    pair_group: np.ndarray    # (T,) group of each (group, target unit) pair
    pair_target: np.ndarray   # (T,) target unit

    @property
    def units(self) -> int:
        """Number of units."""
        return len(self.memory)

    @property
    def groups(self) -> int:
        """Number of communication groups that can cross between units."""
        return len(self.group_cost)


def unit_data(graph: Graph, unit: np.ndarray) -> UnitData:
    """Aggregate ``graph`` onto ``unit`` (node position -> unit number 0..U-1).

    Communication groups are the graph's (one per source node and distinct outgoing cost),
    each with the distinct units it reaches other than its source's unit, as in
    :func:`~exactplace.core.contraction.contract`.
    """
    units = int(unit.max()) + 1
    part = graph.backward.astype(np.int64)
    key = unit * 2 + part
    cpu = np.bincount(key, weights=graph.cpu_time, minlength=2 * units).reshape(units, 2)
    acc = np.bincount(key, weights=np.where(graph.supported, graph.acc_time, 0.0), minlength=2 * units)
    supported = np.bincount(unit, weights=~graph.supported, minlength=units) == 0
    group_unit = unit[graph.group_source]
    target = unit[graph.dst]
    crossing = target != group_unit[graph.edge_group]
    pairs = np.unique(graph.edge_group[crossing] * units + target[crossing])
    kept, pair_group = np.unique(pairs // units, return_inverse=True)
    return UnitData(
        unit=unit, cpu=cpu, acc=acc.reshape(units, 2), memory=np.bincount(unit, weights=graph.memory, minlength=units),
        supported=supported, group_cost=graph.group_cost[kept], group_part=part[graph.group_source[kept]],
        group_source=group_unit[kept].astype(np.int64), pair_group=pair_group.astype(np.int64),
        pair_target=(pairs % units).astype(np.int64),
    )


# -- devices ------------------------------------------------------------------------------------------------------
def typed_accelerators(cluster: Cluster, rules: DeviceRules | None = None
                       ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray] | None:
    """None for a homogeneous cluster (whose accelerators no rule tells apart); else the accelerator types
    (``Cluster.accelerator_types``: the devices of each, split where ``rules`` tell them apart,
    :meth:`~exactplace.core.constraints.DeviceRules.refine`), and the memory limit and the speed of each type."""
    devices = cluster.accelerator_types()
    if rules is not None:
        devices = rules.refine(devices)
    if cluster.is_homogeneous and len(devices) <= 1:
        return None
    first = np.array([d[0] for d in devices], dtype=np.int64)
    return devices, cluster.memory_limit[first], cluster.speed[first]


def interchangeable_sets(cluster: Cluster, rules: DeviceRules | None = None) -> list[np.ndarray]:
    """Sets of interchangeable devices: the accelerators of each type (all, when homogeneous), and the CPU cores,
    split where ``rules`` tell them apart (only sets of two or more)."""
    k = cluster.accelerators
    typed = typed_accelerators(cluster, rules)
    groups = [np.arange(k)] if typed is None else [np.asarray(g) for g in typed[0]]
    cores = [np.arange(k, cluster.num_devices)]
    if rules is not None:
        cores = rules.refine(cores)
    return [g for g in [*groups, *cores] if len(g) > 1]


def fits_accelerator(data: UnitData, cap: float | np.ndarray) -> np.ndarray:
    """Units that may go on an accelerator of memory limit ``cap``: supported, and not alone over it
    ((U,), or (U, S) for one cap per slot).

    Fixing the others off the accelerators (variable bounds, not the memory row) matters for
    tiny sizes: a solver's feasibility tolerance (1e-6 in HiGHS) would let a 1e-6-byte unit
    onto a 0-byte accelerator, which the referee (1e-9 slack) rejects.
    """
    if np.ndim(cap) == 0:
        return data.supported & (data.memory <= cap)
    return data.supported[:, None] & (data.memory[:, None] <= np.asarray(cap)[None, :])


def load_cap(data: UnitData, slowest: float = 1.0, cpus: bool = True) -> float:
    """An upper bound on every device's load: all compute anywhere (accelerator time on the ``slowest``
    accelerator; CPU time only where there are CPU cores, ``cpus``) plus every group paid by all its units.

    Finite, for CP-SAT; leaving out the CPU times without CPU cores matters there: a CPU time that
    only says "never on a CPU" (1e9) would otherwise set the scale CP-SAT rounds every load to.
    """
    acc = data.acc.sum(axis=1) if slowest == 1.0 else data.acc.sum(axis=1) / slowest
    compute = float((np.maximum(data.cpu.sum(axis=1), acc) if cpus else acc).sum())
    fanout = np.bincount(data.pair_group, minlength=data.groups) + 1
    return compute + float((data.group_cost * fanout).sum())


# -- row families -------------------------------------------------------------------------------------------------
def communication_rows(model: Model, data: UnitData, placed: np.ndarray, e: np.ndarray) -> None:
    """``e[g, s] >= placed[t, s] - placed[src(g), s]`` and ``e[g, s] >= placed[src(g), s] - placed[t, s]`` for every
    target unit ``t`` of group ``g`` and slot ``s`` (Lemma 4.1: ``e >= |.|`` as two rows).

    A group's cost is then paid once by a slot holding its source and some target elsewhere, and
    once by every slot holding a target but not the source: the evaluator's charge. ``placed`` is
    (U, S), or (T, U, S) summed over its first axis (accelerator types).
    """
    placed = placed if placed.ndim == 3 else placed[None]
    types, slots = placed.shape[0], placed.shape[2]
    if not data.groups or not slots:
        return
    pairs = len(data.pair_group)
    row = np.arange(pairs * slots).reshape(pairs, slots)
    s = np.broadcast_to(np.arange(slots), (pairs, slots))
    g = np.broadcast_to(data.pair_group[:, None], (pairs, slots))
    tgt = placed[:, data.pair_target]
    src = placed[:, data.group_source[data.pair_group]]
    n = types * pairs * slots
    for sign, label in ((1.0, "communication in"), (-1.0, "communication out")):
        # e - sign * (placed[t] - placed[src]) >= 0
        model.add_rows(label, pairs * slots, lb=0.0,
                       rows=np.concatenate([row.reshape(-1)] * (1 + 2 * types)),
                       cols=np.concatenate([e[g, s].reshape(-1), tgt.reshape(-1), src.reshape(-1)]),
                       vals=np.concatenate([np.ones(pairs * slots), np.full(n, -sign), np.full(n, sign)]))


def memory_rows(model: Model, data: UnitData, placed_acc: np.ndarray, cap: float | np.ndarray, name: str) -> None:
    """``sum_u memory_u placed[u, s] <= cap_s`` for each accelerator slot ``s`` (one cap for all, or one per slot);
    no row where it cannot bind (an infinite cap, or all units together within it)."""
    slots = placed_acc.shape[1]
    caps = np.broadcast_to(np.asarray(cap, dtype=np.float64), (slots,))
    keep = np.flatnonzero(np.isfinite(caps) & (data.memory.sum() > caps))
    if not len(keep):
        return
    U, n = data.units, len(keep)
    model.add_rows(name, n, ub=caps[keep], rows=np.broadcast_to(np.arange(n), (U, n)).reshape(-1),
                   cols=placed_acc[:, keep].reshape(-1), vals=np.broadcast_to(data.memory[:, None], (U, n)).reshape(-1))


def stage_rows(model: Model, placed_acc: np.ndarray, max_stages: int) -> None:
    """At most ``max_stages`` accelerator slots in use: binary ``z[s] >= placed[..., s]`` (one aggregated row per
    slot, ``sum placed[..., s] <= N z[s]`` over the ``N`` variables of the slot) and ``sum_s z[s] <= max_stages``."""
    slots = placed_acc.shape[-1]
    per_slot = placed_acc.reshape(-1, slots)  # every leading axis: the slot's variables
    z = model.add_vars(slots, ub=1.0, kind=Kind.INTEGER, name="z: accelerator slot s in use")
    size = per_slot.shape[0]
    model.add_rows("stages: sum placed[., s] <= N z[s]", slots, ub=0.0,
                   rows=np.concatenate([np.tile(np.arange(slots), size), np.arange(slots)]),
                   cols=np.concatenate([per_slot.reshape(-1), z]),
                   vals=np.concatenate([np.ones(size * slots), np.full(slots, -float(size))]))
    model.add_rows("stages: sum_s z[s] <= max_stages", 1, ub=float(max_stages), rows=np.zeros(slots, np.int64),
                   cols=z, vals=1.0)


def load_rows(model: Model, data: UnitData, placed_acc: np.ndarray, placed_cpu: np.ndarray, e: np.ndarray,
              L: np.ndarray, overlap: bool, gpipe: bool, name: str, speed: np.ndarray | None = None,
              premium: tuple[np.ndarray, float] | None = None) -> None:
    """``L >= sum_u acc_u placed[u, s] / speed + sum_g cost_g e[g, s]`` per accelerator slot and
    ``L >= sum_u cpu_u placed_cpu[u, s]`` per CPU slot.

    Parameters
    ----------
    placed_acc, placed_cpu : numpy arrays
        (U, S) and (U, S_cpu) placement variables. ``placed_acc`` may be (T, U, S): one slot is then
        the sum over the first axis (at most one of its T variables is 1: the slot's accelerator type).
    e : numpy array
        (G, S): the crossing variables of each group on each accelerator slot.
    overlap, gpipe : bool
        ``overlap``: compute and communication get separate rows (the load is the larger of the two);
        ``gpipe``: one row per part (forward, backward) and ``L = (LF, LB)``.
    speed : numpy array, optional
        Heterogeneous accelerators: divides the compute, broadcast against ``placed_acc``.
    premium : tuple, optional
        ``(q, factor)`` adds ``factor * cost_g * q[g, s]`` (two-level clusters, ``q`` (G, S)).
    """
    placed = placed_acc if placed_acc.ndim == 3 else placed_acc[None]
    for part in (0, 1) if gpipe else (None,):
        lvar = L[part] if gpipe else L[0]
        acc = data.acc[:, part] if gpipe else data.acc.sum(axis=1)
        cpu = data.cpu[:, part] if gpipe else data.cpu.sum(axis=1)
        cost = np.where(data.group_part == part, data.group_cost, 0.0) if gpipe else data.group_cost
        suffix = "" if part is None else ("[FW]", "[BW]")[part]
        if placed.shape[2]:
            coefficient = np.broadcast_to(acc[None, :, None], placed.shape)
            if speed is not None:
                coefficient = coefficient / np.broadcast_to(speed, placed_acc.shape).reshape(placed.shape)
            _accelerator_load_rows(model, placed, coefficient, e, cost, premium, lvar, overlap, name, suffix)
        if placed_cpu.shape[1]:
            _cpu_load_rows(model, data.units, placed_cpu, cpu, lvar, f"{name} CPU load{suffix}")


def _accelerator_load_rows(model: Model, placed: np.ndarray, coefficient: np.ndarray, e: np.ndarray,
                           cost: np.ndarray, premium: tuple[np.ndarray, float] | None, lvar: int, overlap: bool,
                           name: str, suffix: str) -> None:
    """One load row per accelerator slot (two with ``overlap``: compute, then communication), terms in the order
    compute, crossings, premium, ``-L``."""
    slots = placed.shape[2]
    s = np.arange(slots)
    compute = (np.broadcast_to(s, placed.shape), placed, coefficient)
    comm = [(np.broadcast_to(s, e.shape), e, np.broadcast_to(cost[:, None], e.shape))]
    if premium is not None:
        q, factor = premium
        comm.append((np.broadcast_to(s, q.shape), q, np.broadcast_to(cost[:, None] * factor, q.shape)))
    bound = (s, np.full(slots, lvar), -np.ones(slots))
    blocks = [(compute, bound), (*comm, bound)] if overlap else [(compute, *comm, bound)]
    for i, terms in enumerate(blocks):
        label = f"{name} accelerator {'compute' if overlap and i == 0 else 'comm' if overlap else 'load'}"
        model.add_rows(label + suffix, slots, ub=0.0,
                       rows=np.concatenate([t[0].reshape(-1) for t in terms]),
                       cols=np.concatenate([t[1].reshape(-1) for t in terms]),
                       vals=np.concatenate([t[2].reshape(-1) for t in terms]))


def _cpu_load_rows(model: Model, units: int, placed_cpu: np.ndarray, cpu: np.ndarray, lvar: int, name: str) -> None:
    """``sum_u cpu_u placed_cpu[u, s] - L <= 0`` per CPU slot."""
    cpu_slots = placed_cpu.shape[1]
    s = np.arange(cpu_slots)
    model.add_rows(name, cpu_slots, ub=0.0,
                   rows=np.concatenate([np.broadcast_to(s, (units, cpu_slots)).reshape(-1), s]),
                   cols=np.concatenate([placed_cpu.reshape(-1), np.full(cpu_slots, lvar)]),
                   vals=np.concatenate([np.broadcast_to(cpu[:, None], (units, cpu_slots)).reshape(-1),
                                        -np.ones(cpu_slots)]))


def objective_and_bounds(model: Model, data: UnitData, L: np.ndarray, devices: int, gpipe: bool,
                         fastest: float = 1.0, largest: bool = True) -> None:
    """Minimize ``L`` (``LF + LB`` with ``gpipe``), with two valid lower bounds on each part, from every unit's
    cheapest work ``w_u`` (its CPU time, or its accelerator time on the ``fastest`` accelerator if less):

    * total work: ``devices * L >= sum_u w_u``;
    * largest unit: ``L >= max_u w_u`` (``largest=False`` leaves it out: invalid when a unit may be split over
      replicas).
    """
    acc = data.acc if fastest == 1.0 else data.acc / fastest
    cheapest = np.where(data.supported[:, None], np.minimum(acc, data.cpu), data.cpu)  # (U, 2)
    if not gpipe:
        cheapest = cheapest.sum(axis=1, keepdims=True)
    for part in range(cheapest.shape[1]):
        model.add_rows("lower bound: total work", 1, lb=float(cheapest[:, part].sum()),
                       rows=[0], cols=[L[part]], vals=[float(devices)])
        if largest:
            model.add_rows("lower bound: largest unit", 1, lb=float(cheapest[:, part].max(initial=0.0)),
                           rows=[0], cols=[L[part]], vals=[1.0])
    model.minimize(L, np.ones(len(L)))
