"""Read ONNX models (``model.onnx``) as exactplace workloads.

An ONNX model is a protobuf ``ModelProto``; its graph lists operator nodes that read and write named
tensors. :func:`onnx_to_dict` turns it into the dnn-partitioning dictionary. Mapping choices (each one
deliberate):

* Nodes: every ONNX node of the main graph becomes one node, in the model's order (ids 0, 1, ...), named
  by its ONNX node name (``f"{op_type}_{position}"`` when the model leaves the name empty; names are
  kept as they are, also when two nodes share one). ``Constant`` nodes are dropped: they hold a
  weight, not a computation, and are treated as initializers. Graph inputs and initializers are not
  nodes. Every node may run on an accelerator; the graph is an inference (forward) graph.
* Shapes: ``onnx.shape_inference.infer_shapes`` (with data propagation, so shapes computed by
  ``Shape``/``Reshape`` chains become static) after fixing the graph inputs' symbolic or unknown
  dimensions: ``dims={"batch": 8}`` gives a dimension named ``batch`` the value 8, every other one is 1
  (batch size 1, the inference default). Before inference, nodes that compute small tensors (at most
  1024 elements) from constants alone, the shape arithmetic exporters emit (``Mod``, ``Div``, ``Cast``
  of a few integers), are evaluated with ``onnx.reference`` so that the shapes they feed become static;
  they stay nodes of the workload, and weights are never computed. Every tensor a node reads or writes
  must then have a static shape and an element type of fixed size: a missing or symbolic shape, an
  unknown element type, ``STRING``, or a sequence or map is refused naming the node and the tensor
  (custom-domain operators need their output shapes in the model's ``value_info``: shape inference
  does not know them).
* Edges: an edge ``u -> v`` for every tensor ``u`` writes and ``v`` reads (also inside the bodies of
  ``If``/``Loop``/``Scan``: a body reading an outer tensor reads it from the node that holds the body);
  tensors from one node to another add up to one edge. Edge cost = tensor bytes / ``bandwidth`` (bytes
  per second), in milliseconds; the default ``bandwidth=inf`` makes transfers free, as the PipeDream
  importer. The graph model sends one copy per distinct cost of a node's out-edges (the paper's
  subdivision), which is exact for the usual node with a single output tensor.
* Parameter synchronisation (replicated stages, ``solve(..., replication=True)``): ``Node.sync`` =
  ``4 x`` the bytes of the initializers the node reads ``/ bandwidth``, in milliseconds (PipeDream's
  all-reduce model); free with the default ``bandwidth=inf``. A weight read by several nodes counts on each.
* Memory: the bytes of the initializers (and ``Constant`` tensors) the node reads, plus the bytes of
  its output tensors. A weight read by several nodes counts on each (two of them on one device count it
  twice: an over-estimate, never an under-estimate). Graph inputs cost nothing: the data is there, as
  PipeDream's ``Input`` sources. Bytes of 4-bit and other sub-byte types are rounded up per tensor.
* Times (milliseconds, as PipeDream profiles and ``from_torch``): ``flops / rate`` with the FLOP model
  below, ``accelerator_rate`` (default :data:`ACCELERATOR_RATE`, 1e13 FLOP/s: 10 TFLOP/s, sustained
  FP32 of a data-centre GPU) and ``cpu_rate`` (default :data:`CPU_RATE`, 1e11 FLOP/s: 100 GFLOP/s, a
  vectorised CPU socket); set both to your hardware. Or, with ``profile=True``, measured: onnxruntime
  runs the model on one CPU thread (``CPUExecutionProvider``, graph optimisations off, so every ONNX node
  is one kernel) on random inputs of the inferred shapes (floats standard normal, integers and booleans
  zero, a valid index for ``Gather``), once to warm up and ``runs`` times (default 3) with
  ``SessionOptions.enable_profiling``; each node's time is the mean of its kernel durations in the JSON
  profile, and stands for both its CPU and its accelerator time (as PipeDream's profiles). A node the
  profile does not time costs 0.

FLOP model, per op class (a multiply-add is 2 FLOPs; "elements" are tensor elements):

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

The cluster is ``accelerators=4``, ``memory=inf``, ``cpus=0`` unless given, as for PipeDream profiles.
A malformed model raises :class:`InputFormatError` in one line naming the node and the tensor or
field at fault; a missing ``onnx`` (or, for ``profile=True``, ``onnxruntime``) raises
:class:`SolverUnavailableError`. ``onnx`` and ``onnxruntime`` are imported inside the functions:
``import exactplace`` never loads them.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from exactplace.core.errors import InputFormatError, ParameterError, SolverUnavailableError, check_param

__all__ = ["ACCELERATOR_RATE", "CPU_RATE", "node_flops", "onnx_to_dict", "parse_model"]

#: Default accelerator rate, FLOP/s (10 TFLOP/s).
ACCELERATOR_RATE = 1e13
#: Default CPU rate, FLOP/s (100 GFLOP/s).
CPU_RATE = 1e11

#: Bits per element of each ONNX element type (TensorProto.DataType); STRING (8) has no fixed size.
_BITS = {1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64, 14: 64, 15: 128,
         16: 16, 17: 8, 18: 8, 19: 8, 20: 8, 21: 4, 22: 4, 23: 4, 24: 8, 25: 2, 26: 2, 27: 6, 28: 6}
_STRING = 8

_ZERO = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Shape", "Size"})
_MATMUL = frozenset({"MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul"})
_POOL = frozenset({"MaxPool", "AveragePool", "LpPool"})
_GLOBAL_POOL = frozenset({"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
_NORM = frozenset({"LayerNormalization", "InstanceNormalization", "GroupNormalization", "LpNormalization",
                   "MeanVarianceNormalization", "LRN", "RMSNormalization", "SkipLayerNormalization"})
_SOFTMAX = frozenset({"Softmax", "LogSoftmax", "Hardmax"})
_RECURRENT = frozenset({"RNN", "GRU", "LSTM"})

#: Largest tensor (elements) computed ahead of shape inference: shape arithmetic is a few integers.
_FOLD_LIMIT = 1024
_RANDOM = ("Random", "Bernoulli", "Multinomial")  # never computed ahead: each run draws anew

_GRAPH, _GRAPHS = 5, 10  # AttributeProto.GRAPH, AttributeProto.GRAPHS
_EXTERNAL = 1  # TensorProto.EXTERNAL


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise SolverUnavailableError("Reading ONNX models needs the onnx package: pip install 'exactplace[onnx]'.") \
            from None
    return onnx


def _prod(values: list[int]) -> int:
    return math.prod(values)


def node_flops(op_type: str, inputs: list[list[int] | None], outputs: list[list[int]],
               attributes: Mapping[str, Any] | None = None) -> float:
    """FLOPs of one node under the module's FLOP model, from its input and output shapes.

    ``inputs`` holds one shape per input (None for an absent optional input); an op class reads only
    the shapes it needs.

    >>> node_flops("Conv", [[1, 3, 8, 8], [4, 3, 3, 3], [4]], [[1, 4, 8, 8]])  # 2*256*27 + 256
    14080.0
    >>> node_flops("Gemm", [[2, 5], [5, 3]], [[2, 3]])
    60.0
    >>> node_flops("Relu", [[2, 3]], [[2, 3]]), node_flops("Reshape", [[6], [2]], [[2, 3]])
    (6.0, 0.0)
    """
    attributes = attributes or {}
    out = sum(_prod(s) for s in outputs)
    first = _prod(inputs[0]) if inputs and inputs[0] is not None else 0
    bias = len(inputs) > 2 and inputs[2] is not None
    if op_type in _ZERO:
        return 0.0
    if op_type == "Conv":
        weight = inputs[1]
        return float(2 * out * _prod(weight[1:]) + (out if bias else 0))
    if op_type == "ConvTranspose":
        weight = inputs[1]
        return float(2 * first * _prod(weight[1:]) + (out if bias else 0))
    if op_type == "Gemm":
        a = inputs[0]
        k = a[0] if attributes.get("transA", 0) else a[-1]
        return float(2 * out * k + (out if bias else 0))
    if op_type in _MATMUL:
        return float(2 * out * inputs[0][-1])
    if op_type in _RECURRENT:
        x, w, r = inputs[0], inputs[1], inputs[2]
        steps = _prod(x[:-1])  # sequence x batch (either layout)
        return float(2 * steps * (_prod(w) + _prod(r)))
    if op_type in _POOL:
        return float(out * _prod(list(attributes.get("kernel_shape", []))))
    if op_type in _GLOBAL_POOL or op_type.startswith("Reduce") or op_type in ("ArgMax", "ArgMin"):
        return float(first)
    if op_type == "BatchNormalization":
        return float(2 * first)
    if op_type in _NORM or op_type in _SOFTMAX:
        return float(5 * first)
    return float(out)


def parse_model(data: bytes, source: str = "The ONNX model", *, also: str = "") -> Any:
    """The ``onnx.ModelProto`` in ``data``, or :class:`InputFormatError` saying why it is none.

    ``source`` names the input in the message ("Workload file 'm.onnx'"); ``also`` is put before "not a
    valid ONNX protobuf" (what else the bytes are not, when the format was guessed).
    """
    onnx = _onnx()
    try:
        model = onnx.ModelProto.FromString(bytes(data))
    except Exception as error:  # DecodeError, or RuntimeWarning-as-error from the C++ parser
        raise InputFormatError(f"{source} is {also}not a valid ONNX protobuf ({_first_line(error)}).") from None
    if not model.HasField("graph"):
        raise InputFormatError(f"{source} is {also}not a valid ONNX protobuf (it has no graph).")
    if not model.graph.node:
        raise InputFormatError(f"{source}: the ONNX graph has no nodes.")
    return model


def _check_strings(graph: Any) -> None:
    """Refuse names that are not UTF-8 (protobuf hands them over as bytes), naming the node and field."""
    for position, node in enumerate(graph.node):
        for field in ("name", "op_type", "domain", "input", "output"):
            value = getattr(node, field)
            if any(isinstance(v, bytes) for v in (value if field in ("input", "output") else [value])):
                shown = repr(node.name) if isinstance(node.name, str) and node.name else f"at position {position}"
                raise InputFormatError(f"ONNX node {shown}: field {field} is not UTF-8 text.")
    for field in ("input", "output", "value_info", "initializer"):
        for value in getattr(graph, field):
            if isinstance(value.name, bytes):
                raise InputFormatError(f"ONNX graph {field} {value.name!r}: its name is not UTF-8 text.")


def _subgraphs(node: Any) -> list[Any]:
    found = []
    for attribute in node.attribute:
        if attribute.type == _GRAPH:
            found.append(attribute.g)
        elif attribute.type == _GRAPHS:
            found.extend(attribute.graphs)
    return found


def _outer_names(graph: Any) -> set[str]:
    """Tensors a (sub)graph's nodes read but the graph does not define: they come from outside it."""
    local = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    local |= {o for node in graph.node for o in node.output}
    used: set[str] = set()
    for node in graph.node:
        used.update(node.input)
        for body in _subgraphs(node):
            used |= _outer_names(body)
    return used - local - {""}


