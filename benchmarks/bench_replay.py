"""Replay on virtual CPU devices: measured vs predicted time per sample and latency.

Usage: python benchmarks/bench_replay.py [--samples 24] [--repeats 3] [--devices cpu]

For every workload (a synthetic 12-node graph on 3 devices, the shipped workloads, and the shared
layer workloads when ../shared/workloads is present) the exact DP's placement (greedy for latency
instances) is replayed in pipelined mode (vs max-load) and single mode (vs the latency evaluator).
Prints one markdown row per replay: measured / predicted, the spread of the repeats (noise) and the
wall seconds; the load average is printed first, since other processes share the cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import exactplace as ep

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"


def synthetic() -> ep.Workload:
    rng = np.random.default_rng(0)
    nodes = [ep.Node(i, float(rng.uniform(2, 6)), float(rng.uniform(0.5, 2)), comm=float(rng.uniform(0.1, 0.5)))
             for i in range(12)]
    edges = [(i, i + 1) for i in range(11)] + [(0, 3), (4, 7), (6, 9)]
    return ep.Workload(ep.Graph(nodes, edges), ep.Cluster(accelerators=2, cpus=1), name="synthetic12")


def workloads() -> list[ep.Workload]:
    found = [synthetic()] + [ep.read_workload(ep.workload_path(n)) for n in ep.shipped_workloads()]
    if SHARED.is_dir():
        found += [ep.read_workload(p) for p in sorted((SHARED / "throughput").glob("layer_*.json"))]
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--devices", default="cpu")
    args = parser.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}; python {sys.version.split()[0]}")
    print("| workload | mode | devices | predicted | measured | ratio | noise | seconds |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for workload in workloads():
        placement = ep.solve(workload, method="auto")
        for mode in ("pipelined", "single"):
            start = time.perf_counter()
            result = ep.replay(workload, placement, devices=args.devices, mode=mode,
                               samples=args.samples if mode == "pipelined" else max(args.samples // 4, 3),
                               repeats=args.repeats)
            print(f"| {workload.name} | {mode} | {result.devices} | {result.predicted:.4g} | {result.measured:.4g} "
                  f"| {result.ratio:.3f} | {100 * result.noise:.1f}% | {time.perf_counter() - start:.1f} |",
                  flush=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
