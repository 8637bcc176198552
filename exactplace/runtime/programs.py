"""What each device does for one sample of a placement: the programs a replay executes.

A device's program lists its operations in the graph's topological order: ``recv`` (an input
group arriving from another device), ``compute`` (a node) and ``send`` (a group leaving for other
devices). Accelerators pay each crossing communication group once when it arrives and once when
it leaves; CPUs read RAM and pay nothing, exactly as the max-load evaluator counts, so the sum of
a program's seconds is the device's load (:func:`exactplace.evaluators.device_loads`).

For single-sample latency (paper §4) the unit of execution is a *block*: each contiguous piece of
an accelerator's set (copies its inputs in, runs its nodes, copies its outputs out) and each CPU
node on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import PlacementError
from exactplace.core.graph import Graph

__all__ = ["Block", "Op", "Step", "device_programs", "latency_blocks", "pipelined_schedule"]


@dataclass(frozen=True)
class Op:
    """One operation of a program: ``kind`` is ``recv``, ``compute`` or ``send``; ``cost`` in model units."""

    kind: str
    cost: float
    item: int
    """The node (compute) or communication group (recv, send)."""
    receivers: tuple[int, ...] = ()
    """Send only: the devices (or blocks) the group goes to."""


@dataclass(frozen=True)
class Block:
    """A unit of single-sample execution on one device, with the blocks it waits for."""

    device: int
    ops: tuple[Op, ...]
    after: tuple[int, ...]


def _node_cost(graph: Graph, cluster: Cluster, dev: np.ndarray, v: int) -> float:
    d = int(dev[v])
    if d < cluster.accelerators:
        if not graph.supported[v]:
            raise PlacementError(f"{graph.describe(v).capitalize()} cannot run on an accelerator but is placed on "
                                 f"{cluster.device_name(d)}.")
        return float(graph.acc_time[v]) / float(cluster.speed[d])
    return float(graph.cpu_time[v])


def _program(graph: Graph, cluster: Cluster, dev: np.ndarray, unit: np.ndarray, members: list[int],
             on_accelerator: bool) -> list[Op]:
    """Ops of one unit (a device, or a block) holding ``members`` (topological order)."""
    member = np.zeros(graph.n, dtype=bool)
    member[members] = True
    ops: list[Op] = []
    received: set[int] = set()
    receivers: dict[int, set[int]] = {}
    for e in np.flatnonzero(member[graph.src] & (unit[graph.dst] != unit[graph.src])).tolist():
        receivers.setdefault(int(graph.edge_group[e]), set()).add(int(unit[graph.dst[e]]))
    leaving: dict[int, list[int]] = {}
    for g in sorted(receivers):
        leaving.setdefault(int(graph.group_source[g]), []).append(g)
    incoming: dict[int, list[int]] = {}
    for e in np.flatnonzero(member[graph.dst] & (unit[graph.dst] != unit[graph.src])).tolist():
        incoming.setdefault(int(graph.dst[e]), []).append(int(graph.edge_group[e]))
    for v in members:
        for g in incoming.get(v, []):
            if g not in received:
                received.add(g)
                ops.append(Op("recv", float(graph.group_cost[g]) if on_accelerator else 0.0, g))
        ops.append(Op("compute", _node_cost(graph, cluster, dev, v), v))
        for g in leaving.get(v, []):
            ops.append(Op("send", float(graph.group_cost[g]) if on_accelerator else 0.0, g,
                          tuple(sorted(receivers[g]))))
    return ops


def device_programs(graph: Graph, cluster: Cluster, dev: np.ndarray) -> dict[int, list[Op]]:
    """Program of every device that holds a node, for pipelined (max-load) replay.

    Examples
    --------
    >>> from exactplace.core.graph import Node
    >>> g = Graph([Node(1, 5.0, 1.0, comm=0.5), Node(2, 6.0, 2.0, comm=0.5)], [(1, 2)])
    >>> programs = device_programs(g, Cluster(accelerators=2, cpus=1), np.array([0, 1]))
    >>> [(op.kind, op.cost) for op in programs[0]], [(op.kind, op.cost) for op in programs[1]]
    ([('compute', 1.0), ('send', 0.5)], [('recv', 0.5), ('compute', 2.0)])
    """
    order = graph.topological_order.tolist()
    return {
        int(d): _program(graph, cluster, dev, dev, [v for v in order if dev[v] == d], int(d) < cluster.accelerators)
        for d in np.unique(dev).tolist()
    }


def latency_blocks(graph: Graph, cluster: Cluster, dev: np.ndarray) -> list[Block]:
    """Blocks of single-sample (§4) execution, in an order where every block follows those it waits for.

    Examples
    --------
    >>> from exactplace.core.graph import Node
    >>> g = Graph([Node(1, 4.0, 1.0, comm=0.5), Node(2, 3.0, 2.0, comm=0.5), Node(3, 1.0, 1.0)], [(1, 2), (2, 3)])
    >>> [(b.device, [op.kind for op in b.ops], b.after)
    ...  for b in latency_blocks(g, Cluster(accelerators=1, cpus=1), np.array([1, 0, 1]))]
    [(1, ['compute', 'send'], ()), (0, ['recv', 'compute', 'send'], (0,)), (1, ['recv', 'compute'], (1,))]
    """
    from exactplace.evaluators.latency import invocation_blocks

    k = cluster.accelerators
    blocks_of = invocation_blocks(graph, cluster, dev)  # the evaluator's blocks and order, raising as it does
    block, block_device, order, order_graph = blocks_of.block, blocks_of.device, blocks_of.order, blocks_of.waits
    renumber = {b: i for i, b in enumerate(order)}
    new_block = np.array([renumber[int(b)] for b in block.tolist()], dtype=np.int64)
    topo = graph.topological_order.tolist()
    blocks = []
    for b in order:
        members = [v for v in topo if block[v] == b]
        d = block_device[b]
        ops = _program(graph, cluster, dev, new_block, members, d < k)
        after = tuple(sorted(renumber[p] for p in order_graph.predecessors(b)))
        blocks.append(Block(device=d, ops=tuple(ops), after=after))
    return blocks


@dataclass(frozen=True)
class Step:
    """One operation of one sample in a device's pipelined schedule, with its modelled start."""

    sample: int
    op: Op
    start: float


