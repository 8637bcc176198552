"""The device-set relaxation (formulations/device_sets.py) and its column-generation bound (bounds/device_sets.py).

The pricing dynamic program (C++) against every subset of classes and against the pure-Python DP it replaced
(``set_pricing_oracle``) on the shared workloads; the bound against brute force's optimum (a
refuted threshold must lie below every split's max load); the relay's use of it in ``method="mip"``.
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from time import monotonic
from unittest.mock import patch

import numpy as np
import pytest
from exactplace.formulations.device_sets import (
    SetRelaxation,
    _greedy_order,
    first_node_positions,
    frontier_order,
    lightest_heavy_set,
    order_cost,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima
from set_pricing_oracle import Pricer as PythonPricer
from strategies import any_graphs, banded_graph, brute_force_graphs, clusters, dags

from exactplace import Cluster, Status, check_feasibility, max_load, read_workload, solve, workload_path
from exactplace.bounds import device_sets as set_bound_module
from exactplace.bounds.device_sets import (
    APPROACH,
    HEAVIEST_MARGIN,
    SMOOTHING,
    SMOOTHING_CAP,
    Pricer,
    _adapted_weight,
    _Branch,
    _capacity,
    _Column,
    _dive,
    _Pool,
    _refute,
    _rounded_split,
    _work_center,
    heaviest_bound,
    set_bound,
    set_bound_applies,
)
from exactplace.core.errors import ParameterError
from exactplace.core.graph import Graph, Node
from exactplace.evaluators.max_load import device_loads


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(any_graphs(max_nodes=7, max_forward=3), st.integers(0, 2**31), st.floats(0.5, 30.0),
       st.sampled_from([0.0, 0.5, 1.0]))
def test_pricing_is_the_best_subset(graph: Graph, seed: int, threshold: float, floor: float) -> None:
    """max pi(S) over the class sets within the threshold (none holding both classes of a pair kept apart, as a
    branch asks), by the DP = by enumeration (above the floor), its sets within the threshold, and each set's
    load the evaluator's."""
    cluster = Cluster(1, memory=1e9, cpus=1)
    sets = SetRelaxation.of(graph, cluster)
    assume(sets.classes <= 9)
    rng = np.random.default_rng(seed)
    duals = rng.uniform(-0.5, 1.0, sets.classes)
    apart = tuple(tuple(int(c) for c in rng.choice(sets.classes, 2, replace=False))
                  for _ in range(int(rng.integers(0, 3)) if sets.classes >= 2 else 0))
    order = frontier_order(sets)
    assert sorted(order.tolist()) == list(range(sets.classes))
    best = -np.inf
    for index, bits in enumerate(itertools.product((False, True), repeat=sets.classes)):
        chosen = np.array(bits, dtype=bool)
        if not sets.on_acc[chosen].all() or any(chosen[a] and chosen[b] for a, b in apart):
            continue
        load = sets.load(chosen)
        if index % 7 == 0:  # the relaxation's load is the evaluator's (on a sample: the evaluator is slower)
            assert load == pytest.approx(device_loads(graph, cluster, np.where(chosen[sets.unit], 0, 1)).load()[0],
                                         abs=1e-9)
        if load <= threshold:
            best = max(best, float(duals[chosen].sum()))
    pricer = Pricer(sets.acc, sets.on_acc, sets.group_cost, sets.members, order, apart)
    value, found = pricer.price(duals, threshold, floor)
    assert pricer.ceiling(duals, threshold) >= best - 1e-9  # (an upper bound on every set within the threshold)
    assert value == pytest.approx(pricer.price(duals, threshold, floor, raise_floor=False)[0], abs=1e-12)
    if best > floor + 1e-9:
        assert value == pytest.approx(best, abs=1e-9)
        assert found and float(duals[found[0]].sum()) == pytest.approx(best, abs=1e-9)
    else:
        assert value <= floor + 1e-9 and not found
    values = [float(duals[s].sum()) for s in found]
    assert values == sorted(values, reverse=True) and all(v > floor for v in values)
    assert all(sets.load(s) <= threshold + 1e-9 and sets.on_acc[s].all() for s in found)
    assert not any(s[a] and s[b] for s in found for a, b in apart)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(any_graphs(max_nodes=9, max_forward=3), st.integers(0, 2**31), st.floats(0.5, 30.0), st.integers(1, 4))
def test_cover_sets_are_disjoint_legal_sets(graph: Graph, seed: int, threshold: float, count: int) -> None:
    """The greedy cover: at most ``count`` disjoint, non-empty sets, each within the threshold by the evaluator's
    load, of classes allowed on an accelerator, none holding a pair kept apart; the first holds a positive dual."""
    cluster = Cluster(2, memory=1e9, cpus=1)
    sets = SetRelaxation.of(graph, cluster)
    rng = np.random.default_rng(seed)
    duals = rng.uniform(-0.5, 1.0, sets.classes)
    apart = tuple(tuple(int(c) for c in rng.choice(sets.classes, 2, replace=False))
                  for _ in range(int(rng.integers(0, 3)) if sets.classes >= 2 else 0))
    pricer = Pricer(sets.acc, sets.on_acc, sets.group_cost, sets.members, frontier_order(sets), apart)
    found = pricer.cover(duals, threshold, count)
    assert len(found) <= count
    taken = np.zeros(sets.classes, dtype=int)
    for chosen in found:
        assert chosen.any() and sets.on_acc[chosen].all() and (duals[chosen] > 0).any()
        assert not any(chosen[a] and chosen[b] for a, b in apart)
        assert device_loads(graph, cluster, np.where(chosen[sets.unit], 0, 1)).load()[0] <= threshold + 1e-9
        taken += chosen
    assert (taken <= 1).all()


SHARED = Path(__file__).resolve().parents[2] / "shared" / "workloads" / "throughput"


