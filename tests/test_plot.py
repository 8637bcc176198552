"""``exactplace.plot``: every picture on a shipped workload and on a 1,000-node graph, checked for what it shows.

Each test reads back what the figure holds (marks, bars, lines, legend texts) and compares it with
the evaluators, so a picture that draws the wrong loads or the wrong schedule fails here, not only
one that raises. The pictures' drawing time is measured in ``benchmarks/bench_plot.py``.
"""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import exactplace as ep
from exactplace import plot
from exactplace.cli.main import main
from exactplace.evaluators.latency import latency_schedule
from exactplace.evaluators.makespan import simulate
from exactplace.io import Workload

PNG = b"\x89PNG\r\n\x1a\n"


def _random_dag(n: int, seed: int = 0) -> Workload:
    """A layered random DAG: each node reads one or two of the 20 nodes before it."""
    rng = np.random.default_rng(seed)
    nodes = [ep.Node(i, float(rng.uniform(1, 5)), float(rng.uniform(0.1, 1)), memory=1e6,
                     comm=float(rng.uniform(0, 0.5))) for i in range(n)]
    edges = set()
    for v in range(1, n):
        window = np.arange(max(0, v - 20), v)
        for u in rng.choice(window, size=min(v, int(rng.integers(1, 3))), replace=False).tolist():
            edges.add((u, v))
    return Workload(ep.Graph(nodes, sorted(edges)), ep.Cluster(accelerators=4, memory=1e9, cpus=1), name="random1000")


@pytest.fixture(scope="module", params=["layer_bert24_training", "op_bert3_inference", "random1000"])
def solved(request) -> tuple[Workload, ep.Placement]:
    if request.param == "random1000":
        w = _random_dag(1000)
        return w, ep.solve(w, method="dpl")
    w = ep.read_workload(ep.workload_path(request.param))
    return w, ep.solve(w)


def _saved(fig, tmp_path, name: str) -> tuple[int, int]:
    """Save as PNG; returns its size in pixels (read back from the file)."""
    from matplotlib.image import imread

    path = tmp_path / f"{name}.png"
    fig.savefig(path, dpi=100)
    assert path.read_bytes()[:8] == PNG and path.stat().st_size > 5_000
    height, width = imread(path).shape[:2]
    return width, height


def test_layout_marks_cover_every_node_once_and_flow_left_to_right(solved) -> None:
    w, p = solved
    g = w.graph
    layout = plot.layered_layout(g, p.device)
    covered = np.concatenate(layout.members)
    assert sorted(covered.tolist()) == list(range(g.n))
    for m, members in enumerate(layout.members):
        assert len(set(p.device[members].tolist())) == 1, "a mark holds nodes of two devices"
        assert (layout.mark_of[members] == m).all()
    places = set(zip(layout.x.tolist(), layout.y.tolist()))
    assert len(places) == len(layout.members), "two marks drawn at one place"
    # Edges of the forward pass (and of an inference graph) run left to right.
    forward = ~g.backward[g.src] & ~g.backward[g.dst]
    a, b = layout.mark_of[g.src[forward]], layout.mark_of[g.dst[forward]]
    assert (layout.x[a][a != b] < layout.x[b][a != b]).all()
    if g.n >= 1000:
        assert len(layout.members) < g.n  # chains are collapsed


def test_placement_graph_legend_states_each_devices_load_and_the_cut(solved, tmp_path) -> None:
    w, p = solved
    fig = plot.placement_graph(w, p)
    ax = fig.axes[0]
    assert ax.get_title(loc="left").startswith(f"{w.name}: throughput {p.objective:.4g}")
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    loads = ep.device_loads(w.graph, w.cluster, p.device).load()
    for d in np.unique(p.device).tolist():
        name = w.cluster.device_name(d)
        assert any(t.startswith(f"{name}: load {loads[d]:.4g}, {(p.device == d).sum()} nodes") for t in texts)
    layout = plot.layered_layout(w.graph, p.device)
    mark_device = np.array([p.device[m[0]] for m in layout.members])
    cut = int((mark_device[layout.edges[:, 0]] != mark_device[layout.edges[:, 1]]).sum())
    assert f"cut edge ({cut} of {len(layout.edges)} drawn)" in texts
    width, height = _saved(fig, tmp_path, "graph")
    assert 1000 <= width <= 1400 and 250 <= height <= 800


