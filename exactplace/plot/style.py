"""What every picture shares: matplotlib loaded headless, device colours, units, the placement's facts."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ParameterError, SolverUnavailableError
from exactplace.core.graph import Graph
from exactplace.core.placement import Placement
from exactplace.core.placement_array import as_device_array
from exactplace.evaluators import evaluate
from exactplace.io import Workload

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Width of a figure in inches: 1,000 pixels at matplotlib's default 100 dpi, a page's width.
WIDTH = 10.0


def pyplot() -> Any:
    """``matplotlib.pyplot`` on a backend that needs no screen, or the install hint."""
    try:
        import matplotlib
    except ImportError:
        raise SolverUnavailableError("exactplace.plot needs matplotlib: pip install 'exactplace[plot]'.") from None
    if not _interactive():
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _interactive() -> bool:
    """True in a Jupyter kernel or an interactive session that chose a backend itself."""
    import sys

    return "ipykernel" in sys.modules or hasattr(sys, "ps1")


def new_figure(width: float, height: float, **options: Any) -> Figure:
    """A figure not registered with pyplot's global state (so nothing leaks when many are drawn)."""
    pyplot()
    from matplotlib.figure import Figure

    _display_in_ipython(Figure)
    return Figure(figsize=(width, height), layout="constrained", **options)


def _display_in_ipython(figure_class: type) -> None:
    """In Jupyter or IPython, show a returned figure as PNG, as a pyplot figure is shown.

    IPython registers its figure formatter only when pyplot's inline backend is activated
    (``%matplotlib inline``); our figures bypass pyplot, so without this a notebook cell
    ending in ``load_bars(...)`` would print ``<Figure size ...>``. A formatter the user set
    (``%config InlineBackend.figure_formats``) is kept.
    """
    import sys

    if "IPython" not in sys.modules:  # never import IPython outside a session that has it
        return
    shell = sys.modules["IPython"].get_ipython()
    if shell is None:
        return
    png = shell.display_formatter.formatters["image/png"]
    try:
        png.lookup_by_type(figure_class)
    except KeyError:
        from IPython.core.pylabtools import select_figure_formats

        select_figure_formats(shell, {"png"})


def distinct_colors(count: int) -> list[tuple[float, float, float, float]]:
    """``count`` distinct colours (devices, methods, runs): tab10, then tab20 (up to 20), then evenly spaced hues."""
    pyplot()
    from matplotlib import colormaps

    if count <= 10:
        return [colormaps["tab10"](i) for i in range(count)]
    if count <= 20:
        return [colormaps["tab20"](i) for i in range(count)]
    return [colormaps["hsv"](i / count) for i in range(count)]


def device_colors(cluster: Cluster) -> list[tuple[float, float, float, float]]:
    """One colour per device: distinct hues for accelerators, greys for CPUs."""
    k, cpus = cluster.accelerators, cluster.num_devices - cluster.accelerators
    hues = distinct_colors(k)
    greys = [(g, g, g, 1.0) for g in np.linspace(0.45, 0.75, max(cpus, 1))[:cpus]]
    return hues + greys


def label_devices(ax: Any, rows: Sequence[float], devices: Sequence[int], cluster: Cluster) -> None:
    """Name each device on ``ax``'s rows, in its colour (the link between a bar and the graph's marks)."""
    colors = device_colors(cluster)
    ax.set_yticks(list(rows), [cluster.device_name(d) for d in devices], fontsize=8)
    for tick, device in zip(ax.get_yticklabels(), devices):
        tick.set_color(colors[device])
        tick.set_fontweight("bold")


def human_bytes(value: float) -> str:
    """``1.7e10`` -> ``'17.2 GB'`` (decimal units, as the workloads state memory)."""
    if not math.isfinite(value):
        return "unlimited"
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.3g} B"


@dataclass(frozen=True)
class Drawn:
    """What a picture of a placement needs: the graph, cluster, devices and the placement's facts."""

    graph: Graph
    cluster: Cluster
    device: np.ndarray
    name: str
    placement: Placement | None

    @property
    def overlap(self) -> bool:
        """Communication overlapped with compute (the throughput objective's ``overlap`` option)."""
        return bool(self.placement is not None and self.placement.info.get("options", {}).get("overlap", False))

    def headline(self, objective: str | None = None, value: float | None = None) -> str:
        """``'layer_bert24_training: throughput 41.75 (optimal, dp)'``; ``value`` for another objective's."""
        p = self.placement
        if p is not None and objective in (None, p.objective_name):
            words = f"{p.objective_name} {p.objective:.4g} ({p.status.value}, {p.method})"
        else:
            objective = objective or "throughput"
            if value is None:
                value = evaluate(self.graph, self.cluster, self.device, objective)
            words = f"{objective} {value:.4g}" + ("" if p is None else f" ({p.method}'s placement)")
        return f"{self.name}: {words}"


def drawn(workload: Workload | Graph | None, placement: Placement | np.ndarray | Any, function: str) -> Drawn:
    """Check the two arguments every placement picture takes, at the boundary, naming what is wrong.

    ``workload`` is a :class:`Workload`, or a :class:`Graph` with ``placement`` a :class:`Placement`
    (its cluster), or None when ``placement`` is a Placement (its graph and cluster).
    """
    if isinstance(placement, Placement):
        if placement.device is None:
            raise ParameterError(f"{function}: the placement has no devices to draw (status {placement.status}).")
        graph, cluster = placement.graph, placement.cluster
        if isinstance(workload, Workload) and workload.graph != graph:
            raise ParameterError(f"{function}: the placement is of another graph than the workload "
                                 f"({graph.n} nodes, the workload has {workload.graph.n}).")
        name = workload.name if isinstance(workload, Workload) else "placement"
        return Drawn(graph, cluster, placement.device, name, placement)
    if not isinstance(workload, Workload):
        raise ParameterError(f"The 'workload' parameter of {function} must be a Workload when the placement is a "
                             f"device array (a Graph has no cluster). Got {type(workload).__name__} instead.")
    device = as_device_array(workload.graph, workload.cluster, placement)
    return Drawn(workload.graph, workload.cluster, device, workload.name, None)
