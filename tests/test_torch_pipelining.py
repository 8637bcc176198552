"""``torch.distributed.pipelining`` runs the Hugging Face GPT-2 module itself, split where
``pipelining_split_spec`` says, on 2 and 4 CPU processes (gloo), with the unsplit model's outputs."""

from __future__ import annotations

import pytest
from processes import run_ranks

pytest.importorskip("torch")
pytest.importorskip("transformers")

#: One rank, as a user's script: GPT-2 from a small config captured at block granularity, the
#: blocks in `world` consecutive stages, the model itself split by torch's pipeline() and run by
#: ScheduleGPipe over 2 microbatches; the last rank compares the logits with the unsplit model's.
RANK = """
import json, os
import numpy as np, torch
import torch.distributed as dist
from torch.distributed.pipelining import ScheduleGPipe, pipeline
from transformers import GPT2Config, GPT2LMHeadModel
import exactplace as ep
from exactplace import export

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
dist.init_process_group("gloo", rank=rank, world_size=world)
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=64, n_head=2, vocab_size=100, use_cache=False)).eval()
ids = torch.randint(0, 100, (4, 16))
microbatch = ids[:2]
graph = ep.from_torch(model, (microbatch,), granularity="block", repeats=1)
# one stage per process: the colour classes in program order, in `world` consecutive runs
order = sorted(set(graph.color.tolist()), key=lambda c: int(np.flatnonzero(graph.color == c)[0]))
device = np.empty(graph.n, dtype=np.int64)
for stage, classes in enumerate(np.array_split(np.array(order), world)):
    device[np.isin(graph.color, classes)] = stage
pipe = pipeline(model, mb_args=(microbatch,), split_spec=export.pipelining_split_spec(graph, device))
schedule = ScheduleGPipe(pipe.build_stage(rank, device=torch.device("cpu")), n_microbatches=2)
with torch.no_grad():
    out = schedule.step(ids) if rank == 0 else schedule.step()
    expected = model(ids).logits
found = {"stages": pipe.num_stages}
if rank == world - 1:
    found["same"] = bool(torch.allclose(out, expected, atol=1e-5))
print(json.dumps(found))
dist.destroy_process_group()
"""


@pytest.mark.parametrize("world", [2, 4])
def test_pipelining_runs_the_hugging_face_module_itself(tmp_path, world: int) -> None:
    found = run_ranks(RANK, world, tmp_path)
    assert [f["stages"] for f in found] == [world] * world
    assert found[-1]["same"], "the pipeline's logits differ from the unsplit model's"
