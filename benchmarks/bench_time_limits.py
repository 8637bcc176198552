"""Does every method honour its time limit on a 100,000-node graph?

Each (method, graph) runs in a fresh process with ``time_limit`` (default 10 s) on a 100,000-node
chain and a 100,000-node random DAG (each node has one to three edges to later nodes within 50
positions; times, sizes and costs random, 8 accelerators of room for an eighth of the memory
each, one CPU core). The table has the wall time of the ``solve`` call, its ratio to the time
limit (the bar: at most 2), the process's peak memory, the status and what the method said.
A method may also refuse such an input up front (the bar: in under a second, saying why).

Usage::

    python benchmarks/bench_time_limits.py [--nodes 100000] [--limit 10] [--methods a,b] [--graphs chain,dag]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

GRAPHS = ("chain", "dag")


def build(kind: str, n: int, seed: int = 0):
    """The graph and cluster of one case (the same for every method)."""
    import exactplace as ep

    rng = np.random.default_rng(seed)
    cpu = rng.uniform(1.0, 5.0, n)
    acc = rng.uniform(0.1, 1.0, n)
    memory = rng.uniform(0.5, 1.5, n)
    comm = rng.uniform(0.0, 0.3, n)
    if kind == "chain":
        src = np.arange(n - 1)
        dst = src + 1
    else:
        fan = rng.integers(1, 4, n)
        src = np.repeat(np.arange(n), fan)
        dst = src + rng.integers(1, 51, len(src))
        keep = dst < n
        pairs = np.unique(np.stack([src[keep], dst[keep]], axis=1), axis=0)
        src, dst = pairs[:, 0], pairs[:, 1]
    nodes = [ep.Node(i, float(cpu[i]), float(acc[i]), memory=float(memory[i]), comm=float(comm[i])) for i in range(n)]
    graph = ep.Graph(nodes, list(zip(src.tolist(), dst.tolist())))
    cluster = ep.Cluster(accelerators=8, memory=float(memory.sum()) / 8, cpus=1)
    return graph, cluster


def one(method: str, objective: str, kind: str, n: int, limit: float) -> dict:
    """Run one case in this process; what the table shows of it."""
    import exactplace as ep

    graph, cluster = build(kind, n)
    start = time.monotonic()
    try:
        p = ep.solve(graph, cluster, objective=objective, method=method, time_limit=limit)
        outcome = {"status": p.status.value, "limit": None if p.limit is None else p.limit.value,
                   "note": str(p.info.get("reason") or p.info.get("returned") or "")[:90]}
    except ep.ExactplaceError as error:
        outcome = {"status": "refused", "limit": None, "note": str(error)[:90]}
    outcome["wall"] = time.monotonic() - start
    outcome["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--methods", default="")
    parser.add_argument("--graphs", default=",".join(GRAPHS))
    parser.add_argument("--one", nargs=3, metavar=("METHOD", "OBJECTIVE", "GRAPH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one, args.nodes, args.limit)))
        return
    from exactplace import available_methods
    from exactplace.methods.registry import registered_methods

    methods = args.methods.split(",") if args.methods else available_methods()
    print(f"{args.nodes} nodes, time limit {args.limit:g} s, load {os.getloadavg()[0]:.1f}")
    print("| method | objective | graph | wall (s) | wall / limit | peak MiB | status | limit | note |")
    print("|---|---|---|---|---|---|---|---|---|")
    cases = [(method, objective, kind) for method in methods for objective in registered_methods()[method].objectives
             for kind in args.graphs.split(",")]
    for method, objective, kind in cases:
        command = [sys.executable, __file__, "--nodes", str(args.nodes), "--limit", str(args.limit),
                   "--one", method, objective, kind]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=args.limit * 20 + 120)
            row = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {
                "status": f"crashed ({done.returncode})", "note": done.stderr.strip().splitlines()[-1:]}
        except subprocess.TimeoutExpired:
            row = {"status": "killed", "note": f"still running at {args.limit * 20 + 120:g} s"}
        wall = row.get("wall")
        shown = "-" if wall is None else f"{wall:.1f}"
        ratio = "-" if wall is None else f"{wall / args.limit:.2f}"
        peak = "-" if row.get("peak_mib") is None else f"{row['peak_mib']:.0f}"
        print(f"| {method} | {objective} | {kind} | {shown} | {ratio} | {peak} | {row.get('status')} | "
              f"{row.get('limit') or ''} | {row.get('note', '')} |", flush=True)


if __name__ == "__main__":
    main()
