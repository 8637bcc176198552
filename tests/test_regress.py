"""``exactplace regress``: passes against its own baseline, fails naming the case when a value gets worse."""

from __future__ import annotations

import json
import os
import shutil

import pytest

import exactplace as ep
from exactplace.cli.main import main

pytest.importorskip("yaml")

SUITE = """\
name: small
cases:
  - workload: model.json
    methods: [dp, greedy]
    time_limit: 30
  - workload: model.json
    methods: [greedy]
    objectives: [latency]
"""


@pytest.fixture
def suite(tmp_path):
    shutil.copy(ep.workload_path("layer_bert24_inference"), tmp_path / "model.json")
    (tmp_path / "small.yaml").write_text(SUITE, encoding="utf-8")
    return tmp_path / "small.yaml"


def test_suite_passes_its_own_baseline_and_fails_when_a_value_gets_worse(suite, capsys) -> None:
    assert main(["regress", str(suite), "--update-baseline"]) == 0
    baseline = json.loads(suite.with_suffix(".baseline.json").read_text())
    assert set(baseline["results"]) == {"model/dp/throughput", "model/greedy/throughput", "model/greedy/latency"}
    assert main(["regress", str(suite)]) == 0
    report = json.loads((suite.parent / "small.report.json").read_text())
    assert report["passed"] and report["regressions"] == 0
    assert "PASSED" in (suite.parent / "small.report.md").read_text()
    capsys.readouterr()

    # The same suite on a cluster with half the accelerators: the methods' values get worse.
    data = json.loads((suite.parent / "model.json").read_text())
    data["maxFPGAs"] = 3
    (suite.parent / "model.json").write_text(json.dumps(data))
    assert main(["regress", str(suite), "--report-dir", str(suite.parent / "out")]) == 1
    out = capsys.readouterr().out
    assert "regression: model/dp/throughput: value" in out and "is worse than the baseline" in out
    report = json.loads((suite.parent / "out" / "small.report.json").read_text())
    kinds = {f["key"]: f["kind"] for f in report["findings"]}
    assert kinds["model/dp/throughput"] == "regression" and not report["passed"]
    markdown = (suite.parent / "out" / "small.report.md").read_text()
    assert "FAILED" in markdown
    # The report embeds its picture: each case's value over the baseline's, the regressions in red.
    pytest.importorskip("matplotlib")
    assert "![values against the baseline](small.report.png)" in markdown
    picture = suite.parent / "out" / "small.report.png"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 5_000


def test_bad_suites_are_input_errors(tmp_path, capsys) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("cases:\n  - workload: nowhere.json\n    methods: [dp]\n")
    assert main(["regress", str(path), "--update-baseline"]) == 2
    assert "workload 'nowhere.json' is neither a file nor a shipped workload" in capsys.readouterr().err
    path.write_text("cases:\n  - workload: layer_bert24_inference\n    methods: [dp]\n    objectives: [latency]\n")
    assert main(["regress", str(path)]) == 2
    assert "method 'dp' handles ['throughput'], not 'latency'" in capsys.readouterr().err
    path.write_text("cases: []\n")
    assert main(["regress", str(path)]) == 2
    path.write_text("cases:\n  - workload: layer_bert24_inference\n    methods: [greedy]\n")
    assert main(["regress", str(path)]) == 2
    assert "create it with --update-baseline" in capsys.readouterr().err


def test_suite_with_replay_records_measured_times(tmp_path) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "r.yaml"
    path.write_text("replay: {devices: cpu, samples: 6, repeats: 1}\n"
                    "cases:\n  - workload: layer_bert24_inference\n    methods: [greedy]\n")
    assert main(["regress", str(path), "--update-baseline"]) == 0
    record = json.loads(path.with_suffix(".baseline.json").read_text())["results"][
        "layer_bert24_inference/greedy/throughput"]
    assert record["measured"] > 0 and record["predicted"] == pytest.approx(record["value"])


def test_ray_fan_out_gathers_one_report(suite) -> None:
    pytest.importorskip("ray")
    assert main(["regress", str(suite), "--update-baseline"]) == 0
    assert main(["regress", str(suite), "--ray", "local"]) == 0
    report = json.loads((suite.parent / "small.report.json").read_text())
    workers = {r["worker"].rsplit(":", 1)[1] for r in report["results"]}
    assert str(os.getpid()) not in workers  # the jobs ran in Ray's worker processes
