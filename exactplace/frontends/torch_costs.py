"""Analytic node costs for :func:`exactplace.from_torch`: a roofline instead of a stopwatch.

A model too large to run here (a 70B configuration built on the ``meta`` device, say) is captured
and costed without allocating it: each node runs once on its inputs' shapes (meta tensors cost
nothing). ``torch.utils.flop_counter.FlopCounterMode`` counts its FLOPs, and the bytes it moves are
those of its input and output tensors (the parameters it reads included). Its time on a device of
peak ``F`` FLOP/s and memory bandwidth ``B`` bytes/s is the roofline's ``max(flops / F, bytes / B)``.
A transfer of ``s`` bytes takes ``latency + s / link_bandwidth``. A backward costs
``backward_factor`` times its forward (2: the gradients of the inputs and of the weights are one
forward's work each).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from exactplace.core.errors import ParameterError

__all__ = ["Roofline", "roofline_times"]


@dataclass(frozen=True)
class Roofline:
    """The devices a plan is costed for, in FLOP/s, bytes/s and seconds.

    Attributes
    ----------
    peak_flops, memory_bandwidth : float
        An accelerator's peak FLOP/s in the model's dtype and its memory bandwidth.
    link_bandwidth, link_latency : float
        Bytes/s and seconds of one transfer between two devices.
    cpu_peak_flops, cpu_memory_bandwidth : float
        The same for a CPU core (its ``cpu_time``).
    backward_factor : float
        A backward node's time over its forward's.

    Examples
    --------
    >>> h100 = Roofline(peak_flops=989e12, memory_bandwidth=3.35e12, link_bandwidth=450e9)
    >>> round(h100.milliseconds(flops=2e12, moved=1e9), 3)  # compute-bound: 2e12 / 989e12 s
    2.022
    """

    peak_flops: float
    memory_bandwidth: float
    link_bandwidth: float
    link_latency: float = 0.0
    cpu_peak_flops: float = 1e11
    cpu_memory_bandwidth: float = 2e10
    backward_factor: float = 2.0

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            positive = field.name not in ("link_latency", "backward_factor")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or (
                    value <= 0 if positive else value < 0):
                raise ParameterError(f"The {field.name!r} parameter of Roofline must be a finite number "
                                     f"{'> 0' if positive else '>= 0'}. Got {value!r} instead.")

    def milliseconds(self, flops: float, moved: float, cpu: bool = False) -> float:
        """A node's time: ``max(flops / peak, bytes / bandwidth)`` of an accelerator or a CPU core."""
        peak, bandwidth = ((self.cpu_peak_flops, self.cpu_memory_bandwidth) if cpu
                           else (self.peak_flops, self.memory_bandwidth))
        return 1e3 * max(flops / peak, moved / bandwidth)


def roofline_times(traced: Any, inputs: tuple[Any, ...], roofline: Roofline, compute_ops: frozenset[str],
                   nbytes: Any) -> tuple[dict[str, float], dict[str, float], dict[str, Any]]:
    """CPU and accelerator milliseconds of every compute node of ``traced``, and its outputs, from one run
    on ``inputs`` (meta tensors run for free) with each node's FLOPs counted."""
    import torch.fx
    from torch.utils.flop_counter import FlopCounterMode

    cpu: dict[str, float] = {}
    acc: dict[str, float] = {}
    outputs: dict[str, Any] = {}

    class Counter(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            if n.op not in compute_ops:
                return super().run_node(n)
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            with torch.no_grad(), FlopCounterMode(display=False) as counter:
                result = super().run_node(n)
            flops, moved = counter.get_total_flops(), nbytes((args, kwargs)) + nbytes(result)
            cpu[n.name] = roofline.milliseconds(flops, moved, cpu=True)
            acc[n.name] = roofline.milliseconds(flops, moved)
            outputs[n.name] = result
            return result

    Counter(traced).run(*inputs)
    return cpu, acc, outputs
