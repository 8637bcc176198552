"""The exports to torchtitan, vLLM and llama.cpp, each read the way its library reads it.

torchtitan's own splitter (``_pipeline_module_split``) builds and runs the stages on 2 CPU
processes. vLLM cannot be installed beside this torch (it pins another), and llama.cpp is a C++
program, so their rules are applied as their sources state them (cited at each check), over the
tensor names of the ``gguf`` package, llama.cpp's own naming of Hugging Face parameters.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from processes import run_ranks

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import exactplace as ep  # noqa: E402
from exactplace import export  # noqa: E402
from exactplace.core.placement import Placement, Status  # noqa: E402

#: One rank of a torchtitan pipeline: a model of torchtitan's shape (direct children
#: ``tok_embeddings``, ``layers`` and the head, a forward that tolerates the children a chunk drops),
#: planned for 2 stages by rank 0; torchtitan splits it by the exported names and GPipe runs it; the last rank
#: compares with the unsplit model.
TORCHTITAN_RANK = """
import json, os
import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.pipelining import ScheduleGPipe
from torchtitan.distributed.pipeline_parallel import _pipeline_module_split
import exactplace as ep
from exactplace import export


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        return x + self.mlp(self.norm(x))


class Decoder(nn.Module):
    def __init__(self, vocab=64, width=32, blocks=5):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, width)
        self.layers = nn.ModuleDict({str(i): Block(width) for i in range(blocks)})
        self.norm = nn.LayerNorm(width)
        self.output = nn.Linear(width, vocab)

    def forward(self, tokens):
        h = self.tok_embeddings(tokens) if self.tok_embeddings is not None else tokens
        for layer in self.layers.values():
            h = layer(h)
        h = self.norm(h) if self.norm is not None else h
        return self.output(h) if self.output is not None else h


rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", rank=rank, world_size=world)
torch.manual_seed(0)
model = Decoder().eval()
ids = torch.randint(0, 64, (4, 8))
fqns = [None]
if rank == 0:  # one plan for all ranks: each rank's measured costs differ a little
    graph = ep.from_torch(model, (ids[:2],), granularity="block", repeats=1)
    plan = ep.solve(graph, ep.Cluster(world, cpus=0), schedule="gpipe", microbatches=2, stages=world)
    fqns = [export.torchtitan_module_fqns(graph, plan)]
dist.broadcast_object_list(fqns, src=0)
fqns = fqns[0]
mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("pp",))
stages, chunks = _pipeline_module_split(model, mesh["pp"], "GPipe", torch.device("cpu"), fqns)
schedule = ScheduleGPipe(stages[0], n_microbatches=2)
with torch.no_grad():
    out = schedule.step(ids) if rank == 0 else schedule.step()
    expected = model(ids)
found = {"fqns": fqns, "parameters": sorted(name for name, _ in chunks[0].named_parameters())}
if rank == world - 1:
    found["same"] = bool(torch.allclose(out, expected, atol=1e-5))
print(json.dumps(found))
dist.destroy_process_group()
"""


def test_torchtitan_splits_and_runs_the_exported_chunks(tmp_path):
    pytest.importorskip("torchtitan.distributed.pipeline_parallel")
    found = run_ranks(TORCHTITAN_RANK, 2, tmp_path)
    fqns = found[0]["fqns"]
    assert fqns[0][0] == "tok_embeddings" and fqns[-1][-2:] == ["norm", "output"]
    assert [name for chunk in fqns for name in chunk if name.startswith("layers.")] == [f"layers.{i}" for i in range(5)]
    for rank, chunk in enumerate(fqns):  # each rank's chunk holds the parameters of its modules and no others
        kept = sorted(p for p in found[rank]["parameters"])
        assert kept and all(any(p.startswith(name + ".") for name in chunk) for p in kept)
    assert found[-1]["same"], "the torchtitan pipeline's output differs from the unsplit model's"


@pytest.fixture(scope="module")
def llama():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(num_hidden_layers=6, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                                      num_key_value_heads=2, vocab_size=64, use_cache=False)
    model = transformers.LlamaForCausalLM(config).eval()
    graph = ep.from_torch(model, (torch.randint(0, 64, (1, 8)),), granularity="block", repeats=1)
    return model, graph


def in_stages(graph, counts: list[int]) -> np.ndarray:
    """A device array holding the colour classes in program order, ``counts[s]`` of them on device ``s``."""
    order = sorted(set(graph.color.tolist()), key=lambda c: int(np.flatnonzero(graph.color == c)[0]))
    device = np.empty(graph.n, dtype=np.int64)
    for stage, classes in enumerate(np.split(np.array(order), np.cumsum(counts)[:-1])):
        device[np.isin(graph.color, classes)] = stage
    return device


def vllm_layer_ranges(partition: str, num_hidden_layers: int, pp_size: int) -> list[range]:
    """Each rank's layers as vLLM's ``get_pp_indices`` (vllm/distributed/utils.py) reads the variable:
    integers split on commas, as many as ranks, summing to the model's layer count."""
    partitions = [int(layer) for layer in partition.split(",")]
    assert len(partitions) == pp_size and sum(partitions) == num_hidden_layers
    starts = np.cumsum([0, *partitions])
    return [range(starts[rank], starts[rank + 1]) for rank in range(pp_size)]


