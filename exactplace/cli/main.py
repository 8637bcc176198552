"""``exactplace solve | evaluate | info | compare | methods`` (``replay | regress`` from replay_commands,
``paper-tables`` from paper_command).

Exit status: 0 success; 1 the run produced no placement (solve) or the split violates a
constraint (evaluate); 2 bad input or usage (one line on stderr, never a traceback); 130
Ctrl-C; 143 SIGTERM (which stops a command as Ctrl-C does: the best placement kept);
141 standard output closed early (``| head``), as Unix tools do.

Files are never lost: ``--out`` is checked before solving (not an input, its directory
exists and is writable), written atomically, and replaced only by a complete plan; ``-``
reads the workload (or the split) from standard input and ``--out -`` writes the plan to
standard output (the summary then goes to stderr).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

import numpy as np

from exactplace.cli.flags import (
    add_constraint_options,
    add_schedule_options,
    byte_count,
    constraint_flags,
    cost_factor,
    non_negative_count,
    output_name,
    positive_count,
    positive_number,
    relative_gap,
    schedule_flags,
)
from exactplace.cli.inputs import input_path, load_workload, read_stdin_text
from exactplace.cli.pictures import check_plot, save_figure
from exactplace.core.cluster import Cluster
from exactplace.core.errors import ExactplaceError, ParameterError, SolverUnavailableError
from exactplace.core.graph import Graph
from exactplace.core.interrupt import handled_interrupt, stop_as_ctrl_c
from exactplace.core.objectives import OBJECTIVES
from exactplace.core.problem import DEFAULT_REL_GAP
from exactplace.data import shipped_workloads
from exactplace.io import Workload
from exactplace.io.paths import STDIO, check_output, write_output

EXIT_NO_RESULT = 1
EXIT_INPUT_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 128 + 15  # SIGTERM, as a shell reports it
EXIT_BROKEN_PIPE = 128 + 13  # killed by SIGPIPE, as a shell reports it


def _levels(cluster: Cluster) -> str:
    """`` on 2 machines (transfers between hosts 4x)`` for a two-level cluster, else nothing."""
    if not cluster.is_two_level:
        return ""
    return f" on {_plural(cluster.machines, 'machine')} (transfers between hosts {cluster.inter_machine_cost:g}x)"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def option_value(text: str) -> object:
    """``--option KEY=VALUE`` values, JSON-ish: true/false, none/null, numbers, else the string.

    >>> [option_value(t) for t in ("false", "None", "2", "0.5", "cpsat")]
    [False, None, 2, 0.5, 'cpsat']
    """
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


#: solve()'s own parameters, which `solve` sets from these flags (an --option of the same name would collide).
_FLAGGED = {"objective": "--objective", "method": "--method", "time_limit": "--time-limit S",
            "rel_gap": "--rel-gap G"}


def _solve_options(args: argparse.Namespace) -> tuple[dict, object]:
    """Method options from the flags, and the warm start (``--option warm_start=none`` turns it off)."""
    from exactplace.core.errors import ParameterError
    from exactplace.methods.registry import registered_methods

    options: dict = {"overlap": True} if args.overlap else {}
    options.update(schedule_flags(args))
    for item in args.option or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ParameterError(f"--option takes KEY=VALUE (for example contiguous=false). Got {item!r} instead.")
        if key in _FLAGGED:
            raise ParameterError(f"--option {item!r}: {key} has a flag of its own: use {_FLAGGED[key]}.")
        options[key] = option_value(value)
    if args.solver is not None:
        options["solver"] = args.solver
    if args.log:
        options["log"] = True
    warm_start = options.pop("warm_start", "auto")
    method = registered_methods().get(args.method)
    if method is not None and "progress" in method.options and "progress" not in options:
        options["progress"] = True  # the incumbent / bound / gap line on stderr
    return options, warm_start


def _command_solve(args: argparse.Namespace) -> int:
    from exactplace.cli.progress import elapsed
    from exactplace.core.placement import Limit
    from exactplace.methods import solve

    source = input_path(args.workload)
    check_output(args.out, [source])  # before any work: a bad --out or --plot costs nothing
    check_plot(args.plot, [source], args.out)
    workload = load_workload(source, _cluster(args))
    options, warm_start = _solve_options(args)
    with elapsed(f"solving {workload.name} ({args.objective}, method {args.method})"):
        placement = solve(
            workload, objective=args.objective, method=args.method, time_limit=args.time_limit,
            rel_gap=args.rel_gap, warm_start=warm_start, constraints=constraint_flags(args, workload.constraints),
            **options,
        )
    interrupted = placement.limit is Limit.INTERRUPT
    # The plan is saved before anything is printed, so a closed standard output cannot lose it.
    note = _save_plan(args.out, placement, interrupted)
    if args.plot is not None and placement.has_solution:
        from exactplace.plot import overview

        save_figure(overview(workload, placement), args.plot)
        note = "\n".join(filter(None, [note, f"picture written to {args.plot}"]))
    report = sys.stderr if args.out == STDIO else sys.stdout
    print(f"workload {workload.name}: {_plural(workload.graph.n, 'node')}, {_plural(workload.graph.m, 'edge')}, "
          f"{_plural(workload.accelerators, 'accelerator')}{_levels(workload.cluster)}, "
          f"{_plural(workload.cpus, 'CPU')}", file=report)
    print(placement.summary(), file=report)
    if note:
        print(note, file=report if placement.has_solution and not interrupted else sys.stderr)
    if interrupted:
        return _interrupted("solve")
    return 0 if placement.has_solution else EXIT_NO_RESULT


def _save_plan(out: str | None, placement: Any, interrupted: bool) -> str:
    """Write the plan as the module docstring says; returns what to tell the user ("" for nothing)."""
    if out is None:
        return ""
    if not placement.has_solution:
        return f"no plan written to {out}: the run ended with status {placement.status}"
    text = placement.to_json() + "\n"
    if interrupted:  # a partial result may only create a new file, never replace one
        if write_output(out, text, replace=False):
            return f"best plan found before the interruption written to {out}"
        return f"{out} already exists and was kept; the plan found before the interruption was not written"
    write_output(out, text)
    return "" if out == STDIO else f"plan written to {out}"


def _command_evaluate(args: argparse.Namespace) -> int:
    """Score a split and judge it by the rules of the objective it is scored under (see ``check_feasibility``)."""
    from pathlib import Path

    from exactplace.core.objectives import SCORING_OPTIONS
    from exactplace.evaluators import check_feasibility, summarize_violations
    from exactplace.io import read_text, split_file_from_text

    source, split = input_path(args.workload), args.split
    if source == STDIO and split == STDIO:
        raise ParameterError("the workload and the split cannot both be read from standard input (-).")
    workload = load_workload(source, _cluster(args))
    graph, cluster = workload.graph, workload.cluster
    if split == STDIO:
        text, where, origin = read_stdin_text("Split"), "The split on standard input", "on standard input"
    else:
        text, where, origin = read_text(split, "Split"), f"Split {Path(split).name!r}", f"file {split!r}"
    plan = split_file_from_text(text, graph, cluster, where=where, source=origin)
    objective = args.objective or plan.objective or "throughput"
    if args.overlap and objective != "throughput":
        raise ParameterError(f"--overlap applies to the throughput objective only, not to {objective!r}.")
    # The plan's own rules unless the command line asks for others: its scoring options, its
    # space (a throughput notion), its q and subgraphs (latency), its execution order (makespan).
    options = {k: v for k, v in plan.options.items() if k in SCORING_OPTIONS[objective]}
    if args.overlap:
        options["overlap"] = True
    if objective == "throughput":
        options.update(schedule_flags(args))
    elif schedule_flags(args):
        raise ParameterError(f"--schedule and --microbatches apply to the throughput objective only, not to "
                             f"{objective!r}.")
    stated = plan.space.value if plan.space is not None else None
    space = args.space or (stated if stated in ("chain", "contiguous") and objective != "latency" else None)
    q = (args.q or plan.q) if objective == "latency" else None
    if objective == "latency" and plan.subgraph is not None:
        options["subgraph"] = plan.subgraph
    if objective == "makespan" and plan.order is not None:
        options["order"] = plan.order
    replicas = plan.replicas
    if replicas is not None and objective != "throughput":
        raise ParameterError(f"The plan replicates stages ('replicas'), which only the throughput objective "
                             f"scores, not {objective!r}.")
    if replicas is not None:
        options["replicas"] = replicas
    # The flags (added to the file's), else those the plan was solved under, else the file's own.
    merged = constraint_flags(args, workload.constraints)
    flagged = merged != (dict(workload.constraints) if workload.constraints else None)
    constraints = merged if flagged else (plan.constraints or workload.constraints)
    violations = check_feasibility(graph, cluster, plan.device, objective=objective, space=space, q=q,
                                   subgraph=plan.subgraph, replicas=replicas, schedule=options.get("schedule"),
                                   microbatches=options.get("microbatches"), constraints=constraints)
    value = _score(graph, cluster, plan.device, objective, options, violations)
    print(f"{objective}: {value:.6f}")
    used = [k for k, v in options.items() if v is True] + (["replicas"] if replicas is not None else [])
    rules = _rules(objective, space, q) + (f"; scored with {', '.join(used)}" if used else "")
    print(_device_table(graph, cluster, plan.device, objective, options, violations))
    if not violations:
        print(f"feasible ({rules})")
    else:
        print(f"{_plural(len(violations), 'violation')} ({rules}):")
        shown = [str(v) for v in violations] if args.verbose else summarize_violations(violations)
        for line in shown:
            print(f"  {line}")
    verdict = None
    if args.explain:
        if objective != "throughput" or replicas is not None or options.get("gpipe"):
            raise ParameterError("--explain covers throughput splits without replicated stages or gpipe.")
        if not violations:
            from exactplace.explain import judge

            verdict = judge(graph, cluster, plan.device, options, constraints)
            print(verdict.report())
    if args.json:
        explained = {} if verdict is None else {
            "optimum": verdict.optimum.objective, "excess": verdict.excess,
            "first_move": None if verdict.move is None else {
                "nodes": list(verdict.move.nodes), "from": verdict.move.source, "to": verdict.move.target,
                "after": verdict.move.after}}
        print(json.dumps({
            "objective": value if math.isfinite(value) else None,
            "objective_name": objective,
            "space": space,
            "q": q,
            "feasible": not violations,
            "violations": [str(v) for v in violations],
            **explained,
        }))
    return EXIT_NO_RESULT if violations else 0


def _score(graph: Graph, cluster: Cluster, device: np.ndarray, objective: str, options: dict,
           violations: list) -> float:
    """The objective's value; ``inf`` for a latency plan whose subgraphs cannot be invoked (a violation says why)."""
    from exactplace.evaluators import evaluate

    if objective == "latency" and any(v.kind in ("order", "subgraphs") and "more than q" not in v.message
                                      for v in violations):
        return math.inf
    return evaluate(graph, cluster, device, objective, **options)


