"""Export a placement of a real module (a graph from :func:`exactplace.from_torch`) to other frameworks.

* :func:`pipelining_split_spec`: ``torch.distributed.pipelining`` split points.
* :func:`deepspeed_pipeline`: the arguments of a DeepSpeed ``PipelineModule`` that builds the stages
  (:func:`deepspeed_parts`: their boundaries among the ``nn.Sequential``'s layers).
* :func:`accelerate_device_map`: an accelerate / transformers ``device_map``.
* :func:`megatron_layout`: Megatron Core's ``pipeline_model_parallel_layout`` string, for a model
  captured at block granularity.
* :func:`torchtitan_module_fqns`: torchtitan's ``module_fqns_per_model_part``.
* :func:`vllm_layer_partition`: vLLM's ``VLLM_PP_LAYER_PARTITION``.
* :func:`llama_cpp_arguments`: llama.cpp's ``--n-gpu-layers``, ``--tensor-split`` and
  ``--override-tensor``.

All of them need the placement to be a *pipeline*: in the module's program order, each device holds
one consecutive run of nodes. Each framework can also only cut at certain points (a submodule call,
a layer boundary); where a placement cannot be expressed, :class:`ExportError` says which node or
device is at fault instead of returning a plan that would run something else.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from exactplace.core.errors import PlacementError
from exactplace.core.placement import Placement

__all__ = ["ExportError", "Stage", "accelerate_device_map", "deepspeed_parts", "deepspeed_pipeline",
           "llama_cpp_arguments", "megatron_layout", "pipeline_stages", "pipelining_split_spec", "stage_blocks",
           "torchtitan_module_fqns", "vllm_layer_partition"]


class ExportError(PlacementError):
    """The placement cannot be expressed in the target framework's terms."""


@dataclass(frozen=True)
class Stage:
    """A consecutive run of forward nodes (program order) on one device: positions ``first..last``."""

    device: int
    first: int
    last: int


def _devices(graph: Any, placement: Any) -> np.ndarray:
    if not hasattr(graph, "fx_names"):
        raise ExportError("Exports need a graph from exactplace.from_torch (it remembers the module).")
    device = placement.device if isinstance(placement, Placement) else placement
    if device is None:
        raise ExportError("The placement has no devices: nothing to export.")
    device = np.asarray(device)
    if device.shape != (graph.n,):
        raise ExportError(f"The placement has shape {device.shape}; the graph has {graph.n} nodes.")
    return device[: graph.forward_count]


def pipeline_stages(graph: Any, placement: Any) -> list[Stage]:
    """The pipeline stages of a placement, or ExportError when a device holds two separate runs.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> g = SimpleNamespace(fx_names=("a", "b", "c"), n=3, forward_count=3)
    >>> pipeline_stages(g, [0, 0, 1])
    [Stage(device=0, first=0, last=1), Stage(device=1, first=2, last=2)]
    >>> pipeline_stages(g, [0, 1, 0])
    Traceback (most recent call last):
    ...
    exactplace.export.ExportError: The placement is not a pipeline: device 0 runs 'a' and again 'c' after ...
    """
    device = _devices(graph, placement)
    stages: list[Stage] = []
    for i, d in enumerate(device.tolist()):
        if stages and stages[-1].device == d:
            stages[-1] = Stage(d, stages[-1].first, i)
            continue
        earlier = [s for s in stages if s.device == d]
        if earlier:
            raise ExportError(
                f"The placement is not a pipeline: device {d} runs {graph.fx_names[earlier[0].first]!r} and again "
                f"{graph.fx_names[i]!r} after device {stages[-1].device} ran {graph.fx_names[stages[-1].last]!r}."
            )
        stages.append(Stage(d, i, i))
    return stages


def _module_call(graph: Any, position: int) -> str | None:
    """The submodule a forward node calls, if it calls one exactly once in the whole module."""
    target = graph.targets[position]
    if target is None or graph.targets.count(target) != 1:
        return None
    return target


def _within(path: str, module: str) -> bool:
    return path == module or path.startswith(module + ".")


