"""Feasibility of a placement: memory, colocation, accelerator support, contiguity.

Contiguity is Definition 3.1 of the paper: a set S is contiguous when no path leaves S
and comes back (no u in S, v outside S, w in S with v reachable from u and w reachable
from v). For training graphs it must hold separately for the forward and the backward
part of each device.

A *contiguous split* also needs its devices to be orderable: the forward parts must form
a chain of ideals ∅ ⊂ I_1 ⊂ ... ⊂ V (paper §5.1.1), i.e. no two devices may wait on each
other in a cycle. Each set can be contiguous on its own while the devices still form a
cycle (acc0 feeds acc1 and acc1 feeds acc0 through other nodes); such a split deadlocks
under the latency semantics and lies outside the DP's search space, so it is reported as
an ``order`` violation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph
from exactplace.core.placement_array import as_device_array

__all__ = [
    "Guarantees", "Violation", "accelerator_memory", "check_feasibility", "check_fits", "contiguity_violations",
    "device_order_cycle", "is_contiguous",
]


@dataclass(frozen=True)
class Guarantees:
    """Structure a method promises beyond memory, support and colocation; the referee checks exactly this.

    ``forward_contiguous`` / ``backward_contiguous``: each device's forward / backward part is
    contiguous (Definition 3.1); ``chain_order``: the devices' forward parts can be ordered
    as a chain of ideals. All three together are a contiguous split.
    """

    forward_contiguous: bool = False
    backward_contiguous: bool = False
    chain_order: bool = False

    @classmethod
    def contiguous_split(cls) -> Guarantees:
        """Every part contiguous and the forward parts chained."""
        return cls(True, True, True)


@dataclass(frozen=True)
class Violation:
    """One broken constraint: its kind (memory / colocation / unsupported / contiguity) and a message."""

    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def _reach_masks(graph: Graph, label: np.ndarray) -> tuple[list[int], list[int]]:
    """Bitmasks of the labels among each node's proper ancestors and proper descendants."""
    above = [0] * graph.n
    below = [0] * graph.n
    bit = [1 << int(x) for x in label]
    order = graph.topological_order.tolist()
    preds, succs = graph.predecessors, graph.successors
    for v in order:
        mask = 0
        for p in preds[v].tolist():
            mask |= above[p] | bit[p]
        above[v] = mask
    for v in reversed(order):
        mask = 0
        for s in succs[v].tolist():
            mask |= below[s] | bit[s]
        below[v] = mask
    return above, below


def contiguity_violations(graph: Graph, label: np.ndarray) -> list[tuple[int, int]]:
    """Pairs (label, node position) where a path leaves that label's set through the node and returns.

    ``label[i]`` groups nodes into sets; every set is checked at once in O(n + m) big-int operations.
    """
    above, below = _reach_masks(graph, label)
    found = []
    for v in range(graph.n):
        bad = (above[v] & below[v]) & ~(1 << int(label[v]))
        while bad:
            low = bad & -bad
            found.append((low.bit_length() - 1, v))
            bad ^= low
    return found


def device_order_cycle(graph: Graph, label: np.ndarray, nodes: np.ndarray | None = None) -> list[int]:
    """A cycle among the sets ``label`` induces on ``nodes`` (all nodes by default); [] if none.

    The quotient graph has one vertex per label and an edge a -> b when an edge of the graph
    leads from a node labelled a to a node labelled b (both among ``nodes``).

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(4)], [(0, 1), (2, 3)])
    >>> device_order_cycle(g, np.array([0, 1, 1, 0]))
    [0, 1]
    """
    keep = np.ones(graph.n, dtype=bool) if nodes is None else np.zeros(graph.n, dtype=bool)
    if nodes is not None:
        keep[nodes] = True
    edge = keep[graph.src] & keep[graph.dst] & (label[graph.src] != label[graph.dst])
    quotient = nx.DiGraph(zip(label[graph.src[edge]].tolist(), label[graph.dst[edge]].tolist()))
    try:
        return [int(a) for a, _ in nx.find_cycle(quotient)]
    except nx.NetworkXNoCycle:
        return []


def is_contiguous(graph: Graph, nodes: Sequence[int] | np.ndarray) -> bool:
    """True when the node positions ``nodes`` form a contiguous set (Definition 3.1).

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1), (1, 2)])
    >>> is_contiguous(g, [0, 1]), is_contiguous(g, [0, 2])
    (True, False)
    """
    label = np.zeros(graph.n, dtype=np.int64)
    label[np.asarray(nodes, dtype=np.int64)] = 1
    return not any(lab == 1 for lab, _ in contiguity_violations(graph, label))


