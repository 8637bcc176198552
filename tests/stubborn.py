"""A solver adapter that ignores every request to stop: the solver runner's test subject.

It reports one incumbent (the model's all-lower-bounds point) and one progress point, writes
its process id to ``$STUBBORN_PID`` when set, then sleeps ``$STUBBORN_SECONDS`` (default 60)
without looking at the clock or at ``cancel``, as HiGHS does in root cut separation. With
``$STUBBORN_FAIL`` set it raises instead; with ``$STUBBORN_ABORT`` set it aborts its process after the incumbent
(SIGABRT, as a solver's failed internal check does: CP-SAT's child ended so on layer_resnet50_training once);
with ``$STUBBORN_CHATTER`` set it first writes that text to file descriptor 1, as HiGHS 1.12 writes debug lines
with its log off.
"""

from __future__ import annotations

import os
import time

from exactplace.formulations.model import Model

from exactplace.core.placement import Status
from exactplace.solvers.base import Capabilities, Request, Result, Solver, Trace


class StubbornSolver(Solver):
    name = "stubborn"
    module = "numpy"
    install = "numpy"
    capabilities = Capabilities(callbacks=True)

    def run(self, model: Model, request: Request) -> Result:
        if os.environ.get("STUBBORN_FAIL"):
            raise RuntimeError("the stubborn solver broke")
        if os.environ.get("STUBBORN_PID"):
            with open(os.environ["STUBBORN_PID"], "w") as file:
                file.write(str(os.getpid()))
        if os.environ.get("STUBBORN_CHATTER"):
            os.write(1, os.environ["STUBBORN_CHATTER"].encode() + b"\n")
        values = model.lb.copy()
        trace = Trace(request.progress)
        trace.record(model.objective_value(values), model.objective_value(values) - 1.0)
        if request.incumbent is not None:
            request.incumbent(values)
        if os.environ.get("STUBBORN_ABORT"):
            time.sleep(0.5)  # (the incumbent's message reaches the parent first)
            os.abort()
        time.sleep(float(os.environ.get("STUBBORN_SECONDS", "60")))
        return Result(Status.FEASIBLE, None, values, model.objective_value(values), None, "slept", self.name, 0.0,
                      trace.points)
