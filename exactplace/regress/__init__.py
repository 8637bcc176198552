"""The nightly regression job: ``exactplace regress SUITE.yaml``.

A suite (:func:`load_suite`) names workloads x methods x objectives. Every combination is solved
(and replayed on the devices present when the suite asks for it), compared with a stored baseline
(:mod:`exactplace.regress.baseline`) and written up as a JSON and a markdown report
(:mod:`exactplace.regress.report`); a regression makes ``exactplace regress`` exit with status 1.
``--update-baseline`` rewrites the baseline from the current run; ``--ray ADDRESS`` fans the jobs
out over a Ray cluster (``local`` starts one) and gathers one report. The suite, the baseline and
every file the run will write are checked before the first job runs. Ctrl-C (or SIGTERM) stops
the suite: the report of the jobs done is written, marked interrupted, with the rest ``not run``;
``--update-baseline`` keeps the baseline and writes the results done beside it (``B.partial.json``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from exactplace.core.errors import ExactplaceError, ParameterError, SolverUnavailableError
from exactplace.core.placement import Placement
from exactplace.io.paths import NAME_MAX, check_target, write_file
from exactplace.io.tables import finite, markdown_table
from exactplace.methods.jobs import JobsInterrupted, job_record, map_jobs, solve_job
from exactplace.regress.baseline import BASELINE_FIELDS, NOT_RUN, Finding, check_baseline, compare, read_baseline
from exactplace.regress.report import Drawer, check_reports, write_reports
from exactplace.regress.suite import DEFAULT_TOLERANCE, MAX_SUITE_NODES, Suite, load_suite

__all__ = ["BASELINE_FIELDS", "DEFAULT_TOLERANCE", "MAX_SUITE_NODES", "Finding", "Suite", "SuiteInterrupted",
           "check_baseline", "compare", "finite", "load_suite", "markdown_table", "regress", "run_job", "run_suite",
           "solve_job", "write_reports"]


#: Ctrl-C (or SIGTERM) stopped a suite: ``records`` are those of the jobs that finished, in suite order.
SuiteInterrupted = JobsInterrupted


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Solve (and replay) one job; returns a JSON-ready record. Errors become the record's ``error``.

    The solve is this module's ``solve_job`` (:func:`exactplace.methods.jobs.solve_job`), looked up
    when the job runs.
    """
    record, placement = solve_job(job)
    if job["replay"] is not None and placement is not None and placement.has_solution:
        try:
            record.update(_replay(placement, job["objective"], job["replay"]))
        except ExactplaceError as error:
            record["error"] = f"{type(error).__name__}: {error}"
    return record


