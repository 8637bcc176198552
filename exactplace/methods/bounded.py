"""The bounded search over ideals ("bb"): exact among chain splits, for graphs too wide for the DP.

The same problem and stage loads as :class:`~exactplace.methods.dp.DP` (paper §5.1.1), solved by
the native branch, bound and remember search (``dp_native/bounded.hpp``) instead of enumerating
every ideal: a depth-first search on a threshold T over stages of load at most T (only maximal
ones without communication), with lower bounds at every state and a table of the states proven
to need more. DPL's split (on a homogeneous cluster) bounds the search from above. A time limit
or Ctrl-C returns the best split found with the best proven bound (a true gap).
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from exactplace.core.errors import ExactplaceError, ParameterError, SolverUnavailableError
from exactplace.core.params import Integer, Option
from exactplace.core.placement import Limit, Space, Status
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators import check_feasibility, max_load
from exactplace.evaluators.feasibility import Guarantees, contiguity_violations, memory_summary
from exactplace.methods.base import Method
from exactplace.methods.dp import DPL
from exactplace.methods.dp_sizing import accelerator_types
from exactplace.methods.rules import NO_GPIPE, Rule, check_rules
from exactplace.methods.trials import take_trial_result, trial_outlook, trial_verdict

__all__ = ["BB_RULES", "DEFAULT_BB", "BBSettings", "BoundedSearch"]

#: The native core's name, as ``Placement.solver`` reports it.
SOLVER = "native-bb"

#: Where ``auto``'s trial run leaves its result (or why the search does not suit) in ``Problem.cache``.
TRIAL_KEY = "bb:trial"


@dataclasses.dataclass(frozen=True)
class BBSettings:
    """The bounded search's tuning.

    Attributes
    ----------
    memo_limit : int
        States (ideal, devices left) whose proven bounds the search keeps; past it none are added.
    tolerance : float
        Relative gap at which the best split counts as certified (real-valued loads; integral ones
        close exactly); ``solve``'s ``rel_gap`` when larger.
    bisect_after : int
        Consecutive failed thresholds just above the bound after which the next threshold bisects
        towards the best split.
    stage_bytes : int
        Bytes the candidate stages on the search path may take; past it the search stops with its
        best split and bound (``limit=Limit.MEMORY``).
    dive_nodes : int
        Stage search steps per device of the greedy split tried before each threshold's search
        (Hoffmann's rule: the fullest stage found); 0 for none.
    random_dives : int
        Greedy splits tried just below the best one before the exact search, by positional weights
        perturbed at random.
    bidirectional : bool
        Without communication, search the reversed graph too, each threshold going to both
        directions in turn until one decides it (one is often far faster, and which one cannot be
        told in advance).
    first_budget : int
        Steps (states and stage search steps) each direction may take on a threshold before the
        other's turn; doubles every round. Each direction keeps half of ``memo_limit`` states.
    incumbent : bool
        Run DPL first (homogeneous clusters): its load bounds the search from above.
    auto_seconds : float
        The time ``method="auto"`` plans with when no time limit is given.
    trial_fraction : float
        The share of that time (or of the time left) ``auto`` gives a trial run; the search is
        chosen when the trial certifies, since its running time cannot be told in advance.
    """

    memo_limit: int = 1 << 22
    tolerance: float = 1e-9
    bisect_after: int = 2
    stage_bytes: int = 1 << 30
    dive_nodes: int = 20_000
    random_dives: int = 30
    bidirectional: bool = True
    first_budget: int = 10_000
    incumbent: bool = True
    auto_seconds: float = 60.0
    trial_fraction: float = 0.1


#: The settings the method runs with unless given others.
DEFAULT_BB = BBSettings()

MEMO_LIMIT = Option("memo_limit", Integer(low=0), DEFAULT_BB.memo_limit,
                    "states whose proven bounds the search keeps in memory")

#: A one-level cluster (communication priced per stage alone) and the PipeDream schedule.
BB_RULES: tuple[Rule, ...] = (
    Rule("cluster", "a one-level cluster{method} (its stage loads price communication per stage alone)",
         holds=lambda problem, method: not problem.cluster.is_two_level),
    NO_GPIPE,
)


def _incumbent(problem: Problem, overlap: bool, settings: BBSettings) -> tuple[np.ndarray | None, float]:
    """DPL's placement and its load (``None, inf`` without one, or off a homogeneous cluster)."""
    if not settings.incumbent or not problem.cluster.is_homogeneous:
        return None, math.inf
    try:
        placement = DPL().run(dataclasses.replace(problem, deadline=None))
    except ExactplaceError:
        return None, math.inf
    if placement.limit is Limit.INTERRUPT:
        raise KeyboardInterrupt
    device = placement.device
    if device is None or check_feasibility(problem.graph, problem.cluster, device):
        return None, math.inf
    return device, max_load(problem.graph, problem.cluster, device, overlap=overlap)


def _fields(problem: Problem, overlap: bool) -> tuple[dict, np.ndarray]:
    """The native request's fields for the contracted graph, and the cluster's accelerator per native one."""
    contraction, cluster = problem.contraction, problem.cluster
    used = cluster.for_nodes(contraction.num_units)
    if cluster.is_homogeneous:
        accelerators = np.arange(used.accelerators)
        devices = {"accelerators": used.accelerators, "memory_cap": cluster.memory_cap}
    else:
        types = accelerator_types(cluster, contraction.num_units)
        accelerators = types.accelerators
        devices = {"accelerators": len(accelerators), "memory_cap": float(types.memory.min()),
                   "type_count": types.counts, "type_memory": types.memory, "type_speed": types.speed}
    fields = dict(
        units=contraction.num_units, cpu_time=contraction.cpu_time, acc_time=contraction.acc_time,
        memory=contraction.memory, supported=contraction.supported, edge_src=contraction.src,
        edge_dst=contraction.dst, group_cost=contraction.group_cost, group_source=contraction.group_source,
        group_ptr=contraction.group_ptr, group_target=contraction.group_target, cpus=used.cpus, overlap=overlap,
        **devices,
    )
    return fields, accelerators


def _stopped(problem: Problem, limit: Limit, info: dict, timings: dict, bound: float | None,
             incumbent: np.ndarray | None) -> MethodResult:
    """Stopped with no split of its own: DPL's, else the warm start, else none (``solve`` then falls back)."""
    if incumbent is not None:
        return MethodResult(incumbent, Status.FEASIBLE, bound=bound, limit=limit, solver=SOLVER, timings=timings,
                            info={**info, "returned": "DPL incumbent"})
    warm = problem.warm_start
    if warm is not None and not check_feasibility(problem.graph, problem.cluster, warm):
        return MethodResult(warm.copy(), Status.FEASIBLE, bound=bound, limit=limit, solver=SOLVER, timings=timings,
                            info={**info, "returned": "warm start"})
    return MethodResult(None, Status.NO_SOLUTION, bound=bound, limit=limit, solver=SOLVER, timings=timings, info=info)


class BoundedSearch(Method):
    """Exact max-load chain split by a bounded search over ideals (branch, bound and remember).

    The search space and the loads are the DP's (:class:`~exactplace.methods.dp.DP`: chain splits
    of the contracted units, communication, memory, CPUs, colour classes, training pairs and
    heterogeneous accelerators), but the ideals are built on the fly: a depth-first search on a
    threshold T fills one device after another, keeps in a table the states (ideal, devices left)
    proven to need more than T, and prunes by lower bounds (least time left over the devices'
    capacity, pigeonhole bounds on the largest units, the largest unit). Status OPTIMAL with
    ``bound`` equal to the objective; on a time limit or Ctrl-C the best split (its own or DPL's)
    with the largest proven bound (``limit`` says which). Options: ``overlap``, ``memo_limit``.

    Examples
    --------
    >>> from exactplace import read_workload, workload_path
    >>> from exactplace.core.problem import Problem
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> r = BoundedSearch().run(Problem(w.graph, w.cluster, "throughput"))
    >>> r.status.value, round(r.bound, 6)
    ('optimal', 17.789906)
    """

    name = "bb"
    objectives = ("throughput",)
    exact = True
    space = Space.CHAIN
    requires = ("exactplace._native",)
    engine = SOLVER
    options = {"memo_limit": MEMO_LIMIT}
    guarantee = Guarantees(forward_contiguous=True, chain_order=True)
    description = "exact max-load chain split by a bounded search over ideals (wide graphs beyond the DP)"
    settings = DEFAULT_BB

    @classmethod
    def check(cls, problem: Problem) -> None:
        """A one-level cluster and the PipeDream schedule (no ``gpipe``)."""
        check_rules(problem, BB_RULES, cls)

    @classmethod
    def unsuited(cls, problem: Problem) -> str | None:
        """The native core lacks the search (an extension built from older sources), or a trial run
        for ``trial_fraction`` of the time left (``auto_seconds`` without a limit) does not certify."""
        from exactplace.native import load

        try:
            native = load()
        except SolverUnavailableError as error:
            return str(error)
        if not hasattr(native, "solve_bounded"):
            return "the native extension has no bounded search"
        horizon = cls.settings.auto_seconds if problem.deadline is None else problem.remaining()
        return trial_verdict(problem, TRIAL_KEY, cls.settings.trial_fraction * horizon,
                             "its running time is not known in advance", lambda trial: cls().run(trial),
                             lambda result: result.limit in (None, Limit.INTERRUPT),
                             "a trial run did not certify it in {seconds} s")

    @classmethod
    def outlook(cls, problem: Problem) -> str:
        """The trial run's ending when ``auto`` ran one, else no estimate."""
        return trial_outlook(problem, TRIAL_KEY) or "exact; no estimate of its time (auto runs a trial)"

    def run(self, problem: Problem) -> MethodResult:
        from exactplace.native import load, request

        trial = take_trial_result(problem, TRIAL_KEY)
        if trial is not None:  # auto's trial run certified (or was interrupted): its answer
            return trial
        native = load()
        if not hasattr(native, "solve_bounded"):
            raise SolverUnavailableError("The native extension has no bounded search; rebuild it.")
        graph, cluster = problem.graph, problem.cluster
        overlap = bool(problem.option("overlap"))
        timings: dict[str, float] = {}
        info: dict = {"units": problem.contraction.num_units}
        incumbent = None
        try:
            clock = time.perf_counter()
            incumbent, upper = _incumbent(problem, overlap, self.settings)
            timings["incumbent"] = time.perf_counter() - clock
            fields, accelerators = _fields(problem, overlap)
            remaining = problem.remaining()
            if remaining <= 0:
                return _stopped(problem, Limit.TIME, info, timings, None, incumbent)
            out = native.solve_bounded(
                request(**fields, time_limit=remaining, cutoff=upper),
                memo_limit=int(self.setting(problem, "memo_limit")),
                tolerance=max(self.settings.tolerance, problem.rel_gap),
                bisect_after=self.settings.bisect_after, stage_bytes=self.settings.stage_bytes,
                dive_nodes=self.settings.dive_nodes, random_dives=self.settings.random_dives,
                bidirectional=self.settings.bidirectional, first_budget=self.settings.first_budget)
        except KeyboardInterrupt:
            return _stopped(problem, Limit.INTERRUPT, info, timings, None, incumbent)
        except ValueError as error:  # std::invalid_argument
            raise ParameterError(f"Method {self.name!r} rejected its input: {error}") from None
        timings["search"] = out.seconds
        info.update(states=out.states, stages=out.stages, remembered=out.remembered, thresholds=out.thresholds,
                    search_bound=out.bound)
        if out.status == native.Status.infeasible:
            info["reason"] = f"no chain split fits ({memory_summary(graph, cluster)})"
            return MethodResult(None, Status.INFEASIBLE, solver=SOLVER, timings=timings, info=info)
        stopped = {native.Status.time: Limit.TIME, native.Status.interrupt: Limit.INTERRUPT}.get(out.status)
        if out.exhausted:
            stopped = Limit.MEMORY
        if out.device is None:
            return _stopped(problem, stopped or Limit.TIME, info, timings, out.bound, incumbent)
        device = np.asarray(out.device, dtype=np.int64)
        on_acc = device < len(accelerators)
        device = np.where(on_acc, accelerators[np.where(on_acc, device, 0)] if len(accelerators) else device,
                          device - len(accelerators) + cluster.accelerators)
        device = device[problem.contraction.unit]
        value = max_load(graph, cluster, device, overlap=overlap)
        if not math.isclose(value, out.value, rel_tol=1e-9, abs_tol=1e-12):
            raise ExactplaceError(f"Method {self.name!r}: the search's value {out.value!r} differs from the "
                                  f"evaluator's {value!r} for its own placement. This is a bug; please report it.")
        info["backward_contiguous"] = not contiguity_violations(graph, device * 2 + graph.backward.astype(np.int64))
        if stopped is not None:
            if incumbent is not None and max_load(graph, cluster, incumbent, overlap=overlap) < value:
                device = incumbent
                info["returned"] = "DPL incumbent"
            return MethodResult(device, Status.FEASIBLE, bound=out.bound, limit=stopped, solver=SOLVER,
                                timings=timings, info=info)
        # Certified within rounding (the bound is the value), or within a larger rel_gap (the bound proven).
        exact = value <= out.bound * (1 + self.settings.tolerance) + 1e-12
        return MethodResult(device, Status.OPTIMAL, bound=value if exact else min(value, out.bound), solver=SOLVER,
                            timings=timings, info=info)