def test_load_bars_add_up_to_each_devices_load_and_mark_the_bottleneck(solved, tmp_path) -> None:
    w, p = solved
    fig = plot.load_bars(w, p)
    load_ax, memory_ax = fig.axes
    stacked: dict[float, float] = defaultdict(float)
    for bar in load_ax.patches:
        if bar.get_fill():  # the bottleneck's outline is the one unfilled bar
            stacked[round(bar.get_y() + bar.get_height() / 2, 6)] += bar.get_width()
    loads = ep.device_loads(w.graph, w.cluster, p.device).load()
    names = [t.get_text() for t in load_ax.get_yticklabels()]
    rows = [t.get_position()[1] for t in load_ax.get_yticklabels()]
    for name, row in zip(names, rows):
        d = w.cluster.device_names().index(name)
        assert stacked[round(row, 6)] == pytest.approx(loads[d], rel=1e-9, abs=1e-9)
    outline = [bar for bar in load_ax.patches if not bar.get_fill()]
    assert len(outline) == 1 and outline[0].get_width() == pytest.approx(ep.max_load(w.graph, w.cluster, p.device))
    assert memory_ax.get_xlabel().startswith("memory")
    _saved(fig, tmp_path, "loads")
    # The legends stand beside the bars, never over them (a bottom bottleneck's label stays visible).
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    for ax in (load_ax, memory_ax):
        assert ax.get_legend().get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1 - 1


def test_load_bars_count_the_schedules_activations_in_flight() -> None:
    g = ep.Graph([ep.Node(i, 1.0, 1.0, memory=3.0, activation=1.0) for i in range(4)], [(0, 1), (1, 2), (2, 3)])
    p = ep.solve(g, ep.Cluster(2, cpus=0), schedule="1f1b", microbatches=4)
    memory_ax = plot.load_bars(None, p).axes[1]
    used = sorted((round(bar.get_y() + bar.get_height() / 2, 6), bar.get_width()) for bar in memory_ax.patches)
    score = ep.evaluators.pipeline_score(g, p.cluster, p.device, "1f1b", 4)
    assert [width for _, width in used][::-1] == pytest.approx(score.memory / 1e6)  # the first device on top
    assert memory_ax.get_xlabel() == "memory (MB) under 1f1b, capacity unlimited"


@pytest.mark.parametrize("objective", ["latency", "makespan"])
def test_gantt_draws_the_evaluators_schedule(solved, objective, tmp_path) -> None:
    w, p = solved
    fig = plot.gantt(w, p, objective)
    ax = fig.axes[0]
    [line] = ax.get_lines()
    value = ep.evaluate(w.graph, w.cluster, p.device, objective)
    assert line.get_xdata()[0] == pytest.approx(value)
    rows = {t.get_text() for t in ax.get_yticklabels()}
    assert rows == {w.cluster.device_name(d) for d in np.unique(p.device).tolist()}
    intervals = sum(len(c.get_paths()) for c in ax.collections)
    if objective == "latency":
        schedule = latency_schedule(w.graph, w.cluster, p.device)
        on_cpu = int((p.device >= w.cluster.accelerators).sum())
        assert intervals == 3 * len(schedule.subgraphs) + on_cpu  # copy-in, compute, copy-out; each CPU node
    else:
        schedule = simulate(w.graph, w.cluster, p.device)
        assert intervals == w.graph.n + len(schedule.transfers)
    _saved(fig, tmp_path, f"gantt_{objective}")


