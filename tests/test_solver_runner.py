"""The solver runner (exactplace/solvers/isolated.py): a solve in a child process ends on
time and on Ctrl-C whatever the solver does, keeps the last solution it streamed, leaves no
process behind, and answers what the same solve in this process answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from exactplace.formulations.model import Kind, Model
from processes import CHECKOUT
from stubborn import StubbornSolver
from timing import on_time

from exactplace import read_workload, solve, workload_path
from exactplace.core.errors import ExactplaceError
from exactplace.core.placement import Limit, Status
from exactplace.solvers import Request, get_solver, isolated, solve_model
from exactplace.solvers.isolated import GRACE, child_command, isolate, solve_isolated

TESTS = Path(__file__).resolve().parent


def knapsack() -> Model:
    m = Model("knapsack")
    x = m.add_vars(6, ub=1, kind=Kind.INTEGER, name="x")
    m.add_rows("capacity", 1, ub=[10.0], rows=np.zeros(6, dtype=int), cols=x, vals=[3, 4, 5, 6, 2, 7])
    m.minimize(x, [-4.0, -5.0, -6.0, -8.0, -1.0, -9.5])
    return m


def installed() -> list[str]:
    return [name for name in ("highs", "cpsat", "scip", "cbc") if get_solver(name).available()]


@pytest.mark.parametrize("solver", installed())
def test_a_solve_in_a_child_process_answers_what_it_answers_here(solver: str) -> None:
    here = solve_model(knapsack(), solver, Request(isolate=False))
    there = solve_model(knapsack(), solver, Request(isolate=True))
    assert here.status is there.status is Status.OPTIMAL
    assert here.objective == pytest.approx(there.objective) == pytest.approx(-13.5)
    assert there.values is not None and knapsack().violation(there.values) <= 1e-9
    assert there.trace and there.trace[-1].incumbent == pytest.approx(-13.5)


def test_tiny_models_stay_in_this_process_and_real_ones_go_to_a_child() -> None:
    assert not isolate(knapsack(), Request())
    assert isolate(knapsack(), Request(isolate=True))
    from exactplace.formulations.throughput import noncontiguous_ip

    from exactplace import read_workload, workload_path

    w = read_workload(workload_path("layer_bert24_inference"))  # the smallest shared workload's model
    assert isolate(noncontiguous_ip(w.graph, w.cluster).model, Request())


def test_a_solver_that_ignores_the_deadline_is_stopped_and_its_last_solution_kept() -> None:
    start = time.monotonic()
    out = solve_isolated(StubbornSolver, knapsack(), Request(deadline=start + 1.0))
    assert on_time(time.monotonic() - start, 1.0, extra=GRACE)
    assert out.status is Status.FEASIBLE and out.limit is Limit.TIME
    assert out.values is not None and out.values.tolist() == [0.0] * 6
    assert out.objective == 0.0 and out.bound == -1.0  # what it streamed before it stopped listening
    assert "did not stop" in out.raw_status


def test_a_failing_solver_is_an_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUBBORN_FAIL", "1")
    with pytest.raises(ExactplaceError, match="'stubborn' failed in its process: RuntimeError: the stubborn solver"):
        solve_isolated(StubbornSolver, knapsack(), Request())


def test_a_solver_process_that_crashes_returns_its_last_solution_without_a_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A child killed by its solver (SIGABRT) is no error of the solve: the last solution it streamed comes back,
    feasible, with no bound (what it proved before the crash is not trusted) and the crash in the raw status."""
    monkeypatch.setenv("STUBBORN_ABORT", "1")
    out = solve_isolated(StubbornSolver, knapsack(), Request())
    assert out.status is Status.FEASIBLE and out.limit is None and out.bound is None
    assert out.values is not None and out.objective == pytest.approx(knapsack().objective_value(out.values))
    assert "crashed" in out.raw_status and f"exit status {-signal.SIGABRT}" in out.raw_status


def test_a_solvers_own_output_reaches_stderr_only_with_the_log(monkeypatch: pytest.MonkeyPatch,
                                                              capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STUBBORN_CHATTER", "solver chatter on stdout")
    monkeypatch.setenv("STUBBORN_SECONDS", "0")
    out = solve_isolated(StubbornSolver, knapsack(), Request())
    assert out.values is not None  # the message stream was not disturbed
    quiet = capfd.readouterr()
    solve_isolated(StubbornSolver, knapsack(), Request(log=lambda line: None))
    logged = capfd.readouterr()
    assert "solver chatter" not in quiet.out + quiet.err
    assert "solver chatter" in logged.err and "solver chatter" not in logged.out


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(TESTS)!r})
        from stubborn import StubbornSolver
        from test_solver_runner import knapsack
        from exactplace.solvers import Request
        from exactplace.solvers.isolated import solve_isolated
        {body}
    """))
    return script


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
    return state not in ("Z", "X")  # a zombie has ended


def _wait_for(path: Path, seconds: float = 30.0) -> int:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} was never written")


def test_ctrl_c_to_the_process_group_stops_the_solve(tmp_path: Path) -> None:
    """The terminal's way: SIGINT to the whole foreground process group (the child is in a session of its own)."""
    pid_file = tmp_path / "child.pid"
    script = _script(tmp_path, """
        out = solve_isolated(StubbornSolver, knapsack(), Request())
        print(out.status.value, out.limit.value, out.values.tolist())
    """)
    run = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True, env={**os.environ, "STUBBORN_PID": str(pid_file)})
    child = _wait_for(pid_file)
    sent = time.monotonic()
    os.killpg(run.pid, signal.SIGINT)
    out, err = run.communicate(timeout=30)
    assert on_time(time.monotonic() - sent, 0.0), err  # how soon, unloaded: benchmarks/bench_interrupt.py
    assert out.split() == ["feasible", "interrupt", "[0.0,", "0.0,", "0.0,", "0.0,", "0.0,", "0.0]"], err
    assert not _alive(child)


