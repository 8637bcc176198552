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

A workload file is the paper's JSON, a PipeDream profile or an ONNX model, as for ``exactplace solve``.
Everything is checked before the first job runs, so a bad input costs nothing: the suite (UTF-8, no key
given twice, aliases expanding to at most :data:`MAX_SUITE_NODES` nodes, every field, every workload
read as the solve will read it, every option known to its method), the baseline (its shape, finite
numbers, the same suite) and every file the run will write (``--report-dir``, the baseline that
``--update-baseline`` rewrites, the report names made from the suite's name). Ctrl-C (or SIGTERM)
stops the suite: the report of the jobs done is written, marked interrupted, with the rest ``not run``;
``--update-baseline`` keeps the baseline and writes the results done beside it (``B.partial.json``).
"""

from __future__ import annotations

import io
import json
import math
import os
import platform
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exactplace.core.errors import InputFormatError, ParameterError, SolverUnavailableError
from exactplace.core.interrupt import handled_interrupt
from exactplace.core.placement import Limit, Placement

__all__ = ["BASELINE_FIELDS", "DEFAULT_TOLERANCE", "MAX_SUITE_NODES", "Finding", "Suite", "SuiteInterrupted",
           "check_baseline", "compare", "finite", "load_suite", "markdown_table", "regress", "run_job", "run_suite",
           "solve_job", "write_reports"]

DEFAULT_TOLERANCE = {"value": 1e-6, "measured": 0.25}
_REPLAY_KEYS = {"devices", "samples", "repeats"}
#: The most YAML nodes a suite may hold once its aliases are expanded: far more than a suite of
#: thousands of cases needs, far fewer than an alias bomb ("billion laughs") expands to.
MAX_SUITE_NODES = 100_000
#: The fields of a baseline entry, as ``--update-baseline`` writes them: the status (text) and numbers.
BASELINE_FIELDS = ("status", "value", "bound", "wall_seconds", "measured", "predicted")
#: The status of a job that Ctrl-C kept from running.
NOT_RUN = "not run"
#: Solve's own keyword arguments, which a case's options may also set.
_SOLVE_KEYWORDS = {"rel_gap", "warm_start"}
_DEVICES = re.compile(r"auto|(cpu|cuda)(:[0-9]+)?")
#: The longest file name most file systems take, in bytes.
_NAME_MAX = 255


@dataclass(frozen=True)
class Suite:
    """A parsed suite: its jobs (one per workload x method x objective) and tolerances."""

    name: str
    jobs: list[dict[str, Any]]
    tolerance: dict[str, float]
    path: Path
    #: The workload files the cases read (none for shipped workloads): inputs no output may replace.
    files: tuple[Path, ...] = ()


class SuiteInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) stopped a suite: ``records`` are those of the jobs that finished, in suite order."""

    def __init__(self, records: Sequence[dict[str, Any]]) -> None:
        super().__init__()
        self.records = list(records)


@dataclass(frozen=True)
class Finding:
    """The verdict on one job: ``kind`` is ``ok``, ``regression``, ``improved``, ``new``, ``missing`` or ``not run``
    (Ctrl-C came first)."""

    key: str
    kind: str
    message: str
    current: dict[str, Any] = field(default_factory=dict)
    baseline: dict[str, Any] = field(default_factory=dict)


def _require(condition: bool, where: str, message: str) -> None:
    if not condition:
        raise InputFormatError(f"{where}: {message}")


def load_suite(path: str | Path) -> Suite:
    """Read and check a suite file; every problem is an InputFormatError naming the file and the field.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> text = "cases:\\n  - workload: layer_bert24_inference\\n    methods: [greedy, dpl]\\n"
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.yaml"; _ = p.write_text(text)
    >>> [job["key"] for job in load_suite(p).jobs]
    ['layer_bert24_inference/greedy/throughput', 'layer_bert24_inference/dpl/throughput']
    """
    path = Path(path)
    data = _read_yaml(path)
    where = f"Suite {path.name!r}"
    _require(isinstance(data, dict), where, "must be a mapping with a 'cases' list")
    unknown = set(data) - {"name", "tolerance", "replay", "cases"}
    _require(not unknown, where, f"unknown field(s) {_names(unknown)}")
    name = data.get("name", path.stem)
    name = str(name) if isinstance(name, int) and not isinstance(name, bool) else name
    _require(isinstance(name, str) and _file_name_part(name), where,
             f"'name' must be a non-empty name without a path separator or a NUL, short enough for a file name "
             f"(the reports are named after it); got {name!r}")
    tolerance = dict(DEFAULT_TOLERANCE)
    given = {} if data.get("tolerance") is None else data["tolerance"]
    _require(isinstance(given, dict) and set(given) <= set(DEFAULT_TOLERANCE), where,
             f"'tolerance' must map {sorted(DEFAULT_TOLERANCE)} to numbers")
    for key, value in given.items():
        _require(_number(value) and value >= 0, where, f"tolerance {key!r} must be a finite number >= 0")
        tolerance[key] = float(value)
    replay = data.get("replay")
    _require(replay is None or (isinstance(replay, dict) and set(replay) <= _REPLAY_KEYS), where,
             f"'replay' must be a mapping with keys among {sorted(_REPLAY_KEYS)}")
    if replay is not None:
        _check_replay(replay, where)
    cases = data.get("cases")
    _require(isinstance(cases, list) and cases, where, "'cases' must be a non-empty list")
    from exactplace.methods.registry import registered_methods

    registered = registered_methods()
    jobs, files = [], []
    for i, case in enumerate(cases):
        at = f"{where}: cases[{i}]"
        _require(isinstance(case, dict) and "workload" in case and "methods" in case, at,
                 "needs 'workload' and 'methods'")
        extra = set(case) - {"workload", "methods", "objectives", "time_limit", "options"}
        _require(not extra, at, f"unknown field(s) {_names(extra)}")
        methods, objectives = case["methods"], case.get("objectives", ["throughput"])
        for field_name, values in (("methods", methods), ("objectives", objectives)):
            _require(isinstance(values, list) and values and all(isinstance(v, str) for v in values), at,
                     f"{field_name!r} must be a non-empty list of names")
        time_limit = case.get("time_limit")
        _require(time_limit is None or (_number(time_limit, infinite=True) and time_limit > 0), at,
                 "'time_limit' must be a positive number of seconds")
        options = {} if case.get("options") is None else case["options"]
        _require(isinstance(options, dict) and all(isinstance(k, str) for k in options), at,
                 "'options' must be a mapping of option names")
        reference = case["workload"]
        _require(isinstance(reference, str) and reference and "\0" not in reference, at,
                 f"'workload' must be a file name or a shipped workload's name; got {reference!r}")
        workload, source = _workload_data(reference, path.parent, at)
        if source is not None:
            files.append(source)
        stem = Path(reference).stem
        for method in methods:
            _require(method in registered, at, f"method {method!r} is not one of {sorted(registered)}")
            for objective in objectives:
                _require(objective in registered[method].objectives, at,
                         f"method {method!r} handles {list(registered[method].objectives)}, not {objective!r}")
                _check_options(registered[method], objective, options, at)
                jobs.append({"key": f"{stem}/{method}/{objective}", "workload_name": stem, "workload": workload,
                             "method": method, "objective": objective, "time_limit": time_limit,
                             "options": options, "replay": replay})
    keys = [job["key"] for job in jobs]
    _require(len(set(keys)) == len(keys), where, "a workload x method x objective appears twice")
    return Suite(name=name, jobs=jobs, tolerance=tolerance, path=path, files=tuple(files))


def _read_yaml(path: Path) -> Any:
    """The suite file's YAML, read with :class:`_suite_loader`: one InputFormatError naming the file otherwise."""
    try:
        import yaml
    except ImportError:
        raise SolverUnavailableError("Suites are YAML: pip install 'exactplace[regress]' (PyYAML).") from None
    from exactplace.io import read_text

    text = read_text(path, "Suite")  # missing, a directory, unreadable, not UTF-8: one line naming the file
    loader = _suite_loader()(text)
    try:
        node = loader.get_single_node()
        if node is not None and _expanded_size(node, MAX_SUITE_NODES) > MAX_SUITE_NODES:
            raise InputFormatError(f"Suite file {str(path)!r} expands to more than {MAX_SUITE_NODES:,} YAML nodes "
                                   "through its aliases (&anchor / *alias); write the cases out instead.")
        return None if node is None else loader.construct_document(node)
    except yaml.YAMLError as error:  # one line: its problem and where (PyYAML's own text spans several)
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise InputFormatError(f"Suite file {str(path)!r} is not valid YAML: {problem}{where}.") from None
    except RecursionError:
        raise InputFormatError(f"Suite file {str(path)!r} nests YAML too deeply.") from None
    finally:
        loader.dispose()


_LOADER: list[type] = []


def _suite_loader() -> type:
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last one silently,
    so a suite would run other cases than it reads as). Made on first use: PyYAML is an optional extra."""
    if _LOADER:
        return _LOADER[0]
    import yaml

    merge = "tag:yaml.org,2002:merge"

    class SuiteLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML has no type hints
        def compose_mapping_node(self, anchor: str | None) -> Any:
            node = super().compose_mapping_node(anchor)
            seen: set[tuple[str, str]] = set()
            for key, _ in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != merge:  # `<<: *base` then overrides: allowed
                    if (key.tag, key.value) in seen:
                        raise yaml.composer.ComposerError(None, None, f"the key {key.value!r} is given twice",
                                                          key.start_mark)
                    seen.add((key.tag, key.value))
            return node

    _LOADER.append(SuiteLoader)
    return SuiteLoader


def _expanded_size(root: Any, budget: int) -> int:
    """The number of nodes of a YAML node graph with every alias expanded, counted up to just past ``budget``
    (each node once: linear in the document, whatever its aliases expand to). A node that holds itself
    (``&a [*a]``) expands without end: a ComposerError, reported as the other YAML errors are."""
    import yaml

    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Any) -> int:
        if id(node) in sizes:
            return sizes[id(node)]
        if id(node) in open_nodes:
            raise yaml.composer.ComposerError(None, None, "an alias refers to a node that holds it (it expands "
                                              "without end)", node.start_mark)
        total = 1
        if isinstance(node, (yaml.SequenceNode, yaml.MappingNode)):
            open_nodes.add(id(node))
            children = node.value if isinstance(node, yaml.SequenceNode) else [n for pair in node.value for n in pair]
            for child in children:
                total += size(child)
                if total > budget:
                    break
            open_nodes.discard(id(node))
        sizes[id(node)] = total
        return total

    return size(root)


def _names(keys: Iterable[Any]) -> list[str]:
    """Keys as sorted text, whatever their types (YAML keys may be numbers, dates, ...)."""
    return sorted(str(key) for key in keys)


def _number(value: Any, *, infinite: bool = False) -> bool:
    """A real number (not a boolean, not NaN) that a float holds, finite unless ``infinite``."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return False
    return not math.isnan(number) and (infinite or math.isfinite(number))


