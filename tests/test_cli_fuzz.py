"""Fuzzing the command line: random workload JSON and random arguments.

Whatever the input, ``exactplace`` must exit 0, 1 or 2; on exit 2 print exactly one line on
stderr; never let an exception escape (no traceback); never change an input file; and leave
an existing ``--out`` file either untouched or replaced by a complete, valid plan.

The CLI runs in this process (``main(argv)`` with redirected streams) so that thousands of
cases fit in CI's time. ``EXACTPLACE_FUZZ=nightly`` runs many more (a nightly job).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exactplace.cli.main import main

NIGHTLY = os.environ.get("EXACTPLACE_FUZZ") == "nightly"
FUZZ = settings(max_examples=20_000 if NIGHTLY else 1_000, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))

# -- JSON values ---------------------------------------------------------------------------------

numbers = st.one_of(
    st.integers(-3, 10), st.integers(), st.sampled_from([2**63, 2**64, -(2**63) - 1, 10**30, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 0.5, 1e308, -1e-300, 1e-320]),
)
scalars = st.one_of(numbers, st.booleans(), st.none(), st.text(max_size=5))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                              st.dictionaries(st.text(max_size=4), inner, max_size=3)),
                           max_leaves=6)


@st.composite
def workloads(draw: st.DrawFn) -> Any:
    """A small valid workload, then a few random mutations (or, sometimes, any JSON at all)."""
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    n = draw(st.integers(1, 5))
    nodes = [{"id": i, "supportedOnFpga": draw(st.sampled_from([0, 1, True])), "cpuLatency": draw(st.integers(0, 9)),
              "fpgaLatency": draw(st.integers(0, 9)), "isBackwardNode": 0, "size": draw(st.integers(0, 5))}
             for i in range(n)]
    edges = [{"sourceId": i, "destId": j, "cost": draw(st.integers(0, 3))}
             for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    data: dict[str, Any] = {"maxSizePerFPGA": draw(st.sampled_from([4, 10, 1e9])), "maxFPGAs": draw(st.integers(0, 3)),
                            "maxCPUs": draw(st.integers(0, 2)), "nodes": nodes, "edges": edges}
    for _ in range(draw(st.integers(0, 3))):
        where = draw(st.sampled_from(["top", "node", "edge"]))
        target = data if where == "top" else draw(st.sampled_from(nodes if where == "node" or not edges else edges))
        key = draw(st.sampled_from(sorted(target)))
        if draw(st.booleans()):
            target[key] = draw(json_values)
        else:
            del target[key]
    return data


# -- arguments -------------------------------------------------------------------------------------

OUT_KINDS = ["none", "new", "existing", "input", "empty", "dash", "directory", "missing_dir"]


@st.composite
def arguments(draw: st.DrawFn) -> tuple[list[str], str, bool]:
    """(argument list with placeholders WORKLOAD / SPLIT / OUT, the --out kind, whether stdin is used)."""
    command = draw(st.sampled_from(["solve", "solve", "evaluate", "info", "methods", "nonsense"]))
    args = [command]
    stdin = False
    if command in ("solve", "evaluate", "info"):
        if draw(st.integers(0, 5)) == 0:
            args.append("-")
            stdin = True
        else:
            args.append(draw(st.sampled_from(["WORKLOAD", "WORKLOAD", "layer_bert24_inference", "absent.json"])))
    if command == "evaluate":
        args.append("-" if not stdin and draw(st.booleans()) else "SPLIT")
        stdin = stdin or args[-1] == "-"
    flags = {
        "--objective": st.sampled_from(["throughput", "latency", "speed"]),
        "--method": st.sampled_from(["auto", "dp", "dpl", "greedy", "unknown"]),
        "--time-limit": st.sampled_from(["0.5", "0", "-1", "inf", "nan", "abc", "1e-9"]),
        "--rel-gap": st.sampled_from(["0.01", "0", "1", "-0.5", "x"]),
        "--ideal-limit": st.sampled_from(["10", "0", "-5", "1e3", str(2**70)]),
        "--overlap": None, "--json": None, "--out": None, "--bogus": None,
    }
    for flag in draw(st.lists(st.sampled_from(sorted(flags)), max_size=4, unique=True)):
        args.append(flag)
        if flags[flag] is not None:
            args.append(draw(flags[flag]))
        elif flag == "--out":
            args.append("OUT")
    out_kind = draw(st.sampled_from(OUT_KINDS[1:])) if "OUT" in args else "none"
    return args, out_kind, stdin


# -- running and checking -----------------------------------------------------------------------------


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _valid_plan(text: str) -> bool:
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return (isinstance(data, dict) and data.get("format") == "exactplace-plan"
            and isinstance(data.get("placement"), list))


def _run(argv: list[str], stdin_text: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.StringIO(stdin_text)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exit_:  # argparse: --help, --version, usage errors
                code = exit_.code if isinstance(exit_.code, int) else 2
    finally:
        sys.stdin = saved
    return code, out.getvalue(), err.getvalue()


EXISTING_PLAN = None


def _existing_plan() -> str:
    global EXISTING_PLAN
    if EXISTING_PLAN is None:
        code, out, _ = _run(["solve", "layer_bert24_inference", "--method", "greedy", "--out", "-"], "")
        assert code == 0
        EXISTING_PLAN = out
    return EXISTING_PLAN


def check_case(workload: Any, argv: list[str], out_kind: str, stdin: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        text = json.dumps(workload, allow_nan=True)
        source = root / "workload.json"
        source.write_text(text)
        split = root / "split.json"
        split.write_text(_existing_plan() if len(text) % 2 else text)  # a plan, or the workload itself
        out = {"new": root / "plan.json", "existing": root / "old.json", "input": source, "empty": "",
               "dash": "-", "directory": root, "missing_dir": root / "missing" / "plan.json"}.get(out_kind)
        (root / "old.json").write_text("previous content\n")
        # Inputs are the files the arguments name as such; the others may only become a complete plan.
        inputs = [path for placeholder, path in (("WORKLOAD", source), ("SPLIT", split)) if placeholder in argv]
        before = {p: _digest(p) for p in (source, split, root / "old.json")}
        argv = [{"WORKLOAD": str(source), "SPLIT": str(split), "OUT": str(out)}.get(a, a) for a in argv]
        code, _, stderr = _run(argv, text if stdin else "")

        assert code in (0, 1, 2), (argv, code, stderr)
        assert "Traceback" not in stderr
        if code == 2:
            assert len(stderr.strip().splitlines()) == 1, (argv, stderr)
        for path, digest in before.items():
            if path in inputs:
                assert _digest(path) == digest, f"input {path.name} changed by {argv}"
            elif _digest(path) != digest:
                assert _valid_plan(path.read_text()), f"{path.name} replaced by an incomplete plan: {argv}"
        new = root / "plan.json"
        if new.exists():
            assert _valid_plan(new.read_text()), argv
        leftovers = [p.name for p in root.iterdir() if p.name.endswith(".tmp")]
        assert not leftovers, leftovers


@pytest.mark.filterwarnings("error::RuntimeWarning")  # a numpy warning leaking to the user fails too
@FUZZ
@given(workload=workloads(), command=st.sampled_from(["solve", "info", "evaluate"]),
       out_kind=st.sampled_from(OUT_KINDS))
def test_fuzz_workload_json(workload: Any, command: str, out_kind: str) -> None:
    argv = [command, "WORKLOAD"] + (["SPLIT"] if command == "evaluate" else [])
    if command == "solve" and out_kind != "none":
        argv += ["--out", "OUT"]
    check_case(workload, argv, out_kind if command == "solve" else "none", stdin=False)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@FUZZ
@given(workload=workloads(), case=arguments())
def test_fuzz_arguments(workload: Any, case: tuple[list[str], str, bool]) -> None:
    argv, out_kind, stdin = case
    check_case(workload, argv, out_kind, stdin)