def _rules(objective: str, space: str | None, q: int | None) -> str:
    """The rules a split was judged by, in words."""
    if objective == "latency":
        limit = f"at most {q} per accelerator" if q else "any number per accelerator"
        structure = f"; {space} splits" if space else ""
        return f"latency rules: invocable accelerator subgraphs, {limit}{structure}"
    return f"{objective} rules: {f'{space} splits' if space and space != 'any' else 'any split'}"


def _device_table(graph: Graph, cluster: Cluster, device: np.ndarray, objective: str, options: dict,
                  violations: list) -> str:
    """Per-device loads (throughput, makespan), or the accelerator subgraphs and when they run (latency)."""
    import pandas as pd

    from exactplace.evaluators import device_loads
    from exactplace.evaluators.latency import latency_schedule

    if objective != "latency":
        loads = device_loads(graph, cluster, device, overlap=bool(options.get("overlap")),
                             replicas=options.get("replicas")).to_frame(cluster)
        return loads[loads["compute"] > 0].to_string(float_format=lambda x: f"{x:.6g}")
    if any(v.kind in ("order", "subgraphs") and "more than q" not in v.message for v in violations):
        return "(no schedule: the subgraphs cannot be invoked)"
    schedule = latency_schedule(graph, cluster, device, options.get("subgraph"))
    names = cluster.device_names()
    rows = [{"device": names[d], "nodes": len(nodes), "start": start, "end": end}
            for d, nodes, start, end in schedule.subgraphs]
    if not rows:
        return "(no accelerator subgraphs: every node runs on a CPU)"
    return pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.6g}")


