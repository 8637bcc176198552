"""The latency program's solve: ``solve(objective="latency", method="mip")``, :class:`LatencyMIP`.

It runs :mod:`exactplace.formulations.latency` (paper Fig. 3 with ``q=1``, Fig. 4 with ``q``
subgraphs per accelerator) on any solver through :func:`exactplace.solvers.program.solve_ip`:

1. *Starts* (:func:`exactplace.improvers.latency_starts.warm_start_candidates`), each scored once
   by the evaluator; with ``q >= 2`` also the best ``q=1`` placement, from a ``q=1`` run on half
   the time (so a ``q >= 2`` run never ends above what ``q=1`` finds).
2. With ``q=1`` (unless ``path_bound=False``) the path DP's lower bound
   (:mod:`exactplace.bounds.latency_path`), whose argmin chains start the search too: a start
   within ``rel_gap`` of it is returned at once, optimal, without a solver; else it is the floor.
3. The program, its horizon the best start's latency, solved from that start; its bound lowered by
   the program's rounding allowance, never below the path bound. The result's space is
   ``Space.SUBGRAPHS`` with its ``q``; for ``q >= 2`` it names each accelerator node's ``subgraph``.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from exactplace.core.errors import ExactplaceError, ParameterError, PlacementError, SolverUnavailableError
from exactplace.core.graph import Graph
from exactplace.core.placement import Limit, Space, Status, TracePoint
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators.feasibility import Guarantees, memory_summary
from exactplace.evaluators.latency import contiguous_pieces, latency
from exactplace.methods.base import usable_cpus
from exactplace.methods.mip_options import option, refuse_too_large, with_default_limit
from exactplace.methods.mip_settings import DEFAULT_MIP, MIPSettings
from exactplace.methods.rules import MIP_LATENCY_RULES, Rule
from exactplace.solvers.program import progress_printer, solve_ip

__all__ = ["LatencyMIP", "estimated_nonzeros", "solve_latency"]


def estimated_nonzeros(problem: Problem, q: int) -> int:
    """About how many nonzeros the latency program for ``problem`` has (an upper estimate from n, m, k and q)."""
    return problem.cluster.accelerators * q * (12 * problem.graph.n + 20 * problem.graph.m)


class LatencyMIP:
    """The latency program (paper §4; module docstring), tuned by ``settings``.

    >>> from exactplace import read_workload, solve, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> p = solve(w, objective="latency", method="mip", time_limit=30, threads=2)
    >>> p.status.value, round(p.objective, 3), p.info["certified_by"]
    ('optimal', 92.406, 'path_bound')
    >>> p = solve(w, objective="latency", method="mip", time_limit=30, threads=2, path_bound=False)
    >>> p.status.value, round(p.objective, 3), p.solver
    ('optimal', 92.406, 'cpsat')
    """

    #: The objective's option rules, checked in order after the size and the rules every objective shares.
    rules: tuple[Rule, ...] = MIP_LATENCY_RULES

    def __init__(self, settings: MIPSettings = DEFAULT_MIP) -> None:
        self.settings = settings

    def refuse_too_large(self, problem: Problem) -> None:
        """Raise TooLargeError when the program is larger than ``settings.max_nonzeros``."""
        refuse_too_large(problem, estimated_nonzeros(problem, int(option(problem, "q"))), self.settings,
                         "method 'greedy'.")

    @staticmethod
    def check_device_rules(problem: Problem) -> None:
        """Refuse device rules that tell CPU cores apart: the program runs every core alike."""
        if problem.rules.tells_cpus_apart(problem.cluster.accelerators):
            raise ParameterError("Method 'mip' does not hold rules that tell CPU cores apart (a pin to one core "
                                 "beside another, a forbidden core) for the latency objective.")

    @staticmethod
    def promises(problem: Problem) -> Guarantees:
        """Only the basics: CPU nodes are placed freely, so the CPU's node set is not contiguous."""
        return Guarantees()

    def run(self, problem: Problem) -> MethodResult:
        """Solve the latency program for ``problem`` with its ``q`` (module docstring)."""
        info: dict[str, Any] = {}
        problem = with_default_limit(problem, info, self.settings)
        q = int(option(problem, "q"))
        result = solve_latency(problem, q=q, solver=option(problem, "solver"), threads=option(problem, "threads"),
                               log=bool(option(problem, "log")), progress=bool(option(problem, "progress")),
                               use_path_bound=bool(option(problem, "path_bound")), info=info, settings=self.settings)
        result.q = q
        return result


