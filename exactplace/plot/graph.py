"""The placement drawn on its graph: layers from left to right, one colour per device, cut edges emphasized."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from exactplace.core.graph import Graph
from exactplace.core.placement import Placement
from exactplace.evaluators import device_loads
from exactplace.io import Workload
from exactplace.plot.style import WIDTH, Drawn, device_colors, drawn, human_bytes, new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["Layout", "draw_placement_graph", "graph_height", "layered_layout", "placement_graph"]

#: Barycentre sweeps that order each layer (each sweep goes left to right, then right to left).
SWEEPS = 4


@dataclass(frozen=True)
class Layout:
    """Where each drawn mark sits.

    Attributes
    ----------
    members : list of arrays
        The node positions each mark stands for, in data-flow order: a chain of nodes on one
        device, each with one successor and one predecessor inside it, is one mark.
    x, y : arrays
        The mark's layer (longest path from a source, in marks) and its place within the layer.
    edges : array of shape (e, 2)
        Pairs of marks joined by at least one edge of the graph.
    mark_of : array
        The mark of each node position.
    """

    members: list[np.ndarray]
    x: np.ndarray
    y: np.ndarray
    edges: np.ndarray
    mark_of: np.ndarray


def _chains(graph: Graph, device: np.ndarray | None) -> np.ndarray:
    """The mark of every node, numbered in data-flow order.

    A source with one successor on its device (a weight, a constant) joins its consumer's mark;
    then maximal chains u -> v (u's only successor, v's only other predecessor, one device, one
    pass) are one mark each.
    """
    n = graph.n
    # Degrees within one pass: a forward node's edges to the backward pass (stashed activations) do not
    # keep it out of a forward chain.
    same_pass = graph.backward[graph.src] == graph.backward[graph.dst]
    out_degree = np.bincount(graph.src[same_pass], minlength=n)
    in_degree = np.bincount(graph.dst[same_pass], minlength=n)
    together = same_pass.copy()
    if device is not None:
        together &= device[graph.src] == device[graph.dst]
    leaf_edge = (in_degree[graph.src] == 0) & (out_degree[graph.src] == 1) & together
    absorbed_into = np.full(n, -1)
    absorbed_into[graph.src[leaf_edge]] = graph.dst[leaf_edge]
    inputs = in_degree - np.bincount(graph.dst[leaf_edge], minlength=n)  # same-pass predecessors, not leaves
    joins = (out_degree[graph.src] == 1) & (inputs[graph.dst] == 1) & together & ~leaf_edge
    successor = np.full(n, -1)
    successor[graph.src[joins]] = graph.dst[joins]
    has_predecessor = np.zeros(n, dtype=bool)
    has_predecessor[graph.dst[joins]] = True
    mark = np.full(n, -1)
    count = 0
    for head in graph.topological_order.tolist():  # heads in data-flow order: marks are numbered topologically
        if has_predecessor[head] or absorbed_into[head] >= 0:
            continue
        v = head
        while v >= 0:
            mark[v] = count
            v = successor[v]
        count += 1
    leaves = np.flatnonzero(absorbed_into >= 0)
    mark[leaves] = mark[absorbed_into[leaves]]
    return mark


def layered_layout(graph: Graph, device: np.ndarray | None = None, *, collapse_chains: bool = True) -> Layout:
    """Layer the graph from left to right and order each layer to keep edges short.

    Chains on one device are collapsed into one mark (when ``collapse_chains``); each mark's
    layer is the longest path to it from a source; within a layer, marks are ordered by the
    mean place of their neighbours (barycentre sweeps, as in Sugiyama-style drawings).

    Examples
    --------
    >>> from exactplace import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(4)], [(0, 1), (1, 2), (0, 3)])
    >>> layout = layered_layout(g)
    >>> [m.tolist() for m in layout.members], layout.x.tolist()  # 1 -> 2 is a chain: one mark
    ([[0], [1, 2], [3]], [0.0, 1.0, 1.0])
    """
    mark_of = _chains(graph, device) if collapse_chains else graph.topological_order.argsort()
    count = int(mark_of.max()) + 1
    members = [[] for _ in range(count)]
    for v in graph.topological_order.tolist():
        members[mark_of[v]].append(v)
    pairs = np.unique(np.stack([mark_of[graph.src], mark_of[graph.dst]], axis=1), axis=0).reshape(-1, 2)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    # Marks are numbered in a topological order of the contracted graph, so one pass finds the layers.
    layer = np.zeros(count, dtype=np.int64)
    for a, b in pairs[np.argsort(pairs[:, 0], kind="stable")].tolist():
        layer[b] = max(layer[b], layer[a] + 1)
    # A source (a weight, an input) sits just before its first consumer, not in one tall column at the left.
    source = np.ones(count, dtype=bool)
    source[pairs[:, 1]] = False
    first_use = np.full(count, np.iinfo(np.int64).max)
    np.minimum.at(first_use, pairs[:, 0], layer[pairs[:, 1]])
    moved = source & (first_use < np.iinfo(np.int64).max)
    layer[moved] = first_use[moved] - 1
    # Forward and backward marks (training) lie in two bands, forward above; a backward mark stands under
    # the first forward mark of its colour class (so the two passes mirror each other). Each layer of each
    # band is ordered by the mean place of its neighbours in that band.
    band = np.array([graph.backward[m[0]] for m in members], dtype=np.int64)
    if band.any() and not band.all():
        forward_layer: dict[int, int] = {}
        for v in graph.topological_order.tolist():
            if not graph.backward[v]:
                forward_layer.setdefault(int(graph.color[v]), int(layer[mark_of[v]]))
        for mark in np.flatnonzero(band).tolist():
            partners = [forward_layer[c] for c in graph.color[members[mark]].tolist() if c in forward_layer]
            if partners:
                layer[mark] = min(partners)
        layer = np.unique(layer, return_inverse=True)[1].reshape(-1)  # no empty columns where marks moved away
    neighbours: list[list[int]] = [[] for _ in range(count)]
    for a, b in pairs[band[pairs[:, 0]] == band[pairs[:, 1]]].tolist():
        neighbours[a].append(b)
        neighbours[b].append(a)
    groups = [list(np.flatnonzero((layer == i) & (band == side)))
              for side in (0, 1) for i in range(int(layer.max()) + 1)]
    groups = [g for g in groups if g]
    place = np.zeros(count)
    for marks in groups:
        place[marks] = np.arange(len(marks)) - (len(marks) - 1) / 2
    for sweep in range(2 * SWEEPS):
        for marks in groups if sweep % 2 == 0 else groups[::-1]:
            if len(marks) < 2:
                continue
            centre = [np.mean(place[neighbours[m]]) if neighbours[m] else place[m] for m in marks]
            marks[:] = [m for _, m in sorted(zip(centre, marks))]
            place[marks] = np.arange(len(marks)) - (len(marks) - 1) / 2
    if band.any() and not band.all():
        below = place[band == 0].min() - place[band == 1].max() - 1.5
        place[band == 1] += below
    return Layout([np.array(m) for m in members], layer.astype(float), place, pairs, mark_of)


def _legend_label(d: Drawn, device: int, load: np.ndarray, nodes: np.ndarray) -> str:
    label = f"{d.cluster.device_name(device)}: load {load[device]:.4g}, {nodes[device]} nodes"
    if d.cluster.is_accelerator(device):
        used = float(d.graph.memory[d.device == device].sum())
        label += f", {human_bytes(used)}"
    return label


def draw_placement_graph(ax: Axes, d: Drawn, layout: Layout, *, legend: bool = True) -> None:
    """Draw the placement graph into ``ax`` at the places ``layout`` gives."""
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    colors = device_colors(d.cluster)
    mark_device = np.array([d.device[m[0]] for m in layout.members])
    sizes = np.array([len(m) for m in layout.members])
    marks, layers = len(layout.members), int(layout.x.max()) + 1
    height = max(float(np.ptp(layout.y)), 1.0)
    # Marks shrink as the drawing fills up, so that a 1,000-node graph is not a solid smear.
    area = min(90.0, 9000.0 / max(marks, 1)) * (1 + np.log2(sizes))
    segments = np.stack([np.stack([layout.x[layout.edges[:, 0]], layout.y[layout.edges[:, 0]]], axis=1),
                         np.stack([layout.x[layout.edges[:, 1]], layout.y[layout.edges[:, 1]]], axis=1)], axis=1)
    cut = mark_device[layout.edges[:, 0]] != mark_device[layout.edges[:, 1]]
    crowded = len(cut) > 400  # many edges: thinner and lighter, so that the marks and cut edges stand out
    ax.add_collection(LineCollection(segments[~cut], colors="0.82" if crowded else "0.72",
                                     linewidths=0.3 if crowded else 0.6, zorder=1))
    ax.add_collection(LineCollection(segments[cut], colors="black", linewidths=1.3, alpha=0.7, zorder=2))
    backward = np.array([d.graph.backward[m[0]] for m in layout.members], dtype=bool)
    for shape, which in (("o", ~backward), ("s", backward)):  # backward nodes (training) are squares
        ax.scatter(layout.x[which], layout.y[which], s=area[which], marker=shape, edgecolors="white",
                   c=[colors[x] for x in mark_device[which].tolist()], linewidths=0.4, zorder=3)
    if marks <= 120:  # a chain's length, where it stays legible
        for x, y, size in zip(layout.x.tolist(), layout.y.tolist(), sizes.tolist()):
            if size > 1:  # inside the mark, which grows with its chain
                ax.annotate(str(size), (x, y), ha="center", va="center", fontsize=6, color="white",
                            fontweight="bold", zorder=4)
    ax.set_xlim(-1, layers)
    ax.set_ylim(float(layout.y.min()) - 0.8, float(layout.y.min()) + height + 0.8)
    ax.axis("off")
    if legend:
        load = device_loads(d.graph, d.cluster, d.device, overlap=d.overlap).load()
        nodes = np.bincount(d.device, minlength=d.cluster.num_devices)
        handles = [Line2D([], [], marker="o", linestyle="", markersize=8, color=colors[x],
                          label=_legend_label(d, x, load, nodes)) for x in np.unique(d.device).tolist()]
        handles.append(Line2D([], [], color="black", linewidth=1.6,
                              label=f"cut edge ({int(cut.sum())} of {len(cut)} drawn)"))
        if d.graph.is_training:
            handles.append(Line2D([], [], marker="s", linestyle="", markersize=7, color="0.5",
                                  label="backward node (forward: circle)"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False,
                  title=f"{d.graph.n} nodes in {marks} marks" if marks < d.graph.n else f"{d.graph.n} nodes",
                  title_fontsize=8)


def graph_height(layout: Layout) -> float:
    """Inches for a drawing of ``layout``: a third of an inch per mark in the widest layer, within 2.5 to 8."""
    return min(max(2.5, 0.35 * max(float(np.ptp(layout.y)), 1.0) + 1.5), 8.0)


def placement_graph(workload: Workload | Graph | None, placement: Placement | np.ndarray, *,
                    collapse_chains: bool = True, title: str | None = None) -> Figure:
    """The graph coloured by device, in layers from left to right.

    Parameters
    ----------
    workload : Workload, Graph or None
        The workload (for its name and cluster); None or its Graph when ``placement`` is a
        :class:`~exactplace.Placement`.
    placement : Placement or array of int
        The placement, or a device per node position.
    collapse_chains : bool, default True
        Draw each chain of nodes on one device as one mark (its length written beside it while
        the drawing has at most 120 marks): how a 1,000-node graph stays readable.
    title : str, optional
        Default: the workload, the objective's value, status and method.

    Returns
    -------
    matplotlib.figure.Figure
        Edges between devices (each one a transfer) are black and thick, the others light
        grey; the legend lists each device's load, node count and memory. In a training
        graph backward nodes are squares.

    Examples
    --------
    >>> import exactplace as ep
    >>> w = ep.read_workload(ep.workload_path("layer_bert24_inference"))
    >>> fig = placement_graph(w, ep.solve(w))
    >>> fig.axes[0].get_title(loc="left")
    'layer_bert24_inference: throughput 17.79 (optimal, dp)'
    """
    d = drawn(workload, placement, "placement_graph")
    layout = layered_layout(d.graph, d.device, collapse_chains=collapse_chains)
    fig = new_figure(WIDTH + 3, graph_height(layout))
    ax = fig.add_subplot()
    draw_placement_graph(ax, d, layout)
    ax.set_title(title if title is not None else d.headline(), fontsize=10, loc="left")
    return fig

