"""The grid of a what-if sweep: one solve per cluster, each helped by the cells already solved.

A row is one memory size (and bandwidth); its cells go up in accelerators. A cell is helped three ways, none of
which changes what it certifies:

- **reused**: the optimum of the same accelerator count with more memory per accelerator (a row solved before)
  fits this cell's memory. The smaller memory only removes placements, so that placement is optimal here too,
  with the same bound (rechecked and rescored on this cell's cluster).
- **warm start**: the best of the previous cell's placement (one accelerator fewer: a feasible placement here,
  the new accelerator left empty) and DPL's split, as the method's starting placement.
- **method hint**: the exact method that certified the previous cell (or, for a row's first, the cell above) runs
  first, before ``method="auto"``'s trial runs (which on a graph too wide for the DP take seconds each): the
  contiguous IP, which ``auto`` reaches only after the others' trials failed, as ``auto`` would run it; the DP or
  the bounded search with a time limit of twice the neighbour's own run, a cell they do not certify in it being
  then solved as a cold one would be.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.constraints import Constraints
from exactplace.core.errors import ExactplaceError, ParameterError, check_param
from exactplace.core.graph import Graph
from exactplace.core.interrupt import handled_interrupt
from exactplace.core.objectives import SCORING_OPTIONS
from exactplace.core.params import brief
from exactplace.core.placement import Limit, Placement, Status
from exactplace.core.problem import DEFAULT_REL_GAP
from exactplace.evaluators import check_feasibility, evaluate
from exactplace.evaluators.feasibility import constraint_violations, human_bytes
from exactplace.io import Workload, read_workload, workload_format, workload_from_text
from exactplace.io.reading import read_bytes
from exactplace.io.tables import finite
from exactplace.methods.front_door import solve
from exactplace.methods.jobs import JobsInterrupted, map_jobs

__all__ = ["CELL_FIELDS", "SweepInterrupted", "cells_json", "sweep"]

#: The columns of a sweep's frame (``placement`` holds each cell's :class:`Placement`; the JSON leaves it out).
CELL_FIELDS = ("accelerators", "memory", "bandwidth", "objective", "bound", "gap", "status", "method", "settled",
               "seconds", "placement")

#: The methods that certify: a cell one of them certified hints its method to the next.
_EXACT = ("dp", "bb", "mip", "schedule-dp", "schedule-mip")
#: Exact methods that search from a split of their own (the DP from DPL's) and use a warm start only as what to
#: return when stopped before they have one: no warm start is computed for them.
_OWN_START = ("dp", "schedule-dp")

#: The method hint's time limit: this many times the neighbour's own run, and at least ``_HINT_FLOOR`` seconds; the
#: last exact method ``auto`` tries (``_LAST_EXACT``), reached after the others' trials failed, runs as ``auto`` would
#: run it.
_HINT_FACTOR, _HINT_FLOOR = 2.0, 2.0
_LAST_EXACT = "mip"


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped a sweep: ``cells`` is the frame of the cells done (``sweep``'s columns)."""

    def __init__(self, cells: Any) -> None:
        super().__init__()
        self.cells = cells


@dataclasses.dataclass(frozen=True)
class _Settings:
    """What every cell is solved with (a Ray task receives it whole)."""

    objective: str
    method: str
    time_limit: float | None
    rel_gap: float
    constraints: Constraints | None
    options: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class _Row:
    """One row of the grid: a graph (read at one bandwidth), one memory size, the accelerator counts."""

    graph: Graph
    cpus: int
    memory: float
    bandwidth: float | None
    accelerators: tuple[int, ...]
    settings: _Settings


