"""The step-time simulator (objective "makespan") against hand-computed schedules and brute force over orders."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from oracle import brute_force_orders, replay_makespan
from strategies import clusters, dags, placements

from exactplace import Cluster, Graph, Node, ParameterError, PlacementError, evaluate, solve
from exactplace.evaluators import device_loads
from exactplace.evaluators.makespan import makespan, simulate
from exactplace.methods import registry
from exactplace.methods.catalog import BUILTIN_METHODS

TWO = Cluster(accelerators=2, cpus=1)


def chain() -> Graph:
    return Graph([Node(1, 4.0, 1.0, comm=0.5), Node(2, 3.0, 2.0, comm=0.5), Node(3, 1.0, 1.0)], [(1, 2), (2, 3)])


@pytest.mark.parametrize("contention", [True, False])
def test_chain_by_hand(contention: bool) -> None:
    g = chain()
    # one device: 1 + 2 + 1, no transfers
    assert makespan(g, TWO, [0, 0, 0], contention=contention) == 4.0
    # acc0 -> acc1 -> CPU: 1 | out 0.5 | in 0.5 | 2 | out 0.5 | CPU 1
    s = simulate(g, TWO, [0, 1, 2], contention=contention)
    assert s.start.tolist() == [0.0, 2.0, 4.5] and s.finish.tolist() == [1.0, 4.0, 5.5]
    assert s.channel.tolist() == [0.5, 1.0, 0.0] and s.busy.tolist() == [1.0, 2.0, 1.0]
    assert s.idle.tolist() == [4.5, 3.5, 4.5]


def test_fork_contention_by_hand() -> None:
    # 1 on acc0 feeds 2 on acc1 and 3 on the CPU through one group (cost 1): copied out once.
    g = Graph([Node(1, 9.0, 1.0, comm=1.0), Node(2, 9.0, 1.0), Node(3, 1.0, 9.0)], [(1, 2), (1, 3)])
    s = simulate(g, TWO, [0, 1, 2], contention=True)
    assert s.start.tolist() == [0.0, 3.0, 2.0]  # out 1-2; CPU reads RAM at 2; acc1 copies in 2-3
    # two groups (different costs) leaving acc0 queue on its one channel
    g2 = Graph([Node(1, 9.0, 1.0), Node(2, 9.0, 1.0), Node(3, 9.0, 1.0)], [(1, 2, 1.0), (1, 3, 2.0)])
    on = simulate(g2, Cluster(3, cpus=0), [0, 1, 2], contention=True)
    off = simulate(g2, Cluster(3, cpus=0), [0, 1, 2], contention=False)
    # contention: out(1.0) 1-2, out(2.0) 2-4; in on acc1 2-3, in on acc2 4-6
    assert on.start.tolist() == [0.0, 3.0, 6.0] and on.makespan == 7.0
    # contention-free: both copies out start at 1
    assert off.start.tolist() == [0.0, 3.0, 5.0] and off.makespan == 6.0


def test_join_contention_by_hand() -> None:
    # 1 (acc0) and 2 (acc1) both feed 3 on acc2: its channel copies the two inputs in one after the other.
    g = Graph([Node(1, 9.0, 1.0, comm=1.0), Node(2, 9.0, 1.0, comm=1.0), Node(3, 9.0, 1.0)], [(1, 3), (2, 3)])
    c = Cluster(3, cpus=0)
    assert simulate(g, c, [0, 1, 2], contention=True).start.tolist() == [0.0, 0.0, 4.0]
    assert simulate(g, c, [0, 1, 2], contention=False).start.tolist() == [0.0, 0.0, 3.0]
    # both on one device: they run one after the other (ties by topological order), no transfer to 3
    assert simulate(g, c, [0, 0, 0]).start.tolist() == [0.0, 1.0, 2.0]


def test_given_order_is_followed_and_checked() -> None:
    g = Graph([Node(1, 1.0, 1.0), Node(2, 1.0, 5.0), Node(3, 1.0, 1.0)], [(1, 3)])
    c = Cluster(1, cpus=0)
    assert simulate(g, c, [0, 0, 0]).start.tolist() == [0.0, 1.0, 6.0]  # derived: ready at 0, topological
    assert simulate(g, c, [0, 0, 0], order=[0, 2, 1]).start.tolist() == [0.0, 2.0, 1.0]
    with pytest.raises(PlacementError, match="before its input"):
        simulate(g, c, [0, 0, 0], order=[2, 0, 1])
    with pytest.raises(PlacementError, match="every node position"):
        simulate(g, c, [0, 0, 0], order=[0, 0, 1])


def test_unsupported_on_accelerator_is_inf_and_tables() -> None:
    g = Graph([Node(1, 1.0, None), Node(2, 1.0, 1.0)], [(1, 2)])
    assert makespan(g, TWO, [0, 1]) == math.inf
    s = simulate(chain(), TWO, [0, 1, 2])
    frame = s.to_frame()
    assert frame["node"].tolist() == [1, 2, 3] and frame["device"].tolist() == ["acc0", "acc1", "cpu0"]
    assert s.device_frame().loc["acc1", "channel"] == 1.0


def test_solve_scores_every_method_by_makespan() -> None:
    g = chain()
    for method in ("greedy", "dp", "m-etf"):
        p = solve(g, TWO, objective="makespan", method=method)
        assert p.objective == evaluate(g, TWO, p.device, "makespan", order=p.info.get("order"))
    p = solve(g, TWO, objective="makespan", method="dp", contention=False)
    assert p.status.value == "feasible" and p.bound is None and p.info["optimized"] == "throughput"




@given(dags(max_nodes=5).flatmap(lambda g: clusters(max_accelerators=2, max_cpus=2, memory=False).flatmap(
    lambda c: placements(g, c, supported=True).map(lambda d: (g, c, d)))))
def test_simulator_against_brute_force_over_orders(case: tuple[Graph, Cluster, np.ndarray]) -> None:
    graph, cluster, device = case
    if not np.isfinite(makespan(graph, cluster, device)):
        return
    best, orders = brute_force_orders(graph, cluster, device)
    for order in orders[:30]:
        expected = replay_makespan(graph, cluster, device, order)
        assert makespan(graph, cluster, device, order=order, contention=False) == pytest.approx(expected, abs=1e-9)
        # contention only delays transfers
        assert makespan(graph, cluster, device, order=order) >= expected - 1e-9
    derived = simulate(graph, cluster, device, contention=False)
    assert derived.makespan >= best - 1e-9
    # the derived order is a valid order that reproduces its own schedule
    assert makespan(graph, cluster, device, order=derived.order, contention=False) == pytest.approx(derived.makespan)
    # over the whole step a device computes its max-load compute and its channel moves its max-load communication
    loads = device_loads(graph, cluster, device)
    assert np.allclose(derived.busy, loads.compute.sum(axis=1))
    assert np.allclose(derived.channel, loads.comm.sum(axis=1))
    assert derived.makespan >= derived.busy.max() - 1e-9


@pytest.mark.parametrize("name", list(BUILTIN_METHODS))
def test_every_method_takes_the_makespan_objective(name: str) -> None:
    cls = registry.registered_methods()[name]
    if not cls.available():
        pytest.skip(f"{name} is not installed")
    g = chain()
    if cls.schedules:  # it optimizes under a pipeline schedule, which makespan does not take
        with pytest.raises(ParameterError, match="'schedule' parameter of solve must be a pipeline schedule"):
            solve(g, TWO, objective="makespan", method=name, time_limit=10)
        return
    p = solve(g, TWO, objective="makespan", method=name, time_limit=10)
    assert p.objective_name == "makespan" and p.has_solution
    assert p.objective == evaluate(g, TWO, p.device, "makespan", order=p.info.get("order"))
    if "makespan" not in cls.objectives:  # scored only: never claims optimality or a bound for makespan
        assert p.status.value == "feasible" and p.bound is None and p.info["optimized"] == cls.objectives[0]
