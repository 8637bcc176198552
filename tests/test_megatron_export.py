"""Megatron Core's own layout parser reads what ``export.megatron_layout`` writes, for a Hugging Face
GPT-2 captured at block granularity."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
layout_module = pytest.importorskip("megatron.core.transformer.pipeline_parallel_layer_layout")

import exactplace as ep  # noqa: E402
from exactplace import export  # noqa: E402


@pytest.fixture(scope="module")
def gpt2():
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=6, n_embd=32, n_head=2, vocab_size=64)
    model = transformers.GPT2LMHeadModel(config).eval()
    return ep.from_torch(model, (torch.randint(0, 64, (1, 8)),), granularity="block", repeats=1)


def blocks_per_stage(graph, splits):
    """A device array holding the classes in program order, cut after the given numbers of classes."""
    order = sorted(set(graph.color.tolist()), key=lambda c: int(np.flatnonzero(graph.color == c)[0]))
    device = np.empty(graph.n, dtype=np.int64)
    for stage, classes in enumerate(np.split(np.array(order), splits)):
        device[np.isin(graph.color, classes)] = stage
    return device


def test_megatron_parses_and_validates_the_layout(gpt2):
    plan = ep.solve(gpt2, ep.Cluster(3, cpus=0))
    layout = export.megatron_layout(gpt2, plan)
    stages = len(layout.split("|"))
    parsed = layout_module.PipelineParallelLayerLayout(layout, stages)
    parsed.validate_layer_layout(num_layers=6, mtp_num_layers=None)
    decoder = layout_module.LayerType.decoder
    built = [parsed.layout[rank][0].count(decoder) for rank in range(stages)]
    expected = [len(blocks) for _, blocks, _ in export.stage_blocks(gpt2, plan)]
    assert built == expected and sum(built) == 6


def test_a_stage_that_embeds_after_the_first_is_refused(gpt2):
    # the first stage holds the token embedding alone, the position embedding goes to the second
    device = blocks_per_stage(gpt2, [1, 5])
    with pytest.raises(export.ExportError, match="Stage 1 runs code before the first block"):
        export.megatron_layout(gpt2, device)
