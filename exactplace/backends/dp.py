"""The exact max-load DP over ideals (paper §5.1.1) and its linearization DPL (§5.1.2).

Both run the native core ``exactplace._native`` (C++17) on the units prepared by
:mod:`exactplace.core.contraction`:

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
    edges (:func:`~exactplace.core.contraction.linearize`), so the ideals are the
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

With a time limit and no warm start, ``dp`` first runs DPL (a fraction of the DP's time) and
keeps its placement as the incumbent, so a DP stopped by the limit or Ctrl-C still returns
a placement (status ``feasible``, ``info["returned"] == "DPL incumbent"``).

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

from exactplace.backends.ideals import count_unit_ideals
from exactplace.core.cluster import Cluster
from exactplace.core.contraction import Contraction, linearize
from exactplace.core.errors import ExactplaceError, ParameterError, TooManyIdealsError, check_param
from exactplace.core.params import Option, Real
from exactplace.core.placement import Limit, Space, Status
from exactplace.evaluators import check_feasibility, max_load
from exactplace.evaluators.feasibility import Guarantees, contiguity_violations
from exactplace.methods.base import THREADS, Method, MethodResult, Problem, usable_cpus

__all__ = ["AUTO_MAX_IDEALS", "DEFAULT_MEMORY_BUDGET", "DP", "DPL", "ideal_capacity"]

#: Bytes the DP's tables may take unless the ``memory_budget`` option says otherwise.
DEFAULT_MEMORY_BUDGET = 2 * 2**30

#: ``method="auto"`` picks ``dp`` only up to this many ideals (about a minute on two cores), else ``dpl``.
AUTO_MAX_IDEALS = 100_000

# The native core numbers ideals with 31-bit integers.
_NATIVE_MAX_IDEALS = 2**30 - 1

#: The native core's name, as ``Placement.solver`` reports it.
SOLVER = "native-dp"

MEMORY_BUDGET = Option(
    "memory_budget", Real(low=2**12), DEFAULT_MEMORY_BUDGET,
    "bytes the DP's tables may take (at least 4 KiB); past it TooManyIdealsError is raised before allocating",
)


def ideal_capacity(contraction: Contraction, cluster: Cluster, memory_budget: float) -> int:
    """The most ideals whose DP tables fit in ``memory_budget`` bytes (ignoring the lattice's edges).

    >>> from exactplace.core.contraction import contract
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


def _stopped(problem: Problem, limit: Limit, info: dict, timings: dict,
             incumbent: np.ndarray | None = None) -> MethodResult:
    """Stopped by the time limit or Ctrl-C: the warm start if it is feasible, else the DPL incumbent, else none."""
    warm = problem.warm_start
    if warm is not None and not check_feasibility(problem.graph, problem.cluster, warm, contiguous=False):
        return MethodResult(warm.copy(), Status.FEASIBLE, limit=limit, solver=SOLVER, timings=timings,
                            info={**info, "returned": "warm start"})
    if incumbent is not None:
        return MethodResult(incumbent, Status.FEASIBLE, limit=limit, solver=SOLVER, timings=timings,
                            info={**info, "returned": "DPL incumbent"})
    return MethodResult(None, Status.NO_SOLUTION, limit=limit, solver=SOLVER, timings=timings, info=info)


def _units(problem: Problem, linear: bool) -> Contraction:
    """The contraction (shared by every method through the problem), linearized for DPL."""
    return linearize(problem.contraction) if linear else problem.contraction


def _count(problem: Problem, contraction: Contraction, limit: int, linear: bool) -> tuple[int, int] | None:
    """``count_unit_ideals`` memoized on the problem: an exact count, or "more than L", is reused."""
    key = "ideals:dpl" if linear else "ideals:dp"
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
    options = {"threads": THREADS, "memory_budget": MEMORY_BUDGET}
    # Forward parts are always contiguous and chained; backward parts when the backward graph
    # follows the forward one (module docstring), which the result reports in info.
    guarantee = Guarantees(forward_contiguous=True, chain_order=True)
    linear: bool = False

    @classmethod
    def check(cls, problem: Problem) -> None:
        """A homogeneous cluster and the PipeDream schedule (no ``gpipe``)."""
        check_param(
            problem.cluster.is_homogeneous, "cluster", "solve",
            f"a homogeneous cluster (one accelerator memory size, speed 1) for method {cls.name!r}", problem.cluster,
        )
        check_param(
            not problem.option("gpipe"), "gpipe", "solve",
            f"False for method {cls.name!r} (it optimizes the PipeDream schedule, FW + BW per device)",
            problem.option("gpipe"),
        )

    def _budget(self, problem: Problem, contraction: Contraction) -> tuple[int, int]:
        """(ideals, covers), or TooManyIdealsError before anything big is allocated."""
        from exactplace import _native

        budget = float(self.setting(problem, "memory_budget"))
        cluster = problem.cluster
        advice = ("raise the 'memory_budget' option" if self.linear
                  else "use method='dpl' (the linearized DP: one ideal per unit) or raise the 'memory_budget' option")
        capacity = ideal_capacity(contraction, cluster, budget)
        counted = _count(problem, contraction, capacity, self.linear)
        if counted is None:
            raise TooManyIdealsError(
                f"Method {self.name!r} would enumerate more than {capacity:,} ideals of the "
                f"{contraction.num_units}-unit graph, more than its memory budget of {_gib(budget)} holds; {advice}.",
                capacity + 1, capacity,
            )
        ideals, covers = counted
        need = _native.memory_estimate(contraction.num_units, cluster.accelerators, cluster.cpus, ideals, covers)
        if need > budget:
            raise TooManyIdealsError(
                f"Method {self.name!r} would enumerate {ideals:,} ideals, needing {_gib(need)}, more than its "
                f"memory budget of {_gib(budget)}; {advice}.",
                ideals, int(ideals * budget // need),
            )
        return ideals, covers

    def run(self, problem: Problem) -> MethodResult:
        from exactplace import _native

        graph, cluster = problem.graph, problem.cluster
        overlap = bool(problem.option("overlap"))
        threads = self.setting(problem, "threads") or usable_cpus()
        timings: dict[str, float] = {}
        clock = time.perf_counter()
        contraction = _units(problem, self.linear)
        timings["contract"] = time.perf_counter() - clock
        info: dict = {"units": contraction.num_units, "orphans": contraction.orphans, "fused": contraction.fused,
                      "merged": contraction.merged}
        incumbent = None
        if not self.linear and problem.deadline is not None and problem.warm_start is None:
            # A stopped DP still returns a placement: DPL's (one ideal per unit, fast), kept as the incumbent.
            clock = time.perf_counter()
            try:
                incumbent = DPL().run(dataclasses.replace(problem, deadline=None)).device
            except ExactplaceError:  # DPL's tables beyond the memory budget: no incumbent
                incumbent = None
            timings["incumbent"] = time.perf_counter() - clock
        try:
            clock = time.perf_counter()
            ideals, covers = self._budget(problem, contraction)
            timings["count"] = time.perf_counter() - clock
            info.update(ideals=ideals, covers=covers)
            remaining = math.inf if problem.deadline is None else problem.deadline - time.monotonic()
            if remaining <= 0:
                return _stopped(problem, Limit.TIME, info, timings, incumbent)
            out = _native.solve(
                contraction.num_units, contraction.cpu_time, contraction.acc_time, contraction.memory,
                contraction.supported, contraction.src, contraction.dst, contraction.group_cost,
                contraction.group_source, contraction.group_ptr, contraction.group_target,
                cluster.accelerators, cluster.cpus, cluster.memory_cap, overlap, int(threads),
                remaining, ideals,
            )
        except KeyboardInterrupt:
            return _stopped(problem, Limit.INTERRUPT, info, timings, incumbent)
        except _native.TooManyIdeals as error:  # the native safety net; the count above comes first
            raise TooManyIdealsError(f"Method {self.name!r}: {error.args[0]}", *error.args[1:]) from None
        except ValueError as error:  # std::invalid_argument: input the Python side should never produce
            raise ParameterError(f"Method {self.name!r} rejected its input: {error}") from None
        timings.update(ideals=out["seconds_ideals"], dp=out["seconds_dp"])
        info.update(pairs=out["pairs"], threads=out["threads"])
        if out["status"] in ("time", "interrupt"):
            return _stopped(problem, Limit(out["status"]), info, timings, incumbent)
        if out["status"] == "infeasible":
            info["reason"] = "no chain split fits the accelerators' memory and support"
            status = Status.NO_SOLUTION if self.linear else Status.INFEASIBLE
            return MethodResult(None, status, solver=SOLVER, timings=timings, info=info)

        device = np.asarray(out["device"], dtype=np.int64)[contraction.unit]
        label = device * 2 + graph.backward.astype(np.int64)
        broken = {lab for lab, _ in contiguity_violations(graph, label)}
        info.update(dp_value=out["value"], backward_contiguous=not broken)
        if self.linear:
            return MethodResult(device, Status.FEASIBLE, solver=SOLVER, timings=timings, info=info)
        # Optimal for the chain-split model; the bound is the evaluator's value of the optimum itself,
        # after checking that the native table and the independent evaluator agree on it.
        bound = max_load(graph, cluster, device, overlap=overlap)
        if not math.isclose(bound, out["value"], rel_tol=1e-9, abs_tol=1e-12):
            raise ExactplaceError(
                f"Method {self.name!r}: the DP's value {out['value']!r} differs from the evaluator's {bound!r} "
                "for its own placement. This is a bug; please report it."
            )
        return MethodResult(device, Status.OPTIMAL, bound=bound, solver=SOLVER, timings=timings, info=info)


class DP(_NativeDP):
    """The exact max-load DP over the ideals of the contracted forward graph (paper §5.1.1)."""

    name = "dp"
    exact = True
    space = Space.CHAIN
    description = "exact max-load DP over ideals (optimal among chain splits); needs few enough ideals"

    @classmethod
    def unsuited(cls, problem: Problem) -> str | None:
        """More than ``AUTO_MAX_IDEALS`` ideals, or tables beyond the memory budget."""
        budget = float(cls.setting(problem, "memory_budget"))
        contraction = _units(problem, False)
        limit = min(AUTO_MAX_IDEALS, ideal_capacity(contraction, problem.cluster, budget))
        if _count(problem, contraction, limit, False) is None:
            return f"more than {limit:,} ideals (auto's limit, within the memory budget)"
        return None


class DPL(_NativeDP):
    """The DP on a depth-first linearization of the contracted forward graph (paper §5.1.2)."""

    name = "dpl"
    linear = True
    description = "max-load DP over the prefixes of a DFS topological order (heuristic, fast on large graphs)"

    @classmethod
    def unsuited(cls, problem: Problem) -> str | None:
        """The chain's tables beyond the memory budget."""
        from exactplace import _native

        units = len(np.unique(problem.graph.color))  # an upper bound on the number of units
        k, cpus = problem.cluster.accelerators, problem.cluster.cpus
        if _native.memory_estimate(units, k, cpus, units + 1, units) > float(cls.setting(problem, "memory_budget")):
            return "its tables exceed the memory budget"
        return None
