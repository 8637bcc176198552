"""The path DP's latency lower bound (``exactplace.bounds.latency_path``) on latency workloads.

One row per workload (default: ``../shared/workloads/latency``; ``--inputs DIR`` for another
folder, e.g. the reference repository's ``latency-inputs/LayerGraphs``): nodes, the reduced
graph's ideals, the candidate subgraphs the DP examined, the bound, its seconds and the bytes
of its tables, the best latency of the default starts (the evaluator's value of the best
warm-start candidate without the bound's own) and of the bound's chain placement
(``path_chain``), ``gap`` = (best start - bound) / best start, 0 when the bound certifies a start.
With ``--limit`` also the program's bound without the path bound (CP-SAT, ``path_bound=False``).
With ``--mip SECONDS``, the latency program itself (``solve(w, objective="latency",
method="mip", time_limit=SECONDS)``): its value and bound, against the published
``ip_contiguous`` (Gurobi 8.1, 4 cores, up to an hour) where ``reference.csv`` has one. The
machine load (1-minute average) is printed per row.

Usage::

    git --git-dir /work/.mirror/msr-fiddle+dnn-partitioning/repo/.git archive HEAD latency-inputs \\
        | tar -x -C /tmp/ref
    python benchmarks/bench_latency_bound.py --inputs /tmp/ref/latency-inputs/LayerGraphs --mip 300
    python benchmarks/bench_latency_bound.py [--limit 10] [--only NAME]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

from exactplace import read_workload, solve
from exactplace.bounds.latency_path import path_bound
from exactplace.evaluators import check_feasibility
from exactplace.evaluators.latency import latency
from exactplace.io import Workload

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"


def published(reference: dict[str, dict], path: Path) -> str:
    """The published ``ip_contiguous`` of a workload file, by its name here or in the reference repository."""
    for key in (f"latency/{path.name}", f"latency/layer_{path.name}"):
        if key in reference:
            return reference[key]["ip_contiguous"]
    return ""


def default_start(w: Workload) -> float:
    """The best latency among the latency program's default starts (none of the bound's own)."""
    from exactplace.core.problem import Problem
    from exactplace.improvers.latency_starts import warm_start_candidates
    problem = Problem(w.graph, w.cluster, "latency", default_start=True)
    values = []
    for device in warm_start_candidates(problem).values():
        if not check_feasibility(w.graph, w.cluster, device, objective="latency", q=1):
            values.append(latency(w.graph, w.cluster, device))
    return min(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=Path, default=SHARED / "latency", help="folder of latency workloads")
    parser.add_argument("--limit", type=float, default=0.0,
                        help="seconds of the program without the path bound (0: not run)")
    parser.add_argument("--mip", type=float, default=0.0, help="seconds of the latency program (0: not run)")
    parser.add_argument("--deadline", type=float, default=60.0, help="seconds the bound may take")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    if not args.inputs.exists():
        print(f"no workloads at {args.inputs}", file=sys.stderr)
        return 1
    reference = {}
    if (SHARED / "reference.csv").exists():
        reference = {row["workload"]: row for row in csv.DictReader(open(SHARED / "reference.csv"))}
    print(f"| workload | nodes | load | ideals | subgraphs | path bound | s | table MiB | best default start | "
          f"path_chain start | gap | program bound ({args.limit:g} s, no path bound) | "
          f"MIP value ({args.mip:g} s) | MIP bound | MIP s | ip_contiguous |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted(args.inputs.glob("*.json")):
        if args.only and args.only not in path.stem:
            continue
        w = read_workload(path)
        load = os.getloadavg()[0]
        info: dict = {}
        clock = time.perf_counter()
        found = path_bound(w.graph, w.cluster, deadline=time.monotonic() + args.deadline, info=info)
        seconds = time.perf_counter() - clock
        start = default_start(w)
        chain = min((latency(w.graph, w.cluster, d) for d in found.placements), default=None) if found else None
        without = ""
        if args.limit:
            p = solve(w, objective="latency", method="mip", time_limit=args.limit, path_bound=False)
            without = f"{p.bound:.3f}"
        mip = mip_bound = mip_seconds = ""
        if args.mip:
            clock = time.perf_counter()
            p = solve(w, objective="latency", method="mip", time_limit=args.mip)
            mip_seconds = f"{time.perf_counter() - clock:.0f}"
            mip, mip_bound = f"{p.objective:.3f} ({p.solver})", f"{p.bound:.3f}"
        best = min(start, chain) if chain is not None else start
        if found is None:
            bound = gap = f"none ({info.get('status')})"
        else:
            bound, gap = f"{found.value:.4f}", f"{max(0.0, (best - found.value) / best):.2%}"
        print(f"| {path.stem} | {w.graph.n} | {load:.1f} | {info.get('ideals', '')} | {info.get('pairs', '')} | "
              f"{bound} | {seconds:.2f} | {info.get('bytes', 0) / 2**20:.1f} | {start:.4f} | "
              f"{'' if chain is None else f'{chain:.4f}'} | {gap} | {without} | {mip} | {mip_bound} | "
              f"{mip_seconds} | {published(reference, path)} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
