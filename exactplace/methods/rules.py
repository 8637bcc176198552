"""Cross-option rules of the DP and MIP methods, declared once as data.

A :class:`Rule` says: when it applies to a problem, a condition must hold, else the named
parameter is refused with one :class:`~exactplace.core.errors.ParameterError` saying what it must
be. A rule shared by several methods (replication needs objective throughput, a homogeneous
cluster, no overlap) is one object in each method's table, so its message is written once.
:func:`check_rules` checks a table in order; each method's ``check`` calls it on its own table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from exactplace.core.errors import check_param
from exactplace.core.problem import Problem
from exactplace.methods.base import Method

__all__ = ["DPL_RULES", "DP_RULES", "MAX_REPLICATED_ACCELERATORS", "MIP_LATENCY_RULES", "MIP_RULES",
           "MIP_THROUGHPUT_RULES", "NO_GPIPE", "Rule", "check_rules"]

#: The most accelerators the replicated DP takes (its replica counts are 16-bit).
MAX_REPLICATED_ACCELERATORS = 65535

#: A rule's test: the problem and the method class asking (for its option defaults, ``Method.setting``).
Test = Callable[[Problem, type[Method]], bool]


def _always(problem: Problem, method: type[Method]) -> bool:
    return True


def _replicated(problem: Problem, method: type[Method]) -> bool:
    return bool(problem.options.get("replication"))


@dataclass(frozen=True)
class Rule:
    """One rule: when ``applies``, ``holds`` must be true, else parameter ``field`` must be ``expectation``.

    ``expectation`` completes "The 'field' parameter of solve must be ..."; a ``{method}`` in it
    becomes `` for method 'name'`` (or nothing, see :func:`check_rules`). The value the message
    shows is the cluster, the objective or the option named ``field``.
    """

    field: str
    expectation: str
    holds: Test
    applies: Test = _always

    def value(self, problem: Problem) -> Any:
        """What the message says was given."""
        if self.field == "cluster":
            return problem.cluster
        if self.field == "objective":
            return problem.objective
        return problem.option(self.field)


def check_rules(problem: Problem, rules: Sequence[Rule], method: type[Method], *, named: bool = True) -> None:
    """Raise the ParameterError of the first rule of ``rules`` that applies to ``problem`` and fails.

    ``named``: a rule's ``{method}`` becomes `` for method 'name'`` (``method.name``); else nothing.

    >>> from exactplace.core.cluster import Cluster
    >>> from exactplace.core.graph import Graph, Node
    >>> from exactplace.methods.base import Method
    >>> class Toy(Method):
    ...     name, objectives = "toy", ("throughput",)
    ...     def run(self, problem): ...
    >>> problem = Problem(Graph([Node(0, 1.0, 1.0)], []), Cluster(2, memory=[1.0, 2.0]), "throughput",
    ...                   options={"replication": True})
    >>> check_rules(problem, DP_RULES, Toy)
    Traceback (most recent call last):
    ...
    exactplace.core.errors.ParameterError: The 'cluster' parameter of solve must be a homogeneous cluster with ...
    """
    phrase = f" for method {method.name!r}" if named else ""
    for rule in rules:
        if rule.applies(problem, method) and not rule.holds(problem, method):
            check_param(False, rule.field, "solve", rule.expectation.replace("{method}", phrase), rule.value(problem))


# -- shared by the DP and the MIP ---------------------------------------------------------------------------

#: A replicated stage's load, why replication refuses ``overlap`` and ``gpipe``.
_REPLICATED_LOAD = ("False with replication=True{method} (a replicated stage's load is "
                    "(compute + communication + sync (r-1)/r) / r, paper Appendix C.2)")

REPLICATION_NEEDS_THROUGHPUT = Rule(
    "objective", "'throughput' with replication=True (the latency and makespan simulators run one device per stage)",
    holds=lambda problem, method: problem.objective == "throughput", applies=_replicated,
)
REPLICATION_NEEDS_HOMOGENEOUS = Rule(
    "cluster", "a homogeneous cluster with replication=True{method} (the replicas of a stage are anonymous identical "
    "accelerators; one memory size, speed 1)",
    holds=lambda problem, method: problem.cluster.is_homogeneous, applies=_replicated,
)
REPLICATION_FORBIDS_OVERLAP = Rule(
    "overlap", _REPLICATED_LOAD, holds=lambda problem, method: not problem.option("overlap"), applies=_replicated,
)

# -- the DP and DPL (exactplace.methods.dp) -----------------------------------------------------------------

_TWO_LEVEL_DP = Rule(
    "cluster", "a one-level cluster{method} with replication=True or accelerators of differing memory or speed (the "
    "two-level DP takes identical accelerators, one device per stage)",
    holds=lambda problem, method: problem.cluster.is_homogeneous and not problem.options.get("replication"),
    applies=lambda problem, method: problem.cluster.is_two_level,
)
_TWO_LEVEL_DPL = Rule(
    "cluster", "a one-level cluster{method} (its chain DP prices communication per stage alone)",
    holds=lambda problem, method: not problem.cluster.is_two_level,
)
_DPL_HOMOGENEOUS = Rule(
    "cluster", "a homogeneous cluster (one accelerator memory size, speed 1){method} (its chain DP treats the "
    "accelerators as identical; methods 'dp' and 'mip' take heterogeneous clusters)",
    holds=lambda problem, method: problem.cluster.is_homogeneous,
)
#: The PipeDream schedule: the DP's stage loads are FW + BW per device (``dp``, ``dpl``, ``bb``).
NO_GPIPE = Rule(
    "gpipe", "False{method} (it optimizes the PipeDream schedule, FW + BW per device)",
    holds=lambda problem, method: not problem.option("gpipe"),
)
_REPLICATED_ACCELERATORS = Rule(
    "cluster", f"at most {MAX_REPLICATED_ACCELERATORS} accelerators with replication=True",
    holds=lambda problem, method: problem.cluster.accelerators <= MAX_REPLICATED_ACCELERATORS, applies=_replicated,
)
_DP_REPLICATION = (REPLICATION_NEEDS_THROUGHPUT, REPLICATION_NEEDS_HOMOGENEOUS, REPLICATION_FORBIDS_OVERLAP,
                   _REPLICATED_ACCELERATORS)

#: ``dp``: two-level clusters of identical accelerators without replication, the PipeDream schedule, replication's.
DP_RULES: tuple[Rule, ...] = (_TWO_LEVEL_DP, NO_GPIPE, *_DP_REPLICATION)
#: ``dpl``: a homogeneous one-level cluster, the PipeDream schedule (and replication's, which its options refuse).
DPL_RULES: tuple[Rule, ...] = (_TWO_LEVEL_DPL, _DPL_HOMOGENEOUS, NO_GPIPE, *_DP_REPLICATION)

# -- the MIP (exactplace.methods.mip) ------------------------------------------------------------------------


def _contiguous(problem: Problem, method: type[Method]) -> bool:
    return bool(method.setting(problem, "contiguous"))


def _left_out(name: str, expectation: str) -> Rule:
    """Option ``name`` must not be given."""
    return Rule(name, expectation, holds=lambda problem, method: name not in problem.options)


#: Before the objective's own rules.
MIP_RULES: tuple[Rule, ...] = (REPLICATION_NEEDS_THROUGHPUT,)
#: Objective latency: ``q`` rather than ``contiguous``, and the non-contiguous max-load IP's options left out.
MIP_LATENCY_RULES: tuple[Rule, ...] = (
    _left_out("contiguous", "left out for objective 'latency' (use q: q=1 is contiguous, q>=2 allows q subgraphs "
                            "per accelerator)"),
    *(_left_out(name, f"left out for objective 'latency' (it {role} the non-contiguous max-load IP)")
      for name, role in (("packing_bound", "bounds"), ("polish", "improves the start of"),
                         ("gap_probe", "proves the gap of"), ("set_bound", "bounds"))),
)
#: Objective throughput: no latency options; two-level clusters and replication on the contiguous IP only.
MIP_THROUGHPUT_RULES: tuple[Rule, ...] = (
    _left_out("q", "left out for objective 'throughput' (it is the latency program's number of subgraphs per "
                   "accelerator; use contiguous=False)"),
    _left_out("path_bound", "left out for objective 'throughput' (it bounds the latency program)"),
    Rule("cluster", "a one-level cluster with contiguous=False, replication=True or accelerators of differing memory "
                    "or speed (the two-level IP is contiguous, over identical accelerators)",
         holds=lambda problem, method: (_contiguous(problem, method) and problem.cluster.is_homogeneous
                                        and not problem.options.get("replication")),
         applies=lambda problem, method: problem.cluster.is_two_level),
    Rule("contiguous", "True with replication=True (only the contiguous IP replicates stages)",
         holds=_contiguous, applies=_replicated),
    REPLICATION_NEEDS_HOMOGENEOUS,
    REPLICATION_FORBIDS_OVERLAP,
    Rule("gpipe", _REPLICATED_LOAD, holds=lambda problem, method: not problem.option("gpipe"), applies=_replicated),
)
