"""Replay a real module split by a placement: each part runs on its device, outputs as unsplit.

The captured fx graph is cut into *runs*: a topological order that stays on one device as long as
it can (Kahn's algorithm preferring the current device, then program order) is cut wherever the
device changes, and ``torch.fx.passes.split_module`` turns each run into a submodule. The parts
form a chain, so any placement (contiguous or not) splits cleanly. Pipelined mode streams samples
through one worker thread per device; single mode runs one sample at a time.
"""

from __future__ import annotations

import copy
import heapq
import queue
import statistics
import time
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import PlacementError, check_param
from exactplace.runtime.engine import Workers, parse_devices
from exactplace.runtime.result import MODES, ReplayResult

__all__ = ["device_runs", "replay_module", "split_by_placement"]


def device_runs(graph: Any, dev: np.ndarray) -> list[int]:
    """Run index of every forward node: a topological order that switches device as rarely as it can, cut at switches.

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(4)], [(0, 1), (0, 2), (1, 3), (2, 3)])
    >>> device_runs(g, np.array([0, 1, 0, 1]))   # 0, 2 on device 0, then 1, 3 on device 1
    [0, 1, 0, 1]
    """
    count = getattr(graph, "forward_count", graph.n)
    indegree = [0] * count
    for s, d in zip(graph.src.tolist(), graph.dst.tolist()):
        if s < count and d < count:
            indegree[d] += 1
    ready: dict[int, list[int]] = {}
    for v in range(count):
        if indegree[v] == 0:
            heapq.heappush(ready.setdefault(int(dev[v]), []), v)
    run = [0] * count
    current, index = None, -1
    for _ in range(count):
        if current is None or not ready.get(current):
            current = min((heap[0], d) for d, heap in ready.items() if heap)[1]
            index += 1
        v = heapq.heappop(ready[current])
        run[v] = index
        for w in graph.successors[v].tolist():
            if w < count:
                indegree[w] -= 1
                if indegree[w] == 0:
                    heapq.heappush(ready.setdefault(int(dev[w]), []), w)
    return run


def split_by_placement(graph: Any, dev: np.ndarray) -> tuple[Any, list[int]]:
    """Split ``graph.module`` into one submodule per run; returns (split module, device of each ``submod_i``)."""
    from torch.fx.passes.split_module import split_module

    run = device_runs(graph, dev)
    run_of = {name: run[i] for i, name in enumerate(graph.fx_names)}
    split = split_module(graph.module, graph.module, lambda node: run_of[node.name])
    devices = [0] * (max(run) + 1)
    for i, r in enumerate(run):
        devices[r] = int(dev[i])
    return split, devices


def _stages(split: Any) -> tuple[list[Any], list[tuple[str, list[Any]]], Any]:
    """(nodes before the first part, [(submodule name, its top-level nodes)], output node)."""
    prefix, stages, output = [], [], None
    for node in split.graph.nodes:
        if node.op == "output":
            output = node
        elif node.op == "call_module":
            stages.append((str(node.target), [node]))
        elif stages:
            stages[-1][1].append(node)
        else:
            prefix.append(node)
    return prefix, stages, output


