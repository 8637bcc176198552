"""Replay placements for real: :func:`replay` (exposed as ``exactplace.replay``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import ParameterError
from exactplace.core.graph import Graph
from exactplace.core.placement import Placement
from exactplace.core.placement_array import as_device_array, as_replicas_array
from exactplace.io import Workload
from exactplace.runtime.engine import parse_devices
from exactplace.runtime.result import MODES, ReplayResult

__all__ = ["MODES", "ReplayResult", "parse_devices", "replay"]


def replay(
    workload: Workload | Graph,
    placement: Placement | np.ndarray | list[int],
    devices: str = "auto",
    mode: str = "pipelined",
    samples: int = 24,
    *,
    cluster: Cluster | None = None,
    repeats: int = 3,
    time_unit: float | None = None,
    inputs: tuple[Any, ...] | None = None,
    replicas: np.ndarray | list[int] | None = None,
) -> ReplayResult:
    """Execute a placement for real and compare measured with predicted times.

    Parameters
    ----------
    workload : Workload or Graph
        A workload without real operators (each node becomes a kernel lasting its modelled time,
        each crossing edge a transfer lasting its cost), or a graph from
        :func:`exactplace.from_torch` (the captured module is split by the placement and run).
    placement : Placement or device array
        ``device[i]`` for the node at position ``i``. A Placement solved with ``replication=True``
        brings its ``replicas``.
    devices : str
        ``"auto"`` (CUDA when available, else virtual CPU devices), ``"cpu"``, ``"cpu:N"``, ``"cuda"``,
        ``"cuda:N"``. A count that cannot hold the placement's devices raises PlacementError.
    mode : {"pipelined", "single"}
        Pipelined: ``samples`` samples stream through one worker per device; measured is the steady
        time per sample, predicted the max-load. Single: one sample's latency (paper §4), repeated
        ``samples`` times, median. A replicated plan replays in pipelined mode only: a part on ``r``
        replicas runs on ``r`` devices taking the samples round-robin, each paying an all-reduce
        step of ``sync * (r - 1) / r`` per sample (:mod:`exactplace.runtime.programs`), so it needs
        one device per replica.
    samples : int
    cluster : Cluster, optional
        Needed when ``workload`` is a Graph and ``placement`` is a device array.
    repeats : int
        Independent runs; the overall value is their median and their spread is ``noise``.
    time_unit : float, optional
        Seconds per model time unit. Default: virtual devices scale the prediction to about 30 ms;
        CUDA and real modules take the model's unit as milliseconds.
    inputs : tuple, optional
        Real modules only: the inputs to run (default: the example inputs given to from_torch).
    replicas : array of int, optional
        With a device array: each accelerator's replicas (``Placement.replicas``, paper Appendix
        C.2). A real module's replay refuses replicas above 1 (it runs one copy of each part).

    Returns
    -------
    ReplayResult
        ``measured``, ``predicted``, ``ratio``, ``noise``, ``to_frame()`` (per device and overall).

    Examples
    --------
    >>> import exactplace as ep
    >>> g = ep.Graph([ep.Node(1, 4.0, 1.0, comm=0.5), ep.Node(2, 3.0, 2.0)], [(1, 2)])
    >>> c = ep.Cluster(accelerators=2, cpus=1)
    >>> r = replay(g, [0, 1], cluster=c, devices="cpu:2", samples=8, repeats=1)  # doctest: +SKIP
    >>> 0.75 < r.ratio < 1.25                                                    # doctest: +SKIP
    True
    """
    graph, cluster, dev, reps = _resolve(workload, placement, cluster, replicas)
    if captures_module(graph):
        from exactplace.runtime.module import replay_module

        if reps is not None and np.any(reps > 1):
            raise ParameterError("Replaying a captured module runs one copy of each of its parts, so it cannot "
                                 "replay replicated stages (the plan's replicas); solve without replication=True "
                                 "to replay the module.")
        return replay_module(graph, cluster, dev, devices=devices, mode=mode, samples=samples, repeats=repeats,
                             time_unit=time_unit, inputs=inputs)
    if inputs is not None:
        raise ParameterError("The 'inputs' parameter of replay applies to graphs from from_torch only.")
    from exactplace.runtime.engine import replay_synthetic

    return replay_synthetic(graph, cluster, dev, devices=devices, mode=mode, samples=samples, repeats=repeats,
                            time_unit=time_unit, replicas=reps)


def captures_module(graph: Graph) -> bool:
    """Whether ``graph`` remembers the module it was captured from (``from_torch``'s TorchGraph), so
    that a replay runs the module itself; checked by what it carries, so the replay layer never
    imports a frontend."""
    return all(hasattr(graph, name) for name in ("module", "fx_names", "example_inputs"))


def _resolve(workload: Any, placement: Any, cluster: Cluster | None, replicas: Any
             ) -> tuple[Graph, Cluster, np.ndarray, np.ndarray | None]:
    if isinstance(workload, Workload):
        graph, cluster = workload.graph, cluster or workload.cluster
    elif isinstance(workload, Graph):
        graph = workload
    else:
        raise ParameterError(f"The 'workload' parameter of replay must be a Workload or a Graph. "
                             f"Got {type(workload).__name__} instead.")
    if isinstance(placement, Placement):
        if placement.device is None:
            raise ParameterError(f"The placement has no devices (status {placement.status}): nothing to replay.")
        if replicas is not None:
            raise ParameterError("The 'replicas' parameter of replay goes with a device array; a Placement "
                                 "brings its own (Placement.replicas).")
        cluster = cluster or placement.cluster
        placement, replicas = placement.device, placement.replicas
    if cluster is None:
        raise ParameterError("The 'cluster' parameter of replay is needed with a Graph and a device array.")
    cluster.require_one_level("replay")  # its transfers run at one rate: a two-level prediction would not match
    dev = as_device_array(graph, cluster, placement)
    return graph, cluster, dev, as_replicas_array(graph, cluster, dev, replicas)