def test_gantt_follows_a_latency_plans_subgraphs() -> None:
    w = ep.read_workload(ep.workload_path("layer_bert24_inference"))
    p = ep.solve(w, objective="latency", method="mip", q=2, time_limit=20)
    ax = plot.gantt(w, p).axes[0]
    assert ax.get_lines()[0].get_xdata()[0] == pytest.approx(p.objective)


def test_the_simulator_and_the_latency_schedule_keep_their_transfers(solved) -> None:
    """What the Gantt chart draws: copies per channel add up to its busy time; subgraphs compute in between."""
    w, p = solved
    s = simulate(w.graph, w.cluster, p.device)
    busy = np.bincount(s.transfers[:, 0].astype(int), weights=s.transfers[:, 2] - s.transfers[:, 1],
                       minlength=w.cluster.num_devices)
    assert busy == pytest.approx(s.channel)
    schedule = latency_schedule(w.graph, w.cluster, p.device)
    for (d, members, start, end), (copy_in, copy_out) in zip(schedule.subgraphs, schedule.copies):
        compute = w.graph.acc_time[members].sum() / w.cluster.speed[d]
        assert end - start == pytest.approx(copy_in + compute + copy_out)


def test_gap_curve_draws_incumbent_bound_and_gap_of_each_solve(tmp_path) -> None:
    w = ep.read_workload(ep.workload_path("op_bert3_inference"))
    mip = ep.solve(w, method="mip", time_limit=20, warm_start=None)
    dp = ep.solve(w)  # no trace: one point at its wall time
    fig = plot.gap_curve([mip, dp])
    value_ax, gap_ax = fig.axes
    assert gap_ax.get_yscale() == "log"
    labels = [t.get_text() for t in value_ax.get_legend().get_texts()]
    assert any(label.startswith("mip (") and label.endswith("incumbent") for label in labels)
    assert any(label.startswith("dp (native-dp), optimal") for label in labels)
    incumbent = value_ax.get_lines()[0]
    assert incumbent.get_ydata()[-1] == pytest.approx(mip.objective)
    assert np.all(np.diff(incumbent.get_xdata()) >= 0)
    _saved(fig, tmp_path, "gap_curve")
    with pytest.raises(ep.ParameterError, match="position 1"):
        plot.gap_curve([mip, "dp"])
    named = plot.gap_curve([mip, dp], labels=["cold start", "exact DP"])
    labels = [t.get_text() for t in named.axes[0].get_legend().get_texts()]
    assert labels[0].startswith("cold start") and any(x.startswith("exact DP, optimal") for x in labels)
    with pytest.raises(ep.ParameterError, match=r"'labels'.*one string per placement"):
        plot.gap_curve([mip, dp], labels=["only one"])


def test_gap_bars_give_every_method_its_own_colour() -> None:
    """Past ten methods (a full compare lists 13) no two methods share a colour."""
    import pandas as pd

    methods = [f"method{i}" for i in range(13)]
    frame = pd.DataFrame({"method": methods, "throughput": np.linspace(1.0, 2.0, 13),
                          "gap": np.linspace(0.0, 0.5, 13)})
    ax = plot.gap_bars(frame).axes[0]
    colours = {tuple(bar.get_facecolor()) for bar in ax.patches}
    assert len(colours) == len(methods)


def test_gap_bars_stand_at_value_over_the_best_bound(tmp_path) -> None:
    import pandas as pd

    frames = []
    for name in ("layer_bert24_inference", "op_bert3_inference"):
        w = ep.read_workload(ep.workload_path(name))
        table = ep.compare(w, methods=["dp", "greedy", "m-etf"], objectives=("throughput",), time_limit=10)
        frames.append(table.assign(workload=name))
    frame = pd.concat(frames, ignore_index=True)
    fig = plot.gap_bars(frame)
    ax = fig.axes[0]
    tops = sorted(round(bar.get_y() + bar.get_height(), 9) for bar in ax.patches)
    expected = sorted(round(1 / (1 - g), 9) for g in frame["gap"])
    assert tops == pytest.approx(expected)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["layer_bert24_inference", "op_bert3_inference"]
    _saved(fig, tmp_path, "gap_bars")
    with pytest.raises(ep.ParameterError, match="'objective'"):
        plot.gap_bars(frame, objective="latency")
    with pytest.raises(ep.ParameterError, match="'frame'"):
        plot.gap_bars([1, 2])