def _module_edge(graph: Any, position: int, begins: bool) -> str | None:
    """The outermost submodule whose code begins (ends) at forward node ``position``, from the module paths
    of a graph captured through torch.export (its nodes call no submodule): None when there is none."""
    paths = getattr(graph, "module_paths", ())
    if position >= len(paths) or not paths[position]:
        return None
    outside = paths[:position] if begins else paths[position + 1:]
    parts = paths[position].split(".")
    for depth in range(1, len(parts) + 1):
        module = ".".join(parts[:depth])
        if not any(_within(path, module) for path in outside):
            return module
    return None


def pipelining_split_spec(graph: Any, placement: Any) -> dict[str, Any]:
    """Split points for ``torch.distributed.pipelining.pipeline(module, mb_args, split_spec=...)``.

    A stage starting with a submodule call splits at its BEGINNING; otherwise a previous stage
    ending with one splits at its END. A boundary between two function nodes has no split point.
    On a graph captured through ``torch.export`` (Hugging Face models; its nodes call no submodule)
    the submodules come from the nodes' module paths: a stage that begins (the previous one that
    ends) with a module's first (last) node splits at the outermost such module, such as
    ``transformer.h.6`` at block granularity. ``pipeline`` traces with ``torch.export`` too, so a
    Hugging Face model must be built with ``use_cache=False`` (a ``DynamicCache`` output does not
    flatten).

    Returns
    -------
    dict
        Submodule qualified name -> ``SplitPoint``; one entry per stage after the first.
    """
    from torch.distributed.pipelining import SplitPoint

    stages = pipeline_stages(graph, placement)
    spec: dict[str, Any] = {}
    for previous, stage in itertools.pairwise(stages):
        begins = _module_call(graph, stage.first) or _module_edge(graph, stage.first, begins=True)
        ends = _module_call(graph, previous.last) or _module_edge(graph, previous.last, begins=False)
        if begins is not None:
            spec[begins] = SplitPoint.BEGINNING
        elif ends is not None and ends not in spec:
            spec[ends] = SplitPoint.END
        else:
            raise ExportError(
                f"torch.distributed.pipelining can only split at a submodule called once: the stage boundary "
                f"between {graph.fx_names[previous.last]!r} (device {previous.device}) and "
                f"{graph.fx_names[stage.first]!r} (device {stage.device}) falls between other operations. "
                "Capture with from_torch(..., granularity='module') to keep splits at submodule calls."
            )
    return spec


def deepspeed_parts(graph: Any, placement: Any) -> list[int]:
    """The stage boundaries among the layers of an ``nn.Sequential``, as DeepSpeed's ``PipelineModule.parts``.

    Stage ``i`` holds layers ``parts[i]..parts[i+1]-1``. The module must be an ``nn.Sequential``
    (DeepSpeed pipelines a list of layers) whose layers are each called once, in order. DeepSpeed
    takes no boundaries as an argument (its ``partition_method`` is the name of a rule):
    :func:`deepspeed_pipeline` gives arguments that build these stages.
    """
    stages = pipeline_stages(graph, placement)
    layers = [graph.targets[i] for i in range(graph.forward_count)]
    if any(t is None or "." in t or not t.isdigit() for t in layers) or layers != [str(i) for i in range(len(layers))]:
        raise ExportError(
            "DeepSpeed's PipelineModule pipelines a list of layers: the module must be an nn.Sequential whose "
            "layers are called once each, in order, with nothing between them."
        )
    return [stage.first for stage in stages] + [len(layers)]


def deepspeed_pipeline(graph: Any, placement: Any) -> dict[str, Any]:
    """Keyword arguments of DeepSpeed's ``PipelineModule`` that build exactly the placement's stages.

    ``PipelineModule(**deepspeed_pipeline(graph, plan), loss_fn=...)``, on a world size that is a
    multiple of the stage count. ``PipelineModule`` balances its layers by a named rule
    (``partition_method``: ``"parameters"``, ``"uniform"`` or ``"type:REGEX"``), never by given
    boundaries, so each stage's layers (:func:`deepspeed_parts`) become one ``nn.Sequential`` layer
    and ``"uniform"`` over as many layers as stages gives each stage its own. The layers are the
    captured module's own (not copies): DeepSpeed keeps those of its rank's stage.

    Returns
    -------
    dict
        ``layers`` (one ``nn.Sequential`` per stage), ``num_stages`` and ``partition_method``.
    """
    import torch

    parts = deepspeed_parts(graph, placement)
    layers = [torch.nn.Sequential(*(graph.module.get_submodule(str(i)) for i in range(first, end)))
              for first, end in itertools.pairwise(parts)]
    return {"layers": layers, "num_stages": len(layers), "partition_method": "uniform"}


