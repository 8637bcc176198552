"""The latency program (formulations/latency.py, method "mip" for objective "latency").

Against the brute-force oracle on tiny random DAGs (Fig. 3 with q=1 and Fig. 4's whole space
with q=2, 3: every cut into at most q subgraphs, simulated from the paper's rules), the
model's own latency against the evaluator's (on random instances and on the published splits
of the shared workloads), and the method's behaviour (default time limit, auto, statuses).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from oracle import fits_only_on_the_slack, latency_subgraph_optimum
from strategies import clusters, dags

from exactplace import Cluster, Graph, Node, Space, Status, check_feasibility, read_split, read_workload, solve
from exactplace.evaluators.latency import contiguous_pieces, latency
from exactplace.io import workload_from_dict

pytest.importorskip("ortools")

SHARED = Path(__file__).resolve().parents[2] / "shared" / "workloads"


def _mip(graph: Graph, cluster: Cluster, q: int, **kwargs):
    """The program on CP-SAT; the path bound (tests/test_latency_bound.py) would often certify
    the start before the model runs, so it is off here: these tests are about the model."""
    return solve(graph, cluster, objective="latency", method="mip", q=q, rel_gap=0.0, time_limit=30,
                 threads=1, path_bound=False, **kwargs)


def _pieces(graph: Graph, cluster: Cluster, device: np.ndarray) -> int:
    return max((int(contiguous_pieces(graph, device == d).max(initial=0)) for d in range(cluster.accelerators)),
               default=0)


def _agrees(graph: Graph, cluster: Cluster, q: int, p) -> None:
    """p is the oracle's optimum over its class (up to the model's time rounding)."""
    assume(not fits_only_on_the_slack(graph, cluster))
    best = latency_subgraph_optimum(graph, cluster, q)
    if best is None:
        assert p.status in (Status.INFEASIBLE, Status.NO_SOLUTION) and p.device is None
        return
    assert p.status is Status.OPTIMAL, (p.status, p.info)
    # inside the space (so never below its optimum): at most q invocable subgraphs per accelerator
    assert check_feasibility(graph, cluster, p.device, objective="latency", q=q, subgraph=p.subgraph) == []
    assert (p.subgraph is None) == (q == 1) and p.q == q
    assert p.objective >= best - 1e-9 * max(1.0, best)
    assert p.objective <= best * (1 + 1e-6) + 1e-6, (p.objective, best)
    assert p.bound <= p.objective and p.bound >= best * (1 - 1e-6) - 1e-6
    # The model's own latency of its solution is the evaluator's (up to rounding to its units).
    if "model_latency" in p.info:  # (a start certified, or the one placement without accelerators, has none)
        assert math.isclose(p.info["model_latency"], p.objective, rel_tol=1e-6, abs_tol=1e-6)


tiny = dict(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(**tiny)
@given(dags(max_nodes=5), clusters(max_accelerators=3, max_cpus=2))
def test_contiguous_latency_program_is_the_brute_force_optimum(graph: Graph, cluster: Cluster) -> None:
    _agrees(graph, cluster, 1, _mip(graph, cluster, 1))


@settings(**tiny)
@given(dags(max_nodes=5), clusters(min_accelerators=1, max_accelerators=2, max_cpus=1), st.sampled_from([2, 3]))
def test_q_subgraph_program_is_the_brute_force_optimum(graph: Graph, cluster: Cluster, q: int) -> None:
    assume((1 + cluster.accelerators * q) ** graph.n <= 5000)  # the oracle enumerates every cut
    p = _mip(graph, cluster, q)
    _agrees(graph, cluster, q, p)
    one = _mip(graph, cluster, 1)
    if one.has_solution:  # more subgraphs can only help
        assert p.objective <= one.objective * (1 + 1e-6) + 1e-6


def _workload(text: str):
    import json

    return workload_from_dict(json.loads(text))


def test_a_contiguous_part_may_run_as_two_subgraphs() -> None:
    """{2} first (it feeds the CPU node 3), then {1}, latency 7; the evaluator's cut
    runs {1, 2} as one subgraph (10). The program must search every cut, not only the evaluator's."""
    w = _workload('{"maxSizePerFPGA":2.0,"maxFPGAs":1,"maxCPUs":8,"nodes":['
                  '{"id":1,"supportedOnFpga":1,"cpuLatency":10.0,"fpgaLatency":4.0,"isBackwardNode":0,"size":1.0},'
                  '{"id":2,"supportedOnFpga":1,"cpuLatency":10.0,"fpgaLatency":1.0,"isBackwardNode":0,"size":1.0},'
                  '{"id":3,"supportedOnFpga":0,"cpuLatency":5.0,"fpgaLatency":5.0,"isBackwardNode":0,"size":1.0}],'
                  '"edges":[{"sourceId":2,"destId":3,"cost":1.0}]}')
    p = solve(w, objective="latency", method="mip", q=2, time_limit=30)
    assert p.status is Status.OPTIMAL and p.objective == pytest.approx(7.0)
    assert p.assignment() == {1: "acc0", 2: "acc0", 3: "cpu0"} and p.subgraph.tolist() == [1, 0, -1]
    assert solve(w, objective="latency", method="mip", q=1, time_limit=30).objective == pytest.approx(10.0)


