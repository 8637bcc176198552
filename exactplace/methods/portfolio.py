"""The non-contiguous portfolio: ``solve(method="mip", contiguous=False)``, phase by phase.

The assignment IP's solver proves bounds well but finds good splits late, and a bound proven outside it can certify
a split before it runs. :class:`NonContiguousPortfolio` spends the time limit on, in order: the warm start; the
packing relaxation's bound (:mod:`exactplace.bounds.packing`), ``L``'s first lower bound; the polish of the start
(:mod:`exactplace.improvers.polish`); the gap probe on CP-SAT (:mod:`exactplace.bounds.gap_probe`); then the IP,
with a companion on the core a one-core search leaves idle (the polish, the device-set bound
:mod:`exactplace.bounds.device_sets`, or a second seed, :mod:`exactplace.improvers.race`), or in the relay, CP-SAT's
leg, the set bound, then HiGHS's leg. A split within ``rel_gap`` of a proven lower bound ``L`` comes back optimal as
soon as both are known (``info["certified_by"]`` names the prover). Each phase's share of the time:
:class:`~exactplace.methods.mip_settings.MIPSettings`; what each gave: ``info[phase]``, ``timings[phase]``
(:mod:`~exactplace.methods.portfolio_records`); the user's view: ``docs/methods.md``.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from exactplace.core.errors import ExactplaceError
from exactplace.core.interrupt import sets_at_most
from exactplace.core.placement import Limit, Space, Status, TracePoint
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators import max_load
from exactplace.evaluators.feasibility import check_feasibility
from exactplace.improvers.race import Racer, beside_bound, race
from exactplace.methods import portfolio_records as records
from exactplace.methods.mip_options import option
from exactplace.methods.mip_settings import MIPSettings
from exactplace.methods.throughput_steps import IPSolve, best_known, finish, interrupted, warm_start
from exactplace.solvers import get_solver
from exactplace.solvers.program import progress_printer

if TYPE_CHECKING:
    from collections.abc import Callable

    from exactplace.bounds.device_sets import SetBound
    from exactplace.bounds.gap_probe import Probe
    from exactplace.improvers.polish import Alongside, Polished

__all__ = ["NonContiguousPortfolio"]

Solved = tuple[MethodResult, Any]


class NonContiguousPortfolio:
    """One non-contiguous solve of ``problem`` (module docstring): its phases, in :meth:`run`'s order, share the
    state below; ``settings`` shares the time among them.

    Attributes
    ----------
    warm : array of int or None
        The incumbent split: the warm start, then the polish's, the probe's, CP-SAT's leg's, the set bound's.
    lower, lower_by : float or None, str or None
        ``L``'s best lower bound proven outside the solver's own, and what proved it.
    packing_last : float or None
        Seconds kept at the end of the limit for the packing phase, when it runs after the solver.
    before, beside : list of TracePoint
        What the method knew before its solver ran, and what the polish beside the solver found.
    swapped : bool
        The result's split came from beside the solver (the polish's, the set bound's branching), not its solution.
    """

    def __init__(self, problem: Problem, settings: MIPSettings, solve: IPSolve, solver: str, *, overlap: bool,
                 gpipe: bool) -> None:
        self.problem, self.settings, self.solve_built, self.solver = problem, settings, solve, solver
        self.overlap, self.gpipe = overlap, gpipe
        self.info, self.timings, self.threads = solve.info, solve.timings, solve.threads
        self.warm: np.ndarray | None = problem.warm_start
        self.lower: float | None = None
        self.lower_by: str | None = None
        self.packing_last: float | None = None
        self.before: list[TracePoint] = []
        self.beside: list[TracePoint] = []
        self.swapped = False

    def run(self) -> MethodResult:
        """Every phase in turn; the result, certified as soon as a bound proven outside the solver allows."""
        try:
            certified = self.before_solver()
            if certified is not None:
                return certified
            result, out = self.relay() if self.relays() else self.solver_alone()
        except KeyboardInterrupt:
            return interrupted(self.warm, self.lower, self.solver, Space.ANY, self.before, self.info, self.timings)
        return finish(self.problem, result, out, overlap=self.overlap, gpipe=self.gpipe, before=self.before,
                      beside=self.beside, lower=self.lower, lower_by=self.lower_by, swapped=self.swapped)

    # -- the state --------------------------------------------------------------------------------------------------

    def load_of(self, device: np.ndarray) -> float:
        """A split's max load, as this solve counts it (the evaluator's)."""
        return max_load(self.problem.graph, self.problem.cluster, device, overlap=self.overlap, gpipe=self.gpipe)

    def raise_lower(self, value: float | None, by: str) -> None:
        """``L``'s lower bound becomes ``value``, proven by ``by``, when it is higher."""
        if value is not None and (self.lower is None or value > self.lower):
            self.lower, self.lower_by = value, by

    def now(self) -> float:
        """Seconds since ``solve`` began (the trace's clock)."""
        return time.monotonic() - self.problem.started

    def phase_budget(self, seconds: float, fraction: float) -> float | None:
        """Seconds for a phase before the IP: ``fraction`` of the time left, at most ``seconds``; None when that is
        too little to start it."""
        budget = min(seconds, fraction * self.problem.remaining())
        return budget if budget > self.settings.min_phase_seconds else None

    def certified_up_to(self, lower: float) -> float:
        """The highest max load of a split that ``L``'s lower bound ``lower`` certifies within ``rel_gap``,
        ``value - lower <= rel_gap * value`` (what a polish aims at)."""
        return lower / (1.0 - self.problem.rel_gap)

    def lower_certifies(self, value: float) -> bool:
        """Whether ``L``'s lower bound certifies a split of max load ``value`` within ``rel_gap`` (one test with the
        polish's aim, so a polish that reached it never goes on to a phase only to prove it)."""
        return self.lower is not None and value <= self.certified_up_to(self.lower)

    def certified(self, solver: str, by: str | None) -> MethodResult:
        """The incumbent, optimal: certified by ``L``'s lower bound before the solver ran."""
        return MethodResult(self.warm, Status.OPTIMAL, bound=self.lower, solver=solver, space=Space.ANY,
                            trace=best_known(self.before), timings=self.timings, info={**self.info, "certified_by": by})

    # -- before the solver ------------------------------------------------------------------------------------------

    def before_solver(self) -> MethodResult | None:
        """The start, the packing bound (now or put off), the polish and the probe: the incumbent when they certify
        it (the solver would only say so, seconds later), else None."""
        self.start()
        probing, deferred = self.plan_packing()
        certified = self.polish_and_probe(probing, deferred)
        if certified is not None:
            return certified
        if deferred:
            self.packing(self.phase_budget(self.settings.packing_seconds, self.settings.packing_fraction))
        if option(self.problem, "progress"):
            shown = progress_printer()
            for point in self.before:
                shown(point)
        if self.warm is not None and self.lower_certifies(self.load_of(self.warm)):
            return self.certified(get_solver(self.solver).name, self.lower_by)
        return None

    def start(self) -> None:
        """The warm start (:func:`~exactplace.methods.throughput_steps.warm_start`)."""
        self.warm = warm_start(self.problem, self.info, self.timings)

    def plan_packing(self) -> tuple[bool, bool]:
        """Whether the gap probe runs (CP-SAT's: with another solver pinned, or HiGHS chosen by ``"auto"``, that
        solver proves) and whether the packing phase waits for it; runs the packing phase now where it need not wait.

        When the start's compute-only max load shows the packing bound cannot certify it
        (:func:`~exactplace.bounds.packing.packing_falls_short`), the phase comes after the probe, and only if the
        probe does not certify (then it is ``L``'s lower bound); with no probe, at the end of the limit, in time
        kept for it, only if the solver does not certify (in the relay: before its legs). As ``L``'s lower bound it
        would slow HiGHS, and where the solver certifies its time would be lost.
        """
        from exactplace.bounds.packing import packing_falls_short

        problem, settings = self.problem, self.settings
        probing = bool(option(problem, "gap_probe")) and self.warm is not None and get_solver(
            self.solver).name == "cpsat"
        packing = bool(option(problem, "packing_bound"))
        short = packing and self.warm is not None and packing_falls_short(
            problem.graph, problem.cluster, self.warm, problem.rel_gap, overlap=self.overlap, gpipe=self.gpipe)
        deferred = short and probing
        if short:  # (replaced by the bound if the phase runs)
            self.info["packing_bound"] = (f"not run unless the {'gap probe' if probing else 'solver'} leaves the "
                                          "gap open (the start's compute-only max load shows it cannot certify)")
        if short and not probing:
            self.packing_last = self.phase_budget(settings.packing_seconds, settings.packing_fraction)
        elif packing and not deferred:
            self.packing(self.phase_budget(settings.packing_seconds, settings.packing_fraction))
        return probing, deferred

    def packing(self, budget: float | None) -> None:
        """The packing phase: the packing relaxation's proven bound (:mod:`exactplace.bounds.packing`) within
        ``budget`` seconds (None: no time for it), on ``L``'s lower bound and on the trace."""
        self.raise_lower(self._packing_bound(budget), "packing_bound")
        if self.lower is not None:
            self.before.append(TracePoint(self.now(), None, self.lower))

    def _packing_bound(self, budget: float | None) -> float | None:
        """The packing relaxation's bound on the IP's solver within ``budget`` seconds, recorded; None without."""
        from exactplace.bounds.packing import packing_bound
        from exactplace.formulations.throughput import unit_data

        if budget is None:
            return None
        graph = self.problem.graph
        try:
            found = packing_bound(unit_data(graph, graph.color), self.problem.cluster, gpipe=self.gpipe,
                                  time_limit=budget, threads=self.threads, solver=self.solver,
                                  settings=self.settings.packing)
        except ExactplaceError as error:  # a solver failing on the relaxation costs the bound, not the solve
            self.info["packing_bound"] = f"none ({error})"
            return None
        if found is None:
            return None
        self.timings["packing_bound"] = found.seconds
        self.info["packing_bound"] = found.value
        return found.value

    def polish_and_probe(self, probing: bool, deferred: bool) -> MethodResult | None:
        """The polish (:func:`~exactplace.improvers.polish.polish`), then the gap probe, from the warm start; their
        splits become the incumbent, the probe's bound ``L``'s lower bound. The incumbent, optimal, when the probe
        certifies it; Ctrl-C during either is raised again.

        With two threads or more and the packing phase put off (a start the packing bound cannot certify), both run
        at once on two cores (:func:`~exactplace.bounds.gap_probe.probe_beside_polish`): there only the probe can
        prove before the solver, and a probe that certifies the start needs no polish. Elsewhere the polished split
        with the packing bound is the road to a certificate, and a probe beside the polish would take CPU from it
        for a question the polish answers: there one search per thread polishes, until a split is certified by
        ``L``'s lower bound (``ended == "enough"``).
        """
        began = self.now()
        polish_budget = self.polish_budget() if option(self.problem, "polish") and self.warm is not None else None
        if probing and deferred and self.threads >= 2 and polish_budget is not None:
            assert self.warm is not None
            start = self.load_of(self.warm)
            probe_budget = self.probe_budget(start)
            if probe_budget is not None:
                return self._polished_and_probed(*self._polish_beside_probe(began, start, polish_budget, probe_budget))
        polished = None
        if polish_budget is not None:
            polished = self._polish(began, polish_budget)
            if polished.interrupted:
                return self._polished_and_probed(polished, None)
        probe = self._probe(began + (polished.seconds if polished is not None else 0.0)) if probing else None
        return self._polished_and_probed(polished, probe)

    def polish_budget(self) -> float | None:
        """Seconds for polishing the warm start: ``settings.polish_fraction`` of the time left
        (``polish_bounded_fraction`` when ``L``'s lower bound is proven already: the polish then ends once that
        bound certifies its split), at most ``polish_seconds``; None when it does not apply (GPipe, a start that is
        not a legal split, no time)."""
        problem, settings = self.problem, self.settings
        if self.gpipe:
            self.info["polish"] = "none (GPipe's max FW + max BW does not decompose by device sets)"
            return None
        fraction = settings.polish_bounded_fraction if self.lower is not None else settings.polish_fraction
        budget = self.phase_budget(settings.polish_seconds, fraction)
        if budget is not None and check_feasibility(problem.graph, problem.cluster, self.warm):
            self.info["polish"] = "none (the start is not a legal split)"
            return None
        return budget

    def probe_budget(self, start: float) -> float | None:
        """Seconds for the gap probe from a start of max load ``start``: ``settings.probe_fraction`` of the time
        left, at most ``probe_seconds``; None when ``L``'s lower bound certifies the start already, or no time."""
        if self.lower_certifies(start):
            return None
        return self.phase_budget(self.settings.probe_seconds, self.settings.probe_fraction)

    def _polish_beside_probe(self, began: float, start: float, polish_seconds: float,
                             probe_seconds: float) -> tuple[Polished, Probe]:
        """The polish and the probe at once, on two cores, recorded and put on the trace; the probe's split is the
        better of the two."""
        from exactplace.bounds.gap_probe import probe_beside_polish

        problem = self.problem
        polished, probe = probe_beside_polish(problem.graph, problem.cluster, self.warm, problem.rel_gap,
                                              overlap=self.overlap, lower_bound=self.lower,
                                              polish_seconds=polish_seconds, probe_seconds=probe_seconds,
                                              settings=self.settings.gap_probe, polish_settings=self.settings.polish)
        records.record_polish(polished, self.info, self.timings)
        records.record_probe(probe, start, self.info, self.timings)
        points = records.polish_points(began, polished) + records.probe_points(began, probe)
        self.before += sorted(points, key=lambda point: point.seconds)
        return polished, probe

    def _polish(self, began: float, budget: float) -> Polished:
        """The polish alone, one search per thread, aimed at what ``L``'s lower bound certifies (escalating its
        sub-IPs' limit where a sweep stalls, as several searches that escalate reach a certificate far more often
        than one that gives up); recorded, its split the incumbent."""
        from exactplace.improvers.polish import polish

        problem = self.problem
        enough = None if self.lower is None else self.certified_up_to(self.lower)
        polished = polish(problem.graph, problem.cluster, self.warm, overlap=self.overlap, time_limit=budget,
                          escalate=enough is not None, searches=self.threads, enough=enough,
                          settings=self.settings.polish)
        records.record_polish(polished, self.info, self.timings)
        self.before += records.polish_points(began, polished)
        self.warm = polished.device
        return polished

    def _probe(self, began: float) -> Probe | None:
        """Decision probes "is any split ``g`` better than the incumbent?" for each gap ``g`` of the ladder, then
        ``rel_gap`` (:func:`~exactplace.bounds.gap_probe.probe_gap`) on CP-SAT with one worker, within
        :meth:`probe_budget`; recorded and put on the trace (``began``: their start); None when they do not apply."""
        from exactplace.bounds.gap_probe import probe_gap

        problem, warm = self.problem, self.warm
        assert warm is not None
        start = self.load_of(warm)
        budget = self.probe_budget(start)
        if budget is None:
            return None
        found = probe_gap(problem.graph, problem.cluster, warm, problem.rel_gap, overlap=self.overlap,
                          gpipe=self.gpipe, lower_bound=self.lower, time_limit=budget,
                          settings=self.settings.gap_probe)
        records.record_probe(found, start, self.info, self.timings)
        self.before += records.probe_points(began, found)
        return found

    def _polished_and_probed(self, polished: Polished | None, probe: Probe | None) -> MethodResult | None:
        """Take what the polish and the probe found: their split the incumbent, the probe's bound ``L``'s lower
        bound; the incumbent, optimal, when the probe certifies it; Ctrl-C during either raised again."""
        if polished is not None:
            self.warm = polished.device
            if polished.interrupted and probe is None:
                raise KeyboardInterrupt
        if probe is not None:
            self.warm = probe.device  # (the better of the two when they ran together)
            self.raise_lower(probe.bound, "gap_probe")  # (a proven bound above the packing bound)
            if probe.outcome == "interrupted":
                raise KeyboardInterrupt
            if probe.outcome == "proven":
                return self.certified("cpsat", "gap_probe")
        return None

    # -- the solver -------------------------------------------------------------------------------------------------

    def solve(self, on: Problem, cancel: threading.Event | None = None, workers: int | None = None,
              racer: Racer | None = None, heard: Callable[[float], None] | None = None) -> Solved:
        """Build the IP and solve it from the incumbent on the current solver by ``on``'s deadline (or until
        ``cancel`` is set; ``workers``, ``racer``, ``heard``: :class:`~exactplace.methods.throughput_steps.IPSolve`'s).

        ``L``'s lower bound is the IP's ``L >= lower`` where the solver's search uses it
        (``Capabilities.objective_floor``: CP-SAT takes it as ``L``'s variable bound; and in a race, whose sides
        stop each other only when one decides). Elsewhere the IP goes without it (with the floor, every node's LP of
        HiGHS sits at it until the node's loads pass it, its pseudocosts and strong branching see no change, and
        its bound never leaves the floor), and the solve stops once its split is within ``rel_gap`` of the bound.
        """
        from exactplace.formulations.throughput import noncontiguous_ip

        problem, lower = self.problem, self.lower
        clock = time.perf_counter()
        floor, listen = lower, heard
        if lower is not None and racer is None and not get_solver(self.solver).capabilities.objective_floor:
            cancel = cancel or threading.Event()
            floor, listen = None, records.both(sets_at_most(self.certified_up_to(lower), cancel), heard)
        ip = noncontiguous_ip(problem.graph, problem.cluster, overlap=self.overlap, gpipe=self.gpipe,
                              lower_bound=floor)
        (self.timings if racer is None else racer.timings)["build"] = time.perf_counter() - clock
        try:
            return self.solve_built(ip, on, self.solver, self.warm, cancel, workers, racer, listen)
        except ExactplaceError as error:
            # A solver can end in an error status when L's lower bound sits a hair below the optimum: solve again
            # without it.
            if floor is None or "error status" not in str(error):
                raise
            (self.info if racer is None else racer.info)["lower_bound"] = f"{lower!r} (dropped: {error})"
            return self.solve_built(noncontiguous_ip(problem.graph, problem.cluster, overlap=self.overlap,
                                                     gpipe=self.gpipe),
                                    on, self.solver, self.warm, cancel, workers, racer, heard=heard)

    def companion(self, heard: Callable[[float], None] | None = None) -> Alongside | None:
        """The polish that runs beside a solve, on the core a one-core search leaves idle
        (:class:`~exactplace.improvers.polish.Alongside`, with ``heard``): when ``polish`` is on, two threads or
        more are allowed, not GPipe, and the incumbent is a legal split; else None."""
        from exactplace.improvers.polish import Alongside

        problem = self.problem
        if (not option(problem, "polish") or self.threads < 2 or self.gpipe or self.warm is None
                or check_feasibility(problem.graph, problem.cluster, self.warm)):
            return None
        return Alongside(problem.graph, problem.cluster, self.warm, overlap=self.overlap,
                         time_limit=problem.remaining(), heard=heard, settings=self.settings.polish)

    def _take_companion(self, result: MethodResult, companion: Alongside | None, found: Polished | None,
                        record: dict) -> None:
        """What the polish beside the solver found, in ``record["polish"]``; its split the result's when better."""
        if companion is not None and found is not None:
            self.beside, self.swapped = records.take_polished(self.problem, result, companion, found, self.overlap,
                                                              record)

    def solver_alone(self) -> Solved:
        """The IP on the IP's solver (no relay), with a companion on the core a one-core search leaves idle.

        Where ``L``'s lower bound is proven and two threads or more are given, the polish goes on beside the solver
        (on one thread fewer), and its split within ``rel_gap`` of that bound stops the solve: the split comes back
        certified by the bound (``info["beside_solver"]["polish"]``). Else, where the solver's search runs on one
        core and takes a seed (HiGHS): the set bound beside it, where it applies and the incumbent gives it a split
        to aim at (:meth:`_set_bound_beside`), else a second seed (:meth:`_race`). The packing phase kept for the
        end runs when the solver stopped short of a certificate (its time is not the solver's).
        """
        problem = self.problem
        on = problem if self.packing_last is None else dataclasses.replace(
            problem, deadline=problem.deadline - self.packing_last)
        closed = threading.Event()
        companion = None if self.lower is None else self.companion(
            heard=sets_at_most(self.certified_up_to(self.lower), closed))
        try:
            if companion is None and self.races() and self.bound_beside():
                result, out = self._set_bound_beside(on)
            elif companion is None and self.races():
                result, out = self._race(on)
            else:
                result, out = self.solve(on, closed, None if companion is None else self.threads - 1)
        finally:
            found = companion.stop() if companion is not None else None
        if companion is not None and found is not None:
            self.info["beside_solver"] = {}
            self._take_companion(result, companion, found, self.info["beside_solver"])
            if closed.is_set() and result.limit is Limit.INTERRUPT:
                result.limit = None  # (the polish's split and L's lower bound: certified, below)
        self.late_packing(result)
        return result, out

    def races(self) -> bool:
        """Whether a companion takes the core a one-core search leaves idle (:mod:`exactplace.improvers.race`):
        option ``race``, two threads or more, and a solver whose search runs on one core and takes a seed."""
        capabilities = get_solver(self.solver).capabilities
        return (bool(option(self.problem, "race")) and self.threads >= 2 and capabilities.seed
                and capabilities.serial_search)

    def bound_beside(self) -> bool:
        """Whether the set bound takes that core (instead of a second seed): option ``set_bound``, a split to aim
        at, and an instance the device-set relaxation applies to."""
        from exactplace.bounds.device_sets import set_bound_applies

        return (bool(option(self.problem, "set_bound")) and self.warm is not None
                and set_bound_applies(self.problem.graph, self.problem.cluster, overlap=self.overlap,
                                      gpipe=self.gpipe) is None)

    def _set_bound_beside(self, on: Problem) -> Solved:
        """The IP on one core fewer with the device-set bound on the other
        (:func:`~exactplace.improvers.race.beside_bound`), aimed at ``U (1 - rel_gap)`` for the solver's best split
        ``U`` as it reports it, with all the time left: its refutation stops the solve, whose split it certifies
        (``info["certified_by"] == "set_bound"``); its bound joins the solver's either way
        (``info["set_bound"]["beside"] == "solver"``); a split its branching finds is taken when better."""
        from exactplace.bounds.device_sets import set_bound

        problem, warm, lower = self.problem, self.warm, self.lower
        assert warm is not None
        start = max_load(problem.graph, problem.cluster, warm)
        began = self.now()

        def prove(best: Callable[[], float], stop: threading.Event) -> tuple[bool, SetBound]:
            def aim() -> float:
                return best() * (1.0 - problem.rel_gap)

            found = set_bound(problem.graph, problem.cluster, target=aim(), lower=lower, seeds=(warm,), aim=aim,
                              rel_gap=problem.rel_gap, time_limit=problem.remaining(), cancel=stop, patience=1.0)
            return found.outcome == "target refuted", found

        result, out, found = beside_bound(
            lambda stop, heard: self.solve(on, stop, self.threads - 1, heard=heard), prove, start)
        if isinstance(found, BaseException) or found is None:
            self.info["set_bound"] = f"beside the solver: failed ({found!r})"
            return result, out
        records.record_set_bound(found, self.info, self.timings, beside="solver", start=start)
        self.before += records.set_bound_points(began, found)
        self.raise_lower(found.value, "set_bound")
        if found.outcome == "target refuted" and result.limit is Limit.INTERRUPT:
            result.limit = None  # (stopped by the refutation, not Ctrl-C: certified, below)
        if found.split is not None and (result.device is None or found.split_value < self.load_of(result.device)):
            result.device, result.replicas, self.swapped = found.split, None, True  # branching's
            if result.status is Status.NO_SOLUTION:
                result.status = Status.FEASIBLE
        return result, out

    def _race(self, on: Problem) -> Solved:
        """The IP and a second seed of it on the core its search leaves idle (:func:`~exactplace.improvers.race.race`):
        the first to certify stops the other; ``info["race"]`` says what the second did. (The first side writes the
        method's info and timings, the second its own, with no log.)"""
        warm, threads, info, timings = self.warm, self.threads, self.info, self.timings
        shown = progress_printer(start=None if warm is None else self.load_of(warm)) if option(
            self.problem, "progress") else None
        result, out, info["race"] = race(
            lambda seed, stop: self.solve(
                on, stop, threads - 1 if seed == 0 else 1,
                Racer(seed, shown, info, timings) if seed == 0 else Racer(seed, shown, quiet=True)),
            self.load_of, settings=self.settings.race)
        return result, out

    def late_packing(self, result: MethodResult) -> None:
        """The packing phase kept for the end, when the solver stopped at its limit short of a certificate; Ctrl-C
        there leaves the solver's split and bound, interrupted."""
        if self.packing_last is not None and result.status is Status.FEASIBLE and result.limit is not Limit.INTERRUPT:
            try:
                self.packing(self.packing_last)
            except KeyboardInterrupt:  # the solver's split stands, its bound too
                result.limit = Limit.INTERRUPT

    # -- the relay --------------------------------------------------------------------------------------------------

    def relays(self) -> bool:
        """Whether ``"auto"`` runs the IP on CP-SAT for ``settings.cpsat_leg_seconds``, then on HiGHS from CP-SAT's
        split and bound for the rest of the time limit: when CP-SAT is ``"auto"``'s choice, HiGHS is installed and
        more than a second would be left to it; says so in ``info["solver"]``."""
        leg = self.settings.cpsat_leg_seconds
        if (self.solver != "auto" or get_solver(self.solver).name != "cpsat"
                or self.problem.remaining() <= leg + 1.0 or not get_solver("highs").available()):
            return False
        self.info["solver"] = (f"cpsat for {leg:g} s, then highs (solver='auto', non-contiguous, more than "
                               f"{self.settings.highs_max_accelerators} accelerators)")
        return True

    def relay(self) -> Solved:
        """CP-SAT's leg, then, when it has not closed ``rel_gap`` by its end, HiGHS's (:meth:`highs_leg`). The packing
        phase kept for the end runs first (the legs take ``L``'s lower bound from it)."""
        if self.packing_last is not None:
            self.packing(self.packing_last)
        leg = dataclasses.replace(self.problem, deadline=time.monotonic() + self.settings.cpsat_leg_seconds)
        result, out = self.solve(leg)
        if result.limit is Limit.TIME and result.status in (Status.FEASIBLE, Status.NO_SOLUTION):
            return self.highs_leg(result, out)
        return result, out

    def highs_leg(self, cpsat: MethodResult, out: Any) -> Solved:
        """HiGHS for the rest of the limit from what CP-SAT knows (its split the incumbent, its bound ``L``'s lower
        bound; ``info["relay"]``), the set bound first (:meth:`relay_set_bound`), the polish beside both
        (:meth:`companion`: the bound's pricing and LPs, as HiGHS's search, release the interpreter lock). The
        polish's split is the result's when better (``info["relay"]["polish"]["taken"]``); HiGHS's bound holds
        either way. The result's ``solver`` is ``"cpsat+highs"``."""
        handed = None if cpsat.device is None else self.load_of(cpsat.device)
        self.info["relay"] = {"cpsat": {"status": cpsat.status.value, "value": handed, "bound": cpsat.bound,
                                        "seconds": out.seconds}}
        self.timings["cpsat_leg"] = out.seconds
        self.before += cpsat.trace
        if cpsat.device is not None:
            self.warm = cpsat.device
        self.raise_lower(cpsat.bound, "cpsat")
        self.solver = "highs"
        companion = self.companion()
        try:
            bound = self.relay_set_bound(companion) if option(self.problem, "set_bound") else None
            if bound is not None and bound.outcome in ("target refuted", "interrupted"):
                result, out = self.set_bound_ends(bound), None
            else:
                result, out = self.solve(self.problem)
        finally:
            found = companion.stop() if companion is not None else None
        result.solver = "cpsat+highs"
        self._take_companion(result, companion, found, self.info["relay"])
        return result, out

    def relay_set_bound(self, companion: Alongside | None) -> SetBound | None:
        """The set bound between the legs (:meth:`set_bound`): its bound ``L``'s lower bound, a better split its
        branching finds the incumbent (HiGHS's start), both on the trace."""
        began = self.now()
        bound = self.set_bound(companion)
        if bound is not None:
            self.raise_lower(bound.value, "set_bound")
            self.before += records.set_bound_points(began, bound)
        if bound is not None and bound.split is not None and bound.split_value < self.load_of(self.warm):
            self.warm = bound.split  # branching's split (the evaluator's max load): HiGHS's start
            self.before.append(TracePoint(began + bound.seconds, bound.split_value, None))
        return bound

    def set_bound(self, companion: Alongside | None) -> SetBound | None:
        """The device-set relaxation's bound (:mod:`exactplace.bounds.device_sets`), aimed at certifying the best
        split within ``rel_gap`` (the incumbent's, then the ``companion``'s as it improves; branching past the
        relaxation's limit, its master's roundings offered to the companion), for ``settings.set_bound_fraction``
        of the time left; None when it does not apply or ``L``'s lower bound certifies already."""
        from exactplace.bounds.device_sets import set_bound, set_bound_applies

        problem, warm, lower = self.problem, self.warm, self.lower
        why_not = set_bound_applies(problem.graph, problem.cluster, overlap=self.overlap, gpipe=self.gpipe)
        if why_not is not None or warm is None:
            self.info["set_bound"] = f"none ({why_not or 'no split to certify'})"
            return None
        value = max_load(problem.graph, problem.cluster, warm)
        target = value * (1.0 - problem.rel_gap)
        if lower is not None and lower >= target:
            return None
        aim = None if companion is None else (lambda: companion.best() * (1.0 - problem.rel_gap))
        found = set_bound(problem.graph, problem.cluster, target=target, lower=lower, seeds=(warm,), aim=aim,
                          rel_gap=problem.rel_gap, time_limit=self.settings.set_bound_fraction * problem.remaining(),
                          offer=None if companion is None else companion.offer)
        records.record_set_bound(found, self.info, self.timings, start=value, target=target)
        return found

    def set_bound_ends(self, bound: SetBound) -> MethodResult:
        """The relay's result when the set bound ends it: refuted, the best split (CP-SAT's or, taken later, the
        polish's, whose value the target followed) is within ``rel_gap`` of every split, no IP to solve
        (``info["certified_by"] == "set_bound"``); interrupted, what is known."""
        refuted = bound.outcome == "target refuted"
        if refuted:
            self.info["certified_by"] = "set_bound"
        return MethodResult(self.warm, Status.OPTIMAL if refuted else Status.FEASIBLE, bound=self.lower,
                            limit=None if refuted else Limit.INTERRUPT, solver="highs", space=Space.ANY,
                            info=self.info, timings=self.timings)
