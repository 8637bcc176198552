"""The native DP's cutoff (``Options::cutoff``): the optimum is unchanged by any cutoff above it.

``dp`` passes DPL's load (a little more) as the cutoff: stages at or above it are never tried,
and an ideal is skipped when a lower bound (its units' least times, and without communication
the devices its covers need) shows that no split below the cutoff passes through it. The brute
force of test_dp checks ``dp`` on tiny graphs; here the native core with a cutoff is checked
against itself without one on graphs of up to 14 units, too large for the brute force but with
thousands of ideals, branchy enough for the skipping to matter. Communication is often zero (the
only case in which a cover's device count is inherited).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactplace import Cluster, Graph, Node, Status, solve
from exactplace.core.contraction import contract
from exactplace.methods import dp as dp_module
from exactplace.native import load, request

pytest.importorskip("exactplace._native")


@st.composite
def branchy(draw: st.DrawFn) -> tuple[Graph, bool]:
    """A random DAG of 6 to 14 nodes (a node takes inputs from up to 3 earlier ones), and whether
    it communicates; some nodes unsupported on accelerators, CPUs 1 to 40 times slower, or faster
    (even free: with no CPU in the cluster, CPU times must not matter)."""
    n = draw(st.integers(6, 14))
    free = draw(st.booleans())
    slow = draw(st.sampled_from([1.0, 3.0, 10.0]))  # CPUs at least this much slower (device_capacity)
    times = st.integers(0, 40).map(lambda x: x / 4)
    nodes, edges = [], []
    for i in range(n):
        acc = draw(times)
        supported = draw(st.integers(0, 9)) > 0
        nodes.append(Node(i, cpu_time=acc * slow * draw(st.sampled_from([0.0, 0.25, 1.0, 1.5, 4.0])),
                          acc_time=acc if supported else None, memory=draw(times),
                          comm=0.0 if free else draw(times)))
        if i:
            edges.extend((j, i) for j in set(draw(st.lists(st.integers(max(0, i - 6), i - 1), min_size=0,
                                                           max_size=3))))
    return Graph(nodes, edges), not free


def native(graph: Graph, cluster: Cluster, cutoff: float, overlap: bool, threads: int = 1,
           sync: np.ndarray | None = None):
    """The native core on the graph's units, one accelerator type per distinct (memory, speed); with
    ``sync`` (per unit), the DP with replicated stages on a homogeneous cluster."""
    units = contract(graph)
    if sync is None:
        types = dp_module.accelerator_types(cluster, units.num_units)
        devices = {"accelerators": sum(types.counts), "memory_cap": float(types.memory.min()),
                   "type_count": types.counts, "type_memory": types.memory, "type_speed": types.speed}
    else:  # every accelerator (replicas may outnumber the units), one type
        devices = {"accelerators": cluster.accelerators, "memory_cap": cluster.memory_cap, "replication": True,
                   "sync": sync}
    return load().solve(request(
        units=units.num_units, cpu_time=units.cpu_time, acc_time=units.acc_time, memory=units.memory,
        supported=units.supported, edge_src=units.src, edge_dst=units.dst, group_cost=units.group_cost,
        group_source=units.group_source, group_ptr=units.group_ptr, group_target=units.group_target,
        cpus=min(cluster.cpus, units.num_units), overlap=overlap, cutoff=cutoff, threads=threads, **devices,
    ))


@settings(max_examples=300, deadline=None)
@given(branchy(), st.integers(1, 6), st.integers(0, 2), st.sampled_from([math.inf, 6.0, 15.0]),
       st.booleans(), st.booleans(), st.data())
def test_any_cutoff_above_the_optimum_keeps_it(
    instance: tuple[Graph, bool], k: int, cpus: int, memory: float, overlap: bool, typed: bool, data: st.DataObject
) -> None:
    graph, _ = instance
    speed = data.draw(st.lists(st.sampled_from([1.0, 2.0]), min_size=k, max_size=k)) if typed else 1.0
    cluster = Cluster(accelerators=k, memory=memory, cpus=cpus, speed=speed)
    plain = native(graph, cluster, math.inf, overlap)
    if plain.status != load().Status.optimal:
        assert native(graph, cluster, 1.0, overlap).status == plain.status
        return
    value = plain.value
    above = [math.nextafter(value, math.inf), value * 1.02 + 1e-9, value * 1.5 + 1.0]
    threads = data.draw(st.sampled_from([1, 2]))  # 2: covers and sub-ideals may be in flight (over 256 ideals)
    for cutoff in above:
        cut = native(graph, cluster, cutoff, overlap, threads)
        assert cut.status == load().Status.optimal
        assert cut.value == pytest.approx(value, rel=1e-12, abs=1e-12)
    if value > 0:  # nothing below the optimum: infeasible, not a worse split
        for cutoff in (value, value * 0.9):
            assert native(graph, cluster, cutoff, overlap).status == load().Status.infeasible


def test_free_cpu_times_do_not_skip_ideals_on_a_cluster_without_cpus() -> None:
    """A unit with no CPU time once made the CPU side's capacity infinite; 0 CPUs times infinity is NaN,
    and every ideal failed the skipping test: the split {0}, {1} (load 0.5) was lost for one device (0.75)."""
    graph = Graph([Node(0, cpu_time=0.0, acc_time=0.5), Node(1, cpu_time=0.0, acc_time=0.25)], [(0, 1)])
    for speed in ([1.0, 0.5], [0.5, 1.0]):
        cluster = Cluster(accelerators=2, cpus=0, speed=speed)
        for cutoff in (math.inf, 1.000001):
            out = native(graph, cluster, cutoff, False)
            assert out.status == load().Status.optimal and out.value == 0.5 and out.skipped == 0
        assert solve(graph, cluster, method="dp").objective == 0.5


@settings(max_examples=150, deadline=None)
@given(branchy(), st.integers(1, 5), st.integers(0, 2), st.sampled_from([math.inf, 15.0]), st.data())
def test_replicated_dp_keeps_its_optimum_under_any_cutoff_above_it(
    instance: tuple[Graph, bool], k: int, cpus: int, memory: float, data: st.DataObject
) -> None:
    """The DP with replicated stages searches below the cutoff too (its walks' thresholds start there)."""
    graph, _ = instance
    cluster = Cluster(accelerators=k, memory=memory, cpus=cpus)
    units = contract(graph).num_units
    sync = np.array(data.draw(st.lists(st.integers(0, 20).map(lambda x: x / 4), min_size=units, max_size=units)))
    plain = native(graph, cluster, math.inf, False, sync=sync)
    if plain.status != load().Status.optimal:
        assert native(graph, cluster, 1.0, False, sync=sync).status == plain.status
        return
    for cutoff in (math.nextafter(plain.value, math.inf), plain.value * 1.02 + 1e-9, plain.value * 1.5 + 1.0):
        cut = native(graph, cluster, cutoff, False, sync=sync)
        assert cut.status == load().Status.optimal
        assert cut.value == pytest.approx(plain.value, rel=1e-12, abs=1e-12)
        assert cut.pairs <= plain.pairs
    if plain.value > 0:
        for cutoff in (plain.value, plain.value * 0.9):
            assert native(graph, cluster, cutoff, False, sync=sync).status == load().Status.infeasible


@settings(max_examples=100, deadline=None)
@given(branchy(), st.integers(2, 6), st.integers(0, 1), st.booleans())
def test_dp_with_dpl_cutoff_equals_dp_without(instance: tuple[Graph, bool], k: int, cpus: int, overlap: bool) -> None:
    """Through ``solve``: DPL's cutoff changes neither the value nor the status."""
    graph, _ = instance
    cluster = Cluster(accelerators=k, cpus=cpus)
    exact = solve(graph, cluster, method="dp", overlap=overlap)
    plain = native(graph, cluster, math.inf, overlap)
    if plain.status == load().Status.infeasible:
        assert exact.status is Status.INFEASIBLE
        return
    assert exact.status is Status.OPTIMAL and exact.gap == 0.0
    assert exact.objective == pytest.approx(plain.value, rel=1e-9)
    if "cutoff" in exact.info:
        assert exact.info["cutoff"] >= exact.objective
        assert 0 <= exact.info["skipped"] < exact.info["ideals"]


def test_cutoff_skips_ideals_of_a_branchy_graph_without_communication() -> None:
    """Four parallel chains of 5 (1,298 ideals) on 4 accelerators: most ideals are skipped."""
    nodes = [Node(0, cpu_time=8.0, acc_time=1.0)]
    edges = []
    for b in range(4):
        previous = 0
        for j in range(5):
            node_id = len(nodes)
            nodes.append(Node(node_id, cpu_time=8.0, acc_time=1.0 + (b * 5 + j) % 3))
            edges.append((previous, node_id))
            previous = node_id
        edges.append((previous, 21))
    nodes.append(Node(21, cpu_time=8.0, acc_time=1.0))
    graph = Graph(nodes, edges)
    cluster = Cluster(accelerators=4, cpus=0)
    plain = native(graph, cluster, math.inf, False)
    cut = native(graph, cluster, math.nextafter(plain.value, math.inf), False)
    assert cut.value == plain.value and cut.ideals == plain.ideals
    assert cut.skipped > plain.ideals // 2 and cut.pairs < plain.pairs // 2
    shared = native(graph, cluster, math.nextafter(plain.value, math.inf), False, threads=2)
    assert shared.threads == 2 and shared.value == plain.value  # the skipped ideals' counts cross threads
    placement = solve(graph, cluster, method="dp")
    assert placement.objective == pytest.approx(plain.value) and placement.info["skipped"] > 0
    assert np.isfinite(placement.info["cutoff"])


def test_the_cutoff_must_be_positive() -> None:
    with pytest.raises(ValueError, match="cutoff"):
        native(Graph([Node(0, 1.0, 1.0)], []), Cluster(1), 0.0, False)
