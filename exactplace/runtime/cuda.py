"""Replay on CUDA GPUs: a stream per GPU, calibrated spin kernels, real copies, events for timing.

Not exercised in CI (no GPU there): this path needs ``torch.cuda.is_available()``. The host enqueues
every operation asynchronously, in an order where each ``recv`` follows its ``send``; a receiving
stream waits on the sender's event, so the GPUs themselves enforce the dependencies and overlap
samples as a pipeline does. An accelerator's send copies the group's tensor (sized from the measured
bandwidth) into pinned host memory and the receiver copies it in, so communication is a real copy.

A replicated part (pipelined mode only) runs on one GPU per replica, each taking the samples
round-robin and ending each sample with its all-reduce step (:mod:`exactplace.runtime.programs`),
enqueued as a copy of the step's modelled size like a send: the model's cost, not an NCCL all-reduce.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ParameterError, PlacementError
from exactplace.core.graph import Graph
from exactplace.runtime.programs import (
    Op,
    Worker,
    device_programs,
    latency_blocks,
    pipelined_schedule,
    warmup_samples,
    workers,
)
from exactplace.runtime.result import ReplayResult

__all__ = ["replay_cuda"]


def replay_cuda(graph: Graph, cluster: Cluster, dev: np.ndarray, *, mode: str, samples: int, repeats: int,
                time_unit: float, predicted: float, expected: dict[int, float], kernels: Any = None,
                replicas: dict[int, int] | None = None) -> Any:
    """Replay on GPUs: each worker (accelerator ``d`` of the placement, or each replica of it) gets its own
    GPU, in the order of the used accelerators.

    ``kernels`` defaults to :class:`~exactplace.runtime.kernels.CudaKernels`. ``replicas`` maps a
    device to its replica count (missing: 1); single mode takes none.
    """

    if np.any(dev >= cluster.accelerators):
        raise ParameterError("CUDA replay runs accelerator nodes on GPUs; this placement also uses CPU cores. "
                             "Replay it on virtual devices (devices='cpu:N').")
    if mode == "single" and replicas and max(replicas.values()) > 1:
        raise ParameterError("mode='single' does not replay replicated stages; use mode='pipelined'.")
    if kernels is None:
        from exactplace.runtime.kernels import CudaKernels

        kernels = CudaKernels()
    used = np.unique(dev).tolist()
    everyone = workers(dict.fromkeys(used), replicas)
    if len(everyone) > kernels.count:
        raise PlacementError(f"The placement uses {len(everyone)} accelerators (one per replica of a replicated "
                             f"stage) but {kernels.count} GPUs are available.")
    gpu = {w: i for i, w in enumerate(everyone)}
    names = cluster.device_names()
    runs, busy_runs = [], []
    for _ in range(repeats + 1):  # the first run warms up (allocations, lazy CUDA init) and is dropped
        if mode == "pipelined":
            programs = device_programs(graph, cluster, dev, replicas)
            overall, busy = _pipelined(kernels, programs, replicas, gpu, samples, time_unit)
        else:
            overall, busy = _single(kernels, graph, cluster, dev, {d: gpu[d, 0] for d in used}, samples, time_unit)
        runs.append(overall / time_unit)
        busy_runs.append({d: b / time_unit for d, b in busy.items()})
    kernels.synchronize()
    runs, busy_runs = runs[1:], busy_runs[1:]
    return ReplayResult(
        mode=mode, measured=statistics.median(runs), predicted=float(predicted),
        per_device={names[d]: (statistics.median(r[d] for r in busy_runs), expected[d]) for d in used},
        repeats=tuple(runs), time_unit=time_unit, devices=f"cuda:{len(everyone)}", samples=samples,
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


def _pipelined(kernels: Any, programs: dict[int, list[Op]], replicas: dict[int, int] | None,
               gpu: dict[Worker, int], samples: int, unit: float) -> tuple[float, dict[int, float]]:
    """Enqueue every worker's steps in :func:`pipelined_schedule` order, each receive after the send it
    waits for; returns (seconds per sample, busy per device and sample of the stream)."""
    schedule = pipelined_schedule(programs, samples, replicas)
    count = {d: 1 if replicas is None else replicas.get(d, 1) for d in programs}
    # one buffer per worker and group: a replica's payload lives on its own GPU
    buffers = {(w, op.kind, op.item): kernels.buffers(gpu[w], op.cost * unit)
               for w in schedule for op in programs[w[0]] if op.kind in ("send", "sync")}
    last: dict[Worker, dict[int, Any]] = {w: {} for w in schedule}  # worker -> sample -> its last op's end
    spans: dict[Worker, list[tuple[Any, Any]]] = {w: [] for w in schedule}
    sent: dict[tuple[int, int], tuple[Any, Any]] = {}  # (group, sample) -> (end of its send, host buffer)
    position = dict.fromkeys(schedule, 0)
    while any(position[w] < len(schedule[w]) for w in schedule):
        for w in schedule:
            # advance worker w until it needs a group whose send is not enqueued yet
            while position[w] < len(schedule[w]):
                step = schedule[w][position[w]]
                op, g = step.op, gpu[w]
                if op.kind == "recv" and (op.item, step.sample) not in sent:
                    break
                if op.kind == "compute":
                    span = kernels.compute(g, op.cost * unit)
                elif op.kind in ("send", "sync"):
                    payload, host = buffers[w, op.kind, op.item]
                    span = kernels.download(g, payload, host)
                    if op.kind == "send":
                        sent[(op.item, step.sample)] = (span[1], host)
                else:
                    end, host = sent[(op.item, step.sample)]
                    span = kernels.upload(g, host, end)
                spans[w].append(span)
                last[w][step.sample] = span[1]
                position[w] += 1
    warm = warmup_samples(samples, len(schedule), replicas)
    # Events of different GPUs cannot be compared: each worker's own rate, from the last sample it ran in
    # the fill to its last one (samples - warm apart: warmup_samples makes that a whole number of its
    # rounds); the slowest is the pipeline's.
    rates = []
    for (d, j), ends in last.items():
        first = warm - 1 - (warm - 1 - j) % count[d]
        final = samples - 1 - (samples - 1 - j) % count[d]
        rates.append(kernels.elapsed(ends[first], ends[final]) / (samples - warm))
    busy = dict.fromkeys(programs, 0.0)
    for (d, _), worker_spans in spans.items():  # a replicated device's replicas share the stream
        busy[d] += sum(kernels.elapsed(a, b) for a, b in worker_spans) / samples / count[d]
    return max(rates), busy


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