@pytest.mark.skipif(not SHARED.exists(), reason="needs ../shared/workloads")
@pytest.mark.parametrize("name", ["layer_resnet50_inference", "layer_gnmt_training"])
def test_native_pricing_equals_the_python_dp(name: str) -> None:
    """On a shared workload, at duals as the generation meets them (around 1/k per class's share of the
    work, some negative) and thresholds near the optimum: the same maximum as the Python DP, sets of that
    value within the threshold, for the accelerators' pricing and the CPU cores' knapsack."""
    w = read_workload(SHARED / f"{name}.json")
    sets = SetRelaxation.of(w.graph, w.cluster)
    order = frontier_order(sets)
    rng = np.random.default_rng(7)
    share = sets.acc / sets.acc.sum() * (w.cluster.accelerators + 0.1)
    cpu_allowed = sets.cpu <= sets.acc.sum()
    pricers = [(sets.acc, sets.on_acc, sets.group_cost, sets.members, order, 1.0),
               (sets.cpu, cpu_allowed, np.zeros(0), [], np.arange(sets.classes), 0.0)]
    for time, allowed, cost, members, processing, floor in pricers:
        native, python = Pricer(time, allowed, cost, members, processing), PythonPricer(time, allowed, cost,
                                                                                       members, processing)
        for _ in range(4):
            duals = share * rng.uniform(0.6, 1.4, sets.classes) - rng.uniform(0, 0.01, sets.classes)
            threshold = float(rng.uniform(0.15, 0.2) * sets.acc.sum())
            value, found = native.price(duals, threshold, floor, keep=5)
            expected, _ = python.price(duals, threshold, floor, keep=5)
            assert value == pytest.approx(expected, rel=1e-12, abs=1e-12)
            assert found and float(duals[found[0]].sum()) == pytest.approx(value, rel=1e-12)
            if members:
                assert all(sets.load(s) <= threshold * (1 + 1e-9) for s in found)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(any_graphs(max_nodes=7, max_forward=3), clusters(min_accelerators=1, max_accelerators=3, max_cpus=2),
       st.floats(0.0, 30.0))
def test_the_work_center_is_a_point_of_the_dual(graph: Graph, cluster: Cluster, threshold: float) -> None:
    """The generation's first center (the packing bound's duals) needs no pricing: by enumeration, no accelerator set
    within the threshold is worth more than 1 there, the CPU row's dual is at least the best CPU core's set (by its
    fractional knapsack, within the heaviest class's worth of it), and its bound is Farley's at those duals."""
    assume(cluster.is_homogeneous and not cluster.is_two_level)
    sets = SetRelaxation.of(graph, cluster)
    assume(sets.classes <= 9)
    farley, duals, cpu_dual = _work_center(sets, threshold)
    capacity = _capacity(threshold)  # (the pricings' tolerance)
    best_acc, best_cpu = 0.0, 0.0
    for bits in itertools.product((False, True), repeat=sets.classes):
        chosen = np.array(bits, dtype=bool)
        if sets.on_acc[chosen].all() and sets.load(chosen) <= capacity:
            best_acc = max(best_acc, float(duals[chosen].sum()))
        if (sets.cpu[chosen] <= threshold).all() and sets.cpu[chosen].sum() <= capacity:
            best_cpu = max(best_cpu, float(duals[chosen].sum()))
    assert (duals >= 0.0).all() and best_acc <= 1.0 + 1e-12
    if sets.cpus:
        assert best_cpu - 1e-9 <= -cpu_dual <= best_cpu + duals.max(initial=0.0) + 1e-9
    else:
        assert cpu_dual == 0.0
    assert farley == pytest.approx(duals.sum() + sets.cpus * cpu_dual, abs=1e-9)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(any_graphs(max_nodes=7, max_forward=3), st.floats(0.0, 1.0))
def test_the_lightest_heavy_set_is_the_best_subset(graph: Graph, share: float) -> None:
    """The MIP's optimum is, by enumeration, the least load of a class set holding ``need`` accelerator time (classes
    no accelerator may hold left out; within the solver's tolerance on ``need``), and its set is one such."""
    from exactplace.solvers import Request, solve_model

    sets = SetRelaxation.of(graph, Cluster(2, memory=1e9, cpus=1))
    assume(sets.classes <= 9)
    total = float(sets.acc[sets.on_acc].sum())
    need, tolerance = share * total, 1e-6 * max(1.0, total)

    def least(holding: float) -> float:
        return min((sets.load(chosen) for bits in itertools.product((False, True), repeat=sets.classes)
                    if sets.on_acc[chosen := np.array(bits, dtype=bool)].all() and sets.acc[chosen].sum() >= holding),
                   default=np.inf)

    model, x = lightest_heavy_set(sets, need)
    out = solve_model(model, "highs", Request(rel_gap=0.0))
    assert out.status is Status.OPTIMAL  # (every class an accelerator may hold: at least ``need``)
    chosen = out.values[x] > 0.5
    # The bound, lowered as heaviest_bound lowers it, never above the least load; the set within HiGHS's absolute
    # gap (1e-6), its load at most the model's (a group may be charged that the set does not cut).
    assert least(need - tolerance) - 1e-9 <= out.bound
    assert out.bound - HEAVIEST_MARGIN * (1.0 + abs(out.bound)) <= least(need)
    assert out.objective <= least(need) + 1e-6
    assert sets.on_acc[chosen].all() and sets.acc[chosen].sum() >= need - tolerance
    assert sets.load(chosen) <= out.objective + 1e-9


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(brute_force_graphs(), clusters(min_accelerators=1, max_accelerators=3, max_cpus=2), st.floats(0.5, 1.5))
def test_the_heaviest_bound_lies_below_every_split(graph: Graph, cluster: Cluster, fraction: float) -> None:
    """What the heaviest accelerator refutes lies below brute force's optimum and at most at the target; asked to
    prove more than a ``lower`` bound, it returns something above it or nothing."""
    assume(set_bound_applies(graph, cluster) is None)
    optimum = brute_force_optima(graph, cluster, "throughput").any
    assume(optimum is not None and optimum > 0)
    sets = SetRelaxation.of(graph, cluster)
    refuted = heaviest_bound(sets, fraction * optimum)
    if refuted is not None:
        assert refuted < optimum and refuted <= fraction * optimum
        lower = 0.5 * refuted
        again = heaviest_bound(sets, fraction * optimum, lower=lower)
        assert again is not None and lower < again <= refuted * (1 + 1e-9)
        assert heaviest_bound(sets, fraction * optimum, lower=refuted) is None


