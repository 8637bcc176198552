"""The nightly regression job: ``exactplace regress SUITE.yaml``.

A suite names workloads x methods x objectives (with time limits and options). Every combination
is solved (and replayed on the devices present when the suite asks for it), compared with a stored
baseline JSON, and written up as a JSON and a markdown report. A value worse than the baseline
beyond the tolerance, a lost solution, or (with replay) a measured time beyond its tolerance is a
regression; ``exactplace regress`` then exits with status 1. ``--update-baseline`` rewrites the
baseline from the current run. ``--ray ADDRESS`` fans the jobs out over a Ray cluster (``local``
starts one on this machine) and gathers one report; without it they run here, one after another.

Suite format (YAML)::

    name: nightly
    tolerance: {value: 1.0e-6, measured: 0.25}   # relative; optional (these are the defaults)
    replay: {devices: auto, samples: 16, repeats: 3}  # optional: omit to skip replays; throughput
                                                      # replays pipelined, latency one sample at a time
    cases:
      - workload: layer_bert24_inference          # a shipped name, or a path relative to the suite
        methods: [dp, greedy]
        objectives: [throughput]
        time_limit: 60                            # seconds, optional
        options: {}                               # passed to solve, optional
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exactplace.core.errors import InputFormatError, SolverUnavailableError
from exactplace.core.placement import Limit, Placement

__all__ = ["DEFAULT_TOLERANCE", "Finding", "Suite", "compare", "finite", "load_suite", "markdown_table", "regress",
           "run_job", "run_suite", "solve_job", "write_reports"]

DEFAULT_TOLERANCE = {"value": 1e-6, "measured": 0.25}
_REPLAY_KEYS = {"devices", "samples", "repeats"}


@dataclass(frozen=True)
class Suite:
    """A parsed suite: its jobs (one per workload x method x objective) and tolerances."""

    name: str
    jobs: list[dict[str, Any]]
    tolerance: dict[str, float]
    path: Path


@dataclass(frozen=True)
class Finding:
    """The verdict on one job: ``kind`` is ``ok``, ``regression``, ``improved``, ``new`` or ``missing``."""

    key: str
    kind: str
    message: str
    current: dict[str, Any] = field(default_factory=dict)
    baseline: dict[str, Any] = field(default_factory=dict)


def _require(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise InputFormatError(f"{where}: {message}")


def load_suite(path: str | Path) -> Suite:
    """Read and check a suite file; every problem is an InputFormatError naming the field.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> text = "cases:\\n  - workload: layer_bert24_inference\\n    methods: [greedy, dpl]\\n"
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.yaml"; _ = p.write_text(text)
    >>> [job["key"] for job in load_suite(p).jobs]
    ['layer_bert24_inference/greedy/throughput', 'layer_bert24_inference/dpl/throughput']
    """
    try:
        import yaml
    except ImportError:
        raise SolverUnavailableError("Suites are YAML: pip install 'exactplace[regress]' (PyYAML).") from None
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFormatError(f"Suite file {str(path)!r} does not exist.") from None
    except yaml.YAMLError as error:  # one line: its problem and where (PyYAML's own text spans several)
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputFormatError(f"Suite file {str(path)!r} is not valid YAML: {problem}{where}.") from None
    where = f"Suite {path.name!r}"
    _require(isinstance(data, dict), where, "must be a mapping with a 'cases' list")
    unknown = set(data) - {"name", "tolerance", "replay", "cases"}
    _require(not unknown, where, f"unknown field(s) {sorted(unknown)}")
    tolerance = dict(DEFAULT_TOLERANCE)
    given = data.get("tolerance") or {}
    _require(isinstance(given, dict) and set(given) <= set(DEFAULT_TOLERANCE), where,
             f"'tolerance' must map {sorted(DEFAULT_TOLERANCE)} to numbers")
    for key, value in given.items():
        _require(isinstance(value, (int, float)) and value >= 0, where, f"tolerance {key!r} must be >= 0")
        tolerance[key] = float(value)
    replay = data.get("replay")
    _require(replay is None or (isinstance(replay, dict) and set(replay) <= _REPLAY_KEYS), where,
             f"'replay' must be a mapping with keys among {sorted(_REPLAY_KEYS)}")
    cases = data.get("cases")
    _require(isinstance(cases, list) and cases, where, "'cases' must be a non-empty list")
    from exactplace.methods.registry import registered_methods

    registered = registered_methods()
    jobs = []
    for i, case in enumerate(cases):
        at = f"{where}: cases[{i}]"
        _require(isinstance(case, dict) and "workload" in case and "methods" in case, at,
                 "needs 'workload' and 'methods'")
        extra = set(case) - {"workload", "methods", "objectives", "time_limit", "options"}
        _require(not extra, at, f"unknown field(s) {sorted(extra)}")
        methods, objectives = case["methods"], case.get("objectives", ["throughput"])
        for name, values in (("methods", methods), ("objectives", objectives)):
            _require(isinstance(values, list) and values and all(isinstance(v, str) for v in values), at,
                     f"{name!r} must be a non-empty list of names")
        time_limit = case.get("time_limit")
        _require(time_limit is None or (isinstance(time_limit, (int, float)) and time_limit > 0), at,
                 "'time_limit' must be a positive number of seconds")
        options = case.get("options") or {}
        _require(isinstance(options, dict), at, "'options' must be a mapping")
        workload = _workload_data(str(case["workload"]), path.parent, at)
        name = Path(str(case["workload"])).stem
        for method in methods:
            _require(method in registered, at, f"method {method!r} is not one of {sorted(registered)}")
            for objective in objectives:
                _require(objective in registered[method].objectives, at,
                         f"method {method!r} handles {list(registered[method].objectives)}, not {objective!r}")
                jobs.append({"key": f"{name}/{method}/{objective}", "workload_name": name, "workload": workload,
                             "method": method, "objective": objective, "time_limit": time_limit,
                             "options": options, "replay": replay})
    keys = [job["key"] for job in jobs]
    _require(len(set(keys)) == len(keys), where, "a workload x method x objective appears twice")
    return Suite(name=str(data.get("name", path.stem)), jobs=jobs, tolerance=tolerance, path=path)


def _workload_data(reference: str, base: Path, where: str) -> dict[str, Any]:
    """The workload's JSON content, so a job carries everything a remote worker needs."""
    from exactplace.core.io import load_json
    from exactplace.data import shipped_workloads, workload_path

    candidate = base / reference
    if not candidate.exists() and reference in shipped_workloads():
        candidate = Path(workload_path(reference))
    _require(candidate.exists(), where, f"workload {reference!r} is neither a file nor a shipped workload")
    return load_json(candidate, "Workload")


