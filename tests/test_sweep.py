"""What-if sweeps (:mod:`exactplace.sweep`): every cell as a cold solve certifies it, the inverse questions as a
scan of cold solves answers them, the command line, Ctrl-C and Ray.

A cell the sweep settles by reusing a larger memory's optimum, a warm start or a method hint must come out as the
cold solve of that cell (brute force checks the cold solves elsewhere), and its placement must be feasible on the
cell's own cluster: a reuse that ignored the smaller memory would break both.
"""

from __future__ import annotations

import json
import math
import signal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import brute_force_optima
from strategies import dags, training_graphs
from test_interrupt import signal_group

from exactplace import Cluster, Graph, ParameterError, Status, read_workload, solve, workload_path
from exactplace.cli import main as cli
from exactplace.evaluators import check_feasibility, evaluate
from exactplace.sweep import SweepInterrupted, cells_json, fewest_accelerators, least_memory, sweep

EXAMPLES = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def graphs() -> st.SearchStrategy[Graph]:
    return st.one_of(dags(min_nodes=2, max_nodes=5, colors=False),
                     training_graphs(max_forward=3, orphans=False, extra_colors=False))


def _memories(graph: Graph) -> st.SearchStrategy[list[float]]:
    """Two or three memory sizes between the largest node and everything, so that the memory binds."""
    largest, total = float(graph.memory.max()), float(graph.memory.sum())
    return st.lists(st.floats(0.0, 1.0), min_size=2, max_size=3).map(
        lambda shares: sorted({largest + share * (1.01 * total - largest) for share in shares}))


@EXAMPLES
@given(data=st.data())
def test_every_cell_is_the_brute_force_optimum_of_its_cluster(data: st.DataObject) -> None:
    graph = data.draw(graphs())
    memory = data.draw(_memories(graph))
    cpus = data.draw(st.integers(0, 1))
    cells = sweep(graph, [1, 2, 3], memory, cluster=Cluster(1, math.inf, cpus))
    assert len(cells) == 3 * len(memory)
    for row in cells.itertuples():
        cluster = Cluster(row.accelerators, row.memory, cpus)
        placement = row.placement
        optimum = brute_force_optima(graph, cluster, "throughput").chain
        if optimum is None:
            assert row.status == "infeasible", row
            continue
        assert row.status == "optimal", row
        assert row.objective == pytest.approx(optimum, rel=1e-6, abs=1e-9), row
        assert row.bound <= row.objective * (1 + 1e-9) + 1e-9
        assert placement.cluster == cluster
        assert not check_feasibility(graph, cluster, placement.device), row
        assert evaluate(graph, cluster, placement.device) == row.objective


