"""DeepSpeed's own ``PipelineModule``, on 2 CPU processes (gloo), builds the stages ``deepspeed_pipeline`` exports."""

from __future__ import annotations

import pytest
from processes import run_ranks

pytest.importorskip("torch")
pytest.importorskip("deepspeed")

#: One rank of the pipeline, as a user's script: layers 0-2 on device 0, layers 3-6 on device 1; it
#: builds the exported PipelineModule, runs its own stage and prints what it found as JSON.
RANK = """
import json, os, sys
import numpy as np, torch
import deepspeed
from deepspeed.pipe import PipelineModule
import exactplace as ep
from exactplace import export

deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)
torch.manual_seed(0)
module = torch.nn.Sequential(*(torch.nn.Linear(8, 8) for _ in range(5)), torch.nn.ReLU(), torch.nn.Linear(8, 3)).eval()
x = torch.randn(4, 8)
graph = ep.from_torch(module, (x,), repeats=1)
device = np.array([0, 0, 0, 1, 1, 1, 1])
pipe = PipelineModule(**export.deepspeed_pipeline(graph, device))
rank = int(os.environ["RANK"])
first, end = export.deepspeed_parts(graph, device)[rank: rank + 2]
with torch.no_grad():
    inputs = module[:first](x)
    same = bool(torch.allclose(pipe(inputs), module[first:end](inputs)))
print(json.dumps({"parts": pipe.parts, "same": same, "parameters": sum(p.numel() for p in pipe.parameters()),
                  "expected": sum(p.numel() for p in module[first:end].parameters())}))
"""


def test_pipeline_module_builds_the_exported_stages(tmp_path) -> None:
    for rank, found in enumerate(run_ranks(RANK, 2, tmp_path)):
        assert found["parts"] == [0, 1, 2]  # one exported layer per stage
        assert found["same"], f"rank {rank}'s stage computes something else"
        assert found["parameters"] == found["expected"]  # its own layers, and only those
