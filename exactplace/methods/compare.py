"""``compare``: every method on one workload, each placement scored under every objective."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ExactplaceError, ParameterError, PlacementError, check_param
from exactplace.core.graph import Graph
from exactplace.core.interrupt import handled_interrupt
from exactplace.core.objectives import OBJECTIVES
from exactplace.core.params import Real, brief
from exactplace.core.placement import Limit
from exactplace.core.placement_array import as_device_array
from exactplace.evaluators import evaluate
from exactplace.io import Workload, read_placement
from exactplace.methods.front_door import solve
from exactplace.methods.registry import available_methods, registered_methods

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLUMNS", "compare"]

#: The columns of the table, in order (the JSON rows of ``exactplace compare --json`` use the first seven).
COLUMNS = ("method", "status", "throughput", "latency", "makespan", "gap", "seconds", "optimized", "note")


def _score(graph: Graph, cluster: Cluster, device: np.ndarray, objective: str, order: Any) -> float:
    try:
        if objective == "makespan" and order is not None:
            return evaluate(graph, cluster, device, objective, order=order)
        return evaluate(graph, cluster, device, objective)
    except PlacementError:  # latency: accelerator subgraphs that wait on each other in a cycle
        return math.nan


#: Seconds per method: what :func:`~exactplace.methods.front_door.solve` takes.
_TIME_LIMIT = Real(low=0, low_closed=False, finite=False)


def _names(values: object, parameter: str, requirement: str) -> tuple[Any, ...]:
    """A sequence of names as a tuple; a string is one name or a comma-separated list, as on the command line."""
    if isinstance(values, str):
        return tuple(part.strip() for part in values.split(","))
    try:
        return tuple(values)  # type: ignore[arg-type]
    except TypeError:  # not iterable
        check_param(False, parameter, "compare", requirement, brief(values))
        return ()


def _split_array(graph: Graph, cluster: Cluster, label: object, split: object) -> np.ndarray:
    """A split given as a device array, checked against the graph and cluster (ParameterError naming its row)."""
    try:
        return as_device_array(graph, cluster, split)
    except (ExactplaceError, TypeError, ValueError) as error:
        raise ParameterError(f"The 'splits' parameter of compare: split {brief(label)!r} must be a split file or "
                             f"a device array placing every node of this graph on this cluster ({error}).") from None


def compare(
    workload: Workload,
    methods: Sequence[str] | None = None,
    objectives: Sequence[str] = ("throughput", "latency", "makespan"),
    time_limit: float | None = 60.0,
    splits: Mapping[str, str | Path | np.ndarray] | None = None,
) -> pd.DataFrame:
    """Run each method on ``workload`` and score its placement under every objective.

    Parameters
    ----------
    workload : Workload
    methods : sequence of str or str, optional
        Method names (a string: one name, or a comma-separated list such as ``"dp,greedy"``); default
        every available method.
    objectives : sequence of str or str
        The objectives to score each placement under (columns of the table); a string as for ``methods``.
    time_limit : float or None, default 60
        Seconds per method (positive; ``inf`` or None: no limit).
    splits : mapping of name to split file or device array, optional
        Extra rows (reference or expert splits), scored the same way.

    Returns
    -------
    pandas.DataFrame
        One row per method (then per split): ``method``, ``status``, one column per
        objective, ``gap``, ``seconds``, ``optimized`` (the objective the method optimizes) and
        ``note`` (the reason of a failure). Each method runs once, for its own first objective,
        and its placement is scored under all of ``objectives`` (makespan with the method's
        execution order where it gives one; ``NaN`` where a placement has no value, e.g. a
        latency deadlock). ``gap`` is ``(value - bound) / value`` for the first objective, against
        the largest bound any compared method proved for it; the bound's method and space are in
        ``DataFrame.attrs["bound"]``. A bound over chain splits (``dp``) does not bind
        non-contiguous placements: their gap can be negative. Ctrl-C stops the comparison: the
        methods after the interrupted one are ``not run``, and ``DataFrame.attrs["interrupted"]``
        is True.

    Examples
    --------
    >>> from exactplace import read_workload, workload_path
    >>> w = read_workload(workload_path("layer_bert24_inference"))
    >>> table = compare(w, methods=["dp", "greedy", "m-etf"], objectives=("throughput", "makespan"))
    >>> table[["method", "status"]].values.tolist()
    [['dp', 'optimal'], ['greedy', 'feasible'], ['m-etf', 'feasible']]
    >>> float(table.loc[0, "gap"]), table.attrs["bound"]["method"]
    (0.0, 'dp')
    """
    import pandas as pd  # here, not at module level: ``import exactplace`` stays light

    check_param(isinstance(workload, Workload), "workload", "compare", "a Workload", type(workload).__name__)
    objectives = _names(objectives, "objectives", f"a non-empty sequence of {list(OBJECTIVES)}")
    check_param(bool(objectives) and all(o in OBJECTIVES for o in objectives), "objectives", "compare",
                f"a non-empty sequence of {list(OBJECTIVES)}", brief(objectives))
    known = registered_methods()
    requirement = f"a non-empty list of method names from {sorted(known)}"
    names = list(_names(methods, "methods", requirement)) if methods is not None else available_methods()
    check_param(bool(names), "methods", "compare", requirement, brief(methods))
    for name in names:
        check_param(isinstance(name, str) and name in known, "methods", "compare", f"method names from "
                    f"{sorted(known)}", brief(name))
    check_param(time_limit is None or _TIME_LIMIT.accepts(time_limit), "time_limit", "compare",
                "a positive number (seconds per method) or None", brief(time_limit))
    check_param(splits is None or isinstance(splits, Mapping), "splits", "compare",
                "a mapping of row name to split file or device array", brief(splits))
    graph, cluster = workload.graph, workload.cluster
    # The extra rows are read and checked before any method runs: a bad split costs nothing.
    given = {label: read_placement(split, graph, cluster) if isinstance(split, (str, Path))
             else _split_array(graph, cluster, label, split) for label, split in (splits or {}).items()}
    rows, bounds = [], []
    interrupted = False
    for name in names:
        own = known[name].objectives[0]
        clock = time.perf_counter()
        row: dict[str, Any] = {"method": name, "optimized": own}
        if interrupted:
            rows.append({**row, "status": "not run", "note": "interrupted (Ctrl-C) before it ran"})
            continue
        try:
            p = solve(workload, objective=own, method=name, time_limit=time_limit)
        except ExactplaceError as error:  # too many ideals, a solver missing, ...
            row.update(status="error", seconds=time.perf_counter() - clock, note=str(error))
            rows.append(row)
            continue
        except KeyboardInterrupt:  # between a method's own handling and the next one: stop here too
            handled_interrupt()
            p = None
        interrupted = p is None or p.limit is Limit.INTERRUPT
        if p is None:
            rows.append({**row, "status": "not run", "note": "interrupted (Ctrl-C)"})
            continue
        row.update(status=p.status.value, seconds=time.perf_counter() - clock, note=p.info.get("reason", ""))
        if p.device is not None:
            for objective in objectives:
                row[objective] = _score(graph, cluster, p.device, objective, p.info.get("order"))
        if p.bound is not None and own == objectives[0]:
            bounds.append((p.bound, name, None if p.space is None else p.space.value))
        rows.append(row)
    for label, device in given.items():
        row = {"method": label, "status": "given", "optimized": "", "note": ""}
        for objective in objectives:
            row[objective] = _score(graph, cluster, device, objective, None)
        rows.append(row)
    table = pd.DataFrame(rows, columns=["method", "status", *objectives, "gap", "seconds", "optimized", "note"])
    table["note"] = table["note"].fillna("")
    best = max(bounds, default=None)
    if best is not None:
        value = table[objectives[0]].astype(float)
        table["gap"] = np.where(value > 0, (value - best[0]) / value, 0.0)
        table.loc[value.isna(), "gap"] = np.nan
        table.attrs["bound"] = {"value": best[0], "method": best[1], "space": best[2]}
    table.attrs["interrupted"] = interrupted
    return table