def test_the_child_ends_when_its_parent_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    script = _script(tmp_path, "solve_isolated(StubbornSolver, knapsack(), Request())")
    run = subprocess.Popen([sys.executable, str(script)], env={**os.environ, "STUBBORN_PID": str(pid_file)},
                           start_new_session=True)
    child = _wait_for(pid_file)
    os.kill(run.pid, signal.SIGKILL)  # no chance to clean up: the child must notice on its own
    run.wait()
    end = time.monotonic() + 5
    while _alive(child) and time.monotonic() < end:
        time.sleep(0.05)
    assert not _alive(child)


def test_a_child_whose_parent_sends_no_job_ends_quietly() -> None:
    """Ctrl-C while the parent starts the child closes the job's pipe before the job is in it (a clean-clone
    CI run met this): the child exits without a traceback on the terminal."""
    ended = subprocess.run(child_command(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert ended.returncode == 0 and ended.stderr == "", ended.stderr


@pytest.mark.parametrize("folder", ["checkout", "decoy"])
def test_the_child_imports_this_processs_package_from_any_folder(
        folder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """``python -c`` puts the working directory first on ``sys.path``: from the checkout's root (the source tree,
    without its compiled extension once installed) or beside any folder named ``exactplace``, the child must still
    import the package this process runs, and say nothing on the terminal."""
    if folder == "decoy":
        (tmp_path / "exactplace").mkdir()
        (tmp_path / "exactplace" / "__init__.py").write_text("raise ImportError('the decoy was imported')\n")
        monkeypatch.chdir(tmp_path)
    else:
        monkeypatch.chdir(CHECKOUT)
    out = solve_model(knapsack(), "highs", Request(isolate=True))
    assert out.failure is None and out.status is Status.OPTIMAL and out.objective == pytest.approx(-13.5)
    assert capfd.readouterr().err == ""


def test_a_child_that_dies_is_a_failure_naming_the_solver_and_how(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child that ends without a result (here: before it starts the solver, as when its imports fail) is a named
    failure, with the last line it wrote to stderr, and no bound: never an ordinary solve that proves nothing."""
    said = "ModuleNotFoundError: No module named 'exactplace.formulations'"
    monkeypatch.setattr(isolated, "child_command", lambda: [sys.executable, "-c", f"import sys; sys.exit({said!r})"])
    out = solve_isolated(get_solver("highs"), knapsack(), Request())
    assert out.status is Status.NO_SOLUTION and out.bound is None and out.values is None
    assert out.failure is not None and out.failure.startswith("highs crashed") and "exit status 1" in out.failure
    assert out.failure.endswith(said)


def test_a_solve_whose_solver_dies_says_so_and_what_it_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``solve``: the placement is the method's start, marked as such; the failure is in ``info`` and in
    the summary, whose gap line does not claim that the method proves no bound."""
    monkeypatch.setattr(isolated, "child_command", lambda: [sys.executable, "-c", "import os; os.abort()"])
    workload = read_workload(workload_path("layer_bert24_inference"))
    placement = solve(workload, method="mip", contiguous=False, solver="highs", time_limit=30)
    assert placement.has_solution and placement.status is Status.FEASIBLE  # (a bound proven beside may stand)
    failures = placement.info["solver_failures"]
    assert failures and all(f"exit status {-signal.SIGABRT}, SIGABRT" in failure for failure in failures)
    summary = placement.summary()
    assert "solver failed: highs crashed" in summary and "proves no bound" not in summary
    assert f"placement returned: {placement.info['returned']}" in summary


def test_a_solve_whose_solvers_all_answer_reports_no_failure() -> None:
    placement = solve(read_workload(workload_path("op_bert3_inference")), method="mip", contiguous=False,
                      time_limit=120)
    assert placement.has_solution and "solver_failures" not in placement.info
    assert "solver failed" not in placement.summary()


def test_stdout_discarded_by_two_threads_at_once_comes_back() -> None:
    """HiGHS in two threads at once (polish beside HiGHS's leg of the relay) each point file descriptor 1 at
    the null device while they run: in the order first in, second in, first out, second out, the program's
    stdout must be where it was (two unguarded save-and-restore pairs left it on the null device for good)."""
    from exactplace.solvers.highs import _stdout_discarded

    def where() -> tuple[int, int]:
        status = os.fstat(1)
        return status.st_dev, status.st_ino

    before = where()
    first, second = _stdout_discarded(), _stdout_discarded()
    first.__enter__()
    second.__enter__()
    assert where() == (os.stat(os.devnull).st_dev, os.stat(os.devnull).st_ino)
    first.__exit__(None, None, None)
    assert where() != before  # the second is still running: still discarded
    second.__exit__(None, None, None)
    assert where() == before
