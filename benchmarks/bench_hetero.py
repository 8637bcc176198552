"""Benchmark of the exact DP ("dp") on heterogeneous clusters against the homogeneous one.

For each throughput workload of ``../shared/workloads`` with at least 6 ideals' worth of work
(by default the three largest lattices: layer_gnmt_training, op_bert3_training and
layer_resnet50_training; ``--only`` filters by name), the workload's own cluster (k accelerators
of memory M, l CPUs) is solved as published and with the same k accelerators split into types:

* ``homogeneous``: k x (M, speed 1), the paper's DP (one type);
* ``fast+slow``: the first ceil(k/2) at speed 2, the rest at speed 1, all of memory M (2 types);
* ``fast+slow, small fast``: as above, but the fast ones hold only 1/k of the model's memory each
  (memory binds: 2 types of differing memory and speed);
* ``all distinct``: speeds 1, 1.25, 1.5, ... (k types: (l + 1) * 2**k table entries per ideal).

Binding memory also costs ideals: the contraction merges zero-time units that hold memory only
when the whole graph fits on every accelerator, so a small accelerator can multiply the lattice
(the same happens with a homogeneous cluster that small); a DP beyond its memory budget is
reported as refused. Each row runs in its own subprocess (peak resident memory ``ru_maxrss``
covers the tables). Seconds are the wall time of ``exactplace.solve`` (contraction, ideal count,
DP, evaluator re-check), best of R runs, and "DP seconds" the native DP's share of that run;
"layers" is (l + 1) * prod(count + 1), the DP's table entries per ideal.

Usage: ``python benchmarks/bench_hetero.py [--threads N] [--repeat R] [--only NAME_SUBSTRING]``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from isolated import peak_mb, run_isolated

from exactplace import Cluster, TooManyIdealsError, read_workload, solve

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"
WORKLOADS = ("layer_gnmt_training", "op_bert3_training", "layer_resnet50_training")
CLUSTERS = ("homogeneous", "fast+slow", "fast+slow, small fast", "all distinct")


def cluster_for(kind: str, base: Cluster, model_memory: float) -> Cluster:
    """The benchmark's cluster ``kind`` with the accelerator count, memory and CPUs of ``base``."""
    k, memory, cpus = base.accelerators, float(base.memory[0]), base.cpus
    fast = (k + 1) // 2
    if kind == "homogeneous":
        return Cluster(k, memory=memory, cpus=cpus)
    if kind == "fast+slow":
        return Cluster(k, memory=memory, cpus=cpus, speed=[2.0] * fast + [1.0] * (k - fast))
    if kind == "fast+slow, small fast":
        return Cluster(k, memory=[model_memory / k] * fast + [memory] * (k - fast), cpus=cpus,
                       speed=[2.0] * fast + [1.0] * (k - fast))
    if kind == "all distinct":
        return Cluster(k, memory=memory, cpus=cpus, speed=[1.0 + 0.25 * i for i in range(k)])
    raise ValueError(kind)


def _child(spec: dict) -> None:
    """Run one solve and print its facts as JSON (in a fresh process, so ru_maxrss is its own)."""
    workload = read_workload(spec["path"])
    cluster = cluster_for(spec["cluster"], workload.cluster, float(workload.graph.memory.sum()))
    types = [len(t) for t in cluster.accelerator_types()]
    best = math.inf
    for _ in range(spec["repeat"]):
        start = time.perf_counter()
        try:
            placement = solve(workload.graph, cluster, method="dp", threads=spec["threads"])
        except TooManyIdealsError as error:
            print(json.dumps({"refused": str(error), "ideals": error.count, "types": types}))
            return
        seconds = time.perf_counter() - start
        if seconds < best:
            best, dp_seconds = seconds, placement.timings["dp"]
    print(json.dumps({
        "ideals": placement.info["ideals"], "objective": placement.objective, "status": placement.status.value,
        "seconds": best, "dp_seconds": dp_seconds, "pairs": placement.info["pairs"],
        "peak_mb": peak_mb(), "types": types,
        "layers": (cluster.cpus + 1) * math.prod(c + 1 for c in types),
        "used": sorted({int(d) for d in placement.device if d < cluster.accelerators}),
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(json.loads(args.child))
        return
    if not (SHARED / "reference.csv").is_file():
        print(f"shared workloads not found at {SHARED}")
        return
    print("| workload | cluster | types | layers | ideals | pairs | objective | seconds | DP seconds | peak MB "
          "| vs homogeneous |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in WORKLOADS:
        if args.only not in name:
            continue
        baseline = None
        for kind in CLUSTERS:
            spec = {"path": str(SHARED / "throughput" / f"{name}.json"), "cluster": kind,
                    "threads": args.threads, "repeat": args.repeat}
            r = run_isolated(__file__, spec)
            if "refused" in r:
                print(f"| {name} | {kind} | {r['types']} | | {r['ideals']:,} | refused: "
                      f"{r['refused'].split(';')[0]} | | | | | |", flush=True)
                continue
            baseline = r["seconds"] if baseline is None else baseline
            print(f"| {name} | {kind} | {r['types']} | {r['layers']} | {r['ideals']} | {r['pairs']:,} "
                  f"| {r['objective']:.6f} | {r['seconds']:.3f} | {r['dp_seconds']:.3f} | {r['peak_mb']:.0f} "
                  f"| {r['seconds'] / baseline:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
