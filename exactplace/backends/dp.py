"""The exact max-load DP over ideals (paper §5.1.1) and its linearization DPL (§5.1.2).

Both run the native core ``exactplace._native`` (C++17) on the units prepared by
:mod:`exactplace.backends.contraction`:

``dp``
    Enumerates every ideal of the unit DAG and returns a split of minimum max-load among
    *chain splits*: devices receive ``I1 \\ I0, I2 \\ I1, ...`` for a chain of ideals
    ``{} = I0 ⊆ I1 ⊆ ... ⊆ I(k+l) = all units`` (in any interleaving of accelerators and
    CPUs; a device may stay empty), each unit bringing its backward partners. Status
    OPTIMAL, with ``bound`` equal to the objective. Every forward part is contiguous
    (Definition 3.1); a contiguous split whose devices cannot be ordered (two devices
    sending each other data) is outside this search space, as in the paper.
``dpl``
    The same DP after adding a depth-first topological order of the units as artificial
    edges (:func:`~exactplace.backends.contraction.linearize`), so the ideals are the
    ``units + 1`` prefixes of that order: a heuristic (status FEASIBLE, no bound) that
    scales to very large graphs.

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
PipeDream schedule (FW + BW per device). The cluster must be homogeneous.

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

import math
import os
import time
from dataclasses import dataclass

import numpy as np

from exactplace.backends.contraction import Contraction, contract, linearize
from exactplace.backends.ideals import count_unit_ideals, memory_cap
from exactplace.core.cluster import Cluster
from exactplace.core.errors import ExactplaceError, ParameterError, TooManyIdealsError, check_param
from exactplace.core.placement import Status
from exactplace.evaluators import check_feasibility, max_load
from exactplace.evaluators.feasibility import contiguity_violations
from exactplace.methods.registry import Method, MethodResult, Problem, register

__all__ = ["AUTO_MAX_IDEALS", "DEFAULT_MEMORY_BUDGET", "DP", "DPL", "ideal_capacity"]

#: Bytes the DP's tables may take unless the ``memory_budget`` option says otherwise.
DEFAULT_MEMORY_BUDGET = 2 * 2**30

#: ``method="auto"`` picks ``dp`` only up to this many ideals (about a minute on two cores), else ``dpl``.
AUTO_MAX_IDEALS = 100_000

# The native core numbers ideals with 31-bit integers.
_NATIVE_MAX_IDEALS = 2**30 - 1


@dataclass(frozen=True)
class _Settings:
    overlap: bool
    threads: int
    memory_budget: float


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _is_flag(value: object) -> bool:
    return isinstance(value, (bool, np.bool_))


def _settings(problem: Problem, method: str) -> _Settings:
    """The validated options; ParameterError names the first bad one."""
    check_param(
        problem.cluster.is_homogeneous, "cluster", "solve",
        f"a homogeneous cluster (one accelerator memory size, speed 1) for method {method!r}", problem.cluster,
    )
    options = problem.options
    gpipe = options.get("gpipe", False)
    check_param(
        _is_flag(gpipe) and not gpipe, "gpipe", "solve",
        f"False for method {method!r} (it optimizes the PipeDream schedule, FW + BW per device)", gpipe,
    )
    overlap = options.get("overlap", False)
    check_param(_is_flag(overlap), "overlap", "solve", "True or False", overlap)
    threads = options.get("threads", _usable_cpus())
    check_param(
        isinstance(threads, (int, np.integer)) and not _is_flag(threads) and threads >= 1,
        "threads", "solve", "a positive integer", threads,
    )
    budget = options.get("memory_budget", DEFAULT_MEMORY_BUDGET)
    check_param(
        isinstance(budget, (int, float, np.integer, np.floating)) and not _is_flag(budget) and budget > 0,
        "memory_budget", "solve", "a positive number of bytes", budget,
    )
    return _Settings(bool(overlap), int(threads), float(budget))


def ideal_capacity(contraction: Contraction, cluster: Cluster, memory_budget: float) -> int:
    """The most ideals whose DP tables fit in ``memory_budget`` bytes (ignoring the lattice's edges).

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1)])
    >>> ideal_capacity(contract(g), Cluster(2, cpus=1), 2**20) > 1000
    True
    """
    from exactplace import _native

    per_ideal = _native.memory_estimate(contraction.num_units, cluster.accelerators, cluster.cpus, 1, 0)
    return int(min(memory_budget // per_ideal, _NATIVE_MAX_IDEALS))


def _gib(size: float) -> str:
    return f"{size / 2**30:.3g} GiB"


def _check_budget(contraction: Contraction, cluster: Cluster, budget: float, method: str) -> tuple[int, int]:
    """(ideals, covers), or TooManyIdealsError before anything big is allocated."""
    from exactplace import _native

    advice = ("raise the 'memory_budget' option" if method == "dpl"
              else "use method='dpl' (the linearized DP: one ideal per unit) or raise the 'memory_budget' option")
    capacity = ideal_capacity(contraction, cluster, budget)
    counted = count_unit_ideals(contraction, capacity)
    if counted is None:
        raise TooManyIdealsError(
            f"Method {method!r} would enumerate more than {capacity:,} ideals of the {contraction.num_units}-unit "
            f"graph, more than its memory budget of {_gib(budget)} holds; {advice}.",
            capacity + 1, capacity,
        )
    ideals, covers = counted
    need = _native.memory_estimate(contraction.num_units, cluster.accelerators, cluster.cpus, ideals, covers)
    if need > budget:
        raise TooManyIdealsError(
            f"Method {method!r} would enumerate {ideals:,} ideals, needing {_gib(need)}, more than its memory "
            f"budget of {_gib(budget)}; {advice}.",
            ideals, int(ideals * budget // need),
        )
    return ideals, covers


def _stopped(problem: Problem, limit: str, info: dict, timings: dict) -> MethodResult:
    """Stopped by the time limit or Ctrl-C: the warm start if it is feasible, else no solution."""
    warm = problem.warm_start
    if warm is not None and not check_feasibility(problem.graph, problem.cluster, warm, contiguous=False):
        return MethodResult(warm.copy(), Status.FEASIBLE, limit=limit, solver="native", timings=timings,
                            info={**info, "returned": "warm start"})
    return MethodResult(None, Status.NO_SOLUTION, limit=limit, solver="native", timings=timings, info=info)


def _run(problem: Problem, method: str) -> MethodResult:
    from exactplace import _native

    settings = _settings(problem, method)
    graph, cluster = problem.graph, problem.cluster
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    contraction = contract(graph, memory_cap(cluster))
    if method == "dpl":
        contraction = linearize(contraction)
    timings["contract"] = time.perf_counter() - clock
    info: dict = {"units": contraction.num_units, "orphans": contraction.orphans, "fused": contraction.fused,
                  "merged": contraction.merged}
    try:
        clock = time.perf_counter()
        ideals, covers = _check_budget(contraction, cluster, settings.memory_budget, method)
        timings["count"] = time.perf_counter() - clock
        info.update(ideals=ideals, covers=covers)
        remaining = math.inf if problem.deadline is None else problem.deadline - time.monotonic()
        if remaining <= 0:
            return _stopped(problem, "time", info, timings)
        out = _native.solve(
            contraction.num_units, contraction.cpu_time, contraction.acc_time, contraction.memory,
            contraction.supported, contraction.src, contraction.dst, contraction.group_cost,
            contraction.group_source, contraction.group_ptr, contraction.group_target,
            cluster.accelerators, cluster.cpus, memory_cap(cluster), settings.overlap, settings.threads,
            remaining, ideals,
        )
    except KeyboardInterrupt:
        return _stopped(problem, "interrupt", info, timings)
    except _native.TooManyIdeals as error:  # the native safety net; the count above comes first
        raise TooManyIdealsError(f"Method {method!r}: {error.args[0]}", *error.args[1:]) from None
    except ValueError as error:  # std::invalid_argument: input the Python side should never produce
        raise ParameterError(f"Method {method!r} rejected its input: {error}") from None
    timings.update(ideals=out["seconds_ideals"], dp=out["seconds_dp"])
    info.update(pairs=out["pairs"], threads=out["threads"])
    if out["status"] in ("time", "interrupt"):
        return _stopped(problem, out["status"], info, timings)
    if out["status"] == "infeasible":
        info["reason"] = "no chain split fits the accelerators' memory and support"
        status = Status.INFEASIBLE if method == "dp" else Status.NO_SOLUTION
        return MethodResult(None, status, solver="native", timings=timings, info=info)

    device = np.asarray(out["device"], dtype=np.int64)[contraction.unit]
    label = device * 2 + graph.backward.astype(np.int64)
    broken = {lab for lab, _ in contiguity_violations(graph, label)}
    if any(lab % 2 == 0 for lab in broken):
        raise ExactplaceError(
            f"Method {method!r} produced a non-contiguous forward part. This is a bug; please report it."
        )
    info.update(dp_value=out["value"], backward_contiguous=not broken)
    if method == "dpl":
        return MethodResult(device, Status.FEASIBLE, solver="native", timings=timings, info=info)
    # Optimal for the chain-split model; the bound is the evaluator's value of the optimum itself,
    # after checking that the native table and the independent evaluator agree on it.
    bound = max_load(graph, cluster, device, overlap=settings.overlap)
    if not math.isclose(bound, out["value"], rel_tol=1e-9, abs_tol=1e-12):
        raise ExactplaceError(
            f"Method {method!r}: the DP's value {out['value']!r} differs from the evaluator's {bound!r} "
            "for its own placement. This is a bug; please report it."
        )
    return MethodResult(device, Status.OPTIMAL, bound=bound, solver="native", timings=timings, info=info)


class _NativeDP(Method):
    """What "dp" and "dpl" share: the native core, its options, and how they run."""

    objectives = ("throughput",)
    requires = ("exactplace._native",)
    option_names = ("threads", "memory_budget")
    contiguous = False  # forward parts always; backward parts when the backward graph follows (module docstring)

    def run(self, problem: Problem) -> MethodResult:
        return _run(problem, self.name)

    @classmethod
    def suitable(cls, problem: Problem) -> bool:
        """Valid options (homogeneous cluster, no GPipe) and tables that fit the memory budget."""
        try:
            settings = _settings(problem, cls.name)
        except ParameterError:
            return False
        return cls._fits(problem, settings)

    @classmethod
    def _fits(cls, problem: Problem, settings: _Settings) -> bool:
        raise NotImplementedError


@register
class DP(_NativeDP):
    """The exact max-load DP over the ideals of the contracted forward graph (paper §5.1.1)."""

    name = "dp"
    exact = True
    description = "exact max-load DP over ideals (optimal among chain splits); needs few enough ideals"

    @classmethod
    def _fits(cls, problem: Problem, settings: _Settings) -> bool:
        """At most ``AUTO_MAX_IDEALS`` ideals, within the memory budget."""
        contraction = contract(problem.graph, memory_cap(problem.cluster))
        limit = min(AUTO_MAX_IDEALS, ideal_capacity(contraction, problem.cluster, settings.memory_budget))
        return count_unit_ideals(contraction, limit) is not None


@register
class DPL(_NativeDP):
    """The DP on a depth-first linearization of the contracted forward graph (paper §5.1.2)."""

    name = "dpl"
    exact = False
    description = "max-load DP over the prefixes of a DFS topological order (heuristic, fast on large graphs)"

    @classmethod
    def _fits(cls, problem: Problem, settings: _Settings) -> bool:
        """The chain's tables within the memory budget."""
        from exactplace import _native

        units = len(np.unique(problem.graph.color))  # an upper bound on the number of units
        k, cpus = problem.cluster.accelerators, problem.cluster.cpus
        return _native.memory_estimate(units, k, cpus, units + 1, units) <= settings.memory_budget