@dataclass(frozen=True)
class Start:
    """A placement to start from: its name, devices, subgraphs (None: the evaluator's cut) and latency."""

    name: str
    device: np.ndarray
    subgraph: np.ndarray | None
    latency: float


def _most_subgraphs(graph: Graph, accelerators: int, device: np.ndarray, subgraph: np.ndarray | None) -> int:
    """The most subgraphs one accelerator runs (its own, else the evaluator's cut)."""
    if subgraph is not None:
        return max((len(np.unique(subgraph[device == d])) for d in range(accelerators)), default=0)
    return max((int(contiguous_pieces(graph, device == d).max(initial=0)) for d in range(accelerators)), default=0)


def _starts(problem: Problem, candidates: dict[str, tuple[np.ndarray, np.ndarray | None]], q: int) -> list[Start]:
    """The default and user starts and ``candidates`` the evaluator can run, each scored once, with at
    most ``q`` subgraphs; best first."""
    from exactplace.improvers.latency_starts import warm_start_candidates
    from exactplace.methods.registry import start_from

    every = {name: (device, None) for name, device in warm_start_candidates(problem, start_from).items()}
    if problem.warm_start is not None:
        every["user"] = (np.asarray(problem.warm_start), problem.warm_subgraph)
    every.update(candidates)
    return _score(problem, every, q)


def _score(problem: Problem, every: dict[str, tuple[np.ndarray, np.ndarray | None]], q: int) -> list[Start]:
    """The placements of ``every`` the evaluator can run with at most ``q`` subgraphs, scored; best first."""
    graph, cluster = problem.graph, problem.cluster
    starts = []
    for name, (device, subgraph) in every.items():
        if problem.rules is not None and problem.rules.broken_by(device, cluster.accelerators):
            continue
        try:
            value = latency(graph, cluster, device, subgraph)
        except PlacementError:  # subgraphs that wait on each other: no start
            continue
        if math.isfinite(value) and _most_subgraphs(graph, cluster.accelerators, device, subgraph) <= q:
            starts.append(Start(name, device, subgraph, value))
    return sorted(starts, key=lambda s: s.latency)


#: Why the path DP gave no bound, by its ``status``.
_NO_BOUND = {"too_many_ideals": "none (more reduced ideals than it enumerates)",
             "over_budget": "none (its tables would exceed its memory budget)", "time": "none (out of time)"}


def _path_bound(problem: Problem, deadline: float, info: dict, timings: dict,
                fraction: float) -> tuple[float | None, dict[str, tuple[np.ndarray, None]]]:
    """The path DP's lower bound (:mod:`exactplace.bounds.latency_path`), within ``fraction`` of the time
    left, and the placements of its argmin chains as starts (``path_chain``, ``path_chain1``)."""
    from exactplace.bounds.latency_path import path_bound

    clock = time.monotonic()
    details: dict = {}
    try:
        found = path_bound(problem.graph, problem.cluster, deadline=clock + max(deadline - clock, 0.0) * fraction,
                           info=details)
    except SolverUnavailableError as error:  # the native DP is not built: the program runs without it
        info["path_bound"] = f"none ({error})"
        return None, {}
    timings["path_bound"] = time.monotonic() - clock
    info["path_bound_dp"] = {key: details[key] for key in ("status", "ideals", "pairs")}
    if found is None or not math.isfinite(found.value):
        info["path_bound"] = _NO_BOUND.get(details.get("status"), "none") if found is None else "none (infinite)"
        return None, {}
    chains = {f"path_chain{i or ''}": (device, None) for i, device in enumerate(found.placements)}
    # The DP adds floats in another order than the evaluator (relative error about n * 1e-16):
    # keep a hair below its value, well inside the 1e-12 by which a gap counts as closed.
    value = found.value * (1 - 1e-13)
    info["path_bound"] = value
    return value, chains


