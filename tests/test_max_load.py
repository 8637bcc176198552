"""max_load against a naive reference written from the workloads README, and the published expert values.

The reference below follows the README's words literally, one device and one node at a time:

* CPU load = sum of cpuLatency of its nodes (CPUs read RAM: no communication).
* Accelerator load of set S = sum over u outside S with an edge into S of c_u (each u once)
  + sum of fpgaLatency in S (divided by the accelerator's speed)
  + sum over u in S with an edge leaving S of c_u (each u once).
* Per-edge costs: when the edges leaving u have different costs, the README's subdivision
  applies: each distinct cost c of u acts as its own zero-time node colocated with u, so
  "each u once" becomes "each (u, c) once".
* Training: a device's load is FW + BW; a compute term belongs to its node's part, a
  communication term c_u to the part of u (the node whose output moves). GPipe scores
  max FW + max BW; overlap takes max(communication, computation) per device (and per part
  under GPipe).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from checks import close, matches_printed
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import any_graphs, clusters, dags, placed_instances

from exactplace import Cluster, Graph, Node, PlacementError, device_loads, max_load, read_split, read_workload


def naive_device_parts(graph: Graph, cluster: Cluster, device) -> list[dict[bool, tuple[float, float]]]:
    """For every device: {backward flag: (computation, communication)}, straight from the README."""
    nodes = graph.nodes()
    where = {v.id: int(device[i]) for i, v in enumerate(nodes)}
    edges = graph.edges()
    result = []
    for d in range(cluster.num_devices):
        on_accelerator = d < cluster.accelerators
        members = [v for v in nodes if where[v.id] == d]
        inside = {v.id for v in members}
        backward = {v.id: v.backward for v in nodes}
        parts = {}
        for part in (False, True):
            compute = 0.0
            for v in members:
                if v.backward != part:
                    continue
                if on_accelerator:
                    compute += (math.inf if v.acc_time is None else v.acc_time / float(cluster.speed[d]))
                else:
                    compute += v.cpu_time
            paid = set()  # (u, cost): each node once, each distinct cost of a node once (subdivision)
            if on_accelerator:
                for u, w, cost in edges:
                    crosses_in = u not in inside and w in inside
                    crosses_out = u in inside and w not in inside
                    if (crosses_in or crosses_out) and backward[u] == part:
                        paid.add((u, cost))
            communication = sum(cost for _, cost in paid)
            parts[part] = (compute, communication)
        result.append(parts)
    return result


def naive_max_load(graph: Graph, cluster: Cluster, device, *, overlap: bool = False, gpipe: bool = False) -> float:
    """The README's max-load, computed device by device with Python sets."""
    parts = naive_device_parts(graph, cluster, device)

    def load(compute: float, communication: float) -> float:
        return max(compute, communication) if overlap else compute + communication

    if gpipe:
        forward = max(load(*p[False]) for p in parts)
        backward = max(load(*p[True]) for p in parts)
        return forward + backward
    return max(load(p[False][0] + p[True][0], p[False][1] + p[True][1]) for p in parts)


# -- (a) brute-force reference on random instances -----------------------------------------------


@settings(max_examples=150)
@given(placed_instances())
def test_max_load_matches_naive(instance) -> None:
    graph, cluster, device = instance
    assert close(max_load(graph, cluster, device), naive_max_load(graph, cluster, device))


@settings(max_examples=100)
@given(placed_instances(), st.booleans(), st.booleans())
def test_max_load_options_match_naive(instance, overlap: bool, gpipe: bool) -> None:
    graph, cluster, device = instance
    assert close(
        max_load(graph, cluster, device, overlap=overlap, gpipe=gpipe),
        naive_max_load(graph, cluster, device, overlap=overlap, gpipe=gpipe),
    )


@settings(max_examples=60)
@given(placed_instances(heterogeneous=True))
def test_heterogeneous_speed_matches_naive(instance) -> None:
    graph, cluster, device = instance
    assert close(max_load(graph, cluster, device), naive_max_load(graph, cluster, device))


@settings(max_examples=60)
@given(placed_instances())
def test_device_loads_breakdown(instance) -> None:
    graph, cluster, device = instance
    loads = device_loads(graph, cluster, device)
    parts = naive_device_parts(graph, cluster, device)
    for d, p in enumerate(parts):
        for column, part in ((0, False), (1, True)):
            assert close(loads.compute[d, column], p[part][0])
            assert close(loads.comm[d, column], p[part][1])
    k = cluster.accelerators
    expected_memory = [sum(graph.memory[i] for i in range(graph.n) if device[i] == d) if d < k else 0.0
                       for d in range(cluster.num_devices)]
    assert np.allclose(loads.memory, expected_memory)
    frame = loads.to_frame(cluster)
    assert list(frame.index) == cluster.device_names()
    assert np.allclose(frame["load"].to_numpy(), loads.load(), equal_nan=True)