def _file_name_part(name: str) -> bool:
    """Whether ``name`` can start a file name in a folder: no separator, no NUL, not '.' or '..', not too long."""
    return bool(name) and name not in (".", "..") and not set(name) & {"/", "\\", "\0"} and \
        len(f"{name}.report.json".encode("utf-8", "surrogateescape")) <= _NAME_MAX


def _check_replay(replay: dict[str, Any], where: str) -> None:
    """The replay settings, as :func:`exactplace.runtime.replay` takes them (found before, not per job)."""
    devices, samples, repeats = replay.get("devices", "auto"), replay.get("samples", 16), replay.get("repeats", 3)
    _require(isinstance(devices, str) and _DEVICES.fullmatch(devices) is not None, where,
             f"replay 'devices' must be 'auto', 'cpu', 'cpu:N', 'cuda' or 'cuda:N'; got {devices!r}")
    _require(isinstance(samples, int) and not isinstance(samples, bool) and samples >= 4, where,
             f"replay 'samples' must be an integer >= 4; got {samples!r}")
    _require(isinstance(repeats, int) and not isinstance(repeats, bool) and repeats >= 1, where,
             f"replay 'repeats' must be an integer >= 1; got {repeats!r}")


def _check_options(method: Any, objective: str, options: dict[str, Any], where: str) -> None:
    """Every option is one the method (or the objective, or solve itself) takes, with a valid value, as
    :func:`exactplace.solve` checks them: found before the run, not as a failure of every job after it."""
    from exactplace.core.errors import ExactplaceError
    from exactplace.core.objectives import SCORING_OPTIONS
    from exactplace.core.params import validate_options
    from exactplace.core.problem import OBJECTIVE_OPTIONS
    scoring = {k: v for k, v in OBJECTIVE_OPTIONS.items() if k in SCORING_OPTIONS.get(objective, ())}
    for key, value in options.items():
        if key == "rel_gap":
            _require(_number(value) and 0 <= value < 1, where, f"option 'rel_gap' must be a number in [0, 1); "
                     f"got {value!r}")
            continue
        if key == "warm_start":  # a device list is checked against the workload by solve
            _require(value is None or value == "auto" or isinstance(value, list), where,
                     f"option 'warm_start' must be 'auto', null or a list of devices; got {value!r}")
            continue
        declared = scoring if key in scoring else method.options
        _require(key in declared, where, f"method {method.name!r} takes no option {key!r} for {objective!r}; its "
                 f"options: {sorted({*scoring, *method.options, *_SOLVE_KEYWORDS})}")
        try:
            validate_options({key: value}, declared, "solve")
        except ExactplaceError as error:
            raise InputFormatError(f"{where}: {error}") from None