def _replay(placement: Placement, objective: str, settings: dict[str, Any]) -> dict[str, Any]:
    """Replay in the mode that measures the objective: pipelined for throughput, single for latency."""
    from exactplace.runtime import replay

    pipelined = objective == "throughput"
    samples = settings.get("samples", 16)
    try:
        result = replay(placement.graph, placement, devices=settings.get("devices", "auto"),
                        mode="pipelined" if pipelined else "single",
                        samples=samples if pipelined else max(samples // 4, 3), repeats=settings.get("repeats", 3))
    except SolverUnavailableError as error:
        return {"replay": f"skipped: {error}"}
    return {"measured": result.measured, "predicted": result.predicted, "ratio": result.ratio,
            "noise": result.noise, "replay": result.devices}


def run_suite(suite: Suite, ray_address: str | None = None) -> list[dict[str, Any]]:
    """Run every job of the suite, here or on Ray; returns one record per job, in suite order.

    Ctrl-C (or SIGTERM, which the command line turns into it) raises :class:`SuiteInterrupted`
    holding the records of the jobs that finished.
    """
    return map_jobs(run_job, suite.jobs, ray_address)


def regress(suite_path: str | Path, *, baseline: str | Path | None = None, report_dir: str | Path | None = None,
            update_baseline: bool = False, ray_address: str | None = None,
            echo: Callable[[str], None] = print, draw: Drawer | None = None) -> int:
    """Run a suite against its baseline; returns the exit status (0 passed, 1 regression).

    ``baseline`` defaults to ``<suite>.baseline.json`` beside the suite, ``report_dir`` to the
    suite's folder. The suite, the baseline and every file the run will write are checked first
    (an ExactplaceError naming the file and the field, before any job runs). Ctrl-C (or SIGTERM)
    writes the report of the jobs done, marked interrupted (with ``update_baseline``: those
    results to ``<baseline>.partial.json``, the baseline kept), then raises KeyboardInterrupt.

    ``draw`` draws ``<suite>.report.png`` into the report (see :func:`write_reports`); without it
    there is no picture. ``exactplace regress`` passes :func:`exactplace.plot.against_baseline`,
    as a Python caller does for the same picture::

        from exactplace.plot import against_baseline
        regress("nightly.yaml", draw=against_baseline)
    """
    suite = load_suite(suite_path)
    baseline_path, directory = _paths(suite, baseline, report_dir)
    partial_path = baseline_path.with_name(f"{baseline_path.stem[:NAME_MAX - 20]}.partial.json")
    inputs = [suite.path, *suite.files]
    old: dict[str, Any] = {}
    if update_baseline:  # the baseline is an output here: writable, and neither the suite nor a workload
        check_target(baseline_path, "--update-baseline", inputs)
        check_target(partial_path, "--update-baseline", inputs)
    else:
        old = read_baseline(baseline_path, suite.name, {job["key"] for job in suite.jobs})
        check_reports(suite, directory, [*inputs, baseline_path])
    try:
        records = run_suite(suite, ray_address)
        interrupted = False
    except SuiteInterrupted as stop:
        done = {r["key"]: r for r in stop.records}
        records = [done.get(job["key"]) or job_record(job, status=NOT_RUN) for job in suite.jobs]
        interrupted = True
    if update_baseline:
        return _write_baseline(suite, records, baseline_path, partial_path, interrupted, echo)
    ran = [r for r in records if r["status"] != NOT_RUN]
    findings = compare(records, {"results": old}, suite.tolerance)
    json_path, md_path = write_reports(suite, records, findings, directory, interrupted=interrupted, draw=draw)
    regressions = [f for f in findings if f.kind == "regression"]
    for f in findings:
        if f.kind not in ("ok", NOT_RUN):
            echo(f"{f.kind}: {f.key}: {f.message}")
    stopped = f" (interrupted: {len(records) - len(ran)} not run)" if interrupted else ""
    echo(f"{len(ran)} results{stopped}, {len(regressions)} regression(s); reports: {json_path}, {md_path}")
    if interrupted:
        raise KeyboardInterrupt
    return 1 if regressions else 0


def _paths(suite: Suite, baseline: str | Path | None, report_dir: str | Path | None) -> tuple[Path, Path]:
    """The baseline's path and the reports' folder, from the options (ParameterError for a name of nothing)."""
    if baseline is not None and str(baseline) == "":
        raise ParameterError("--baseline '' names no file; give the baseline JSON's file name.")
    if baseline is not None and (str(baseline).endswith(("/", os.sep)) or Path(baseline).name in ("", ".", "..")):
        raise ParameterError(f"--baseline {str(baseline)!r} names a directory, not a file; give the baseline JSON's "
                             "file name.")  # Path("out/") would drop the slash and name the file out
    if report_dir is not None and str(report_dir) == "":
        raise ParameterError("--report-dir '' names no folder; give a folder name (. for this one).")
    baseline_path = Path(baseline) if baseline is not None else suite.path.with_suffix(".baseline.json")
    return baseline_path, Path(report_dir) if report_dir is not None else suite.path.parent


def _write_baseline(suite: Suite, records: list[dict[str, Any]], baseline_path: Path, partial_path: Path,
                    interrupted: bool, echo: Callable[[str], None]) -> int:
    """``--update-baseline``: the results written over the baseline, or beside it (``partial_path``) when
    Ctrl-C stopped the suite (then KeyboardInterrupt); 1 when a job failed."""
    ran = [r for r in records if r["status"] != NOT_RUN]
    target = partial_path if interrupted else baseline_path
    target.parent.mkdir(parents=True, exist_ok=True)
    write_file(target, json.dumps({"suite": suite.name, **({"partial": True} if interrupted else {}), "results": {
        r["key"]: {k: r[k] for k in BASELINE_FIELDS} for r in ran}}, indent=1) + "\n")
    if interrupted:
        kept = "kept as it was" if os.path.lexists(baseline_path) else "not written"
        echo(f"interrupted after {len(ran)} of {len(records)} jobs: baseline {baseline_path} {kept}; the results "
             f"done written to {target} (rename it to use it)")
    else:
        echo(f"baseline written to {baseline_path} ({len(records)} results)")
    failed = [r for r in ran if r["error"]]
    for r in failed:
        echo(f"  {r['key']}: {r['error']}")
    if interrupted:
        raise KeyboardInterrupt  # the command line reports it as every command does (exit 130, 143 for SIGTERM)
    return 1 if failed else 0
