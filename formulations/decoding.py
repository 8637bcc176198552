"""A built max-load IP (:class:`ThroughputIP`) and the way between its values and placements.

``decode`` turns a solution's values into a device per node; ``encode`` turns a placement into a
complete solution (the warm start), renamed the way the IP's symmetry handling requires.
Builders: :func:`~.throughput.contiguous_ip` (space ``"chain"``, variables ``w, c, a, p, e, L``,
plus ``h`` on typed clusters and ``rho`` with replication) and :func:`~.noncontiguous.noncontiguous_ip`
(space ``"any"``, variables ``y, e, L``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.constraints import DeviceRules
from exactplace.core.graph import Graph
from exactplace.evaluators.feasibility import check_feasibility
from exactplace.evaluators.max_load import device_loads

from .model import Model
from .units import UnitData, interchangeable_sets, typed_accelerators

__all__ = ["ThroughputIP"]


@dataclass
class ThroughputIP:
    """A built max-load IP: the model, and how to go between its values and device arrays."""

    model: Model
    space: str
    graph: Graph
    cluster: Cluster
    data: UnitData
    overlap: bool
    gpipe: bool
    index: dict[str, np.ndarray] = field(default_factory=dict)
    bound_slack: float = 0.0
    """What the model may overstate an objective by (none: its loads are exact)."""
    rules: DeviceRules | None = None
    """The device rules it holds: devices they tell apart are of different types, never renamed into each other."""

    def objective_vars(self) -> np.ndarray:
        """The load variables the objective sums (``L``, or ``LF, LB`` with gpipe)."""
        return self.index["L"].reshape(-1)

    # -- decoding ---------------------------------------------------------------------------
    def decode(self, values: np.ndarray) -> np.ndarray:
        """Device of every node position from a solution's values."""
        if self.space == "any":
            unit_device = np.argmax(values[self.index["y"]], axis=1)
        else:
            unit_device = self._chain_devices(values)
        return unit_device.astype(np.int64)[self.data.unit]

    def _chain_devices(self, values: np.ndarray) -> np.ndarray:
        """Each unit's device: the position of the first ideal holding it; accelerator positions take the
        accelerators in chain order (of their type, when typed), CPU positions the CPU cores."""
        k = self.cluster.accelerators
        w = values[self.index["w"]] > 0.5                      # (U, P)
        position = np.argmax(w, axis=1)                         # first ideal holding the unit
        is_cpu = values[self.index["c"]] > 0.5                  # (P,)
        device_of_position = np.empty(len(is_cpu), dtype=np.int64)
        if "h" in self.index:  # typed positions: each takes the next accelerator of its type
            kind = np.argmax(values[self.index["h"]], axis=1)
            for t, group in enumerate(typed_accelerators(self.cluster, self.rules)[0]):
                mine = np.flatnonzero(~is_cpu & (kind == t))
                device_of_position[mine] = group[:len(mine)]
        else:
            device_of_position[~is_cpu] = np.arange(int((~is_cpu).sum()))
        device_of_position[is_cpu] = k + np.arange(int(is_cpu.sum()))
        return device_of_position[position]

    def decode_replicas(self, values: np.ndarray) -> np.ndarray | None:
        """Replicas of every accelerator (1 when unused), as :meth:`decode` numbers them; None without replication."""
        if "rho" not in self.index:
            return None
        is_cpu = values[self.index["c"]] > 0.5
        chosen = np.argmax(values[self.index["rho"]], axis=1)[~is_cpu]  # accelerator positions, in chain order
        replicas = np.ones(self.cluster.accelerators, dtype=np.int64)
        replicas[:len(chosen)] = np.maximum(chosen, 1)
        return replicas

    # -- encoding (warm starts) --------------------------------------------------------------
    def encode(self, device: np.ndarray, replicas: np.ndarray | None = None) -> np.ndarray | None:
        """Model values for a placement (with ``replicas``, for an IP built with replication: none reads
        as 1 each), or None when it lies outside this IP's space."""
        graph, cluster, data = self.graph, self.cluster, self.data
        replicated = "rho" in self.index
        if check_feasibility(graph, cluster, device, replicas=replicas if replicated else None):
            return None
        unit_device = np.full(data.units, -1, dtype=np.int64)
        unit_device[data.unit] = device
        if np.any(unit_device[data.unit] != device):
            return None  # a unit split over devices
        values = np.zeros(self.model.num_vars)
        if self.space == "any":
            slot_of_unit, acc_slots = self._encode_assignment(values, device, unit_device), cluster.accelerators
        else:
            slot_of_unit, acc_slots = self._encode_chain(values, device, unit_device, replicas), cluster.num_devices
            if slot_of_unit is None:
                return None
        self._encode_crossings(values, slot_of_unit, unit_device < cluster.accelerators, acc_slots)
        loads = device_loads(graph, cluster, device, overlap=self.overlap, replicas=replicas if replicated else None)
        if self.gpipe:
            values[self.index["L"]] = [loads.load(0).max(), loads.load(1).max()]
        else:
            values[self.index["L"]] = loads.load().max()
        return values

    def _encode_assignment(self, values: np.ndarray, device: np.ndarray, unit_device: np.ndarray) -> np.ndarray:
        """Set ``y`` for the units' devices, renamed as the symmetry handling requires; each unit's renamed device."""
        cluster, data = self.cluster, self.data
        k, devices = cluster.accelerators, cluster.num_devices
        rename = np.arange(devices, dtype=np.int64)
        rank = self.index.get("rank", np.zeros(0, np.int64))
        if rank.size:
            # Devices of each interchangeable set ordered by the rank of their heaviest class (empty last),
            # as the symmetry fixings require.
            first = np.full(devices, data.units, dtype=np.int64)
            np.minimum.at(first, unit_device, rank)
            for group in interchangeable_sets(cluster, self.rules):
                rename[group[np.argsort(first[group], kind="stable")]] = group
        else:
            loads = device_loads(self.graph, cluster, device, overlap=self.overlap)
            # Interchangeable accelerators sorted by total load, as the symmetry-breaking rows require.
            key = loads.compute.sum(axis=1)[:k] + loads.comm.sum(axis=1)[:k]
            typed = typed_accelerators(cluster, self.rules)
            for group in [np.arange(k)] if typed is None else typed[0]:
                rename[group[np.argsort(-key[group], kind="stable")]] = group
        renamed = rename[unit_device]
        values[self.index["y"][np.arange(data.units), renamed]] = 1.0
        return renamed

    def _encode_chain(self, values: np.ndarray, device: np.ndarray, unit_device: np.ndarray,
                      replicas: np.ndarray | None) -> np.ndarray | None:
        """Set ``w, c, a, p`` (``h``, ``rho``) for the devices in data-flow order; each unit's position, or None
        when the devices feed each other in a cycle."""
        cluster, index = self.cluster, self.index
        k, devices = cluster.accelerators, cluster.num_devices
        order = _device_chain(index["edges"], unit_device, devices)
        if order is None:
            return None
        position = np.empty(devices, dtype=np.int64)
        position[order] = np.arange(devices)
        position_of_unit = position[unit_device]
        values[index["w"]] = np.arange(devices)[None, :] >= position_of_unit[:, None]
        values[index["c"]] = np.asarray(order) >= k
        on_acc = unit_device < k
        if "h" in index:  # typed positions: the type of the accelerator at each one
            type_of = np.empty(k, dtype=np.int64)
            for t, group in enumerate(typed_accelerators(cluster, self.rules)[0]):
                type_of[group] = t
            accelerators = np.arange(k)
            values[index["h"][position[accelerators], type_of[accelerators]]] = 1.0
            units = np.flatnonzero(on_acc)
            values[index["a"][type_of[unit_device[units]], units, position_of_unit[units]]] = 1.0
        else:
            values[index["a"][on_acc, position_of_unit[on_acc]]] = 1.0
        values[index["p"][~on_acc, position_of_unit[~on_acc]]] = 1.0
        if "rho" in index:  # each accelerator position's replicas (0: empty position)
            used = np.zeros(k, dtype=bool)
            used[device[device < k]] = True
            reps = np.ones(k, dtype=np.int64) if replicas is None else np.asarray(replicas, dtype=np.int64)
            values[index["rho"][position[np.arange(k)], np.where(used, reps, 0)]] = 1.0
        return position_of_unit

    def _encode_crossings(self, values: np.ndarray, slot_of_unit: np.ndarray, on_acc: np.ndarray,
                          acc_slots: int) -> None:
        """Set ``e[g, slot] = 1`` where group ``g`` crosses that accelerator slot's boundary."""
        data, e = self.data, self.index["e"]
        if not e.size:
            return
        src_slot = np.where(on_acc[data.group_source], slot_of_unit[data.group_source], -1)
        tgt = data.pair_target
        tgt_slot = np.where(on_acc[tgt], slot_of_unit[tgt], -1)
        src_of_pair = src_slot[data.pair_group]
        crossing = slot_of_unit[tgt] != slot_of_unit[data.group_source[data.pair_group]]
        for slot_array in (tgt_slot, src_of_pair):
            hit = crossing & (slot_array >= 0) & (slot_array < acc_slots)
            values[e[data.pair_group[hit], slot_array[hit]]] = 1.0


def _device_chain(edges: np.ndarray, unit_device: np.ndarray, devices: int) -> list[int] | None:
    """Devices in an order where every unit edge goes forward (None if the devices form a cycle)."""
    quotient = nx.DiGraph()
    quotient.add_nodes_from(range(devices))
    a, b = unit_device[edges[:, 0]], unit_device[edges[:, 1]]
    quotient.add_edges_from(zip(a[a != b].tolist(), b[a != b].tolist()))
    try:
        return list(nx.lexicographical_topological_sort(quotient))
    except nx.NetworkXUnfeasible:
        return None
