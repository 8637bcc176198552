"""The set bound's dual smoothing: the adapted weight (the default) against a fixed weight 1/2 (Wentges), side by side.

One threshold's column generation (``exactplace.bounds.device_sets.generation.refute``: no branching, no other
thresholds) from the DP's split and the single classes, both ways in one run, one row each: how it ended (refuted,
converged, or stopped at the time limit), the seconds, the exact pricings, the master's last value (an upper bound on
the relaxation's once free of artificial columns) and the best Farley bound (the lower one: the threshold is refuted
once it exceeds ``k``), then the ratio of the seconds (fixed / adapted) when both ended.

Run: ``python benchmarks/bench_smoothing.py layer_resnet50_inference:33.20,33.2189
/tmp/heldout/LayerGraphs_inceptionv3_inference.json:51.095 --seconds 150`` (a name from
``../shared/workloads/throughput`` or a path, then the thresholds).
"""

from __future__ import annotations

import argparse
import time
from unittest.mock import patch

import numpy as np
from bench_set_pricing import threshold_cases
from exactplace.formulations.device_sets import SetRelaxation

from exactplace.bounds.device_sets import generation as generation_module
from exactplace.bounds.device_sets.columns import Pool
from exactplace.bounds.device_sets.generation import refute


def generation(sets: SetRelaxation, seed: np.ndarray, threshold: float, seconds: float,
               fixed: bool) -> tuple[str, float, int, float, float]:
    """One threshold's generation, its smoothing weight adapted or (``fixed``) kept at its start: (verdict, seconds,
    exact pricings, the master's last value, best Farley bound)."""
    counts = {"pricings": 0, "nodes": 0, "thresholds": 0}
    started = time.monotonic()
    weight = patch.object(generation_module, "adapted_weight", lambda weight, *_: weight) if fixed else None
    if weight is not None:
        weight.start()
    try:
        ended = refute(sets, Pool.seeded(sets, (seed,)), threshold, started + seconds, None, counts)
    finally:
        if weight is not None:
            weight.stop()
    return ended.verdict, time.monotonic() - started, counts["pricings"], ended.upper, ended.farley


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", help="WORKLOAD:THRESHOLD[,THRESHOLD...] (a shared name or a JSON path)")
    parser.add_argument("--seconds", type=float, default=150.0, help="time limit of each generation")
    args = parser.parse_args()
    print("| workload | classes | k | threshold | weight | verdict | seconds | pricings | master | Farley | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, _, sets, seed, thresholds in threshold_cases(args.cases):
        for threshold in thresholds:
            rows = {fixed: generation(sets, seed, threshold, args.seconds, fixed) for fixed in (True, False)}
            for fixed, (verdict, seconds, pricings, master, farley) in rows.items():
                ended = all(row[0] != "stopped" for row in rows.values())
                ratio = f"{rows[True][1] / rows[False][1]:.2f}" if not fixed and ended else ""
                print(f"| {name} | {sets.classes} | {sets.accelerators} | {threshold} | "
                      f"{'fixed 1/2' if fixed else 'adapted'} | {verdict} | {seconds:.1f} | "
                      f"{pricings} | {master:.4f} | {farley:.4f} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