def _command_info(args: argparse.Namespace) -> int:
    workload = load_workload(input_path(args.workload))
    graph, cluster = workload.graph, workload.cluster
    forward = int((~graph.backward).sum())
    class_memory = np.bincount(graph.color, weights=graph.memory)
    capacity = cluster.max_memory * workload.accelerators  # a Python float: inf, not a warning, if it overflows
    print(f"workload {workload.name}")
    print(f"  nodes: {graph.n} ({forward} forward, {graph.n - forward} backward), edges: {graph.m}")
    largest = int(np.bincount(graph.color).max())
    print(f"  color classes: {len(class_memory)} (largest has {_plural(largest, 'node')})")
    print(f"  unsupported on accelerators: {_plural(int((~graph.supported).sum()), 'node')}")
    print(f"  cluster: {_plural(workload.accelerators, 'accelerator')} x {cluster.max_memory:.4g} bytes"
          f"{_levels(cluster)}, {_plural(workload.cpus, 'CPU')}")
    print(f"  memory: total {graph.memory.sum():.4g} bytes vs accelerator capacity {capacity:.4g} "
          f"({100 * graph.memory.sum() / capacity if capacity else math.inf:.1f}%); "
          f"largest color class {class_memory.max():.4g} bytes")
    print(f"  ideals: {_ideals_text(graph, cluster, args.ideal_limit)}")
    print(f"  method=auto: {_plan_text(workload, args.time_limit)}")
    return 0