def test_vllm_partition_gives_each_rank_its_blocks(llama):
    _, graph = llama
    plan = ep.solve(graph, ep.Cluster(3, cpus=0))
    partition = export.vllm_layer_partition(graph, plan)
    stages = export.stage_blocks(graph, plan)
    ranges = vllm_layer_ranges(partition, 6, len(stages))
    assert [list(r) for r in ranges] == [blocks for _, blocks, _ in stages]


def test_vllm_refuses_a_head_before_the_last_stage(llama):
    _, graph = llama
    # classes: embedding, rotary embedding, 6 blocks, final norm, head; the head alone on stage 2
    device = in_stages(graph, [4, 5, 1])
    with pytest.raises(export.ExportError, match="Stage 1 runs code after the last block; vLLM"):
        export.vllm_layer_partition(graph, device)


def llama_cpp_buffers(options: dict[str, str], tensors: list[str], n_layer: int) -> dict[str, str]:
    """The buffer each GGUF tensor loads into, by llama.cpp's rules (src/llama-model.cpp, ``load_tensors``;
    common/arg.cpp for ``--override-tensor``): the layer slots are the blocks and then the output; the
    slots before the last ``--n-gpu-layers`` are on the CPU, slot ``il`` of the others on the GPU
    ``upper_bound(splits, float(il - start) / act)`` where ``splits`` are the normalized prefix sums of
    ``--tensor-split`` (float32); the input layer is on the CPU; an override (``PATTERN=BUFFER``,
    comma-separated, first regex search that matches) wins over all of it."""
    n_gpu = int(options["--n-gpu-layers"])
    start, act = max(n_layer + 1 - n_gpu, 0), min(n_gpu, n_layer + 1)
    split = np.array([float(x) for x in options["--tensor-split"].split(",")], dtype=np.float32)
    splits = np.cumsum(split, dtype=np.float32) / np.float32(split.sum())
    overrides = [o.split("=") for o in options.get("--override-tensor", "").split(",") if o]

    def slot_buffer(il: int) -> str:
        if il < start or il - start >= act:
            return "CPU"
        return f"CUDA{int(np.searchsorted(splits, np.float32(il - start) / np.float32(act), side='right'))}"

    buffers = {}
    for name in tensors:
        block = re.match(r"blk\.(\d+)\.", name)
        if block:
            buffer = slot_buffer(int(block.group(1)))
        elif name.startswith("output"):
            buffer = slot_buffer(n_layer)
        else:
            buffer = "CPU"
        buffers[name] = next((b for pattern, b in overrides if re.search(pattern, name)), buffer)
    return buffers


def planned_buffers(model, graph, device, accelerators: int) -> dict[str, str]:
    """GGUF tensor name -> the buffer of the device the plan runs its module on."""
    import gguf

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, model.config.num_hidden_layers)
    buffers = {}
    for parameter, _ in model.named_parameters():
        module = parameter.rsplit(".", 1)[0]
        runs = {int(d) for d, path in zip(device, graph.module_paths, strict=False)
                if path == module or path.startswith(module + ".")}
        assert len(runs) == 1, parameter
        d = runs.pop()
        gguf_name = names.get_name(parameter, try_suffixes=(".weight", ".bias"))
        assert gguf_name is not None, parameter
        buffers[gguf_name] = f"CUDA{d}" if d < accelerators else "CPU"
    return buffers


@pytest.mark.parametrize(("counts", "cpus"), [([3, 4, 3], 0), ([2, 5, 3], 0), ([3, 7], 1)])
def test_llama_cpp_loads_every_tensor_where_the_plan_runs_it(llama, counts, cpus):
    model, graph = llama
    device = in_stages(graph, counts)
    accelerators = len(counts) - cpus
    if cpus:  # the first stage on the CPU: device indices put accelerators first
        device = np.where(device < cpus, accelerators, device - cpus)
    plan = Placement(graph, ep.Cluster(accelerators, cpus=cpus), device, "throughput", None, Status.FEASIBLE, "given")
    options = export.llama_cpp_arguments(graph, plan)
    expected = planned_buffers(model, graph, device, accelerators)
    assert llama_cpp_buffers(options, list(expected), model.config.num_hidden_layers) == expected


def test_llama_cpp_refuses_gpus_out_of_order(llama):
    _, graph = llama
    device = 1 - in_stages(graph, [5, 5])
    with pytest.raises(export.ExportError, match=r"accelerators \[1, 0\] in that order"):
        export.llama_cpp_arguments(graph, device)


def test_torchtitan_refuses_nested_blocks(llama):
    _, graph = llama
    with pytest.raises(export.ExportError, match=r"blocks are in 'model\.layers'"):
        export.torchtitan_module_fqns(graph, in_stages(graph, [5, 5]))


@pytest.mark.parametrize("counts", [[3, 4, 3], [2, 5, 3], [6, 4]])
def test_accelerate_device_map_of_a_hugging_face_module_is_keyed_by_module_name(llama, counts):
    from accelerate.utils import check_device_map

    model, graph = llama
    device = in_stages(graph, counts)
    device_map = export.accelerate_device_map(graph, device)
    check_device_map(model, device_map)  # accelerate's own check: every parameter and buffer has a device
    modules = dict(model.named_modules())
    assert set(device_map) <= set(modules)
    for module, where in device_map.items():
        nodes = [i for i, path in enumerate(graph.module_paths) if path == module or path.startswith(module + ".")]
        assert nodes and {int(device[i]) for i in nodes} == {where}
