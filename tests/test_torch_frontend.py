"""from_torch -> solve -> replay and export, on a small transformer block and a small CNN built here."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import exactplace as ep
from exactplace import export

torch = pytest.importorskip("torch")
nn = torch.nn
pipelining = pytest.importorskip("torch.distributed.pipelining")


class Block(nn.Module):
    """A pre-norm transformer block: attention and an MLP, each with a residual connection."""

    def __init__(self, width: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.fc1, self.act, self.fc2 = nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(16, 10),
    )


MODELS = {"block": (Block, (2, 16, 32)), "cnn": (cnn, (2, 3, 16, 16))}


@pytest.fixture(scope="module", params=list(MODELS))
def captured(request: pytest.FixtureRequest) -> tuple[nn.Module, torch.Tensor, ep.Graph]:
    torch.manual_seed(0)
    build, shape = MODELS[request.param]
    module, x = build().eval(), torch.randn(*shape)
    return module, x, ep.from_torch(module, (x,), granularity="module", repeats=3)


def three_stage_cluster(graph: ep.Graph) -> ep.Cluster:
    # memory for about 40% of the model per accelerator: greedy must split too
    return ep.Cluster(accelerators=3, memory=0.4 * float(graph.memory.sum()), cpus=1)


def test_captured_graph_is_a_normal_graph(captured, tmp_path) -> None:
    module, _, graph = captured
    assert isinstance(graph, ep.Graph) and graph.n == graph.forward_count and not graph.is_training
    assert np.all(graph.cpu_time > 0) and np.all(graph.supported)
    parameters = sum(p.numel() * p.element_size() for p in module.parameters())
    assert graph.memory.sum() >= parameters  # parameters + activations
    cluster = three_stage_cluster(graph)
    path = tmp_path / "model.json"
    ep.write_workload(ep.Workload(graph, cluster), path)
    assert ep.read_workload(path).graph == graph


@pytest.mark.parametrize("method", ["dp", "greedy"])
def test_solve_replay_and_export_reproduce_the_module(captured, method: str) -> None:
    module, x, graph = captured
    placement = ep.solve(graph, three_stage_cluster(graph), method=method)
    assert placement.has_solution and len(set(placement.device.tolist())) >= 2
    expected = module(x)
    for mode in ("pipelined", "single"):
        result = ep.replay(graph, placement, devices="cpu", mode=mode, samples=4, repeats=1)
        torch.testing.assert_close(result.outputs, expected)
        assert result.measured > 0 and result.predicted == pytest.approx(ep.evaluate(
            graph, placement.cluster, placement.device, "throughput" if mode == "pipelined" else "latency"))
    spec = export.pipelining_split_spec(graph, placement)
    stages = export.pipeline_stages(graph, placement)
    assert len(spec) == len(stages) - 1
    pipe = pipelining.pipeline(copy.deepcopy(module), (x,), split_spec=spec)  # pipeline() patches the module
    assert pipe.num_stages == len(stages)
    out = pipe(x)
    torch.testing.assert_close(out[0] if isinstance(out, tuple) else out, expected)
    device_map = export.accelerate_device_map(graph, placement)
    names = placement.cluster.device_names()
    for i in range(graph.forward_count):
        if graph.targets[i] is not None:
            where = device_map[graph.targets[i]]
            assert names[placement.device[i]] == (f"acc{where}" if isinstance(where, int) else "cpu0")


def test_deepspeed_parts_of_a_sequential() -> None:
    torch.manual_seed(0)
    module, x = cnn().eval(), torch.randn(2, 3, 16, 16)
    graph = ep.from_torch(module, (x,), repeats=1)
    device = np.array([0] * 3 + [1] * 4 + [2] * 4)
    assert export.deepspeed_parts(graph, device) == [0, 3, 7, 11]
    block = ep.from_torch(Block().eval(), (torch.randn(2, 4, 32),), repeats=1)
    with pytest.raises(export.ExportError, match=r"nn\.Sequential"):
        export.deepspeed_parts(block, np.zeros(block.n, dtype=int))


def test_exports_refuse_what_they_cannot_express() -> None:
    torch.manual_seed(0)
    module, x = Block().eval(), torch.randn(2, 4, 32)
    block = ep.from_torch(module, (x,), repeats=1)  # operator granularity
    names = list(block.fx_names)
    # a device that comes back after another: not a pipeline
    device = np.zeros(block.n, dtype=int)
    device[names.index("attn")] = 1
    with pytest.raises(export.ExportError, match="not a pipeline: device 0 runs 'ln1' and again"):
        export.pipelining_split_spec(block, device)
    # ... which replay still runs: device 0 holds two parts of the chain and interleaves samples
    result = ep.replay(block, device, cluster=ep.Cluster(accelerators=2, cpus=0), devices="cpu", samples=4,
                       repeats=1)
    torch.testing.assert_close(result.outputs, module(x))
    # a boundary between the getitem and the residual add: no submodule call there
    device = np.zeros(block.n, dtype=int)
    device[names.index("add"):] = 1
    with pytest.raises(export.ExportError, match=r"between 'getitem' .* and 'add'"):
        export.pipelining_split_spec(block, device)
    with pytest.raises(export.ExportError, match="accelerate runs 'add' where its inputs are"):
        export.accelerate_device_map(block, device)


class NestedReads(nn.Module):
    """A forward that reads a nested submodule's parameters itself, as Hugging Face models do (tied embeddings)."""

    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(8, 8))
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.linear(x, self.block[0].weight, self.block[0].bias).relu()
        return self.head(h) + self.block[0].bias[:4]


