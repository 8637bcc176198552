"""Does ``explain`` name the right bottleneck and the right binding constraints on every shared workload?

For each shared throughput workload (and each with an extra user constraint, ``max_stages`` one below its
accelerators, so that a constraint that binds is among them): the plan of ``solve`` (auto), its explanation, then
an independent check of each claim: the bottleneck against the evaluator's loads, and each constraint lifted
solved again from cold (no warm start) by the same method, whose optimum must equal the one ``explain`` reports
within the two solves' gaps. A constraint called binding must have a saving that the cold solve measures too; one
called not binding must leave the cold optimum at the plan's value.

Usage: ``python benchmarks/check_explain.py [--time-limit 60]``
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from pathlib import Path

import numpy as np

from exactplace import Cluster, Graph, Placement, read_workload, solve
from exactplace.core.constraints import Constraints
from exactplace.evaluators.max_load import device_loads
from exactplace.explain import explain

SHARED = Path(__file__).resolve().parents[1] / ".." / "shared" / "workloads" / "throughput"


def _cold(plan: Placement, constraint: str, time_limit: float) -> Placement:
    """The lifted instance solved from cold, as the check restates it."""
    graph, cluster = plan.graph, plan.cluster
    user = plan.info.get("constraints")
    if constraint == "the memory limit of the accelerators":
        cluster = Cluster(cluster.accelerators, math.inf, cluster.cpus)
    elif constraint.startswith("the memory limit of acc"):  # "... of acc3 alone"
        memory = cluster.memory.astype(float).copy()
        memory[int(constraint.split()[4][3:])] = math.inf
        cluster = Cluster(cluster.accelerators, memory.tolist(), cluster.cpus)
    elif constraint.startswith("the colour classes"):
        graph = Graph([dataclasses.replace(n, color=None) for n in graph.nodes()], graph.edges())
    elif constraint.startswith("max_stages"):
        rest = {k: v for k, v in (user or {}).items() if k != "max_stages"}
        user = rest or None
    return solve(graph, cluster, time_limit=time_limit, warm_start=None,
                 constraints=Constraints.from_dict(user) if user else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=60.0)
    args = parser.parse_args()
    print("| workload | constraint | binding | saving | explain's optimum | cold optimum | cold status | agrees | s |")
    print("|---|---|---|---:|---:|---:|---|---|---:|")
    failures = 0
    for path in sorted(SHARED.glob("*.json")):
        workload = read_workload(path)
        for extra in (None, {"max_stages": workload.cluster.accelerators - 1}):
            start = time.perf_counter()
            plan = solve(workload, time_limit=args.time_limit, constraints=extra)
            why = explain(plan, time_limit=args.time_limit)
            loads = device_loads(plan.graph, plan.cluster, plan.device).load()
            bottleneck_ok = loads[plan.cluster.device_names().index(why.bottleneck)] == loads.max()
            name = workload.name + (f" (max_stages {extra['max_stages']})" if extra else "")
            if not bottleneck_ok:
                failures += 1
                print(f"| {name} | bottleneck {why.bottleneck} | | | | | | NO | |")
            for lifted in why.lifted:
                cold = _cold(plan, lifted.constraint, args.time_limit)
                slack = max(plan.gap or 0.0, cold.gap or 0.0, lifted.placement.gap or 0.0) + 1e-6
                same = abs(cold.objective - lifted.optimum) <= slack * max(cold.objective, lifted.optimum)
                unchanged = cold.objective >= plan.objective * (1 - slack)
                agrees = same and (lifted.binding is None or lifted.binding == (not unchanged))
                failures += not agrees
                print(f"| {name} | {lifted.constraint} | {lifted.binding} | {100 * (lifted.saving or 0):.3g}% | "
                      f"{lifted.optimum:.6g} | {cold.objective:.6g} | {cold.status} | {'yes' if agrees else 'NO'} | "
                      f"{time.perf_counter() - start:.1f} |", flush=True)
    print(f"\n{failures} disagreement(s)")
    raise SystemExit(1 if failures else 0)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
