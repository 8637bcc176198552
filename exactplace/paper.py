"""``exactplace paper-tables``: the paper's throughput tables (1 and 2) and latency table (4), reproduced.

Every published value of ``reference.csv`` (in the shared workloads folder, see its README) is
reproduced by the method that stands for its column (:data:`COLUMNS`): a solve through
:func:`exactplace.solve` (with :func:`exactplace.regress.solve_job`, as the nightly job runs
one) or a split file read from the folder (the experts' splits, and the reference's own splits
where a column needs them). Every value reported is the independent evaluator's
(:func:`exactplace.evaluate` on the placement), never a solver's. Beside it: the published
value as printed, the ratio ours / published, for the exact methods the status, bound and gap,
and a verdict with its reason:

* ``equal``: within 1e-6 relative (the DP, whose value is published at full precision);
* ``rounding``: ours rounds to the published value at the number of decimals it was printed
  with (the IP values are printed with two);
* ``higher`` / ``lower``: a difference, explained from the run's own data: the time limit
  with the gap it left, the published run's own limit (``>N`` seconds), the 1% gap at which
  the published IPs stop, the randomized or reimplemented baselines, what the reference's
  own split file scores (greedy, max-load DP split), and :data:`BELOW_MODEL`, the documented
  published values below what the models allow;
* ``no value``: the cell could not be computed (the reason says why: a method not
  installed, a split file that does not fit the instance, an error, Ctrl-C).

Ctrl-C stops the run: the cells done are kept and reported, the interrupted one and the rest
are marked as not run. Such tables go to new files only (:func:`partial_name` where a table is
already there), so a complete table is never replaced by a partial one.

Examples
--------
>>> from exactplace.paper import decimals, within_print
>>> decimals("17.79"), within_print(17.7899, "17.79"), within_print(17.7147, "17.71")
(2, True, True)
"""

from __future__ import annotations

import csv
import io
import os
import platform
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exactplace.core.errors import ExactplaceError, InputFormatError, ParameterError, check_param
from exactplace.core.interrupt import handled_interrupt
from exactplace.core.params import Real
from exactplace.evaluators import evaluate
from exactplace.io import load_json, read_split, workload_from_dict
from exactplace.methods.base import usable_cpus
from exactplace.methods.registry import registered_methods
from exactplace.regress import finite, markdown_table, solve_job

__all__ = ["BELOW_MODEL", "COLUMNS", "CSV_FIELDS", "DEFAULT_LATENCY_TIME_LIMIT", "DEFAULT_TIME_LIMIT",
           "DEFAULT_WORKLOADS", "TABLES", "VERDICTS", "Cell", "Column", "PaperTables", "Row", "decimals",
           "partial_name", "read_reference", "run_tables", "summary", "table_files", "within_print"]

#: Where the published workloads are looked for by default: beside the checkout, as the tests do.
DEFAULT_WORKLOADS = Path("../shared") / "workloads"
#: Seconds per solve: every throughput solve (the IPs run to it unless they prove optimality first).
DEFAULT_TIME_LIMIT = 60.0
#: Seconds for the latency program, per workload.
DEFAULT_LATENCY_TIME_LIMIT = 60.0
#: The tables, by objective: Tables 1 and 2 of the paper are throughput, Table 4 is latency.
TABLES = {"throughput": "Tables 1 and 2: throughput (time per sample, lower is better)",
          "latency": "Table 4: latency (one sample, lower is better)"}
#: Relative difference below which ours equals the published value (the DP is printed at full precision).
EQUAL = 1e-6
#: The gap at which the published IPs stopped (workloads README: "stopped at a 1% gap or 20 minutes").
PUBLISHED_IP_GAP = 0.01

#: Published values below what the models allow: the one per-workload knowledge in this module,
#: established by ``benchmarks/check_published.py``. (table, workload, column) -> (proven optimum, how it is proven).
BELOW_MODEL: dict[tuple[str, str, str], tuple[float, str]] = {
    ("throughput", "layer_gnmt_inference", "ip_noncontiguous"): (
        31.687311, "CP-SAT proves 31.687311 optimal for the paper's own non-contiguous IP rebuilt from the "
                   "JSON, and that IP has no big-M for Gurobi's tolerances to lower its objective by 0.007 "
                   "(benchmarks/check_published.py noncontiguous layer_gnmt_inference)"),
    ("latency", "layer_gnmt_inference", "ip_contiguous"): (
        225.6479, "the path DP proves 225.6479 optimal over contiguous splits, and the paper's latency IP with "
                  "exact binaries scores that split the same; 225.6 is that optimum printed with one decimal, "
                  "or, read as 225.60, an artefact of Gurobi's integrality tolerance "
                  "(benchmarks/check_published.py latency layer_gnmt_inference)"),
}


