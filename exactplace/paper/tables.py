"""The reproduced cells and the files made of them: ``table_<objective>.csv`` and ``.md``."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from exactplace.io.tables import markdown_table
from exactplace.paper.reference import BELOW_MODEL, COLUMNS, TABLES, decimals

__all__ = ["CSV_FIELDS", "VERDICTS", "Cell", "PaperTables", "partial_name", "side_text", "summary", "table_files"]

#: The verdicts, in the order the summary counts them.
VERDICTS = ("equal", "rounding", "higher", "lower", "no value")
#: The CSV columns.
CSV_FIELDS = ("table", "workload", "column", "label", "source", "ours", "published", "ratio", "verdict", "status",
              "bound", "gap", "limit", "seconds", "published_seconds", "reason")


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
            side.append([name, *(side_text(mine.get(c.name)) for c in columns)])
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
                      "Established once by `benchmarks/check_published.py`; the reasons above cite them where they "
                      "apply.", ""]
            lines += markdown_table(["workload", "column", "proven optimum", "how"],
                                    [[key[1], key[2], f"{optimum:g}", how] for key, (optimum, how) in below])
        return "\n".join(lines) + "\n"


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6f}"


def side_text(cell: Cell | None) -> str:
    """A cell as the side-by-side table shows it: ``ours / published`` (``*``: ours was stopped by its time
    limit; ``n/a``: no value; ``-``: not published)."""
    if cell is None:
        return "-"
    shown = cell.published if decimals(cell.published) <= 4 else f"{float(cell.published):.4f}"
    ours = "n/a" if cell.ours is None else f"{cell.ours:.4f}" + ("*" if cell.limit == "time" else "")
    return f"{ours} / {shown}"


def summary(tables: PaperTables) -> Iterable[str]:
    """Lines summing up a run: per table, how many values agree, differ, or have none."""
    for table in COLUMNS:
        cells = tables.table(table)
        if cells:
            counts = {v: sum(cell.verdict == v for cell in cells) for v in VERDICTS}
            yield (f"{table}: {len(cells)} values, {counts['equal']} equal, {counts['rounding']} equal at the "
                   f"published precision, {counts['higher'] + counts['lower']} different, "
                   f"{counts['no value']} without a value")