def solve_job(job: dict[str, Any]) -> tuple[dict[str, Any], Placement | None]:
    """Solve one job without replaying it; returns its JSON-ready record and its placement.

    The placement is None when the solve failed (an ExactplaceError, in the record's ``error``).
    A solve stopped by Ctrl-C raises KeyboardInterrupt: it stops the whole batch, not only this job.
    """
    from exactplace.core.errors import ExactplaceError
    from exactplace.core.io import workload_from_dict
    from exactplace.methods import solve

    record: dict[str, Any] = {"key": job["key"], "workload": job["workload_name"], "method": job["method"],
                              "objective": job["objective"], "status": None, "value": None, "bound": None,
                              "wall_seconds": None, "measured": None, "predicted": None, "ratio": None,
                              "noise": None, "replay": None, "error": None,
                              "worker": f"{platform.node()}:{os.getpid()}"}
    try:
        workload = workload_from_dict(job["workload"], name=job["workload_name"])
        start = time.perf_counter()
        placement = solve(workload, objective=job["objective"], method=job["method"], time_limit=job["time_limit"],
                          **job["options"])
    except ExactplaceError as error:
        record["error"] = f"{type(error).__name__}: {error}"
        return record, None
    if placement.limit is Limit.INTERRUPT:  # Ctrl-C stops the suite, not only this job
        raise KeyboardInterrupt
    record["wall_seconds"] = time.perf_counter() - start
    record["status"] = placement.status.value
    record["value"] = finite(placement.objective)
    record["bound"] = finite(placement.bound)
    return record, placement


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Solve (and replay) one job; returns a JSON-ready record. Errors become the record's ``error``."""
    from exactplace.core.errors import ExactplaceError

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


