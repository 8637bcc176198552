"""The baseline a suite runs against: read and checked, and each job's verdict against it.

A baseline is the JSON that ``exactplace regress --update-baseline`` writes: the suite's name and,
per case (``workload/method/objective``), the fields of :data:`BASELINE_FIELDS`. Lower values and
times are better; a value worse than the baseline's beyond the tolerance, a lost solution, or a
replayed time beyond its tolerance is a regression.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from exactplace.core.errors import InputFormatError
from exactplace.io import load_json
from exactplace.regress.checks import is_number, json_kind, require, sorted_names

__all__ = ["BASELINE_FIELDS", "NOT_RUN", "Finding", "check_baseline", "compare", "read_baseline"]

#: The fields of a baseline entry, as ``--update-baseline`` writes them: the status (text) and numbers.
BASELINE_FIELDS = ("status", "value", "bound", "wall_seconds", "measured", "predicted")
#: The status of a job that Ctrl-C kept from running.
NOT_RUN = "not run"


@dataclass(frozen=True)
class Finding:
    """The verdict on one job: ``kind`` is ``ok``, ``regression``, ``improved``, ``new``, ``missing`` or ``not run``
    (Ctrl-C came first)."""

    key: str
    kind: str
    message: str
    current: dict[str, Any] = field(default_factory=dict)
    baseline: dict[str, Any] = field(default_factory=dict)


def read_baseline(path: Path, suite: str, keys: set[str]) -> dict[str, dict[str, Any]]:
    """The checked ``results`` of the baseline ``path`` of suite ``suite``, whose cases are ``keys``: an
    InputFormatError when it is missing, malformed, another suite's, or shares no case with the suite
    (every case would be new, and the run would pass comparing nothing)."""
    if not os.path.exists(path):
        raise InputFormatError(f"Baseline {str(path)!r} does not exist; create it with --update-baseline.")
    old = check_baseline(load_json(path, "Baseline"), path, suite)
    if old and not keys & set(old):
        raise InputFormatError(f"Baseline {str(path)!r} shares no case with suite {suite!r} (it holds "
                               f"{', '.join(sorted(old)[:3])}{', ...' if len(old) > 3 else ''}); give this suite's "
                               "baseline, or create it with --update-baseline.")
    return old


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
    require(isinstance(data, dict), where, f"must be a JSON object with a 'results' object (as --update-baseline "
             f"writes it); got {json_kind(data)}")
    require(isinstance(data.get("results"), dict), where,
             f"'results' must be an object of entries by case; got {json_kind(data.get('results'))}")
    unknown = set(data) - {"suite", "results", "partial"}
    require(not unknown, where, f"unknown field(s) {sorted_names(unknown)}")
    name = data.get("suite")
    require(name is None or isinstance(name, str), where, f"'suite' must be the suite's name; got {name!r}")
    require(isinstance(data.get("partial", False), bool), where, f"'partial' must be true or false; got "
             f"{data.get('partial')!r}")
    require(suite is None or name is None or name == suite, where,
             f"is the baseline of suite {name!r}, not of {suite!r}; give this suite's baseline, or create it "
             "with --update-baseline")
    for key, entry in data["results"].items():
        at = f"results[{key!r}]"
        require(isinstance(entry, dict), where, f"{at} must be an object of {list(BASELINE_FIELDS)}; got {entry!r}")
        extra = set(entry) - set(BASELINE_FIELDS)
        require(not extra, where, f"{at} has unknown field(s) {sorted_names(extra)}")
        status = entry.get("status")
        require(status is None or isinstance(status, str), where, f"{at}['status'] must be text or null; "
                 f"got {status!r}")
        for field_name in BASELINE_FIELDS[1:]:
            value = entry.get(field_name)
            require(value is None or is_number(value), where,
                     f"{at}[{field_name!r}] must be a finite number or null; got {value!r}")
    return data["results"]


def _worse(current: float | None, base: float | None, tolerance: float) -> bool:
    return current is not None and base is not None and current > base * (1 + tolerance) + 1e-12


def compare(records: Sequence[dict[str, Any]], baseline: dict[str, Any], tolerance: dict[str, float]
            ) -> list[Finding]:
    """Verdicts of the current records against the baseline's (lower values and times are better).

    >>> from exactplace.regress import DEFAULT_TOLERANCE
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
