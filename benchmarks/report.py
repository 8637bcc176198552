"""Regenerate ``benchmarks/RESULTS.md``: every method on every shipped and shared workload, on the current code.

Each solve is one ``exactplace.solve(...)`` call with an explicit time limit, run in a forked process of its own
(its peak resident memory is its own; one still running well past its limit is killed and reported so). Every
value printed is the referee's (``Placement.objective``), never a solver's number. Baselines: the paper's published
values (``../shared/workloads/reference.csv``) and this run's DP.

Usage::

    python benchmarks/report.py [--quick] [--out PATH] [--shared DIR]

``--quick``: the shipped workloads and two latency instances with short limits (about two minutes), for
development; the default output is ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import dataclasses
import datetime
import importlib
import multiprocessing
import os
import platform
import resource
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import exactplace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared" / "workloads"
#: Modules the solves import on first use: imported once here, before any fork, so that no solve's seconds
#: include them (importing starts no thread, so forking stays safe).
PRELOAD = ("highspy", "ortools.sat.python.cp_model", "pymetis", "networkx", "scipy.optimize",
           "exactplace.native", "exactplace.solvers", "exactplace.heuristics", "exactplace.bounds")


@dataclass(frozen=True)
class ReportSettings:
    """Per-solve time limits (seconds) and which instances run."""

    dp_limit: float = 60.0
    mip_contiguous_limit: float = 20.0
    mip_any_limit: float = 30.0
    latency_limit: float = 20.0
    heuristic_limit: float = 10.0
    #: A solve still running this long after its limit (plus the limit again) is killed.
    grace: float = 30.0
    #: None: every instance; else only these names (throughput and latency alike).
    only: tuple[str, ...] | None = None


DEFAULT_REPORT = ReportSettings()
QUICK_REPORT = ReportSettings(dp_limit=10.0, mip_contiguous_limit=5.0, mip_any_limit=5.0, latency_limit=5.0,
                              heuristic_limit=5.0, grace=10.0,
                              only=("layer_bert24_inference", "layer_bert24_training", "op_bert3_inference"))


@dataclass(frozen=True)
class Instance:
    """One workload file: its name, objective family, whether the package ships it, its published values."""

    name: str
    path: Path
    kind: str
    shipped: bool
    published: dict[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class Table:
    """One method and objective on one family of instances, with the baselines shown beside it.

    A baseline is ``("paper", column, label)`` (a published value) or ``("ours", table key, label)`` (this run's
    value of another table on the same instance).
    """

    key: str
    title: str
    kind: str
    objective: str
    method: str
    limit: str
    options: tuple[tuple[str, Any], ...] = ()
    baselines: tuple[tuple[str, str, str], ...] = ()
    note: str = ""


PAPER_DP = ("paper", "dp", "paper DP")
OUR_DP = ("ours", "dp", "DP")
MAKESPAN_METHODS = ("m-topo", "m-etf", "m-sct", "fastt", "celeritas", "celeritas-order-place")

TABLES = (
    Table("dp", "Throughput: exact DP (`dp`)", "throughput", "throughput", "dp", "dp_limit",
          baselines=(PAPER_DP,), note="Optimal over chain splits (the DP's space, paper §5.1.1)."),
    Table("dpl", "Throughput: DPL (`dpl`)", "throughput", "throughput", "dpl", "dp_limit",
          baselines=(("paper", "dpl", "paper DPL"), OUR_DP),
          note="The DP over the prefixes of one topological order: a heuristic, at least the DP's value."),
    Table("bb", "Throughput: bounded search over ideals (`bb`)", "throughput", "throughput", "bb", "dp_limit",
          baselines=(PAPER_DP, OUR_DP),
          note="The DP's space, searched depth-first on a threshold with bounds and memoized ideals."),
    Table("mip-contiguous", "Throughput: contiguous MIP (`mip`, `contiguous=True`)", "throughput", "throughput",
          "mip", "mip_contiguous_limit", (("contiguous", True),),
          (("paper", "ip_contiguous", "paper IP"), OUR_DP),
          "The DP's space again, by a MIP/CP solver (default start: the DP)."),
    Table("mip-any", "Throughput: non-contiguous MIP (`mip`, `contiguous=False`)", "throughput", "throughput",
          "mip", "mip_any_limit", (("contiguous", False),),
          (("paper", "ip_noncontiguous", "paper IP"), OUR_DP),
          "Any split of the colour classes: at most the DP's value."),
    Table("latency-q1", "Latency: MIP, q=1 (`mip`, `objective=\"latency\"`)", "latency", "latency", "mip",
          "latency_limit", (("q", 1),),
          (("paper", "ip_contiguous", "paper IP"), ("paper", "greedy", "paper greedy")),
          "One contiguous subgraph per accelerator (paper Fig. 3); the paper's IP ran up to an hour."),
    Table("latency-q2", "Latency: MIP, q=2", "latency", "latency", "mip", "latency_limit", (("q", 2),),
          (("paper", "ip_contiguous", "paper IP (q=1)"), ("ours", "latency-q1", "q=1")),
          "Up to two subgraphs per accelerator, run one at a time (paper Fig. 4). It starts from its default "
          "start, not from the q=1 result: stopped by the limit, it may end above it."),
    Table("greedy", "Throughput: greedy (`greedy`)", "throughput", "throughput", "greedy", "heuristic_limit",
          baselines=(OUR_DP,)),
    Table("local-search", "Throughput: local search (`local-search`)", "throughput", "throughput", "local-search",
          "heuristic_limit", baselines=(("paper", "local_search", "paper"), OUR_DP)),
    Table("pipedream", "Throughput: PipeDream's stage DP (`pipedream`)", "throughput", "throughput", "pipedream",
          "heuristic_limit", baselines=(("paper", "pipedream", "paper"), OUR_DP)),
    Table("metis", "Throughput: METIS (`metis`)", "throughput", "throughput", "metis", "heuristic_limit",
          baselines=(("paper", "scotch", "paper Scotch"), OUR_DP),
          note="The paper's graph-partitioning baseline was Scotch, another partitioner: shown for scale."),
    Table("greedy-latency", "Latency: greedy (`greedy`)", "latency", "latency", "greedy", "heuristic_limit",
          baselines=(("paper", "greedy", "paper greedy"), ("ours", "latency-q1", "MIP q=1")),
          note="The paper's greedy took its topological order from hash-map iteration: another order may differ."),
    Table("dp-makespan", "Makespan: the DP's placement, simulated (`dp`, `objective=\"makespan\"`)", "throughput",
          "makespan", "dp", "dp_limit",
          note="The baseline of the list schedulers below: the max-load optimum's step time."),
    *(Table(name, f"Makespan: `{name}`", "throughput", "makespan", name, "heuristic_limit",
            baselines=(("ours", "dp-makespan", "DP"),)) for name in MAKESPAN_METHODS),
)


def discover(shared: Path, settings: ReportSettings) -> tuple[list[Instance], list[str]]:
    """The shipped workloads and the shared ones (a shipped file identical to a shared one counted once)."""
    published: dict[str, dict[str, str]] = {}
    if (shared / "reference.csv").is_file():
        with open(shared / "reference.csv", newline="") as f:
            published = {row["workload"]: row for row in csv.DictReader(f)}
    notes: list[str] = []
    instances: list[Instance] = []
    shipped = {name: exactplace.workload_path(name) for name in exactplace.shipped_workloads()}
    for kind in ("throughput", "latency"):
        for path in sorted((shared / kind).glob("*.json")) if (shared / kind).is_dir() else []:
            same = shipped.get(path.stem)
            is_shipped = kind == "throughput" and same is not None and same.read_bytes() == path.read_bytes()
            if is_shipped:
                shipped.pop(path.stem)
            instances.append(Instance(path.stem, path, kind, is_shipped, published.get(f"{kind}/{path.name}", {})))
    instances += [Instance(name, path, "throughput", True) for name, path in shipped.items()]
    if not (shared / "throughput").is_dir():
        notes.append(f"No shared workloads at `{shared}`: the shipped ones only, without published values.")
    if settings.only is not None:
        instances = [i for i in instances if i.name in settings.only]
    return instances, notes


# ---------------------------------------------------------------- one solve, in a forked process


def _child(connection: Any, path: str, objective: str, method: str, limit: float, options: dict) -> None:
    os.setpgrp()  # the solve's own solver processes share this group, so a kill ends them too
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    try:
        workload = exactplace.read_workload(path)
        before = rss_mib()
        start = time.perf_counter()
        p = exactplace.solve(workload, objective=objective, method=method, time_limit=limit, **options)
        seconds = time.perf_counter() - start
        peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                   resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        row = {"value": p.objective, "bound": p.bound, "gap": p.gap, "status": p.status.value,
               "limit": None if p.limit is None else p.limit.value, "seconds": seconds, "mib": peak,
               "solver": p.solver, "returned": p.info.get("returned"), "before_mib": before}
    except Exception as error:  # any failure becomes the row's status
        row = {"error": f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"}
    connection.send(row)
    connection.close()


def run_one(instance: Instance, table: Table, settings: ReportSettings) -> dict:
    """One solve of ``table``'s method on ``instance`` in a forked process; its facts as a dict."""
    limit = getattr(settings, table.limit)
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(send, str(instance.path), table.objective, table.method, limit,
                                                   dict(table.options)))
    start = time.perf_counter()
    process.start()
    send.close()
    row: dict = {}
    if receive.poll(2 * limit + settings.grace):
        with contextlib.suppress(EOFError):
            row = receive.recv()
    process.join(5)
    if process.is_alive() or not row:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.join()
        row = row or {"error": f"killed after {time.perf_counter() - start:.0f} s"
                      if process.exitcode == -signal.SIGKILL else f"process ended ({process.exitcode})"}
    return row


