"""The child's side of :mod:`~exactplace.solvers.isolated`: run one job, stream what the adapter
reports, stop when told (started by :func:`~exactplace.solvers.isolated.child_command`; see that module for
the protocol)."""

from __future__ import annotations

import importlib
import math
import os
import pickle
import signal
import sys
import threading
import time
from typing import Any

from .base import Request


def main() -> None:
    """Read the job from stdin, run it, write the messages to the original stdout."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to decide
    channel = os.fdopen(os.dup(1), "wb")
    inbox = sys.stdin.buffer
    try:
        job = pickle.load(inbox)
    except (EOFError, pickle.UnpicklingError):  # the parent is gone before it sent the job (Ctrl-C as it started us)
        return
    # A solver's own output never goes into the message stream: to stderr when the caller asked for the
    # log, else nowhere (with its log off HiGHS 1.12 still prints debug lines, "HighsMipSolverData::
    # transformNewIntegerFeasibleSolution tmpSolver.run();", which reached the terminal on bert_l-6_training).
    os.dup2(2 if job["log"] else os.open(os.devnull, os.O_WRONLY), 1)
    lock = threading.Lock()

    def send(message: Any) -> None:
        with lock:
            pickle.dump(message, channel)
            channel.flush()

    cancel = threading.Event()

    def watch() -> None:
        try:
            while True:
                if pickle.load(inbox) == "stop":
                    cancel.set()
        except (EOFError, OSError, pickle.UnpicklingError):  # the parent is gone, or done with us
            os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, daemon=True).start()
    request = Request(
        deadline=None if math.isinf(job["remaining"]) else time.monotonic() + job["remaining"],
        rel_gap=job["rel_gap"], threads=job["threads"], warm_start=job["warm_start"],
        log=(lambda line: send(("log", line))) if job["log"] else None,
        progress=lambda point: send(("point", point)), incumbent=lambda values: send(("solution", values)),
        cancel=cancel, isolate=False, seed=job["seed"],
    )
    try:
        module, _, name = job["adapter"].partition(":")
        send(("result", getattr(importlib.import_module(module), name)().run(job["model"], request)))
    except BaseException as error:  # reported to the parent, which raises it there
        send(("error", f"{type(error).__name__}: {error}"))
    channel.close()
    # Out at once: a normal interpreter shutdown would wait on the watcher, which holds stdin's lock while it
    # reads ("Fatal Python error: _enter_buffered_busy" on the terminal, an abort for the parent to see).
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
