"""The three shared PipeDream profiles: the imported graph matches the file's own line counts,
training doubles the forward pass, and the exact DP's value is the evaluator's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from exactplace import evaluate, read_workload, solve
from exactplace.core.errors import ExactplaceError

MODELS = ["vgg16", "resnet50", "gnmt"]
_NODE = re.compile(r"^(node\d+) -- (.*) -- ", re.M)
_EDGE = re.compile(r"^\t(node\d+) -- (node\d+)\s*$", re.M)


def _counts(text: str) -> tuple[int, int]:
    """(kept layers, kept edges) counted from the text alone: unused ``__getitem__`` sinks dropped."""
    modules = dict(_NODE.findall(text))
    edges = _EDGE.findall(text)
    sources = {u for u, _ in edges}
    dropped = {n for n, m in modules.items() if m.startswith("__getitem__") and n not in sources}
    kept_edges = [(u, v) for u, v in edges if u not in dropped and v not in dropped]
    return len(modules) - len(dropped), len(kept_edges)


@pytest.mark.parametrize("model", MODELS)
def test_graph_matches_the_file(shared_workloads: Path, model: str) -> None:
    path = shared_workloads / "pipedream" / f"{model}.graph.txt"
    layers, edges = _counts(path.read_text())
    inference = read_workload(path, training=False)
    assert (inference.graph.n, inference.graph.m) == (layers, edges)
    training = read_workload(path)
    # forward + backward per layer; forward edges, their reverses, and each layer's turn-around edge
    assert (training.graph.n, training.graph.m) == (2 * layers, 2 * edges + layers)
    assert sum(v.backward for v in training.graph.nodes()) == layers
    forward = sum(v.acc_time for v in inference.graph.nodes())
    assert sum(v.acc_time for v in training.graph.nodes() if not v.backward) == pytest.approx(forward)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("training", [True, False])
def test_dp_value_is_the_evaluators(shared_workloads: Path, model: str, training: bool) -> None:
    w = read_workload(shared_workloads / "pipedream" / f"{model}.graph.txt", training=training, accelerators=4)
    p = solve(w, method="dp")
    assert p.objective == pytest.approx(evaluate(w.graph, w.cluster, p.device, "throughput"))
    # four stages cannot beat a perfect split of the total time, nor lose to one device holding all
    total = sum(v.acc_time for v in w.graph.nodes())
    assert total / 4 - 1e-9 <= p.objective <= total + 1e-9


def test_memory_cap_changes_the_optimum(shared_workloads: Path) -> None:
    path = shared_workloads / "pipedream" / "vgg16.graph.txt"
    free = solve(read_workload(path, accelerators=4), method="dp")
    total = read_workload(path).graph.memory.sum()
    tight = read_workload(path, accelerators=4, memory=0.3 * total)
    capped = solve(tight, method="dp")
    # 30% of the memory per device forces a worse split than the free optimum (221.86 vs 216.45)
    assert capped.objective > free.objective + 1
    assert capped.objective == pytest.approx(evaluate(tight.graph, tight.cluster, capped.device, "throughput"))


@pytest.mark.parametrize("text", ["", "\n\n"])
def test_empty_profile_refused_in_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "graph.txt"
    path.write_text(text)
    for fmt in (None, "pipedream"):
        with pytest.raises(ExactplaceError) as info:
            read_workload(path, format=fmt)
        assert "\n" not in str(info.value)


def _partitioned(text: str, stage_of: dict[str, int]) -> str:
    """The profile with ``, stage_id=K`` on every node line, as PipeDream's optimizer writes it
    (nodes absent from ``stage_of``, dropped by the importer, get stage 0)."""
    lines = [f"{line}, stage_id={stage_of.get(m.group(1), 0)}" if (m := _NODE.match(line)) else line
             for line in text.splitlines()]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("model", MODELS)
def test_stage_ids_read_as_the_split(shared_workloads: Path, tmp_path: Path, model: str) -> None:
    """A DP split written as PipeDream stage_ids reads back as the same devices, on the library and the CLI."""
    from exactplace.io import read_split_file

    profile = shared_workloads / "pipedream" / f"{model}.graph.txt"
    w = read_workload(profile, accelerators=4)
    p = solve(w, method="dp")
    stage_of = {w.graph.names[i]: int(p.device[i]) for i in range(w.graph.n) if not w.graph.backward[i]}
    partitioned = tmp_path / "graph.txt"
    partitioned.write_text(_partitioned(profile.read_text(), stage_of))
    assert read_workload(partitioned, accelerators=4).graph.n == w.graph.n  # stage_ids do not change the workload
    split = read_split_file(partitioned, w.graph, w.cluster)
    assert split.device.tolist() == p.device.tolist()
    assert evaluate(w.graph, w.cluster, split.device, "throughput") == pytest.approx(p.objective)
    from exactplace.cli.main import main

    assert main(["evaluate", str(profile), str(partitioned), "--accelerators", "4"]) == 0


def test_stage_ids_misuse_named(shared_workloads: Path, tmp_path: Path) -> None:
    """A node without a stage names its line; a stage past the accelerators names the node."""
    from exactplace.core.errors import InputFormatError, PlacementError
    from exactplace.io import read_split_file

    profile = shared_workloads / "pipedream" / "vgg16.graph.txt"
    w = read_workload(profile, accelerators=2)
    names = [n for n in w.graph.names if not n.endswith(".backward")]
    text = _partitioned(profile.read_text(), {n: 0 for n in names})
    unstaged = tmp_path / "unstaged.txt"
    first = text.index(", stage_id=0")
    unstaged.write_text(text[:first] + text[first + len(", stage_id=0"):])
    with pytest.raises(InputFormatError, match=r"Line 1: field stage_id is missing"):
        read_split_file(unstaged, w.graph, w.cluster)
    beyond = tmp_path / "beyond.txt"
    beyond.write_text(_partitioned(profile.read_text(), {n: 5 for n in names}))
    with pytest.raises(PlacementError, match="stage 5, but the cluster has 2 accelerators"):
        read_split_file(beyond, w.graph, w.cluster)