@given(any_graphs(), clusters())
def test_all_on_one_cpu_is_total_cpu_time(graph: Graph, cluster: Cluster) -> None:
    if cluster.cpus == 0:
        return
    device = np.full(graph.n, cluster.accelerators)
    assert close(max_load(graph, cluster, device), float(graph.cpu_time.sum()))


@given(dags(per_edge_costs=False, unsupported=False))
def test_single_accelerator_pays_no_communication(graph: Graph) -> None:
    cluster = Cluster(accelerators=1, cpus=0)
    assert close(max_load(graph, cluster, np.zeros(graph.n, dtype=int)), float(graph.acc_time.sum()))


def test_unsupported_on_accelerator_is_infinite() -> None:
    g = Graph([Node(1, 1.0, None), Node(2, 1.0, 1.0)], [(1, 2)])
    c = Cluster(1, cpus=1)
    assert max_load(g, c, [0, 1]) == math.inf
    assert max_load(g, c, [1, 0]) == 1.0  # cpu0: 1; acc0: 1 (the copy-in of 1's output costs its comm, 0)


def test_per_edge_costs_paid_once_per_distinct_cost_and_receiver() -> None:
    # node 1 sends cost-2 data to 2 and 3, cost-5 data to 4; all on different accelerators
    g = Graph([Node(i, 10.0, 1.0) for i in (1, 2, 3, 4)], [(1, 2, 2.0), (1, 3, 2.0), (1, 4, 5.0)])
    c = Cluster(4, cpus=0)
    loads = device_loads(g, c, [0, 1, 2, 3]).load()
    assert loads.tolist() == [1 + 2 + 5, 1 + 2, 1 + 2, 1 + 5]
    loads = device_loads(g, c, [0, 1, 1, 0]).load()  # one receiver for cost 2; cost 5 stays on acc0
    assert loads.tolist() == [1 + 1 + 2, 2 + 1 + 1, 0, 0]


@given(placed_instances(), st.data())
def test_relabelling_accelerators_does_not_change_max_load(instance, data: st.DataObject) -> None:
    graph, cluster, device = instance
    if not cluster.is_homogeneous:
        return
    perm = data.draw(st.permutations(range(cluster.accelerators)))
    relabelled = np.array([perm[d] if d < cluster.accelerators else d for d in device])
    assert close(max_load(graph, cluster, relabelled), max_load(graph, cluster, device))


@given(any_graphs(), clusters())
def test_bad_placements_raise(graph: Graph, cluster: Cluster) -> None:
    with pytest.raises(PlacementError, match=r"one device per node"):
        max_load(graph, cluster, np.zeros(graph.n + 1, dtype=int))
    device = np.zeros(graph.n, dtype=int)
    device[-1] = cluster.num_devices
    pattern = rf"is placed on device {cluster.num_devices}, but the cluster has devices"
    with pytest.raises(PlacementError, match=pattern):
        max_load(graph, cluster, device)
    device[-1] = -1
    with pytest.raises(PlacementError, match="placed on device -1"):
        max_load(graph, cluster, device)
    with pytest.raises(PlacementError, match="integers"):
        max_load(graph, cluster, np.full(graph.n, 0.5))


@given(placed_instances())
def test_list_and_float_devices_are_accepted(instance) -> None:
    graph, cluster, device = instance
    expected = max_load(graph, cluster, device)
    assert close(max_load(graph, cluster, device.tolist()), expected)
    assert close(max_load(graph, cluster, device.astype(float)), expected)


# -- (b) published expert values ------------------------------------------------------------------


def test_published_expert_value(expert_case) -> None:
    assert expert_case is not None, "reference.csv lists no throughput workload with an expert value"
    workload_path, split_path, published = expert_case
    w = read_workload(workload_path)
    device = read_split(split_path, w.graph, w.cluster)
    value = max_load(w.graph, w.cluster, device)
    assert matches_printed(value, published), f"{value} vs published {published}"
    assert close(naive_max_load(w.graph, w.cluster, device), value)



def test_published_maxload_dp_claims(shared_workloads: Path) -> None:
    """The maxLoad that the reference DP wrote into each *_maxload_dp split (README: not for resnet50)."""
    checked = 0
    for split_path in sorted((shared_workloads / "splits").glob("latency_*_maxload_dp.json")):
        if "resnet50" in split_path.name:  # the README says the reference DP's cross-check disagreed there
            continue
        name = split_path.name.removeprefix("latency_").removesuffix("_maxload_dp.json")
        w = read_workload(shared_workloads / "latency" / f"{name}.json")
        device = read_split(split_path, w.graph, w.cluster)
        claimed = json.loads(split_path.read_text())["maxLoad"]
        assert close(max_load(w.graph, w.cluster, device), claimed), split_path.name
        checked += 1
    assert checked > 0