# ---------------------------------------------------------------- formatting


def num(value: float | None) -> str:
    return "" if value is None else format(value, ".7g")


def status_text(row: dict) -> str:
    if "error" in row:
        return row["error"].replace("|", "/")[:90]
    text = row["status"]
    if row["limit"]:
        text += f", {row['limit']} limit"
    returned = row.get("returned")
    if returned:
        text += " (greedy fallback)" if returned.startswith("greedy") else f" (returned: {returned})"
    return text


def gap_text(gap: float | None) -> str:
    if gap is None:
        return ""
    return "0" if gap <= 0 else f"{100 * gap:.3g}%"


def baseline_value(instance: Instance, baseline: tuple[str, str, str], results: dict) -> float | None:
    source, key, _ = baseline
    if source == "paper":
        text = instance.published.get(key, "")
        try:
            return float(text)
        except ValueError:
            return None
    return results.get((key, instance.key), {}).get("value")


def render_table(table: Table, instances: list[Instance], results: dict, limit: float) -> list[str]:
    solver = table.method == "mip"
    head = ["workload", "nodes", "acc.", "value", "bound", "gap", "status", "s", "MiB"]
    head += ["solver"] if solver else []
    for _, _, label in table.baselines:
        head += [label, "ratio"]
    lines = [f"## {table.title}", "", f"Time limit {limit:g} s per solve. {table.note}".rstrip(), "",
             "| " + " | ".join(head) + " |", "|" + "|".join("---:" if h not in ("workload", "status", "solver")
                                                           else "---" for h in head) + "|"]
    for instance in instances:
        row = results.get((table.key, instance.key))
        if row is None:
            continue
        cells = [instance.name + ("\\*" if instance.shipped else ""), str(row.get("nodes", "")),
                 str(row.get("accelerators", "")), num(row.get("value")), num(row.get("bound")),
                 gap_text(row.get("gap")), status_text(row),
                 f"{row['seconds']:.2f}" if "seconds" in row else "", f"{row['mib']:.0f}" if "mib" in row else ""]
        cells += [row.get("solver", "")] if solver else []
        for baseline in table.baselines:
            base = baseline_value(instance, baseline, results)
            value = row.get("value")
            cells += [num(base), f"{value / base:.4f}" if base and value is not None else ""]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


