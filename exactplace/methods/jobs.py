"""One job solved: a workload (as its JSON), a method, an objective, a time limit and options; and a batch of
jobs run here or as Ray tasks.

A job is a plain dict, so that a remote worker (Ray) receives everything it needs; its record
is JSON-ready. The nightly regression job (``exactplace regress``) and the paper's tables
(``exactplace paper-tables``) both solve their cells through :func:`solve_job`; the regression job and the
what-if sweeps (``exactplace sweep``) run their batches through :func:`map_jobs`.
"""

from __future__ import annotations

import contextlib
import os
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from exactplace.core.errors import ExactplaceError, SolverUnavailableError
from exactplace.core.interrupt import handled_interrupt
from exactplace.core.placement import Limit, Placement
from exactplace.io import workload_from_dict
from exactplace.io.tables import finite
from exactplace.methods.front_door import solve

__all__ = ["RECORD_FIELDS", "JobsInterrupted", "job_record", "map_jobs", "solve_job"]

Job = TypeVar("Job")
Record = TypeVar("Record")

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


class JobsInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped a batch: ``records`` are those of the jobs that finished, in batch order."""

    def __init__(self, records: Sequence[Any]) -> None:
        super().__init__()
        self.records = list(records)


@contextlib.contextmanager
def _beside_this_package() -> Iterator[None]:
    """Within the block, the working directory is the folder that holds the ``exactplace`` this process imported.

    ``ray.init`` puts the driver's working directory first on every worker's ``sys.path``: run from a checkout, the
    workers imported its source tree (no compiled extension, no ``exactplace.formulations``) and every task failed
    with ModuleNotFoundError. Started from here, they import the package this process runs.
    """
    import exactplace

    previous = os.getcwd()
    os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(exactplace.__file__))))
    try:
        yield
    finally:
        os.chdir(previous)


def map_jobs(run: Callable[[Job], Record], jobs: Sequence[Job], ray_address: str | None = None) -> list[Record]:
    """``[run(job) for job in jobs]``, here one after another or, with ``ray_address``, as Ray tasks on that cluster
    (``"local"`` starts one for the batch and stops it after). ``run`` must be a module-level function, which Ray's
    workers import by name.

    Ctrl-C raises :class:`JobsInterrupted` holding the records of the jobs that finished (on Ray, the others are
    cancelled).

    >>> map_jobs(abs, [-1, 2, -3])
    [1, 2, 3]
    """
    if not ray_address:
        records: list[Record] = []
        for job in jobs:
            try:
                records.append(run(job))
            except KeyboardInterrupt:
                handled_interrupt()
                raise JobsInterrupted(records) from None
        return records
    try:
        import ray
    except ImportError:
        raise SolverUnavailableError("Running jobs on Ray needs Ray: pip install 'exactplace[ray]'.") from None
    started = not ray.is_initialized()
    with _beside_this_package():
        ray.init(address=None if ray_address == "local" else ray_address, ignore_reinit_error=True,
                 include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(run)
        refs = [task.remote(job) for job in jobs]
        try:
            return ray.get(refs)
        except KeyboardInterrupt:  # keep the jobs done; cancel the rest
            handled_interrupt()
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
            finished = set(done)
            for ref in refs:
                if ref not in finished:
                    ray.cancel(ref, force=True)
            raise JobsInterrupted([ray.get(ref) for ref in refs if ref in finished]) from None
    finally:
        if started:
            ray.shutdown()  # a local cluster started here ends with the batch
