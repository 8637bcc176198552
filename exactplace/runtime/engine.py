"""Execute a placement for real and compare the measured times with the evaluators' predictions.

Pipelined mode streams ``samples`` samples through one worker per device (the max-load model:
time per sample in steady state); single mode runs one sample at a time through the §4 blocks
(the latency model) and repeats it. See :mod:`exactplace.runtime.kernels` for how a kernel is
made to last its modelled time, and :mod:`exactplace.runtime.programs` for what each device does.

A replicated plan (``Placement.replicas``, paper Appendix C.2) replays in pipelined mode only: a
part on ``r`` replicas runs on ``r`` workers, each on its own virtual device, which take the
samples round-robin and pay an all-reduce step per sample (the model's ``sync * (r - 1) / r``;
:mod:`exactplace.runtime.programs` says why), so the replay needs one device per replica. Single
mode refuses it: one sample runs on one replica of each part, and the latency model it checks
against has no replicas.
"""

from __future__ import annotations

import queue
import statistics
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ExactplaceError, ParameterError, PlacementError, ReplayError, check_param
from exactplace.core.graph import Graph
from exactplace.runtime.programs import (
    Block,
    Op,
    device_programs,
    latency_blocks,
    pipelined_schedule,
    warmup_samples,
)
from exactplace.runtime.result import MODES, ReplayResult

__all__ = ["Workers", "parse_devices", "replay_synthetic"]

#: On virtual devices a replay lasts about this many seconds per sample (pipelined) or per run (single).
CPU_TARGET_SECONDS = 0.03
_POLL = 0.05  # seconds a blocked worker waits before checking whether another worker failed


def parse_devices(devices: str, needed: int, why: str = "") -> tuple[str, int]:
    """Resolve ``"auto"``, ``"cpu"``, ``"cpu:N"``, ``"cuda"`` or ``"cuda:N"`` to (kind, count).

    ``needed`` is the number of devices the placement uses; a count that cannot hold it is an error,
    whose message adds ``why`` (how ``needed`` was counted) in parentheses when given.

    >>> parse_devices("cpu:3", 3)
    ('cpu', 3)
    >>> parse_devices("cpu:2", 3)
    Traceback (most recent call last):
    ...
    exactplace.core.errors.PlacementError: The placement uses 3 devices but devices='cpu:2' offers 2.
    """
    check_param(isinstance(devices, str), "devices", "replay", "'auto', 'cpu', 'cpu:N', 'cuda' or 'cuda:N'", devices)
    kind, _, count_text = devices.partition(":")
    if kind == "auto":
        from exactplace.frontends.torch_support import require_torch

        kind = "cuda" if require_torch().cuda.is_available() else "cpu"
        count_text = ""
    check_param(kind in ("cpu", "cuda") and (count_text == "" or count_text.isdigit()), "devices", "replay",
                "'auto', 'cpu', 'cpu:N', 'cuda' or 'cuda:N'", devices)
    if kind == "cuda":
        from exactplace.frontends.torch_support import require_torch

        available = require_torch().cuda.device_count()
        if available == 0:
            raise ParameterError(f"devices={devices!r} asks for CUDA, but no CUDA device is available.")
        count = int(count_text) if count_text else available
        if count > available:
            raise ParameterError(f"devices={devices!r} asks for {count} GPUs; {available} are available.")
    else:
        count = int(count_text) if count_text else needed
    if count < needed:
        raise PlacementError(f"The placement uses {needed} devices{f' ({why})' if why else ''} but "
                             f"devices={devices!r} offers {count}.")
    return kind, count


