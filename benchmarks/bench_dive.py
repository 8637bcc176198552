"""The branch-and-price's dive: branching on pairs of classes alone against the dive first (the default), side by side.

One branch-and-price (``exactplace.bounds.device_sets.branching.branch_and_price``) at a threshold, from the DP's split
and the single classes, both ways in one run, one row each: its verdict (``split``: a split within the threshold found;
``refuted``; ``stopped`` at the time limit), the split's max load (the evaluator's), the seconds, the branch nodes and
the dive's generations, then the ratio of the seconds (pairs alone / with the dive) when the dive found a split (``>``:
pairs alone found none within the time limit). A threshold above the optimum is the case the dive is for (``L / (1 -
rel_gap)`` in the relay, a bound ``L`` proven); below it both refute, the dive's generations the cost.

Run: ``python benchmarks/bench_dive.py layer_resnet50_inference:33.22534 --seconds 600`` (a name from
``../shared/workloads/throughput`` or a path, then the thresholds).
"""

from __future__ import annotations

import argparse
import time
from unittest.mock import patch

import numpy as np
from bench_set_pricing import threshold_cases
from exactplace.formulations.device_sets import SetRelaxation, frontier_order

from exactplace import Workload, max_load
from exactplace.bounds.device_sets import branching
from exactplace.bounds.device_sets.branching import branch_and_price as tree
from exactplace.bounds.device_sets.columns import Pool


def branch_and_price(w: Workload, sets: SetRelaxation, seed: np.ndarray, threshold: float, seconds: float,
                     dive: bool) -> tuple[str, float | None, float, int, int]:
    """One branch-and-price: (verdict, the split's max load or None, seconds, nodes, dive generations)."""
    counts = {"pricings": 0, "nodes": 0, "thresholds": 0}
    started = time.monotonic()
    no_dive = patch.object(branching, "dive", lambda *_, **__: None) if not dive else None
    if no_dive is not None:
        no_dive.start()
    try:
        verdict, device = tree(sets, frontier_order(sets), Pool.seeded(sets, (seed,)), threshold, started + seconds,
                               None, counts, lambda: False, lambda _: None)
    finally:
        if no_dive is not None:
            no_dive.stop()
    value = None if device is None else max_load(w.graph, w.cluster, device[sets.unit])
    return verdict, value, time.monotonic() - started, counts["nodes"], counts.get("dives", 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", nargs="+", help="WORKLOAD:THRESHOLD[,THRESHOLD...] (a shared name or a JSON path)")
    parser.add_argument("--seconds", type=float, default=600.0, help="time limit of each branch-and-price")
    args = parser.parse_args()
    print("| workload | classes | k | threshold | branching | verdict | split | seconds | nodes | dive generations "
          "| ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, w, sets, seed, thresholds in threshold_cases(args.cases):
        for threshold in thresholds:
            rows = {dive: branch_and_price(w, sets, seed, threshold, args.seconds, dive) for dive in (False, True)}
            for dive, (verdict, value, seconds, nodes, dives) in rows.items():
                ratio = ""
                if dive and verdict == "split":  # (pairs alone stopped: at least the time limit over the dive's)
                    ratio = f"{'' if rows[False][0] == 'split' else '>'}{rows[False][2] / seconds:.1f}"
                print(f"| {name} | {sets.classes} | {sets.accelerators} | {threshold} | "
                      f"{'dive, then pairs' if dive else 'pairs'} | {verdict} | "
                      f"{'' if value is None else f'{value:.5f}'} | {seconds:.1f} | {nodes} | {dives} | {ratio} |",
                      flush=True)


if __name__ == "__main__":
    main()
