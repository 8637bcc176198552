"""The command line never loses or clobbers a file, never hangs on a small input, and
answers every bad input with one clear line (exit 2), Ctrl-C with 130, a closed pipe like Unix tools."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from processes import EXACTPLACE

from exactplace import Cluster, Graph, Node, Status, read_workload, solve, workload_path
from exactplace.cli import main as cli
from exactplace.core.errors import ParameterError
from exactplace.core.placement import Limit
from exactplace.io.paths import check_output, write_output

main = cli.main
BERT = "layer_bert24_inference"


def run(*args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*EXACTPLACE, *args], capture_output=True, text=True,
                          input=stdin, timeout=timeout)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def workload_text(**changes: object) -> str:
    data = json.loads(Path(workload_path(BERT)).read_text())
    data.update(changes)
    return json.dumps(data)


def one_error_line(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], lines


# -- files: nothing lost, nothing clobbered ------------------------------------------------------


def test_out_equal_to_the_workload_is_refused_before_solving(tmp_path: Path) -> None:
    w = tmp_path / "w.json"
    w.write_text(workload_text())
    before = digest(w)
    one_error_line(run("solve", str(w), "--out", str(w)), "also an input")
    assert digest(w) == before
    os.symlink(w, tmp_path / "link.json")  # the same file under another name
    one_error_line(run("solve", str(w), "--out", str(tmp_path / "link.json")), "also an input")
    assert digest(w) == before


def test_no_placement_never_replaces_an_existing_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = tmp_path / "w.json"
    w.write_text(workload_text(maxSizePerFPGA=1.0, maxCPUs=0))  # nothing fits anywhere: infeasible
    plan = tmp_path / "plan.json"
    plan.write_text("good plan\n")
    assert main(["solve", str(w), "--out", str(plan)]) == 1
    assert plan.read_text() == "good plan\n"
    assert "no plan written" in capsys.readouterr().err


@pytest.mark.parametrize("method", ["auto", "dp", "dpl", "greedy", "mip", "pipedream"])
def test_a_run_without_a_placement_says_why(tmp_path: Path, method: str, capsys: pytest.CaptureFixture[str]) -> None:
    w = tmp_path / "w.json"
    nodes = [{"id": i, "supportedOnFpga": i != 2, "cpuLatency": 1.0, "fpgaLatency": 1.0, "isBackwardNode": 0,
              "size": 3e9, "name": f"op{i}"} for i in range(3)]
    edges = [{"sourceId": 0, "destId": 1, "cost": 1.0}, {"sourceId": 1, "destId": 2, "cost": 1.0}]
    w.write_text(json.dumps({"maxSizePerFPGA": 5e9, "maxFPGAs": 2, "maxCPUs": 0, "nodes": nodes, "edges": edges}))
    assert main(["solve", str(w), "--method", method]) == 1
    out = capsys.readouterr().out
    assert "reason: Node 2 ('op2') cannot run on an accelerator and the cluster has no CPU: it needs a CPU core." in out
    nodes[2]["supportedOnFpga"] = 1  # three nodes of 3 GB, two accelerators of 5 GB: no packing exists
    w.write_text(json.dumps({"maxSizePerFPGA": 5e9, "maxFPGAs": 2, "maxCPUs": 0, "nodes": nodes, "edges": edges}))
    assert main(["solve", str(w), "--method", method]) == 1
    reason = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("reason: "))
    assert "the nodes need 9 GB in all, the largest colour class 3 GB; the accelerators hold 2 x 5 GB" in reason


def test_out_into_a_missing_directory_or_onto_a_directory_fails_before_solving(tmp_path: Path) -> None:
    for out, fragment in ((tmp_path / "missing" / "plan.json", "does not exist"), (tmp_path, "is a directory")):
        start = time.monotonic()
        result = run("solve", BERT, "--method", "greedy", "--out", str(out))
        one_error_line(result, fragment)
        assert "time per sample" not in result.stdout  # nothing was solved
        assert time.monotonic() - start < 60


def test_out_in_a_read_only_directory_fails_before_solving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The tests may run as root, who can write anywhere: the permission check itself is simulated.
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(ParameterError, match="not writable"):
        check_output(str(tmp_path / "plan.json"), [])


def test_empty_out_is_an_error() -> None:
    one_error_line(run("solve", BERT, "--out", ""), "names no file")


def test_atomic_write_leaves_the_old_file_when_writing_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text("old\n")

    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError):
        write_output(str(plan), "new\n" * 1000)
    assert plan.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]  # no temporary file left behind


def test_a_failed_write_is_one_line_without_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    def full_disk(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    assert main(["solve", BERT, "--method", "greedy", "--out", str(tmp_path / "plan.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "No space left on device" in err[0] and "None" not in err[0]


def test_closed_stdout_keeps_the_plan_and_exits_like_a_unix_tool(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    process = subprocess.Popen(
        [*EXACTPLACE, "solve", BERT, "--method", "greedy", "--out", str(plan)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    process.stdout.close()  # the reader went away (`| head -0`)
    _, err = process.communicate(timeout=120)
    assert process.returncode == cli.EXIT_BROKEN_PIPE
    assert err == ""
    assert json.loads(plan.read_text())["status"] == "feasible"


def test_dash_reads_stdin_and_out_dash_writes_the_plan_to_stdout() -> None:
    result = run("solve", "-", "--method", "greedy", "--out", "-", stdin=workload_text())
    assert result.returncode == 0, result.stderr
    plan = json.loads(result.stdout)  # stdout is the plan alone; the summary went to stderr
    assert plan["status"] == "feasible" and "time per sample" in result.stderr
    evaluated = run("evaluate", BERT, "-", "--json", stdin=result.stdout)
    assert evaluated.returncode == 0 and json.loads(evaluated.stdout.splitlines()[-1])["feasible"] is True


def test_ctrl_c_writes_the_best_plan_only_to_a_new_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """An interrupted run with a placement: exit 130, the plan goes to a new file, an existing one is kept."""
    import exactplace.methods

    def interrupted(*args: object, **kwargs: object) -> object:
        p = solve(*args, **{**kwargs, "method": "greedy"})
        return p.__class__(**{**p.__dict__, "limit": Limit.INTERRUPT})

    monkeypatch.setattr(exactplace.methods, "solve", interrupted)
    fresh = tmp_path / "fresh.json"
    assert main(["solve", BERT, "--out", str(fresh)]) == cli.EXIT_INTERRUPTED
    assert json.loads(fresh.read_text())["placement"]
    kept = tmp_path / "kept.json"
    kept.write_text("earlier plan\n")
    assert main(["solve", BERT, "--out", str(kept)]) == cli.EXIT_INTERRUPTED
    assert kept.read_text() == "earlier plan\n"
    assert "was kept" in capsys.readouterr().err


def test_sigint_exits_130_in_one_line(tmp_path: Path) -> None:
    """A real Ctrl-C during a long native count (the ideals of an antichain of 4,000 nodes)."""
    n = 4000
    data = {"maxSizePerFPGA": 1e12, "maxFPGAs": 8, "maxCPUs": 1, "edges": [],
            "nodes": [{"id": i, "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 1.0, "isBackwardNode": 0}
                      for i in range(n)]}  # no edges: 2**4000 ideals, the DP counts until stopped
    w = tmp_path / "antichain.json"
    w.write_text(json.dumps(data))
    process = subprocess.Popen([*EXACTPLACE, "info", str(w), "--ideal-limit", str(10**15)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    # 130 from main(); on a machine so loaded that the signal lands while Python is still importing,
    # the import-time hook reports it and Python exits by SIGINT (a shell shows 130 for both).
    assert process.returncode in (cli.EXIT_INTERRUPTED, -signal.SIGINT)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


# -- small inputs that took minutes or gigabytes -------------------------------------------------


@pytest.mark.parametrize("field", ["maxFPGAs", "maxCPUs"])
def test_huge_device_counts_are_clamped_and_reported(tmp_path: Path, field: str) -> None:
    w = tmp_path / "w.json"
    data = json.loads(workload_text())
    data[field] = 10**9
    w.write_text(json.dumps(data))
    start = time.monotonic()
    result = run("solve", str(w), "--out", str(tmp_path / "plan.json"))
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start < 60
    assert ("1000000000 accelerators" if field == "maxFPGAs" else "1000000000 CPUs") in result.stdout


# -- one clear line, always -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "fragment"),
    [
        ({"maxFPGAs": 2**70}, None),  # clamped: fine
        ({"maxCPUs": -1}, "'maxCPUs' must be an integer in [0,"),
        ({"nodes": "node list"}, "'nodes' must be a list"),
    ],
)
def test_counts_beyond_64_bits_and_wrong_types(tmp_path: Path, changes: dict, fragment: str | None) -> None:
    w = tmp_path / "w.json"
    w.write_text(workload_text(**changes))
    result = run("info", str(w))
    if fragment is None:
        assert result.returncode == 0, result.stderr
    else:
        one_error_line(result, fragment)


def test_node_ids_beyond_64_bits_deep_nesting_and_overflowing_sums(tmp_path: Path) -> None:
    data = json.loads(workload_text())
    data["nodes"][0]["id"] = 2**64
    w = tmp_path / "w.json"
    w.write_text(json.dumps(data))
    one_error_line(run("solve", str(w)), "'id' must be an integer in")
    w.write_text("[" * 100_000 + "]" * 100_000)
    one_error_line(run("solve", str(w)), "nests JSON too deeply")
    data = json.loads(workload_text())
    for node in data["nodes"]:
        node["fpgaLatency"] = 1e308
    w.write_text(json.dumps(data))
    one_error_line(run("solve", str(w), "--method", "greedy"), "'fpgaLatency and cost' values add up")


def test_messages_name_json_fields_and_the_edge(tmp_path: Path) -> None:
    data = json.loads(workload_text())
    data["nodes"][3]["cpuLatency"] = -2
    w = tmp_path / "w.json"
    w.write_text(json.dumps(data))
    one_error_line(run("info", str(w)), "'cpuLatency'")
    data = json.loads(workload_text())
    edge = data["edges"][4]
    edge["cost"] = -1
    w.write_text(json.dumps(data))
    one_error_line(run("info", str(w)), f"Edge at position 4 ({edge['sourceId']} -> {edge['destId']}): field 'cost'")


def test_ideal_limit_is_checked_before_any_output() -> None:
    result = run("info", BERT, "--ideal-limit", "-5")
    one_error_line(result, "--ideal-limit")
    assert result.stdout == ""


def test_usage_errors_are_one_line() -> None:
    one_error_line(run("solve", BERT, "--no-such-flag"), "unrecognized arguments")
    one_error_line(run("solve", BERT, "--rel-gap", "2"), "[0, 1)")
    one_error_line(run("solve", BERT, "--method", "nonsense"), "nonsense")


def test_version() -> None:
    from exactplace import __version__

    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"exactplace {__version__}"


def test_info_says_one_node_not_one_nodes(tmp_path: Path) -> None:
    w = tmp_path / "w.json"
    w.write_text(json.dumps({"maxSizePerFPGA": 10.0, "maxFPGAs": 1, "maxCPUs": 1, "edges": [], "nodes": [
        {"id": 1, "supportedOnFpga": 1, "cpuLatency": 1.0, "fpgaLatency": 1.0, "isBackwardNode": 0}]}))
    result = run("info", str(w))
    assert result.returncode == 0 and "largest has 1 node)" in result.stdout and "1 CPU" in result.stdout


# -- evaluate ---------------------------------------------------------------------------------------


def _plan(tmp_path: Path) -> Path:
    plan = tmp_path / "plan.json"
    assert main(["solve", BERT, "--method", "greedy", "--out", str(plan)]) == 0
    return plan


def _violation_block(out: str) -> list[str]:
    """The lines from the 'N violations' header to the JSON line (or the end)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if "violation" in line and line[0].isdigit())
    return [line for line in lines[start:] if not line.startswith("{")]


