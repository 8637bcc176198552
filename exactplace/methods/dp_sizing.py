"""How large the DP's tables grow and whether ``method="auto"`` expects the DP to finish.

:class:`DPSettings` holds the DP's tuning: the memory budget of its tables, the time estimate
``auto`` uses (pairs per ideal times seconds per pair, shared by the threads), the share of the
time left given to a trial run when the estimate says no, and the lattice limits of the Python
two-level DP (:mod:`exactplace.methods.two_level`). The functions here size the native DP's
tables (:func:`ideal_capacity`, :func:`check_table_memory`), count the ideals once per problem
(:func:`counted_ideals`) and give ``auto``'s verdict (:func:`auto_verdict`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.contraction import Contraction
from exactplace.core.errors import TooManyIdealsError
from exactplace.core.placement import Limit
from exactplace.core.problem import MethodResult, Problem
from exactplace.methods.ideals import count_unit_ideals
from exactplace.methods.trials import trial_verdict

__all__ = ["DEFAULT_DP", "AcceleratorTypes", "DPSettings", "accelerator_types", "auto_verdict", "check_table_memory",
           "counted_ideals", "dp_seconds", "format_bytes", "ideal_capacity", "known_ideals", "replicated_cluster",
           "table_bytes"]


@dataclasses.dataclass(frozen=True)
class DPSettings:
    """The DP's tuning, passed to the methods as ``DP.settings`` (see ``DP.with_settings``).

    Attributes
    ----------
    memory_budget : float
        Bytes the DP's tables may take unless the ``memory_budget`` option says otherwise.
    seconds_per_pair : float
        Seconds per (ideal, sub-ideal) pair of the DP's walk on one thread (an upper estimate).
    pairs_per_ideal : float
        The pairs per ideal ``auto`` assumes: an upper estimate without the cutoff's skipping, which
        is known only once the DP runs.
    auto_seconds : float
        The seconds ``auto`` allows the DP when ``solve`` has no time limit.
    trial_fraction : float
        When the estimate says the DP would not finish in the time left but its tables fit the
        memory budget, the DP runs for this share of the time left (a trial): the estimate is an
        upper one, since how much the cutoff skips is known only while the DP runs. A finished trial
        is the answer; an unfinished one costs this share and ``auto`` goes on. 0 turns trials off.
    two_level_max_ideals, two_level_max_pairs, two_level_max_work : int
        The most ideals, (ideal, larger ideal) pairs and (block, stage) combinations the Python
        two-level DP takes; beyond them it is refused at once (``auto`` goes on to the contiguous IP).
    """

    memory_budget: float = 2 * 2**30
    seconds_per_pair: float = 1e-7
    pairs_per_ideal: float = 6_000
    auto_seconds: float = 60.0
    trial_fraction: float = 0.1
    two_level_max_ideals: int = 1_000
    two_level_max_pairs: int = 60_000
    two_level_max_work: int = 1_000_000


#: The settings every DP method runs with unless given others.
DEFAULT_DP = DPSettings()

# The native core numbers ideals with 31-bit integers.
_NATIVE_MAX_IDEALS = 2**30 - 1

#: Where ``auto_verdict`` leaves its trial's result (or why the DP does not suit) in ``Problem.cache``.
TRIAL_KEY = "dp:trial"


@dataclasses.dataclass(frozen=True)
class AcceleratorTypes:
    """A cluster's accelerators grouped by (memory, speed) (``Cluster.accelerator_types``), as the DP sees them.

    ``devices[t]`` lists the accelerators of type ``t`` (at most one per unit: a placement never
    uses more), ``memory[t]`` their memory limit (with the shared rounding slack,
    ``Cluster.memory_limit``) and ``speed[t]`` their speed.
    """

    devices: tuple[np.ndarray, ...]
    memory: np.ndarray
    speed: np.ndarray

    @property
    def counts(self) -> list[int]:
        """Accelerators per type."""
        return [len(d) for d in self.devices]

    @property
    def accelerators(self) -> np.ndarray:
        """The accelerators in the native core's numbering (type 0's, then type 1's, ...): its device -> ours."""
        return np.concatenate([*self.devices, np.zeros(0, dtype=np.int64)])