def test_the_heaviest_bound_charges_the_communication_a_heavy_set_pays() -> None:
    """A chain of four unit operators, each output costing 1, on two accelerators (a CPU core 100 times slower):
    one accelerator holds two operators, so it pays one transfer: 3, where the accelerator time alone says 2."""
    graph = Graph([Node(i, 100.0, 1.0, comm=1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
    cluster = Cluster(2, memory=1e9, cpus=1)
    optimum = brute_force_optima(graph, cluster, "throughput").any
    refuted = heaviest_bound(SetRelaxation.of(graph, cluster), target=optimum)
    assert optimum == pytest.approx(3.0)
    assert refuted == pytest.approx(3.0, rel=1e-5) and refuted < 3.0
    found = set_bound(graph, cluster, target=2.9, time_limit=10)
    assert found.heaviest == 2.9 and found.outcome == "target refuted" and found.pricings == 0


def test_the_heaviest_bound_stops_on_cancel() -> None:
    import threading

    w = read_workload(workload_path("layer_bert24_training"))
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(KeyboardInterrupt):
        heaviest_bound(SetRelaxation.of(w.graph, w.cluster), target=40.0, cancel=cancel)
    found = set_bound(w.graph, w.cluster, target=40.0, cancel=cancel)
    assert found.outcome == "interrupted" and found.value is None


def test_a_master_solve_without_a_verdict_is_solved_again_from_scratch() -> None:
    """A warm restart of the master that HiGHS ends with status "unknown" (seen on LayerGraphs_inceptionv3_inference
    after ~70 pricings) is solved again from scratch, not taken for the end of the threshold's generation."""
    import highspy

    sets = SetRelaxation.of(banded_graph(12), Cluster(3, cpus=1))
    master = set_bound_module._Master(sets)

    class Unsure:
        """HiGHS, saying "unknown" after its second run (the first warm restart)."""

        def __init__(self, highs: highspy.Highs) -> None:
            self.highs, self.runs = highs, 0

        def __getattr__(self, name: str) -> object:
            return getattr(self.highs, name)

        def run(self) -> object:
            self.runs += 1
            return self.highs.run()

        def getModelStatus(self) -> object:
            return highspy.HighsModelStatus.kUnknown if self.runs == 2 else self.highs.getModelStatus()

    master.h = Unsure(master.h)
    deadline = monotonic() + 30.0
    assert master.solve(deadline) is not None
    master.add(np.ones((1, sets.classes), dtype=bool), cpu=False)
    solved = master.solve(deadline)
    assert master.h.runs == 3 and solved is not None and solved[2] == pytest.approx(1.0)


@given(st.lists(st.tuples(st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3),
                          st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3)), max_size=60))
def test_smoothing_weight_stays_a_weight(steps: list[tuple[list[float], list[float]]]) -> None:
    """The adapted smoothing weight stays in [0, SMOOTHING_CAP] whatever the pricings say; it falls exactly when the
    subgradient at the smoothed duals points towards the master's, and a run of either signal takes it to its end."""
    weight = SMOOTHING
    for devices_at_best, direction in steps:
        following = _adapted_weight(weight, np.array(devices_at_best), np.array(direction))
        towards = (1.0 - np.array(devices_at_best)) @ np.array(direction) > 0.0
        assert (following < weight or weight == 0.0) if towards else (weight <= following <= SMOOTHING_CAP)
        weight = following
    assert 0.0 <= weight <= SMOOTHING_CAP
    falling, rising = SMOOTHING, SMOOTHING
    for _ in range(10):
        falling = _adapted_weight(falling, np.zeros(1), np.ones(1))
        rising = _adapted_weight(rising, np.full(1, 2.0), np.ones(1))
    assert falling == 0.0 and rising == pytest.approx(SMOOTHING_CAP, abs=0.2)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(brute_force_graphs(), clusters(min_accelerators=1, max_accelerators=3, max_cpus=2),
       st.sampled_from([0.5, 0.9, 0.99, 1.0, 1.2]), st.booleans())
def test_bound_never_exceeds_the_optimum(graph: Graph, cluster: Cluster, fraction: float, greedy: bool) -> None:
    """Every refuted threshold lies below brute force's optimum over all splits; the trace rises; a target at or
    above the optimum is never refuted. ``greedy``: with the greedy cover's columns and rounds as on branchy graphs
    (here the exact pricing is never costly enough for them)."""
    assume(set_bound_applies(graph, cluster) is None)
    optimum = brute_force_optima(graph, cluster, "throughput").any
    assume(optimum is not None and optimum > 0)
    with patch.object(set_bound_module, "GREEDY_WHEN", -1.0 if greedy else set_bound_module.GREEDY_WHEN):
        found = set_bound(graph, cluster, target=fraction * optimum, time_limit=20.0)
    assert found.outcome in ("target refuted", "limit reached", "undecided", "time")
    if found.value is not None:
        assert found.value < optimum * (1 + 1e-9)
        assert [b for _, b in found.trace] == sorted(b for _, b in found.trace)
        assert found.value == found.trace[-1][1]
    if fraction >= 1.0:
        assert found.outcome != "target refuted"
    if found.outcome == "target refuted":
        assert found.value == pytest.approx(fraction * optimum)
    if found.ceiling is not None and found.value is not None and found.nodes == 0:
        assert found.value <= found.ceiling  # (branching refutes beyond the relaxation's ceiling)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(brute_force_graphs(), clusters(min_accelerators=1, max_accelerators=3, max_cpus=2),
       st.floats(0.5, 1.2))