def test_replay_reads_nested_parameters_by_their_dotted_names() -> None:
    torch.manual_seed(0)
    module, x = NestedReads().eval(), torch.randn(2, 8)
    graph = ep.from_torch(module, (x,), repeats=1)
    device = np.zeros(graph.n, dtype=int)
    device[list(graph.fx_names).index("head"):] = 1
    result = ep.replay(graph, device, cluster=ep.Cluster(accelerators=2, cpus=0), devices="cpu", samples=2,
                       repeats=1)
    torch.testing.assert_close(result.outputs, module(x))


def test_module_replay_refuses_replicated_stages() -> None:
    """A module's replay runs one copy of each part: replicas are refused, naming the option to change."""
    torch.manual_seed(0)
    graph = ep.from_torch(cnn().eval(), (torch.randn(2, 3, 16, 16),), repeats=1)
    device = np.array([0] * 5 + [1] * (graph.n - 5))
    with pytest.raises(ep.ParameterError, match="solve without replication=True to replay the module"):
        ep.replay(graph, device, cluster=ep.Cluster(accelerators=3, cpus=0), devices="cpu", replicas=[2, 1, 1])


def test_training_capture_colocates_backward_partners() -> None:
    torch.manual_seed(0)
    module, x = cnn(), torch.randn(2, 3, 16, 16)
    graph = ep.from_torch(module, (x,), training=True, repeats=1)
    count = graph.forward_count
    assert graph.is_training and graph.n == 2 * count
    assert all(graph.color[i] == graph.color[count + i] for i in range(count))
    assert graph.backward[count:].all() and not graph.backward[:count].any()
    placement = ep.solve(graph, three_stage_cluster(graph), method="dp")
    assert all(placement.device[i] == placement.device[count + i] for i in range(count))
    result = ep.replay(graph, placement, devices="cpu", mode="single", samples=2, repeats=1)
    torch.testing.assert_close(result.outputs, module(x))


def test_training_memory_counts_optimizer_copies_and_activations() -> None:
    """A linear layer's forward node holds weights, gradients and Adam's two moments, plus its output,
    which is also its activation (what a microbatch in flight keeps); inference keeps no activation."""
    layer, x = nn.Linear(4, 3), torch.randn(2, 4)
    weights = sum(p.numel() * p.element_size() for p in layer.parameters())
    output = 2 * 3 * 4
    adam = ep.from_torch(layer, (x,), training=True, repeats=1)
    assert adam.memory[0] == 4 * weights + output and adam.activation[0] == output
    sgd = ep.from_torch(layer, (x,), training=True, repeats=1, optimizer_copies=0)
    assert sgd.memory[0] == 2 * weights + output
    inference = ep.from_torch(layer, (x,), repeats=1)
    assert inference.memory[0] == weights + output and inference.activation[0] == 0
    with pytest.raises(ep.ParameterError, match="'optimizer_copies' parameter of from_torch"):
        ep.from_torch(layer, (x,), training=True, optimizer_copies=-1)