def sweep(workload: Workload | Graph | str, accelerators: Iterable[int] | int = range(2, 9),
          memory: Iterable[float] | float | None = None, bandwidth: Iterable[float] | float | None = None, *,
          cluster: Cluster | None = None, objective: str = "throughput", method: str = "auto",
          time_limit: float | None = None, rel_gap: float = DEFAULT_REL_GAP,
          constraints: Constraints | Mapping[str, Any] | None = None, ray_address: str | None = None,
          progress: bool = False, **options: Any) -> Any:
    """Solve the workload on every cluster of a grid: accelerator counts x memory sizes (x bandwidths).

    Each cell is one :func:`~exactplace.solve` on a cluster of identical accelerators, as a cold solve would
    certify it; the cells already solved help (the optimum of a larger memory reused where it fits, a warm
    start, the neighbour's method tried first: :mod:`exactplace.sweep.grid`), so the whole grid takes less time
    than its cells one by one.

    Parameters
    ----------
    workload : Workload, Graph or path
        The model; a path to a PipeDream profile or ONNX model is read again at each ``bandwidth``.
    accelerators : int or iterable of int, default 2..8
        The accelerator counts.
    memory : float or iterable of float, optional
        Bytes per accelerator (``inf``: uncapped); default, the workload's own (one size for all accelerators).
    bandwidth : float or iterable of float, optional
        Link bandwidths in bytes per second, for a profile or ONNX model given by its path.
    cluster : Cluster, optional
        With a bare Graph: its CPUs (and memory, without ``memory``); it overrides a Workload's cluster.
    objective, method, time_limit, rel_gap, constraints, **options
        As :func:`~exactplace.solve`, for every cell (``time_limit``: seconds per cell).
    ray_address : str, optional
        Run the rows (one memory size and bandwidth each) as Ray tasks on that cluster; ``"local"`` starts one.
        The cells of a row help each other there too; rows do not.
    progress : bool, default False
        A progress bar of the cells on stderr.

    Returns
    -------
    pandas.DataFrame
        One row per cell, in ascending bandwidth, memory and accelerators: ``CELL_FIELDS``. ``settled`` says how
        the cell was helped (``solved``, ``warm start``, ``method hint``, or ``reused`` and from which memory);
        ``seconds`` is its own time. ``attrs["workload"]`` names the workload.

    Raises
    ------
    SweepInterrupted
        Ctrl-C (or SIGTERM): its ``cells`` is the frame of the cells done.

    Examples
    --------
    >>> from exactplace import read_workload, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> cells = sweep(w, accelerators=[2, 4], memory=[8e9, 16e9])
    >>> cells[["accelerators", "memory", "status", "settled"]].values.tolist()  # doctest: +NORMALIZE_WHITESPACE
    [[2, 8000000000.0, 'optimal', 'reused from 16 GB'], [4, 8000000000.0, 'optimal', 'reused from 16 GB'],
     [2, 16000000000.0, 'optimal', 'warm start'], [4, 16000000000.0, 'optimal', 'method hint']]
    """
    counts = _counts(accelerators)
    graphs, own, name = _inputs(workload, bandwidth)
    base = cluster if cluster is not None else own
    check_param(isinstance(base, Cluster), "cluster", "sweep", "a Cluster (required with a bare Graph)", base)
    check_param(not base.is_two_level and bool(np.all(base.speed == base.speed[0])) if base.accelerators else True,
                "cluster", "sweep", "a one-level cluster of identical accelerators (a sweep varies their count)", base)
    sizes = _sizes(memory, base)
    if constraints is None and isinstance(workload, Workload):
        constraints = workload.constraints  # the file's own, unless the caller gives others
    if constraints is not None and not isinstance(constraints, Constraints):
        constraints = Constraints.from_dict(constraints)
    settings = _Settings(objective, method, time_limit, rel_gap, constraints or None, dict(options))
    rows = [_Row(graph, base.cpus, size, rate, counts, settings)
            for rate, graph in graphs for size in sorted(sizes, reverse=True)]
    records: list[dict[str, Any]] = []
    interrupted = False
    if ray_address:
        try:
            for row_records in map_jobs(_solve_row, rows, ray_address):
                records.extend(row_records)
        except JobsInterrupted as stop:
            records = [r for row_records in stop.records for r in row_records]
            interrupted = True
    else:
        interrupted = _solve_here(rows, records, progress)
    frame = _frame(records, name)
    if interrupted:
        raise SweepInterrupted(frame)
    return frame


