"""``exactplace paper-tables``: the paper's throughput tables (1 and 2) and latency table (4), reproduced.

Every published value of ``reference.csv`` (:func:`read_reference`) is reproduced by the method
that stands for its column (:data:`COLUMNS`): a solve through :func:`exactplace.solve` (with
:func:`exactplace.methods.jobs.solve_job`, as the nightly job runs one) or a split file read from
the folder. Every value reported is the independent evaluator's (:func:`exactplace.evaluate` on the
placement), never a solver's; beside it the published value, the ratio ours / published, for the
exact methods the status, bound and gap, and a verdict with its reason
(:mod:`exactplace.paper.verdicts`). Ctrl-C stops the run: the cells done are kept and reported,
the rest marked not run; such tables go to new files only (:func:`partial_name`).

>>> from exactplace.paper import decimals, within_print
>>> decimals("17.79"), within_print(17.7899, "17.79")
(2, True)
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from exactplace.core.errors import ExactplaceError, check_param
from exactplace.core.interrupt import handled_interrupt
from exactplace.core.params import Real
from exactplace.evaluators import evaluate
from exactplace.io import load_json, read_split, workload_from_dict
from exactplace.io.tables import finite
from exactplace.methods.base import usable_cpus
from exactplace.methods.jobs import solve_job
from exactplace.methods.registry import registered_methods
from exactplace.paper.reference import (
    BELOW_MODEL,
    COLUMNS,
    DEFAULT_WORKLOADS,
    TABLES,
    Column,
    Row,
    decimals,
    read_reference,
    within_print,
)
from exactplace.paper.tables import (
    CSV_FIELDS,
    VERDICTS,
    Cell,
    PaperTables,
    partial_name,
    side_text,
    summary,
    table_files,
)
from exactplace.paper.verdicts import CellJob, judge

__all__ = ["BELOW_MODEL", "COLUMNS", "CSV_FIELDS", "DEFAULT_LATENCY_TIME_LIMIT", "DEFAULT_TIME_LIMIT",
           "DEFAULT_WORKLOADS", "TABLES", "VERDICTS", "Cell", "Column", "PaperTables", "Row", "decimals",
           "partial_name", "read_reference", "run_tables", "summary", "table_files", "within_print"]

#: Seconds per solve: every throughput solve (the IPs run to it unless they prove optimality first).
DEFAULT_TIME_LIMIT = 60.0
#: Seconds for the latency program, per workload.
DEFAULT_LATENCY_TIME_LIMIT = 60.0

_SECONDS = Real(low=0, low_closed=False, finite=False)

Progress = Callable[[str, float | None], AbstractContextManager[Any]]


def run_tables(rows: Sequence[Row], *, time_limit: float = DEFAULT_TIME_LIMIT,
               latency_time_limit: float = DEFAULT_LATENCY_TIME_LIMIT, progress: Progress | None = None,
               echo: Callable[[str], None] | None = None, command: str = "exactplace paper-tables") -> PaperTables:
    """Reproduce every published value of ``rows`` (from :func:`read_reference`).

    Parameters
    ----------
    rows : sequence of Row
    time_limit : float
        Seconds per throughput solve (every method takes it; the IPs run to it unless they prove
        optimality first).
    latency_time_limit : float
        Seconds per latency program.
    progress : callable, optional
        ``progress(description, seconds)`` returns a context manager shown while one cell is
        computed (the command line's progress bar); ``seconds`` is its time limit.
    echo : callable, optional
        Called with one line per cell once it is computed.
    command : str
        The command line stated in the Markdown.

    Returns
    -------
    PaperTables
        The cells, in the order of ``rows`` and of :data:`COLUMNS`; only published values are
        reproduced.
    """
    check_param(_SECONDS.accepts(time_limit), "time_limit", "run_tables", "a positive number", time_limit)
    check_param(_SECONDS.accepts(latency_time_limit), "latency_time_limit", "run_tables", "a positive number",
                latency_time_limit)
    start = time.monotonic()
    settings = {"command": command, "date": time.strftime("%Y-%m-%d"), "host": platform.node(),
                "cores": usable_cpus(), "load_start": _load(), "time_limit": float(time_limit),
                "latency_time_limit": float(latency_time_limit),
                "workloads": str(rows[0].folder) if rows else ""}
    tasks = [(row, column) for row in rows for column in COLUMNS[row.table] if row.published.get(column.name)]
    cells: list[Cell] = []
    interrupted = False
    data: dict[Path, Any] = {}
    for number, (row, column) in enumerate(tasks, start=1):
        cell = Cell(row.table, row.name, column.name, column.label, row.published[column.name],
                    published_seconds=row.published.get(column.seconds or "", ""))
        cells.append(cell)
        if interrupted:
            cell.status, cell.verdict, cell.reason = "not run", "no value", "not run: interrupted (Ctrl-C)"
            continue
        job = CellJob(row, column, latency_time_limit if column.latency_limit else time_limit,
                      next((c.ours for c in cells if c.status == "optimal" and c.column == "dp"
                            and (c.table, c.workload) == (row.table, row.name)), None))
        description = f"[{number}/{len(tasks)}] {row.table} {row.name}: {column.label}"
        try:
            with progress(description, job.limit) if progress is not None else nullcontext():
                _fill(cell, job, data)
            if echo is not None:
                echo(f"{description} = {side_text(cell)} ({cell.verdict}: {cell.reason})")
        except KeyboardInterrupt:  # the cells done are kept; this one and the rest are not run
            handled_interrupt()
            interrupted = True
            if not cell.verdict:
                cell.status, cell.verdict = "not run", "no value"
                cell.reason = "interrupted (Ctrl-C) before it finished"
    settings["load_end"] = _load()
    return PaperTables(cells, settings, time.monotonic() - start, interrupted)


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:  # not available on this system
        return "unknown"


def _fill(cell: Cell, job: CellJob, data: dict[Path, Any]) -> None:
    """Fill ``cell`` (``data``: the workload files read so far, by path); an error leaves it without a
    value, saying why, and the other cells still run."""
    try:
        if job.row.path not in data:
            data[job.row.path] = load_json(job.row.path, "Workload")
        _compute(cell, job, data[job.row.path])
    except ExactplaceError as error:  # a latency that cannot be scored, an unreadable split, ...
        cell.ours, cell.status, cell.verdict = None, "error", "no value"
        cell.reason = f"{type(error).__name__}: {error}"


def _compute(cell: Cell, job: CellJob, data: Any) -> None:
    """Fill ``cell``: ours, how it was found, and the verdict with its reason."""
    row, column = job.row, job.column
    workload = workload_from_dict(data, name=row.name)
    notes: list[str] = []
    device = None
    if column.method is None:
        split = _expert_split(row)
        cell.source = f"split {split.relative_to(row.folder)}" if split else "no split file"
        if split is None:
            cell.status, cell.verdict = "no split", "no value"
            cell.reason = f"no expert split for {row.name} in experts/"
            return
        try:
            device = read_split(split, workload.graph, workload.cluster)
        except ExactplaceError as error:
            cell.status, cell.verdict = "unusable split", "no value"
            cell.reason = f"the split does not fit this instance: {error}"
            return
        cell.status = "given"
    else:
        method = registered_methods()[column.method]
        options = ", ".join(f"{k}={v}" for k, v in column.options.items())
        cell.source = f"method {column.method}" + (f" ({options})" if options else "")
        if not method.available():
            cell.status, cell.verdict = "not installed", "no value"
            cell.reason = f"not installed (needs {', '.join(method.missing())})"
            return
        record, placement = solve_job({
            "key": f"{row.table}/{row.name}/{column.name}", "workload_name": row.name, "workload": data,
            "method": column.method, "objective": column.objective or row.table, "time_limit": job.limit,
            "options": dict(column.options), "replay": None})
        cell.seconds = record["wall_seconds"]
        if placement is not None and placement.has_solution:
            device = placement.device
            cell.status = placement.status.value
            cell.limit = placement.limit.value if placement.limit is not None else ""
            if column.exact:
                cell.bound, cell.gap = finite(placement.bound), placement.gap
            if placement.info.get("returned"):  # not the method's own placement
                notes.append(f"not the method's own placement: the value is the {placement.info['returned']}")
        else:
            cell.status = "error" if placement is None else placement.status.value
            why = record["error"] or (placement.info.get("reason", "") if placement is not None else "")
            if column.fallback is None:
                cell.verdict, cell.reason = "no value", why
                return
            name = column.fallback.format(name=row.name)
            try:
                device = read_split(row.folder / name, workload.graph, workload.cluster)
            except ExactplaceError as error:
                cell.verdict, cell.reason = "no value", f"{why}; the reference's split {name}: {error}"
                return
            cell.source, cell.status = f"split {name}", "given"
            notes.append(f"our {column.method} gave no placement ({why}), so the reference's split {name} is "
                         "evaluated instead")
    cell.ours = evaluate(workload.graph, workload.cluster, device, row.table)
    judge(cell, job, workload, device, notes)


def _expert_split(row: Row) -> Path | None:
    """The expert split of a workload: its own file, else (training) the inference one's."""
    folder = row.folder / "experts"
    for name in (row.name, row.name.replace("_training", "_inference")):
        if (folder / f"{name}_expert.json").is_file():
            return folder / f"{name}_expert.json"
    return None
