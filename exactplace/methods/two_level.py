"""The exact max-load DP on a two-level cluster (paper Appendix C.3; PipeDream's hierarchical split).

On a two-level cluster (``Cluster.machines`` machines of ``p`` accelerators, transfers between
hosts ``f = inter_machine_cost`` times dearer, :mod:`exactplace.core.cluster`) a stage's
communication depends on where its partners are, not only on the stage. The chain-split space
(``Space.CHAIN``) then also asks each machine to take consecutive stages, with CPU stages
between machines (each CPU core is a host of its own): a chain of *blocks* ``B = J2 \\ J``
(``J ⊂ J2`` ideals of the contracted graph), each a machine's or a CPU core's, and within a
machine's block a chain of at most ``p`` stages. :func:`two_level_dp` is exact over that space;
:func:`stage_table` lists its stages and refuses lattices beyond the Python DP's limits
(``DPSettings.two_level_max_*``), where the contiguous IP (``method="mip"``) models the same space.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.contraction import Contraction
from exactplace.core.errors import TooManyIdealsError
from exactplace.core.graph import Graph
from exactplace.methods.dp_sizing import DEFAULT_DP, DPSettings

__all__ = ["StageTable", "stage_table", "two_level_dp"]


@dataclass(frozen=True)
class StageTable:
    """Every candidate stage ``S = I2 \\ I`` (one per pair of nested ideals), its cost terms and ideals."""

    member: np.ndarray        # (N, U) bool: the units of each ideal, ideals by size
    contains: np.ndarray      # (N, N) bool: contains[a, b] when ideal a ⊇ ideal b
    pair_from: np.ndarray     # (P,) index of I
    pair_to: np.ndarray       # (P,) index of I2
    acc: np.ndarray           # (P,) accelerator time of S (inf when a unit is unsupported)
    cpu: np.ndarray           # (P,) CPU time of S
    memory: np.ndarray        # (P,)
    send: np.ndarray          # (P, G) c_g where S holds g's source and not every target
    recv: np.ndarray          # (P, G) c_g where S holds a target of g but not its source
    group_source: np.ndarray  # (G,) each group's source unit
    reaches: np.ndarray       # (G, U) bool: the group's targets

    @property
    def num_ideals(self) -> int:
        """N."""
        return len(self.member)


def _ideals(units: int, src: np.ndarray, dst: np.ndarray, limit: int) -> list[int] | None:
    """Every down-closed set of units as a bitmask, by size (None past ``limit``)."""
    predecessors = [0] * units
    for u, v in zip(src.tolist(), dst.tolist()):
        predecessors[v] |= 1 << u
    seen, frontier = {0}, [0]
    while frontier:
        grown = []
        for ideal in frontier:
            for u in range(units):
                if not ideal >> u & 1 and predecessors[u] & ~ideal == 0 and (ideal | 1 << u) not in seen:
                    seen.add(ideal | 1 << u)
                    grown.append(ideal | 1 << u)
        if len(seen) > limit:
            return None
        frontier = grown
    return sorted(seen, key=lambda mask: (mask.bit_count(), mask))


def _beyond(limit: str, found: str, count: int, capacity: int) -> TooManyIdealsError:
    """The refusal of a lattice past one of the Python DP's limits."""
    return TooManyIdealsError(
        f"Method 'dp' on a two-level cluster runs in Python and takes at most {limit}; {found}. Use method='mip' "
        "(the contiguous IP models two-level clusters).", count, capacity,
    )


