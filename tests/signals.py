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
