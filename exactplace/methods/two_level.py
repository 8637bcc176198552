"""The exact max-load DP on a two-level cluster (paper Appendix C.3; PipeDream's hierarchical split).

On a two-level cluster (``Cluster.machines`` machines of ``p`` accelerators, transfers between
hosts ``f = inter_machine_cost`` times dearer, :mod:`exactplace.core.cluster`) a stage's
communication depends on where its partners are, not only on the stage: a receiver pays ``f``
when the source is on another host, a source pays ``f`` when a receiver is. The chain-split
space (``Space.CHAIN``) then also asks each machine to take consecutive stages, with CPU
stages between machines (each CPU core is a host of its own), which makes the split
two-level: a chain of *blocks* ``B = J2 \\ J`` (``J ⊂ J2`` ideals of the contracted graph), each
a machine's or a CPU core's, and within a machine's block a chain of at most ``p`` stages.

Within a block every partner is placed: a source outside ``B`` is on another host (it lies in
``J``, or beyond ``J2`` for a backward edge), a target outside ``B`` too. So the load of a stage
``S = I2 \\ I`` inside block ``B`` is

    compute(S) + sum_g c_g [send_g(S) (1 + (f-1) [targets_g ⊄ B]) + recv_g(S) (1 + (f-1) [src_g ∉ B])]

(``send_g``: the source in ``S`` and some target outside; ``recv_g``: the source outside and some
target in ``S``), and the DP runs in two levels: for every block ``(J, J2)`` the best chain of at
most ``p`` accelerator stages from ``J`` to ``J2`` (the inner DP, with ``B``'s premiums), then
over blocks and CPU stages with at most ``machines`` blocks and ``cpus`` CPU stages (the
outer DP). It is exact over that space and its work is the number of (block, stage inside it)
combinations, ``sum over nested pairs I ⊂ I2 of #{J ⊆ I} * #{J2 ⊇ I2}``, counted before it starts
(:func:`stage_table`). It runs in Python and is meant for small lattices: :data:`MAX_WORK`
bounds it (about 10 s), beyond which it is refused at once, and the contiguous IP
(``method="mip"``) models the same space at scale.

Examples
--------
>>> from exactplace.core.cluster import Cluster
>>> from exactplace.core.contraction import contract
>>> from exactplace.core.graph import Graph, Node
>>> g = Graph([Node(i, 99.0, 4.0, comm=1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
>>> value, device = two_level_dp(g, Cluster(4, cpus=0, machines=2, inter_machine_cost=5.0), contract(g))
>>> value, device.tolist()  # crossing to machine 1 costs 5 at each end: machine 0's two stages are best
(9.0, [0, 0, 1, 1])
>>> two_level_dp(g, Cluster(4, cpus=0, machines=2, inter_machine_cost=1.0), contract(g))[0]  # one level: 4 stages
6.0
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

__all__ = ["MAX_IDEALS", "MAX_PAIRS", "MAX_WORK", "StageTable", "stage_table", "two_level_dp"]

#: The most ideals and (ideal, larger ideal) pairs the Python DP takes: beyond them it is refused
#: in well under a second, and ``auto`` goes on to the contiguous IP.
MAX_IDEALS = 1_000
MAX_PAIRS = 60_000
#: The most (block, stage) combinations the DP takes (see :func:`stage_table`): about 10 s on one core.
MAX_WORK = 1_000_000


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


def _ideals(units: int, src: np.ndarray, dst: np.ndarray) -> list[int] | None:
    """Every down-closed set of units as a bitmask, by size (None past ``MAX_IDEALS``)."""
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
        if len(seen) > MAX_IDEALS:
            return None
        frontier = grown
    return sorted(seen, key=lambda mask: (mask.bit_count(), mask))


def _beyond(limit: str, found: str, count: int, capacity: int) -> TooManyIdealsError:
    """The refusal of a lattice past one of the Python DP's limits."""
    return TooManyIdealsError(
        f"Method 'dp' on a two-level cluster runs in Python and takes at most {limit}; {found}. Use method='mip' "
        "(the contiguous IP models two-level clusters).", count, capacity,
    )


