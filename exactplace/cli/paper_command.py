"""``exactplace paper-tables``: registered by :func:`add_command` from the main parser.

Reproduces the paper's throughput and latency tables on the published workloads
(:mod:`exactplace.paper`) and writes ``table_throughput.csv/.md`` and ``table_latency.csv/.md``
into ``--out-dir``. Exit status: 0 done; 1 a solve failed with an error (the tables say which);
2 bad input; 130 Ctrl-C (the tables are still written, with the cells done; the rest are marked
not run).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from exactplace.core.errors import ParameterError

EXIT_SOLVE_ERROR = 1
#: Where the tables go by default.
OUT_DIR = "paper_tables"


def _command_paper_tables(args: argparse.Namespace) -> int:
    from exactplace.cli.files import check_output, write_output
    from exactplace.cli.progress import elapsed
    from exactplace.paper import DEFAULT_WORKLOADS, read_reference, run_tables, summary

    only = [name.strip() for name in args.only.split(",") if name.strip()] if args.only is not None else None
    rows = read_reference(args.workloads, only)  # every input problem is found before any work
    out_dir = Path(args.out_dir)
    _check_out_dir(out_dir)
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
    files = tables.files()
    for name, text in files.items():
        check_output(str(out_dir / name), [], flag="--out-dir")
        write_output(str(out_dir / name), text)
    for line in summary(tables):
        print(line)
    print(f"{len(files)} files written to {out_dir}: {', '.join(files)} ({tables.seconds:.0f} s in all)")
    if tables.interrupted:
        raise KeyboardInterrupt  # the main loop reports it as every command does (exit 130)
    return EXIT_SOLVE_ERROR if any(cell.status == "error" for cell in tables.cells) else 0


def _check_out_dir(out_dir: Path) -> None:
    """Before any work: ``--out-dir`` is a directory, or can be created in a writable one."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ParameterError(f"--out-dir {str(out_dir)!r} is not a directory.")
    folder = out_dir if out_dir.exists() else out_dir.absolute().parent
    if not folder.is_dir():
        raise ParameterError(f"--out-dir {str(out_dir)!r}: the directory {str(folder)!r} does not exist.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ParameterError(f"--out-dir {str(out_dir)!r}: the directory {str(folder)!r} is not writable.")


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
