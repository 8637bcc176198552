"""Why a plan is what it is: its bottleneck, what that load is made of, and what each constraint costs.

A constraint *binds* when the optimum without it is better: :func:`explain` lifts each one in turn (the memory
limit of the accelerators, the colour classes of an inference graph, each of the user's constraints) and solves
again, warm-started
from the plan (which stays feasible when a constraint is lifted), so the saving it reports is a measured one,
between two certified optima (or, where a solve leaves a gap, a range). A constraint it calls not binding did
not change the optimum when lifted.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.constraints import FIELDS, Constraints
from exactplace.core.errors import ParameterError, check_param
from exactplace.core.graph import Graph
from exactplace.core.objectives import SCORING_OPTIONS
from exactplace.core.placement import Placement, Status
from exactplace.evaluators import check_feasibility
from exactplace.evaluators.feasibility import accelerator_memory, human_bytes
from exactplace.evaluators.max_load import device_loads, load_contributions
from exactplace.methods.front_door import solve

__all__ = ["Explanation", "Lifted", "explain"]

#: Relative difference between two certified optima that is the solvers' tolerance, not a saving.
_SAME = 1e-6


@dataclasses.dataclass(frozen=True)
class Lifted:
    """One constraint of the plan, lifted and solved again.

    Attributes
    ----------
    constraint : str
        What was lifted, in words (``"the memory limit of the accelerators"``, ``"pin of node 3 to cpu"``).
    binding : bool or None
        The optimum without it is better (True), the same (False), or the solves left it open (None).
    optimum : float or None
        The value of the solve without it (its bound in ``bound``).
    bound : float or None
    saving : float or None
        ``1 - optimum / value``: the fraction of the plan's time per sample the constraint costs (at least
        ``saving`` when the solve without it left a gap: its own optimum lies between bound and value).
    placement : Placement
        The solve without it.
    """

    constraint: str
    binding: bool | None
    optimum: float | None
    bound: float | None
    saving: float | None
    placement: Placement


@dataclasses.dataclass(frozen=True)
class Explanation:
    """Why a plan is what it is (:func:`explain`).

    Attributes
    ----------
    placement : Placement
        The plan explained.
    bottleneck : str
        The device with the largest load (the first, on a tie).
    load : float
        Its load.
    contributions : pandas.DataFrame
        What the bottleneck's load is made of, largest first
        (:func:`~exactplace.evaluators.max_load.load_contributions`).
    memory : pandas.DataFrame
        Per accelerator: bytes used (with the schedule's activations in flight), capacity, the share used.
    lifted : tuple of Lifted
        Every constraint lifted and solved again.
    bound : str
        Where the plan's bound comes from and what limits it.
    cpu_only : tuple of int
        The ids of the nodes without an accelerator time: held on the CPUs by the model itself, with nothing to
        lift them with.
    """

    placement: Placement
    bottleneck: str
    load: float
    contributions: Any
    memory: Any
    lifted: tuple[Lifted, ...]
    bound: str
    cpu_only: tuple[int, ...] = ()

    @property
    def binding(self) -> tuple[Lifted, ...]:
        """The constraints that bind, the costliest first."""
        return tuple(sorted((c for c in self.lifted if c.binding), key=lambda c: -(c.saving or 0.0)))

    def report(self, top: int = 5) -> str:
        """The explanation in a few lines: bottleneck, its largest contributors, each constraint's cost."""
        p = self.placement
        lines = [f"bottleneck {self.bottleneck}: load {self.load:.6g} of the plan's {p.objective:.6g} "
                 f"({p.status}; {self.bound})"]
        options = p.info.get("options", {})
        if options.get("schedule") is not None and self.load > 0:
            lines.append(f"  under {options['schedule']} with {options.get('microbatches')} microbatches, the bubble "
                         f"makes a microbatch {p.objective / self.load:.4g} x the bottleneck's load")
        for row in self.contributions.head(top).itertuples():
            lines.append(f"  {row.seconds:10.4g}  {row.kind:7s} {row.part:8s} node {row.node} ({row.name})")
        if len(self.contributions) > top:
            rest = float(self.contributions["seconds"].iloc[top:].sum())
            lines.append(f"  {rest:10.4g}  the other {len(self.contributions) - top} contributions")
        for c in self.lifted:
            if c.binding:
                at_least = "at least " if c.bound is not None and c.optimum is not None and c.bound < c.optimum * (
                    1 - _SAME) else ""
                lines.append(f"binding: {c.constraint}: lifting it would save {at_least}{100 * c.saving:.3g}% "
                             f"({p.objective:.6g} -> {c.optimum:.6g})")
            elif c.binding is None:
                lines.append(f"open: {c.constraint}: without it {c.optimum:.6g} (bound {c.bound:.6g}); the solves "
                             "left it undecided")
            else:
                lines.append(f"not binding: {c.constraint}")
        if self.cpu_only:
            shown = ", ".join(map(str, self.cpu_only[:8])) + (", ..." if len(self.cpu_only) > 8 else "")
            lines.append(f"held by the model: {len(self.cpu_only)} node(s) without an accelerator time run on a CPU "
                         f"({shown})")
        return "\n".join(lines)


def explain(placement: Placement, *, time_limit: float | None = None, constraints: bool = True,
            **solve_options: Any) -> Explanation:
    """Explain a plan: its bottleneck and its load, each accelerator's memory, and each constraint's cost.

    Parameters
    ----------
    placement : Placement
        A plan of :func:`~exactplace.solve` under the throughput objective (its options, such as a schedule,
        are read from ``placement.info["options"]``; its user constraints from ``info["constraints"]``).
    time_limit : float, optional
        Seconds for each solve without a constraint.
    constraints : bool, default True
        Lift each constraint and solve again; False: only the bottleneck and the memory, no solve.
    **solve_options
        Passed to each solve (a method, ``rel_gap``).

    Examples
    --------
    >>> from exactplace import read_workload, workload_path, solve
    >>> w = read_workload(workload_path("layer_bert24_training"))
    >>> why = explain(solve(w, constraints={"max_stages": 5}))
    >>> why.bottleneck, [(c.constraint, c.binding, round(c.saving, 3)) for c in why.lifted]
    ('acc0', [('the memory limit of the accelerators', False, 0.0), ('the memory limit of acc0 alone', False, 0.0),
              ('max_stages 5', True, 0.155)])
    """
    check_param(isinstance(placement, Placement) and placement.device is not None, "placement", "explain",
                "a Placement with a solution", placement)
    options = dict(placement.info.get("options", {}))
    if placement.objective_name != "throughput" or options.get("gpipe") or placement.replicas is not None:
        raise ParameterError("explain covers plans of the throughput objective (with or without a schedule or "
                             "overlap); not the latency or makespan objectives, gpipe=True or replicated stages "
                             "yet.")
    graph, cluster, device = placement.graph, placement.cluster, placement.device
    scoring = {k: v for k, v in options.items() if k in SCORING_OPTIONS["throughput"]}
    loads = device_loads(graph, cluster, device, overlap=bool(options.get("overlap"))).load()
    bottleneck = int(np.argmax(loads))
    lifted: list[Lifted] = []
    if constraints:
        solving = {"time_limit": time_limit, **{k: v for k, v in options.items() if k not in ("log", "progress")},
                   **solve_options}
        for words, lifted_graph, lifted_cluster, user in _liftable(placement):
            try:
                lifted.append(_lift(placement, words, lifted_graph, lifted_cluster, user, solving, scoring))
            except ParameterError:  # the problem without it is one no method holds exactly yet (its saving unknown)
                continue
    return Explanation(placement, cluster.device_name(bottleneck), float(loads[bottleneck]),
                       load_contributions(graph, cluster, device, bottleneck), _memory(placement, options),
                       tuple(lifted), _bound(placement), tuple(int(i) for i in graph.ids[~graph.supported]))


def _liftable(placement: Placement) -> list[tuple[str, Graph, Cluster, Constraints | None]]:
    """Each constraint of the plan with the instance without it: (words, graph, cluster, user constraints)."""
    graph, cluster = placement.graph, placement.cluster
    user = Constraints.from_dict(placement.info["constraints"]) if placement.info.get("constraints") else None
    out: list[tuple[str, Graph, Cluster, Constraints | None]] = []
    if cluster.accelerators and np.isfinite(cluster.memory).any():
        uncapped = Cluster(cluster.accelerators, math.inf, cluster.cpus, cluster.speed.tolist(), cluster.machines,
                           cluster.inter_machine_cost)
        out.append(("the memory limit of the accelerators", graph, uncapped, user))
        options = placement.info.get("options", {})
        if cluster.accelerators > 1 and options.get("schedule") is None and not cluster.is_two_level:
            # The fullest accelerator's limit alone: what one larger device would buy.
            fullest = int(np.argmax(accelerator_memory(graph, cluster, placement.device)))
            memory = cluster.memory.astype(float).copy()
            memory[fullest] = math.inf
            one = Cluster(cluster.accelerators, memory.tolist(), cluster.cpus, cluster.speed.tolist())
            out.append((f"the memory limit of {cluster.device_name(fullest)} alone", graph, one, user))
    # A training graph's colour classes pair each forward node with its backward nodes, which every method
    # keeps together whatever the colours say (the model's units): they are not a constraint one can lift.
    if not graph.is_training and len(set(graph.color.tolist())) < graph.n:
        free = Graph([dataclasses.replace(node, color=None) for node in graph.nodes()], graph.edges())
        out.append(("the colour classes (nodes that must share a device)", free, cluster, user))
    if user is not None:
        spec = user.to_dict()
        for key in FIELDS:
            entries = spec.get(key)
            if entries is None or entries == {} or entries == [] or (key == "reserve" and not entries):
                continue
            if isinstance(entries, Mapping):
                for node, where in entries.items():
                    rest = {**spec, key: {n: w for n, w in entries.items() if n != node}}
                    out.append((f"{key} of node {node} ({where})", graph, cluster, Constraints.from_dict(rest)))
            elif isinstance(entries, list) and key in ("together", "no_cut"):
                for pair in entries:
                    rest = {**spec, key: [p for p in entries if p != pair]}
                    out.append((f"{key} {pair[0]}, {pair[1]}", graph, cluster, Constraints.from_dict(rest)))
            else:
                rest = {k: v for k, v in spec.items() if k != key}
                out.append((f"{key} {entries}", graph, cluster, Constraints.from_dict(rest)))
    return out


def _lift(placement: Placement, words: str, graph: Graph, cluster: Cluster, user: Constraints | None,
          solving: Mapping[str, Any], scoring: Mapping[str, Any]) -> Lifted:
    """Solve without one constraint, warm-started from the plan (a placement of the relaxed problem too)."""
    warm: Any = placement.device if _fits(graph, cluster, placement.device, scoring) else "auto"
    again = solve(graph, cluster, "throughput", warm_start=warm, constraints=user, **solving)
    value, bound = placement.objective, placement.bound
    if not again.has_solution:
        return Lifted(words, None, None, again.bound, None, again)
    optimum = again.objective
    better = optimum < value * (1 - _SAME)
    if better and bound is not None and optimum < bound * (1 - _SAME):
        binding: bool | None = True  # below the plan's own bound: better than any plan holding the constraint
    elif not better and (again.status is Status.OPTIMAL
                         or (again.bound is not None and again.bound >= value * (1 - _SAME))):
        binding = False  # the optimum without it is the plan's value, to the solves' gaps
    else:
        binding = None
    return Lifted(words, binding, optimum, again.bound, max(1.0 - optimum / value, 0.0) if value else 0.0, again)


def _fits(graph: Graph, cluster: Cluster, device: np.ndarray, scoring: Mapping[str, Any]) -> bool:
    return not check_feasibility(graph, cluster, device, schedule=scoring.get("schedule"),
                                 microbatches=scoring.get("microbatches"))


def _memory(placement: Placement, options: Mapping[str, Any]) -> Any:
    import pandas as pd

    graph, cluster, device = placement.graph, placement.cluster, placement.device
    used = accelerator_memory(graph, cluster, device, options.get("schedule"), options.get("microbatches"))
    capacity = cluster.memory.astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(np.isfinite(capacity) & (capacity > 0), used / capacity, 0.0)
    return pd.DataFrame({"device": cluster.device_names()[:cluster.accelerators], "used": used,
                         "capacity": capacity, "share": share,
                         "shown": [f"{human_bytes(u)} of {human_bytes(c)}" for u, c in zip(used, capacity)]})


def _bound(placement: Placement) -> str:
    """Where the plan's bound comes from, in words."""
    space = placement.describe_space()
    if placement.bound is None:
        return f"no bound: {placement.method} proves none ({space})"
    prover = placement.info.get("certified_by") or placement.info.get("bound_by") or placement.solver
    if placement.status is Status.OPTIMAL:
        return f"optimal over {space}, certified by {prover}"
    limit = f", stopped by {placement.limit.words}" if placement.limit is not None else ""
    return f"bound {placement.bound:.6g} by {prover} over {space}, gap {100 * (placement.gap or 0):.3g}%{limit}"
