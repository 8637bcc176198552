"""The exact max-load DP over ideals (paper §5.1.1) and its linearization DPL (§5.1.2).

Both run the native core ``exactplace._native`` (C++17) on the units prepared by
:mod:`exactplace.core.contraction`. ``dp`` (:class:`DP`) returns a split of minimum max-load
among chain splits (status OPTIMAL); ``dpl`` (:class:`DPL`) runs the DP over the prefixes of one
depth-first order, a heuristic that scales to very large graphs (status FEASIBLE). ``dp`` also
takes heterogeneous clusters, replicated stages (paper Appendix C.2) and two-level clusters
(Appendix C.3, :mod:`exactplace.methods.two_level`). The tables' memory, ``auto``'s time
estimate and its trial run are :mod:`exactplace.methods.dp_sizing`'s, tuned by
:class:`~exactplace.methods.dp_sizing.DPSettings`; the cross-option rules are declared in
:mod:`exactplace.methods.rules`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import ClassVar

import numpy as np

from exactplace.core.contraction import Contraction, dfs_topological_order
from exactplace.core.errors import ExactplaceError, ParameterError, TooManyIdealsError
from exactplace.core.params import Boolean, Option, Real
from exactplace.core.placement import Limit, Space, Status
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators import check_feasibility, max_load
from exactplace.evaluators.feasibility import Guarantees, contiguity_violations, memory_summary
from exactplace.methods.base import THREADS, Method, usable_cpus
from exactplace.methods.dp_sizing import (
    DEFAULT_DP,
    TRIAL_KEY,
    AcceleratorTypes,
    DPSettings,
    accelerator_types,
    auto_verdict,
    check_table_memory,
    dp_seconds,
    format_bytes,
    ideal_capacity,
    known_ideals,
    replicated_cluster,
)
from exactplace.methods.rules import DP_RULES, DPL_RULES, Rule, check_rules
from exactplace.methods.trials import take_trial_result, trial_outlook
from exactplace.methods.two_level import StageTable, stage_table, two_level_dp

__all__ = ["DEFAULT_DP", "DP", "DPL", "AcceleratorTypes", "DPSettings", "accelerator_types", "dp_seconds",
           "ideal_capacity"]

#: The native core's name, as ``Placement.solver`` reports it.
SOLVER = "native-dp"
#: The two-level DP runs in Python (:mod:`exactplace.methods.two_level`).
TWO_LEVEL_SOLVER = "python-two-level-dp"

#: The smallest memory budget the option takes.
_MIN_MEMORY_BUDGET = 2**12

MEMORY_BUDGET = Option(
    "memory_budget", Real(low=_MIN_MEMORY_BUDGET), DEFAULT_DP.memory_budget,
    f"bytes the DP's tables may take (at least {format_bytes(_MIN_MEMORY_BUDGET)}); past it TooManyIdealsError is "
    "raised before allocating",
)


REPLICATION = Option(
    "replication", Boolean(), False,
    "stages may run data-parallel on r identical accelerators (paper Appendix C.2): load "
    "(compute + comm + sync (r-1)/r) / r; homogeneous clusters, no overlap",
)


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


def _incumbent(problem: Problem, overlap: bool, settings: DPSettings) -> tuple[np.ndarray | None, float]:
    """DPL's placement (None if it has none) and the DP's cutoff: a little above its load, ``inf`` without one.

    The cutoff is 1e-6 relative above the evaluator's load, far beyond the rounding by which the
    native core's sums of the same split may differ, so the split itself stays below it.
    """
    try:
        placement = DPL.with_settings(settings)().run(dataclasses.replace(problem, deadline=None))
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
    units (slow on a million-unit chain).
    """
    units, src, dst = contraction.num_units, contraction.src, contraction.dst
    if units > 1 and np.unique(src[dst == src + 1]).size == units - 1:
        return np.arange(units, dtype=np.int64)
    return dfs_topological_order(units, src, dst)