def stage_table(contraction: Contraction, settings: DPSettings = DEFAULT_DP) -> StageTable:
    """The stages of every pair of nested ideals of ``contraction``'s unit DAG.

    Raises
    ------
    TooManyIdealsError
        More than ``settings.two_level_max_ideals`` ideals, ``two_level_max_pairs`` nested pairs or
        ``two_level_max_work`` (block, stage) combinations: the J below each stage's first ideal times
        the J2 above its last, summed.
    """
    units = contraction.num_units
    max_ideals, max_pairs, max_work = (settings.two_level_max_ideals, settings.two_level_max_pairs,
                                       settings.two_level_max_work)
    ideals = _ideals(units, contraction.src, contraction.dst, max_ideals)
    if ideals is None:
        raise _beyond(f"{max_ideals:,} ideals", f"this {units}-unit graph has more", max_ideals + 1, max_ideals)
    member = np.array([[mask >> u & 1 for u in range(units)] for mask in ideals], dtype=bool).reshape(-1, units)
    contains = (member.astype(np.int64) @ member.T.astype(np.int64)) == member.sum(axis=1)[None, :]
    pair_from, pair_to = np.nonzero(np.triu(contains.T, k=1))  # I before I2 (by size), I2 ⊇ I
    if len(pair_from) > max_pairs:
        raise _beyond(f"{max_pairs:,} pairs of nested ideals",
                      f"this graph's {len(ideals):,} ideals have {len(pair_from):,}", len(ideals), len(ideals))
    work = int((contains.sum(axis=1)[pair_from] * contains.sum(axis=0)[pair_to]).sum())
    if work > max_work:  # before the stages' tables: a refusal costs little
        raise _beyond(f"{max_work:,} (block, stage) combinations", f"this graph's {len(ideals):,} ideals give "
                      f"{work:,}", len(ideals), len(ideals))
    stage = member[pair_to] & ~member[pair_from]                          # (P, U)
    ptr, target = contraction.group_ptr, contraction.group_target
    groups = len(contraction.group_cost)
    reaches = np.zeros((groups, units), dtype=bool)
    reaches[np.repeat(np.arange(groups), np.diff(ptr)), target] = True
    source_in = stage[:, contraction.group_source]                        # (P, G)
    target_in = stage.astype(np.int64) @ reaches.T.astype(np.int64) > 0    # some target in S
    target_out = (~stage).astype(np.int64) @ reaches.T.astype(np.int64) > 0  # some target outside S
    cost = contraction.group_cost[None, :]
    with np.errstate(invalid="ignore"):  # inf * 0 for unsupported units outside S
        acc = np.where(stage, contraction.acc_time[None, :], 0.0).sum(axis=1)
    return StageTable(
        member=member, contains=contains, pair_from=pair_from, pair_to=pair_to, acc=acc,
        cpu=stage.astype(np.float64) @ contraction.cpu_time, memory=stage.astype(np.float64) @ contraction.memory,
        send=np.where(source_in & target_out, cost, 0.0), recv=np.where(~source_in & target_in, cost, 0.0),
        group_source=np.asarray(contraction.group_source, dtype=np.int64), reaches=reaches,
    )