def test_overview_and_placement_plot(tmp_path) -> None:
    w = ep.read_workload(ep.workload_path("layer_bert24_inference"))
    p = ep.solve(w)
    assert len(plot.overview(w, p).axes) == 3
    fig = plot.placement_graph(None, p)
    assert fig.axes[0].get_title(loc="left").startswith("placement: throughput")
    _saved(fig, tmp_path, "plot")


def test_misuse_is_a_parameter_error_naming_the_argument() -> None:
    w = ep.read_workload(ep.workload_path("layer_bert24_inference"))
    p = ep.solve(w, method="greedy")
    with pytest.raises(ep.ParameterError, match="'workload' parameter of placement_graph"):
        plot.placement_graph(w.graph, p.device)
    with pytest.raises(ep.PlacementError):
        plot.load_bars(w, p.device[:-1])
    with pytest.raises(ep.ParameterError, match="'objective' parameter of gantt"):
        plot.gantt(w, p, "throughput")
    other = ep.read_workload(ep.workload_path("op_bert3_inference"))
    with pytest.raises(ep.ParameterError, match="another graph"):
        plot.placement_graph(other, p)
    infeasible = ep.solve(w, ep.Cluster(accelerators=1, memory=1.0, cpus=0), method="greedy")
    with pytest.raises(ep.ParameterError, match="no devices to draw"):
        plot.placement_graph(None, infeasible)


def test_cli_plot_writes_a_picture_and_refuses_bad_names(tmp_path, capsys) -> None:
    png, svg = tmp_path / "split.png", tmp_path / "split.svg"
    assert main(["solve", "layer_bert24_inference", "--plot", str(png)]) == 0
    assert png.read_bytes()[:8] == PNG and f"picture written to {png}" in capsys.readouterr().out
    assert main(["solve", "layer_bert24_inference", "--method", "greedy", "--plot", str(svg)]) == 0
    assert svg.read_text().lstrip().startswith("<?xml")
    compared = tmp_path / "compare.png"
    assert main(["compare", "layer_bert24_inference", "--methods", "dp,greedy", "--plot", str(compared)]) == 0
    assert compared.read_bytes()[:8] == PNG
    capsys.readouterr()
    for bad, message in ((str(tmp_path / "x.jpg"), "must end in .png, .svg or .pdf"),
                         (str(tmp_path / "missing" / "x.png"), "does not exist"), ("-", "not supported")):
        assert main(["solve", "layer_bert24_inference", "--plot", bad]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    plan = tmp_path / "plan.png"
    assert main(["solve", "layer_bert24_inference", "--out", str(plan), "--plot", str(plan)]) == 2
    assert "also --out" in capsys.readouterr().err


def test_import_exactplace_does_not_load_matplotlib(tmp_path: Path) -> None:
    code = "import sys, exactplace; print('matplotlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=tmp_path).stdout.strip() == "False"


def test_a_returned_figure_displays_in_ipython() -> None:
    """In IPython a cell ending in a figure shows a PNG without ``%matplotlib inline`` (our figures bypass pyplot)."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib.figure import Figure

    shell = InteractiveShell.instance()
    try:
        png = shell.display_formatter.formatters["image/png"]
        png.type_printers.pop(Figure, None)
        w = ep.read_workload(ep.workload_path("layer_bert24_inference"))
        fig = plot.load_bars(w, ep.solve(w))
        data, _ = shell.display_formatter.format(fig)
        assert "image/png" in data and len(data["image/png"]) > 1000
    finally:
        InteractiveShell.clear_instance()
