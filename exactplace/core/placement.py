"""The result of every method: a frozen :class:`Placement` with its status and bounds.

Modelled on OR-Tools MathOpt's result: the status says whether a solution exists
and whether it is proven optimal; ``limit`` says which limit stopped the method (a
placement *feasible at a time limit* has ``status=FEASIBLE, limit=Limit.TIME``; *no
solution found* has ``status=NO_SOLUTION`` and no devices). The primal value
(``objective``) and the dual bound (``bound``) are separate fields, and ``space`` says
which set of placements the bound covers. The objective is always recomputed by the
independent evaluators, never copied from a solver.

Infeasibility is reported one way, by a returned result: ``status=INFEASIBLE`` with the
reason in ``info["reason"]``; no method and no check in ``solve`` raises for it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import PlacementError
from exactplace.core.graph import Graph

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PLAN_FORMAT_VERSION", "Limit", "Placement", "Space", "Status", "TracePoint"]

PLAN_FORMAT_VERSION = 1


class Status(str, Enum):
    """One status vocabulary for every method."""

    OPTIMAL = "optimal"
    """A placement proven optimal (within the requested gap) for the method's model."""
    FEASIBLE = "feasible"
    """A feasible placement without proof of optimality (heuristic, or stopped at a limit)."""
    INFEASIBLE = "infeasible"
    """Proven: no placement satisfies the constraints."""
    NO_SOLUTION = "no_solution"
    """Stopped (limit or interrupt) before any placement was found."""

    def __str__(self) -> str:
        return self.value


class Limit(str, Enum):
    """Which limit stopped a method before it finished (MathOpt's ``Limit``); None when none did."""

    TIME = "time"
    """The time limit (``time_limit``) ran out."""
    INTERRUPT = "interrupt"
    """Ctrl-C (KeyboardInterrupt / SIGINT)."""
    MEMORY = "memory"
    """The solver ran out of its memory allowance."""
    ITERATION = "iteration"
    """An iteration or node limit of the solver."""

    def __str__(self) -> str:
        return self.value

    @property
    def words(self) -> str:
        """How a summary line names the limit: ``"the time limit"``, ``"Ctrl-C"``, ..."""
        return {"time": "the time limit", "interrupt": "Ctrl-C"}.get(self.value, f"the {self.value} limit")


class Space(str, Enum):
    """The set of placements a method searches, and so the set its ``bound`` covers.

    A gap is only meaningful against the space of its bound: a DP gap (over chain splits)
    must not be compared with a non-contiguous MIP gap (over all splits), nor a latency gap
    with at most ``q=1`` subgraph per accelerator with one for ``q=2`` (``Placement.q``).
    ``CHAIN``, ``CONTIGUOUS`` and ``ANY`` are throughput notions (one set of nodes per device);
    ``SUBGRAPHS`` is the latency programs' (paper §4).
    """

    CHAIN = "chain"
    """Chain splits: devices receive the differences of a chain of ideals of the contracted
    forward graph (paper §5.1.1); each unit brings its backward partners."""
    CONTIGUOUS = "contiguous"
    """Contiguous splits (Definition 3.1): each device's forward and backward part contiguous,
    and the forward parts orderable as a chain of ideals."""
    SUBGRAPHS = "subgraphs"
    """Latency (paper §4, Figs. 3 and 4): each accelerator runs at most ``q`` contiguous
    subgraphs, one at a time, each invoked once its inputs are in RAM; CPU nodes anywhere.
    ``q`` is the result's ``Placement.q``; ``q=1`` is the contiguous program of Fig. 3."""
    ANY = "any"
    """Every placement satisfying memory, support and colocation."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class TracePoint:
    """One point of a solve's progress: seconds since ``solve`` began, incumbent value and dual bound."""

    seconds: float
    incumbent: float | None
    bound: float | None


