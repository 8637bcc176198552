"""The paper's greedy baseline (Appendix F): fill accelerators in topological order.

1. Blocks: contract every colocation class, then the strongly connected components
   that contraction creates (a block can only move as a whole).
2. Fix a topological order of the blocks.
3. Fill accelerator 0 with as many consecutive blocks as fit in its memory, then
   accelerator 1, and so on; a block that fits on no accelerator (too large, or holding
   a node unsupported on accelerators) and every block after the last accelerator is
   full goes to the CPU.

Consecutive runs of a topological order are contiguous, so inference placements are
contiguous. For training graphs the blocks are built from forward edges (backward
nodes ride with their color class), as the paper's DP does; their backward parts are
then not guaranteed contiguous.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from exactplace.core.graph import Graph
from exactplace.core.placement import Status
from exactplace.methods.registry import Method, MethodResult, Problem, register

__all__ = ["Greedy", "greedy_blocks"]


def greedy_blocks(graph: Graph) -> list[np.ndarray]:
    """Inseparable blocks (colocation classes fused along cycles), in a topological order.

    Each block is an array of node positions. The order is lexicographic by the smallest
    node position of each block, among the valid ones, so it is deterministic.
    """
    # Training: only forward->forward edges constrain the order (backward nodes follow their class).
    keep = ~graph.backward[graph.src] if graph.is_training else np.ones(graph.m, dtype=bool)
    classes = nx.DiGraph()
    classes.add_nodes_from(np.unique(graph.color).tolist())
    classes.add_edges_from(zip(graph.color[graph.src[keep]].tolist(), graph.color[graph.dst[keep]].tolist()))
    condensed = nx.condensation(classes)
    members = condensed.graph["mapping"]  # class -> component
    component = np.array([members[c] for c in graph.color.tolist()])
    first = {c: int(np.flatnonzero(component == c)[0]) for c in condensed.nodes}
    order = list(nx.lexicographical_topological_sort(condensed, key=first.__getitem__))
    return [np.flatnonzero(component == c) for c in order]


@register
class Greedy(Method):
    """Greedy contiguous fill in topological order (paper Appendix F)."""

    name = "greedy"
    objectives = ("throughput", "latency")
    exact = False
    contiguous = False  # contiguous for inference graphs; see the module docstring for training
    description = "fill accelerators with consecutive blocks of a topological order; the rest on CPU"

    def run(self, problem: Problem) -> MethodResult:
        graph, cluster = problem.graph, problem.cluster
        device = np.empty(graph.n, dtype=np.int64)
        cpu = cluster.accelerators if cluster.cpus else None
        current, used = 0, 0.0
        for block in greedy_blocks(graph):
            size = float(graph.memory[block].sum())
            fits_somewhere = bool(graph.supported[block].all()) and size <= cluster.memory_limit.max(initial=0.0)
            while fits_somewhere and current < cluster.accelerators and used + size > cluster.memory_limit[current]:
                current, used = current + 1, 0.0
            if fits_somewhere and current < cluster.accelerators:
                device[block] = current
                used += size
            elif cpu is not None:
                device[block] = cpu
            else:
                reason = {"reason": "accelerators full, no CPU"}
                return MethodResult(None, Status.NO_SOLUTION, solver="greedy", info=reason)
        return MethodResult(device, Status.FEASIBLE, solver="greedy")
