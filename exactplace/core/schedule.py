"""Pipeline schedules: how many microbatches each stage keeps in flight, and the bubble they pay.

A plan split into ``p`` stages (a chain: stage ``i`` feeds only later ones) runs a step of ``M``
microbatches. Each stage's load ``t_i`` (:func:`~exactplace.evaluators.max_load.device_loads`) is
its time per microbatch, and the slowest stage paces the pipeline:

* ``"gpipe"`` (Huang et al. 2019): every forward, then every backward. A step takes
  ``(M + p - 1) * max t_i``; each stage keeps all ``M`` microbatches' activations until their
  backward.
* ``"1f1b"`` (PipeDream-Flush, Narayanan et al. 2021): one forward, one backward once warmed up.
  The same step time; stage ``i`` (0-based) keeps ``min(p - i, M)`` microbatches in flight, the
  first stage most.

The objective under a schedule is the step time per microbatch, ``(M + p - 1) / M * max t_i``: the
max-load objective with the bubble counted, so fewer stages can win. A stage's memory is its nodes'
``memory`` plus ``(f - 1)`` times their ``activation`` for ``f`` microbatches in flight (``memory``
already holds one).

Examples
--------
>>> in_flight("1f1b", stages=4, microbatches=8)
(4, 3, 2, 1)
>>> in_flight("gpipe", stages=2, microbatches=8)
(8, 8)
>>> bubble_factor(stages=4, microbatches=8)
1.375
"""

from __future__ import annotations

import numpy as np

from exactplace.core.errors import ParameterError

__all__ = ["SCHEDULES", "bubble_factor", "check_schedule", "in_flight"]

#: The schedules every evaluator and exact method models; other names are refused.
SCHEDULES: tuple[str, ...] = ("gpipe", "1f1b")


def check_schedule(schedule: object, microbatches: object, caller: str = "solve") -> tuple[str, int]:
    """``(schedule, microbatches)`` validated; a ParameterError naming the parameter otherwise."""
    if not isinstance(schedule, str) or schedule not in SCHEDULES:
        others = " ('interleaved-1f1b' and 'zb-h1' are not modelled yet)" if schedule in (
            "interleaved-1f1b", "zb-h1") else ""
        raise ParameterError(f"The 'schedule' parameter of {caller} must be one of {', '.join(map(repr, SCHEDULES))}"
                             f"{others}. Got {schedule!r} instead.")
    if isinstance(microbatches, bool) or not isinstance(microbatches, (int, np.integer)) or microbatches < 1:
        raise ParameterError(f"The 'microbatches' parameter of {caller} must be a positive integer (the "
                             f"microbatches of one step under schedule {schedule!r}). Got {microbatches!r} instead.")
    return schedule, int(microbatches)


def in_flight(schedule: str, stages: int, microbatches: int) -> tuple[int, ...]:
    """Microbatches each of ``stages`` stages keeps in flight (activations held), first stage first."""
    check_schedule(schedule, microbatches)
    if schedule == "gpipe":
        return (microbatches,) * stages
    return tuple(min(stages - i, microbatches) for i in range(stages))


def bubble_factor(stages: int, microbatches: int) -> float:
    """Step time per microbatch over the slowest stage's load: ``(M + p - 1) / M`` (GPipe and 1F1B)."""
    return (microbatches + stages - 1) / microbatches
