"""Evaluator speed on every shared workload: vectorized max_load vs a naive per-node loop.

Prints one row per workload (nodes, edges, value, seconds of each evaluator, ratio)
for the greedy placement. Run: ``python benchmarks/bench_evaluators.py``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

import exactplace as ep
from exactplace.evaluators.latency import latency

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"


def naive_max_load(graph: ep.Graph, cluster: ep.Cluster, device: np.ndarray) -> float:
    """The README's definition, one node at a time (the reference implementation's approach)."""
    load = [0.0] * cluster.num_devices
    k = cluster.accelerators
    for v in range(graph.n):
        load[device[v]] += graph.acc_time[v] if device[v] < k else graph.cpu_time[v]
    for g in range(len(graph.group_source)):
        u = graph.group_source[g]
        receivers = {int(device[graph.dst[e]]) for e in np.flatnonzero(graph.edge_group == g)} - {int(device[u])}
        if receivers:
            for d in receivers | {int(device[u])}:
                if d < k:
                    load[d] += graph.group_cost[g]
    return max(load)


def best_time(function: Callable[[], object], repeat: int = 5) -> tuple[object, float]:
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return value, min(times)


def main() -> int:
    if not SHARED.is_dir():
        print(f"shared workloads not found at {SHARED}", file=sys.stderr)
        return 1
    rows = []
    for path in sorted(SHARED.glob("*/*.json")):
        if path.parent.name not in ("throughput", "latency"):
            continue
        w = ep.read_workload(path)
        g, c = w.graph, w.cluster
        device = ep.solve(w, method="greedy").device
        value, vectorized = best_time(partial(ep.max_load, g, c, device))
        naive_value, naive = best_time(partial(naive_max_load, g, c, device))
        assert abs(value - naive_value) <= 1e-9 * max(1.0, value)
        _, lat = best_time(partial(latency, g, c, device), repeat=3)
        _, feas = best_time(partial(ep.check_feasibility, g, c, device), repeat=3)
        rows.append({
            "workload": f"{path.parent.name}/{path.stem}", "nodes": g.n, "edges": g.m, "max_load": value,
            "max_load_ms": 1e3 * vectorized, "naive_ms": 1e3 * naive, "speedup": naive / vectorized,
            "latency_ms": 1e3 * lat, "feasibility_ms": 1e3 * feas,
        })
    table = pd.DataFrame(rows).set_index("workload")
    print(table.to_markdown(floatfmt=".3g") if _has_tabulate() else table.to_string(float_format=lambda x: f"{x:.3g}"))
    return 0


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    raise SystemExit(main())
