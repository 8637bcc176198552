"""Cluster options on the command line (--accelerators, --memory, --cpus, --bandwidth) and PipeDream input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exactplace.cli.main import main

# A chain: input (free) -> a -> b -> c; times in ms, activations in bytes.
LAYERS = [("Input0", 0.0, 0.0, 100.0, 0.0), ("Linear", 4.0, 6.0, 50.0, 10.0), ("ReLU", 1.0, 1.0, 50.0, 0.0),
          ("Linear", 3.0, 5.0, 20.0, 8.0)]


def _profile(tmp_path: Path) -> Path:
    lines = [f"node{i} -- {m} -- forward_compute_time={f}, backward_compute_time={b}, activation_size={a}, "
             f"parameter_size={p}" for i, (m, f, b, a, p) in enumerate(LAYERS)]
    lines += [f"\tnode{i} -- node{i + 1}" for i in range(len(LAYERS) - 1)]
    path = tmp_path / "graph.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _objective(capsys: pytest.CaptureFixture[str]) -> float:
    return float(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["objective"])


def test_one_accelerator_holds_the_whole_training_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    assert main(["solve", str(_profile(tmp_path)), "--accelerators", "1", "--out", str(plan)]) == 0
    assert json.loads(plan.read_text())["objective"] == pytest.approx(sum(f + b for _, f, b, _, _ in LAYERS))
    assert "1 accelerator" in capsys.readouterr().out


def test_bandwidth_prices_transfers_and_evaluate_agrees(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile, plan = _profile(tmp_path), tmp_path / "plan.json"
    assert main(["solve", str(profile), "--accelerators", "2", "--bandwidth", "10", "--out", str(plan)]) == 0
    priced = json.loads(plan.read_text())["objective"]
    capsys.readouterr()
    assert main(["evaluate", str(profile), str(plan), "--accelerators", "2", "--bandwidth", "10", "--json"]) == 0
    assert _objective(capsys) == pytest.approx(priced)
    assert main(["evaluate", str(profile), str(plan), "--accelerators", "2", "--json"]) == 0
    free = _objective(capsys)
    assert free <= priced
    assert main(["solve", str(profile), "--accelerators", "2", "--out", str(plan)]) == 0
    assert json.loads(plan.read_text())["objective"] <= free


def test_memory_too_small_has_no_placement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # node1 needs parameters + activation = 60 bytes (+ 20 on its backward node, same device)
    profile = _profile(tmp_path)
    assert main(["solve", str(profile), "--accelerators", "4", "--memory", "79"]) == 1
    assert "80 bytes" in capsys.readouterr().out
    assert main(["solve", str(profile), "--accelerators", "4", "--memory", "80"]) == 0


def test_overrides_a_json_workload(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "layer_bert24_inference", "--accelerators", "2", "--cpus", "0"]) == 0
    assert "2 accelerators, 0 CPUs" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("option", "value"),
    [("--accelerators", "x"), ("--accelerators", "-1"), ("--memory", "-1"), ("--memory", "lots"),
     ("--cpus", "1.5"), ("--bandwidth", "0"), ("--bandwidth", "-3"), ("--bandwidth", "nan")],
)
def test_bad_values_one_line(option: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["solve", "layer_bert24_inference", option, value])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and option in err


def test_bandwidth_refused_for_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "layer_bert24_inference", "--bandwidth", "5"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--bandwidth" in err


def test_memory_inf_is_unlimited(capsys: pytest.CaptureFixture[str]) -> None:
    # one accelerator and no CPU: with 1 byte nothing fits; with inf (as documented) everything does
    base = ["solve", "layer_bert24_inference", "--method", "greedy", "--accelerators", "1", "--cpus", "0"]
    assert main([*base, "--memory", "1"]) == 1
    capsys.readouterr()
    assert main([*base, "--memory", "inf", "--out", "-"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["cluster"]["memory"] == [None] and {p["device"] for p in plan["placement"]} == {"acc0"}


@pytest.mark.parametrize(("option", "value"), [("--memory", "nan"), ("--inter-machine-cost", "1e308"),
                                               ("--inter-machine-cost", "nan"), ("--inter-machine-cost", "inf")])
@pytest.mark.parametrize("method", ["greedy", "mip"])
def test_values_out_of_range_are_one_line_before_solving(option: str, value: str, method: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["solve", "layer_bert24_inference", "--method", method, "--machines", "2", option, value])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and option in err and "Warning" not in err


def test_the_largest_inter_machine_cost_solves(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", "layer_bert24_inference", "--method", "greedy", "--machines", "2",
                 "--inter-machine-cost", "1e6"]) == 0
    assert "transfers between hosts 1e+06x" in capsys.readouterr().out
