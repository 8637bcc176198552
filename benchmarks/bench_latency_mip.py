"""Benchmark of the latency program (``solve(objective="latency", method="mip")``) on CP-SAT.

For every latency workload of ``../shared/workloads`` (or those matching ``--only``), one
solve per ``q`` with the longest time limit asked for; the value and bound at each shorter
checkpoint are read off the solve's trace (incumbent and bound at that second, measured from
the start of the solve, warm start included), so a 600 s run also reports 1, 10 and 60 s.
Printed next to the published ``ip_contiguous`` (Gurobi 8.1, 4 cores, up to an hour),
``greedy`` and ``maxload_dp_latency`` values, with ``ratio = ours / ip_contiguous`` and the
machine load (``uptime``) at the start of each solve: the machine is shared.

Usage::

    python benchmarks/bench_latency_mip.py [--limit 60] [--checkpoints 1,10,60] [--q 1]
                                           [--only NAME] [--threads N] [--json OUT] [--solver NAME]
                                           [--no-warm-start] [--path-bound on|off]

``by`` is the solver behind the result (``path_bound``: the path DP's bound certified the warm
start, no solver ran; ``--path-bound off`` runs the solver anyway). ``--q 2 --chain`` starts
each q=2 solve from the q=1 result of the same run (a contiguous placement is a 2-subgraph
placement), so the q=2 value is at most the contiguous one.

``--base REV`` runs every solve twice, alternating, in fresh processes: once on revision ``REV``
(:mod:`baseline`: a built worktree of it) and once on this checkout, and prints the final
value, bound and wall time of both with the ratio this / base (same machine load for both).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from pathlib import Path

from exactplace import read_workload, solve

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"


def load_average() -> float:
    return os.getloadavg()[0]


def at(trace, seconds: float) -> tuple[float | None, float | None]:
    """Incumbent and bound of the last trace point at or before ``seconds``."""
    incumbent = bound = None
    for point in trace:
        if point.seconds > seconds:
            break
        incumbent, bound = point.incumbent, point.bound
    return incumbent, bound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=float, default=60.0)
    parser.add_argument("--checkpoints", default="1,10,60")
    parser.add_argument("--q", default="1", help="comma-separated q values")
    parser.add_argument("--chain", action="store_true", help="start q>1 from the q=1 result")
    parser.add_argument("--only", default="")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", default=None, help="append one JSON line per solve to this file")
    parser.add_argument("--solver", default="cpsat")
    parser.add_argument("--path-bound", choices=["on", "off"], default="on",
                        help="q=1: the path DP's bound (off: the solver's own bound only)")
    parser.add_argument("--no-warm-start", dest="warm_start", action="store_const", const=None, default="auto",
                        help="start from nothing (warm_start=None)")
    parser.add_argument("--base", default=None, metavar="REV", help="also run revision REV, side by side")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # one solve, one JSON line (for --base)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_solve(args, args.one, int(args.q))))
        return
    if args.base:
        side_by_side(args)
        return
    if not SHARED.exists():
        sys.exit(f"no shared workloads at {SHARED}")
    reference = {row["workload"]: row for row in csv.DictReader(open(SHARED / "reference.csv"))}
    checkpoints = [float(c) for c in args.checkpoints.split(",") if c]
    qs = [int(q) for q in args.q.split(",")]
    print(f"solver {args.solver}, warm start {args.warm_start or 'none'}")
    print("| workload | q | load | t (s) | value | bound | gap | ip_contiguous | greedy | maxload_dp_latency | "
          "ratio to ip | by |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted((SHARED / "latency").glob("*.json")):
        name = path.stem
        if args.only and args.only not in name:
            continue
        row = reference[f"latency/{path.name}"]
        w = read_workload(path)
        previous = None
        for q in qs:
            load = load_average()
            options = {"threads": args.threads} if args.threads else {}
            if args.path_bound == "off":
                options["path_bound"] = False
            warm = previous if (args.chain and q > 1 and previous is not None) else args.warm_start
            clock = time.monotonic()
            p = solve(w, objective="latency", method="mip", solver=args.solver, time_limit=args.limit, q=q,
                      warm_start=warm, **options)
            wall = time.monotonic() - clock
            if q == 1:
                previous = p
            published = float(row["ip_contiguous"])
            points = [(c, *at(p.trace, c)) for c in checkpoints if c < args.limit]
            points.append((round(wall, 2), p.objective, p.bound))
            for seconds, value, bound in points:
                if value is None:  # nothing reported yet (solvers without progress callbacks report at the end)
                    print(f"| {name} | {q} | {load:.1f} | {seconds:g} | - | - | - | {published} | | | | |")
                    continue
                shown = "-" if bound is None else f"{bound:.3f}"
                gap = "-" if bound is None or not value else f"{(value - bound) / value:.1%}"
                print(f"| {name} | {q} | {load:.1f} | {seconds:g} | {value:.3f} | {shown} | {gap} | {published} | "
                      f"{row['greedy']} | {row['maxload_dp_latency']} | {value / published:.4f} | {p.solver} |")
            sys.stdout.flush()
            if args.json:
                with open(args.json, "a") as out:
                    out.write(json.dumps({
                        "workload": name, "q": q, "solver": args.solver, "warm": args.warm_start or "none",
                        "limit": args.limit, "load": load, "wall": wall,
                        "value": p.objective, "bound": p.bound, "status": p.status.value,
                        "warm_start": p.info.get("warm_start"), "candidates": p.info.get("warm_start_candidates"),
                        "trace": [(t.seconds, t.incumbent, t.bound) for t in p.trace],
                    }) + "\n")


def one_solve(args: argparse.Namespace, name: str, q: int) -> dict:
    """One solve of workload ``name`` as the table's rows describe it (for ``--base``)."""
    w = read_workload(SHARED / "latency" / f"{name}.json")
    options = {"threads": args.threads} if args.threads else {}
    if args.path_bound == "off":
        options["path_bound"] = False
    clock = time.monotonic()
    p = solve(w, objective="latency", method="mip", solver=args.solver, time_limit=args.limit, q=q,
              warm_start=args.warm_start, **options)
    return {"value": p.objective, "bound": p.bound, "wall": time.monotonic() - clock, "by": p.solver,
            "status": p.status.value}