class _Types:
    """Element type and shape of every tensor the inferred graph knows, with errors naming the node.

    ``why`` is called for the reason shape inference left a tensor without a shape (or returns "").
    """

    def __init__(self, graph: Any, why: Any) -> None:
        self.info: dict[str, tuple[str, Any]] = {}
        self.why = why
        for value in [*graph.input, *graph.value_info, *graph.output]:
            kind = value.type.WhichOneof("value")
            self.info[value.name] = (kind or "none", value.type.tensor_type if kind == "tensor_type" else None)
        for tensor in graph.initializer:
            self.info[tensor.name] = ("initializer", tensor)

    def _missing(self, what: str, detail: str = "") -> InputFormatError:
        reason = self.why()
        return InputFormatError(f"{what} after shape inference{detail}" + (f": {reason}" if reason else "."))

    def dtype_shape(self, name: str, where: str) -> tuple[int, list[int]]:
        """``(element type, dims)`` of tensor ``name``; ``where`` names it in errors ("ONNX node 'a' (Add): input")."""
        if name not in self.info:
            raise self._missing(f"{where} {name!r} has no type or shape")
        kind, value = self.info[name]
        if kind == "initializer":
            dims = list(value.dims)
            if any(d < 0 for d in dims):
                raise InputFormatError(f"{where} {name!r} (an initializer) has a negative dimension: {dims}.")
            return self._sized(value.data_type, name, where), dims
        if kind != "tensor_type":
            shown = {"sequence_type": "a sequence", "map_type": "a map", "optional_type": "an optional",
                     "sparse_tensor_type": "a sparse tensor"}.get(kind, "of no type")
            raise InputFormatError(f"{where} {name!r} is {shown}, not a dense tensor; only tensors are read.")
        if not value.HasField("shape"):
            raise self._missing(f"{where} {name!r} has no shape")
        dims = []
        for axis, dim in enumerate(value.shape.dim):
            if dim.WhichOneof("value") != "dim_value":
                shown = repr(dim.dim_param) if dim.dim_param else "unknown"
                raise self._missing(f"{where} {name!r} has no static shape", f" (dimension {axis} is {shown})")
            if dim.dim_value < 0:
                raise InputFormatError(f"{where} {name!r} has a negative dimension: {dim.dim_value}.")
            dims.append(int(dim.dim_value))
        return self._sized(value.elem_type, name, where), dims

    @staticmethod
    def _sized(elem: int, name: str, where: str) -> int:
        if elem == _STRING:
            raise InputFormatError(f"{where} {name!r} has element type STRING, which has no fixed size.")
        if elem not in _BITS:
            raise InputFormatError(f"{where} {name!r} has unknown element type {elem}.")
        return elem

    def shape(self, name: str, where: str) -> list[int]:
        return self.dtype_shape(name, where)[1]

    def nbytes(self, name: str, where: str) -> int:
        elem, dims = self.dtype_shape(name, where)
        return (_prod(dims) * _BITS[elem] + 7) // 8


