"""Step time of one sample: an operator-level list-schedule simulation (``objective="makespan"``).

This is the model the list schedulers (Baechi's m-TOPO / m-ETF / m-SCT, Celeritas, FastT)
optimize, and the referee of their plans: :func:`simulate` runs one step event by event (its
docstring states the rules: one node at a time per device, transfers through host RAM with the
accounting of max-load and latency, one half-duplex channel per accelerator), :class:`Schedule`
is what it records and :func:`makespan` the time its last node finishes.

Memory is static in this model (a node's ``memory`` is resident on its accelerator for the
whole step), so a device's peak memory is the sum over its nodes.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import PlacementError
from exactplace.core.graph import Graph
from exactplace.core.placement_array import as_device_array

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Schedule", "check_order", "makespan", "node_durations", "simulate"]

# Event kinds, in the order simultaneous events are handled (a finish before the transfers it requests).
_FINISH, _REQUEST, _DONE = 0, 1, 2


@dataclass(frozen=True)
class Schedule:
    """A simulated step: when each node ran, and how busy each device was.

    Attributes
    ----------
    device, start, finish : numpy arrays indexed by node position
    busy : per-device compute time; ``idle = makespan - busy``
    channel : per-device transfer time (0 on CPUs)
    memory : per-device static memory (the peak, see the module docstring)
    order : node positions by start time (ties by topological position): a valid ``order``
    transfers : array of shape (t, 3), one row per copy: channel (the accelerator copying), start, finish
    """

    graph: Graph
    cluster: Cluster
    device: np.ndarray
    start: np.ndarray
    finish: np.ndarray
    busy: np.ndarray
    channel: np.ndarray
    memory: np.ndarray
    order: np.ndarray
    transfers: np.ndarray

    @property
    def makespan(self) -> float:
        """The time the last node finishes."""
        return float(self.finish.max())

    @property
    def idle(self) -> np.ndarray:
        """Per-device time without compute before the makespan."""
        return self.makespan - self.busy

    def to_frame(self) -> pd.DataFrame:
        """The schedule table: one row per node (id, name, device, start, finish), by start time."""
        import pandas as pd  # here, not at module level: ``import exactplace`` stays light

        names = self.cluster.device_names()
        o = self.order
        return pd.DataFrame({
            "node": self.graph.ids[o], "name": [self.graph.names[i] for i in o.tolist()],
            "device": [names[d] for d in self.device[o].tolist()], "start": self.start[o], "finish": self.finish[o],
        })

    def device_frame(self) -> pd.DataFrame:
        """One row per device: busy, idle and channel time, and peak memory."""
        import pandas as pd

        return pd.DataFrame({"device": self.cluster.device_names(), "busy": self.busy, "idle": self.idle,
                             "channel": self.channel, "memory": self.memory}).set_index("device")


def node_durations(graph: Graph, cluster: Cluster, device: np.ndarray) -> np.ndarray:
    """Each node's run time on its device (``inf`` for an unsupported node on an accelerator)."""
    on_acc = device < cluster.accelerators
    speed = np.ones(graph.n)
    speed[on_acc] = cluster.speed[device[on_acc]]
    with np.errstate(invalid="ignore"):
        return np.where(on_acc, graph.acc_time / speed, graph.cpu_time)


def check_order(graph: Graph, order: Sequence[int] | np.ndarray) -> np.ndarray:
    """``order`` as an int array, or PlacementError unless it is a topological order of all node positions."""
    array = np.asarray(order)
    if array.shape != (graph.n,) or array.dtype.kind not in "iu" or not np.array_equal(
        np.sort(array), np.arange(graph.n)
    ):
        raise PlacementError(f"An execution order must list every node position 0..{graph.n - 1} once.")
    rank = np.empty(graph.n, dtype=np.int64)
    rank[array] = np.arange(graph.n)
    bad = np.flatnonzero(rank[graph.src] >= rank[graph.dst])
    if bad.size:
        e = int(bad[0])
        raise PlacementError(
            f"The execution order runs {graph.describe(int(graph.dst[e]))} before its input "
            f"{graph.describe(int(graph.src[e]))}; it must be a topological order."
        )
    return array.astype(np.int64, copy=False)


