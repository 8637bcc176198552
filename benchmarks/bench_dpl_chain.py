"""Benchmark of DPL at scale: the chain DP against the all-pairs DP it replaced.

A chain of N operators (random CPU time 1..8, accelerator time 1..4, output cost 0..2,
1 byte each; 6 accelerators holding N/4 bytes each, 1 CPU) is solved with ``method="dpl"``
at N = 10k, 30k, 100k and 300k. Each run is a separate process so that its peak resident
memory (``ru_maxrss``) is its own. Wall and CPU seconds cover ``solve`` (contraction
included, graph construction excluded); on a shared, loaded machine the CPU seconds are
the fairer measure. The baseline is the previous DPL: the general DP over the
ideals of the linearized units (every pair of prefixes, pruned), run where it takes minutes
at most; its value must equal the chain DP's.

Usage: ``python benchmarks/bench_dpl_chain.py [--sizes 10000,30000,...] [--baseline 10000,20000]``.
Prints a Markdown table; ``uptime``'s load is printed beside it (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time


def chain(n: int) -> tuple[object, object]:
    import numpy as np

    from exactplace import Cluster, Graph, Node

    rng = np.random.default_rng(0)
    cpu, acc, comm = rng.integers(1, 9, n), rng.integers(1, 5, n), rng.integers(0, 3, n)
    nodes = [Node(i, float(cpu[i]), float(acc[i]), memory=1.0, comm=float(comm[i])) for i in range(n)]
    return Graph(nodes, [(i, i + 1) for i in range(n - 1)]), Cluster(accelerators=6, memory=n / 4, cpus=1)


def child(n: int, baseline: bool) -> dict:
    """One measurement, in this (child) process."""
    from exactplace import solve

    graph, cluster = chain(n)
    start, cpu_start = time.perf_counter(), time.process_time()
    if not baseline:
        placement = solve(graph, cluster, method="dpl")
        value = placement.objective
    else:
        from exactplace.core.contraction import contract, linearize
        from exactplace.native import load, request

        c = linearize(contract(graph, cluster.memory_cap))
        out = load().solve(request(
            units=c.num_units, cpu_time=c.cpu_time, acc_time=c.acc_time, memory=c.memory, supported=c.supported,
            edge_src=c.src, edge_dst=c.dst, group_cost=c.group_cost, group_source=c.group_source,
            group_ptr=c.group_ptr, group_target=c.group_target, accelerators=cluster.accelerators,
            cpus=cluster.cpus, memory_cap=cluster.memory_cap, threads=1,
        ))
        value = out.value
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"n": n, "method": "dpl (all pairs, before)" if baseline else "dpl (chain DP)", "value": value,
            "seconds": seconds, "cpu": cpu, "peak_mb": peak}


def measure(n: int, baseline: bool) -> dict:
    command = [sys.executable, __file__, "--child", str(n)] + (["--as-baseline"] if baseline else [])
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,30000,100000,300000")
    parser.add_argument("--baseline", default="10000,20000", help="sizes to run the previous DPL on ('' for none)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--as-baseline", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.as_baseline)))
        return
    print(f"load average at start: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    print("| nodes | method | time per sample | wall s | CPU s | peak MB | CPU s / previous size |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    rows = []
    for n in [int(x) for x in args.sizes.split(",") if x]:
        rows.append(measure(n, baseline=False))
    for n in [int(x) for x in args.baseline.split(",") if x]:
        rows.append(measure(n, baseline=True))
    previous: dict[str, dict] = {}
    for row in rows:
        before = previous.get(row["method"])
        growth = f"{row['cpu'] / before['cpu']:.2f} for {row['n'] / before['n']:.1f}x nodes" if before else ""
        print(f"| {row['n']:,} | {row['method']} | {row['value']:.6g} | {row['seconds']:.2f} | {row['cpu']:.2f} "
              f"| {row['peak_mb']:.0f} | {growth} |")
        previous[row["method"]] = row
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
