"""PipeDream's optimizer and exactplace on the same PipeDream profiles (straight pipeline, free transfers).

Usage: ``python benchmarks/bench_pipedream.py [--pipedream DIR] [--accelerators 4 8] [--time-limit S]
[--replicated [--bandwidth B] [--methods dp mip]]``

``--replicated``: PipeDream's full optimizer (no ``--straight_pipeline``: stages replicated
data-parallel, ``-b B``, default 1e9 bytes/s, PipeDream's own default) against exactplace with
``replication=True`` on the same cost model: activation transfers free (PipeDream ignores them
without ``--activation_compression_ratio``) and a stage of parameter bytes ``P`` on ``r`` replicas
paying ``4 (r - 1) P / (r B)`` (the importer's ``sync_bandwidth=B``, bytes per second, priced in the
profile's milliseconds). PipeDream uses exactly ``k`` machines (no ``--use_fewer_machines``), exactplace at
most ``k``; neither checks memory (PipeDream without ``--use_memory_constraint``).

``DIR`` is a checkout of msr-fiddle/pipedream; its ``optimizer/optimizer_graph_hierarchical.py`` runs
under python3 (``graphviz`` is imported but unused by the optimizer: a stub is put on its path when the
package is missing) with ``--straight_pipeline`` and a bandwidth of 1e30 (free transfers). Without a
checkout only exactplace runs. PipeDream reports seconds (it divides the profile's ms by 1000); the
table shows both in ms. exactplace's value is recomputed by the independent evaluator.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from exactplace import evaluate, read_workload, solve
from exactplace.core.errors import ExactplaceError

SHARED = Path(__file__).resolve().parents[2] / "shared" / "workloads" / "pipedream"


def pipedream(checkout: Path, profile: Path, k: int, limit: float,
              bandwidth: float | None = None) -> tuple[float | None, float, str]:
    """(time per stage in ms or None, seconds, status) from PipeDream's straight-pipeline optimizer, or
    its full (replicating) optimizer at ``bandwidth`` bytes/s when one is given."""
    env_path = []
    if importlib.util.find_spec("graphviz") is None:
        stub = Path(tempfile.mkdtemp()) / "graphviz.py"
        stub.write_text("class Digraph:\n    pass\n")
        env_path.append(str(stub.parent))
    command = [sys.executable, "optimizer_graph_hierarchical.py", "-f", str(profile.resolve()), "-n", str(k)]
    command += ["--straight_pipeline", "-b", "1e30"] if bandwidth is None else ["-b", repr(float(bandwidth))]
    start = time.perf_counter()
    try:
        out = subprocess.run(command, cwd=checkout / "optimizer", capture_output=True, text=True, timeout=limit,
                             env={"PYTHONPATH": ":".join(env_path), "PATH": "/usr/bin:/bin"}).stdout
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start, f"timeout {limit:g}s"
    seconds = time.perf_counter() - start
    found = re.search(r"Time per stage in pipeline: ([0-9.eE+-]+)", out)
    return (float(found.group(1)) * 1000, seconds, "ok") if found else (None, seconds, "failed")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pipedream", type=Path, default=None, help="checkout of msr-fiddle/pipedream")
    parser.add_argument("--accelerators", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--only", nargs="*", default=None, help="profile names to run")
    parser.add_argument("--replicated", action="store_true", help="PipeDream's full optimizer vs replication=True")
    parser.add_argument("--bandwidth", type=float, default=1e9, help="--replicated: all-reduce bandwidth, bytes/s")
    parser.add_argument("--methods", nargs="+", default=["dp"], help="--replicated: exactplace methods to run")
    args = parser.parse_args()
    profiles = {p.name.removesuffix(".graph.txt"): p for p in sorted(SHARED.glob("*.graph.txt"))}
    if args.pipedream:
        for p in sorted(args.pipedream.glob("profiler/*/profiles/*/graph.txt")):
            profiles[f"pd/{p.parent.name}"] = p
    if args.only:
        profiles = {k: v for k, v in profiles.items() if k in args.only or k.removeprefix("pd/") in args.only}
    if args.replicated:
        replicated(args, profiles)
        return
    print(f"{'profile':<18} {'K':>2} {'nodes':>5} {'exactplace ms':>14} {'method':>6} {'status':>8} {'gap':>8} "
          f"{'s':>7} {'PipeDream ms':>13} {'s':>7} {'ratio':>7}")
    for name, path in profiles.items():
        for k in args.accelerators:
            w = read_workload(path, accelerators=k)
            start = time.perf_counter()
            plan = solve(w, method="auto", time_limit=args.time_limit)
            ours_s = time.perf_counter() - start
            ours = evaluate(w.graph, w.cluster, plan.device, "throughput") if plan.device is not None else None
            theirs, theirs_s, status = (pipedream(args.pipedream, path, k, args.time_limit) if args.pipedream
                                        else (None, 0.0, "absent"))
            ratio = f"{ours / theirs:.4f}" if ours is not None and theirs else "-"
            ours_text = f"{ours:.3f}" if ours is not None else "-"
            theirs_text = f"{theirs:.3f}" if theirs is not None else status
            gap = f"{plan.gap:.1e}" if plan.gap is not None else "-"
            print(f"{name:<18} {k:>2} {w.graph.n:>5} {ours_text:>14} {plan.method:>6} {plan.status:>8} {gap:>8} "
                  f"{ours_s:>7.2f} {theirs_text:>13} {theirs_s:>7.2f} {ratio:>7}", flush=True)


def replicated(args: argparse.Namespace, profiles: dict[str, Path]) -> None:
    """The ``--replicated`` table: one row per profile, K and exactplace method."""
    print(f"{'profile':<18} {'K':>2} {'nodes':>5} {'method':>6} {'exactplace ms':>14} {'status':>8} {'replicas':>18} "
          f"{'s':>7} {'PipeDream ms':>13} {'s':>7} {'ratio':>7}")
    for name, path in profiles.items():
        for k in args.accelerators:
            w = read_workload(path, accelerators=k, bandwidth=math.inf, sync_bandwidth=args.bandwidth)
            theirs, theirs_s, status = (pipedream(args.pipedream, path, k, args.time_limit, args.bandwidth)
                                        if args.pipedream else (None, 0.0, "absent"))
            for method in args.methods:
                start = time.perf_counter()
                try:
                    plan = solve(w, method=method, time_limit=args.time_limit, replication=True)
                except ExactplaceError as error:
                    print(f"{name:<18} {k:>2} {w.graph.n:>5} {method:>6} {type(error).__name__}", flush=True)
                    continue
                ours_s = time.perf_counter() - start
                ours = (evaluate(w.graph, w.cluster, plan.device, "throughput", replicas=plan.replicas)
                        if plan.device is not None else None)
                used = sorted(set(plan.device[plan.device < w.cluster.accelerators].tolist())) if ours else []
                stages = "-".join(str(int(plan.replicas[a])) for a in used) if plan.replicas is not None else "-"
                ratio = f"{ours / theirs:.4f}" if ours is not None and theirs else "-"
                ours_text = f"{ours:.3f}" if ours is not None else "-"
                theirs_text = f"{theirs:.3f}" if theirs is not None else status
                print(f"{name:<18} {k:>2} {w.graph.n:>5} {method:>6} {ours_text:>14} {plan.status:>8} {stages:>18} "
                      f"{ours_s:>7.2f} {theirs_text:>13} {theirs_s:>7.2f} {ratio:>7}", flush=True)


if __name__ == "__main__":
    main()
