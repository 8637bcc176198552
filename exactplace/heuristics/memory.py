"""Every placer's last step: its placement made memory-feasible, repaired, or proven infeasible.

Memory-infeasible outcomes are never silent (:func:`settle_memory`): colour classes move off
overfull accelerators (least compute per byte first) to the accelerator with the most room
that holds them, else to the first CPU core, and ``info["memory_repair"]`` counts the moves.
So with a CPU core the result is always a feasible placement. Without one, an exact bin
packing of the classes (:mod:`exactplace.formulations.packing`, on the solver layer) decides:
it fits (that packing is the placement), or the status is ``infeasible`` (then proven) with
the best-effort placement in ``info["best_effort"]`` (device per node position) and the
overfull accelerators in ``info["overfull"]``; ``no_solution`` only when the packing runs out
of time, or for a placer whose structure a repair would break (pipedream's contiguous
stages) when other placements fit.
"""

from __future__ import annotations

import time

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph
from exactplace.core.placement import Limit, Status
from exactplace.core.problem import MethodResult
from exactplace.evaluators.feasibility import accelerator_memory, memory_summary

__all__ = ["repair_memory", "settle_memory"]

#: Seconds the exact packing may take when the placer has no deadline.
PACKING_SECONDS = 10.0


def repair_memory(graph: Graph, cluster: Cluster, device: np.ndarray) -> int:
    """Move colour classes off overfull accelerators, in place; returns the number of classes moved.

    From each overfull accelerator, classes with the least accelerator time per byte go
    first, to the accelerator with the most room that holds them, else to the first CPU
    core; a class that fits nowhere stays.
    """
    k = cluster.accelerators
    limit = cluster.memory_limit
    cpu = k if cluster.cpus else None
    used = accelerator_memory(graph, cluster, device)
    work = np.where(graph.supported, graph.acc_time, 0.0)
    class_memory = np.bincount(graph.color, weights=graph.memory)
    class_work = np.bincount(graph.color, weights=work, minlength=len(class_memory))
    moved = 0
    for d in np.flatnonzero(used > limit).tolist():
        classes = np.unique(graph.color[device == d])
        per_byte = np.divide(class_work[classes], class_memory[classes], out=np.full(len(classes), np.inf),
                             where=class_memory[classes] > 0)
        for c in classes[np.lexsort((classes, per_byte))].tolist():
            if used[d] <= limit[d]:
                break
            if class_memory[c] == 0:
                continue
            room = limit - used
            room[d] = -np.inf
            target = int(np.argmax(room)) if k > 1 and room.max() >= class_memory[c] else cpu
            if target is None:
                continue
            device[graph.color == c] = target
            used[d] -= class_memory[c]
            if target < k:
                used[target] += class_memory[c]
            moved += 1
    return moved


def _pack_classes(graph: Graph, cluster: Cluster, deadline: float | None) -> tuple[str, np.ndarray | None]:
    """Exact bin packing of the colour classes into the accelerators' memory (no CPU): ("fits", device),
    ("infeasible", None) or ("unknown", None) at the deadline."""
    from exactplace.formulations.packing import packing, packs
    from exactplace.solvers import Request, solve_model

    class_memory = np.bincount(graph.color, weights=graph.memory)
    model, x = packing(class_memory, cluster.memory_limit)
    seconds = PACKING_SECONDS if deadline is None else max(0.1, deadline - time.monotonic())
    out = solve_model(model, "auto", Request(deadline=time.monotonic() + seconds))
    if out.status is Status.INFEASIBLE:
        return "infeasible", None
    if out.values is not None:
        assignment = np.argmax(out.values[x], axis=1)
        if packs(class_memory, cluster.memory_limit, assignment):
            return "fits", assignment[graph.color]
    return "unknown", None


def settle_memory(
    graph: Graph, cluster: Cluster, device: np.ndarray, info: dict | None = None, *, solver: str = "",
    deadline: float | None = None, repair: bool = True,
) -> MethodResult:
    """The MethodResult of a placer's ``device``: feasible, repaired, or proven infeasible (module docstring).

    ``repair=False`` for a placer that promises a structure (pipedream's contiguous stages),
    which neither a repair nor a packing keeps: when the packing fits, the result is
    ``no_solution`` saying that other placements fit; ``infeasible`` stays a proof.
    """
    info = dict(info or {})
    device = np.asarray(device, dtype=np.int64).copy()
    limit = cluster.memory_limit
    if np.all(accelerator_memory(graph, cluster, device) <= limit):
        return MethodResult(device, Status.FEASIBLE, solver=solver, info=info)
    best_effort = device.copy()
    if repair:
        info["memory_repair"] = repair_memory(graph, cluster, device)
        if np.all(accelerator_memory(graph, cluster, device) <= limit):
            info.pop("order", None)  # the placer's order was for its own placement
            return MethodResult(device, Status.FEASIBLE, solver=solver, info=info)
    verdict, packed = _pack_classes(graph, cluster, deadline)
    if verdict == "fits" and not repair:
        info["reason"] = ("no placement of this method's kind fits the accelerators' memory (no CPU); other "
                          "placements do (an exact packing found one): try a method without its structure")
        return MethodResult(None, Status.NO_SOLUTION, solver=solver, info=info)
    if verdict == "fits":
        info.pop("order", None)
        info["memory_repair"] = "exact packing"
        return MethodResult(packed, Status.FEASIBLE, solver=solver, info=info)
    used = accelerator_memory(graph, cluster, best_effort)
    over = np.flatnonzero(used > limit)
    names = cluster.device_names()
    info.update(overfull={names[d]: float(used[d]) for d in over.tolist()}, best_effort=best_effort.tolist())
    if verdict == "infeasible":
        info["reason"] = ("no assignment of the colour classes to the accelerators fits their memory (proven by an "
                          f"exact bin packing: {memory_summary(graph, cluster)}); it needs a CPU core, another "
                          f"accelerator or more memory per accelerator")
        return MethodResult(None, Status.INFEASIBLE, solver=solver, info=info)
    info["reason"] = (f"{', '.join(names[d] for d in over.tolist())} overfull, no CPU, and the exact packing of "
                      "the colour classes ran out of time (neither a fit nor a proof)")
    return MethodResult(None, Status.NO_SOLUTION, limit=Limit.TIME, solver=solver, info=info)
