"""Every registered method against brute force on tiny random graphs: the exact ones optimal, all of them
feasible and bounded; and the brute force itself complete."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima, fits_only_on_the_slack, latency_subgraph_optimum
from strategies import any_graphs, clusters, dags, training_graphs

from exactplace import (
    Cluster,
    Graph,
    Node,
    PlacementError,
    Status,
    available_methods,
    check_feasibility,
    evaluate,
    solve,
)
from exactplace.core.problem import Problem
from exactplace.evaluators.feasibility import Guarantees
from exactplace.methods import registry

# -- every registered method against brute force ------------------------------------------------------------


def small_clusters() -> st.SearchStrategy[Cluster]:
    """Mostly two or three accelerators and a CPU (the interesting case), sometimes any small cluster."""
    return st.one_of(clusters(min_accelerators=2, min_cpus=1), clusters(min_accelerators=2, min_cpus=1), clusters())


def exact_family() -> st.SearchStrategy[Graph]:
    """Graphs on which every exact model (DP over ideals, contiguous IP) is Definition 3.1 with colocation.

    Inference graphs without colour classes, and training graphs whose classes are exactly a
    forward node and its mirrored backward partner (no orphans): there the DP's contraction of
    colour classes cannot forbid a placement that Definition 3.1 allows.
    """
    return st.one_of(
        dags(min_nodes=2, max_nodes=6, colors=False),
        training_graphs(max_forward=3, orphans=False, extra_colors=False),
    )


def general_family() -> st.SearchStrategy[Graph]:
    return st.one_of(dags(min_nodes=2, max_nodes=6), training_graphs(max_forward=3))


def check_against_brute_force(method: str, objective: str, graph: Graph, cluster: Cluster, *,
                               exact_model: bool) -> None:
    """Run one method and hold it to the brute force (see :class:`Optima`).

    Every method: a feasible placement (contiguous when the method declares it), scored by the
    evaluator, never below the optimum over the placements it may return; "infeasible" only when
    not even a chain placement exists. On graphs where the exact models are Definition 3.1
    (``exact_model``): a bound (if any) is at most the chain optimum, and an exact method's
    objective equals the chain optimum (the contiguous-split optimum).
    """
    cls = registry.registered_methods()[method]
    optima = brute_force_optima(graph, cluster, objective)
    promised = cls.promises(Problem(graph, cluster, objective))
    allowed = optima.chain if promised == Guarantees.contiguous_split() else optima.any
    exact = cls.exact and exact_model
    if optima.contiguous != optima.chain:
        event("a cyclic quotient beats every chain placement")
    p = solve(graph, cluster, objective=objective, method=method, time_limit=30, rel_gap=0.0)
    # The exact model's space: chain splits, except for the latency program, whose space is one
    # contiguous subgraph per accelerator with CPU nodes free (a training graph's forward and
    # backward parts on one accelerator are two subgraphs there, one device part each here).
    model_optimum = latency_subgraph_optimum(graph, cluster, 1) if objective == "latency" else optima.chain
    if objective == "latency" and fits_only_on_the_slack(graph, cluster):
        return  # the latency model's memory rows are conservative by the evaluator's 1e-9 slack
    if not p.has_solution:
        event(f"no placement: {p.status}")
        assert p.status in (Status.INFEASIBLE, Status.NO_SOLUTION)
        if p.status is Status.INFEASIBLE or (exact and p.limit is None):
            assert model_optimum is None, f"{method} found no placement, but a placement of its space scores " \
                                          f"{model_optimum}"
        return
    event("placed")
    assert p.device.shape == (graph.n,)
    assert check_feasibility(graph, cluster, p.device, guarantees=promised) == []
    assert p.objective == evaluate(graph, cluster, p.device, objective)
    assert allowed is not None, f"{method} returned a placement the brute force finds infeasible"
    tolerance = 1e-9 * max(1.0, abs(allowed))
    assert p.objective >= allowed - tolerance
    if objective == "latency":
        # it rounds times to integers for CP-SAT (the evaluator rescores exactly)
        tolerance = 1e-6 * max(1.0, abs(allowed))
    if p.bound is not None and exact_model and model_optimum is not None:
        assert p.bound <= model_optimum + tolerance  # a bound on the optimum of the method's own model
    if exact and p.limit is None:
        event("exact: compared with the brute-force optima")
        assert p.status is Status.OPTIMAL
        assert model_optimum is not None, f"exact method {method} placed nodes where no chain placement exists"
        assert abs(p.objective - model_optimum) <= tolerance, (
            f"exact method {method}: {p.objective}, brute-force optimum {optima.chain} "
            f"(contiguous sets with an acyclic quotient; {optima.contiguous} without acyclicity)"
        )


EXAMPLES = settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


#: Every (method, objective) pair available when the tests are collected: a newly registered backend is picked up.
#: Methods that optimize under a pipeline schedule only have their brute force in test_schedule.py.
METHOD_OBJECTIVES = [(m, objective) for objective in ("throughput", "latency") for m in available_methods(objective)
                     if not registry.registered_methods()[m].schedules]


#: Found by hypothesis: every device set is contiguous at max-load 0.25, but only with a cyclic quotient
#: (acc0 needs the CPU's node 2, the CPU needs acc0's node 1); the best chain placement scores 0.5.
CYCLIC_QUOTIENT = Graph(
    [Node(0, 0.25, 0.0), Node(1, 0.25, 0.0, comm=0.25), Node(2, 0.0, None), Node(3, 0.0, None), Node(4, 0.25, None),
     Node(5, 0.25, 0.0, comm=0.25)],
    [(1, 0), (1, 3), (1, 4), (2, 0), (2, 3), (5, 2)],
)


@pytest.mark.parametrize(("method", "objective"), METHOD_OBJECTIVES)
@EXAMPLES
@example(graph=CYCLIC_QUOTIENT, cluster=Cluster(accelerators=2, cpus=1))
@given(graph=exact_family(), cluster=small_clusters())
def test_method_is_optimal_on_exact_family(method: str, objective: str, graph: Graph, cluster: Cluster) -> None:
    check_against_brute_force(method, objective, graph, cluster, exact_model=True)


@pytest.mark.parametrize(("method", "objective"), METHOD_OBJECTIVES)
@EXAMPLES
@given(graph=general_family(), cluster=small_clusters())
def test_method_is_feasible_and_bounded_on_general_graphs(
    method: str, objective: str, graph: Graph, cluster: Cluster
) -> None:
    check_against_brute_force(method, objective, graph, cluster, exact_model=False)


@settings(max_examples=40)
@given(any_graphs(max_nodes=5), small_clusters(), st.sampled_from(["throughput", "latency"]))
def test_brute_force_enumeration_is_complete(graph: Graph, cluster: Cluster, objective: str) -> None:
    """The brute force agrees with a plain enumeration of every placement, checked by check_feasibility."""
    if cluster.num_devices ** graph.n > 600:
        return
    best: dict[str, float | None] = {"any": None, "contiguous": None, "chain": None}
    for device in itertools.product(range(cluster.num_devices), repeat=graph.n):
        kinds = {v.kind for v in check_feasibility(graph, cluster, device, space="contiguous")}
        if kinds - {"contiguity", "order"}:
            continue
        try:
            value = evaluate(graph, cluster, device, objective)
        except PlacementError:
            continue
        for name, ok in (("any", True), ("contiguous", "contiguity" not in kinds), ("chain", not kinds)):
            if ok and (best[name] is None or value < best[name]):
                best[name] = value
    optima = brute_force_optima(graph, cluster, objective)
    assert optima[:3] == (best["any"], best["contiguous"], best["chain"])
    assert optima.chain is None or optima.contiguous <= optima.chain


def test_cyclic_quotient_is_not_a_chain() -> None:
    # a -> b and c -> d, a and d colocated, b and c colocated, one class per accelerator (memory):
    # both sets are contiguous but each waits for the other, so no chain of ideals produces them
    g = Graph([Node(0, 9.0, 1.0, memory=1.0, color=1), Node(1, 9.0, 1.0, memory=1.0, color=2),
               Node(2, 9.0, 1.0, memory=1.0, color=2), Node(3, 9.0, 1.0, memory=1.0, color=1)], [(0, 1), (2, 3)])
    optima = brute_force_optima(g, Cluster(accelerators=2, memory=2.0, cpus=0), "throughput")
    assert optima == (2.0, 2.0, None, None)
    optima = brute_force_optima(g, Cluster(accelerators=2, memory=2.0, cpus=1), "throughput")
    # with a CPU the classes still wait on each other wherever they are apart: all four go to the CPU
    assert optima.contiguous == 2.0 and optima.chain == 4 * 9.0


def test_import_loads_no_solver(tmp_path: Path) -> None:
    """``import exactplace`` and listing methods import no solver module (availability uses find_spec);
    the import itself enters neither the solver adapters, the bounds, the exact methods nor pandas."""
    heavy = ("highspy", "ortools", "pulp", "exactplace._native", "torch", "pandas", "exactplace.solvers",
             "exactplace.bounds", "exactplace.methods.mip", "exactplace.methods.dp", "onnx", "onnxruntime")
    code = (
        "import sys, exactplace; before = sorted(m for m in HEAVY if m in sys.modules); "
        "exactplace.available_methods(); after = sorted(m for m in HEAVY[:5] if m in sys.modules); "
        "print(before, after)"
    ).replace("HEAVY", repr(heavy))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    assert out.strip() == "[] []"
