"""What each device does for one sample of a placement: the programs a replay executes.

A device's program lists its operations in the graph's topological order: ``recv`` (an input
group arriving from another device), ``compute`` (a node) and ``send`` (a group leaving for other
devices). Accelerators pay each crossing communication group once when it arrives and once when
it leaves; CPUs read RAM and pay nothing, exactly as the max-load evaluator counts, so the sum of
a program's seconds is the device's load (:func:`exactplace.evaluators.device_loads`). For
single-sample latency (paper §4) the unit of execution is a *block* (:func:`latency_blocks`).

Replicated stages (paper Appendix C.2, PipeDream's data-parallel stages): an accelerator whose
part runs on ``r > 1`` replicas becomes ``r`` *workers* ``(device, j)``; replica ``j`` handles the
samples ``i % r == j`` (round-robin, as PipeDream deals minibatches), and after each sample runs
a ``sync`` step (the all-reduce of the part's parameters) of ``sync * (r - 1) / r`` that waits for
no other replica: exactly the max-load model's cost. A real all-reduce would also make the
replicas wait for one another; the model, and so the replay, leaves that out.
"""

from __future__ import annotations

import functools
import gc
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ParameterError, PlacementError
from exactplace.core.graph import Graph

R = TypeVar("R")

__all__ = ["Block", "Op", "Step", "Worker", "device_programs", "latency_blocks", "pipelined_schedule",
           "warmup_samples", "workers"]

#: A pipelined replay's unit of execution: (device, replica), replica 0 for a device that is not replicated.
Worker = tuple[int, int]


@dataclass(frozen=True)
class Op:
    """One operation of a program: ``kind`` is ``recv``, ``compute``, ``send`` or ``sync`` (a replicated
    stage's all-reduce); ``cost`` in model units."""

    kind: str
    cost: float
    item: int
    """The node (compute), communication group (recv, send) or device (sync)."""
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


def device_programs(graph: Graph, cluster: Cluster, dev: np.ndarray,
                    replicas: Mapping[int, int] | None = None) -> dict[int, list[Op]]:
    """Program of every device that holds a node, for pipelined (max-load) replay.

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    dev : numpy array of int
        ``dev[i]`` is the device of the node at position ``i``.
    replicas : mapping, optional
        Device -> replicas of its part (missing: 1). A replicated device's program ends with a
        ``sync`` step of ``sync * (r - 1) / r`` (module docstring), ``sync`` being the sum of the
        part's ``Node.sync``, so it sums to ``r`` times the device's load; without it a program sums
        to the device's load.

    Returns
    -------
    dict
        Device -> its operations for one sample, in the graph's topological order.

    Examples
    --------
    >>> from exactplace.core.graph import Node
    >>> g = Graph([Node(1, 5.0, 1.0, comm=0.5), Node(2, 6.0, 2.0, comm=0.5, sync=3.0)], [(1, 2)])
    >>> programs = device_programs(g, Cluster(accelerators=3, cpus=1), np.array([0, 1]), replicas={1: 2})
    >>> [(op.kind, op.cost) for op in programs[0]], [(op.kind, op.cost) for op in programs[1]]
    ([('compute', 1.0), ('send', 0.5)], [('recv', 0.5), ('compute', 2.0), ('sync', 1.5)])
    """
    order = graph.topological_order.tolist()
    programs = {}
    for d in np.unique(dev).tolist():
        program = _program(graph, cluster, dev, dev, [v for v in order if dev[v] == d], d < cluster.accelerators)
        r = 1 if replicas is None else replicas.get(d, 1)
        if r > 1:
            program.append(Op("sync", float(graph.sync[dev == d].sum()) * (r - 1) / r, d))
        programs[d] = program
    return programs


