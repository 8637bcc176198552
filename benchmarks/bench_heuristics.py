"""Benchmark of the heuristic placers: run time, value, memory, and the published baselines side by side.

For every shared workload (``../shared/workloads``, skipped when absent) and every heuristic,
prints the value under the method's own objective (max-load for the paper's baselines,
simulated step time for the list schedulers), the wall time of ``exactplace.solve`` and the
peak Python allocation (tracemalloc, in a second, untimed run; local search excepted). Then:

* ``pipedream`` / ``local-search`` / ``metis`` against the published ``pipedream``,
  ``local_search`` and ``scotch`` columns (ratio = ours / published; on latency rows the
  latency of our placement), and against the DP optimum (>= 1 for the contiguous pipedream);
* m-SCT's step time against its bound, the SCT LP's makespan (``Placement.bound``);
* every heuristic on ``synthetic_ops10k`` (10,000 operators, from ``bench_dp.py``).

Usage: ``python benchmarks/bench_heuristics.py [--only NAME_SUBSTRING] [--skip-synthetic]``.
The machine is shared: the load average is printed beside the numbers.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
import tracemalloc
from pathlib import Path

from exactplace import PlacementError, evaluate, read_workload, solve
from exactplace.methods import registry

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dp import _synthetic

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"
METHODS = ("greedy", "m-topo", "m-etf", "m-sct", "fastt", "celeritas", "celeritas-order-place",
           "local-search", "pipedream", "metis")


def run(graph, cluster, name: str, memory: bool, time_limit: float | None = None) -> tuple[object, float, float | None]:
    objective = registry.registered_methods()[name].objectives[0]
    if memory:
        tracemalloc.start()
    start = time.perf_counter()
    p = solve(graph, cluster, objective=objective, method=name, time_limit=time_limit)
    seconds = time.perf_counter() - start
    peak = None
    if memory:
        peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    return p, seconds, peak


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated methods")
    parser.add_argument("--synthetic-limit", type=float, default=120.0,
                        help="time limit (s) for local search on the synthetic graph")
    args = parser.parse_args()
    methods = args.methods.split(",")
    print(f"# bench_heuristics ({load()}, {os.cpu_count()} cores)\n")
    reference = {}
    rows = []
    if SHARED.is_dir():
        with open(SHARED / "reference.csv", newline="") as f:
            reference = {r["workload"]: r for r in csv.DictReader(f)}
        print("| workload | nodes | method | objective | value | seconds | peak MiB |")
        print("|---|---|---|---|---|---|---|")
        for key, row in reference.items():
            if args.only not in key:
                continue
            w = read_workload(SHARED / key)
            for name in methods:
                p, seconds, _ = run(w.graph, w.cluster, name, memory=False)
                peak = None if name == "local-search" else run(w.graph, w.cluster, name, memory=True)[2]
                value = "-" if p.objective is None else f"{p.objective:.6g}"
                shown = "-" if peak is None else f"{peak:.1f}"
                print(f"| {key} | {w.graph.n} | {name} | {p.objective_name} | {value} | {seconds:.3f} | {shown} |",
                      flush=True)
                rows.append((key, row, name, p, seconds))
        print(f"\n({load()})\n")
        print("| workload | method | ours | published column | published | ours / published | ours / dp |")
        print("|---|---|---|---|---|---|---|")
        for key, row, name, p, _ in rows:
            column = {"pipedream": "pipedream", "local-search": "local_search", "metis": "scotch"}.get(name)
            if column is None or p.objective is None or not row[column]:
                continue
            ours = p.objective
            if row["objective"] == "latency":  # the published value is the latency of the baseline's split
                try:
                    ours = evaluate(p.graph, p.cluster, p.device, "latency")
                except PlacementError:
                    ours = math.nan
            published = row[column]
            dp = f"{ours / float(row['dp']):.4f}" if row["dp"] else "-"
            print(f"| {key} | {name} | {ours:.6g} | {column} | {published} | {ours / float(published):.4f} | {dp} |")
        print("\n| workload | m-sct step time | SCT bound | ratio (>= 1) |")
        print("|---|---|---|---|")
        for key, _, name, p, _ in rows:
            if name == "m-sct" and p.objective is not None:
                print(f"| {key} | {p.objective:.6g} | {p.bound:.6g} | {p.objective / p.bound:.4f} |")
    if not args.skip_synthetic:
        graph, cluster = _synthetic("synthetic_ops10k")
        print(f"\n## synthetic_ops10k: {graph.n} nodes, {graph.m} edges ({load()})\n")
        print("| method | objective | value | seconds |")
        print("|---|---|---|---|")
        for name in methods:
            limit = args.synthetic_limit if name == "local-search" else None
            p, seconds, _ = run(graph, cluster, name, memory=False, time_limit=limit)
            value = "-" if p.objective is None else f"{p.objective:.6g}"
            stopped = f", stopped by {p.limit.words}" if p.limit else ""
            print(f"| {name} | {p.objective_name} | {value} ({p.status.value}{stopped}) | {seconds:.2f} |", flush=True)
    print(f"\n({load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
