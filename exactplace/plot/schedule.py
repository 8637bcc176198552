"""One sample's schedule as a Gantt chart: the latency evaluator's or the step simulator's."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from exactplace.core.errors import check_param
from exactplace.core.graph import Graph
from exactplace.core.placement import Placement
from exactplace.evaluators.latency import latency_schedule
from exactplace.evaluators.makespan import simulate
from exactplace.io import Workload
from exactplace.plot.style import WIDTH, Drawn, device_colors, drawn, label_devices, new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["gantt"]

#: Hatched light bars: time a device spends copying, not computing.
COPY_STYLE = {"facecolor": "white", "edgecolor": "0.35", "hatch": "////", "linewidth": 0.5}


def _lanes(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Interval partitioning: the lane of each interval so that no two in one lane overlap."""
    lane = np.zeros(len(starts), dtype=np.int64)
    free_at: list[float] = []
    for i in np.argsort(starts, kind="stable").tolist():
        for j, end in enumerate(free_at):
            if end <= starts[i] + 1e-12:
                lane[i], free_at[j] = j, ends[i]
                break
        else:
            lane[i] = len(free_at)
            free_at.append(ends[i])
    return lane


def _bars(ax: Axes, row: float, starts: np.ndarray, ends: np.ndarray, height: float, **style: object) -> None:
    if len(starts):
        ax.broken_barh(list(zip(starts.tolist(), (ends - starts).tolist())), (row - height / 2, height), **style)


def _draw_latency(ax: Axes, d: Drawn, rows: dict[int, float], colors: list) -> float:
    schedule = latency_schedule(d.graph, d.cluster, d.device,
                                None if d.placement is None else d.placement.subgraph)
    for (device, _, start, end), (copy_in, copy_out) in zip(schedule.subgraphs, schedule.copies):
        row = rows[device]
        _bars(ax, row, np.array([start]), np.array([start + copy_in]), 0.7, **COPY_STYLE)
        _bars(ax, row, np.array([start + copy_in]), np.array([end - copy_out]), 0.7, color=colors[device],
              edgecolor="black", linewidth=0.4)
        _bars(ax, row, np.array([end - copy_out]), np.array([end]), 0.7, **COPY_STYLE)
    on_cpu = np.flatnonzero(d.device >= d.cluster.accelerators)
    for device in np.unique(d.device[on_cpu]).tolist():
        nodes = on_cpu[d.device[on_cpu] == device]
        ends = schedule.finish[nodes]
        starts = ends - d.graph.cpu_time[nodes]
        lane = _lanes(starts, ends)
        lanes = int(lane.max()) + 1
        height = 0.7 / lanes  # nodes that run at once on one CPU device (the model has cores enough) share the row
        for j in range(lanes):
            row = rows[device] + 0.35 - height * (j + 0.5)
            _bars(ax, row, starts[lane == j], ends[lane == j], height * 0.9, color=colors[device],
                  edgecolor="black", linewidth=0.2)
    return schedule.latency


def _draw_makespan(ax: Axes, d: Drawn, rows: dict[int, float], colors: list) -> float:
    order = None if d.placement is None else d.placement.info.get("order")
    schedule = simulate(d.graph, d.cluster, d.device, order=order)
    for device, row in rows.items():
        nodes = np.flatnonzero(d.device == device)
        _bars(ax, row + 0.1, schedule.start[nodes], schedule.finish[nodes], 0.5, color=colors[device],
              edgecolor="black", linewidth=0.2)
        copies = schedule.transfers[schedule.transfers[:, 0] == device]
        _bars(ax, row - 0.28, copies[:, 1], copies[:, 2], 0.16, **COPY_STYLE)
    return schedule.makespan


def gantt(workload: Workload | Graph | None, placement: Placement | np.ndarray, objective: str = "latency", *,
          title: str | None = None) -> Figure:
    """The schedule of one sample, one row per device.

    Parameters
    ----------
    workload : Workload, Graph or None
        As for :func:`placement_graph`.
    placement : Placement or array of int
        A latency plan's subgraphs (``Placement.subgraph``) and a placer's execution order
        (``info["order"]``) are used when present.
    objective : {"latency", "makespan"}
        ``"latency"``: the §4 evaluator: each accelerator subgraph as copy-in (hatched), compute
        and copy-out (hatched); CPU nodes as they run (several at once share the row).
        ``"makespan"``: the step simulator: every node as it runs, and each accelerator's
        transfers on a thin hatched bar beneath its row.

    Returns
    -------
    matplotlib.figure.Figure
        A dashed line marks the objective's value.

    Examples
    --------
    >>> import exactplace as ep
    >>> w = ep.read_workload(ep.workload_path("layer_bert24_inference"))
    >>> p = ep.solve(w, objective="latency", method="greedy")
    >>> gantt(w, p).axes[0].get_xlabel()
    'time'
    """
    check_param(objective in ("latency", "makespan"), "objective", "gantt", "'latency' or 'makespan'", objective)
    d = drawn(workload, placement, "gantt")
    shown = np.unique(d.device).tolist()
    rows = {device: float(len(shown) - 1 - i) for i, device in enumerate(shown)}
    colors = device_colors(d.cluster)
    fig = new_figure(WIDTH, min(max(2.2, 0.45 * len(shown) + 1.2), 8.0))
    ax = fig.add_subplot()
    end = (_draw_latency if objective == "latency" else _draw_makespan)(ax, d, rows, colors)
    ax.axvline(end, color="#C0392B", linestyle="--", linewidth=1)
    ax.annotate(f"{objective} {end:.4g}", (end, len(shown) - 0.5), textcoords="offset points", xytext=(-4, 0),
                ha="right", va="bottom", fontsize=8, color="#C0392B")
    label_devices(ax, list(rows.values()), list(rows), d.cluster)
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color="0.55", label="compute (device colour)"), Patch(**COPY_STYLE, label="transfer")],
              fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_ylim(-0.6, len(shown) - 0.2)
    ax.set_xlim(0, end * 1.02 if end > 0 else 1)
    ax.set_xlabel("time")
    ax.grid(axis="x", color="0.9")
    ax.set_axisbelow(True)
    ax.set_title(title if title is not None else d.headline(objective, end), fontsize=10, loc="left")
    return fig
