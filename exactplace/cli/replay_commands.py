"""``exactplace replay`` and ``exactplace regress``: registered by :func:`add_commands` from the main parser."""

from __future__ import annotations

import argparse
import json
from typing import Any


def _command_replay(args: argparse.Namespace) -> int:
    from exactplace.cli.inputs import load_workload
    from exactplace.io import read_split_file
    from exactplace.runtime import replay

    workload = load_workload(args.workload)
    plan = read_split_file(args.plan, workload.graph, workload.cluster)
    result = replay(workload, plan.device, devices=args.devices, mode=args.mode, samples=args.samples,
                    repeats=args.repeats, replicas=plan.replicas)
    what = "time per sample" if args.mode == "pipelined" else "latency"
    print(f"replay of {workload.name} on {result.devices} ({args.mode}, {what}, model units; "
          f"1 unit = {result.time_unit:.3g} s; noise {100 * result.noise:.2g}% over {len(result.repeats)} repeats)")
    print(result.to_frame().to_string(float_format=lambda x: f"{x:.6g}"))
    if args.json:
        print(json.dumps({"measured": result.measured, "predicted": result.predicted, "ratio": result.ratio,
                          "noise": result.noise, "mode": result.mode, "devices": result.devices}))
    return 0


def _command_regress(args: argparse.Namespace) -> int:
    from exactplace.plot import against_baseline
    from exactplace.regress import regress

    return regress(args.suite, baseline=args.baseline, report_dir=args.report_dir,
                   update_baseline=args.update_baseline, ray_address=args.ray, draw=against_baseline)


def _at_least(low: int) -> Any:
    def parse(text: str) -> int:
        if not text.isdigit() or int(text) < low:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}")
        return int(text)

    return parse


def add_commands(commands: Any, workload_help: str) -> None:
    """Add ``replay`` and ``regress`` to the main parser's subcommands."""
    replay = commands.add_parser("replay", help="execute a placement for real and compare with the prediction")
    replay.add_argument("workload", help=workload_help)
    replay.add_argument("plan", help="plan JSON (exactplace solve --out) or a reference split")
    replay.add_argument("--devices", default="auto", help="auto, cpu, cpu:N, cuda or cuda:N (default auto)")
    replay.add_argument("--mode", choices=("pipelined", "single"), default="pipelined",
                        help="pipelined: time per sample (max-load); single: one sample's latency")
    replay.add_argument("--samples", type=_at_least(1), default=24, help="samples streamed (pipelined) or runs")
    replay.add_argument("--repeats", type=_at_least(1), default=3, help="independent replays (median)")
    replay.add_argument("--json", action="store_true", help="end with one JSON line: measured, predicted, ratio")
    replay.set_defaults(run=_command_replay)

    regress = commands.add_parser("regress", help="nightly job: solve and replay a suite, compare with a baseline")
    regress.add_argument("suite", help="suite YAML (workloads x methods x objectives)")
    regress.add_argument("--baseline", help="baseline JSON (default: SUITE.baseline.json beside the suite)")
    regress.add_argument("--report-dir", help="where the JSON and markdown reports go (default: the suite's folder)")
    regress.add_argument("--update-baseline", action="store_true", help="rewrite the baseline from this run")
    regress.add_argument("--ray", metavar="ADDRESS", help="run the jobs on a Ray cluster ('local' starts one)")
    regress.set_defaults(run=_command_regress)