def replay_synthetic(
    graph: Graph,
    cluster: Cluster,
    dev: np.ndarray,
    *,
    devices: str = "auto",
    mode: str = "pipelined",
    samples: int = 24,
    repeats: int = 3,
    time_unit: float | None = None,
    replicas: np.ndarray | None = None,
) -> ReplayResult:
    """Replay a placement of a workload without real operators (see :func:`exactplace.replay`).

    ``replicas`` is the plan's per-accelerator replica counts as
    :func:`~exactplace.core.placement_array.as_replicas_array` returns them, or None.
    """
    from exactplace.evaluators import device_loads, max_load
    from exactplace.evaluators.latency import latency

    check_param(mode in MODES, "mode", "replay", f"one of {list(MODES)}", mode)
    check_param(isinstance(samples, int) and not isinstance(samples, bool) and samples >= (4 if mode == "pipelined"
                else 1), "samples", "replay", "an integer >= 4 (pipelined) or >= 1 (single)", samples)
    check_param(isinstance(repeats, int) and repeats >= 1, "repeats", "replay", "a positive integer", repeats)
    used = np.unique(dev).tolist()
    if replicas is not None and not np.any(replicas > 1):
        replicas = None  # all ones: the plan replicates nothing
    if replicas is not None and mode == "single":
        raise ParameterError("mode='single' replays one sample's latency through one device per stage, and the "
                             "latency model has no replicas; replay this replicated plan with mode='pipelined' "
                             "(or solve it without replication=True).")
    count = {d: int(replicas[d]) if replicas is not None and d < cluster.accelerators else 1 for d in used}
    replicated = ", ".join(f"{cluster.device_name(d)} x{r}" for d, r in count.items() if r > 1)
    kind, _ = parse_devices(devices, sum(count.values()),
                            f"a replicated stage takes one per replica: {replicated}" if replicated else "")
    wrong = np.flatnonzero(~graph.supported & (dev < cluster.accelerators))
    if wrong.size:
        v = int(wrong[0])
        raise PlacementError(f"{graph.describe(v).capitalize()} cannot run on an accelerator but is placed on "
                             f"{cluster.device_name(int(dev[v]))}.")
    predicted = (max_load(graph, cluster, dev, replicas=replicas) if mode == "pipelined"
                 else latency(graph, cluster, dev))
    if time_unit is None:
        time_unit = CPU_TARGET_SECONDS / predicted if kind == "cpu" and predicted > 0 else 1e-3
    check_param(time_unit > 0, "time_unit", "replay", "a positive number of seconds per model unit", time_unit)
    names = cluster.device_names()
    if mode == "pipelined":
        loads = device_loads(graph, cluster, dev, replicas=replicas).load()
        expected = {d: float(loads[d]) for d in used}
    else:
        expected = {d: sum(op.cost for b in latency_blocks(graph, cluster, dev) if b.device == d for op in b.ops)
                    for d in used}
    if kind == "cuda":
        from exactplace.runtime.cuda import replay_cuda

        return replay_cuda(graph, cluster, dev, mode=mode, samples=samples, repeats=repeats, time_unit=time_unit,
                           predicted=predicted, expected=expected, replicas=count)
    from exactplace.frontends.torch_support import one_thread_per_op
    from exactplace.runtime.kernels import CpuKernels

    runs = []
    with one_thread_per_op():
        kernels = CpuKernels()
        for _ in range(repeats):
            if mode == "pipelined":
                programs = device_programs(graph, cluster, dev, count)
                runs.append(_pipelined_cpu(kernels, programs, count, samples, time_unit))
            else:
                runs.append(_single_cpu(kernels, latency_blocks(graph, cluster, dev), samples, time_unit))
    overall = [r[0] / time_unit for r in runs]
    busy = {d: statistics.median(r[1][d] for r in runs) / time_unit for d in used}
    return ReplayResult(
        mode=mode, measured=statistics.median(overall), predicted=float(predicted),
        per_device={names[d]: (busy[d], expected[d]) for d in used}, repeats=tuple(overall),
        time_unit=time_unit, devices=f"cpu:{sum(count.values())}", samples=samples,
    )


class Workers:
    """Threads that run ``target(arg)`` each; the first exception stops the others and is re-raised."""

    def __init__(self) -> None:
        self.failed = threading.Event()
        self.errors: list[BaseException] = []

    def get(self, box: queue.SimpleQueue) -> Any:
        while True:
            try:
                return box.get(timeout=_POLL)
            except queue.Empty:
                if self.failed.is_set():
                    raise _Stopped from None

    def run(self, target: Callable[[Any], None], args: Sequence[Any]) -> None:
        def guarded(arg: Any) -> None:
            try:
                target(arg)
            except _Stopped:
                pass
            except BaseException as error:  # surfaced in the caller's thread below
                self.errors.append(error)
                self.failed.set()

        threads = [threading.Thread(target=guarded, args=(a,), daemon=True) for a in args]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        except KeyboardInterrupt:  # Ctrl-C: the workers stop at their next step, the caller gets the interrupt
            self.failed.set()
            for t in threads:
                t.join(_POLL * 2)
            raise
        if self.errors:
            error = self.errors[0]
            if isinstance(error, ExactplaceError):
                raise error
            raise ReplayError(f"A replay worker failed: {error!r}") from error


class _Stopped(Exception):
    """Raised in a worker when another worker failed."""


