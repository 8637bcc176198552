"""Benchmark of the native max-load DP ("dp") and its linearization ("dpl").

Runs every method/instance pair in its own subprocess, so that the peak resident memory
(``ru_maxrss``) covers the C++ tables, and prints a Markdown table:

* every throughput workload of ``../shared/workloads`` (skipped when absent) with dp and dpl,
  next to the published ``reference_dp_seconds`` (speedup = reference / ours, dp only);
* ``synthetic_inception``: 40 Inception-style blocks (four parallel branches of 4, 4, 5 and
  5 operators between a split and a concat), 36,041 ideals, solved with dp;
* ``synthetic_ops10k``: a 10,000-operator graph (a backbone with skip connections, side
  branches and zero-time glue nodes), solved with dpl;
* with ``--pipedream DIR`` (a checkout of msr-fiddle/pipedream): its InceptionV3 training profile
  (326 units, 221,565 ideals), free transfers, 4 and 8 accelerators, solved with dp.

Usage: ``python benchmarks/bench_dp.py [--threads N] [--only NAME_SUBSTRING] [--repeat R] [--pipedream DIR]``.
Seconds are the wall time of ``exactplace.solve`` (preprocessing included), best of R runs;
"pairs" are the (ideal, sub-ideal) pairs the DP evaluated and "skipped" the ideals its cutoff
(DPL's load) skipped.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import time
from pathlib import Path

import numpy as np
from isolated import peak_mb, run_isolated

from exactplace import Cluster, Graph, Node, read_workload, solve

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"


def inception_graph(blocks: int = 40, branches: tuple[int, ...] = (4, 4, 5, 5), seed: int = 0) -> Graph:
    """A chain of Inception-style blocks: split -> parallel branches -> concat.

    The ideals are the empty set plus, per block, every combination of branch prefixes
    (prod(b + 1)) and the block's concat: ``1 + blocks * (prod(b + 1) + 1)`` (36,041 by default).
    """
    rng = np.random.default_rng(seed)
    nodes: list[Node] = []
    edges: list[tuple[int, int]] = []

    def add(kind: str) -> int:
        node_id = len(nodes)
        acc = float(rng.uniform(0.5, 2.0)) if kind == "op" else 0.1
        nodes.append(Node(node_id, cpu_time=8 * acc, acc_time=acc, memory=float(rng.uniform(1, 5)),
                          comm=float(rng.uniform(0.05, 0.4)), name=f"{kind}{node_id}"))
        return node_id

    previous = None
    for _ in range(blocks):
        split = add("split")
        if previous is not None:
            edges.append((previous, split))
        concat_inputs = []
        for length in branches:
            tail = split
            for _ in range(length):
                op = add("op")
                edges.append((tail, op))
                tail = op
            concat_inputs.append(tail)
        concat = add("concat")
        edges.extend((tail, concat) for tail in concat_inputs)
        previous = concat
    return Graph(nodes, edges)


def operator_graph(n: int = 10_000, seed: int = 0) -> Graph:
    """An ONNX-like operator graph: a backbone with skip connections, side branches and zero-time glue."""
    rng = np.random.default_rng(seed)
    nodes = []
    edges = set()
    for i in range(n):
        glue = rng.random() < 0.3  # reshapes, constants: no time
        acc = 0.0 if glue else float(rng.lognormal(-1.0, 1.0))
        nodes.append(Node(i, cpu_time=5 * acc, acc_time=acc, memory=float(rng.uniform(0, 4e6)),
                          comm=float(rng.uniform(0.01, 0.2))))
        if i == 0:
            continue
        edges.add((i - 1, i) if rng.random() < 0.85 else (max(0, i - 2), i))
        for _ in range(rng.integers(0, 3)):
            j = int(rng.integers(max(0, i - 30), i))
            edges.add((j, i))
    return Graph(nodes, sorted(edges))


def _synthetic(name: str) -> tuple[Graph, Cluster]:
    if name == "synthetic_inception":
        return inception_graph(), Cluster(accelerators=6, memory=math.inf, cpus=1)
    if name == "synthetic_ops10k":
        return operator_graph(), Cluster(accelerators=6, memory=4e9, cpus=1)
    raise ValueError(name)


def _child(spec: dict) -> None:
    """Run one solve and print its facts as JSON (in a fresh process, so ru_maxrss is its own)."""
    if spec["source"] == "shared":
        workload = read_workload(spec["path"])
        graph, cluster = workload.graph, workload.cluster
    elif spec["source"] == "pipedream":
        workload = read_workload(spec["path"], accelerators=spec["accelerators"])
        graph, cluster = workload.graph, workload.cluster
    else:
        graph, cluster = _synthetic(spec["name"])
    best = math.inf
    for _ in range(spec["repeat"]):
        start = time.perf_counter()
        placement = solve(graph, cluster, method=spec["method"], threads=spec["threads"])
        best = min(best, time.perf_counter() - start)
    print(json.dumps({
        "nodes": graph.n, "units": placement.info["units"], "ideals": placement.info["ideals"],
        "objective": placement.objective, "status": placement.status.value, "seconds": best,
        "peak_mb": peak_mb(),
        "pairs": placement.info.get("pairs"), "skipped": placement.info.get("skipped"),
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--pipedream", type=Path, default=None, help="checkout of msr-fiddle/pipedream")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(json.loads(args.child))
        return

    cases = []
    if (SHARED / "reference.csv").is_file():
        with open(SHARED / "reference.csv", newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row["objective"] != "throughput":
                    continue
                for method in ("dp", "dpl"):
                    cases.append(({"source": "shared", "path": str(SHARED / row["workload"]), "method": method},
                                  Path(row["workload"]).stem, row))
    else:
        print(f"(shared workloads not found at {SHARED}; synthetic cases only)")
    cases.append(({"source": "synthetic", "name": "synthetic_inception", "method": "dp"}, "synthetic_inception", {}))
    cases.append(({"source": "synthetic", "name": "synthetic_ops10k", "method": "dpl"}, "synthetic_ops10k", {}))
    if args.pipedream:
        profile = args.pipedream / "profiler/image_classification/profiles/inception_v3/graph.txt"
        for k in (4, 8):
            cases.append(({"source": "pipedream", "path": str(profile), "accelerators": k, "method": "dp"},
                          f"pd_inception_v3_k{k}", {}))

    print("| workload | method | nodes | units | ideals | pairs | skipped | objective | published | seconds | peak MB "
          "| reference_dp_seconds | speedup |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spec, name, row in cases:
        if args.only not in name:
            continue
        spec.update(threads=args.threads, repeat=args.repeat, name=spec.get("name", name))
        r = run_isolated(__file__, spec)
        published = row.get(spec["method"], "")
        reference = row.get("reference_dp_seconds", "")
        speedup = f"{float(reference) / r['seconds']:.0f}x" if reference and spec["method"] == "dp" else ""
        pairs, skipped = (r[key] if r[key] is not None else "" for key in ("pairs", "skipped"))
        print(f"| {name} | {spec['method']} | {r['nodes']} | {r['units']} | {r['ideals']} | {pairs} | {skipped} "
              f"| {r['objective']:.6f} "
              f"| {published} | {r['seconds']:.3f} | {r['peak_mb']:.0f} | {reference} | {speedup} |", flush=True)


if __name__ == "__main__":
    main()
