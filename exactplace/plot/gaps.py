"""Optimality gaps: a solve's incumbent and bound over time, and methods against the best bound."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from exactplace.core.errors import ParameterError
from exactplace.core.placement import Placement
from exactplace.plot.style import WIDTH, distinct_colors, new_figure

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["gap_bars", "gap_curve"]

#: Gaps below this are drawn at it on the log scale (a proven optimum's gap is 0).
GAP_FLOOR = 1e-6

#: The objective columns of a :func:`exactplace.compare` table, the first present is the one compared.
OBJECTIVE_COLUMNS = ("throughput", "latency", "makespan")


def _series(p: Placement) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Seconds, incumbent and bound of a solve's progress, ended at its wall time with its final values."""
    points = [(t.seconds, t.incumbent, t.bound) for t in p.trace]
    points.append((max(p.wall_seconds, points[-1][0] if points else 0.0), p.objective, p.bound))
    seconds = np.array([x[0] for x in points], dtype=float)
    incumbent = np.array([np.nan if x[1] is None else x[1] for x in points], dtype=float)
    bound = np.array([np.nan if x[2] is None else x[2] for x in points], dtype=float)
    return seconds, incumbent, bound


def _label(p: Placement, name: str | None = None) -> str:
    """The legend entry of a solve: its name (default: method and solver) and its final gap."""
    if name is None:
        name = p.method + (f" ({p.solver})" if p.solver and p.solver != p.method else "")
    gap = "" if p.gap is None else f", gap {p.gap:.2%}" if p.gap >= 1e-4 else ", optimal"
    return f"{name}{gap}"


def gap_curve(placements: Placement | Sequence[Placement], *, labels: Sequence[str] | None = None,
              title: str | None = None) -> Figure:
    """Incumbent and bound against time (above), and the relative gap on a log scale (below).

    Parameters
    ----------
    placements : Placement or sequence of Placement
        Solves to draw, each in its own colour: its incumbent as a solid step line, its dual
        bound dashed, from ``Placement.trace`` and ended at its wall time with its final values.
        A solve without a trace is one point at its wall time.
    labels : sequence of str, optional
        One name per solve for the legend (e.g. ``["q=1", "q=2"]``); default: its method and
        solver. The final gap ("optimal" or "gap x%") is appended either way.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        Gap = (incumbent - bound) / incumbent, as ``Placement.gap``; a gap of 0 (proven optimal)
        is drawn at 1e-6 and the point marked with a star.

    Examples
    --------
    >>> import exactplace as ep
    >>> w = ep.read_workload(ep.workload_path("op_bert3_inference"))
    >>> fig = gap_curve(ep.solve(w, method="mip", time_limit=20))
    >>> fig.axes[1].get_yscale()
    'log'
    """
    runs = [placements] if isinstance(placements, Placement) else list(placements)
    for i, p in enumerate(runs):
        if not isinstance(p, Placement):
            raise ParameterError(f"The 'placements' parameter of gap_curve must hold Placement objects. "
                                 f"Got {type(p).__name__} at position {i} instead.")
    if not runs:
        raise ParameterError("The 'placements' parameter of gap_curve must hold at least one Placement.")
    if labels is not None and (isinstance(labels, str) or len(labels) != len(runs)
                               or not all(isinstance(x, str) for x in labels)):
        raise ParameterError(f"The 'labels' parameter of gap_curve must be one string per placement "
                             f"({len(runs)}). Got {labels!r} instead.")
    names = [_label(p, None if labels is None else labels[i]) for i, p in enumerate(runs)]
    colors = distinct_colors(len(runs))
    fig = new_figure(WIDTH, 5.5)
    value_ax, gap_ax = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    for i, p in enumerate(runs):
        color = colors[i]
        seconds, incumbent, bound = _series(p)
        value_ax.step(seconds, incumbent, where="post", color=color, linewidth=1.8, label=f"{names[i]}: incumbent")
        if not np.all(np.isnan(bound)):
            value_ax.step(seconds, bound, where="post", color=color, linewidth=1.4, linestyle="--",
                          label=f"{names[i]}: bound")
        with np.errstate(invalid="ignore", divide="ignore"):
            gap = np.where(incumbent > 0, (incumbent - bound) / incumbent, np.where(incumbent == 0, 0.0, np.nan))
        known = np.isfinite(gap)
        if known.any():
            shown = np.maximum(gap[known], GAP_FLOOR)
            gap_ax.step(seconds[known], shown, where="post", color=color, linewidth=1.6)
            closed = gap[known] <= GAP_FLOOR
            if closed.any():
                first = int(np.argmax(closed))
                gap_ax.plot(seconds[known][first], GAP_FLOOR, marker="*", markersize=12, color=color)
    value_ax.set_ylabel(runs[0].objective_name)
    value_ax.legend(fontsize=7, frameon=False, loc="best")
    value_ax.grid(color="0.92")
    gap_ax.set_yscale("log")
    gap_ax.set_ylim(GAP_FLOOR / 2, 1.5)
    gap_ax.set_ylabel("gap (log)")
    gap_ax.set_xlabel("seconds")
    gap_ax.grid(color="0.92", which="both")
    value_ax.set_title(title if title is not None else "incumbent and bound over time", fontsize=10, loc="left")
    return fig


