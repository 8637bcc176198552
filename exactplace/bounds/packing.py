"""The packing relaxation's proven lower bound on the non-contiguous max load.

The relaxation (communication and memory dropped, classes whole, accelerator support and speeds
kept) and why its bound is valid for every split: :mod:`exactplace.formulations.throughput_bounds`.
:func:`packing_bound` solves it on a solver adapter: optimization for a third of its time, then a
bisection of decision probes. ``method="mip"`` with ``contiguous=False`` puts the result on the IP's
``L`` (option ``packing_bound``). A split is a placement of the relaxation too (communication dropped), so the bound
is at most a split's compute-only max load: :func:`packing_falls_short` tells, before solving, when it cannot
certify a split.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph
from exactplace.core.interrupt import ctrl_c_sets
from exactplace.core.placement import Status
from exactplace.evaluators.max_load import device_loads, max_load
from exactplace.formulations.throughput_bounds import packing_model
from exactplace.solvers import Request, get_solver, solve_model
from exactplace.solvers.cpsat import refutation_margin

__all__ = ["DEFAULT_PACKING", "PackingBound", "PackingSettings", "packing_bound", "packing_falls_short"]


@dataclasses.dataclass(frozen=True)
class PackingBound:
    """The packing relaxation's proven lower bound (``value``), whether it is that relaxation's optimum,
    the classes it kept, and the seconds it took."""

    value: float
    optimal: bool
    classes: int
    seconds: float


@dataclasses.dataclass(frozen=True)
class PackingSettings:
    """The packing bound's tuning (:data:`DEFAULT_PACKING`; pass another to :func:`packing_bound`)."""

    tolerance: float = 1e-3
    """The bisection stops when the interval left is below this fraction of the best relaxed placement."""


#: The packing bound's default tuning.
DEFAULT_PACKING = PackingSettings()


def packing_falls_short(graph: Graph, cluster: Cluster, start: np.ndarray, rel_gap: float, *, overlap: bool = False,
                        gpipe: bool = False) -> bool:
    """Whether the packing relaxation's bound is sure to fall short of certifying ``start`` within ``rel_gap``.

    The start is a placement of the relaxation too (communication dropped), so its compute-only max load is at least
    the relaxation's optimum, hence at least its bound; below ``U (1 - rel_gap)`` for the start's max load ``U``,
    the bound cannot close the gap (``method="mip"`` then puts the packing phase off).
    """
    compute = device_loads(graph, cluster, start, overlap=overlap).compute
    relaxed = float(compute[:, 0].max() + compute[:, 1].max()) if gpipe else float(compute.sum(axis=1).max())
    return relaxed < max_load(graph, cluster, start, overlap=overlap, gpipe=gpipe) * (1.0 - rel_gap)


def packing_bound(data: object, cluster: Cluster, *, gpipe: bool = False, time_limit: float = 5.0,
                  threads: int = 2, solver: str = "cpsat", settings: PackingSettings = DEFAULT_PACKING
                  ) -> PackingBound | None:
    """The packing relaxation's proven lower bound within ``time_limit`` seconds (None without a bound).

    First the relaxation is optimized for a third of the time, at least a second (its dual bound, and its best
    placement ``P``); then a bisection of decision probes "is there a placement with max load
    at most ``T``?" between the bound and ``P`` (each at most a fifth of the time), until the interval is
    within ``settings.tolerance`` of ``P``: a proof of infeasibility raises the bound to ``T`` (a probe can
    refute a threshold the optimizing solver's bound only crawls towards; refutations get harder near the
    relaxation's optimum); a placement found lowers ``P``; a probe left undecided is retried halfway below.
    A CP-SAT refutation is taken at the threshold minus the adapter's worst coefficient rounding
    (its scaled rows are not exact), so the bound stays valid for the unscaled relaxation.

    >>> from exactplace import read_workload, workload_path
    >>> from exactplace.formulations.throughput import unit_data
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> b = packing_bound(unit_data(w.graph, w.graph.color), w.cluster, time_limit=5.0)
    >>> 15.0 < b.value <= 17.7147 + 1e-6
    True
    """
    with ctrl_c_sets() as cancel:  # every solve stops on it; then KeyboardInterrupt
        found = _bisect(data, cluster, gpipe, time_limit, threads, solver, cancel, settings.tolerance)
    if cancel.is_set():
        raise KeyboardInterrupt
    return found


def _bisect(data: object, cluster: Cluster, gpipe: bool, time_limit: float, threads: int, solver: str,
            cancel: threading.Event, tolerance: float) -> PackingBound | None:
    clock = time.monotonic()
    deadline = clock + time_limit
    model, y, _ = packing_model(data, cluster, gpipe=gpipe)
    if not y.size:
        return PackingBound(0.0, True, 0, time.monotonic() - clock)
    solver = get_solver(solver).name
    # CP-SAT in this process: it looks at its stop flag and clock throughout, and a child's start would take about
    # the first third of this phase's usual budget (5% of a minute).
    isolate = False if solver == "cpsat" else None
    # (At least a second, as each probe below gets: with less, a loaded machine may see no placement, no bound.)
    out = solve_model(model, solver, Request(deadline=clock + max(time_limit / 3, min(1.0, time_limit)), rel_gap=0.0,
                                             threads=threads, cancel=cancel, isolate=isolate))
    # A stopped solve without a placement has no result bound; the dual bounds it streamed hold all the same.
    bounds = [point.bound for point in out.trace if point.bound is not None]
    if out.bound is None and not bounds:
        return None
    bound, best = float(out.bound if out.bound is not None else max(bounds)), out.objective
    if out.status is Status.OPTIMAL or best is None:
        return PackingBound(bound, out.status is Status.OPTIMAL, len(y), time.monotonic() - clock)
    ceiling = best  # the lowest threshold a probe failed to decide, or the best placement
    while time.monotonic() < deadline - 0.05 and ceiling - bound > tolerance * best and not cancel.is_set():
        threshold = (bound + ceiling) / 2.0
        decision, _, _ = packing_model(data, cluster, gpipe=gpipe, at_most=threshold)
        left = deadline - time.monotonic()
        out = solve_model(decision, solver, Request(deadline=time.monotonic() + min(left, max(1.0, time_limit / 5)),
                                                    rel_gap=1.0, threads=threads, cancel=cancel, isolate=isolate))
        if cancel.is_set():
            break
        if out.status is Status.INFEASIBLE:
            # CP-SAT decided a scaled copy: its threshold floored to the grid 1/S, its coefficients rounded.
            bound = max(bound, threshold - (refutation_margin(decision) if solver == "cpsat" else 0.0))
        elif out.objective is not None:
            best = min(best, float(out.objective))  # a relaxed placement at most the threshold
            ceiling = min(ceiling, best)
        else:
            ceiling = threshold  # undecided in its time: try halfway below it
    return PackingBound(min(bound, best), bound >= best, len(y), time.monotonic() - clock)