# ---------------------------------------------------------------- the page


def first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return doc.strip().split("\n\n")[0].replace("\n", " ")


def git_commit() -> str:
    """The checkout's commit, read from ``.git`` (uncommitted changes are not seen)."""
    git = ROOT / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:12]
        ref = head[5:]
        if (git / ref).is_file():
            return (git / ref).read_text().strip()[:12] + f" ({ref.rsplit('/', 1)[-1]})"
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0][:12] + f" ({ref.rsplit('/', 1)[-1]})"
    except OSError:
        pass
    return "unknown"


def machine() -> str:
    model = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = ""
    with contextlib.suppress(OSError, ValueError, IndexError):
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {kib / 2**20:.0f} GiB memory"
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {usable} usable cores of {os.cpu_count()}{memory}, {platform.system()} {platform.machine()}"


def versions() -> str:
    found = [f"Python {platform.python_version()}", f"exactplace {exactplace.__version__}"]
    for name in ("numpy", "highspy", "ortools", "pymetis"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version

            found.append(f"{name} {version(name)}")
    return ", ".join(found)


def header(command: str, settings: ReportSettings, started: float, seconds: float, loads: tuple[str, str],
           base_mib: float, notes: list[str]) -> list[str]:
    when = datetime.datetime.fromtimestamp(started, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    limits = (f"DP and DPL {settings.dp_limit:g} s; contiguous MIP {settings.mip_contiguous_limit:g} s; "
              f"non-contiguous MIP {settings.mip_any_limit:g} s; latency MIP {settings.latency_limit:g} s; "
              f"heuristics {settings.heuristic_limit:g} s")
    return [
        "# Benchmark results",
        "",
        "The current numbers for the current code: every method on the shipped and the shared workloads. "
        "This page is generated; do not edit it by hand.",
        "",
        f"- Made by: `{command}` ({seconds / 60:.1f} minutes), {when}",
        f"- Machine: {machine()}; load average {loads[0]} at the start, {loads[1]} at the end "
        "(the machine may be shared: seconds are noisy)",
        f"- Software: {versions()}; git commit {git_commit()}",
        f"- Time limit per solve (`solve(..., time_limit=...)`): {limits}. A solve still running "
        f"{settings.grace:g} s past twice its limit is killed.",
        *[f"- {note}" for note in notes],
        "",
        "How to read the tables: *value* is the referee's (`Placement.objective`, recomputed by the evaluator), "
        "*bound* the method's proven lower bound over its own space, *gap* (value - bound) / value; a status "
        "with \"time limit\" means the limit stopped the method. *s* is the wall time of the `solve` call and "
        "*MiB* the peak resident memory of the process that ran it, forked from the report "
        f"(about {base_mib:.0f} MiB of it before the solve starts: the interpreter with exactplace and its solvers "
        "imported, and the workload read). *ratio* = value "
        "/ the baseline on its left: a published value of the paper (`shared/workloads/reference.csv`: Gurobi 8.1 "
        "on 4 cores for its IPs) or this run's DP. *acc.* is the accelerators of the instance. "
        "\\* marks the workloads shipped inside the package (`exactplace.shipped_workloads()`), the same files "
        "as the shared ones.",
        "",
    ]


def published_note(log_link: str) -> list[str]:
    return [
        "## Published values below what the models allow",
        "",
        "Two published values on layer_gnmt_inference lie below what the models allow, so a ratio slightly above "
        "1 there is expected: the non-contiguous max-load 31.68 (the paper's own IP, rebuilt from the workload, "
        "has the optimum 31.687311) and the latency 225.6 (the optimum over contiguous splits is 225.6479). "
        f"`benchmarks/check_published.py` establishes both; the argument is in [the results history]({log_link}).",
        "",
    ]


def detailed(out_dir: Path) -> list[str]:
    lines = ["## Detailed benchmarks", "",
             "Each script below measures one thing in depth (its docstring says how to run it):", ""]
    for path in sorted(HERE.glob("bench_*.py")):
        lines.append(f"- [{path.name}]({os.path.relpath(path, out_dir)}): {first_line(path)}")
    lines += ["", "Checks and probes:", ""]
    for path in sorted([*HERE.glob("check_*.py"), *HERE.glob("probe_*.py")]):
        lines.append(f"- [{path.name}]({os.path.relpath(path, out_dir)}): {first_line(path)}")
    log = HERE / "log"
    lines += ["", f"Dated measurements, one file per piece of work, are in [benchmarks/log/]"
              f"({os.path.relpath(log, out_dir)}/):", ""]
    for path in sorted([*log.glob("*.md"), *log.glob("*/README.md")]):
        title = path.read_text(encoding="utf-8").splitlines()[0].lstrip("# ").strip()
        name = path.parent.name + "/" if path.parent != log else path.name
        if name.startswith("results-history-"):
            title = "this page as it was kept by hand until then, in parts: sections per piece of work, by topic"
        lines.append(f"- [{name}]({os.path.relpath(path, out_dir)}): {title}")
    return [*lines, ""]


# ---------------------------------------------------------------- main


def preload() -> None:
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def rss_mib() -> float:
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run_all(instances: list[Instance], settings: ReportSettings) -> dict:
    """Every table's solves, in the order of ``TABLES`` (each baseline runs before the tables that use it)."""
    sizes = {}
    for instance in instances:
        w = exactplace.read_workload(instance.path)
        sizes[instance.key] = {"nodes": w.graph.n, "accelerators": w.cluster.accelerators}
    results: dict = {}
    for table in TABLES:
        for instance in instances:
            if instance.kind != table.kind:
                continue
            started = time.perf_counter()
            row = {**run_one(instance, table, settings), **sizes[instance.key]}
            results[(table.key, instance.key)] = row
            print(f"{table.key:22} {instance.name:26} {status_text(row):30} {num(row.get('value')):>10} "
                  f"{time.perf_counter() - started:7.1f} s", file=sys.stderr, flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small subset with short limits (development)")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md", help="the page to write")
    parser.add_argument("--shared", type=Path, default=SHARED, help="the shared workloads folder")
    parser.add_argument("--only", default="", help="comma-separated workload names to run (development)")
    args = parser.parse_args(argv)
    settings = QUICK_REPORT if args.quick else DEFAULT_REPORT
    if args.only:
        settings = dataclasses.replace(settings, only=tuple(args.only.split(",")))
    command = " ".join(["python benchmarks/report.py", *(argv if argv is not None else sys.argv[1:])])
    started, start_load = time.time(), load()
    preload()
    instances, notes = discover(args.shared, settings)
    results = run_all(instances, settings)
    before = sorted(row["before_mib"] for row in results.values() if "before_mib" in row)
    base_mib = before[len(before) // 2] if before else rss_mib()
    out_dir = args.out.resolve().parent
    page = header(command, settings, started, time.time() - started, (start_load, load()), base_mib, notes)
    for table in TABLES:
        page += render_table(table, instances, results, getattr(settings, table.limit))
    page += published_note(os.path.relpath(HERE / "log" / "results-history-to-2026-12-01" / "part-04.md", out_dir)
                           + "#published-values-below-what-the-models-allow-check_publishedpy")
    page += detailed(out_dir)
    args.out.write_text("\n".join(page).rstrip() + "\n", encoding="utf-8")
    print(f"wrote {args.out} ({len(page)} lines, {(time.time() - started) / 60:.1f} minutes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