def accelerator_memory(graph: Graph, cluster: Cluster, device: np.ndarray) -> np.ndarray:
    """Bytes each accelerator holds under ``device`` (a valid device array), shape ``(accelerators,)``.

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 1.0, 1.0, memory=2.0), Node(1, 1.0, 1.0, memory=3.0)], [(0, 1)])
    >>> accelerator_memory(g, Cluster(2, cpus=1), np.array([1, 2])).tolist()   # node 1 on the CPU
    [0.0, 2.0]
    """
    on_acc = device < cluster.accelerators
    return np.bincount(device[on_acc], weights=graph.memory[on_acc], minlength=cluster.accelerators)


def check_feasibility(
    graph: Graph,
    cluster: Cluster,
    device: Sequence[int] | np.ndarray,
    *,
    contiguous: bool = True,
    guarantees: Guarantees | None = None,
) -> list[Violation]:
    """Every constraint the placement breaks (empty list: feasible).

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    device : array of int
        ``device[i]`` is the device of the node at position ``i``.
    contiguous : bool, default True
        Also require a contiguous split: each device's forward and backward parts contiguous,
        and the devices' forward parts orderable as a chain of ideals (no cycle among devices).
    guarantees : Guarantees, optional
        Check exactly these structural properties instead (overrides ``contiguous``).

    Returns
    -------
    list of Violation

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 1.0, None), Node(1, 1.0, 1.0, memory=5.0)], [(0, 1)])
    >>> [str(v) for v in check_feasibility(g, Cluster(1, memory=4.0, cpus=1), [0, 0])]  # doctest: +NORMALIZE_WHITESPACE
    ['unsupported: node 0 cannot run on an accelerator but is placed on acc0',
     'memory: acc0 holds 5 bytes, more than its 4 bytes']
    """
    dev = as_device_array(graph, cluster, device)
    names = cluster.device_names()
    violations = []
    k = cluster.accelerators
    for i in np.flatnonzero(~graph.supported & (dev < k)):
        violations.append(Violation(
            "unsupported", f"{graph.describe(i)} cannot run on an accelerator but is placed on {names[dev[i]]}"
        ))
    used = accelerator_memory(graph, cluster, dev)
    for d in np.flatnonzero(used > cluster.memory_limit):
        violations.append(Violation(
            "memory", f"{names[d]} holds {used[d]:.6g} bytes, more than its {cluster.memory[d]:.6g} bytes"
        ))
    first_device: dict[int, int] = {}
    for i, (c, d) in enumerate(zip(graph.color.tolist(), dev.tolist())):
        other = first_device.setdefault(c, i)
        if dev[other] != d:
            violations.append(Violation(
                "colocation",
                f"{graph.describe(i)} is on {names[d]} but {graph.describe(other)} "
                f"of the same color class is on {names[dev[other]]}",
            ))
    if guarantees is None:
        guarantees = Guarantees.contiguous_split() if contiguous else Guarantees()
    if guarantees.forward_contiguous or guarantees.backward_contiguous:
        label = dev * 2 + graph.backward.astype(np.int64)
        for lab, v in contiguity_violations(graph, label):
            part = "backward" if lab % 2 else "forward"
            if not (guarantees.backward_contiguous if lab % 2 else guarantees.forward_contiguous):
                continue
            violations.append(Violation(
                "contiguity",
                f"the {part} part of {names[lab // 2]} is not contiguous: "
                f"a path leaves it through {graph.describe(v)} and comes back",
            ))
    if guarantees.chain_order:
        cycle = device_order_cycle(graph, dev, np.flatnonzero(~graph.backward))
        if cycle:
            shown = " -> ".join(names[d] for d in [*cycle, cycle[0]])
            violations.append(Violation(
                "order", f"the devices' forward parts wait on each other in a cycle ({shown}): no chain of ideals"
            ))
    return violations


def check_fits(graph: Graph, cluster: Cluster) -> str | None:
    """Why no placement can exist (some node or colocation class fits on no device), or None.

    A class can go on a CPU core when the cluster has one (CPUs have no memory cap);
    otherwise every node must be supported on accelerators and the class must fit in
    the largest accelerator memory.

    >>> from exactplace.core.graph import Graph, Node
    >>> check_fits(Graph([Node(0, 1.0, None)], []), Cluster(1, cpus=0))
    'Node 0 cannot run on an accelerator and the cluster has no CPU.'
    """
    if cluster.cpus > 0:
        return None
    unsupported = np.flatnonzero(~graph.supported)
    if unsupported.size:
        node = graph.describe(int(unsupported[0])).capitalize()
        return f"{node} cannot run on an accelerator and the cluster has no CPU."
    class_memory = np.bincount(graph.color, weights=graph.memory)
    too_big = np.flatnonzero(class_memory > cluster.memory_limit.max())
    if too_big.size:
        c = int(too_big[0])
        members = np.flatnonzero(graph.color == c)
        what = (graph.describe(int(members[0])) if members.size == 1
                else f"the color class of {graph.describe(int(members[0]))} ({members.size} nodes)")
        return (f"{what[0].upper()}{what[1:]} needs {class_memory[c]:.6g} bytes, more than the largest accelerator "
                f"({cluster.max_memory:.6g} bytes), and the cluster has no CPU.")
    return None
