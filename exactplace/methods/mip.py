"""``method="mip"``: a program on any solver adapter, one method name for two objectives.

Throughput: the max-load IP, contiguous (chain of ideals, the DP's space) or not (any split of the colour classes,
through the non-contiguous portfolio): :class:`~exactplace.methods.throughput_mip.ThroughputMIP`. Latency: the
latency program (paper §4, Fig. 3 and Fig. 4 with ``q``): :class:`~exactplace.methods.latency_mip.LatencyMIP`.
:class:`MIP` is what the registry lists: its options, and :meth:`MIP.implementation`, where the objective picks
the program. Its tuning: :attr:`MIP.settings`. How a formulation plugs in: build a ``Model`` in ``formulations/``
with ``decode`` / ``encode`` / ``bound_slack`` and call :func:`exactplace.solvers.program.solve_ip`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from exactplace.core.placement import Space
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators.feasibility import Guarantees
from exactplace.methods.base import Method
from exactplace.methods.mip_options import CHAIN_SPLITS, MIP_OPTIONS
from exactplace.methods.mip_settings import DEFAULT_MIP, MIPSettings
from exactplace.methods.rules import MIP_RULES, check_rules

if TYPE_CHECKING:
    from exactplace.methods.latency_mip import LatencyMIP
    from exactplace.methods.throughput_mip import ThroughputMIP

__all__ = ["MIP"]


class MIP(Method):
    """The max-load IP, contiguous (chain of ideals) or not, and the latency program (paper §4,
    :mod:`exactplace.methods.latency_mip`), on HiGHS, CP-SAT, SCIP, CBC or Gurobi.

    >>> from exactplace import read_workload, solve, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> p = solve(w, method="mip", solver="highs")
    >>> p.status.value, round(p.objective, 4), p.space.value, p.gap <= 0.01
    ('optimal', 17.7899, 'chain', True)
    """

    name = "mip"
    objectives = ("throughput", "latency")
    exact = True
    space = Space.CHAIN
    guarantee = CHAIN_SPLITS
    description = ("max-load IP (contiguous: chain of ideals = the DP's space; or any split) on a MIP/CP solver; "
                   "latency program (Fig. 3, Fig. 4 with q)")
    options = MIP_OPTIONS
    device_rules = True

    settings: ClassVar[MIPSettings] = DEFAULT_MIP
    """The tuning every run of the method uses (:mod:`exactplace.methods.mip_settings`). To run
    :func:`~exactplace.solve` with other tuning, replace it for the while: say, in a test,
    ``monkeypatch.setattr(MIP, "settings", dataclasses.replace(DEFAULT_MIP, polish_seconds=0.0))``; or run a
    program directly, ``ThroughputMIP(settings).run(problem)``."""

    @classmethod
    def implementation(cls, problem: Problem) -> ThroughputMIP | LatencyMIP:
        """The program for the problem's objective, with :attr:`settings`: the latency program for ``"latency"``,
        else the max-load IP (a ``makespan`` problem is solved for throughput, then scored)."""
        if problem.objective == "latency":
            from exactplace.methods.latency_mip import LatencyMIP

            return LatencyMIP(cls.settings)
        from exactplace.methods.throughput_mip import ThroughputMIP

        return ThroughputMIP(cls.settings)

    @classmethod
    def check(cls, problem: Problem) -> None:
        """A program of a size it builds, then the option rules: those of every objective, then the objective's
        own (the throughput IP refuses the latency options, the latency program the throughput IP's)."""
        implementation = cls.implementation(problem)
        implementation.refuse_too_large(problem)
        check_rules(problem, (*MIP_RULES, *implementation.rules), cls, named=False)
        if problem.rules is not None:
            implementation.check_device_rules(problem)

    @classmethod
    def promises(cls, problem: Problem) -> Guarantees:
        """Chain splits when contiguous (forward parts contiguous and ordered); else only the basics."""
        return cls.implementation(problem).promises(problem)

    @classmethod
    def outlook(cls, problem: Problem) -> str:
        """How long it may run: the time limit, or its default one."""
        limit = problem.remaining() if problem.deadline is not None else cls.settings.default_time_limit
        return f"exact; certified when the program closes, else stopped after {limit:.3g} s with its gap"

    def run(self, problem: Problem) -> MethodResult:
        """Solve ``problem`` with the program for its objective."""
        return self.implementation(problem).run(problem)
