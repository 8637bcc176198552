"""A placement scored as a pipeline under a schedule (:mod:`exactplace.core.schedule`).

Under a schedule, the accelerators in use are the pipeline's stages in index order, rank 0 first:
every edge between forward nodes runs from an accelerator to itself or a later one, every edge
between backward nodes (gradients) to itself or an earlier one, and no node runs on a CPU core (a
CPU is not a pipeline stage). A stage's load is its accelerator's load
(:func:`~exactplace.evaluators.max_load.device_loads`), per microbatch; its memory is its nodes'
``memory`` plus ``(f - 1)`` times their ``activation`` for the ``f`` microbatches the schedule keeps
in flight there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.graph import Graph
from exactplace.core.placement_array import as_device_array
from exactplace.core.schedule import bubble_factor, check_schedule, in_flight
from exactplace.evaluators.max_load import device_loads

__all__ = ["PipelineScore", "pipeline_breaks", "pipeline_score"]


@dataclass(frozen=True)
class PipelineScore:
    """A pipeline's stages under a schedule; ``breaks`` says why a placement is not a pipeline (then
    ``time_per_microbatch`` is inf and the per-stage fields are empty)."""

    schedule: str
    microbatches: int
    stages: tuple[int, ...]      # the accelerators in use, in pipeline order
    loads: np.ndarray            # time per microbatch of each stage
    in_flight: tuple[int, ...]   # microbatches each stage keeps in flight
    memory: np.ndarray           # bytes each stage holds under the schedule
    breaks: str | None = None

    @property
    def step_time(self) -> float:
        """Time of one step of ``microbatches`` microbatches: ``(M + p - 1) * max load``."""
        return self.time_per_microbatch * self.microbatches

    @property
    def time_per_microbatch(self) -> float:
        """The objective: ``(M + p - 1) / M * max load``; inf for a placement that is not a pipeline."""
        if self.breaks is not None:
            return float("inf")
        return bubble_factor(len(self.stages), self.microbatches) * float(self.loads.max(initial=0.0))


def pipeline_breaks(graph: Graph, cluster: Cluster, device: np.ndarray) -> str | None:
    """Why the placement is not a pipeline on the accelerators in index order (None: it is one)."""
    names = cluster.device_names()
    on_cpu = np.flatnonzero(device >= cluster.accelerators)
    if on_cpu.size:
        i = int(on_cpu[0])
        return f"{graph.describe(i)} is on {names[device[i]]}: a CPU core is not a stage of a pipeline schedule"
    forward = ~graph.backward[graph.src] & ~graph.backward[graph.dst]
    gradient = graph.backward[graph.src] & graph.backward[graph.dst]
    wrong = np.flatnonzero((forward & (device[graph.src] > device[graph.dst]))
                           | (gradient & (device[graph.src] < device[graph.dst])))
    if wrong.size:
        e = int(wrong[0])
        u, v = int(graph.src[e]), int(graph.dst[e])
        way = "an earlier" if forward[e] else "a later"
        return (f"the {'forward' if forward[e] else 'backward'} edge from {graph.describe(u)} on {names[device[u]]} "
                f"to {graph.describe(v)} on {names[device[v]]} runs to {way} stage: a pipeline's stages are its "
                "accelerators in index order")
    return None


def pipeline_score(graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray, schedule: str,
                   microbatches: int, *, overlap: bool = False) -> PipelineScore:
    """Score a placement as a pipeline under ``schedule`` with ``microbatches`` per step.

    Examples
    --------
    >>> from exactplace.core.graph import Graph, Node
    >>> g = Graph([Node(i, 1.0, 1.0, memory=3.0, activation=1.0) for i in range(3)], [(0, 1), (1, 2)])
    >>> s = pipeline_score(g, Cluster(2, cpus=0), [0, 0, 1], "1f1b", 4)
    >>> s.stages, s.in_flight, s.memory.tolist(), s.loads.tolist()
    ((0, 1), (2, 1), [8.0, 3.0], [2.0, 1.0])
    >>> s.time_per_microbatch        # (4 + 2 - 1) / 4 * 2
    2.5
    >>> print(pipeline_score(g, Cluster(2, cpus=0), [1, 0, 0], "1f1b", 4).breaks)  # doctest: +ELLIPSIS
    the forward edge from node 0 on acc1 to node 1 on acc0 runs to an earlier stage: ...
    """
    schedule, microbatches = check_schedule(schedule, microbatches, "pipeline_score")
    dev = as_device_array(graph, cluster, device)
    breaks = pipeline_breaks(graph, cluster, dev)
    if breaks is not None:
        return PipelineScore(schedule, microbatches, (), np.zeros(0), (), np.zeros(0), breaks)
    stages = np.unique(dev)
    loads = device_loads(graph, cluster, dev, overlap=overlap).load()[stages]
    flight = in_flight(schedule, len(stages), microbatches)
    position = np.searchsorted(stages, dev)
    extra = (np.asarray(flight, dtype=np.float64)[position] - 1.0) * graph.activation
    memory = np.bincount(position, weights=graph.memory + extra, minlength=len(stages))
    return PipelineScore(schedule, microbatches, tuple(int(d) for d in stages), loads, flight, memory)
