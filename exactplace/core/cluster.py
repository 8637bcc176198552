"""The devices a graph is placed on: k accelerators with capped memory and l CPU cores.

Devices are numbered ``0..k-1`` for the accelerators and ``k..k+l-1`` for the CPU
cores; every placement array in exactplace uses that numbering.

A *two-level* cluster (paper Appendix C.3, PipeDream's hierarchical optimizer) groups the
accelerators into ``machines`` of ``k / machines`` consecutive devices: a transfer between
accelerators of one machine costs what the graph states (the fast, intra-machine bandwidth),
a transfer that leaves a machine costs ``inter_machine_cost`` times as much (the ratio of the
two bandwidths). Each CPU core counts as a host of its own (a host pool reached over the
network), so an accelerator exchanging data with a CPU pays the inter-machine rate too.
Only the throughput objective models it; see :mod:`exactplace.evaluators.max_load`.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence

import numpy as np

from exactplace.core.errors import InputFormatError, ParameterError, check_param
from exactplace.core.params import Real, brief

__all__ = ["MEMORY_ATOL", "MEMORY_RTOL", "Cluster"]

#: Slack on every accelerator memory check (relative, and absolute in bytes): sums of the same
#: node sizes taken in another order differ by rounding, and the evaluator and every method must
#: agree on what fits.
MEMORY_RTOL = 1e-9
MEMORY_ATOL = 1e-9
#: The most accelerators or CPUs a Cluster may state (numpy's index range; a solve uses at most one per node).
MAX_DEVICES = 2**62
#: The largest ``inter_machine_cost``: a graph's values add up to at most 1e300 (``exactplace.core.graph``), so
#: every load priced at this many times its cost stays finite (no overflow, in the evaluators or a solver's bounds).
MAX_INTER_MACHINE_COST = 1e6
#: Relative accelerator speeds lie in ``[1 / MAX_SPEED, MAX_SPEED]``, for the same reason: a time divided by
#: one stays finite.
MAX_SPEED = 1e6

_INTER_MACHINE_COST = Real(low=1, high=MAX_INTER_MACHINE_COST)
#: The fields of :meth:`Cluster.to_dict`.
_DICT_FIELDS = ("accelerators", "cpus", "memory", "speed", "machines", "inter_machine_cost")


class Cluster:
    """k accelerators (memory cap, relative speed each) and l CPU cores.

    Parameters
    ----------
    accelerators : int
        Number of accelerators k.
    memory : float or sequence of float
        Memory of each accelerator in bytes (one number for all, or one per device);
        ``math.inf`` means uncapped.
    cpus : int
        Number of CPU cores l (no memory cap, no communication cost).
    speed : float or sequence of float
        Relative speed of each accelerator, in ``[1e-6, 1e6]`` (``MAX_SPEED``): a node's accelerator time
        is divided by it.
        The paper's model is homogeneous (speed 1). Per-device memory and speed are honoured
        by the evaluators and by the exact methods ``dp`` and ``mip`` (see
        :meth:`accelerator_types`); ``dpl`` and ``pipedream`` take homogeneous clusters only.
    machines : int
        Machines the accelerators are grouped into (a divisor of ``accelerators``); accelerator
        ``d`` is on machine ``d // (accelerators / machines)``. See the module docstring.
    inter_machine_cost : float
        In ``[1, 1e6]`` (``MAX_INTER_MACHINE_COST``): how many times its stated cost a transfer between
        hosts (two machines, or a machine and a CPU core) takes, the intra-machine bandwidth over the
        inter-machine one. 1 (the default) makes the cluster one-level whatever ``machines`` says.

    Examples
    --------
    >>> c = Cluster(accelerators=2, memory=16e9, cpus=1)
    >>> c.num_devices, c.device_name(1), c.device_name(2)
    (3, 'acc1', 'cpu0')
    >>> two = Cluster(accelerators=4, cpus=1, machines=2, inter_machine_cost=8.0)
    >>> two.is_two_level, two.hosts.tolist()  # acc0-1 on machine 0, acc2-3 on machine 1, cpu0 a host of its own
    (True, [0, 0, 1, 1, 2])
    """

    __slots__ = ("accelerators", "cpus", "inter_machine_cost", "machines", "memory", "speed")

    def __init__(
        self,
        accelerators: int,
        memory: float | Sequence[float] = math.inf,
        cpus: int = 1,
        speed: float | Sequence[float] = 1.0,
        machines: int = 1,
        inter_machine_cost: float = 1.0,
    ) -> None:
        for name, value in (("accelerators", accelerators), ("cpus", cpus)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value <= MAX_DEVICES:
                raise ParameterError(f"The {name!r} parameter of Cluster must be a non-negative integer "
                                     f"(at most 2**62). Got {brief(value)!r} instead.")
        if accelerators + cpus == 0:
            raise ParameterError("A Cluster needs at least one device: accelerators and cpus are both 0.")
        object.__setattr__(self, "accelerators", int(accelerators))
        object.__setattr__(self, "cpus", int(cpus))
        object.__setattr__(self, "memory", _per_device(memory, "memory", int(accelerators), allow_inf=True))
        object.__setattr__(self, "speed", _per_device(speed, "speed", int(accelerators), allow_inf=False))
        sample = self.speed[:1] if _uniform(self.speed) else self.speed
        check_param(not np.any((sample < 1 / MAX_SPEED) | (sample > MAX_SPEED)), "speed", "Cluster",
                    f"positive, in [{1 / MAX_SPEED:f}, {MAX_SPEED:.0f}] (a relative speed)", brief(speed))
        check_param(not isinstance(machines, bool) and isinstance(machines, (int, np.integer)) and machines >= 1
                    and (accelerators % machines == 0 if accelerators else machines == 1), "machines", "Cluster",
                    f"a positive divisor of the accelerators ({accelerators})", brief(machines))
        check_param(_INTER_MACHINE_COST.accepts(inter_machine_cost), "inter_machine_cost", "Cluster",
                    f"a number in [1, {MAX_INTER_MACHINE_COST:.0f}] (the intra-machine bandwidth over the "
                    "inter-machine one)", brief(inter_machine_cost))
        object.__setattr__(self, "machines", int(machines))
        object.__setattr__(self, "inter_machine_cost", float(inter_machine_cost))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Cluster is immutable")

    @property
    def num_devices(self) -> int:
        """k + l."""
        return self.accelerators + self.cpus

    @property
    def is_homogeneous(self) -> bool:
        """True when all accelerators share one memory size and speed (the paper's model)."""
        return _uniform(self.memory) and _uniform(self.speed) and (self.accelerators == 0 or self.speed[0] == 1.0)

    @property
    def is_two_level(self) -> bool:
        """True when transfers between hosts cost more than within a machine (``inter_machine_cost > 1``)."""
        return self.inter_machine_cost > 1.0

    @property
    def per_machine(self) -> int:
        """Accelerators on each machine."""
        return self.accelerators // self.machines

    @property
    def hosts(self) -> np.ndarray:
        """The host of every device: its machine for an accelerator, ``machines + j`` for CPU core ``j``."""
        k = self.accelerators
        return np.concatenate([np.arange(k, dtype=np.int64) // max(self.per_machine, 1),
                               self.machines + np.arange(self.cpus, dtype=np.int64)])

    def require_one_level(self, what: str) -> None:
        """Raise ParameterError naming ``what`` when this cluster is two-level (which ``what`` does not model)."""
        if self.is_two_level:
            raise ParameterError(
                f"{what} does not model two-level clusters (machines={self.machines}, inter_machine_cost="
                f"{self.inter_machine_cost:g}); only the throughput objective does. Give the cluster "
                "inter_machine_cost=1 to ignore the hierarchy."
            )

    def for_nodes(self, n: int) -> Cluster:
        """The same problem for a graph of ``n`` nodes: at most ``n`` CPUs and, when the accelerators
        are identical and on one level, at most ``n`` of them (a placement uses no more devices than nodes).

        >>> Cluster(accelerators=10**9, memory=1e9, cpus=10**9).for_nodes(3)
        Cluster(accelerators=3, memory=1000000000.0, cpus=3)
        """
        alike = _uniform(self.memory) and _uniform(self.speed) and not self.is_two_level
        k = min(self.accelerators, n) if alike else self.accelerators
        if (k, min(self.cpus, n)) == (self.accelerators, self.cpus):
            return self
        return Cluster(k, self.memory[:k], min(self.cpus, n), self.speed[:k], self.machines if k == self.accelerators
                       else 1, self.inter_machine_cost)

    def accelerator_types(self, per_type: int | None = None) -> list[np.ndarray]:
        """The accelerators grouped into *types* of equal memory and speed (interchangeable devices).

        Each type lists its accelerators in ascending order (only the first ``per_type`` when
        given); types are ordered by their first accelerator. A homogeneous cluster has one type.

        >>> c = Cluster(4, memory=[8.0, 4.0, 8.0, 8.0], speed=[1.0, 1.0, 1.0, 2.0])
        >>> [t.tolist() for t in c.accelerator_types()]
        [[0, 2], [1], [3]]
        >>> [t.tolist() for t in Cluster(10**9, memory=1e9).accelerator_types(per_type=2)]
        [[0, 1]]
        """
        k = self.accelerators
        if k == 0:
            return []
        limit = k if per_type is None else min(k, per_type)
        if _uniform(self.memory) and _uniform(self.speed):
            return [np.arange(limit, dtype=np.int64)]
        pairs = np.stack([self.memory, self.speed], axis=1)
        _, first, inverse = np.unique(pairs, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        return [np.flatnonzero(inverse == t)[:limit] for t in np.argsort(first, kind="stable")]

    @property
    def max_memory(self) -> float:
        """The largest accelerator memory (0 with no accelerator)."""
        return float(self.memory.max()) if self.accelerators else 0.0

    @property
    def memory_limit(self) -> np.ndarray:
        """Per-accelerator memory with the shared rounding slack: a device fits when its sum is at most this."""
        return self.memory * (1 + MEMORY_RTOL) + MEMORY_ATOL

    @property
    def memory_cap(self) -> float:
        """The memory every accelerator offers: the smallest ``memory_limit``; ``inf`` without accelerators.

        Methods that treat the accelerators as identical fill each up to this, so they and
        ``check_feasibility`` agree on what fits.

        >>> Cluster(2, memory=[8.0, 6.0]).memory_cap == float(Cluster(1, memory=6.0).memory_limit[0])
        True
        >>> Cluster(0, cpus=1).memory_cap
        inf
        """
        return float(self.memory_limit.min()) if self.accelerators else math.inf

    def is_accelerator(self, device: int) -> bool:
        """True for device numbers 0..k-1."""
        return 0 <= device < self.accelerators

    def device_name(self, device: int) -> str:
        """``acc<i>`` or ``cpu<j>``."""
        if self.is_accelerator(device):
            return f"acc{device}"
        if self.accelerators <= device < self.num_devices:
            return f"cpu{device - self.accelerators}"
        raise ParameterError(f"Device {device} does not exist: the cluster has {self.num_devices} devices.")

    def device_names(self) -> list[str]:
        """Names of every device, in device-number order."""
        return [self.device_name(d) for d in range(self.num_devices)]

    def to_dict(self) -> dict[str, object]:
        """JSON-ready description (floats; ``inf`` memory written as null; the two levels only when set)."""
        data: dict[str, object] = {
            "accelerators": self.accelerators,
            "cpus": self.cpus,
            "memory": [None if math.isinf(x) else float(x) for x in self.memory],
            "speed": [float(x) for x in self.speed],
        }
        if self.machines != 1 or self.is_two_level:
            data.update(machines=self.machines, inter_machine_cost=self.inter_machine_cost)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Cluster:
        """Inverse of :meth:`to_dict` (a plan's ``cluster`` section).

        A missing or unknown field is an :class:`~exactplace.core.errors.InputFormatError` naming it (and
        the nearest known one); values are checked as the constructor checks them.

        >>> Cluster.from_dict({"accelerators": 1, "cpus": 1, "memory": [None], "sped": [2.0]})
        Traceback (most recent call last):
        ...
        exactplace.core.errors.InputFormatError: The cluster has an unknown field 'sped' (did you mean 'speed'?).
        """
        if not isinstance(data, dict):
            raise InputFormatError(f"The cluster must be a JSON object. Got {type(data).__name__} instead.")
        for key in data:
            if key not in _DICT_FIELDS:
                close = difflib.get_close_matches(str(key), _DICT_FIELDS, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"the fields are {', '.join(_DICT_FIELDS)}"
                raise InputFormatError(f"The cluster has an unknown field {brief(key)!r} ({hint}).")
        for key in ("accelerators", "cpus", "memory"):
            if key not in data:
                raise InputFormatError(f"The cluster is missing the required field {key!r}.")
        if not isinstance(data["memory"], list):
            raise InputFormatError(f"The cluster: field 'memory' must be a list. Got {brief(data['memory'])!r} "
                                   "instead.")
        memory = [math.inf if x is None else x for x in data["memory"]]
        return cls(data["accelerators"], memory, data["cpus"], data.get("speed", 1.0), data.get("machines", 1),
                   data.get("inter_machine_cost", 1.0))

    def __reduce__(self) -> tuple[type[Cluster], tuple[object, ...]]:
        """Pickled as its constructor's arguments (a per-device list only where devices differ): for Ray and
        multiprocessing."""
        def given(values: np.ndarray) -> object:
            return float(values[0]) if self.accelerators and _uniform(values) else [float(v) for v in values]

        memory = given(self.memory) if self.accelerators else math.inf
        speed = given(self.speed) if self.accelerators else 1.0
        return Cluster, (self.accelerators, memory, self.cpus, speed, self.machines, self.inter_machine_cost)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cluster):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        """The constructor call that rebuilds this cluster (per-device lists only where devices differ)."""
        def shown(values: np.ndarray, default: float | None) -> str | None:
            if self.accelerators == 0 or _uniform(values):
                first = float(values[0]) if len(values) else default
                return None if first == default else repr(first)
            return repr([float(v) for v in values])

        parts = [f"accelerators={self.accelerators}"]
        for name, values, default in (("memory", self.memory, None), ("speed", self.speed, 1.0)):
            text = shown(values, default)
            if text is not None:
                parts.append(f"{name}={text}")
        parts.append(f"cpus={self.cpus}")
        if self.machines != 1 or self.is_two_level:
            parts += [f"machines={self.machines}", f"inter_machine_cost={self.inter_machine_cost!r}"]
        return f"Cluster({', '.join(parts)})"


def _uniform(values: np.ndarray) -> bool:
    """All equal; a scalar broadcast to every device (stride 0) is, without comparing 10**9 copies."""
    return len(values) == 0 or values.strides[0] == 0 or bool(np.all(values == values[0]))


def _per_device(value: float | Sequence[float], name: str, k: int, *, allow_inf: bool) -> np.ndarray:
    """One value per accelerator, read-only; a scalar is broadcast (no memory per device)."""
    try:
        if np.isscalar(value):
            array = np.broadcast_to(np.array(value, dtype=np.float64), (k,))
        else:
            array = np.array(list(value), dtype=np.float64)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer beyond the largest float
        array = None
    check_param(array is not None, name, "Cluster", "a number or a list of numbers", brief(value))
    check_param(array.shape == (k,), name, "Cluster", f"one number or one value per accelerator ({k})", brief(value))
    sample = array[:1] if _uniform(array) else array
    bad = np.isnan(sample) | (sample < 0) | (np.isinf(sample) if not allow_inf else False)
    check_param(not np.any(bad), name, "Cluster", "non-negative" + ("" if allow_inf else " and finite"), brief(value))
    if array.flags.writeable:
        array.setflags(write=False)
    return array
