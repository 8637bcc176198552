"""For a user's own split: how far it is from the optimum (:func:`judge`), and the one move that closes most of the
difference (:func:`first_move`).

A move takes one colour class (a node, or the nodes that must stay together) off the bottleneck device and puts
it on another device; every such move that keeps the split feasible (memory, accelerator support, the schedule's
pipeline and its memory) is scored by the evaluator, and the best one is the answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph
from exactplace.core.objectives import SCORING_OPTIONS
from exactplace.core.placement import Placement, Status
from exactplace.core.placement_array import as_device_array
from exactplace.evaluators import check_feasibility, evaluate
from exactplace.evaluators.max_load import device_loads
from exactplace.methods.front_door import solve

__all__ = ["Move", "Verdict", "first_move", "judge"]


@dataclasses.dataclass(frozen=True)
class Move:
    """The best single move of a split.

    Attributes
    ----------
    nodes : tuple of int
        The ids of the nodes moved (one colour class).
    source, target : str
        The device they leave (the bottleneck) and the one they go to.
    before, after : float
        The split's value, and its value after the move.
    device : numpy.ndarray
        The split after the move.
    """

    nodes: tuple[int, ...]
    source: str
    target: str
    before: float
    after: float
    device: np.ndarray

    def closes(self, optimum: float) -> float:
        """The share of the difference to ``optimum`` the move closes (1: it reaches the optimum)."""
        return 1.0 if self.before <= optimum else (self.before - self.after) / (self.before - optimum)


def first_move(graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray,
               options: Mapping[str, Any] | None = None) -> Move | None:
    """The move of one colour class off the bottleneck that lowers the split's time per sample most.

    ``options`` are the throughput objective's (``overlap``, ``schedule``, ``microbatches``). None when no
    feasible move improves the split.

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 9.0, 1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
    >>> move = first_move(g, Cluster(2, cpus=0), [0, 0, 0, 1])
    >>> move.nodes, move.source, move.target, move.before, move.after
    ((0,), 'acc0', 'acc1', 3.0, 2.0)
    """
    scoring = {k: v for k, v in (options or {}).items() if k in SCORING_OPTIONS["throughput"]}
    dev = as_device_array(graph, cluster, device).copy()
    before = evaluate(graph, cluster, dev, "throughput", **scoring)
    loads = device_loads(graph, cluster, dev, overlap=bool(scoring.get("overlap"))).load()
    bottleneck = int(np.argmax(loads))
    best: Move | None = None
    for colour in np.unique(graph.color[dev == bottleneck]):
        members = np.flatnonzero(graph.color == colour)
        for target in range(cluster.num_devices):
            if target == bottleneck:
                continue
            moved = dev.copy()
            moved[members] = target
            if check_feasibility(graph, cluster, moved, schedule=scoring.get("schedule"),
                                 microbatches=scoring.get("microbatches")):
                continue
            after = evaluate(graph, cluster, moved, "throughput", **scoring)
            if after < before and (best is None or after < best.after):
                best = Move(tuple(int(graph.ids[i]) for i in members), cluster.device_name(bottleneck),
                            cluster.device_name(target), float(before), float(after), moved)
    return best


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A split against the optimum of its problem (:func:`judge`).

    Attributes
    ----------
    value : float
        The split's time per sample (the evaluator's).
    optimum : Placement
        The solve of the same problem (the split's options and constraints).
    plan : Placement
        The split itself as a Placement: the optimum's bound, and optimal when its value meets it.
    move : Move or None
        The best single move of the split (:func:`first_move`); None when it is optimal or no move helps.
    """

    value: float
    optimum: Placement
    plan: Placement
    move: Move | None

    @property
    def excess(self) -> float | None:
        """How far the split is above the optimum, as a fraction of the optimum (0 for an optimal split)."""
        if self.optimum.objective is None or self.optimum.objective <= 0:
            return None
        return max(self.value / self.optimum.objective - 1.0, 0.0)

    def report(self) -> str:
        """The verdict in a few lines."""
        best = self.optimum
        if self.plan.status is Status.OPTIMAL:
            return f"the split is optimal: {self.value:.6g} ({best.describe_space()}, {best.status} by {best.method})"
        lines = [f"the split's {self.value:.6g} is {100 * (self.excess or 0):.3g}% above the optimum "
                 f"{best.objective:.6g} ({best.status} by {best.method}, gap {100 * (best.gap or 0):.3g}%)"]
        if self.move is not None:
            lines.append(f"first move: node{'s' if len(self.move.nodes) > 1 else ''} "
                         f"{', '.join(map(str, self.move.nodes))} from {self.move.source} to {self.move.target}: "
                         f"{self.move.before:.6g} -> {self.move.after:.6g} (closes "
                         f"{100 * self.move.closes(best.objective):.3g}% of the difference)")
        else:
            lines.append("no single move of a node (or of nodes that must stay together) off the bottleneck helps")
        return "\n".join(lines)


def judge(graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray,
          options: Mapping[str, Any] | None = None, constraints: Mapping[str, Any] | None = None,
          **solving: Any) -> Verdict:
    """A split against the optimum of the same problem: how far above it, and the first move to make.

    ``options`` are the throughput objective's (``overlap``, ``schedule``, ``microbatches``), ``constraints`` the
    user's, ``solving`` passed to the solve (``time_limit``, ``method``).

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 9.0, 1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
    >>> verdict = judge(g, Cluster(2, cpus=0), [0, 0, 0, 1])
    >>> verdict.value, verdict.optimum.objective, round(verdict.excess, 3)
    (3.0, 2.0, 0.5)
    """
    scoring = {k: v for k, v in (options or {}).items() if k in SCORING_OPTIONS["throughput"]}
    dev = as_device_array(graph, cluster, device)
    value = evaluate(graph, cluster, dev, "throughput", **scoring)
    optimum = solve(graph, cluster, "throughput", constraints=constraints, **scoring, **solving)
    reached = optimum.bound is not None and value <= optimum.bound * (1 + 1e-9) + 1e-12
    status = Status.OPTIMAL if reached else Status.FEASIBLE
    plan = dataclasses.replace(optimum, device=dev.copy(), objective=value, status=status, limit=None,
                               method="given split", subgraph=None, space=None if not reached else optimum.space)
    move = None if reached else first_move(graph, cluster, dev, scoring)
    return Verdict(value, optimum, plan, move)
