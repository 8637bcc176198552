"""The paper's greedy baseline (Appendix F): fill accelerators in topological order.

1. Blocks: the units of the Appendix B contraction (:mod:`exactplace.core.contraction`), the
   same units every method places, fused further where they feed each other through
   forward-to-backward edges (:func:`greedy_blocks`).
2. A topological order of the blocks, lexicographic by unit number, so it is deterministic.
3. Fill accelerator 0 with as many consecutive blocks as fit in its memory, then accelerator 1,
   and so on; a block that fits on no accelerator (too large, or holding a node unsupported on
   accelerators) and every block after the last accelerator is full goes to the CPU.
4. Latency only: accelerators whose subgraphs would wait on each other in a cycle move to the CPU.

A block sent to the CPU between two blocks of one accelerator breaks that accelerator's run, so
the placements are not guaranteed contiguous; the method promises only memory, support and
colocation.
"""

from __future__ import annotations

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.contraction import Contraction
from exactplace.core.dag import strong_components, topological_order
from exactplace.core.errors import InvocationCycleError
from exactplace.core.graph import Graph
from exactplace.core.placement import Status
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators.latency import invocation_blocks
from exactplace.heuristics.memory import settle_memory
from exactplace.methods.base import Method

__all__ = ["Greedy", "greedy_blocks"]


def greedy_blocks(graph: Graph, contraction: Contraction) -> list[np.ndarray]:
    """The greedy's blocks (arrays of node positions) in its topological order.

    A block is a strongly connected component of the contraction's units under the unit
    edges plus every original edge leaving a forward node. The contraction orders units by
    forward edges only (what the max-load DP needs); a forward node feeding another class's
    backward node also makes that class wait, so classes feeding each other that way share
    a block (else the latency evaluator's accelerator subgraphs would wait on each other).
    Backward-to-backward edges mirror forward ones and are left out, as they would fuse
    every class of a training graph. Blocks are ordered lexicographically by their first unit.

    >>> from exactplace.core.contraction import contract
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(2, 0), (0, 1)])
    >>> [b.tolist() for b in greedy_blocks(g, contract(g))]
    [[2], [0], [1]]
    """
    forward_source = ~graph.backward[graph.src]
    src = np.concatenate([contraction.src, contraction.unit[graph.src[forward_source]]])
    dst = np.concatenate([contraction.dst, contraction.unit[graph.dst[forward_source]]])
    block_of_unit = strong_components(contraction.num_units, src, dst)  # numbered by their first unit
    blocks = int(block_of_unit.max()) + 1 if contraction.num_units else 0
    between = block_of_unit[src] != block_of_unit[dst]
    order = topological_order(blocks, block_of_unit[src][between], block_of_unit[dst][between])
    block = block_of_unit[contraction.unit]
    by_block = np.argsort(block, kind="stable")
    bounds = np.searchsorted(block[by_block], np.arange(blocks + 1))
    return [by_block[bounds[c]:bounds[c + 1]] for c in order.tolist()]


class Greedy(Method):
    """Greedy contiguous fill in topological order (paper Appendix F)."""

    name = "greedy"
    objectives = ("throughput", "latency")
    exact = False
    description = "fill accelerators with consecutive blocks of a topological order; the rest on CPU"

    def run(self, problem: Problem) -> MethodResult:
        graph, cluster = problem.graph, problem.cluster
        device = np.empty(graph.n, dtype=np.int64)
        cpu = cluster.accelerators if cluster.cpus else None
        current, used = 0, 0.0
        # Plain lists, read once: per-block numpy calls (and the memory_limit property) are slow over
        # millions of blocks. A one-node block reads its node's values, the same numbers its numpy sum gives.
        limits, memory, supported = cluster.memory_limit.tolist(), graph.memory.tolist(), graph.supported.tolist()
        largest = max(limits, default=0.0)
        blocks = greedy_blocks(graph, problem.contraction)
        block_device = [0] * len(blocks)
        for b, block in enumerate(blocks):
            if len(block) == 1:
                size, runs = memory[block[0]], supported[block[0]]
            else:
                size, runs = float(graph.memory[block].sum()), bool(graph.supported[block].all())
            fits_somewhere = runs and size <= largest
            while fits_somewhere and current < cluster.accelerators and used + size > limits[current]:
                current, used = current + 1, 0.0
            if fits_somewhere and current < cluster.accelerators:
                block_device[b] = current
                used += size
            elif cpu is not None:
                block_device[b] = cpu
            else:  # accelerators full and no CPU: the last one, overfull, for settle_memory to repair or refute
                block_device[b] = cluster.accelerators - 1
        if blocks:
            device[np.concatenate(blocks)] = np.repeat(block_device, [len(block) for block in blocks])
        result = settle_memory(graph, cluster, device, deadline=problem.deadline)
        if problem.objective == "latency" and result.device is not None:
            return _invocable(graph, cluster, result)
        return result


def _invocable(graph: Graph, cluster: Cluster, result: MethodResult) -> MethodResult:
    """Step 4 of the module docstring: accelerators of an invocation cycle moved to the CPU until none is left.

    The accelerator subgraphs must be invocable in some order. Blocks follow forward edges, but a
    backward edge through a CPU node (or a memory repair) can still make them wait on each other
    in a cycle; then the highest-numbered accelerator of the cycle moves its nodes to the CPU (CPU
    nodes run one by one, so they break the cycle), until an order exists. Without a CPU core no
    such repair exists and the result says so.
    """
    device = result.device.copy()
    moved = []
    while True:
        try:
            invocation_blocks(graph, cluster, device)
        except InvocationCycleError as cycle:
            if not cluster.cpus:
                return MethodResult(None, Status.NO_SOLUTION, solver=result.solver, info={
                    **result.info, "reason": f"{cycle} Greedy moves such accelerators to a CPU core; "
                    "this cluster has none."})
            culprit = max(d for d in cycle.devices if d < cluster.accelerators)
            device[device == culprit] = cluster.accelerators
            moved.append(cluster.device_name(culprit))
            continue
        if moved:
            result = MethodResult(device, result.status, solver=result.solver,
                                  info={**result.info, "moved_to_cpu": moved})
        return result
