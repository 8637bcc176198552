"""Feasibility of a placement: memory, colocation, accelerator support, and the structure
of the space it is judged in.

Which structure a placement must have depends on how it is scored (:func:`check_feasibility`):
throughput and makespan allow any split (``Space.ANY``), and asking for ``Space.CONTIGUOUS`` or
``Space.CHAIN`` adds the checks below; latency follows the §4 rules: each accelerator's subgraphs
(the plan's ``subgraph`` indices, else the evaluator's cut) are contiguous, at most ``q`` per
accelerator, and can be invoked in some order (no two wait on each other in a cycle).

Contiguity is Definition 3.1 of the paper (:func:`is_contiguous`); for training graphs it must
hold separately for the forward and the backward part of each device. A *contiguous split* also
needs its forward parts to form a chain of ideals ∅ ⊂ I_1 ⊂ ... ⊂ V (paper §5.1.1): sets that are
each contiguous can still wait on each other in a cycle, which deadlocks under the latency
semantics and lies outside the DP's search space, so it is reported as an ``order`` violation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from exactplace.core.cluster import MEMORY_ATOL, MEMORY_RTOL, Cluster
from exactplace.core.constraints import Constraints
from exactplace.core.errors import ParameterError, PlacementError, check_param
from exactplace.core.graph import Graph
from exactplace.core.objectives import OBJECTIVES
from exactplace.core.placement import Space
from exactplace.core.placement_array import as_device_array, as_replicas_array, as_subgraph_array
from exactplace.evaluators.schedule import pipeline_score

__all__ = [
    "Guarantees", "Violation", "accelerator_memory", "check_feasibility", "check_fits", "constraint_violations",
    "contiguity_violations",
    "device_order_cycle", "human_bytes", "is_contiguous", "memory_summary", "summarize_violations",
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

    @classmethod
    def of_space(cls, space: Space | str | None) -> Guarantees:
        """The structure a throughput split of ``space`` has: ``CHAIN`` forward parts contiguous and
        chained (what the DP promises), ``CONTIGUOUS`` every part too; others none."""
        space = None if space is None else Space(space)
        if space is Space.CHAIN:
            return cls(forward_contiguous=True, chain_order=True)
        if space is Space.CONTIGUOUS:
            return cls.contiguous_split()
        return cls()


@dataclass(frozen=True)
class Violation:
    """One broken constraint: its kind (memory, colocation, unsupported, contiguity, order,
    subgraphs), a message naming what is at fault, and the device it concerns (None: several)."""

    kind: str
    message: str
    device: int | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


def summarize_violations(violations: Sequence[Violation], max_lines: int = 4) -> list[str]:
    """At most ``max_lines`` lines: one per (kind, device), with how many more of the same there are.

    >>> vs = [Violation("memory", "acc0 holds 5 bytes, more than its 4 bytes", 0)] + [
    ...     Violation("contiguity", f"the forward part of acc1 is not contiguous (node {i})", 1) for i in range(3)]
    >>> summarize_violations(vs)  # doctest: +NORMALIZE_WHITESPACE
    ['memory: acc0 holds 5 bytes, more than its 4 bytes',
     'contiguity: the forward part of acc1 is not contiguous (node 0) (and 2 more like it)']
    """
    groups: dict[tuple[str, int | None], list[Violation]] = {}
    for violation in violations:
        groups.setdefault((violation.kind, violation.device), []).append(violation)
    lines = [str(group[0]) + (f" (and {len(group) - 1} more like it)" if len(group) > 1 else "")
             for group in groups.values()]
    if len(lines) > max_lines:
        hidden = sum(len(group) for group in list(groups.values())[max_lines - 1:])
        lines = [*lines[:max_lines - 1], f"... and {hidden} more violations"]
    return lines


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

    A set S is contiguous when no path leaves S and comes back: no u in S, v outside S, w in S
    with v reachable from u and w reachable from v.

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1), (1, 2)])
    >>> is_contiguous(g, [0, 1]), is_contiguous(g, [0, 2])
    (True, False)
    """
    label = np.zeros(graph.n, dtype=np.int64)
    label[np.asarray(nodes, dtype=np.int64)] = 1
    return not any(lab == 1 for lab, _ in contiguity_violations(graph, label))


