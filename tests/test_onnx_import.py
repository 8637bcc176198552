"""ONNX importer: PyTorch models exported in the test, mapped by the documented rules, solved, and malformed
models refused in one line naming the node and the tensor."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
torch = pytest.importorskip("torch")

import exactplace as ep  # noqa: E402
from exactplace.cli.main import main  # noqa: E402
from exactplace.core.errors import InputFormatError, ParameterError  # noqa: E402
from exactplace.frontends.onnx import node_flops, onnx_to_dict  # noqa: E402
from exactplace.io import workload_format  # noqa: E402

helper, T = onnx.helper, onnx.TensorProto
FLOAT = 4  # bytes per float32 element
N, H = 2, 8  # batch and image side of the conv net


class Branchy(torch.nn.Module):
    """stem conv -> relu -> (grouped 3x3 conv | 1x1 conv) -> add -> max pool -> flatten -> linear -> softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.left = torch.nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.right = torch.nn.Conv2d(8, 8, 1, bias=False)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8 * (H // 2) ** 2, 10)

    def forward(self, x: Any) -> Any:
        x = torch.relu(self.stem(x))
        y = self.pool(self.left(x) + self.right(x))
        return torch.softmax(self.fc(y.flatten(1)), dim=1)


def _export(module: Any, example: Any, path: Path, **options: Any) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation notice
        torch.onnx.export(module.eval(), (example,), str(path), dynamo=False, **options)
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("onnx")
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Dropout(0.1), torch.nn.Linear(32, 4))
    return {
        "branchy": _export(Branchy(), torch.randn(N, 3, H, H), folder / "branchy.onnx"),
        "mlp": _export(mlp, torch.randn(5, 16), folder / "mlp.onnx", input_names=["x"],
                       dynamic_axes={"x": {0: "batch"}}),
    }


def _by_name(w: ep.Workload) -> dict[str, ep.Node]:
    return {v.name: v for v in w.graph.nodes()}


def _named_edges(w: ep.Workload) -> dict[tuple[str, str], float]:
    names = {v.id: v.name for v in w.graph.nodes()}
    return {(names[u], names[v]): c for u, v, c in w.graph.edges()}


def test_structure_follows_the_onnx_graph(models: dict[str, Path]) -> None:
    for path in models.values():
        model = onnx.load(str(path))
        w = ep.read_workload(path)
        kept = [n for n in model.graph.node if n.op_type != "Constant"]
        assert w.graph.n == len(kept) and [v.name for v in w.graph.nodes()] == [n.name for n in kept]
        assert w.name == path.stem and w.accelerators == 4 and w.cpus == 0
        writer = {t: n.name for n in kept for t in n.output}
        tensors = {(writer[t], n.name) for n in kept for t in n.input if t in writer}
        assert set(_named_edges(w)) == tensors
        assert all(c == 0 for *_, c in w.graph.edges())  # bandwidth=inf: free transfers
        assert not any(v.backward for v in w.graph.nodes()) and all(v.acc_time is not None for v in w.graph.nodes())
    branches = {v for u, v in _named_edges(ep.read_workload(models["branchy"])) if u == "/Relu"}
    assert branches == {"/left/Conv", "/right/Conv"}