def _fix_input_dims(model: Any, dims: Mapping[str, int]) -> None:
    """Give every symbolic or unknown dimension of a graph input a value (``dims``, else 1), in place."""
    weights = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in weights or value.type.WhichOneof("value") != "tensor_type":
            continue
        tensor = value.type.tensor_type
        if not tensor.HasField("shape"):
            raise InputFormatError(f"ONNX graph input {value.name!r} has no shape; give it one in the model.")
        for dim in tensor.shape.dim:
            if dim.WhichOneof("value") != "dim_value":
                size = dims.get(dim.dim_param, 1) if dim.dim_param else 1
                dim.Clear()
                dim.dim_value = size


def _fold_small_constants(onnx: Any, model: Any) -> Any:
    """A copy of ``model`` for shape inference only, where every node that computes small tensors (at most
    :data:`_FOLD_LIMIT` elements each) from small constants alone is evaluated (``onnx.reference``) and
    replaced by initializers holding its outputs: shape arithmetic on constants (``Mod``, ``Div``, ``Cast``
    of a few integers) that shape inference does not propagate then yields static shapes downstream.
    Weights are never computed; a node that cannot be evaluated is left as it is."""
    import numpy as np
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator

    values: dict[str, Any] = {}
    for tensor in model.graph.initializer:
        if _prod(list(tensor.dims)) <= _FOLD_LIMIT and tensor.data_location != _EXTERNAL:
            try:
                values[tensor.name] = numpy_helper.to_array(tensor)
            except Exception:
                continue
    folded: list[int] = []
    tried: set[int] = set()
    progress = True
    while progress:
        progress = False
        for i, node in enumerate(model.graph.node):
            read = [t for t in node.input if t]
            if i in tried or _subgraphs(node) or node.op_type.startswith(_RANDOM) or not all(t in values for t in read):
                continue
            tried.add(i)
            outputs = [t for t in node.output if t]
            graph = onnx.helper.make_graph([node], "fold", [], [onnx.ValueInfoProto(name=t) for t in outputs],
                                           [numpy_helper.from_array(np.asarray(values[t]), t) for t in read])
            tiny = onnx.helper.make_model(graph, opset_imports=model.opset_import, ir_version=model.ir_version)
            try:
                results = ReferenceEvaluator(tiny).run(None, {})
            except Exception:
                continue
            if not all(isinstance(r, np.ndarray) and r.size <= _FOLD_LIMIT for r in results):
                continue
            values.update(zip(outputs, results))
            folded.append(i)
            progress = True
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    if folded:
        gone = set(folded)
        kept = [n for i, n in enumerate(model.graph.node) if i not in gone]
        del copy.graph.node[:]
        copy.graph.node.extend(kept)
        for i in folded:
            for tensor in model.graph.node[i].output:
                if tensor:
                    copy.graph.initializer.append(numpy_helper.from_array(np.asarray(values[tensor]), tensor))
    return copy