def _workload_data(reference: str, base: Path, where: str) -> tuple[dict[str, Any], Path | None]:
    """The workload's JSON content, so a job carries everything a remote worker needs, and the file it came
    from (None for a shipped workload). Read and checked as the solve reads it: a file of the paper's JSON,
    a PipeDream profile or an ONNX model (the last two converted to the JSON)."""
    from exactplace.core.errors import ExactplaceError
    from exactplace.data import shipped_workloads, workload_path
    from exactplace.io import parse_json, read_bytes, workload_format, workload_from_text, workload_to_dict

    candidate, source = base / reference, base / reference
    if not os.path.exists(candidate) and reference in shipped_workloads():  # os.path: False for any odd name
        candidate, source = Path(workload_path(reference)), None
    _require(os.path.exists(candidate), where, f"workload {reference!r} is neither a file nor a shipped workload")
    try:
        content = read_bytes(candidate, "Workload")
        workload = workload_from_text(content, candidate)
        if workload_format(content, candidate) == "json":  # as written: the fields the format keeps aside too
            return parse_json(content.decode("utf-8"), "Workload", f"file {str(candidate)!r}"), source
        return workload_to_dict(workload), source
    except ExactplaceError as error:
        raise InputFormatError(f"{where}: {error}") from None


def solve_job(job: dict[str, Any]) -> tuple[dict[str, Any], Placement | None]:
    """Solve one job without replaying it; returns its JSON-ready record and its placement.

    The placement is None when the solve failed (an ExactplaceError, in the record's ``error``).
    A solve stopped by Ctrl-C raises KeyboardInterrupt: it stops the whole batch, not only this job.
    """
    from exactplace.core.errors import ExactplaceError
    from exactplace.io import workload_from_dict
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
    """Run the jobs here, one after another; Ctrl-C raises SuiteInterrupted with the records done."""
    records: list[dict[str, Any]] = []
    for job in jobs:
        try:
            records.append(run_job(job))
        except KeyboardInterrupt:
            handled_interrupt()
            raise SuiteInterrupted(records) from None
    return records


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
                raise SuiteInterrupted([ray.get(ref) for ref in refs if ref in finished]) from None
        finally:
            if started:
                ray.shutdown()  # a local cluster started here ends with the suite

    return mapper


