"""Exact max-load (time per sample of pipelined execution, paper §3), vectorized with numpy.

The model (workloads README): a CPU core's load is the sum of its nodes' CPU times. An
accelerator's load is the sum of its nodes' accelerator times plus communication: every node
``u`` outside the device with an edge into it costs ``c_u`` once, and every node ``u`` on the
device with an edge leaving it costs ``c_u`` once. A training device runs its forward and its
backward subgraph, so its load is FW + BW (PipeDream); ``gpipe=True`` scores the GPipe schedule,
max FW + max BW. ``overlap=True``: communication overlaps computation, so an accelerator's load
is max(communication, computation) (Appendix C.1).

Replication (Appendix C.2, PipeDream's data-parallel stages): ``replicas[a]`` identical
accelerators run accelerator ``a``'s part, each on ``1 / r`` of the samples, and all-reduce its
parameters, so its load is ``(compute + communication + sync * (r - 1) / r) / r``, ``sync`` being
its nodes' ``Node.sync`` summed (PipeDream's ``4 P / B``); refused with ``overlap`` and ``gpipe``,
which the paper and PipeDream do not combine with it. Two-level clusters: :func:`device_loads`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ParameterError
from exactplace.core.graph import Graph
from exactplace.core.placement_array import as_device_array, as_replicas_array

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DeviceLoads", "device_loads", "load_contributions", "max_load"]


@dataclass(frozen=True)
class DeviceLoads:
    """Per-device breakdown; arrays have shape (num_devices, 2): column 0 forward, 1 backward.

    With replication, ``replicas`` (shape (num_devices,), 1 on CPUs) and ``sync`` (the all-reduce
    time of each device's parameters, ``Node.sync`` summed) are set; otherwise both are None.
    """

    compute: np.ndarray
    comm: np.ndarray
    memory: np.ndarray
    overlap: bool
    replicas: np.ndarray | None = None
    sync: np.ndarray | None = None

    def load(self, part: int | None = None) -> np.ndarray:
        """Load of every device, of one part (0 forward, 1 backward) or of both.

        A replicated device's load is divided by its replicas; the all-reduce of its parameters
        (``sync * (r - 1) / r``) counts in the load of both parts only.
        """
        compute = self.compute.sum(axis=1) if part is None else self.compute[:, part]
        comm = self.comm.sum(axis=1) if part is None else self.comm[:, part]
        load = np.maximum(compute, comm) if self.overlap else compute + comm
        if self.replicas is None:
            return load
        r = self.replicas.astype(np.float64)
        if part is None:
            load = load + self.sync * (r - 1) / r
        return load / r

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
                **({} if self.replicas is None else {"replicas": self.replicas, "sync": self.sync}),
            }
        ).set_index("device")


@dataclass(frozen=True)
class _Transfers:
    """The communication groups a placement pays for: ``received[i]`` is received on device ``receivers[i]`` at
    ``cost_in[i]``; ``sent[j]`` is sent from its source's device at ``cost_out[j]`` (CPUs included: the caller
    zeroes their costs)."""

    received: np.ndarray
    receivers: np.ndarray
    cost_in: np.ndarray
    sent: np.ndarray
    cost_out: np.ndarray


def _transfers(graph: Graph, cluster: Cluster, dev: np.ndarray) -> _Transfers:
    num_devices = cluster.num_devices
    receiver = dev[graph.dst]
    crossing = dev[graph.src] != receiver
    # Each communication group pays once per receiving device and once at its source.
    pairs = np.unique(graph.edge_group[crossing] * num_devices + receiver[crossing])
    groups, receivers = pairs // num_devices, pairs % num_devices
    senders = np.unique(groups)
    cost_in, cost_out = graph.group_cost[groups], graph.group_cost[senders]
    if cluster.is_two_level:
        # A receiver on another host pulls the data over the slow link; the source pays the slow rate
        # once when any of its receivers is on another host.
        host = cluster.hosts
        remote = host[dev[graph.group_source[groups]]] != host[receivers]
        cost_in = np.where(remote, cost_in * cluster.inter_machine_cost, cost_in)
        any_remote = np.zeros(len(graph.group_cost), dtype=bool)
        np.logical_or.at(any_remote, groups, remote)
        cost_out = np.where(any_remote[senders], cost_out * cluster.inter_machine_cost, cost_out)
    return _Transfers(groups, receivers, cost_in, senders, cost_out)


def load_contributions(graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray, on: int) -> pd.DataFrame:
    """What device ``on``'s load is made of: one row per node that adds to it, largest first.

    Columns: ``node`` (id), ``name``, ``kind`` (``compute``; ``input``: the node, elsewhere, sends its output
    here; ``output``: the node, here, sends its output elsewhere), ``part`` (``forward``/``backward``) and
    ``seconds``. Without overlap the seconds add up to the device's load (:func:`device_loads`); with it, the
    load is the larger of the compute and the communication sums.

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 1.0, 2.0, comm=0.5), Node(1, 1.0, 3.0)], [(0, 1)])
    >>> load_contributions(g, Cluster(2, cpus=0), [0, 1], 1)[["node", "kind", "seconds"]].values.tolist()
    [[1, 'compute', 3.0], [0, 'input', 0.5]]
    """
    import pandas as pd

    dev = as_device_array(graph, cluster, device)
    check = 0 <= on < cluster.num_devices
    if not check:
        raise ParameterError(f"The 'on' parameter of load_contributions must be a device of the cluster "
                             f"(0..{cluster.num_devices - 1}). Got {on!r} instead.")
    here = np.flatnonzero(dev == on)
    if on < cluster.accelerators:
        times = graph.acc_time[here] / cluster.speed[on]
    else:
        times = graph.cpu_time[here]
    rows = [(int(i), "compute", float(t)) for i, t in zip(here, times)]
    if on < cluster.accelerators:  # CPUs read RAM directly: no communication cost
        transfers = _transfers(graph, cluster, dev)
        source = graph.group_source
        rows += [(int(source[g]), "input", float(c))
                 for g, r, c in zip(transfers.received, transfers.receivers, transfers.cost_in) if r == on]
        rows += [(int(source[g]), "output", float(c))
                 for g, c in zip(transfers.sent, transfers.cost_out) if dev[source[g]] == on]
    frame = pd.DataFrame({
        "node": [int(graph.ids[i]) for i, _, _ in rows], "name": [graph.names[i] for i, _, _ in rows],
        "kind": [kind for _, kind, _ in rows],
        "part": ["backward" if graph.backward[i] else "forward" for i, _, _ in rows],
        "seconds": [t for _, _, t in rows]})
    frame = frame[frame["seconds"] > 0] if len(frame) else frame
    return frame.sort_values("seconds", ascending=False, kind="stable").reset_index(drop=True)


def device_loads(
    graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray, *, overlap: bool = False,
    replicas: Sequence[int] | np.ndarray | None = None,
) -> DeviceLoads:
    """Compute, communication and memory of every device under a placement.

    Two-level clusters (``Cluster.machines``, ``inter_machine_cost`` = f; paper Appendix C.3): a
    group's receiver on another host than its source (another machine, or a CPU core: each core
    is a host of its own) pays ``f`` times its cost, and the source pays ``f`` times when any
    receiver is on another host; within a machine nothing changes.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    device : array of int
        ``device[i]`` is the device of the node at position ``i``.
    overlap : bool
        Communication overlapped with compute (load = max instead of sum).
    replicas : array of int, optional
        Replicas of each accelerator's part (see the module docstring); None: no replication.

    Returns
    -------
    DeviceLoads

    Raises
    ------
    PlacementError
        ``device`` has the wrong length or names a device that does not exist, or ``replicas``
        is malformed (:func:`~exactplace.core.placement_array.as_replicas_array`).
    ParameterError
        ``replicas`` with ``overlap=True``.
    """
    dev = as_device_array(graph, cluster, device)
    reps = as_replicas_array(graph, cluster, dev, replicas)
    if reps is not None and overlap:
        raise ParameterError("Replicas with overlap=True are not modelled (paper Appendix C.2 replicates the "
                             "sequential load, compute + communication); score without overlap.")
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
    transfers = _transfers(graph, cluster, dev)
    group_part = part[graph.group_source]
    np.add.at(comm, (transfers.receivers, group_part[transfers.received]), transfers.cost_in)
    np.add.at(comm, (dev[graph.group_source[transfers.sent]], group_part[transfers.sent]), transfers.cost_out)
    comm[k:] = 0.0  # CPUs read RAM directly: no communication cost

    memory = np.bincount(dev[on_acc], weights=graph.memory[on_acc], minlength=num_devices)
    if reps is None:
        return DeviceLoads(compute=compute, comm=comm, memory=memory, overlap=overlap)
    sync = np.bincount(dev[on_acc], weights=graph.sync[on_acc], minlength=num_devices)
    replicas_all = np.concatenate([reps, np.ones(cluster.cpus, dtype=np.int64)])
    return DeviceLoads(compute=compute, comm=comm, memory=memory, overlap=overlap, replicas=replicas_all, sync=sync)


def max_load(
    graph: Graph,
    cluster: Cluster,
    device: Sequence[int] | np.ndarray,
    *,
    overlap: bool = False,
    gpipe: bool = False,
    replicas: Sequence[int] | np.ndarray | None = None,
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
    replicas : array of int, optional
        Replicas of each accelerator's part: its load is
        ``(compute + communication + sync * (r - 1) / r) / r`` (module docstring).

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
    >>> g = Graph([Node(1, 5.0, 3.0, sync=1.0)], [])
    >>> max_load(g, Cluster(accelerators=2, cpus=0), [0], replicas=[2, 1])   # (3 + 1 * 1/2) / 2
    1.75
    """
    if gpipe and replicas is not None:
        raise ParameterError("Replicas with gpipe=True are not modelled (PipeDream's replicated stages run its "
                             "own schedule, FW + BW per device); score without gpipe.")
    loads = device_loads(graph, cluster, device, overlap=overlap, replicas=replicas)
    if gpipe:
        return float(loads.load(0).max() + loads.load(1).max())
    return float(loads.load().max())
