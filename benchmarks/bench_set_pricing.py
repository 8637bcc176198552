"""The set bound's pricing, with its floor raised (the default) and as asked, side by side on the same duals.

The pricing (``dp_native/set_pricing.hpp``) raises its floor most of the way to the value of a greedy set and of any
partial set it meets that is a set as it stands: the same maximum, fewer states alive. This script records the
accelerators' pricings of a set-bound run on each workload (the duals its generation met, at its thresholds), then
prices each again both ways and prints one row per workload: the calls, seconds each way, their ratio, and whether
every maximum agreed (to 1e-9, relative).

Run: ``python benchmarks/bench_set_pricing.py layer_resnet50_inference
/tmp/heldout/LayerGraphs_inceptionv3_inference.json --seconds 60`` (a name from ``../shared/workloads/throughput``
or a path; ``--seconds``: the recorded run's time limit).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from exactplace.formulations.device_sets import SetRelaxation, frontier_order

from exactplace import Workload, read_workload, solve
from exactplace.backends import set_bound as sb

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads" / "throughput"


def workload_file(name: str) -> Path:
    """A JSON path as given, else the shared throughput workload of that name."""
    return Path(name) if name.endswith(".json") else SHARED / f"{name}.json"


def threshold_cases(cases: list[str]) -> Iterator[tuple[str, Workload, SetRelaxation, np.ndarray, list[float]]]:
    """For each ``WORKLOAD:THRESHOLD[,THRESHOLD...]`` (a shared name or a JSON path): the workload's name, the
    workload, its set relaxation, the DP's split (the seed of every run) and the thresholds."""
    for case in cases:
        name, thresholds = case.rsplit(":", 1)
        path = workload_file(name)
        w = read_workload(path)
        yield path.stem, w, SetRelaxation.of(w.graph, w.cluster), solve(w, method="dp").device, [
            float(t) for t in thresholds.split(",")]


def recorded_pricings(path: Path, seconds: float) -> list[tuple[np.ndarray, float, float, int]]:
    """The accelerators' pricings (duals, threshold, floor, keep) of a set-bound run from the DP's split, aimed at
    its value less 1% (below the non-contiguous optimum on the workloads measured: thresholds refuted and not)."""
    w = read_workload(path)
    start = solve(w, method="dp")
    calls: list[tuple[np.ndarray, float, float, int]] = []
    price = sb.Pricer.price

    def recording(self: sb.Pricer, duals: np.ndarray, threshold: float, floor: float = 1.0, keep: int = 10,
                  raise_floor: bool = True, deadline: float = np.inf) -> tuple[float, list[np.ndarray]]:
        if floor >= 1.0:  # the accelerators' pricing (the CPU cores' knapsack asks at 0)
            calls.append((np.array(duals), threshold, floor, keep))
        return price(self, duals, threshold, floor, keep, raise_floor, deadline)

    sb.Pricer.price = recording
    try:
        sb.set_bound(w.graph, w.cluster, target=0.99 * start.objective, seeds=(start.device,), time_limit=seconds,
                     branch=False)
    finally:
        sb.Pricer.price = price
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="+", help="shared workload names or JSON paths")
    parser.add_argument("--seconds", type=float, default=120.0, help="the recorded set-bound run's time limit")
    args = parser.parse_args()
    print("| workload | classes | pricings | as asked (s) | raised (s) | ratio | same maxima |")
    print("|---|---|---|---|---|---|---|")
    for name in args.workloads:
        path = workload_file(name)
        w = read_workload(path)
        sets = SetRelaxation.of(w.graph, w.cluster)
        pricer = sb.Pricer(sets.acc, sets.on_acc, sets.group_cost, sets.members, frontier_order(sets))
        calls = recorded_pricings(path, args.seconds)
        seconds = {False: 0.0, True: 0.0}
        agree = True
        for duals, threshold, floor, keep in calls:
            values = {}
            for raise_floor in (False, True):
                started = time.perf_counter()
                values[raise_floor], _ = pricer.price(duals, threshold, floor, keep, raise_floor=raise_floor)
                seconds[raise_floor] += time.perf_counter() - started
            agree &= abs(values[False] - values[True]) <= 1e-9 * max(1.0, abs(values[False]))
        print(f"| {path.stem} | {sets.classes} | {len(calls)} | {seconds[False]:.1f} | {seconds[True]:.1f} | "
              f"{seconds[False] / max(seconds[True], 1e-9):.2f} | {'yes' if agree else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