def test_q2_is_never_infeasible_where_q1_is_feasible() -> None:
    """q=1 finds 8, so q=2 and q=3 (which allow more) must not answer 'infeasible'."""
    w = _workload('{"maxSizePerFPGA":4.0,"maxFPGAs":2,"maxCPUs":1,"nodes":['
                  '{"id":1,"supportedOnFpga":1,"cpuLatency":3.0,"fpgaLatency":1.0,"isBackwardNode":0,"size":3.0},'
                  '{"id":2,"supportedOnFpga":1,"cpuLatency":1.0,"fpgaLatency":1.0,"isBackwardNode":0,"size":1.7},'
                  '{"id":3,"supportedOnFpga":1,"cpuLatency":1.0,"fpgaLatency":3.0,"isBackwardNode":0,"size":1.0},'
                  '{"id":4,"supportedOnFpga":1,"cpuLatency":5.0,"fpgaLatency":1.0,"isBackwardNode":0,"size":2.0}],'
                  '"edges":[{"sourceId":1,"destId":3,"cost":1.0},{"sourceId":2,"destId":4,"cost":1.0},'
                  '{"sourceId":3,"destId":4,"cost":3.0}]}')
    for q in (1, 2, 3):
        p = solve(w, objective="latency", method="mip", q=q, time_limit=30)
        assert p.status is Status.OPTIMAL and p.objective == pytest.approx(8.0), (q, p.status, p.info)
        assert p.objective == pytest.approx(latency_subgraph_optimum(w.graph, w.cluster, q))


@settings(max_examples=10, deadline=None)
@given(dags(max_nodes=5), clusters(max_accelerators=3, max_cpus=2), st.sampled_from([0, 1]))
def test_q1_is_contiguous_and_warm_start_does_not_change_the_optimum(graph: Graph, cluster: Cluster,
                                                                       seed: int) -> None:
    """q=1 is the contiguous class; a start from the all-CPU placement reaches the same optimum."""
    p = _mip(graph, cluster, 1)
    best = latency_subgraph_optimum(graph, cluster, 1)
    if best is None or not cluster.cpus or fits_only_on_the_slack(graph, cluster):
        return
    start = np.full(graph.n, cluster.accelerators, dtype=np.int64)
    again = _mip(graph, cluster, 1, warm_start=start)
    assert math.isclose(p.objective, again.objective, rel_tol=1e-6, abs_tol=1e-6)


def test_deadlocking_zero_time_blocks_are_excluded() -> None:
    """Two zero-cost accelerator blocks feeding each other (a -> d, b -> c with {a, c}, {b, d}
    colocated) would finish at time 0 in a model without the one-unit block minimum; the
    evaluator rejects them, and so must the program."""
    nodes = [Node(0, 1.0, 0.0, color=1), Node(1, 1.0, 0.0, color=2), Node(2, 1.0, 0.0, color=2),
             Node(3, 1.0, 0.0, color=1)]
    g = Graph(nodes, [(0, 2), (1, 3)])
    c = Cluster(accelerators=2, cpus=1)
    p = _mip(g, c, 1)
    assert p.status is Status.OPTIMAL
    latency(g, c, p.device)  # raises PlacementError on a deadlock
    assert math.isclose(p.objective, latency_subgraph_optimum(g, c, 1), abs_tol=1e-6)


