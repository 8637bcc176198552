"""Drawing time of every picture of ``exactplace.plot``, up to 1,000+ nodes.

Prints one row per workload and picture: nodes, marks drawn (the placement graph collapses
chains), seconds to draw and render a PNG at 100 dpi, its size in pixels and kB, and the peak
memory of the drawing (tracemalloc). The placement drawn is the DP's (DPL's where the DP does not
fit). Run: ``python benchmarks/bench_plot.py`` (the shared workloads are used when present).
"""

from __future__ import annotations

import io
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.image import imread

import exactplace as ep
from exactplace import plot
from exactplace.io import Workload

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "workloads"


def random_dag(n: int, seed: int = 0) -> Workload:
    """The 1,000-node graph of ``tests/test_plot.py``: each node reads one or two of the 20 before it."""
    rng = np.random.default_rng(seed)
    nodes = [ep.Node(i, float(rng.uniform(1, 5)), float(rng.uniform(0.1, 1)), memory=1e6,
                     comm=float(rng.uniform(0, 0.5))) for i in range(n)]
    edges = {(u, v) for v in range(1, n)
             for u in rng.choice(np.arange(max(0, v - 20), v), size=min(v, int(rng.integers(1, 3))),
                                 replace=False).tolist()}
    return Workload(ep.Graph(nodes, sorted(edges)), ep.Cluster(accelerators=4, memory=1e9, cpus=1), name=f"random{n}")


def workloads() -> list[Workload]:
    found = [ep.read_workload(ep.workload_path(name)) for name in ep.shipped_workloads()]
    for name in ("throughput/op_resnet50_training", "throughput/layer_gnmt_training", "latency/op_resnet50_inference"):
        if (SHARED / f"{name}.json").exists():
            found.append(ep.read_workload(SHARED / f"{name}.json"))
    return [*found, random_dag(1000)]


def main() -> None:
    rows = []
    for w in workloads():
        try:
            p = ep.solve(w, method="dp")
        except ep.TooLargeError:
            p = ep.solve(w, method="dpl")
        pictures = {
            "placement_graph": lambda w=w, p=p: plot.placement_graph(w, p),
            "load_bars": lambda w=w, p=p: plot.load_bars(w, p),
            "overview": lambda w=w, p=p: plot.overview(w, p),
            "gantt latency": lambda w=w, p=p: plot.gantt(w, p, "latency"),
            "gantt makespan": lambda w=w, p=p: plot.gantt(w, p, "makespan"),
        }
        marks = len(plot.layered_layout(w.graph, p.device).members)
        for name, draw in pictures.items():
            tracemalloc.start()
            start = time.perf_counter()
            buffer = io.BytesIO()
            draw().savefig(buffer, format="png", dpi=100)
            seconds = time.perf_counter() - start
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            height, width = imread(io.BytesIO(buffer.getvalue())).shape[:2]
            rows.append({"workload": w.name, "nodes": w.graph.n, "marks": marks, "picture": name,
                         "seconds": round(seconds, 3), "pixels": f"{width}x{height}",
                         "kB": round(len(buffer.getvalue()) / 1e3), "peak MiB": round(peak / 2**20, 1)})
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    print(f"\nslowest: {table['seconds'].max():.3f} s ({table.loc[table['seconds'].idxmax(), 'picture']}, "
          f"{table.loc[table['seconds'].idxmax(), 'workload']})")


if __name__ == "__main__":
    main()
