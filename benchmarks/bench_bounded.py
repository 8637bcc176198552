"""Benchmark of the bounded search over ideals ("bb") against the plain DP and the contiguous IP.

Runs the Otto et al. (2013) SALBP-2 instances (``.alb`` files of ``jordipereiragude/salbp2instances``,
folder ``otto/``, read from a path or from a bare git mirror of that repository; the data is
not shipped) converted by :mod:`salbp` (m identical accelerators, no CPU, no memory limit, no
communication), and optionally the PipeDream profiles of ``--pipedream DIR`` (free transfers,
4 and 8 accelerators). Every method runs with the same time limit; a row says whether it
certified the instance (status OPTIMAL), its value, bound and seconds; the summary gives per
method the share certified, the median and worst seconds and, for bb, the states visited.

Usage: ``python benchmarks/bench_bounded.py [--data PATH] [--tasks 20,50,100] [--instances 1-20]
[--percents 10,15,...,60] [--methods bb,dp,mip] [--time-limit 60] [--pipedream DIR]``
(e.g. ``--pipedream ../shared/workloads/pipedream``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from salbp import parse_alb, workload_dict

from exactplace import Status, read_workload, solve
from exactplace.io.workload import workload_from_dict
from exactplace.methods.bounded import BoundedSearch
from exactplace.methods.registry import register, registered_methods

MIRROR = Path("/work/.mirror/jordipereiragude+salbp2instances/repo")
FOLDERS = {20: "small", 50: "medium", 100: "large", 1000: "verylarge"}


def alb_text(data: Path, tasks: int, instance: int) -> str:
    """One Otto file's text, from a checkout (``otto/<size>/...``) or a bare git mirror."""
    relative = f"otto/{FOLDERS[tasks]}/instance_n={tasks}_{instance}.alb"
    if (data / relative).is_file():
        return (data / relative).read_text()
    return subprocess.run(["git", f"--git-dir={data}", "show", f"HEAD:{relative}"], check=True, capture_output=True,
                          text=True).stdout


def run(workload, method: str, limit: float) -> dict:
    clock = time.perf_counter()
    try:
        p = solve(workload, method=method, time_limit=limit)
    except Exception as error:  # a method that refuses the instance is a row too
        return {"status": type(error).__name__, "seconds": time.perf_counter() - clock}
    return {"status": p.status.value, "value": p.objective, "bound": p.bound, "seconds": time.perf_counter() - clock,
            "certified": p.status is Status.OPTIMAL, "states": p.info.get("states")}


def span(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        out.extend(range(int(low), int(high or low) + 1))
    return out


def summarize(rows: list[dict], methods: list[str]) -> None:
    print("\n| method | runs | certified | median s | worst s | median states |")
    print("|---|---|---|---|---|---|")
    for m in methods:
        mine = [r[m] for r in rows if m in r]
        if not mine:
            continue
        seconds = [r["seconds"] for r in mine]
        done = sum(1 for r in mine if r.get("certified"))
        states = [r["states"] for r in mine if r.get("states") is not None]
        median_states = int(statistics.median(states)) if states else "-"
        print(f"| {m} | {len(mine)} | {done} ({100 * done / len(mine):.1f}%) | {statistics.median(seconds):.3f} | "
              f"{max(seconds):.3f} | {median_states} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=MIRROR)
    parser.add_argument("--tasks", default="20,50,100")
    parser.add_argument("--instances", default="1-20")
    parser.add_argument("--percents", default="10,15,20,25,30,35,40,45,50,55,60")
    parser.add_argument("--methods", default="bb,dp,mip")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--pipedream", type=Path, default=None)
    args = parser.parse_args()
    if "bb" not in registered_methods():
        register(BoundedSearch)
    methods = args.methods.split(",")
    rows: list[dict] = []
    print("| instance | m | " + " | ".join(f"{m} status | {m} value | {m} bound | {m} s" for m in methods) + " |")
    for tasks in span(args.tasks):
        for instance in span(args.instances):
            alb = parse_alb(alb_text(args.data, tasks, instance))
            for percent in span(args.percents):
                m = tasks * percent // 100
                workload = workload_from_dict(workload_dict(alb, m), name=f"otto_{tasks}_{instance}")
                row = {m_: run(workload, m_, args.time_limit) for m_ in methods}
                rows.append(row)
                cells = " | ".join(f"{r['status']} | {r.get('value', '-')} | {r.get('bound', '-')} | "
                                   f"{r['seconds']:.3f}" for r in row.values())
                print(f"| n{tasks}_{instance} | {m} | {cells} |", flush=True)
    if args.pipedream is not None:
        for profile in sorted(args.pipedream.glob("*.graph.txt")):
            for k in (4, 8):
                workload = read_workload(profile, accelerators=k)
                row = {m_: run(workload, m_, args.time_limit) for m_ in methods}
                rows.append(row)
                cells = " | ".join(f"{r['status']} | {r.get('value', '-')} | {r.get('bound', '-')} | "
                                   f"{r['seconds']:.3f}" for r in row.values())
                print(f"| {profile.stem} | {k} | {cells} |", flush=True)
    summarize(rows, methods)


if __name__ == "__main__":
    main()
