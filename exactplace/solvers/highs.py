"""HiGHS through ``highspy``: MIP with warm start (``setSolution``), progress callbacks, Ctrl-C.

Indicator rows become big-M rows (HiGHS has no indicator constraints). Progress: the
improving-solution callback gives incumbents, the MIP interrupt callback (called often)
gives the dual bound and is where a Ctrl-C request stops the search.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np

from exactplace.core.errors import ExactplaceError
from exactplace.formulations.model import Kind, Model

from .base import Capabilities, Request, Result, Solver, Trace, big_m_rows, run_interruptibly
from .statuses import interpret

__all__ = ["HighsSolver"]


class HighsSolver(Solver):
    """HiGHS (MIT): branch-and-cut on LP relaxations."""

    name = "highs"
    module = "highspy"
    install = "highspy"
    # An objective floor blinds its branching: every node's LP sits at the floor until its loads pass it, so
    # pseudocosts and strong branching see no change (op_bert6_inference's IP is slower to a gap with it, and
    # LayerGraphs_inceptionv3_inference's bound in the relay stays at the floor, where it rises without it).
    capabilities = Capabilities(warm_start=True, callbacks=True, interrupt=True, seed=True, serial_search=True,
                                objective_floor=False)

    def run(self, model: Model, request: Request) -> Result:
        self.require()
        import highspy

        clock = time.monotonic()
        h = highspy.Highs()
        # With a logging callback subscribed HiGHS sends its log there instead of the console
        # (and with log_to_console off it sends nothing at all), so only output_flag is switched.
        h.setOptionValue("output_flag", request.log is not None)
        h.setOptionValue("mip_rel_gap", float(request.rel_gap))
        h.setOptionValue("mip_abs_gap", 1e-9)
        h.setOptionValue("threads", int(request.threads))
        if request.seed:
            h.setOptionValue("random_seed", int(request.seed))
        remaining = request.remaining()
        if math.isfinite(remaining):
            h.setOptionValue("time_limit", max(remaining, 1e-3))
        n = model.num_vars
        inf = highspy.kHighsInf
        lb = np.where(np.isfinite(model.lb), model.lb, -inf)
        ub = np.where(np.isfinite(model.ub), model.ub, inf)
        h.addVars(n, lb, ub)
        kind = model.kind
        integer = np.flatnonzero(kind == Kind.INTEGER)
        if len(integer):
            h.changeColsIntegrality(len(integer), integer.astype(np.int32),
                                    np.full(len(integer), highspy.HighsVarType.kInteger))
        h.changeColsCost(n, np.arange(n, dtype=np.int32), model.objective)
        h.changeObjectiveOffset(model.offset)
        for indptr, indices, data, rlb, rub in (
            (*model.csr(), model.row_lb, model.row_ub),
            big_m_rows(model),
        ):
            if len(rlb):
                h.addRows(len(rlb), np.where(np.isfinite(rlb), rlb, -inf), np.where(np.isfinite(rub), rub, inf),
                          len(data), indptr[:-1].astype(np.int32), indices.astype(np.int32), data)
        if request.warm_start is not None:
            solution = highspy.HighsSolution()
            solution.col_value = np.nan_to_num(request.warm_start).tolist()
            solution.value_valid = True
            h.setSolution(solution)

        trace = Trace(request.progress)
        stop = {"now": False}

        def on_interrupt(event: object) -> None:
            out = event.data_out  # type: ignore[attr-defined]
            trace.record(out.objective_function_value, out.mip_dual_bound)
            if stop["now"]:
                event.interrupt()  # type: ignore[attr-defined]

        def on_solution(event: object) -> None:
            trace.record(event.data_out.objective_function_value)  # type: ignore[attr-defined]
            if request.incumbent is not None:
                request.incumbent(np.array(event.data_out.mip_solution, dtype=np.float64))  # type: ignore[attr-defined]

        h.cbMipInterrupt.subscribe(on_interrupt)
        h.cbMipImprovingSolution.subscribe(on_solution)
        if request.log is not None:
            log = request.log
            h.cbLogging.subscribe(lambda event: log(event.message.rstrip("\n")))

        def requested_stop() -> None:
            stop["now"] = True

        with contextlib.nullcontext() if request.log is not None else _stdout_discarded():
            _, interrupted = run_interruptibly(h.run, requested_stop, request.cancel)
        raw = h.getModelStatus().name
        info = h.getInfo()
        has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
        if interrupted and raw not in ("kOptimal", "kInfeasible"):
            raw = "kInterrupt"  # stopped early (even before a status was set: kNotset)
        if raw == "kModelEmpty":
            has_solution = True
        status, limit = interpret(self.name, raw, has_solution=has_solution)
        values = np.asarray(h.getSolution().col_value, dtype=np.float64) if has_solution else None
        objective = float(info.objective_function_value) if has_solution else None
        bound = float(info.mip_dual_bound) if any(kind == Kind.INTEGER) else objective
        if status.value == "optimal" and objective is not None and not math.isfinite(bound):
            # Solved in presolve (no branch-and-bound node): HiGHS leaves the dual bound at -inf, but
            # its optimality is still proven to within the gaps it was asked for.
            bound = objective - float(request.rel_gap) * abs(objective) - 1e-9
        if bound is not None and not math.isfinite(bound):
            bound = None
        if status.value == "optimal" and objective is None:
            raise ExactplaceError("HiGHS reported optimal without a solution. This is a bug.")
        trace.record(objective, bound)
        return Result(status, limit, values, objective, bound, raw, self.name, time.monotonic() - clock, trace.points)


class _StdoutDiscarded:
    """Point file descriptor 1 at the null device while HiGHS runs with its log off (``with
    _stdout_discarded():``). HiGHS 1.12 still prints a debug line ("HighsMipSolverData::
    transformNewIntegerFeasibleSolution tmpSolver.run();") on some MIPs: dozens per polish on
    op_resnet50_training, which would corrupt a command's output or flood a terminal. Errors go to stderr,
    which is left alone. (A solve in a child process has its stdout on the null device already, unless the
    log was asked for.)

    The descriptor is the process's, shared by its threads, and HiGHS runs in two at once when polish goes
    on beside HiGHS's leg of the relay: the first thread in redirects, the last out restores, under a lock.
    Two unguarded save-and-restore pairs can interleave so that the later one restores the null device,
    silencing the program's stdout for good (seen: a 500-graph relay run printed nothing after it).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._saved: int | None = None

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._saved = _point_stdout_at_null()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._saved is not None:
                    _flush_c_stdio()  # the solver's printf sits in the C library's buffer until flushed
                    os.dup2(self._saved, 1)
                    os.close(self._saved)
                    self._saved = None


_stdout_discarded = _StdoutDiscarded()


def _point_stdout_at_null() -> int | None:
    """Move file descriptor 1 to the null device; returns a duplicate of what it was (None: nothing to move)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):  # no Python stdout, or a closed one
        sys.stdout.flush()
    try:
        saved = os.dup(1)
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:  # no file descriptor 1 (or no null device): nothing to protect
        return None
    os.dup2(null, 1)
    os.close(null)
    return saved


def _flush_c_stdio() -> None:
    """``fflush(NULL)``: write out every C stdio buffer (no-op where the C library cannot be loaded)."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):
        pass