def _solve_here(rows: Sequence[_Row], records: list[dict[str, Any]], progress: bool) -> bool:
    """Solve the rows here, largest memory first per bandwidth, each helped by the row above; True if Ctrl-C
    stopped it (``records`` then holds the cells done)."""
    from tqdm import tqdm

    with tqdm(total=sum(len(row.accelerators) for row in rows), desc="sweep", unit="cell", disable=not progress,
              leave=False) as bar:
        above: dict[int, Placement] = {}
        for i, row in enumerate(rows):
            if i and row.graph is not rows[i - 1].graph:
                above = {}
            done = _solve_row(row, above, bar.update)
            records.extend(done)
            if len(done) < len(row.accelerators) or any(r["placement"].limit is Limit.INTERRUPT for r in done):
                return True
            above = {r["accelerators"]: r["placement"] for r in done}
    return False


def _solve_row(row: _Row, above: Mapping[int, Placement] | None = None,
               tick: Any = None) -> list[dict[str, Any]]:
    """The cells of one row, in ascending accelerators; stops after a cell Ctrl-C stopped (or at Ctrl-C)."""
    records: list[dict[str, Any]] = []
    below: Placement | None = None
    for k in row.accelerators:
        cluster = Cluster(k, row.memory, row.cpus)
        start = time.perf_counter()
        try:
            placement, settled = _solve_cell(row.graph, cluster, row.settings, below, (above or {}).get(k))
        except KeyboardInterrupt:
            handled_interrupt()
            break
        records.append({"accelerators": k, "memory": row.memory, "bandwidth": row.bandwidth,
                        "placement": placement, "settled": settled, "seconds": time.perf_counter() - start})
        if tick is not None:
            tick(1)
        if placement.limit is Limit.INTERRUPT:
            break
        below = placement
    return records


def _solve_cell(graph: Graph, cluster: Cluster, settings: _Settings, below: Placement | None,
                above: Placement | None) -> tuple[Placement, str]:
    """One cell: reused from ``above`` (same accelerators, more memory) where its optimum fits, else solved,
    warm-started from ``below`` (one accelerator fewer) and hinted its method."""
    if above is not None:
        reused = _reused(graph, cluster, settings, above)
        if reused is not None:
            return reused, f"reused from {human_bytes(above.cluster.max_memory)}"
    starts: list[np.ndarray | None] = []

    def given(method: str) -> dict[str, Any]:
        """The warm start for ``method`` (computed once; none for a method that searches from its own split)."""
        if method in _OWN_START:
            return {}
        if not starts:
            starts.append(_warm_start(graph, cluster, settings, below))
        return {"warm_start": starts[0]} if starts[0] is not None else {}

    time_limit = settings.time_limit
    source = next((p for p in (below, above) if p is not None and p.status is Status.OPTIMAL and p.method in _EXACT),
                  None)
    if settings.method == "auto" and source is not None:
        if source.method == _LAST_EXACT:  # the others' trials failed on the neighbour; it runs as auto would
            hint = time_limit
        else:
            own = sum(source.timings.values()) if source.timings else source.wall_seconds  # without auto's trials
            hint = min(max(_HINT_FLOOR, _HINT_FACTOR * own), time_limit or math.inf)
        try:
            quick = _solve(graph, cluster, settings, source.method, hint, given(source.method))
        except ParameterError:  # the neighbour's method does not take this cell (its size, an option)
            quick = None
        if quick is not None and (quick.status in (Status.OPTIMAL, Status.INFEASIBLE)
                                  or quick.limit is Limit.INTERRUPT):
            return quick, "method hint"
        if quick is not None and time_limit is not None:
            time_limit = max(time_limit - quick.wall_seconds, 1e-3)
    start = given(settings.method)
    placement = _solve(graph, cluster, settings, settings.method, time_limit, start)
    return placement, "warm start" if start else "solved"


