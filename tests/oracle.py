"""The one brute-force oracle of the test suite: optima of tiny instances by enumeration.

Every placement up to renaming identical devices (``strategies.canonical_placements``) is
checked with plain bitmasks and sets, and scored by the evaluators (which test_max_load and
test_latency check against naive references). Feasibility notions, from loosest to tightest:

``any``
    support, memory and colocation only (the non-contiguous methods' space).
``contiguous``
    also Definition 3.1 for each device's forward and backward part.
``chain``
    also an acyclic quotient of the forward parts: the devices can be ordered so that each
    forward part is the difference of two nested ideals. A *contiguous split*, what
    ``check_feasibility(space="contiguous")`` accepts.
``units``
    the DP's space (``Space.CHAIN``): colour classes share a device and the device quotient
    of the forward colour-class graph is acyclic, where that class graph has the forward
    edges plus, for each backward edge ``ub -> vb`` touching a backward-only (orphaned) class,
    the mirrored edge ``class(vb) -> class(ub)``.

Then ``any <= contiguous <= chain``. On inference graphs ``units == chain``. On a two-level
cluster (``Cluster.is_two_level``) ``chain`` and ``units`` also ask the same of the hosts
(``Cluster.hosts``): each machine takes consecutive stages.

For the step-time simulator, :func:`replay_makespan` recomputes a schedule's makespan for a
fixed execution order from the README-level rule alone (a node starts when its device is free
and every input has arrived; contention-free; an edge of cost c delays by c per accelerator
among its two ends), and :func:`brute_force_orders` takes the best makespan over every
topological order of a tiny graph.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from typing import NamedTuple

import networkx as nx
import numpy as np
from strategies import canonical_placements

from exactplace import Cluster, Graph, PlacementError, evaluate

__all__ = [
    "Optima", "brute_force_optima", "brute_force_orders", "class_graph_edges", "fits_only_on_the_slack",
    "fitting_placements", "is_unit_chain", "latency_subgraph_optimum", "replay_makespan", "subgraph_latency",
]


class Optima(NamedTuple):
    """Brute-force optima of one instance per feasibility notion (None: no such placement)."""

    any: float | None
    contiguous: float | None
    chain: float | None
    units: float | None


def class_graph_edges(graph: Graph) -> list[tuple[int, int]]:
    """Edges of the forward colour-class graph, with the mirrored orphan edges (module docstring)."""
    color, forward = graph.color.tolist(), (~graph.backward).tolist()
    has_forward = {c for c, f in zip(color, forward) if f}
    edges = []
    for s, d in zip(graph.src.tolist(), graph.dst.tolist()):
        cs, cd = color[s], color[d]
        if cs == cd:
            continue
        if forward[s] and forward[d]:
            edges.append((cs, cd))
        elif not forward[s] and not forward[d] and (cs not in has_forward or cd not in has_forward):
            edges.append((cd, cs))
    return edges


def _acyclic(edges: set[tuple[int, int]]) -> bool:
    remaining = set(edges)
    while remaining:
        sources = {u for u, _ in remaining} - {v for _, v in remaining}
        if not sources:
            return False
        remaining = {(u, v) for u, v in remaining if u not in sources}
    return True


def is_unit_chain(graph: Graph, device: np.ndarray, edges: list[tuple[int, int]] | None = None) -> bool:
    """Classes colocated and the device quotient of the class graph acyclic (the DP's space)."""
    edges = class_graph_edges(graph) if edges is None else edges
    device_of_class: dict[int, int] = {}
    for c, d in zip(graph.color.tolist(), device.tolist()):
        if device_of_class.setdefault(c, d) != d:
            return False
    return _acyclic({(device_of_class[a], device_of_class[b]) for a, b in edges
                     if device_of_class[a] != device_of_class[b]})


#: A predicate on placements: only those it keeps count (a user's constraints, restated by a test).
Keep = Callable[[np.ndarray], bool] | None


def fitting_placements(graph: Graph, cluster: Cluster, keep: Keep = None,
                       labelled: bool = False) -> Iterator[np.ndarray]:
    """``canonical_placements`` that respect accelerator support and memory (plain sums, the shared 1e-9 slack),
    and that ``keep`` keeps (``labelled``: every device told apart, for a ``keep`` that names devices)."""
    k = cluster.accelerators
    for device in canonical_placements(graph, cluster, labelled):
        if keep is not None and not keep(device):
            continue
        on_accelerator = device < k
        if np.any(on_accelerator & ~graph.supported):
            continue
        used = np.bincount(device[on_accelerator], weights=graph.memory[on_accelerator], minlength=k)[:k]
        if not np.any(used > cluster.memory * (1 + 1e-9) + 1e-9):
            yield device


def brute_force_optima(graph: Graph, cluster: Cluster, objective: str, keep: Keep = None, labelled: bool = False,
                       **options: bool) -> Optima:
    """Enumerate every placement up to renaming identical devices (``labelled``: every placement); see the module
    docstring.

    ``options`` (``overlap``, ``gpipe``) are passed to the evaluator; only the placements ``keep`` keeps count.
    """
    n = graph.n
    digraph = graph.to_networkx()
    ids = graph.ids.tolist()
    position = {node_id: i for i, node_id in enumerate(ids)}
    ancestors = [sum(1 << position[a] for a in nx.ancestors(digraph, v)) for v in ids]
    descendants = [sum(1 << position[d] for d in nx.descendants(digraph, v)) for v in ids]
    forward = [(u, v) for u, v in zip(graph.src.tolist(), graph.dst.tolist())
               if not graph.backward[u] and not graph.backward[v]]
    class_edges = class_graph_edges(graph)

    def contiguous(mask: int) -> bool:
        return not any(
            not mask >> v & 1 and ancestors[v] & mask and descendants[v] & mask for v in range(n)
        )

    best: dict[str, float | None] = dict.fromkeys(Optima._fields)

    def record(kind: str, value: float) -> None:
        if best[kind] is None or value < best[kind]:
            best[kind] = value

    for device in fitting_placements(graph, cluster, keep, labelled):
        try:
            value = evaluate(graph, cluster, device, objective, **options)
        except PlacementError:  # latency: the subgraphs wait on each other forever
            continue
        record("any", value)
        # On a two-level cluster a chain split also chains the hosts (each machine's stages consecutive).
        host = device if not cluster.is_two_level else cluster.hosts[device]
        if is_unit_chain(graph, device, class_edges) and is_unit_chain(graph, host, class_edges):
            record("units", value)
        label = [int(device[i]) * 2 + int(graph.backward[i]) for i in range(n)]
        masks: dict[int, int] = {}
        for i, lab in enumerate(label):
            masks[lab] = masks.get(lab, 0) | 1 << i
        if all(contiguous(mask) for mask in masks.values()):
            record("contiguous", value)
            if all(_acyclic({(int(x[u]), int(x[v])) for u, v in forward if x[u] != x[v]}) for x in (device, host)):
                record("chain", value)
    return Optima(**best)


def replay_makespan(graph: Graph, cluster: Cluster, device: np.ndarray, order: list[int]) -> float:
    """Contention-free makespan of ``device`` with every device running its nodes in ``order``."""
    k = cluster.accelerators
    free: dict[int, float] = {}
    finish = [0.0] * graph.n
    incoming: dict[int, list[tuple[int, float]]] = {}
    for u, v, c in zip(graph.src.tolist(), graph.dst.tolist(), graph.edge_cost.tolist()):
        incoming.setdefault(v, []).append((u, c))
    for v in order:
        d = int(device[v])
        arrive = 0.0
        for u, c in incoming.get(v, []):
            du = int(device[u])
            arrive = max(arrive, finish[u] + (0.0 if du == d else c * ((du < k) + (d < k))))
        start = max(free.get(d, 0.0), arrive)
        run = graph.acc_time[v] / cluster.speed[d] if d < k else graph.cpu_time[v]
        finish[v] = start + float(run)
        free[d] = finish[v]
    return max(finish)


def brute_force_orders(graph: Graph, cluster: Cluster, device: np.ndarray) -> tuple[float, list[list[int]]]:
    """The least contention-free makespan over every topological order, and all those orders."""
    orders = [list(o) for o in nx.all_topological_sorts(_position_digraph(graph))]
    return min(replay_makespan(graph, cluster, device, o) for o in orders), orders


def _position_digraph(graph: Graph) -> nx.DiGraph:
    digraph = nx.DiGraph()
    digraph.add_nodes_from(range(graph.n))
    digraph.add_edges_from(zip(graph.src.tolist(), graph.dst.tolist()))
    return digraph


def subgraph_latency(graph: Graph, cluster: Cluster, device: np.ndarray, piece: np.ndarray) -> float | None:
    """Latency of one sample when accelerator ``d`` runs its subgraphs ``piece = 0, 1, ...`` in that order
    (paper §4 and Fig. 4, simulated from the rules alone); None when the subgraphs wait on each other.

    A subgraph starts once every node outside it with an edge into it has finished, and after
    the accelerator's previous subgraph; it copies in each distinct (source, cost) entering it
    once, computes its nodes, copies out each (source, cost) with an edge leaving it once, and
    all its nodes finish together. A CPU node runs when its predecessors have finished.
    """
    k = cluster.accelerators
    edges = list(zip(graph.src.tolist(), graph.dst.tolist(), graph.edge_cost.tolist()))
    block = [("acc", int(device[v]), int(piece[v])) if device[v] < k else ("cpu", v) for v in range(graph.n)]
    members: dict[tuple, list[int]] = {}
    for v, b in enumerate(block):
        members.setdefault(b, []).append(v)
    finish: dict[int, float] = {}
    done: dict[tuple, float] = {}
    while len(done) < len(members):
        progressed = False
        for b, nodes in members.items():
            if b in done:
                continue
            inputs = [u for u, v, _ in edges if v in nodes and block[u] != b]
            earlier = [e for e in members if e[0] == "acc" and b[0] == "acc" and e[1] == b[1] and e[2] < b[2]]
            if any(u not in finish for u in inputs) or any(e not in done for e in earlier):
                continue
            ready = max([finish[u] for u in inputs] + [done[e] for e in earlier], default=0.0)
            if b[0] == "cpu":
                end = ready + float(graph.cpu_time[nodes[0]])
            else:
                copy_in = {(u, c) for u, v, c in edges if v in nodes and block[u] != b}
                copy_out = {(u, c) for u, v, c in edges if u in nodes and block[v] != b}
                compute = sum(float(graph.acc_time[v]) for v in nodes) / float(cluster.speed[b[1]])
                end = ready + sum(c for _, c in copy_in) + compute + sum(c for _, c in copy_out)
            done[b] = end
            for v in nodes:
                finish[v] = end
            progressed = True
        if not progressed:
            return None
    return max(finish.values(), default=0.0)


def latency_subgraph_optimum(graph: Graph, cluster: Cluster, q: int, keep: Keep = None,
                             labelled: bool = False) -> float | None:
    """Least latency over the latency programs' space (None: no placement): support, memory and
    colocation per device (``fitting_placements``), and every cut of each accelerator's nodes into
    at most ``q`` subgraphs run in the order of their numbers (only gap-free numberings, which
    lose nothing), simulated by :func:`subgraph_latency`. Written from the paper's Fig. 4, not
    from the evaluator's default cut, which is one of the cuts tried. Only placements ``keep`` keeps count.
    """
    k = cluster.accelerators
    best = None
    for device in fitting_placements(graph, cluster, keep, labelled):
        on = np.flatnonzero(device < k)
        for choice in itertools.product(range(q), repeat=len(on)):
            piece = np.full(graph.n, -1, dtype=np.int64)
            piece[on] = choice
            if any(set(piece[device == d]) != set(range(len(set(piece[device == d])))) for d in range(k)):
                continue  # a numbering with a gap is the same cut as the gap-free one
            value = subgraph_latency(graph, cluster, device, piece)
            if value is not None and (best is None or value < best):
                best = value
    return best


def fits_only_on_the_slack(graph: Graph, cluster: Cluster) -> bool:
    """Some colour classes fit one accelerator only thanks to the evaluator's rounding slack.

    The model rounds sizes up and caps down (so it never returns a placement the evaluator
    rejects); a set whose size lies in (memory, memory * (1 + 1e-9) + 1e-9] is then excluded.
    """
    if not cluster.accelerators or math.isinf(cluster.memory[0]):
        return False
    sizes = [float(graph.memory[graph.color == c].sum()) for c in np.unique(graph.color)]
    cap, limit = float(cluster.memory[0]), float(cluster.memory_limit[0])
    return any(cap < sum(sizes[i] for i in range(len(sizes)) if mask >> i & 1) <= limit
               for mask in range(1, 2 ** len(sizes)))


def replica_vectors(used: list[int], k: int) -> Iterator[dict[int, int]]:
    """Every replica count (at least 1) of the accelerators ``used``, adding up to at most ``k``."""
    def rec(i: int, left: int, chosen: dict[int, int]) -> Iterator[dict[int, int]]:
        if i == len(used):
            yield dict(chosen)
            return
        rest = len(used) - i - 1  # each later accelerator needs one
        for r in range(1, left - rest + 1):
            chosen[used[i]] = r
            yield from rec(i + 1, left - r, chosen)
        chosen.pop(used[i], None)

    yield from rec(0, k, {})


def brute_force_replicated(graph: Graph, cluster: Cluster) -> tuple[float, np.ndarray, np.ndarray] | None:
    """The best chain split (``is_unit_chain``) of a homogeneous cluster with every choice of replicas
    per used accelerator (adding up to at most ``k``), scored by ``max_load(..., replicas=)``:
    (value, device, replicas), or None when no chain split fits."""
    k = cluster.accelerators
    class_edges = class_graph_edges(graph)
    best = None
    for device in fitting_placements(graph, cluster):
        if not is_unit_chain(graph, device, class_edges):
            continue
        used = sorted(set(device[device < k].tolist()))
        for chosen in replica_vectors(used, k):
            replicas = np.ones(k, dtype=np.int64)
            for a, r in chosen.items():
                replicas[a] = r
            value = evaluate(graph, cluster, device, "throughput", replicas=replicas)
            if best is None or value < best[0]:
                best = (value, device.copy(), replicas)
    return best
