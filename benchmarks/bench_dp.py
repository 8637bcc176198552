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
  (326 units, 221,565 ideals), free transfers, 4 and 8 accelerators, solved with dp;
* with ``--reference-repo DIR`` (a checkout of msr-fiddle/dnn-partitioning, the paper's code): its
  throughput inputs that ``shared/`` lacks (by content: the InceptionV3 layer graphs, three BERT
  operator graphs), and the reference DP itself, compiled from ``throughput-dp/dp.cpp`` with
  ``g++ -O3 -march=native`` and run on every dp case right after ours (same machine load), with
  its seconds, peak memory and value beside ours; the speedup is then measured, not published.

Usage: ``python benchmarks/bench_dp.py [--threads N] [--only NAME_SUBSTRING] [--repeat R] [--pipedream DIR]
[--reference-repo DIR [--reference-timeout S]]``.
Seconds are the wall time of ``exactplace.solve`` (preprocessing included), best of R runs;
"pairs" are the (ideal, sub-ideal) pairs the DP evaluated and "skipped" the ideals its cutoff
(DPL's load) skipped.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import re
import resource
import subprocess
import tempfile
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


def reference_dp(repo: Path) -> Path:
    """The reference DP (``throughput-dp/dp.cpp`` of ``repo``) compiled once into the temporary directory."""
    source = repo / "throughput-dp" / "dp.cpp"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    binary = Path(tempfile.gettempdir()) / f"reference-dp-{digest}"
    if not binary.exists():
        subprocess.run(["g++", "-O3", "-march=native", "-std=c++17", "-o", str(binary), source.name],
                       cwd=source.parent, check=True)
    return binary


def _reference_child(spec: dict) -> None:
    """Run the reference DP binary on one JSON input (best of ``repeat``) and print its facts as JSON."""
    best, objective = math.inf, None
    for _ in range(spec["repeat"]):
        with open(spec["path"], "rb") as stdin:
            start = time.perf_counter()
            try:
                out = subprocess.run([spec["binary"]], stdin=stdin, capture_output=True, text=True, check=True,
                                     timeout=spec["timeout"])
            except subprocess.TimeoutExpired:
                break  # best stays inf: "over the timeout"
            best = min(best, time.perf_counter() - start)
        objective = float(re.findall(r"objective = (\S+)", out.stderr)[-1])
    print(json.dumps({"seconds": best if best < math.inf else None, "objective": objective,
                      "peak_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))


def held_out_inputs(repo: Path) -> list[Path]:
    """The reference repository's throughput inputs whose content ``shared/`` does not have."""
    def digest(path: Path) -> str:
        return hashlib.md5(path.read_bytes()).hexdigest()

    shared = {digest(p) for p in (SHARED / "throughput").glob("*.json")}
    return sorted(p for p in (repo / "throughput-inputs").glob("*/*.json") if digest(p) not in shared)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", default="")
    parser.add_argument("--pipedream", type=Path, default=None, help="checkout of msr-fiddle/pipedream")
    parser.add_argument("--reference-repo", type=Path, default=None,
                        help="checkout of msr-fiddle/dnn-partitioning: its held-out inputs and its DP beside ours")
    parser.add_argument("--reference-timeout", type=float, default=120.0,
                        help="seconds after which a reference DP run is stopped (InceptionV3 takes > 600 s, 9 GB)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        spec = json.loads(args.child)
        (_reference_child if spec["source"] == "reference" else _child)(spec)
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
    binary = None
    if args.reference_repo:
        binary = reference_dp(args.reference_repo)
        for path in held_out_inputs(args.reference_repo):
            kind = "layer" if path.parent.name == "LayerGraphs" else "op"
            for method in ("dp", "dpl"):
                cases.append(({"source": "shared", "path": str(path), "method": method},
                              f"{kind}_{path.stem.lower()} (held out)", {}))
    if args.pipedream:
        profile = args.pipedream / "profiler/image_classification/profiles/inception_v3/graph.txt"
        for k in (4, 8):
            cases.append(({"source": "pipedream", "path": str(profile), "accelerators": k, "method": "dp"},
                          f"pd_inception_v3_k{k}", {}))

    print("| workload | method | nodes | units | ideals | pairs | skipped | objective | published | seconds | peak MB "
          "| reference_dp_seconds (published) | reference: objective / seconds / peak MB (this run) | speedup |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spec, name, row in cases:
        if args.only not in name:
            continue
        spec.update(threads=args.threads, repeat=args.repeat, name=spec.get("name", name))
        r = run_isolated(__file__, spec)
        published = row.get(spec["method"], "")
        reference = row.get("reference_dp_seconds", "")
        measured, speedup = "", ""
        if binary is not None and spec["source"] == "shared" and spec["method"] == "dp":
            ref = run_isolated(__file__, {"source": "reference", "binary": str(binary), "path": spec["path"],
                                          "repeat": args.repeat, "timeout": args.reference_timeout})
            if ref["seconds"] is None:
                measured = f"- / > {args.reference_timeout:g} (stopped) / {ref['peak_mb']:.0f}"
                speedup = f"> {args.reference_timeout / r['seconds']:.0f}x"
            else:
                if not math.isclose(ref["objective"], r["objective"], rel_tol=1e-5):
                    raise SystemExit(f"{name}: the reference DP's {ref['objective']} differs from ours, "
                                     f"{r['objective']}")
                measured = f"{ref['objective']:.6g} / {ref['seconds']:.3f} / {ref['peak_mb']:.0f}"
                speedup = f"{ref['seconds'] / r['seconds']:.0f}x"
        elif reference and spec["method"] == "dp":
            speedup = f"{float(reference) / r['seconds']:.0f}x (published)"
        pairs, skipped = (r[key] if r[key] is not None else "" for key in ("pairs", "skipped"))
        print(f"| {name} | {spec['method']} | {r['nodes']} | {r['units']} | {r['ideals']} | {pairs} | {skipped} "
              f"| {r['objective']:.6f} | {published} | {r['seconds']:.3f} | {r['peak_mb']:.0f} | {reference} "
              f"| {measured} | {speedup} |", flush=True)


if __name__ == "__main__":
    main()
