"""The exact max-load DP over ideals (paper §5.1.1) and its linearization DPL (§5.1.2).

Both run the native core ``exactplace._native`` (C++17) on the units prepared by
:mod:`exactplace.core.contraction`:

``dp``
    Enumerates every ideal of the unit DAG and returns a split of minimum max-load among
    *chain splits*: devices receive ``I1 \\ I0, I2 \\ I1, ...`` for a chain of ideals
    ``{} = I0 ⊆ I1 ⊆ ... ⊆ I(k+l) = all units`` (in any interleaving of accelerators and
    CPUs; a device may stay empty), each unit bringing its backward partners. Status
    OPTIMAL, with ``bound`` equal to the objective. DPL's split (below) is computed first: the
    DP searches only below its load (the native ``cutoff``), never trying a heavier stage and
    skipping the ideals that no better split can pass through (lower bounds from each unit's
    least time per device, and without communication the devices an ideal's covers need), and a
    stopped DP returns it. The optimum is the same. Every forward part is contiguous
    (Definition 3.1); a contiguous split whose devices cannot be ordered (two devices
    sending each other data) is outside this search space, as in the paper. When the unit
    DAG is itself a chain (its ideals are its prefixes), the chain DP below solves it, exactly.
``dpl``
    The same DP after adding a depth-first topological order of the units as artificial
    edges (:func:`~exactplace.core.contraction.linearize`), so the ideals are the
    ``units + 1`` prefixes of that order: a heuristic (status FEASIBLE, no bound) that
    scales to very large graphs. Over prefixes the DP is a 1-D partition problem, which the
    native chain DP (``dp_native/chain.hpp``) solves by a parametric search on the max-load
    in near-linear time per step, with the same optimum as the general DP on the linearized
    graph (checked in the tests); its tables grow linearly with the units.

A method stopped by the time limit before it has any placement returns the warm start if
it is feasible; else ``solve`` falls back to the greedy placement (status FEASIBLE,
``limit=Limit.TIME``, ``info["returned"]`` says so).

Contiguity of training graphs: a device's backward part is the set of backward partners of
its forward part. It is contiguous whenever the backward graph follows the forward graph
(mirrored, as in the ONNX training graphs, or copied, as in PipeDream's layer graphs: every
published workload), but arbitrary backward edges can break it, so both methods declare
``contiguous = False`` (``solve`` does not reject such placements) and report
``info["backward_contiguous"]``. Forward contiguity is checked on every result.

Options (``solve(..., option=value)``): ``overlap`` (accelerator load = max(communication,
compute), Appendix C.1), ``threads`` (default: the usable CPUs) and ``memory_budget``
(bytes the DP's tables may take, default 2 GiB; beyond it :class:`TooManyIdealsError` is
raised before any table is allocated). ``gpipe=True`` is rejected: the DP optimizes the
PipeDream schedule (FW + BW per device).

Heterogeneous clusters (``dp`` only): the accelerators are grouped into *types* of equal
memory and speed (:func:`accelerator_types`), and the DP's state counts the accelerators used
of each type: ``(cpus + 1) * prod(count + 1)`` table entries per ideal instead of
``(cpus + 1) * (k + 1)``. A device of type ``t`` holding ``S`` has load ``acc(S) / speed_t``
plus its communication and must fit ``S`` in the type's memory; the result names the actual
accelerator of each node. A homogeneous cluster is one type of speed 1: the DP of the paper,
run exactly as before. Too many types for the memory budget raise :class:`TooManyIdealsError`.
``dpl``'s chain DP treats the accelerators as identical, so it takes a homogeneous cluster only.

Replication (``dp`` only, option ``replication=True``; paper Appendix C.2, PipeDream's data-parallel
stages): a stage may run on ``r`` identical accelerators, with load
``(compute + communication + sync * (r - 1) / r) / r`` (``Node.sync`` summed over the stage), and the
replicas of all stages add up to at most the cluster's accelerators. The DP's accelerator count
then counts replicas: DP[I][a] takes max(DP[J][a - r], load_r(I \\ J)) for every ``r <= a``, in a
separate single-threaded walk (``dp_native/replicated.cpp``, ``ReplicatedDP``), so the plain DP is untouched.
The result states ``Placement.replicas``. It needs a homogeneous cluster (the replicas are
anonymous identical accelerators) and refuses ``overlap``; the accelerators are not capped at one
per unit (a single unit may run on every accelerator).

Two-level clusters (``dp`` only, ``Cluster.machines`` with ``inter_machine_cost > 1``; paper Appendix
C.3): a stage's communication then depends on which machine its partners are on, so the native
DP's per-stage loads do not apply. ``dp`` runs the two-level DP of
:mod:`exactplace.methods.two_level` instead (blocks of consecutive stages per machine, in Python,
for lattices of at most ``two_level.MAX_IDEALS`` ideals); ``dpl`` refuses such clusters.

Examples
--------
>>> from exactplace import read_workload, solve, workload_path
>>> w = read_workload(workload_path("layer_bert24_inference"))
>>> p = solve(w, method="dp")
>>> p.status.value, round(p.objective, 6), p.gap, p.info["ideals"]
('optimal', 17.789906, 0.0, 30)
>>> solve(w, method="dpl").status.value
'feasible'
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.contraction import Contraction, dfs_topological_order
from exactplace.core.errors import ExactplaceError, ParameterError, TooManyIdealsError, check_param
from exactplace.core.params import Boolean, Option, Real
from exactplace.core.placement import Limit, Space, Status
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators import check_feasibility, max_load
from exactplace.evaluators.feasibility import Guarantees, contiguity_violations, memory_summary
from exactplace.methods.base import THREADS, Method, usable_cpus
from exactplace.methods.ideals import count_unit_ideals
from exactplace.methods.two_level import StageTable, stage_table, two_level_dp

__all__ = ["AUTO_DP_SECONDS", "DEFAULT_MEMORY_BUDGET", "DP", "DPL", "PAIRS_PER_IDEAL", "SECONDS_PER_PAIR",
           "TRIAL_FRACTION", "AcceleratorTypes", "accelerator_types", "dp_seconds", "ideal_capacity"]

#: Bytes the DP's tables may take unless the ``memory_budget`` option says otherwise.
DEFAULT_MEMORY_BUDGET = 2 * 2**30

#: Seconds per (ideal, sub-ideal) pair of the DP's walk on one thread, rounded up from the slowest
#: measured on a 2-core machine (PipeDream's InceptionV3 with 8 accelerators, slower per pair than
#: synthetic_inception).
SECONDS_PER_PAIR = 1e-7

#: The pairs per ideal that ``method="auto"`` assumes: rounded up from the most measured without the
#: cutoff's skipping (synthetic_inception 5,300; InceptionV3 on 8 accelerators 4,400; layer_gnmt 600).
#: The cutoff usually makes far fewer (InceptionV3 on 8: 24), but that is known only once the DP runs.
PAIRS_PER_IDEAL = 6_000

#: The seconds ``method="auto"`` allows the DP when ``solve`` has no time limit.
AUTO_DP_SECONDS = 60.0

#: When ``dp_seconds`` says the DP would not finish in the time left but its tables fit the memory
#: budget, the DP runs anyway for this share of the time left (a trial): the estimate is an upper
#: one, since how much the cutoff skips is known only while the DP runs (PipeDream's InceptionV3,
#: 221,565 ideals, estimated at 66 s on 2 threads, takes 0.3 s). A finished trial is the answer;
#: an unfinished one costs this share and ``auto`` goes on to the next method. 0 turns trials off.
TRIAL_FRACTION = 0.1

# The native core numbers ideals with 31-bit integers.
_NATIVE_MAX_IDEALS = 2**30 - 1

#: The native core's name, as ``Placement.solver`` reports it.
SOLVER = "native-dp"
#: The two-level DP runs in Python (:mod:`exactplace.methods.two_level`).
TWO_LEVEL_SOLVER = "python-two-level-dp"

MEMORY_BUDGET = Option(
    "memory_budget", Real(low=2**12), DEFAULT_MEMORY_BUDGET,
    "bytes the DP's tables may take (at least 4 KiB); past it TooManyIdealsError is raised before allocating",
)


REPLICATION = Option(
    "replication", Boolean(), False,
    "stages may run data-parallel on r identical accelerators (paper Appendix C.2): load "
    "(compute + comm + sync (r-1)/r) / r; homogeneous clusters, no overlap",
)

#: The most accelerators the replicated DP takes (its replica counts are 16-bit).
MAX_REPLICATED_ACCELERATORS = 65535


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


def _estimate(units: int, cluster: Cluster, ideals: int, covers: int, replication: bool = False) -> int:
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
    per_ideal = _estimate(contraction.num_units, cluster, 1, 0, replication)
    return int(min(memory_budget // per_ideal, _NATIVE_MAX_IDEALS))


def dp_seconds(ideals: int, threads: int) -> float:
    """What ``method="auto"`` expects the DP to take on ``ideals`` ideals: ``PAIRS_PER_IDEAL`` pairs
    each at ``SECONDS_PER_PAIR``, shared by the threads.

    >>> round(dp_seconds(100_000, 1), 6), round(dp_seconds(100_000, 2), 6)
    (60.0, 30.0)
    """
    return ideals * PAIRS_PER_IDEAL * SECONDS_PER_PAIR / threads


def _gib(size: float) -> str:
    """A byte count in the largest unit that keeps it at least 1: ``4 KiB``, ``1.5 GiB``.

    >>> _gib(4096), _gib(1.5 * 2**30), _gib(100)
    ('4 KiB', '1.5 GiB', '100 bytes')
    """
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.0f} bytes"


def _stopped(problem: Problem, limit: Limit, info: dict, timings: dict,
             incumbent: np.ndarray | None = None, solver: str = SOLVER) -> MethodResult:
    """Stopped by the time limit or Ctrl-C with nothing of its own: the warm start if it is feasible,
    else the DPL incumbent, else no solution (which ``solve`` replaces with the greedy placement
    after a time limit)."""
    warm = problem.warm_start
    if warm is not None and not check_feasibility(problem.graph, problem.cluster, warm):
        return MethodResult(warm.copy(), Status.FEASIBLE, limit=limit, solver=solver, timings=timings,
                            info={**info, "returned": "warm start"})
    if incumbent is not None:
        return MethodResult(incumbent, Status.FEASIBLE, limit=limit, solver=solver, timings=timings,
                            info={**info, "returned": "DPL incumbent"})
    return MethodResult(None, Status.NO_SOLUTION, limit=limit, solver=solver, timings=timings, info=info)


def _incumbent(problem: Problem, overlap: bool) -> tuple[np.ndarray | None, float]:
    """DPL's placement (None if it has none) and the DP's cutoff: a little above its load, ``inf`` without one.

    The cutoff is 1e-6 relative above the evaluator's load, far beyond the rounding by which the
    native core's sums of the same split may differ, so the split itself stays below it.
    """
    try:
        placement = DPL().run(dataclasses.replace(problem, deadline=None))
    except ExactplaceError:  # DPL's tables beyond the memory budget: no incumbent
        return None, math.inf
    if placement.limit is Limit.INTERRUPT:  # DPL handled a Ctrl-C: it stops the DP too
        raise KeyboardInterrupt
    device = placement.device
    if device is None or check_feasibility(problem.graph, problem.cluster, device):
        return None, math.inf
    value = max_load(problem.graph, problem.cluster, device, overlap=overlap)
    return device, math.nextafter(value * (1 + 1e-6), math.inf)


def _chain_order(contraction: Contraction) -> np.ndarray:
    """The depth-first topological order of the units the chain DP follows.

    When every edge ``i -> i + 1`` is present, ``0, 1, ..., n - 1`` is the only topological order,
    so it is the depth-first one: found with one vectorized test instead of a Python walk over the
    units (seconds on a million-unit chain).
    """
    units, src, dst = contraction.num_units, contraction.src, contraction.dst
    if units > 1 and np.unique(src[dst == src + 1]).size == units - 1:
        return np.arange(units, dtype=np.int64)
    return dfs_topological_order(units, src, dst)


def _count(problem: Problem, contraction: Contraction, limit: int) -> tuple[int, int] | None:
    """``count_unit_ideals`` memoized on the problem: an exact count, or "more than L", is reused."""
    key = "ideals:dp"
    known = problem.cache.get(key)
    if known is not None:
        counted, beyond = known  # (ideals, covers) or None, and the limit it was taken with
        if counted is not None:
            return counted if counted[0] <= limit else None
        if limit <= beyond:
            return None
    counted = count_unit_ideals(contraction, limit)
    problem.cache[key] = (counted, limit)
    return counted


class _NativeDP(Method):
    """What "dp" and "dpl" share: the native core, its options, and how they run."""

    objectives = ("throughput",)
    requires = ("exactplace._native",)
    engine = SOLVER
    options = {"threads": THREADS, "memory_budget": MEMORY_BUDGET}
    # Forward parts are always contiguous and chained; backward parts when the backward graph
    # follows the forward one (module docstring), which the result reports in info.
    guarantee = Guarantees(forward_contiguous=True, chain_order=True)
    linear: bool = False

    @classmethod
    def check(cls, problem: Problem) -> None:
        """The PipeDream schedule (no ``gpipe``); for ``dpl``, a homogeneous one-level cluster; on a
        two-level cluster, identical accelerators and no replication."""
        if problem.cluster.is_two_level:
            check_param(
                not cls.linear and problem.cluster.is_homogeneous and not problem.options.get("replication"),
                "cluster", "solve", f"a one-level cluster for method {cls.name!r}" + (
                    " (its chain DP prices communication per stage alone)" if cls.linear else
                    " with replication=True or accelerators of differing memory or speed (the two-level DP "
                    "takes identical accelerators, one device per stage)"), problem.cluster,
            )
        check_param(
            problem.cluster.is_homogeneous or not cls.linear, "cluster", "solve",
            f"a homogeneous cluster (one accelerator memory size, speed 1) for method {cls.name!r} (its chain DP "
            "treats the accelerators as identical; methods 'dp' and 'mip' take heterogeneous clusters)",
            problem.cluster,
        )
        check_param(
            not problem.option("gpipe"), "gpipe", "solve",
            f"False for method {cls.name!r} (it optimizes the PipeDream schedule, FW + BW per device)",
            problem.option("gpipe"),
        )
        if problem.options.get("replication"):
            check_param(
                problem.objective == "throughput", "objective", "solve",
                "'throughput' with replication=True (the latency and makespan simulators run one device per stage)",
                problem.objective,
            )
            check_param(
                problem.cluster.is_homogeneous, "cluster", "solve",
                f"a homogeneous cluster with replication=True for method {cls.name!r} (the replicas of a stage are "
                "anonymous identical accelerators; one memory size, speed 1)", problem.cluster,
            )
            check_param(
                not problem.option("overlap"), "overlap", "solve",
                f"False with replication=True for method {cls.name!r} (a replicated stage's load is "
                "(compute + communication + sync (r-1)/r) / r, paper Appendix C.2)", problem.option("overlap"),
            )
            check_param(
                problem.cluster.accelerators <= MAX_REPLICATED_ACCELERATORS, "cluster", "solve",
                f"at most {MAX_REPLICATED_ACCELERATORS} accelerators with replication=True", problem.cluster,
            )

    def _budget(self, problem: Problem, contraction: Contraction) -> tuple[int, int]:
        """(ideals, covers), or TooManyIdealsError before anything big is allocated."""
        from exactplace.native import load

        _native = load()
        budget = float(self.setting(problem, "memory_budget"))
        replication = bool(problem.options.get("replication")) and not self.linear
        cluster = (replicated_cluster(problem.cluster, contraction.num_units) if replication
                   else problem.cluster.for_nodes(contraction.num_units))
        if self.linear:  # the chain DP: memory linear in the units
            need = _native.chain_memory_estimate(contraction.num_units, cluster.cpus, len(contraction.group_target))
            if need > budget:
                raise TooManyIdealsError(
                    f"Method {self.name!r} needs {_gib(need)} for its {contraction.num_units:,}-unit chain, more than "
                    f"its memory budget of {_gib(budget)}; raise the 'memory_budget' option.",
                    contraction.num_units + 1, int((contraction.num_units + 1) * budget // need),
                )
            return contraction.num_units + 1, contraction.num_units
        advice = "use method='dpl' (the linearized DP: one ideal per unit) or raise the 'memory_budget' option"
        if not problem.cluster.is_homogeneous:
            counts = accelerator_types(problem.cluster, contraction.num_units).counts
            need = _estimate(contraction.num_units, problem.cluster, 2, 1)  # the fewest ideals: {} and all units
            if need > budget:
                combinations = math.prod(c + 1 for c in counts) * (cluster.cpus + 1)
                raise TooManyIdealsError(
                    f"Method {self.name!r} keeps {combinations:,} device counts per ideal ((cpus + 1) times the "
                    f"product of (count + 1) over the {len(counts)} accelerator types {counts}): even 2 ideals need "
                    f"{_gib(need)}, more than its memory budget of {_gib(budget)}; group the accelerators into fewer "
                    "types (equal memory and speed) or raise the 'memory_budget' option.",
                    2, 0,
                )
            advice = "raise the 'memory_budget' option"
        capacity = ideal_capacity(contraction, cluster, budget, replication)
        counted = _count(problem, contraction, capacity)
        if counted is None:
            raise TooManyIdealsError(
                f"Method {self.name!r} would enumerate more than {capacity:,} ideals of the "
                f"{contraction.num_units}-unit graph, more than its memory budget of {_gib(budget)} holds; {advice}.",
                capacity + 1, capacity,
            )
        ideals, covers = counted
        need = _estimate(contraction.num_units, problem.cluster, ideals, covers, replication)
        if need > budget:
            raise TooManyIdealsError(
                f"Method {self.name!r} would enumerate {ideals:,} ideals, needing {_gib(need)}, more than its "
                f"memory budget of {_gib(budget)}; {advice}.",
                ideals, int(ideals * budget // need),
            )
        return ideals, covers

    def run(self, problem: Problem) -> MethodResult:
        from exactplace.native import load, request

        _native = load()
        graph, cluster = problem.graph, problem.cluster
        overlap = bool(problem.option("overlap"))
        threads = self.setting(problem, "threads") or usable_cpus()
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        contraction = problem.contraction
        timings["contract"] = time.perf_counter() - clock
        info: dict = {"units": contraction.num_units, "orphans": contraction.orphans, "fused": contraction.fused,
                      "merged": contraction.merged}
        # More devices than units is the same problem as one device per unit: the tables are sized by the graph.
        # Not with replication: a unit may run on every accelerator.
        replication = bool(problem.options.get("replication")) and not self.linear
        used = (replicated_cluster(cluster, contraction.num_units) if replication
                else cluster.for_nodes(contraction.num_units))
        incumbent = None
        try:
            clock = time.perf_counter()
            ideals, covers = self._budget(problem, contraction)  # first: a refusal costs nothing else
            timings["count"] = time.perf_counter() - clock
            info.update(ideals=ideals, covers=covers)
            # DPL: the prefixes of a depth-first order are its ideals. A unit DAG whose ideals are
            # already just its prefixes (a chain) is the same problem for the exact DP. Either way the
            # native chain DP, given the order, solves it in near-linear time instead of over all pairs.
            # The chain DP has one accelerator type: a heterogeneous cluster takes the general DP. (DPL
            # only meets one as the incumbent below: every accelerator given the smallest memory and
            # scored by the evaluator at its true speed, a feasible split.)
            hetero = not self.linear and not cluster.is_homogeneous
            chain = self.linear or (ideals == contraction.num_units + 1 and not hetero and not replication)
            cutoff = math.inf
            if not chain:
                # DPL's split (near-linear in the units) is a chain split too: the DP need only search
                # below its load (Options::cutoff), and a stopped DP still returns it.
                clock = time.perf_counter()
                incumbent, cutoff = _incumbent(problem, overlap)  # one replica per stage: a replicated split too
                timings["incumbent"] = time.perf_counter() - clock
            order = _chain_order(contraction) if chain else []
            if hetero:
                types = accelerator_types(cluster, contraction.num_units)
                accelerators = types.accelerators  # the native core numbers them by type
                devices = {"accelerators": len(accelerators), "memory_cap": float(types.memory.min()),
                           "type_count": types.counts, "type_memory": types.memory, "type_speed": types.speed}
                info["accelerator_types"] = [{"devices": d.tolist(), "memory": float(cluster.memory[d[0]]),
                                              "speed": float(cluster.speed[d[0]])} for d in types.devices]
            else:
                accelerators = np.arange(used.accelerators)
                devices = {"accelerators": used.accelerators, "memory_cap": cluster.memory_cap}
            if replication:
                devices.update(replication=True, sync=(contraction.sync if contraction.sync is not None
                                                       else np.zeros(contraction.num_units)))
            fields = dict(
                units=contraction.num_units, cpu_time=contraction.cpu_time, acc_time=contraction.acc_time,
                memory=contraction.memory, supported=contraction.supported, edge_src=contraction.src,
                edge_dst=contraction.dst, group_cost=contraction.group_cost, group_source=contraction.group_source,
                group_ptr=contraction.group_ptr, group_target=contraction.group_target, order=order,
                cpus=used.cpus, overlap=overlap, threads=int(threads), max_ideals=ideals, **devices,
            )
            remaining = problem.remaining()
            if remaining <= 0:
                return _stopped(problem, Limit.TIME, info, timings, incumbent)
            out = _native.solve(request(**fields, time_limit=remaining, cutoff=cutoff))
            if out.status == _native.Status.infeasible and cutoff < math.inf:
                # Nothing below DPL's load, though DPL's split is a chain split: the evaluator and the
                # native core disagree at the last bits (of a load, or a memory sum at the limit).
                # Searched again without the cutoff, so the answer stays the DP's own.
                remaining = problem.remaining()
                if remaining <= 0:
                    return _stopped(problem, Limit.TIME, info, timings, incumbent)
                cutoff = math.inf
                out = _native.solve(request(**fields, time_limit=remaining))
        except KeyboardInterrupt:
            return _stopped(problem, Limit.INTERRUPT, info, timings, incumbent)
        except _native.TooManyIdeals as error:  # the native safety net; the count above comes first
            raise TooManyIdealsError(f"Method {self.name!r}: {error.args[0]}", *error.args[1:]) from None
        except ValueError as error:  # std::invalid_argument: input the Python side should never produce
            raise ParameterError(f"Method {self.name!r} rejected its input: {error}") from None
        timings.update(ideals=out.seconds_ideals, dp=out.seconds_dp)
        info.update(pairs=out.pairs, threads=out.threads)
        if cutoff < math.inf:
            info.update(cutoff=cutoff, skipped=out.skipped)
        status = out.status
        if status == _native.Status.infeasible:
            info["reason"] = (f"no chain split fits ({memory_summary(problem.graph, problem.cluster)}); a "
                              "non-contiguous split may: method 'mip' with contiguous=False")
            return MethodResult(None, Status.NO_SOLUTION if self.linear else Status.INFEASIBLE, solver=SOLVER,
                                timings=timings, info=info)
        stopped = {_native.Status.time: Limit.TIME, _native.Status.interrupt: Limit.INTERRUPT}.get(status)
        if stopped is not None and out.device is None:
            return _stopped(problem, stopped, info, timings, incumbent)

        # The native core's devices -> the cluster's: accelerators by type, then the CPUs.
        device = np.asarray(out.device, dtype=np.int64)
        on_acc = device < len(accelerators)
        device = np.where(on_acc, accelerators[np.where(on_acc, device, 0)] if len(accelerators) else device,
                          device - len(accelerators) + cluster.accelerators)
        device = device[contraction.unit]
        replicas = None
        if replication:
            replicas = np.ones(cluster.accelerators, dtype=np.int64)
            replicas[:used.accelerators] = np.asarray(out.replicas, dtype=np.int64)
            info["replicas"] = {f"acc{a}": int(r) for a, r in enumerate(replicas.tolist())
                                if r > 1 and np.any(device == a)}
        info["dp_value"] = out.value
        if stopped is None or not self.linear:
            label = device * 2 + graph.backward.astype(np.int64)
            info["backward_contiguous"] = not contiguity_violations(graph, label)
        else:  # DPL out of time: the check (seconds on a million nodes) would only add to the overrun
            info["backward_contiguous"] = None
        if self.linear:  # a heuristic; when stopped early, its best split so far
            return MethodResult(device, Status.FEASIBLE, limit=stopped, solver=SOLVER, timings=timings, info=info)
        # Optimal for the chain-split model; the bound is the evaluator's value of the optimum itself,
        # after checking that the native table and the independent evaluator agree on it.
        bound = max_load(graph, cluster, device, overlap=overlap, replicas=replicas)
        if not math.isclose(bound, out.value, rel_tol=1e-9, abs_tol=1e-12):
            raise ExactplaceError(
                f"Method {self.name!r}: the DP's value {out.value!r} differs from the evaluator's {bound!r} "
                "for its own placement. This is a bug; please report it."
            )
        return MethodResult(device, Status.OPTIMAL, bound=bound, solver=SOLVER, timings=timings, info=info,
                            replicas=replicas)


class DP(_NativeDP):
    """The exact max-load DP over the ideals of the contracted forward graph (paper §5.1.1)."""

    name = "dp"
    exact = True
    space = Space.CHAIN
    options = {**_NativeDP.options, "replication": REPLICATION}
    description = "exact max-load DP over ideals (optimal among chain splits); needs few enough ideals"

    def run(self, problem: Problem) -> MethodResult:
        trial = problem.cache.pop(_TRIAL, None)
        if isinstance(trial, MethodResult):  # auto's trial run finished (or was interrupted): its answer
            return trial
        if problem.cluster.is_two_level:
            return _run_two_level(problem)
        return super().run(problem)

    @classmethod
    def unsuited(cls, problem: Problem) -> str | None:
        """More ideals than the memory budget holds, or than the DP is expected to finish in the time
        left (``dp_seconds``; without a time limit, ``AUTO_DP_SECONDS``) unless a trial run for
        ``TRIAL_FRACTION`` of that time finishes (on a two-level cluster: a lattice beyond the Python
        DP's limits)."""
        if problem.cluster.is_two_level:
            try:
                _two_level_table(problem)
            except TooManyIdealsError as error:
                return str(error)
            return None
        budget = float(cls.setting(problem, "memory_budget"))
        threads = int(cls.setting(problem, "threads") or usable_cpus())
        horizon = AUTO_DP_SECONDS if problem.deadline is None else problem.remaining()
        in_time = int(min(horizon / dp_seconds(1, threads), _NATIVE_MAX_IDEALS))  # time_limit=inf: any count
        contraction = problem.contraction
        in_memory = ideal_capacity(contraction, problem.cluster, budget)
        if _count(problem, contraction, min(in_time, in_memory)) is not None:
            return None
        if in_memory <= in_time or _count(problem, contraction, in_memory) is None:
            return f"more than {in_memory:,} ideals, more than the memory budget of {_gib(budget)} holds"
        slow = (f"more than {in_time:,} ideals, more than the DP is expected to finish in {horizon:.3g} s "
                f"on {threads} thread(s) (at {PAIRS_PER_IDEAL:,} pairs per ideal, {SECONDS_PER_PAIR:.2g} s each)")
        return cls._trial(problem, TRIAL_FRACTION * horizon, slow)

    @classmethod
    def _trial(cls, problem: Problem, seconds: float, slow: str) -> str | None:
        """Run the DP for ``seconds``: None if it finished or was interrupted (its result waits in the
        problem's cache for ``run``), else why not to run it. Decided once per problem."""
        known = problem.cache.get(_TRIAL)
        if known is not None:
            return None if isinstance(known, MethodResult) else known
        if seconds <= 0:
            return slow
        clock = time.perf_counter()
        result = cls().run(dataclasses.replace(problem, deadline=time.monotonic() + seconds))
        took = time.perf_counter() - clock
        if result.limit is Limit.TIME:
            problem.cache[_TRIAL] = f"{slow}; a trial run did not finish in {seconds:.3g} s either"
            return problem.cache[_TRIAL]
        result.timings["trial"] = took
        result.info["trial"] = f"finished in {took:.3g} s of a {seconds:.3g}-s trial ({slow})"
        problem.cache[_TRIAL] = result
        return None


class DPL(_NativeDP):
    """The DP on a depth-first linearization of the contracted forward graph (paper §5.1.2)."""

    name = "dpl"
    linear = True
    description = "max-load DP over the prefixes of a DFS topological order (heuristic, fast on large graphs)"

    @classmethod
    def unsuited(cls, problem: Problem) -> str | None:
        """The chain DP's tables beyond the memory budget."""
        from exactplace.native import load

        units = len(np.unique(problem.graph.color))  # an upper bound on the number of units
        cpus = min(problem.cluster.cpus, units)
        if load().chain_memory_estimate(units, cpus, problem.graph.m) > float(cls.setting(problem, "memory_budget")):
            return "its tables exceed the memory budget"
        return None


#: Where ``DP.unsuited`` leaves its trial's result (or why the DP does not suit) in ``Problem.cache``.
_TRIAL = "dp:trial"


def _two_level_table(problem: Problem) -> StageTable:
    """The two-level DP's stages, computed once per problem (``auto`` asks before running)."""
    if "two_level_table" not in problem.cache:
        problem.cache["two_level_table"] = stage_table(problem.contraction)
    return problem.cache["two_level_table"]


def _run_two_level(problem: Problem) -> MethodResult:
    """Method "dp" on a two-level cluster: the Python DP of :mod:`exactplace.methods.two_level`."""
    graph, cluster = problem.graph, problem.cluster
    overlap = bool(problem.option("overlap"))
    clock = time.perf_counter()
    info: dict = {"units": problem.contraction.num_units, "two_level": True}
    timings: dict[str, float] = {}
    try:
        table = _two_level_table(problem)
        info.update(ideals=table.num_ideals, pairs=len(table.pair_from))
        value, device = two_level_dp(graph, cluster, problem.contraction, overlap=overlap,
                                     deadline=problem.deadline, table=table)
    except TimeoutError:
        return _stopped(problem, Limit.TIME, info, timings, solver=TWO_LEVEL_SOLVER)
    except KeyboardInterrupt:
        return _stopped(problem, Limit.INTERRUPT, info, timings, solver=TWO_LEVEL_SOLVER)
    timings["dp"] = time.perf_counter() - clock
    if device is None:
        info["reason"] = (f"no two-level chain split fits ({memory_summary(graph, cluster)}); a non-contiguous "
                          "split may")
        return MethodResult(None, Status.INFEASIBLE, solver=TWO_LEVEL_SOLVER, timings=timings, info=info)
    bound = max_load(graph, cluster, device, overlap=overlap)
    if not math.isclose(bound, value, rel_tol=1e-9, abs_tol=1e-12):
        raise ExactplaceError(
            f"Method 'dp': the two-level DP's value {value!r} differs from the evaluator's {bound!r} for its own "
            "placement. This is a bug; please report it."
        )
    return MethodResult(device, Status.OPTIMAL, bound=bound, solver=TWO_LEVEL_SOLVER, timings=timings, info=info)
