"""The non-contiguous IP's tightenings stay exact (against the brute force of ``tests/oracle.py``).

* The rank fixings (``symmetry="first"``: the ``i``-th heaviest class only on the first ``i + 1``
  devices of each interchangeable set) keep an optimum: the IP with them, and with the packing
  bound row, reaches the brute-force optimum over all splits, on homogeneous and heterogeneous
  clusters, with CPUs (0-2), memory caps, unsupported nodes and training graphs.
* The packing relaxation's bound (``formulations/throughput_bounds.py``, solved by
  ``exactplace/bounds/packing.py``) never exceeds that
  optimum, for plain, ``overlap`` and ``gpipe`` loads, and neither does the IP's own bound.
* ``encode`` renames a placement so that it satisfies the fixings (a warm start the solver keeps).

``NC_EXAMPLES`` sets the examples per test (default 30, a few seconds each; a thorough run:
``NC_EXAMPLES=500 pytest tests/test_noncontiguous_bound.py``).
"""

from __future__ import annotations

import math
import os

import pytest
from exactplace.formulations.throughput import noncontiguous_ip, unit_data
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima
from strategies import brute_force_graphs, mixed_clusters, placements

from exactplace import Cluster, Graph, Status, check_feasibility, max_load, solve
from exactplace.bounds.packing import packing_bound, packing_falls_short
from exactplace.core.graph import Node
from exactplace.solvers import get_solver

EXAMPLES = int(os.environ.get("NC_EXAMPLES", "30"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOLVERS = [s for s in ("cpsat", "highs") if get_solver(s).available()]


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


@SETTINGS
@given(brute_force_graphs(), mixed_clusters(), st.sampled_from(SOLVERS))
def test_tightened_ip_reaches_the_brute_force_optimum(graph: Graph, cluster: Cluster, solver: str) -> None:
    optima = brute_force_optima(graph, cluster, "throughput")
    p = solve(graph, cluster, method="mip", solver=solver, contiguous=False, rel_gap=0.0, warm_start=None,
              time_limit=30)
    if optima.any is None:
        assert p.status is Status.INFEASIBLE
        return
    assert p.status is Status.OPTIMAL and close(p.objective, optima.any)
    bound = p.info.get("packing_bound")
    assert not isinstance(bound, float) or bound <= optima.any + 1e-6 * max(1.0, optima.any)
    assert p.bound is not None and p.bound <= optima.any + 1e-5 * max(1.0, optima.any)


@SETTINGS
@given(brute_force_graphs(), mixed_clusters(), st.sampled_from(["plain", "overlap", "gpipe"]))
def test_packing_bound_never_exceeds_the_optimum(graph: Graph, cluster: Cluster, variant: str) -> None:
    options = {} if variant == "plain" else {variant: True}
    optima = brute_force_optima(graph, cluster, "throughput", **options)
    found = packing_bound(unit_data(graph, graph.color), cluster, gpipe=variant == "gpipe", time_limit=5.0)
    if optima.any is None or found is None:
        return
    assert found.value <= optima.any + 1e-6 * max(1.0, optima.any)
    # The IP with the bound row and the rank fixings still reaches the optimum of the variant.
    ip = noncontiguous_ip(graph, cluster, lower_bound=found.value, **options)
    p = solve(graph, cluster, method="mip", solver="cpsat", contiguous=False, rel_gap=0.0, warm_start=None,
              time_limit=30, **options)
    assert p.status is Status.OPTIMAL and close(p.objective, optima.any)
    assert ip.model.num_rows > 0


@SETTINGS
@given(st.data(), brute_force_graphs(), mixed_clusters(), st.sampled_from(["plain", "overlap", "gpipe"]),
       st.sampled_from([0.0, 0.01, 0.2]))
def test_a_packing_bound_said_short_cannot_certify(data: st.DataObject, graph: Graph, cluster: Cluster, variant: str,
                                                   rel_gap: float) -> None:
    """``method="mip"`` puts the packing phase after the gap probe when the start's compute-only max load is below
    ``U (1 - rel_gap)``: the packing bound never exceeds that load (the start is a placement of the relaxation), so
    a bound it proves then falls short of the gap."""
    options = {} if variant == "plain" else {variant: True}
    start = data.draw(placements(graph, cluster, colocated=True, supported=True))
    if check_feasibility(graph, cluster, start):
        return
    found = packing_bound(unit_data(graph, graph.color), cluster, gpipe=variant == "gpipe", time_limit=5.0)
    if found is None:
        return
    if packing_falls_short(graph, cluster, start, rel_gap, **options):
        assert found.value < max_load(graph, cluster, start, **options) * (1 - rel_gap) * (1 + 1e-9) + 1e-12
    assert packing_falls_short(graph, cluster, start, 0.0, **options) or found.value <= max_load(
        graph, cluster, start, **options) * (1 + 1e-9) + 1e-12


def test_times_near_the_smallest_float_solve_on_cpsat() -> None:
    """Accelerator times of 1e-302 (hypothesis's): CP-SAT's scale for them was infinite (an OverflowError from the
    adapter); now the solve ends optimal, its value the evaluator's, its bound below it."""
    tiny = 1.0688108052579554e-302
    graph = Graph([Node(id=0, cpu_time=0.0, acc_time=tiny), Node(id=1, cpu_time=0.0, acc_time=tiny)], [(0, 1)])
    cluster = Cluster(1, memory=float("inf"), cpus=0)
    p = solve(graph, cluster, method="mip", solver="cpsat", contiguous=False, time_limit=10)
    assert p.status is Status.OPTIMAL and p.objective == max_load(graph, cluster, p.device)
    assert p.bound is not None and p.bound <= p.objective


@SETTINGS
@given(st.data(), brute_force_graphs(), mixed_clusters())
def test_encoded_placements_satisfy_the_fixings(data: st.DataObject, graph: Graph, cluster: Cluster) -> None:
    device = data.draw(placements(graph, cluster, colocated=True, supported=True))
    ip = noncontiguous_ip(graph, cluster)
    values = ip.encode(device)
    if check_feasibility(graph, cluster, device):
        assert values is None
        return
    assert values is not None and ip.model.violation(values) <= 1e-9
    decoded = ip.decode(values)
    from exactplace import max_load

    assert close(max_load(graph, cluster, decoded), max_load(graph, cluster, device))


def test_layer_bert24_bound_rises_in_the_trace() -> None:
    """On a shared workload the packing bound lifts the IP's LP bound (15.15) to within 0.1% of 17.7147."""
    from exactplace import read_workload, workload_path

    w = read_workload(workload_path("layer_bert24_inference"))
    found = packing_bound(unit_data(w.graph, w.graph.color), w.cluster, time_limit=8.0)
    assert found is not None and 17.0 < found.value <= 17.7147 + 1e-4
    ip = noncontiguous_ip(w.graph, w.cluster, lower_bound=found.value)
    assert ip.model.lb[ip.index["L"]].min() >= found.value - 1e-9


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])
