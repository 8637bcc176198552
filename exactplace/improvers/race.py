"""A one-core solve and a second search on the core it leaves idle; the first to decide stops the other.

:func:`race`: two solves of one IP that differ only by the solver's seed. :func:`beside_bound`: the solve and a bound
prover that aims at the solver's best split (the device-set relaxation, :mod:`exactplace.methods.portfolio`).

Why: HiGHS's branch-and-bound runs on one core whatever threads it is given, and its time to close a gap swings
widely with its seed. Where nothing else runs beside the solver (no lower bound of ``L`` for the polish to aim at:
:class:`~exactplace.improvers.polish.Alongside`), a second seed on the idle core gets the sooner of two draws. Both
solves are of the same IP: the result takes the better split (by the evaluator) and the higher bound; one certifying
(or proving the IP infeasible) decides it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from exactplace.core.placement import Status, TracePoint
from exactplace.core.problem import MethodResult

__all__ = ["DEFAULT_RACE", "RaceSettings", "Racer", "beside_bound", "race"]


@dataclass(frozen=True)
class RaceSettings:
    """The race's settings (:data:`DEFAULT_RACE`; pass another to :func:`race`)."""

    second_seed: int = 1
    """The second solve's seed (the first keeps the solver's default, 0)."""


#: The race's default settings.
DEFAULT_RACE = RaceSettings()

#: Statuses that end the race: the solve that reaches one first stops the other.
DECIDED = (Status.OPTIMAL, Status.INFEASIBLE)

Solve = Callable[[int, threading.Event], tuple[MethodResult, Any]]


@dataclass(frozen=True)
class Racer:
    """One side of a race, as the solve it runs needs to know it: the solver's seed, the progress printer both sides
    share (None: no progress shown), the info and timings it says what it did in, and whether its solver's log is
    off (two logs interleaved would read as one)."""

    seed: int
    shown: Callable[[TracePoint], None] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    quiet: bool = False


def race(solve: Solve, value: Callable[[np.ndarray], float],
         settings: RaceSettings = DEFAULT_RACE) -> tuple[MethodResult, Any, dict]:
    """Run ``solve(seed, stop)`` with seed 0 in this thread and ``settings.second_seed`` in another; each is stopped
    (as by Ctrl-C) when the other decides, and the second when the first ends for any reason (Ctrl-C included).

    ``solve`` returns a result and the adapter's raw output (whose ``values`` are the result's split); ``value`` is
    the evaluator's max load of a split. Returns the first solve's result, with the second's split when better, the
    higher of their bounds and, when either decided, its status; the raw output of the split kept; and a record for
    ``info`` (what the second solve did, which ones decided). The second solve failing costs nothing but its
    draw (the record says why).
    """
    seed = settings.second_seed

    def second(stop: threading.Event) -> tuple[bool, tuple[MethodResult, Any]]:
        got = solve(seed, stop)
        return got[0].status in DECIDED, got

    (result, out), seconded = _side_by_side(lambda stop: solve(0, stop), second, "exactplace-race")
    record: dict[str, Any] = {"seeds": [0, seed]}
    if isinstance(seconded, Exception):  # its draw is lost, not the solve
        record["second"] = f"failed ({seconded})"
        return result, out, record
    other, other_out = seconded
    other_value = None if other.device is None else value(other.device)
    record["second"] = {"status": other.status.value, "bound": other.bound, "seconds": other.timings.get("solve"),
                        "value": other_value}
    record["decided"] = [side for side, each in ((0, result), (seed, other)) if each.status in DECIDED]
    if other.status is Status.INFEASIBLE and result.status not in DECIDED:  # (no start was given, none found)
        result.status, result.limit, result.device, result.bound = Status.INFEASIBLE, None, None, None
        result.info["reason"] = other.info.get("reason")
        return result, other_out, record
    if result.status is Status.INFEASIBLE:
        return result, out, record
    if other_value is not None and (result.device is None or other_value < value(result.device)):
        result.device, result.replicas, out = other.device, other.replicas, other_out
        record["split_from"] = seed
    bounds = [bound for bound in (result.bound, other.bound) if bound is not None]
    result.bound = max(bounds) if bounds else None
    if record["decided"]:
        result.status, result.limit = Status.OPTIMAL, None
    elif result.device is not None and result.status is Status.NO_SOLUTION:
        result.status = Status.FEASIBLE
    result.trace = sorted([*result.trace, *other.trace], key=lambda point: point.seconds)
    return result, out, record


def beside_bound(solve: Callable[[threading.Event, Callable[[float], None]], tuple[MethodResult, Any]],
                 prove: Callable[[Callable[[], float], threading.Event], tuple[bool, Any]],
                 start: float) -> tuple[MethodResult, Any, Any]:
    """Run ``solve(stop, heard)`` in this thread and ``prove(best, stop)`` in another: ``heard`` takes each incumbent
    the solver reports, ``best()`` is the lowest so far (``start``, the warm start's, before any). ``prove`` returns
    (decided, what it found): decided (the solver's best split is certified), the solve is stopped (as by Ctrl-C);
    the prover is stopped when the solve ends for any reason (Ctrl-C included). Returns the solve's result and raw
    output, and what the prover found (an exception it raised, in its place: its loss is only its help).

    >>> from exactplace.core.placement import Space, Status
    >>> def solve(stop, heard):
    ...     heard(9.0)
    ...     stop.wait(5.0)  # a long solve, until the prover decides
    ...     return MethodResult(None, Status.FEASIBLE, space=Space.ANY), "raw"
    >>> def prove(best, stop):  # a bound that certifies any split of 9 or less, once the solver has one
    ...     while best() > 9.0 and not stop.wait(0.01):
    ...         pass
    ...     return True, f"certified {best()}"
    >>> result, out, found = beside_bound(solve, prove, start=10.0)
    >>> result.status.value, out, found
    ('feasible', 'raw', 'certified 9.0')
    """
    best = [start]

    def heard(value: float) -> None:
        best[0] = min(best[0], value)

    (result, out), found = _side_by_side(lambda stop: solve(stop, heard), lambda stop: prove(lambda: best[0], stop),
                                         "exactplace-bound")
    return result, out, found


def _side_by_side(first: Callable[[threading.Event], Any],
                  second: Callable[[threading.Event], tuple[bool, Any]], name: str) -> tuple[Any, Any]:
    """``first(stop)`` in this thread, ``second(stop)`` in another (named ``name``): ``second`` returning (decided,
    found) with decided sets ``first``'s event; ``first`` ending for any reason (Ctrl-C included) sets ``second``'s,
    and ``second`` is waited for. Returns what ``first`` returned and ``found`` (the exception ``second`` raised, in
    its place: its loss is only its help)."""
    stop_first, stop_second, finished = threading.Event(), threading.Event(), threading.Event()
    box: dict[str, Any] = {}

    def run_second() -> None:
        try:
            decided, box["found"] = second(stop_second)
            if decided:
                stop_first.set()
        except Exception as error:
            box["found"] = error
        finally:
            finished.set()

    threading.Thread(target=run_second, name=name, daemon=True).start()
    try:
        mine = first(stop_first)
    finally:
        stop_second.set()
        _wait(finished)
    return mine, box.get("found")


def _wait(finished: threading.Event) -> None:
    """Wait for the other side, which was asked to stop (a Ctrl-C meanwhile changes nothing: it is stopping)."""
    while not finished.is_set():
        try:
            finished.wait(0.1)
        except KeyboardInterrupt:
            continue
