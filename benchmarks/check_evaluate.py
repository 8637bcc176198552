"""Does ``exactplace evaluate`` accept every plan ``exactplace solve`` writes, with the same value?

For every shared workload (``../shared/workloads/throughput`` and ``latency``) and every method
of every objective it is solved for (throughput: the exact methods and the throughput
heuristics, ``mip`` contiguous and any split; makespan: the list schedulers; latency: greedy and
``mip`` with q = 1 and 2), the plan is written with ``solve --out`` and judged by ``evaluate
--json`` under the objective it was solved for (the plan's own). The bar: exit 0 and the same
objective within 1e-6 relative, every case. Runs without a placement (a method that refuses
the workload) are listed, not counted.

Usage::

    python benchmarks/check_evaluate.py [--time-limit 10] [--workloads a,b]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "workloads"

RUNS = {
    "throughput": [("dp", []), ("dpl", []), ("greedy", []), ("mip", []), ("mip", ["--option", "contiguous=false"]),
                   ("local-search", []), ("pipedream", []), ("metis", [])],
    "makespan": [("m-topo", []), ("m-etf", []), ("m-sct", []), ("fastt", []), ("celeritas", []),
                 ("celeritas-order-place", [])],
    "latency": [("greedy", []), ("mip", []), ("mip", ["--option", "q=2"])],
}


def exactplace(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exactplace", *args], capture_output=True, text=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", default="10")
    parser.add_argument("--workloads", default="")
    args = parser.parse_args()
    chosen = set(args.workloads.split(",")) - {""}
    cases = [(path, objective) for folder, objectives in (("throughput", ("throughput", "makespan")),
                                                          ("latency", ("latency",)))
             for path in sorted((SHARED / folder).glob("*.json")) for objective in objectives
             if not chosen or path.stem in chosen]
    plan = Path(tempfile.mkdtemp()) / "plan.json"
    agreed = disagreed = 0
    print("| workload | objective | method | solve | evaluate exit | solve value | evaluate value | agree |")
    print("|---|---|---|---|---|---|---|---|")
    for path, objective in cases:
        for method, options in RUNS[objective]:
            plan.unlink(missing_ok=True)
            solved = exactplace("solve", str(path), "--objective", objective, "--method", method, *options,
                                "--time-limit", args.time_limit, "--out", str(plan))
            name = method + ("".join(f" {o}" for o in options[1::2]))
            if not plan.exists():
                last = (solved.stderr.strip().splitlines() or solved.stdout.strip().splitlines() or ["?"])[-1]
                print(f"| {path.stem} | {objective} | {name} | no plan ({solved.returncode}): {last[:60]} | | | | |")
                continue
            value = json.loads(plan.read_text())["objective"]
            judged = exactplace("evaluate", str(path), str(plan), "--json")
            lines = judged.stdout.strip().splitlines()
            scored = json.loads(lines[-1])["objective"] if judged.returncode == 0 and lines else None
            ok = scored is not None and math.isclose(scored, value, rel_tol=1e-6, abs_tol=1e-12)
            agreed, disagreed = agreed + ok, disagreed + (not ok)
            shown = "-" if scored is None else f"{scored:.6g}"
            detail = "" if ok else " " + " / ".join((judged.stdout + judged.stderr).strip().splitlines()[:3])
            print(f"| {path.stem} | {objective} | {name} | {solved.returncode} | {judged.returncode} | {value:.6g} | "
                  f"{shown} | {'yes' if ok else 'NO' + detail} |", flush=True)
    print(f"\n{agreed} plans agree, {disagreed} disagree")
    sys.exit(1 if disagreed else 0)


if __name__ == "__main__":
    main()
