"""The objectives exactplace optimizes, and the options that change how each is scored.

This is the one list every layer reads: the evaluators dispatch on it, ``solve`` and the
CLI validate against it, and methods declare a subset of it.
"""

from __future__ import annotations

__all__ = ["OBJECTIVES", "OBJECTIVE_LABELS", "SCORE_ONLY", "SCORING_OPTIONS"]

#: ``"throughput"``: max-load, the time per sample of pipelined execution (paper §3).
#: ``"latency"``: the time of one sample under the §4 invocation semantics.
#: ``"makespan"``: the step time of one sample in the operator-level list-schedule simulation
#: (:mod:`exactplace.evaluators.makespan`). Lower is better for all three.
OBJECTIVES: tuple[str, ...] = ("throughput", "latency", "makespan")

#: Objectives every method's placement can be scored under, even a method optimizing another
#: objective: ``solve`` then runs the method for its own first objective, scores the placement
#: under this one and reports it as merely feasible (no bound).
SCORE_ONLY: tuple[str, ...] = ("makespan",)

#: Options that change the objective itself; the evaluator scores every placement with them.
#: ``overlap``: communication overlaps compute (Appendix C.1); ``gpipe``: max FW + max BW (training);
#: ``schedule`` and ``microbatches``: a pipeline schedule's bubble and in-flight memory
#: (:mod:`exactplace.core.schedule`); ``contention``: transfers queue on one channel per accelerator (makespan).
SCORING_OPTIONS: dict[str, tuple[str, ...]] = {
    "throughput": ("overlap", "gpipe", "schedule", "microbatches"), "latency": (), "makespan": ("contention",),
}

#: What a report calls each objective's value (the throughput objective is scored as a time per
#: sample, where lower is better, so calling the number "throughput" would mislead).
OBJECTIVE_LABELS: dict[str, str] = {"throughput": "time per sample", "latency": "latency", "makespan": "makespan"}
