"""The inverse questions: how few accelerators reach a target, how little memory keeps an optimum.

Both are bisections over certified solves. The optimum never gets worse with more accelerators (one may stay
empty) or more memory (it only admits placements), so a probe that reaches the target settles every larger value
and one whose bound is above it (or that is proven infeasible) every smaller one. A probe left with a gap
straddling the target settles nothing: the answer stays a placement that reaches the target, but
``certified`` turns False, since a smaller value might have reached it too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from exactplace.core.cluster import Cluster
from exactplace.core.constraints import Constraints
from exactplace.core.errors import check_param
from exactplace.core.graph import Graph
from exactplace.core.params import brief
from exactplace.core.placement import Placement, Status
from exactplace.core.problem import DEFAULT_REL_GAP
from exactplace.evaluators.feasibility import accelerator_memory
from exactplace.io import Workload
from exactplace.methods.front_door import solve

__all__ = ["Answer", "fewest_accelerators", "least_memory"]

#: A probe's value within this relative tolerance of the target reaches it (the evaluator's rounding).
_TOLERANCE = 1e-9


@dataclasses.dataclass(frozen=True)
class Answer:
    """The answer to an inverse question.

    Attributes
    ----------
    value : int, float or None
        The fewest accelerators, or the least bytes per accelerator; None when even the largest does not reach
        the target.
    placement : Placement or None
        A placement that reaches the target with ``value`` accelerators, or whose fullest accelerator holds
        ``value`` bytes (for :func:`least_memory`; its cluster is the probe's, of at least that memory).
    target : float
        The time per sample asked for.
    refuted : int, float or None
        The largest value proven not to reach the target (no placement does: a bound above it, or infeasible);
        the true answer lies above it and at most ``value``.
    certified : bool
        Every probe that moved the bisection was decided by a proof, so nothing in ``(refuted, value)`` reaches
        the target (to ``rel_tol`` for memory).
    probes : tuple of (value, status, objective, bound)
        Every solve, in order.
    """

    value: int | float | None
    placement: Placement | None
    target: float
    refuted: int | float | None
    certified: bool
    probes: tuple[tuple[float, str, float | None, float | None], ...]


def _probe(graph: Graph, cluster: Cluster, target: float, solving: Mapping[str, Any]) -> tuple[str, Placement]:
    """Solve one probe: ``"reaches"`` (a placement within the target), ``"refuted"`` (proven beyond it) or
    ``"open"`` (neither proven)."""
    placement = solve(graph, cluster, **solving)
    if placement.has_solution and placement.objective <= target * (1 + _TOLERANCE):
        return "reaches", placement
    if placement.status is Status.INFEASIBLE or (placement.bound is not None
                                                 and placement.bound > target * (1 + _TOLERANCE)):
        return "refuted", placement
    return "open", placement


def _instance(workload: Workload | Graph, cluster: Cluster | None, caller: str) -> tuple[Graph, Cluster]:
    if isinstance(workload, Workload):
        return workload.graph, cluster if cluster is not None else workload.cluster
    check_param(isinstance(workload, Graph), "workload", caller, "a Workload or a Graph", type(workload).__name__)
    check_param(isinstance(cluster, Cluster), "cluster", caller, "a Cluster (required with a bare Graph)", cluster)
    return workload, cluster


def _solving(objective: str, method: str, time_limit: float | None, rel_gap: float,
             constraints: Constraints | Mapping[str, Any] | None, options: Mapping[str, Any]) -> dict[str, Any]:
    check_param(objective == "throughput", "objective", "an inverse question", "'throughput' (the time per sample "
                "falls with accelerators and memory; latency need not)", objective)
    return {"objective": objective, "method": method, "time_limit": time_limit, "rel_gap": rel_gap,
            "constraints": constraints, **options}


def fewest_accelerators(workload: Workload | Graph, target: float, *, cluster: Cluster | None = None,
                        max_accelerators: int | None = None, method: str = "auto", time_limit: float | None = None,
                        rel_gap: float = DEFAULT_REL_GAP, constraints: Constraints | Mapping[str, Any] | None = None,
                        objective: str = "throughput", **options: Any) -> Answer:
    """The fewest accelerators (of the cluster's memory and CPUs) whose optimum reaches ``target`` time per sample.

    A bisection over 1..``max_accelerators`` (default: one per node, beyond which more cannot help), each probe
    a :func:`~exactplace.solve` with the given method, time limit (per probe) and options.

    Examples
    --------
    >>> from exactplace import read_workload, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> answer = fewest_accelerators(w, target=12.0)
    >>> answer.value, answer.certified, answer.placement.objective <= 12.0
    (9, True, True)
    """
    graph, base = _instance(workload, cluster, "fewest_accelerators")
    check_param(isinstance(target, (int, float)) and not isinstance(target, bool) and target >= 0
                and math.isfinite(target), "target", "fewest_accelerators", "a non-negative time per sample",
                brief(target))
    high = graph.n if max_accelerators is None else max_accelerators
    check_param(isinstance(high, int) and not isinstance(high, bool) and high >= 1, "max_accelerators",
                "fewest_accelerators", "a positive integer", brief(max_accelerators))
    check_param(not base.is_two_level and base.is_homogeneous, "cluster", "fewest_accelerators",
                "a one-level cluster of identical accelerators", base)
    memory = float(base.memory[0]) if base.accelerators else math.inf
    solving = _solving(objective, method, time_limit, rel_gap, constraints, options)
    probes: list[tuple[float, str, float | None, float | None]] = []

    def probe(k: int) -> tuple[str, Placement]:
        verdict, placement = _probe(graph, Cluster(k, memory, base.cpus), target, solving)
        probes.append((k, placement.status.value, placement.objective, placement.bound))
        return verdict, placement

    verdict, best = probe(high)
    if verdict != "reaches":
        return Answer(None, None, float(target), high if verdict == "refuted" else None, verdict == "refuted",
                      tuple(probes))
    low, certified = 0, True  # low: the largest count known not to reach (0 accelerators: none to run on)
    while high - low > 1:
        middle = (low + high) // 2
        verdict, placement = probe(middle)
        if verdict == "reaches":
            high, best = middle, placement
        else:
            low, certified = middle, certified and verdict == "refuted"
    return Answer(high, best, float(target), low or None, certified, tuple(probes))


def _fullest(placement: Placement, options: Mapping[str, Any]) -> float:
    """Bytes on the fullest accelerator of ``placement`` (with the activations its schedule keeps in flight)."""
    used = accelerator_memory(placement.graph, placement.cluster, placement.device, options.get("schedule"),
                              options.get("microbatches"))
    return float(used.max(initial=0.0))


def least_memory(workload: Workload | Graph, accelerators: int | None = None, *, target: float | None = None,
                 cluster: Cluster | None = None, rel_tol: float = 1e-3, method: str = "auto",
                 time_limit: float | None = None, rel_gap: float = DEFAULT_REL_GAP,
                 constraints: Constraints | Mapping[str, Any] | None = None, objective: str = "throughput",
                 **options: Any) -> Answer:
    """The least memory per accelerator at which the optimum still reaches ``target``.

    ``target`` defaults to the optimum with uncapped memory (the memory that costs nothing), ``math.inf`` asks
    for any feasible placement at all. A bisection on the bytes per accelerator, to ``rel_tol`` of the answer:
    each probe that reaches the target lowers the upper end to what its placement's fullest accelerator holds.

    Examples
    --------
    >>> from exactplace import read_workload, workload_path
    >>> w = read_workload(workload_path("layer_bert24_training"))
    >>> answer = least_memory(w, 4)
    >>> answer.certified, answer.refuted < answer.value <= answer.refuted * 1.001
    (True, True)
    """
    graph, base = _instance(workload, cluster, "least_memory")
    k = base.accelerators if accelerators is None else accelerators
    check_param(isinstance(k, int) and not isinstance(k, bool) and k >= 1, "accelerators", "least_memory",
                "a positive integer", brief(accelerators))
    check_param(target is None or (isinstance(target, (int, float)) and not isinstance(target, bool) and target >= 0),
                "target", "least_memory", "a non-negative time per sample, inf or None", brief(target))
    check_param(isinstance(rel_tol, float) and 0 < rel_tol < 1, "rel_tol", "least_memory", "a number in (0, 1)",
                brief(rel_tol))
    check_param(not base.is_two_level and base.is_homogeneous, "cluster", "least_memory",
                "a one-level cluster of identical accelerators", base)
    solving = _solving(objective, method, time_limit, rel_gap, constraints, options)
    probes: list[tuple[float, str, float | None, float | None]] = []

    def probe(memory: float, goal: float) -> tuple[str, Placement]:
        verdict, placement = _probe(graph, Cluster(k, memory, base.cpus), goal, solving)
        probes.append((memory, placement.status.value, placement.objective, placement.bound))
        return verdict, placement

    free = solve(graph, Cluster(k, math.inf, base.cpus), **solving)
    probes.append((math.inf, free.status.value, free.objective, free.bound))
    goal = free.objective if target is None and free.has_solution else (target if target is not None else math.inf)
    if not free.has_solution or free.objective > goal * (1 + _TOLERANCE):
        refuted = free.status is Status.INFEASIBLE or (free.bound is not None and free.bound > goal)
        return Answer(None, None, float(goal), math.inf if refuted else None, refuted, tuple(probes))
    best, high = free, _fullest(free, options)
    low, certified = 0.0, target is not None or free.status is Status.OPTIMAL
    while high - low > rel_tol * high:
        middle = (low + high) / 2
        verdict, placement = probe(middle, goal)
        if verdict == "reaches":
            best, high = placement, _fullest(placement, options)
        else:
            low, certified = middle, certified and verdict == "refuted"
    return Answer(high, best, float(goal), low or None, certified, tuple(probes))
