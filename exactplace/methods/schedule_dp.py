"""The schedule-aware DP ("schedule-dp"): the best pipeline under GPipe or 1F1B, exact.

Under a schedule (:mod:`exactplace.core.schedule`) a plan of ``p`` stages costs
``(M + p - 1) / M`` times its slowest stage per microbatch, and stage ``i`` must hold the
microbatches the schedule keeps in flight there (1F1B: ``min(p - i, M)``, the first stage most), so
neither the best split nor its stage count is the max-load optimum's. For each stage count ``p``
the DP splits the contracted graph's ideals (:mod:`exactplace.core.contraction`), stage after
stage in pipeline order, each stage within its position's memory:

    best[i][J] = min over ideals I < J, J \\ I fitting at position i - 1 of max(best[i - 1][I], load(J \\ I))

and the answer is the least ``(M + p - 1) / M * best[p][all units]``. Stage ``i`` runs on
accelerator ``i`` (the evaluator's pipeline order). It enumerates the ideals and the pairs of them
in Python and numpy, so it suits block and layer graphs (hundreds of units in a near-chain), not
wide operator graphs; identical accelerators, no CPU stage.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from exactplace.core.contraction import Contraction, contract
from exactplace.core.dag import strong_components
from exactplace.core.errors import TooLargeError
from exactplace.core.graph import Graph
from exactplace.core.params import Integer, Option
from exactplace.core.placement import Limit, Status
from exactplace.core.problem import MethodResult, Problem
from exactplace.core.schedule import bubble_factor, in_flight
from exactplace.methods.scheduled import STAGE_OPTIONS, ScheduledMethod, stage_counts, stage_words

__all__ = ["ScheduleDP", "StagePairs", "stage_pairs"]

MAX_PAIRS = Option("max_pairs", Integer(low=1), 2_000_000,
                   "the most (ideal, larger ideal) pairs the schedule DP enumerates")


class _Expired(Exception):
    """The time limit passed."""


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _Expired


@dataclass(frozen=True)
class StagePairs:
    """Every stage the DP may use: an ideal ``start[s]`` grown to ``end[s]`` (indices into ``ideals``,
    bitsets of items as Python ints; ``node_item``: each node's item), with the stage's load, memory
    and activation bytes."""

    ideals: list[int]
    node_item: np.ndarray
    start: np.ndarray
    end: np.ndarray
    load: np.ndarray
    memory: np.ndarray
    activation: np.ndarray


def _ideals(units: int, preds: list[int], limit: int) -> list[int]:
    """Every ideal of the unit DAG as a bitset (``preds[u]``: u's predecessors), smallest first."""
    seen, frontier = {0}, [0]
    while frontier:
        grown = []
        for ideal in frontier:
            for u in range(units):
                bit = 1 << u
                if not ideal & bit and preds[u] & ~ideal == 0 and ideal | bit not in seen:
                    seen.add(ideal | bit)
                    grown.append(ideal | bit)
            if len(seen) > limit:
                raise TooLargeError(f"The schedule DP would enumerate more than {limit:,} ideals; capture the model "
                                    "at block or module granularity, or merge nodes into colour classes.")
        frontier = grown
    return sorted(seen, key=lambda ideal: (ideal.bit_count(), ideal))


def pipeline_items(graph: Graph, contraction: Contraction) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each unit's item (units one stage must hold together), and the units' order as edges.

    The unit DAG orders forward parts; gradients flow the other way, so a backward edge from unit
    a to unit b puts b's stage at or before a's (an edge b -> a). Units on a cycle of both share
    a stage: they form one item (numbered by their lowest unit).
    """
    unit = contraction.unit
    gradient = graph.backward[graph.src] & graph.backward[graph.dst]
    src = np.concatenate([contraction.src, unit[graph.dst[gradient]]])
    dst = np.concatenate([contraction.dst, unit[graph.src[gradient]]])
    return strong_components(contraction.num_units, src, dst), src, dst


def stage_pairs(graph: Graph, contraction: Contraction, *, overlap: bool = False,
                max_pairs: int = MAX_PAIRS.default, deadline: float | None = None) -> StagePairs:
    """Every (ideal, larger ideal) pair of the pipeline's items (:func:`pipeline_items`) and its
    stage's load on an accelerator.

    The load is the max-load evaluator's: accelerator time plus each communication group leaving
    the stage (its source inside, a target outside) and each entering it (source outside, a target
    inside), or their max with ``overlap``.
    """
    item, before, after = pipeline_items(graph, contraction)
    items = int(item.max()) + 1
    preds = [0] * items
    for a, b in zip(item[before].tolist(), item[after].tolist()):
        if a != b:
            preds[b] |= 1 << a
    ideals = _ideals(items, preds, max_pairs)
    ptr, reach = contraction.group_ptr, item[contraction.group_target]
    groups = [(1 << int(item[contraction.group_source[g]]), sum({1 << int(t) for t in reach[ptr[g]:ptr[g + 1]]}), cost)
              for g, cost in enumerate(contraction.group_cost.tolist())]
    acc = np.bincount(item, weights=np.where(contraction.supported, contraction.acc_time, 0.0), minlength=items)
    blocked = np.bincount(item, weights=~contraction.supported, minlength=items) > 0
    acc = np.where(blocked, math.inf, acc).tolist()
    node_item = item[contraction.unit]
    mem = np.bincount(node_item, weights=graph.memory, minlength=items).tolist()
    act = np.bincount(node_item, weights=graph.activation, minlength=items).tolist()
    start, end, load, memory, held = [], [], [], [], []
    for i, ideal in enumerate(ideals):
        _check_deadline(deadline)
        # A stage is the difference of an ideal and any larger one (every larger ideal grows from it).
        for j in range(i + 1, len(ideals)):
            larger = ideals[j]
            if larger & ideal != ideal:
                continue
            stage = larger & ~ideal
            members = [u for u in range(items) if stage >> u & 1]
            compute = sum(acc[u] for u in members)
            comm = sum(cost for source, targets, cost in groups
                       if (source & stage and targets & ~stage) or (not source & stage and targets & stage))
            start.append(i)
            end.append(j)
            load.append(max(compute, comm) if overlap else compute + comm)
            memory.append(sum(mem[u] for u in members))
            held.append(sum(act[u] for u in members))
        if len(start) > max_pairs:
            raise TooLargeError(f"The schedule DP would try more than {max_pairs:,} stages (pairs of ideals); "
                                "capture the model at block or module granularity, or raise max_pairs.")
    return StagePairs(ideals, node_item, np.array(start, dtype=np.int64), np.array(end, dtype=np.int64),
                      np.array(load), np.array(memory), np.array(held))


def best_split(pairs: StagePairs, stages: int, flight: tuple[int, ...], memory_cap: float,
               deadline: float | None = None) -> tuple[float, list[int]] | None:
    """The least max load of ``stages`` stages covering every unit, stage ``i`` holding ``flight[i]``
    microbatches within ``memory_cap``, and the pairs it uses in order; None when none fits."""
    full = len(pairs.ideals) - 1
    best = np.full(len(pairs.ideals), math.inf)
    best[0] = 0.0
    chosen = []
    for position in range(stages):
        _check_deadline(deadline)
        fits = pairs.memory + (flight[position] - 1) * pairs.activation <= memory_cap
        value = np.where(fits, np.maximum(best[pairs.start], pairs.load), math.inf)
        grown = np.full(len(pairs.ideals), math.inf)
        np.minimum.at(grown, pairs.end, value)
        pick = np.full(len(pairs.ideals), -1, dtype=np.int64)
        hit = np.flatnonzero(np.isfinite(value) & (value == grown[pairs.end]))
        pick[pairs.end[hit[::-1]]] = hit[::-1]  # the first pair reaching each ideal's best
        chosen.append(pick)
        best = grown
    if not math.isfinite(best[full]):
        return None
    used, ideal = [], full
    for position in reversed(range(stages)):
        pair = int(chosen[position][ideal])
        used.append(pair)
        ideal = int(pairs.start[pair])
    return float(best[full]), used[::-1]


class ScheduleDP(ScheduledMethod):
    """Exact pipeline under a schedule: every stage count, stages within their in-flight memory."""

    name = "schedule-dp"
    description = "exact pipeline split under a GPipe or 1F1B schedule (bubble and in-flight memory)"
    options = {"max_pairs": MAX_PAIRS, **STAGE_OPTIONS}

    def run(self, problem: Problem) -> MethodResult:
        graph, cluster = problem.graph, problem.cluster
        schedule, microbatches = problem.option("schedule"), problem.option("microbatches")
        most = max(in_flight(schedule, 1, microbatches))
        everything = float(graph.memory.sum() + (most - 1) * graph.activation.sum())
        # Trivial merges may ignore memory only when the graph fits one accelerator under the schedule.
        contraction = contract(graph, memory=cluster.memory_cap if everything <= cluster.memory_cap else 0.0)
        found: tuple[float, int, list[int]] | None = None
        limit = None
        try:
            pairs = stage_pairs(graph, contraction, overlap=bool(problem.option("overlap")),
                                max_pairs=self.setting(problem, "max_pairs"), deadline=problem.deadline)
            for stages in stage_counts(problem, type(self), min(cluster.accelerators, int(pairs.node_item.max()) + 1)):
                split = best_split(pairs, stages, in_flight(schedule, stages, microbatches), cluster.memory_cap,
                                   problem.deadline)
                if split is not None:
                    value = bubble_factor(stages, microbatches) * split[0]
                    if found is None or value < found[0]:
                        found = (value, stages, split[1])
        except _Expired:
            limit = Limit.TIME
        except KeyboardInterrupt:
            limit = Limit.INTERRUPT
        if found is None:
            if limit is not None:
                return MethodResult(None, Status.NO_SOLUTION, limit=limit, solver="python")
            return MethodResult(None, Status.INFEASIBLE, solver="python", info={
                "reason": f"no pipeline of {stage_words(problem, type(self), cluster.accelerators)} fits its "
                          f"memory under {schedule!r}"})
        value, stages, used = found
        # The ideals are bitsets of items (not units): each item takes the position of the stage holding it.
        item_device = np.empty(int(pairs.node_item.max()) + 1, dtype=np.int64)
        for position, pair in enumerate(used):
            stage = pairs.ideals[int(pairs.end[pair])] & ~pairs.ideals[int(pairs.start[pair])]
            item_device[[u for u in range(len(item_device)) if stage >> u & 1]] = position
        # Stopped early, the stage counts not tried are unbounded: no proven bound.
        return MethodResult(item_device[pairs.node_item], Status.OPTIMAL if limit is None else Status.FEASIBLE,
                            bound=value if limit is None else None, limit=limit, solver="python",
                            info={"stages": stages, "schedule": schedule, "microbatches": microbatches})