def _solve(graph: Graph, cluster: Cluster, settings: _Settings, method: str, time_limit: float | None,
           given: Mapping[str, Any]) -> Placement:
    return solve(graph, cluster, settings.objective, method, time_limit if time_limit != math.inf else None,
                 settings.rel_gap, constraints=settings.constraints, **given, **settings.options)


def _holds(graph: Graph, cluster: Cluster, settings: _Settings, device: np.ndarray) -> bool:
    """Whether ``device`` is a feasible placement of this cell (the objective's rules, the schedule's memory,
    the constraints)."""
    options = settings.options
    broken = check_feasibility(graph, cluster, device, objective=settings.objective,
                               schedule=options.get("schedule"), microbatches=options.get("microbatches"))
    if not broken and settings.constraints is not None:
        broken = constraint_violations(graph, cluster, device, settings.constraints)
    return not broken


def _score(graph: Graph, cluster: Cluster, settings: _Settings, device: np.ndarray) -> float:
    scoring = {k: v for k, v in settings.options.items() if k in SCORING_OPTIONS[settings.objective]}
    return evaluate(graph, cluster, device, settings.objective, **scoring)


def _reused(graph: Graph, cluster: Cluster, settings: _Settings, above: Placement) -> Placement | None:
    """``above``'s optimum, held to this cell's memory and rescored on its cluster, or None where it does not
    carry over (not certified, too large for this memory, an objective whose value the memory changes)."""
    if (settings.objective != "throughput" or above.status is not Status.OPTIMAL or above.device is None
            or above.subgraph is not None or above.replicas is not None
            or not _holds(graph, cluster, settings, above.device)):
        return None
    value = _score(graph, cluster, settings, above.device)
    if value != above.objective:  # the loads do not depend on the memory; anything else is not this argument
        return None
    larger = above.cluster.max_memory
    certified = (f"the optimum with {'uncapped memory' if math.isinf(larger) else human_bytes(larger)} per "
                 f"accelerator, which fits in {human_bytes(cluster.max_memory)}")
    return dataclasses.replace(above, cluster=cluster, objective=value, wall_seconds=0.0,
                               info={**above.info, "certified_by": certified})


def _warm_start(graph: Graph, cluster: Cluster, settings: _Settings, below: Placement | None) -> np.ndarray | None:
    """The better of ``below``'s placement (its CPUs moved up by the new accelerator) and DPL's split, where
    feasible here; None when neither is (the method then starts as it would cold)."""
    candidates = []
    if below is not None and below.device is not None and below.subgraph is None and below.replicas is None:
        k = cluster.accelerators
        candidates.append(np.where(below.device >= k - 1, below.device + 1, below.device))
    if settings.objective == "throughput" and settings.constraints is None and "schedule" not in settings.options:
        try:
            dpl = solve(graph, cluster, "throughput", "dpl", **{k: v for k, v in settings.options.items()
                                                                if k in ("overlap", "gpipe")})
        except ExactplaceError:
            dpl = None
        if dpl is not None and dpl.device is not None:
            candidates.append(dpl.device)
    feasible = [d for d in candidates if _holds(graph, cluster, settings, d)]
    if not feasible:
        return None
    return min(feasible, key=lambda d: _score(graph, cluster, settings, d))


def _counts(accelerators: Iterable[int] | int) -> tuple[int, ...]:
    try:
        values = [accelerators] if isinstance(accelerators, (int, np.integer)) else list(accelerators)
        counts = sorted({int(k) for k in values if not isinstance(k, bool) and int(k) == k and k >= 1})
        ok = len(counts) == len(values) and bool(counts)
    except (TypeError, ValueError):
        ok = False
    check_param(ok, "accelerators", "sweep", "positive integers, each once (a range such as range(2, 9))",
                brief(accelerators))
    return tuple(counts)