def accelerator_memory(graph: Graph, cluster: Cluster, device: np.ndarray, schedule: str | None = None,
                       microbatches: int | None = None) -> np.ndarray:
    """Bytes each accelerator holds under ``device`` (a valid device array), shape ``(accelerators,)``; with a
    ``schedule``, each stage's with the activations of the microbatches it keeps in flight (a placement that is
    not a pipeline holds its nodes' memory alone).

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(0, 1.0, 1.0, memory=2.0, activation=1.0), Node(1, 1.0, 1.0, memory=3.0)], [(0, 1)])
    >>> accelerator_memory(g, Cluster(2, cpus=1), np.array([1, 2])).tolist()   # node 1 on the CPU
    [0.0, 2.0]
    >>> accelerator_memory(g, Cluster(2, cpus=0), np.array([0, 1]), "1f1b", 4).tolist()  # stage 0: 2 in flight
    [3.0, 3.0]
    """
    on_acc = device < cluster.accelerators
    used = np.bincount(device[on_acc], weights=graph.memory[on_acc], minlength=cluster.accelerators)
    if schedule is not None:
        score = pipeline_score(graph, cluster, device, schedule, microbatches)
        if score.breaks is None:
            used = np.zeros(cluster.accelerators)
            used[list(score.stages)] = score.memory
    return used


def constraint_violations(graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray,
                          constraints: Constraints | Mapping[str, Any]) -> list[Violation]:
    """One :class:`Violation` (kind ``"constraint"``) per broken user constraint, naming it.

    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1), (1, 2)])
    >>> [str(v) for v in constraint_violations(g, Cluster(2), [0, 1, 2], {"no_cut": [(0, 1)]})]
    ['constraint: no_cut (node 0, node 1): node 0 is on acc0, node 1 on acc1']
    """
    stated = constraints if isinstance(constraints, Constraints) else Constraints.from_dict(constraints)
    r = stated.resolved(graph, cluster)
    dev = np.asarray(device)
    names = cluster.device_names()
    k = cluster.accelerators
    out = []
    for i, d in r.pins.items():
        if (d is None and dev[i] < k) or (d is not None and dev[i] != d):
            out.append(Violation("constraint", f"pin {graph.describe(i)} to {'cpu' if d is None else names[d]}: "
                                 f"it is on {names[dev[i]]}", int(dev[i])))
    for i, devices in r.forbidden.items():
        if int(dev[i]) in devices:
            out.append(Violation("constraint", f"forbid {names[dev[i]]} to {graph.describe(i)}: it is there",
                                 int(dev[i])))
    for kind, pairs in (("together", r.together), ("no_cut", r.no_cut)):
        for a, b in pairs:
            if dev[a] != dev[b]:
                out.append(Violation("constraint", f"{kind} ({graph.describe(a)}, {graph.describe(b)}): "
                                     f"{graph.describe(a)} is on {names[dev[a]]}, {graph.describe(b)} on "
                                     f"{names[dev[b]]}"))
    used = np.unique(dev[dev < k])
    if stated.max_stages is not None and len(used) > stated.max_stages:
        out.append(Violation("constraint", f"max_stages {stated.max_stages}: the placement uses {len(used)} "
                             "accelerators"))
    on = dev < k
    held = np.bincount(dev[on], weights=graph.memory[on], minlength=k)[:k]
    left = (cluster.memory - r.reserve) * (1 + MEMORY_RTOL) + MEMORY_ATOL  # the slack every memory check has
    for d in np.flatnonzero((r.reserve > 0) & (held > left)):
        out.append(Violation("constraint", f"reserve {r.reserve[d]:.6g} bytes on {names[d]}: it holds "
                             f"{held[d]:.6g} of its {cluster.memory[d]:.6g} bytes", int(d)))
    return out