def pipelined_schedule(programs: dict[int, list[Op]], samples: int) -> dict[int, list[Step]]:
    """The order in which each device runs its operations of ``samples`` streamed samples.

    Every device is *work-conserving*: whenever it is free it starts, among the operations that are
    ready (the sample's previous operation on this device is done and, for a ``recv``, the group has
    arrived), the one that can start first, lowest sample first; operations of one sample keep
    their program order. This is how a pipeline interleaves samples (for training, PipeDream's
    forward of a later sample while an earlier one's gradients are on their way), so in steady state
    the bottleneck device never idles and the time per sample is the max-load. Modelled costs decide
    the order; the replay then measures what real execution in that order takes.

    Examples
    --------
    >>> a, b = Op("compute", 1.0, 0), Op("send", 0.0, 7, (1,))
    >>> programs = {0: [a, b], 1: [Op("recv", 0.0, 7), Op("compute", 2.0, 1)]}
    >>> [(s.sample, s.op.kind, s.start) for s in pipelined_schedule(programs, 2)[1]]
    [(0, 'recv', 1.0), (0, 'compute', 1.0), (1, 'recv', 3.0), (1, 'compute', 3.0)]
    """
    import heapq

    devices = list(programs)
    position = {d: [0] * samples for d in devices}  # next op of each sample on each device
    ready_at = {d: [0.0] * samples for d in devices}  # when that op's sample-order predecessor ended
    free = dict.fromkeys(devices, 0.0)
    arrived: dict[tuple[int, int, int], float] = {}  # (group, receiver, sample) -> arrival
    schedule: dict[int, list[Step]] = {d: [] for d in devices}
    remaining = {d: len(programs[d]) * samples for d in devices}

    def candidate(d: int) -> tuple[float, int] | None:
        best = None
        for s in range(samples):
            i = position[d][s]
            if i == len(programs[d]):
                continue
            op = programs[d][i]
            ready = ready_at[d][s]
            if op.kind == "recv":
                key = (op.item, d, s)
                if key not in arrived:
                    continue
                ready = max(ready, arrived[key])
            start = max(free[d], ready)
            if best is None or start < best[0]:
                best = (start, s)
            if start <= free[d]:
                break  # the lowest sample that can start right away
        return best

    heap = [(c[0], d, c[1]) for d in devices if (c := candidate(d)) is not None]
    heapq.heapify(heap)
    while heap:
        start, d, s = heapq.heappop(heap)
        current = candidate(d)
        if current is None or current != (start, s):
            if current is not None:
                heapq.heappush(heap, (current[0], d, current[1]))
            continue
        op = programs[d][position[d][s]]
        end = start + op.cost
        schedule[d].append(Step(s, op, start))
        position[d][s] += 1
        ready_at[d][s] = end
        free[d] = end
        remaining[d] -= 1
        touched = {d}
        if op.kind == "send":
            for r in op.receivers:
                arrived[(op.item, r, s)] = end
                touched.add(r)
        for t in touched:
            if remaining[t] and (c := candidate(t)) is not None:
                heapq.heappush(heap, (c[0], t, c[1]))
    stuck = [d for d in devices if remaining[d]]
    if stuck:
        raise PlacementError(f"The placement deadlocks: device {stuck[0]} waits for data that never comes.")
    return schedule