def accelerator_types(cluster: Cluster, units: int) -> AcceleratorTypes:
    """The DP's accelerator types of ``cluster`` for a graph of ``units`` units.

    >>> t = accelerator_types(Cluster(4, memory=[8.0, 4.0, 8.0, 8.0], speed=[1.0, 1.0, 1.0, 2.0], cpus=1), 1)
    >>> [d.tolist() for d in t.devices], t.speed.tolist()
    ([[0], [1], [3]], [1.0, 1.0, 2.0])
    """
    devices = tuple(cluster.accelerator_types(per_type=units))
    first = np.array([d[0] for d in devices], dtype=np.int64)
    return AcceleratorTypes(devices, cluster.memory_limit[first], cluster.speed[first])


def replicated_cluster(cluster: Cluster, units: int) -> Cluster:
    """The cluster the replicated DP sees: every accelerator (replicas may outnumber the units),
    at most one CPU per unit.

    >>> replicated_cluster(Cluster(8, memory=4.0, cpus=5), 2)
    Cluster(accelerators=8, memory=4.0, cpus=2)
    """
    cpus = min(cluster.cpus, units)
    return cluster if cpus == cluster.cpus else Cluster(cluster.accelerators, cluster.memory, cpus, cluster.speed)


def table_bytes(units: int, cluster: Cluster, ideals: int, covers: int, replication: bool = False) -> int:
    """Bytes the native DP allocates for ``ideals`` ideals and ``covers`` covers on ``cluster``."""
    from exactplace.native import load

    if replication:  # value, choice and a 2-byte replica count per layer: 14 bytes where the plain DP has 12
        used = replicated_cluster(cluster, units)
        return load().memory_estimate(units, used.accelerators, used.cpus, ideals, covers) * 14 // 12
    if cluster.is_homogeneous:
        used = cluster.for_nodes(units)
        return load().memory_estimate(units, used.accelerators, used.cpus, ideals, covers)
    counts = accelerator_types(cluster, units).counts
    return load().memory_estimate(units, sum(counts), min(cluster.cpus, units), ideals, covers, type_count=counts)


