"""One job solved: a workload (as its JSON), a method, an objective, a time limit and options.

A job is a plain dict, so that a remote worker (Ray) receives everything it needs; its record
is JSON-ready. The nightly regression job (``exactplace regress``) and the paper's tables
(``exactplace paper-tables``) both solve their cells through :func:`solve_job`.
"""

from __future__ import annotations

import os
import platform
import time
from typing import Any

from exactplace.core.errors import ExactplaceError
from exactplace.core.placement import Limit, Placement
from exactplace.io import workload_from_dict
from exactplace.io.tables import finite
from exactplace.methods.front_door import solve

__all__ = ["RECORD_FIELDS", "job_record", "solve_job"]

#: The fields of a job's record, beside its key, workload, method and objective (None until known).
RECORD_FIELDS = ("status", "value", "bound", "wall_seconds", "measured", "predicted", "ratio", "noise", "replay",
                 "error", "worker")


def job_record(job: dict[str, Any], **known: Any) -> dict[str, Any]:
    """The record of ``job``: its key, workload, method and objective, the ``known`` fields, None elsewhere.

    >>> job_record({"key": "w/dp/throughput", "workload_name": "w", "method": "dp", "objective": "throughput"},
    ...            status="not run")["status"]
    'not run'
    """
    record = {"key": job["key"], "workload": job["workload_name"], "method": job["method"],
              "objective": job["objective"], **dict.fromkeys(RECORD_FIELDS)}
    record.update(known)
    return record


def solve_job(job: dict[str, Any]) -> tuple[dict[str, Any], Placement | None]:
    """Solve one job without replaying it; returns its JSON-ready record and its placement.

    Parameters
    ----------
    job : dict
        ``key``, ``workload_name``, ``workload`` (the workload's JSON), ``method``, ``objective``,
        ``time_limit`` (seconds or None) and ``options`` (passed to :func:`exactplace.solve`).

    Returns
    -------
    tuple of (dict, Placement or None)
        The placement is None when the solve failed (an ExactplaceError, in the record's ``error``).
        A solve stopped by Ctrl-C raises KeyboardInterrupt: it stops the whole batch, not only this job.
    """
    record = job_record(job, worker=f"{platform.node()}:{os.getpid()}")
    try:
        workload = workload_from_dict(job["workload"], name=job["workload_name"])
        start = time.perf_counter()
        placement = solve(workload, objective=job["objective"], method=job["method"], time_limit=job["time_limit"],
                          **job["options"])
    except ExactplaceError as error:
        record["error"] = f"{type(error).__name__}: {error}"
        return record, None
    if placement.limit is Limit.INTERRUPT:  # Ctrl-C stops the batch, not only this job
        raise KeyboardInterrupt
    record["wall_seconds"] = time.perf_counter() - start
    record["status"] = placement.status.value
    record["value"] = finite(placement.objective)
    record["bound"] = finite(placement.bound)
    return record, placement
