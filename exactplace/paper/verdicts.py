"""The verdict on each reproduced value, and its reason, from the run's own data.

* ``equal``: within :data:`EQUAL` relative (the DP, whose value is published at full precision);
* ``rounding``: ours rounds to the published value at the number of decimals it was printed
  with (the IP values are printed with two);
* ``higher`` / ``lower``: a difference, explained from the run's own data: the time limit
  with the gap it left, the published run's own limit (``>N`` seconds), the 1% gap at which
  the published IPs stop, the randomized or reimplemented baselines, what the reference's
  own split file scores (greedy, max-load DP split), and :data:`~exactplace.paper.reference.BELOW_MODEL`;
* ``no value``: the cell could not be computed (the reason says why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exactplace.evaluators import evaluate
from exactplace.io import read_split
from exactplace.methods.registry import registered_methods
from exactplace.paper.reference import BELOW_MODEL, Column, Row, decimals, within_print
from exactplace.paper.tables import Cell

__all__ = ["EQUAL", "PUBLISHED_IP_GAP", "CellJob", "judge"]

#: Relative difference below which ours equals the published value (the DP is printed at full precision).
EQUAL = 1e-6
#: The gap at which the published IPs stopped (workloads README: "stopped at a 1% gap or 20 minutes").
PUBLISHED_IP_GAP = 0.01


@dataclass(frozen=True)
class CellJob:
    """What one cell is computed from: its row and column, its time limit, and the DP's optimum on the
    same row when it is known (the best chain split: a bound on every method whose splits are chains)."""

    row: Row
    column: Column
    limit: float
    chain_optimum: float | None


def judge(cell: Cell, job: CellJob, workload: Any, device: Any, notes: list[str]) -> None:
    """Set ``cell.verdict`` and ``cell.reason``, from the run's own data (and :data:`BELOW_MODEL`).

    Parameters
    ----------
    cell : Cell
        A cell with its value (``ours``), status, bound, gap and limit filled in.
    job : CellJob
        What the cell was computed from.
    workload : Workload
        The row's workload (its graph and cluster score the reference's own splits).
    device : array-like
        The placement's device per node, as evaluated.
    notes : list of str
        Facts about how the value was found, appended to the reason.
    """
    assert cell.ours is not None
    published = float(cell.published)
    difference = cell.ours - published
    if abs(difference) <= EQUAL * abs(published):
        cell.verdict, parts = "equal", ["equal (1e-6 relative)"]
    elif within_print(cell.ours, cell.published):
        places = decimals(cell.published)
        cell.verdict, parts = "rounding", [f"equal at the published precision ({places} decimal"
                                           f"{'' if places == 1 else 's'})"]
    else:
        cell.verdict = "higher" if difference > 0 else "lower"
        parts = [f"{100 * difference / published:+.3g}% against the published value"]
    if cell.limit == "time":
        gap = "" if cell.gap is None else f", gap {100 * cell.gap:.3g}% (bound {cell.bound:.6g})"
        stopped = cell.verdict == "lower" and cell.published_seconds.startswith(">")  # _differences says so
        paper = f"; the published run took {cell.published_seconds} s" if cell.published_seconds and not stopped else ""
        parts.append(f"our {job.limit:g} s time limit was reached{gap}{paper}")
    if cell.verdict in ("higher", "lower"):
        parts += _differences(cell, job, workload, device)
    known = BELOW_MODEL.get((job.row.table, job.row.name, job.column.name))
    if known is not None and cell.verdict != "equal":
        optimum, how = known
        parts.append(f"the published {cell.published} is below what the model allows: {how}")
        if cell.ours > optimum * (1 + EQUAL):
            parts.append(f"ours is {cell.ours - optimum:.4g} above that optimum")
    cell.reason = "; ".join(parts + notes)


def _differences(cell: Cell, job: CellJob, workload: Any, device: Any) -> list[str]:
    """Why ours differs from the published value, from what the method, the run and the files say."""
    assert cell.ours is not None
    row, column = job.row, job.column
    published = float(cell.published)
    reasons = []
    if column.exact:
        if cell.verdict == "lower" and cell.published_seconds.startswith(">"):
            reasons.append(f"the published run was stopped by its own time limit ({cell.published_seconds} s), "
                           "so its value is not proven optimal")
        elif cell.verdict == "lower" and column.method == "mip":
            within = (published - cell.ours) / published <= PUBLISHED_IP_GAP
            reasons.append(f"the published IP stops at a {100 * PUBLISHED_IP_GAP:g}% gap, so its value may lie "
                           f"up to {100 * PUBLISHED_IP_GAP:g}% above the optimum; ours is "
                           f"{'within' if within else 'beyond'} that")
        elif cell.status == "optimal" and (row.table, row.name, column.name) not in BELOW_MODEL:
            reasons.append("unexplained: ours is proven optimal over the same space")
        return reasons
    method = registered_methods()[column.method] if column.method else None
    if column.differs:
        defaults = {name: option.default for name, option in method.options.items()} if method else {}
        reasons.append(column.differs.format(**defaults))
    chained = method is not None and method.guarantee.chain_order and method.guarantee.forward_contiguous
    if chained and job.chain_optimum is not None and cell.ours <= job.chain_optimum * (1 + EQUAL):
        reasons.append(f"ours equals the DP's optimum {job.chain_optimum:.6g}, the best chain split: this "
                       "method's splits are chains, so none does better")
    if column.fallback is not None and cell.source.startswith("method"):
        reasons.append(_reference_split(row, column, workload, device))
    return reasons


def _reference_split(row: Row, column: Column, workload: Any, device: Any) -> str:
    """What the reference's own split for the column scores, beside ours."""
    name = column.fallback.format(name=row.name) if column.fallback else ""
    theirs = read_split(row.folder / name, workload.graph, workload.cluster)
    value = evaluate(workload.graph, workload.cluster, theirs, row.table)
    scored = f"the reference's split {name} scores {value:.6g} (ratio {value / float(row.published[column.name]):.4f})"
    if column.name == "maxload_dp_latency":
        ours, its = (evaluate(workload.graph, workload.cluster, d, "throughput") for d in (device, theirs))
        return (f"max-load-optimal splits are not unique and max-load does not see when subgraphs run: ours has "
                f"max-load {ours:.6g}, the reference's {its:.6g}; {scored}")
    return f"the topological order greedy fills is a free choice (the reference's came from hash-map iteration); " \
           f"{scored}"