def two_level_dp(graph: Graph, cluster: Cluster, contraction: Contraction, *, overlap: bool = False,
                 deadline: float | None = None, table: StageTable | None = None,
                 settings: DPSettings = DEFAULT_DP) -> tuple[float, np.ndarray | None]:
    """The optimal two-level chain split: ``(value, device of every node)``; ``(inf, None)`` when none fits.

    Within a block ``B`` every partner is placed: a source outside ``B`` is on another host (it lies
    in ``J``, or beyond ``J2`` for a backward edge), a target outside ``B`` too. So the load of a
    stage ``S = I2 \\ I`` inside block ``B`` is

        compute(S) + sum_g c_g [send_g(S) (1 + (f-1) [targets_g ⊄ B]) + recv_g(S) (1 + (f-1) [src_g ∉ B])]

    (``send_g``: the source in ``S`` and some target outside; ``recv_g``: the source outside and
    some target in ``S``), and the DP runs in two levels: for every block ``(J, J2)`` the best
    chain of at most ``p`` accelerator stages from ``J`` to ``J2`` (the inner DP, with ``B``'s
    premiums), then over blocks and CPU stages with at most ``machines`` blocks and ``cpus`` CPU
    stages (the outer DP). Its work is the number of (block, stage inside it) combinations,
    ``sum over nested pairs I ⊂ I2 of #{J ⊆ I} * #{J2 ⊇ I2}``, counted before it starts
    (:func:`stage_table`).

    Parameters
    ----------
    graph, cluster : Graph, Cluster
        A two-level cluster of identical accelerators (``Cluster.is_homogeneous``).
    contraction : Contraction
        The units (``Problem.contraction``).
    overlap : bool
        Communication overlaps compute: a stage's load is max(compute, communication).
    deadline : float, optional
        A ``time.monotonic()`` instant; past it :class:`TimeoutError` is raised.
    table : StageTable, optional
        ``stage_table(contraction, settings)``, when already computed.
    settings : DPSettings
        The lattice limits (``two_level_max_*``) when ``table`` is not given.

    Raises
    ------
    TooManyIdealsError
        The lattice is beyond the Python DP (:func:`stage_table`).
    TimeoutError
        The deadline passed.

    Examples
    --------
    >>> from exactplace.core.contraction import contract
    >>> from exactplace.core.graph import Node
    >>> g = Graph([Node(i, 99.0, 4.0, comm=1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
    >>> value, device = two_level_dp(g, Cluster(4, cpus=0, machines=2, inter_machine_cost=5.0), contract(g))
    >>> value, device.tolist()  # crossing to machine 1 costs 5 at each end: machine 0's two stages are best
    (9.0, [0, 0, 1, 1])
    >>> two_level_dp(g, Cluster(4, cpus=0, machines=2, inter_machine_cost=1.0), contract(g))[0]  # one level: 4 stages
    6.0
    """
    table = stage_table(contraction, settings) if table is None else table
    blocks = _machine_blocks(table, cluster, overlap, deadline) if cluster.per_machine else {}
    outer, came_from = _outer_dp(table, cluster, blocks)
    last = table.num_ideals - 1
    m, c = np.unravel_index(int(np.argmin(outer[last])), outer[last].shape)
    value = float(outer[last, m, c])
    if math.isinf(value):
        return value, None
    unit_device = _unit_devices(table, cluster, contraction.num_units, blocks, came_from, (last, int(m), int(c)))
    return value, unit_device[contraction.unit]


#: A machine's block ``(J, J2)``: its max load and its chain of ideals ``J, ..., J2`` (one stage per step).
Blocks = dict[tuple[int, int], tuple[float, list[int]]]


def _machine_blocks(table: StageTable, cluster: Cluster, overlap: bool, deadline: float | None) -> Blocks:
    """The inner DP: for each block (J, J2), the best chain of 1..per accelerator stages and its ideals."""
    per, f = cluster.per_machine, cluster.inter_machine_cost
    fits = np.isfinite(table.acc) & (table.memory <= cluster.memory_cap)
    base_comm = table.send.sum(axis=1) + table.recv.sum(axis=1)
    blocks: Blocks = {}
    for start in range(table.num_ideals):
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError
        above_start = np.flatnonzero(table.contains[table.pair_from, start])  # stages that may follow J
        for end in np.flatnonzero(table.contains[:, start]).tolist():
            if end == start:
                continue
            inside = above_start[table.contains[end, table.pair_to[above_start]]]
            block = table.member[end] & ~table.member[start]
            remote_target = (table.reaches & ~block).any(axis=1).astype(np.float64)
            remote_source = (~block[table.group_source]).astype(np.float64)
            comm = base_comm[inside] + (f - 1.0) * (table.send[inside] @ remote_target
                                                    + table.recv[inside] @ remote_source)
            load = np.maximum(table.acc[inside], comm) if overlap else table.acc[inside] + comm
            load = np.where(fits[inside], load, math.inf)
            leaving: dict[int, list[tuple[float, int]]] = {}
            for i, j, value in zip(table.pair_from[inside].tolist(), table.pair_to[inside].tolist(), load.tolist()):
                leaving.setdefault(i, []).append((value, j))
            best = _best_chain(leaving, start, end, per)
            if best is not None:
                blocks[start, end] = best
    return blocks