def test_evaluate_judges_a_split_by_the_rules_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = json.loads(Path(workload_path(BERT)).read_text())
    ids = [node["id"] for node in w["nodes"]]
    split = tmp_path / "split.json"
    # alternate two accelerators: a legal throughput split (any split), but neither part is contiguous
    split.write_text(json.dumps({"fpgas": [{"nodes": ids[0::2]}, {"nodes": ids[1::2]}], "cpus": []}))
    capsys.readouterr()
    assert main(["evaluate", BERT, str(split), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["feasible"] is True
    assert main(["evaluate", BERT, str(split), "--space", "contiguous", "--json"]) == 1
    out = capsys.readouterr().out
    block = _violation_block(out)
    assert json.loads(out.splitlines()[-1])["feasible"] is False
    assert len(block) <= 5 and any("contiguity: the forward part of acc0" in line for line in block)
    assert main(["evaluate", BERT, str(split), "--space", "contiguous", "--verbose"]) == 1
    everything = _violation_block(capsys.readouterr().out)
    assert len(everything) == 1 + int(everything[0].split()[0]) > len(block)


def test_evaluate_names_a_real_violation_in_a_few_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes = [{"id": i, "supportedOnFpga": i != 3, "cpuLatency": 2.0, "fpgaLatency": 1.0, "isBackwardNode": 0,
              "size": 2.0, "colorClass": 0 if i in (4, 5) else 10 + i} for i in range(8)]
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps({"maxSizePerFPGA": 5.0, "maxFPGAs": 2, "maxCPUs": 1, "nodes": nodes,
                                    "edges": [{"sourceId": i, "destId": i + 1, "cost": 0.5} for i in range(7)]}))
    cases = {  # acc0, acc1, cpu0 -> the violation evaluate must name
        "memory: acc0 holds 6 bytes": ([0, 1, 2], [], [3, 4, 5, 6, 7]),
        "unsupported: node 3 cannot run": ([3], [], [0, 1, 2, 4, 5, 6, 7]),
        "colocation: node 5 is on cpu0 but node 4": ([4], [], [0, 1, 2, 3, 5, 6, 7]),
    }
    for expected, (acc0, acc1, cpu) in cases.items():
        split = tmp_path / "split.json"
        split.write_text(json.dumps({"fpgas": [{"nodes": acc0}, {"nodes": acc1}], "cpus": [{"nodes": cpu}]}))
        capsys.readouterr()
        assert main(["evaluate", str(workload), str(split)]) == 1
        block = _violation_block(capsys.readouterr().out)
        assert len(block) <= 5 and any(line.strip().startswith(expected) for line in block), block
    # a latency plan that says q=1 but runs two subgraphs on one accelerator
    split.write_text(json.dumps({"fpgas": [{"nodes": [0, 2]}, {"nodes": []}], "cpus": [{"nodes": [1, 3, 4, 5, 6, 7]}]}))
    assert main(["evaluate", str(workload), str(split), "--objective", "latency"]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(workload), str(split), "--objective", "latency", "--q", "1"]) == 1
    block = _violation_block(capsys.readouterr().out)
    assert len(block) <= 5 and any("subgraphs: acc0 runs 2 subgraphs, more than q=1" in line for line in block)