def test_default_time_limit_is_stated_and_auto_picks_the_program() -> None:
    g = Graph([Node(1, 4.0, 1.0, comm=0.5), Node(2, 3.0, 2.0, comm=0.5), Node(3, 1.0, 1.0)], [(1, 2), (2, 3)])
    c = Cluster(accelerators=1, cpus=1)
    p = solve(g, c, objective="latency", path_bound=False)
    assert p.method == "mip" and p.solver == "cpsat"
    assert "default" in p.info["time_limit"] and "60" in p.info["time_limit"]
    certified = solve(g, c, objective="latency")  # a chain: the path bound certifies the start at once
    assert certified.method == "mip" and certified.solver == certified.info["certified_by"] == "path_bound"
    assert certified.status is Status.OPTIMAL and certified.objective == pytest.approx(p.objective)
    assert p.status is Status.OPTIMAL and p.space is Space.SUBGRAPHS and p.q == 1
    assert p.objective == pytest.approx(latency_subgraph_optimum(g, c, 1)) and p.gap == pytest.approx(0, abs=1e-6)
    assert "time_limit" not in solve(g, c, objective="latency", time_limit=10).info
    trace = [t.incumbent for t in p.trace if t.incumbent is not None]
    assert trace == sorted(trace, reverse=True)
    assert solve(g, c, objective="latency", q=2).space is Space.SUBGRAPHS


def _published_splits():
    if not SHARED.exists():
        return []
    table = (SHARED / "README.md").read_text().split("| split | latency |")[1]
    rows = [line.strip("| ").split(" | ") for line in table.strip().splitlines()[1:] if line.startswith("|")]
    return [(name, float(value)) for name, value in rows]


@pytest.mark.parametrize("split,published", _published_splits() or [pytest.param("", 0, marks=pytest.mark.skip)])
def test_model_schedule_of_published_splits_is_the_evaluators(split: str, published: float) -> None:
    """Fixing the assignment and the subgraphs to a published split (the evaluator's cut), the
    model's optimal latency is the split's, up to its rounding to units."""
    from exactplace.formulations.latency import latency_ip

    from exactplace.solvers import Request, get_solver

    workload = split.removeprefix("latency_").rsplit("_", 1)[0].removesuffix("_maxload")
    w = read_workload(SHARED / "latency" / f"{workload}.json")
    device = read_split(SHARED / "splits" / f"{split}.json", w.graph, w.cluster)
    value = latency(w.graph, w.cluster, device)
    assert abs(value - published) <= 5e-4 + 1e-9
    q = max(1, _pieces(w.graph, w.cluster, device))
    ip = latency_ip(w.graph, w.cluster, q, upper=value, symmetry=False)
    start = ip.encode(device)
    assert start is not None and ip.model.violation(start, relative=True) <= 1e-9
    decisions = np.concatenate([ip.index["x"].reshape(-1), ip.index["w"].reshape(-1)])
    ip.model.add_rows("the published split", len(decisions), rows=np.arange(len(decisions)), cols=decisions,
                      vals=1.0, lb=start[decisions], ub=start[decisions])
    out = get_solver("cpsat")().solve(ip.model, Request(threads=1, deadline=None))
    assert out.status is Status.OPTIMAL
    assert latency(w.graph, w.cluster, ip.decode(out.values), ip.decode_subgraph(out.values)) == pytest.approx(value)
    tolerance = (w.graph.n + 2 * len(w.graph.group_cost)) / ip.data.scale
    assert value - tolerance <= out.objective <= value + 1e-9 + ip.bound_slack


def test_bad_q_is_rejected() -> None:
    g = Graph([Node(1, 1.0, 1.0)], [])
    with pytest.raises(Exception, match="'q'"):
        solve(g, Cluster(1, cpus=1), objective="latency", method="mip", q=0)


