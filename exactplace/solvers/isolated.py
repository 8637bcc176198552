"""Running a solver adapter in a child process that is stopped on time.

Why: a solver that does not look at its clock or at a stop request for a while (HiGHS in root
cut separation, SCIP after ``InterruptSolve``, CBC while PuLP writes its MPS file) makes a time
limit or Ctrl-C wait for it; a child process can always be stopped. The parent streams the
child's progress points and improving solutions while it runs; at the deadline (or on Ctrl-C) it
asks the child to stop, and :data:`GRACE` seconds later kills its whole process group (CBC's own
child included), keeping the last solution streamed. :func:`solve_isolated` gives the protocol.

Only models with at least :data:`ISOLATE_NONZEROS` nonzeros are isolated (:func:`isolate`), as
every real workload's are: starting the child (numpy, this package and the solver's module)
costs more than the tests' tiny models take to solve. Those run in the calling process, where
Ctrl-C still stops every solver but SCIP promptly.
"""

from __future__ import annotations

import collections
import json
import math
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import numpy as np

from exactplace.core.errors import ExactplaceError
from exactplace.core.placement import Limit, Status, TracePoint
from exactplace.formulations.model import Model

from .base import Request, Result, Solver, Trace

__all__ = ["GRACE", "ISOLATE_NONZEROS", "child_command", "isolate", "solve_isolated"]

#: Seconds between asking the child to stop (deadline, Ctrl-C) and killing it.
GRACE = 0.5
#: Models with at least this many nonzeros (rows and indicator rows) run in a child process.
ISOLATE_NONZEROS = 1_000


#: Lines of the child's standard error kept to say how it failed.
STDERR_TAIL = 20

#: The child's first lines. ``python -c`` (as ``-m``) puts the working directory first on ``sys.path``, where a
#: checkout's source tree (no compiled extension, no ``exactplace.formulations``) or any folder named
#: ``exactplace`` would shadow the package this process runs. So the child imports ``exactplace`` on this process's
#: path without the working directory, checks that it is the same package, and only then puts the whole path back
#: (an adapter of the caller's own may live in the working directory).
_BOOTSTRAP = """\
import json, sys
path, package = json.loads(sys.argv[1])
sys.path[:] = [entry for entry in path if entry]
import exactplace
if exactplace.__file__ != package:
    sys.exit(f"the solver process imported exactplace from {exactplace.__file__}, not {package}")
sys.path[:] = path
from exactplace.solvers.child import main
main()
"""


def child_command() -> list[str]:
    """The command that starts a solver's child process: this interpreter, importing this process's ``exactplace``
    whatever the working directory holds (see ``_BOOTSTRAP``)."""
    import exactplace

    return [sys.executable, "-c", _BOOTSTRAP, json.dumps([list(sys.path), exactplace.__file__])]


def isolate(model: Model, request: Request) -> bool:
    """Whether to solve ``model`` in a child process: ``request.isolate``, else by size."""
    if request.isolate is not None:
        return request.isolate
    return len(model.csr()[2]) + len(model.indicator_csr()[2]) >= ISOLATE_NONZEROS


