"""PipeDream graph.txt importer: mapping, detection, and one-line rejection of malformed files."""

from __future__ import annotations

from pathlib import Path

import pytest

from exactplace.core.errors import ExactplaceError, InputFormatError
from exactplace.core.io import read_workload

SHARED = Path("/work/shared/workloads/pipedream")

_F = "forward_compute_time={}, backward_compute_time={}, activation_size={}, parameter_size={}"
GOOD = (
    "node1 -- Input0 -- " + _F.format("0.000", "0.000", "8.0", "0.000") + "\n"
    "node2 -- Conv2d(3, 4) -- " + _F.format("2.000", "3.000", "[4.0; 6.0]", "5.000") + "\n"
    "node3 -- ReLU() -- " + _F.format("1.000", "1.500", "10.0", "0.000") + "\n"
    "node4 -- __getitem__(0) -- " + _F.format("0.100", "0.000", "1.0", "0.000") + "\n"
    "\tnode1 -- node2\n"
    "\tnode2 -- node3\n"
    "\tnode2 -- node4\n"
)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "graph.txt"
    p.write_text(text)
    return p


def test_training_graph_mapping(tmp_path: Path) -> None:
    w = read_workload(_write(tmp_path, GOOD), bandwidth=2.0)
    g = w.graph
    by_name = {v.name: v for v in g.nodes()}
    assert "node4" not in by_name  # unused __getitem__ sink dropped
    assert set(by_name) == {"node1", "node2", "node3", "node1.backward", "node2.backward", "node3.backward"}
    assert by_name["node1"].cpu_time == 0 and by_name["node1"].memory == 0  # input source is free
    assert by_name["node2"].acc_time == 2.0 and by_name["node2.backward"].acc_time == 3.0
    assert by_name["node2"].memory == 5.0 + 10.0  # parameters + summed list activation
    assert by_name["node2.backward"].memory == 10.0
    assert by_name["node2"].color == by_name["node2.backward"].color
    assert by_name["node2.backward"].backward and not by_name["node2"].backward
    names = {v.id: v.name for v in g.nodes()}
    edges = {(names[u], names[v]): c for u, v, c in g.edges()}
    assert edges[("node2", "node3")] == 1e3 * 10.0 / 2.0  # bytes / (bytes per second), in ms
    assert edges[("node3.backward", "node2.backward")] == 1e3 * 10.0 / 2.0
    assert edges[("node3", "node3.backward")] == 0.0


def test_inference_and_free_transfers(tmp_path: Path) -> None:
    w = read_workload(_write(tmp_path, GOOD), training=False)
    assert w.graph.n == 3 and all(c == 0 for *_, c in w.graph.edges())


def test_format_forced_and_json_options_refused(tmp_path: Path) -> None:
    p = _write(tmp_path, GOOD)
    assert read_workload(p, format="pipedream").graph.n == 6
    with pytest.raises(ExactplaceError):
        read_workload(p, format="json")
    with pytest.raises(ExactplaceError, match="ONNX"):  # not a protobuf (or, without onnx installed, unreadable)
        read_workload(p, format="onnx")
    with pytest.raises(ExactplaceError, match="format must be one of"):
        read_workload(p, format="xml")


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        (GOOD.replace("forward_compute_time=2.000", "forward_compute_time=abc"), 2, "forward_compute_time"),
        (GOOD.replace("backward_compute_time=3.000, ", ""), 2, "backward_compute_time"),
        (GOOD.replace("parameter_size=5.000", "parameter_size=-5"), 2, "parameter_size"),
        (GOOD.replace("activation_size=[4.0; 6.0]", "activation_size=[4.0; x]"), 2, "activation_size"),
        (GOOD.replace("activation_size=10.0", "activation_size=inf"), 3, "activation_size"),
        (GOOD.replace("parameter_size=0.000\nnode2", "parameter_size=0.000, colour=1\nnode2"), 1, "colour"),
        (GOOD.replace("\tnode2 -- node3", "\tnode2 -- node9"), 6, "node9"),
        (GOOD.replace("\tnode2 -- node3", "\tnode2 node3"), 6, "edge"),
        (GOOD + "node2 -- X -- forward_compute_time=1, backward_compute_time=1, activation_size=1, parameter_size=1\n",
         8, "node2"),
        (GOOD.replace("parameter_size=0.000\nnode2", "parameter_size=0.000, stage_id=one\nnode2"), 1, "stage_id"),
        (GOOD.replace("forward_compute_time=1.000, ", "forward_compute_time=1.000,, "), 3, "forward_compute_time"),
    ],
)
def test_malformed_rejected_with_line_and_field(tmp_path: Path, text: str, line: int, field: str) -> None:
    with pytest.raises(InputFormatError) as info:
        read_workload(_write(tmp_path, text), format="pipedream")
    message = str(info.value)
    assert "\n" not in message and f"Line {line}" in message and field in message


def test_cycle_rejected(tmp_path: Path) -> None:
    with pytest.raises(ExactplaceError):
        read_workload(_write(tmp_path, GOOD + "\tnode3 -- node2\n"))


@pytest.mark.skipif(not SHARED.exists(), reason="shared PipeDream profiles absent")
@pytest.mark.parametrize("model", ["vgg16", "gnmt", "resnet50"])
def test_shared_profiles_read(model: str) -> None:
    w = read_workload(SHARED / f"{model}.graph.txt")
    forward = {v.color: v for v in w.graph.nodes() if not v.backward}
    backward = {v.color: v for v in w.graph.nodes() if v.backward}
    assert forward.keys() == backward.keys() and 2 * len(forward) == w.graph.n
