"""How the tests judge time: a stop is on time when it comes within the limit asked for plus slack
that scales with it, never against a fixed fraction of a second.

The suite runs on a loaded 2-core machine; how soon a stop comes under no load is measured in
``benchmarks/`` (``bench_interrupt.py``, ``bench_huge_limits.py``), not asserted here. What the tests assert is that the
limit is honoured: no run takes many times what it was given.
"""

from __future__ import annotations

#: Slack for process start, teardown and a loaded scheduler, in seconds, on top of twice the limit.
STARTUP = 3.0


def on_time(elapsed: float, limit: float, *, extra: float = 0.0) -> bool:
    """True when a run given ``limit`` seconds (plus ``extra`` the method may take by design) took at
    most twice that plus :data:`STARTUP`."""
    return elapsed <= 2 * (limit + extra) + STARTUP