def simulate(
    graph: Graph,
    cluster: Cluster,
    device: Sequence[int] | np.ndarray,
    *,
    order: Sequence[int] | np.ndarray | None = None,
    contention: bool = True,
) -> Schedule:
    """Simulate one step of the placement.

    The rules:

    * every device (each accelerator, each CPU core) runs one node at a time, without preemption;
      a node takes its accelerator time (divided by the device's speed) or its CPU time;
    * a node starts when its device is free and every input has arrived;
    * communication goes through host RAM, with the same accounting as max-load and latency
      (one choice the papers leave open, made here so the three objectives agree): when a
      node on an accelerator finishes, each of its communication groups that has a receiver on
      another device is copied out once (its cost, on the source's channel); every other
      *accelerator* receiving the group then copies it in once (its cost, on the receiver's
      channel). CPUs read RAM directly: a CPU source's output is in RAM when it finishes and a
      CPU receiver pays nothing. An edge acc -> acc thus delays by twice its cost, acc <-> CPU
      by its cost, CPU -> CPU by nothing; and over the whole run an accelerator's channel is
      busy exactly its max-load communication.
    * ``contention=True`` (default, Baechi's model): each accelerator has one half-duplex
      channel; its copies in and out queue on it first-come first-served (by the time they are
      requested; simultaneous requests in event order), and transfers overlap compute.
      ``contention=False``: every transfer starts as soon as it is requested.
    * the execution order on each device is the given ``order`` (a topological order of all
      nodes, e.g. the one a placer built), else derived: a device that becomes free starts the
      ready node with the earliest ready time, ties by position in ``graph.topological_order``.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    device : array of int
        ``device[i]`` is the device of the node at position ``i``.
    order : array of int, optional
        Node positions in execution order (a topological order); each device runs its nodes
        in this order. Default: derived by ready time, then topological position.
    contention : bool, default True
        Transfers queue on one half-duplex channel per accelerator; False: contention-free.

    Returns
    -------
    Schedule
        Its makespan is ``inf`` when a node unsupported on accelerators is put on one.

    Raises
    ------
    PlacementError
        A malformed placement or order.
    """
    cluster.require_one_level("The makespan objective")
    dev = as_device_array(graph, cluster, device)
    rank = None if order is None else check_order(graph, order)
    n, k, num_devices = graph.n, cluster.accelerators, cluster.num_devices
    duration = node_durations(graph, cluster, dev)
    memory = np.bincount(dev[dev < k], weights=graph.memory[dev < k], minlength=num_devices)
    if not np.all(np.isfinite(duration)):
        inf = np.full(n, math.inf)
        return Schedule(graph, cluster, dev, inf, inf, np.full(num_devices, math.inf), np.zeros(num_devices),
                        memory, graph.topological_order.copy(), np.zeros((0, 3)))

    topo_pos = np.empty(n, dtype=np.int64)
    topo_pos[graph.topological_order] = np.arange(n)
    run = _Simulation(graph, cluster, dev, duration, topo_pos, rank, contention)
    run.run()
    start_a, finish_a = np.array(run.start), np.array(run.finish)
    busy = np.bincount(dev, weights=duration, minlength=num_devices)
    executed = np.lexsort((topo_pos, start_a))
    transfers = np.array(run.copies, dtype=float).reshape(-1, 3)
    return Schedule(graph, cluster, dev, start_a, finish_a, busy, np.array(run.channel_busy), memory, executed,
                    transfers)


