"""Numeric comparisons shared by the tests (``tests`` is on ``pythonpath``)."""

from __future__ import annotations

import math


def close(a: float, b: float) -> bool:
    """Equal up to floating-point rounding of sums taken in another order."""
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def matches_printed(value: float, published: str) -> bool:
    """True when ``value`` rounds to ``published`` at the number of decimals it was printed with.

    >>> matches_printed(268.5005, "268.501"), matches_printed(268.5016, "268.501")
    (True, False)
    """
    decimals = len(published.split(".")[1]) if "." in published else 0
    return abs(value - float(published)) <= 0.5 * 10.0 ** -decimals + 1e-9
