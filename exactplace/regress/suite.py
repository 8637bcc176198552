"""A regression suite read and checked: workloads x methods x objectives, with time limits and options.

Everything is checked before the first job runs, so a bad input costs nothing: the file (UTF-8, no
key given twice, aliases expanding to at most :data:`MAX_SUITE_NODES` nodes), every field, every
workload read as the solve will read it, and every option known to its method. The format is
:func:`load_suite`'s.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exactplace.core.errors import InputFormatError, SolverUnavailableError
from exactplace.io.paths import NAME_MAX
from exactplace.regress.checks import is_number, require, sorted_names

__all__ = ["DEFAULT_TOLERANCE", "MAX_SUITE_NODES", "Suite", "load_suite"]

DEFAULT_TOLERANCE = {"value": 1e-6, "measured": 0.25}
_REPLAY_KEYS = {"devices", "samples", "repeats"}
#: The most YAML nodes a suite may hold once its aliases are expanded: far more than a suite of
#: thousands of cases needs, far fewer than an alias bomb ("billion laughs") expands to.
MAX_SUITE_NODES = 100_000
#: Solve's own keyword arguments, which a case's options may also set.
_SOLVE_KEYWORDS = {"rel_gap", "warm_start"}
_DEVICES = re.compile(r"auto|(cpu|cuda)(:[0-9]+)?")


@dataclass(frozen=True)
class Suite:
    """A parsed suite: its jobs (one per workload x method x objective) and tolerances."""

    name: str
    jobs: list[dict[str, Any]]
    tolerance: dict[str, float]
    path: Path
    #: The workload files the cases read (none for shipped workloads): inputs no output may replace.
    files: tuple[Path, ...] = ()


def load_suite(path: str | Path) -> Suite:
    """Read and check a suite file; every problem is an InputFormatError naming the file and the field.

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

    A workload file is the paper's JSON, a PipeDream profile or an ONNX model, as for
    ``exactplace solve``. The suite's name (default: the file's stem) names the reports.

    Parameters
    ----------
    path : str or Path
        The suite file.

    Returns
    -------
    Suite
        One job per workload x method x objective, in the file's order.

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
    require(isinstance(data, dict), where, "must be a mapping with a 'cases' list")
    unknown = set(data) - {"name", "tolerance", "replay", "cases"}
    require(not unknown, where, f"unknown field(s) {sorted_names(unknown)}")
    name = data.get("name", path.stem)
    name = str(name) if isinstance(name, int) and not isinstance(name, bool) else name
    require(isinstance(name, str) and _file_name_part(name), where,
             f"'name' must be a non-empty name without a path separator or a NUL, short enough for a file name "
             f"(the reports are named after it); got {name!r}")
    tolerance = dict(DEFAULT_TOLERANCE)
    given = {} if data.get("tolerance") is None else data["tolerance"]
    require(isinstance(given, dict) and set(given) <= set(DEFAULT_TOLERANCE), where,
             f"'tolerance' must map {sorted(DEFAULT_TOLERANCE)} to numbers")
    for key, value in given.items():
        require(is_number(value) and value >= 0, where, f"tolerance {key!r} must be a finite number >= 0")
        tolerance[key] = float(value)
    replay = data.get("replay")
    require(replay is None or (isinstance(replay, dict) and set(replay) <= _REPLAY_KEYS), where,
             f"'replay' must be a mapping with keys among {sorted(_REPLAY_KEYS)}")
    if replay is not None:
        _check_replay(replay, where)
    cases = data.get("cases")
    require(isinstance(cases, list) and cases, where, "'cases' must be a non-empty list")
    from exactplace.methods.registry import registered_methods

    registered = registered_methods()
    jobs, files = [], []
    for i, case in enumerate(cases):
        at = f"{where}: cases[{i}]"
        require(isinstance(case, dict) and "workload" in case and "methods" in case, at,
                 "needs 'workload' and 'methods'")
        extra = set(case) - {"workload", "methods", "objectives", "time_limit", "options"}
        require(not extra, at, f"unknown field(s) {sorted_names(extra)}")
        methods, objectives = case["methods"], case.get("objectives", ["throughput"])
        for field_name, values in (("methods", methods), ("objectives", objectives)):
            require(isinstance(values, list) and values and all(isinstance(v, str) for v in values), at,
                     f"{field_name!r} must be a non-empty list of names")
        time_limit = case.get("time_limit")
        require(time_limit is None or (is_number(time_limit, infinite=True) and time_limit > 0), at,
                 "'time_limit' must be a positive number of seconds")
        options = {} if case.get("options") is None else case["options"]
        require(isinstance(options, dict) and all(isinstance(k, str) for k in options), at,
                 "'options' must be a mapping of option names")
        reference = case["workload"]
        require(isinstance(reference, str) and reference and "\0" not in reference, at,
                 f"'workload' must be a file name or a shipped workload's name; got {reference!r}")
        workload, source = _workload_data(reference, path.parent, at)
        if source is not None:
            files.append(source)
        stem = Path(reference).stem
        for method in methods:
            require(method in registered, at, f"method {method!r} is not one of {sorted(registered)}")
            for objective in objectives:
                require(objective in registered[method].objectives, at,
                         f"method {method!r} handles {list(registered[method].objectives)}, not {objective!r}")
                _check_options(registered[method], objective, options, at)
                jobs.append({"key": f"{stem}/{method}/{objective}", "workload_name": stem, "workload": workload,
                             "method": method, "objective": objective, "time_limit": time_limit,
                             "options": options, "replay": replay})
    keys = [job["key"] for job in jobs]
    require(len(set(keys)) == len(keys), where, "a workload x method x objective appears twice")
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


