"""Per-device load and memory bars, and the overview (graph above loads) that ``solve --plot`` writes."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from exactplace.core.graph import Graph
from exactplace.core.placement import Placement
from exactplace.evaluators import device_loads, pipeline_score
from exactplace.io import Workload
from exactplace.plot.graph import draw_placement_graph, graph_height, layered_layout
from exactplace.plot.style import WIDTH, Drawn, drawn, human_bytes, label_devices, new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw_load_bars", "load_bars", "overview"]

#: Colours of the parts of a load: compute solid, communication lighter; backward a second hue.
PART_COLORS = {
    "compute": "#4C72B0", "communication": "#A6BDDB",
    "compute, forward": "#4C72B0", "communication, forward": "#A6BDDB",
    "compute, backward": "#DD8452", "communication, backward": "#F5C6A5",
}


def _shown_devices(d: Drawn) -> np.ndarray:
    """Every accelerator (an idle one is part of the story) and the CPUs that hold nodes."""
    k = d.cluster.accelerators
    cpus = np.unique(d.device[d.device >= k])
    return np.concatenate([np.arange(k), cpus]).astype(np.int64)


def draw_load_bars(load_ax: Axes, memory_ax: Axes, d: Drawn) -> None:
    """Draw the load bars into ``load_ax`` and the memory bars into ``memory_ax``."""
    loads = device_loads(d.graph, d.cluster, d.device, overlap=d.overlap)
    shown = _shown_devices(d)
    rows = np.arange(len(shown))[::-1]  # the first device on top
    parts = [(0, "forward"), (1, "backward")] if d.graph.is_training else [(None, "")]
    total = loads.load()
    if d.overlap:  # compute and communication overlap: two bars side by side, the load is the longer
        for offset, kind in ((-0.2, "compute"), (0.2, "communication")):
            values = getattr(loads, "compute" if kind == "compute" else "comm")[shown].sum(axis=1)
            load_ax.barh(rows + offset, values, height=0.4, color=PART_COLORS[kind], label=kind)
    else:
        left = np.zeros(len(shown))
        for kind in ("compute", "communication"):
            array = loads.compute if kind == "compute" else loads.comm
            for column, part in parts:
                values = array[shown].sum(axis=1) if column is None else array[shown, column]
                label = f"{kind}, {part}" if part else kind
                load_ax.barh(rows, values, left=left, height=0.7, color=PART_COLORS[label], label=label)
                left += values
    bottleneck = int(np.argmax(total[shown]))
    top = float(total[shown].max()) if len(shown) else 0.0
    load_ax.barh(rows[bottleneck], total[shown][bottleneck], height=0.82, fill=False, edgecolor="#C0392B",
                 linewidth=1.8, label="bottleneck")
    load_ax.annotate(f"bottleneck {top:.4g}", (top, rows[bottleneck]), textcoords="offset points", xytext=(4, 0),
                     va="center", fontsize=8, color="#C0392B")
    load_ax.set_xlim(0, top * 1.25 if top > 0 else 1)
    label_devices(load_ax, rows.tolist(), shown.tolist(), d.cluster)
    load_ax.set_xlabel("load (time per sample)" if not d.graph.is_training else "load: forward + backward")
    # Beside the bars, never over them: inside, it would hide whichever bar reaches that corner.
    load_ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    load_ax.grid(axis="x", color="0.9")
    load_ax.set_axisbelow(True)

    k = d.cluster.accelerators
    used, capacity = loads.memory[:k], d.cluster.memory_limit[:k]
    options = d.placement.info.get("options", {}) if d.placement is not None else {}
    schedule = options.get("schedule")
    if schedule is not None:  # a stage holds the activations of every microbatch the schedule keeps in flight
        score = pipeline_score(d.graph, d.cluster, d.device, schedule, options.get("microbatches"), overlap=d.overlap)
        if score.breaks is None:
            used = np.zeros(k)
            used[list(score.stages)] = score.memory
            load_ax.set_xlabel(f"{load_ax.get_xlabel()}; a {schedule} step: "
                               f"{score.microbatches + len(score.stages) - 1} x the bottleneck")
        else:
            schedule = None
    scale = 1e9 if max(float(used.max(initial=0)), float(capacity[np.isfinite(capacity)].max(initial=0))) >= 1e9 \
        else 1e6
    unit = "GB" if scale == 1e9 else "MB"
    acc_rows = rows[:k]
    over = used > capacity
    finite = np.isfinite(capacity)
    if finite.any():
        memory_ax.barh(acc_rows[finite], capacity[finite] / scale, height=0.7, color="#EAEAEA", edgecolor="0.7",
                       linewidth=0.5, label="capacity")
    memory_ax.barh(acc_rows, used / scale, height=0.7, color=np.where(over, "#C0392B", "#7F8C8D"), label="used")
    memory_ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    memory_ax.set_yticks(rows, [""] * len(rows))
    memory_ax.set_ylim(load_ax.get_ylim())
    memory_ax.set_xlabel(f"memory ({unit})" + (f" under {schedule}" if schedule is not None else "")
                         + ("" if finite.any() else f", capacity {human_bytes(math.inf)}"))
    memory_ax.grid(axis="x", color="0.9")
    memory_ax.set_axisbelow(True)


def load_bars(workload: Workload | Graph | None, placement: Placement | np.ndarray, *,
              title: str | None = None) -> Figure:
    """Each device's load, split into its parts, and each accelerator's memory against its capacity.

    Parameters
    ----------
    workload : Workload, Graph or None
        As for :func:`placement_graph`.
    placement : Placement or array of int
    title : str, optional
        Default: the workload, the objective's value, status and method.

    Returns
    -------
    matplotlib.figure.Figure
        Left: one bar per device (every accelerator, and the CPUs that hold nodes), stacked
        compute then communication, forward and backward for a training graph (side by side
        when the plan overlaps communication with compute); the bottleneck device, whose load
        is the time per sample, is outlined in red. Right: memory used per accelerator (red
        when over capacity) with its capacity marked; for a placement solved under a pipeline
        schedule, each stage's memory with the activations the schedule keeps in flight there.

    Examples
    --------
    >>> import exactplace as ep
    >>> w = ep.read_workload(ep.workload_path("layer_bert24_training"))
    >>> fig = load_bars(w, ep.solve(w))
    >>> [ax.get_xlabel() for ax in fig.axes]
    ['load: forward + backward', 'memory (GB)']
    """
    d = drawn(workload, placement, "load_bars")
    rows = len(_shown_devices(d))
    fig = new_figure(WIDTH, min(max(2.2, 0.3 * rows + 1.2), 7.0))
    load_ax, memory_ax = fig.subplots(1, 2, width_ratios=[3, 1])
    draw_load_bars(load_ax, memory_ax, d)
    fig.suptitle(title if title is not None else d.headline(), fontsize=10, x=0.01, ha="left")
    return fig


def overview(workload: Workload | Graph | None, placement: Placement | np.ndarray, *,
             collapse_chains: bool = True, title: str | None = None) -> Figure:
    """The placement graph above its load and memory bars (what ``exactplace solve --plot`` writes).

    Examples
    --------
    >>> import exactplace as ep
    >>> w = ep.read_workload(ep.workload_path("op_bert3_inference"))
    >>> len(overview(w, ep.solve(w, method="greedy")).axes)
    3
    """
    d = drawn(workload, placement, "overview")
    layout = layered_layout(d.graph, d.device, collapse_chains=collapse_chains)
    rows = len(_shown_devices(d))
    top, bottom = graph_height(layout), min(max(2.0, 0.3 * rows + 1.0), 6.0)
    fig = new_figure(WIDTH + 3, top + bottom)
    upper, lower = fig.subfigures(2, 1, height_ratios=[top, bottom])
    graph_ax = upper.add_subplot()
    draw_placement_graph(graph_ax, d, layout)
    load_ax, memory_ax = lower.subplots(1, 2, width_ratios=[3, 1])
    draw_load_bars(load_ax, memory_ax, d)
    fig.suptitle(title if title is not None else d.headline(), fontsize=10, x=0.01, ha="left")
    return fig