def test_a_reused_optimum_is_held_to_the_smaller_memory() -> None:
    workload = read_workload(workload_path("layer_bert24_training"))
    cells = sweep(workload, [2, 4, 8], [1e9, 2e9, 8e9])
    reused = cells[cells["settled"].str.startswith("reused")]
    assert not reused.empty  # the case under test happens
    for row in cells.itertuples():
        cold = solve(workload.graph, Cluster(row.accelerators, row.memory, workload.cluster.cpus))
        assert (row.status, row.objective) == (cold.status.value, pytest.approx(cold.objective)), row
        assert not check_feasibility(workload.graph, row.placement.cluster, row.placement.device)
    # 1 GB is too little for 2 accelerators to hold 8 GB's split: that cell is solved, not reused
    small = cells[(cells["memory"] == 1e9) & (cells["accelerators"] == 2)].iloc[0]
    assert not small["settled"].startswith("reused")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fewest_accelerators_is_the_first_count_of_a_cold_scan(data: st.DataObject) -> None:
    graph = data.draw(graphs())
    memory = data.draw(st.sampled_from([math.inf, float(graph.memory.max()) * 1.5]))
    cluster = Cluster(1, memory, data.draw(st.integers(0, 1)))
    values = [solve(graph, Cluster(k, memory, cluster.cpus)).objective for k in range(1, graph.n + 1)]
    target = data.draw(st.sampled_from([v for v in values if v is not None] or [1.0]))
    answer = fewest_accelerators(graph, target, cluster=cluster)
    reaching = [k for k, v in enumerate(values, 1) if v is not None and v <= target * (1 + 1e-9)]
    assert answer.value == (reaching[0] if reaching else None)
    assert answer.certified
    if answer.value is not None:
        assert answer.placement.objective <= target * (1 + 1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_least_memory_keeps_the_optimum_and_less_does_not(data: st.DataObject) -> None:
    graph = data.draw(graphs())
    k = data.draw(st.integers(1, 3))
    cpus = data.draw(st.integers(0, 1))
    answer = least_memory(graph, k, cluster=Cluster(k, math.inf, cpus))
    free = solve(graph, Cluster(k, math.inf, cpus))
    if not free.has_solution:
        assert answer.value is None
        return
    assert answer.certified and answer.target == free.objective
    at = solve(graph, Cluster(k, answer.value, cpus))
    assert at.objective == pytest.approx(free.objective)
    if answer.refuted is not None:
        below = solve(graph, Cluster(k, answer.refuted, cpus))
        assert not below.has_solution or below.objective > free.objective * (1 + 1e-9)
        assert answer.value - answer.refuted <= 1e-3 * answer.value


def test_least_memory_for_any_plan_under_a_schedule() -> None:
    workload = read_workload(workload_path("layer_bert24_training"))
    answer = least_memory(workload, 4, target=math.inf, schedule="1f1b", microbatches=8)
    assert answer.certified and answer.value is not None
    fits = solve(workload.graph, Cluster(4, answer.value, workload.cluster.cpus), schedule="1f1b", microbatches=8)
    assert fits.has_solution
    short = solve(workload.graph, Cluster(4, answer.refuted, workload.cluster.cpus), schedule="1f1b", microbatches=8)
    assert short.status is Status.INFEASIBLE


@pytest.mark.parametrize(("call", "named"), [
    (lambda w: sweep(w, []), "accelerators"),
    (lambda w: sweep(w, [0, 2]), "accelerators"),
    (lambda w: sweep(w, [2, 2]), "accelerators"),
    (lambda w: sweep(w, "2..4"), "accelerators"),
    (lambda w: sweep(w, [2], memory=[-1.0]), "memory"),
    (lambda w: sweep(w, [2], memory=[]), "memory"),
    (lambda w: sweep(w, [2], bandwidth=[1e9]), "bandwidth"),
    (lambda w: sweep(w.graph, [2]), "cluster"),
    (lambda w: sweep(w, [2], cluster=Cluster(4, cpus=1, machines=2, inter_machine_cost=2.0)), "cluster"),
    (lambda w: sweep(w, [2], objective="speed"), "objective"),
    (lambda w: sweep(w, [2], nonsense=1), "nonsense"),
    (lambda w: fewest_accelerators(w, -1.0), "target"),
    (lambda w: fewest_accelerators(w, 1.0, objective="latency"), "objective"),
    (lambda w: least_memory(w, 0), "accelerators"),
    (lambda w: least_memory(w, 2, rel_tol=2.0), "rel_tol"),
])
def test_bad_parameters_are_named(call, named: str) -> None:
    workload = read_workload(workload_path("layer_bert24_inference"))
    with pytest.raises(ParameterError, match=named):
        call(workload)


def test_bandwidth_of_a_json_workload_is_refused_by_name() -> None:
    with pytest.raises(ParameterError, match=r"bandwidth.*PipeDream"):
        sweep(str(workload_path("layer_bert24_inference")), [2], bandwidth=[1e9])


@pytest.mark.shared
def test_bandwidths_of_a_profile_read_it_again(shared_workloads: Path) -> None:
    profile = next((shared_workloads / "pipedream").rglob("*.txt"))
    cells = sweep(str(profile), [2, 4], bandwidth=[1e9, math.inf])
    assert sorted(set(cells["bandwidth"])) == [1e9, math.inf]
    free = cells[cells["bandwidth"] == math.inf]["objective"].to_numpy()
    slow = cells[cells["bandwidth"] == 1e9]["objective"].to_numpy()
    assert np.all(free <= slow * (1 + 1e-9)) and np.any(free < slow)  # transfers cost time at 1 GB/s


def test_the_command_prints_every_cell_and_ends_with_json(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    picture = tmp_path / "scaling.png"
    code = cli.main(["sweep", "layer_bert24_training", "--accelerators", "2..4", "--memory", "2e9,inf",
                     "--target", "60", "--json", "--plot", str(picture)])
    out = capsys.readouterr().out
    assert code == 0, out
    cells = json.loads(out.strip().splitlines()[-1])
    assert [(c["accelerators"], c["memory"]) for c in cells] == [(2, 2e9), (3, 2e9), (4, 2e9),
                                                                  (2, None), (3, None), (4, None)]
    for cell in cells:
        assert {"accelerators", "memory", "objective", "bound", "gap", "status"} <= set(cell)
        assert cell["status"] == "optimal"
    assert "4 accelerators reach 60 (certified)" in out
    assert picture.stat().st_size > 10_000


@pytest.mark.parametrize("argument", ["--accelerators=0..3", "--accelerators=4..2", "--accelerators=a",
                                      "--memory=-1", "--memory=8e9,8e9"])
def test_bad_flags_are_usage_errors(argument: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stop:
        cli.main(["sweep", "layer_bert24_inference", argument])
    assert stop.value.code == cli.EXIT_INPUT_ERROR
    assert argument.split("=")[0] in capsys.readouterr().err


@pytest.mark.shared
def test_ctrl_c_to_the_group_keeps_the_cells_done(shared_workloads: Path) -> None:
    gnmt = shared_workloads / "throughput" / "layer_gnmt_training.json"  # ~1 s of DP per cell
    code, out, err, _ = signal_group(["sweep", str(gnmt), "--accelerators", "2..32", "--memory", "inf", "--json"],
                                     None, after=10.0)
    assert code == cli.EXIT_INTERRUPTED, err
    assert "Traceback" not in err and "interrupted" in err
    cells = json.loads(out.strip().splitlines()[-1])
    assert 1 <= len(cells) < 31
    assert all(c["status"] == "optimal" for c in cells[:-1])  # the last one may be the interrupted one


def test_sweep_interrupted_holds_the_frame(monkeypatch: pytest.MonkeyPatch) -> None:
    from exactplace.sweep import grid

    calls = []
    real = grid._solve_cell

    def interrupt_the_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(grid, "_solve_cell", interrupt_the_third)
    with pytest.raises(SweepInterrupted) as stop:
        sweep(read_workload(workload_path("layer_bert24_inference")), [2, 3, 4, 5])
    assert list(stop.value.cells["accelerators"]) == [2, 3]
    assert [c["status"] for c in cells_json(stop.value.cells)] == ["optimal", "optimal"]


def test_rows_as_ray_tasks_give_the_cells_solved_here() -> None:
    pytest.importorskip("ray")
    workload = read_workload(workload_path("layer_bert24_training"))
    here = sweep(workload, [2, 3], [2e9, 8e9])
    there = sweep(workload, [2, 3], [2e9, 8e9], ray_address="local")
    assert list(there["objective"]) == pytest.approx(list(here["objective"]))
    assert list(there["status"]) == list(here["status"])
    assert all(p.cluster == Cluster(k, m, workload.cluster.cpus)
               for p, k, m in zip(there["placement"], there["accelerators"], there["memory"]))


def test_scaling_curve_draws_a_line_per_memory() -> None:
    from exactplace.plot import scaling_curve

    cells = sweep(read_workload(workload_path("layer_bert24_training")), [1, 2, 4], [1e9, 8e9])
    axes = scaling_curve(cells).axes[0]
    labels = [t.get_text() for t in axes.get_legend().get_texts()]
    assert labels == ["8 GB", "1 GB", "ideal speed-up"]
    with pytest.raises(ParameterError, match="cells"):
        scaling_curve(cells.drop(columns="status"))


@pytest.mark.shared
def test_sigterm_is_reported_as_terminated(shared_workloads: Path) -> None:
    gnmt = shared_workloads / "throughput" / "layer_gnmt_training.json"
    code, _, err, _ = signal_group(["sweep", str(gnmt), "--accelerators", "2..32", "--memory", "inf"], None,
                                   after=10.0, sig=signal.SIGTERM)
    assert code == cli.EXIT_TERMINATED, err
    assert "Traceback" not in err
