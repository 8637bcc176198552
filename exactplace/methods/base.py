"""What every placement method is built on: the :class:`Problem` it is given, the
:class:`MethodResult` it returns, and the :class:`Method` base class declaring what it
handles, which options it takes and what it guarantees.

This module imports only the core model and the evaluators, never a backend, so a method
module can import it without cycles; the built-in methods are listed in
:mod:`exactplace.methods.catalog`.
"""

from __future__ import annotations

import importlib.util
import math
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.contraction import Contraction, contract
from exactplace.core.graph import Graph
from exactplace.core.params import Boolean, Integer, Option
from exactplace.core.placement import Limit, Space, Status, TracePoint
from exactplace.evaluators.feasibility import Guarantees

__all__ = ["DEFAULT_REL_GAP", "OBJECTIVE_OPTIONS", "THREADS", "Method", "MethodResult", "Problem", "usable_cpus"]

#: The relative gap at which a method with a bound may call its placement optimal, unless told
#: otherwise: HiGHS's and Gurobi's own default, within which the paper's IP values are stated.
DEFAULT_REL_GAP = 1e-4

#: The options that change an objective (see :mod:`exactplace.core.objectives`), declared once.
OBJECTIVE_OPTIONS: dict[str, Option] = {
    "overlap": Option("overlap", Boolean(), False, "communication overlaps compute: load = max(comm, compute)"),
    "gpipe": Option("gpipe", Boolean(), False, "training: score max FW + max BW (GPipe) instead of max (FW + BW)"),
    "contention": Option("contention", Boolean(), True,
                         "makespan: transfers queue on one half-duplex channel per accelerator"),
}


def usable_cpus() -> int:
    """The CPU cores this process may use (its affinity mask where the OS has one)."""
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: The ``threads`` option, shared by every method that runs worker threads (default: the usable cores).
THREADS = Option("threads", Integer(low=1, high=1024), None, "worker threads (default: the usable CPU cores)")


@dataclass(frozen=True)
class Problem:
    """What a method is asked to solve; ``solve`` has validated every field and option.

    ``deadline`` is a ``time.monotonic()`` instant (None: no time limit); methods stop by
    then and return their best placement with ``limit=Limit.TIME``. ``limit_given``: the caller
    gave a ``time_limit`` (``inf`` included); without one, a method whose search may not end
    (the MIPs) stops after its stated default and says so. ``warm_subgraph``: the subgraphs of a
    latency ``warm_start`` that names them (a Placement with ``subgraph``). ``rel_gap`` is the
    relative gap at which a method with a bound may stop. ``default_start``: no ``warm_start``
    was given and the method may compute its own (``warm_start="auto"``, the default of
    ``solve``; ``warm_start=None`` turns it off). Preparation shared by several
    methods (the contraction; the DP's ideal counts in ``cache``) is computed once per problem.
    ``started``: the ``time.monotonic()`` instant ``solve`` began (a problem made elsewhere: when it
    was made); a method's trace is timed from it, as ``Placement.wall_seconds`` is.
    """

    graph: Graph
    cluster: Cluster
    objective: str
    deadline: float | None = None
    rel_gap: float = DEFAULT_REL_GAP
    warm_start: np.ndarray | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    default_start: bool = False
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    limit_given: bool = True
    warm_subgraph: np.ndarray | None = None
    started: float = field(default_factory=time.monotonic, compare=False)

    @property
    def contraction(self) -> Contraction:
        """The Appendix B contraction of the graph for this cluster's memory.

        Computed once and kept in ``cache``, which the problems a method derives from this one
        (``dataclasses.replace``, or a new Problem given this cache: same graph and cluster) share.
        """
        if "contraction" not in self.cache:
            self.cache["contraction"] = contract(self.graph, self.cluster.memory_cap)
        return self.cache["contraction"]

    def remaining(self) -> float:
        """Seconds left before ``deadline`` (``inf`` without one; never negative)."""
        return math.inf if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def option(self, name: str) -> Any:
        """An objective option's value (False when not given)."""
        return self.options.get(name, OBJECTIVE_OPTIONS[name].default if name in OBJECTIVE_OPTIONS else None)


@dataclass
class MethodResult:
    """What a method returns; ``solve`` referees it and turns it into a :class:`Placement`.

    The objective is deliberately absent: ``solve`` recomputes it with the evaluator.
    ``bound`` is a dual bound over ``space`` (None: the method's class default space);
    ``trace`` records (seconds, incumbent, bound) as the solve progressed. Latency programs
    state their ``q`` and, for ``q >= 2``, each accelerator node's ``subgraph`` (run order).
    Methods run with ``replication=True`` state each accelerator's ``replicas``.
    """

    device: np.ndarray | None
    status: Status
    bound: float | None = None
    limit: Limit | None = None
    solver: str = ""
    space: Space | None = None
    trace: list[TracePoint] = field(default_factory=list)
    subgraph: np.ndarray | None = None
    q: int | None = None
    timings: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    replicas: np.ndarray | None = None


class Method(ABC):
    """One placement method. Subclasses set the class attributes and implement :meth:`run`.

    Attributes
    ----------
    name : str
        The name ``solve(method=...)`` takes.
    objectives : tuple of str
        The objectives it optimizes (from :data:`exactplace.core.objectives.OBJECTIVES`).
    exact : bool
        True when it proves optimality over its ``space``.
    space : Space or None
        The placements it searches (None for heuristics).
    guarantee : Guarantees
        What its placements always satisfy beyond memory, support and colocation; the
        referee checks exactly this on every result.
    requires : tuple of str
        Modules it needs; availability is tested without importing them.
    engine : str
        What runs it (``"python"``, ``"native-dp"``), the result's ``solver`` unless the run names another.
    options : mapping of str to Option
        The method-specific options it takes, with their constraints and defaults.
    """

    name: ClassVar[str]
    objectives: ClassVar[tuple[str, ...]]
    exact: ClassVar[bool] = False
    space: ClassVar[Space | None] = None
    guarantee: ClassVar[Guarantees] = Guarantees()
    requires: ClassVar[tuple[str, ...]] = ()
    engine: ClassVar[str] = "python"
    description: ClassVar[str] = ""
    options: ClassVar[Mapping[str, Option]] = {}

    @classmethod
    def missing(cls) -> list[str]:
        """The modules in ``requires`` that cannot be imported (checked without importing them)."""
        missing = []
        for module in cls.requires:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.append(module)
        return missing

    @classmethod
    def available(cls) -> bool:
        """True when every module in ``requires`` is installed."""
        return not cls.missing()

    @classmethod
    def check(cls, problem: Problem) -> None:
        """Raise ParameterError when the method cannot handle this problem's options or cluster.

        Called for an explicitly chosen method; under ``method="auto"`` the message is the
        reason the method is passed over. By default every problem is accepted.
        """
        return

    @classmethod
    def unsuited(cls, problem: Problem) -> str | None:
        """Why ``method="auto"`` should pass over this method on ``problem`` (too large, ...), or None."""
        return None

    @classmethod
    def promises(cls, problem: Problem) -> Guarantees:
        """What this run's placement will satisfy (``guarantee`` unless an option changes it)."""
        return cls.guarantee

    @classmethod
    def setting(cls, problem: Problem, name: str) -> Any:
        """The value of one of the method's own options: the given one, else its declared default."""
        return problem.options.get(name, cls.options[name].default)

    @abstractmethod
    def run(self, problem: Problem) -> MethodResult:
        """Solve ``problem``; honour ``problem.deadline`` and KeyboardInterrupt."""
