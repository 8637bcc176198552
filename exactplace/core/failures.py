"""Failures a result survives: a solver whose process died, a solver point the referee dropped.

A method often goes on when one of its solves fails (it keeps its warm start, or the bound of another
solve), so its result alone cannot tell "this method proves no bound" from "the solver crashed". Every
failed solve is recorded here (:func:`record_failure`), from whichever thread ran it, and the front door
collects what was recorded while a method ran (:func:`failures_during`) into the result's
``info["solver_failures"]``.

>>> with failures_during() as failures:
...     record_failure("highs crashed: its process ended without a result (exit status -9, SIGKILL)")
>>> failures
['highs crashed: its process ended without a result (exit status -9, SIGKILL)']
>>> record_failure("outside any block: kept nowhere")
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["failures_during", "record_failure"]

_recorded: list[str] = []
_open_blocks = 0
_lock = threading.Lock()


def record_failure(failure: str) -> None:
    """Tell every open :func:`failures_during` block that a solve failed, in one line (which solver, and how)."""
    with _lock:
        if _open_blocks:
            _recorded.append(failure)


@contextmanager
def failures_during() -> Iterator[list[str]]:
    """The failures recorded while the block runs, in any thread; the list is complete once the block ends.

    Blocks may nest. Two blocks open at the same time in different threads (two ``solve`` calls side by
    side in one process) both receive what either records.
    """
    global _open_blocks
    with _lock:
        start = len(_recorded)
        _open_blocks += 1
    found: list[str] = []
    try:
        yield found
    finally:
        with _lock:
            found.extend(_recorded[start:])
            _open_blocks -= 1
            if not _open_blocks:
                _recorded.clear()
