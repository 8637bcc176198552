"""Read ONNX models (``model.onnx``) as exactplace workloads.

An ONNX model is a protobuf ``ModelProto``; its graph lists operator nodes that read and write
named tensors. :func:`onnx_to_dict` turns it into the dnn-partitioning dictionary (its docstring
states every mapping choice); :func:`node_flops` is the FLOP model its times come from.

* :mod:`~exactplace.frontends.onnx.convert`: the conversion (nodes, edges, memory, times);
* :mod:`~exactplace.frontends.onnx.model`: the protobuf basics (parsing, subgraphs, element sizes);
* :mod:`~exactplace.frontends.onnx.shapes`: static shapes by onnx's shape inference;
* :mod:`~exactplace.frontends.onnx.checks`: the checks a model must pass at the boundary;
* :mod:`~exactplace.frontends.onnx.flops`, :mod:`~exactplace.frontends.onnx.profile`: the times.

``onnx`` and ``onnxruntime`` are imported inside the functions: ``import exactplace`` never loads them.
"""

from __future__ import annotations

from exactplace.frontends.onnx.convert import ACCELERATOR_RATE, CPU_RATE, onnx_to_dict
from exactplace.frontends.onnx.flops import node_flops
from exactplace.frontends.onnx.model import parse_model

__all__ = ["ACCELERATOR_RATE", "CPU_RATE", "node_flops", "onnx_to_dict", "parse_model"]
