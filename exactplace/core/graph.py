"""The graph model: nodes with CPU / accelerator times, memory, communication, colocation.

A :class:`Graph` is immutable after construction and stores everything in numpy
arrays indexed by node *position* (0..n-1); the user's node ids are kept in
``Graph.ids`` and only appear at the boundary (IO, error messages, placements by id).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np

from exactplace.core.dag import topological_order
from exactplace.core.errors import CycleError, GraphError
from exactplace.core.params import brief

__all__ = ["MAX_SUM", "Graph", "Node"]


@dataclass(frozen=True)
class Node:
    """One operator or layer, as the user describes it.

    Parameters
    ----------
    id : int
        The user's identifier, unique in the graph.
    cpu_time : float
        Time to run the node on one CPU core.
    acc_time : float or None
        Time on an accelerator; ``None`` means the node cannot run on one.
    memory : float
        Bytes the node occupies on an accelerator (CPU RAM is not capped).
    comm : float
        Cost of moving this node's output between an accelerator and RAM; used for
        every outgoing edge that does not carry a cost of its own.
    color : int or None
        Colocation class: nodes sharing a color must be on the same device.
    backward : bool
        True for a backward-pass (gradient) node of a training graph.
    name : str or None
        A human-readable name, kept for reports.
    sync : float
        Time to all-reduce this node's parameters among the replicas of a data-parallel stage
        (PipeDream's ``4 P / B`` for ``P`` parameter bytes and bandwidth ``B``). A stage on ``r``
        replicas pays ``sync_total * (r - 1) / r`` (paper Appendix C.2); 0 (the default) makes
        replication free of synchronisation. Unused without replication.
    activation : float
        Bytes of ``memory`` that one microbatch in flight holds (the activations its forward keeps for
        its backward); at most ``memory``. Only a pipeline schedule reads it
        (:mod:`exactplace.core.schedule`): a stage keeping ``f`` microbatches in flight holds
        ``memory + (f - 1) * activation``.
    """

    id: int
    cpu_time: float
    acc_time: float | None
    memory: float = 0.0
    comm: float = 0.0
    color: int | None = None
    backward: bool = False
    name: str | None = None
    sync: float = 0.0
    activation: float = 0.0


EdgeSpec = tuple[int, int] | tuple[int, int, float]


def _frozen(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)
    return array


class Graph:
    """An immutable DAG of operators, ready for the evaluators and every backend.

    Parameters
    ----------
    nodes : iterable of Node
    edges : iterable of (source id, destination id) or (source id, destination id, cost)
        An edge without a cost uses its source's ``comm``.

    Raises
    ------
    GraphError
        Empty graph, duplicate node id, edge naming an unknown node, negative / NaN /
        infinite value, a backward node feeding a forward node, conflicting duplicate edge.
    CycleError
        The edges contain a directed cycle (one cycle is named in the message).

    Notes
    -----
    Per-edge costs follow the paper's subdivision reduction (Appendix B): when the
    edges leaving ``u`` carry different costs, each distinct cost ``c`` behaves like a
    zero-time, zero-memory node colocated with ``u`` that owns the edges of cost ``c``.
    That node is kept implicit as a *communication group* (``group_source``,
    ``group_cost``, ``edge_group``): a group's cost is paid once by the source's device
    and once by every other device that receives it, exactly as in the subdivided graph.

    Examples
    --------
    >>> g = Graph([Node(1, 2.0, 1.0, comm=0.5), Node(2, 4.0, None)], [(1, 2)])
    >>> g.n, g.m, g.supported.tolist()
    (2, 1, [True, False])
    """

    __slots__ = (
        "__dict__",
        "_index",
        "_sealed",
        "acc_time",
        "activation",
        "backward",
        "color",
        "color_labels",
        "comm",
        "cpu_time",
        "dst",
        "edge_cost",
        "edge_group",
        "group_cost",
        "group_source",
        "ids",
        "memory",
        "names",
        "src",
        "supported",
        "sync",
        "topological_order",
    )

    def __init__(self, nodes: Iterable[Node], edges: Iterable[EdgeSpec]) -> None:
        nodes = _listed(nodes, "nodes", "an iterable of Node")
        edges = _listed(edges, "edges", "an iterable of (source, destination[, cost]) tuples")
        if not nodes:
            raise GraphError("The graph is empty: it needs at least one node.")
        index: dict[int, int] = {}
        for position, node in enumerate(nodes):
            if not isinstance(node, Node):
                raise GraphError(f"Node at position {position} is a {type(node).__name__}, not a Node.")
            if isinstance(node.id, bool) or not isinstance(node.id, (int, np.integer)):
                raise GraphError(f"Node at position {position} has id {node.id!r}; ids must be integers.")
            if not -(2**63) <= node.id < 2**63:
                raise GraphError(f"Node at position {position} has id {brief(node.id)!r}; ids must fit in 64 bits.")
            if node.id in index:
                raise GraphError(f"Duplicate node id {node.id}.")
            index[int(node.id)] = position
            _check_values(node)
        n = len(nodes)
        self._index = index
        self.ids = _frozen(np.array([int(v.id) for v in nodes], dtype=np.int64))
        self.names = tuple(v.name if v.name is not None else str(v.id) for v in nodes)
        self.cpu_time = _frozen(np.array([float(v.cpu_time) for v in nodes]))
        self.supported = _frozen(np.array([v.acc_time is not None for v in nodes]))
        self.acc_time = _frozen(np.array([float(v.acc_time) if v.acc_time is not None else math.inf for v in nodes]))
        self.memory = _frozen(np.array([float(v.memory) for v in nodes]))
        self.comm = _frozen(np.array([float(v.comm) for v in nodes]))
        self.backward = _frozen(np.array([bool(v.backward) for v in nodes]))
        self.sync = _frozen(np.array([float(v.sync) for v in nodes]))
        self.activation = _frozen(np.array([float(v.activation) for v in nodes]))
        self.color_labels = tuple(None if v.color is None else int(v.color) for v in nodes)
        # Colocation classes as dense indices 0..C-1; an uncolored node is its own class.
        class_of: dict[object, int] = {}
        color = np.empty(n, dtype=np.int64)
        for i, label in enumerate(self.color_labels):
            key = ("node", i) if label is None else label
            color[i] = class_of.setdefault(key, len(class_of))
        self.color = _frozen(color)

        _check_sums(self)
        src, dst, cost = self._read_edges(edges)
        if not sum(cost.tolist(), 0.0) <= MAX_SUM:
            raise GraphError(f"The edge costs add up to more than {MAX_SUM:g}, so loads would overflow.")
        self.src, self.dst, self.edge_cost = _frozen(src), _frozen(dst), _frozen(cost)
        for s, d in zip(src, dst):
            if self.backward[s] and not self.backward[d]:
                raise GraphError(
                    f"Edge {self.ids[s]} -> {self.ids[d]} goes from a backward node to a forward node; "
                    "training graphs only allow forward->forward, forward->backward and backward->backward edges."
                )
        self.topological_order = _frozen(self._topological_order())
        self._build_comm_groups()
        self._sealed = True

    def __setattr__(self, name: str, value: object) -> None:
        if getattr(self, "_sealed", False):
            raise AttributeError(f"Graph is immutable: cannot set {name!r}")
        object.__setattr__(self, name, value)

    # -- construction helpers -------------------------------------------------------------
    def _read_edges(self, edges: Iterable[EdgeSpec]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        seen: dict[tuple[int, int], float] = {}
        for spec in edges:
            if not isinstance(spec, (tuple, list)) or len(spec) not in (2, 3):
                raise GraphError(f"Edge {spec!r} must be (source, destination) or (source, destination, cost).")
            u, v = spec[0], spec[1]
            for end, value in (("source", u), ("destination", v)):
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise GraphError(
                        f"Edge {u!r} -> {v!r} names {value!r} as its {end}, which is not an integer node id."
                    )
                if value not in self._index:
                    raise GraphError(f"Edge {u} -> {v} names an unknown {end} node {value!r}.")
            i, j = self._index[u], self._index[v]
            if i == j:
                raise CycleError(f"Edge {u} -> {v} is a self-loop; the graph must be acyclic.", [int(u)])
            c = spec[2] if len(spec) == 3 else float(self.comm[i])
            if isinstance(c, bool) or not isinstance(c, (int, float, np.integer, np.floating)):
                raise GraphError(f"Edge {u} -> {v} has cost {brief(c)!r}; costs must be finite and non-negative "
                                 "numbers.")
            if not _finite(c) or c < 0:
                raise GraphError(f"Edge {u} -> {v} has cost {brief(c)!r}; costs must be finite and non-negative.")
            c = float(c)
            if (i, j) in seen and seen[(i, j)] != c:
                raise GraphError(f"Edge {u} -> {v} is given twice with different costs ({seen[(i, j)]} and {c}).")
            seen[(i, j)] = c
        pairs = list(seen)
        src = np.array([p[0] for p in pairs], dtype=np.int64)
        dst = np.array([p[1] for p in pairs], dtype=np.int64)
        cost = np.array([seen[p] for p in pairs], dtype=np.float64)
        return src, dst, cost

    def _topological_order(self) -> np.ndarray:
        order = topological_order(self.n, self.src, self.dst)
        if order is not None:
            return order
        digraph = nx.DiGraph(zip(self.src.tolist(), self.dst.tolist()))  # only to name the cycle
        cycle = [int(self.ids[u]) for u, _ in nx.find_cycle(digraph)]
        shown = " -> ".join(str(c) for c in [*cycle, cycle[0]])
        raise CycleError(f"The graph has a directed cycle: {shown}.", cycle)

    def _build_comm_groups(self) -> None:
        # One group per (source, distinct outgoing cost): the paper's subdivision, kept implicit.
        keys = {}
        edge_group = np.empty(self.m, dtype=np.int64)
        for e, (u, c) in enumerate(zip(self.src.tolist(), self.edge_cost.tolist())):
            edge_group[e] = keys.setdefault((u, c), len(keys))
        self.edge_group = _frozen(edge_group)
        self.group_source = _frozen(np.array([k[0] for k in keys], dtype=np.int64))
        self.group_cost = _frozen(np.array([k[1] for k in keys], dtype=np.float64))

    # -- basic facts ------------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of nodes."""
        return len(self.ids)

    @property
    def m(self) -> int:
        """Number of edges."""
        return len(self.src)

    @property
    def is_training(self) -> bool:
        """True when the graph has backward nodes."""
        return bool(self.backward.any())

    @property
    def has_sync(self) -> bool:
        """True when some node has a parameter-synchronisation cost (``Node.sync``)."""
        return bool(self.sync.any())

    @cached_property
    def has_uniform_edge_costs(self) -> bool:
        """True when every node's outgoing edges share one cost (no subdivision needed)."""
        return len(self.group_source) == len(np.unique(self.group_source))

    def index_of(self, node_id: int) -> int:
        """Position of the node with the given id; raises GraphError for an unknown id."""
        try:
            return self._index[int(node_id)]
        except (KeyError, TypeError, ValueError):
            raise GraphError(f"Unknown node id {node_id!r}.") from None

    def node(self, i: int) -> Node:
        """The :class:`Node` at position ``i``, as it was given."""
        return Node(
            id=int(self.ids[i]), cpu_time=float(self.cpu_time[i]),
            acc_time=float(self.acc_time[i]) if self.supported[i] else None,
            memory=float(self.memory[i]), comm=float(self.comm[i]), color=self.color_labels[i],
            backward=bool(self.backward[i]), name=self.names[i], sync=float(self.sync[i]),
            activation=float(self.activation[i]),
        )

    def describe(self, i: int) -> str:
        """``"node 7 ('conv1')"``: how error messages name a node."""
        node_id = int(self.ids[i])
        name = self.names[i]
        return f"node {node_id}" if name == str(node_id) else f"node {node_id} ({name!r})"

    @cached_property
    def successors(self) -> tuple[np.ndarray, ...]:
        """``successors[i]``: positions of the nodes that ``i`` has an edge to."""
        return _adjacency(self.src, self.dst, self.n)

    @cached_property
    def predecessors(self) -> tuple[np.ndarray, ...]:
        """``predecessors[i]``: positions of the nodes with an edge to ``i``."""
        return _adjacency(self.dst, self.src, self.n)

    def to_networkx(self) -> nx.DiGraph:
        """A fresh networkx view: nodes are ids, with every field as an attribute."""
        digraph = nx.DiGraph()
        for i in range(self.n):
            node = self.node(i)
            digraph.add_node(node.id, **{k: getattr(node, k) for k in Node.__dataclass_fields__ if k != "id"})
        for u, v, c in zip(self.src.tolist(), self.dst.tolist(), self.edge_cost.tolist()):
            digraph.add_edge(int(self.ids[u]), int(self.ids[v]), cost=c)
        return digraph

    def edges(self) -> list[tuple[int, int, float]]:
        """Edges as (source id, destination id, cost)."""
        return [
            (int(self.ids[u]), int(self.ids[v]), c)
            for u, v, c in zip(self.src.tolist(), self.dst.tolist(), self.edge_cost.tolist())
        ]

    def nodes(self) -> list[Node]:
        """Nodes as given, in position order."""
        return [self.node(i) for i in range(self.n)]

    def __reduce__(self) -> tuple[type[Graph], tuple[list[Node], list[tuple[int, int, float]]]]:
        """Pickled as its nodes and edges, rebuilt (and checked) by the constructor: for Ray and multiprocessing."""
        return Graph, (self.nodes(), self.edges())

    def __repr__(self) -> str:
        kind = "training" if self.is_training else "inference"
        return f"<Graph {kind}: {self.n} nodes, {self.m} edges>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return self.nodes() == other.nodes() and sorted(self.edges()) == sorted(other.edges())

    __hash__ = None  # type: ignore[assignment]


def _listed(values: object, name: str, requirement: str) -> list:
    try:
        return list(values)  # type: ignore[call-overload]
    except TypeError:
        raise GraphError(f"The {name!r} parameter of Graph must be {requirement}. Got {values!r} instead.") from None


#: Sums of a graph's values must stay below this, so that every load the evaluators and the methods add up
#: (compute plus communication of one device, with rounding slack) is finite.
MAX_SUM = 1e300


def _check_sums(graph: Graph) -> None:
    columns = {"cpu_time": graph.cpu_time, "acc_time": graph.acc_time[graph.supported], "memory": graph.memory,
               "comm": graph.comm, "sync": graph.sync, "activation": graph.activation}
    for field, values in columns.items():
        if not sum(values.tolist(), 0.0) <= MAX_SUM:  # a plain float sum: inf on overflow, no warning
            raise GraphError(
                f"The nodes' {field!r} values add up to more than {MAX_SUM:g}, so loads would overflow; "
                "express them in a larger unit."
            )


def _adjacency(a: np.ndarray, b: np.ndarray, n: int) -> tuple[np.ndarray, ...]:
    order = np.argsort(a, kind="stable")
    bounds = np.searchsorted(a[order], np.arange(n + 1))
    targets = b[order]
    return tuple(_frozen(targets[bounds[i]:bounds[i + 1]].copy()) for i in range(n))


def _finite(value: float) -> bool:
    """``math.isfinite``, False (not OverflowError) for an integer beyond the largest float."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _check_values(node: Node) -> None:
    fields: Sequence[tuple[str, object]] = (
        ("cpu_time", node.cpu_time), ("acc_time", node.acc_time), ("memory", node.memory), ("comm", node.comm),
        ("sync", node.sync), ("activation", node.activation),
    )
    for field, value in fields:
        if value is None and field == "acc_time":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise GraphError(f"Node {node.id}: field {field!r} must be a number. Got {brief(value)!r} instead.")
        if not _finite(value) or value < 0:
            raise GraphError(f"Node {node.id}: field {field!r} must be finite and non-negative. "
                             f"Got {brief(value)!r} instead.")
    if node.activation > node.memory:
        raise GraphError(f"Node {node.id}: field 'activation' ({node.activation:g}) must be at most its 'memory' "
                         f"({node.memory:g}): it is the part of the memory one microbatch in flight holds.")
    if not isinstance(node.backward, (bool, np.bool_)) and not (
        isinstance(node.backward, (int, np.integer)) and node.backward in (0, 1)
    ):
        raise GraphError(f"Node {node.id}: field 'backward' must be a boolean. Got {node.backward!r} instead.")
    if node.color is not None and (isinstance(node.color, bool) or not isinstance(node.color, (int, np.integer))
                                   or not -(2**63) <= node.color < 2**63):  # as ids: the file format's range
        raise GraphError(f"Node {node.id}: field 'color' must be an integer of 64 bits or None. "
                         f"Got {brief(node.color)!r} instead.")