def finite(value: float | None) -> float | None:
    """``value`` as a float, None for None and for an infinite or NaN value (JSON has neither)."""
    return None if value is None or not math.isfinite(value) else float(value)


def _map_local(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [run_job(job) for job in jobs]


def _map_ray(address: str) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """Run the jobs as Ray tasks (``address="local"`` starts a local cluster); no home-made job runner."""
    try:
        import ray
    except ImportError:
        raise SolverUnavailableError("--ray needs Ray: pip install 'exactplace[ray]'.") from None

    def mapper(jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        started = not ray.is_initialized()
        ray.init(address=None if address == "local" else address, ignore_reinit_error=True,
                 include_dashboard=False, log_to_driver=False)
        try:
            task = ray.remote(run_job)
            return ray.get([task.remote(job) for job in jobs])
        finally:
            if started:
                ray.shutdown()  # a local cluster started here ends with the suite

    return mapper


def run_suite(suite: Suite, ray_address: str | None = None) -> list[dict[str, Any]]:
    """Run every job of the suite, here or on Ray; returns one record per job, in suite order."""
    mapper = _map_ray(ray_address) if ray_address else _map_local
    return mapper(suite.jobs)


def _worse(current: float | None, base: float | None, tolerance: float) -> bool:
    return current is not None and base is not None and current > base * (1 + tolerance) + 1e-12


def compare(records: Sequence[dict[str, Any]], baseline: dict[str, Any], tolerance: dict[str, float]
            ) -> list[Finding]:
    """Verdicts of the current records against the baseline's (lower values and times are better).

    >>> base = {"results": {"w/dp/throughput": {"status": "optimal", "value": 10.0}}}
    >>> now = [{"key": "w/dp/throughput", "status": "optimal", "value": 10.5, "error": None}]
    >>> [(f.kind, f.message) for f in compare(now, base, DEFAULT_TOLERANCE)]
    [('regression', 'value 10.5 is worse than the baseline 10 (+5%)')]
    """
    old = baseline.get("results", {})
    findings = []
    for record in records:
        key = record["key"]
        base = old.get(key)
        if base is None:
            findings.append(Finding(key, "new", "no baseline entry", record))
            continue
        problems, better = [], []
        if record.get("error"):
            problems.append(f"failed: {record['error']}")
        elif base.get("value") is not None and record.get("value") is None:
            problems.append(f"no solution (status {record.get('status')}); the baseline had {base['value']:.6g}")
        elif _worse(record.get("value"), base.get("value"), tolerance["value"]):
            change = 100 * (record["value"] / base["value"] - 1) if base["value"] else math.inf
            problems.append(f"value {record['value']:.6g} is worse than the baseline {base['value']:.6g} "
                            f"(+{change:.3g}%)")
        elif record.get("value") is not None and base.get("value") is not None and \
                record["value"] < base["value"] * (1 - tolerance["value"]) - 1e-12:
            better.append(f"value {record['value']:.6g} beats the baseline {base['value']:.6g}")
        if _worse(record.get("measured"), base.get("measured"), tolerance["measured"]):
            problems.append(f"measured {record['measured']:.6g} is slower than the baseline {base['measured']:.6g} "
                            f"by more than {100 * tolerance['measured']:.3g}%")
        kind = "regression" if problems else "improved" if better else "ok"
        findings.append(Finding(key, kind, "; ".join(problems or better) or "as the baseline", record, base))
    seen = {r["key"] for r in records}
    findings.extend(Finding(key, "missing", "in the baseline but not in this run", {}, base)
                    for key, base in old.items() if key not in seen)
    return findings


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    r"""The lines of a markdown table; a float cell shows 6 significant digits, None an empty cell.

    >>> markdown_table(["case", "value"], [["a", 2 / 3], ["b|c", None]])
    ['| case | value |', '|---|---|', '| a | 0.666667 |', '| b\\|c |  |']
    """
    def cell(x: Any) -> str:
        text = "" if x is None else f"{x:.6g}" if isinstance(x, float) else str(x)
        return text.replace("|", "\\|")

    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cell(x) for x in row) + " |" for row in rows)]


