"""Constraints a user states on a placement, beyond the graph's own colour classes.

* ``pin``: a node on one device (``"acc1"``, ``"cpu0"``) or on any CPU core (``"cpu"``);
* ``forbid``: devices a node may not use;
* ``together``: pairs of nodes on one device;
* ``no_cut``: pairs of nodes joined by an edge that stay in one stage (no cut between them);
* ``max_stages``: at most this many accelerators in use;
* ``reserve``: memory held back on every accelerator (one number, or one per accelerator).

Nodes are named by id or by name. Most of these are the model's own terms, so every method holds
them exactly once they are *lowered* (:meth:`Constraints.lower`): ``together`` and ``no_cut`` merge
colour classes, a pin to ``"cpu"`` makes the node CPU-only, ``reserve`` lowers the accelerators'
memory, and ``max_stages`` on identical accelerators leaves that many of them. What remains, a pin
to one particular device, a forbidden device or ``max_stages`` on different accelerators, is a
*device rule* (:class:`DeviceRules`), which only methods that declare ``device_rules`` hold (the
MIPs: the rules are bounds and rows of their programs); the others refuse it and
``method="auto"`` moves on.

Examples
--------
>>> from exactplace.core.graph import Graph, Node
>>> g = Graph([Node(i, 1.0, 1.0, memory=2.0) for i in range(3)], [(0, 1), (1, 2)])
>>> c = Constraints(pin={2: "cpu"}, no_cut=[(0, 1)], reserve=1.0)
>>> lowered, cluster = c.lower(g, Cluster(2, memory=5.0))
>>> lowered.color.tolist(), lowered.supported.tolist(), cluster.memory.tolist()
([0, 0, 1], [True, True, False], [4.0, 4.0])
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ParameterError
from exactplace.core.graph import Graph
from exactplace.core.params import brief

__all__ = ["Constraints", "DeviceRules", "Lowering", "NodeRef", "Resolved"]

#: A node as a user names it: its id, or its name.
NodeRef = int | str

#: The keys of a constraints mapping (JSON ``"constraints"``), in the order they are described.
FIELDS = ("pin", "forbid", "together", "no_cut", "max_stages", "reserve")


@dataclass(frozen=True)
class Constraints:
    """What the user requires of a placement (module docstring); empty by default."""

    pin: Mapping[NodeRef, str] = field(default_factory=dict)
    forbid: Mapping[NodeRef, Sequence[str]] = field(default_factory=dict)
    together: Sequence[tuple[NodeRef, NodeRef]] = ()
    no_cut: Sequence[tuple[NodeRef, NodeRef]] = ()
    max_stages: int | None = None
    reserve: float | Sequence[float] = 0.0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "constraints") -> Constraints:
        """From a mapping with the keys of :data:`FIELDS` (the workload JSON's ``"constraints"``).

        >>> Constraints.from_dict({"pin": {"embed": "acc0"}, "together": [[1, 2]]}).together
        ((1, 2),)
        """
        if not isinstance(data, Mapping):
            raise ParameterError(f"{where} must be a mapping with keys among {list(FIELDS)}; got {brief(data)}.")
        unknown = [key for key in data if key not in FIELDS]
        if unknown:
            raise ParameterError(f"{where} has an unknown key {unknown[0]!r}; the keys are {list(FIELDS)}.")
        pairs = {key: tuple(_pair(p, f"{where}.{key}") for p in _listed(data.get(key, ()), f"{where}.{key}"))
                 for key in ("together", "no_cut")}
        forbid = data.get("forbid", {})
        if not isinstance(forbid, Mapping):
            raise ParameterError(f"{where}.forbid must map nodes to lists of devices; got {brief(forbid)}.")
        pin = data.get("pin", {})
        if not isinstance(pin, Mapping):
            raise ParameterError(f"{where}.pin must map nodes to devices; got {brief(pin)}.")
        return cls(pin=dict(pin), forbid={node: tuple(_listed(devices, f"{where}.forbid[{node!r}]"))
                                          for node, devices in forbid.items()},
                   together=pairs["together"], no_cut=pairs["no_cut"], max_stages=data.get("max_stages"),
                   reserve=data.get("reserve", 0.0))

    def to_dict(self) -> dict[str, Any]:
        """The stated constraints as plain JSON values (empty ones left out)."""
        out: dict[str, Any] = {}
        if self.pin:
            out["pin"] = {str(node): device for node, device in self.pin.items()}
        if self.forbid:
            out["forbid"] = {str(node): list(devices) for node, devices in self.forbid.items()}
        for key in ("together", "no_cut"):
            if getattr(self, key):
                out[key] = [list(pair) for pair in getattr(self, key)]
        if self.max_stages is not None:
            out["max_stages"] = self.max_stages
        reserve = self.reserve
        if not isinstance(reserve, (int, float)) or reserve:
            out["reserve"] = reserve if isinstance(reserve, (int, float)) else [float(r) for r in reserve]
        return out

    def __bool__(self) -> bool:
        return bool(self.to_dict())

    # -- checked against a graph and cluster -------------------------------------------------------------------

    def resolved(self, graph: Graph, cluster: Cluster) -> Resolved:
        """The constraints with nodes as positions and devices as numbers; ParameterError naming what is wrong."""
        names = cluster.device_names()
        device_of = {name: d for d, name in enumerate(names)}
        position = _positions(graph)

        def node(ref: Any, where: str) -> int:
            key = ref if isinstance(ref, str) and ref in position else _as_id(ref)
            if key not in position:
                raise ParameterError(f"constraints: {where} names {ref!r}, which is no node id or name of the graph.")
            return position[key]

        def device(name: Any, where: str, cpu_any: bool = False) -> int | None:
            if cpu_any and name == "cpu":
                if cluster.cpus == 0:
                    raise ParameterError(f"constraints: {where} asks for a CPU core, but the cluster has none.")
                return None
            if name not in device_of:
                raise ParameterError(f"constraints: {where} names device {name!r}; the cluster's devices are "
                                     f"{names}{' (or cpu for any CPU core)' if cpu_any else ''}.")
            return device_of[name]

        pins = {node(ref, f"pin[{ref!r}]"): device(d, f"pin[{ref!r}]", cpu_any=True) for ref, d in self.pin.items()}
        forbidden = {}
        for ref, devices in self.forbid.items():
            forbidden.setdefault(node(ref, f"forbid[{ref!r}]"), set()).update(
                device(d, f"forbid[{ref!r}]") for d in devices)
        together = [(node(a, f"together {(a, b)}"), node(b, f"together {(a, b)}")) for a, b in self.together]
        no_cut = [(node(a, f"no_cut {(a, b)}"), node(b, f"no_cut {(a, b)}")) for a, b in self.no_cut]
        edges = set(zip(graph.src.tolist(), graph.dst.tolist()))
        for (a, b), (ref_a, ref_b) in zip(no_cut, self.no_cut, strict=True):
            if (a, b) not in edges and (b, a) not in edges:
                raise ParameterError(f"constraints: no_cut {(ref_a, ref_b)} names two nodes with no edge between "
                                     "them; keep them on one device with 'together'.")
        k = cluster.accelerators
        if self.max_stages is not None and (isinstance(self.max_stages, bool) or not isinstance(self.max_stages, int)
                                            or self.max_stages < 1):
            raise ParameterError(f"constraints: max_stages must be a positive integer; got {brief(self.max_stages)}.")
        reserve = np.asarray(self.reserve, dtype=np.float64) if np.ndim(self.reserve) else np.full(
            k, _number(self.reserve))
        if reserve.shape != (k,) or not np.all(np.isfinite(reserve) & (reserve >= 0)):
            raise ParameterError(f"constraints: reserve must be a non-negative number or one per accelerator ({k}); "
                                 f"got {brief(self.reserve)}.")
        short = np.flatnonzero(reserve > cluster.memory)
        if short.size:
            d = int(short[0])
            raise ParameterError(f"constraints: the reserve of {reserve[d]:.6g} bytes on {names[d]} is more than its "
                                 f"memory ({cluster.memory[d]:.6g} bytes).")
        for i, d in pins.items():
            if d is not None and d in forbidden.get(i, ()):
                raise ParameterError(f"constraints: {graph.describe(i)} is pinned to {names[d]} and forbidden it.")
        return Resolved(self, pins, forbidden, together, no_cut, reserve)

    def lower(self, graph: Graph, cluster: Cluster) -> tuple[Graph, Cluster]:
        """The graph and cluster whose placements are exactly those that satisfy the constraints, but for
        the device rules (:meth:`device_rules`): classes merged, CPU pins made CPU-only, memory reserved,
        and ``max_stages`` of identical accelerators kept."""
        r = self.resolved(graph, cluster)
        merged = _merged_classes(graph, [*r.together, *r.no_cut])
        cpu_only = {i for i, d in r.pins.items() if d is None}
        nodes = [graph.node(i) for i in range(graph.n)]
        nodes = [dataclasses.replace(v, color=int(merged[i]), acc_time=None if i in cpu_only else v.acc_time)
                 for i, v in enumerate(nodes)]
        lowered = Graph(nodes, graph.edges())
        memory = cluster.memory - r.reserve
        k = cluster.accelerators
        if self.max_stages is not None and self.max_stages < k and _identical(memory, cluster):
            k = self.max_stages
        lowered_cluster = Cluster(k, memory[:k], cluster.cpus, cluster.speed[:k],
                                  cluster.machines if k == cluster.accelerators else 1, cluster.inter_machine_cost)
        return lowered, lowered_cluster

    def lowering(self, graph: Graph, cluster: Cluster, *, ordered: bool = False) -> Lowering:
        """The problem to solve instead, and how its placements map back (:class:`Lowering`).

        Beyond :meth:`lower`: pins to one device that all name the same CPU core, or the same
        accelerator of a cluster without CPU cores, merge the pinned nodes into one class (CPU-only for
        a core), and the solved placement is renamed so that class is on that device. That is exact
        while those devices are interchangeable and their order means nothing (``ordered``: a pipeline
        schedule's stages are the accelerators in index order). ``unheld`` says what only the methods
        that hold device rules hold (None: every method holds all of it); then the lowering keeps every
        device where it is (no accelerator left out, none renamed) and states those rules in ``rules``.
        """
        r = self.resolved(graph, cluster)
        k = cluster.accelerators
        fixed = {i: d for i, d in r.pins.items() if d is not None}
        on_accelerators = {d for d in fixed.values() if d < k}
        on_cores = {d for d in fixed.values() if d >= k}
        unheld = None
        if r.forbidden:
            unheld = "forbidden devices"
        elif len(on_accelerators) > 1 or len(on_cores) > 1:
            unheld = "pins to two different accelerators (or CPU cores)"
        elif on_accelerators and (cluster.cpus > 0 or ordered or not _identical(cluster.memory - r.reserve, cluster)):
            unheld = ("a pin to one accelerator under a pipeline schedule" if ordered else
                      "a pin to one accelerator of a cluster with CPU cores" if cluster.cpus > 0 else
                      "a pin to one accelerator of accelerators that differ")
        elif self.stage_rule(graph, cluster) is not None:
            unheld = "max_stages on accelerators that differ"
        ids = graph.ids.tolist()
        if unheld is not None:
            return self._ruled(graph, cluster, r, unheld)
        groups = [sorted(i for i, d in fixed.items() if d in devices) for devices in (on_accelerators, on_cores)]
        held = dataclasses.replace(
            self, forbid={}, pin={ids[i]: "cpu" for i, d in r.pins.items() if d is None or d >= k},
            together=[*r.together, *((group[0], i) for group in groups for i in group[1:])], no_cut=r.no_cut)
        # the pairs above are positions: name the nodes by id for lower()
        held = dataclasses.replace(held, together=[(ids[a], ids[b]) for a, b in held.together],
                                   no_cut=[(ids[a], ids[b]) for a, b in held.no_cut])
        lowered_graph, lowered_cluster = held.lower(graph, cluster)
        anchors = [(group[0], fixed[group[0]]) for group in groups if group]
        return Lowering(lowered_graph, lowered_cluster, cluster, anchors, None)

    def _ruled(self, graph: Graph, cluster: Cluster, r: Resolved, unheld: str) -> Lowering:
        """The lowering that keeps every device where it is and states the device rules (:meth:`lowering`).

        Pins to one CPU core, where no rule names a core otherwise, are still lowered (the pinned nodes
        one CPU-only class, the core renamed at the end), so that the rules leave the cores interchangeable.
        """
        k, ids = cluster.accelerators, graph.ids.tolist()
        on_cores = sorted(i for i, d in r.pins.items() if d is not None and d >= k)
        lowered_cores = (len({r.pins[i] for i in on_cores}) == 1
                         and not any(d >= k for devices in r.forbidden.values() for d in devices))
        moved = set(on_cores) if lowered_cores else set()
        held = dataclasses.replace(
            self, forbid={}, max_stages=None,
            pin={ids[i]: "cpu" for i, d in r.pins.items() if d is None or i in moved},
            together=[(ids[a], ids[b]) for a, b in [*r.together, *((on_cores[0], i) for i in on_cores[1:] if moved)]],
            no_cut=[(ids[a], ids[b]) for a, b in r.no_cut])
        lowered_graph, lowered_cluster = held.lower(graph, cluster)
        rules = DeviceRules(unheld, self.device_rules(graph, cluster, leave=moved),
                            self.max_stages if self.max_stages is not None and self.max_stages < k else None)
        anchors = [(on_cores[0], int(r.pins[on_cores[0]]))] if moved else []
        return Lowering(lowered_graph, lowered_cluster, cluster, anchors, unheld, rules)

    def device_rules(self, graph: Graph, cluster: Cluster, leave: Iterable[int] = ()) -> np.ndarray | None:
        """``allowed[i, d]``: whether node ``i`` may go on device ``d`` under the pins to one device and the
        forbidden devices (None: there are none), but for the pins of the nodes at the positions ``leave``.
        ``max_stages`` on a cluster whose accelerators differ is a rule of its own, :meth:`stage_rule`."""
        r = self.resolved(graph, cluster)
        left = set(leave)
        fixed = {i: d for i, d in r.pins.items() if d is not None and i not in left}
        if not fixed and not r.forbidden:
            return None
        allowed = np.ones((graph.n, cluster.num_devices), dtype=bool)
        for i, d in fixed.items():
            allowed[i] = False
            allowed[i, d] = True
        for i, devices in r.forbidden.items():
            allowed[i, sorted(devices)] = False
        return allowed

    def stage_rule(self, graph: Graph, cluster: Cluster) -> int | None:
        """``max_stages`` where lowering cannot hold it (accelerators that differ once the reserve is
        taken, or on two levels); None otherwise."""
        if self.max_stages is None or self.max_stages >= cluster.accelerators:
            return None
        memory = cluster.memory - self.resolved(graph, cluster).reserve
        return None if _identical(memory, cluster) else self.max_stages


@dataclass(frozen=True)
class Lowering:
    """A constrained problem as the model's own (:meth:`Constraints.lowering`): solve ``graph`` on
    ``cluster``, then :meth:`restore` the placement to the stated cluster's devices."""

    graph: Graph
    cluster: Cluster
    stated_cluster: Cluster
    anchors: list[tuple[int, int]]  # (a pinned node's position, its device in the stated cluster)
    unheld: str | None
    rules: DeviceRules | None = None

    def restore(self, device: np.ndarray) -> np.ndarray:
        """A placement of the lowered problem on the stated cluster: the CPU cores renumbered past the
        accelerators left out by ``max_stages``, then each pinned class's device swapped with its pin."""
        k, stated_k = self.cluster.accelerators, self.stated_cluster.accelerators
        out = np.where(device >= k, device + (stated_k - k), device)
        for i, target in self.anchors:
            here = int(out[i])
            if here != target:
                out = np.where(out == here, target, np.where(out == target, here, out))
        return out

    def lowered(self, device: np.ndarray) -> np.ndarray | None:
        """A stated placement as one of the lowered problem (a warm start), or None when it uses an
        accelerator the lowered cluster leaves out."""
        k, stated_k = self.cluster.accelerators, self.stated_cluster.accelerators
        if np.any((device >= k) & (device < stated_k)):
            return None
        return np.where(device >= stated_k, device - (stated_k - k), device)


@dataclass(frozen=True)
class DeviceRules:
    """The constraints lowering cannot hold, as a method that holds them reads them.

    ``allowed[i, d]``: node ``i`` may go on device ``d`` (None: every node anywhere); ``max_stages``: at
    most this many accelerators in use (None: no such limit); ``what``: the rules in words, for the
    message of a method that refuses them.

    >>> rules = DeviceRules("forbidden devices", np.array([[True, False, True], [True, True, True]]), None)
    >>> [group.tolist() for group in rules.refine([np.arange(2)])]  # node 0 tells acc0 and acc1 apart
    [[0], [1]]
    >>> rules.unit_allowed(np.array([0, 0]), 1).tolist()  # one unit of both nodes
    [[True, False, True]]
    """

    what: str
    allowed: np.ndarray | None
    max_stages: int | None

    def unit_allowed(self, unit: np.ndarray, units: int) -> np.ndarray:
        """``(units, devices)``: every node of the unit may go on the device (``unit``: each node's unit)."""
        if self.allowed is None:
            raise ValueError("unit_allowed: these rules allow every device")
        out = np.ones((units, self.allowed.shape[1]), dtype=bool)
        np.logical_and.at(out, unit, self.allowed)
        return out

    def refine(self, groups: Iterable[np.ndarray]) -> list[np.ndarray]:
        """Each group of interchangeable devices split where the rules tell its devices apart (a node allowed
        on one and not the other): the parts are interchangeable under the rules too, in the groups' order."""
        parts: list[np.ndarray] = []
        for group in groups:
            group = np.asarray(group, dtype=np.int64)
            if self.allowed is None or len(group) < 2:
                parts.append(group)
                continue
            _, first, inverse = np.unique(self.allowed[:, group].T, axis=0, return_index=True, return_inverse=True)
            inverse = inverse.reshape(-1)
            parts += [group[inverse == t] for t in np.argsort(first, kind="stable")]
        return parts

    def ruled(self) -> np.ndarray | None:
        """The nodes whose devices the rules restrict (None: no rule names a node's devices)."""
        return None if self.allowed is None else ~np.all(self.allowed, axis=1)

    def tells_cpus_apart(self, accelerators: int) -> bool:
        """Some node may go on one CPU core and not another."""
        if self.allowed is None:
            return False
        cores = self.allowed[:, accelerators:]
        return bool(cores.size) and not bool(np.all(cores == cores[:, :1]))

    def broken_by(self, device: np.ndarray, accelerators: int) -> bool:
        """The placement breaks a rule."""
        device = np.asarray(device, dtype=np.int64)
        if self.allowed is not None and not np.all(self.allowed[np.arange(len(device)), device]):
            return True
        return self.max_stages is not None and len(np.unique(device[device < accelerators])) > self.max_stages


@dataclass(frozen=True)
class Resolved:
    """Constraints with nodes as positions and devices as numbers (``pins``: None for any CPU core)."""

    stated: Constraints
    pins: dict[int, int | None]
    forbidden: dict[int, set[int]]
    together: list[tuple[int, int]]
    no_cut: list[tuple[int, int]]
    reserve: np.ndarray


def _identical(memory: np.ndarray, cluster: Cluster) -> bool:
    """The accelerators are interchangeable: one memory size (``memory``), one speed, one level."""
    return bool(np.all(memory == memory[0]) and np.all(cluster.speed == cluster.speed[0])) and not cluster.is_two_level


def _merged_classes(graph: Graph, pairs: Iterable[tuple[int, int]]) -> np.ndarray:
    """Each node's colour class once the classes of every pair are one (a class label per node)."""
    parent = list(range(int(graph.color.max(initial=-1)) + 1))

    def root(c: int) -> int:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for a, b in pairs:
        ra, rb = root(int(graph.color[a])), root(int(graph.color[b]))
        parent[max(ra, rb)] = min(ra, rb)
    return np.array([root(int(c)) for c in graph.color], dtype=np.int64)


def _positions(graph: Graph) -> dict[Any, int]:
    """Node id -> position, and node name -> position for the names that are not an id's digits."""
    position: dict[Any, int] = {}
    for i, name in enumerate(graph.names):
        position.setdefault(name, i)
    position.update({int(node_id): i for i, node_id in enumerate(graph.ids.tolist())})
    return position


def _as_id(ref: Any) -> Any:
    if isinstance(ref, bool):
        return ref
    if isinstance(ref, (int, np.integer)):
        return int(ref)
    if isinstance(ref, str) and ref.lstrip("-").isdigit():
        return int(ref)
    return ref


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _listed(value: Any, where: str) -> list:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ParameterError(f"{where} must be a list; got {brief(value)}.")
    return list(value)


def _pair(value: Any, where: str) -> tuple[Any, Any]:
    pair = _listed(value, where)
    if len(pair) != 2:
        raise ParameterError(f"{where} holds pairs of nodes; got {brief(value)}.")
    return pair[0], pair[1]
