"""The solver-neutral form every formulation is written in: a small sparse-matrix model (cvxpy's way).

A :class:`Model` holds variables (bounds and a :class:`Kind` each), linear rows ``lb <= A x <= ub``
added a block at a time from coordinate triplets (numpy arrays: a formulation builds thousands of
rows in one call), *indicator* rows enforced only when a binary variable takes a given value, and a
linear objective to minimize. Solver adapters (``exactplace.solvers``) translate it; the class
docstring says how a new formulation plugs in.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Block", "Indicators", "Kind", "Model"]


class Kind(enum.IntEnum):
    """How a variable is treated by a solver."""

    CONTINUOUS = 0
    INTEGER = 1
    IMPLIED_INTEGER = 2
    """Continuous for LP-based solvers, integer for CP-SAT (integral at every integral point)."""


@dataclass(frozen=True)
class Block:
    """A named family of rows ``[start, stop)`` (for messages and tests)."""

    name: str
    start: int
    stop: int


@dataclass
class Indicators:
    """Rows enforced only when ``binary[r] == value[r]``; ``big_m_lb/ub`` relax them otherwise."""

    binary: list[np.ndarray] = field(default_factory=list)
    value: list[np.ndarray] = field(default_factory=list)
    rows: list[np.ndarray] = field(default_factory=list)
    cols: list[np.ndarray] = field(default_factory=list)
    vals: list[np.ndarray] = field(default_factory=list)
    lb: list[np.ndarray] = field(default_factory=list)
    ub: list[np.ndarray] = field(default_factory=list)
    big_m_lb: list[np.ndarray] = field(default_factory=list)
    big_m_ub: list[np.ndarray] = field(default_factory=list)
    count: int = 0


def _array(x: object, n: int, dtype: type = np.float64) -> np.ndarray:
    a = np.asarray(x, dtype=dtype)
    return np.broadcast_to(a, (n,)).copy() if a.ndim == 0 else a.reshape(-1).astype(dtype, copy=False)


class Model:
    """A minimization MIP in sparse form.

    * variables: lower and upper bounds and a :class:`Kind` each (continuous, integer, or *implied
      integer*: continuous for LP-based MIP solvers, integer for CP-SAT; for a variable that is
      integral in every solution with integral integer variables, such as the products ``x * c`` a
      linearization introduces);
    * linear rows ``lb <= A x <= ub`` from triplets, duplicates summed; :meth:`csr` gives the
      compressed rows adapters pass on (HiGHS takes the arrays as they are);
    * indicator rows ``lb <= a x <= ub`` enforced only when a binary variable takes a given value.
      CP-SAT turns them into enforcement literals; MIP solvers into big-M rows with the per-row
      constants ``big_m`` the formulation supplies (it knows its own bounds, a generic bound
      propagation would be weaker);
    * a linear objective to minimize (with a constant offset).

    How a formulation plugs in (for another objective): a module in ``formulations/`` with a builder
    ``build(...) -> Model`` that creates its variables with :meth:`add_vars` (keeping the index arrays
    it needs for decoding), adds each constraint family with one :meth:`add_rows` / :meth:`add_terms` /
    :meth:`add_indicators` call, sets :meth:`minimize`, and a decoder from the solution values to a
    device array (and, for warm starts, an encoder from a device array to values).
    ``exactplace.solvers.solve_model`` then solves it on any solver.

    Why not OR-Tools MathOpt: MathOpt builds a model one Python object per variable and per linear
    expression, so the build cost grows with the interpreter, where the triplets here are numpy arrays
    end to end; MathOpt cannot drive CBC, and the CP-SAT translation (scaling to integers, hints,
    enforcement literals) is ours to control (``benchmarks/bench_mip.py --build`` times both forms).

    Examples
    --------
    >>> m = Model("knapsack")
    >>> x = m.add_vars(3, ub=1, kind=Kind.INTEGER, name="x")
    >>> _ = m.add_rows("capacity", 1, ub=[4.0], rows=np.zeros(3, dtype=int), cols=x, vals=[2.0, 3.0, 1.0])
    >>> m.minimize(x, [-5.0, -6.0, -2.0])
    >>> m.num_vars, m.num_rows, m.csr()[0].tolist()
    (3, 1, [0, 3])
    """

    def __init__(self, name: str = "model") -> None:
        self.name = name
        self._lb: list[np.ndarray] = []
        self._ub: list[np.ndarray] = []
        self._kind: list[np.ndarray] = []
        self.var_blocks: list[Block] = []
        self._rows: list[np.ndarray] = []
        self._cols: list[np.ndarray] = []
        self._vals: list[np.ndarray] = []
        self._row_lb: list[np.ndarray] = []
        self._row_ub: list[np.ndarray] = []
        self.row_blocks: list[Block] = []
        self.indicators = Indicators()
        self.objective = np.zeros(0)
        self.offset = 0.0
        self.num_vars = 0
        self.num_rows = 0
        self._csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    # -- variables -------------------------------------------------------------------------
    def add_vars(self, shape: int | tuple[int, ...], lb: object = 0.0, ub: object = math.inf,
                 kind: Kind = Kind.CONTINUOUS, name: str = "x") -> np.ndarray:
        """Add ``prod(shape)`` variables; returns their indices shaped ``shape``."""
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        n = int(np.prod(shape, dtype=np.int64))
        self._lb.append(_array(lb, n))
        self._ub.append(_array(ub, n))
        self._kind.append(np.full(n, int(kind), dtype=np.int8))
        index = np.arange(self.num_vars, self.num_vars + n, dtype=np.int64).reshape(shape)
        self.var_blocks.append(Block(name, self.num_vars, self.num_vars + n))
        self.num_vars += n
        return index

    @property
    def lb(self) -> np.ndarray:
        """Variable lower bounds."""
        return np.concatenate(self._lb) if self._lb else np.zeros(0)

    @property
    def ub(self) -> np.ndarray:
        """Variable upper bounds."""
        return np.concatenate(self._ub) if self._ub else np.zeros(0)

    @property
    def kind(self) -> np.ndarray:
        """Variable kinds (values of :class:`Kind`)."""
        return np.concatenate(self._kind) if self._kind else np.zeros(0, dtype=np.int8)

    # -- rows -------------------------------------------------------------------------------
    def add_rows(self, name: str, count: int, *, rows: object, cols: object, vals: object,
                 lb: object = -math.inf, ub: object = math.inf) -> np.ndarray:
        """Add ``count`` rows ``lb <= A x <= ub`` from triplets (``rows`` local to the block, 0..count-1).

        Duplicate (row, column) entries are summed. Returns the global row indices.
        """
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        cols = np.asarray(cols, dtype=np.int64).reshape(-1)
        vals = _array(vals, len(cols))
        if len(rows) != len(cols):
            rows = np.broadcast_to(rows, cols.shape)
        self._rows.append(rows + self.num_rows)
        self._cols.append(cols)
        self._vals.append(vals)
        self._row_lb.append(_array(lb, count))
        self._row_ub.append(_array(ub, count))
        self.row_blocks.append(Block(name, self.num_rows, self.num_rows + count))
        index = np.arange(self.num_rows, self.num_rows + count, dtype=np.int64)
        self.num_rows += count
        self._csr = None
        return index

    def add_terms(self, name: str, *terms: tuple[object, object], lb: object = -math.inf,
                  ub: object = math.inf) -> np.ndarray | None:
        """Add rows ``lb <= sum of terms <= ub``, one per leading entry of the terms (None when there are none).

        Each term is ``(columns, coefficients)``: ``columns`` an index array whose first axis
        is the row (further axes: several entries per row), ``coefficients`` a scalar, one per
        row, or one per entry. The way a formulation writes a family of rows at once.

        >>> m = Model()
        >>> x = m.add_vars((2, 3), ub=1)
        >>> m.add_terms("row sums", (x, 1.0), ub=1.0).tolist()   # x[r, 0] + x[r, 1] + x[r, 2] <= 1
        [0, 1]
        """
        count = len(np.asarray(terms[0][0]))
        if not count:
            return None
        rows, cols, vals = [], [], []
        for col, val in terms:
            col = np.asarray(col, dtype=np.int64)
            col = col.reshape(count, col.size // count)
            val = np.asarray(val, dtype=np.float64)
            val = np.broadcast_to(val.reshape(count, -1) if val.ndim == 1 else val, col.shape)
            rows.append(np.repeat(np.arange(count), col.shape[1]))
            cols.append(col.reshape(-1))
            vals.append(val.reshape(-1))
        return self.add_rows(name, count, rows=np.concatenate(rows), cols=np.concatenate(cols),
                             vals=np.concatenate(vals), lb=lb, ub=ub)

    def add_indicators(self, name: str, count: int, *, binary: object, value: object, rows: object,
                       cols: object, vals: object, lb: object = -math.inf, ub: object = math.inf,
                       big_m_lb: object = 0.0, big_m_ub: object = 0.0) -> None:
        """Add ``count`` rows ``lb <= a x <= ub`` enforced only when ``x[binary[r]] == value[r]``.

        ``big_m_ub[r]`` (``big_m_lb[r]``) must bound how far ``a x`` can exceed ``ub`` (fall
        below ``lb``) when the row is not enforced; MIP solvers without indicator rows add it.
        """
        ind = self.indicators
        cols = np.asarray(cols, dtype=np.int64).reshape(-1)
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        ind.binary.append(_array(binary, count, np.int64))
        ind.value.append(_array(value, count, np.int64))
        ind.rows.append(rows + ind.count)
        ind.cols.append(cols)
        ind.vals.append(_array(vals, len(cols)))
        ind.lb.append(_array(lb, count))
        ind.ub.append(_array(ub, count))
        ind.big_m_lb.append(_array(big_m_lb, count))
        ind.big_m_ub.append(_array(big_m_ub, count))
        self.row_blocks.append(Block(f"{name} (indicator)", ind.count, ind.count + count))
        ind.count += count

    def minimize(self, cols: object, vals: object, offset: float = 0.0) -> None:
        """Set the objective ``sum vals * x[cols] + offset`` (to minimize)."""
        cols = np.asarray(cols, dtype=np.int64).reshape(-1)
        c = np.zeros(self.num_vars)
        np.add.at(c, cols, _array(vals, len(cols)))
        self.objective = c
        self.offset = float(offset)

    # -- views for adapters ---------------------------------------------------------------------
    @property
    def row_lb(self) -> np.ndarray:
        """Row lower bounds."""
        return np.concatenate(self._row_lb) if self._row_lb else np.zeros(0)

    @property
    def row_ub(self) -> np.ndarray:
        """Row upper bounds."""
        return np.concatenate(self._row_ub) if self._row_ub else np.zeros(0)

    def csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows as compressed sparse rows ``(indptr, indices, data)``, duplicates summed, zeros dropped."""
        if self._csr is None:
            self._csr = _to_csr(self._rows, self._cols, self._vals, self.num_rows, self.num_vars)
        return self._csr

    def indicator_csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The indicator rows as compressed sparse rows."""
        ind = self.indicators
        return _to_csr(ind.rows, ind.cols, ind.vals, ind.count, self.num_vars)

    def indicator_arrays(self) -> dict[str, np.ndarray]:
        """binary, value, lb, ub, big_m_lb, big_m_ub of every indicator row, concatenated."""
        ind = self.indicators
        keys = ("binary", "value", "lb", "ub", "big_m_lb", "big_m_ub")
        return {k: (np.concatenate(getattr(ind, k)) if ind.count else np.zeros(0)) for k in keys}

    def objective_value(self, x: np.ndarray) -> float:
        """The objective at ``x``."""
        return float(self.objective @ x + self.offset)

    def violation(self, x: np.ndarray, *, relative: bool = False) -> float:
        """The largest violation of a bound, an integrality or a row at ``x`` (indicators included).

        ``relative``: each row's violation is divided by the larger of 1, its finite sides and
        the sum of its terms' magnitudes (rows of bytes and rows of milliseconds alike).
        """
        worst = float(np.max(np.maximum(self.lb - x, x - self.ub), initial=0.0))
        integer = self.kind == Kind.INTEGER
        worst = max(worst, float(np.max(np.abs(x[integer] - np.round(x[integer])), initial=0.0)))
        indptr, indices, data = self.csr()
        activity = np.add.reduceat(data * x[indices], indptr[:-1]) if len(data) else np.zeros(self.num_rows)
        activity[indptr[:-1] == indptr[1:]] = 0.0
        miss = np.maximum(self.row_lb - activity, activity - self.row_ub)
        if relative and len(miss):
            size = np.add.reduceat(np.abs(data * x[indices]), indptr[:-1]) if len(data) else np.zeros(self.num_rows)
            size[indptr[:-1] == indptr[1:]] = 0.0
            sides = np.maximum(np.abs(np.where(np.isfinite(self.row_lb), self.row_lb, 0.0)),
                               np.abs(np.where(np.isfinite(self.row_ub), self.row_ub, 0.0)))
            miss = miss / np.maximum(1.0, np.maximum(size, sides))
        worst = max(worst, float(np.max(miss, initial=0.0)))
        if self.indicators.count:
            arrays = self.indicator_arrays()
            iptr, iidx, idata = self.indicator_csr()
            act = np.add.reduceat(idata * x[iidx], iptr[:-1]) if len(idata) else np.zeros(self.indicators.count)
            act[iptr[:-1] == iptr[1:]] = 0.0
            on = np.isclose(x[arrays["binary"]], arrays["value"])
            miss = np.maximum(arrays["lb"] - act, act - arrays["ub"])
            worst = max(worst, float(np.max(np.where(on, miss, 0.0), initial=0.0)))
        return worst

    def __repr__(self) -> str:
        return (f"<Model {self.name}: {self.num_vars} variables, {self.num_rows} rows, "
                f"{self.indicators.count} indicator rows>")


def _to_csr(rows: list[np.ndarray], cols: list[np.ndarray], vals: list[np.ndarray], num_rows: int,
            num_vars: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not rows:
        return np.zeros(num_rows + 1, dtype=np.int64), np.zeros(0, np.int64), np.zeros(0)
    r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    key = r * max(num_vars, 1) + c
    unique, inverse = np.unique(key, return_inverse=True)
    data = np.bincount(inverse, weights=v, minlength=len(unique))
    keep = data != 0
    unique, data = unique[keep], data[keep]
    row = unique // max(num_vars, 1)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=num_rows))]).astype(np.int64)
    return indptr, (unique % max(num_vars, 1)).astype(np.int64), data
