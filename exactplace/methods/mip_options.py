"""What ``method="mip"`` takes, for both of its programs: its options, their values, its default time limit and size.

:data:`MIP_OPTIONS` are the options :class:`~exactplace.methods.mip.MIP` declares (their help strings built from
:data:`~exactplace.methods.mip_settings.DEFAULT_MIP`); :func:`option` reads one for a problem, as
:meth:`Method.setting <exactplace.methods.base.Method.setting>` does. The throughput IP
(:class:`~exactplace.methods.throughput_mip.ThroughputMIP`) and the latency program
(:class:`~exactplace.methods.latency_mip.LatencyMIP`) share the rest.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from exactplace.core.errors import TooLargeError
from exactplace.core.params import Boolean, Choice, Integer, Option
from exactplace.core.problem import Problem
from exactplace.evaluators.feasibility import Guarantees
from exactplace.methods.base import THREADS
from exactplace.methods.mip_settings import DEFAULT_MIP, MIPSettings

__all__ = ["CHAIN_SPLITS", "MIP_OPTIONS", "SOLVER_NAMES", "mip_options", "option", "refuse_too_large",
           "with_default_limit"]

SOLVER_NAMES = ("auto", "highs", "cpsat", "scip", "cbc", "gurobi")

#: What a contiguous split always satisfies: forward parts contiguous and in chain order.
CHAIN_SPLITS = Guarantees(forward_contiguous=True, chain_order=True)


def mip_options(settings: MIPSettings = DEFAULT_MIP) -> dict[str, Option]:
    """The options of ``method="mip"``, their help strings stating ``settings``' numbers."""
    s = settings
    ladder = ", then ".join(f"{gap:.0%}" for gap in s.gap_probe.ladder)
    return {
        "q": Option("q", Integer(low=1, high=16), 1,
                    "latency: subgraphs per accelerator, run one at a time (1: contiguous, Fig. 3; >1: Fig. 4)"),
        "path_bound": Option("path_bound", Boolean(), True,
                             "latency, q=1: bound by the path DP over ideals (exact on chain-like layer graphs; "
                             "a start it certifies is returned without a solver)"),
        "solver": Option("solver", Choice(SOLVER_NAMES), "auto",
                         "the solver ('auto': the fastest installed; HiGHS for contiguous=False on at most "
                         f"{s.highs_max_accelerators} accelerators)"),
        "contiguous": Option("contiguous", Boolean(), True,
                             "True: chain splits (the DP's space); False: any split of the colour classes"),
        "replication": Option("replication", Boolean(), False,
                              "throughput, contiguous: stages may run on r identical accelerators (paper Appendix "
                              "C.2), load (compute + comm + sync (r-1)/r) / r; homogeneous clusters"),
        "packing_bound": Option("packing_bound", Boolean(), True,
                                "contiguous=False: first bound the max load by the packing relaxation (no "
                                f"communication, no memory) for up to {s.packing_fraction:.0%} of the time, and add "
                                "it as a row"),
        "polish": Option("polish", Boolean(), True,
                         "contiguous=False: first improve the warm start by exact re-optimization of device pairs "
                         "and triples (exactplace.improvers.polish), one search per thread, for up to "
                         f"{s.polish_fraction:.0%} of the time ({s.polish_bounded_fraction:.0%} where the packing "
                         "bound is proven: it ends once that bound certifies), and go on beside HiGHS's leg of the "
                         "relay (two threads or more)"),
        "gap_probe": Option("gap_probe", Boolean(), True,
                            f"contiguous=False on CP-SAT: then ask whether any split is {ladder}, then rel_gap, "
                            "better than the start (exactplace.bounds.gap_probe) for up to "
                            f"{s.probe_fraction:.0%} of the time; a refutation is a bound"),
        "set_bound": Option("set_bound", Boolean(), True,
                            "contiguous=False, in the relay (solver='auto', more than "
                            f"{s.highs_max_accelerators} accelerators, over {s.cpsat_leg_seconds:g} s): after "
                            "CP-SAT's leg, bound by column generation over device sets "
                            f"(exactplace.bounds.device_sets) for {s.set_bound_fraction:.0%} of the time left; "
                            "where HiGHS runs alone (two threads or more), beside it on the idle core instead of a "
                            "second seed (option race); a refuted target certifies"),
        "race": Option("race", Boolean(), True,
                       "contiguous=False on HiGHS with nothing beside it (two threads or more): a second solve with "
                       "another seed on the core HiGHS's search leaves idle; the first to certify stops the other"),
        "threads": THREADS,
        "log": Option("log", Boolean(), False, "stream the solver's log to stderr"),
        "progress": Option("progress", Boolean(), False, "print incumbent, bound and gap on stderr as they move"),
    }


#: The options ``method="mip"`` declares.
MIP_OPTIONS = mip_options()


def option(problem: Problem, name: str) -> Any:
    """The value of one of ``method="mip"``'s options: the given one, else its declared default."""
    return problem.options.get(name, MIP_OPTIONS[name].default)


def with_default_limit(problem: Problem, info: dict, settings: MIPSettings) -> Problem:
    """``problem`` with the default deadline (``settings.default_time_limit``) when the caller gave no time limit,
    noted in ``info["time_limit"]``."""
    if problem.limit_given:
        return problem
    seconds = settings.default_time_limit
    info["time_limit"] = f"{seconds:g} s (the default: no time_limit was given)"
    return dataclasses.replace(problem, deadline=time.monotonic() + seconds, limit_given=True)


def refuse_too_large(problem: Problem, size: int, settings: MIPSettings, instead: str) -> None:
    """Raise TooLargeError when the program's estimated nonzeros ``size`` exceed ``settings.max_nonzeros``, saying
    which methods to use ``instead``."""
    if size > settings.max_nonzeros:
        raise TooLargeError(
            f"Method 'mip': the program for this {problem.graph.n:,}-node graph would have about "
            f"{size:,} nonzeros, more than the {settings.max_nonzeros:,} it builds (no solver reaches a useful bound "
            f"at that size); use {instead}")