@dataclass(frozen=True)
class Column:
    """A published column of ``reference.csv`` and how this module reproduces it.

    ``method`` is an exactplace method solved for ``objective`` (default: the table's) with
    ``options``; None reproduces the column from a split file (the experts'). ``fallback`` names
    the reference's own split file for the column (``{name}``: the workload), evaluated when the
    solve fails, and whose value explains a difference. ``exact`` columns show status, bound and
    gap; ``seconds`` is the column of published run times; ``latency_limit``: the latency time
    limit applies instead of the throughput one. ``differs``: why a heuristic's value may differ
    from the published one (``{option}``: the method's default for that option).
    """

    name: str
    label: str
    method: str | None
    how: str
    options: Mapping[str, Any] = field(default_factory=dict)
    objective: str | None = None
    exact: bool = False
    seconds: str | None = None
    latency_limit: bool = False
    fallback: str | None = None
    differs: str = ""


_METIS = "a different partitioner: METIS (with memory repair and a local-search polish) in place of Scotch"

#: The columns of each table, in the paper's order.
COLUMNS: dict[str, tuple[Column, ...]] = {
    "throughput": (
        Column("dp", "DP", "dp", "`dp`: the exact max-load DP over the ideals (paper §5.1.1); its published "
               "seconds are the reference C++ DP's on this project's 2-core machine kind", exact=True,
               seconds="reference_dp_seconds"),
        Column("dpl", "DPL", "dpl", "`dpl`: the DP over the prefixes of a DFS topological order (§5.1.2)",
               differs="DPL's value depends on the DFS topological order it linearizes (ours pops the most "
                       "recently enabled unit first); the reference's order breaks ties otherwise"),
        Column("ip_contiguous", "IP contiguous", "mip", "`mip`, `contiguous=True`: the max-load IP over chain "
               "splits (Fig. 6), from the DP's optimum", {"contiguous": True}, exact=True,
               seconds="ip_contiguous_seconds"),
        Column("ip_noncontiguous", "IP non-contiguous", "mip", "`mip`, `contiguous=False`: the max-load IP over "
               "every split, from the DP's optimum", {"contiguous": False}, exact=True,
               seconds="ip_noncontiguous_seconds"),
        Column("expert", "expert", None, "the expert's split from `experts/` (a training workload without its "
               "own file: the inference split, backward nodes with their forward partners)",
               differs="unexplained: the expert's split is evaluated from its file"),
        Column("local_search", "local search", "local-search", "`local-search`: best single moves from "
               "seeded random starts", differs="randomized: our {restarts} restarts (seed {seed}) start from other "
               "random placements than the paper's run"),
        Column("pipedream", "PipeDream", "pipedream", "`pipedream`: our reimplementation of PipeDream's stage DP",
               differs="our reimplementation of PipeDream's stage DP, not PipeDream's own optimizer"),
        Column("scotch", "Scotch (METIS)", "metis", "`metis`: METIS partitions with memory repair, in place of Scotch",
               differs=_METIS),
    ),
    "latency": (
        Column("greedy", "greedy", "greedy", "`greedy`: contiguous fill in a topological order",
               fallback="splits/latency_{name}_greedy.json"),
        Column("maxload_dp_latency", "max-load DP", "dp", "`dp` for max-load on the latency instance, then "
               "its latency", objective="throughput", fallback="splits/latency_{name}_maxload_dp.json"),
        Column("ip_contiguous", "IP", "mip", "`mip`, `q=1`: the latency program (Fig. 3) with the path DP's "
               "bound", exact=True, seconds="ip_contiguous_seconds", latency_limit=True),
        Column("expert", "expert", None, "the expert's split from `experts/`",
               differs="unexplained: the expert's split is evaluated from its file"),
        Column("scotch", "Scotch (METIS)", "metis", "`metis` for max-load, then its latency, in place of Scotch",
               objective="throughput", differs=_METIS),
    ),
}