def gap_bars(frame: pd.DataFrame, *, objective: str | None = None, title: str | None = None) -> Figure:
    """Each method's value over the best proven bound, grouped by workload (the paper's Fig. 8 style).

    Parameters
    ----------
    frame : pandas.DataFrame
        A table of :func:`exactplace.compare` (``method``, the objective columns, ``gap``), or
        several concatenated with a ``workload`` column.
    objective : str, optional
        The column compared; default the first of throughput, latency, makespan in the table.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        One bar per method and workload at value / bound, where bound is the best bound a
        compared method proved (``1 / (1 - gap)``: a bar at 1 is a proven optimum); where no
        method proved a bound, the ratio is to the best value found and the axis says so.
        Methods without a value (an error, not run) get an ``x`` at 1 instead of a bar. A bound
        over chain splits (``dp``) does not bind a non-contiguous placement: its bar may go below 1.

    Examples
    --------
    >>> import exactplace as ep
    >>> w = ep.read_workload(ep.workload_path("layer_bert24_inference"))
    >>> table = ep.compare(w, methods=["dp", "greedy", "m-etf"], objectives=("throughput",))
    >>> gap_bars(table).axes[0].get_ylabel()
    'throughput / best bound (dp, chain splits)'
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame) or "method" not in frame.columns:
        raise ParameterError("The 'frame' parameter of gap_bars must be a table of exactplace.compare "
                             f"(a DataFrame with a 'method' column). Got {type(frame).__name__} instead.")
    present = [c for c in OBJECTIVE_COLUMNS if c in frame.columns]
    objective = objective or (present[0] if present else None)
    if objective not in frame.columns:
        raise ParameterError(f"The 'objective' parameter of gap_bars must name a column of the table from "
                             f"{present}. Got {objective!r} instead.")
    table = frame.copy()
    if "workload" not in table.columns:
        table["workload"] = ""
    value = pd.to_numeric(table[objective], errors="coerce")
    gap = pd.to_numeric(table["gap"], errors="coerce") if "gap" in table.columns else pd.Series(np.nan, table.index)
    proven = gap.notna() & value.notna()
    with np.errstate(divide="ignore"):
        ratio = np.where(proven, 1.0 / (1.0 - gap), np.nan)
    best_found = value.groupby(table["workload"]).transform("min")
    fallback = ~proven & value.notna()
    ratio = np.where(fallback, value / best_found, ratio)
    workloads = list(dict.fromkeys(table["workload"].tolist()))
    methods = list(dict.fromkeys(table["method"].tolist()))
    single = len(workloads) == 1  # one workload: the methods along the axis, named there
    width = 0.8 if single else 0.8 / len(methods)
    colors = distinct_colors(len(methods))
    fig = new_figure(max(WIDTH * 0.6, 1.5 + (0.6 if single else 0.25) * len(methods) * len(workloads)), 4.2)
    ax = fig.add_subplot()
    for j, method in enumerate(methods):
        rows = (table["method"] == method).to_numpy()
        where = np.array([workloads.index(w) for w in table.loc[rows, "workload"]], dtype=float)
        x = np.full(len(where), float(j)) if single else where + (j - (len(methods) - 1) / 2) * width
        r = ratio[rows]
        known = np.isfinite(r)
        color = colors[j]
        ax.bar(x[known], r[known] - 1.0, bottom=1.0, width=width * 0.9, color=color, label=method)
        ax.scatter(x[known], r[known], marker="_", s=200, color=color)  # a ratio of exactly 1 is still seen
        ax.scatter(x[~known], np.ones((~known).sum()), marker="x", color=color)
        if len(methods) * len(workloads) <= 40:
            for xi, ri in zip(x[known].tolist(), r[known].tolist()):
                ax.annotate(f"{ri:.3g}", (xi, ri), textcoords="offset points", xytext=(0, 3 if ri >= 1 else -9),
                            ha="center", fontsize=7)
    ax.axhline(1.0, color="black", linewidth=0.8)
    if single:
        ax.set_xticks(range(len(methods)), methods, rotation=30 if len(methods) > 6 else 0,
                      ha="right" if len(methods) > 6 else "center", fontsize=8)
    else:
        ax.set_xticks(range(len(workloads)), workloads, rotation=20 if len(workloads) > 3 else 0,
                      ha="right" if len(workloads) > 3 else "center", fontsize=8)
        ax.legend(fontsize=7, frameon=False, ncols=min(len(methods), 6), loc="upper center",
                  bbox_to_anchor=(0.5, -0.18 if len(workloads) > 3 else -0.08))
    finite = ratio[np.isfinite(ratio)]
    lowest = min(1.0, float(finite.min())) if len(finite) else 1.0
    high = float(finite.max()) if len(finite) else 1.0
    pad = 0.08 * max(high - lowest, 0.1)  # room for the value labels, above a bar's top or below its bottom
    ax.set_ylim(min(0.98, lowest - (pad if lowest < 1.0 else 0.02)), high + pad)
    bound = frame.attrs.get("bound")
    where_bound = f" ({bound['method']}, {bound['space']} splits)" if single and bound and bound.get("space") else ""
    every_proven = bool(proven[value.notna()].all()) and bool(proven.any())
    ax.set_ylabel(f"{objective} / best bound{where_bound}" if every_proven else
                  f"{objective} / best bound (best found where none)" if proven.any() else
                  f"{objective} / best found (no bound proven)")
    ax.grid(axis="y", color="0.92")
    ax.set_axisbelow(True)
    ax.set_title(title if title is not None else "value over the best proven bound (1 = proven optimal)",
                 fontsize=10, loc="left")
    return fig
