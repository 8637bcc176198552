"""compare() and `exactplace compare`: one row per method, every objective recomputed by the evaluators."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from exactplace import Cluster, ParameterError, Workload, compare, evaluate, read_workload, solve, workload_path
from exactplace.cli.main import main

BERT = "layer_bert24_inference"


def test_rows_are_the_evaluators_values() -> None:
    w = read_workload(workload_path(BERT))
    table = compare(w, methods=["dp", "greedy", "m-etf", "local-search"], splits={"all-cpu": np.full(32, 6)})
    assert table["method"].tolist() == ["dp", "greedy", "m-etf", "local-search", "all-cpu"]
    for name in ("dp", "greedy", "m-etf"):
        row = table[table["method"] == name].iloc[0]
        p = solve(w, objective=row["optimized"], method=name)
        assert row["throughput"] == evaluate(w.graph, w.cluster, p.device)
        assert row["makespan"] == evaluate(w.graph, w.cluster, p.device, "makespan", order=p.info.get("order"))
    assert table.attrs["bound"] == {"value": table.loc[0, "throughput"], "method": "dp", "space": "chain"}
    assert table.loc[0, "gap"] == 0.0 and table.loc[1, "gap"] > 0
    cpu = table.iloc[-1]
    assert cpu["status"] == "given" and cpu["throughput"] == pytest.approx(float(w.graph.cpu_time.sum()))


def test_failures_become_rows_and_bad_arguments_raise() -> None:
    w = read_workload(workload_path(BERT))
    odd = Workload(w.graph, Cluster(6, memory=[17e9] * 5 + [1e9], cpus=1), "heterogeneous")
    table = compare(odd, methods=["dpl", "greedy"], objectives=("throughput",))  # dpl's chain DP: one memory size
    assert table.loc[0, "status"] == "error" and "homogeneous" in table.loc[0, "note"]
    assert math.isnan(table.loc[0, "throughput"]) and table.loc[1, "status"] == "feasible"
    with pytest.raises(ParameterError, match="'methods'"):
        compare(w, methods=["nope"])
    with pytest.raises(ParameterError, match="'objectives'"):
        compare(w, objectives=("speed",))


def test_cli_json_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", BERT, "--methods", "dp,fastt", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [r["method"] for r in rows] == ["dp", "fastt"]
    assert set(rows[0]) == {"method", "status", "throughput", "latency", "makespan", "gap", "seconds"}


def test_cli_split_rows_and_errors(shared_workloads: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expert = shared_workloads / "experts" / f"{BERT}_expert.json"
    assert main(["compare", BERT, "--methods", "greedy", "--split", f"expert={expert}", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rows[-1]["method"] == "expert" and rows[-1]["seconds"] is None
    assert main(["compare", BERT, "--split", "no-equals-sign"]) == 2
    assert "NAME=FILE" in capsys.readouterr().err


def test_cli_evaluate_makespan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    main(["solve", BERT, "--method", "greedy", "--out", str(plan)])
    capsys.readouterr()
    assert main(["evaluate", BERT, str(plan), "--objective", "makespan", "--json"]) == 0
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    w = read_workload(workload_path(BERT))
    device = solve(w, method="greedy").device
    assert last["objective_name"] == "makespan" and last["objective"] == evaluate(w.graph, w.cluster, device,
                                                                                  "makespan")


def test_a_string_of_methods_is_one_name_or_a_comma_list() -> None:
    w = read_workload(workload_path(BERT))
    one = compare(w, methods="dp", objectives="throughput")
    assert one["method"].tolist() == ["dp"] and one.columns[2] == "throughput"
    two = compare(w, methods="dp, greedy", objectives=("throughput",))
    listed = compare(w, methods=["dp", "greedy"], objectives=("throughput",))
    assert two["method"].tolist() == ["dp", "greedy"]
    assert two["throughput"].tolist() == listed["throughput"].tolist()


@pytest.mark.parametrize(("options", "parameter"), [
    ({"time_limit": -1}, "time_limit"), ({"time_limit": 0}, "time_limit"), ({"time_limit": math.nan}, "time_limit"),
    ({"time_limit": 10**400}, "time_limit"), ({"methods": [["dp"]]}, "methods"), ({"methods": 5}, "methods"),
    ({"objectives": "speed"}, "objectives"), ({"splits": ["a"]}, "splits"), ({"splits": {"short": [0, 1]}}, "splits"),
])
def test_bad_arguments_are_refused_before_any_method_runs(options: dict, parameter: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import exactplace.methods.compare as module

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a method ran although an argument was bad")

    monkeypatch.setattr(module, "solve", refuse)
    w = read_workload(workload_path(BERT))
    with pytest.raises(ParameterError, match=f"The '{parameter}' parameter of compare"):
        compare(w, **{"methods": ["greedy"], **options})
