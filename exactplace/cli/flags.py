"""The flags several commands share: argument types held to the Python API's own constraints, and the schedule
and constraint option groups with what they set."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from exactplace.core.cluster import MAX_INTER_MACHINE_COST
from exactplace.core.params import Constraint, Integer, Real

__all__ = ["add_constraint_options", "add_schedule_options", "argument", "byte_count", "constraint_flags",
           "cost_factor", "non_negative_count", "output_name", "positive_count", "positive_number", "relative_gap",
           "schedule_flags"]


def argument(parse: Callable[[str], Any], constraint: Constraint, requirement: str) -> Callable[[str], Any]:
    """An argparse type: ``parse`` the text, then hold it to the same constraint the Python API uses."""

    def convert(text: str) -> Any:
        try:
            value = parse(text)
        except ValueError:
            value = None
        if value is None or not constraint.accepts(value):
            raise argparse.ArgumentTypeError(f"must be {requirement}, got {text!r}")
        return value

    return convert


positive_number = argument(float, Real(low=0, low_closed=False, finite=False), "a positive number")
relative_gap = argument(float, Real(low=0, high=1, high_closed=False), "a number in [0, 1)")
non_negative_count = argument(int, Integer(low=0), "a non-negative integer")
positive_count = argument(int, Integer(low=1), "a positive integer")
byte_count = argument(float, Real(low=0, finite=False), "a non-negative number of bytes, or inf")
cost_factor = argument(float, Real(low=1, high=MAX_INTER_MACHINE_COST),
                          f"a number in [1, {MAX_INTER_MACHINE_COST:.0f}]")


def output_name(text: str) -> str:
    """An output file name: '' names none."""
    if text == "":
        raise argparse.ArgumentTypeError("'' names no file; give a file name, or - for standard output")
    return text


def add_schedule_options(parser: argparse.ArgumentParser) -> None:
    from exactplace.core.schedule import SCHEDULES

    parser.add_argument("--schedule", choices=SCHEDULES, default=None,
                        help="throughput under this pipeline schedule: bubble and in-flight memory counted")
    parser.add_argument("--microbatches", type=positive_count, default=None, metavar="M",
                        help="microbatches per step under --schedule")


def schedule_flags(args: argparse.Namespace) -> dict:
    """``--schedule`` and ``--microbatches`` as the objective options they set (solve checks they come together)."""
    flags = {"schedule": args.schedule, "microbatches": args.microbatches}
    return {k: v for k, v in flags.items() if v is not None}


def add_constraint_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("constraints (nodes by id or name; devices acc0, cpu0, or cpu for any core)")
    group.add_argument("--constraints", metavar="FILE.json", default=None,
                       help="a JSON object with keys pin, forbid, together, no_cut, max_stages, reserve")
    group.add_argument("--pin", action="append", metavar="NODE=DEVICE", help="keep a node on a device (repeatable)")
    group.add_argument("--forbid", action="append", metavar="NODE=DEVICE", help="keep a node off a device "
                       "(repeatable)")
    group.add_argument("--together", action="append", metavar="A,B", help="keep two nodes on one device (repeatable)")
    group.add_argument("--no-cut", action="append", metavar="A,B", help="no cut on the edge between two nodes "
                       "(repeatable)")
    group.add_argument("--max-stages", type=positive_count, default=None, metavar="N",
                       help="use at most N accelerators")
    group.add_argument("--reserve", type=float, default=None, metavar="BYTES",
                       help="memory to hold back on every accelerator")


def constraint_flags(args: argparse.Namespace, stated: Mapping[str, Any] | None = None) -> dict | None:
    """The constraints ``stated`` (a workload file's), with ``--constraints FILE``'s keys replacing theirs and the
    flags added (None: none at all)."""
    import json

    from exactplace.core.errors import ParameterError
    from exactplace.io import read_text

    spec: dict = dict(stated or {})
    if args.constraints is not None:
        try:
            given = json.loads(read_text(args.constraints, "Constraints"))
        except json.JSONDecodeError as error:
            raise ParameterError(f"--constraints {args.constraints!r} is not JSON: {error}.") from None
        if not isinstance(given, dict):
            raise ParameterError(f"--constraints {args.constraints!r} must hold a JSON object.")
        spec.update(given)

    def split(item: str, flag: str, sep: str, what: str) -> tuple[str, str]:
        left, found, right = item.partition(sep)
        if not found or not left.strip() or not right.strip():
            raise ParameterError(f"{flag} takes {what}. Got {item!r} instead.")
        return left.strip(), right.strip()

    for item in args.pin or []:
        node, device = split(item, "--pin", "=", "NODE=DEVICE")
        spec.setdefault("pin", {})[node] = device
    for item in args.forbid or []:
        node, device = split(item, "--forbid", "=", "NODE=DEVICE")
        spec.setdefault("forbid", {}).setdefault(node, []).append(device)
    for flag, key in (("--together", "together"), ("--no-cut", "no_cut")):
        for item in getattr(args, key) or []:
            spec.setdefault(key, []).append(list(split(item, flag, ",", "A,B (two nodes)")))
    if args.max_stages is not None:
        spec["max_stages"] = args.max_stages
    if args.reserve is not None:
        spec["reserve"] = args.reserve
    return spec or None
