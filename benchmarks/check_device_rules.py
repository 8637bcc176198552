"""Device rules on every shared workload: does the MIP hold them, certify them, and how long does it take?

For each shared throughput workload, three sets of the constraints lowering cannot hold (device rules,
``exactplace.core.constraints.DeviceRules``): the first node pinned to the last accelerator and the last node to
the first (two different accelerators, beside the CPU cores); the heaviest node forbidden the first two
accelerators; and ``max_stages`` one below the accelerators on a cluster whose first accelerator has half the
memory (accelerators that differ). Each is solved by ``solve`` (auto, which takes ``mip``) and checked from
outside: every constraint holds (``check_feasibility``), the value is at least the unconstrained optimum, and the
assignment IP (``contiguous=False``, a larger space) is at most the chain IP's value within their gaps.

Usage: ``python benchmarks/check_device_rules.py [--time-limit 60]``
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from exactplace import Cluster, check_feasibility, read_workload, solve

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "workloads" / "throughput"


def rule_sets(graph, cluster) -> list[tuple[str, Cluster, dict]]:
    """The three rule sets of the module docstring, with the cluster each is solved on."""
    names, k = cluster.device_names(), cluster.accelerators
    order = graph.topological_order
    first, last = int(graph.ids[order[0]]), int(graph.ids[order[-1]])
    heaviest = int(graph.ids[np.argmax(np.where(graph.supported, graph.acc_time, 0))])
    memory = cluster.memory.astype(float).copy()
    memory[0] /= 2
    halved = Cluster(k, memory.tolist(), cluster.cpus, cluster.speed.tolist())
    return [("pin first/last to two accelerators", cluster, {"pin": {first: names[k - 1], last: names[0]}}),
            ("forbid the heaviest acc0, acc1", cluster, {"forbid": {heaviest: names[:2]}}),
            (f"max_stages {k - 1}, acc0 half memory", halved, {"max_stages": k - 1})]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    print("| workload | rules | status | value | gap | free optimum | ratio | any-split IP | holds | s |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|---:|")
    failures = 0
    for path in sorted(SHARED.glob("*.json")):
        workload = read_workload(path)
        for words, cluster, spec in rule_sets(workload.graph, workload.cluster):
            free = solve(workload.graph, cluster, time_limit=args.time_limit)
            start = time.perf_counter()
            plan = solve(workload.graph, cluster, constraints=spec, time_limit=args.time_limit)
            seconds = time.perf_counter() - start
            wider = solve(workload.graph, cluster, constraints=spec, method="mip", contiguous=False,
                          time_limit=args.time_limit)
            holds = plan.has_solution and check_feasibility(workload.graph, cluster, plan.device,
                                                            constraints=spec) == []
            tolerance = 1e-6 * plan.objective if plan.has_solution else 0.0
            sound = holds and plan.objective >= (free.bound or 0.0) - tolerance and (
                not wider.has_solution or wider.bound is None or wider.bound <= plan.objective + tolerance)
            failures += not sound
            print(f"| {path.stem} | {words} | {plan.status.value} | {plan.objective:.6g} | {plan.gap:.2e} | "
                  f"{free.objective:.6g} | {plan.objective / free.objective:.3f} | {wider.objective:.6g} "
                  f"({wider.status.value}) | {'yes' if sound else 'NO'} | {seconds:.1f} |", flush=True)
    print(f"\n{failures} unsound")


if __name__ == "__main__":
    main()
