"""Exact max-load (time per sample of pipelined execution), vectorized with numpy.

The model (workloads README, paper §3): a CPU core's load is the sum of its nodes'
CPU times. An accelerator's load is the sum of its nodes' accelerator times plus
communication: every node ``u`` outside the device with an edge into it costs
``c_u`` once, and every node ``u`` on the device with an edge leaving it costs
``c_u`` once. For training graphs a device runs its forward and its backward
subgraph, so its load is FW + BW (PipeDream); ``gpipe=True`` scores the GPipe
schedule instead, max FW + max BW. ``overlap=True`` assumes communication overlaps
computation, so an accelerator's load is max(communication, computation) (paper
Appendix C.1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph
from exactplace.core.placement_array import as_device_array

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DeviceLoads", "device_loads", "max_load"]


@dataclass(frozen=True)
class DeviceLoads:
    """Per-device breakdown; arrays have shape (num_devices, 2): column 0 forward, 1 backward."""

    compute: np.ndarray
    comm: np.ndarray
    memory: np.ndarray
    overlap: bool

    def load(self, part: int | None = None) -> np.ndarray:
        """Load of every device, of one part (0 forward, 1 backward) or of both."""
        compute = self.compute.sum(axis=1) if part is None else self.compute[:, part]
        comm = self.comm.sum(axis=1) if part is None else self.comm[:, part]
        return np.maximum(compute, comm) if self.overlap else compute + comm

    def to_frame(self, cluster: Cluster) -> pd.DataFrame:
        """One row per device: compute, communication, load, memory."""
        import pandas as pd  # here, not at module level: ``import exactplace`` stays light

        return pd.DataFrame(
            {
                "device": cluster.device_names(),
                "compute": self.compute.sum(axis=1),
                "communication": self.comm.sum(axis=1),
                "load": self.load(),
                "memory": self.memory,
            }
        ).set_index("device")


def device_loads(
    graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray, *, overlap: bool = False
) -> DeviceLoads:
    """Compute, communication and memory of every device under a placement.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    device : array of int
        ``device[i]`` is the device of the node at position ``i``.
    overlap : bool
        Communication overlapped with compute (load = max instead of sum).

    Returns
    -------
    DeviceLoads

    Raises
    ------
    PlacementError
        ``device`` has the wrong length or names a device that does not exist.
    """
    dev = as_device_array(graph, cluster, device)
    k, num_devices = cluster.accelerators, cluster.num_devices
    on_acc = dev < k
    speed = np.ones(graph.n)
    speed[on_acc] = cluster.speed[dev[on_acc]]
    with np.errstate(invalid="ignore"):
        time = np.where(on_acc, graph.acc_time / speed, graph.cpu_time)
    part = graph.backward.astype(np.int64)
    compute = np.zeros((num_devices, 2))
    np.add.at(compute, (dev, part), time)

    comm = np.zeros((num_devices, 2))
    receiver = dev[graph.dst]
    crossing = dev[graph.src] != receiver
    # Each communication group pays once per receiving device and once at its source.
    pairs = np.unique(graph.edge_group[crossing] * num_devices + receiver[crossing])
    groups, receivers = pairs // num_devices, pairs % num_devices
    group_part = part[graph.group_source]
    np.add.at(comm, (receivers, group_part[groups]), graph.group_cost[groups])
    senders = np.unique(groups)
    np.add.at(comm, (dev[graph.group_source[senders]], group_part[senders]), graph.group_cost[senders])
    comm[k:] = 0.0  # CPUs read RAM directly: no communication cost

    memory = np.bincount(dev[on_acc], weights=graph.memory[on_acc], minlength=num_devices)
    return DeviceLoads(compute=compute, comm=comm, memory=memory, overlap=overlap)


def max_load(
    graph: Graph,
    cluster: Cluster,
    device: Sequence[int] | np.ndarray,
    *,
    overlap: bool = False,
    gpipe: bool = False,
) -> float:
    """Time per sample of pipelined execution: the maximum device load.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    device : array of int
        ``device[i]`` is the device of the node at position ``i``.
    overlap : bool, default False
        Communication overlapped with compute: an accelerator's load is
        max(communication, computation) instead of their sum.
    gpipe : bool, default False
        Training only: score max FW load + max BW load (GPipe) instead of
        max (FW + BW) (PipeDream).

    Returns
    -------
    float
        ``inf`` if a node unsupported on accelerators is placed on one.

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> from exactplace.core.cluster import Cluster
    >>> g = Graph([Node(1, 5.0, 1.0, comm=0.5), Node(2, 6.0, 2.0, comm=0.5)], [(1, 2)])
    >>> c = Cluster(accelerators=2, cpus=1)
    >>> max_load(g, c, [0, 1])          # acc0: 1 + 0.5 out; acc1: 0.5 in + 2
    2.5
    >>> max_load(g, c, [0, 0])
    3.0
    >>> max_load(g, c, [2, 0])          # the CPU pays no communication
    5.0
    """
    loads = device_loads(graph, cluster, device, overlap=overlap)
    if gpipe:
        return float(loads.load(0).max() + loads.load(1).max())
    return float(loads.load().max())
