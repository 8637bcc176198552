"""Checking a node -> device array against its graph and cluster, once, at the boundary."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from exactplace.core.cluster import Cluster
from exactplace.core.errors import PlacementError
from exactplace.core.graph import Graph


def as_device_array(graph: Graph, cluster: Cluster, device: Sequence[int] | np.ndarray) -> np.ndarray:
    """Return ``device`` as an int64 array of length ``graph.n``, or raise PlacementError.

    ``device[i]`` is the device of the node at position ``i`` (accelerators ``0..k-1``,
    CPUs ``k..k+l-1``).
    """
    array = np.asarray(device)
    if array.shape != (graph.n,):
        raise PlacementError(f"A placement needs one device per node ({graph.n}); got shape {array.shape}.")
    if array.dtype.kind not in "iu":
        if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
            array = array.astype(np.int64)
        else:
            raise PlacementError(f"Device numbers must be integers; got dtype {array.dtype}.")
    bad = np.flatnonzero((array < 0) | (array >= cluster.num_devices))
    if bad.size:
        i = int(bad[0])
        raise PlacementError(
            f"{graph.describe(i).capitalize()} is placed on device {int(array[i])}, "
            f"but the cluster has devices 0..{cluster.num_devices - 1} "
            f"({cluster.accelerators} accelerators, {cluster.cpus} CPUs)."
        )
    return array.astype(np.int64, copy=False)


def as_subgraph_array(graph: Graph, cluster: Cluster, device: np.ndarray,
                      subgraph: Sequence[int] | np.ndarray | None) -> np.ndarray | None:
    """Return a latency plan's subgraph indices (checked ``device``'s) as int64, -1 on CPUs; or raise PlacementError.

    ``subgraph[i]``: the index of node ``i``'s subgraph on its accelerator (0, 1, ...; the
    accelerator runs them in that order); entries of CPU nodes are ignored. None stays None.
    """
    if subgraph is None:
        return None
    array = np.asarray(subgraph)
    if array.shape != (graph.n,) or array.dtype.kind not in "iu":
        raise PlacementError(
            f"A subgraph assignment needs one integer per node ({graph.n}); got shape {array.shape}, "
            f"dtype {array.dtype}.")
    on_acc = device < cluster.accelerators
    bad = np.flatnonzero(on_acc & (array < 0))
    if bad.size:
        raise PlacementError(f"{graph.describe(int(bad[0])).capitalize()} is on an accelerator but has "
                             f"subgraph {int(array[bad[0]])}; subgraphs are numbered from 0.")
    return np.where(on_acc, array, -1).astype(np.int64)


def as_replicas_array(graph: Graph, cluster: Cluster, device: np.ndarray,
                      replicas: Sequence[int] | np.ndarray | None) -> np.ndarray | None:
    """Return a replicated plan's replicas per accelerator (int64, shape ``(accelerators,)``), or raise PlacementError.

    ``replicas[a]``: how many identical accelerators run accelerator ``a``'s part data-parallel
    (paper Appendix C.2); the extra ones are anonymous accelerators of the same kind, so the
    replicas of the accelerators in use must add up to at most the cluster's ``accelerators``
    (:func:`~exactplace.evaluators.check_feasibility` checks that). Entries of unused
    accelerators are read as 1. Replicas above 1 need a homogeneous cluster: with accelerators of
    several memories or speeds, which ones replicate a part would be a choice the plan does not
    state. None stays None; all ones is returned as it is (no replication).

    >>> from exactplace.core.graph import Node
    >>> g = Graph([Node(0, 1.0, 1.0), Node(1, 1.0, 1.0)], [(0, 1)])
    >>> as_replicas_array(g, Cluster(4, cpus=1), np.array([0, 1]), [3, 1, 7, 7]).tolist()
    [3, 1, 1, 1]
    """
    if replicas is None:
        return None
    array = np.asarray(replicas)
    k = cluster.accelerators
    if array.shape != (k,) or (array.size and array.dtype.kind not in "iu"):
        raise PlacementError(
            f"Replicas need one integer per accelerator ({k}); got shape {array.shape}, dtype {array.dtype}.")
    array = array.astype(np.int64)
    used = np.zeros(k, dtype=bool)
    used[device[device < k]] = True
    if np.any(array[used] < 1):
        a = int(np.flatnonzero(used & (array < 1))[0])
        raise PlacementError(f"{cluster.device_name(a)} holds nodes but has {int(array[a])} replicas; "
                             "a part in use runs on at least 1.")
    array = np.where(used, array, 1)
    if np.any(array > 1) and not cluster.is_homogeneous:
        raise PlacementError(
            "Replicas above 1 need a homogeneous cluster (one accelerator memory, speed 1): the extra replicas are "
            "anonymous identical accelerators, which a cluster of several memories or speeds does not have.")
    return array
