"""What the non-contiguous portfolio's phases leave on the result: ``info``, ``timings`` and trace points.

Each phase of :class:`~exactplace.methods.portfolio.NonContiguousPortfolio` says what it gave and took in
``info[phase]`` and ``timings[phase]``, and puts what it found (splits, bounds) on the trace, timed as the solver's
trace is (seconds since ``solve`` began).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from exactplace.core.placement import Status, TracePoint
from exactplace.core.problem import MethodResult, Problem
from exactplace.evaluators import max_load

if TYPE_CHECKING:
    from exactplace.bounds.device_sets import SetBound
    from exactplace.bounds.gap_probe import Probe
    from exactplace.improvers.polish import Alongside, Polished

__all__ = ["both", "polish_points", "probe_points", "record_polish", "record_probe", "record_set_bound",
           "set_bound_points", "take_polished"]


def record_polish(found: Polished, info: dict, timings: dict) -> Polished:
    """Record what the polish gave and took (``info["polish"]``, ``timings["polish"]``)."""
    timings["polish"] = found.seconds
    info["polish"] = {"start": found.start, "value": found.value, "neighbourhoods": found.solved,
                      "improved": found.improved, "ended": found.ended}
    return found


def record_probe(found: Probe, start: float, info: dict, timings: dict) -> Probe:
    """Record what the probes gave and took (``info["gap_probe"]``, ``timings["gap_probe"]``; ``start``: the
    start's max load)."""
    timings["gap_probe"] = found.seconds
    info["gap_probe"] = {"outcome": found.outcome, "start": start, "value": found.value, "bound": found.bound,
                         "found": found.found}
    return found


def record_set_bound(found: SetBound, info: dict, timings: dict, **said: Any) -> None:
    """What the set bound found, in ``info["set_bound"]`` (after ``said``: where it ran, what it started from) and
    ``timings["set_bound"]``."""
    timings["set_bound"] = found.seconds
    info["set_bound"] = {**said, "outcome": found.outcome, "bound": found.value, "ceiling": found.ceiling,
                         "thresholds": found.thresholds, "pricings": found.pricings, "columns": found.columns,
                         "nodes": found.nodes, "dives": found.dives, "split": found.split_value,
                         "heaviest": found.heaviest}


def polish_points(began: float, polished: Polished) -> list[TracePoint]:
    """The polish on the trace (``began``: its start, in the trace's seconds): the start's value, then each
    improvement."""
    return [TracePoint(began + seconds, value, None) for seconds, value in ((0.0, polished.start), *polished.trace)]


def probe_points(began: float, probe: Probe) -> list[TracePoint]:
    """The probes on the trace (``began``: their start): each split found and bound proven."""
    return [TracePoint(began + seconds, value, bound) for seconds, value, bound in probe.trace]


def set_bound_points(began: float, found: SetBound) -> list[TracePoint]:
    """The set bound on the trace (``began``: its start): each bound it proved (none when it proved none)."""
    return [TracePoint(began + seconds, None, value) for seconds, value in found.trace]


def take_polished(problem: Problem, result: MethodResult, companion: Alongside, found: Polished, overlap: bool,
                  record: dict) -> tuple[list[TracePoint], bool]:
    """Record what the polish beside the solver (``companion``) found (``record["polish"]``: ``info["relay"]`` or
    ``info["beside_solver"]``) and make its split the result's when it is better than the solver's (the
    evaluator's loads). Returns its improvements as trace points (timed from ``solve``'s start) and whether its
    split was taken. The solver's bound stands: it holds for every split."""
    began = companion.started - problem.started
    points = [TracePoint(began + seconds, value, None) for seconds, value in found.trace]
    record["polish"] = {"start": found.start, "value": found.value, "neighbourhoods": found.solved,
                        "improved": found.improved, "starts": found.starts, "seconds": found.seconds}
    solver_value = (None if result.device is None else
                    max_load(problem.graph, problem.cluster, result.device, overlap=overlap))
    if not found.improved or (solver_value is not None and found.value >= solver_value):
        return points, False
    result.device, result.replicas = found.device, None
    if result.status is Status.NO_SOLUTION:
        result.status = Status.FEASIBLE
    if result.bound is not None:
        result.bound = min(result.bound, found.value)
    record["polish"]["taken"] = True
    return points, True


def both(first: Callable[[float], None], then: Callable[[float], None] | None) -> Callable[[float], None]:
    """A listener of incumbents that tells ``first``, then ``then`` (when there is one)."""
    if then is None:
        return first

    def heard(value: float) -> None:
        first(value)
        then(value)

    return heard