def test_the_covering_master_ends_where_the_partitioning_one_does(graph: Graph, cluster: Cluster,
                                                                  fraction: float) -> None:
    """A generation whose master covers the classes first (``COVERING_FIRST``) decides every threshold as the
    partitioning master alone does: the cover's weaker limit never stands for the relaxation's (a converged cover
    hands over to the partition), and a converged generation's solution is a partition of the classes."""
    assume(set_bound_applies(graph, cluster) is None)
    optimum = brute_force_optima(graph, cluster, "throughput").any
    assume(optimum is not None and optimum > 0)
    sets = SetRelaxation.of(graph, cluster)
    verdicts = []
    for covering in (True, False):
        counts = {"pricings": 0, "nodes": 0, "thresholds": 0}
        with patch.object(set_bound_module, "COVERING_FIRST", covering):
            ended = _refute(sets, _Pool.seeded(sets, ()), fraction * optimum, monotonic() + 20.0, None, counts)
        assume(abs(ended.farley - cluster.accelerators) > 1e-6)  # (not decided by floating-point noise)
        verdicts.append(ended.verdict)
        if ended.verdict == "converged" and ended.solution:
            held = np.array([column.chosen for column in ended.solution], dtype=float)
            assert np.allclose(np.array([column.value for column in ended.solution]) @ held, 1.0, atol=1e-6)
    assert verdicts[0] == verdicts[1] != "stopped"


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(brute_force_graphs(), clusters(min_accelerators=1, max_accelerators=3, max_cpus=2), st.booleans())
def test_branching_decides_at_the_optimum(graph: Graph, cluster: Cluster, greedy: bool) -> None:
    """Without memory sums to drop, the relaxation with branching is exact: a target just below brute force's optimum
    is refuted, and asked for the optimum itself it finds a split of that max load (the evaluator's); with the greedy
    cover's columns and rounds too (``greedy``)."""
    roomy = Cluster(cluster.accelerators, memory=1e18, cpus=cluster.cpus)
    assume(set_bound_applies(graph, roomy) is None)
    optimum = brute_force_optima(graph, roomy, "throughput").any
    assume(optimum is not None and optimum > 0)
    short = optimum - max(1e-6 * optimum, 1e-8)  # below by more than the pricing's tolerance on loads
    with patch.object(set_bound_module, "GREEDY_WHEN", -1.0 if greedy else set_bound_module.GREEDY_WHEN):
        below = set_bound(graph, roomy, target=short, time_limit=20.0)
        at = set_bound(graph, roomy, target=optimum, time_limit=20.0)
    assert below.outcome == "target refuted" and below.value == short
    assert at.outcome != "target refuted" and at.split is not None
    assert at.split_value == pytest.approx(optimum, rel=1e-9)
    assert max(device_loads(graph, roomy, at.split).load()) == at.split_value


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(brute_force_graphs(), clusters(min_accelerators=1, max_accelerators=3, max_cpus=2), st.integers(0, 2**31))
def test_a_rounded_master_solution_is_a_legal_split(graph: Graph, cluster: Cluster, seed: int) -> None:
    """The polish's starts from the master: any columns with any values round to a legal split (every class placed,
    memory and support respected) or, without a CPU core, to None; an integral solution rounds to its own split (the
    same max load)."""
    assume(set_bound_applies(graph, cluster) is None)
    sets = SetRelaxation.of(graph, cluster)
    rng = np.random.default_rng(seed)
    columns = [_Column(rng.random(sets.classes) < 0.4, cpu=bool(cluster.cpus) and rng.random() < 0.3,
                       value=float(rng.random())) for _ in range(int(rng.integers(0, 8)))]
    rounded = _rounded_split(sets, columns)
    if rounded is None:
        assert not cluster.cpus  # (a CPU core takes any class; without one, the accelerators' memory may not)
    else:
        assert rounded.shape == (sets.classes,) and not check_feasibility(graph, cluster, rounded[sets.unit])
    split = solve(graph, cluster, method="dp").device
    if split is None or check_feasibility(graph, cluster, split):
        return
    acc_sets, cpu_sets = sets.device_sets(split)
    integral = [_Column(chosen, cpu, 1.0) for cpu, chosen_sets in ((False, acc_sets), (True, cpu_sets))
                for chosen in chosen_sets]
    again = _rounded_split(sets, integral)
    assert again is not None
    assert max_load(graph, cluster, again[sets.unit]) == pytest.approx(max_load(graph, cluster, split), rel=1e-12)


@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(dags(min_nodes=10, max_nodes=16, colors=False, unsupported=False),
       clusters(min_accelerators=3, max_accelerators=4, max_cpus=2, memory=False), st.sampled_from([1.0, 1.02, 1.1]))
def test_a_dive_finds_only_splits_within_its_threshold(graph: Graph, cluster: Cluster, fraction: float) -> None:
    """A dive from the root's converged master (at a threshold at or above the DP's split: the relaxation holds a
    solution) ends in a legal split within the threshold, or in nothing; every generation inside it keeps the fixed
    columns whole: no other column of its master touches their classes. (Graphs of 10-16 nodes on 3-4 accelerators:
    on brute force's tiny graphs the root's master is integral 97 times in 100, nothing to dive on; here about 70% of
    the examples fix columns.)"""
    assume(set_bound_applies(graph, cluster) is None)
    start = solve(graph, cluster, method="dp")
    assume(start.device is not None and start.objective > 0)
    threshold = fraction * start.objective
    sets = SetRelaxation.of(graph, cluster)
    pool, counts = _Pool.seeded(sets, ()), {"pricings": 0}
    root = _refute(sets, pool, threshold, float("inf"), None, counts)
    assert root.verdict == "converged"
    real = set_bound_module._refute

    def kept_whole(sets_: SetRelaxation, pool_: _Pool, threshold_: float, *args: object, **kwargs: object) -> object:
        ended = real(sets_, pool_, threshold_, *args, **kwargs)
        node = args[3]
        assert isinstance(node, _Branch) and node.fixed
        fixed = {chosen.tobytes() for chosen, _ in node.fixed}
        for column in ended.solution:
            assert column.chosen.tobytes() in fixed or not (column.chosen & node.taken()).any()
        return ended

    order = frontier_order(sets)
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    with patch.object(set_bound_module, "_refute", kept_whole):
        device = _dive(sets, pool, threshold, float("inf"), None, counts, lambda: False, _Branch(), root, position)
    if device is not None:
        assert device.shape == (sets.classes,) and (device >= 0).all()
        assert not check_feasibility(graph, cluster, device[sets.unit])
        assert max_load(graph, cluster, device[sets.unit]) <= threshold * (1 + 1e-9) + 1e-9


