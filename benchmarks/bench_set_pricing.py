"""The set bound's pricing, side by side on the same duals: with its floor raised (the default) and as asked, or
(``--against REV``) this tree's DP and another revision's.

The pricing (``dp_native/set_pricing.hpp``) raises its floor most of the way to the value of a greedy set and of any
partial set it meets that is a set as it stands: the same maximum, fewer states alive. This script records the
accelerators' pricings of a set-bound run on each workload (the duals its generation met, at its thresholds), then
prices each again both ways and prints one row per workload: the calls, seconds each way, their ratio, whether every
maximum agreed (to 1e-9, relative; where both ended) and how many pricings each way stopped at the memory budget
(``pricing_memory`` of ``DeviceSetSettings``; the recorded run's pricings at smoothed duals are cut short by time, here
they are not). With ``--against REV`` the other way is REV's ``dp_native/set_pricing.cpp``, built with g++ as a module
of its own (``benchmarks/pricing_baseline_binding.cpp``, for the older ``SetPricer`` interface), both with the floor
raised; the two alternate first from call to call.

With ``--instance-against REV`` both ways are this tree's DP, on REV's instance (its communication groups and its
class order, ``formulations/device_sets.py``) and on this tree's: the same classes, so the same duals.

Run: ``python benchmarks/bench_set_pricing.py layer_resnet50_inference
/tmp/heldout/LayerGraphs_inceptionv3_inference.json --seconds 60 [--against 4ff5243]`` (a name from
``../shared/workloads/throughput`` or a path; ``--seconds``: the recorded run's time limit).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
from exactplace.formulations.device_sets import SetRelaxation, frontier_order

from exactplace import Workload, read_workload, solve
from exactplace.bounds import device_sets as sb
from exactplace.bounds.device_sets.pricing import capacity, native_instance

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "workloads" / "throughput"


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
                  raise_floor: bool = True, deadline: float = np.inf,
                  cancel: threading.Event | None = None) -> tuple[float, list[np.ndarray]]:
        if floor >= 1.0:  # the accelerators' pricing (the CPU cores' knapsack asks at 0)
            calls.append((np.array(duals), threshold, floor, keep))
        return price(self, duals, threshold, floor, keep, raise_floor, deadline, cancel)

    sb.Pricer.price = recording
    try:
        sb.set_bound(w.graph, w.cluster, target=0.99 * start.objective, seeds=(start.device,), time_limit=seconds,
                     branch=False)
    finally:
        sb.Pricer.price = price
    return calls


def revision_files(revision: str, paths: tuple[str, ...], prefix: str) -> Path:
    """A new temporary folder holding ``revision``'s copy of each file (a path in the repository) by its name."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    for path in paths:
        source = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{path}"], check=True,
                                capture_output=True).stdout
        (folder / Path(path).name).write_bytes(source)
    return folder


def module_at(name: str, location: Path) -> ModuleType:
    """The module ``name`` loaded from ``location`` (a source file or a built extension), registered in
    ``sys.modules`` (a dataclass in it looks its module up there)."""
    spec = importlib.util.spec_from_file_location(name, location)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def baseline_module(revision: str) -> ModuleType:
    """``revision``'s set pricing DP, built in a temporary folder as the module ``pricing_baseline``."""
    import pybind11

    folder = revision_files(revision, tuple(f"dp_native/{name}" for name in ("set_pricing.hpp", "set_pricing.cpp",
                                                                              "stop.hpp")), "pricing_baseline_")
    target = folder / f"pricing_baseline{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run(["g++", "-O3", "-shared", "-std=c++17", "-fPIC", f"-I{pybind11.get_include()}",
                    f"-I{sysconfig.get_paths()['include']}", f"-I{folder}",
                    str(ROOT / "benchmarks" / "pricing_baseline_binding.cpp"), str(folder / "set_pricing.cpp"),
                    "-o", str(target)], check=True)
    return module_at("pricing_baseline", target)


def relaxation_module(revision: str) -> ModuleType:
    """``revision``'s ``formulations/device_sets.py`` (its groups and its class order), loaded as a module of this
    tree's package (its relative imports are this tree's)."""
    folder = revision_files(revision, ("formulations/device_sets.py",), "relaxation_baseline_")
    return module_at(f"exactplace.formulations._device_sets_{revision}", folder / "device_sets.py")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="+", help="shared workload names or JSON paths")
    parser.add_argument("--seconds", type=float, default=120.0, help="the recorded set-bound run's time limit")
    parser.add_argument("--against", metavar="REV", help="compare with this git revision's DP (not floor as asked)")
    parser.add_argument("--instance-against", metavar="REV",
                        help="compare with this git revision's groups and class order, priced by this tree's DP")
    args = parser.parse_args()
    baseline = baseline_module(args.against) if args.against else None
    former = relaxation_module(args.instance_against) if args.instance_against else None
    named = (f"{args.against} (s)", "this tree (s)") if baseline else (
        f"{args.instance_against}'s instance (s)", "this tree's (s)") if former else ("as asked (s)", "raised (s)")
    print(f"| workload | classes | pricings | {named[0]} | {named[1]} | ratio | same maxima | over the memory budget |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.workloads:
        path = workload_file(name)
        w = read_workload(path)
        sets = SetRelaxation.of(w.graph, w.cluster)
        order = frontier_order(sets)
        pricer = sb.Pricer(sets.acc, sets.on_acc, sets.group_cost, sets.members, order)
        if former is not None:
            old = former.SetRelaxation.of(w.graph, w.cluster)
            other_pricer = sb.Pricer(old.acc, old.on_acc, old.group_cost, old.members, former.frontier_order(old))
            ways = (lambda d, t, f, k, other=other_pricer: other.price(d, t, f, k)[0],
                    lambda d, t, f, k, pricer=pricer: pricer.price(d, t, f, k)[0])
        elif baseline is not None:
            other = baseline.SetPricer(**native_instance(sets.acc, sets.on_acc, sets.group_cost, sets.members, order))
            ways = (lambda d, t, f, k, other=other: other.price(d, capacity(t), f, k),
                    lambda d, t, f, k, pricer=pricer: pricer.price(d, t, f, k)[0])
        else:
            ways = (lambda d, t, f, k, pricer=pricer: pricer.price(d, t, f, k, raise_floor=False)[0],
                    lambda d, t, f, k, pricer=pricer: pricer.price(d, t, f, k)[0])
        calls = recorded_pricings(path, args.seconds)
        seconds = [0.0, 0.0]
        stopped = [0, 0]
        agree = True
        for call, (duals, threshold, floor, keep) in enumerate(calls):
            values: list[float | None] = [None, None]
            for way in (0, 1) if call % 2 == 0 else (1, 0):  # (alternately first: drift hits both alike)
                started = time.perf_counter()
                try:
                    values[way] = ways[way](duals, threshold, floor, keep)
                except TimeoutError:  # past the pricing's memory budget (pricing_memory)
                    stopped[way] += 1
                seconds[way] += time.perf_counter() - started
            if values[0] is not None and values[1] is not None:
                agree &= abs(values[0] - values[1]) <= 1e-9 * max(1.0, abs(values[0]))
        print(f"| {path.stem} | {sets.classes} | {len(calls)} | {seconds[0]:.1f} | {seconds[1]:.1f} | "
              f"{seconds[0] / max(seconds[1], 1e-9):.2f} | {'yes' if agree else 'NO'} | {stopped[0]} / {stopped[1]} |",
              flush=True)


if __name__ == "__main__":
    main()