def _file_name_part(name: str) -> bool:
    """Whether ``name`` can start a file name in a folder: no separator, no NUL, not '.' or '..', not too long."""
    return bool(name) and name not in (".", "..") and not set(name) & {"/", "\\", "\0"} and \
        len(f"{name}.report.json".encode("utf-8", "surrogateescape")) <= NAME_MAX


def _check_replay(replay: dict[str, Any], where: str) -> None:
    """The replay settings, as :func:`exactplace.runtime.replay` takes them (found before, not per job)."""
    devices, samples, repeats = replay.get("devices", "auto"), replay.get("samples", 16), replay.get("repeats", 3)
    require(isinstance(devices, str) and _DEVICES.fullmatch(devices) is not None, where,
             f"replay 'devices' must be 'auto', 'cpu', 'cpu:N', 'cuda' or 'cuda:N'; got {devices!r}")
    require(isinstance(samples, int) and not isinstance(samples, bool) and samples >= 4, where,
             f"replay 'samples' must be an integer >= 4; got {samples!r}")
    require(isinstance(repeats, int) and not isinstance(repeats, bool) and repeats >= 1, where,
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
            require(is_number(value) and 0 <= value < 1, where, f"option 'rel_gap' must be a number in [0, 1); "
                     f"got {value!r}")
            continue
        if key == "warm_start":  # a device list is checked against the workload by solve
            require(value is None or value == "auto" or isinstance(value, list), where,
                     f"option 'warm_start' must be 'auto', null or a list of devices; got {value!r}")
            continue
        declared = scoring if key in scoring else method.options
        require(key in declared, where, f"method {method.name!r} takes no option {key!r} for {objective!r}; its "
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
    require(os.path.exists(candidate), where, f"workload {reference!r} is neither a file nor a shipped workload")
    try:
        content = read_bytes(candidate, "Workload")
        workload = workload_from_text(content, candidate)
        if workload_format(content, candidate) == "json":  # as written: the fields the format keeps aside too
            return parse_json(content.decode("utf-8"), "Workload", f"file {str(candidate)!r}"), source
        return workload_to_dict(workload), source
    except ExactplaceError as error:
        raise InputFormatError(f"{where}: {error}") from None