def accelerate_device_map(graph: Any, placement: Any) -> dict[str, int | str]:
    """A ``device_map`` (submodule name -> GPU index or ``"cpu"``) for accelerate's ``dispatch_model``.

    accelerate places modules and runs any other operation where its inputs are, so every stage
    must start with a submodule call and a submodule called from two devices cannot be mapped. On a
    graph captured through ``torch.export`` (its nodes call no submodule) the keys are the
    outermost modules whose nodes all run on one device, from the nodes' module paths.
    Accelerator ``d`` of the placement becomes GPU ``d``; CPU devices become ``"cpu"`` (given a
    :class:`~exactplace.Placement`; a bare device array has no cluster to tell them apart).
    """
    stages = pipeline_stages(graph, placement)
    k = placement.cluster.accelerators if isinstance(placement, Placement) else None
    by_paths = not any(graph.targets[: graph.forward_count])  # torch.export: the nodes call no submodule
    paths = getattr(graph, "module_paths", ())
    for stage in stages:
        if stage.first > 0 and not (paths[stage.first] if by_paths else graph.targets[stage.first]):
            raise ExportError(
                f"accelerate runs {graph.fx_names[stage.first]!r} where its inputs are, not on device "
                f"{stage.device}: a stage must start with a submodule call."
            )
    where = {i: stage.device if k is None or stage.device < k else "cpu"
             for stage in stages for i in range(stage.first, stage.last + 1)}
    if by_paths:
        return _device_map_by_paths(paths, where)
    device_map: dict[str, int | str] = {}
    for i, target in enumerate(graph.targets[: graph.forward_count]):
        if target is None:
            continue
        if device_map.get(target, where[i]) != where[i]:
            raise ExportError(f"Submodule {target!r} is called on two devices ({device_map[target]} and {where[i]}).")
        device_map[target] = where[i]
    return device_map


def _device_map_by_paths(paths: tuple[str, ...], where: dict[int, int | str]) -> dict[str, int | str]:
    """The outermost modules whose nodes all run on one device, in program order, from the module
    path of each forward node (position -> device in ``where``)."""
    devices: dict[str, set[int | str]] = {}
    for i, d in where.items():
        parts = paths[i].split(".") if paths[i] else []
        for depth in range(1, len(parts) + 1):
            devices.setdefault(".".join(parts[:depth]), set()).add(d)
    return {module: next(iter(found)) for module, found in devices.items()
            if len(found) == 1 and ("." not in module or len(devices[module.rsplit(".", 1)[0]]) > 1)}


def stage_blocks(graph: Any, placement: Any) -> list[tuple[bool, list[int], bool]]:
    """Per pipeline stage: whether it runs code before the first repeated block (embeddings), the
    blocks it runs (their numbers), and whether it runs code after the last (norm, head, loss).

    The blocks are the numbered children of :func:`~exactplace.frontends.torch.block_container`, as
    ``from_torch(..., granularity="block")`` colours them; ExportError when the graph has none or a
    stage splits a block.
    """
    from exactplace.frontends.torch import block_container

    paths = list(getattr(graph, "module_paths", ()))
    container = block_container(paths)
    if container is None:
        raise ExportError("The graph has no repeated blocks (numbered children of one module) to lay out; capture "
                          "the model with from_torch(..., granularity='block').")
    depth = container.count(".") + 1
    block = [int(p.split(".")[depth]) if p.startswith(container + ".") else None for p in paths]
    numbered = [i for i, b in enumerate(block) if b is not None]
    first, last = numbered[0], numbered[-1]
    out, owner = [], {}
    for stage in pipeline_stages(graph, placement):
        mine = sorted({block[i] for i in range(stage.first, stage.last + 1) if block[i] is not None})
        for b in mine:
            if owner.setdefault(b, stage.device) != stage.device:
                raise ExportError(f"Block {container}.{b} is split between devices {owner[b]} and {stage.device}; "
                                  "a layout holds whole blocks.")
        out.append((stage.first < first, mine, stage.last > last))
    return out


