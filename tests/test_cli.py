"""The command line contract: output shape, plan JSON keys, one-line errors and exit codes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from processes import CHECKOUT, EXACTPLACE

from exactplace.cli.main import main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EXACTPLACE, *args], capture_output=True, text=True, timeout=120)


def test_solve_writes_plan_with_contract_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    assert main(["solve", "layer_bert24_inference", "--method", "greedy", "--out", str(plan)]) == 0
    data = json.loads(plan.read_text())
    for key in ("objective", "status", "method", "bound", "gap", "wall_seconds", "placement", "version"):
        assert key in data
    assert data["method"] == "greedy" and data["status"] == "feasible"
    assert len(data["placement"]) == 32
    assert "throughput" in capsys.readouterr().out


def test_evaluate_plan_matches_solve(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    main(["solve", "layer_bert24_inference", "--method", "greedy", "--out", str(plan)])
    capsys.readouterr()
    assert main(["evaluate", "layer_bert24_inference", str(plan), "--json"]) == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["objective"] == pytest.approx(json.loads(plan.read_text())["objective"], rel=1e-12)
    assert last["feasible"] is True


def test_evaluate_reference_split(shared_workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = shared_workloads / "throughput" / "layer_gnmt_inference.json"
    split = shared_workloads / "experts" / "layer_gnmt_inference_expert.json"
    assert main(["evaluate", str(workload), str(split), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["objective"] == pytest.approx(46.21, abs=0.005)


def test_info(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "layer_bert24_training"]) == 0
    out = capsys.readouterr().out
    assert "64 (32 forward, 32 backward)" in out and "ideals:" in out
    assert "method=auto: dp (exact; " in out and " ideals, about " in out


def test_info_names_the_method_that_certifies_a_wide_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Six parallel chains of 20: millions of ideals, past the DP; the bounded search's trial certifies it."""
    nodes = [{"id": v, "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": float(1 + (7 * v) % 13),
              "isBackwardNode": 0, "size": 0.0} for v in range(120)]
    edges = [{"sourceId": v - 1, "destId": v, "cost": 0.0} for v in range(120) if v % 20]
    path = tmp_path / "wide.json"
    path.write_text(json.dumps({"maxSizePerFPGA": 1e12, "maxFPGAs": 6, "maxCPUs": 0, "nodes": nodes, "edges": edges}))
    assert main(["info", str(path), "--time-limit", "30"]) == 0
    out = capsys.readouterr().out
    assert "method=auto: bb (optimal in a trial run of " in out
    assert "not dp: more than " in out and "memory budget" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"maxFPGAs": 1, "maxCPUs": 1, "nodes": [], "edges": []}', "'maxSizePerFPGA'"),
        ('{"maxSizePerFPGA": 1, "maxFPGAs": 1, "maxCPUs": 1, "nodes": [], "edges": []}', "empty"),
        (
            '{"maxSizePerFPGA": 1, "maxFPGAs": 1, "maxCPUs": 1, "edges": [{"sourceId": 1, "destId": 1, "cost": 0}],'
            ' "nodes": [{"id": 1, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0}]}',
            "self-loop",
        ),
    ],
)
def test_bad_workload_is_one_line_and_exit_2(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "w.json"
    path.write_text(content)
    result = run("solve", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    error_lines = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(error_lines) == 1 and message in error_lines[0]


def test_missing_file_and_bad_split(tmp_path: Path) -> None:
    result = run("solve", str(tmp_path / "absent.json"))
    assert result.returncode == 2 and "does not exist" in result.stderr and "Traceback" not in result.stderr
    split = tmp_path / "split.json"
    split.write_text('{"fpgas": [{"nodes": [999]}], "cpus": []}')
    result = run("evaluate", "layer_bert24_inference", str(split))
    assert result.returncode == 2 and "999" in result.stderr and "Traceback" not in result.stderr


def test_bad_time_limit_rejected_by_parser() -> None:
    result = run("solve", "layer_bert24_inference", "--time-limit", "-3")
    assert result.returncode == 2 and "positive number" in result.stderr


def test_methods_lists_greedy(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["methods"]) == 0
    assert "greedy" in capsys.readouterr().out


def test_methods_lists_objectives_guarantees_and_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    dp = out.split("\ndpl:")[0]
    assert dp.startswith("dp: ") and "objectives: throughput; exact over chain splits" in dp
    assert "guarantees: forward contiguous, chain order" in dp
    assert "option threads: an integer in [1, 1024]" in dp and "option memory_budget: a finite number >= 4096" in dp
    assert "greedy: " in out and "guarantees: memory, support and colocation only" in out


@pytest.mark.parametrize(("key", "flag"), [("rel_gap", "--rel-gap"), ("time_limit", "--time-limit"),
                                           ("objective", "--objective"), ("method", "--method")])
def test_an_option_that_has_a_flag_is_refused_naming_the_flag(key: str, flag: str,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """solve()'s own parameters come from their flags: ``--option rel_gap=0`` was a TypeError traceback."""
    assert main(["solve", "layer_bert24_inference", "--method", "dp", "--option", f"{key}=0"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{key}=0" in err and flag in err


#: Solves that start solver child processes (every model of op_bert3 is past the size that runs in-process).
CHILD_SOLVES = {
    "mip-any-split": ["--method", "mip", "--option", "contiguous=false"],
    "m-sct": ["--objective", "makespan", "--method", "m-sct"],
    "latency-mip": ["--objective", "latency", "--method", "mip"],
}


@pytest.fixture(scope="module")
def certified_elsewhere(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    """Each of CHILD_SOLVES run from a folder of its own: what the runs from other folders must reproduce."""
    folder = tmp_path_factory.mktemp("elsewhere")
    plans = {}
    for case, args in CHILD_SOLVES.items():
        result = subprocess.run([*EXACTPLACE, "solve", "op_bert3_inference", *args, "--out", "plan.json"],
                                capture_output=True, text=True, timeout=300, cwd=folder)
        assert result.returncode == 0, result.stderr
        plans[case] = json.loads((folder / "plan.json").read_text())
    return plans


@pytest.mark.parametrize("case", CHILD_SOLVES)
@pytest.mark.parametrize("folder", ["checkout", "decoy"])
def test_solves_with_solver_processes_answer_alike_from_the_checkout_and_beside_a_decoy(
        folder: str, case: str, tmp_path: Path, certified_elsewhere: dict[str, dict]) -> None:
    """From the checkout's root (its ``exactplace/`` is the source tree) and beside another folder named
    ``exactplace``, the solver processes import the installed package: the same certified result, no traceback."""
    if folder == "decoy":
        (tmp_path / "exactplace").mkdir()
        (tmp_path / "exactplace" / "__init__.py").write_text("raise ImportError('the decoy was imported')\n")
        cwd = tmp_path
    else:
        cwd = CHECKOUT
    plan_file = tmp_path / "plan.json"
    result = subprocess.run([*EXACTPLACE, "solve", "op_bert3_inference", *CHILD_SOLVES[case], "--out", str(plan_file)],
                            capture_output=True, text=True, timeout=300, cwd=cwd)
    assert result.returncode == 0 and "Traceback" not in result.stderr and "Error" not in result.stderr, result.stderr
    assert "solver failed" not in result.stdout
    plan, expected = json.loads(plan_file.read_text()), certified_elsewhere[case]
    assert "solver_failures" not in plan["info"]
    assert plan["bound"] is not None and expected["bound"] is not None
    assert (plan["status"], plan["space"]) == (expected["status"], expected["space"])
    assert (plan["objective"], plan["bound"]) == pytest.approx((expected["objective"], expected["bound"]))
