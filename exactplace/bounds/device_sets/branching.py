"""Branch-and-price over device sets (Ryan and Foster): deciding a threshold beyond the relaxation's limit.

A node's master solution that is fractional has a pair of classes on one device in some of its columns and on two in
others; one branch keeps the pair together, the other apart (:class:`~exactplace.bounds.device_sets.node.Branch`); a
node is closed by Farley's bound over its own pricing, exactly as the root, and a node whose master solution is
integral is a split within the threshold. Depth first, the likelier branch first, the pair the nearest in the
pricing's order among the most fractional; children start from their parent's duals; a node still undecided after
``node_patience`` of the time is put off until the others are decided. The first fractional node is dived from first
(:mod:`~exactplace.bounds.device_sets.diving`).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

import numpy as np

from exactplace.formulations.device_sets import SetRelaxation

from .columns import Column, Pool
from .diving import dive
from .generation import refute
from .node import Branch
from .settings import DEFAULT_DEVICE_SETS, DeviceSetSettings
from .solutions import fractional_pair, integral_split

__all__ = ["branch_and_price"]


def branch_and_price(sets: SetRelaxation, order: np.ndarray, pool: Pool, threshold: float, deadline: float,
                     cancel: threading.Event | None, counts: dict[str, int], settled: Callable[[], bool],
                     offer: Callable[[list[Column]], None], *,
                     settings: DeviceSetSettings = DEFAULT_DEVICE_SETS) -> tuple[str, np.ndarray | None]:
    """Decide a threshold the relaxation alone cannot refute, by branching on pairs of classes, depth first.

    ``("refuted", None)`` when every branch is refuted (the threshold is a lower bound of every split),
    ``("split", device)`` when a branch's master solution is integral (one set per device, each within the threshold;
    ``device``: class -> device, accelerators first) or the dive from the first fractional node met one,
    ``("stopped", None)`` at the deadline or on a solution it cannot branch on (a set shared fractionally by an
    accelerator and a CPU core), ``("settled", None)`` as soon as ``settled()`` (asked before each master solve: a
    better split found meanwhile is certified by the bound already). ``order``: the pricing's class order (the pairs'
    nearness); each fractional node solution is passed to ``offer``; ``counts["nodes"]`` counts the nodes solved.
    """
    stack: list[tuple[Branch, tuple[np.ndarray, float] | None]] = [(Branch(), None)]  # with the parent's duals
    later: list[tuple[Branch, tuple[np.ndarray, float] | None]] = []  # out of patience: again once the rest is done
    patience = settings.node_patience * max(0.0, deadline - time.monotonic())
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    diving, dive_time = True, settings.dive_patience * max(0.0, deadline - time.monotonic())
    while stack or later:
        if time.monotonic() >= deadline or (cancel is not None and cancel.is_set()):
            return "stopped", None
        if settled():
            return "settled", None
        if not stack:
            stack, later, patience = later[::-1], [], 4.0 * patience
        node, center = stack.pop()
        counts["nodes"] += 1
        ended = refute(sets, pool, threshold, min(deadline, time.monotonic() + patience), cancel, counts, node,
                       center, settled, settings=settings)
        if ended.verdict == "refuted":
            continue
        if ended.verdict == "stopped":
            later.append((node, center))
            continue
        if not ended.solution:
            return "stopped", None
        pair, together = fractional_pair(ended.solution, position, settings)
        if pair is None:
            return integral_split(sets, ended.solution, settings)
        offer(ended.solution)
        if diving:
            diving = False  # (once a tree: it may take ``dive_patience`` of its time)
            device = dive(sets, pool, threshold, min(deadline, time.monotonic() + dive_time), cancel, counts,
                          settled, node, ended, position, settings=settings)
            if device is not None:
                return "split", device
        kept, parted = (dataclasses.replace(node, together=(*node.together, pair)),
                        dataclasses.replace(node, apart=(*node.apart, pair)))
        children = [(parted, ended.duals), (kept, ended.duals)]
        stack.extend(children if together >= 0.5 else children[::-1])  # the likelier branch first (popped last)
    return "refuted", None
