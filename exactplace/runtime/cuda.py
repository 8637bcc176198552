"""Replay on CUDA GPUs: a stream per GPU, calibrated spin kernels, real copies, events for timing.

Not exercised in CI (no GPU there): this path needs ``torch.cuda.is_available()``. The host enqueues
every operation asynchronously, in an order where each ``recv`` follows its ``send``; a receiving
stream waits on the sender's event, so the GPUs themselves enforce the dependencies and overlap
samples as a pipeline does. An accelerator's send copies the group's tensor (sized from the measured
bandwidth) into pinned host memory and the receiver copies it in, so communication is a real copy.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ParameterError, PlacementError
from exactplace.core.graph import Graph
from exactplace.runtime.programs import Op, device_programs, latency_blocks, pipelined_schedule
from exactplace.runtime.result import ReplayResult

__all__ = ["replay_cuda"]


def replay_cuda(graph: Graph, cluster: Cluster, dev: np.ndarray, *, mode: str, samples: int, repeats: int,
                time_unit: float, predicted: float, expected: dict[int, float], kernels: Any = None) -> Any:
    """Replay on GPUs; accelerator ``d`` of the placement runs on the ``i``-th GPU (i = rank of d among used).

    ``kernels`` defaults to :class:`~exactplace.runtime.kernels.CudaKernels`.
    """

    if np.any(dev >= cluster.accelerators):
        raise ParameterError("CUDA replay runs accelerator nodes on GPUs; this placement also uses CPU cores. "
                             "Replay it on virtual devices (devices='cpu:N').")
    if kernels is None:
        from exactplace.runtime.kernels import CudaKernels

        kernels = CudaKernels()
    used = np.unique(dev).tolist()
    if len(used) > kernels.count:
        raise PlacementError(f"The placement uses {len(used)} accelerators but {kernels.count} GPUs are available.")
    gpu = {d: i for i, d in enumerate(used)}
    names = cluster.device_names()
    runs, busy_runs = [], []
    for _ in range(repeats + 1):  # the first run warms up (allocations, lazy CUDA init) and is dropped
        if mode == "pipelined":
            overall, busy = _pipelined(kernels, device_programs(graph, cluster, dev), gpu, samples, time_unit)
        else:
            overall, busy = _single(kernels, graph, cluster, dev, gpu, samples, time_unit)
        runs.append(overall / time_unit)
        busy_runs.append({d: b / time_unit for d, b in busy.items()})
    kernels.synchronize()
    runs, busy_runs = runs[1:], busy_runs[1:]
    return ReplayResult(
        mode=mode, measured=statistics.median(runs), predicted=float(predicted),
        per_device={names[d]: (statistics.median(r[d] for r in busy_runs), expected[d]) for d in used},
        repeats=tuple(runs), time_unit=time_unit, devices=f"cuda:{len(used)}", samples=samples,
    )


def _enqueue(kernels: Any, op: Op, g: int, unit: float, buffers: dict[int, tuple[Any, Any]],
             sent: dict[int, Any]) -> tuple[Any, Any]:
    if op.kind == "compute":
        return kernels.compute(g, op.cost * unit)
    payload, host = buffers[op.item]
    if op.kind == "send":
        start, end = kernels.download(g, payload, host)
        sent[op.item] = end
        return start, end
    return kernels.upload(g, host, sent[op.item])


def _buffers(kernels: Any, ops: list[tuple[int, Op]], unit: float) -> dict[int, tuple[Any, Any]]:
    return {op.item: kernels.buffers(g, op.cost * unit) for g, op in ops if op.kind == "send"}


def _pipelined(kernels: Any, programs: dict[int, list[Op]], gpu: dict[int, int], samples: int, unit: float
               ) -> tuple[float, dict[int, float]]:
    """Enqueue every device's steps in :func:`pipelined_schedule` order, each receive after the send it
    waits for; returns (seconds per sample, busy per device)."""
    schedule = pipelined_schedule(programs, samples)
    buffers = _buffers(kernels, [(gpu[d], op) for d, p in programs.items() for op in p], unit)
    last: dict[int, dict[int, Any]] = {d: {} for d in programs}  # device -> sample -> end event of its last op
    spans: dict[int, list[tuple[Any, Any]]] = {d: [] for d in programs}
    sent: dict[tuple[int, int], Any] = {}
    position = dict.fromkeys(programs, 0)
    while any(position[d] < len(schedule[d]) for d in programs):
        for d in programs:
            # advance device d until it needs a group whose send is not enqueued yet
            while position[d] < len(schedule[d]):
                step = schedule[d][position[d]]
                op, g = step.op, gpu[d]
                if op.kind == "recv" and (op.item, step.sample) not in sent:
                    break
                if op.kind == "compute":
                    span = kernels.compute(g, op.cost * unit)
                elif op.kind == "send":
                    span = kernels.download(g, *buffers[op.item])
                    sent[(op.item, step.sample)] = span[1]
                else:
                    span = kernels.upload(g, buffers[op.item][1], sent[(op.item, step.sample)])
                spans[d].append(span)
                last[d][step.sample] = span[1]
                position[d] += 1
    warm = min(len(programs), samples // 4)
    # events of different GPUs cannot be compared: each device's own rate, the slowest is the pipeline's
    per_device_rate = [kernels.elapsed(last[d][warm - 1], last[d][samples - 1]) / (samples - warm)
                       for d in programs]
    busy = {d: sum(kernels.elapsed(a, b) for a, b in spans[d]) / samples for d in programs}
    return max(per_device_rate), busy


def _single(kernels: Any, graph: Graph, cluster: Cluster, dev: np.ndarray, gpu: dict[int, int], samples: int,
            unit: float) -> tuple[float, dict[int, float]]:
    blocks = latency_blocks(graph, cluster, dev)
    buffers = _buffers(kernels, [(gpu[b.device], op) for b in blocks for op in b.ops], unit)
    latencies, busy = [], {d: 0.0 for d in gpu}
    for _ in range(samples):
        kernels.synchronize()
        first = {g: kernels.event(g) for g in set(gpu.values())}
        sent: dict[int, Any] = {}
        finished: list[Any] = []
        spans = []
        for block in blocks:
            g = gpu[block.device]
            for p in block.after:
                kernels.wait(g, finished[p])
            spans.extend((block.device, _enqueue(kernels, op, g, unit, buffers, sent)) for op in block.ops)
            finished.append(kernels.event(g))
        # every GPU's start event is recorded right after the synchronization: the sample's latency is
        # the latest block end, each measured on its own GPU from that GPU's start
        latencies.append(max(kernels.elapsed(first[gpu[b.device]], end) for b, end in zip(blocks, finished)))
        for d, (a, b) in spans:
            busy[d] += kernels.elapsed(a, b) / samples
    return statistics.median(latencies), busy
