"""``exactplace regress``: passes against its own baseline, fails naming the case when a value gets worse."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from signals import stop_the_second_job

import exactplace as ep
from exactplace import regress
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


# -- everything is checked before the first job runs -----------------------------------------------------

CASE = "cases:\n  - workload: model.json\n    methods: [greedy]\n"
BOMB = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9))


def forbid_solving(monkeypatch) -> None:
    """Fail the test if a job is solved: a bad input must be found before any work."""
    def solve_job(job):
        raise AssertionError(f"{job['key']} was solved before the input was refused")

    monkeypatch.setattr(regress, "solve_job", solve_job)


@pytest.fixture
def no_run(monkeypatch):
    forbid_solving(monkeypatch)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("exactplace regress: error: "), err
    return err[0]


@pytest.mark.parametrize("text, message", [
    ("name: small\n" + CASE.replace("greedy", "gr\udcffeedy"), "is not UTF-8 text"),
    ("name: a\nname: b\n" + CASE, "the key 'name' is given twice at line 2"),
    (CASE + "    methods: [dp]\n", "the key 'methods' is given twice at line 4"),
    ("l0: &l0 [x, x, x, x, x, x, x, x, x]\n" + BOMB + CASE, "expands to more than 100,000 YAML nodes"),
    ("cases: &a\n  - workload: model.json\n    methods: [greedy]\n    options: {x: *a}\n", "holds it"),
    ("name: a/b\n" + CASE, "'name' must be a non-empty name without a path separator"),
    ("name: ..\n" + CASE, "'name' must be"),
    ("name: " + "n" * 300 + "\n" + CASE, "short enough for a file name"),
    ("", "must be a mapping with a 'cases' list"),
    ("- a\n- b\n", "must be a mapping with a 'cases' list"),
    ("1: x\nz: y\n" + CASE, "unknown field(s) ['1', 'z']"),
    ("tolerance: {value: .nan}\n" + CASE, "tolerance 'value' must be a finite number >= 0"),
    ("tolerance: {measured: .inf}\n" + CASE, "tolerance 'measured' must be a finite number >= 0"),
    ("replay: {repeats: -1}\n" + CASE, "replay 'repeats' must be an integer >= 1"),
    ("replay: {samples: 0}\n" + CASE, "replay 'samples' must be an integer >= 4"),
    ("replay: {devices: gpu}\n" + CASE, "replay 'devices' must be"),
    (CASE + "    colour: red\n", "cases[0]: unknown field(s) ['colour']"),
    (CASE + "    time_limit: true\n", "'time_limit' must be a positive number"),
    (CASE + "    time_limit: " + "9" * 400 + "\n", "'time_limit' must be a positive number"),
    (CASE + "    options: {no_such_option: 1}\n", "method 'greedy' takes no option 'no_such_option'"),
    (CASE + "    options: {1: 2}\n", "'options' must be a mapping of option names"),
    (CASE + "    options: [overlap]\n", "'options' must be a mapping of option names"),
    (CASE.replace("model.json", "[a, b]"), "'workload' must be a file name"),
    (CASE.replace("model.json", "empty.json"), "cases[0]: The workload is missing the required field"),
    (CASE.replace("model.json", "n" * 5000), "is neither a file nor a shipped workload"),
])
def test_a_bad_suite_is_one_line_naming_it_and_exit_2_before_any_run(tmp_path, capsys, no_run, text,
                                                                     message) -> None:
    shutil.copy(ep.workload_path("layer_bert24_inference"), tmp_path / "model.json")
    (tmp_path / "empty.json").write_text("{}", encoding="utf-8")
    path = tmp_path / "bad.yaml"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    assert main(["regress", str(path), "--update-baseline"]) == 2
    line = one_error_line(capsys)
    assert message in line and "bad.yaml" in line, line
    assert not path.with_suffix(".baseline.json").exists()


def test_a_suite_may_share_options_through_an_alias_and_read_a_pipedream_profile(tmp_path, monkeypatch) -> None:
    from exactplace.io import read_workload

    profile = tmp_path / "graph.txt"
    profile.write_text("node1 -- Input -- forward_compute_time=1.0, backward_compute_time=0.0, "
                       "activation_size=4.0, parameter_size=0.0\nnode2 -- Linear -- forward_compute_time=2.0, "
                       "backward_compute_time=0.0, activation_size=4.0, parameter_size=8.0\n\tnode1 -- node2\n",
                       encoding="utf-8")
    path = tmp_path / "ok.yaml"
    path.write_text("cases:\n  - workload: graph.txt\n    methods: [greedy]\n    options: &o {overlap: false}\n"
                    "  - workload: layer_bert24_inference\n    methods: [greedy]\n    options: *o\n", encoding="utf-8")
    suite = regress.load_suite(path)
    assert [job["options"] for job in suite.jobs] == [{"overlap": False}] * 2 and suite.files == (profile,)
    assert regress.load_suite(path).jobs[0]["workload"]["nodes"]  # the profile, as the solve will read it
    assert len(suite.jobs[0]["workload"]["nodes"]) == read_workload(profile).graph.n


BASELINE_CASES = [
    ([], "must be a JSON object with a 'results' object"),
    ({"suite": "small"}, "'results' must be an object"),
    ({"results": {"model/greedy/throughput": 5}}, "results['model/greedy/throughput'] must be an object"),
    ({"results": {"model/greedy/throughput": {"value": "x"}}}, "['value'] must be a finite number or null"),
    ({"results": {"model/greedy/throughput": {"value": True}}}, "['value'] must be a finite number or null"),
    ({"results": {"model/greedy/throughput": {"measured": [1]}}}, "['measured'] must be a finite number"),
    ({"results": {"model/greedy/throughput": {"status": 3}}}, "['status'] must be text or null"),
    ({"results": {"model/greedy/throughput": {"valeu": 3}}}, "has unknown field(s) ['valeu']"),
    ({"suite": "other", "results": {}}, "is the baseline of suite 'other', not of 'small'"),
    ({"results": {}, "comment": "x"}, "unknown field(s) ['comment']"),
]


@pytest.mark.parametrize("data, message", BASELINE_CASES)
def test_a_bad_baseline_is_one_line_naming_it_and_the_entry_before_any_run(suite, capsys, no_run, data,
                                                                           message) -> None:
    path = suite.parent / "b.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["regress", str(suite), "--baseline", str(path)]) == 2
    line = one_error_line(capsys)
    assert message in line and "b.json" in line, line
    assert not (suite.parent / "small.report.json").exists()


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_a_baseline_value_must_be_finite(suite, capsys, no_run, number) -> None:
    path = suite.parent / "b.json"
    path.write_text('{"results": {"model/dp/throughput": {"value": NUMBER}}}'.replace("NUMBER", number),
                    encoding="utf-8")
    assert main(["regress", str(suite), "--baseline", str(path)]) == 2
    assert "results['model/dp/throughput']['value'] must be a finite number" in one_error_line(capsys)


def deny_writing(monkeypatch, folder) -> None:
    """``os.access`` says ``folder`` is read-only (as it says to anyone but root for a chmod 555 folder)."""
    access = os.access

    def denied(path, mode, *args, **kwargs):
        return False if mode & os.W_OK and os.path.abspath(path) == os.path.abspath(folder) else access(
            path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", denied)


def test_every_output_is_checked_before_any_run(suite, capsys, monkeypatch) -> None:
    assert main(["regress", str(suite), "--update-baseline"]) == 0  # a baseline to compare with
    capsys.readouterr()
    folder = suite.parent
    baseline = suite.with_suffix(".baseline.json").read_text()
    (folder / "file").write_text("x")
    (folder / "reports" / "small.report.json").mkdir(parents=True)
    (folder / "readonly").mkdir()
    forbid_solving(monkeypatch)
    deny_writing(monkeypatch, folder / "readonly")
    cases = [
        (["--report-dir", str(folder / "file")], "file' is not a directory"),
        (["--report-dir", str(folder / "file" / "sub")], "is not a directory, so nothing can be made under it"),
        (["--report-dir", str(folder / "reports")], "small.report.json' is a directory"),
        (["--report-dir", str(folder / "readonly")], "is not writable"),
        (["--report-dir", str(folder / "readonly" / "new")], "is not writable"),
        (["--report-dir", ""], "--report-dir '' names no folder"),
        (["--baseline", ""], "--baseline '' names no file"),
        (["--baseline", "/"], "names a directory, not a file"),
        (["--update-baseline", "--baseline", "."], "names a directory, not a file"),
        (["--update-baseline", "--baseline", str(folder / "new") + "/"], "names a directory, not a file"),
        (["--update-baseline", "--baseline", str(folder / "reports")], "is a directory"),
        (["--update-baseline", "--baseline", str(folder / "readonly" / "b.json")], "is not writable"),
        (["--update-baseline", "--baseline", str(suite)], "small.yaml' is also an input"),
        (["--update-baseline", "--baseline", str(folder / "model.json")], "model.json' is also an input"),
        (["--update-baseline", "--baseline", str(folder / "file" / "b.json")], "file' is not a directory"),
        (["--update-baseline", "--baseline", str(folder / ("b" * 256))], "longer than 255 bytes"),
    ]
    for args, message in cases:
        assert main(["regress", str(suite), *args]) == 2, args
        line = one_error_line(capsys)
        assert message in line and ".tmp" not in line, (args, line)  # the user's path, never a temporary file
    assert suite.with_suffix(".baseline.json").read_text() == baseline
    assert not (folder / "small.report.json").exists() and not (folder / "readonly" / "new").exists()
    assert not (folder / "new").exists()


def test_a_report_is_written_where_the_suite_is_named_after_a_number(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: 2024\ncases:\n  - workload: layer_bert24_inference\n    methods: [greedy]\n")
    assert main(["regress", str(path), "--update-baseline", "--baseline", str(tmp_path / ("b" * 250))]) == 0
    assert main(["regress", str(path), "--update-baseline"]) == 0  # a long name leaves room for the temporary file
    assert main(["regress", str(path), "--report-dir", str(tmp_path / "a" / "b")]) == 0
    assert json.loads((tmp_path / "a" / "b" / "2024.report.json").read_text())["passed"]


# -- Ctrl-C and SIGTERM keep the jobs done ---------------------------------------------------------------

@pytest.mark.parametrize("how, status, line", [("Ctrl-C", 130, "exactplace regress: interrupted"),
                                               ("SIGTERM", 143, "exactplace regress: terminated")])
def test_a_stopped_suite_writes_the_report_of_the_jobs_done(suite, capsys, monkeypatch, how, status, line) -> None:
    assert main(["regress", str(suite), "--update-baseline"]) == 0
    capsys.readouterr()
    calls = stop_the_second_job(monkeypatch, regress, how)
    out_dir = suite.parent / "out"
    assert main(["regress", str(suite), "--report-dir", str(out_dir)]) == status
    assert capsys.readouterr().err.strip().splitlines() == [line]
    assert len(calls) == 2
    report = json.loads((out_dir / "small.report.json").read_text())
    assert report["interrupted"] and not report["passed"] and report["not_run"] == 2
    assert [r["status"] for r in report["results"]][1:] == ["not run", "not run"]
    assert report["results"][0]["key"] == calls[0] and report["results"][0]["value"] is not None
    kinds = [f["kind"] for f in report["findings"]]
    assert kinds == ["ok", "not run", "not run"]  # not run is no regression, nor missing
    assert "INTERRUPTED: 1 of 3 jobs run" in (out_dir / "small.report.md").read_text()


def test_a_stopped_update_keeps_the_baseline_and_writes_the_jobs_done_beside_it(suite, capsys, monkeypatch) -> None:
    assert main(["regress", str(suite), "--update-baseline"]) == 0
    baseline = suite.with_suffix(".baseline.json").read_text()
    calls = stop_the_second_job(monkeypatch, regress, "Ctrl-C")
    assert main(["regress", str(suite), "--update-baseline"]) == 130
    assert suite.with_suffix(".baseline.json").read_text() == baseline
    partial = json.loads((suite.parent / "small.baseline.partial.json").read_text())
    assert partial["partial"] and list(partial["results"]) == calls[:1]
    assert "kept as it was" in capsys.readouterr().out
