"""The device-set relaxation (formulations/device_sets.py) and the pricing of its bound (bounds/device_sets/).

The pricing dynamic program (C++) against every subset of classes and against the pure-Python DP it replaced
(``set_pricing_oracle``) on the shared workloads, its deadline, memory budget and cancel; the relaxation's groups,
merged classes and class order; the packing bound's dual point, the smoothing's weight and the heaviest set's MIP.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from pathlib import Path
from time import monotonic

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
from set_pricing_oracle import Pricer as PythonPricer
from strategies import any_graphs, banded_graph, clusters

from exactplace import Cluster, Status, read_workload, workload_path
from exactplace.bounds.device_sets import DEFAULT_DEVICE_SETS, Pricer
from exactplace.bounds.device_sets.columns import Pool
from exactplace.bounds.device_sets.generation import refute
from exactplace.bounds.device_sets.pricing import capacity as pricing_capacity
from exactplace.bounds.device_sets.smoothing import adapted_weight, work_center
from exactplace.core.graph import Graph
from exactplace.evaluators.max_load import device_loads

SHARED = Path(__file__).resolve().parents[2] / "shared" / "workloads" / "throughput"


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
    farley, duals, cpu_dual = work_center(sets, threshold)
    capacity = pricing_capacity(threshold)  # (the pricings' tolerance)
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
    assert out.bound - DEFAULT_DEVICE_SETS.heaviest_margin * (1.0 + abs(out.bound)) <= least(need)
    assert out.objective <= least(need) + 1e-6
    assert sets.on_acc[chosen].all() and sets.acc[chosen].sum() >= need - tolerance
    assert sets.load(chosen) <= out.objective + 1e-9


@given(st.lists(st.tuples(st.lists(st.floats(-3.0, 3.0), min_size=3, max_size=3),
                          st.lists(st.floats(-1.0, 1.0), min_size=3, max_size=3)), max_size=60))
def test_smoothing_weight_stays_a_weight(steps: list[tuple[list[float], list[float]]]) -> None:
    """The adapted smoothing weight stays in [0, smoothing_cap] whatever the pricings say; it falls exactly when the
    subgradient at the smoothed duals points towards the master's, and a run of either signal takes it to its end."""
    SMOOTHING, SMOOTHING_CAP = DEFAULT_DEVICE_SETS.smoothing, DEFAULT_DEVICE_SETS.smoothing_cap
    weight = SMOOTHING
    for devices_at_best, direction in steps:
        following = adapted_weight(weight, np.array(devices_at_best), np.array(direction))
        towards = (1.0 - np.array(devices_at_best)) @ np.array(direction) > 0.0
        assert (following < weight or weight == 0.0) if towards else (weight <= following <= SMOOTHING_CAP)
        weight = following
    assert 0.0 <= weight <= SMOOTHING_CAP
    falling, rising = SMOOTHING, SMOOTHING
    for _ in range(10):
        falling = adapted_weight(falling, np.zeros(1), np.ones(1))
        rising = adapted_weight(rising, np.full(1, 2.0), np.ones(1))
    assert falling == 0.0 and rising == pytest.approx(SMOOTHING_CAP, abs=0.2)


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


def test_a_pricing_past_its_memory_budget_stops_as_at_its_deadline() -> None:
    """A pricing whose fronts would outgrow its ``memory`` (``pricing_memory``) stops and raises TimeoutError saying
    so (unpruned fronts would otherwise grow until the process is killed for memory); within the budget, the same
    maximum. A generation whose pricings all outgrow it (``settings.pricing_memory``) ends "stopped", not in an
    error."""
    sets = SetRelaxation.of(banded_graph(40), Cluster(4, cpus=1))

    def pricer(memory: int = DEFAULT_DEVICE_SETS.pricing_memory) -> Pricer:
        return Pricer(sets.acc, sets.on_acc, sets.group_cost, sets.members, frontier_order(sets), memory=memory)

    duals = np.full(sets.classes, 0.3)
    value, _ = pricer().price(duals, threshold=20.0)
    with pytest.raises(TimeoutError, match="memory budget"):
        pricer(1024).price(duals, threshold=20.0)
    assert pricer(2**28).price(duals, threshold=20.0)[0] == value
    ended = refute(sets, Pool.seeded(sets, ()), 20.0, monotonic() + 60.0, None, {"pricings": 0},
                   settings=dataclasses.replace(DEFAULT_DEVICE_SETS, pricing_memory=1024))
    assert ended.verdict == "stopped"


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