def test_the_bound_offers_legal_splits_from_its_masters() -> None:
    """``offer`` gets a split from each converged master (at and beyond the relaxation's limit): each legal, none
    below the bound proven."""
    w = read_workload(workload_path("layer_bert24_inference"))
    start = solve(w, method="dp").device
    offers: list[np.ndarray] = []
    found = set_bound(w.graph, w.cluster, target=17.72, seeds=(start,), time_limit=60.0, rel_gap=1e-4,
                      offer=offers.append)
    assert offers and found.value is not None
    for split in offers:
        assert not check_feasibility(w.graph, w.cluster, split)
        assert max_load(w.graph, w.cluster, split) >= found.value


def test_branching_certifies_a_shipped_workload() -> None:
    """layer_bert24_inference aimed at 17.72 (the optimum: 17.71472) within 1e-4: past the relaxation's limit the
    branching finds a split within 1e-4 of the bound, re-scored by the evaluator, and that certifies it."""
    w = read_workload(workload_path("layer_bert24_inference"))
    start = solve(w, method="dp").device
    found = set_bound(w.graph, w.cluster, target=17.72, seeds=(start,), time_limit=60.0, rel_gap=1e-4)
    assert found.outcome == "target refuted" and found.nodes > 0 and found.split is not None
    assert found.split_value == max(device_loads(w.graph, w.cluster, found.split).load())
    assert found.value is not None and found.split_value * (1 - 1e-4) <= found.value <= found.split_value


def test_bound_on_a_shipped_workload_reaches_its_limit() -> None:
    """layer_bert24_inference (optimum 17.7147): the relaxation refutes 17.70 from the DP's split; asked for the
    optimum itself, it stops at a limit within it, the last refuted and the first converged threshold adjacent."""
    w = read_workload(workload_path("layer_bert24_inference"))
    start = solve(w, method="dp").device
    refuted = set_bound(w.graph, w.cluster, target=17.70, lower=17.0, seeds=(start,), time_limit=60.0)
    assert refuted.outcome == "target refuted" and refuted.value == 17.70
    # Halfway first, and halfway again until within APPROACH of the target, then the target itself.
    bounds = [b for _, b in refuted.trace]
    assert bounds[0] == pytest.approx(17.35) and bounds[-1] == 17.70 and bounds == sorted(bounds)
    assert bounds[-2] >= 17.70 * (1 - APPROACH) and all(b < 17.70 * (1 - APPROACH) for b in bounds[:-2])
    limit = set_bound(w.graph, w.cluster, target=17.7147, seeds=(start,), time_limit=60.0)
    assert limit.outcome in ("target refuted", "limit reached")
    assert limit.value is not None and 17.70 <= limit.value <= 17.7147 + 1e-9


def test_applies_only_to_plain_loads_on_identical_accelerators() -> None:
    graph = banded_graph(8)
    assert set_bound_applies(graph, Cluster(2, cpus=1)) is None
    assert "GPipe" in set_bound_applies(graph, Cluster(2, cpus=1), gpipe=True)
    assert "identical" in set_bound_applies(graph, Cluster(2, memory=[1e9, 2e9], cpus=1))
    assert "no accelerators" in set_bound_applies(graph, Cluster(0, cpus=2))
    with pytest.raises(ValueError, match="identical accelerators"):
        SetRelaxation.of(graph, Cluster(2, speed=[1.0, 2.0], cpus=1))


def test_relay_runs_the_set_bound_after_cpsats_leg() -> None:
    """In the relay, the set bound runs between CP-SAT's leg and HiGHS's, says what it did, and its bound holds
    in the result; with set_bound=False it does not run."""
    from exactplace.methods import mip

    graph, cluster = banded_graph(), Cluster(4, cpus=1)
    with patch.object(mip, "CPSAT_LEG_SECONDS", 0.05):
        p = solve(graph, cluster, method="mip", contiguous=False, rel_gap=0.0, time_limit=6, threads=2,
                  set_bound=True)
        off = solve(graph, cluster, method="mip", contiguous=False, rel_gap=0.0, time_limit=6, threads=2,
                    set_bound=False)
    assert p.solver == "cpsat+highs"
    report = p.info["set_bound"]
    assert report["outcome"] in ("target refuted", "limit reached", "undecided", "time")
    assert report["target"] == pytest.approx(report["start"])  # rel_gap 0: the target is the start itself
    if report["bound"] is not None:
        assert p.bound >= report["bound"] - 1e-9 and report["bound"] <= p.objective
    if report["outcome"] == "target refuted":
        assert p.status is Status.OPTIMAL and p.info["certified_by"] == "set_bound"
    assert "set_bound" not in off.info
    with pytest.raises(ParameterError, match="set_bound"):
        solve(graph, cluster, objective="latency", method="mip", set_bound=True)


def test_bisection_ends_where_no_float_lies_between() -> None:
    """Loads so small that halving between the refuted and the converged threshold gives one of them back: the
    bound stops there ("limit reached") instead of bisecting until its time limit (found by the property above)."""
    tiny = 1.401298464324817e-45  # a subnormal load: the bisection from 0 reaches the bottom of the floats
    graph = Graph([Node(0, 0.0, tiny), Node(1, 0.0, 0.0)], [(0, 1)])
    found = set_bound(graph, Cluster(2, cpus=0), target=tiny, time_limit=30.0)
    assert found.outcome == "limit reached" and found.value is None and 0.0 < found.ceiling <= tiny