def _sizes(memory: Iterable[float] | float | None, base: Cluster) -> list[float]:
    if memory is None:
        check_param(base.accelerators == 0 or bool(np.all(base.memory == base.memory[0])), "memory", "sweep",
                    "given: the workload's accelerators have different memory sizes", None)
        return [float(base.memory[0]) if base.accelerators else math.inf]
    values = [memory] if isinstance(memory, (int, float, np.number)) else list(memory)
    ok = bool(values) and all(isinstance(m, (int, float, np.number)) and not isinstance(m, bool) and m >= 0
                              for m in values) and len(set(values)) == len(values)
    check_param(ok, "memory", "sweep", "non-negative numbers of bytes (inf: uncapped), each once", brief(memory))
    return [float(m) for m in values]


def _inputs(workload: Workload | Graph | str, bandwidth: Iterable[float] | float | None
            ) -> tuple[list[tuple[float | None, Graph]], Cluster | None, str]:
    """The graph at each bandwidth (one, at bandwidth None, without any), the workload's cluster (None for a bare
    Graph) and its name."""
    if isinstance(workload, (Workload, Graph)):
        check_param(bandwidth is None, "bandwidth", "sweep", "None unless the workload is given by the path of a "
                    "PipeDream profile or ONNX model (only they state transfers in bytes)", brief(bandwidth))
        if isinstance(workload, Graph):
            return [(None, workload)], None, "graph"
        return [(None, workload.graph)], workload.cluster, workload.name
    if bandwidth is None:
        read = read_workload(workload)
        return [(None, read.graph)], read.cluster, read.name
    rates = [bandwidth] if isinstance(bandwidth, (int, float, np.number)) else list(bandwidth)
    check_param(bool(rates) and all(isinstance(b, (int, float, np.number)) and b > 0 for b in rates)
                and len(set(rates)) == len(rates), "bandwidth", "sweep",
                "positive numbers of bytes per second (inf: free transfers), each once", brief(bandwidth))
    text = read_bytes(workload, "Workload")  # read once: detected, then converted at each bandwidth
    if workload_format(text, workload) == "json":
        raise ParameterError("The 'bandwidth' parameter of sweep applies to PipeDream profiles and ONNX models "
                             "only: a JSON workload states its edge costs as times, not bytes.")
    read = [(float(rate), workload_from_text(text, workload, bandwidth=rate)) for rate in sorted(rates)]
    return [(rate, w.graph) for rate, w in read], read[0][1].cluster, read[0][1].name


def _frame(records: list[dict[str, Any]], name: str) -> Any:
    import pandas as pd

    rows = []
    for record in records:
        placement: Placement = record["placement"]
        rows.append({**record, "objective": placement.objective, "bound": placement.bound, "gap": placement.gap,
                     "status": placement.status.value, "method": placement.method})
    frame = pd.DataFrame(rows, columns=list(CELL_FIELDS))
    frame = frame.sort_values(["bandwidth", "memory", "accelerators"], na_position="first", kind="stable")
    frame = frame.reset_index(drop=True)
    frame.attrs["workload"] = name
    return frame


def cells_json(cells: Any) -> list[dict[str, Any]]:
    """The cells of a sweep's frame as JSON-ready objects (no placement; inf and NaN as None).

    >>> import pandas as pd
    >>> cells_json(pd.DataFrame([{"accelerators": 2, "memory": float("inf"), "bandwidth": None, "objective": 1.5,
    ...                           "bound": 1.5, "gap": 0.0, "status": "optimal", "method": "dp", "settled": "solved",
    ...                           "seconds": 0.1, "placement": None}]))[0]["memory"] is None
    True
    """
    out = []
    for row in cells.to_dict(orient="records"):
        cell: dict[str, Any] = {}
        for key in CELL_FIELDS[:-1]:
            value = row[key]
            if isinstance(value, (float, np.floating)) or value is None:
                value = finite(value)  # (None for a NaN, an infinite value or None)
            elif isinstance(value, np.integer):
                value = int(value)
            cell[key] = value
        out.append(cell)
    return out