def _plan_text(workload: Workload, time_limit: float | None) -> str:
    """Which method certifies the throughput optimum (auto's choice), what to expect of it, and why not the others."""
    from exactplace.methods.front_door import auto_plan

    try:
        plan = auto_plan(workload, time_limit=time_limit)
    except SolverUnavailableError as error:
        return str(error)
    text = f"{plan.method} ({plan.outlook})"
    for name, why in plan.passed_over.items():
        text += f"\n    not {name}: {why}"
    return text


def _ideals_text(graph: Graph, cluster: Cluster, limit: int) -> str:
    try:
        from exactplace.methods.ideals import count_ideals
    except ImportError:  # the native extension is not built
        return "unknown (native extension not available)"
    count = count_ideals(graph, limit, cluster=cluster)  # the limit was checked by the parser
    if count is None:
        return f"more than {limit} (the exact DP is out of reach; see method=auto below)"
    return str(count)


def _command_methods(args: argparse.Namespace) -> int:
    from exactplace.methods import registered_methods

    for name, cls in registered_methods().items():
        state = "available" if cls.available() else f"not installed (needs {', '.join(cls.missing())})"
        kind = f"exact over {cls.space} splits" if cls.exact else "heuristic"
        promised = [k.replace("_", " ") for k, v in vars(cls.guarantee).items() if v]
        print(f"{name}: {cls.description}")
        print(f"    objectives: {', '.join(cls.objectives)}; {kind}; {state}")
        print(f"    guarantees: {', '.join(promised) or 'memory, support and colocation only'}")
        for option in cls.options.values():
            print(f"    option {option}")
    return 0


