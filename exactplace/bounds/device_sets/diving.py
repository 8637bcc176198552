"""A diving heuristic for the branch-and-price: column fixing from a node's converged master, towards a split.

At a tree's first fractional node, before its children, the master's columns of value 1 and one fractional column are
fixed (each takes a device of its kind, no other column touches their classes) and the generation runs again within
the node so made, until a master is integral: a split within the threshold. A dive is ``k + l`` levels deep at most,
where the pairs' branching fixes one pair a node and may take many nodes to meet a split. A failed dive proves nothing.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable

import numpy as np

from exactplace.formulations.device_sets import SetRelaxation

from .columns import Pool
from .generation import Generation, refute
from .node import Branch
from .settings import DEFAULT_DEVICE_SETS, DeviceSetSettings
from .solutions import fractional_pair, integral_split

__all__ = ["dive"]


def dive(sets: SetRelaxation, pool: Pool, threshold: float, deadline: float, cancel: threading.Event | None,
         counts: dict[str, int], settled: Callable[[], bool], node: Branch, ended: Generation,
         position: np.ndarray, *, settings: DeviceSetSettings = DEFAULT_DEVICE_SETS) -> np.ndarray | None:
    """A split within ``threshold`` by column fixing from a node's converged master (``ended``; nothing is proven
    when it fails): the master's columns of value 1 and one fractional column are fixed, the generation runs again
    within the node so made, until a master is integral (the split, class -> device). The fractional column fixed is
    the largest; where the generation after it refutes (or ends otherwise) the next largest of the
    ``settings.dive_width`` largest is tried, depth first, until the ``deadline`` or ``settings.dive_depths`` times
    ``k + l`` generations (None: no split met). ``position``: class -> place in the pricing's order;
    ``counts["dives"]`` counts the generations."""
    stack: list[tuple[Branch, tuple[np.ndarray, float] | None]] = [(node, None)]  # with the parent's duals
    generations = settings.dive_depths * (sets.accelerators + sets.cpus)
    fractional = settings.fractional
    while stack and time.monotonic() < deadline and not (cancel is not None and cancel.is_set()):
        node, center = stack.pop()
        if center is not None:  # (the first node's generation is given)
            if not generations:
                break
            generations -= 1
            counts["dives"] = counts.get("dives", 0) + 1
            ended = refute(sets, pool, threshold, deadline, cancel, counts, node, center, settled, settings=settings)
        if ended.verdict != "converged" or not ended.solution:
            continue
        pair, _ = fractional_pair(ended.solution, position, settings)
        if pair is None:
            verdict, device = integral_split(sets, ended.solution, settings)
            if verdict == "split":
                return device
            continue
        held = {chosen.tobytes() for chosen, _ in node.fixed}
        free = [column for column in ended.solution if column.chosen.tobytes() not in held]
        whole = tuple((column.chosen, column.cpu) for column in free if column.value >= 1.0 - fractional)
        candidates = sorted((column for column in free if column.value < 1.0 - fractional),
                            key=lambda column: -column.value)[:settings.dive_width]
        for column in candidates[::-1]:  # the largest first (popped last)
            stack.append((dataclasses.replace(node, fixed=(*node.fixed, *whole, (column.chosen, column.cpu))),
                          ended.duals))
    return None