class _NativeDP(Method):
    """What "dp" and "dpl" share: the native core, its options, its rules and how they run.

    A method stopped by the time limit before it has any placement returns the warm start if it
    is feasible; else ``solve`` falls back to the greedy placement (status FEASIBLE,
    ``limit=Limit.TIME``, ``info["returned"]`` says so).

    Contiguity of training graphs: a device's backward part is the set of backward partners of its
    forward part. It is contiguous whenever the backward graph follows the forward graph (mirrored,
    as in the ONNX training graphs, or copied, as in PipeDream's layer graphs: every published
    workload), but arbitrary backward edges can break it, so both methods declare ``contiguous =
    False`` (``solve`` does not reject such placements) and report ``info["backward_contiguous"]``.
    Forward contiguity is checked on every result.

    Options (``solve(..., option=value)``): ``overlap`` (accelerator load = max(communication,
    compute), Appendix C.1), ``threads`` (default: the usable CPUs) and ``memory_budget`` (bytes the
    DP's tables may take, default ``DPSettings.memory_budget``; beyond it :class:`TooManyIdealsError`
    is raised before any table is allocated). ``gpipe=True`` is rejected: the DP optimizes the
    PipeDream schedule (FW + BW per device).

    Attributes
    ----------
    settings : DPSettings
        The tuning the class's runs and ``auto``'s verdicts use (default :data:`DEFAULT_DP`);
        :meth:`with_settings` gives the method with others.
    rules : tuple of Rule
        The cross-option rules :meth:`check` enforces (:mod:`exactplace.methods.rules`).
    """

    objectives = ("throughput",)
    requires = ("exactplace._native",)
    engine = SOLVER
    options = {"threads": THREADS, "memory_budget": MEMORY_BUDGET}
    # Forward parts are always contiguous and chained; backward parts when the backward graph
    # follows the forward one (see above), which the result reports in info.
    guarantee = Guarantees(forward_contiguous=True, chain_order=True)
    linear: bool = False
    settings: ClassVar[DPSettings] = DEFAULT_DP
    rules: ClassVar[tuple[Rule, ...]] = DP_RULES

    @classmethod
    def with_settings(cls, settings: DPSettings) -> type[_NativeDP]:
        """This method tuned by ``settings``: a subclass of the same name (the class itself when they are its own).

        >>> import dataclasses
        >>> quick = DP.with_settings(dataclasses.replace(DEFAULT_DP, trial_fraction=0.0))
        >>> quick.name, quick.settings.trial_fraction, issubclass(quick, DP), DP.with_settings(DEFAULT_DP) is DP
        ('dp', 0.0, True, True)
        """
        if settings == cls.settings:
            return cls
        return type(cls.__name__, (cls,), {"settings": settings, "__doc__": cls.__doc__, "__module__": cls.__module__})

    @classmethod
    def memory_budget(cls, problem: Problem) -> float:
        """Bytes the tables may take: the ``memory_budget`` option, else ``settings.memory_budget``."""
        return float(problem.options.get("memory_budget", cls.settings.memory_budget))

    @classmethod
    def check(cls, problem: Problem) -> None:
        """The class's ``rules``: the PipeDream schedule (no ``gpipe``); for ``dpl``, a homogeneous one-level
        cluster; on a two-level cluster, identical accelerators and no replication; replication's own."""
        check_rules(problem, cls.rules, cls)

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
            ideals, covers = check_table_memory(  # first: a refusal costs nothing else
                self.name, problem, contraction, self.memory_budget(problem), linear=self.linear,
                replication=replication)
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
                # One replica per stage: a replicated split too.
                incumbent, cutoff = _incumbent(problem, overlap, self.settings)
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
        else:  # DPL out of time: the check (slow on a million nodes) would only add to the overrun
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
    """The exact max-load DP over the ideals of the contracted forward graph (paper §5.1.1).

    Enumerates every ideal of the unit DAG and returns a split of minimum max-load among *chain
    splits*: devices receive ``I1 \\ I0, I2 \\ I1, ...`` for a chain of ideals ``{} = I0 ⊆ I1 ⊆ ... ⊆
    I(k+l) = all units`` (in any interleaving of accelerators and CPUs; a device may stay empty),
    each unit bringing its backward partners. Status OPTIMAL, with ``bound`` equal to the objective.
    DPL's split is computed first: the DP searches only below its load (the native ``cutoff``),
    never trying a heavier stage and skipping the ideals that no better split can pass through
    (lower bounds from each unit's least time per device, and without communication the devices an
    ideal's covers need), and a stopped DP returns it. The optimum is the same. Every forward part
    is contiguous (Definition 3.1); a contiguous split whose devices cannot be ordered (two devices
    sending each other data) is outside this search space, as in the paper. When the unit DAG is
    itself a chain (its ideals are its prefixes), the chain DP of :class:`DPL` solves it, exactly.

    Heterogeneous clusters: the accelerators are grouped into *types* of equal memory and speed
    (:func:`accelerator_types`), and the DP's state counts the accelerators used of each type:
    ``(cpus + 1) * prod(count + 1)`` table entries per ideal instead of ``(cpus + 1) * (k + 1)``. A
    device of type ``t`` holding ``S`` has load ``acc(S) / speed_t`` plus its communication and must
    fit ``S`` in the type's memory; the result names the actual accelerator of each node. A
    homogeneous cluster is one type of speed 1: the DP of the paper. Too many types for the memory
    budget raise :class:`TooManyIdealsError`.

    Replication (option ``replication=True``; paper Appendix C.2, PipeDream's data-parallel stages):
    a stage may run on ``r`` identical accelerators, with load ``(compute + communication + sync *
    (r - 1) / r) / r`` (``Node.sync`` summed over the stage), and the replicas of all stages add up to
    at most the cluster's accelerators. The DP's accelerator count then counts replicas: DP[I][a]
    takes max(DP[J][a - r], load_r(I \\ J)) for every ``r <= a``, in a separate single-threaded walk
    (``dp_native/replicated.cpp``, ``ReplicatedDP``), so the plain DP is untouched. The result states
    ``Placement.replicas``. It needs a homogeneous cluster (the replicas are anonymous identical
    accelerators) and refuses ``overlap``; the accelerators are not capped at one per unit.

    Two-level clusters (``Cluster.machines`` with ``inter_machine_cost > 1``; paper Appendix C.3): a
    stage's communication then depends on which machine its partners are on, so the native DP's
    per-stage loads do not apply, and the two-level DP of :mod:`exactplace.methods.two_level` runs
    instead (blocks of consecutive stages per machine, in Python, for small lattices:
    ``DPSettings.two_level_max_*``).

    Examples
    --------
    >>> from exactplace import read_workload, solve, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> p = solve(w, method="dp")
    >>> p.status.value, round(p.objective, 6), p.gap, p.info["ideals"]
    ('optimal', 17.789906, 0.0, 30)
    """

    name = "dp"
    exact = True
    space = Space.CHAIN
    options = {**_NativeDP.options, "replication": REPLICATION}
    description = "exact max-load DP over ideals (optimal among chain splits); needs few enough ideals"

    def run(self, problem: Problem) -> MethodResult:
        trial = take_trial_result(problem, TRIAL_KEY)
        if trial is not None:  # auto's trial run finished (or was interrupted): its answer
            return trial
        if problem.cluster.is_two_level:
            return _run_two_level(problem, self.settings)
        return super().run(problem)

    @classmethod
    def unsuited(cls, problem: Problem) -> str | None:
        """More ideals than the memory budget holds, or than the DP is expected to finish in the time
        left unless a trial run finishes (:func:`~exactplace.methods.dp_sizing.auto_verdict`, with the
        class's ``settings``); on a two-level cluster, a lattice beyond the Python DP's limits."""
        if problem.cluster.is_two_level:
            try:
                _two_level_table(problem, cls.settings)
            except TooManyIdealsError as error:
                return str(error)
            return None
        threads = int(cls.setting(problem, "threads") or usable_cpus())
        return auto_verdict(problem, cls.settings, cls.memory_budget(problem), threads, lambda trial: cls().run(trial))

    @classmethod
    def outlook(cls, problem: Problem) -> str:
        """The trial run's ending when ``auto`` ran one, else the ideal count and the time expected for it."""
        tried = trial_outlook(problem, TRIAL_KEY)
        if tried is not None or problem.cluster.is_two_level:
            return tried or "exact over the two-level chain splits"
        ideals = known_ideals(problem)
        if ideals is None:
            return "exact; no estimate of its time"
        threads = int(cls.setting(problem, "threads") or usable_cpus())
        return f"exact; {ideals:,} ideals, about {dp_seconds(ideals, threads, cls.settings):.2g} s before skipping"


