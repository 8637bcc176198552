"""from_torch at block granularity, and through torch.export where torch.fx cannot trace the module.

A small language model built here (embedding, numbered blocks, a head tied to the embedding) and,
where ``transformers`` is installed, Hugging Face GPT-2, BERT, Llama, Mistral, the T5 encoder and ViT built
from small configs
(random weights, nothing downloaded): captured with no code around the model, each repeated block
one colour, and replayed on virtual CPU devices to the unsplit model's outputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import exactplace as ep

torch = pytest.importorskip("torch")
nn = torch.nn


class Layer(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm, self.fc = nn.LayerNorm(width), nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc(self.norm(x)).relu()


class TinyLM(nn.Module):
    """Its forward branches on a shape, which torch.fx cannot trace (a Proxy has no truth value)."""

    def __init__(self, vocab: int = 50, width: int = 16, depth: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList(Layer(width) for _ in range(depth))
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.embed(ids)
        if ids.shape[1] > 1:
            h = h * 0.5
        for layer in self.layers:
            h = layer(h)
        return {"logits": self.head(h)}


def replayed(graph: ep.Graph, accelerators: int) -> tuple[ep.Placement, object]:
    placement = ep.solve(graph, ep.Cluster(accelerators=accelerators, cpus=0))
    assert len(set(placement.device.tolist())) >= 2, "the plan should split the model"
    return placement, ep.replay(graph, placement, devices="cpu", samples=2, repeats=1).outputs


def test_a_module_torch_fx_cannot_trace_is_captured_by_torch_export() -> None:
    torch.manual_seed(0)
    module, ids = TinyLM().eval(), torch.randint(0, 50, (2, 6))
    with pytest.raises(torch.fx.proxy.TraceError):
        torch.fx.symbolic_trace(module)
    graph = ep.from_torch(module, (ids,), repeats=1)
    assert "layers.1.fc" in graph.module_paths and "head" in graph.module_paths
    _, outputs = replayed(graph, 3)
    torch.testing.assert_close(outputs, module(ids))


def test_block_granularity_colours_each_block_and_keeps_embedding_and_head_apart() -> None:
    torch.manual_seed(0)
    module, ids = TinyLM(depth=4).eval(), torch.randint(0, 50, (2, 6))
    graph = ep.from_torch(module, (ids,), granularity="block", repeats=1)
    groups: dict[int, set[str]] = {}
    for i in range(graph.forward_count):
        path = graph.module_paths[i]
        top = ".".join(path.split(".")[:2]) if path.startswith("layers.") else path.split(".")[0]
        groups.setdefault(int(graph.color[i]), set()).add(top or "(top)")
    named = sorted(tuple(sorted(g - {"(top)"})) for g in groups.values())
    assert named == [("embed",), ("head",), ("layers.0",), ("layers.1",), ("layers.2",), ("layers.3",)]
    placement, outputs = replayed(graph, 3)
    torch.testing.assert_close(outputs, module(ids))
    for color in groups:  # a block is never cut
        assert len({int(placement.device[i]) for i in np.flatnonzero(graph.color[: graph.forward_count] == color)}) == 1


#: Per model: its class and config in transformers (small, random weights), and its blocks' container.
#: ViT takes images (a 16 x 16 image of 8 x 8 patches); the others token ids.
HF_MODELS = {
    "gpt2": ("GPT2LMHeadModel", "GPT2Config", {"n_layer": 3, "n_embd": 32, "n_head": 2}, "transformer.h"),
    "bert": ("BertModel", "BertConfig", {"num_hidden_layers": 3, "hidden_size": 32, "num_attention_heads": 2,
                                         "intermediate_size": 64}, "encoder.layer"),
    "llama": ("LlamaForCausalLM", "LlamaConfig", {"num_hidden_layers": 3, "hidden_size": 32, "intermediate_size": 64,
                                                  "num_attention_heads": 2, "num_key_value_heads": 1}, "model.layers"),
    "mistral": ("MistralForCausalLM", "MistralConfig", {"num_hidden_layers": 3, "hidden_size": 32,
                                                        "intermediate_size": 64, "num_attention_heads": 2,
                                                        "num_key_value_heads": 1, "head_dim": 16}, "model.layers"),
    # T5's relative position buckets are computed in place (add_): profiling must not run it twice on one input
    "t5-encoder": ("T5EncoderModel", "T5Config", {"num_layers": 3, "d_model": 32, "d_ff": 64, "num_heads": 2,
                                                  "d_kv": 16}, "encoder.block"),
    "vit": ("ViTModel", "ViTConfig", {"num_hidden_layers": 3, "hidden_size": 32, "num_attention_heads": 2,
                                      "intermediate_size": 64, "image_size": 16, "patch_size": 8}, "layers"),
}


@pytest.mark.parametrize("name", list(HF_MODELS))
def test_hugging_face_models_are_captured_in_blocks_and_replayed(name: str) -> None:
    transformers = pytest.importorskip("transformers")
    model_class, config_class, config, container = HF_MODELS[name]
    torch.manual_seed(0)
    vocabulary = {} if name == "vit" else {"vocab_size": 100}
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**vocabulary, **config)).eval()
    ids = torch.randn(1, 3, 16, 16) if name == "vit" else torch.randint(0, 100, (1, 8))
    graph = ep.from_torch(model, (ids,), granularity="block", repeats=1)
    blocks = {".".join(p.split(".")[: container.count(".") + 2]) for p in graph.module_paths
              if p.startswith(container + ".")}
    assert blocks == {f"{container}.{i}" for i in range(3)}
    for block in blocks:  # each block one colour, which nothing outside it shares
        inside = {int(graph.color[i]) for i in range(graph.forward_count)
                  if graph.module_paths[i] == block or graph.module_paths[i].startswith(block + ".")}
        assert len(inside) == 1
    _, outputs = replayed(graph, 2)
    expected = model(ids)
    key = "logits" if "logits" in expected else "last_hidden_state"
    torch.testing.assert_close(outputs[key], expected[key])