def _attributes(onnx: Any, node: Any) -> dict[str, Any]:
    wanted = {"transA", "kernel_shape"}
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute if a.name in wanted}


def onnx_to_dict(
    data: bytes | Any, *, source: str = "The ONNX model", path: str | os.PathLike | None = None,
    bandwidth: float = math.inf, accelerators: int = 4, memory: float = math.inf, cpus: int = 0,
    accelerator_rate: float = ACCELERATOR_RATE, cpu_rate: float = CPU_RATE, dims: Mapping[str, int] | None = None,
    profile: bool = False, runs: int = 3,
) -> dict[str, Any]:
    """Convert an ONNX model (bytes or a ``ModelProto``) to the dnn-partitioning dictionary.

    See the module docstring for the mapping. ``path`` is the model's file: ``profile=True`` reads
    external weights from beside it. ``source`` names the model in error messages.
    """
    function = "read_workload"
    check_param(isinstance(bandwidth, (int, float)) and not isinstance(bandwidth, bool) and bandwidth > 0,
                "bandwidth", function, "a positive number of bytes per second, or inf", bandwidth)
    for name, rate in (("accelerator_rate", accelerator_rate), ("cpu_rate", cpu_rate)):
        check_param(isinstance(rate, (int, float)) and not isinstance(rate, bool) and 0 < rate < math.inf, name,
                    function, "a positive, finite number of FLOP/s", rate)
    check_param(isinstance(profile, bool), "profile", function, "True or False", profile)
    check_param(isinstance(runs, int) and not isinstance(runs, bool) and runs >= 1, "runs", function,
                "a positive integer", runs)
    check_param(dims is None or isinstance(dims, Mapping), "dims", function,
                "a mapping from dimension names to positive integers", dims)
    dims = dict(dims or {})
    check_param(all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 1
                    for k, v in dims.items()), "dims", function,
                "a mapping from dimension names to positive integers", dims)
    onnx = _onnx()
    model = data if isinstance(data, onnx.ModelProto) else parse_model(data, source)
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    _check_strings(fixed.graph)
    _fix_input_dims(fixed, dims)
    folded = _fold_small_constants(onnx, fixed)
    try:
        inferred = onnx.shape_inference.infer_shapes(folded, data_prop=True)
    except Exception as error:
        raise InputFormatError(f"{source} fails ONNX shape inference: {_first_line(error)}") from None

    def why() -> str:  # strict inference says why a shape is missing (a second run, only on that error)
        try:
            onnx.shape_inference.infer_shapes(folded, strict_mode=True, data_prop=True)
        except Exception as error:
            return _first_line(error)
        return ""

    types = _Types(inferred.graph, why)
    graph = fixed.graph  # the model's own nodes and weights (shape inference saw some computed ahead)
    onnx_nodes = list(graph.node)
    names = [n.name or f"{n.op_type}_{i}" for i, n in enumerate(onnx_nodes)]
    weights = {t.name for t in graph.initializer}
    inputs = {v.name for v in graph.input} - weights
    for name in sorted(inputs):
        types.dtype_shape(name, "ONNX graph input")

    # Who writes each tensor, and what each node reads: the edges, checked for cycles before any size.
    producer: dict[str, int] = {}
    for i, node in enumerate(onnx_nodes):
        for tensor in node.output:
            if not tensor:
                continue
            where = f"ONNX node {names[i]!r} ({node.op_type}): output {tensor!r}"
            if tensor in producer:
                raise InputFormatError(f"{where} is also written by node {names[producer[tensor]]!r}.")
            if tensor in weights or tensor in inputs:
                raise InputFormatError(f"{where} is also {'an initializer' if tensor in weights else 'a graph input'}.")
            producer[tensor] = i
    kept = [i for i, n in enumerate(onnx_nodes) if n.op_type != "Constant"]
    constants = {t for i, n in enumerate(onnx_nodes) if n.op_type == "Constant" for t in n.output if t}
    position = {i: k for k, i in enumerate(kept)}
    reads: dict[int, list[str]] = {}
    for i in kept:
        node = onnx_nodes[i]
        read = [t for t in node.input if t]
        read += sorted(t for body in _subgraphs(node) for t in _outer_names(body) if t not in node.input)
        reads[i] = list(dict.fromkeys(read))  # a tensor read twice is sent and held once
        for tensor in reads[i]:
            if tensor not in producer and tensor not in weights and tensor not in inputs:
                raise InputFormatError(f"ONNX node {names[i]!r} ({node.op_type}): input {tensor!r} is written by "
                                       "no node, graph input or initializer.")
    _check_acyclic([(producer[t], i) for i in kept for t in reads[i] if t in producer], names, source)

    flops: list[float] = []
    sizes: list[float] = []
    parameters: list[int] = []
    sent: dict[tuple[int, int], int] = {}
    for i in kept:
        node = onnx_nodes[i]
        where = f"ONNX node {names[i]!r} ({node.op_type})"
        weight_bytes = parameter_bytes = 0
        for tensor in reads[i]:
            if tensor in weights or tensor in constants:
                weight_bytes += types.nbytes(tensor, f"{where}: input")
                parameter_bytes += types.nbytes(tensor, f"{where}: input") if tensor in weights else 0
            elif tensor in producer:
                pair = (producer[tensor], i)
                sent[pair] = sent.get(pair, 0) + types.nbytes(tensor, f"{where}: input")
        outputs = [t for t in node.output if t]
        out_bytes = sum(types.nbytes(t, f"{where}: output") for t in outputs)
        in_shapes = [types.shape(t, f"{where}: input") if t else None for t in node.input]
        out_shapes = [types.shape(t, f"{where}: output") for t in outputs]
        try:
            count = node_flops(node.op_type, in_shapes, out_shapes, _attributes(onnx, node))
        except (IndexError, TypeError, ValueError):
            raise InputFormatError(f"{where}: its input shapes {in_shapes} do not fit the operator.") from None
        flops.append(count)
        sizes.append(float(weight_bytes + out_bytes))
        parameters.append(parameter_bytes)

    if profile:
        measured = _profile(onnx, fixed, types, path, runs, source)
        cpu = acc = [measured[i] for i in kept]
    else:
        cpu = [f / cpu_rate * 1e3 for f in flops]
        acc = [f / accelerator_rate * 1e3 for f in flops]
    out_nodes = [
        {"id": k, "name": names[i], "supportedOnFpga": True, "cpuLatency": cpu[k], "fpgaLatency": acc[k],
         "isBackwardNode": False, "size": sizes[k],
         **({"syncLatency": 4 * parameters[k] / bandwidth * 1e3} if parameters[k] and math.isfinite(bandwidth)
            else {})}
        for k, i in enumerate(kept)
    ]
    out_edges = [
        {"sourceId": position[u], "destId": position[v],
         "cost": nbytes / bandwidth * 1e3 if math.isfinite(bandwidth) else 0.0}
        for (u, v), nbytes in sent.items()
    ]
    return {"maxSizePerFPGA": memory if math.isfinite(memory) else 1e300, "maxFPGAs": accelerators,
            "maxCPUs": cpus, "nodes": out_nodes, "edges": out_edges}


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _check_acyclic(pairs: list[tuple[int, int]], names: list[str], source: str) -> None:
    import networkx as nx

    digraph = nx.DiGraph(pairs)
    try:
        cycle = [u for u, _ in nx.find_cycle(digraph)]
    except nx.NetworkXNoCycle:
        return
    shown = " -> ".join(repr(names[u]) for u in [*cycle, cycle[0]])
    raise InputFormatError(f"{source}: the ONNX graph has a cycle: {shown}.")


