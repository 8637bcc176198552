"""Values against a baseline, one bar per case: the picture of a regression report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from exactplace.plot.style import WIDTH, new_figure, pyplot

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["VERDICT_COLORS", "against_baseline"]

#: Bar colour of each verdict of ``exactplace regress``.
VERDICT_COLORS = {"regression": "#C0392B", "improved": "#27AE60", "ok": "#95A5A6", "new": "#2980B9",
                  "missing": "#7F8C8D"}


def against_baseline(cases: Sequence[str], ratios: Sequence[dict[str, float | None]],
                     verdicts: Sequence[str], *, title: str | None = None) -> Figure:
    """Each case's current value (and replayed time) over its baseline's, coloured by verdict.

    Parameters
    ----------
    cases : sequence of str
        The case names (``workload/method/objective``).
    ratios : sequence of mapping
        Per case, ``{"value": current / baseline, "measured": ...}``; None where either is missing.
    verdicts : sequence of str
        Per case, the regress verdict (``ok``, ``regression``, ``improved``, ``new``, ``missing``).

    Returns
    -------
    matplotlib.figure.Figure
        One panel per quantity present (value, measured): a bar per case from 1 (the baseline)
        to its ratio, a case without a ratio marked ``-`` at 1.

    Examples
    --------
    >>> fig = against_baseline(["w/dp/throughput"], [{"value": 1.0, "measured": 1.2}], ["regression"])
    >>> [ax.get_xlabel() for ax in fig.axes]
    ['value / baseline', 'measured / baseline']
    """
    pyplot()  # the install hint, not an ImportError, when matplotlib is missing
    from matplotlib.patches import Patch

    quantities = [q for q in ("value", "measured") if any(r.get(q) is not None for r in ratios)] or ["value"]
    rows = np.arange(len(cases))[::-1]
    fig = new_figure(WIDTH, min(max(2.0, 0.28 * len(cases) + 1.4), 12.0))
    axes = fig.subplots(1, len(quantities), sharey=True, squeeze=False)[0]
    colors = [VERDICT_COLORS.get(v, "#95A5A6") for v in verdicts]
    for ax, quantity in zip(axes, quantities):
        values = np.array([np.nan if r.get(quantity) is None else r[quantity] for r in ratios], dtype=float)
        known = np.isfinite(values)
        ax.barh(rows[known], values[known] - 1.0, left=1.0, height=0.7,
                color=[c for c, k in zip(colors, known) if k])
        ax.scatter(values[known], rows[known], marker="o", s=28, zorder=3, edgecolors="black", linewidths=0.5,
                   color=[c for c, k in zip(colors, known) if k])  # seen also at exactly 1 (no bar)
        for x, y in zip(values[known].tolist(), rows[known].tolist()):
            ax.annotate(f"{x:.4g}", (x, y), textcoords="offset points", xytext=(6 if x >= 1 else -6, 0),
                        ha="left" if x >= 1 else "right", va="center", fontsize=7)
        ax.scatter(np.ones((~known).sum()), rows[~known], marker="_", s=80, color="0.5")
        ax.axvline(1.0, color="black", linewidth=0.8)
        spread = float(np.max(np.abs(values[known] - 1.0))) if known.any() else 0.0
        ax.set_xlim(1.0 - max(spread, 0.01) * 1.3, 1.0 + max(spread, 0.01) * 1.3)
        ax.set_xlabel(f"{quantity} / baseline")
        ax.grid(axis="x", color="0.92")
        ax.set_axisbelow(True)
    axes[0].set_yticks(rows, list(cases), fontsize=7)
    present = list(dict.fromkeys(verdicts))
    axes[-1].legend(handles=[Patch(color=VERDICT_COLORS.get(v, "#95A5A6"), label=v) for v in present],
                    fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(title or "this run against the baseline (lower is better; 1 = the baseline)", fontsize=10,
                 x=0.01, ha="left")
    return fig