def write_reports(suite: Suite, records: Sequence[dict[str, Any]], findings: Sequence[Finding],
                  directory: Path) -> tuple[Path, Path]:
    """Write ``<suite>.report.json`` and ``<suite>.report.md`` (with ``<suite>.report.png`` when matplotlib is
    installed) into ``directory``; returns the paths of the first two."""
    directory.mkdir(parents=True, exist_ok=True)
    regressions = [f for f in findings if f.kind == "regression"]
    report = {
        "suite": suite.name, "host": platform.node(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tolerance": suite.tolerance, "passed": not regressions, "regressions": len(regressions),
        "results": list(records),
        "findings": [{"key": f.key, "kind": f.kind, "message": f.message} for f in findings],
    }
    json_path = directory / f"{suite.name}.report.json"
    json_path.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    verdict = "PASSED" if not regressions else f"FAILED: {len(regressions)} regression(s)"
    lines = [f"# Regression report: {suite.name}", "", f"{verdict} ({report['time']}, {report['host']})", ""]
    lines += markdown_table(
        ["case", "status", "value", "baseline", "measured", "baseline measured", "verdict"],
        [[f.key, f.current.get("status"), f.current.get("value"), f.baseline.get("value"), f.current.get("measured"),
          f.baseline.get("measured"), f"{f.kind}: {f.message}"] for f in findings])
    picture = _draw_against_baseline(suite, findings, directory)
    if picture is not None:
        lines += ["", f"![values against the baseline]({picture.name})"]
    md_path = directory / f"{suite.name}.report.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return json_path, md_path


def _draw_against_baseline(suite: Suite, findings: Sequence[Finding], directory: Path) -> Path | None:
    """``<suite>.report.png``: each case's value (and replayed time) over the baseline's; None without matplotlib."""
    try:
        from exactplace.plot import against_baseline
        from exactplace.plot.style import pyplot

        pyplot()
    except SolverUnavailableError:
        return None

    def ratio(f: Finding, key: str) -> float | None:
        now, base = f.current.get(key), f.baseline.get(key)
        return None if now is None or not base else now / base

    shown = [f for f in findings if f.kind != "missing"] or list(findings)
    figure = against_baseline([f.key for f in shown],
                              [{"value": ratio(f, "value"), "measured": ratio(f, "measured")} for f in shown],
                              [f.kind for f in shown], title=f"{suite.name}: this run against the baseline")
    path = directory / f"{suite.name}.report.png"
    figure.savefig(path, dpi=100)
    return path


def regress(suite_path: str | Path, *, baseline: str | Path | None = None, report_dir: str | Path | None = None,
            update_baseline: bool = False, ray_address: str | None = None,
            echo: Callable[[str], None] = print) -> int:
    """Run a suite against its baseline; returns the exit status (0 passed, 1 regression).

    ``baseline`` defaults to ``<suite>.baseline.json`` beside the suite, ``report_dir`` to the
    suite's folder.
    """
    suite = load_suite(suite_path)
    baseline_path = Path(baseline) if baseline else suite.path.with_suffix(".baseline.json")
    if not update_baseline and not baseline_path.exists():
        raise InputFormatError(f"Baseline {str(baseline_path)!r} does not exist; create it with --update-baseline.")
    records = run_suite(suite, ray_address)
    if update_baseline:
        baseline_path.write_text(json.dumps({"suite": suite.name, "results": {
            r["key"]: {k: r[k] for k in ("status", "value", "bound", "wall_seconds", "measured", "predicted")}
            for r in records}}, indent=1) + "\n", encoding="utf-8")
        echo(f"baseline written to {baseline_path} ({len(records)} results)")
        failed = [r for r in records if r["error"]]
        for r in failed:
            echo(f"  {r['key']}: {r['error']}")
        return 1 if failed else 0
    from exactplace.core.io import load_json

    findings = compare(records, load_json(baseline_path, "Baseline"), suite.tolerance)
    json_path, md_path = write_reports(suite, records, findings, Path(report_dir) if report_dir else
                                       suite.path.parent)
    regressions = [f for f in findings if f.kind == "regression"]
    for f in findings:
        if f.kind != "ok":
            echo(f"{f.kind}: {f.key}: {f.message}")
    echo(f"{len(records)} results, {len(regressions)} regression(s); reports: {json_path}, {md_path}")
    return 1 if regressions else 0
