"""The set bound's generation (dual smoothing, first center, master) against the default, side by side.

``--against weight``: a fixed weight 1/2 (Wentges) instead of the adapted one; ``--against center``: the first
master's duals as the first center (as before stop 39: ``set_bound.PACKING_CENTER`` off) instead of the packing
bound's (``_work_center``); ``--against partition``: the master partitions the classes from the start (as before stop
44: ``set_bound.COVERING_FIRST`` off) instead of covering them until its value nears ``k``; ``--against keep``: the
packing bound's point stays the center when a CPU core's pricing near it runs past its cap (as before stop 50:
``set_bound.LEAVE_PACKING_CENTER`` off) instead of the master's duals taking over.
One threshold's column generation (``set_bound._refute``: no branching, no other thresholds) from the DP's split and
the single classes, both ways in one run, one row each: how it ended (refuted, converged, or stopped at the time
limit), the seconds, the exact pricings, the master's last value (an upper bound on the relaxation's once free of
artificial columns) and the best Farley bound (the lower one: the threshold is refuted once it exceeds ``k``), then
the ratio of the seconds (baseline / default) when both ended.

Run: ``python benchmarks/bench_smoothing.py layer_resnet50_inference:33.20,33.2189
/tmp/heldout/LayerGraphs_inceptionv3_inference.json:51.095 --seconds 150 --against center`` (a name from
``../shared/workloads/throughput`` or a path, then the thresholds).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_set_pricing import threshold_cases
from exactplace.formulations.device_sets import SetRelaxation

from exactplace.bounds import device_sets as sb

#: The baselines: the row's name, and the module attribute it sets and to what.
BASELINES = {"weight": ("fixed 1/2", "_adapted_weight", lambda weight, *_: weight),
             "center": ("master's duals", "PACKING_CENTER", False),
             "partition": ("partition only", "COVERING_FIRST", False),
             "keep": ("packing center kept", "LEAVE_PACKING_CENTER", False)}


def generation(sets: SetRelaxation, seed: np.ndarray, threshold: float, seconds: float,
               baseline: str | None) -> tuple[str, float, int, float, float]:
    """One threshold's generation, the default's or the ``baseline``'s (a key of :data:`BASELINES`): (verdict,
    seconds, exact pricings, the master's last value, best Farley bound)."""
    replaced = {}
    if baseline is not None:
        _, name, stand_in = BASELINES[baseline]
        replaced[name] = getattr(sb, name)
        setattr(sb, name, stand_in)
    counts = {"pricings": 0, "nodes": 0, "thresholds": 0}
    started = time.monotonic()
    try:
        ended = sb._refute(sets, sb._Pool.seeded(sets, (seed,)), threshold, started + seconds, None, counts)
    finally:
        for name, original in replaced.items():
            setattr(sb, name, original)
    return ended.verdict, time.monotonic() - started, counts["pricings"], ended.upper, ended.farley


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", help="WORKLOAD:THRESHOLD[,THRESHOLD...] (a shared name or a JSON path)")
    parser.add_argument("--seconds", type=float, default=150.0, help="time limit of each generation")
    parser.add_argument("--against", choices=sorted(BASELINES), default="weight", help="the baseline")
    args = parser.parse_args()
    print("| workload | classes | k | threshold | run | verdict | seconds | pricings | master | Farley | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, _, sets, seed, thresholds in threshold_cases(args.cases):
        for threshold in thresholds:
            rows = {baseline: generation(sets, seed, threshold, args.seconds, baseline)
                    for baseline in (args.against, None)}
            for baseline, (verdict, seconds, pricings, master, farley) in rows.items():
                ended = all(row[0] != "stopped" for row in rows.values())
                ratio = f"{rows[args.against][1] / rows[None][1]:.2f}" if baseline is None and ended else ""
                print(f"| {name} | {sets.classes} | {sets.accelerators} | {threshold} | "
                      f"{'default' if baseline is None else BASELINES[baseline][0]} | {verdict} | {seconds:.1f} | "
                      f"{pricings} | {master:.4f} | {farley:.4f} | {ratio} |", flush=True)


if __name__ == "__main__":
    main()