def _command_compare(args: argparse.Namespace) -> int:
    from exactplace.methods.compare import COLUMNS, compare

    check_plot(args.plot, [input_path(args.workload)])
    workload = load_workload(args.workload, _cluster(args))
    splits = {}
    for spec in args.split:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ExactplaceError(f"--split takes NAME=FILE; got {spec!r}.")
        splits[name] = path
    methods = [name.strip() for name in args.methods.split(",")] if args.methods is not None else None
    table = compare(workload, methods=methods, time_limit=args.time_limit, splits=splits)
    print(f"workload {workload.name}: {workload.graph.n} nodes; bound {table.attrs.get('bound', 'none')}")
    print(table.drop(columns="note").to_string(index=False, float_format=lambda x: f"{x:.6g}", na_rep="-"))
    for method, note in zip(table["method"], table["note"]):
        if note:
            print(f"  {method}: {note}")
    if args.plot is not None:
        from exactplace.plot import gap_bars

        save_figure(gap_bars(table, title=f"{workload.name}: value over the best proven bound"), args.plot)
        print(f"picture written to {args.plot}")
    if args.json:
        rows = table[list(COLUMNS[:7])].astype(object).where(table[list(COLUMNS[:7])].notna(), None)
        print(json.dumps(rows.to_dict(orient="records")))
    if table.attrs.get("interrupted"):
        return _interrupted("compare")
    return 0


def _add_compare(commands: argparse._SubParsersAction, workload_help: str) -> None:
    compare = commands.add_parser("compare", help="run every method on a workload and score it under every objective")
    compare.add_argument("workload", help=workload_help)
    compare.add_argument("--methods", help="comma-separated method names (default: every available method)")
    compare.add_argument("--time-limit", type=positive_number, default=60.0, metavar="S", help="seconds per method")
    compare.add_argument("--split", action="append", default=[], metavar="NAME=FILE",
                         help="also score this split (reference split format or exactplace plan) as row NAME")
    compare.add_argument("--json", action="store_true", help="end with one JSON line: a list of row objects")
    compare.add_argument("--plot", type=output_name, metavar="FILE.png", help="draw each method's value over the best "
                         "bound (.png, .svg or .pdf; needs matplotlib)")
    _add_cluster_options(compare)
    compare.set_defaults(run=_command_compare)


def _add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """The cluster options: override the workload's cluster, or state it for formats without one."""
    parser.add_argument("--accelerators", type=non_negative_count, default=None, metavar="K",
                        help="number of accelerators")
    parser.add_argument("--memory", type=byte_count, default=None, metavar="BYTES", help="memory per accelerator")
    parser.add_argument("--cpus", type=non_negative_count, default=None, metavar="L", help="number of CPUs")
    parser.add_argument("--bandwidth", type=positive_number, default=None, metavar="BYTES_PER_S",
                        help="link bandwidth for PipeDream profiles and ONNX models (inf: free transfers, the default)")
    parser.add_argument("--machines", type=positive_count, default=None, metavar="M",
                        help="group the accelerators into M machines (a two-level cluster, with --inter-machine-cost)")
    parser.add_argument("--inter-machine-cost", type=cost_factor, default=None, metavar="F",
                        help="a transfer between machines costs F times its cost within one (the intra-machine "
                             "bandwidth over the inter-machine one; throughput only)")


