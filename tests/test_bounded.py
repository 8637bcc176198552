"""The bounded search over ideals ("bb", exactplace.methods.bounded) against the DP and brute force.

"bb" searches the DP's space (chain splits of the contracted units) with the DP's stage loads,
so on every instance both must agree: same status, same optimum (up to rounding), a bound equal
to the objective. The DP itself is checked against the brute force in tests/test_dp.py; here
the inference graphs are also checked against the brute force directly (tests/oracle.py).
A stopped search returns a split with a proven bound at or below the optimum; with a ``rel_gap``
allowed, a certified split is within it of the optimum and states the bound it proved.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima
from strategies import dags, instances, mixed_clusters, training_graphs

from exactplace import Cluster, Graph, Limit, Node, Status, check_feasibility, max_load, solve
from exactplace.methods import bounded as bounded_module
from exactplace.methods.bounded import BoundedSearch
from exactplace.methods.registry import register, registered_methods

pytest.importorskip("exactplace._native")

if "bb" not in registered_methods():
    register(BoundedSearch)


def check_against_dp(graph: Graph, cluster: Cluster, overlap: bool, brute: bool = False) -> None:
    exact = solve(graph, cluster, method="dp", overlap=overlap)
    found = solve(graph, cluster, method="bb", overlap=overlap, rel_gap=0.0)
    if exact.status is Status.INFEASIBLE:
        assert found.status is Status.INFEASIBLE and found.device is None
        return
    assert exact.status is Status.OPTIMAL
    assert found.status is Status.OPTIMAL
    assert found.objective == pytest.approx(exact.objective, rel=1e-9, abs=1e-9)
    assert found.bound == found.objective and found.gap == 0.0
    assert found.info["search_bound"] <= found.objective * (1 + 1e-9) + 1e-12
    assert check_feasibility(graph, cluster, found.device, space="contiguous") == []
    assert max_load(graph, cluster, found.device, overlap=overlap) == found.objective
    if brute:
        chain = brute_force_optima(graph, cluster, "throughput", overlap=overlap).units
        assert chain is not None and found.objective == pytest.approx(chain, rel=1e-9, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(instances(dags(min_nodes=3), min_accelerators=1), st.booleans())
def test_bb_equals_dp_and_brute_force_on_inference_graphs(instance: tuple[Graph, Cluster], overlap: bool) -> None:
    check_against_dp(*instance, overlap, brute=True)


@settings(max_examples=150, deadline=None)
@given(instances(training_graphs(max_forward=4), min_accelerators=1), st.booleans())
def test_bb_equals_dp_on_training_graphs(instance: tuple[Graph, Cluster], overlap: bool) -> None:
    check_against_dp(*instance, overlap)


@settings(max_examples=150, deadline=None)
@given(st.one_of(dags(min_nodes=2), training_graphs(max_forward=4)), mixed_clusters(), st.booleans())
def test_bb_equals_dp_on_heterogeneous_clusters(graph: Graph, cluster: Cluster, overlap: bool) -> None:
    check_against_dp(graph, cluster, overlap)


@settings(max_examples=50, deadline=None)
@given(instances(), st.booleans())
def test_bb_equals_dp_on_any_instance(instance: tuple[Graph, Cluster], overlap: bool) -> None:
    """Also CPU-only clusters, single nodes and the like."""
    check_against_dp(*instance, overlap)


@st.composite
def assembly_lines(draw: st.DrawFn) -> tuple[Graph, Cluster]:
    """SALBP-2-like instances: identical accelerators (up to one per node), no CPU, free edges, integral or
    real times, unlimited or binding memory: where bb also bounds by bin packing."""
    n = draw(st.integers(2, 8))
    integral = draw(st.booleans())
    times = st.integers(1, 9).map(float) if integral else st.floats(0.1, 9.0, allow_nan=False)
    nodes = [Node(id=v, cpu_time=1.0, acc_time=draw(times), memory=draw(st.sampled_from([0.0, 1.0, 2.0])))
             for v in range(n)]
    edges = [(i, j, 0.0) for i in range(n) for j in range(i + 1, n) if draw(st.booleans()) and draw(st.booleans())]
    memory = draw(st.sampled_from([math.inf, 4.0, 6.0]))
    return Graph(nodes, edges), Cluster(accelerators=draw(st.integers(1, n)), memory=memory, cpus=0)


@settings(max_examples=200, deadline=None)
@given(assembly_lines())
def test_bb_equals_dp_and_brute_force_on_assembly_lines(instance: tuple[Graph, Cluster]) -> None:
    check_against_dp(*instance, overlap=False, brute=True)


def _chains(chains: int, length: int) -> Graph:
    """``chains`` independent chains of ``length`` nodes of varied times: (length + 1) ** chains ideals."""
    nodes, edges = [], []
    for c in range(chains):
        for i in range(length):
            v = c * length + i
            nodes.append(Node(id=v, cpu_time=1.0, acc_time=float(1 + (7 * v) % 13)))
            if i:
                edges.append((v - 1, v, 0.0))
    return Graph(nodes, edges)


def test_bb_certifies_a_graph_of_many_ideals() -> None:
    graph = _chains(4, 30)
    cluster = Cluster(accelerators=6, memory=math.inf, cpus=0)
    found = solve(graph, cluster, method="bb")
    assert found.status is Status.OPTIMAL and found.gap == 0.0
    total = float(graph.acc_time.sum())
    assert found.objective >= total / 6


def test_time_limit_returns_a_split_with_a_true_bound() -> None:
    graph = _chains(8, 40)
    cluster = Cluster(accelerators=13, memory=math.inf, cpus=0)
    found = solve(graph, cluster, method="bb", time_limit=0.5)
    assert found.device is not None
    if found.status is Status.FEASIBLE:
        assert found.limit in (Limit.TIME, Limit.MEMORY)
        assert found.bound is not None and found.bound <= found.objective


def test_ctrl_c_returns_without_a_split(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bounded_module, "_incumbent", interrupted)
    found = solve(_chains(2, 5), Cluster(accelerators=2, memory=math.inf, cpus=0), method="bb")
    assert found.limit is Limit.INTERRUPT


@settings(max_examples=60, deadline=None)
@given(instances(dags(min_nodes=3), min_accelerators=1), st.sampled_from([1e-3, 0.05]))
def test_bb_within_rel_gap_states_the_bound_it_proved(instance: tuple[Graph, Cluster], rel_gap: float) -> None:
    """With a gap allowed, an optimal answer is within it of the optimum, and its bound at or below the optimum."""
    graph, cluster = instance
    exact = solve(graph, cluster, method="dp")
    found = solve(graph, cluster, method="bb", rel_gap=rel_gap)
    assert found.status is exact.status
    if exact.status is Status.OPTIMAL:
        assert found.bound <= exact.objective * (1 + 1e-9) + 1e-12
        assert exact.objective <= found.objective <= exact.objective * (1 + rel_gap) + 1e-9


def test_bb_rejects_gpipe() -> None:
    with pytest.raises(Exception, match="gpipe"):
        solve(_chains(2, 2), Cluster(accelerators=2, memory=math.inf, cpus=0), method="bb", gpipe=True)