def solve_isolated(adapter: type[Solver], model: Model, request: Request) -> Result:
    """Run ``adapter`` on ``model`` in a child process; the result is unchecked.

    The child imports what this process can (its ``sys.path``), so any adapter class works. It is
    spawned (:func:`child_command`: a fresh interpreter, never a fork, so the solvers' threads are
    safe) in a session of its own, so a terminal's Ctrl-C reaches only the parent, which decides.
    It writes nothing to its standard output but messages: its stdout is moved to stderr when the
    log was asked for (where a solver's own log lines go), else to the null device; the parent
    reads its stderr, passing it on only with the log, and keeps the last :data:`STDERR_TAIL`
    lines to say how a child failed.

    Messages are pickled, one after another: the parent writes the job, then ``"stop"`` when it
    wants the solve to end; the child writes ``("point", TracePoint)``, ``("solution", values)``,
    ``("log", line)``, and finally ``("result", Result)`` or ``("error", text)``. End of file on
    the child's stdin means the parent is gone: the child kills its group. A child that ends with
    neither (its solver aborted it, an import failed) answers as a failed solve: the last
    solution it streamed, no bound, and ``Result.failure`` saying how (exit status, last line of
    its stderr).
    """
    clock = time.monotonic()
    solver = adapter.name
    child = subprocess.Popen(child_command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
    messages: queue.Queue = queue.Queue()
    reader = threading.Thread(target=_read, args=(child.stdout, messages), daemon=True)
    reader.start()
    errors: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
    stderr_reader = threading.Thread(target=_read_stderr, args=(child.stderr, errors, request.log is not None),
                                     daemon=True)
    stderr_reader.start()
    trace = Trace(request.progress)
    latest: np.ndarray | None = None
    result: Result | None = None
    stopped: Limit | None = None
    stop_at = math.inf
    crashed: int | None = None  # the exit status of a child that ended without a result, unasked
    try:
        _send(child, {"adapter": f"{adapter.__module__}:{adapter.__qualname__}", "model": model,
                      "remaining": request.remaining(), "rel_gap": request.rel_gap, "threads": request.threads,
                      "seed": request.seed, "warm_start": request.warm_start, "log": request.log is not None})
        while result is None:
            try:
                try:
                    message = messages.get(timeout=0.05)
                except queue.Empty:
                    message = ("none",)
                kind = message[0]
                if kind == "point":
                    trace.record(message[1].incumbent, message[1].bound)
                elif kind == "solution":
                    latest = message[1]
                elif kind == "log" and request.log is not None:
                    request.log(message[1])
                elif kind == "result":
                    result = message[1]
                elif kind == "error":
                    raise ExactplaceError(f"Solver {solver!r} failed in its process: {message[1]}")
                elif kind == "end":
                    if stopped is None:
                        crashed = child.wait()
                    break
                now = time.monotonic()
                if stopped is None:
                    if request.deadline is not None and now >= request.deadline:
                        stopped = Limit.TIME
                    elif request.cancel is not None and request.cancel.is_set():
                        stopped = Limit.INTERRUPT
                    if stopped is not None:
                        stop_at = now
                        _send(child, "stop")
                if now >= stop_at + GRACE:
                    break
            except KeyboardInterrupt:
                if stopped is None:
                    stopped, stop_at = Limit.INTERRUPT, time.monotonic()
                    _send(child, "stop")
    finally:
        _end(child)
        reader.join(timeout=1.0)
        stderr_reader.join(timeout=1.0)
    if result is not None:
        if stopped is Limit.TIME and result.limit is Limit.INTERRUPT:  # the child was told to stop at the deadline
            result.limit = Limit.TIME
        return result
    objective = model.objective_value(latest) if latest is not None else None
    trace.record(objective, None)
    if crashed is not None:
        # The solver's process ended without a result (CP-SAT aborting, exit status -6; an import failing): the last
        # solution it streamed, as a failed CBC run is answered; its bound is not trusted, nor the bounds it reported
        # on the way.
        failure = _failure(solver, crashed, errors)
        return Result(Status.FEASIBLE if latest is not None else Status.NO_SOLUTION, None, latest, objective, None,
                      failure, solver, time.monotonic() - clock,
                      [TracePoint(p.seconds, p.incumbent, None) for p in trace.points], failure=failure)
    # Killed: the last solution it streamed, and the bound it had reached.
    return Result(Status.FEASIBLE if latest is not None else Status.NO_SOLUTION, stopped, latest, objective,
                  trace.bound if latest is not None else None,
                  f"stopped by the runner ({stopped}): {solver} did not stop within {GRACE:g} s of being asked",
                  solver, time.monotonic() - clock, trace.points)


def _failure(solver: str, status: int, errors: collections.deque[str]) -> str:
    """How the child failed, in one line: its exit status (or signal) and the last line it wrote to stderr."""
    how = f"exit status {status}" + (f", {signal.Signals(-status).name}" if -status in signal.valid_signals() else "")
    said = next((line for line in reversed(errors) if line.strip()), None)
    return f"{solver} crashed: its process ended without a result ({how})" + (f": {said.strip()}" if said else "")


def _read_stderr(stream: Any, tail: collections.deque[str], forward: bool) -> None:
    """Keep the last lines the child writes to its stderr (to say how it failed); pass them on to this process's
    stderr only when the solver's log was asked for."""
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        tail.append(line)
        if forward:
            print(line, file=sys.stderr, flush=True)
    stream.close()


def _send(child: subprocess.Popen, message: Any) -> None:
    try:
        pickle.dump(message, child.stdin)
        child.stdin.flush()
    except (BrokenPipeError, OSError):  # the child is gone; its end of file says so
        pass


def _read(stream: Any, messages: queue.Queue) -> None:
    """Unpickle the child's messages into ``messages`` until it closes its end; then ``("end",)``."""
    try:
        while True:
            messages.put(pickle.load(stream))
    except (EOFError, OSError, pickle.UnpicklingError):
        messages.put(("end",))


def _end(child: subprocess.Popen) -> None:
    """Close the job's pipe and make sure the child's process group is gone."""
    try:
        child.stdin.close()
    except OSError:
        pass
    try:
        child.wait(timeout=0.2)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()
