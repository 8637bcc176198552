"""Benchmark of two-level clusters (paper Appendix C.3) against the one-level cluster, side by side.

For each PipeDream profile shared in ``../shared/workloads/pipedream`` (read with ``--bandwidth``,
default 10 GB/s: transfers cost enough to matter and the one-level optima still use 4-7
accelerators) and each machine count, the same accelerators are solved as one level
(``inter_machine_cost=1``) and as ``machines`` machines whose links are ``--cost`` times slower,
each by ``method="auto"`` (the one-level DP; the two-level DP when its work is small, else the
two-level contiguous IP) and, for the two-level rows, also by the other
exact method where it runs. Printed per row: the method that answered, its status, the value
(re-scored by the evaluator), the proven bound, seconds, peak resident memory (each solve in its
own subprocess) and the ratio of the two-level optimum to the one-level one (>= 1: the slow links
can only cost).

Usage: ``python benchmarks/bench_two_level.py [--accelerators K] [--cost F] [--bandwidth B]
[--time-limit S]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from isolated import peak_mb, run_isolated

from exactplace import Cluster, ExactplaceError, read_workload, solve

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads" / "pipedream"
PROFILES = ("vgg16", "gnmt", "resnet50")


def _child(spec: dict) -> None:
    """One solve in a fresh process (so ru_maxrss is its own); prints its facts as JSON."""
    workload = read_workload(SHARED / f"{spec['profile']}.graph.txt", bandwidth=spec["bandwidth"])
    cluster = Cluster(spec["accelerators"], cpus=0, machines=spec["machines"], inter_machine_cost=spec["cost"])
    start = time.perf_counter()
    try:
        p = solve(workload.graph, cluster, method=spec["method"], time_limit=spec["time_limit"])
        facts = {"method": f"{p.method} ({p.solver})", "status": p.status.value, "value": p.objective,
                 "bound": p.bound}
    except ExactplaceError as error:
        facts = {"method": spec["method"], "status": "refused", "value": None, "bound": None, "why": str(error)}
    facts.update(seconds=time.perf_counter() - start, rss_mb=peak_mb())
    print(json.dumps(facts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accelerators", type=int, default=8)
    parser.add_argument("--cost", type=float, default=4.0)
    parser.add_argument("--bandwidth", type=float, default=1e10)
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(json.loads(args.child))
        return
    print(f"{args.accelerators} accelerators, no CPU, bandwidth {args.bandwidth:g} B/s within a machine, "
          f"{args.cost:g}x slower between machines; time limit {args.time_limit:g} s")
    print(f"{'profile':9} {'machines':>8} {'method':30} {'status':10} {'value':>10} {'bound':>10} "
          f"{'seconds':>8} {'MB':>6} {'ratio':>6}")
    for profile in PROFILES:
        base = {"profile": profile, "accelerators": args.accelerators, "bandwidth": args.bandwidth,
                "time_limit": args.time_limit}
        flat = run_isolated(__file__, {**base, "machines": 1, "cost": 1.0, "method": "auto"})
        rows = [(1, flat)]
        for machines in (2, 4):
            for method in ("auto", "dp", "mip"):
                spec = {**base, "machines": machines, "cost": args.cost, "method": method}
                rows.append((machines, run_isolated(__file__, spec)))
        for machines, r in rows:
            value = "-" if r["value"] is None else f"{r['value']:.4f}"
            bound = "-" if r["bound"] is None else f"{r['bound']:.4f}"
            ratio = "-" if r["value"] is None or flat["value"] is None else f"{r['value'] / flat['value']:.3f}"
            print(f"{profile:9} {machines:>8} {r['method']:30} {r['status']:10} {value:>10} {bound:>10} "
                  f"{r['seconds']:>8.2f} {r['rss_mb']:>6.0f} {ratio:>6}")
    print(f"(load average {' '.join(Path('/proc/loadavg').read_text().split()[:3])})")


if __name__ == "__main__":
    main()
