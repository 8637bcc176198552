"""A 70B Llama configuration captured on the ``meta`` device and planned, all in seconds.

``LlamaForCausalLM`` with Llama-3-70B's shapes (80 layers, 8192 wide, 64 heads, 8 KV heads,
vocabulary 128256; about 70.6B parameters, bf16) is built on the ``meta`` device, so nothing is
allocated. ``from_torch(..., training=True, granularity="block", roofline=...)`` captures it by
torch.export and costs every node by the roofline of an H100-class accelerator (989 TFLOP/s bf16,
3.35 TB/s, 50 GB/s links). Weights, gradients and Adam's two moments are counted, plus the
activations. ``solve`` then certifies a 1F1B plan (32 microbatches of 1 x 1024 tokens) on 8, 16
and 32 accelerators of 141 GB. The table gives the seconds of each step and the plan found.

Usage: ``python benchmarks/bench_meta_capture.py [--tokens 1024] [--memory 141e9] [--microbatches 32]``
"""

from __future__ import annotations

import argparse
import time

import exactplace as ep
from exactplace.frontends.torch_costs import Roofline

H100 = Roofline(peak_flops=989e12, memory_bandwidth=3.35e12, link_bandwidth=50e9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--memory", type=float, default=141e9)
    parser.add_argument("--microbatches", type=int, default=32)
    args = parser.parse_args()
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    start = time.perf_counter()
    config = LlamaConfig(hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64,
                         num_key_value_heads=8, vocab_size=128256, use_cache=False)
    with torch.device("meta"):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    ids = torch.randint(0, config.vocab_size, (1, args.tokens), device="meta")
    graph = ep.from_torch(model, (ids,), training=True, granularity="block", roofline=H100)
    captured = time.perf_counter() - start
    parameters = sum(p.numel() for p in model.parameters())
    print(f"{parameters / 1e9:.1f}B parameters: {graph.n} nodes, {len(set(graph.color.tolist()))} colour classes, "
          f"{graph.memory.sum() / 1e9:.0f} GB in all; captured in {captured:.1f} s\n")
    print("| accelerators | status | stages | time per microbatch (ms) | step (ms) | seconds |")
    print("|---:|---|---:|---:|---:|---:|")
    for accelerators in (8, 16, 32):
        clock = time.perf_counter()
        plan = ep.solve(graph, ep.Cluster(accelerators, memory=args.memory, cpus=0), schedule="1f1b",
                        microbatches=args.microbatches)
        seconds = time.perf_counter() - clock
        value = "-" if plan.objective is None else f"{plan.objective:.1f}"
        step = "-" if plan.objective is None else f"{plan.objective * args.microbatches:.0f}"
        print(f"| {accelerators} | {plan.status.value} | {plan.info.get('stages', '-')} | {value} | {step} | "
              f"{seconds:.2f} |", flush=True)
    print(f"\nIn all: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