def test_aim_lowers_the_target_during_the_run() -> None:
    """A better split found meanwhile (``aim``) lowers the target: asked for the optimum 17.7147, which the
    relaxation cannot refute, it refutes the 17.70 the aim names instead; an aim above the target is ignored."""
    w = read_workload(workload_path("layer_bert24_inference"))
    start = solve(w, method="dp").device
    asked: list[int] = []

    def aim() -> float:
        asked.append(1)
        return 17.70

    lowered = set_bound(w.graph, w.cluster, target=17.7147, lower=17.0, seeds=(start,), aim=aim, time_limit=60.0)
    assert lowered.outcome == "target refuted" and lowered.value == 17.70 and len(asked) >= lowered.thresholds
    above = set_bound(w.graph, w.cluster, target=17.70, lower=17.0, seeds=(start,), aim=lambda: 99.0,
                      time_limit=60.0)
    assert above.outcome == "target refuted" and above.value == 17.70


def _relayed_with(stand_in: object) -> object:
    """``method="mip"``'s relay on a banded graph (CP-SAT's leg cut to 0.05 s) with ``stand_in`` for the set bound."""
    from exactplace.bounds import device_sets as module
    from exactplace.methods import mip

    graph, cluster = banded_graph(), Cluster(4, cpus=1)
    with patch.object(mip, "CPSAT_LEG_SECONDS", 0.05), patch.object(module, "set_bound", stand_in):
        p = solve(graph, cluster, method="mip", contiguous=False, rel_gap=0.0, time_limit=6, threads=2,
                  set_bound=True)
    if "relay" not in p.info:
        pytest.skip("CP-SAT proved the optimum within its 0.05-s leg: nothing was relayed")
    return p


def test_relay_interrupted_in_the_set_bound_keeps_what_it_knows() -> None:
    """Ctrl-C while the set bound runs (its outcome "interrupted"): the relay returns its best split, feasible,
    limit interrupt, with the bound proven so far."""
    from exactplace.bounds.device_sets import SetBound
    from exactplace.core.placement import Limit

    def interrupted(*args: object, **kwargs: object) -> SetBound:
        return SetBound(value=None, ceiling=None, outcome="interrupted", trace=(), thresholds=0, pricings=0,
                        columns=0, seconds=0.0)

    p = _relayed_with(interrupted)
    assert p.info["set_bound"]["outcome"] == "interrupted"
    assert p.status is Status.FEASIBLE and p.limit is Limit.INTERRUPT
    assert p.device is not None and p.bound is not None and p.bound <= p.objective
    assert "certified_by" not in p.info


def test_relay_certified_by_the_set_bound_says_so() -> None:
    """A refuted target (here handed over by a stand-in for the bound, at the target the relay asks) returns the
    relay's best split optimal, certified by the set bound, with what the bound reported."""
    from exactplace.bounds.device_sets import SetBound

    def refuted(*args: object, target: float, **kwargs: object) -> SetBound:
        return SetBound(value=target, ceiling=None, outcome="target refuted", trace=((0.0, target),), thresholds=1,
                        pricings=0, columns=0, seconds=0.0)

    p = _relayed_with(refuted)
    assert p.status is Status.OPTIMAL and p.info["certified_by"] == "set_bound"
    assert p.info["set_bound"]["outcome"] == "target refuted" and p.bound == pytest.approx(p.objective)


def test_a_better_split_found_while_branching_settles_it() -> None:
    """The target lowered below the proven bound while the branch-and-price runs (a better split found beside it)
    ends the branching before its next node: the target is refuted, by the bound already proven."""
    from exactplace.bounds import device_sets as module

    real, began = module._branch_and_price, []

    def watched(*args: object, **kwargs: object) -> object:
        began.append(True)
        return real(*args, **kwargs)

    w = read_workload(workload_path("layer_bert24_inference"))
    start = solve(w, method="dp").device
    with patch.object(module, "_branch_and_price", watched):
        found = set_bound(w.graph, w.cluster, target=17.72, seeds=(start,), time_limit=60.0, rel_gap=1e-4,
                          aim=lambda: 17.0 if began else 17.72)  # (the optimum: 17.71472)
    assert began and found.outcome == "target refuted" and found.nodes == 0 and found.split is None
    assert found.value is not None and 17.0 < found.value <= 17.7148


def test_relay_takes_the_split_branching_found() -> None:
    """A split the set bound's branching found (stood in for: a longer solve's, beforehand) becomes the relay's split
    when better than its start, and the refuted target then certifies it."""
    from exactplace.bounds.device_sets import SetBound

    best = solve(banded_graph(), Cluster(4, cpus=1), method="mip", contiguous=False, rel_gap=0.0, time_limit=20)

    def branched(*args: object, **kwargs: object) -> SetBound:
        return SetBound(value=best.objective, ceiling=None, outcome="target refuted",
                        trace=((0.0, best.objective),), thresholds=1, pricings=0, columns=0, seconds=0.0,
                        split=best.device, split_value=best.objective, nodes=3, dives=2)

    p = _relayed_with(branched)
    report = p.info["set_bound"]
    assert report["split"] == best.objective and report["nodes"] == 3 and report["dives"] == 2
    assert p.status is Status.OPTIMAL and p.objective <= best.objective * (1 + 1e-9)
    if report["start"] > best.objective * (1 + 1e-9):  # the relay's own split was worse: branching's was taken
        assert np.array_equal(p.device, best.device) or p.info["relay"]["polish"].get("taken")


