"""``exactplace sweep``: registered by :func:`add_command` from the main parser.

Solves the workload on every cluster of a grid (accelerator counts x memory sizes x bandwidths,
:func:`exactplace.sweep.sweep`) and prints one row per cell; ``--target`` adds the fewest accelerators that reach
a time per sample at each memory size, ``--plot`` draws the scaling curve, ``--json`` ends with the cells as one
JSON list. Ctrl-C (or SIGTERM) prints the cells done, then exits 130 (143).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from typing import Any


def _counts(text: str) -> list[int]:
    """``2..16``, ``2,4,8`` or ``4`` as accelerator counts."""
    ranged = re.fullmatch(r"\s*(\d+)\s*\.\.\s*(\d+)\s*", text)
    if ranged:
        low, high = int(ranged[1]), int(ranged[2])
        if 1 <= low <= high:
            return list(range(low, high + 1))
    else:
        try:
            counts = [int(item) for item in text.split(",")]
        except ValueError:
            counts = []
        if counts and all(c >= 1 for c in counts) and len(set(counts)) == len(counts):
            return counts
    raise argparse.ArgumentTypeError(f"must be a range LOW..HIGH or comma-separated positive counts, got {text!r}")


def _sizes(what: str) -> Any:
    def parse(text: str) -> list[float]:
        try:
            values = [float(item) for item in text.split(",")]
        except ValueError:
            values = []
        if values and all(v > 0 and not math.isnan(v) for v in values) and len(set(values)) == len(values):
            return values
        raise argparse.ArgumentTypeError(f"must be comma-separated positive {what} (inf allowed), got {text!r}")

    return parse


def _command_sweep(args: argparse.Namespace) -> int:
    from exactplace.cli.flags import constraint_flags, schedule_flags
    from exactplace.cli.inputs import input_path, load_workload
    from exactplace.cli.pictures import check_plot, save_figure
    from exactplace.sweep import SweepInterrupted, cells_json, sweep

    source = input_path(args.workload)
    check_plot(args.plot, [source])
    workload = load_workload(source, {"cpus": args.cpus})
    subject: Any = source if args.bandwidth is not None else workload
    try:
        cells = sweep(subject, args.accelerators, args.memory, args.bandwidth, cluster=workload.cluster,
                      objective=args.objective, method=args.method, time_limit=args.time_limit, rel_gap=args.rel_gap,
                      constraints=constraint_flags(args, workload.constraints), ray_address=args.ray,
                      progress=sys.stderr.isatty(), **schedule_flags(args))
        interrupted = False
    except SweepInterrupted as stop:
        cells, interrupted = stop.cells, True
    _report(workload.name, cells, args)
    if args.plot is not None and not cells.empty:
        from exactplace.plot import scaling_curve

        save_figure(scaling_curve(cells), args.plot)
        print(f"picture written to {args.plot}")
    if args.json:
        print(json.dumps(cells_json(cells)))
    if interrupted:
        raise KeyboardInterrupt  # the command line reports it as every command does (exit 130, 143 for SIGTERM)
    return 0


def _report(name: str, cells: Any, args: argparse.Namespace) -> None:
    from exactplace.evaluators.feasibility import human_bytes

    certified = int((cells["status"] == "optimal").sum()) if not cells.empty else 0
    seconds = float(cells["seconds"].sum()) if not cells.empty else 0.0
    print(f"sweep of {name} ({args.objective}): {len(cells)} cells, {certified} certified, {seconds:.3g} s")
    columns = [c for c in cells.columns if c != "placement" and not (c == "bandwidth" and args.bandwidth is None)]
    if not cells.empty:
        print(cells[columns].to_string(index=False, float_format=lambda x: f"{x:.6g}", na_rep="-"))
    if args.target is not None and not cells.empty:
        for memory, group in cells.groupby("memory", sort=True):
            reaching = group[(group["objective"] <= args.target) & group["objective"].notna()]
            fewest = int(reaching["accelerators"].min()) if not reaching.empty else None
            shown = human_bytes(memory)
            if fewest is None:
                print(f"  {shown}: no count swept reaches {args.target:g}")
            else:
                proven = "certified" if (group[group["accelerators"] < fewest]["bound"] > args.target).all() else \
                    "not certified: a smaller count has a gap straddling the target"
                print(f"  {shown}: {fewest} accelerators reach {args.target:g} ({proven})")


def add_command(commands: Any, workload_help: str) -> None:
    """Add ``sweep`` to the main parser's subcommands."""
    from exactplace.cli.flags import (
        add_constraint_options,
        add_schedule_options,
        non_negative_count,
        output_name,
        positive_number,
        relative_gap,
    )
    from exactplace.core.objectives import OBJECTIVES
    from exactplace.core.problem import DEFAULT_REL_GAP

    sweep = commands.add_parser("sweep", help="solve a workload on a grid of clusters: accelerators x memory x "
                                "bandwidth, each cell certified")
    sweep.add_argument("workload", help=workload_help)
    sweep.add_argument("--accelerators", type=_counts, default=list(range(2, 9)), metavar="LOW..HIGH|K,K",
                       help="accelerator counts (default 2..8)")
    sweep.add_argument("--memory", type=_sizes("bytes"), default=None, metavar="BYTES,...",
                       help="memory sizes per accelerator (default: the workload's)")
    sweep.add_argument("--bandwidth", type=_sizes("bytes per second"), default=None, metavar="BYTES_PER_S,...",
                       help="link bandwidths (PipeDream profiles and ONNX models)")
    sweep.add_argument("--cpus", type=non_negative_count, default=None, metavar="L",
                       help="number of CPUs (default: the workload's)")
    sweep.add_argument("--objective", choices=OBJECTIVES, default="throughput")
    sweep.add_argument("--method", default="auto", help="a method from `exactplace methods` (default: auto)")
    sweep.add_argument("--time-limit", type=positive_number, default=None, metavar="S", help="seconds per cell")
    sweep.add_argument("--rel-gap", type=relative_gap, default=DEFAULT_REL_GAP, metavar="G",
                       help=f"relative gap at which a cell is certified (default {DEFAULT_REL_GAP:g})")
    add_schedule_options(sweep)
    add_constraint_options(sweep)
    sweep.add_argument("--target", type=positive_number, default=None, metavar="T",
                       help="also say the fewest accelerators that reach this time per sample, per memory size")
    sweep.add_argument("--ray", metavar="ADDRESS", help="run the rows as Ray tasks ('local' starts a cluster)")
    sweep.add_argument("--json", action="store_true", help="end with one JSON line: the list of cells")
    sweep.add_argument("--plot", type=output_name, metavar="FILE.png",
                       help="draw the scaling curve (.png, .svg or .pdf)")
    sweep.set_defaults(run=_command_sweep)