def _ends_on_the_end_stages(graph: Any, placement: Any, library: str) -> list[tuple[bool, list[int], bool]]:
    """:func:`stage_blocks`, or ExportError when code before the first block runs on a later stage or
    code after the last on an earlier one: ``library`` builds the embedding on the first stage and
    the head on the last."""
    stages = stage_blocks(graph, placement)
    for position, (before, _, after) in enumerate(stages):
        if (before and position > 0) or (after and position < len(stages) - 1):
            where = "before the first block" if before and position > 0 else "after the last block"
            raise ExportError(f"Stage {position} runs code {where}; {library} puts the embedding on the first "
                              "stage and the head on the last.")
    return stages


def megatron_layout(graph: Any, placement: Any) -> str:
    """Megatron Core's ``pipeline_model_parallel_layout`` (``--pipeline-model-parallel-layout``) of a
    placement: per stage, ``E`` for the embedding, ``t`` per transformer block and ``L`` for the
    final norm, head and loss, stages separated by ``|``.

    Megatron puts the embedding on the first stage and the loss on the last, so ExportError when
    the placement runs code before the first block on a later stage, or after the last one on an
    earlier stage.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> paths = ("embed", "layers.0", "layers.1", "layers.2", "norm", "head")
    >>> g = SimpleNamespace(fx_names=paths, module_paths=paths, n=6, forward_count=6)
    >>> megatron_layout(g, [0, 0, 0, 1, 1, 1])
    'Ett|tL'
    """
    stages = _ends_on_the_end_stages(graph, placement, "Megatron")
    parts = [("E" if before else "") + "t" * len(blocks) + ("L" if after else "") for before, blocks, after in stages]
    if not stages[0][0]:
        parts[0] = "E" + parts[0]  # a model whose blocks read the inputs directly still embeds on stage 0
    if not stages[-1][2]:
        parts[-1] += "L"
    return "|".join(parts)


def vllm_layer_partition(graph: Any, placement: Any) -> str:
    """vLLM's ``VLLM_PP_LAYER_PARTITION``: the number of blocks of each pipeline stage, comma-separated,
    for ``--pipeline-parallel-size`` equal to the stage count.

    vLLM builds the embedding on the first rank and the final norm and head on the last, so
    ExportError when the placement runs them elsewhere.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> paths = ("embed", "layers.0", "layers.1", "layers.2", "norm", "head")
    >>> g = SimpleNamespace(fx_names=paths, module_paths=paths, n=6, forward_count=6)
    >>> vllm_layer_partition(g, [0, 0, 1, 1, 1, 1])
    '1,2'
    """
    return ",".join(str(len(blocks)) for _, blocks, _ in _ends_on_the_end_stages(graph, placement, "vLLM"))


def torchtitan_module_fqns(graph: Any, placement: Any) -> list[list[str]]:
    """torchtitan's ``module_fqns_per_model_part`` (``[parallelism]`` in its config): per pipeline stage,
    the model's direct children it runs, with the repeated blocks as ``layers.N``.

    torchtitan keeps the listed children of each chunk and drops the others, so every child (other
    than the block container) must run on one stage and the blocks must be numbered children of a
    direct child of the model (as in torchtitan's own models); ExportError otherwise. Code of the
    model's own ``forward`` runs on every chunk, as torchtitan runs it.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> paths = ("tok_embeddings", "layers.0", "layers.1", "", "norm", "output")
    >>> g = SimpleNamespace(fx_names=paths, module_paths=paths, n=6, forward_count=6)
    >>> torchtitan_module_fqns(g, [0, 0, 1, 1, 1, 1])
    [['tok_embeddings', 'layers.0'], ['layers.1', 'norm', 'output']]
    """
    from exactplace.frontends.torch import block_container

    stage_blocks(graph, placement)  # refuses a split block
    paths = graph.module_paths
    container = block_container(paths)
    if container is not None and "." in container:
        raise ExportError(f"torchtitan splits the model's direct children, but the blocks are in {container!r}: "
                          "capture the module whose child holds the blocks.")
    owner: dict[str, int] = {}
    fqns = []
    for stage in pipeline_stages(graph, placement):
        names: list[str] = []
        for path in paths[stage.first: stage.last + 1]:
            parts = path.split(".")
            if not path:
                continue
            name = ".".join(parts[:2]) if parts[0] == container else parts[0]
            if owner.setdefault(name, stage.device) != stage.device:
                raise ExportError(f"Module {name!r} runs on devices {owner[name]} and {stage.device}; torchtitan "
                                  "keeps a module whole in one chunk.")
            if name not in names:
                names.append(name)
        fqns.append(names)
    return fqns