def check_feasibility(
    graph: Graph,
    cluster: Cluster,
    device: Sequence[int] | np.ndarray,
    *,
    objective: str = "throughput",
    space: Space | str | None = None,
    q: int | None = None,
    subgraph: Sequence[int] | np.ndarray | None = None,
    guarantees: Guarantees | None = None,
    replicas: Sequence[int] | np.ndarray | None = None,
    schedule: str | None = None,
    microbatches: int | None = None,
    constraints: Any = None,
) -> list[Violation]:
    """Every constraint the placement breaks under the rules of ``objective`` and ``space`` (empty: feasible).

    Parameters
    ----------
    graph, cluster : Graph, Cluster
    device : array of int
        ``device[i]`` is the device of the node at position ``i``.
    objective : {"throughput", "latency", "makespan"}, default "throughput"
        Always checked: accelerator support, memory and colocation. ``"latency"`` adds the §4
        rules: every accelerator subgraph contiguous, at most ``q`` per accelerator, and an
        order to invoke them (no cycle of subgraphs waiting on each other).
    space : Space or str, optional
        Ask for a stricter structure: ``"contiguous"`` (Definition 3.1 for each device's forward
        and backward part, forward parts chained), ``"chain"`` (forward parts contiguous and
        chained, the DP's space). On a two-level cluster, chained also means that the hosts'
        forward parts are chained (each machine takes consecutive stages). ``"any"``,
        ``"subgraphs"`` and None add nothing.
    q : int, optional
        Latency: the most subgraphs an accelerator may run (None: any number).
    subgraph : array of int, optional
        Latency: each accelerator node's subgraph index, in run order (default: the
        evaluator's cut, :func:`exactplace.evaluators.latency.contiguous_pieces`).
    guarantees : Guarantees, optional
        Check exactly this structure instead of ``space``'s (the referee checks what a method promises).
    replicas : array of int, optional
        Throughput with replication: each accelerator's replicas (paper Appendix C.2). The replicas
        of the accelerators in use must add up to at most the cluster's accelerators (each replica
        holds the whole part, so memory is checked per accelerator as without replication).
    schedule, microbatches : str and int, optional
        Throughput under a pipeline schedule (:mod:`exactplace.core.schedule`): the placement must be a
        pipeline on the accelerators in index order (``"pipeline"``), and each stage's memory counts
        the microbatches the schedule keeps in flight there.
    constraints : Constraints or mapping, optional
        A user's constraints (:mod:`exactplace.core.constraints`): one violation of kind
        ``"constraint"`` per broken one, naming it.

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

    Any split is a throughput split; latency asks for subgraphs that can be invoked:

    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1), (1, 2)])
    >>> c = Cluster(1, cpus=1)
    >>> check_feasibility(g, c, [0, 1, 0])
    []
    >>> [str(v) for v in check_feasibility(g, c, [0, 1, 0], objective="latency", q=1)]
    ['subgraphs: acc0 runs 2 subgraphs, more than q=1']
    >>> [v.kind for v in check_feasibility(g, c, [0, 1, 0], space="chain")]
    ['contiguity', 'order']
    """
    check_param(objective in OBJECTIVES, "objective", "check_feasibility", f"one of {list(OBJECTIVES)}", objective)
    check_param(space is None or space in {s.value for s in Space} or isinstance(space, Space), "space",
                "check_feasibility", f"one of {[s.value for s in Space]} or None", space)
    check_param(q is None or (isinstance(q, int) and not isinstance(q, bool) and q >= 1), "q", "check_feasibility",
                "a positive integer or None", q)
    dev = as_device_array(graph, cluster, device)
    names = cluster.device_names()
    violations = []
    k = cluster.accelerators
    for i in np.flatnonzero(~graph.supported & (dev < k)):
        violations.append(Violation(
            "unsupported", f"{graph.describe(i)} cannot run on an accelerator but is placed on {names[dev[i]]}",
            int(dev[i]),
        ))
    used, held = accelerator_memory(graph, cluster, dev), ""
    if schedule is not None or microbatches is not None:
        check_param(objective == "throughput", "objective", "check_feasibility",
                    "'throughput' under a pipeline schedule", objective)
        score = pipeline_score(graph, cluster, dev, schedule, microbatches)
        if score.breaks is not None:
            violations.append(Violation("pipeline", score.breaks))
        else:
            used = np.zeros(k)
            used[list(score.stages)] = score.memory
            held = f" with the microbatches {score.schedule} keeps in flight"
    for d in np.flatnonzero(used > cluster.memory_limit):
        violations.append(Violation(
            "memory", f"{names[d]} holds {used[d]:.6g} bytes{held}, more than its {cluster.memory[d]:.6g} bytes",
            int(d),
        ))
    first_device: dict[int, int] = {}
    for i, (c, d) in enumerate(zip(graph.color.tolist(), dev.tolist())):
        other = first_device.setdefault(c, i)
        if dev[other] != d:
            violations.append(Violation(
                "colocation",
                f"{graph.describe(i)} is on {names[d]} but {graph.describe(other)} "
                f"of the same color class is on {names[dev[other]]}", d,
            ))
    if constraints is not None:
        violations.extend(constraint_violations(graph, cluster, dev, constraints))
    reps = as_replicas_array(graph, cluster, dev, replicas)
    if reps is not None and objective != "throughput":
        raise ParameterError(f"Replicas apply to the throughput objective only, not {objective!r}.")
    if reps is not None:
        on = np.unique(dev[dev < k])
        if int(reps[on].sum()) > k:
            violations.append(Violation(
                "replicas", f"the accelerators in use run {int(reps[on].sum())} replicas in all, more than the "
                f"cluster's {k} accelerators", int(on[np.argmax(reps[on])]),
            ))
    violations += _structure_violations(graph, names, dev, guarantees or Guarantees.of_space(space),
                                        cluster if cluster.is_two_level else None)
    if objective == "latency":
        violations += _subgraph_violations(graph, cluster, dev, as_subgraph_array(graph, cluster, dev, subgraph), q)
    return violations


