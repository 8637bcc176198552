"""The max-load IP (``formulations/throughput.py``) on any solver adapter: ``solve(method="mip")`` for throughput.

``contiguous=True`` (default) solves the chain-of-ideals IP, whose space is the DP's (``Space.CHAIN``): the
optimum equals the DP's, and the MIP adds a certified gap at a time limit and the variants the DP lacks
(``gpipe``, two-level clusters, replication). ``contiguous=False`` solves the assignment IP over colour classes
(``Space.ANY``) through the non-contiguous portfolio (:class:`~exactplace.methods.portfolio.NonContiguousPortfolio`).
The result's ``bound`` is the solver's dual bound over that space, ``trace`` its (seconds since ``solve`` began,
incumbent, bound) progress; the objective is the evaluator's, and a solver objective that disagrees with it beyond
rounding is raised as a bug. Warm start: the given ``warm_start``, else (``"auto"``) the DP's optimum when the DP
suits the instance, else DPL, else greedy (:func:`~exactplace.methods.throughput_steps.warm_start`); a start
outside the IP's space is dropped and ``info["warm_start"]`` says so.
"""

from __future__ import annotations

import time

from exactplace.core.errors import ParameterError
from exactplace.core.placement import Space
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators.feasibility import Guarantees
from exactplace.methods.base import usable_cpus
from exactplace.methods.mip_options import CHAIN_SPLITS, option, refuse_too_large, with_default_limit
from exactplace.methods.mip_settings import DEFAULT_MIP, MIPSettings
from exactplace.methods.portfolio import NonContiguousPortfolio
from exactplace.methods.rules import MIP_THROUGHPUT_RULES, Rule
from exactplace.methods.throughput_steps import IPSolve, finish, interrupted, warm_start
from exactplace.solvers import get_solver

__all__ = ["ThroughputMIP", "estimated_nonzeros"]


def estimated_nonzeros(problem: Problem, contiguous: bool) -> int:
    """About how many nonzeros the max-load IP for ``problem`` has (an upper estimate from n, m and the devices)."""
    n, m = problem.graph.n, problem.graph.m
    devices = problem.cluster.num_devices
    if not contiguous:
        return devices * (3 * n + 7 * m)
    # Heterogeneous: the contiguous IP has one accelerator variable per type at every position.
    types = 1 if problem.cluster.is_homogeneous else len(problem.cluster.accelerator_types())
    return devices * ((4 + 8 * types) * n + (3 + 6 * types) * m)


class ThroughputMIP:
    """The max-load IP, contiguous (chain of ideals) or not (module docstring), tuned by ``settings``.

    >>> from exactplace import read_workload, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> problem = Problem(w.graph, w.cluster, "throughput", time.monotonic() + 30, options={"solver": "highs"})
    >>> found = ThroughputMIP().run(problem)
    >>> found.status.value, found.space.value
    ('optimal', 'chain')
    """

    #: The objective's option rules, checked in order after the size and the rules every objective shares.
    rules: tuple[Rule, ...] = MIP_THROUGHPUT_RULES

    def __init__(self, settings: MIPSettings = DEFAULT_MIP) -> None:
        self.settings = settings

    def refuse_too_large(self, problem: Problem) -> None:
        """Raise TooLargeError when the IP is larger than ``settings.max_nonzeros``."""
        size = estimated_nonzeros(problem, bool(option(problem, "contiguous")))
        refuse_too_large(problem, size, self.settings, "method 'dp' or 'dpl' (exact over chain splits), or 'greedy'.")

    @staticmethod
    def check_device_rules(problem: Problem) -> None:
        """Refuse the device rules (``Problem.rules``) the program does not hold: any on a two-level cluster or
        with replication, and, contiguous, rules that tell CPU cores apart (the assignment IP holds those)."""
        rules = problem.rules
        if problem.cluster.is_two_level:
            raise ParameterError(f"Method 'mip' does not hold {rules.what} on a two-level cluster.")
        if option(problem, "replication"):
            raise ParameterError(f"Method 'mip' does not hold {rules.what} with replication=True.")
        if option(problem, "contiguous") and rules.tells_cpus_apart(problem.cluster.accelerators):
            raise ParameterError("Method 'mip' holds rules that tell CPU cores apart (a pin to one core beside "
                                 "another, a forbidden core) only with contiguous=False.")

    @staticmethod
    def promises(problem: Problem) -> Guarantees:
        """Chain splits when contiguous (forward parts contiguous and ordered); else only the basics."""
        return CHAIN_SPLITS if option(problem, "contiguous") else Guarantees()

    def run(self, problem: Problem) -> MethodResult:
        """Solve the max-load IP for ``problem`` (module docstring)."""
        info: dict = {}
        problem = with_default_limit(problem, info, self.settings)
        overlap, gpipe = bool(problem.option("overlap")), bool(problem.option("gpipe"))
        contiguous = bool(option(problem, "contiguous"))
        solver = self.solver(problem, contiguous, info)
        solve = IPSolve(int(option(problem, "threads") or usable_cpus()), bool(option(problem, "log")),
                        bool(option(problem, "progress")), Space.CHAIN if contiguous else Space.ANY, info, {})
        if not contiguous and problem.rules is None:
            return NonContiguousPortfolio(problem, self.settings, solve, solver, overlap=overlap, gpipe=gpipe).run()
        return self._one_program(problem, solve, solver, overlap, gpipe, contiguous)

    @staticmethod
    def _one_program(problem: Problem, solve: IPSolve, solver: str, overlap: bool, gpipe: bool,
                     contiguous: bool) -> MethodResult:
        """One IP solved from the warm start: the chain-of-ideals IP (the two-level IP on a two-level cluster),
        or, under device rules, the assignment IP alone (the portfolio's other phases know no rules)."""
        from exactplace.formulations.throughput import contiguous_ip, noncontiguous_ip

        info, timings = solve.info, solve.timings
        warm = problem.warm_start
        space = Space.CHAIN if contiguous else Space.ANY
        try:
            warm = warm_start(problem, info, timings)
            clock = time.perf_counter()
            if not contiguous:
                ip = noncontiguous_ip(problem.graph, problem.cluster, overlap=overlap, gpipe=gpipe, rules=problem.rules)
            elif problem.cluster.is_two_level:
                from exactplace.formulations.two_level import two_level_ip

                ip = two_level_ip(problem.graph, problem.cluster, problem.contraction, overlap=overlap, gpipe=gpipe)
            else:
                ip = contiguous_ip(problem.graph, problem.cluster, problem.contraction, overlap=overlap, gpipe=gpipe,
                                   replication=bool(option(problem, "replication")), rules=problem.rules)
            timings["build"] = time.perf_counter() - clock
            result, out = solve(ip, problem, solver, warm)
        except KeyboardInterrupt:
            return interrupted(warm, None, solver, space, [], info, timings)
        return finish(problem, result, out, overlap=overlap, gpipe=gpipe)

    def solver(self, problem: Problem, contiguous: bool, info: dict) -> str:
        """The ``solver`` option, except that ``"auto"`` takes HiGHS (when installed) for the non-contiguous
        IP on at most ``settings.highs_max_accelerators`` accelerators, and says so in ``info["solver"]``."""
        chosen = str(option(problem, "solver"))
        most = self.settings.highs_max_accelerators
        if (chosen == "auto" and not contiguous and problem.cluster.accelerators <= most
                and get_solver("highs").available()):
            info["solver"] = f"highs (solver='auto', non-contiguous, at most {most} accelerators)"
            return "highs"
        return chosen