@pytest.mark.parametrize("name", ["layer_bert24_inference", "layer_bert24_training"])
def test_groups_alike_are_one_and_every_load_the_evaluators(name: str) -> None:
    """The relaxation keeps one group per class set that can be split (a training graph's forward and backward
    groups of an edge are one, groups of no cost are gone), and a set's load is still the evaluator's; the class
    order is a permutation, the same on every call, with no more states than the plain greedy's."""
    w = read_workload(workload_path(name))
    sets = SetRelaxation.of(w.graph, w.cluster)
    distinct = {tuple(np.unique(m)) for m in sets.members}
    assert len(distinct) == len(sets.members) and all(len(m) > 1 for m in distinct)
    assert (sets.group_cost > 0).all() and len(sets.members) < len(w.graph.group_cost)
    rng = np.random.default_rng(5)
    for _ in range(30):
        chosen = rng.random(sets.classes) < 0.4
        device = np.where(chosen[sets.unit], 0, 1)
        assert sets.load(chosen) == pytest.approx(device_loads(w.graph, w.cluster, device).load()[0], abs=1e-9)
    order = frontier_order(sets)
    assert sorted(order.tolist()) == list(range(sets.classes)) and np.array_equal(order, frontier_order(sets))
    plain = _greedy_order(sets, first_node_positions(sets), closing_first=False)
    assert order_cost(sets, order) <= order_cost(sets, plain)


def test_merged_classes_keep_every_load() -> None:
    """A set of merged classes loads what the same classes load unmerged (groups inside a merged class never
    split), and pairs chain: merging (a, b) and (b, c) makes one class."""
    w = read_workload(workload_path("layer_bert24_inference"))
    sets = SetRelaxation.of(w.graph, w.cluster)
    rng = np.random.default_rng(3)
    drawn = [tuple(int(c) for c in rng.choice(sets.classes, 2, replace=False)) for _ in range(6)]
    pairs = (*drawn, (0, 1), (1, 2))
    merged, into = sets.merged(pairs)
    assert into[0] == into[1] == into[2] and merged.classes <= sets.classes - 2
    assert merged.acc.sum() == pytest.approx(sets.acc.sum()) and merged.cpu.sum() == pytest.approx(sets.cpu.sum())
    for _ in range(20):
        chosen = rng.random(merged.classes) < 0.3
        assert merged.load(chosen) == pytest.approx(sets.load(chosen[into]), rel=1e-12)


def test_an_undecided_threshold_sends_the_next_ones_below_it() -> None:
    """A generation out of patience (stood in for: every threshold above 17.5 "stopped") leaves its threshold
    undecided; the bound still climbs below it, to 17.5 within the resolution, never above."""
    from exactplace.bounds import device_sets as module

    real = module._refute

    def slow_above(sets: object, pool: object, threshold: float, *rest: object, **options: object) -> object:
        return module._Generation("stopped") if threshold > 17.5 else real(sets, pool, threshold, *rest, **options)

    w = read_workload(workload_path("layer_bert24_inference"))
    start = solve(w, method="dp").device
    with patch.object(module, "_refute", slow_above):
        found = set_bound(w.graph, w.cluster, target=17.70, lower=17.0, seeds=(start,), time_limit=10.0)
    assert found.outcome == "time" and found.value is not None and found.ceiling is None
    assert 17.5 * (1 - 1e-5) <= found.value <= 17.5
    assert [b for _, b in found.trace] == sorted(b for _, b in found.trace)


def test_it_gives_up_when_not_even_the_first_threshold_is_decided() -> None:
    """Every generation out of patience (stood in for): after the first, the bound gives up, nothing proven beyond
    what the heaviest accelerator proved first."""
    from exactplace.bounds import device_sets as module

    calls: list[float] = []

    def stopped(sets: object, pool: object, threshold: float, *rest: object, **options: object) -> object:
        calls.append(threshold)
        return module._Generation("stopped")

    graph = banded_graph(8)
    with patch.object(module, "_refute", stopped):
        found = set_bound(graph, Cluster(2, cpus=1), target=5.0, lower=1.0, time_limit=10.0)
    assert found.outcome == "undecided" and len(calls) == 1 and found.seconds < 5.0
    assert found.heaviest is not None and found.value == found.heaviest  # (a chain: a heavy set pays a transfer)
    with patch.object(module, "_refute", stopped), patch.object(module, "heaviest_bound", lambda *a, **o: None):
        found = set_bound(graph, Cluster(2, cpus=1), target=5.0, lower=1.0, time_limit=10.0)
    assert found.outcome == "undecided" and found.value is None and len(calls) == 2


def test_a_pricing_past_its_deadline_stops_the_generation() -> None:
    """The pricing DP honours its deadline (duals of one value per time can keep it minutes on a big graph): it
    raises TimeoutError, and the generation then ends "stopped" with the best bound it met, within its time."""
    sets = SetRelaxation.of(banded_graph(40), Cluster(4, cpus=1))
    pricer = Pricer(sets.acc, sets.on_acc, sets.group_cost, sets.members, frontier_order(sets))
    with pytest.raises(TimeoutError):
        pricer.price(np.full(sets.classes, 0.3), threshold=20.0, deadline=monotonic() - 1.0)
    counts = {"pricings": 0, "nodes": 0, "thresholds": 0}
    price = Pricer.price

    def late(self: Pricer, *args: object, **options: object) -> object:
        if counts["pricings"] >= 3:  # (the generation's third pricing, once it has a bound of its own)
            options["deadline"] = monotonic() - 1.0
        return price(self, *args, **options)

    with patch.object(Pricer, "price", late):
        started = monotonic()
        ended = _refute(sets, _Pool.seeded(sets, ()), 20.0, started + 60.0, None, counts)
    assert ended.verdict == "stopped" and np.isfinite(ended.farley) and monotonic() - started < 30.0


def test_a_pricing_past_its_memory_budget_stops_as_at_its_deadline() -> None:
    """A pricing whose fronts would outgrow ``PRICING_MEMORY`` stops and raises TimeoutError saying so (before, one
    such pricing took a held-out graph's process past 24 GB); within the budget, the same maximum. A generation whose
    pricings all outgrow it ends "stopped", not in an error."""
    from exactplace.bounds import device_sets as module

    sets = SetRelaxation.of(banded_graph(40), Cluster(4, cpus=1))
    pricer = Pricer(sets.acc, sets.on_acc, sets.group_cost, sets.members, frontier_order(sets))
    duals = np.full(sets.classes, 0.3)
    value, _ = pricer.price(duals, threshold=20.0)
    with patch.object(module, "PRICING_MEMORY", 1024), pytest.raises(TimeoutError, match="memory budget"):
        pricer.price(duals, threshold=20.0)
    with patch.object(module, "PRICING_MEMORY", 2**28):
        assert pricer.price(duals, threshold=20.0)[0] == value
    with patch.object(module, "PRICING_MEMORY", 1024):
        ended = _refute(sets, _Pool.seeded(sets, ()), 20.0, monotonic() + 60.0, None, {"pricings": 0})
    assert ended.verdict == "stopped"


