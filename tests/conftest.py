"""Shared fixtures: the published workloads in ../shared/workloads, and the hypothesis profile.

Fixtures
--------
``shared_workloads``: path of ``../shared/workloads`` (skips the test when it is absent).

Parametrization (``pytest_generate_tests``): a test that takes

* ``expert_case`` runs once per throughput workload of ``reference.csv`` with a published
  ``expert`` value; it receives ``(workload path, expert split path, published value text)``;
* ``split_latency_case`` runs once per row of the README's ``splits/`` table; it receives
  ``(workload path, split path, published value text)``.

Without the shared folder those tests are collected once and skipped; when the folder is
there but no case is found, the test receives None once (and must fail). The published values
are read from the files at collection time, never copied into the tests.

Hypothesis: the ``exactplace`` profile (default) has no deadline (the machine is small and
shared) and 50 examples per test unless a test asks for more; ``HYPOTHESIS_PROFILE=ci`` makes
the run derandomized, ``HYPOTHESIS_PROFILE=thorough`` runs 2000 examples per test (explicit
``@settings(max_examples=...)`` still win, so use it for a long hunt rather than in CI).
"""

from __future__ import annotations

import csv
import os
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The tests test the installed package. `python -m pytest` puts the working directory first on sys.path, and from
# the checkout's root that is the source tree (no compiled extension, no exactplace.formulations): leave it out.
# The product's own subprocesses need nothing of the kind (they import what this process imported), and the tests'
# subprocesses run as a user's would (tests/processes.py).
CHECKOUT = Path(__file__).resolve().parents[1]
sys.path[:] = [entry for entry in sys.path if Path(entry or os.curdir).resolve() != CHECKOUT]

SHARED_WORKLOADS = (Path(__file__).parents[1] / ".." / "shared" / "workloads").resolve()

_COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("exactplace", max_examples=50, **_COMMON)
settings.register_profile("ci", max_examples=50, derandomize=True, **_COMMON)
settings.register_profile("thorough", max_examples=2000, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "exactplace"))


def shared_available() -> bool:
    """True when the published workloads are present next to the checkout."""
    return (SHARED_WORKLOADS / "reference.csv").is_file()


@pytest.fixture
def shared_workloads() -> Path:
    """Path of the read-only published workloads; skips the test when they are absent."""
    if not shared_available():
        pytest.skip(f"shared workloads not found at {SHARED_WORKLOADS}")
    return SHARED_WORKLOADS


def expert_cases() -> list[tuple[Path, Path, str]]:
    """(workload, expert split, published text) for every throughput row with an ``expert`` value.

    A training workload without its own expert file uses its inference expert split (its
    backward nodes follow their forward partner), as the workloads README says.
    """
    cases = []
    with open(SHARED_WORKLOADS / "reference.csv", newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row["objective"] != "throughput" or not row["expert"].strip():
                continue
            workload = SHARED_WORKLOADS / row["workload"]
            split = SHARED_WORKLOADS / "experts" / f"{workload.stem}_expert.json"
            if not split.is_file():
                split = SHARED_WORKLOADS / "experts" / f"{workload.stem.replace('_training', '_inference')}_expert.json"
            cases.append((workload, split, row["expert"].strip()))
    return cases


def split_latency_cases() -> list[tuple[Path, Path, str]]:
    """(latency workload, split, published text) for every row of the README's splits/ table."""
    readme = (SHARED_WORKLOADS / "README.md").read_text(encoding="utf-8")
    cases = []
    for name, value in re.findall(r"^\|\s*(latency_\w+?)\s*\|\s*([0-9.]+)\s*\|\s*$", readme, flags=re.M):
        workload = re.sub(r"^latency_|_(greedy|maxload_dp)$", "", name)
        workload_file = SHARED_WORKLOADS / "latency" / f"{workload}.json"
        cases.append((workload_file, SHARED_WORKLOADS / "splits" / f"{name}.json", value))
    return cases


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    for argname, cases in (("expert_case", expert_cases), ("split_latency_case", split_latency_cases)):
        if argname not in metafunc.fixturenames:
            continue
        if not shared_available():
            skip = pytest.mark.skip(reason=f"shared workloads not found at {SHARED_WORKLOADS}")
            metafunc.parametrize(argname, [pytest.param(None, marks=skip)], ids=["shared-absent"])
            continue
        found = cases()
        if not found:  # the test itself fails on None: published values must not vanish silently
            metafunc.parametrize(argname, [None], ids=["none-found"])
            continue
        metafunc.parametrize(
            argname, [pytest.param(case, marks=pytest.mark.shared) for case in found],
            ids=[case[0].stem if argname == "expert_case" else case[1].stem for case in found],
        )