def test_untraceable_module_is_a_graph_error() -> None:
    class Branchy(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x if x.sum() > 0 else -x

    with pytest.raises(ep.GraphError, match="could not trace Branchy"):
        ep.from_torch(Branchy(), (torch.ones(2),))


def test_readme_torch_example_prints_its_comments() -> None:
    """The README's ``python torch`` blocks run (with torch) and print what their comments say."""
    import contextlib
    import io
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python torch\n(.*?)```", readme, flags=re.S)
    assert blocks
    for block in blocks:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, "README.md", "exec"), {})
        promised = [line.split("# ", 1)[1].split("  ")[0].strip()
                    for line in block.splitlines() if line.startswith("print(") and "# " in line]
        assert printed.getvalue().splitlines() == promised


def _modes(module: nn.Module) -> list[bool]:
    return [sub.training for sub in module.modules()]


@pytest.mark.parametrize("training", [False, True])
def test_capture_leaves_every_training_flag_as_it_was(training: bool) -> None:
    module = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1), nn.Sequential(nn.ReLU(), nn.Linear(4, 2)))
    module.train()
    module[2].eval()  # a mixed state, kept exactly
    before = _modes(module)
    ep.from_torch(module, (torch.randn(2, 4),), training=training, warmup=0, repeats=1)
    assert _modes(module) == before


def test_a_failed_capture_also_restores_the_flags_and_names_the_inputs() -> None:
    module = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1))
    module.train()
    before = _modes(module)
    with pytest.raises(ep.ParameterError, match="from_torch could not run Sequential on its example_inputs"):
        ep.from_torch(module, (torch.randn(2, 5),), warmup=0, repeats=1)
    assert _modes(module) == before


@pytest.mark.parametrize(("options", "parameter"), [({"repeats": 0}, "repeats"), ({"warmup": -1}, "warmup"),
                                                    ({"training": "yes"}, "training"),
                                                    ({"bandwidth": (1.0, float("nan"))}, "bandwidth")])
def test_bad_capture_parameters_are_refused(options: dict, parameter: str) -> None:
    with pytest.raises(ep.ParameterError, match=f"The '{parameter}' parameter of from_torch"):
        ep.from_torch(nn.Linear(4, 4), (torch.randn(2, 4),), **options)


def test_roofline_costs_a_meta_model_without_running_it() -> None:
    """On the meta device nothing runs: a linear layer's time is the roofline's, from its FLOPs
    (2 x batch x in x out) or its bytes, whichever binds; its backward costs backward_factor times."""
    from exactplace.frontends.torch_costs import Roofline

    layer = nn.Linear(64, 32).to("meta")
    x = torch.empty(8, 64, device="meta")
    compute_bound = Roofline(peak_flops=1e9, memory_bandwidth=1e15, link_bandwidth=1e9, backward_factor=3.0)
    graph = ep.from_torch(layer, (x,), training=True, roofline=compute_bound)
    flops = 2 * 8 * 64 * 32
    assert graph.acc_time[0] == pytest.approx(1e3 * flops / 1e9)
    assert graph.acc_time[1] == pytest.approx(3 * graph.acc_time[0])  # the backward partner
    memory_bound = Roofline(peak_flops=1e15, memory_bandwidth=1e6, link_bandwidth=1e9)
    moved = 4 * (8 * 64 + 64 * 32 + 32 + 8 * 32)  # input, weight, bias and output, float32
    assert ep.from_torch(layer, (x,), roofline=memory_bound).acc_time[0] == pytest.approx(1e3 * moved / 1e6)
    with pytest.raises(ep.ParameterError, match="'peak_flops' parameter of Roofline must be a finite number > 0"):
        Roofline(peak_flops=0, memory_bandwidth=1.0, link_bandwidth=1.0)
