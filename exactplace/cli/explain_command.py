"""``exactplace explain``: registered by :func:`add_command` from the main parser.

Reads a workload and a plan (or a reference split), certifies the optimum of the plan's problem (its options and
constraints), says how far the plan is from it and the first move to make when it is not optimal, then explains
the plan (or, when it is not optimal, the optimum): the bottleneck and what its load is made of, each
accelerator's memory, and each constraint lifted and solved again (:func:`exactplace.explain.explain`).
``--json`` ends with one JSON object. Exit status: 0; 1 the plan breaks a rule of its problem; 2 bad input.
"""

from __future__ import annotations

import argparse
import json
from typing import Any


def _command_explain(args: argparse.Namespace) -> int:
    from exactplace.cli.inputs import input_path, load_workload
    from exactplace.core.errors import ParameterError
    from exactplace.core.objectives import SCORING_OPTIONS
    from exactplace.evaluators import check_feasibility, summarize_violations
    from exactplace.explain import explain, judge
    from exactplace.io import read_text, split_file_from_text

    workload = load_workload(input_path(args.workload))
    graph, cluster = workload.graph, workload.cluster
    plan = split_file_from_text(read_text(args.plan, "Split"), graph, cluster, where=f"Split {args.plan!r}",
                                source=f"file {args.plan!r}")
    if (plan.objective or "throughput") != "throughput" or plan.replicas is not None:
        raise ParameterError("explain covers throughput plans without replicated stages.")
    options = {k: v for k, v in plan.options.items() if k in SCORING_OPTIONS["throughput"]}
    if options.get("gpipe"):
        raise ParameterError("explain covers throughput plans without gpipe=True yet.")
    violations = check_feasibility(graph, cluster, plan.device, schedule=options.get("schedule"),
                                   microbatches=options.get("microbatches"), constraints=plan.constraints)
    if violations:
        print(f"the plan breaks {len(violations)} rule(s) of its problem:")
        for line in summarize_violations(violations):
            print(f"  {line}")
        return 1
    verdict = judge(graph, cluster, plan.device, options, plan.constraints, time_limit=args.time_limit)
    print(verdict.report())
    subject = verdict.plan if verdict.move is None else verdict.optimum
    if verdict.move is not None:
        print("why the optimum is what it is:")
    why = explain(subject, time_limit=args.time_limit)
    print(why.report(top=args.top))
    if args.json:
        print(json.dumps(_as_json(verdict, why)))
    return 0


def _as_json(verdict: Any, why: Any) -> dict[str, Any]:
    from exactplace.io.tables import finite

    move = verdict.move
    return {
        "value": finite(verdict.value), "optimum": finite(verdict.optimum.objective),
        "bound": finite(verdict.optimum.bound), "excess": finite(verdict.excess),
        "first_move": None if move is None else {"nodes": list(move.nodes), "from": move.source, "to": move.target,
                                                 "after": finite(move.after)},
        "bottleneck": why.bottleneck, "load": finite(why.load),
        "contributions": [{"node": int(r.node), "name": r.name, "kind": r.kind, "part": r.part,
                           "seconds": float(r.seconds)} for r in why.contributions.itertuples()],
        "constraints": [{"constraint": c.constraint, "binding": c.binding, "optimum": finite(c.optimum),
                         "bound": finite(c.bound), "saving": finite(c.saving)} for c in why.lifted],
    }


def add_command(commands: Any, workload_help: str) -> None:
    """Add ``explain`` to the main parser's subcommands."""
    from exactplace.cli.flags import non_negative_count, positive_number

    explain = commands.add_parser("explain", help="why a plan is what it is: bottleneck, memory, the cost of each "
                                  "constraint, and for a split that is not optimal the first move to make")
    explain.add_argument("workload", help=workload_help)
    explain.add_argument("plan", help="plan JSON (exactplace solve --out) or a reference split")
    explain.add_argument("--time-limit", type=positive_number, default=None, metavar="S",
                         help="seconds for each solve (the optimum, each constraint lifted)")
    explain.add_argument("--top", type=non_negative_count, default=5, metavar="N",
                         help="the bottleneck's largest contributions shown (default 5)")
    explain.add_argument("--json", action="store_true", help="end with one JSON object")
    explain.set_defaults(run=_command_explain)
