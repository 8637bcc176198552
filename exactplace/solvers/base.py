"""What every solver adapter shares: the request it is given, the result it returns, the trace.

An adapter (one small module per solver in this package) translates a
:class:`~exactplace.formulations.model.Model`, honours ``deadline``, Ctrl-C and a ``cancel``
request, takes a warm start, reports progress as (seconds, incumbent, bound) points and its
improving solutions, and maps its raw status through
:mod:`~exactplace.solvers.statuses`. Solvers run in a worker thread while the main
thread waits, so Ctrl-C (KeyboardInterrupt, raised in the main thread) can ask the solver to
stop and the best solution so far is still returned (:func:`run_interruptibly`).
:func:`exactplace.solvers.solve_model` runs a model that is not tiny in a child
process that is stopped on time (:mod:`~exactplace.solvers.isolated`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from exactplace.core.errors import SolverUnavailableError
from exactplace.core.placement import Limit, Status, TracePoint
from exactplace.formulations.model import Model

__all__ = ["Capabilities", "Request", "Result", "Solver", "Trace", "checked", "run_interruptibly"]


@dataclass(frozen=True)
class Capabilities:
    """What a solver supports natively (otherwise the adapter emulates or ignores it, as documented)."""

    integers: bool = True
    indicators: bool = False      # natively; otherwise big-M rows from the model's constants
    warm_start: bool = False
    callbacks: bool = False       # incumbent / bound progress while solving
    log: bool = True
    interrupt: bool = False       # Ctrl-C stops the solve and keeps the incumbent
    seed: bool = False            # ``Request.seed`` changes the search (otherwise ignored)
    serial_search: bool = False   # the branch-and-bound runs on one core, whatever the threads given
    objective_floor: bool = True  # a proven lower bound of the objective, as a variable's bound, helps its search


@dataclass
class Request:
    """How to solve: limits, threads, warm start (values, NaN = unknown), log, progress and solution sinks.

    ``cancel``: set it to ask the solve to stop and return what it has (as Ctrl-C does);
    ``incumbent``: called with each improving solution's values (adapters with callbacks);
    ``isolate``: run in a child process (None: by size, see ``isolated.isolate``);
    ``seed``: the solver's random seed (0: its default), where it has one (``Capabilities.seed``).
    """

    deadline: float | None = None          # time.monotonic() instant
    rel_gap: float = 1e-4
    threads: int = 1
    warm_start: np.ndarray | None = None
    log: Callable[[str], None] | None = None
    progress: Callable[[TracePoint], None] | None = None
    incumbent: Callable[[np.ndarray], None] | None = None
    cancel: threading.Event | None = None
    isolate: bool | None = None
    seed: int = 0

    def remaining(self) -> float:
        """Seconds left before the deadline (inf without one)."""
        return math.inf if self.deadline is None else max(0.0, self.deadline - time.monotonic())


@dataclass
class Result:
    """What an adapter returns; ``objective`` and ``bound`` are in the model's units.

    ``failure``: how the solver failed, when it did (its process died, say): the values are then the last solution
    it streamed, if any, and nothing it proved is kept. None for a solve that ended as solvers do (optimal, at a
    limit, infeasible).
    """

    status: Status
    limit: Limit | None
    values: np.ndarray | None
    objective: float | None
    bound: float | None
    raw_status: str
    solver: str
    seconds: float
    trace: list[TracePoint] = field(default_factory=list)
    failure: str | None = None


class Trace:
    """Progress points with incumbent non-increasing and bound non-decreasing (thread-safe)."""

    def __init__(self, sink: Callable[[TracePoint], None] | None = None) -> None:
        self.start = time.perf_counter()
        self.points: list[TracePoint] = []
        self.incumbent: float | None = None
        self.bound: float | None = None
        self._sink = sink
        self._lock = threading.Lock()

    def record(self, incumbent: float | None = None, bound: float | None = None) -> None:
        """Add a point when the incumbent improves or the bound rises."""
        with self._lock:
            changed = False
            if incumbent is not None and math.isfinite(incumbent) and (
                    self.incumbent is None or incumbent < self.incumbent):
                self.incumbent, changed = float(incumbent), True
            if bound is not None and math.isfinite(bound) and (self.bound is None or bound > self.bound):
                self.bound, changed = float(bound), True
            if self.bound is not None and self.incumbent is not None and self.bound > self.incumbent:
                self.bound = self.incumbent  # a solver's rounding must not cross the incumbent
            if not changed:
                return
            point = TracePoint(time.perf_counter() - self.start, self.incumbent, self.bound)
            self.points.append(point)
        if self._sink is not None:
            self._sink(point)


def run_interruptibly(work: Callable[[], object], stop: Callable[[], None],
                      cancel: threading.Event | None = None) -> tuple[object, bool]:
    """Run ``work`` in a thread; on Ctrl-C (or ``cancel`` set) call ``stop`` and wait for it.
    Returns (its value, interrupted).

    The main thread waits on an Event, not on ``Thread.join``: a KeyboardInterrupt inside
    ``join`` can leave the thread looking finished while it still runs (CPython before 3.13).
    """
    box: dict[str, object] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as error:  # re-raised in the caller's thread
            box["error"] = error
        finally:
            done.set()

    thread = threading.Thread(target=target, name="exactplace-solver", daemon=True)
    thread.start()
    interrupted = False
    while not done.is_set():
        try:
            done.wait(0.1)
            if cancel is not None and cancel.is_set() and not interrupted:
                interrupted = True
                stop()
        except KeyboardInterrupt:
            interrupted = True
            stop()
    thread.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value"), interrupted


#: Largest relative violation (``Model.violation(relative=True)``) of a point a solver returns.
#: CP-SAT's rounded coefficients stay far below it; a broken point (seen: CBC at a time limit
#: returning a point whose loads are six times its objective) is far above it.
POINT_TOLERANCE = 1e-5


class Solver(ABC):
    """One solver adapter. Subclasses set the class attributes and implement :meth:`run`;
    :meth:`solve` runs it and checks the returned point against the model."""

    name: ClassVar[str]
    module: ClassVar[str]             # the module that must import
    install: ClassVar[str]            # what to install when it does not
    capabilities: ClassVar[Capabilities] = Capabilities()

    @classmethod
    def available(cls) -> bool:
        """True when the solver's module is installed (checked without importing it)."""
        try:
            return importlib.util.find_spec(cls.module) is not None
        except (ImportError, ValueError):
            return False

    @classmethod
    def require(cls) -> None:
        """Raise SolverUnavailableError naming what to install when the solver is missing."""
        if not cls.available():
            raise SolverUnavailableError(
                f"Solver {cls.name!r} needs the Python module {cls.module!r}, which is not installed; "
                f"install it with: pip install {cls.install}"
            )

    @classmethod
    def declines(cls, model: Model, request: Request) -> str | None:
        """Why this solver cannot solve ``model`` as ``request`` asks (None: it can), said before it runs, so that
        ``solver="auto"`` takes another; the default declines nothing."""
        return None

    @abstractmethod
    def run(self, model: Model, request: Request) -> Result:
        """Solve ``model`` (minimize) under ``request``: the adapter's own work."""

    def solve(self, model: Model, request: Request) -> Result:
        """Solve ``model`` (minimize) under ``request``; a returned point that breaks the model is dropped.

        A dropped point leaves ``no_solution`` (the caller may still hold its warm start), and
        drops the bound too when the solver called that point optimal: neither can be trusted.
        It runs in this process; :func:`exactplace.solvers.solve_model` picks a child
        process for models that are not tiny.
        """
        return checked(model, self.run(model, request))


