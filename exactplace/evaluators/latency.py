"""Exact single-sample latency under the paper's §4 invocation semantics.

* An accelerator subgraph S is invoked once all its inputs are in RAM (every node outside S
  with an edge into S has finished). It copies its inputs in (each communication group
  entering S once), runs its nodes one after another, and copies its outputs out (each group
  leaving S once); all its nodes finish together.
* A CPU node runs as soon as its predecessors have finished (the model assumes enough cores,
  as the paper does); CPUs read RAM, so they pay no communication.
* Latency is the time the last node finishes.

An accelerator runs its subgraphs one at a time (paper Fig. 4): the plan's ``subgraph`` indices
in run order (as the latency program with ``q >= 2`` returns them), else the reference
implementation's cut into contiguous pieces (:func:`contiguous_pieces`). Subgraphs that are not
contiguous, or that wait on each other in a cycle, have no invocation order:
:class:`~exactplace.core.errors.InvocationCycleError` (a PlacementError).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import InvocationCycleError
from exactplace.core.graph import Graph
from exactplace.core.placement_array import as_device_array, as_subgraph_array

__all__ = [
    "InvocationBlocks", "LatencySchedule", "contiguous_pieces", "invocation_blocks", "latency", "latency_schedule",
    "piece_levels",
]


@dataclass(frozen=True)
class LatencySchedule:
    """When each node finishes, and the accelerator subgraphs in the order they run."""

    finish: np.ndarray
    subgraphs: list[tuple[int, np.ndarray, float, float]]
    """(device, node positions, start, end) of every accelerator subgraph, by start time."""
    copies: list[tuple[float, float]]
    """(copy-in, copy-out) seconds of each subgraph in ``subgraphs``: it computes from start + copy-in
    to end - copy-out."""

    @property
    def latency(self) -> float:
        return float(self.finish.max())


def piece_levels(graph: Graph, member: np.ndarray) -> np.ndarray:
    """The piece counter of the set ``member`` (bool mask) at every node, non-members included.

    A member's level is one plus the number of times a path into it left the set (the
    reference implementation's rule); a non-member carries the largest level reaching it.
    """
    level = np.zeros(graph.n, dtype=np.int64)
    preds = graph.predecessors
    for v in graph.topological_order.tolist():
        inside = bool(member[v])
        value = 1 if inside else 0
        for u in preds[v].tolist():
            value = max(value, level[u] + (1 if inside and not member[u] else 0))
        level[v] = value
    return level


def contiguous_pieces(graph: Graph, member: np.ndarray) -> np.ndarray:
    """Split the set ``member`` (bool mask) into contiguous pieces numbered 1, 2, ...

    Returns an int array: the piece of each member, 0 for non-members. A contiguous set
    is one piece. A node's piece is one plus the number of times a path into it left the set
    (:func:`piece_levels`).
    """
    return np.where(member, piece_levels(graph, member), 0)


@dataclass(frozen=True)
class InvocationBlocks:
    """The units of single-sample execution: one block per accelerator piece, one per CPU node.

    ``block[v]`` is node v's block, ``device[b]`` block b's device, ``waits`` the graph of
    blocks that must end before another starts (data edges and the serial order of one
    accelerator's pieces), ``order`` a topological order of it (lexicographic, so deterministic).
    """

    block: np.ndarray
    device: list[int]
    waits: nx.DiGraph
    order: list[int]


def invocation_blocks(graph: Graph, cluster: Cluster, dev: np.ndarray,
                      subgraph: np.ndarray | None = None) -> InvocationBlocks:
    """The blocks of a checked device array (and subgraph array) and an order to invoke them (§4).

    Raises
    ------
    InvocationCycleError
        The accelerator subgraphs wait on each other in a cycle (no invocation order exists).
    """
    k = cluster.accelerators
    block = np.empty(graph.n, dtype=np.int64)
    block_device: list[int] = []
    serial: list[tuple[int, int]] = []
    for d in range(k):
        member = dev == d
        if not member.any():
            continue
        if subgraph is None:
            pieces = contiguous_pieces(graph, member)
        else:  # the plan's own subgraphs, numbered 1, 2, ... in their run order (empty ones skipped)
            pieces = np.zeros(graph.n, dtype=np.int64)
            pieces[member] = np.searchsorted(np.unique(subgraph[member]), subgraph[member]) + 1
        first = len(block_device)
        count = int(pieces.max())
        block[member] = first + pieces[member] - 1
        block_device.extend([d] * count)
        serial.extend((first + p, first + p + 1) for p in range(count - 1))
    for v in np.flatnonzero(dev >= k):
        block[v] = len(block_device)
        block_device.append(int(dev[v]))

    waits = nx.DiGraph()
    waits.add_nodes_from(range(len(block_device)))
    crossing = block[graph.src] != block[graph.dst]
    waits.add_edges_from(zip(block[graph.src][crossing].tolist(), block[graph.dst][crossing].tolist()))
    waits.add_edges_from(serial)
    try:
        order = list(nx.lexicographical_topological_sort(waits))
    except nx.NetworkXUnfeasible:
        cycle = nx.find_cycle(waits)
        names = cluster.device_names()
        shown = " -> ".join(names[block_device[b]] for b, _ in cycle)
        raise InvocationCycleError(
            f"No invocation order exists: accelerator subgraphs wait on each other in a cycle ({shown}).",
            [block_device[b] for b, _ in cycle],
        ) from None
    return InvocationBlocks(block, block_device, waits, order)


def latency_schedule(graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray,
                     subgraph: Sequence[int] | np.ndarray | None = None) -> LatencySchedule:
    """Simulate one sample through the placement; see the module docstring for the rules.

    ``subgraph`` (optional): each accelerator node's subgraph index, in run order.

    Raises
    ------
    PlacementError
        The placement is malformed, or its accelerator subgraphs wait on each other in a
        cycle (no invocation order exists).
    """
    cluster.require_one_level("The latency objective")
    dev = as_device_array(graph, cluster, device)
    k = cluster.accelerators
    blocks = invocation_blocks(graph, cluster, dev, as_subgraph_array(graph, cluster, dev, subgraph))
    block, block_device, order, order_graph = blocks.block, blocks.device, blocks.order, blocks.waits
    num_blocks = len(block_device)
    bd = block[graph.dst]
    crossing = block[graph.src] != bd

    nodes_of = [[] for _ in range(num_blocks)]
    for v, b in enumerate(block.tolist()):
        nodes_of[b].append(v)
    # Communication groups entering / leaving each block, each counted once per block.
    pairs = np.unique(np.stack([graph.edge_group[crossing], bd[crossing]], axis=1), axis=0)
    incoming = np.zeros(num_blocks)
    np.add.at(incoming, pairs[:, 1], graph.group_cost[pairs[:, 0]])
    leaving = np.unique(graph.edge_group[crossing])
    outgoing = np.zeros(num_blocks)
    np.add.at(outgoing, block[graph.group_source[leaving]], graph.group_cost[leaving])

    finish = np.zeros(graph.n)
    block_end = np.zeros(num_blocks)
    subgraphs = []
    preds = graph.predecessors
    for b in order:
        members = nodes_of[b]
        ready = 0.0
        for v in members:
            for u in preds[v].tolist():
                if block[u] != b:
                    ready = max(ready, finish[u])
        for p in order_graph.predecessors(b):
            ready = max(ready, block_end[p])  # serial order of pieces on one accelerator
        d = block_device[b]
        if d < k:
            compute = float(graph.acc_time[members].sum()) / float(cluster.speed[d])
            end = ready + incoming[b] + compute + outgoing[b]
            subgraphs.append((d, np.array(members), ready, end, float(incoming[b]), float(outgoing[b])))
        else:
            end = ready + float(graph.cpu_time[members[0]])
        block_end[b] = end
        finish[members] = end
    subgraphs.sort(key=lambda s: s[2])
    return LatencySchedule(finish=finish, subgraphs=[s[:4] for s in subgraphs], copies=[s[4:] for s in subgraphs])


def latency(graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray,
            subgraph: Sequence[int] | np.ndarray | None = None) -> float:
    """Single-sample latency of a placement (paper §4).

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    device : array of int
        ``device[i]`` is the device of the node at position ``i``.
    subgraph : array of int, optional
        ``subgraph[i]``: the index of the node's subgraph on its accelerator, in the order the
        accelerator runs them (ignored on CPUs); default: the reference implementation's cut.

    Returns
    -------
    float
        ``inf`` if a node unsupported on accelerators is placed on one.

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(1, 4.0, 1.0, comm=0.5), Node(2, 3.0, 2.0, comm=0.5), Node(3, 1.0, 1.0)],
    ...           [(1, 2), (2, 3)])
    >>> c = Cluster(accelerators=1, cpus=1)
    >>> latency(g, c, [0, 0, 1])   # acc0 runs 1, 2 (3.0) then copies 2's output (0.5); CPU runs 3
    4.5
    >>> latency(g, c, [1, 0, 1])   # CPU 4.0; acc0 copies in 0.5, runs 2.0, copies out 0.5; CPU 1.0
    8.0

    Two subgraphs on one accelerator, run in the plan's order (paper Fig. 4): node 2 first
    lets node 3 start on the CPU while node 1 runs.

    >>> g = Graph([Node(1, 10.0, 4.0), Node(2, 10.0, 1.0, comm=1.0), Node(3, 5.0, None)], [(2, 3)])
    >>> c = Cluster(accelerators=1, cpus=1)
    >>> latency(g, c, [0, 0, 1]), latency(g, c, [0, 0, 1], subgraph=[1, 0, -1])
    (11.0, 7.0)
    """
    return latency_schedule(graph, cluster, device, subgraph).latency
