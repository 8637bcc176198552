"""Probe: is a workload's best known non-contiguous split a floor of the local search, or of the problem?

Issue 21's held-out OperatorGraphs_bert_L-12_training ends the relay at a gap of 9.3%: the split 373.42 (CP-SAT's
leg, the polish finding nothing better), the bound 338.84 (the heaviest accelerator's). Which side is loose decides
where the next work goes. This probe asks the split side, with the product's own pieces:

1. Independent starts (the contiguous DP's optimum, METIS, CP-SAT's first ``--cpsat`` seconds on the assignment IP),
   each polished (:func:`~exactplace.improvers.polish.polish`, pairs and triples of devices re-optimized exactly,
   ``escalate``) for ``--polish`` seconds: one row each, the evaluator's max loads.
2. Around the best polished split, the assignment IP (:func:`~exactplace.formulations.throughput.noncontiguous_ip`,
   no symmetry fixings) with each class allowed only on the devices of the classes within ``r`` communication groups
   of it (its own included), for each ``--radius r``, on HiGHS for ``--seconds`` from that split: optimal at a radius
   means no split differing from it only by such moves is better; larger radii free more classes.

Run: ``python benchmarks/probe_split_floor.py /tmp/heldout/OperatorGraphs_bert_L-12_training.json --radius 2 5``.
Results: ``benchmarks/log/results-history-to-2026-12-01/``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from exactplace.formulations.throughput import UnitData, noncontiguous_ip

from exactplace import Workload, max_load, read_workload, solve
from exactplace.improvers.polish import polish
from exactplace.solvers import Request, solve_model


def starts(workload: Workload, cpsat_seconds: float) -> dict[str, np.ndarray]:
    """The independent starts, by name (node position -> device)."""
    found = {"dp": solve(workload, method="dp").device, "metis": solve(workload, method="metis").device}
    if cpsat_seconds > 0:
        found["cpsat"] = solve(workload, method="mip", solver="cpsat", contiguous=False, warm_start=None,
                               time_limit=cpsat_seconds).device
    return found


def near_devices(data: UnitData, num_devices: int, device: np.ndarray, radius: int) -> np.ndarray:
    """(classes, devices) bool: the devices of the classes within ``radius`` communication groups of each class."""
    class_device = device[np.unique(data.unit, return_index=True)[1]]  # (a class's nodes share a device)
    near = np.eye(data.units, dtype=bool)
    source = data.group_source[data.pair_group]
    step = np.eye(data.units, dtype=bool)
    step[source, data.pair_target] = step[data.pair_target, source] = True
    for _ in range(radius):
        near = (near.astype(np.int64) @ step.astype(np.int64)) > 0
    allowed = np.zeros((data.units, num_devices), dtype=bool)
    for d in np.unique(class_device):
        allowed[:, d] = near[:, class_device == d].any(axis=1)
    return allowed


def restricted(workload: Workload, device: np.ndarray, radius: int,
               seconds: float) -> tuple[str, int, float | None, float | None, float]:
    """The assignment IP around ``device`` within ``radius``: (status, free classes, max load, bound, seconds)."""
    graph, cluster = workload.graph, workload.cluster
    ip = noncontiguous_ip(graph, cluster, symmetry=False)
    y = ip.index["y"]
    allowed = near_devices(ip.data, cluster.num_devices, device, radius)  # (the IP's classes, not built again)
    outside = y[~allowed]
    ip.model.add_terms("moves beyond the radius", (outside[:, None], 1.0), ub=0.0)
    clock = time.perf_counter()
    out = solve_model(ip.model, "highs", Request(deadline=time.monotonic() + seconds, rel_gap=1e-6, threads=1,
                                                  warm_start=ip.encode(device)))
    value = None if out.values is None else max_load(graph, cluster, ip.decode(out.values))
    return out.status.value, int((allowed.sum(axis=1) > 1).sum()), value, out.bound, time.perf_counter() - clock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", type=Path)
    parser.add_argument("--polish", type=float, default=120.0, help="seconds of polish per start")
    parser.add_argument("--cpsat", type=float, default=60.0, help="seconds of CP-SAT for its start (0: none)")
    parser.add_argument("--radius", type=int, nargs="*", default=[2, 5])
    parser.add_argument("--seconds", type=float, default=150.0, help="seconds per restricted IP")
    args = parser.parse_args()
    w = read_workload(args.workload)
    print(f"{args.workload.stem}: {w.graph.n} nodes, {w.cluster.accelerators} accelerators, {w.cluster.cpus} CPU cores")
    print("| start | its max load | polished | polish (s) | ended |")
    print("|---|---|---|---|---|")
    best: np.ndarray | None = None
    best_value = np.inf
    for name, device in starts(w, args.cpsat).items():
        found = polish(w.graph, w.cluster, device, time_limit=args.polish, escalate=True)
        value = max_load(w.graph, w.cluster, found.device)  # the evaluator's, not the search's
        print(f"| {name} | {found.start:.7f} | {value:.7f} | {found.seconds:.1f} | {found.ended} |", flush=True)
        if value < best_value:
            best, best_value = found.device, value
    assert best is not None
    print(f"\naround the best polished split ({best_value:.7f}):")
    print("| radius | free classes | status | max load | bound | seconds |")
    print("|---|---|---|---|---|---|")
    for radius in args.radius:
        status, free, value, bound, seconds = restricted(w, best, radius, args.seconds)
        shown, proven = ("-" if value is None else f"{value:.7f}"), ("-" if bound is None else f"{bound:.4f}")
        print(f"| {radius} | {free} | {status} | {shown} | {proven} | {seconds:.1f} |", flush=True)


if __name__ == "__main__":
    main()
