"""Does every solver stop at its time limit, and on Ctrl-C, on the hard shared workloads?

For each solver (HiGHS, CP-SAT, SCIP, CBC), workload (op_bert6 and op_resnet50 by default) and
program (the latency program, q=1; the non-contiguous max-load IP), one ``exactplace solve
--time-limit L`` in a fresh process. The table has the wall time of the whole command (start-up,
reading, warm start, model build and the solver's child process included), its excess over the
limit (the bar: at most 2 s), the status, what stopped it and the value returned (the best
incumbent, or the warm start when the solver found nothing better). With ``--interrupt S`` the
same command runs again with a long limit and SIGINT goes to its process group after S seconds
(as a terminal sends it): the seconds it took to stop (the bar: 1 s) and its exit code.

Usage::

    python benchmarks/bench_solver_limits.py [--limit 10] [--interrupt 8] [--solvers highs,cpsat,scip,cbc]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "workloads"
PROGRAMS = {
    "latency": (SHARED / "latency", ["--objective", "latency"]),
    "any split": (SHARED / "throughput", ["--option", "contiguous=false"]),
}


def solve(workload: Path, options: list[str], solver: str, limit: float, plan: Path,
          interrupt_after: float | None = None) -> tuple[float, int, dict | None]:
    """Wall seconds (from the signal when ``interrupt_after``), exit code and the plan written."""
    plan.unlink(missing_ok=True)
    command = [sys.executable, "-m", "exactplace", "solve", str(workload), "--method", "mip", *options,
               "--option", f"solver={solver}", "--time-limit", str(limit), "--out", str(plan)]
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if interrupt_after is not None:
        time.sleep(interrupt_after)
        start = time.monotonic()
        os.killpg(process.pid, signal.SIGINT)
    code = process.wait()
    wall = time.monotonic() - start
    return wall, code, json.loads(plan.read_text()) if plan.exists() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=10.0)
    parser.add_argument("--interrupt", type=float, default=None, metavar="S")
    parser.add_argument("--solvers", default="highs,cpsat,scip,cbc")
    parser.add_argument("--workloads", default="op_bert6_inference,op_resnet50_inference")
    args = parser.parse_args()
    plan = Path(tempfile.mkdtemp()) / "plan.json"
    print(f"time limit {args.limit:g} s, load {os.getloadavg()[0]:.1f}")
    print("| workload | program | solver | wall (s) | over the limit (s) | status | stopped by | value |"
          + (" Ctrl-C: stop (s) | exit |" if args.interrupt else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|---|" if args.interrupt else ""))
    for name in args.workloads.split(","):
        for program, (folder, options) in PROGRAMS.items():
            for solver in args.solvers.split(","):
                wall, code, saved = solve(folder / f"{name}.json", options, solver, args.limit, plan)
                status = saved["status"] if saved else f"exit {code}"
                row = (f"| {name} | {program} | {solver} | {wall:.1f} | {wall - args.limit:+.1f} | {status} | "
                       f"{(saved or {}).get('limit') or '-'} | "
                       f"{saved['objective']:.6g} |" if saved else f"| {name} | {program} | {solver} | {wall:.1f} | "
                       f"{wall - args.limit:+.1f} | {status} | - | - |")
                if args.interrupt:
                    stop, code, _ = solve(folder / f"{name}.json", options, solver, 3600, plan, args.interrupt)
                    row += f" {stop:.2f} | {code} |"
                print(row, flush=True)


if __name__ == "__main__":
    main()