def replay_module(graph: Any, cluster: Cluster, dev: np.ndarray, *, devices: str, mode: str, samples: int,
                  repeats: int, time_unit: float | None, inputs: tuple[Any, ...] | None) -> ReplayResult:
    """Run the module split by the placement; ``outputs`` holds the last sample's outputs (on CPU)."""
    import torch
    from torch.fx.node import map_arg

    from exactplace.evaluators import device_loads, max_load
    from exactplace.evaluators.latency import latency
    from exactplace.frontends.torch_support import attribute, move_to, one_thread_per_op

    check_param(mode in MODES, "mode", "replay", f"one of {list(MODES)}", mode)
    check_param(isinstance(samples, int) and samples >= 1, "samples", "replay", "a positive integer", samples)
    used = np.unique(dev).tolist()
    kind, count = parse_devices(devices, len(used))
    unit = 1e-3 if time_unit is None else time_unit  # from_torch profiles in milliseconds
    gpu = {d: i for i, d in enumerate(d for d in used if d < cluster.accelerators)}
    if kind == "cuda" and len(gpu) > count:
        raise PlacementError(f"The placement uses {len(gpu)} accelerators but {count} GPUs are available.")
    place = {d: f"cuda:{gpu[d]}" if kind == "cuda" and d in gpu else "cpu" for d in used}
    split, part_device = split_by_placement(graph, dev)
    split = copy.deepcopy(split)  # moving parts must not move the caller's module
    prefix, stages, output = _stages(split)
    stage_device = {name: part_device[int(name.rsplit("_", 1)[1])] for name, _ in stages}
    for name, device in stage_device.items():
        getattr(split, name).to(place[device])
    sample = tuple(inputs if inputs is not None else graph.example_inputs)
    placeholders = [n for n in prefix if n.op == "placeholder"]
    required = sum(1 for n in placeholders if not n.args)  # an input with a default has it as its argument
    if not required <= len(sample) <= len(placeholders):
        raise PlacementError(f"The module takes {required} to {len(placeholders)} inputs; replay got {len(sample)}."
                             if required < len(placeholders) else
                             f"The module takes {len(placeholders)} inputs; replay got {len(sample)}.")
    defaults = [n.args[0] for n in placeholders[len(sample):]]

    def start_env() -> dict[str, Any]:
        env: dict[str, Any] = {}
        for node, value in zip(placeholders, (*sample, *defaults)):
            env[node.name] = value
        for node in prefix:
            if node.op == "get_attr":
                env[node.name] = attribute(split, str(node.target))
        return env

    def run_stage(name: str, nodes: list[Any], env: dict[str, Any]) -> float:
        start = time.perf_counter()
        for node in nodes:
            args = map_arg(node.args, lambda n: env[n.name])
            kwargs = map_arg(node.kwargs, lambda n: env[n.name])
            if node.op == "call_module":
                target = place[stage_device[name]]
                env[node.name] = attribute(split, str(node.target))(*move_to(args, target), **move_to(kwargs, target))
            else:
                env[node.name] = node.target(*args, **kwargs)
        if place[stage_device[name]].startswith("cuda"):
            torch.cuda.synchronize(place[stage_device[name]])
        return time.perf_counter() - start

    # A module captured by torch.export returns its outputs flattened, and rebuilds them in its code.
    pytree = getattr(getattr(graph.module.graph, "_codegen", None), "pytree_info", None)

    def finish(env: dict[str, Any]) -> Any:
        flat = move_to(map_arg(output.args[0], lambda n: env[n.name]), "cpu")
        if pytree is None or pytree.out_spec is None:
            return flat
        return torch.utils._pytree.tree_unflatten(list(flat), pytree.out_spec)

    runs, busy_runs, outputs = [], [], None
    threads = one_thread_per_op() if kind == "cpu" else _nothing()
    with torch.no_grad(), threads:
        for _ in range(repeats):
            busy = dict.fromkeys(used, 0.0)
            if mode == "single":
                latencies = []
                for _ in range(samples):
                    env, origin = start_env(), time.perf_counter()
                    for name, nodes in stages:
                        busy[stage_device[name]] += run_stage(name, nodes, env) / samples
                    outputs = finish(env)
                    latencies.append(time.perf_counter() - origin)
                runs.append(statistics.median(latencies) / unit)
            else:
                per_sample, outputs = _pipelined(stages, stage_device, start_env, run_stage, finish, samples, busy)
                runs.append(per_sample / unit)
            busy_runs.append({d: b / unit for d, b in busy.items()})
    predicted = max_load(graph, cluster, dev) if mode == "pipelined" else latency(graph, cluster, dev)
    loads = device_loads(graph, cluster, dev).load()
    names = cluster.device_names()
    return ReplayResult(
        mode=mode, measured=statistics.median(runs), predicted=float(predicted),
        per_device={names[d]: (statistics.median(r[d] for r in busy_runs), float(loads[d])) for d in used},
        repeats=tuple(runs), time_unit=unit, devices=f"{kind}:{len(used) if kind == 'cpu' else len(gpu)}",
        samples=samples, outputs=outputs,
    )


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _pipelined(stages: list[tuple[str, list[Any]]], stage_device: dict[str, int], start_env: Any, run_stage: Any,
               finish: Any, samples: int, busy: dict[int, float]) -> tuple[float, Any]:
    """One worker per device runs whichever of its parts has an input ready, lowest sample first (so a
    device holding two parts of the chain interleaves samples instead of waiting); returns (seconds per
    sample, last outputs)."""
    devices = sorted(set(stage_device.values()))
    inbox = {d: queue.PriorityQueue() for d in devices}
    results: queue.SimpleQueue = queue.SimpleQueue()
    for sample in range(samples):
        inbox[stage_device[stages[0][0]]].put((sample, 0, start_env()))
    done: list[float] = []
    workers = Workers()

    def work(device: int) -> None:
        for _ in range(samples * sum(1 for name, _ in stages if stage_device[name] == device)):
            sample, i, env = workers.get(inbox[device])
            busy[device] += run_stage(stages[i][0], stages[i][1], env) / samples
            if i + 1 < len(stages):
                inbox[stage_device[stages[i + 1][0]]].put((sample, i + 1, env))
            else:
                results.put(env)

    outputs = None
    origin = time.perf_counter()

    def collect(_: int) -> None:
        nonlocal outputs
        for _ in range(samples):
            outputs = finish(workers.get(results))
            done.append(time.perf_counter())

    workers.run(lambda d: collect(d) if d == -1 else work(d), [*devices, -1])
    warm = min(len(devices), samples // 4)
    per_sample = (done[-1] - done[warm - 1]) / (samples - warm) if warm else (done[-1] - origin) / samples
    return per_sample, outputs