_SECONDS = Real(low=0, low_closed=False, finite=False)


@dataclass(frozen=True)
class Row:
    """One row of ``reference.csv``: its table, workload name and file, the published texts, and the
    workloads folder (where ``experts/`` and ``splits/`` are)."""

    table: str
    name: str
    path: Path
    published: Mapping[str, str]
    folder: Path


@dataclass
class Cell:
    """One reproduced value beside the published one (``published`` as printed in ``reference.csv``).

    ``ours`` is the evaluator's value (None: ``reason`` says why there is none); ``status``,
    ``bound``, ``gap`` and ``limit`` are the method's (``limit="time"``: stopped by the time
    limit); ``verdict`` is ``equal``, ``rounding``, ``higher``, ``lower`` or ``no value``.
    """

    table: str
    workload: str
    column: str
    label: str
    published: str
    source: str = ""
    ours: float | None = None
    status: str = ""
    bound: float | None = None
    gap: float | None = None
    limit: str = ""
    seconds: float | None = None
    published_seconds: str = ""
    verdict: str = ""
    reason: str = ""

    @property
    def ratio(self) -> float | None:
        """ours / published (None without a value)."""
        return None if self.ours is None else self.ours / float(self.published)


def decimals(printed: str) -> int:
    """The number of decimals a value was printed with.

    Parameters
    ----------
    printed : str
        A number as ``reference.csv`` prints it.

    Returns
    -------
    int
    """
    return len(printed.split(".")[1]) if "." in printed else 0


def within_print(value: float, printed: str) -> bool:
    """Whether ``value`` rounds to ``printed`` at the number of decimals it was printed with.

    Parameters
    ----------
    value : float
    printed : str
        The published value as printed.

    Returns
    -------
    bool
    """
    return abs(value - float(printed)) <= 0.5 * 10.0 ** -decimals(printed) + 1e-9


