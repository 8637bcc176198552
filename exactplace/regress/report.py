"""A suite's reports: ``<suite>.report.json``, ``<suite>.report.md`` and, drawn by the caller, ``<suite>.report.png``.

The picture is drawn by a function the caller passes (``draw``), with the signature of
:func:`exactplace.plot.against_baseline` (``draw(cases, ratios, verdicts, *, title=...)``, returning a
matplotlib Figure): the nightly job imports no plotting itself. Each file is written whole or not at all.
"""

from __future__ import annotations

import io
import json
import platform
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from exactplace.core.errors import SolverUnavailableError
from exactplace.io.paths import check_folder, check_target, write_file
from exactplace.io.tables import markdown_table
from exactplace.regress.baseline import NOT_RUN, Finding
from exactplace.regress.suite import Suite

__all__ = ["REPORT_SUFFIXES", "Drawer", "check_reports", "write_reports"]

#: The reports a run writes, by suffix: ``<suite>.report.<suffix>``.
REPORT_SUFFIXES = ("json", "md", "png")
#: Draws the picture of a report: :func:`exactplace.plot.against_baseline`'s signature, a Figure back.
Drawer = Callable[..., Any]


def check_reports(suite: Suite, directory: Path, inputs: Iterable[Path]) -> None:
    """Before any work: ``directory`` is one or can be made, and each report can be written there without
    replacing any of the ``inputs`` (a ParameterError naming ``--report-dir`` otherwise)."""
    inputs = list(inputs)
    check_folder(directory, "--report-dir")
    for suffix in REPORT_SUFFIXES:
        check_target(directory / f"{suite.name}.report.{suffix}", "--report-dir", inputs)


def write_reports(suite: Suite, records: Sequence[dict[str, Any]], findings: Sequence[Finding],
                  directory: Path, *, interrupted: bool = False, draw: Drawer | None = None) -> tuple[Path, Path]:
    """Write ``<suite>.report.json`` and ``<suite>.report.md`` into ``directory``; returns their paths.

    Parameters
    ----------
    suite : Suite
    records : sequence of dict
        One record per job, in suite order (:func:`exactplace.regress.run_suite`).
    findings : sequence of Finding
        The verdicts (:func:`exactplace.regress.compare`).
    directory : Path
        Made (with its parents) when missing.
    interrupted : bool
        Ctrl-C stopped the suite; the reports say so (``"interrupted": true``, never passed)
        and hold the jobs done, the rest ``not run``.
    draw : callable, optional
        Draws ``<suite>.report.png`` (embedded in the markdown), e.g. :func:`exactplace.plot.against_baseline`;
        None, or a drawer that finds no matplotlib (SolverUnavailableError): no picture.
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
    write_file(json_path, json.dumps(report, indent=1) + "\n")
    verdict = "PASSED" if not regressions else f"FAILED: {len(regressions)} regression(s)"
    if interrupted:
        verdict = f"INTERRUPTED: {len(records) - not_run} of {len(records)} jobs run, " \
                  f"{len(regressions)} regression(s) among them"
    lines = [f"# Regression report: {suite.name}", "", f"{verdict} ({report['time']}, {report['host']})", ""]
    lines += markdown_table(
        ["case", "status", "value", "baseline", "measured", "baseline measured", "verdict"],
        [[f.key, f.current.get("status"), f.current.get("value"), f.baseline.get("value"), f.current.get("measured"),
          f.baseline.get("measured"), f"{f.kind}: {f.message}"] for f in findings])
    picture = None if draw is None else _draw_against_baseline(suite, findings, directory, draw)
    if picture is not None:
        lines += ["", f"![values against the baseline]({picture.name})"]
    md_path = directory / f"{suite.name}.report.md"
    write_file(md_path, "\n".join(lines) + "\n")
    return json_path, md_path


def _draw_against_baseline(suite: Suite, findings: Sequence[Finding], directory: Path, draw: Drawer) -> Path | None:
    """``<suite>.report.png``: each case's value (and replayed time) over the baseline's, drawn by ``draw``;
    None when it cannot draw (matplotlib is not installed: the drawer's SolverUnavailableError)."""
    def ratio(f: Finding, key: str) -> float | None:
        now, base = f.current.get(key), f.baseline.get(key)
        return None if now is None or not base else now / base

    shown = [f for f in findings if f.kind != "missing"] or list(findings)
    try:
        figure = draw([f.key for f in shown],
                      [{"value": ratio(f, "value"), "measured": ratio(f, "measured")} for f in shown],
                      [f.kind for f in shown], title=f"{suite.name}: this run against the baseline")
    except SolverUnavailableError:  # no matplotlib: the drawer's install hint
        return None
    path = directory / f"{suite.name}.report.png"
    picture = io.BytesIO()
    figure.savefig(picture, format="png", dpi=100)
    write_file(path, picture.getvalue())
    return path