def _best_chain(leaving: dict[int, list[tuple[float, int]]], start: int, end: int,
                per: int) -> tuple[float, list[int]] | None:
    """The best chain of at most ``per`` stages from ideal ``start`` to ``end`` over the stages ``leaving``
    each ideal (``(load, next ideal)``): its max load and ideals; None when none is finite."""
    # best[a][ideal]: the best max load reaching the ideal with a stages; parent for the chain.
    best = [{start: 0.0}]
    parent: list[dict[int, int]] = [{}]
    for _ in range(per):
        layer: dict[int, float] = {}
        back: dict[int, int] = {}
        for i, value in best[-1].items():
            for stage, j in leaving.get(i, ()):
                candidate = max(value, stage)
                if candidate < layer.get(j, math.inf):
                    layer[j], back[j] = candidate, i
        best.append(layer)
        parent.append(back)
    stages = min(range(1, per + 1), key=lambda a: best[a].get(end, math.inf))
    if math.isinf(best[stages].get(end, math.inf)):
        return None
    chain, at = [end], end
    for a in range(stages, 0, -1):
        at = parent[a][at]
        chain.append(at)
    return best[stages][end], chain[::-1]


#: How the outer DP reached a state ``(ideal, machines used, CPU stages used)``: the state before and
#: whether the step was a CPU stage or a machine's block.
CameFrom = dict[tuple[int, int, int], tuple[int, int, int, str]]


def _outer_dp(table: StageTable, cluster: Cluster, blocks: Blocks) -> tuple[np.ndarray, CameFrom]:
    """The outer DP over (ideal, machines used, CPU stages used): blocks and CPU stages in turn."""
    n_ideals = table.num_ideals
    machines, cpus = cluster.machines if cluster.per_machine else 0, cluster.cpus
    successors: list[list[tuple[int, int]]] = [[] for _ in range(n_ideals)]
    for p, (i, j) in enumerate(zip(table.pair_from.tolist(), table.pair_to.tolist())):
        successors[i].append((p, j))
    blocks_from: list[list[tuple[int, float]]] = [[] for _ in range(n_ideals)]
    for (start, end), (block, _) in blocks.items():
        blocks_from[start].append((end, block))
    outer = np.full((n_ideals, machines + 1, cpus + 1), math.inf)
    came_from: CameFrom = {}
    outer[0, 0, 0] = 0.0
    cpu_load = table.cpu.tolist()
    for i in range(n_ideals):
        for m in range(machines + 1):
            for c in range(cpus + 1):
                value = outer[i, m, c]
                if math.isinf(value):
                    continue
                if c < cpus:
                    for p, j in successors[i]:
                        candidate = max(value, cpu_load[p])
                        if candidate < outer[j, m, c + 1]:
                            outer[j, m, c + 1] = candidate
                            came_from[j, m, c + 1] = (i, m, c, "cpu")
                if m < machines:
                    for j, block in blocks_from[i]:
                        if max(value, block) < outer[j, m + 1, c]:
                            outer[j, m + 1, c] = max(value, block)
                            came_from[j, m + 1, c] = (i, m, c, "machine")
    return outer, came_from


def _unit_devices(table: StageTable, cluster: Cluster, units: int, blocks: Blocks, came_from: CameFrom,
                  at: tuple[int, int, int]) -> np.ndarray:
    """The device of every unit, walking the outer DP back from state ``at`` to the empty ideal."""
    member, per = table.member, cluster.per_machine
    unit_device = np.empty(units, dtype=np.int64)
    while at != (0, 0, 0):
        i, m_before, c_before, kind = came_from[at]
        if kind == "cpu":
            unit_device[member[at[0]] & ~member[i]] = cluster.accelerators + c_before
        else:
            chain = blocks[i, at[0]][1]
            for s, (a, b) in enumerate(itertools.pairwise(chain)):
                unit_device[member[b] & ~member[a]] = m_before * per + s
        at = (i, m_before, c_before)
    return unit_device
