"""The FLOP model of the ONNX importer: a node's FLOPs from its operator and its tensor shapes.

An operator's times are ``flops / rate`` (``accelerator_rate``, ``cpu_rate`` of
:func:`~exactplace.frontends.onnx.convert.onnx_to_dict`) unless ``profile=True`` measures them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exactplace.frontends.onnx.model import prod

__all__ = ["node_flops"]

_ZERO = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Shape", "Size"})
_MATMUL = frozenset({"MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul"})
_POOL = frozenset({"MaxPool", "AveragePool", "LpPool"})
_GLOBAL_POOL = frozenset({"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
_NORM = frozenset({"LayerNormalization", "InstanceNormalization", "GroupNormalization", "LpNormalization",
                   "MeanVarianceNormalization", "LRN", "RMSNormalization", "SkipLayerNormalization"})
_SOFTMAX = frozenset({"Softmax", "LogSoftmax", "Hardmax"})
_RECURRENT = frozenset({"RNN", "GRU", "LSTM"})


def node_flops(op_type: str, inputs: list[list[int] | None], outputs: list[list[int]],
               attributes: Mapping[str, Any] | None = None) -> float:
    """FLOPs of one node under the FLOP model, from its input and output shapes.

    ``inputs`` holds one shape per input (None for an absent optional input); an op class reads only
    the shapes it needs. The model, per op class (a multiply-add is 2 FLOPs; "elements" are tensor
    elements):

    * ``Conv``: 2 x output elements x (weight elements / output channels), i.e. ``C_in / group`` x kernel
      elements, plus output elements for the bias.
    * ``ConvTranspose``: 2 x input elements x (weight elements / input channels), plus output elements for
      the bias.
    * ``Gemm``: 2 x M x N x K, plus M x N for ``C``; ``MatMul``, ``MatMulInteger``, ``QLinearMatMul``,
      ``FusedMatMul``: 2 x output elements x K (the inner dimension of A).
    * ``RNN``, ``GRU``, ``LSTM``: 2 x (sequence x batch) x (elements of W + elements of R): every step
      multiplies input and hidden state by every gate's weights.
    * Pooling: ``MaxPool``, ``AveragePool``, ``LpPool``: output elements x kernel elements;
      ``GlobalAveragePool``, ``GlobalMaxPool``, ``GlobalLpPool``: input elements.
    * Normalisation: ``BatchNormalization`` 2 per input element (scale and shift);
      ``LayerNormalization``, ``InstanceNormalization``, ``GroupNormalization``, ``LpNormalization``,
      ``MeanVarianceNormalization``, ``LRN``, ``RMSNormalization``, ``SkipLayerNormalization``: 5 per input
      element (mean, variance, normalise, scale, shift).
    * ``Softmax``, ``LogSoftmax``, ``Hardmax``: 5 per input element (max, subtract, exponent, sum, divide).
    * Reductions (``Reduce*``, ``ArgMax``, ``ArgMin``): input elements.
    * Zero cost (a view or metadata, no arithmetic): ``Reshape``, ``Flatten``, ``Squeeze``, ``Unsqueeze``,
      ``Identity``, ``Dropout`` (inference), ``Shape``, ``Size``.
    * Everything else: 1 per output element, summed over outputs. This covers elementwise operators
      (``Add``, ``Mul``, ``Relu``, ``Sigmoid``, ``Erf``, ``Cast``, ``Where``, ...), data movement
      (``Transpose``, ``Concat``, ``Gather``, ``Slice``, ``Pad``, ``Expand``, ``Resize``, ...), ``Einsum``,
      control flow (``If``, ``Loop``, ``Scan``: their bodies are not counted; ``profile=True`` times them)
      and operators this list does not know.

    Parameters
    ----------
    op_type : str
        The ONNX operator (``node.op_type``).
    inputs, outputs : list of shapes
        The node's input shapes (None for an absent optional input) and output shapes.
    attributes : mapping, optional
        The attributes the model reads: ``transA`` (``Gemm``), ``kernel_shape`` (pooling).

    Examples
    --------
    >>> node_flops("Conv", [[1, 3, 8, 8], [4, 3, 3, 3], [4]], [[1, 4, 8, 8]])  # 2*256*27 + 256
    14080.0
    >>> node_flops("Gemm", [[2, 5], [5, 3]], [[2, 3]])
    60.0
    >>> node_flops("Relu", [[2, 3]], [[2, 3]]), node_flops("Reshape", [[6], [2]], [[2, 3]])
    (6.0, 0.0)
    """
    attributes = attributes or {}
    out = sum(prod(s) for s in outputs)
    first = prod(inputs[0]) if inputs and inputs[0] is not None else 0
    bias = len(inputs) > 2 and inputs[2] is not None
    if op_type in _ZERO:
        return 0.0
    if op_type == "Conv":
        weight = inputs[1]
        return float(2 * out * prod(weight[1:]) + (out if bias else 0))
    if op_type == "ConvTranspose":
        weight = inputs[1]
        return float(2 * first * prod(weight[1:]) + (out if bias else 0))
    if op_type == "Gemm":
        a = inputs[0]
        k = a[0] if attributes.get("transA", 0) else a[-1]
        return float(2 * out * k + (out if bias else 0))
    if op_type in _MATMUL:
        return float(2 * out * inputs[0][-1])
    if op_type in _RECURRENT:
        x, w, r = inputs[0], inputs[1], inputs[2]
        steps = prod(x[:-1])  # sequence x batch (either layout)
        return float(2 * steps * (prod(w) + prod(r)))
    if op_type in _POOL:
        return float(out * prod(list(attributes.get("kernel_shape", []))))
    if op_type in _GLOBAL_POOL or op_type.startswith("Reduce") or op_type in ("ArgMax", "ArgMin"):
        return float(first)
    if op_type == "BatchNormalization":
        return float(2 * first)
    if op_type in _NORM or op_type in _SOFTMAX:
        return float(5 * first)
    return float(out)