def read_reference(workloads: str | Path = DEFAULT_WORKLOADS, only: Sequence[str] | None = None) -> list[Row]:
    """The published rows of ``reference.csv``, checked.

    Parameters
    ----------
    workloads : str or Path
        The published workloads folder (``reference.csv``, ``throughput/``, ``latency/``,
        ``experts/``, ``splits/``).
    only : sequence of str, optional
        Workload names: ``layer_bert24_inference`` selects its throughput and latency rows,
        ``latency/layer_bert24_inference`` one of them. Default: every row.

    Returns
    -------
    list of Row

    Raises
    ------
    InputFormatError
        The folder has no ``reference.csv``, a published value is not a number, or a workload file
        it names is missing.
    ParameterError
        A name in ``only`` names no row.
    """
    folder = Path(workloads)
    reference = folder / "reference.csv"
    if not reference.is_file():
        raise InputFormatError(
            f"{str(workloads)!r} holds no reference.csv: give the folder of the published workloads with --workloads "
            f"DIR (the one with reference.csv, throughput/, latency/, experts/ and splits/; default "
            f"{DEFAULT_WORKLOADS}, beside the checkout).")
    with open(reference, newline="", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    rows = []
    for record in records:
        table = record.get("objective", "")
        if table not in COLUMNS or not record.get("workload"):
            raise InputFormatError(f"{reference}: row {record} has no known objective and workload.")
        published = {k: (v or "").strip() for k, v in record.items()}
        for column in COLUMNS[table]:
            try:
                float(published.get(column.name) or 0)
            except ValueError:
                raise InputFormatError(f"{reference}: {record['workload']}: {column.name} "
                                       f"{published[column.name]!r} is not a number.") from None
        rows.append(Row(table, Path(record["workload"]).stem, folder / record["workload"], published, folder))
    if only is not None:
        names = {row.name for row in rows} | {f"{row.table}/{row.name}" for row in rows}
        unknown = [name for name in only if name not in names]
        if unknown or not only:
            raise ParameterError(f"--only names no workload of reference.csv: {', '.join(unknown) or 'nothing'}; "
                                 f"the workloads: {', '.join(sorted({row.name for row in rows}))}.")
        rows = [row for row in rows if row.name in only or f"{row.table}/{row.name}" in only]
    missing = [str(row.path) for row in rows if not row.path.is_file()]
    if missing:
        raise InputFormatError(f"reference.csv names workload files that are missing: {', '.join(missing)}.")
    return rows


def table_files(table: str) -> tuple[str, str]:
    """The CSV and Markdown file names of one table (``throughput`` or ``latency``).

    >>> table_files("latency")
    ('table_latency.csv', 'table_latency.md')
    """
    return f"table_{table}.csv", f"table_{table}.md"


def partial_name(name: str) -> str:
    """Where a table interrupted by Ctrl-C goes when ``name`` is already there (kept: it may be complete).

    >>> partial_name("table_latency.csv")
    'table_latency.partial.csv'
    """
    stem, dot, suffix = name.rpartition(".")
    return f"{stem}.partial.{suffix}" if dot else f"{name}.partial"


Progress = Callable[[str, float | None], AbstractContextManager[Any]]


@dataclass
class PaperTables:
    """The reproduced cells of every table, and how the run went.

    ``settings``: the time limits, workloads folder, host, cores and load; ``seconds``: the
    whole run's wall time; ``interrupted``: Ctrl-C stopped it (the cells after it are not run).
    """

    cells: list[Cell]
    settings: dict[str, Any]
    seconds: float
    interrupted: bool = False

    def table(self, table: str) -> list[Cell]:
        """The cells of one table, in run order."""
        return [cell for cell in self.cells if cell.table == table]

    def files(self) -> dict[str, str]:
        """``table_<objective>.csv`` and ``.md`` for each table with cells: file name -> text."""
        texts = {}
        for table in COLUMNS:
            if self.table(table):
                csv_name, md_name = table_files(table)
                texts[csv_name] = self.csv(table)
                texts[md_name] = self.markdown(table)
        return texts

    def csv(self, table: str) -> str:
        """The table as CSV: one line per cell, numbers at full precision (empty: none)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_FIELDS)
        for cell in self.table(table):
            values = {**vars(cell), "ratio": cell.ratio}
            writer.writerow(["" if values[k] is None else repr(values[k]) if isinstance(values[k], float)
                             else values[k] for k in CSV_FIELDS])
        return out.getvalue()

    def markdown(self, table: str) -> str:
        """The table in Markdown: side by side, then every value with its verdict and reason."""
        cells = self.table(table)
        columns = [c for c in COLUMNS[table] if any(cell.column == c.name for cell in cells)]
        s = self.settings
        counts = {v: sum(cell.verdict == v for cell in cells) for v in VERDICTS}
        lines = [f"# {TABLES[table]}", "",
                 f"Made by `{s['command']}` on {s['date']} ({s['host']}, {s['cores']} usable cores, load average "
                 f"{s['load_start']} at the start, {s['load_end']} at the end); the whole run (every table) took "
                 f"**{self.seconds / 60:.1f} minutes** ({self.seconds:.0f} s).",
                 *(["", "**Interrupted (Ctrl-C): the cells marked `not run` were not computed.**"]
                   if self.interrupted else []),
                 "", f"Workloads and published values: `{s['workloads']}/reference.csv`. Every value below is "
                 "recomputed by the independent evaluator (`exactplace.evaluate`) on the placement a method "
                 "returned or on a split file; ratio = ours / published. Time limits: "
                 f"{s['time_limit']:g} s per throughput solve, {s['latency_time_limit']:g} s per latency program.",
                 "", f"{len(cells)} values: {counts['equal']} equal (1e-6 relative), {counts['rounding']} equal at "
                 f"the published precision, {counts['higher'] + counts['lower']} different "
                 f"({counts['lower']} lower, {counts['higher']} higher; each with its reason below), "
                 f"{counts['no value']} without a value.", "", "## Side by side (ours / published)", ""]
        side = []
        for name in dict.fromkeys(cell.workload for cell in cells):
            mine = {cell.column: cell for cell in cells if cell.workload == name}
            side.append([name, *(_side_text(mine.get(c.name)) for c in columns)])
        lines += markdown_table(["workload", *(c.label for c in columns)], side)
        lines += ["", "`-`: not published. `*`: stopped by its time limit (its gap is below). "
                  "`n/a`: no value (the reason is below).", "", "## Every value, with the reason of each difference",
                  ""]
        lines += markdown_table(
            ["workload", "column", "ours", "published", "ratio", "status", "bound", "gap", "seconds",
             "published seconds", "verdict", "reason"],
            [[c.workload, c.label, _number(c.ours), c.published, "" if c.ratio is None else f"{c.ratio:.6f}",
              c.status + (f" ({c.limit} limit)" if c.limit else ""), _number(c.bound),
              "" if c.gap is None else f"{100 * c.gap:.3g}%", "" if c.seconds is None else f"{c.seconds:.2f}",
              c.published_seconds, c.verdict, c.reason] for c in cells])
        lines += ["", "## How each column is reproduced", ""]
        lines += [f"- **{c.label}** (`{c.name}`): {c.how}." for c in columns]
        below = [(key, value) for key, value in BELOW_MODEL.items() if key[0] == table]
        if below:
            lines += ["", "## Published values below what the models allow", "",
                      "Established once by `benchmarks/check_published.py` (see `benchmarks/RESULTS.md`, "
                      "\"Published values below what the models allow\"); the reasons above cite them where they "
                      "apply.", ""]
            lines += markdown_table(["workload", "column", "proven optimum", "how"],
                                    [[key[1], key[2], f"{optimum:g}", how] for key, (optimum, how) in below])
        return "\n".join(lines) + "\n"


#: The verdicts, in the order the summary counts them.
VERDICTS = ("equal", "rounding", "higher", "lower", "no value")
#: The CSV columns.
CSV_FIELDS = ("table", "workload", "column", "label", "source", "ours", "published", "ratio", "verdict", "status",
              "bound", "gap", "limit", "seconds", "published_seconds", "reason")


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6f}"


def _side_text(cell: Cell | None) -> str:
    if cell is None:
        return "-"
    shown = cell.published if decimals(cell.published) <= 4 else f"{float(cell.published):.4f}"
    ours = "n/a" if cell.ours is None else f"{cell.ours:.4f}" + ("*" if cell.limit == "time" else "")
    return f"{ours} / {shown}"


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
        job = _Job(row, column, latency_time_limit if column.latency_limit else time_limit,
                   next((c.ours for c in cells if c.status == "optimal" and c.column == "dp"
                         and (c.table, c.workload) == (row.table, row.name)), None))
        description = f"[{number}/{len(tasks)}] {row.table} {row.name}: {column.label}"
        try:
            with progress(description, job.limit) if progress is not None else nullcontext():
                _fill(cell, job, data)
            if echo is not None:
                echo(f"{description} = {_side_text(cell)} ({cell.verdict}: {cell.reason})")
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


@dataclass(frozen=True)
class _Job:
    """What one cell is computed from: its row and column, its time limit, and the DP's optimum on the
    same row when it is known (the best chain split: a bound on every method whose splits are chains)."""

    row: Row
    column: Column
    limit: float
    chain_optimum: float | None


def _fill(cell: Cell, job: _Job, data: dict[Path, Any]) -> None:
    """Fill ``cell`` (``data``: the workload files read so far, by path); an error leaves it without a
    value, saying why, and the other cells still run."""
    try:
        if job.row.path not in data:
            data[job.row.path] = load_json(job.row.path, "Workload")
        _compute(cell, job, data[job.row.path])
    except ExactplaceError as error:  # a latency that cannot be scored, an unreadable split, ...
        cell.ours, cell.status, cell.verdict = None, "error", "no value"
        cell.reason = f"{type(error).__name__}: {error}"


def _compute(cell: Cell, job: _Job, data: Any) -> None:
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
    _judge(cell, job, workload, device, notes)


def _expert_split(row: Row) -> Path | None:
    """The expert split of a workload: its own file, else (training) the inference one's."""
    folder = row.folder / "experts"
    for name in (row.name, row.name.replace("_training", "_inference")):
        if (folder / f"{name}_expert.json").is_file():
            return folder / f"{name}_expert.json"
    return None


def _judge(cell: Cell, job: _Job, workload: Any, device: Any, notes: list[str]) -> None:
    """The verdict and its reason, from the run's own data (and :data:`BELOW_MODEL`)."""
    assert cell.ours is not None
    published = float(cell.published)
    difference = cell.ours - published
    if abs(difference) <= EQUAL * abs(published):
        cell.verdict, parts = "equal", ["equal (1e-6 relative)"]
    elif within_print(cell.ours, cell.published):
        places = decimals(cell.published)
        cell.verdict, parts = "rounding", [f"equal at the published precision ({places} decimal"
                                           f"{'' if places == 1 else 's'})"]
    else:
        cell.verdict = "higher" if difference > 0 else "lower"
        parts = [f"{100 * difference / published:+.3g}% against the published value"]
    if cell.limit == "time":
        gap = "" if cell.gap is None else f", gap {100 * cell.gap:.3g}% (bound {cell.bound:.6g})"
        stopped = cell.verdict == "lower" and cell.published_seconds.startswith(">")  # _differences says so
        paper = f"; the published run took {cell.published_seconds} s" if cell.published_seconds and not stopped else ""
        parts.append(f"our {job.limit:g} s time limit was reached{gap}{paper}")
    if cell.verdict in ("higher", "lower"):
        parts += _differences(cell, job, workload, device)
    known = BELOW_MODEL.get((job.row.table, job.row.name, job.column.name))
    if known is not None and cell.verdict != "equal":
        optimum, how = known
        parts.append(f"the published {cell.published} is below what the model allows: {how}")
        if cell.ours > optimum * (1 + EQUAL):
            parts.append(f"ours is {cell.ours - optimum:.4g} above that optimum")
    cell.reason = "; ".join(parts + notes)


def _differences(cell: Cell, job: _Job, workload: Any, device: Any) -> list[str]:
    """Why ours differs from the published value, from what the method, the run and the files say."""
    assert cell.ours is not None
    row, column = job.row, job.column
    published = float(cell.published)
    reasons = []
    if column.exact:
        if cell.verdict == "lower" and cell.published_seconds.startswith(">"):
            reasons.append(f"the published run was stopped by its own time limit ({cell.published_seconds} s), "
                           "so its value is not proven optimal")
        elif cell.verdict == "lower" and column.method == "mip":
            within = (published - cell.ours) / published <= PUBLISHED_IP_GAP
            reasons.append(f"the published IP stops at a {100 * PUBLISHED_IP_GAP:g}% gap, so its value may lie "
                           f"up to {100 * PUBLISHED_IP_GAP:g}% above the optimum; ours is "
                           f"{'within' if within else 'beyond'} that")
        elif cell.status == "optimal" and (row.table, row.name, column.name) not in BELOW_MODEL:
            reasons.append("unexplained: ours is proven optimal over the same space")
        return reasons
    method = registered_methods()[column.method] if column.method else None
    if column.differs:
        defaults = {name: option.default for name, option in method.options.items()} if method else {}
        reasons.append(column.differs.format(**defaults))
    chained = method is not None and method.guarantee.chain_order and method.guarantee.forward_contiguous
    if chained and job.chain_optimum is not None and cell.ours <= job.chain_optimum * (1 + EQUAL):
        reasons.append(f"ours equals the DP's optimum {job.chain_optimum:.6g}, the best chain split: this "
                       "method's splits are chains, so none does better")
    if column.fallback is not None and cell.source.startswith("method"):
        reasons.append(_reference_split(row, column, workload, device))
    return reasons


def _reference_split(row: Row, column: Column, workload: Any, device: Any) -> str:
    """What the reference's own split for the column scores, beside ours."""
    name = column.fallback.format(name=row.name) if column.fallback else ""
    theirs = read_split(row.folder / name, workload.graph, workload.cluster)
    value = evaluate(workload.graph, workload.cluster, theirs, row.table)
    scored = f"the reference's split {name} scores {value:.6g} (ratio {value / float(row.published[column.name]):.4f})"
    if column.name == "maxload_dp_latency":
        ours, its = (evaluate(workload.graph, workload.cluster, d, "throughput") for d in (device, theirs))
        return (f"max-load-optimal splits are not unique and max-load does not see when subgraphs run: ours has "
                f"max-load {ours:.6g}, the reference's {its:.6g}; {scored}")
    return f"the topological order greedy fills is a free choice (the reference's came from hash-map iteration); " \
           f"{scored}"


def summary(tables: PaperTables) -> Iterable[str]:
    """Lines summing up a run: per table, how many values agree, differ, or have none."""
    for table in COLUMNS:
        cells = tables.table(table)
        if cells:
            counts = {v: sum(cell.verdict == v for cell in cells) for v in VERDICTS}
            yield (f"{table}: {len(cells)} values, {counts['equal']} equal, {counts['rounding']} equal at the "
                   f"published precision, {counts['higher'] + counts['lower']} different, "
                   f"{counts['no value']} without a value")
