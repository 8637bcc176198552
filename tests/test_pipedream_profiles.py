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