def _cluster(args: argparse.Namespace) -> dict[str, Any]:
    """The cluster options given on the command line (None where not given)."""
    return {key: getattr(args, key)
            for key in ("accelerators", "memory", "cpus", "bandwidth", "machines", "inter_machine_cost")}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; docs/cli.md's synopsis lists the same flags (a test checks it)."""
    from exactplace import __version__

    parser = _Parser(prog="exactplace", description="Exact placement of DNN graphs on accelerators and CPUs.")
    parser.add_argument("--version", action="version", version=f"exactplace {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    workload_help = (f"workload JSON file, - for standard input, or a shipped workload: "
                     f"{', '.join(shipped_workloads())}")

    solve = commands.add_parser("solve", help="place a workload and print the placement summary")
    solve.add_argument("workload", help=workload_help)
    solve.add_argument("--objective", choices=OBJECTIVES, default="throughput")
    solve.add_argument("--method", default="auto", help="a method from `exactplace methods` (default: auto)")
    solve.add_argument("--time-limit", type=positive_number, default=None, metavar="S", help="seconds")
    solve.add_argument("--rel-gap", "--gap", dest="rel_gap", type=relative_gap, default=DEFAULT_REL_GAP, metavar="G",
                       help=f"relative gap within which a method with a bound calls its placement optimal "
                            f"(default {DEFAULT_REL_GAP:g}); the DP methods are exact and ignore it")
    solve.add_argument("--overlap", action="store_true", help="communication overlaps compute (max, not sum)")
    add_schedule_options(solve)
    solve.add_argument("--solver", default=None, help="for method mip: auto, highs, cpsat, scip, cbc or gurobi")
    solve.add_argument("--option", action="append", metavar="KEY=VALUE",
                       help="a method option, repeatable (contiguous=false, threads=2, warm_start=none)")
    solve.add_argument("--log", action="store_true", help="stream the solver's log to stderr")
    solve.add_argument("--plot", type=output_name, metavar="FILE.png", help="draw the placement graph and the device "
                       "loads (.png, .svg or .pdf; needs matplotlib)")
    solve.add_argument("--out", type=output_name, metavar="PLAN.json",
                       help="write the plan JSON here (- for standard output); never over an input")
    add_constraint_options(solve)
    _add_cluster_options(solve)
    solve.set_defaults(run=_command_solve)

    evaluate = commands.add_parser("evaluate", help="score a split (reference split format or exactplace plan) "
                                     "and judge it by its objective's rules")
    evaluate.add_argument("workload", help=workload_help)
    evaluate.add_argument("split", help="split JSON file, or - for standard input")
    evaluate.add_argument("--objective", choices=OBJECTIVES, default=None,
                          help="default: the plan's own objective, else throughput")
    evaluate.add_argument("--space", choices=("chain", "contiguous", "any"), default=None,
                          help="also require this structure (default: the plan's space for throughput, else any)")
    evaluate.add_argument("--q", type=positive_count, default=None, metavar="N",
                          help="latency: at most N subgraphs per accelerator (default: the plan's q, else any number)")
    evaluate.add_argument("--overlap", action="store_true", help="communication overlaps compute (throughput)")
    add_schedule_options(evaluate)
    evaluate.add_argument("--verbose", action="store_true", help="list every violation, not a summary")
    evaluate.add_argument("--explain", action="store_true", help="also solve the split's problem: how far the "
                          "split is from the optimum, and the first move that closes most of the difference")
    evaluate.add_argument("--json", action="store_true", help="end with one JSON line holding `objective`")
    add_constraint_options(evaluate)
    _add_cluster_options(evaluate)
    evaluate.set_defaults(run=_command_evaluate)

    info = commands.add_parser("info", help="describe a workload")
    info.add_argument("workload", help=workload_help)
    info.add_argument("--ideal-limit", type=non_negative_count, default=1_000_000, metavar="N",
                      help="count ideals up to this many (default 1000000)")
    info.add_argument("--time-limit", type=positive_number, default=None, metavar="S",
                      help="plan method=auto for this time limit (default: none, as solve)")
    info.set_defaults(run=_command_info)

    _add_compare(commands, workload_help)

    methods = commands.add_parser("methods", help="list the placement methods")
    methods.set_defaults(run=_command_methods)

    from exactplace.cli.explain_command import add_command as add_explain
    from exactplace.cli.paper_command import add_command
    from exactplace.cli.replay_commands import add_commands
    from exactplace.cli.sweep_command import add_command as add_sweep

    add_commands(commands, workload_help)
    add_command(commands, positive_number)
    add_sweep(commands, workload_help)
    add_explain(commands, workload_help)
    return parser


