"""``exactplace solve | evaluate | info | methods``.

Errors in the input become one readable line on stderr and exit status 2, never a
traceback; Ctrl-C exits with status 130.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ExactplaceError
from exactplace.core.graph import Graph
from exactplace.core.io import Workload, read_placement, read_workload
from exactplace.core.objectives import OBJECTIVES
from exactplace.data import shipped_workloads, workload_path

EXIT_INPUT_ERROR = 2
EXIT_INTERRUPTED = 130


def _workload(argument: str) -> Workload:
    """A path, or the name of a workload shipped inside the package."""
    if not Path(argument).exists() and argument in shipped_workloads():
        return read_workload(workload_path(argument))
    return read_workload(argument)


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


def _solve_options(args: argparse.Namespace) -> tuple[dict, object]:
    """Method options from the flags, and the warm start (``--option warm_start=none`` turns it off)."""
    from exactplace.core.errors import ParameterError
    from exactplace.methods.registry import registered_methods

    options: dict = {"overlap": True} if args.overlap else {}
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParameterError(f"--option takes KEY=VALUE (for example contiguous=false). Got {item!r} instead.")
        options[key.strip()] = option_value(value)
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
    from exactplace.methods import solve

    workload = _workload(args.workload)
    options, warm_start = _solve_options(args)
    with elapsed(f"solving {workload.name} ({args.objective}, method {args.method})"):
        placement = solve(
            workload, objective=args.objective, method=args.method, time_limit=args.time_limit,
            rel_gap=args.rel_gap, warm_start=warm_start, **options,
        )
    print(f"workload {workload.name}: {workload.graph.n} nodes, {workload.graph.m} edges, "
          f"{workload.cluster.accelerators} accelerators, {workload.cluster.cpus} CPUs")
    print(placement.summary())
    if args.out:
        Path(args.out).write_text(placement.to_json() + "\n", encoding="utf-8")
        print(f"plan written to {args.out}")
    return 0 if placement.has_solution else 1


def _command_evaluate(args: argparse.Namespace) -> int:
    from exactplace.evaluators import check_feasibility, device_loads, evaluate

    workload = _workload(args.workload)
    graph, cluster = workload.graph, workload.cluster
    device = read_placement(args.split, graph, cluster)
    options = {"overlap": True} if args.overlap and args.objective == "throughput" else {}
    value = evaluate(graph, cluster, device, args.objective, **options)
    violations = check_feasibility(graph, cluster, device)
    loads = device_loads(graph, cluster, device, overlap=bool(options)).to_frame(cluster)
    print(f"{args.objective}: {value:.6f}")
    print(loads[loads["compute"] > 0].to_string(float_format=lambda x: f"{x:.6g}"))
    print("feasible" if not violations else f"{len(violations)} violations:")
    for violation in violations:
        print(f"  {violation}")
    if args.json:
        print(json.dumps({
            "objective": value if math.isfinite(value) else None,
            "objective_name": args.objective,
            "feasible": not violations,
            "violations": [str(v) for v in violations],
        }))
    return 0


def _command_info(args: argparse.Namespace) -> int:
    workload = _workload(args.workload)
    graph, cluster = workload.graph, workload.cluster
    forward = int((~graph.backward).sum())
    class_memory = np.bincount(graph.color, weights=graph.memory)
    capacity = float(cluster.memory.sum())
    print(f"workload {workload.name}")
    print(f"  nodes: {graph.n} ({forward} forward, {graph.n - forward} backward), edges: {graph.m}")
    print(f"  color classes: {len(class_memory)} (largest has {np.bincount(graph.color).max()} nodes)")
    print(f"  unsupported on accelerators: {int((~graph.supported).sum())} nodes")
    print(f"  cluster: {cluster.accelerators} accelerators x {cluster.max_memory:.4g} bytes, {cluster.cpus} CPUs")
    print(f"  memory: total {graph.memory.sum():.4g} bytes vs accelerator capacity {capacity:.4g} "
          f"({100 * graph.memory.sum() / capacity if capacity else math.inf:.1f}%); "
          f"largest color class {class_memory.max():.4g} bytes")
    print(f"  ideals: {_ideals_text(graph, cluster, args.ideal_limit)}")
    return 0


def _ideals_text(graph: Graph, cluster: Cluster, limit: int) -> str:
    try:
        from exactplace.backends.ideals import count_ideals
    except ImportError:  # the native extension is not built
        return "unknown (native extension not available)"
    count = count_ideals(graph, limit, cluster=cluster)
    return f"more than {limit} (the exact DP is out of reach; use --method dpl)" if count is None else str(count)


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


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="exactplace", description="Exact placement of DNN graphs on accelerators and CPUs."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    workload_help = f"workload JSON file, or a shipped workload: {', '.join(shipped_workloads())}"

    solve = commands.add_parser("solve", help="place a workload and print the placement summary")
    solve.add_argument("workload", help=workload_help)
    solve.add_argument("--objective", choices=OBJECTIVES, default="throughput")
    solve.add_argument("--method", default="auto", help="a method from `exactplace methods` (default: auto)")
    solve.add_argument("--time-limit", type=_positive, default=None, metavar="S", help="seconds")
    solve.add_argument("--rel-gap", "--gap", dest="rel_gap", type=float, default=0.01,
                       help="relative gap at which methods with a bound may stop (default 0.01)")
    solve.add_argument("--overlap", action="store_true", help="communication overlaps compute (max, not sum)")
    solve.add_argument("--solver", default=None, help="for method mip: auto, highs, cpsat, scip, cbc or gurobi")
    solve.add_argument("--option", action="append", metavar="KEY=VALUE",
                       help="a method option, repeatable (contiguous=false, threads=2, warm_start=none)")
    solve.add_argument("--log", action="store_true", help="stream the solver's log to stderr")
    solve.add_argument("--out", metavar="PLAN.json", help="write the plan JSON here")
    solve.set_defaults(run=_command_solve)

    evaluate = commands.add_parser("evaluate", help="score a split (reference split format or exactplace plan)")
    evaluate.add_argument("workload", help=workload_help)
    evaluate.add_argument("split", help="split JSON file")
    evaluate.add_argument("--objective", choices=OBJECTIVES, default="throughput")
    evaluate.add_argument("--overlap", action="store_true", help="communication overlaps compute (throughput)")
    evaluate.add_argument("--json", action="store_true", help="end with one JSON line holding `objective`")
    evaluate.set_defaults(run=_command_evaluate)

    info = commands.add_parser("info", help="describe a workload")
    info.add_argument("workload", help=workload_help)
    info.add_argument("--ideal-limit", type=int, default=1_000_000, help="count ideals up to this many")
    info.set_defaults(run=_command_info)

    methods = commands.add_parser("methods", help="list the placement methods")
    methods.set_defaults(run=_command_methods)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except ExactplaceError as error:
        print(f"exactplace {args.command}: error: {error}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except OSError as error:
        print(f"exactplace {args.command}: error: {error.strerror}: {error.filename}", file=sys.stderr)
        return EXIT_INPUT_ERROR
    except KeyboardInterrupt:
        print(f"exactplace {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


__all__ = ["build_parser", "main", "option_value"]
