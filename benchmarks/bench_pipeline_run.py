"""A certified plan run as a real pipeline on CPU processes: measured step time against the prediction.

GPT-2 from a config (random weights, ``use_cache=False``) is captured at block granularity with
``from_torch`` (CPU times, one thread per node). It is planned under ``schedule="gpipe"`` with
``microbatches=M`` on exactly ``world`` stages (``stages=world``). Then ``world`` processes (gloo, one
thread each) split the Hugging Face module itself with ``torch.distributed.pipelining.pipeline`` at
``export.pipelining_split_spec`` and run ``ScheduleGPipe``, forward only. Each rank times its stage
module on one microbatch (median of ``--repeats``), alone on the machine and with every rank
timing at once, and the whole step (median of ``--steps``). The
prediction is the evaluator's: per stage its load, per step ``(M + p - 1)`` times the slowest.
Stages beyond the machine's cores share them, so their times grow; ``env`` says this machine has 2.

Usage: ``python benchmarks/bench_pipeline_run.py [--world 2,4] [--microbatches 8] [--layers 8] [--width 512]``
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time

RANK = r"""
import json, os, statistics, time
import torch
import torch.distributed as dist
from torch.distributed.pipelining import ScheduleGPipe, SplitPoint, pipeline
from transformers import GPT2Config, GPT2LMHeadModel

torch.set_num_threads(1)
settings = json.loads(os.environ["PIPELINE"])
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", rank=rank, world_size=world)
torch.manual_seed(0)
config = GPT2Config(n_layer=settings["layers"], n_embd=settings["width"], n_head=8, use_cache=False)
model = GPT2LMHeadModel(config).eval()
m = settings["microbatches"]
ids = torch.randint(0, config.vocab_size, (m, settings["tokens"]))
spec = {name: SplitPoint[point] for name, point in settings["spec"].items()}
pipe = pipeline(model, mb_args=(ids[:1],), split_spec=spec)
stage = pipe.build_stage(rank, device=torch.device("cpu"))
schedule = ScheduleGPipe(stage, n_microbatches=m)
received = []  # what the stage module ran on, to time it alone afterwards
stage.submod.register_forward_pre_hook(lambda module, args: received.append(args) if not received else None)
with torch.no_grad():
    steps = []
    for _ in range(settings["steps"] + 1):  # the first step warms up
        dist.barrier()
        start = time.perf_counter()
        schedule.step(ids) if rank == 0 else schedule.step()
        dist.barrier()
        steps.append(time.perf_counter() - start)
    # this stage on one microbatch, on what it received in the first step: alone on the machine (one
    # rank after the other), and with every rank timing its own at once
    def timed():
        for _ in range(2):
            stage.submod(*received[0])
        times = []
        for _ in range(settings["repeats"]):
            start = time.perf_counter()
            stage.submod(*received[0])
            times.append(time.perf_counter() - start)
        return times
    for turn in range(world):
        dist.barrier()
        if turn == rank:
            alone = timed()
    dist.barrier()
    together = timed()
    dist.barrier()
print(json.dumps({"rank": rank, "stage_ms": 1e3 * statistics.median(alone),
                  "together_ms": 1e3 * statistics.median(together),
                  "step_ms": 1e3 * statistics.median(steps[1:])}))
dist.destroy_process_group()
"""


def run_ranks(world: int, settings: dict) -> list[dict]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": str(world),
           "PIPELINE": json.dumps(settings), "OMP_NUM_THREADS": "1"}
    ranks = [subprocess.Popen([sys.executable, "-c", RANK], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env={**env, "RANK": str(rank)}) for rank in range(world)]
    found, failed = [], []
    for rank, process in enumerate(ranks):
        out, err = process.communicate(timeout=600)
        if process.returncode != 0:
            failed.append(f"rank {rank}: {err[-1500:]}")
        else:
            found.append(json.loads(out.strip().splitlines()[-1]))
    if failed:
        raise RuntimeError("\n".join(failed))
    return sorted(found, key=lambda r: r["rank"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world", default="2,4")
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    import exactplace as ep
    from exactplace import export
    from exactplace.evaluators import pipeline_score

    torch.manual_seed(0)
    config = GPT2Config(n_layer=args.layers, n_embd=args.width, n_head=8, use_cache=False)
    model = GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, config.vocab_size, (1, args.tokens))
    clock = time.perf_counter()
    graph = ep.from_torch(model, (ids,), granularity="block", repeats=args.repeats)
    print(f"GPT-2 {args.layers} layers x {args.width}, microbatch 1 x {args.tokens} tokens, M = {args.microbatches}: "
          f"captured in {time.perf_counter() - clock:.1f} s\n")
    print("| processes | stage | predicted stage ms | measured alone ms | ratio | measured with the others ms | "
          "predicted step ms | measured step ms | ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for world in (int(w) for w in args.world.split(",")):
        cluster = ep.Cluster(world, cpus=0)
        plan = ep.solve(graph, cluster, schedule="gpipe", microbatches=args.microbatches, stages=world)
        score = pipeline_score(graph, cluster, plan.device, "gpipe", args.microbatches)
        spec = {name: point.name for name, point in export.pipelining_split_spec(graph, plan).items()}
        settings = {"layers": args.layers, "width": args.width, "tokens": args.tokens, "spec": spec,
                    "microbatches": args.microbatches, "steps": args.steps, "repeats": args.repeats}
        found = run_ranks(world, settings)
        # the stages of the plan in pipeline order are the ranks (the export's stages in program order)
        order = [s.device for s in export.pipeline_stages(graph, plan)]
        loads = dict(zip(score.stages, score.loads.tolist()))
        measured_step = max(r["step_ms"] for r in found)
        for rank, result in enumerate(found):
            predicted = loads[order[rank]]
            step = (f"{score.step_time:.1f} | {measured_step:.1f} | {measured_step / score.step_time:.2f}"
                    if rank == 0 else " | | ")
            print(f"| {world} | {rank} | {predicted:.1f} | {result['stage_ms']:.1f} | "
                  f"{result['stage_ms'] / predicted:.2f} | {result['together_ms']:.1f} | {step} |", flush=True)


if __name__ == "__main__":
    main()