def _structure_violations(graph: Graph, names: list[str], dev: np.ndarray, guarantees: Guarantees,
                          two_level: Cluster | None = None) -> list[Violation]:
    """Contiguity of each device's forward / backward part and the chain order, as ``guarantees`` asks.

    Each set can be contiguous on its own while the devices still form a cycle (acc0 feeds acc1
    and acc1 feeds acc0 through other nodes): an ``order`` violation.

    On a ``two_level`` cluster the chain order also asks the hosts (``Cluster.hosts``) to be chained:
    each machine takes consecutive stages, as in PipeDream's hierarchical split.
    """
    violations = []
    if guarantees.forward_contiguous or guarantees.backward_contiguous:
        label = dev * 2 + graph.backward.astype(np.int64)
        for lab, v in contiguity_violations(graph, label):
            part = "backward" if lab % 2 else "forward"
            if not (guarantees.backward_contiguous if lab % 2 else guarantees.forward_contiguous):
                continue
            violations.append(Violation(
                "contiguity",
                f"the {part} part of {names[lab // 2]} is not contiguous: "
                f"a path leaves it through {graph.describe(v)} and comes back", lab // 2,
            ))
    if guarantees.chain_order:
        cycle = device_order_cycle(graph, dev, np.flatnonzero(~graph.backward))
        if cycle:
            shown = " -> ".join(names[d] for d in [*cycle, cycle[0]])
            violations.append(Violation(
                "order", f"the devices' forward parts wait on each other in a cycle ({shown}): no chain of ideals"
            ))
        elif two_level is not None:
            cycle = device_order_cycle(graph, two_level.hosts[dev], np.flatnonzero(~graph.backward))
            if cycle:
                host_names = [f"machine{h}" for h in range(two_level.machines)] + names[two_level.accelerators:]
                shown = " -> ".join(host_names[h] for h in [*cycle, cycle[0]])
                violations.append(Violation(
                    "order", f"the hosts' forward parts wait on each other in a cycle ({shown}): on a two-level "
                    "cluster each machine must take consecutive stages of the chain"
                ))
    return violations


def _subgraph_violations(graph: Graph, cluster: Cluster, dev: np.ndarray, subgraph: np.ndarray | None,
                         q: int | None) -> list[Violation]:
    """The §4 rules: subgraphs contiguous, at most ``q`` per accelerator, invocable in some order."""
    from exactplace.evaluators.latency import contiguous_pieces, invocation_blocks

    names = cluster.device_names()
    violations = []
    if subgraph is not None:
        width = int(subgraph.max(initial=0)) + 1  # one label per (accelerator, subgraph); CPU nodes share one
        label = np.where(dev < cluster.accelerators, dev * width + subgraph, cluster.accelerators * width)
        reported: set[int] = set()
        for lab, v in contiguity_violations(graph, label):
            d, piece = divmod(lab, width)
            if d < cluster.accelerators and lab not in reported:
                reported.add(lab)
                violations.append(Violation(
                    "subgraphs", f"subgraph {piece} of {names[d]} is not contiguous: a path leaves it through "
                    f"{graph.describe(v)} and comes back", d))
    for d in range(cluster.accelerators):
        member = dev == d
        count = (len(np.unique(subgraph[member])) if subgraph is not None
                 else int(contiguous_pieces(graph, member).max(initial=0)))
        if q is not None and count > q:
            violations.append(Violation("subgraphs", f"{names[d]} runs {count} subgraphs, more than q={q}", d))
    if not violations:
        try:
            invocation_blocks(graph, cluster, dev, subgraph)
        except PlacementError as error:
            violations.append(Violation("order", str(error)))
    return violations