def test_evaluate_refuses_duplicates_workloads_and_overlap_with_latency(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    data = json.loads(plan.read_text())
    data["placement"].append({**data["placement"][0], "device": "cpu0"})  # node listed twice
    twice = tmp_path / "twice.json"
    twice.write_text(json.dumps(data))
    one_error_line(run("evaluate", BERT, str(twice)), "twice")
    one_error_line(run("evaluate", BERT, str(workload_path(BERT))), "is a workload")
    one_error_line(run("evaluate", BERT, str(plan), "--objective", "latency", "--overlap"), "--overlap")


# -- the Python API ---------------------------------------------------------------------------------


def test_api_errors_are_exactplace_errors() -> None:
    import numpy as np

    import exactplace
    from exactplace import ExactplaceError, read_workload

    for bad in (123, None):  # 123 must not be opened as a file descriptor
        with pytest.raises(ExactplaceError, match="'path'"):
            read_workload(bad)
    with pytest.raises(ExactplaceError, match="'nodes'"):
        Graph(None, [])
    with pytest.raises(ExactplaceError, match="64 bits"):
        Graph([Node(2**63, 1.0, 1.0)], [])
    with pytest.raises(ExactplaceError, match="add up"):
        Graph([Node(1, 1e308, 1.0), Node(2, 1e308, 1.0)], [])
    w = read_workload(workload_path(BERT))
    assert exactplace.count_ideals(w) == exactplace.count_ideals(w.graph, cluster=w.cluster) == 30
    with pytest.raises(ExactplaceError, match="'threads'"):
        solve(w, method="dp", threads=2**40)
    for budget in (float("inf"), 1):
        with pytest.raises(ExactplaceError, match=r"'memory_budget'.*4096"):
            solve(w, method="dp", memory_budget=budget)
    assert solve(w, method="dp", time_limit=np.int64(5)).status is Status.OPTIMAL
    with pytest.raises(ExactplaceError, match="4 KiB"):
        solve(w, method="dp", memory_budget=4096)


def test_time_limit_with_nothing_to_show_falls_back_to_greedy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A method stopped by its time limit before it has a placement: greedy's, status feasible, limit time."""
    from exactplace.core.problem import MethodResult, Problem
    from exactplace.methods import registry
    from exactplace.methods.base import Method
    class NothingYet(Method):
        name = "nothing-yet-test-method"
        objectives = ("throughput",)
        description = "stops at its time limit with no placement"

        def run(self, problem: Problem) -> MethodResult:
            return MethodResult(None, Status.NO_SOLUTION, limit=Limit.TIME, solver="test")

    registry.registered_methods()
    monkeypatch.setitem(registry._REGISTRY, NothingYet.name, NothingYet)
    w = read_workload(workload_path("layer_bert24_inference"))
    p = solve(w, method=NothingYet.name, time_limit=0.2)
    assert p.status is Status.FEASIBLE and p.limit is Limit.TIME and p.info["returned"].startswith("greedy")
    assert p.device is not None and p.objective is not None


def test_huge_clusters_from_python_are_sized_by_the_graph() -> None:
    graph = Graph([Node(i, 1.0, 1.0) for i in range(3)], [(0, 1), (1, 2)])
    p = solve(graph, Cluster(10**5, memory=10.0, cpus=10**5), method="auto")
    assert p.has_solution


def test_readme_synopsis_lists_every_flag() -> None:
    """The command-line synopsis (docs/cli.md, linked from the README) names every flag of every command (first
    spelling of each)."""
    import argparse
    import re

    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    synopsis = page.split("## Synopsis", 1)[1].split("```")[1]
    parser = cli.build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    entries: dict[str, str] = {}
    for chunk in synopsis.strip().split("\nexactplace"):
        words = chunk.replace("exactplace", "", 1).split() if chunk.startswith("exactplace") else chunk.split()
        name = words[0] if words and not words[0].startswith("[") else ""
        entries[name] = chunk
    for name, sub in [("", parser), *commands.choices.items()]:
        flags = {a.option_strings[0] for a in sub._actions if a.option_strings and a.dest != "help"}
        assert flags <= set(re.findall(r"--[a-z-]+", entries[name])), (name, flags)


def test_stated_device_counts_are_reported_by_solve(tmp_path: Path) -> None:
    from exactplace import read_workload

    w = tmp_path / "w.json"
    w.write_text(workload_text(maxFPGAs=10**9))
    workload = read_workload(w)
    assert workload.cluster.accelerators == workload.graph.n and workload.accelerators == 10**9
    assert solve(workload, method="greedy").info["stated_devices"] == {"maxFPGAs": 10**9}


def test_ctrl_c_while_importing_is_one_line_and_importing_leaves_the_hook_alone(tmp_path: Path) -> None:
    code = "import sys; import exactplace; assert sys.excepthook is sys.__excepthook__; print('ok')"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path).stdout.strip() == "ok"
    # An interrupt that escapes once the command line is loading (as during its imports):
    result = subprocess.run([sys.executable, "-c", "import exactplace.cli\nraise KeyboardInterrupt"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode in (-signal.SIGINT, 128 + signal.SIGINT)
    assert result.stderr.strip() == "exactplace: interrupted"


def test_memory_error_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import exactplace.methods

    def exhausted(*args: object, **kwargs: object) -> object:
        raise MemoryError

    monkeypatch.setattr(exactplace.methods, "solve", exhausted)
    assert main(["solve", BERT]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out of memory" in err[0]


def test_newcomer_help_readme_prerequisites_and_gap() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set up and run", 1)[1].split("## ", 1)[0]
    assert "python3 -m venv" in setup and "Python 3.10" in setup and "C++17" in setup
    result = run("solve", "--help")
    assert result.returncode == 0 and "ignore it" in " ".join(result.stdout.split())  # --rel-gap says who uses it


# -- output paths are checked before any work, and errors name the user's path ----------------------


def _no_solving(monkeypatch: pytest.MonkeyPatch) -> None:
    import exactplace.methods

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("solve ran although the output path was bad")

    monkeypatch.setattr(exactplace.methods, "solve", refuse)


@pytest.mark.parametrize(("flag", "name", "fragment"), [
    ("--out", "missing/", "names a directory, not a file"),
    ("--out", "notes.txt/plan.json", "notes.txt' is a file, not a directory"),
    ("--out", "notes.txt/deeper/plan.json", "notes.txt' is a file, not a directory"),
    ("--plot", "picture.png/", "names a directory, not a file"),
    ("--out", "a" * 300 + ".json", "longer than the file system allows"),
])
def test_a_bad_output_path_is_refused_before_solving(flag: str, name: str, fragment: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("keep me\n")
    _no_solving(monkeypatch)
    target = f"{tmp_path}{os.sep}{name}"  # not a Path: it would drop the trailing slash
    assert main(["solve", BERT, "--method", "greedy", flag, target]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0] and f"{flag} {target!r}" in err[0] and ".tmp" not in err[0]
    assert (tmp_path / "notes.txt").read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_failed_write_names_the_users_file_not_the_temporary_one(tmp_path: Path) -> None:
    target = str(tmp_path / "missing" / "plan.json")
    with pytest.raises(OSError) as info:
        write_output(target, "{}\n")
    assert info.value.filename == target and ".tmp" not in str(info.value)


# -- unknown workload fields on the command line -------------------------------------------------------


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"speed": [1, 1, 2, 2, 1, 1]}, "unknown field 'speed'"),
    ({"machines": 2, "interMachinecost": 4.0}, "unknown field 'interMachinecost' (did you mean 'interMachineCost'?)"),
])
def test_an_unknown_workload_field_is_one_line(changes: dict, fragment: str, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    w = tmp_path / "w.json"
    w.write_text(workload_text(**changes))
    assert main(["solve", str(w), "--method", "greedy"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0]


@pytest.mark.parametrize(("signum", "status", "word"), [(signal.SIGINT, 130, "interrupted"),
                                                        (signal.SIGTERM, 143, "terminated")])
def test_a_stopped_command_run_as_the_process_leaves_without_the_teardown(tmp_path: Path, signum: int, status: int,
                                                                           word: str) -> None:
    """As the process (the console script, ``python -m exactplace``), a command stopped by Ctrl-C or SIGTERM exits
    from where it was stopped: the interpreter's teardown (at-exit work, freeing what the stopped work held: seconds
    for a replay of a million samples) is skipped. Called by a program, main returns, and that program goes on."""
    code = textwrap.dedent(f"""
        import atexit, os, signal, sys
        from exactplace.cli import main as cli
        atexit.register(lambda: print("teardown ran", file=sys.stderr))
        def stopped(args):
            os.kill(os.getpid(), {int(signum)})
            signal.pause()
        cli._command_methods = stopped
        sys.argv = ["exactplace", "methods"]
        cli.run()
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert result.returncode == status, result.stderr
    assert result.stderr.strip() == f"exactplace methods: {word}"


def test_a_ctrl_c_in_the_teardown_after_the_work_exits_130(tmp_path: Path) -> None:
    """The command done and its output out, a Ctrl-C while the interpreter tears down (here: from an at-exit
    function) ends the process with 130, not by SIGINT (-2, from a KeyboardInterrupt raised in the teardown)."""
    code = textwrap.dedent("""
        import atexit, os, signal, sys
        from exactplace.cli import main as cli
        atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), signal.pause()))
        sys.argv = ["exactplace", "methods"]
        cli.run()
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert result.returncode == 130, result.stderr
    assert "dp" in result.stdout and result.stderr == ""
