"""Benchmark of the bounded search over ideals ("bb") against the plain DP and the contiguous IP.

Runs SALBP-2 instances of ``jordipereiragude/salbp2instances`` (read from a checkout or from a
bare git mirror of it; the data is not shipped), converted by :mod:`salbp` (m identical
accelerators, no CPU, no memory limit, no communication): ``--set otto``, the Otto et al. (2013)
``.alb`` files of folder ``otto/``, or ``--set scholl``, the 302 classical instances (``scholl/*.IN2``
with the station counts of ``generateScholl.sh``), checked against the optima of ``--optima CSV``
(``graph,m,optimum``; for scholl by default ``data/scholl_salbp2_optima.csv``, Scholl's table of 287
proven optima, and the bounds of the 15 it leaves open, ``data/scholl_salbp2_open.csv``).
Optionally the PipeDream profiles of ``--pipedream DIR`` (free
transfers, 4 and 8 accelerators): the shared ``*.graph.txt`` files or a checkout of
msr-fiddle/pipedream. Every method runs with the same time limit; a row says whether
it certified the instance (status OPTIMAL), its value, bound and seconds; the summary gives per
method the share certified, the median and worst seconds and, for bb, the states visited.

Usage: ``python benchmarks/bench_bounded.py [--set otto|scholl] [--data PATH] [--tasks 20,50,100]
[--instances 1-20] [--percents 10,15,...,60] [--graphs BUXEY,...] [--optima CSV]
[--methods bb,dp,mip] [--time-limit 60] [--pipedream DIR]`` (e.g. ``--pipedream
../shared/workloads/pipedream``).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from salbp import parse_alb, parse_in2, scholl_station_counts, workload_dict

from exactplace import Status, read_workload, solve
from exactplace.io.workload import workload_from_dict
from exactplace.methods.bounded import BoundedSearch
from exactplace.methods.registry import register, registered_methods

MIRROR = Path("/work/.mirror/jordipereiragude+salbp2instances/repo")
DATA = Path(__file__).resolve().parent / "data"
#: Known optima of the classical set, and the bounds of the 15 instances that table leaves open (their sources inside).
SCHOLL_OPTIMA, SCHOLL_OPEN = DATA / "scholl_salbp2_optima.csv", DATA / "scholl_salbp2_open.csv"
FOLDERS = {20: "small", 50: "medium", 100: "large", 1000: "verylarge"}


def data_text(data: Path, relative: str) -> str:
    """A file's text from a checkout or a bare git mirror (the classical files are Latin-1)."""
    if (data / relative).is_file():
        return (data / relative).read_bytes().decode("latin-1")
    return subprocess.run(["git", f"--git-dir={data}", "show", f"HEAD:{relative}"], check=True,
                          capture_output=True).stdout.decode("latin-1")


def otto_instances(args) -> list[tuple[str, int, dict]]:
    """(label, stations, workload dict) of the chosen Otto instances."""
    out = []
    for tasks in span(args.tasks):
        for instance in span(args.instances):
            alb = parse_alb(data_text(args.data, f"otto/{FOLDERS[tasks]}/instance_n={tasks}_{instance}.alb"))
            for percent in span(args.percents):
                m = tasks * percent // 100
                out.append((f"n{tasks}_{instance}", m, workload_dict(alb, m)))
    return out


def scholl_instances(args) -> list[tuple[str, int, dict]]:
    """(graph, stations, workload dict) of the classical set, optionally of some graphs only."""
    wanted = set(args.graphs.upper().split(",")) if args.graphs else None
    out, parsed = [], {}
    for graph, m in scholl_station_counts(data_text(args.data, "generateScholl.sh")):
        if wanted is not None and graph not in wanted:
            continue
        if graph not in parsed:
            parsed[graph] = parse_in2(data_text(args.data, f"scholl/{graph}.IN2"))
        out.append((graph, m, workload_dict(parsed[graph], m)))
    return out


def read_optima(path: Path | None) -> dict[tuple[str, int], tuple[float, float]]:
    """(graph, m) -> the range the optimum lies in: ``optimum`` twice, or an open instance's ``lb, ub``."""
    if path is None or not path.is_file():
        return {}
    with path.open() as f:
        return {(row["graph"].upper(), int(row["m"])): (float(row.get("optimum") or row["lb"]),
                                                         float(row.get("optimum") or row["ub"]))
                for row in csv.DictReader(f)}