class DPL(_NativeDP):
    """The DP on a depth-first linearization of the contracted forward graph (paper §5.1.2).

    The same DP after adding a depth-first topological order of the units as artificial edges
    (:func:`~exactplace.core.contraction.linearize`), so the ideals are the ``units + 1`` prefixes
    of that order: a heuristic (status FEASIBLE, no bound) that scales to very large graphs. Over
    prefixes the DP is a 1-D partition problem, which the native chain DP (``dp_native/chain.hpp``)
    solves by a parametric search on the max-load in near-linear time per step, with the same
    optimum as the general DP on the linearized graph (checked in the tests); its tables grow
    linearly with the units. The chain DP treats the accelerators as identical, so it takes a
    homogeneous one-level cluster only.

    >>> from exactplace import read_workload, solve, workload_path
    >>> solve(read_workload(workload_path("layer_bert24_inference")), method="dpl").status.value
    'feasible'
    """

    name = "dpl"
    linear = True
    rules = DPL_RULES
    description = "max-load DP over the prefixes of a DFS topological order (heuristic, fast on large graphs)"

    @classmethod
    def unsuited(cls, problem: Problem) -> str | None:
        """The chain DP's tables beyond the memory budget."""
        from exactplace.native import load

        units = len(np.unique(problem.graph.color))  # an upper bound on the number of units
        cpus = min(problem.cluster.cpus, units)
        if load().chain_memory_estimate(units, cpus, problem.graph.m) > cls.memory_budget(problem):
            return "its tables exceed the memory budget"
        return None


def _two_level_table(problem: Problem, settings: DPSettings) -> StageTable:
    """The two-level DP's stages, computed once per problem (``auto`` asks before running)."""
    if "two_level_table" not in problem.cache:
        problem.cache["two_level_table"] = stage_table(problem.contraction, settings)
    return problem.cache["two_level_table"]


def _run_two_level(problem: Problem, settings: DPSettings) -> MethodResult:
    """Method "dp" on a two-level cluster: the Python DP of :mod:`exactplace.methods.two_level`."""
    graph, cluster = problem.graph, problem.cluster
    overlap = bool(problem.option("overlap"))
    clock = time.perf_counter()
    info: dict = {"units": problem.contraction.num_units, "two_level": True}
    timings: dict[str, float] = {}
    try:
        table = _two_level_table(problem, settings)
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