class _Simulation:
    """The event loop of :func:`simulate` for a placement whose every duration is finite.

    Events are ``(time, kind, sequence, a, b, c)`` on one heap: a node finishing (``a`` the node),
    a copy requested on a channel (``a`` the channel, ``b`` the group, ``c`` the target: -1 copies
    out of the source's accelerator, else into accelerator ``c``) and that copy done.
    """

    def __init__(self, graph: Graph, cluster: Cluster, dev: np.ndarray, duration: np.ndarray,
                 topo_pos: np.ndarray, rank: np.ndarray | None, contention: bool) -> None:
        n, num_devices = graph.n, cluster.num_devices
        self.n, self.k, self.num_devices, self.contention = n, cluster.accelerators, num_devices, contention
        # receivers[g]: {device: [destination positions]} of communication group g.
        self.receivers: list[dict[int, list[int]]] = [{} for _ in range(len(graph.group_cost))]
        for g, v in zip(graph.edge_group.tolist(), graph.dst.tolist()):
            self.receivers[g].setdefault(int(dev[v]), []).append(v)
        self.groups_of: list[list[int]] = [[] for _ in range(n)]
        for g, u in enumerate(graph.group_source.tolist()):
            self.groups_of[u].append(g)
        self.cost = graph.group_cost.tolist()
        self.devl, self.dur, self.tpos = dev.tolist(), duration.tolist(), topo_pos.tolist()
        self.waiting = np.bincount(graph.dst, minlength=n).tolist()
        self.start, self.finish = [0.0] * n, [0.0] * n
        self.free = [True] * num_devices
        self.channel_free = [0.0] * num_devices
        self.channel_busy = [0.0] * num_devices
        self.copies: list[tuple[int, float, float]] = []
        self.in_order = rank is not None
        if rank is not None:
            self.queues: list[deque[int]] = [deque() for _ in range(num_devices)]
            for v in rank.tolist():
                self.queues[self.devl[v]].append(v)
            self.ready_flag = [False] * n
        else:
            self.pools: list[list[tuple[float, int, int]]] = [[] for _ in range(num_devices)]
        self.events: list[tuple[float, int, int, int, int, int]] = []
        self.seq = 0

    def push(self, time: float, kind: int, a: int, b: int = -1, c: int = -1) -> None:
        heapq.heappush(self.events, (time, kind, self.seq, a, b, c))
        self.seq += 1

    def arrive(self, v: int, now: float) -> None:
        """One input of node ``v`` is there at ``now``; the last one makes it ready."""
        self.waiting[v] -= 1
        if self.waiting[v] == 0:
            if self.in_order:
                self.ready_flag[v] = True
            else:
                heapq.heappush(self.pools[self.devl[v]], (now, self.tpos[v], v))

    def transfer(self, now: float, channel: int, g: int, target: int) -> None:
        """Copy group ``g`` on ``channel``: out of the source's accelerator (``target`` -1) or into ``target``."""
        if self.contention:
            self.push(now, _REQUEST, channel, g, target)
        else:
            cost = self.cost[g]
            self.channel_busy[channel] += cost
            self.copies.append((channel, now, now + cost))
            self.push(now + cost, _DONE, channel, g, target)

    def in_ram(self, now: float, g: int, source_device: int) -> None:
        """Group ``g`` is in host RAM at ``now``: accelerators copy it in, CPUs read it there."""
        for d, targets in self.receivers[g].items():
            if d == source_device:
                continue
            if d < self.k:
                self.transfer(now, d, g, d)
            else:
                for w in targets:
                    self.arrive(w, now)

    def next_node(self, d: int) -> int:
        """The node free device ``d`` starts now, or -1 when none is ready for it."""
        if self.in_order:
            queue = self.queues[d]
            if not queue or not self.ready_flag[queue[0]]:
                return -1
            return queue.popleft()
        if not self.pools[d]:
            return -1
        return heapq.heappop(self.pools[d])[2]

    def dispatch(self, now: float) -> None:
        """Start a node on every free device that has one ready."""
        for d in range(self.num_devices):
            if not self.free[d]:
                continue
            v = self.next_node(d)
            if v < 0:
                continue
            self.free[d] = False
            self.start[v] = now
            self.push(now + self.dur[v], _FINISH, v)

    def finished(self, now: float, v: int) -> None:
        """Node ``v`` finishes at ``now``: its device is free and its outputs go to their receivers."""
        d = self.devl[v]
        self.finish[v] = now
        self.free[d] = True
        for g in self.groups_of[v]:
            elsewhere = False
            for rd, targets in self.receivers[g].items():
                if rd == d:
                    for w in targets:
                        self.arrive(w, now)
                else:
                    elsewhere = True
            if elsewhere:
                if d < self.k:
                    self.transfer(now, d, g, -1)
                else:
                    self.in_ram(now, g, d)

    def requested(self, now: float, channel: int, g: int, target: int) -> None:
        """A copy requested at ``now`` waits for its channel (first come, first served), then runs."""
        begin = max(now, self.channel_free[channel])
        self.channel_free[channel] = begin + self.cost[g]
        self.channel_busy[channel] += self.cost[g]
        self.copies.append((channel, begin, begin + self.cost[g]))
        self.push(begin + self.cost[g], _DONE, channel, g, target)

    def copied(self, now: float, channel: int, g: int, target: int) -> None:
        """A copy is done at ``now``: out to RAM (``target`` -1), or into accelerator ``target``."""
        if target < 0:
            self.in_ram(now, g, channel)
        else:
            for w in self.receivers[g][target]:
                self.arrive(w, now)

    def run(self) -> None:
        """Every event in time order; simultaneous ones by kind, then as pushed, before the devices dispatch."""
        waiting, events = self.waiting, self.events
        for v in [v for v in range(self.n) if waiting[v] == 0]:  # sources are ready at time 0
            waiting[v] = 1
            self.arrive(v, 0.0)
        self.dispatch(0.0)
        while events:
            now = events[0][0]
            while events and events[0][0] == now:
                _, kind, _, a, b, c = heapq.heappop(events)
                if kind == _FINISH:
                    self.finished(now, a)
                elif kind == _REQUEST:
                    self.requested(now, a, b, c)
                else:
                    self.copied(now, a, b, c)
            self.dispatch(now)


def makespan(
    graph: Graph,
    cluster: Cluster,
    device: Sequence[int] | np.ndarray,
    *,
    order: Sequence[int] | np.ndarray | None = None,
    contention: bool = True,
) -> float:
    """Step time of the placement: the makespan of :func:`simulate` (same parameters).

    Examples
    --------
    >>> from exactplace.core.cluster import Cluster
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(1, 4.0, 1.0, comm=0.5), Node(2, 3.0, 2.0, comm=0.5)], [(1, 2)])
    >>> c = Cluster(accelerators=2, cpus=1)
    >>> makespan(g, c, [0, 1])   # 1 on acc0 (0-1), out 1-1.5, in on acc1 1.5-2, 2 runs 2-4
    4.0
    >>> makespan(g, c, [2, 1])   # CPU 0-4, copy in 4-4.5, acc1 4.5-6.5
    6.5
    """
    return simulate(graph, cluster, device, order=order, contention=contention).makespan