def _pipelined_cpu(kernels: Any, programs: dict[int, list[Op]], replicas: dict[int, int], samples: int,
                   unit: float) -> tuple[float, dict[int, float]]:
    """Stream ``samples`` samples through one thread per worker (a device, or a replica of a replicated
    one); returns (steady seconds per sample, busy seconds per sample of each device).

    Each worker runs its operations in the order of :func:`pipelined_schedule`. A replicated device's
    busy time is its replicas' together divided by their count: its replicas share the stream, so
    that is the device's time per sample of the stream, which its load predicts.
    """
    schedule = pipelined_schedule(programs, samples, replicas)
    # One box per (group, receiver, sample), made by whichever of sender and receiver comes first and
    # dropped once received: boxes for every sample up front would be millions of objects to build and free.
    boxes: dict[tuple[int, int, int], queue.SimpleQueue] = {}
    boxes_lock = threading.Lock()

    def box(key: tuple[int, int, int]) -> queue.SimpleQueue:
        with boxes_lock:
            return boxes.setdefault(key, queue.SimpleQueue())

    def receive(key: tuple[int, int, int]) -> Any:
        got = workers.get(box(key))
        with boxes_lock:  # its one message is in: nobody uses this box again
            del boxes[key]
        return got
    payloads = {(op.kind, op.item): kernels.payload(op.cost * unit)
                for p in programs.values() for op in p if op.kind in ("send", "sync")}
    # keyed by device and sample: a sample runs on one replica of each device
    finish = {d: [0.0] * samples for d in programs}
    busy = {d: [0.0] * samples for d in programs}
    workers = Workers()
    everyone = list(schedule)
    start_gate = threading.Barrier(len(everyone))

    def work(w: tuple[int, int]) -> None:
        d = w[0]
        start_gate.wait()
        clock = kernels.now()  # the worker's clock: when its next kernel may start
        for step in schedule[w]:
            if workers.failed.is_set():  # another worker failed, or Ctrl-C
                return
            op, sample = step.op, step.sample
            if op.kind == "recv":
                data, posted = receive((op.item, d, sample))
                begin = kernels.now()
                clock = max(clock, posted)
                clock, _ = kernels.transfer(op.cost * unit, data, clock)
            elif op.kind == "compute":
                begin = kernels.now()
                clock = kernels.compute(op.cost * unit, clock)
            elif op.kind == "sync":
                begin = kernels.now()
                clock, _ = kernels.transfer(op.cost * unit, payloads[("sync", op.item)], clock)
            else:
                begin = kernels.now()
                clock, data = kernels.transfer(op.cost * unit, payloads[("send", op.item)], clock)
                posted = kernels.now()  # real time: a late sender delays its receivers
                for r in op.receivers:
                    box((op.item, r, sample)).put((data, posted))
            busy[d][sample] += kernels.now() - begin
            finish[d][sample] = kernels.now()

    workers.run(work, everyone)
    done = [max(finish[d][s] for d in programs) for s in range(samples)]
    # Steady state: skip the pipeline's fill, and measure whole rounds of the replicated stages.
    warm = warmup_samples(samples, len(everyone), replicas)
    per_sample = (done[-1] - done[warm - 1]) / (samples - warm)
    steady = {d: statistics.fmean(busy[d][warm:]) / replicas[d] for d in programs}
    return per_sample, steady


def _single_cpu(kernels: Any, blocks: list[Block], samples: int, unit: float) -> tuple[float, dict[int, float]]:
    """Run one sample ``samples`` times through the §4 blocks; returns (median latency, busy per device)."""
    payloads = {op.item: kernels.payload(op.cost * unit) for b in blocks for op in b.ops if op.kind == "send"}
    latencies, busy_runs = [], []
    # Enough threads for every block to wait at once (the model assumes enough CPU cores); blocks are
    # submitted in an order where each follows the blocks it waits for, so a smaller pool cannot deadlock.
    with ThreadPoolExecutor(max_workers=min(len(blocks), 256)) as pool:
        for _ in range(samples):
            done = [threading.Event() for _ in blocks]
            spent = [0.0] * len(blocks)
            ends = [0.0] * len(blocks)
            origin = kernels.now()

            def run(b: int, done: list[threading.Event] = done, spent: list[float] = spent,
                    ends: list[float] = ends, origin: float = origin) -> None:
                for p in blocks[b].after:
                    done[p].wait()
                clock = max([origin] + [ends[p] for p in blocks[b].after])
                begin = kernels.now()
                for op in blocks[b].ops:
                    if op.kind == "compute":
                        clock = kernels.compute(op.cost * unit, clock)
                    else:
                        clock, _ = kernels.transfer(op.cost * unit, payloads[op.item], clock)
                spent[b], ends[b] = kernels.now() - begin, kernels.now()
                done[b].set()

            for future in [pool.submit(run, b) for b in range(len(blocks))]:
                future.result()
            latencies.append(max(ends) - origin)
            per_device: dict[int, float] = {}
            for b, block in enumerate(blocks):
                per_device[block.device] = per_device.get(block.device, 0.0) + spent[b]
            busy_runs.append(per_device)
    busy = {d: statistics.median(r[d] for r in busy_runs) for d in busy_runs[0]}
    return statistics.median(latencies), busy
