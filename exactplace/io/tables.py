"""Numbers and tables as the reports write them: JSON-safe floats and markdown tables."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["finite", "markdown_table"]


def finite(value: float | None) -> float | None:
    """``value`` as a float, None for None and for an infinite or NaN value (JSON has neither).

    >>> finite(2), finite(float("inf")), finite(None)
    (2.0, None, None)
    """
    return None if value is None or not math.isfinite(value) else float(value)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    r"""The lines of a markdown table; a float cell shows 6 significant digits, None an empty cell.

    >>> markdown_table(["case", "value"], [["a", 2 / 3], ["b|c", None]])
    ['| case | value |', '|---|---|', '| a | 0.666667 |', '| b\\|c |  |']
    """
    def cell(x: Any) -> str:
        text = "" if x is None else f"{x:.6g}" if isinstance(x, float) else str(x)
        return text.replace("|", "\\|")

    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cell(x) for x in row) + " |" for row in rows)]