def test_flops_memory_and_edge_costs_follow_the_formulas(models: dict[str, Path]) -> None:
    # cpu_rate=1e3 FLOP/s makes a node's CPU time in milliseconds equal its FLOPs
    w = ep.read_workload(models["branchy"], cpu_rate=1e3, accelerator_rate=1e6, bandwidth=1e6)
    nodes = _by_name(w)
    out = N * 8 * H * H  # elements of every conv output
    assert nodes["/stem/Conv"].cpu_time == pytest.approx(2 * out * 3 * 3 * 3 + out)
    assert nodes["/stem/Conv"].acc_time == pytest.approx(nodes["/stem/Conv"].cpu_time / 1e3)
    assert nodes["/left/Conv"].cpu_time == pytest.approx(2 * out * (8 // 2) * 3 * 3 + out)  # groups=2
    assert nodes["/right/Conv"].cpu_time == pytest.approx(2 * out * 8)  # no bias
    features = 8 * (H // 2) ** 2
    assert nodes["/fc/Gemm"].cpu_time == pytest.approx(2 * N * 10 * features + N * 10)
    assert nodes["/Relu"].cpu_time == pytest.approx(out) and nodes["/Flatten"].cpu_time == 0
    assert nodes["/pool/MaxPool"].cpu_time == pytest.approx(N * 8 * (H // 2) ** 2 * 2 * 2)
    assert nodes["/Softmax"].cpu_time == pytest.approx(5 * N * 10)
    # memory = initializer bytes the node reads + its output bytes
    assert nodes["/stem/Conv"].memory == (8 * 3 * 3 * 3 + 8) * FLOAT + out * FLOAT
    assert nodes["/fc/Gemm"].memory == (10 * features + 10) * FLOAT + N * 10 * FLOAT
    assert nodes["/Relu"].memory == out * FLOAT
    # edge cost = tensor bytes / bandwidth, in milliseconds
    edges = _named_edges(w)
    assert edges[("/Relu", "/left/Conv")] == pytest.approx(out * FLOAT / 1e6 * 1e3)
    assert edges[("/fc/Gemm", "/Softmax")] == pytest.approx(N * 10 * FLOAT / 1e6 * 1e3)


def test_default_rates_and_symbolic_dimensions(models: dict[str, Path]) -> None:
    gemm = 2 * 16 * 32 + 32  # per sample: the first Linear layer
    nodes = _by_name(ep.read_workload(models["mlp"]))  # the dynamic batch dimension is 1 by default
    assert nodes["/0/Gemm"].cpu_time == pytest.approx(gemm / 1e11 * 1e3)
    assert nodes["/0/Gemm"].acc_time == pytest.approx(gemm / 1e13 * 1e3)
    nodes = _by_name(ep.read_workload(models["mlp"], dims={"batch": 7}, cpu_rate=1e3))
    assert nodes["/0/Gemm"].cpu_time == pytest.approx(7 * gemm)
    assert nodes["/0/Gemm"].memory == (16 * 32 + 32 + 7 * 32) * FLOAT


@pytest.mark.parametrize("name", ["branchy", "mlp"])
def test_dp_solves_it_and_the_evaluator_agrees(models: dict[str, Path], name: str) -> None:
    w = ep.read_workload(models[name], accelerators=2, bandwidth=1e9, cpus=1)
    plan = ep.solve(w, method="dp")
    assert plan.status.value == "optimal"
    assert ep.evaluate(w.graph, w.cluster, plan.device) == pytest.approx(plan.objective, rel=1e-9)
    assert not ep.check_feasibility(w.graph, w.cluster, plan.device)


def test_memory_cap_is_respected(models: dict[str, Path]) -> None:
    total = float(ep.read_workload(models["branchy"]).graph.memory.sum())
    capped = ep.read_workload(models["branchy"], accelerators=3, memory=0.6 * total)  # the net fits on no one device
    plan = ep.solve(capped, method="dp")
    assert plan.device is not None and not ep.check_feasibility(capped.graph, capped.cluster, plan.device)
    assert len(set(plan.device.tolist())) >= 2


def test_write_workload_keeps_names(models: dict[str, Path], tmp_path: Path) -> None:
    w = ep.read_workload(models["branchy"], bandwidth=1e9)
    ep.write_workload(w, tmp_path / "branchy.json")
    again = ep.read_workload(tmp_path / "branchy.json")
    assert [v.name for v in again.graph.nodes()] == [v.name for v in w.graph.nodes()]
    assert list(again.graph.edges()) == list(w.graph.edges()) and again.graph.memory.tolist() == w.graph.memory.tolist()


def test_profile_times_every_node(models: dict[str, Path]) -> None:
    pytest.importorskip("onnxruntime")
    w = ep.read_workload(models["branchy"], profile=True, runs=2)
    assert all(v.cpu_time > 0 and v.acc_time == v.cpu_time for v in w.graph.nodes())
    assert [v.memory for v in w.graph.nodes()] == [v.memory for v in ep.read_workload(models["branchy"]).graph.nodes()]


def test_format_detected_from_content_and_forced(models: dict[str, Path], tmp_path: Path) -> None:
    data = models["mlp"].read_bytes()
    unnamed = tmp_path / "model.bin"
    unnamed.write_bytes(data)
    assert workload_format(data, unnamed) == "onnx" and ep.read_workload(unnamed).graph.n == 3
    assert ep.read_workload(unnamed, format="onnx").graph.n == 3
    with pytest.raises(InputFormatError, match="not UTF-8 text"):
        ep.read_workload(unnamed, format="json")
    with pytest.raises(ParameterError, match=r"\['training'\] do not apply to ONNX models"):
        ep.read_workload(unnamed, training=False)
    with pytest.raises(ParameterError, match="apply only to PipeDream profiles and ONNX models"):
        ep.read_workload(ep.workload_path("layer_bert24_inference"), bandwidth=1.0)


def test_constant_nodes_are_weights_and_bodies_read_outer_tensors(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", T.FLOAT, [2, 3])
    shape = helper.make_tensor("shape", T.INT64, [2], [3, 2])
    branch = [helper.make_tensor_value_info("b", T.FLOAT, [3, 2])]
    then = helper.make_graph([helper.make_node("Identity", ["r"], ["b"])], "then", [], branch)
    orelse = helper.make_graph([helper.make_node("Neg", ["r"], ["b"])], "else", [], branch)
    nodes = [
        helper.make_node("Constant", [], ["s"], name="const", value=shape),
        helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
        helper.make_node("ReduceSum", ["x"], ["c"], name="sum", keepdims=0),
        helper.make_node("Cast", ["c"], ["flag"], name="cast", to=T.BOOL),
        helper.make_node("If", ["flag"], ["y"], name="if", then_branch=then, else_branch=orelse),
    ]
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("y", T.FLOAT, [3, 2])])
    path = tmp_path / "control.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    w = ep.read_workload(path, bandwidth=1e3)
    nodes_ = _by_name(w)
    assert set(nodes_) == {"reshape", "sum", "cast", "if"}  # the Constant is no node
    assert nodes_["reshape"].memory == 2 * 8 + 6 * FLOAT and nodes_["reshape"].cpu_time == 0
    edges = _named_edges(w)
    assert edges[("reshape", "if")] == pytest.approx(6 * FLOAT)  # read inside the branches
    assert edges[("cast", "if")] == pytest.approx(1) and ("sum", "cast") in edges


def test_shape_arithmetic_on_constants_is_computed_for_inference(tmp_path: Path) -> None:
    # Reshape's target shape is Mod([7, 3], [5, 4]) = [2, 3]: shape inference alone does not propagate Mod
    def constant(name: str, values: list[int]) -> Any:
        return helper.make_node("Constant", [], [name], name=name, value=helper.make_tensor(name, T.INT64, [2], values))

    nodes = [constant("a", [7, 3]), constant("b", [5, 4]), helper.make_node("Mod", ["a", "b"], ["s"], name="mod"),
             helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
             helper.make_node("Relu", ["r"], ["y"], name="relu")]
    path = _model(tmp_path, nodes, [helper.make_tensor_value_info("x", T.FLOAT, [3, 2])], name="mod.onnx")
    w = ep.read_workload(path, bandwidth=1e3)
    assert [v.name for v in w.graph.nodes()] == ["mod", "reshape", "relu"]  # computed ahead, still a node
    assert _by_name(w)["relu"].memory == 6 * FLOAT
    assert _named_edges(w)[("mod", "reshape")] == pytest.approx(2 * 8)


@pytest.mark.parametrize(
    ("op", "inputs", "outputs", "attributes", "flops"),
    [
        ("ConvTranspose", [[1, 4, 5, 5], [4, 2, 3, 3], [2]], [[1, 2, 7, 7]], {}, 2 * 100 * 18 + 98),
        ("MatMul", [[3, 4, 5], [5, 6]], [[3, 4, 6]], {}, 2 * 72 * 5),
        ("Gemm", [[5, 2], [5, 3]], [[2, 3]], {"transA": 1}, 2 * 6 * 5),
        ("LSTM", [[7, 2, 5], [1, 12, 5], [1, 12, 3]], [[7, 1, 2, 3]], {}, 2 * 14 * (60 + 36)),
        ("AveragePool", [[1, 2, 6, 6]], [[1, 2, 3, 3]], {"kernel_shape": [2, 2]}, 18 * 4),
        ("GlobalAveragePool", [[1, 2, 6, 6]], [[1, 2, 1, 1]], {}, 72),
        ("BatchNormalization", [[2, 3, 4], [3], [3], [3], [3]], [[2, 3, 4]], {}, 48),
        ("LayerNormalization", [[2, 3, 4], [4], [4]], [[2, 3, 4]], {}, 120),
        ("ReduceMean", [[2, 3, 4]], [[2, 1, 4]], {}, 24),
        ("Squeeze", [[1, 4]], [[4]], {}, 0),
        ("Concat", [[2, 3], [2, 5]], [[2, 8]], {}, 16),
        ("SomeCustomOp", [[2, 3]], [[2, 3], [4]], {}, 10),
    ],
)
def test_flop_model_per_op_class(op: str, inputs: list, outputs: list, attributes: dict, flops: int) -> None:
    assert node_flops(op, inputs, outputs, attributes) == flops


def _model(tmp_path: Path, nodes: list, inputs: list, outputs: list | None = None, name: str = "bad.onnx",
           initializers: tuple = ()) -> Path:
    outputs = outputs if outputs is not None else [helper.make_tensor_value_info("y", T.FLOAT, None)]
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    path = tmp_path / name
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path


X = helper.make_tensor_value_info("x", T.FLOAT, [2, 3])
MALFORMED = {
    "unknown dtype": ([helper.make_node("Relu", ["x"], ["y"], name="r")],
                      [helper.make_tensor_value_info("x", 99, [2, 3])], ["graph input 'x'", "element type 99"]),
    "string": ([helper.make_node("Identity", ["x"], ["y"], name="id")],
               [helper.make_tensor_value_info("x", T.STRING, [2])], ["graph input 'x'", "STRING"]),
    "input without shape": ([helper.make_node("Relu", ["x"], ["y"], name="r")],
                            [helper.make_tensor_value_info("x", T.FLOAT, None)], ["graph input 'x'", "no shape"]),
    "shape lost in inference": ([helper.make_node("Add", ["x", "z"], ["y"], name="add")],
                                [X, helper.make_tensor_value_info("z", T.FLOAT, [4, 5])],
                                ["node 'add' (Add)", "output 'y'", "no shape", "Incompatible dimensions"]),
    "data-dependent shape": ([helper.make_node("NonZero", ["x"], ["y"], name="nz")], [X],
                             ["node 'nz' (NonZero)", "output 'y'", "no static shape", "dimension 1"],
                             [helper.make_tensor_value_info("y", T.INT64, None)]),
    "cycle": ([helper.make_node("Add", ["x", "b"], ["a"], name="A"), helper.make_node("Relu", ["a"], ["b"], name="B"),
               helper.make_node("Neg", ["b"], ["y"], name="C")], [X], ["cycle", "'A'", "'B'"]),
    "unknown tensor": ([helper.make_node("Add", ["x", "ghost"], ["y"], name="A")], [X],
                       ["node 'A' (Add)", "input 'ghost'", "written by no node"]),
    "written twice": ([helper.make_node("Relu", ["x"], ["y"], name="r1"),
                       helper.make_node("Neg", ["x"], ["y"], name="r2")], [X],
                      ["node 'r2' (Neg)", "output 'y'", "also written by node 'r1'"]),
    "no nodes": ([], [X], ["bad.onnx", "no nodes"]),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_models_rejected_in_one_line(tmp_path: Path, case: str) -> None:
    nodes, inputs, expected, *outputs = MALFORMED[case]
    with pytest.raises(InputFormatError) as info:
        ep.read_workload(_model(tmp_path, nodes, inputs, *outputs))
    message = str(info.value)
    assert "\n" not in message and all(part in message for part in expected), message


def test_not_a_protobuf(tmp_path: Path) -> None:
    cases = {"garbage.onnx": b"\xff\xfe\x00garbage", "garbage.bin": b"\xff\xfe\x00garbage", "text.onnx": b"{}\n",
             "unparsed.onnx": b"\x08\x07\x12\x05torch"}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InputFormatError) as info:
            ep.read_workload(tmp_path / name)
        message = str(info.value)
        assert "\n" not in message and name in message and "not a valid ONNX protobuf" in message, message
        assert ("not UTF-8 text" in message) == (name == "garbage.bin")


def test_bad_options(models: dict[str, Path]) -> None:
    for options, name in [({"dims": [1]}, "dims"), ({"dims": {"batch": 0}}, "dims"), ({"runs": 0}, "runs"),
                          ({"cpu_rate": 0}, "cpu_rate"), ({"accelerator_rate": math.inf}, "accelerator_rate"),
                          ({"bandwidth": -1.0}, "bandwidth"), ({"profile": "yes"}, "profile")]:
        with pytest.raises(ParameterError, match=f"'{name}' parameter"):
            ep.read_workload(models["mlp"], **options)


def test_cli_solves_and_evaluates(models: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, plan = str(models["branchy"]), tmp_path / "plan.json"
    cluster = ["--accelerators", "2", "--memory", "1e6", "--bandwidth", "1e9"]
    assert main(["solve", path, *cluster, "--out", str(plan)]) == 0
    out = capsys.readouterr().out
    assert "workload branchy: 9 nodes" in out and "2 accelerators" in out
    objective = json.loads(plan.read_text())["objective"]
    assert main(["evaluate", path, str(plan), *cluster, "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["objective"] == pytest.approx(objective)


def test_cli_malformed_model_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, inputs, _ = MALFORMED["cycle"]
    path = _model(tmp_path, nodes, inputs)
    assert main(["solve", str(path), "--accelerators", "2"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("exactplace solve: error:") and "cycle" in err
    (tmp_path / "junk.bin").write_bytes(b"\x00\x01\x02\xff")
    assert main(["info", str(tmp_path / "junk.bin")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a valid ONNX protobuf" in err


def test_reading_json_and_importing_exactplace_load_no_onnx(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import sys, exactplace; exactplace.read_workload(exactplace.workload_path('op_bert3_inference')); "
            "print(sorted(m for m in ('onnx', 'onnxruntime') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    assert out.strip() == "[]"


def _weight(name: str, shape: tuple[int, ...]) -> Any:
    return onnx.numpy_helper.from_array(np.ones(shape, dtype=np.float32), name)


def _vi(name: str, shape: list | None, dtype: int = T.FLOAT) -> Any:
    return helper.make_tensor_value_info(name, dtype, shape)


# Models whose nodes do not type-check: (nodes, inputs, outputs, initializers, parts the message must name)
UNTYPED = {
    "conv channels": ([helper.make_node("Conv", ["x", "W"], ["y"], name="conv")], [_vi("x", [1, 3, 8, 8])],
                      [_vi("y", [1, 4, 6, 6])], [_weight("W", (4, 5, 3, 3))], ["'conv' (Conv)", "'x'", "'W'"]),
    "conv group": ([helper.make_node("Conv", ["x", "W"], ["y"], name="conv", group=3)], [_vi("x", [1, 4, 4, 4])],
                   [_vi("y", None)], [_weight("W", (4, 2, 1, 1))], ["'conv' (Conv)", "group"]),
    "conv bias": ([helper.make_node("Conv", ["x", "W", "B"], ["y"], name="conv")], [_vi("x", [1, 2, 4, 4])],
                  [_vi("y", None)], [_weight("W", (4, 2, 1, 1)), _weight("B", (3,))], ["'conv' (Conv)", "'B'"]),
    "conv rank, unnamed": ([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                            helper.make_node("Conv", ["r", "W"], ["y"])], [_vi("x", [3, 8, 8])],
                           [_vi("y", [1, 4, 6, 6])], [_weight("W", (4, 3, 3, 3))],
                           ["'Conv_1' (Conv)", "'r' [3, 8, 8]", "'W'"]),
    "conv transpose": ([helper.make_node("ConvTranspose", ["x", "W"], ["y"], name="up")], [_vi("x", [1, 3, 4, 4])],
                       [_vi("y", None)], [_weight("W", (4, 2, 1, 1))], ["'up' (ConvTranspose)", "'x'", "'W'"]),
    "matmul": ([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")], [_vi("a", [2, 3]), _vi("b", [4, 5])],
               [_vi("y", [2, 5])], [], ["'mm' (MatMul)", "Incompatible dimensions", "'a' [2, 3]", "'b' [4, 5]"]),
    "declared output shape": ([helper.make_node("Relu", ["a"], ["y"], name="r")], [_vi("a", [2, 3])],
                              [_vi("y", [2, 5])], [], ["'r' (Relu)", "'y' [2, 5]", "differ"]),
    "input element type": ([helper.make_node("Add", ["a", "b"], ["y"], name="add")],
                           [_vi("a", [2, 3]), _vi("b", [2, 3], T.INT64)], [_vi("y", [2, 3])], [],
                           ["'add' (Add)", "inconsistent type"]),
    "unknown operator": ([helper.make_node("Relux", ["a"], ["y"], name="r")], [_vi("a", [2, 3])],
                         [_vi("y", [2, 3])], [], ["'r' (Relux)", "No Op registered for Relux"]),
    "unknown attribute": ([helper.make_node("Relu", ["a"], ["y"], name="r", alpha=1.0)], [_vi("a", [2, 3])],
                          [_vi("y", [2, 3])], [], ["'r' (Relu)", "attribute: alpha"]),
    "empty output name": ([helper.make_node("Relu", ["a"], [""], name="r"),
                           helper.make_node("Neg", ["a"], ["y"], name="n")], [_vi("a", [2, 3])],
                          [_vi("y", [2, 3])], [], ["'r' (Relu)", "empty string"]),
}


@pytest.mark.parametrize("case", list(UNTYPED))
def test_models_that_do_not_type_check_are_refused(tmp_path: Path, case: str) -> None:
    nodes, inputs, outputs, initializers, expected = UNTYPED[case]
    path = _model(tmp_path, nodes, inputs, outputs, initializers=tuple(initializers))
    with pytest.raises(InputFormatError) as info:
        ep.read_workload(path)
    message = str(info.value)
    assert "\n" not in message and "does not type-check" in message and str(path) in message, message
    assert all(part in message for part in expected), message
    assert "__" not in message, message  # no name exactplace gives nodes internally


def test_cli_refuses_a_model_that_does_not_type_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nodes, inputs, outputs, initializers, _ = UNTYPED["matmul"]
    path = _model(tmp_path, nodes, inputs, outputs, initializers=tuple(initializers))
    assert main(["solve", str(path), "--method", "greedy"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("exactplace solve: error:"), err
    assert "'mm' (MatMul)" in err and "bad.onnx" in err and "Traceback" not in err


def test_nodes_out_of_order_are_still_read_in_the_models_order(tmp_path: Path) -> None:
    nodes = [helper.make_node("Neg", ["r"], ["y"], name="neg"), helper.make_node("Relu", ["x"], ["r"], name="relu")]
    w = ep.read_workload(_model(tmp_path, nodes, [X], [_vi("y", [2, 3])]), bandwidth=1e3)
    assert [v.name for v in w.graph.nodes()] == ["neg", "relu"]
    assert _named_edges(w) == {("relu", "neg"): pytest.approx(6 * FLOAT)}


def _external(tmp_path: Path, location: str, **entries: str) -> Path:
    weight = _weight("W", (3, 3))
    weight.ClearField("raw_data")
    weight.data_location = T.EXTERNAL
    for key, value in {"location": location, **entries}.items():
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")]
    return _model(tmp_path, nodes, [X], [_vi("y", [2, 3])], name="ext.onnx", initializers=(weight,))


def test_external_weights_beside_the_model_are_sized_not_read(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(bytes(9 * FLOAT))
    external = ep.read_workload(_external(tmp_path, "w.bin"))
    inline = ep.read_workload(_model(tmp_path, [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")], [X],
                                     [_vi("y", [2, 3])], initializers=(_weight("W", (3, 3)),)))
    assert external.graph.memory.tolist() == inline.graph.memory.tolist() == [(9 + 6) * FLOAT]


@pytest.mark.parametrize(("location", "entries", "expected"), [
    ("missing.bin", {}, "not a file in the model's folder"),
    ("../outside.bin", {}, "outside the model's folder"),
    ("sub/../../outside.bin", {}, "outside the model's folder"),
    ("/etc/hostname", {}, "outside the model's folder"),
    ("w.bin", {"offset": "8"}, "too short"),
    ("w.bin", {"length": "8"}, "needs 36"),
    ("w.bin", {"offset": "x"}, "not a whole number"),
    ("link.bin", {}, "links outside the model's folder"),
])
def test_bad_external_data_is_refused_naming_file_and_tensor(tmp_path: Path, location: str, entries: dict,
                                                             expected: str) -> None:
    (tmp_path / "w.bin").write_bytes(bytes(9 * FLOAT))
    (tmp_path.parent / "outside.bin").write_bytes(bytes(9 * FLOAT))
    (tmp_path / "link.bin").symlink_to(tmp_path.parent / "outside.bin")
    path = _external(tmp_path, location, **entries)
    for options in ({}, {"profile": True}):  # profiling would read the weights: refused before it starts
        with pytest.raises(InputFormatError) as info:
            ep.read_workload(path, **options)
        message = str(info.value)
        assert "\n" not in message and "ext.onnx" in message and "'W'" in message and location in message, message
        assert expected in message, message


def test_huge_declared_shapes_are_sized_arithmetically(tmp_path: Path) -> None:
    nodes = [helper.make_node("Relu", ["big"], ["y"], name="r")]
    path = _model(tmp_path, nodes, [_vi("big", [10**12, 10**12])])
    w = ep.read_workload(path, cpu_rate=1e3)
    assert w.graph.memory.tolist() == [float(10**24 * FLOAT)] and _by_name(w)["r"].cpu_time == pytest.approx(1e24)
    with pytest.raises(InputFormatError, match=r"input 'big' .*profile=True would allocate"):
        ep.read_workload(path, profile=True)  # refused before any allocation
    beyond = _model(tmp_path, nodes, [_vi("big", [2**62] * 20)], name="beyond.onnx")  # bytes beyond a float
    with pytest.raises(InputFormatError, match=r"input 'big' declares shape .* no device holds"):
        ep.read_workload(beyond)
    with pytest.raises(ParameterError, match="'dims' parameter"):
        ep.read_workload(_model(tmp_path, nodes, [_vi("big", ["batch", 3])], name="sym.onnx"), dims={"batch": 10**30})


def test_large_constant_shapes_are_never_computed_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import onnx.reference

    evaluated: list[str] = []
    real = onnx.reference.ReferenceEvaluator

    def spy(model: Any, *args: Any, **kwargs: Any) -> Any:
        evaluated.extend(n.op_type for n in model.graph.node)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(onnx.reference, "ReferenceEvaluator", spy)
    side = 3000
    shape = helper.make_tensor("s", T.INT64, [2], [side, side])
    nodes = [helper.make_node("Constant", [], ["s"], name="shape", value=shape),
             helper.make_node("ConstantOfShape", ["s"], ["z"], name="fill"),
             helper.make_node("Relu", ["z"], ["y"], name="r")]
    w = ep.read_workload(_model(tmp_path, nodes, []))
    assert "ConstantOfShape" not in evaluated and "Constant" in evaluated
    assert _by_name(w)["fill"].memory == side * side * FLOAT + 2 * 8  # its output, and the shape it reads


REFUSED = {
    "opset too new": ({"opset": 999}, ["bad.onnx", "opset 999", "upgrade onnx"]),
    "IR too new": ({"ir_version": 999}, ["bad.onnx", "IR version 999", "upgrade onnx"]),
    "no IR version": ({"ir_version": 0}, ["bad.onnx", "ir_version"]),
    "output nobody writes": ({"outputs": [_vi("y", None), _vi("ghost", [2])]}, ["bad.onnx", "'ghost'"]),
    "raw data too short": ({"initializers": [_weight("W", (5,))], "dims": [3, 3]}, ["bad.onnx", "W", "raw_data"]),
    "typed data too short": ({"initializers": [helper.make_tensor("W", T.FLOAT, [9], [1.0] * 9)], "dims": [30, 30]},
                             ["bad.onnx", "W", "float_data"]),
    "no opset for the domain": ({"domain": "my.ops"}, ["'add' (Add)", "my.ops"]),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_invalid_models_are_refused_in_one_line(tmp_path: Path, case: str) -> None:
    change, expected = REFUSED[case]
    initializers = change.get("initializers", [_weight("W", (2, 3))])
    for tensor in initializers:
        if "dims" in change:
            tensor.dims[:] = change["dims"]
    width = change.get("dims", [2, 3])
    node = helper.make_node("Add", ["x", "W"], ["y"], name="add", domain=change.get("domain", ""))
    graph = helper.make_graph([node], "g", [_vi("x", width)], change.get("outputs", [_vi("y", None)]), initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", change.get("opset", 17))])
    if "ir_version" in change:
        model.ir_version = change["ir_version"]
    path = tmp_path / "bad.onnx"
    onnx.save(model, str(path))
    with pytest.raises(InputFormatError) as info:
        ep.read_workload(path)
    message = str(info.value)
    assert "\n" not in message and all(part in message for part in expected), message


def test_unsupported_graphs_are_refused_naming_what(tmp_path: Path) -> None:
    values = onnx.numpy_helper.from_array(np.ones(1, dtype=np.float32), "S")
    indices = onnx.numpy_helper.from_array(np.zeros(1, dtype=np.int64), "S_indices")
    graph = helper.make_graph([helper.make_node("Add", ["x3", "S"], ["y"], name="add")], "g", [_vi("x3", [3])],
                              [_vi("y", None)], sparse_initializer=[helper.make_sparse_tensor(values, indices, [3])])
    path = tmp_path / "sparse.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    with pytest.raises(InputFormatError, match=r"node 'add' \(Add\): input 'S' is a sparse initializer"):
        ep.read_workload(path)
    constant = helper.make_node("Constant", [], ["y"], value=helper.make_tensor("c", T.FLOAT, [2], [1, 2]))
    with pytest.raises(InputFormatError, match=r"bad\.onnx.*only Constant nodes"):
        ep.read_workload(_model(tmp_path, [constant], []))
    with pytest.raises(InputFormatError, match="no nodes"):
        onnx_to_dict(onnx.ModelProto())  # a ModelProto handed over directly is checked as a file is