def latency_blocks(graph: Graph, cluster: Cluster, dev: np.ndarray) -> list[Block]:
    """Blocks of single-sample (§4) execution, in an order where every block follows those it waits for.

    A block is each contiguous piece of an accelerator's set (it copies its inputs in, runs its
    nodes, copies its outputs out) and each CPU node on its own.

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


def workers(programs: Mapping[int, list[Op]], replicas: Mapping[int, int] | None = None) -> list[Worker]:
    """The workers of a pipelined replay: ``(device, j)`` for each replica ``j`` of each device.

    >>> workers({0: [], 4: []}, {0: 2})
    [(0, 0), (0, 1), (4, 0)]
    """
    return [(d, j) for d in programs for j in range(1 if replicas is None else replicas.get(d, 1))]


def warmup_samples(samples: int, count: int, replicas: Mapping[int, int] | None = None) -> int:
    """How many first samples a pipelined replay leaves out as the pipeline's fill.

    One sample per worker (``count`` workers) but at most a quarter of the samples, and at least one
    round of the most replicated stage, so that every replica has run a sample before the measured
    window (a GPU replay times each replica on its own clock from there); then as many more as it
    takes for the window to be a whole number of rounds of every replicated stage (the least common
    multiple of the replica counts): round-robin replicas finish their samples in bursts, and a
    window cut inside a burst would miss or add part of one.

    Raises
    ------
    ParameterError
        Fewer samples than the fill plus one round.

    >>> warmup_samples(24, 3), warmup_samples(24, 7, {0: 4, 1: 1})
    (3, 8)
    """
    period = math.lcm(*replicas.values()) if replicas else 1
    fill = max(min(count, samples // 4), max(replicas.values()) if replicas else 1, 1)
    rounds = (samples - fill) // period
    if rounds < 1:
        raise ParameterError(f"The 'samples' parameter of replay must be at least {fill + period} for this plan "
                             f"(a pipeline fill of {fill} samples, then a round of {period} through its replicated "
                             f"stages). Got {samples} instead.")
    return samples - rounds * period


def _without_gc_pauses(build: Callable[..., R]) -> Callable[..., R]:
    """``build`` with the cyclic garbage collector paused while it runs (and then back as it was).

    A schedule of many samples holds tens of millions of objects, none of them cyclic garbage; a full
    collection traverses them all, holding off the Ctrl-C handler for seconds each time.
    """

    @functools.wraps(build)
    def paused(*args: Any, **kwargs: Any) -> R:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return build(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return paused


@_without_gc_pauses
def pipelined_schedule(programs: dict[int, list[Op]], samples: int, replicas: Mapping[int, int] | None = None
                       ) -> dict[Worker, list[Step]]:
    """The order in which each worker runs its operations of ``samples`` streamed samples.

    A device is one worker ``(device, 0)``; a device with ``r`` replicas (``replicas``, missing: 1)
    is ``r`` workers, replica ``j`` running the samples ``i % r == j`` (module docstring). Every
    worker is *work-conserving*: whenever it is free it starts, among the operations of its samples
    that are ready (the sample's previous operation on this device is done and, for a ``recv``, the
    group has arrived), the one that can start first, lowest sample first; operations of one sample
    keep their program order. This is how a pipeline interleaves samples (for training, PipeDream's
    forward of a later sample while an earlier one's gradients are on their way), so in steady state
    the bottleneck device never idles and the time per sample is the max-load. Modelled costs decide
    the order; the replay then measures what real execution in that order takes.

    Examples
    --------
    >>> a, b = Op("compute", 1.0, 0), Op("send", 0.0, 7, (1,))
    >>> programs = {0: [a, b], 1: [Op("recv", 0.0, 7), Op("compute", 2.0, 1)]}
    >>> [(s.sample, s.op.kind, s.start) for s in pipelined_schedule(programs, 2)[1, 0]]
    [(0, 'recv', 1.0), (0, 'compute', 1.0), (1, 'recv', 3.0), (1, 'compute', 3.0)]
    >>> [(s.sample, s.start) for s in pipelined_schedule(programs, 3, {1: 2})[1, 1]]   # replica 1: sample 1
    [(1, 2.0), (1, 2.0)]
    """
    import heapq

    count = {d: 1 if replicas is None else replicas.get(d, 1) for d in programs}
    everyone = workers(programs, replicas)
    position = {d: [0] * samples for d in programs}  # next op of each sample on each device
    ready_at = {d: [0.0] * samples for d in programs}  # when that op's sample-order predecessor ended
    free = dict.fromkeys(everyone, 0.0)
    arrived: dict[tuple[int, int, int], float] = {}  # (group, receiver, sample) -> arrival
    schedule: dict[Worker, list[Step]] = {w: [] for w in everyone}
    remaining = {(d, j): len(programs[d]) * len(range(j, samples, count[d])) for d, j in everyone}

    # Each worker's lowest sample with operations left: the scan below starts there, not at the first sample
    # (from the first, every step would rescan the finished samples: quadratic in ``samples``).
    first = {w: w[1] for w in everyone}

    def candidate(w: Worker) -> tuple[float, int] | None:
        d = w[0]
        step, done = count[d], len(programs[d])
        while first[w] < samples and position[d][first[w]] == done:
            first[w] += step
        best = None
        for s in range(first[w], samples, step):
            i = position[d][s]
            if i == done:
                continue
            op = programs[d][i]
            ready = ready_at[d][s]
            if op.kind == "recv":
                key = (op.item, d, s)
                if key not in arrived:
                    continue
                ready = max(ready, arrived[key])
            start = max(free[w], ready)
            if best is None or start < best[0]:
                best = (start, s)
            if start <= free[w]:
                break  # the lowest sample that can start right away
        return best

    heap = [(c[0], w, c[1]) for w in everyone if (c := candidate(w)) is not None]
    heapq.heapify(heap)
    while heap:
        start, w, s = heapq.heappop(heap)
        current = candidate(w)
        if current is None or current != (start, s):
            if current is not None:
                heapq.heappush(heap, (current[0], w, current[1]))
            continue
        d = w[0]
        op = programs[d][position[d][s]]
        end = start + op.cost
        schedule[w].append(Step(s, op, start))
        position[d][s] += 1
        ready_at[d][s] = end
        free[w] = end
        remaining[w] -= 1
        touched = {w}
        if op.kind == "send":
            for r in op.receivers:
                arrived[(op.item, r, s)] = end
                touched.add((r, s % count[r]))  # the receiver's replica that runs sample s
        for t in touched:
            if remaining[t] and (c := candidate(t)) is not None:
                heapq.heappush(heap, (c[0], t, c[1]))
    stuck = [w for w in everyone if remaining[w]]
    if stuck:
        raise PlacementError(f"The placement deadlocks: device {stuck[0][0]} waits for data that never comes.")
    return schedule
