"""The certified plan under 1F1B against the splits the pipeline libraries make themselves.

Captures Hugging Face models from their configs (random weights, nothing downloaded) with
``from_torch(..., training=True, granularity="block")``: each repeated block is one colour
class, embeddings, final norm and head apart; memory holds weights, gradients and Adam's two
moments plus the node's output, which is also its activation. Then, on 4 identical accelerators under
``schedule="1f1b", microbatches=8``, with memory per accelerator unlimited and then capped at
``--tight`` times the least memory at which a 4-accelerator pipeline exists (found by bisection
with schedule-dp), it scores with the evaluator:

* ``schedule-dp``: the certified optimum (``solve(..., schedule="1f1b", microbatches=8)``), and
  ``schedule-mip``, the same problem as one IP per stage count (HiGHS);
* DeepSpeed ``partition_method="parameters"``: ``deepspeed.runtime.utils.partition_balanced`` over
  each layer's trainable bytes (the layers being the colour classes in program order), and
  ``"uniform"``: ``partition_uniform``, as ``PipelineModule`` calls them;
* accelerate's ``"balanced"`` map: ``infer_auto_device_map`` with ``get_balanced_memory`` over the same 4
  devices (the blocks unsplit), each node on its module's device.

A row gives each split's time per microbatch (ratio to the optimum) and whether every stage fits
under the schedule. Needs ``torch``, ``transformers``, ``deepspeed`` and ``accelerate``.

Usage: ``python benchmarks/bench_schedule.py [--models gpt2,bert,llama] [--tight 1.1] [--tokens 128]``
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from exactplace import Cluster, Status, solve
from exactplace.evaluators import check_feasibility, evaluate

SCHEDULE = {"schedule": "1f1b", "microbatches": 8}
ACCELERATORS = 4


def models(tokens: int) -> dict:
    """name -> (module, example inputs, block class) for the configurations of the issue."""
    import torch
    from transformers import BertConfig, BertModel, GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return {
        "gpt2": lambda: (GPT2LMHeadModel(GPT2Config()), (torch.randint(0, 50257, (1, tokens)),), "GPT2Block"),
        "bert": lambda: (BertModel(BertConfig()), (torch.randint(0, 30522, (1, tokens)),), "BertLayer"),
        "llama": lambda: (LlamaForCausalLM(LlamaConfig(hidden_size=1024, intermediate_size=3072, num_hidden_layers=16,
                                                       num_attention_heads=16, num_key_value_heads=8,
                                                       vocab_size=32000)),
                          (torch.randint(0, 32000, (1, tokens)),), "LlamaDecoderLayer"),
    }


def layers(graph) -> list[np.ndarray]:
    """The colour classes of the forward nodes in program order: the layers a pipeline library splits."""
    forward = np.flatnonzero(~graph.backward)
    order = sorted(set(graph.color[forward].tolist()), key=lambda c: int(np.flatnonzero(graph.color == c)[0]))
    return [np.flatnonzero(graph.color == c) for c in order]


def from_parts(graph, groups: list[np.ndarray], parts: list[int]) -> np.ndarray:
    """A device array from DeepSpeed's part boundaries over ``groups`` (stage s: groups parts[s]..parts[s+1])."""
    device = np.empty(graph.n, dtype=np.int64)
    for stage in range(len(parts) - 1):
        for group in groups[parts[stage]:parts[stage + 1]]:
            device[group] = stage
    return device


def deepspeed_splits(graph) -> dict[str, np.ndarray]:
    from deepspeed.runtime.utils import partition_balanced, partition_uniform

    groups = layers(graph)
    trainable = [float((graph.memory[g] - graph.activation[g]).sum()) for g in groups]
    return {"deepspeed parameters": from_parts(graph, groups, [int(p) for p in partition_balanced(trainable,
                                                                                                  ACCELERATORS)]),
            "deepspeed uniform": from_parts(graph, groups, [int(p) for p in partition_uniform(len(groups),
                                                                                              ACCELERATORS)])}