def run_suite(suite: Suite, ray_address: str | None = None) -> list[dict[str, Any]]:
    """Run every job of the suite, here or on Ray; returns one record per job, in suite order.

    Ctrl-C (or SIGTERM, which the command line turns into it) raises :class:`SuiteInterrupted`
    holding the records of the jobs that finished.
    """
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
        if record.get("status") == NOT_RUN:
            findings.append(Finding(key, NOT_RUN, "not run: the suite was interrupted before it", record, base or {}))
            continue
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
                  directory: Path, *, interrupted: bool = False) -> tuple[Path, Path]:
    """Write ``<suite>.report.json`` and ``<suite>.report.md`` (with ``<suite>.report.png`` when matplotlib is
    installed) into ``directory``; returns the paths of the first two.

    ``interrupted``: Ctrl-C stopped the suite; the reports say so (``"interrupted": true``, never passed)
    and hold the jobs done, the rest ``not run``. Each file is written whole or not at all.
    """
    directory.mkdir(parents=True, exist_ok=True)
    regressions = [f for f in findings if f.kind == "regression"]
    not_run = sum(f.kind == NOT_RUN for f in findings)
    report = {
        "suite": suite.name, "host": platform.node(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tolerance": suite.tolerance, "passed": not regressions and not interrupted, "regressions": len(regressions),
        "interrupted": interrupted, "not_run": not_run,
        "results": list(records),
        "findings": [{"key": f.key, "kind": f.kind, "message": f.message} for f in findings],
    }
    json_path = directory / f"{suite.name}.report.json"
    _write(json_path, json.dumps(report, indent=1) + "\n")
    verdict = "PASSED" if not regressions else f"FAILED: {len(regressions)} regression(s)"
    if interrupted:
        verdict = f"INTERRUPTED: {len(records) - not_run} of {len(records)} jobs run, " \
                  f"{len(regressions)} regression(s) among them"
    lines = [f"# Regression report: {suite.name}", "", f"{verdict} ({report['time']}, {report['host']})", ""]
    lines += markdown_table(
        ["case", "status", "value", "baseline", "measured", "baseline measured", "verdict"],
        [[f.key, f.current.get("status"), f.current.get("value"), f.baseline.get("value"), f.current.get("measured"),
          f.baseline.get("measured"), f"{f.kind}: {f.message}"] for f in findings])
    picture = _draw_against_baseline(suite, findings, directory)
    if picture is not None:
        lines += ["", f"![values against the baseline]({picture.name})"]
    md_path = directory / f"{suite.name}.report.md"
    _write(md_path, "\n".join(lines) + "\n")
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
    picture = io.BytesIO()
    figure.savefig(picture, format="png", dpi=100)
    _write(path, picture.getvalue())
    return path


def regress(suite_path: str | Path, *, baseline: str | Path | None = None, report_dir: str | Path | None = None,
            update_baseline: bool = False, ray_address: str | None = None,
            echo: Callable[[str], None] = print) -> int:
    """Run a suite against its baseline; returns the exit status (0 passed, 1 regression).

    ``baseline`` defaults to ``<suite>.baseline.json`` beside the suite, ``report_dir`` to the
    suite's folder. The suite, the baseline and every file the run will write are checked first
    (an ExactplaceError naming the file and the field, before any job runs). Ctrl-C (or SIGTERM)
    writes the report of the jobs done, marked interrupted (with ``update_baseline``: those
    results to ``<baseline>.partial.json``, the baseline kept), then raises KeyboardInterrupt.
    """
    suite = load_suite(suite_path)
    if baseline is not None and str(baseline) == "":
        raise ParameterError("--baseline '' names no file; give the baseline JSON's file name.")
    if baseline is not None and (str(baseline).endswith(("/", os.sep)) or Path(baseline).name in ("", ".", "..")):
        raise ParameterError(f"--baseline {str(baseline)!r} names a directory, not a file; give the baseline JSON's "
                             "file name.")  # Path("out/") would drop the slash and name the file out
    if report_dir is not None and str(report_dir) == "":
        raise ParameterError("--report-dir '' names no folder; give a folder name (. for this one).")
    baseline_path = Path(baseline) if baseline is not None else suite.path.with_suffix(".baseline.json")
    directory = Path(report_dir) if report_dir is not None else suite.path.parent
    partial_path = baseline_path.with_name(f"{baseline_path.stem[:_NAME_MAX - 20]}.partial.json")
    inputs = [suite.path, *suite.files]
    old: dict[str, Any] = {}
    if update_baseline:  # the baseline is an output here: writable, and neither the suite nor a workload
        _check_target(baseline_path, "--update-baseline", inputs)
        _check_target(partial_path, "--update-baseline", inputs)
    else:
        if not os.path.exists(baseline_path):
            raise InputFormatError(f"Baseline {str(baseline_path)!r} does not exist; create it with "
                                   "--update-baseline.")
        from exactplace.io import load_json

        old = check_baseline(load_json(baseline_path, "Baseline"), baseline_path, suite.name)
        keys = {job["key"] for job in suite.jobs}
        if old and not keys & set(old):  # another suite's: every case would be new, and the run would pass
            raise InputFormatError(f"Baseline {str(baseline_path)!r} shares no case with suite {suite.name!r} (it "
                                   f"holds {', '.join(sorted(old)[:3])}{', ...' if len(old) > 3 else ''}); give "
                                   "this suite's baseline, or create it with --update-baseline.")
        _check_report_dir(directory, "--report-dir")
        for suffix in ("json", "md", "png"):
            _check_target(directory / f"{suite.name}.report.{suffix}", "--report-dir", [*inputs, baseline_path])
    try:
        records = run_suite(suite, ray_address)
        interrupted = False
    except SuiteInterrupted as stop:
        done = {r["key"]: r for r in stop.records}
        records = [done.get(job["key"]) or _not_run(job) for job in suite.jobs]
        interrupted = True
    ran = [r for r in records if r["status"] != NOT_RUN]
    if update_baseline:
        target = partial_path if interrupted else baseline_path
        target.parent.mkdir(parents=True, exist_ok=True)
        _write(target, json.dumps({"suite": suite.name, **({"partial": True} if interrupted else {}), "results": {
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
    findings = compare(records, {"results": old}, suite.tolerance)
    json_path, md_path = write_reports(suite, records, findings, directory, interrupted=interrupted)
    regressions = [f for f in findings if f.kind == "regression"]
    for f in findings:
        if f.kind not in ("ok", NOT_RUN):
            echo(f"{f.kind}: {f.key}: {f.message}")
    stopped = f" (interrupted: {len(records) - len(ran)} not run)" if interrupted else ""
    echo(f"{len(ran)} results{stopped}, {len(regressions)} regression(s); reports: {json_path}, {md_path}")
    if interrupted:
        raise KeyboardInterrupt
    return 1 if regressions else 0


def check_baseline(data: Any, path: str | Path, suite: str | None = None) -> dict[str, dict[str, Any]]:
    """The ``results`` of a baseline (as ``--update-baseline`` writes it), checked: an InputFormatError naming
    the file and the entry at fault otherwise (a value compared must be a finite number, or null).

    ``suite``: the suite's name, which the baseline's own ``suite`` must match (the other suite's keys
    would all be new or missing, and a run would pass comparing nothing).

    >>> check_baseline({"results": {"w/dp/throughput": {"value": 2.5}}}, "b.json")
    {'w/dp/throughput': {'value': 2.5}}
    >>> try:
    ...     check_baseline({"results": {"k": {"value": "fast"}}}, "b.json")
    ... except InputFormatError as error:
    ...     print(error)
    Baseline 'b.json': results['k']['value'] must be a finite number or null; got 'fast'
    """
    where = f"Baseline {str(path)!r}"
    _require(isinstance(data, dict), where, f"must be a JSON object with a 'results' object (as --update-baseline "
             f"writes it); got {_json_kind(data)}")
    _require(isinstance(data.get("results"), dict), where,
             f"'results' must be an object of entries by case; got {_json_kind(data.get('results'))}")
    unknown = set(data) - {"suite", "results", "partial"}
    _require(not unknown, where, f"unknown field(s) {_names(unknown)}")
    name = data.get("suite")
    _require(name is None or isinstance(name, str), where, f"'suite' must be the suite's name; got {name!r}")
    _require(isinstance(data.get("partial", False), bool), where, f"'partial' must be true or false; got "
             f"{data.get('partial')!r}")
    _require(suite is None or name is None or name == suite, where,
             f"is the baseline of suite {name!r}, not of {suite!r}; give this suite's baseline, or create it "
             "with --update-baseline")
    for key, entry in data["results"].items():
        at = f"results[{key!r}]"
        _require(isinstance(entry, dict), where, f"{at} must be an object of {list(BASELINE_FIELDS)}; got {entry!r}")
        extra = set(entry) - set(BASELINE_FIELDS)
        _require(not extra, where, f"{at} has unknown field(s) {_names(extra)}")
        status = entry.get("status")
        _require(status is None or isinstance(status, str), where, f"{at}['status'] must be text or null; "
                 f"got {status!r}")
        for field_name in BASELINE_FIELDS[1:]:
            value = entry.get(field_name)
            _require(value is None or _number(value), where,
                     f"{at}[{field_name!r}] must be a finite number or null; got {value!r}")
    return data["results"]


def _json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words."""
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "nothing (null)"}
    return kinds.get(type(value), "a number")


def _not_run(job: dict[str, Any]) -> dict[str, Any]:
    """The record of a job that Ctrl-C kept from running."""
    return {"key": job["key"], "workload": job["workload_name"], "method": job["method"],
            "objective": job["objective"], "status": NOT_RUN, "value": None, "bound": None, "wall_seconds": None,
            "measured": None, "predicted": None, "ratio": None, "noise": None, "replay": None, "error": None,
            "worker": None}


def _check_target(path: Path, flag: str, inputs: Iterable[Path]) -> None:
    """Before any work: the file ``path`` can be written (its folder exists or will be made, is writable; it is
    not a directory, nor a read-only file) and is none of the ``inputs`` (it would be lost)."""
    for source in inputs:
        if _same_file(path, source):
            also = "" if str(source) == str(path) else f" ({str(source)!r})"
            raise ParameterError(f"{flag}: {str(path)!r} is also an input{also}; it would be lost.")
    if os.path.isdir(path):
        raise ParameterError(f"{flag}: {str(path)!r} is a directory; it would be written as a file.")
    if os.path.lexists(path) and not os.access(path, os.W_OK):
        raise ParameterError(f"{flag}: {str(path)!r} is not writable.")
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(folder) and not os.access(folder, os.W_OK | os.X_OK):
        raise ParameterError(f"{flag}: {str(path)!r}: the directory {folder!r} is not writable.")
    if not os.path.isdir(folder):
        _check_report_dir(Path(folder), flag, shown=str(path))
    if len(os.fsencode(path.name)) > _NAME_MAX:
        raise ParameterError(f"{flag}: {str(path)!r}: the file name is longer than {_NAME_MAX} bytes.")


def _check_report_dir(directory: Path, flag: str, shown: str | None = None) -> None:
    """Before any work: ``directory`` is one, or can be made (with its parents) under a writable directory."""
    shown = str(directory) if shown is None else shown
    if os.path.lexists(directory) and not os.path.isdir(directory):
        where = "" if shown == str(directory) else f": {str(directory)!r}"
        raise ParameterError(f"{flag} {shown!r}{where} is not a directory.")
    existing = Path(os.path.abspath(directory))
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not os.path.isdir(existing):
        raise ParameterError(f"{flag} {shown!r}: {str(existing)!r} is not a directory, so nothing can be made "
                             "under it.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ParameterError(f"{flag} {shown!r}: the directory {str(existing)!r} is not writable.")


def _same_file(a: Path, b: Path) -> bool:
    """Both paths name the same existing file (links resolved), or the same path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _write(path: Path, data: str | bytes) -> None:
    """Write ``path`` whole or not at all (a temporary file beside it, renamed over it), so that Ctrl-C or a full
    disk never leaves half a baseline or report; a device or a pipe (``/dev/null``) is written where it is.
    An error names ``path``, never the temporary file."""
    content = data.encode("utf-8") if isinstance(data, str) else data
    try:
        mode = os.stat(path).st_mode if os.path.exists(path) else None
        if mode is not None and not stat.S_ISREG(mode):
            with open(path, "wb") as stream:
                stream.write(content)
            return
        # The temporary name is cut short: a long (but valid) file name leaves room for it.
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name[:64]}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(content)
                stream.flush()
                os.fsync(stream.fileno())
            mask = os.umask(0)
            os.umask(mask)
            os.chmod(temporary, 0o666 & ~mask)  # mkstemp makes it private; give it a new file's usual mode
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
    except OSError as error:
        raise OSError(error.errno, error.strerror, str(path)) from None