@dataclass(frozen=True, eq=False)
class Placement:
    """A placement of a graph's nodes on a cluster's devices, with what is known about it.

    Attributes
    ----------
    graph, cluster : Graph, Cluster
    device : numpy array of int, or None
        ``device[i]``: device of the node at position ``i`` (accelerators first, then CPUs);
        None when no placement was found.
    objective_name : str
        ``"throughput"`` (max-load, time per sample) or ``"latency"``.
    objective : float or None
        The evaluator's value of ``device`` (lower is better).
    bound : float or None
        The dual bound: a proven lower bound on the optimum over ``space``, where the method proves one.
    status : Status
    limit : Limit or None
        Which limit stopped the method (``Limit.TIME``, ``Limit.INTERRUPT``, ...), None if none did.
    space : Space or None
        The placements the method searched, which its ``bound`` covers (None for heuristics).
    trace : tuple of TracePoint
        Progress of the solve (incumbent non-increasing, bound non-decreasing), where recorded, timed
        from ``solve``'s start as ``wall_seconds`` is (a method's phases before its solver included).
    method, solver : str
        The registered method and the solver behind it.
    wall_seconds : float
        Time spent solving.
    timings, info : mapping
        Per-phase seconds, and method-specific facts (ideal counts, options used, ...).
    replicas : numpy array of int, or None
        Throughput with replication (``replication=True``, paper Appendix C.2): ``replicas[a]``
        identical accelerators run accelerator ``a``'s part data-parallel (1 for unused ones);
        the replicas in use add up to at most ``cluster.accelerators``. None: no replication.
    """

    graph: Graph
    cluster: Cluster
    device: np.ndarray | None
    objective_name: str
    objective: float | None
    status: Status
    method: str
    solver: str = ""
    bound: float | None = None
    limit: Limit | None = None
    space: Space | None = None
    wall_seconds: float = 0.0
    trace: tuple[TracePoint, ...] = ()
    subgraph: np.ndarray | None = None
    q: int | None = None
    timings: Mapping[str, float] = field(default_factory=dict)
    info: Mapping[str, Any] = field(default_factory=dict)
    replicas: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.device is not None:
            self.device.setflags(write=False)
        if self.replicas is not None:
            self.replicas.setflags(write=False)
        if self.subgraph is not None:
            self.subgraph.setflags(write=False)
        if self.limit is not None:
            object.__setattr__(self, "limit", Limit(self.limit))
        if self.space is not None:
            object.__setattr__(self, "space", Space(self.space))
        if (self.device is None) != (self.status in (Status.INFEASIBLE, Status.NO_SOLUTION)):
            raise PlacementError(
                f"status {self.status} does not match device={'None' if self.device is None else 'array'}")

    @property
    def has_solution(self) -> bool:
        """True when a placement was found."""
        return self.device is not None

    @property
    def gap(self) -> float | None:
        """Relative optimality gap ``(objective - bound) / objective``; None without a bound."""
        if self.objective is None or self.bound is None:
            return None
        if self.objective == 0:
            return 0.0
        return max(0.0, (self.objective - self.bound) / self.objective)

    def assignment(self) -> dict[int, str]:
        """Node id -> device name."""
        if self.device is None:
            return {}
        names = self.cluster.device_names()
        return {int(i): names[d] for i, d in zip(self.graph.ids.tolist(), self.device.tolist())}

    def devices_used(self) -> dict[str, list[int]]:
        """Device name -> ids of its nodes, in device order (only devices that hold nodes)."""
        if self.device is None:
            return {}
        names = self.cluster.device_names()
        return {
            names[d]: self.graph.ids[self.device == d].tolist() for d in np.unique(self.device).tolist()
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per node: id, name, device, backward, times and memory (and, for a replicated
        plan, the replicas of the node's device and its ``sync`` time)."""
        import pandas as pd  # here, not at module level: ``import exactplace`` stays light

        g = self.graph
        names = self.cluster.device_names()
        columns: dict[str, Any] = {
            "id": g.ids,
            "name": g.names,
            "device": [names[d] for d in self.device] if self.device is not None else None,
            "backward": g.backward,
            "cpu_time": g.cpu_time,
            "acc_time": np.where(g.supported, g.acc_time, np.nan),
            "memory": g.memory,
        }
        if self.replicas is not None and self.device is not None:
            per_device = np.concatenate([self.replicas, np.ones(self.cluster.cpus, dtype=np.int64)])
            columns.update(replicas=per_device[self.device], sync=g.sync)
        return pd.DataFrame(columns).set_index("id")

    def to_dict(self) -> dict[str, Any]:
        """The versioned plan (see :meth:`to_json`)."""
        def number(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(x)

        placement = None
        if self.device is not None:
            names = self.cluster.device_names()
            placement = [
                {"id": int(i), "name": n, "device": names[d]}
                for i, n, d in zip(self.graph.ids.tolist(), self.graph.names, self.device.tolist())
            ]
            if self.subgraph is not None:
                for entry, piece in zip(placement, self.subgraph.tolist()):
                    if piece >= 0:
                        entry["subgraph"] = piece
        return {
            "format": "exactplace-plan",
            "version": PLAN_FORMAT_VERSION,
            "objective_name": self.objective_name,
            "objective": number(self.objective),
            "bound": number(self.bound),
            "gap": number(self.gap),
            "status": self.status.value,
            "limit": None if self.limit is None else self.limit.value,
            "space": None if self.space is None else self.space.value,
            "q": self.q,
            "method": self.method,
            "solver": self.solver,
            "wall_seconds": self.wall_seconds,
            "timings": dict(self.timings),
            "cluster": self.cluster.to_dict(),
            "info": _jsonable(self.info),
            "trace": [[p.seconds, p.incumbent, p.bound] for p in self.trace],
            "placement": placement,
            **({} if self.replicas is None else {"replicas": [int(r) for r in self.replicas]}),
        }

    def to_json(self, indent: int | None = 2) -> str:
        """The versioned plan JSON: objective, status, method, bound, gap, wall_seconds, placement."""
        return json.dumps(self.to_dict(), indent=indent)

    def describe_space(self) -> str:
        """The space in words, as summaries and tables name it: ``"chain splits"``, ``"subgraphs (q=2)"``."""
        if self.space is None:
            return "no space (heuristic)"
        if self.space is Space.SUBGRAPHS:
            return f"at most {self.q or '?'} subgraph{'s' if self.q != 1 else ''} per accelerator"
        return f"{self.space} splits"

    def summary(self) -> str:
        """A few human-readable lines: status (and why, when there is no placement), objective,
        bound and achieved gap, and per-device contents."""
        engine = f" ({self.solver})" if self.solver else ""
        lines = [f"method {self.method}{engine}: {self.status}"
                 + (f", stopped by {self.limit.words}" if self.limit else "")]
        reason = self.info.get("reason")
        if reason and not self.has_solution:
            lines.append(f"reason: {reason}")
        if self.objective is not None:
            from exactplace.core.objectives import OBJECTIVE_LABELS

            label = OBJECTIVE_LABELS.get(self.objective_name, self.objective_name)
            options = self.info.get("options", {})
            if options.get("schedule") is not None:
                label = (f"time per microbatch under {options['schedule']}, {options.get('microbatches')} "
                         "microbatches a step")
            lines.append(f"{label} ({self.objective_name} objective): {self.objective:.6g}")
            if self.bound is not None:
                lines.append(f"lower bound: {self.bound:.6g} (over {self.describe_space()})  "
                             f"gap: {_percent(self.gap or 0.0)}")
            elif self.info.get("solver_failures"):
                lines.append("gap: unknown (a solver failed: see below)")
            else:
                lines.append("gap: unknown (the method proves no bound)")
        for failure in self.info.get("solver_failures", ()):
            lines.append(f"solver failed: {failure}")
        if self.info.get("solver_failures") and "returned" in self.info:
            lines.append(f"placement returned: {self.info['returned']}")
        if "time_limit" in self.info:
            lines.append(f"time limit: {self.info['time_limit']}")
        if "not_optimal" in self.info:
            lines.append(f"not called optimal: {self.info['not_optimal']}")
        if self.info.get("constraints"):
            lines.append("under the constraints " + json.dumps(self.info["constraints"]))
        lines.append(f"wall time: {self.wall_seconds:.3f} s")
        replicas = {} if self.replicas is None else dict(zip(self.cluster.device_names(), self.replicas.tolist()))
        for name, ids in self.devices_used().items():
            times = replicas.get(name, 1)
            lines.append(f"  {name}: {len(ids)} nodes" + (f" x {times} replicas" if times > 1 else ""))
        return "\n".join(lines)

    def __repr__(self) -> str:
        objective = "None" if self.objective is None else f"{self.objective:.6g}"
        return f"<Placement {self.method} {self.status} {self.objective_name}={objective}>"


def _percent(gap: float) -> str:
    """A gap as a percentage with the digits that matter: ``0%``, ``0.0123%``, ``2.5%``."""
    return "0%" if gap == 0 else f"{100 * gap:.3g}%"


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