def accelerate_split(graph, module, block: str, memory: float) -> np.ndarray | None:
    """accelerate's balanced map as a device array; None when it leaves modules off the accelerators."""
    from accelerate import infer_auto_device_map
    from accelerate.utils import get_balanced_memory

    budget = {d: int(min(memory, 2**62)) for d in range(ACCELERATORS)}
    balanced = get_balanced_memory(module, max_memory=budget, no_split_module_classes=[block])
    device_map = infer_auto_device_map(module, max_memory=balanced, no_split_module_classes=[block])
    if any(not isinstance(d, int) for d in device_map.values()):
        return None

    def lookup(path: str) -> int | None:
        while True:
            if path in device_map:
                return device_map[path]
            if "" in device_map:
                return device_map[""]
            if not path:
                return None
            path = path.rpartition(".")[0]

    device = np.full(graph.n, -1, dtype=np.int64)
    previous = 0
    for group in layers(graph):
        paths = [graph.module_paths[i] for i in group if i < len(graph.module_paths) and graph.module_paths[i]]
        found = [lookup(path) for path in paths]
        found = [d for d in found if d is not None]
        previous = found[0] if found else previous
        device[group] = previous  # the class's backward nodes too
    return device


def least_memory(graph) -> float:
    """The least memory per accelerator at which a 4-accelerator 1F1B pipeline exists (to 1%)."""
    low, high = 0.0, float(graph.memory.sum() + 7 * graph.activation.sum())
    while high - low > 0.01 * high:
        middle = (low + high) / 2
        if solve(graph, Cluster(ACCELERATORS, memory=middle, cpus=0), **SCHEDULE).status is Status.INFEASIBLE:
            low = middle
        else:
            high = middle
    return high


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="gpt2,bert,llama")
    parser.add_argument("--tight", type=float, default=1.1)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    from exactplace.frontends.torch import from_torch

    builders = models(args.tokens)
    print("| model | memory per accelerator | split | time per microbatch (ms) | x optimum | fits | seconds |")
    print("|---|---|---|---:|---:|---|---:|")
    for name in args.models.split(","):
        module, inputs, block = builders[name]()
        clock = time.perf_counter()
        graph = from_torch(module, inputs, training=True, granularity="block", repeats=1, warmup=1)
        captured = time.perf_counter() - clock
        tight = args.tight * least_memory(graph)
        for memory in (math.inf, tight):
            cluster = Cluster(ACCELERATORS, memory=memory, cpus=0)
            clock = time.perf_counter()
            plan = solve(graph, cluster, **SCHEDULE)
            seconds = time.perf_counter() - clock
            shown = "unlimited" if math.isinf(memory) else f"{memory / 1e9:.2f} GB"
            clock = time.perf_counter()
            ip = solve(graph, cluster, method="schedule-mip", **SCHEDULE)
            ip_seconds = time.perf_counter() - clock
            splits = {"schedule-dp": plan.device, "schedule-mip": ip.device, **deepspeed_splits(graph),
                      "accelerate balanced": accelerate_split(graph, module, block, memory)}
            for split, device in splits.items():
                if device is None:
                    print(f"| {name} | {shown} | {split} | - | - | no (modules off the accelerators) | |")
                    continue
                value = evaluate(graph, cluster, device, **SCHEDULE)
                broken = check_feasibility(graph, cluster, device, **SCHEDULE)
                fits = "yes" if not broken else f"no ({broken[0].kind}: {broken[0].message[:90]})"
                took = {"schedule-dp": f"{seconds:.2f} (capture {captured:.1f})",
                        "schedule-mip": f"{ip_seconds:.2f} ({ip.status.value})"}.get(split, "")
                print(f"| {name} | {shown} | {split} | {value:.3f} | {value / plan.objective:.3f} | {fits} | {took} |",
                      flush=True)


if __name__ == "__main__":
    main()