def side_by_side(args: argparse.Namespace) -> None:
    """Every (workload, q) on ``--base`` and on this checkout, alternating; one table row each."""
    from baseline import checkout, run

    tree = checkout(args.base)
    script = str(Path(__file__).resolve())
    passed = ["--limit", str(args.limit), "--solver", args.solver, "--path-bound", args.path_bound]
    passed += ["--threads", str(args.threads)] if args.threads else []
    passed += ["--no-warm-start"] if args.warm_start is None else []
    print(f"solver {args.solver}, limit {args.limit:g} s; base {args.base}")
    print("| workload | q | load | base value | this value | this / base | base bound | this bound | "
          "base s | this s | base by | this by |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted((SHARED / "latency").glob("*.json")):
        if args.only and args.only not in path.stem:
            continue
        for q in (int(q) for q in args.q.split(",")):
            load = load_average()
            results = []
            for where in (tree, None):
                done = run(where, [script, *passed, "--q", str(q), "--one", path.stem], timeout=args.limit * 4 + 120)
                lines = done.stdout.strip().splitlines()
                results.append(json.loads(lines[-1]) if done.returncode == 0 and lines else
                               {"value": None, "bound": None, "wall": None, "by": f"failed: {done.stderr[-200:]}"})
            base, this = results

            def number(x: float | None, digits: int = 3) -> str:
                return "-" if x is None else f"{x:.{digits}f}"

            ratio = "-" if not base["value"] or this["value"] is None else f"{this['value'] / base['value']:.4f}"
            print(f"| {path.stem} | {q} | {load:.1f} | {number(base['value'])} | {number(this['value'])} | {ratio} | "
                  f"{number(base['bound'])} | {number(this['bound'])} | {number(base['wall'], 1)} | "
                  f"{number(this['wall'], 1)} | {base['by']} | {this['by']} |", flush=True)
            if args.json:
                with open(args.json, "a") as out:
                    out.write(json.dumps({"workload": path.stem, "q": q, "solver": args.solver, "limit": args.limit,
                                          "load": load, "base": base, "this": this}) + "\n")


if __name__ == "__main__":
    main()