def ideal_capacity(contraction: Contraction, cluster: Cluster, memory_budget: float,
                   replication: bool = False) -> int:
    """The most ideals whose DP tables fit in ``memory_budget`` bytes (ignoring the lattice's edges).

    >>> from exactplace.core.contraction import contract
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1)])
    >>> ideal_capacity(contract(g), Cluster(2, cpus=1), 2**20) > 1000
    True
    """
    per_ideal = table_bytes(contraction.num_units, cluster, 1, 0, replication)
    return int(min(memory_budget // per_ideal, _NATIVE_MAX_IDEALS))


def dp_seconds(ideals: int, threads: int, settings: DPSettings = DEFAULT_DP) -> float:
    """What ``method="auto"`` expects the DP to take on ``ideals`` ideals: ``settings.pairs_per_ideal``
    pairs each at ``settings.seconds_per_pair``, shared by the threads.

    >>> round(dp_seconds(100_000, 1), 6), round(dp_seconds(100_000, 2), 6)
    (60.0, 30.0)
    """
    return ideals * settings.pairs_per_ideal * settings.seconds_per_pair / threads


def format_bytes(size: float) -> str:
    """A byte count in the largest unit that keeps it at least 1: ``4 KiB``, ``1.5 GiB``.

    >>> format_bytes(4096), format_bytes(1.5 * 2**30), format_bytes(100)
    ('4 KiB', '1.5 GiB', '100 bytes')
    """
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} bytes"


_IDEALS_KEY = "ideals:dp"


def counted_ideals(problem: Problem, contraction: Contraction, limit: int) -> tuple[int, int] | None:
    """``count_unit_ideals`` memoized on the problem: an exact count, or "more than L", is reused."""
    known = problem.cache.get(_IDEALS_KEY)
    if known is not None:
        counted, beyond = known  # (ideals, covers) or None, and the limit it was taken with
        if counted is not None:
            return counted if counted[0] <= limit else None
        if limit <= beyond:
            return None
    counted = count_unit_ideals(contraction, limit)
    problem.cache[_IDEALS_KEY] = (counted, limit)
    return counted


def known_ideals(problem: Problem) -> int | None:
    """The ideal count :func:`counted_ideals` found on ``problem`` already, if it counted them all."""
    known = problem.cache.get(_IDEALS_KEY)
    return None if known is None or known[0] is None else int(known[0][0])


def _chain_memory(method: str, contraction: Contraction, cpus: int, budget: float) -> tuple[int, int]:
    """The chain DP's (ideals, covers), or TooManyIdealsError: its memory is linear in the units."""
    from exactplace.native import load

    units = contraction.num_units
    need = load().chain_memory_estimate(units, cpus, len(contraction.group_target))
    if need > budget:
        raise TooManyIdealsError(
            f"Method {method!r} needs {format_bytes(need)} for its {units:,}-unit chain, more than "
            f"its memory budget of {format_bytes(budget)}; raise the 'memory_budget' option.",
            units + 1, int((units + 1) * budget // need),
        )
    return units + 1, units


def _check_type_counts(method: str, problem: Problem, units: int, cpus: int, budget: float) -> None:
    """TooManyIdealsError when a heterogeneous cluster's device counts alone overflow the budget."""
    counts = accelerator_types(problem.cluster, units).counts
    need = table_bytes(units, problem.cluster, 2, 1)  # the fewest ideals: {} and all units
    if need > budget:
        combinations = math.prod(c + 1 for c in counts) * (cpus + 1)
        raise TooManyIdealsError(
            f"Method {method!r} keeps {combinations:,} device counts per ideal ((cpus + 1) times the "
            f"product of (count + 1) over the {len(counts)} accelerator types {counts}): even 2 ideals need "
            f"{format_bytes(need)}, more than its memory budget of {format_bytes(budget)}; group the accelerators "
            "into fewer types (equal memory and speed) or raise the 'memory_budget' option.",
            2, 0,
        )


def check_table_memory(method: str, problem: Problem, contraction: Contraction, budget: float, *,
                       linear: bool, replication: bool) -> tuple[int, int]:
    """(ideals, covers) of method ``method``'s tables, or TooManyIdealsError before anything big is allocated.

    ``linear``: the chain DP over a linear order's prefixes; ``replication``: the replicated DP.
    """
    units = contraction.num_units
    cluster = (replicated_cluster(problem.cluster, units) if replication
               else problem.cluster.for_nodes(units))
    if linear:
        return _chain_memory(method, contraction, cluster.cpus, budget)
    advice = "use method='dpl' (the linearized DP: one ideal per unit) or raise the 'memory_budget' option"
    if not problem.cluster.is_homogeneous:
        _check_type_counts(method, problem, units, cluster.cpus, budget)
        advice = "raise the 'memory_budget' option"
    capacity = ideal_capacity(contraction, cluster, budget, replication)
    counted = counted_ideals(problem, contraction, capacity)
    if counted is None:
        raise TooManyIdealsError(
            f"Method {method!r} would enumerate more than {capacity:,} ideals of the "
            f"{units}-unit graph, more than its memory budget of {format_bytes(budget)} holds; {advice}.",
            capacity + 1, capacity,
        )
    ideals, covers = counted
    need = table_bytes(units, problem.cluster, ideals, covers, replication)
    if need > budget:
        raise TooManyIdealsError(
            f"Method {method!r} would enumerate {ideals:,} ideals, needing {format_bytes(need)}, more than its "
            f"memory budget of {format_bytes(budget)}; {advice}.",
            ideals, int(ideals * budget // need),
        )
    return ideals, covers


def auto_verdict(problem: Problem, settings: DPSettings, budget: float, threads: int,
                 run: Callable[[Problem], MethodResult]) -> str | None:
    """Why ``auto`` should pass over the DP, or None: more ideals than ``budget`` bytes hold, or than the DP
    is expected to finish in the time left (``dp_seconds``; without a time limit, ``settings.auto_seconds``)
    unless ``run``, the DP, finishes a trial for ``settings.trial_fraction`` of that time."""
    horizon = settings.auto_seconds if problem.deadline is None else problem.remaining()
    in_time = int(min(horizon / dp_seconds(1, threads, settings), _NATIVE_MAX_IDEALS))  # time_limit=inf: any count
    contraction = problem.contraction
    in_memory = ideal_capacity(contraction, problem.cluster, budget)
    if counted_ideals(problem, contraction, min(in_time, in_memory)) is not None:
        return None
    if in_memory <= in_time or counted_ideals(problem, contraction, in_memory) is None:
        return f"more than {in_memory:,} ideals, more than the memory budget of {format_bytes(budget)} holds"
    slow = (f"more than {in_time:,} ideals, more than the DP is expected to finish in {horizon:.3g} s "
            f"on {threads} thread(s) (at {settings.pairs_per_ideal:,} pairs per ideal, "
            f"{settings.seconds_per_pair:.2g} s each)")
    return trial_verdict(problem, TRIAL_KEY, settings.trial_fraction * horizon, slow, run,
                         lambda result: result.limit is not Limit.TIME,
                         "a trial run did not finish in {seconds} s either")
