"""The scaling curve of a sweep: time per sample against accelerators, one line per memory size."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from exactplace.core.errors import ParameterError
from exactplace.evaluators.feasibility import human_bytes
from exactplace.plot.style import WIDTH, new_figure

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["scaling_curve"]

_COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive",
            "tab:cyan", "tab:gray")


def scaling_curve(cells: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Time per sample against accelerators for each memory size (and bandwidth) of a sweep.

    Parameters
    ----------
    cells : pandas.DataFrame
        The frame of :func:`exactplace.sweep.sweep` (``accelerators``, ``memory``, ``bandwidth``, ``objective``,
        ``bound``, ``status``).
    title : str, optional
        Default: the workload's name.

    Returns
    -------
    matplotlib.figure.Figure
        One line per memory size (and bandwidth): a filled marker where the cell is certified, a hollow one
        where a gap is left (its bound drawn below it as a short bar); infeasible cells are left out. The grey
        dotted line is the ideal linear speed-up from the best time at the fewest accelerators, ``t(k0) k0 / k``.
        Both axes are logarithmic, so the ideal speed-up is a straight line.

    Examples
    --------
    >>> from exactplace import read_workload, workload_path
    >>> from exactplace.sweep import sweep
    >>> cells = sweep(read_workload(workload_path("layer_bert24_inference")), [1, 2, 4, 8], [4e9, 16e9])
    >>> figure = scaling_curve(cells)
    >>> [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
    ['16 GB', '4 GB', 'ideal speed-up']
    """
    import pandas as pd
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

    needed = {"accelerators", "memory", "bandwidth", "objective", "bound", "status"}
    if not isinstance(cells, pd.DataFrame) or not needed <= set(cells.columns):
        raise ParameterError("The 'cells' parameter of scaling_curve must be the frame of exactplace.sweep.sweep "
                             f"(columns {sorted(needed)}). Got {type(cells).__name__} instead.")
    figure = new_figure(WIDTH, 5.5)
    ax = figure.subplots()
    rates = cells["bandwidth"].dropna().unique()
    drawn = cells[cells["objective"].notna() & (cells["status"] != "infeasible")]
    groups = list(drawn.groupby(["memory", drawn["bandwidth"].fillna(-1.0)], sort=True))
    # Larger memory first, drawn wider: a smaller memory with the same optimum lies on top of it, still seen.
    for order, ((memory, rate), group) in enumerate(reversed(groups)):
        group = group.sort_values("accelerators")
        colour = _COLOURS[(len(groups) - 1 - order) % len(_COLOURS)]
        label = human_bytes(memory)
        if len(rates) > 1:
            label += f", {human_bytes(rate)}/s" if math.isfinite(rate) else ", free transfers"
        width = 1.5 + 2.5 * (len(groups) - 1 - order) / max(len(groups) - 1, 1)
        k, value = group["accelerators"].to_numpy(), group["objective"].to_numpy(dtype=float)
        ax.plot(k, value, "-", color=colour, linewidth=width, label=label, zorder=2 + order)
        certified = (group["status"] == "optimal").to_numpy()
        size = 3 + 2 * width
        ax.plot(k[certified], value[certified], "o", color=colour, markersize=size, zorder=2 + order)
        ax.plot(k[~certified], value[~certified], "o", color=colour, markerfacecolor="white", markersize=size,
                zorder=2 + order)
        for kk, bound in zip(k[~certified], group["bound"].to_numpy(dtype=float)[~certified]):
            if math.isfinite(bound):
                ax.plot([kk, kk], [bound, bound], "_", color=colour, markersize=2 * size, zorder=2 + order)
    if not drawn.empty:
        fewest = drawn[drawn["accelerators"] == drawn["accelerators"].min()]
        k0, t0 = float(fewest["accelerators"].iloc[0]), float(fewest["objective"].min())
        counts = sorted(drawn["accelerators"].unique())
        ax.plot(counts, [t0 * k0 / k for k in counts], ":", color="0.45", label="ideal speed-up", zorder=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    counts = sorted(cells["accelerators"].unique())
    ax.set_xticks(counts, [str(c) for c in counts])
    ax.xaxis.set_minor_locator(NullLocator())
    # Plain numbers at 1, 2 and 5 of every decade: a curve spanning less than a decade still reads.
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("accelerators")
    per = "microbatch" if any(p.info.get("options", {}).get("schedule") for p in cells.get("placement", [])
                              if p is not None) else "sample"
    ax.set_ylabel(f"time per {per} (optimum; hollow: best found, bound below)")
    ax.set_title(title if title is not None else f"{cells.attrs.get('workload', 'sweep')}: scaling with accelerators, "
                 "per memory size")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(title="memory per accelerator", loc="upper right")
    return figure