def human_bytes(size: float) -> str:
    """A memory size as people write it (an infinite one, a memory without a cap, as "uncapped").

    >>> human_bytes(5), human_bytes(2.1e9), human_bytes(1536e3), human_bytes(float("inf"))
    ('5 bytes', '2.1 GB', '1.54 MB', 'uncapped')
    """
    if math.isinf(size) and size > 0:
        return "uncapped"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size:.6g} bytes"


def memory_summary(graph: Graph, cluster: Cluster) -> str:
    """What memory asks and offers, for a reason that says why nothing fit.

    >>> from exactplace.core.graph import Graph, Node
    >>> memory_summary(Graph([Node(0, 1.0, 1.0, memory=3e9), Node(1, 1.0, 1.0, memory=2e9)], []), Cluster(2, 4e9, 0))
    'the nodes need 5 GB in all, the largest colour class 3 GB; the accelerators hold 2 x 4 GB, no CPU'
    """
    class_memory = np.bincount(graph.color, weights=graph.memory)
    k = cluster.accelerators
    each = (f"{k} x {human_bytes(cluster.max_memory)}" if np.all(cluster.memory == cluster.memory[0])
            else " + ".join(human_bytes(m) for m in cluster.memory)) if k else "nothing"
    cpus = f"{cluster.cpus} CPU{'s' if cluster.cpus != 1 else ''}" if cluster.cpus else "no CPU"
    return (f"the nodes need {human_bytes(class_memory.sum())} in all, the largest colour class "
            f"{human_bytes(class_memory.max(initial=0.0))}; the accelerators hold {each}, {cpus}")


def check_fits(graph: Graph, cluster: Cluster) -> str | None:
    """Why no placement can exist, with what would fix it; None when nothing rules one out.

    A class can go on a CPU core when the cluster has one (CPUs have no memory cap).
    Without one, every node must be supported on accelerators, every colour class must fit
    the largest accelerator memory, and all of them together the accelerators' total memory.

    >>> from exactplace.core.graph import Graph, Node
    >>> check_fits(Graph([Node(0, 1.0, None)], []), Cluster(1, cpus=0))
    'Node 0 cannot run on an accelerator and the cluster has no CPU: it needs a CPU core.'
    >>> g = Graph([Node(i, 1.0, 1.0, memory=3e9) for i in range(3)], [])
    >>> print(check_fits(g, Cluster(2, memory=4e9, cpus=0)))  # doctest: +NORMALIZE_WHITESPACE
    The nodes do not fit: the nodes need 9 GB in all, the largest colour class 3 GB; the accelerators hold
    2 x 4 GB, no CPU. It needs a CPU core, or at least 4.5 GB per accelerator.
    """
    if cluster.cpus > 0:
        return None
    unsupported = np.flatnonzero(~graph.supported)
    if unsupported.size:
        node = graph.describe(int(unsupported[0])).capitalize()
        return f"{node} cannot run on an accelerator and the cluster has no CPU: it needs a CPU core."
    class_memory = np.bincount(graph.color, weights=graph.memory)
    too_big = np.flatnonzero(class_memory > cluster.memory_limit.max())
    if too_big.size:
        c = int(too_big[np.argmax(class_memory[too_big])])
        members = np.flatnonzero(graph.color == c)
        what = (graph.describe(int(members[0])) if members.size == 1
                else f"the color class of {graph.describe(int(members[0]))} ({members.size} nodes)")
        return (f"{what[0].upper()}{what[1:]} needs {human_bytes(class_memory[c])}, more than the largest "
                f"accelerator ({human_bytes(cluster.max_memory)}), and the cluster has no CPU: it needs a CPU core, "
                f"or at least {human_bytes(class_memory[c])} per accelerator.")
    total, capacity = float(class_memory.sum()), float(cluster.memory_limit.sum())
    if total > capacity:
        return (f"The nodes do not fit: {memory_summary(graph, cluster)}. It needs a CPU core, or at least "
                f"{human_bytes(total / cluster.accelerators)} per accelerator.")
    return None
