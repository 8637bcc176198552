"""``auto``'s trial runs: run a method briefly to learn whether it suits a problem, and keep its answer.

A method whose running time cannot be told in advance (the DP past its estimate, the bounded
search on a wide graph) is tried for a share of the time left. When the trial ends as the method
would (``decided``), ``auto`` picks the method and its ``run`` returns the trial's result instead
of starting again; otherwise ``auto`` passes over it with the reason. Decided once per problem:
both live in ``Problem.cache`` under the method's key.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from exactplace.core.problem import MethodResult, Problem

__all__ = ["take_trial_result", "trial_outlook", "trial_verdict"]


def trial_verdict(problem: Problem, key: str, seconds: float, slow: str, run: Callable[[Problem], MethodResult],
                  decided: Callable[[MethodResult], bool], undecided: str) -> str | None:
    """Run ``run`` for ``seconds``: None if ``decided`` holds for its result (kept for :func:`take_trial_result`),
    else why not to use the method: ``slow``, then ``undecided`` with ``{seconds}`` filled in."""
    known = problem.cache.get(key)
    if known is not None:
        return None if isinstance(known, MethodResult) else known
    if seconds <= 0:
        return slow
    clock = time.perf_counter()
    result = run(dataclasses.replace(problem, deadline=time.monotonic() + seconds))
    took = time.perf_counter() - clock
    if not decided(result):
        problem.cache[key] = f"{slow}; {undecided.format(seconds=f'{seconds:.3g}')}"
        return problem.cache[key]
    result.timings["trial"] = took
    result.info["trial"] = f"finished in {took:.3g} s of a {seconds:.3g}-s trial ({slow})"
    problem.cache[key] = result
    return None


def take_trial_result(problem: Problem, key: str) -> MethodResult | None:
    """The result of ``auto``'s trial run under ``key`` (one that decided), once; else None."""
    trial = problem.cache.pop(key, None)
    return trial if isinstance(trial, MethodResult) else None


def trial_outlook(problem: Problem, key: str) -> str | None:
    """How the trial run under ``key`` ended, when one decided (its result still waiting); else None."""
    trial = problem.cache.get(key)
    if not isinstance(trial, MethodResult):
        return None
    return f"{trial.status.value} in a trial run of {trial.timings.get('trial', 0.0):.3g} s"
