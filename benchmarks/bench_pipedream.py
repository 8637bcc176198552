"""PipeDream's optimizer and exactplace on the same PipeDream profiles (straight pipeline, free transfers).

Usage: ``python benchmarks/bench_pipedream.py [--pipedream DIR] [--accelerators 4 8] [--time-limit S]``

``DIR`` is a checkout of msr-fiddle/pipedream; its ``optimizer/optimizer_graph_hierarchical.py`` runs
under python3 (``graphviz`` is imported but unused by the optimizer: a stub is put on its path when the
package is missing) with ``--straight_pipeline`` and a bandwidth of 1e30 (free transfers). Without a
checkout only exactplace runs. PipeDream reports seconds (it divides the profile's ms by 1000); the
table shows both in ms. exactplace's value is recomputed by the independent evaluator.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from exactplace import evaluate, read_workload, solve

SHARED = Path(__file__).resolve().parents[2] / "shared" / "workloads" / "pipedream"


def pipedream(checkout: Path, profile: Path, k: int, limit: float) -> tuple[float | None, float, str]:
    """(time per stage in ms or None, seconds, status) from PipeDream's straight-pipeline optimizer."""
    env_path = []
    if importlib.util.find_spec("graphviz") is None:
        stub = Path(tempfile.mkdtemp()) / "graphviz.py"
        stub.write_text("class Digraph:\n    pass\n")
        env_path.append(str(stub.parent))
    command = [sys.executable, "optimizer_graph_hierarchical.py", "-f", str(profile.resolve()), "-n", str(k),
               "--straight_pipeline", "-b", "1e30"]
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
    args = parser.parse_args()
    profiles = {p.name.removesuffix(".graph.txt"): p for p in sorted(SHARED.glob("*.graph.txt"))}
    if args.pipedream:
        for p in sorted(args.pipedream.glob("profiler/*/profiles/*/graph.txt")):
            profiles[f"pd/{p.parent.name}"] = p
    if args.only:
        profiles = {k: v for k, v in profiles.items() if k in args.only or k.removeprefix("pd/") in args.only}
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


if __name__ == "__main__":
    main()