def _profile(onnx: Any, model: Any, types: _Types, path: str | os.PathLike | None, runs: int,
             source: str) -> list[float]:
    """Milliseconds per ONNX node (by position in the graph), measured by onnxruntime on one CPU thread."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise SolverUnavailableError("profile=True needs onnxruntime: pip install 'exactplace[onnx]'.") from None
    import numpy as np

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for i, node in enumerate(copy.graph.node):
        node.name = f"node{i}"  # unique names, to find each node in the profile
    if any(t.data_location == _EXTERNAL for t in copy.graph.initializer):
        if path is None:
            raise ParameterError("profile=True: the model keeps its weights in external files; read it from its "
                                 "file (read_workload) so they can be found.")
        try:
            onnx.external_data_helper.load_external_data_for_model(copy, str(Path(path).parent))
        except OSError as error:
            raise InputFormatError(f"{source}: its external weights cannot be read: {error}.") from None
    weights = {t.name for t in copy.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    for value in copy.graph.input:
        if value.name in weights:
            continue
        elem, shape = types.dtype_shape(value.name, "ONNX graph input")
        try:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(elem)
        except Exception:
            raise InputFormatError(f"ONNX graph input {value.name!r}: numpy has no element type {elem}, so "
                                   "profile=True cannot feed it.") from None
        if dtype.kind == "f":
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[value.name] = np.zeros(shape, dtype=dtype)
    with tempfile.TemporaryDirectory(prefix="exactplace-ort-") as folder:
        options = ort.SessionOptions()
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(folder, "profile")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.log_severity_level = 4  # fatal only: a failed load is reported in one line below
        try:
            session = ort.InferenceSession(copy.SerializeToString(), options, providers=["CPUExecutionProvider"])
            for _ in range(runs + 1):
                session.run(None, feeds)
        except Exception as error:
            raise InputFormatError(f"{source}: onnxruntime cannot run it to profile it: {_first_line(error)}") \
                from None
        with open(session.end_profiling(), encoding="utf-8") as handle:
            events = json.load(handle)
    durations: dict[str, list[float]] = {}
    for event in events:
        name = event.get("name", "")
        if event.get("cat") == "Node" and name.endswith("_kernel_time"):
            durations.setdefault(name.removesuffix("_kernel_time"), []).append(float(event.get("dur", 0.0)))
    times = []
    for i in range(len(copy.graph.node)):
        seen = durations.get(f"node{i}", [])
        measured = seen[1:] if len(seen) > 1 else seen  # the first run warms up
        times.append(sum(measured) / len(measured) / 1e3 if measured else 0.0)  # microseconds -> ms
    return times