def _os_message(error: OSError) -> str:
    """``strerror: file`` without a dangling ": None" when the OS names no file."""
    text = error.strerror or str(error) or type(error).__name__
    return f"{text}: {error.filename}" if error.filename else text


def _quiet_stdout() -> None:
    """After a broken pipe: point stdout at /dev/null so that flushing it at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class _Process:
    """Whether :func:`main` runs as the process itself (:func:`run`), not called by a program that goes on."""

    owned = False


def _interrupted(command: str) -> int:
    """A command stopped by Ctrl-C (or SIGTERM, which main reports): one line, exit 130 (143).

    Run as the process (:func:`run`), it leaves at once, from here: what the stopped work still holds (a replay's
    schedule of millions of steps) would take the interpreter seconds to free, past the promised second.
    """
    handled_interrupt()
    line = f"exactplace {command}: " + ("terminated" if _Terminated.seen else "interrupted")
    if _Process.owned:
        print(line, file=sys.stderr, flush=True)
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        os._exit(EXIT_TERMINATED if _Terminated.seen else EXIT_INTERRUPTED)
    if not _Terminated.seen:
        print(line, file=sys.stderr)
    return EXIT_INTERRUPTED


class _Terminated:
    """SIGTERM arrived: the command stops as on Ctrl-C (best placement kept), then exits 143."""

    seen = False

    @classmethod
    def handler(cls, signum: int, frame: object) -> None:
        cls.seen = True
        # As Ctrl-C stops what runs now. Raising KeyboardInterrupt in a phase whose solves stop on Ctrl-C's event
        # stopped one solve of it, not the phase: the gap probe went on to its next probe, for minutes (9 of 12
        # SIGTERMs in the first 3 s of a non-contiguous solve).
        stop_as_ctrl_c()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (see the module docstring)."""
    args = build_parser().parse_args(argv)
    stream: TextIO = sys.stderr
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _Terminated.handler)
    status = _run(args, stream)
    if _Terminated.seen:
        print(f"exactplace {args.command}: terminated", file=stream)
        return EXIT_TERMINATED
    return status


def run() -> NoReturn:
    """The console script ``exactplace`` and ``python -m exactplace``: :func:`main` as the process, exiting with its
    status. The command's work done, a Ctrl-C or SIGTERM during the interpreter's teardown ends the process at once
    with 130 or 143 (it raised KeyboardInterrupt in the teardown, and the process died by SIGINT, -2)."""
    _Process.owned = True
    status = main()
    for stream in (sys.stdout, sys.stderr):  # (what the command printed is out before a signal could cut it)
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    for signum, code in ((signal.SIGINT, EXIT_INTERRUPTED), (signal.SIGTERM, EXIT_TERMINATED)):
        if signal.getsignal(signum) is not signal.SIG_IGN:  # (a SIGINT the process was started ignoring stays so)
            signal.signal(signum, lambda *_, code=code: os._exit(code))
    raise SystemExit(status)


def _run(args: argparse.Namespace, stream: TextIO) -> int:
    """The command, with every error turned into its one line and exit status."""
    try:
        return int(args.run(args))
    except ExactplaceError as error:
        print(f"exactplace {args.command}: error: {error}", file=stream)
        return EXIT_INPUT_ERROR
    except BrokenPipeError:  # `exactplace ... | head`: stop quietly, as Unix tools do
        _quiet_stdout()
        return EXIT_BROKEN_PIPE
    except OSError as error:
        print(f"exactplace {args.command}: error: {_os_message(error)}", file=stream)
        return EXIT_INPUT_ERROR
    except MemoryError:
        print(f"exactplace {args.command}: error: out of memory; the instance is too large for this machine "
              "(try --method dpl or greedy)", file=stream)
        return EXIT_INPUT_ERROR
    except RecursionError:
        print(f"exactplace {args.command}: error: the input is nested too deeply", file=stream)
        return EXIT_INPUT_ERROR
    except KeyboardInterrupt:
        return _interrupted(args.command)


__all__ = ["build_parser", "main", "option_value", "run"]