def _verdicts_with_capped(capped_when: object) -> tuple[list[bool], dict[float, tuple[str, str]]]:
    """The verdicts at thresholds 6 and 7 on a banded graph (refuted in 9 pricings, converged in 3) with every pricing
    that ``capped_when(floor, deadline, generation's deadline)`` running past its cap, and without the caps; and
    whether any was capped."""
    sets = SetRelaxation.of(banded_graph(12), Cluster(3, cpus=1))
    deadline = monotonic() + 60.0
    price = Pricer.price
    capped: list[bool] = []

    def slow(self: Pricer, duals: np.ndarray, threshold: float, floor: float = 1.0, *args: object,
             **options: object) -> object:
        if capped_when(floor, options.get("deadline", np.inf), deadline):  # type: ignore[operator]
            capped.append(True)
            raise TimeoutError
        return price(self, duals, threshold, floor, *args, **options)

    outcomes = {}
    for threshold in (6.0, 7.0):
        counts = {"pricings": 0, "nodes": 0, "thresholds": 0}
        with patch.object(Pricer, "price", slow):
            fallback = _refute(sets, _Pool.seeded(sets, ()), threshold, deadline, None, counts).verdict
        plain = _refute(sets, _Pool.seeded(sets, ()), threshold, deadline, None, dict(counts)).verdict
        outcomes[threshold] = (fallback, plain)
    return capped, outcomes


def test_a_smoothed_pricing_out_of_its_slack_falls_back_to_the_masters_duals() -> None:
    """Every pricing at smoothed duals running past its own cap (as near-uniform duals do on a big graph): the
    generation still decides the threshold, by pricing the master's duals: the verdict it reaches without the caps."""
    # (only the smoothed pricings get a deadline of their own)
    capped, outcomes = _verdicts_with_capped(lambda floor, cap, deadline: cap < deadline)
    assert capped and outcomes == {6.0: ("refuted", "refuted"), 7.0: ("converged", "converged")}


def test_the_cpu_cores_pricing_past_its_cap_gives_their_ceiling_and_the_same_verdict() -> None:
    """Every pricing of the CPU cores' knapsack running past its short cap (values nearly proportional to the
    weights keep every subset sum): Farley's bound takes their fractional knapsack (an upper bound, so still a
    proof), a greedy set stands in for their columns, and convergence is decided by an exact pricing: the verdicts
    are the uncapped ones."""
    capped, outcomes = _verdicts_with_capped(lambda floor, cap, deadline: floor == 0.0 and cap < deadline)
    assert capped and outcomes == {6.0: ("refuted", "refuted"), 7.0: ("converged", "converged")}


def test_a_cancelled_pricing_stops_at_once() -> None:
    """The DP polls its ``cancel`` event (a bound beside a solver is stopped so; signals reach only the main
    thread): set, a pricing that runs for seconds (a CPU core's knapsack, values nearly proportional to the weights:
    every subset sum kept; 6.5 s here) raises TimeoutError within a poll."""
    sets = SetRelaxation.of(banded_graph(200), Cluster(4, cpus=1))
    pricer = Pricer(sets.cpu, np.ones(sets.classes, dtype=bool), np.zeros(0), [], np.arange(sets.classes))
    duals = sets.cpu / sets.cpu.sum() * (1.0 + 1e-3 * np.random.default_rng(0).standard_normal(sets.classes))
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    with pytest.raises(TimeoutError):
        pricer.price(duals, threshold=sets.cpu.sum() / 2, floor=0.0, keep=3, cancel=cancel)
    assert cancel.is_set()  # (uncancelled, it returns a value after seconds)


def test_the_class_order_stops_when_asked_and_keeps_the_tries_done() -> None:
    """Each greedy try is quadratic in the classes (minutes on a 4,901-node operator graph, which kept an any-split
    solve with a 60 s limit running past 200 s): ``stop`` ends the tries, keeping the best finished one."""
    w = read_workload(workload_path("op_bert3_inference"))
    sets = SetRelaxation.of(w.graph, w.cluster)
    with pytest.raises(TimeoutError):
        frontier_order(sets, stop=lambda: True)
    asked = itertools.count()
    steps_of_one_try = -(-sets.classes // 16)  # (it asks every 16 steps)
    order = frontier_order(sets, stop=lambda: next(asked) > steps_of_one_try)
    assert sorted(order.tolist()) == list(range(sets.classes))
    assert order_cost(sets, order) >= order_cost(sets, frontier_order(sets))


def test_the_set_bound_ends_on_time_while_it_orders_the_classes() -> None:
    w = read_workload(workload_path("op_bert3_inference"))
    found = set_bound(w.graph, w.cluster, target=100.0, time_limit=0.0)
    assert found.outcome == "time" and found.value is None and found.thresholds == 0


@pytest.mark.parametrize("name", ["op_bert3_inference", "layer_bert24_training"])
def test_the_single_class_columns_carry_the_relaxations_own_loads(name: str) -> None:
    """The pool's single classes are loaded by one pass over the groups (a pass over every group and class for each
    took minutes on thousands of classes): the very loads SetRelaxation.load gives."""
    w = read_workload(workload_path(name))
    sets = SetRelaxation.of(w.graph, w.cluster)
    pool = set_bound_module._Pool.seeded(sets, ())
    assert len(pool.acc) == int(sets.on_acc.sum())
    assert [sets.load(chosen) for chosen in pool.acc] == pool.acc_load
