"""How fast does Ctrl-C stop each long-running method and command? (The bar: within 1 s.)

The cases and the way the signal is sent are those of ``tests/test_interrupt.py`` (imported from
there, so the two cannot drift apart): each command runs in a session of its own and SIGINT goes
to its whole process group, as a terminal sends it, once the method holds a placement (a progress
line with an incumbent) or after a fixed wait. The table has the seconds from the signal to the
end of the process, the exit code, and whether the best plan found was written.

Usage::

    python benchmarks/bench_interrupt.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_interrupt import LONG_SOLVES, TIME_LIMIT, interrupt_workloads, signal_group


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp())
    paths = interrupt_workloads(folder)
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


if __name__ == "__main__":
    main()