def solve_latency(problem: Problem, *, q: int, solver: str, threads: int | None, log: bool, progress: bool,
                  use_path_bound: bool, info: dict, settings: MIPSettings = DEFAULT_MIP) -> MethodResult:
    """Solve the latency program for ``problem``; see the module docstring (``settings``: the path DP's share of
    the time, CP-SAT's workers)."""
    graph, cluster = problem.graph, problem.cluster
    clock = time.monotonic()
    info.update(q=q)
    timings: dict[str, float] = {}
    deadline = problem.deadline if problem.deadline is not None else math.inf
    space = Space.SUBGRAPHS
    if cluster.accelerators == 0:  # one placement: every node on a CPU (they run as if on cores of their own)
        device = np.zeros(graph.n, dtype=np.int64)
        if problem.rules is not None and problem.rules.broken_by(device, 0):
            info["reason"] = f"the only placement (every node on a CPU, no accelerator) breaks {problem.rules.what}"
            return MethodResult(None, Status.INFEASIBLE, space=space, info=info)
        info["only_placement"] = "no accelerator: every node on a CPU"
        return MethodResult(device, Status.OPTIMAL, bound=latency(graph, cluster, device), space=space, info=info)
    starts: list[Start] = []
    try:
        extra: dict[str, tuple[np.ndarray, np.ndarray | None]] = {}
        if q > 1:  # the q=1 optimum (or best found) on half the time: q >= 2 never ends above it
            half = None if math.isinf(deadline) else clock + (deadline - clock) / 2
            if progress:
                print("  q=1 first (its placement starts the q>=2 search), on half the time:", file=sys.stderr)
            first = solve_latency(dataclasses.replace(problem, deadline=half), q=1, solver=solver, threads=threads,
                                  log=False, progress=progress, use_path_bound=use_path_bound, info={},
                                  settings=settings)
            info["q1"] = {"status": first.status.value, "solver": first.solver, "seconds": time.monotonic() - clock}
            if first.limit is Limit.INTERRUPT:  # Ctrl-C during the q=1 run: stop with what it found
                info.update(interrupted=True, returned="q=1 placement")
                return dataclasses.replace(first, bound=None, space=space, info=info)
            if first.device is not None:
                extra["q1"] = (first.device, None)
            if progress:
                print(f"  q={q}:", file=sys.stderr)
        starts = _starts(problem, extra, q)
        timings["warm_start"] = time.monotonic() - clock
        info["warm_start_candidates"] = {s.name: s.latency for s in starts}
        lower = None
        if q == 1 and use_path_bound:
            lower, chains = _path_bound(problem, deadline, info, timings, settings.path_bound_fraction)
            if chains:  # the bound's own placements start the search too
                starts = sorted([*starts, *_score(problem, chains, q)], key=lambda s: s.latency)
                info["warm_start_candidates"] = {s.name: s.latency for s in starts}
    except KeyboardInterrupt:  # Ctrl-C before the solver ran: the best start is still a placement
        info.update(interrupted=True, returned="warm start")
        best = starts[0] if starts else None
        return MethodResult(best.device if best else None, Status.FEASIBLE if best else Status.NO_SOLUTION,
                            limit=Limit.INTERRUPT, space=space, subgraph=best.subgraph if best else None,
                            timings=timings, info=info)

    if lower is not None and starts and starts[0].latency - lower <= (problem.rel_gap + 1e-12) * starts[0].latency:
        return _certified(starts[0], lower, problem.started, log, progress, space, timings, info)

    built = time.monotonic()
    ip, start, values = _program(problem, q, starts, lower)
    timings["build"] = time.monotonic() - built
    info.update(variables=ip.model.num_vars, rows=ip.model.num_rows, indicator_rows=ip.model.indicators.count,
                scale=ip.data.scale)
    if start is not None:
        info.update(warm_start=start.name, warm_start_latency=start.latency)
    from exactplace.solvers import get_solver

    workers = threads or (settings.latency_cpsat_workers if get_solver(solver).name == "cpsat" else usable_cpus())
    result, out = solve_ip(problem, ip, solver, warm=None if start is None else start.device, values=values,
                           threads=int(workers), log=log, progress=progress, space=space, info=info, timings=timings)
    if result.status is Status.INFEASIBLE:
        info["reason"] = (f"no placement with at most {q} subgraph{'s' if q > 1 else ''} per accelerator fits "
                          f"the memory, support and colour classes ({memory_summary(graph, cluster)})")
    if result.device is None:
        return result
    if out.values is not None:
        result.subgraph = ip.decode_subgraph(out.values)
        info["model_latency"] = out.objective
        value = latency(graph, cluster, result.device, result.subgraph)
        _agree(ip, value, out.objective)
    else:  # the start came back
        result.subgraph = start.subgraph
        value = start.latency
    # Never below the path bound, nor the critical path at the cheapest devices (the program's floor).
    floor = max(lower if lower is not None else -math.inf, ip.data.low / ip.data.scale)
    result.bound = min(value, max(floor, result.bound if result.bound is not None else floor))
    return result


