"""Graph partitioning with METIS (through ``pymetis``), standing in for the paper's Scotch baseline.

The vertices are the colour classes that can run on an accelerator (so colocation holds by
construction), weighted by their compute; the edges by their communication. METIS splits them
into one part per accelerator, minimizing the cut under balanced weights. It knows neither the
memory cap nor the max-load, so (our choices) each partition is repaired for memory, the best
over several seeds and imbalance tolerances is kept, and the paper's local search polishes it on
the max-load itself, as partitioners refine their cuts. :class:`Metis` gives the steps.

The placement is not contiguous in general. Deterministic for a given ``seed``.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from exactplace.core.errors import ExactplaceError
from exactplace.core.graph import Graph
from exactplace.core.params import Integer, Option
from exactplace.core.placement import Limit
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators.feasibility import accelerator_memory
from exactplace.evaluators.max_load import max_load
from exactplace.heuristics.local_search import SEED, LoadState, descend
from exactplace.heuristics.memory import repair_memory, settle_memory
from exactplace.methods.base import Method

__all__ = ["Metis"]

#: Integer weights METIS sees are scaled so the largest total stays far below 2**31.
_SCALE = 1e6


def _integers(values: np.ndarray, minimum: int) -> list[int]:
    top = float(values.sum()) or 1.0
    return np.maximum(np.rint(values * (_SCALE / top)), minimum).astype(np.int64).tolist()


class Metis(Method):
    """METIS partitioning of the colour classes over the accelerators, then memory repair.

    1. Vertices are the colour classes that can run on an accelerator (a class holding an
       unsupported node goes to the first CPU core); a vertex weighs its accelerator time, an
       undirected edge the summed costs of the graph's edges between the two classes. Weights
       are scaled to integers (METIS takes integers; edge weights at least 1).
    2. Memory repair (METIS does not know the memory cap): while an accelerator is overfull, its
       class with the least compute per byte moves to the accelerator with the most free memory
       that can hold it, else to the first CPU core
       (:func:`~exactplace.heuristics.memory.repair_memory`); with no room anywhere an exact
       packing decides between a fit and a proof of infeasibility
       (:func:`~exactplace.heuristics.memory.settle_memory`).
    3. METIS is run ``tries`` times for each imbalance tolerance in ``ufactors`` (METIS's
       ``ufactor``, 1 = 0.1%: its default 30 balances compute, but max-load also counts
       communication, which a looser balance can trade against; seeds ``seed``, ``seed + 1``,
       ...; one partition's max-load varies a lot with both) and the repaired partition with
       the lowest max-load (fewest overfull devices first) is kept.
    4. Up to ``refine_moves`` best single class moves of the paper's local search
       (:func:`~exactplace.heuristics.local_search.descend`) polish that partition on the
       max-load itself (Scotch's and METIS's own Fiduccia-Mattheyses passes see only the cut
       and the balance). The cap keeps the time bounded on large graphs.

    When ``time_limit`` runs out (or on Ctrl-C) after the first partition, the best partition so
    far is kept, unrefined, with ``limit`` set.

    Examples
    --------
    >>> from exactplace import Cluster, Graph, Node, solve
    >>> g = Graph([Node(i, 10.0, 1.0, comm=0.1) for i in range(4)], [(0, 1), (2, 3)])
    >>> p = solve(g, Cluster(2, cpus=1), method="metis")
    >>> sorted(p.device.tolist()), round(p.objective, 6)   # one chain per accelerator
    ([0, 0, 1, 1], 2.0)
    """

    name = "metis"
    objectives = ("throughput",)
    description = "METIS graph partitioning (weights: compute, communication), then memory repair"
    requires = ("pymetis",)
    options = {
        "seed": SEED,
        "tries": Option("tries", Integer(low=1, high=1000), 10,
                        "METIS runs per ufactor, seeds seed, seed + 1, ...; the lowest max-load after repair is kept"),
        "refine_moves": Option("refine_moves", Integer(low=0), 100,
                               "at most this many local-search best moves polish the best partition (0: none)"),
    }

    #: METIS imbalance tolerances tried (``ufactor``, in 0.1%): its default 30 and looser and tighter ones.
    ufactors = (1, 5, 10, 30, 60, 100, 200)

    def run(self, problem: Problem) -> MethodResult:
        import pymetis  # here: an optional dependency, and solvers load only when used

        graph, cluster = problem.graph, problem.cluster
        k = cluster.accelerators
        classes = int(graph.color.max()) + 1
        supported = np.bincount(graph.color, weights=~graph.supported, minlength=classes) == 0
        compute = np.bincount(graph.color, weights=np.where(graph.supported, graph.acc_time, 0.0), minlength=classes)
        cpu = k if cluster.cpus else -1
        seed, tries = int(self.setting(problem, "seed")), int(self.setting(problem, "tries"))
        vertices = np.flatnonzero(supported)
        graph_csr = self._metis_graph(graph, vertices)
        best = None
        partitioned = k > 1 and vertices.size
        runs = [(u, a) for u in self.ufactors for a in range(tries)] if partitioned else [(0, 0)]
        limit = None
        for ufactor, attempt in runs:
            if best is not None and problem.deadline is not None and time.monotonic() > problem.deadline:
                limit = Limit.TIME
                break
            try:
                part = np.full(classes, cpu, dtype=np.int64)
                if k == 1:
                    part[vertices] = 0
                elif partitioned:
                    xadj, adjncy, eweights = graph_csr
                    _, parts = pymetis.part_graph(k, pymetis.CSRAdjacency(xadj, adjncy),
                                                  vweights=_integers(compute[vertices], 0), eweights=eweights,
                                                  options=pymetis.Options(seed=seed + attempt, ufactor=ufactor))
                    part[vertices] = np.asarray(parts, dtype=np.int64)
                device = part[graph.color]
                moved = repair_memory(graph, cluster, device)
                over = np.flatnonzero(accelerator_memory(graph, cluster, device) > cluster.memory_limit)
                value = (over.size, max_load(graph, cluster, device, overlap=bool(problem.option("overlap"))))
            except KeyboardInterrupt:
                if best is None:
                    raise
                limit = Limit.INTERRUPT  # Ctrl-C: the best partition so far, unrefined
                break
            except RuntimeError as error:  # pymetis's report of METIS_ERROR
                # While METIS runs, its GKlib takes SIGTERM for its own error signal (gk_sigtrap): a SIGTERM then
                # fails the partition and never reaches Python.
                raise ExactplaceError(f"Method 'metis': METIS failed ({error}); a SIGTERM while METIS runs ends "
                                      "it so") from None
            if best is None or value < best[0]:
                best = (value, device, over, moved, attempt, ufactor)
        (_, metis_value), device, over, moved, attempt, ufactor = best
        info = {"moved": moved, "seed": seed + attempt, "ufactor": ufactor, "metis_max_load": metis_value}
        budget = int(self.setting(problem, "refine_moves"))
        if budget and limit is None and problem.deadline is not None and time.monotonic() > problem.deadline:
            limit = Limit.TIME  # no time left for the refinement's load state (seconds on huge graphs)
        if budget and limit is None and not over.size and not problem.option("gpipe"):
            class_device = np.zeros(classes, dtype=np.int64)
            class_device[graph.color] = device
            device, _, info["refine_moves"], limit = descend(problem, LoadState(problem), class_device.tolist(),
                                                            max_moves=budget)
            if limit is not None:
                info["refine_stopped"] = limit.value
                limit = None if limit is Limit.ITERATION else limit  # the move budget is the method's own rule
        result = settle_memory(graph, cluster, device, info, solver="pymetis", deadline=problem.deadline)
        return dataclasses.replace(result, limit=result.limit or limit) if limit else result

    @staticmethod
    def _metis_graph(graph: Graph, vertices: np.ndarray) -> tuple[list[int], list[int], list[int] | None]:
        """CSR adjacency and integer edge weights of the class graph over ``vertices`` (step 1)."""
        index = {int(c): i for i, c in enumerate(vertices.tolist())}
        weight: dict[tuple[int, int], float] = {}
        for a, b, cost in zip(graph.color[graph.src].tolist(), graph.color[graph.dst].tolist(),
                              graph.edge_cost.tolist()):
            if a != b and a in index and b in index:
                key = (min(index[a], index[b]), max(index[a], index[b]))
                weight[key] = weight.get(key, 0.0) + cost
        neighbours: list[list[tuple[int, float]]] = [[] for _ in vertices]
        for (a, b), w in sorted(weight.items()):
            neighbours[a].append((b, w))
            neighbours[b].append((a, w))
        xadj = np.cumsum([0] + [len(x) for x in neighbours]).tolist()
        adjncy = [b for x in neighbours for b, _ in x]
        eweights = _integers(np.array([w for x in neighbours for _, w in x], dtype=float), 1) if adjncy else None
        return xadj, adjncy, eweights
