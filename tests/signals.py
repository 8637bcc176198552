"""Ctrl-C as a terminal sends it, for the tests (``tests`` is on ``pythonpath``)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any


def ctrl_c_as_each_solve_ends(solve_model: Callable[..., Any], statuses: list) -> Callable[..., Any]:
    """``solve_model`` that sends SIGINT to this process as each solve ends (recording its status in
    ``statuses``): the moment an adapter's own wait would have swallowed the KeyboardInterrupt, leaving a
    proven status with no interrupt mark."""

    def solves_then_ctrl_c(*args: object, **kwargs: object) -> Any:
        out = solve_model(*args, **kwargs)
        statuses.append(out.status)
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:  # (what the adapter's wait does with it)
            pass
        return out

    return solves_then_ctrl_c


def stop_the_second_job(monkeypatch: Any, module: Any, how: str) -> list[str]:
    """Make ``module.solve_job`` (regress's or the paper tables') stop the run while its second job solves: Ctrl-C,
    or SIGTERM sent to this process (``how``). Returns the keys of the jobs started, filled as they start."""
    from exactplace.cli import main as cli

    monkeypatch.setattr(cli._Terminated, "seen", False)  # restored after the test: other tests see no SIGTERM
    solved, calls = module.solve_job, []

    def solve_job(job: dict[str, Any]) -> Any:
        calls.append(job["key"])
        if len(calls) == 2:
            if how == "SIGTERM":
                os.kill(os.getpid(), signal.SIGTERM)
            raise KeyboardInterrupt
        return solved(job)

    monkeypatch.setattr(module, "solve_job", solve_job)
    return calls