def test_shipped_example_reaches_its_optimum() -> None:
    from exactplace import workload_path

    w = read_workload(workload_path("layer_bert24_inference"))
    p = solve(w, objective="latency", method="mip", time_limit=30, threads=2)
    assert p.status is Status.OPTIMAL and p.bound <= p.objective
    assert p.objective <= min(v for v in p.info["warm_start_candidates"].values() if v is not None) + 1e-9
    assert json.loads(p.to_json())["trace"]


@settings(max_examples=25, deadline=None)
@given(dags(max_nodes=6), clusters(max_accelerators=3, max_cpus=2))
def test_linear_latency_splits_are_contiguous_and_never_deadlock(graph: Graph, cluster: Cluster) -> None:
    """The DP warm starts lie in the contiguous class (so they are valid hints for any q)."""
    from exactplace import check_feasibility
    from exactplace.core.contraction import contract
    from exactplace.evaluators.feasibility import Guarantees
    from exactplace.improvers.latency_starts import linear_latency_splits

    for device in linear_latency_splits(graph, cluster, contract(graph, cluster.memory_cap), orders=3):
        assert check_feasibility(graph, cluster, device, guarantees=Guarantees()) == []
        assert _pieces(graph, cluster, device) <= 1
        assert math.isfinite(latency(graph, cluster, device))


def _installed_solvers() -> list[str]:
    from exactplace.solvers import SOLVERS, get_solver

    names = []
    for name in SOLVERS:
        try:
            get_solver(name).require()
        except Exception:  # not installed / not licensed
            continue
        names.append(name)
    return names


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dags(max_nodes=4), clusters(min_accelerators=1, max_accelerators=2, max_cpus=1), st.sampled_from([1, 2, 3]))
def test_every_solver_reaches_the_same_optimum(graph: Graph, cluster: Cluster, q: int) -> None:
    """The one program on every installed solver agrees with brute force."""
    assume(not fits_only_on_the_slack(graph, cluster))
    best = latency_subgraph_optimum(graph, cluster, q)
    for name in _installed_solvers():
        p = solve(graph, cluster, objective="latency", method="mip", solver=name, q=q, rel_gap=0.0,
                  time_limit=30, threads=1, warm_start=None, path_bound=False)
        if best is None:
            assert p.device is None, name
            continue
        assert p.status is Status.OPTIMAL, (name, p.status, p.info)
        # MIP solvers decide with tolerances: a time can be off by their feasibility tolerance.
        assert p.objective == pytest.approx(best, rel=1e-5, abs=1e-5), (name, p.objective, best)
        assert p.bound <= p.objective


@settings(**tiny)
@given(dags(max_nodes=6), clusters(max_accelerators=3, max_cpus=2), st.data())
def test_an_encoded_start_satisfies_the_program(graph: Graph, cluster: Cluster, data: st.DataObject) -> None:
    # Every solver gets the warm start as a full point of the program: it must satisfy every row
    # (a missed variable, e.g. a symmetry row's prefix, makes MIP solvers drop it).
    from exactplace.formulations.latency import latency_ip

    k = cluster.accelerators
    assume(k > 0 and (cluster.cpus or graph.supported.all()))
    device = np.array([data.draw(st.integers(0 if graph.supported[v] else k, cluster.num_devices - 1))
                       for v in range(graph.n)], dtype=np.int64)
    try:
        value = latency(graph, cluster, device)
    except Exception:  # a placement that deadlocks under the §4 semantics is no start
        assume(False)
    ip = latency_ip(graph, cluster, 2)
    values = ip.encode(device)
    assume(values is not None)  # outside the program (memory, or more than q subgraphs)
    assert ip.model.violation(values, relative=True) <= 1e-9
    assert ip.decode(values).tolist() == np.where(device >= k, k, device).tolist() or ip.data.identical
    # In model units, up to the one-unit minimum of a block (bound_slack).
    rounding = (graph.n + 2 * len(graph.group_cost) + 2) / ip.data.scale
    assert value - rounding <= ip.model.objective_value(values) <= value + ip.bound_slack + 1e-9
