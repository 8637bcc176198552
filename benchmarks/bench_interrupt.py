"""How fast does Ctrl-C stop each long-running method and command? (The bar: within 1 s.)

The cases and the way the signal is sent are those of ``tests/test_interrupt.py`` (imported from
there, so the two cannot drift apart): each command runs in a session of its own and SIGINT goes
to its whole process group, as a terminal sends it, once the method holds a placement (a progress
line with an incumbent) or after a fixed wait. The table has the seconds from the signal to the
end of the process, the exit code, and whether the best plan found was written.

``--at-random N``: instead, each solve case N times with the signal at a random moment from 0.2 to
``--within`` seconds after the start (seeded): whatever the command is doing then (importing, the warm
start, a bound's phase, the solver), it must stop. The table counts the runs not ended within 10 s of
the signal (a Ctrl-C lost) and the exit codes (130; -2, killed by SIGINT, is CPython's end for a
Ctrl-C that lands before the command line's main runs).

Usage::

    python benchmarks/bench_interrupt.py [--repeats 3]
    python benchmarks/bench_interrupt.py --at-random 20 [--within 4] [--only mip-any-split,...] [--sigterm]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_interrupt import LONG_SOLVES, TIME_LIMIT, interrupt_workloads, signal_group


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--at-random", type=int, default=0, metavar="N",
                        help="each solve case N times, the signal at a random moment (see the module docstring)")
    parser.add_argument("--within", type=float, default=4.0, help="latest moment of the signal, seconds (4)")
    parser.add_argument("--only", default="", help="comma-separated case ids (all by default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sigterm", action="store_true", help="--at-random sends SIGTERM (exit 143), not SIGINT")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    paths = interrupt_workloads(folder)
    if args.at_random:
        at_random(paths, args.at_random, args.within, [c for c in args.only.split(",") if c], args.seed,
                  signal.SIGTERM if args.sigterm else signal.SIGINT)
        return
    print(f"SIGINT to the process group; load {os.getloadavg()[0]:.1f}; worst of {args.repeats} runs")
    print("| case | signal after | stop (s), worst | exit | plan written |")
    print("|---|---|---|---|---|")
    for case in LONG_SOLVES:
        method, objective, options, workload, ready, _ = case.values
        worst, codes, written = 0.0, set(), set()
        for _ in range(args.repeats):
            plan = folder / "plan.json"
            plan.unlink(missing_ok=True)
            code, _, _, seconds = signal_group(
                ["solve", str(paths[workload]), "--method", method, "--objective", objective, *options,
                 "--time-limit", TIME_LIMIT, "--out", str(plan)], ready, after=6.0)
            worst, codes = max(worst, seconds), codes | {code}
            written.add(plan.exists())
        when = "an incumbent" if ready else "6 s"
        print(f"| solve {case.id} | {when} | {worst:.2f} | {'/'.join(map(str, sorted(codes)))} | "
              f"{'/'.join('yes' if w else 'no' for w in sorted(written))} |", flush=True)
    commands = {
        "compare mip,greedy": ["compare", str(paths["small"]), "--methods", "mip,greedy", "--time-limit", TIME_LIMIT],
    }
    for name, command in commands.items():
        worst, codes = 0.0, set()
        for _ in range(args.repeats):
            code, _, _, seconds = signal_group(command, None, after=6.0)
            worst, codes = max(worst, seconds), codes | {code}
        print(f"| {name} | 6 s | {worst:.2f} | {'/'.join(map(str, sorted(codes)))} | - |", flush=True)
    code, _, _, seconds = signal_group(["solve", str(paths["small"]), "--method", "mip", "--time-limit", TIME_LIMIT],
                                       None, after=6.0, sig=signal.SIGTERM)
    print(f"| solve mip, SIGTERM | 6 s | {seconds:.2f} | {code} | - |")


LOST_AFTER = 10.0  # seconds from the signal: a run still going then did not stop on it


def at_random(paths: dict[str, Path], runs: int, within: float, only: list[str], seed: int,
              sig: int = signal.SIGINT) -> None:
    """Each solve case ``runs`` times, ``sig`` at a uniform moment in [0.2, within] s after its start."""
    rng = random.Random(seed)
    print(f"{signal.Signals(sig).name} to the process group at a random moment in [0.2, {within:g}] s; "
          f"load {os.getloadavg()[0]:.1f}; {runs} runs a case")
    print(f"| case | runs | not stopped within {LOST_AFTER:g} s | stop (s), worst | exits |")
    print("|---|---|---|---|---|")
    for case in LONG_SOLVES:
        method, objective, options, workload, _, _ = case.values
        if only and case.id not in only:
            continue
        lost, worst, codes = 0, 0.0, []
        for _ in range(runs):
            code, _, err, seconds = signal_group(
                ["solve", str(paths[workload]), "--method", method, "--objective", objective, *options,
                 "--time-limit", TIME_LIMIT], None, after=rng.uniform(0.2, within), sig=sig)
            lost += seconds > LOST_AFTER
            if "Traceback" in err:
                print(err, file=sys.stderr)
            worst = max(worst, seconds)
            # The uncaught Ctrl-C's one line (exactplace.core.interrupt.quiet_interrupt): before main ran
            early = err.rstrip().endswith("exactplace: interrupted") and "exactplace solve:" not in err
            codes.append(f"{code}{' before main' if early else ''}")
        exits = ", ".join(f"{code} x{codes.count(code)}" for code in sorted(set(codes)))
        print(f"| solve {case.id} | {runs} | {lost} | {worst:.2f} | {exits} |", flush=True)


if __name__ == "__main__":
    main()
