"""The path DP's latency lower bound (``exactplace.backends.latency_bound``) on every latency workload.

One row per workload of ``../shared/workloads/latency``: nodes, the reduced graph's ideals and
candidate subgraphs, the bound, its seconds and peak Python memory, beside the best latency
the default start reaches (the evaluator's value of the best warm-start candidate), the
published ``ip_contiguous`` (Gurobi 8.1, 4 cores, up to an hour) and the program's bound
without it (CP-SAT, ``--limit`` seconds, ``path_bound=False``): ``gap`` = (start - bound) /
start, 0 when the bound certifies the start. The machine load (``uptime``) is printed too.

Usage::

    python benchmarks/bench_latency_bound.py [--limit 10] [--only NAME]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
import tracemalloc
from pathlib import Path

from exactplace import read_workload, solve
from exactplace.backends.latency_bound import path_bound

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=10.0, help="seconds of the program without the bound")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    if not SHARED.exists():
        print(f"no shared workloads at {SHARED}", file=sys.stderr)
        return 1
    reference = {row["workload"]: row for row in csv.DictReader(open(SHARED / "reference.csv"))}
    print(f"| workload | nodes | load | ideals | subgraphs | path bound | s | peak MiB | best start | gap | "
          f"program bound ({args.limit:g} s, no path bound) | ip_contiguous |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted((SHARED / "latency").glob("*.json")):
        if args.only and args.only not in path.stem:
            continue
        w = read_workload(path)
        load = os.getloadavg()[0]
        clock = time.perf_counter()
        found = path_bound(w.graph, w.cluster, deadline=time.monotonic() + 60)
        seconds = time.perf_counter() - clock
        tracemalloc.start()  # a second run for the memory: tracing slows Python down several times
        path_bound(w.graph, w.cluster, deadline=time.monotonic() + 600)
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        without = solve(w, objective="latency", method="mip", time_limit=args.limit, path_bound=False)
        start = min(v for v in without.info["warm_start_candidates"].values() if v is not None)
        published = reference[f"latency/{path.name}"]["ip_contiguous"]
        if found is None:
            print(f"| {path.stem} | {w.graph.n} | {load:.1f} | over budget | | - | {seconds:.2f} | {peak:.1f} | "
                  f"{start:.3f} | | {without.bound:.3f} | {published} |")
        else:
            gap = max(0.0, (start - found.value) / start)
            print(f"| {path.stem} | {w.graph.n} | {load:.1f} | {found.ideals} | {found.subgraphs} | "
                  f"{found.value:.4f} | {seconds:.2f} | {peak:.1f} | {start:.4f} | {gap:.2%} | "
                  f"{without.bound:.3f} | {published} |")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