def stage_table(contraction: Contraction) -> StageTable:
    """The stages of every pair of nested ideals of ``contraction``'s unit DAG.

    Raises
    ------
    TooManyIdealsError
        More than ``MAX_IDEALS`` ideals, ``MAX_PAIRS`` nested pairs or ``MAX_WORK`` (block, stage)
        combinations: the J below each stage's first ideal times the J2 above its last, summed.
    """
    units = contraction.num_units
    ideals = _ideals(units, contraction.src, contraction.dst)
    if ideals is None:
        raise _beyond(f"{MAX_IDEALS:,} ideals", f"this {units}-unit graph has more", MAX_IDEALS + 1, MAX_IDEALS)
    member = np.array([[mask >> u & 1 for u in range(units)] for mask in ideals], dtype=bool).reshape(-1, units)
    contains = (member.astype(np.int64) @ member.T.astype(np.int64)) == member.sum(axis=1)[None, :]
    pair_from, pair_to = np.nonzero(np.triu(contains.T, k=1))  # I before I2 (by size), I2 ⊇ I
    if len(pair_from) > MAX_PAIRS:
        raise _beyond(f"{MAX_PAIRS:,} pairs of nested ideals",
                      f"this graph's {len(ideals):,} ideals have {len(pair_from):,}", len(ideals), len(ideals))
    work = int((contains.sum(axis=1)[pair_from] * contains.sum(axis=0)[pair_to]).sum())
    if work > MAX_WORK:  # before the stages' tables: a refusal costs little
        raise _beyond(f"{MAX_WORK:,} (block, stage) combinations", f"this graph's {len(ideals):,} ideals give "
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
                 deadline: float | None = None, table: StageTable | None = None) -> tuple[float, np.ndarray | None]:
    """The optimal two-level chain split: ``(value, device of every node)``; ``(inf, None)`` when none fits.

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
        ``stage_table(contraction)``, when already computed.

    Raises
    ------
    TooManyIdealsError
        The lattice is beyond the Python DP (:func:`stage_table`).
    TimeoutError
        The deadline passed.
    """
    table = stage_table(contraction) if table is None else table
    member, n_ideals = table.member, table.num_ideals
    per, f = cluster.per_machine, cluster.inter_machine_cost
    fits = np.isfinite(table.acc) & (table.memory <= cluster.memory_cap)
    base_comm = table.send.sum(axis=1) + table.recv.sum(axis=1)
    successors: list[list[tuple[int, int]]] = [[] for _ in range(n_ideals)]
    for p, (i, j) in enumerate(zip(table.pair_from.tolist(), table.pair_to.tolist())):
        successors[i].append((p, j))

    # Inner DP: for each block (J, J2), the best chain of 1..per accelerator stages and its ideals.
    block_value: dict[tuple[int, int], float] = {}
    block_chain: dict[tuple[int, int], list[int]] = {}
    for start in range(n_ideals if per else 0):
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError
        above_start = np.flatnonzero(table.contains[table.pair_from, start])  # stages that may follow J
        for end in np.flatnonzero(table.contains[:, start]).tolist():
            if end == start:
                continue
            inside = above_start[table.contains[end, table.pair_to[above_start]]]
            block = member[end] & ~member[start]
            remote_target = (table.reaches & ~block).any(axis=1).astype(np.float64)
            remote_source = (~block[table.group_source]).astype(np.float64)
            comm = base_comm[inside] + (f - 1.0) * (table.send[inside] @ remote_target
                                                    + table.recv[inside] @ remote_source)
            load = np.maximum(table.acc[inside], comm) if overlap else table.acc[inside] + comm
            load = np.where(fits[inside], load, math.inf)
            leaving: dict[int, list[tuple[float, int]]] = {}
            for i, j, value in zip(table.pair_from[inside].tolist(), table.pair_to[inside].tolist(), load.tolist()):
                leaving.setdefault(i, []).append((value, j))
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
                continue
            block_value[start, end] = best[stages][end]
            chain, at = [end], end
            for a in range(stages, 0, -1):
                at = parent[a][at]
                chain.append(at)
            block_chain[start, end] = chain[::-1]

    # Outer DP over (ideal, machines used, CPU stages used): blocks and CPU stages in turn.
    machines, cpus = cluster.machines if per else 0, cluster.cpus
    outer = np.full((n_ideals, machines + 1, cpus + 1), math.inf)
    came_from: dict[tuple[int, int, int], tuple[int, int, int, str]] = {}
    outer[0, 0, 0] = 0.0
    blocks_from: list[list[tuple[int, float]]] = [[] for _ in range(n_ideals)]
    for (start, end), block in block_value.items():
        blocks_from[start].append((end, block))
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
    last = n_ideals - 1
    m, c = np.unravel_index(int(np.argmin(outer[last])), outer[last].shape)
    value = float(outer[last, m, c])
    if math.isinf(value):
        return value, None
    unit_device = np.empty(contraction.num_units, dtype=np.int64)
    at = (last, int(m), int(c))
    while at != (0, 0, 0):
        i, m_before, c_before, kind = came_from[at]
        if kind == "cpu":
            unit_device[member[at[0]] & ~member[i]] = cluster.accelerators + c_before
        else:
            chain = block_chain[i, at[0]]
            for s, (a, b) in enumerate(itertools.pairwise(chain)):
                unit_device[member[b] & ~member[a]] = m_before * per + s
        at = (i, m_before, c_before)
    return value, unit_device[contraction.unit]

