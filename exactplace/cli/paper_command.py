"""``exactplace paper-tables``: registered by :func:`add_command` from the main parser.

Reproduces the paper's throughput and latency tables on the published workloads
(:mod:`exactplace.paper`) and writes ``table_throughput.csv/.md`` and ``table_latency.csv/.md``
into ``--out-dir``. Every input and output path is checked before any work. Exit status: 0 done;
1 a solve failed with an error (the tables say which); 2 bad input; 130 Ctrl-C, 143 SIGTERM (the
tables are still written, with the cells done and the rest marked not run, to new files only: a
table already in ``--out-dir`` is kept, the partial one goes to ``table_<objective>.partial.csv/.md``).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from exactplace.paper import PaperTables, Row

EXIT_SOLVE_ERROR = 1
#: Where the tables go by default.
OUT_DIR = "paper_tables"


def _command_paper_tables(args: argparse.Namespace) -> int:
    from exactplace.cli.progress import elapsed
    from exactplace.io.paths import check_output_dir
    from exactplace.paper import DEFAULT_WORKLOADS, read_reference, run_tables, summary

    only = [name.strip() for name in args.only.split(",") if name.strip()] if args.only is not None else None
    rows = read_reference(args.workloads, only)  # every input problem is found before any work
    check_output_dir(args.out_dir, "--out-dir")  # and every output problem: '', a file, a read-only directory
    out_dir = Path(args.out_dir)
    _check_tables(out_dir, rows, Path(args.workloads) / "reference.csv")
    command = ["exactplace paper-tables", f"--time-limit {args.time_limit:g}",
               f"--latency-time-limit {args.latency_time_limit:g}"]
    if Path(args.workloads) != DEFAULT_WORKLOADS:
        command.append(f"--workloads {args.workloads}")
    if only is not None:
        command.append(f"--only {','.join(only)}")
    if args.out_dir != OUT_DIR:
        command.append(f"--out-dir {args.out_dir}")
    tables = run_tables(rows, time_limit=args.time_limit, latency_time_limit=args.latency_time_limit,
                        progress=lambda text, limit: elapsed(text, limit=limit), echo=print, command=" ".join(command))
    out_dir.mkdir(exist_ok=True)
    written, kept = _write_tables(out_dir, tables)
    for line in summary(tables):
        print(line)
    print(f"{len(written)} files written to {out_dir}: {', '.join(written)} ({tables.seconds:.0f} s in all)")
    if kept:
        print(f"interrupted: {', '.join(kept)} kept as they were (the values done are in the .partial files)")
    if tables.interrupted:
        raise KeyboardInterrupt  # the main loop reports it as every command does (exit 130; 143 for SIGTERM)
    return EXIT_SOLVE_ERROR if any(cell.status == "error" for cell in tables.cells) else 0


def _check_tables(out_dir: Path, rows: Sequence[Row], reference: Path) -> None:
    """Before any work: each file the run may write into an existing ``out_dir`` (a partial table too) can be
    written (not a directory, ...) and is none of the inputs."""
    from exactplace.io.paths import check_output
    from exactplace.paper import COLUMNS, partial_name, table_files

    if not out_dir.is_dir():
        return  # made at the end, empty: check_output_dir found where
    inputs = [str(reference), *(str(row.path) for row in rows)]
    made = {row.table for row in rows if any(row.published.get(column.name) for column in COLUMNS[row.table])}
    for name in (name for table in sorted(made) for name in table_files(table)):
        for target in (name, partial_name(name)):
            check_output(str(out_dir / target), inputs, flag="--out-dir")


def _write_tables(out_dir: Path, tables: PaperTables) -> tuple[list[str], list[str]]:
    """Write the tables into ``out_dir``; returns the names written and those kept.

    A run stopped by Ctrl-C writes new files only: where a table's CSV or Markdown is already
    there (perhaps a complete run's), both are kept and the partial table goes to
    :func:`~exactplace.paper.partial_name` beside them, so that a complete table is never
    replaced by one with cells not run.
    """
    from exactplace.io.paths import write_file
    from exactplace.paper import COLUMNS, partial_name, table_files

    files = tables.files()
    written: list[str] = []
    kept: list[str] = []
    for table in COLUMNS:
        names = [name for name in table_files(table) if name in files]
        taken = [name for name in names if os.path.lexists(out_dir / name)] if tables.interrupted else []
        kept += taken
        for name in names:
            target = partial_name(name) if taken else name
            if not write_file(out_dir / target, files[name], replace=not tables.interrupted or bool(taken)):
                kept.append(name)  # it appeared during the run: kept too
                target = partial_name(name)
                write_file(out_dir / target, files[name], replace=True)
            written.append(target)
    return written, kept


def add_command(commands: Any, positive: Any) -> None:
    """Add ``paper-tables`` to the main parser's subcommands (``positive``: the parser of a positive number)."""
    from exactplace.paper import DEFAULT_LATENCY_TIME_LIMIT, DEFAULT_TIME_LIMIT, DEFAULT_WORKLOADS

    paper = commands.add_parser("paper-tables", help="reproduce the paper's throughput and latency tables beside "
                                "the published values")
    paper.add_argument("--workloads", default=str(DEFAULT_WORKLOADS), metavar="DIR",
                       help=f"the published workloads folder, with reference.csv (default {DEFAULT_WORKLOADS}, "
                            "beside the checkout)")
    paper.add_argument("--out-dir", default=OUT_DIR, metavar="DIR",
                       help=f"where table_throughput.csv/.md and table_latency.csv/.md go (default {OUT_DIR}; "
                            "created if missing)")
    paper.add_argument("--time-limit", type=positive, default=DEFAULT_TIME_LIMIT, metavar="S",
                       help=f"seconds per throughput solve (default {DEFAULT_TIME_LIMIT:g}; the paper: 1200)")
    paper.add_argument("--latency-time-limit", type=positive, default=DEFAULT_LATENCY_TIME_LIMIT, metavar="S",
                       help=f"seconds per latency program (default {DEFAULT_LATENCY_TIME_LIMIT:g}; the paper: 3600)")
    paper.add_argument("--only", metavar="NAME,...", help="only these workloads (layer_bert24_inference: both "
                       "tables; latency/layer_bert24_inference: one)")
    paper.set_defaults(run=_command_paper_tables)