def _certified(start: Start, lower: float, started: float, log: bool, progress: bool, space: Space, timings: dict,
               info: dict) -> MethodResult:
    """The best start, proven optimal by the path bound alone."""
    info.update(warm_start=start.name, warm_start_latency=start.latency, certified_by="path_bound")
    # A gap within the DP's float noise is no gap: report the start as its own bound.
    bound = start.latency if start.latency - lower <= 1e-12 * start.latency else lower
    trace = [TracePoint(time.monotonic() - started, start.latency, bound)]
    if log:
        print(f"path bound {lower:.6g} certifies the warm start {start.name!r} (latency {start.latency:.6g}); "
              "no solver run", file=sys.stderr, flush=True)
    if progress:
        progress_printer()(trace[0])
    return MethodResult(start.device, Status.OPTIMAL, bound=bound, solver="path_bound", space=space,
                        trace=trace, subgraph=start.subgraph, timings=timings, info=info)


def _program(problem: Problem, q: int, starts: list[Start], lower: float | None) -> tuple[Any, Start | None, Any]:
    """The program with the best start that lies in it, and that start's values.

    The horizon is the start's latency; a start the program rejects (memory rounded to its
    units) is passed over, and the program rebuilt with the next start's horizon.
    """
    from exactplace.formulations.latency import latency_ip

    graph, cluster = problem.graph, problem.cluster
    ip = horizon = None
    for start in starts:
        if ip is None or start.latency > horizon:
            ip, horizon = latency_ip(graph, cluster, q, upper=start.latency, lower=lower,
                                     rules=problem.rules), start.latency
        values = ip.encode(start.device, start.subgraph)
        if values is not None:
            return ip, start, values
    return latency_ip(graph, cluster, q, lower=lower, rules=problem.rules), None, None


def _agree(ip: Any, value: float, model_value: float) -> None:
    """The evaluator's latency of the program's own solution is never above the program's beyond
    its rounding (every duration rounded down by less than a unit): else the formulation is wrong."""
    data = ip.data
    tolerance = (data.graph.n + 2 * len(data.cost) + 2) / data.scale
    if value > model_value + tolerance:
        raise ExactplaceError(
            f"The latency program values its own placement at {model_value!r}, below the evaluator's {value!r}. "
            "This is a bug in the formulation; please report it.")
