"""DPL's chain DP (dp_native/chain.hpp) against the general DP on the linearized graph.

The general DP over the ideals of ``linearize(contraction)`` is how DPL was computed before
the chain DP; both must give the same optimum (up to rounding) on every published workload
and on random graphs, training graphs, overlap and memory caps included.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from checks import close
from hypothesis import given
from hypothesis import strategies as st
from strategies import any_graphs, clusters

from exactplace import Cluster, Graph, Node, Status, read_workload, solve
from exactplace.core.contraction import contract, dfs_topological_order, linearize

pytest.importorskip("exactplace._native")

from exactplace.native import load, request


def _both(graph: Graph, cluster: Cluster, overlap: bool = False) -> tuple[object, object]:
    """(chain DP, general DP on the linearized units) for the same order and cluster."""
    native = load()
    c = contract(graph, cluster.memory_cap)
    order = dfs_topological_order(c.num_units, c.src, c.dst)
    common = dict(
        units=c.num_units, cpu_time=c.cpu_time, acc_time=c.acc_time, memory=c.memory, supported=c.supported,
        group_cost=c.group_cost, group_source=c.group_source, group_ptr=c.group_ptr, group_target=c.group_target,
        accelerators=cluster.accelerators, cpus=cluster.cpus, memory_cap=cluster.memory_cap, overlap=overlap,
    )
    chain = native.solve(request(edge_src=c.src, edge_dst=c.dst, order=order, **common))
    lin = linearize(c)
    general = native.solve(request(edge_src=lin.src, edge_dst=lin.dst, **common))
    return chain, general


def _agree(chain: object, general: object) -> None:
    native = load()
    assert chain.status == general.status
    if general.status is native.Status.optimal:
        assert close(chain.value, general.value), (chain.value, general.value)


@given(graph=any_graphs(), cluster=clusters(), overlap=st.booleans())
def test_chain_dp_equals_general_dp_on_random_graphs(graph: Graph, cluster: Cluster, overlap: bool) -> None:
    _agree(*_both(graph, cluster, overlap))


def _published() -> list[Path]:
    root = Path(__file__).parents[1] / ".." / "shared" / "workloads" / "throughput"
    return sorted(root.resolve().glob("*.json")) if root.resolve().is_dir() else []


@pytest.mark.parametrize("path", _published(), ids=lambda p: p.stem)
@pytest.mark.parametrize("overlap", [False, True])
def test_chain_dp_equals_general_dp_on_published_workloads(path: Path, overlap: bool) -> None:
    w = read_workload(path)
    _agree(*_both(w.graph, w.cluster, overlap))


def test_dpl_runs_a_long_chain_and_keeps_its_devices() -> None:
    """A 3,000-node chain with varied costs: dpl's value equals the general DP's, and the evaluator agrees."""
    rng = np.random.default_rng(7)
    n = 3000
    nodes = [Node(i, float(rng.integers(1, 9)), float(rng.integers(1, 5)), memory=1.0, comm=float(rng.integers(0, 3)))
             for i in range(n)]
    graph = Graph(nodes, [(i, i + 1) for i in range(n - 1)])
    cluster = Cluster(accelerators=4, memory=900.0, cpus=2)
    chain, general = _both(graph, cluster)
    _agree(chain, general)
    placement = solve(graph, cluster, method="dpl")
    assert close(placement.objective, general.value)
    # The exact DP on a graph whose ideals are its prefixes is the same problem: same value, proved optimal.
    exact = solve(graph, cluster, method="dp")
    assert exact.status is Status.OPTIMAL and exact.info["ideals"] == n + 1
    assert close(exact.objective, general.value) and exact.bound == exact.objective


def test_more_devices_than_units_are_clamped_internally() -> None:
    """10**6 accelerators and CPUs on a 3-node graph: sized by the graph, CPUs renumbered back."""
    graph = Graph([Node(i, 1.0, None if i == 1 else 1.0) for i in range(3)], [(0, 1), (1, 2)])
    for method in ("dp", "dpl"):
        p = solve(graph, Cluster(10**6, memory=10.0, cpus=10**6), method=method)
        assert p.has_solution and p.objective == 1.0
        assert p.device[1] >= 10**6  # the unsupported node is on a CPU, numbered after every accelerator


def test_chain_request_rejects_a_bad_order() -> None:
    native = load()
    base = dict(units=2, cpu_time=[1.0, 1.0], acc_time=[1.0, 1.0], memory=[0.0, 0.0], supported=[1, 1],
                edge_src=[0], edge_dst=[1], accelerators=1, cpus=1)
    with pytest.raises(ValueError, match="backwards"):
        native.solve(request(order=[1, 0], **base))
    with pytest.raises(ValueError, match="every unit once"):
        native.solve(request(order=[0, 0], **base))
    out = native.solve(request(order=[0, 1], **base))
    assert out.status == native.Status.optimal and out.value == 1.0 and math.isfinite(out.value)