#: llama.cpp's names of the input layer's tensors, which it keeps on the CPU unless told otherwise.
_LLAMA_CPP_INPUT_TENSORS = r"^(token_embd|token_embd_norm|position_embd|token_types)\."


def llama_cpp_arguments(graph: Any, placement: Any, backend: str = "CUDA") -> dict[str, str]:
    """llama.cpp's command-line options that load the model's layers where the placement runs them.

    llama.cpp gives each GPU a consecutive run of its layer slots (the blocks, then one slot for
    the output norm and head), in GPU order, by the proportions of ``--tensor-split``; the slots
    before the last ``--n-gpu-layers`` stay on the CPU, and so does the token embedding unless
    ``--override-tensor`` moves it. The proportions given are the slot counts themselves, which
    llama.cpp's rule maps back to exactly these runs. Accelerator ``d`` is ``{backend}{d}`` (the
    name of llama.cpp's buffer type, such as ``CUDA0``); CPU devices are the CPU (given a
    :class:`~exactplace.Placement`; a bare device array is all accelerators).

    ExportError when the blocks and head do not run on the CPU first and then on accelerators in
    increasing order, or when the code after the last block is split.

    Returns
    -------
    dict
        Option -> value: ``--n-gpu-layers``, ``--tensor-split`` and, when the embedding is on an
        accelerator, ``--override-tensor``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> paths = ("embed", "layers.0", "layers.1", "layers.2", "norm", "head")
    >>> g = SimpleNamespace(fx_names=paths, module_paths=paths, n=6, forward_count=6)
    >>> options = llama_cpp_arguments(g, [0, 0, 1, 1, 1, 1])
    >>> options["--n-gpu-layers"], options["--tensor-split"], options["--override-tensor"].endswith("=CUDA0")
    ('4', '1,3', True)
    """
    k = placement.cluster.accelerators if isinstance(placement, Placement) else None
    slots = []  # the device of each layer slot: every block, then the output
    stages = pipeline_stages(graph, placement)
    described = stage_blocks(graph, placement)
    for stage, (_, blocks, _) in zip(stages, described, strict=True):
        slots += [stage.device] * len(blocks)
    heads = [stage.device for stage, (_, _, after) in zip(stages, described, strict=True) if after]
    if len(heads) > 1:
        raise ExportError(f"The code after the last block runs on devices {heads}; llama.cpp loads the output "
                          "norm and head on one device.")
    slots.append(heads[0] if heads else slots[-1])
    on_cpu = [k is not None and d >= k for d in slots]
    gpu_from = on_cpu.index(False) if False in on_cpu else len(slots)
    if any(on_cpu[gpu_from:]):
        raise ExportError(f"Layer slot {gpu_from + on_cpu[gpu_from:].index(True)} runs on a CPU after an accelerator; "
                          "llama.cpp keeps only the first layers on the CPU.")
    gpus = slots[gpu_from:]
    if any(b < a for a, b in itertools.pairwise(gpus)):
        raise ExportError(f"The layers run on accelerators {list(dict.fromkeys(gpus))} in that order; llama.cpp "
                          "gives the GPUs consecutive layers in increasing order (renumber them with --device).")
    options = {"--n-gpu-layers": str(len(gpus))}
    if gpus:
        options["--tensor-split"] = ",".join(str(c) for c in np.bincount(np.asarray(gpus)).tolist())
    embedding = stages[0].device if described[0][0] else None
    if embedding is not None and (k is None or embedding < k):
        options["--override-tensor"] = rf"{_LLAMA_CPP_INPUT_TENSORS}={backend}{embedding}"
    return options
