"""Benchmark of the heuristic placers: run time, value, memory, and the published baselines side by side.

For every shared workload (``../shared/workloads``, skipped when absent) and every heuristic,
prints the value under the method's own objective (max-load for the paper's baselines,
simulated step time for the list schedulers), the wall time of ``exactplace.solve`` and the
peak Python allocation (tracemalloc, in a second, untimed run; local search excepted). Then:

* ``pipedream`` / ``local-search`` / ``metis`` against the published ``pipedream``,
  ``local_search`` and ``scotch`` columns (ratio = ours / published), and ``pipedream``
  against the DP optimum (must be >= 1);
* m-SCT's step time against the SCT LP value (``info["sct_bound"]``);
* every heuristic on ``synthetic_ops10k`` (10,000 operators, from ``bench_dp.py``).

Usage: ``python benchmarks/bench_heuristics.py [--only NAME_SUBSTRING] [--skip-synthetic]``.
The machine is shared: the load average is printed beside the numbers.
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
from exactplace.methods import registry

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dp import _synthetic

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"
METHODS = ("greedy", "m-topo", "m-etf", "m-sct", "fastt", "celeritas", "celeritas-order-place",
           "local-search", "pipedream", "metis")


def run(graph, cluster, name: str, memory: bool) -> tuple[object, float, float | None]:
    objective = registry.registered_methods()[name].objectives[0]
    if memory:
        tracemalloc.start()
    start = time.perf_counter()
    p = solve(graph, cluster, objective=objective, method=name)
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
    args = parser.parse_args()
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
            for name in METHODS:
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
            if column is None or p.objective is None:
                continue
            published = row[column]
            ratio = f"{p.objective / float(published):.4f}" if published else "-"
            dp = f"{p.objective / float(row['dp']):.4f}" if row["dp"] else "-"
            print(f"| {key} | {name} | {p.objective:.6g} | {column} | {published or '-'} | {ratio} | {dp} |")
        print("\n| workload | m-sct step time | SCT LP value | ratio |")
        print("|---|---|---|---|")
        for key, _, name, p, _ in rows:
            if name == "m-sct" and p.objective is not None:
                bound = p.info["sct_bound"]
                print(f"| {key} | {p.objective:.6g} | {bound:.6g} | {p.objective / bound:.4f} |")
    if not args.skip_synthetic:
        graph, cluster = _synthetic("synthetic_ops10k")
        print(f"\n## synthetic_ops10k: {graph.n} nodes, {graph.m} edges ({load()})\n")
        print("| method | objective | value | seconds |")
        print("|---|---|---|---|")
        for name in METHODS:
            p, seconds, _ = run(graph, cluster, name, memory=False)
            value = "-" if p.objective is None else f"{p.objective:.6g}"
            print(f"| {name} | {p.objective_name} | {value} ({p.status.value}) | {seconds:.2f} |", flush=True)
    print(f"\n({load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
