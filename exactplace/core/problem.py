"""What a method is given and what it returns: the :class:`Problem` (graph, cluster, objective,
options, deadline) and the :class:`MethodResult`, which the front door referees into a
:class:`~exactplace.core.placement.Placement`.

Part of the model, so that solver adapters, bounds and improvers can take and return them
without depending on the method layer above.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.constraints import DeviceRules
from exactplace.core.contraction import Contraction, contract
from exactplace.core.graph import Graph
from exactplace.core.params import Boolean, Choice, Integer, Option
from exactplace.core.placement import Limit, Space, Status, TracePoint
from exactplace.core.schedule import SCHEDULES

__all__ = ["DEFAULT_REL_GAP", "OBJECTIVE_OPTIONS", "MethodResult", "Problem"]

#: The relative gap at which a method with a bound may call its placement optimal, unless told
#: otherwise: HiGHS's and Gurobi's own default, within which the paper's IP values are stated.
DEFAULT_REL_GAP = 1e-4

#: The options that change an objective (see :mod:`exactplace.core.objectives`), declared once.
OBJECTIVE_OPTIONS: dict[str, Option] = {
    "overlap": Option("overlap", Boolean(), False, "communication overlaps compute: load = max(comm, compute)"),
    "gpipe": Option("gpipe", Boolean(), False, "training: score max FW + max BW (GPipe) instead of max (FW + BW)"),
    "schedule": Option("schedule", Choice((None, *SCHEDULES)), None,
                       "pipeline schedule: score the step time per microbatch, bubble and in-flight memory counted "
                       "(needs microbatches)"),
    "microbatches": Option("microbatches", Integer(low=1), None, "microbatches per step under a schedule"),
    "contention": Option("contention", Boolean(), True,
                         "makespan: transfers queue on one half-duplex channel per accelerator"),
}

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
    was made); a method's trace is timed from it, as ``Placement.wall_seconds`` is. ``rules``: the
    user's constraints that only a method with ``device_rules`` holds (None: there are none).
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
    rules: DeviceRules | None = None

    @property
    def contraction(self) -> Contraction:
        """The Appendix B contraction of the graph for this cluster's memory.

        Under device rules, no node they restrict merges into another (:func:`contract`'s ``ruled``).
        Computed once and kept in ``cache``, which the problems a method derives from this one
        (``dataclasses.replace``, or a new Problem given this cache: same graph and cluster) share.
        """
        ruled = None if self.rules is None else self.rules.ruled()
        key = "contraction" if ruled is None or not ruled.any() else "contraction, ruled nodes unmerged"
        if key not in self.cache:  # (a problem derived without the rules, a warm start's, shares the cache)
            self.cache[key] = contract(self.graph, self.cluster.memory_cap, ruled)
        return self.cache[key]

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
