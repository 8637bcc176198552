"""The published values: ``reference.csv`` read and checked, and the columns of each table.

Every published value of ``reference.csv`` (in the shared workloads folder, see its README) is
reproduced by the method that stands for its column (:data:`COLUMNS`): a solve, or a split file
read from the folder (the experts' splits, and the reference's own splits where a column needs
them). :data:`BELOW_MODEL` holds the documented published values below what the models allow.

Examples
--------
>>> decimals("17.79"), within_print(17.7899, "17.79"), within_print(17.7147, "17.71")
(2, True, True)
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exactplace.core.errors import InputFormatError, ParameterError

__all__ = ["BELOW_MODEL", "COLUMNS", "DEFAULT_WORKLOADS", "TABLES", "Column", "Row", "decimals", "read_reference",
           "within_print"]

#: Where the published workloads are looked for by default: beside the checkout, as the tests do.
DEFAULT_WORKLOADS = Path("../shared") / "workloads"
#: The tables, by objective: Tables 1 and 2 of the paper are throughput, Table 4 is latency.
TABLES = {"throughput": "Tables 1 and 2: throughput (time per sample, lower is better)",
          "latency": "Table 4: latency (one sample, lower is better)"}

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


@dataclass(frozen=True)
class Row:
    """One row of ``reference.csv``: its table, workload name and file, the published texts, and the
    workloads folder (where ``experts/`` and ``splits/`` are)."""

    table: str
    name: str
    path: Path
    published: Mapping[str, str]
    folder: Path


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