def run(workload, method: str, limit: float, rel_gap: float) -> dict:
    clock = time.perf_counter()
    try:
        p = solve(workload, method=method, time_limit=limit, rel_gap=rel_gap)
    except Exception as error:  # a method that refuses the instance is a row too
        return {"status": type(error).__name__, "seconds": time.perf_counter() - clock}
    return {"status": p.status.value, "value": p.objective, "bound": p.bound, "seconds": time.perf_counter() - clock,
            "certified": p.status is Status.OPTIMAL, "states": p.info.get("states")}


def row_cells(row: dict) -> str:
    """Each method's status, value, bound and seconds, as table cells."""
    return " | ".join(f"{r['status']} | {r.get('value', '-')} | {r.get('bound', '-')} | {r['seconds']:.3f}"
                      for r in row.values())


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
        wrong = sum(1 for r in mine if r.get("certified") and r.get("known") is not None
                    and not r["known"][0] <= r["value"] <= r["known"][1])
        known = sum(1 for r in mine if r.get("certified") and r.get("known") is not None)
        print(f"{m}: {known} certified values checked against the known optima, {wrong} differ")
        states = [r["states"] for r in mine if r.get("states") is not None]
        median_states = int(statistics.median(states)) if states else "-"
        print(f"| {m} | {len(mine)} | {done} ({100 * done / len(mine):.1f}%) | {statistics.median(seconds):.3f} | "
              f"{max(seconds):.3f} | {median_states} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("otto", "scholl"), default="otto")
    parser.add_argument("--data", type=Path, default=MIRROR)
    parser.add_argument("--graphs", default="", help="scholl: only these graphs (file stems)")
    parser.add_argument("--optima", type=Path, default=None,
                        help="CSV graph,m,optimum of the known optima (scholl: the shipped table and open bounds)")
    parser.add_argument("--tasks", default="20,50,100")
    parser.add_argument("--instances", default="1-20")
    parser.add_argument("--percents", default="10,15,20,25,30,35,40,45,50,55,60")
    parser.add_argument("--methods", default="bb,dp,mip")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--rel-gap", type=float, default=0.0,
                        help="solve's rel_gap (default 0: certified means proven optimal, as the known optima are)")
    parser.add_argument("--pipedream", type=Path, default=None)
    args = parser.parse_args()
    if "bb" not in registered_methods():
        register(BoundedSearch)
    methods = args.methods.split(",")
    optima = read_optima(args.optima)
    if args.set == "scholl" and args.optima is None:
        optima = {**read_optima(SCHOLL_OPTIMA), **read_optima(SCHOLL_OPEN)}
    rows: list[dict] = []
    print("| instance | m | known | " + " | ".join(f"{m} status | {m} value | {m} bound | {m} s" for m in methods)
          + " |")
    instances = scholl_instances(args) if args.set == "scholl" else otto_instances(args)
    for label, m, fields in instances:
        workload = workload_from_dict(fields, name=f"{label}_m{m}")
        known = optima.get((label, m))
        row = {m_: {**run(workload, m_, args.time_limit, args.rel_gap), "known": known} for m_ in methods}
        rows.append(row)
        cells = row_cells(row)
        shown = "-" if known is None else f"{known[0]:g}" if known[0] == known[1] else f"[{known[0]:g}, {known[1]:g}]"
        print(f"| {label} | {m} | {shown} | {cells} |", flush=True)
    if args.pipedream is not None:
        profiles = {p.stem.removesuffix(".graph"): p for p in args.pipedream.glob("*.graph.txt")}
        profiles.update({p.parent.name: p for p in args.pipedream.glob("profiler/*/profiles/*/graph.txt")})
        for name, profile in sorted(profiles.items()):
            for k in (4, 8):
                workload = read_workload(profile, accelerators=k)
                row = {m_: run(workload, m_, args.time_limit, args.rel_gap) for m_ in methods}
                rows.append(row)
                print(f"| {name} | {k} | - | {row_cells(row)} |", flush=True)
    summarize(rows, methods)


if __name__ == "__main__":
    main()
