"""Kernels that take a given time on a device: the building blocks of a replay.

A replay turns every node into a *compute* kernel and every edge that crosses devices into a
*transfer* kernel, each lasting the time the cost model gives it (scaled by ``time_unit``
seconds per model unit), so that a real execution of the placement can be timed against the
model. Two implementations share one interface: :class:`CpuKernels` (virtual devices, worker
threads over CPU tensors: what CI runs) and :class:`CudaKernels` (a stream per GPU, when
``torch.cuda.is_available()``). Both import torch inside their constructor: ``import
exactplace`` never loads it.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from exactplace.frontends.torch_support import require_torch

__all__ = ["CpuKernels", "CudaKernels"]

#: Transfers copy at most this many bytes: the time is the model's, the copy keeps the data path real.
MAX_TRANSFER_BYTES = 1 << 20


def sleep_overshoot(samples: int = 40, request: float = 1e-3) -> float:
    """Median extra time ``time.sleep(request)`` takes on this machine, in seconds.

    >>> 0 <= sleep_overshoot(samples=5) < 0.1
    True
    """
    extra = []
    for _ in range(samples):
        start = time.perf_counter()
        time.sleep(request)
        extra.append(time.perf_counter() - start - request)
    return max(0.0, statistics.median(extra))


class CpuKernels:
    """Virtual devices: one worker thread per device over CPU tensors.

    A compute kernel runs a small tensor operation, then waits for the rest of its modelled time
    in ``time.sleep`` (which releases the GIL, so workers overlap as devices do); a transfer
    copies a tensor whose size is the modelled bytes (cost x the copy bandwidth, capped at
    :data:`MAX_TRANSFER_BYTES` so replays stay light), then waits for the rest of its time. Each
    kernel waits until a deadline on its device's clock (the previous kernel's end, or its
    input's arrival, plus its modelled time), and the median overshoot of ``time.sleep`` on this
    machine (:func:`sleep_overshoot`) is found once and subtracted, so kernels last their
    modelled times even when they are far shorter than the OS's sleep granularity or the
    scheduler wakes threads late.

    Parameters
    ----------
    bandwidth : float or None
        Bytes per second of a tensor copy; measured when None.

    Examples
    --------
    >>> k = CpuKernels()                                  # doctest: +SKIP
    >>> start = k.now(); end = k.compute(0.002, start)    # doctest: +SKIP
    >>> k.now() - start >= 0.0015                         # doctest: +SKIP
    True
    """

    kind = "cpu"

    def __init__(self, bandwidth: float | None = None) -> None:
        self.torch = require_torch()
        self.overshoot = sleep_overshoot()
        self._work = self.torch.ones(1024)
        self.bandwidth = bandwidth if bandwidth is not None else self._copy_bandwidth()

    def _copy_bandwidth(self) -> float:
        source = self.torch.ones(MAX_TRANSFER_BYTES // 4)
        target = self.torch.empty_like(source)
        times = []
        for _ in range(7):
            start = time.perf_counter()
            target.copy_(source)
            times.append(time.perf_counter() - start)
        return MAX_TRANSFER_BYTES / max(statistics.median(times), 1e-9)

    def now(self) -> float:
        """Seconds on the clock every worker shares."""
        return time.perf_counter()

    def _wait_until(self, deadline: float) -> None:
        remaining = deadline - time.perf_counter() - self.overshoot
        if remaining > 0:
            time.sleep(remaining)

    def compute(self, seconds: float, start: float) -> float:
        """Run a small tensor operation and wait until ``start + seconds``; returns that end time.

        ``start`` is when the kernel may begin on its device's clock: the end of the device's
        previous kernel, or when its input arrived. Chaining deadlines this way keeps the OS's sleep
        granularity from adding up over many short kernels; a device that fell behind (a stall)
        only catches up by skipping waits, never by running a kernel's work faster.
        """
        self.torch.mul(self._work, 1.0)
        self._wait_until(start + seconds)
        return start + seconds

    def payload(self, seconds: float) -> Any:
        """A tensor of the bytes a transfer of ``seconds`` moves (capped at MAX_TRANSFER_BYTES)."""
        count = int(min(seconds * self.bandwidth, MAX_TRANSFER_BYTES) // 4)
        return self.torch.ones(max(count, 1))

    def transfer(self, seconds: float, payload: Any, start: float) -> tuple[float, Any]:
        """Copy ``payload`` and wait until ``start + seconds``; returns (that end time, the copy)."""
        copy = payload.clone()
        self._wait_until(start + seconds)
        return start + seconds, copy


class CudaKernels:
    """A stream per GPU, ``torch.cuda._sleep`` compute kernels and timed copies (not run in CI).

    Compute kernels are ``torch.cuda._sleep`` spins calibrated in cycles per second, transfers
    copy tensors of the modelled size between the GPU and pinned host memory, and timing uses
    CUDA events.

    Kernels are enqueued asynchronously; ``compute``, ``download`` and ``upload`` return CUDA
    events (start, end) instead of clock readings, and :meth:`elapsed` turns a pair into
    seconds once the work is done. ``replay_cuda`` only uses these methods, so a stand-in with
    the same methods can check its orchestration without a GPU (tests/test_torch_replay.py).
    """

    kind = "cuda"

    def __init__(self) -> None:
        self.torch = require_torch()
        torch = self.torch
        self.count = torch.cuda.device_count()
        self.streams = {d: torch.cuda.Stream(device=d) for d in range(self.count)}
        self.cycles_per_second = self._calibrate()
        self.bandwidth = self._bandwidth()

    def _calibrate(self) -> float:
        torch = self.torch
        cycles = 10_000_000
        torch.cuda._sleep(cycles)  # warm-up
        times = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return cycles / statistics.median(times)

    def _bandwidth(self) -> float:
        torch = self.torch
        host = torch.ones(MAX_TRANSFER_BYTES // 4).pin_memory()
        device = host.to("cuda:0")
        times = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            host.copy_(device, non_blocking=True)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
        return MAX_TRANSFER_BYTES / max(statistics.median(times), 1e-9)

    def event(self, gpu: int) -> Any:
        """A timing event recorded now on ``gpu``'s stream."""
        event = self.torch.cuda.Event(enable_timing=True)
        event.record(self.streams[gpu])
        return event

    def compute(self, gpu: int, seconds: float) -> tuple[Any, Any]:
        """Enqueue a spin of ``seconds`` on ``gpu``'s stream; returns (start, end) events."""
        start = self.event(gpu)
        with self.torch.cuda.stream(self.streams[gpu]):
            self.torch.cuda._sleep(max(int(seconds * self.cycles_per_second), 0))
        return start, self.event(gpu)

    def buffers(self, gpu: int, seconds: float) -> tuple[Any, Any]:
        """A tensor on ``gpu`` of the bytes a copy of ``seconds`` moves, and a pinned host buffer like it."""
        count = int(min(seconds * self.bandwidth, 64 * MAX_TRANSFER_BYTES) // 4)
        payload = self.torch.ones(max(count, 1), device=f"cuda:{gpu}")
        return payload, self.torch.empty(payload.shape, dtype=payload.dtype).pin_memory()

    def download(self, gpu: int, payload: Any, host: Any) -> tuple[Any, Any]:
        """Enqueue the copy of ``payload`` into pinned ``host`` memory on ``gpu``'s stream; (start, end) events."""
        start = self.event(gpu)
        with self.torch.cuda.stream(self.streams[gpu]):
            host.copy_(payload, non_blocking=True)
        return start, self.event(gpu)

    def upload(self, gpu: int, host: Any, wait: Any) -> tuple[Any, Any]:
        """Enqueue the copy of ``host`` onto ``gpu`` once event ``wait`` (its download) is done; (start, end)."""
        stream = self.streams[gpu]
        stream.wait_event(wait)
        start = self.event(gpu)
        with self.torch.cuda.stream(stream):
            host.to(f"cuda:{gpu}", non_blocking=True)
        return start, self.event(gpu)

    def wait(self, gpu: int, event: Any) -> None:
        """Make ``gpu``'s stream wait for ``event`` (recorded on any GPU)."""
        self.streams[gpu].wait_event(event)

    def synchronize(self) -> None:
        """Wait for every GPU."""
        self.torch.cuda.synchronize()

    @staticmethod
    def elapsed(start: Any, end: Any) -> float:
        """Seconds between two recorded events (synchronizes on ``end``)."""
        end.synchronize()
        return start.elapsed_time(end) / 1e3
