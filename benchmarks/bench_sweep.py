"""A what-if sweep against the same cells solved cold one by one, side by side in one run.

For each shared layer graph (by default all six), 3 memory sizes per accelerator (by default a quarter, half and
all of the graph's memory, so that the memory binds at the smaller counts) x 2..8 accelerators: first every cell as
a user
would solve it without the sweep (``solve(graph, Cluster(k, memory, cpus))``, ``method="auto"``), then
``exactplace.sweep.sweep`` over the same grid. Every cell's value must agree and be certified in both; the
table gives the cells certified, the seconds of each, their ratio (cold / sweep), how the sweep settled its
cells (reused from a larger memory, method hint, warm start) and the process's peak resident memory.

Usage: ``python benchmarks/bench_sweep.py [--workloads layer_gnmt_training,...] [--shares 0.25,0.5,1]``
"""

from __future__ import annotations

import argparse
import collections
import math
import resource
import time
from pathlib import Path

import pandas  # noqa: F401  (loaded before the timings: see main)
import tqdm  # noqa: F401

from exactplace import Cluster, read_workload, solve
from exactplace.sweep import sweep

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "workloads" / "throughput"


def _same(value: float | None, cold: float | None) -> bool:
    """Both absent (infeasible), or equal within the solvers' relative gap."""
    if value is None or cold is None or math.isnan(value):
        return (value is None or math.isnan(value)) and cold is None
    return abs(value - cold) <= 1e-4 * cold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="layer_bert24_inference,layer_bert24_training,layer_gnmt_inference,"
                        "layer_gnmt_training,layer_resnet50_inference,layer_resnet50_training")
    parser.add_argument("--shares", default="0.25,0.5,1", help="memory per accelerator, as shares of the graph's")
    parser.add_argument("--accelerators", default="2..8")
    args = parser.parse_args()
    low, high = (int(x) for x in args.accelerators.split(".."))
    counts = range(low, high + 1)
    shares = [float(m) for m in args.shares.split(",")]
    print("| workload | nodes | memory (GB) | cells | certified cold | certified sweep | values equal | cold s "
          "| sweep s | ratio | settled | peak MiB |")
    print("|---|---:|---|---:|---:|---:|---|---:|---:|---:|---|---:|")
    for name in args.workloads.split(","):
        workload = read_workload(SHARED / f"{name}.json")
        cpus = workload.cluster.cpus
        memory = [share * float(workload.graph.memory.sum()) for share in shares]
        # Untimed: the first solve loads the native DP; pandas and tqdm, which the sweep's frame and bar need, are
        # loaded once per process too.
        solve(workload.graph, Cluster(counts[0], memory[-1], cpus))
        start = time.perf_counter()
        cold = {(k, m): solve(workload.graph, Cluster(k, m, cpus)) for m in memory for k in counts}
        cold_seconds = time.perf_counter() - start
        start = time.perf_counter()
        cells = sweep(workload, counts, memory)
        sweep_seconds = time.perf_counter() - start
        equal = all(_same(row.objective, cold[row.accelerators, row.memory].objective) for row in cells.itertuples())
        settled = collections.Counter("reused" if s.startswith("reused") else s for s in cells["settled"])
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"| {name} | {workload.graph.n} | {', '.join(f'{m / 1e9:.2f}' for m in memory)} | {len(cells)} | "
              f"{sum(p.status.value == 'optimal' for p in cold.values())} | {(cells['status'] == 'optimal').sum()} | "
              f"{'yes' if equal else 'NO'} | {cold_seconds:.3f} | {sweep_seconds:.3f} | "
              f"{cold_seconds / sweep_seconds:.2f} | {', '.join(f'{k} {v}' for k, v in sorted(settled.items()))} | "
              f"{peak:.0f} |", flush=True)


if __name__ == "__main__":
    main()