def checked(model: Model, result: Result) -> Result:
    """``result`` with its point dropped if it breaks the model (see :meth:`Solver.solve`), saying so in
    ``failure``."""
    if result.values is None:
        return result
    worst = model.violation(result.values, relative=True)
    if worst <= POINT_TOLERANCE:
        return result
    claimed_optimal = result.status is Status.OPTIMAL
    dropped = f"its point breaks the model by {worst:.2g} relative: dropped" + (
        ", with its bound" if claimed_optimal else "")
    return dataclasses.replace(
        result, status=Status.NO_SOLUTION, values=None, objective=None,
        bound=None if claimed_optimal else result.bound, raw_status=f"{result.raw_status} ({dropped})",
        failure=result.failure or f"{result.solver} answered {result.raw_status!r}, but {dropped}",
    )


def big_m_rows(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The model's indicator rows as ordinary rows with its big-M constants (for solvers without indicators).

    A row ``a x <= ub`` enforced when ``x_b == 1`` becomes ``a x + M x_b <= ub + M``; when
    ``x_b == 0``, ``a x - M x_b <= ub``; lower sides alike. A row with both sides gives two
    rows. Returns CSR ``(indptr, indices, data, lb, ub)``.
    """
    if not model.indicators.count:
        return np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)
    arrays = model.indicator_arrays()
    indptr, indices, data = model.indicator_csr()
    rows_out: list[tuple[np.ndarray, np.ndarray, float, float]] = []
    for r in range(model.indicators.count):
        cols, vals = indices[indptr[r]:indptr[r + 1]], data[indptr[r]:indptr[r + 1]]
        b, one = int(arrays["binary"][r]), bool(arrays["value"][r])
        for side in ("ub", "lb"):
            rhs = float(arrays[side][r])
            if not math.isfinite(rhs):
                continue
            big = float(arrays[f"big_m_{side}"][r])
            sign = 1.0 if side == "ub" else -1.0       # the side's direction
            coef = sign * big if one else -sign * big  # + M x_b (ub, enforced at 1) ...
            shift = sign * big if one else 0.0
            lo, hi = (-math.inf, rhs + shift) if side == "ub" else (rhs + shift, math.inf)
            rows_out.append((np.append(cols, b), np.append(vals, coef), lo, hi))
    counts = [len(c) for c, _, _, _ in rows_out]
    return (np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
            np.concatenate([c for c, _, _, _ in rows_out]).astype(np.int64),
            np.concatenate([v for _, v, _, _ in rows_out]),
            np.array([lo for _, _, lo, _ in rows_out]), np.array([hi for _, _, _, hi in rows_out]))
