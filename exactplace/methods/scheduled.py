"""What the methods that optimize under a pipeline schedule share: their declarations, their check,
and the stage counts a user may ask for (:mod:`exactplace.core.schedule`)."""

from __future__ import annotations

from exactplace.core.errors import check_param
from exactplace.core.params import Integer, Option
from exactplace.core.placement import Space
from exactplace.core.problem import Problem
from exactplace.evaluators.feasibility import Guarantees
from exactplace.methods.base import Method

__all__ = ["STAGE_OPTIONS", "ScheduledMethod", "stage_counts", "stage_words"]

#: The stage counts a user may ask of a pipeline: all of them, or a divisor of the ranks that will run it.
STAGE_OPTIONS = {
    "stages": Option("stages", Integer(low=1), None, "exactly this many stages (None: any number up to the "
                     "accelerators)"),
    "ranks": Option("ranks", Integer(low=1), None, "a stage count that divides this many ranks (DeepSpeed's world "
                    "size must be a multiple of its stages)"),
}


def stage_counts(problem: Problem, method: type[Method], most: int) -> list[int]:
    """The stage counts to try: 1..most, or those the ``stages`` and ``ranks`` options allow."""
    stages, ranks = method.setting(problem, "stages"), method.setting(problem, "ranks")
    return [p for p in range(1, most + 1) if (stages is None or p == stages) and (ranks is None or ranks % p == 0)]


def stage_words(problem: Problem, method: type[Method], accelerators: int) -> str:
    """The stage counts a run allowed, in words (for the reason none fits)."""
    stages, ranks = method.setting(problem, "stages"), method.setting(problem, "ranks")
    if stages is not None:
        return f"{stages} stages"
    return f"at most {accelerators} stages" + (f" dividing {ranks} ranks" if ranks is not None else "")


class ScheduledMethod(Method):
    """A throughput method exact over pipelines under ``schedule=``: identical accelerators, stage ``i`` on
    accelerator ``i`` (subclasses set ``name``, ``description``, ``options`` and ``run``)."""

    objectives = ("throughput",)
    exact = True
    space = Space.CHAIN
    guarantee = Guarantees.of_space(Space.CHAIN)
    schedules = True

    @classmethod
    def check(cls, problem: Problem) -> None:
        check_param(problem.option("schedule") is not None, "schedule", "solve",
                    f"a pipeline schedule for method {cls.name!r}", None)
        cluster = problem.cluster
        check_param(cluster.is_homogeneous and not cluster.is_two_level and cluster.accelerators >= 1, "cluster",
                    "solve", f"identical accelerators on one level for method {cls.name!r}", cluster)
