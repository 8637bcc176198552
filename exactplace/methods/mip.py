"""``method="mip"``: the max-load IP (``formulations/throughput.py``) on any solver adapter.

``contiguous=True`` (default) solves the chain-of-ideals IP, whose space is the DP's
(``Space.CHAIN``): the optimum equals the DP's, and the MIP adds a certified gap at a time
limit and the variants the DP lacks (``gpipe``). ``contiguous=False`` solves the assignment
IP over colour classes (``Space.ANY``). The result's ``bound`` is the solver's dual bound
over that space, ``trace`` its (seconds since ``solve`` began, incumbent, bound) progress; the objective is the
evaluator's, and a solver objective that disagrees with it beyond rounding is raised as a bug.

Warm start: the ``warm_start`` given to ``solve``, else (``warm_start="auto"``, the default)
the DP's optimum when the DP fits (when ``method="auto"`` would run it: tables in the memory budget
and few enough ideals to finish in the time left, ``dp.dp_seconds``, or a trial run for
``dp.TRIAL_FRACTION`` of it finishes; a fraction of a second on every shared workload; so the
non-contiguous result is never above the contiguous optimum), else DPL, else greedy; a start outside the IP's space (a
greedy split that is not a chain) is dropped and ``info["warm_start"]`` says so.
``warm_start=None`` starts from nothing.

Non-contiguous bound: before the IP, up to 5% of the time (at most 30 s) goes to the packing relaxation's proven
bound (:mod:`exactplace.bounds.packing`; option ``packing_bound``), which becomes ``L``'s lower bound;
``info["packing_bound"]`` and ``timings["packing_bound"]`` say what it gave and took. When the start's compute-only
max load shows that bound cannot certify it (it is a placement of the relaxation, so the bound is at most that load:
``_packing_short``) and the gap probe runs, the packing phase waits until after the probe and is skipped when the
probe certifies. When it cannot certify and no probe runs (HiGHS on at most :data:`HIGHS_MAX_ACCELERATORS`
accelerators, a pinned solver), its time is kept at the end of the limit and it runs there only if the solver did not
certify, its bound then joining the solver's: as ``L``'s lower bound it slows HiGHS (see below), and where the solver
certifies its time would be lost. The DP's chain optimum is only the warm start, never a bound of any split.

Polished start: then up to 10% of the time left (at most 30 s) goes to improving the warm start by exact re-optimization
of device pairs and triples (:mod:`exactplace.improvers.polish`; option ``polish``), one search per thread: the IP's
solver finds good splits late (CP-SAT with two workers runs no neighbourhood search of its own), while the polished
start reaches 1% of the packing bound within seconds on the ResNet-50 layer graphs. ``info["polish"]`` (start, value,
neighbourhoods solved and improved, why it ended) and ``timings["polish"]`` say what it gave and took; the polished
placement is the warm start. The trace shows both phases: the packing bound when it is proven, then the start's value
and each polish improvement (the evaluator's loads) against it, then the solver's progress (:func:`best_known`). A
certified gap is often reached there, before the solver starts (layer_gnmt_training's, for one). Where ``L``'s lower
bound is proven before the polish (the packing bound), the polish is the road to a certificate: it gets up to 25% of the
time (:data:`POLISH_BOUNDED_FRACTION`), its searches double their sub-IPs' limit where a sweep stalls rather than end,
and they end as soon as the bound certifies the best split (``info["polish"]["ended"] == "enough"``). Where a search
lands depends on which undecided sub-IP found what, so several searches that escalate reach a certificate far more often
than a single one that gives up. The result is still the evaluator's. Where no relay runs, a lower bound of ``L`` is
proven (the packing bound, the probe's) and two threads or more are given, the polish goes on beside the solver
(:class:`~exactplace.improvers.polish.Alongside`, the solver on one thread fewer), and its split within ``rel_gap`` of
that bound stops the solve: the split comes back certified by the bound (``info["beside_solver"]["polish"]``).

Race (option ``race``): where HiGHS solves the IP with nothing beside it (no relay; no lower bound of ``L`` for the
polish to aim at) and two threads or more are given, a second HiGHS with another seed solves it on the core HiGHS's
branch-and-bound leaves idle (:mod:`exactplace.improvers.race`): the first to certify stops the other, the result
keeps the better split and the higher bound, ``info["race"]`` says what the second did. HiGHS's time to a gap swings
widely with its seed (op_bert6_inference's, for one), so the sooner of two seeds is often well ahead of one.
Where the set bound applies (option ``set_bound``; identical accelerators on one machine, plain loads) and the start
gives it a split to aim at, it takes that core instead (:func:`~exactplace.improvers.race.beside_bound`): column
generation over device sets aimed at ``U (1 - rel_gap)`` for HiGHS's best split ``U`` as HiGHS reports it, with all
the time left; its refutation stops HiGHS, whose split it certifies (``info["certified_by"] == "set_bound"``), and
its bound joins HiGHS's either way (``info["set_bound"]["beside"] == "solver"``). On op_bert6_inference the
relaxation is all but exact (its limit lies at the optimum, where HiGHS's bound stays below until its tree is done),
so the set bound certifies there well before HiGHS or the race would.

Gap probe: then, when the IP's solver is CP-SAT (``"auto"`` on more than :data:`HIGHS_MAX_ACCELERATORS`
accelerators) and the packing bound does not already close ``rel_gap``, up to 10% of the time left (at most 30 s)
goes to decision probes on CP-SAT with one worker, "is any split 1%, then ``rel_gap``, better than the start?"
(:mod:`exactplace.bounds.gap_probe`; option ``gap_probe``). A refutation is a proven bound: when it closes
``rel_gap`` the start comes back optimal with ``info["certified_by"] == "gap_probe"`` and no IP is solved, else it
becomes ``L``'s lower bound. A split a probe finds replaces the start. ``info["gap_probe"]`` and
``timings["gap_probe"]`` say what it gave and took. Where the packing bound cannot certify the start (the packing
phase is put off) and two threads or more are given, the probe does not wait for the polish: it asks from the start
in a thread of its own, beside the polish (:func:`~exactplace.bounds.gap_probe.probe_beside_polish`; a refutation
that certifies stops the polish, a polished split below the probe's threshold stops the probe, which goes on from the
better split). Where the start is already optimal (the DP's split on op_resnet50_training), the certificate then
comes without waiting for the polish. Both timings then overlap.

Relay: with ``solver="auto"`` on more than :data:`HIGHS_MAX_ACCELERATORS` accelerators and over
:data:`CPSAT_LEG_SECONDS` left when the IP starts, CP-SAT gets that many seconds; when it has not closed ``rel_gap``
by then, HiGHS solves the IP for the rest of the time limit, from CP-SAT's best split (the warm start) and bound
(``L``'s lower bound). CP-SAT is fast to good splits and, on some graphs, to proofs; where its bound stays at the
LP's (the ResNet-50 layer graphs), HiGHS's branching and cuts move it. The result's ``solver`` is then
``"cpsat+highs"``, ``info["relay"]`` says where CP-SAT left off and ``timings["cpsat_leg"]`` what it took; the trace
is one run across both. HiGHS's branch-and-bound keeps one core busy; with ``polish`` on and two threads or more, the
polish goes on beside it on the other (:class:`~exactplace.improvers.polish.Alongside`: from CP-SAT's split, doubling
its sub-IPs' limit whenever a sweep stalls), stopped when HiGHS ends; its split is the result's when better than
HiGHS's (``info["relay"]["polish"]``, ``"taken"``), HiGHS's bound holds either way. HiGHS finds few splits of its own
here (on layer_resnet50_inference it can keep CP-SAT's split for most of a ten-minute run), so the polish beside it
is what narrows the gap on the ResNet-50 inference and InceptionV3 layer graphs.

Set bound (``set_bound``, on by default): in the relay, between CP-SAT's leg and HiGHS's, :data:`SET_BOUND_FRACTION`
of the time left goes to the device-set relaxation (:mod:`exactplace.bounds.device_sets`; identical accelerators on
one machine, plain loads): column generation over whole device sets, whose loads charge communication exactly where
the assignment IP's LP charges none, with the polish beside it. It aims at ``U (1 - rel_gap)`` for the best split
``U`` so far (CP-SAT's, then the polish's), branching beyond the relaxation's limit (a split the branching finds is
taken when better, ``info["set_bound"]["split"]``): refuted, the best split comes back optimal
(``info["certified_by"] == "set_bound"``, no HiGHS leg); else its highest refuted threshold becomes ``L``'s lower
bound for HiGHS's leg (a split found later within ``rel_gap`` of it, say the polish's at the end of that leg, comes
back optimal, ``info["certified_by"]`` naming the bound's prover); when not even its first threshold is decided
within a quarter of its time it gives up and HiGHS gets the rest. ``info["set_bound"]`` and ``timings["set_bound"]``
say what it gave and took. It narrows the ten-minute gap on the ResNet-50 layer graphs (its limit lies above HiGHS's
bound there) and certifies the held-out BERT-12 operator graph; on the InceptionV3 layer graphs and BERT-12 training
it proves nothing. With
branching, the bound can pass the relaxation's limit, and the branching at ``L / (1 - rel_gap)`` meets a split within
it by its dive (column fixing) seconds after it starts. The polish beside the bound restarts from roundings of the
bound's master solutions (``offer``; ``info["relay"]["polish"]["starts"]``): on the ResNet-50 layer graphs the splits
that certify lie there, not where CP-SAT's split leads the polish.

``L``'s lower bound in the IP: CP-SAT takes it as ``L``'s variable bound, which helps its search. HiGHS does not
(``Capabilities.objective_floor``): with the floor every node's LP sits at it until the node's loads pass it, its
pseudocosts and strong branching see no change, and its bound never leaves the floor (it left HiGHS's bound lower on
LayerGraphs_inceptionv3_inference's relay, and op_bert6_inference's IP slower to 1%). So HiGHS solves the IP without
it, stopped once its split is within ``rel_gap`` of the bound (the split is then certified by the bound, as the
polish's is), except in a race, whose sides stop each other only when one decides.

How a formulation plugs in: build a ``Model`` in ``formulations/`` with ``decode`` /
``encode`` / ``bound_slack`` as :class:`~exactplace.formulations.throughput.ThroughputIP` and
:class:`~exactplace.formulations.latency.LatencyIP` do, then call
:func:`exactplace.solvers.program.solve_ip`: it runs the solver with the problem's deadline, gap,
threads, log and progress, and turns the solver's result into a :class:`MethodResult`.

Examples
--------
>>> from exactplace import read_workload, solve, workload_path
>>> w = read_workload(workload_path("layer_bert24_inference"))
>>> p = solve(w, method="mip", solver="highs")
>>> p.status.value, round(p.objective, 4), p.space.value, p.gap <= 0.01
('optimal', 17.7899, 'chain', True)
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from exactplace.core.errors import ExactplaceError, TooLargeError, check_param
from exactplace.core.interrupt import sets_at_most
from exactplace.core.params import Boolean, Choice, Integer, Option
from exactplace.core.placement import Limit, Space, Status, TracePoint
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators import max_load
from exactplace.evaluators.feasibility import Guarantees, check_feasibility
from exactplace.evaluators.max_load import device_loads
from exactplace.improvers.race import Racer, beside_bound, race
from exactplace.methods.base import THREADS, Method, usable_cpus
from exactplace.methods.registry import start_from
from exactplace.solvers import get_solver
from exactplace.solvers.program import progress_printer, solve_ip

if TYPE_CHECKING:
    from collections.abc import Callable

    from exactplace.bounds.device_sets import SetBound
    from exactplace.bounds.gap_probe import Probe
    from exactplace.core.cluster import Cluster
    from exactplace.core.graph import Graph
    from exactplace.improvers.polish import Alongside, Polished

__all__ = ["DEFAULT_TIME_LIMIT", "MIP", "default_start", "with_default_limit"]

SOLVER_NAMES = ("auto", "highs", "cpsat", "scip", "cbc", "gurobi")

#: The largest program (estimated nonzeros) the method builds: beyond, building it alone takes longer
#: than a useful time limit, and no solver here reaches a useful bound (measured:
#: benchmarks/bench_time_limits.py). It refuses such an input at once, saying what to use instead.
MAX_NONZEROS = 2_000_000

#: ``solver="auto"`` runs the non-contiguous IP on HiGHS when the cluster has at most this many
#: accelerators, else on CP-SAT: on the three-accelerator graphs HiGHS's cuts lift the bound where CP-SAT's
#: stays at the LP's (op_bert6_inference, bert_l-6_training); on six, CP-SAT is ahead on nearly every graph
#: where both were run (op_resnet50_training, layer_gnmt_training, the ResNet-50 layer graphs; the one
#: exception seen is bert_l-12_inference).
HIGHS_MAX_ACCELERATORS = 3

#: ``solver="auto"`` on more than :data:`HIGHS_MAX_ACCELERATORS` accelerators, with more time than this
#: left when the IP starts, gives CP-SAT the IP's first this many seconds and then hands its split and bound
#: to HiGHS for the rest: CP-SAT's wins on six accelerators come within them, and after them its bound stays
#: at the LP's on the ResNet-50 layer graphs, where HiGHS's branching and cuts still move it.
CPSAT_LEG_SECONDS = 60.0

#: At most this many seconds go to the packing relaxation's bound before a non-contiguous solve.
PACKING_SECONDS = 30.0

#: ... and at most this fraction of the time left (the packing phase delays the IP itself).
PACKING_FRACTION = 0.05

#: At most this many seconds go to polishing the warm start before a non-contiguous solve ...
POLISH_SECONDS = 30.0

#: ... and at most this fraction of the time left after the packing phase ...
POLISH_FRACTION = 0.1

#: ... or this fraction where ``L``'s lower bound is proven already: the polish, one search per thread, ends once its
#: split is certified by that bound, so the time is spent only where it has not got there.
POLISH_BOUNDED_FRACTION = 0.25

#: In the relay, after CP-SAT's leg, this fraction of the time left goes to the device-set relaxation's bound
#: (HiGHS's leg, with the polish beside it, gets the rest): on the ResNet-50 layer graphs it needs minutes to reach
#: its limit, which lies above what HiGHS's bound on the assignment IP reaches in ten minutes.
SET_BOUND_FRACTION = 0.85

#: At most this many seconds go to the gap probe after the polish ...
PROBE_SECONDS = 30.0

#: ... and at most this fraction of the time left then.
PROBE_FRACTION = 0.1


def _packing_short(graph: Graph, cluster: Cluster, start: np.ndarray, rel_gap: float, *, overlap: bool = False,
                   gpipe: bool = False) -> bool:
    """Whether the packing relaxation's bound is sure to fall short of certifying ``start`` within ``rel_gap``: the
    start is a placement of the relaxation too (communication dropped), so its compute-only max load is at least the
    relaxation's optimum, hence at least its bound; below ``U (1 - rel_gap)`` for the start's max load ``U``, the
    bound cannot close the gap. The packing phase then waits until the gap probe has had its turn: on
    op_resnet50_training (communication-heavy: the relaxation's bound 113.3 against splits of 255.2) its 1.3 s went
    before a probe that certifies 1% alone."""
    compute = device_loads(graph, cluster, start, overlap=overlap).compute
    relaxed = float(compute[:, 0].max() + compute[:, 1].max()) if gpipe else float(compute.sum(axis=1).max())
    return relaxed < max_load(graph, cluster, start, overlap=overlap, gpipe=gpipe) * (1.0 - rel_gap)


def estimated_nonzeros(problem: Problem, q: int, contiguous: bool) -> int:
    """About how many nonzeros the program for ``problem`` has (an upper estimate from n, m and the devices)."""
    n, m = problem.graph.n, problem.graph.m
    k, devices = problem.cluster.accelerators, problem.cluster.num_devices
    if problem.objective == "latency":
        return k * q * (12 * n + 20 * m)
    if not contiguous:
        return devices * (3 * n + 7 * m)
    # Heterogeneous: the contiguous IP has one accelerator variable per type at every position.
    types = 1 if problem.cluster.is_homogeneous else len(problem.cluster.accelerator_types())
    return devices * ((4 + 8 * types) * n + (3 + 6 * types) * m)


#: Seconds a MIP runs when the caller gave no ``time_limit`` (hard instances never close their gap);
#: ``time_limit=float("inf")`` runs until the gap is proven.
DEFAULT_TIME_LIMIT = 60.0


def with_default_limit(problem: Problem, info: dict) -> Problem:
    """``problem`` with the default deadline when the caller gave no time limit, noted in ``info["time_limit"]``."""
    if problem.limit_given:
        return problem
    info["time_limit"] = f"{DEFAULT_TIME_LIMIT:g} s (the default: no time_limit was given)"
    return dataclasses.replace(problem, deadline=time.monotonic() + DEFAULT_TIME_LIMIT, limit_given=True)


def default_start(problem: Problem) -> tuple[np.ndarray | None, str]:
    """The default warm start: (devices, which method gave them): the DP's optimum when the DP suits the
    instance (as ``method="auto"`` judges it), else DPL, else greedy."""
    plain = Problem(problem.graph, problem.cluster, problem.objective, problem.deadline, problem.rel_gap, None,
                    {k: v for k, v in problem.options.items() if k == "overlap"}, cache=problem.cache)
    for name in ("dp", "dpl", "greedy"):
        device = start_from(name, plain)
        if device is not None:
            return device, name
    return None, "none"


def _phase_budget(problem: Problem, seconds: float, fraction: float) -> float | None:
    """Seconds for a phase before the non-contiguous IP: ``fraction`` of the time left, at most ``seconds``;
    None when that is too little to start it."""
    budget = min(seconds, fraction * problem.remaining())
    return budget if budget > 0.05 else None


def _record_set_bound(found: SetBound, info: dict, timings: dict, **said: Any) -> None:
    """What the set bound found, in ``info["set_bound"]`` (after ``said``: where it ran, what it started from) and
    ``timings["set_bound"]``."""
    timings["set_bound"] = found.seconds
    info["set_bound"] = {**said, "outcome": found.outcome, "bound": found.value, "ceiling": found.ceiling,
                         "thresholds": found.thresholds, "pricings": found.pricings, "columns": found.columns,
                         "nodes": found.nodes, "dives": found.dives, "split": found.split_value,
                         "heaviest": found.heaviest}


def _certified_up_to(problem: Problem, lower: float) -> float:
    """The highest max load of a split that ``L``'s lower bound ``lower`` certifies within ``rel_gap``,
    ``value - lower <= rel_gap * value`` (what a polish aims at)."""
    return lower / (1.0 - problem.rel_gap)


def _both(first: Callable[[float], None], then: Callable[[float], None] | None) -> Callable[[float], None]:
    """A listener of incumbents that tells ``first``, then ``then`` (when there is one)."""
    if then is None:
        return first

    def heard(value: float) -> None:
        first(value)
        then(value)

    return heard


def _lower_certifies(problem: Problem, value: float, lower: float | None) -> bool:
    """Whether ``L``'s lower bound ``lower`` certifies a split of max load ``value`` within ``rel_gap`` (one test
    with the polish's aim, so a polish that reached it never goes on to a phase only to prove it)."""
    return lower is not None and value <= _certified_up_to(problem, lower)


def _probe_budget(problem: Problem, start: float, lower: float | None) -> float | None:
    """Seconds for the gap probe from a start of max load ``start``: 10% of the time left, at most
    :data:`PROBE_SECONDS`; None when it does not apply (``lower`` already certifies the start, no time)."""
    return None if _lower_certifies(problem, start, lower) else _phase_budget(problem, PROBE_SECONDS, PROBE_FRACTION)


def best_known(points: list[TracePoint]) -> list[TracePoint]:
    """The trace as the method knows it at each point: the lowest incumbent and the highest bound so far.

    Before its solver runs, the non-contiguous method holds the polished start and the packing bound; the
    solver's own trace restarts from the start it was given (its objective for it may differ by its
    rounding) and from its own bound, which may sit below the packing bound by its tolerances.

    >>> [(p.incumbent, p.bound) for p in best_known([TracePoint(0.1, None, 5.0), TracePoint(0.2, 9.0, 5.0),
    ...                                              TracePoint(0.3, 9.0000001, 4.9), TracePoint(0.4, 8.0, 6.0)])]
    [(None, 5.0), (9.0, 5.0), (9.0, 5.0), (8.0, 6.0)]
    """
    known: list[TracePoint] = []
    incumbent = bound = None
    for point in points:
        if point.incumbent is not None:
            incumbent = point.incumbent if incumbent is None else min(incumbent, point.incumbent)
        if point.bound is not None:
            bound = point.bound if bound is None else max(bound, point.bound)
        known.append(TracePoint(point.seconds, incumbent, bound))
    return known


def _polish_points(began: float, polished: Polished) -> list[TracePoint]:
    """The polish on the trace (``began``: its start, in the trace's seconds): the start's value, then each
    improvement."""
    return [TracePoint(began + seconds, value, None) for seconds, value in ((0.0, polished.start), *polished.trace)]


def _probe_points(began: float, probe: Probe) -> list[TracePoint]:
    """The probes on the trace (``began``: their start): each split found and bound proven."""
    return [TracePoint(began + seconds, value, bound) for seconds, value, bound in probe.trace]


def _set_bound_points(began: float, found: SetBound) -> list[TracePoint]:
    """The set bound on the trace (``began``: its start): each bound it proved (none when it proved none)."""
    return [TracePoint(began + seconds, None, value) for seconds, value in found.trace]


class MIP(Method):
    """The max-load IP, contiguous (chain of ideals) or not, and the latency program (paper §4,
    :mod:`exactplace.methods.latency_mip`), on HiGHS, CP-SAT, SCIP, CBC or Gurobi."""

    name = "mip"
    objectives = ("throughput", "latency")
    exact = True
    space = Space.CHAIN
    guarantee = Guarantees(forward_contiguous=True, chain_order=True)
    description = ("max-load IP (contiguous: chain of ideals = the DP's space; or any split) on a MIP/CP solver; "
                   "latency program (Fig. 3, Fig. 4 with q)")
    options = {
        "q": Option("q", Integer(low=1, high=16), 1,
                    "latency: subgraphs per accelerator, run one at a time (1: contiguous, Fig. 3; >1: Fig. 4)"),
        "path_bound": Option("path_bound", Boolean(), True,
                             "latency, q=1: bound by the path DP over ideals (exact on chain-like layer graphs; "
                             "a start it certifies is returned without a solver)"),
        "solver": Option("solver", Choice(SOLVER_NAMES), "auto",
                         "the solver ('auto': the fastest installed; HiGHS for contiguous=False on at most 3 "
                         "accelerators)"),
        "contiguous": Option("contiguous", Boolean(), True,
                             "True: chain splits (the DP's space); False: any split of the colour classes"),
        "replication": Option("replication", Boolean(), False,
                              "throughput, contiguous: stages may run on r identical accelerators (paper Appendix "
                              "C.2), load (compute + comm + sync (r-1)/r) / r; homogeneous clusters"),
        "packing_bound": Option("packing_bound", Boolean(), True,
                                "contiguous=False: first bound the max load by the packing relaxation (no "
                                "communication, no memory) for up to 5% of the time, and add it as a row"),
        "polish": Option("polish", Boolean(), True,
                         "contiguous=False: first improve the warm start by exact re-optimization of device pairs "
                         "and triples (exactplace.improvers.polish), one search per thread, for up to 10% of the time "
                         "(25% where the packing bound is proven: it ends once that bound certifies), and go on "
                         "beside HiGHS's leg of the relay (two threads or more)"),
        "gap_probe": Option("gap_probe", Boolean(), True,
                            "contiguous=False on CP-SAT: then ask whether any split is 1%, then rel_gap, better "
                            "than the start (exactplace.bounds.gap_probe) for up to 10% of the time; a refutation "
                            "is a bound"),
        "set_bound": Option("set_bound", Boolean(), True,
                            "contiguous=False, in the relay (solver='auto', more than 3 accelerators, over 60 s): "
                            "after CP-SAT's leg, bound by column generation over device sets "
                            "(exactplace.bounds.device_sets) for 85% of the time left; where HiGHS runs alone (two "
                            "threads or more), beside it on the idle core instead of a second seed (option race); a "
                            "refuted target certifies"),
        "race": Option("race", Boolean(), True,
                       "contiguous=False on HiGHS with nothing beside it (two threads or more): a second solve with "
                       "another seed on the core HiGHS's search leaves idle; the first to certify stops the other"),
        "threads": THREADS,
        "log": Option("log", Boolean(), False, "stream the solver's log to stderr"),
        "progress": Option("progress", Boolean(), False, "print incumbent, bound and gap on stderr as they move"),
    }

    @classmethod
    def check(cls, problem: Problem) -> None:
        """A program of a size it builds. Throughput: no latency options. Latency: ``q`` rather than ``contiguous``."""
        size = estimated_nonzeros(problem, int(cls.setting(problem, "q")), bool(cls.setting(problem, "contiguous")))
        if size > MAX_NONZEROS:
            raise TooLargeError(
                f"Method {cls.name!r}: the program for this {problem.graph.n:,}-node graph would have about "
                f"{size:,} nonzeros, more than the {MAX_NONZEROS:,} it builds (no solver reaches a useful bound at "
                "that size); use " + ("method 'greedy'." if problem.objective == "latency"
                                      else "method 'dp' or 'dpl' (exact over chain splits), or 'greedy'."))
        check_param(not problem.options.get("replication") or problem.objective == "throughput", "objective", "solve",
                    "'throughput' with replication=True (the latency and makespan simulators run one device per stage)",
                    problem.objective)
        if problem.objective == "latency":
            from exactplace.methods.latency_mip import check_latency

            check_latency(problem.options)
            for name, role in (("packing_bound", "bounds"), ("polish", "improves the start of"),
                               ("gap_probe", "proves the gap of"), ("set_bound", "bounds")):
                check_param(name not in problem.options, name, "solve",
                            f"left out for objective 'latency' (it {role} the non-contiguous max-load IP)",
                            problem.options.get(name))
            return
        check_param(
            "q" not in problem.options, "q", "solve", "left out for objective 'throughput' (it is the latency "
            "program's number of subgraphs per accelerator; use contiguous=False)", problem.options.get("q"),
        )
        check_param("path_bound" not in problem.options, "path_bound", "solve",
                    "left out for objective 'throughput' (it bounds the latency program)",
                    problem.options.get("path_bound"))
        if problem.cluster.is_two_level:
            check_param(bool(cls.setting(problem, "contiguous")) and problem.cluster.is_homogeneous
                        and not problem.options.get("replication"), "cluster", "solve",
                        "a one-level cluster with contiguous=False, replication=True or accelerators of differing "
                        "memory or speed (the two-level IP is contiguous, over identical accelerators)",
                        problem.cluster)
        if problem.options.get("replication"):
            check_param(bool(cls.setting(problem, "contiguous")), "contiguous", "solve",
                        "True with replication=True (only the contiguous IP replicates stages)",
                        problem.options.get("contiguous"))
            check_param(problem.cluster.is_homogeneous, "cluster", "solve",
                        "a homogeneous cluster with replication=True (the replicas of a stage are anonymous identical "
                        "accelerators; one memory size, speed 1)", problem.cluster)
            for name in ("overlap", "gpipe"):
                check_param(not problem.option(name), name, "solve",
                            "False with replication=True (a replicated stage's load is "
                            "(compute + communication + sync (r-1)/r) / r, paper Appendix C.2)", problem.option(name))

    @classmethod
    def promises(cls, problem: Problem) -> Guarantees:
        """Chain splits when contiguous (forward parts contiguous and ordered); else only the basics.
        Latency: only the basics (CPU nodes are placed freely, so the CPU's node set is not contiguous)."""
        if problem.objective == "latency":
            return Guarantees()
        return cls.guarantee if cls.setting(problem, "contiguous") else Guarantees()

    def run(self, problem: Problem) -> MethodResult:
        from exactplace.formulations.throughput import contiguous_ip, noncontiguous_ip

        info: dict[str, Any] = {}
        problem = with_default_limit(problem, info)
        if problem.objective == "latency":
            from exactplace.methods.latency_mip import solve_latency

            q = int(self.setting(problem, "q"))
            result = solve_latency(problem, q=q, solver=self.setting(problem, "solver"),
                                   threads=self.setting(problem, "threads"), log=bool(self.setting(problem, "log")),
                                   progress=bool(self.setting(problem, "progress")),
                                   use_path_bound=bool(self.setting(problem, "path_bound")), info=info)
            result.q = q
            return result

        overlap, gpipe = bool(problem.option("overlap")), bool(problem.option("gpipe"))
        contiguous = bool(self.setting(problem, "contiguous"))
        solver = self._throughput_solver(problem, contiguous, info)
        timings: dict[str, float] = {}
        warm = problem.warm_start
        lower, lower_by = None, None  # the best lower bound proven before the solver's own, and what proved it
        packing_last: float | None = None  # seconds kept for the packing phase after the solver, when it runs last

        def load_of(device: np.ndarray) -> float:
            """A split's max load, as this solve counts it (the evaluator's)."""
            return max_load(problem.graph, problem.cluster, device, overlap=overlap, gpipe=gpipe)

        def raise_lower(value: float | None, by: str) -> None:
            nonlocal lower, lower_by
            if value is not None and (lower is None or value > lower):
                lower, lower_by = value, by

        before: list[TracePoint] = []  # what the method knew before its solver ran, timed as the trace is
        alongside: list[TracePoint] = []  # the polish beside HiGHS's leg of the relay: its improvements
        swapped = False  # the result's split is that polish's, not the solver's
        try:
            if warm is not None:
                info["warm_start"] = "given"
            elif problem.default_start:
                clock = time.perf_counter()
                warm, origin = default_start(problem)
                timings["warm_start"] = time.perf_counter() - clock
                info["warm_start"] = origin
            threads = int(self.setting(problem, "threads") or usable_cpus())
            clock = time.perf_counter()
            if contiguous and problem.cluster.is_two_level:
                from exactplace.formulations.two_level import two_level_ip

                ip = two_level_ip(problem.graph, problem.cluster, problem.contraction, overlap=overlap, gpipe=gpipe)
            elif contiguous:
                ip = contiguous_ip(problem.graph, problem.cluster, problem.contraction, overlap=overlap, gpipe=gpipe,
                                   replication=bool(self.setting(problem, "replication")))
            else:
                def packing_phase(budget: float | None) -> None:
                    """The packing bound, on ``L``'s lower bound and on the trace."""
                    raise_lower(self._packing_bound(problem, gpipe, solver, info, timings, budget), "packing_bound")
                    if lower is not None:
                        before.append(TracePoint(time.monotonic() - problem.started, None, lower))

                # The probe is CP-SAT's: with another solver pinned (or HiGHS chosen by 'auto'), that solver proves.
                probing = bool(self.setting(problem, "gap_probe")) and warm is not None and get_solver(
                    solver).name == "cpsat"
                # When the packing bound cannot certify the start: after the probe, if the probe does not certify
                # (then it is L's lower bound); with no probe, at the end, if the solver does not (in the relay:
                # before its legs).
                packing = bool(self.setting(problem, "packing_bound"))
                short = packing and warm is not None and _packing_short(
                    problem.graph, problem.cluster, warm, problem.rel_gap, overlap=overlap, gpipe=gpipe)
                deferred = short and probing
                if short:  # (replaced by the bound if the phase runs)
                    info["packing_bound"] = (f"not run unless the {'gap probe' if probing else 'solver'} leaves the "
                                             "gap open (the start's compute-only max load shows it cannot certify)")
                if short and not probing:
                    packing_last = _phase_budget(problem, PACKING_SECONDS, PACKING_FRACTION)
                elif packing and not deferred:
                    packing_phase(_phase_budget(problem, PACKING_SECONDS, PACKING_FRACTION))
                polishing = bool(self.setting(problem, "polish")) and warm is not None
                # Where the packing bound cannot certify the start, the probe asks from it at once, beside the polish.
                polished, probe, points = self._polish_and_probe(problem, warm, lower, overlap, gpipe, polishing,
                                                                 probing, deferred, threads, info, timings)
                before += points
                if polished is not None:
                    warm = polished.device
                    if polished.interrupted and probe is None:
                        raise KeyboardInterrupt
                if probe is not None:
                    warm = probe.device  # (the better of the two when they ran together)
                    raise_lower(probe.bound, "gap_probe")  # (a proven bound above the packing bound)
                    if probe.outcome == "interrupted":
                        raise KeyboardInterrupt
                    if probe.outcome == "proven":
                        return MethodResult(warm, Status.OPTIMAL, bound=lower, solver="cpsat", space=Space.ANY,
                                            trace=best_known(before), timings=timings,
                                            info={**info, "certified_by": "gap_probe"})
                if deferred:
                    packing_phase(_phase_budget(problem, PACKING_SECONDS, PACKING_FRACTION))
                if self.setting(problem, "progress"):
                    shown = progress_printer()
                    for point in before:
                        shown(point)
                if warm is not None and _lower_certifies(problem, load_of(warm), lower):
                    # Certified already: the solver would only say so, seconds later.
                    return MethodResult(warm, Status.OPTIMAL, bound=lower, solver=get_solver(solver).name,
                                        space=Space.ANY, trace=best_known(before), timings=timings,
                                        info={**info, "certified_by": lower_by})

            def run(ip: Any, on: Problem, solver: str, warm: np.ndarray | None,
                    cancel: threading.Event | None = None, workers: int | None = None,
                    racer: Racer | None = None,
                    heard: Callable[[float], None] | None = None) -> tuple[MethodResult, Any]:
                """Solve a built IP by ``on``'s deadline (on ``workers`` threads, default all; as ``racer`` says, in a
                race; ``heard``: :func:`~exactplace.solvers.program.solve_ip`'s); the result carries the replicas of its
                solution."""
                said, clocks = (info, timings) if racer is None else (racer.info, racer.timings)
                said.update(variables=ip.model.num_vars, rows=ip.model.num_rows, units=ip.data.units)
                result, out = solve_ip(
                    on, ip, solver, warm=warm, threads=workers or threads,
                    log=bool(self.setting(problem, "log")) and (racer is None or not racer.quiet),
                    progress=racer.shown if racer is not None and racer.shown is not None else bool(
                        self.setting(problem, "progress")),
                    space=Space.CHAIN if contiguous else Space.ANY, info=said, timings=clocks, cancel=cancel,
                    seed=0 if racer is None else racer.seed, heard=heard,
                )
                if result.device is not None and out.values is not None:
                    result.replicas = ip.decode_replicas(out.values)
                return result, out

            def solve_any_split(on: Problem, solver: str, warm: np.ndarray | None, lower: float | None,
                                cancel: threading.Event | None = None, workers: int | None = None,
                                racer: Racer | None = None,
                                heard: Callable[[float], None] | None = None) -> tuple[MethodResult, Any]:
                """Build the non-contiguous IP and solve it on ``solver`` by ``on``'s deadline (or until ``cancel``
                is set); ``workers``, ``racer``, ``heard``: :func:`run`'s. ``L``'s proven lower bound ``lower`` is the
                IP's ``L >= lower`` where the solver's search uses it (``Capabilities.objective_floor``; and in a race,
                whose sides stop each other only when one decides); elsewhere the IP goes without it and the solve
                stops once its split is within ``rel_gap`` of ``lower`` (module docstring)."""
                clock = time.perf_counter()
                floor, listen = lower, heard
                if lower is not None and racer is None and not get_solver(solver).capabilities.objective_floor:
                    cancel = cancel or threading.Event()
                    floor, listen = None, _both(sets_at_most(_certified_up_to(problem, lower), cancel), heard)
                ip = noncontiguous_ip(problem.graph, problem.cluster, overlap=overlap, gpipe=gpipe, lower_bound=floor)
                (timings if racer is None else racer.timings)["build"] = time.perf_counter() - clock
                try:
                    return run(ip, on, solver, warm, cancel, workers, racer, listen)
                except ExactplaceError as error:
                    # A solver can end in an error status (HiGHS 1.x, kSolveError in its postsolve, when L's lower
                    # bound sat a hair below the optimum; rare, seen in the brute-force tests): solve again without it.
                    if floor is None or "error status" not in str(error):
                        raise
                    (info if racer is None else racer.info)["lower_bound"] = f"{lower!r} (dropped: {error})"
                    return run(noncontiguous_ip(problem.graph, problem.cluster, overlap=overlap, gpipe=gpipe),
                               on, solver, warm, cancel, workers, racer, heard=heard)

            if contiguous:
                timings["build"] = time.perf_counter() - clock
                result, out = run(ip, problem, solver, warm)
            elif not self._relays(problem, solver, info):
                on = problem if packing_last is None else dataclasses.replace(
                    problem, deadline=problem.deadline - packing_last)
                # With L's lower bound proven, the polish goes on beside the solver, and a split of its within
                # rel_gap of that bound ends the solve: the split is certified (module docstring).
                closed = threading.Event()
                companion = None if lower is None else self._alongside(
                    problem, warm, overlap, gpipe, threads,
                    heard=sets_at_most(_certified_up_to(problem, lower), closed))
                try:
                    if companion is None and self._races(problem, solver, threads) and self._bound_beside(
                            problem, warm, overlap, gpipe):
                        # Nothing beside a one-core search: the set bound on the idle core (module docstring).
                        result, out, found, began = self._beside_set_bound(
                            problem, warm, lower, info, timings, lambda stop, heard: solve_any_split(
                                on, solver, warm, lower, stop, threads - 1, heard=heard))
                        if found is not None:
                            before += _set_bound_points(began, found)
                            raise_lower(found.value, "set_bound")
                            if found.outcome == "target refuted" and result.limit is Limit.INTERRUPT:
                                result.limit = None  # (stopped by the refutation, not Ctrl-C: certified, below)
                            if found.split is not None and (
                                    result.device is None or found.split_value < load_of(result.device)):
                                result.device, result.replicas, swapped = found.split, None, True  # branching's
                                if result.status is Status.NO_SOLUTION:
                                    result.status = Status.FEASIBLE
                    elif companion is None and self._races(problem, solver, threads):
                        # Nothing beside a one-core search: a second seed on the idle core (module docstring).
                        shown = progress_printer(start=None if warm is None else load_of(warm)) if self.setting(
                            problem, "progress") else None
                        # (The first side writes the method's info and timings, the second its own, with no log.)
                        result, out, info["race"] = race(
                            lambda seed, stop: solve_any_split(
                                on, solver, warm, lower, stop, threads - 1 if seed == 0 else 1,
                                Racer(seed, shown, info, timings) if seed == 0 else Racer(seed, shown, quiet=True)),
                            load_of)
                    else:
                        result, out = solve_any_split(on, solver, warm, lower, closed,
                                                      None if companion is None else threads - 1)
                finally:
                    found = companion.stop() if companion is not None else None
                if companion is not None and found is not None:
                    info["beside_solver"] = {}
                    alongside, swapped = self._take_polished(problem, result, companion, found, overlap,
                                                             info["beside_solver"])
                    if closed.is_set() and result.limit is Limit.INTERRUPT:
                        result.limit = None  # (the polish's split and L's lower bound: certified, below)
                if (packing_last is not None and result.status is Status.FEASIBLE
                        and result.limit is not Limit.INTERRUPT):
                    try:
                        packing_phase(packing_last)
                    except KeyboardInterrupt:  # the solver's split stands, its bound too
                        result.limit = Limit.INTERRUPT
            else:
                if packing_last is not None:  # (the relay's legs take L's lower bound from it, as they did before)
                    packing_phase(packing_last)
                leg = dataclasses.replace(problem, deadline=time.monotonic() + CPSAT_LEG_SECONDS)
                result, out = solve_any_split(leg, solver, warm, lower)
                if result.limit is Limit.TIME and result.status in (Status.FEASIBLE, Status.NO_SOLUTION):
                    # What CP-SAT knows becomes HiGHS's start: its split the warm start, its bound L's lower bound.
                    handed = None if result.device is None else load_of(result.device)
                    info["relay"] = {"cpsat": {"status": result.status.value, "value": handed,
                                               "bound": result.bound, "seconds": out.seconds}}
                    timings["cpsat_leg"] = out.seconds
                    before += result.trace
                    if result.device is not None:
                        warm = result.device
                    raise_lower(result.bound, "cpsat")
                    solver = "highs"
                    # The polish runs beside the set bound and then beside HiGHS: the bound's pricing (C++) and
                    # LPs (HiGHS) release the interpreter lock, as HiGHS's MIP search does.
                    companion = self._alongside(problem, warm, overlap, gpipe, threads)
                    try:
                        bound = None
                        if self.setting(problem, "set_bound"):
                            began = time.monotonic() - problem.started
                            bound = self._set_bound(problem, warm, lower, overlap, gpipe, info, timings, companion)
                            if bound is not None:
                                raise_lower(bound.value, "set_bound")
                                before += _set_bound_points(began, bound)
                            if bound is not None and bound.split is not None and bound.split_value < load_of(warm):
                                warm = bound.split  # branching's split (the evaluator's max load): HiGHS's start
                                before.append(TracePoint(began + bound.seconds, bound.split_value, None))
                        if bound is not None and bound.outcome in ("target refuted", "interrupted"):
                            # Refuted: the best split (CP-SAT's or, taken below, the polish's, whose value the target
                            # followed) is within rel_gap of every split, no IP to solve. Interrupted: what is known.
                            refuted = bound.outcome == "target refuted"
                            result, out = MethodResult(warm, Status.OPTIMAL if refuted else Status.FEASIBLE,
                                                       bound=lower, limit=None if refuted else Limit.INTERRUPT,
                                                       solver="highs", space=Space.ANY, info=info,
                                                       timings=timings), None
                            if refuted:
                                info["certified_by"] = "set_bound"
                        else:
                            result, out = solve_any_split(problem, solver, warm, lower)
                    finally:
                        found = companion.stop() if companion is not None else None
                    result.solver = "cpsat+highs"
                    if companion is not None and found is not None:
                        alongside, swapped = self._take_polished(problem, result, companion, found, overlap,
                                                                 info["relay"])
        except KeyboardInterrupt:
            # Ctrl-C before the solver ran (warm start, packing bound, polish, build, translation) or between the
            # relay's legs: return the start (CP-SAT's split, after its leg), if any, with L's lower bound if any.
            status = Status.FEASIBLE if warm is not None else Status.NO_SOLUTION
            return MethodResult(warm, status, bound=lower if warm is not None else None, limit=Limit.INTERRUPT,
                                solver=solver, space=Space.CHAIN if contiguous else Space.ANY,
                                trace=best_known(before), timings=timings,
                                info={**info, "returned": "warm start" if warm is not None else "nothing"})
        result.trace = best_known(sorted([*before, *result.trace, *alongside], key=lambda point: point.seconds))
        if lower is not None and result.device is not None:  # L's lower bound holds whatever the solver proved
            result.bound = max(lower, result.bound if result.bound is not None else lower)
        if result.device is not None and out is not None and out.values is not None and not swapped:
            self._agree(problem, result, out, overlap, gpipe)
        if result.bound is not None:  # what proved the bound returned: what certifies the split, when the referee
            # finds them within rel_gap after the solver stopped (the polish's split taken at the end, say)
            result.info["bound_by"] = lower_by if lower is not None and result.bound <= lower else result.solver
        return result

    def _throughput_solver(self, problem: Problem, contiguous: bool, info: dict) -> str:
        """The ``solver`` option, except that ``"auto"`` takes HiGHS (when installed) for the non-contiguous
        IP on at most :data:`HIGHS_MAX_ACCELERATORS` accelerators, and says so in ``info["solver"]``."""
        chosen = str(self.setting(problem, "solver"))
        if (chosen == "auto" and not contiguous and problem.cluster.accelerators <= HIGHS_MAX_ACCELERATORS
                and get_solver("highs").available()):
            info["solver"] = (f"highs (solver='auto', non-contiguous, at most {HIGHS_MAX_ACCELERATORS} "
                              "accelerators)")
            return "highs"
        return chosen

    @staticmethod
    def _relays(problem: Problem, solver: str, info: dict) -> bool:
        """Whether ``"auto"`` runs the non-contiguous IP on CP-SAT for :data:`CPSAT_LEG_SECONDS`, then on HiGHS
        from CP-SAT's split and bound for the rest of the time limit: when CP-SAT is ``"auto"``'s choice, HiGHS
        is installed and more than a second would be left to it; says so in ``info["solver"]``."""
        if (solver != "auto" or get_solver(solver).name != "cpsat" or problem.remaining() <= CPSAT_LEG_SECONDS + 1.0
                or not get_solver("highs").available()):
            return False
        info["solver"] = (f"cpsat for {CPSAT_LEG_SECONDS:g} s, then highs (solver='auto', non-contiguous, more than "
                          f"{HIGHS_MAX_ACCELERATORS} accelerators)")
        return True

    def _races(self, problem: Problem, solver: str, threads: int) -> bool:
        """Whether a second seed races the solve (:mod:`exactplace.improvers.race`): option ``race``, two threads or
        more, and a solver whose search runs on one core and takes a seed (HiGHS)."""
        capabilities = get_solver(solver).capabilities
        return (bool(self.setting(problem, "race")) and threads >= 2 and capabilities.seed
                and capabilities.serial_search)

    def _bound_beside(self, problem: Problem, warm: np.ndarray | None, overlap: bool, gpipe: bool) -> bool:
        """Whether the set bound takes the core a one-core solve leaves idle (instead of a second seed): option
        ``set_bound``, a start to aim at, and an instance the device-set relaxation applies to."""
        from exactplace.bounds.device_sets import set_bound_applies

        return (bool(self.setting(problem, "set_bound")) and warm is not None
                and set_bound_applies(problem.graph, problem.cluster, overlap=overlap, gpipe=gpipe) is None)

    @staticmethod
    def _beside_set_bound(problem: Problem, warm: np.ndarray, lower: float | None, info: dict, timings: dict,
                          solve: Callable[[threading.Event, Callable[[float], None]], tuple[MethodResult, Any]]
                          ) -> tuple[MethodResult, Any, SetBound | None, float]:
        """``solve(stop, heard)`` (the IP on one core fewer) with the device-set bound on the other, aimed at the
        solver's best split within ``rel_gap`` and given all the time (:func:`~exactplace.improvers.race.beside_bound`):
        its refutation stops the solve, whose split it certifies. Returns the solve's result and raw output, what the
        bound found (None when it failed; ``info["set_bound"]`` says why) and when it began (trace seconds)."""
        from exactplace.bounds.device_sets import set_bound

        start = max_load(problem.graph, problem.cluster, warm)
        began = time.monotonic() - problem.started

        def prove(best: Callable[[], float], stop: threading.Event) -> tuple[bool, SetBound]:
            def aim() -> float:
                return best() * (1.0 - problem.rel_gap)

            found = set_bound(problem.graph, problem.cluster, target=aim(), lower=lower, seeds=(warm,), aim=aim,
                              rel_gap=problem.rel_gap, time_limit=problem.remaining(), cancel=stop, patience=1.0)
            return found.outcome == "target refuted", found

        result, out, found = beside_bound(solve, prove, start)
        if isinstance(found, BaseException) or found is None:
            info["set_bound"] = f"beside the solver: failed ({found!r})"
            return result, out, None, began
        _record_set_bound(found, info, timings, beside="solver", start=start)
        return result, out, found, began

    def _alongside(self, problem: Problem, warm: np.ndarray | None, overlap: bool, gpipe: bool, threads: int,
                   heard: Callable[[float], None] | None = None) -> Alongside | None:
        """The polish that runs beside a solve (HiGHS's leg of the relay, on the core HiGHS leaves idle; the solver
        where no relay runs) (:class:`~exactplace.improvers.polish.Alongside`, with ``heard``): when ``polish`` is
        on, two threads or more are allowed, not GPipe, and the start is a legal split; else None."""
        from exactplace.improvers.polish import Alongside

        if (not self.setting(problem, "polish") or threads < 2 or gpipe or warm is None
                or check_feasibility(problem.graph, problem.cluster, warm)):
            return None
        return Alongside(problem.graph, problem.cluster, warm, overlap=overlap, time_limit=problem.remaining(),
                         heard=heard)

    @staticmethod
    def _take_polished(problem: Problem, result: MethodResult, companion: Alongside, found: Polished, overlap: bool,
                       record: dict) -> tuple[list[TracePoint], bool]:
        """Record what the polish beside the solver (``companion``) found (``record["polish"]``: ``info["relay"]`` or
        ``info["beside_solver"]``) and make its split the result's when it is better than the solver's (the
        evaluator's loads). Returns its improvements as trace points (timed from ``solve``'s start) and whether its
        split was taken. The solver's bound stands: it holds for every split."""
        began = companion.started - problem.started
        points = [TracePoint(began + seconds, value, None) for seconds, value in found.trace]
        record["polish"] = {"start": found.start, "value": found.value, "neighbourhoods": found.solved,
                            "improved": found.improved, "starts": found.starts, "seconds": found.seconds}
        solver_value = (None if result.device is None else
                        max_load(problem.graph, problem.cluster, result.device, overlap=overlap))
        if not found.improved or (solver_value is not None and found.value >= solver_value):
            return points, False
        result.device, result.replicas = found.device, None
        if result.status is Status.NO_SOLUTION:
            result.status = Status.FEASIBLE
        if result.bound is not None:
            result.bound = min(result.bound, found.value)
        record["polish"]["taken"] = True
        return points, True

    def _packing_bound(self, problem: Problem, gpipe: bool, solver: str, info: dict, timings: dict,
                       budget: float | None) -> float | None:
        """The packing relaxation's proven bound (:mod:`exactplace.bounds.packing`) within ``budget`` seconds
        (None: no time for it), on ``solver``."""
        from exactplace.bounds.packing import packing_bound
        from exactplace.formulations.throughput import unit_data

        if budget is None:
            return None
        threads = int(self.setting(problem, "threads") or usable_cpus())
        try:
            found = packing_bound(unit_data(problem.graph, problem.graph.color), problem.cluster, gpipe=gpipe,
                                  time_limit=budget, threads=threads, solver=solver)
        except ExactplaceError as error:  # a solver failing on the relaxation costs the bound, not the solve
            info["packing_bound"] = f"none ({error})"
            return None
        if found is None:
            return None
        timings["packing_bound"] = found.seconds
        info["packing_bound"] = found.value
        return found.value

    @staticmethod
    def _set_bound(problem: Problem, warm: np.ndarray | None, lower: float | None, overlap: bool, gpipe: bool,
                   info: dict, timings: dict, companion: Alongside | None) -> SetBound | None:
        """The device-set relaxation's bound (:mod:`exactplace.bounds.device_sets`), aimed at certifying the
        best split within ``rel_gap`` (the start's, then the ``companion``'s as it improves), for
        :data:`SET_BOUND_FRACTION` of the time left; None when it does not apply."""
        from exactplace.bounds.device_sets import set_bound, set_bound_applies

        why_not = set_bound_applies(problem.graph, problem.cluster, overlap=overlap, gpipe=gpipe)
        if why_not is not None or warm is None:
            info["set_bound"] = f"none ({why_not or 'no split to certify'})"
            return None
        value = max_load(problem.graph, problem.cluster, warm)
        target = value * (1.0 - problem.rel_gap)
        if lower is not None and lower >= target:
            return None
        aim = None if companion is None else (lambda: companion.best() * (1.0 - problem.rel_gap))
        found = set_bound(problem.graph, problem.cluster, target=target, lower=lower, seeds=(warm,), aim=aim,
                          rel_gap=problem.rel_gap, time_limit=SET_BOUND_FRACTION * problem.remaining(),
                          offer=None if companion is None else companion.offer)
        _record_set_bound(found, info, timings, start=value, target=target)
        return found

    def _polish_and_probe(self, problem: Problem, warm: np.ndarray, lower: float | None, overlap: bool, gpipe: bool,
                          polishing: bool, probing: bool, deferred: bool, threads: int, info: dict,
                          timings: dict) -> tuple[Polished | None, Probe | None, list[TracePoint]]:
        """The polish (:func:`~exactplace.improvers.polish.polish`), then the gap probe (:meth:`_gap_probe`), from the
        warm start; with ``threads`` two or more and ``deferred`` (a start the packing bound cannot certify), both at
        once on two cores (:func:`~exactplace.bounds.gap_probe.probe_beside_polish`): there only the probe can prove
        before the solver, and a probe that certifies the start needs no polish (op_resnet50_training's case).
        Elsewhere the polished split with the packing bound is the road, and a probe beside the polish would take
        CPU from it for a question the polish answers (the time-limited polish of layer_resnet50_training ended
        higher with it than without): there one search per thread polishes
        (``searches``), until a split is certified by ``L``'s lower bound (``enough``). Returns what ran (the probe's
        split is the better of the two) and their points on the trace."""
        from exactplace.bounds.gap_probe import probe_beside_polish
        from exactplace.improvers.polish import polish

        began = time.monotonic() - problem.started
        polish_budget = self._polish_budget(problem, warm, gpipe, lower is not None, info) if polishing else None
        probe_budget = start = None
        if probing and deferred and threads >= 2:
            start = max_load(problem.graph, problem.cluster, warm, overlap=overlap, gpipe=gpipe)
            probe_budget = _probe_budget(problem, start, lower)
        if polish_budget is not None and probe_budget is not None and start is not None:
            polished, probe = probe_beside_polish(problem.graph, problem.cluster, warm, problem.rel_gap,
                                                  overlap=overlap, lower_bound=lower, polish_seconds=polish_budget,
                                                  probe_seconds=probe_budget)
            self._polished(polished, info, timings)
            self._probed(probe, start, info, timings)
            points = _polish_points(began, polished) + _probe_points(began, probe)
            return polished, probe, sorted(points, key=lambda point: point.seconds)
        polished = None
        points: list[TracePoint] = []
        if polish_budget is not None:
            enough = None if lower is None else _certified_up_to(problem, lower)
            polished = self._polished(polish(problem.graph, problem.cluster, warm, overlap=overlap,
                                             time_limit=polish_budget, escalate=enough is not None,
                                             searches=threads, enough=enough), info, timings)
            points = _polish_points(began, polished)
            if polished.interrupted:
                return polished, None, points
            warm = polished.device
        probe = self._gap_probe(problem, warm, lower, overlap, gpipe, info, timings) if probing else None
        if probe is not None:
            points += _probe_points(began + (polished.seconds if polished is not None else 0.0), probe)
        return polished, probe, points

    @staticmethod
    def _polish_budget(problem: Problem, warm: np.ndarray, gpipe: bool, bounded: bool, info: dict) -> float | None:
        """Seconds for polishing the warm start by exact re-optimization of device pairs and triples
        (:mod:`exactplace.improvers.polish`): 10% of the time left (25% when ``L``'s lower bound is ``bounded``, proven
        already: the polish then ends once that bound certifies its split), at most :data:`POLISH_SECONDS`; None when
        it does not apply (GPipe, a start that is not a legal split, no time)."""
        if gpipe:
            info["polish"] = "none (GPipe's max FW + max BW does not decompose by device sets)"
            return None
        budget = _phase_budget(problem, POLISH_SECONDS, POLISH_BOUNDED_FRACTION if bounded else POLISH_FRACTION)
        if budget is not None and check_feasibility(problem.graph, problem.cluster, warm):
            info["polish"] = "none (the start is not a legal split)"
            return None
        return budget

    @staticmethod
    def _polished(found: Polished, info: dict, timings: dict) -> Polished:
        """Record what the polish gave and took (``info["polish"]``, ``timings["polish"]``)."""
        timings["polish"] = found.seconds
        info["polish"] = {"start": found.start, "value": found.value, "neighbourhoods": found.solved,
                          "improved": found.improved, "ended": found.ended}
        return found

    def _gap_probe(self, problem: Problem, warm: np.ndarray, lower: float | None, overlap: bool, gpipe: bool,
                   info: dict, timings: dict) -> Probe | None:
        """Decision probes "is any split 1%, then ``rel_gap``, better than the start?"
        (:mod:`exactplace.bounds.gap_probe`) on CP-SAT with one worker, within :func:`_probe_budget`; None when
        they do not apply."""
        from exactplace.bounds.gap_probe import probe_gap

        start = max_load(problem.graph, problem.cluster, warm, overlap=overlap, gpipe=gpipe)
        budget = _probe_budget(problem, start, lower)
        if budget is None:
            return None
        found = probe_gap(problem.graph, problem.cluster, warm, problem.rel_gap, overlap=overlap, gpipe=gpipe,
                          lower_bound=lower, time_limit=budget)
        return self._probed(found, start, info, timings)

    @staticmethod
    def _probed(found: Probe, start: float, info: dict, timings: dict) -> Probe:
        """Record what the probes gave and took (``info["gap_probe"]``, ``timings["gap_probe"]``; ``start``: the
        start's max load)."""
        timings["gap_probe"] = found.seconds
        info["gap_probe"] = {"outcome": found.outcome, "start": start, "value": found.value, "bound": found.bound,
                             "found": found.found}
        return found

    @staticmethod
    def _agree(problem: Problem, result: MethodResult, out: Any, overlap: bool, gpipe: bool) -> None:
        """The evaluator's objective never exceeds the solver's (beyond rounding): else the formulation is wrong.

        (The solver's may exceed the evaluator's: a load variable need not be tight at a non-optimal point.)
        """
        value = max_load(problem.graph, problem.cluster, result.device, overlap=overlap, gpipe=gpipe,
                         replicas=result.replicas)
        # CP-SAT's coefficients are rounded at about 2**-20 of the largest one (solvers/cpsat.py).
        tol = 1e-5 * max(1.0, abs(value))
        if not value <= out.objective + tol:
            raise ExactplaceError(
                f"Method 'mip' ({out.solver}): the evaluator's objective {value!r} exceeds the solver's "
                f"{out.objective!r} for its own solution. This is a bug in the formulation; please report it."
            )
        if result.bound is not None:
            # A dual bound from floating-point LPs may exceed the exact optimum by the solver's tolerances.
            result.bound = min(result.bound, value)
