"""Do the heuristics honour ``time_limit`` on the huge inputs users reported?

Four cases, each in a fresh process, timing the whole ``solve`` call (input checks, the method and
the referee's evaluation; building or reading the input is shown apart):

* ``metis`` on a PipeDream profile of 100,000 layers (200,000 nodes when training; a chain with a
  skip edge every 7 layers), 8 accelerators and a CPU, limit 10 s;
* ``celeritas`` (makespan) on a 100,000-node chain (``bench_time_limits.build``), limit 10 s;
* ``dpl`` on a 1,000,000-node chain, limit 30 s;
* ``m-topo`` (makespan) on a 3,000-node DAG whose workload states 10**9 accelerators (read as the
  command line reads it: one accelerator per node), limit 10 s.

The bar: wall / limit at most 2. Usage::

    python benchmarks/bench_huge_limits.py [--cases metis,celeritas,dpl,m-topo]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from bench_time_limits import build

#: case -> (method, objective, input, nodes, time limit)
CASES = {
    "metis": ("metis", "throughput", "pipedream", 100_000, 10.0),
    "celeritas": ("celeritas", "makespan", "chain", 100_000, 10.0),
    "dpl": ("dpl", "throughput", "chain", 1_000_000, 30.0),
    "m-topo": ("m-topo", "makespan", "dag-1e9", 3_000, 10.0),
}


def pipedream_text(layers: int, seed: int = 0) -> str:
    """A PipeDream profile: a chain of ``layers`` layers with a skip edge every 7 layers."""
    rng = np.random.default_rng(seed)
    fw, bw = rng.uniform(0.5, 5, layers), rng.uniform(0.5, 5, layers)
    act, par = rng.uniform(1e6, 1e8, layers), rng.uniform(0, 1e6, layers)
    lines = [f"node{i} -- Conv2d(x) -- forward_compute_time={fw[i]:.3f}, backward_compute_time={bw[i]:.3f}, "
             f"activation_size={act[i]:.3f}, parameter_size={par[i]:.3f}" for i in range(layers)]
    for i in range(layers - 1):
        lines.append(f"\tnode{i} -- node{i + 1}")
        if i % 7 == 0 and i + 3 < layers:
            lines.append(f"\tnode{i} -- node{i + 3}")
    return "\n".join(lines) + "\n"


def workload(kind: str, n: int, folder: str):
    """The (graph, cluster) of one case, read as the command line reads it where it has a file."""
    from exactplace.cli.inputs import load_workload
    from exactplace.io import Workload, workload_to_dict

    if kind == "pipedream":
        path = Path(folder) / "huge.graph.txt"
        path.write_text(pipedream_text(n))
        w = load_workload(str(path), {"accelerators": 8, "cpus": 1})
        return w.graph, w.cluster
    if kind == "dag-1e9":
        graph, cluster = build("dag", n)
        data = workload_to_dict(Workload(graph, cluster, name="dag"))
        data["maxFPGAs"] = 10**9
        path = Path(folder) / "dag.json"
        path.write_text(json.dumps(data))
        w = load_workload(str(path))
        return w.graph, w.cluster
    return build(kind, n)


def one(case: str) -> dict:
    """Run one case in this process; what the table shows of it."""
    import exactplace as ep

    method, objective, kind, n, limit = CASES[case]
    with tempfile.TemporaryDirectory() as folder:
        start = time.monotonic()
        graph, cluster = workload(kind, n, folder)
        built = time.monotonic() - start
    start = time.monotonic()
    try:
        p = ep.solve(graph, cluster, objective=objective, method=method, time_limit=limit)
        outcome = {"status": p.status.value, "limit": None if p.limit is None else p.limit.value}
    except ep.ExactplaceError as error:
        outcome = {"status": "refused", "limit": None, "note": str(error)[:90]}
    outcome.update(wall=time.monotonic() - start, built=built, nodes=graph.n, devices=cluster.num_devices,
                   peak_mib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    print(f"load {os.getloadavg()[0]:.1f}")
    print("| case | method | nodes | devices | limit (s) | input (s) | solve (s) | solve / limit | peak MiB | status "
          "| limit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        method, _, kind, _, limit = CASES[case]
        done = subprocess.run([sys.executable, __file__, "--one", case], capture_output=True, text=True,
                              timeout=limit * 20 + 600)
        if done.returncode:
            print(f"| {case} | {method} | | | {limit:g} | | | | | crashed: {done.stderr.strip()[-90:]} | |")
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"| {case} ({kind}) | {method} | {r['nodes']:,} | {r['devices']:,} | {limit:g} | {r['built']:.1f} | "
              f"{r['wall']:.1f} | {r['wall'] / limit:.2f} | {r['peak_mib']:.0f} | {r['status']} | "
              f"{r['limit'] or ''} |", flush=True)


if __name__ == "__main__":
    main()
