"""Benchmark of the max-load IP (``method="mip"``) on every shared throughput workload and solver.

For each workload, mode and solver it prints one Markdown row: the evaluator's value, the
solver's bound and gap, the status, the seconds to reach a 1% gap and to reach the optimum
(from the method's trace, timed from solve()'s start; solvers without progress callbacks only have their end time),
the total wall time, and the published reference beside it (``dp`` for the contiguous IP,
``ip_noncontiguous`` for the non-contiguous one, and the published Gurobi seconds with the
ratio ours / theirs). The machine's load average is printed with every row: other jobs
share the two cores.

Modes: ``contiguous`` (no warm start), ``contiguous-warm`` (the default start: DP, DPL or
greedy), ``noncontiguous`` (default start). ``--build`` instead times building the
contiguous IP in our sparse form against feeding the same rows to OR-Tools MathOpt.

Usage::

    python benchmarks/bench_mip.py [--solvers cpsat,highs,scip,cbc] [--modes contiguous,...]
                                   [--time-limit S] [--rel-gap G] [--only SUBSTRING] [--build]
                                   [--option NAME=VALUE ...] [--inputs FILE_OR_DIR ...]

``--inputs`` runs other throughput workload files (e.g. the reference repository's held-out
``throughput-inputs``) instead of the shared ones; with no published value, the published columns
stay empty.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time
from pathlib import Path

from exactplace import read_workload, solve
from exactplace.methods.front_door import NOISE

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def reference() -> dict[str, dict[str, str]]:
    with open(SHARED / "reference.csv", newline="") as f:
        return {row["workload"]: row for row in csv.DictReader(f) if row["objective"] == "throughput"}


def time_to(trace: tuple, predicate: object) -> float | None:
    for point in trace:
        if point.incumbent is not None and predicate(point):
            return point.seconds
    return None


def run(path: Path, ref: dict[str, str] | None, mode: str, solver: str, time_limit: float, rel_gap: float,
        options: dict[str, object]) -> str:
    w = read_workload(path)
    contiguous = mode != "noncontiguous"
    warm = None if mode == "contiguous" else "auto"
    start = time.perf_counter()
    p = solve(w, method="mip", solver=solver, contiguous=contiguous, warm_start=warm, time_limit=time_limit,
              rel_gap=rel_gap, **options)
    wall = time.perf_counter() - start
    # What the relay's phases gave (CP-SAT's leg, the set bound, the polish beside them), below the row, to stderr.
    phases = {key: p.info[key] for key in ("relay", "set_bound", "beside_solver", "certified_by") if key in p.info}
    if phases:
        print(f"# {path.stem} {solver}: {phases}", file=sys.stderr, flush=True)
    published = math.nan if ref is None else float(ref["dp"] if contiguous else ref["ip_noncontiguous"])
    gurobi = "" if ref is None else ref["ip_contiguous_seconds" if contiguous else "ip_noncontiguous_seconds"]
    # The trace is timed from solve()'s start: warm start, packing bound and polish included.
    # (With the front door's tolerance: a bound proven at exactly U (1 - rel_gap) closes the gap.)
    def within(gap: float) -> object:
        return lambda q: (q.bound is not None
                          and q.incumbent - q.bound <= gap * q.incumbent + NOISE * max(1.0, q.incumbent))

    t1, t4 = time_to(p.trace, within(0.01)), time_to(p.trace, within(1e-4))
    topt = time_to(p.trace, lambda q: q.incumbent <= published * (1 + 5e-5))
    fmt = lambda t: "-" if t is None else f"{t:.2f}"  # noqa: E731
    gap = "-" if p.gap is None else f"{100 * p.gap:.3f}%"
    bound = "-" if p.bound is None else f"{p.bound:.4f}"
    ratio = ""
    if p.status.value == "optimal" and gurobi and not gurobi.startswith(">"):
        ratio = f"{wall / max(float(gurobi), 1e-9):.2f}"
    value = "-" if p.objective is None else f"{p.objective:.4f}"
    shown = "-" if math.isnan(published) else f"{published:.4f}"
    return (f"| {path.stem} | {w.graph.n} | {mode} | {solver} | {value} | {bound} | {gap} | "
            f"{p.status.value}{'/' + p.limit.value if p.limit else ''} | {fmt(t1)} | {fmt(t4)} | {fmt(topt)} | "
            f"{wall:.2f} | "
            f"{shown} | {gurobi} | {ratio} | {p.info.get('warm_start', 'none')} | {load()} |")


def build_times(only: str) -> None:
    """Build the contiguous IP in our form, and the same rows through MathOpt's Python API."""
    from exactplace.formulations.model import Kind
    from exactplace.formulations.throughput import contiguous_ip
    from ortools.math_opt.python import mathopt

    from exactplace.core.problem import Problem
    print("| workload | variables | rows | nonzeros | ours (s) | MathOpt (s) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for path in sorted((SHARED / "throughput").glob("*.json")):
        if only not in path.stem:
            continue
        w = read_workload(path)
        problem = Problem(w.graph, w.cluster, "throughput")
        contraction = problem.contraction
        start = time.perf_counter()
        ip = contiguous_ip(w.graph, w.cluster, contraction)
        model = ip.model
        indptr, indices, data = model.csr()
        ours = time.perf_counter() - start
        start = time.perf_counter()
        mo = mathopt.Model()
        kind, lb, ub = model.kind, model.lb, model.ub
        xs = [mo.add_variable(lb=a, ub=b, is_integer=bool(k == Kind.INTEGER))
              for a, b, k in zip(lb.tolist(), ub.tolist(), kind.tolist())]
        cols, vals = indices.tolist(), data.tolist()
        for r, (lo, hi) in enumerate(zip(model.row_lb.tolist(), model.row_ub.tolist())):
            expr = mathopt.LinearSum(vals[i] * xs[cols[i]] for i in range(indptr[r], indptr[r + 1]))
            mo.add_linear_constraint(lb=lo, ub=hi, expr=expr)
        mo.minimize(mathopt.LinearSum(float(c) * xs[i] for i, c in enumerate(model.objective.tolist()) if c))
        theirs = time.perf_counter() - start
        print(f"| {path.stem} | {model.num_vars} | {model.num_rows} | {len(data)} | {ours:.4f} | {theirs:.4f} | "
              f"{theirs / ours:.0f}x |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solvers", default="cpsat,highs,scip,cbc")
    parser.add_argument("--modes", default="contiguous,contiguous-warm,noncontiguous")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--rel-gap", type=float, default=0.01)
    parser.add_argument("--only", default="", help="comma-separated substrings of workload names")
    parser.add_argument("--build", action="store_true")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                        help="a method option for every solve (repeatable; true/false for booleans), "
                             "e.g. --option polish=false")
    parser.add_argument("--inputs", type=Path, nargs="+", default=None,
                        help="workload files or folders of them to run instead of the shared ones")
    args = parser.parse_args()
    if not (SHARED / "reference.csv").exists():
        sys.exit(f"no shared workloads at {SHARED}")
    if args.build:
        build_times(args.only)
        return
    options = {name: {"true": True, "false": False}.get(value.lower(), value)
               for name, value in (item.split("=", 1) for item in args.option)}
    refs = reference()
    print(f"time limit {args.time_limit:g} s, rel_gap {args.rel_gap:g}; seconds to 1% / to the published value "
          "include warm start and build")
    print("| workload | nodes | mode | solver | value | bound | gap | status | to 1% (s) | to 0.01% (s) | "
          "to published (s) | wall (s) | published | Gurobi (s) | ratio | start | load |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    paths = sorted((SHARED / "throughput").glob("*.json")) if args.inputs is None else sorted(
        file for given in args.inputs for file in (given.rglob("*.json") if given.is_dir() else [given]))
    for path in paths:
        if not any(part in path.stem for part in args.only.split(",")):
            continue
        ref = refs.get(f"throughput/{path.name}") if args.inputs is None else None
        for mode in args.modes.split(","):
            for solver in args.solvers.split(","):
                try:
                    print(run(path, ref, mode, solver, args.time_limit, args.rel_gap, options), flush=True)
                except Exception as error:  # one failing solver must not hide the other rows
                    print(f"| {path.stem} | | {mode} | {solver} | error: {error} |", flush=True)
                    if not math.isfinite(args.time_limit):
                        raise


if __name__ == "__main__":
    main()
