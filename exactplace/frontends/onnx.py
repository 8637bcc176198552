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

Models are checked at the boundary, so that a model that is not valid ONNX is refused rather than
placed: onnx's checker (``onnx.checker.check_model``) and strict shape inference with type checks
(``infer_shapes(check_type=True, strict_mode=True, data_prop=True)``, the checks of ``full_check=True``)
must pass, and ``Conv``/``ConvTranspose`` channels must agree with their weights (onnx does not compare
them). Both see a copy of the model in topological order (the model's own order is kept for the
workload). An opset or IR version newer than the installed onnx knows is refused. External data must
name a file in the model's folder (no absolute path, no ``..``, no link out of it) long enough for the
tensor's declared shape; its bytes are never read except by ``profile=True``. Sizes are computed from
the declared shapes, never allocated: a tensor may declare up to 2**128 elements, and ``profile=True``
allocates at most 4 GiB of inputs.

A malformed model raises :class:`InputFormatError` in one line naming the file, the node (its name, else
``f"{op_type}_{position}"``) and the tensor or field at fault; a missing ``onnx`` (or, for
``profile=True``, ``onnxruntime``) raises
:class:`SolverUnavailableError`. ``onnx`` and ``onnxruntime`` are imported inside the functions:
``import exactplace`` never loads them.
"""

from __future__ import annotations

import heapq
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path, PureWindowsPath
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
_TENSOR, _TENSORS = 4, 9  # AttributeProto.TENSOR, AttributeProto.TENSORS
_EXTERNAL = 1  # TensorProto.EXTERNAL

#: Largest dimension a ``dims`` value may give: ONNX dimensions are int64.
_MAX_DIM = 2**63 - 1
#: Most elements one tensor may declare. Sizes are computed arithmetically, never allocated, but FLOPs and
#: bytes must stay finite floats: products of a few such tensors stay far below float's 1.8e308.
_MAX_ELEMENTS = 2**128
#: Most bytes of random inputs ``profile=True`` allocates (all graph inputs together): 4 GiB.
_FEED_LIMIT = 2**32
#: Name given to main-graph node ``i`` in the copies onnx's checker and shape inference see, so that their
#: messages identify the node exactly; messages are rewritten to the model's own names before they are shown.
_PROBE = "__exactplace_node_{}__"


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
            return self._sized(value.data_type, name, where), self._bounded(dims, name, where)
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
        return self._sized(value.elem_type, name, where), self._bounded(dims, name, where)

    @staticmethod
    def _bounded(dims: list[int], name: str, where: str) -> list[int]:
        """``dims``, or InputFormatError when they declare more than :data:`_MAX_ELEMENTS` elements (a size
        no machine holds, whose FLOPs and bytes would overflow a float)."""
        if _prod(dims) > _MAX_ELEMENTS:
            raise InputFormatError(f"{where} {name!r} declares shape {dims}: more than 2**128 elements, a size "
                                   "no device holds.")
        return dims

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
            if not _small_outputs(onnx, tiny, node.op_type):
                continue  # never allocate what a constant shape declares (a ConstantOfShape of [10**12, 10**12])
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


#: Operators whose output size shape inference cannot know from constants, yet which never write more
#: elements than a small multiple of what they read: computed ahead even without an inferred shape.
_DATA_BOUNDED = frozenset({"NonZero", "Unique", "Compress", "TopK"})


def _small_outputs(onnx: Any, tiny: Any, op_type: str) -> bool:
    """Whether every output of the one-node model ``tiny`` has a static shape of at most :data:`_FOLD_LIMIT`
    elements by shape inference (or the operator is in :data:`_DATA_BOUNDED`): what may be computed ahead."""
    try:
        shaped = onnx.shape_inference.infer_shapes(tiny, data_prop=True)
    except Exception:  # onnx refuses the node: it is not computed ahead, and the type check reports it
        return False
    for value in shaped.graph.output:
        tensor = value.type.tensor_type if value.type.WhichOneof("value") == "tensor_type" else None
        dims = list(tensor.shape.dim) if tensor is not None and tensor.HasField("shape") else None
        if dims is None or any(d.WhichOneof("value") != "dim_value" for d in dims):
            if op_type not in _DATA_BOUNDED:
                return False
        elif _prod([d.dim_value for d in dims]) > _FOLD_LIMIT:
            return False
    return True


def _attributes(onnx: Any, node: Any) -> dict[str, Any]:
    wanted = {"transA", "kernel_shape", "group"}
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
    check_param(all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= _MAX_DIM
                    for k, v in dims.items()), "dims", function,
                "a mapping from dimension names to positive integers below 2**63", dims)
    try:
        return _to_dict(data, source=source, path=path, bandwidth=bandwidth, accelerators=accelerators,
                        memory=memory, cpus=cpus, accelerator_rate=accelerator_rate, cpu_rate=cpu_rate, dims=dims,
                        profile=profile, runs=runs)
    except InputFormatError as error:
        if source in str(error):
            raise
        raise InputFormatError(f"{source}: {error}") from None  # every message names the file


def _to_dict(data: bytes | Any, *, source: str, path: str | os.PathLike | None, bandwidth: float, accelerators: int,
             memory: float, cpus: int, accelerator_rate: float, cpu_rate: float, dims: dict[str, int],
             profile: bool, runs: int) -> dict[str, Any]:
    """:func:`onnx_to_dict` once its parameters are checked; its errors need not name ``source``."""
    onnx = _onnx()
    model = data if isinstance(data, onnx.ModelProto) else parse_model(data, source)
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    if not fixed.graph.node:
        raise InputFormatError(f"{source}: the ONNX graph has no nodes.")
    _check_strings(fixed.graph)
    graph = fixed.graph  # the model's own nodes and weights (shape inference saw some computed ahead)
    onnx_nodes = list(graph.node)
    names = [n.name or f"{n.op_type}_{i}" for i, n in enumerate(onnx_nodes)]
    _check_versions(onnx, fixed, source)
    _fix_input_dims(fixed, dims)
    _check_external(fixed, path, source)
    probe = _probe(onnx, fixed)
    folded = _fold_small_constants(onnx, probe)
    try:
        inferred = onnx.shape_inference.infer_shapes(folded, data_prop=True)
    except Exception as error:
        position, reason = _reason(error, names)
        where = source if position is None else \
            f"{source}: ONNX node {names[position]!r} ({onnx_nodes[position].op_type})"
        raise InputFormatError(f"{where} fails ONNX shape inference: {reason}") from None
    strict: list[tuple[BaseException | None, Any]] = []

    def check() -> tuple[BaseException | None, Any]:  # strict inference with type checks, run once when asked
        if not strict:
            try:
                strict.append((None, onnx.shape_inference.infer_shapes(folded, check_type=True, strict_mode=True,
                                                                        data_prop=True)))
            except Exception as error:
                strict.append((error, None))
        return strict[0]

    def why() -> str:  # strict inference says why a shape is missing
        error = check()[0]
        return _reason(error, names)[1] if error is not None else ""

    types = _Types(inferred.graph, why)
    weights = {t.name for t in graph.initializer}
    inputs = {v.name for v in graph.input} - weights
    sparse = {t.values.name for t in graph.sparse_initializer} - weights - inputs
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
    if not kept:
        raise InputFormatError(f"{source}: the ONNX graph has only Constant nodes, no computation to place.")
    position = {i: k for k, i in enumerate(kept)}
    reads: dict[int, list[str]] = {}
    for i in kept:
        node = onnx_nodes[i]
        read = [t for t in node.input if t]
        read += sorted(t for body in _subgraphs(node) for t in _outer_names(body) if t not in node.input)
        reads[i] = list(dict.fromkeys(read))  # a tensor read twice is sent and held once
        for tensor in reads[i]:
            if tensor in sparse:
                raise InputFormatError(f"ONNX node {names[i]!r} ({node.op_type}): input {tensor!r} is a sparse "
                                       "initializer; only dense tensors are read (store it as a dense initializer).")
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
        attributes = _attributes(onnx, node)
        mismatch = _operand_mismatch(node.op_type, list(node.input), in_shapes, attributes)
        if mismatch:
            raise InputFormatError(f"{source}: {where} does not type-check: {mismatch}.")
        try:
            count = node_flops(node.op_type, in_shapes, out_shapes, attributes)
        except (IndexError, TypeError, ValueError):
            raise InputFormatError(f"{where}: its input shapes {in_shapes} do not fit the operator.") from None
        flops.append(count)
        sizes.append(float(weight_bytes + out_bytes))
        parameters.append(parameter_bytes)
    _type_check(onnx, check()[0], probe, onnx_nodes, names, types, source)

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


_PROBED = re.compile(_PROBE.format(r"(\d+)"))
#: onnx's prefix naming the node an inference error is about: "(op_type:Conv, node name: c): ".
_AT_NODE = re.compile(r"\(op_type:[^,()]*(?:, node name: [^()]*)?\):\s*")


def _reason(error: BaseException, names: list[str]) -> tuple[int | None, str]:
    """``(node, reason)`` from an error of onnx's checker or shape inference on a :func:`_probe` copy: the
    position of the main-graph node it is about (None when it names none) and its first line, in the model's
    own node names, without onnx's location prefix when the node is known."""
    text = str(error)
    found = _PROBED.search(text)
    text = _PROBED.sub(lambda m: names[int(m.group(1))] if int(m.group(1)) < len(names) else m.group(0), text)
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("==>")]
    line = (lines[0] if lines else type(error).__name__).replace("[ShapeInferenceError] Inference error(s): ", "")
    if found is not None and int(found.group(1)) < len(names):
        return int(found.group(1)), _AT_NODE.sub("", line, count=1).strip()
    return None, line


def _check_versions(onnx: Any, model: Any, source: str) -> None:
    """Refuse a model without an IR version (shape inference reads nothing of it) or newer than the installed
    onnx knows (its operators would be read by older rules)."""
    known = onnx.defs.onnx_opset_version()
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx") and opset.version > known:
            raise InputFormatError(f"{source} uses ONNX opset {opset.version}, newer than onnx {onnx.__version__} "
                                   f"knows (at most {known}); upgrade onnx: pip install -U onnx.")
    if model.ir_version < 1:
        raise InputFormatError(f"{source} has no ONNX IR version (its ir_version is unset); every ONNX model "
                               "states one: re-export it, or set model.ir_version.")
    if model.ir_version > onnx.IR_VERSION:
        raise InputFormatError(f"{source} has ONNX IR version {model.ir_version}, newer than onnx "
                               f"{onnx.__version__} knows (at most {onnx.IR_VERSION}); upgrade onnx: "
                               "pip install -U onnx.")


def _tensors(graph: Any) -> list[Any]:
    """Every TensorProto of ``graph`` and its bodies: initializers and tensor attributes (``Constant``)."""
    found = list(graph.initializer)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == _TENSOR:
                found.append(attribute.t)
            elif attribute.type == _TENSORS:
                found.extend(attribute.tensors)
        for body in _subgraphs(node):
            found.extend(_tensors(body))
    return found


def _check_external(model: Any, path: str | os.PathLike | None, source: str) -> None:
    """Refuse external data that cannot be the tensor's: no file named, a path that is absolute or leaves the
    model's folder, and, when the model's ``path`` is known, a file that is missing or too short for the
    tensor's declared shape. The data itself is never read (sizes come from the declared shapes)."""
    folder = Path(os.fspath(path)).parent if path is not None else None
    for tensor in _tensors(model.graph):
        if tensor.data_location != _EXTERNAL:
            continue
        info = {entry.key: entry.value for entry in tensor.external_data}
        location = info.get("location", "")
        where = f"{source}: tensor {tensor.name!r} keeps its data in an external file"
        if not location:
            raise InputFormatError(f"{where} but names none (no 'location' entry).")
        if os.path.isabs(location) or PureWindowsPath(location).is_absolute() or ".." in Path(location).parts:
            raise InputFormatError(f"{where}, {location!r}, outside the model's folder; ONNX external data must "
                                   "lie in the model's folder.")
        try:
            offset, length = int(info.get("offset", 0)), int(info["length"]) if "length" in info else None
        except ValueError:
            raise InputFormatError(f"{where}, {location!r}, whose offset {info.get('offset', '0')!r} or length "
                                   f"{info.get('length', '')!r} is not a whole number of bytes.") from None
        if offset < 0 or (length is not None and length < 0):
            raise InputFormatError(f"{where}, {location!r}, at a negative offset or length.")
        if folder is None:
            continue
        file = folder / location
        try:
            inside = file.resolve().is_relative_to(folder.resolve())
            size = file.stat().st_size if file.is_file() else None
        except OSError as error:
            raise InputFormatError(f"{where}, {location!r}, which cannot be read: {error.strerror or error}.") \
                from None
        if not inside:
            raise InputFormatError(f"{where}, {location!r}, which links outside the model's folder "
                                   f"{str(folder)!r}.")
        if size is None:
            raise InputFormatError(f"{where}, {location!r}, which is not a file in the model's folder "
                                   f"{str(folder)!r}.")
        needed = (_prod(list(tensor.dims)) * _BITS[tensor.data_type] + 7) // 8 if tensor.data_type in _BITS else 0
        if length is not None and length < needed:
            raise InputFormatError(f"{where}, {location!r}, of length {length} bytes; its declared shape "
                                   f"{list(tensor.dims)} needs {needed}.")
        if offset + max(needed, length or 0) > size:
            raise InputFormatError(f"{where}, {location!r}, of {size} bytes: too short for the "
                                   f"{max(needed, length or 0)} bytes its shape {list(tensor.dims)} needs from offset "
                                   f"{offset}.")


def _topological(nodes: list[Any]) -> list[int]:
    """Positions of ``nodes`` in a topological order, the model's own order where it allows (the model's
    order itself when the graph has a cycle: that is refused later, naming the cycle)."""
    producer: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for tensor in node.output:
            producer.setdefault(tensor, i)
    needs: list[set[int]] = []
    for i, node in enumerate(nodes):
        read = set(node.input) | {t for body in _subgraphs(node) for t in _outer_names(body)}
        needs.append({producer[t] for t in read if t in producer and producer[t] != i})
    users: dict[int, list[int]] = {}
    for i, before in enumerate(needs):
        for j in before:
            users.setdefault(j, []).append(i)
    waiting = [len(before) for before in needs]
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in users.get(i, []):
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    return order if len(order) == len(nodes) else list(range(len(nodes)))


def _probe(onnx: Any, model: Any) -> Any:
    """A copy of ``model`` for onnx's checker and shape inference: nodes in topological order (both require
    it; ONNX models are usually so already) and named by position (:data:`_PROBE`)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    ordered = []
    for i in _topological(list(model.graph.node)):
        node = onnx.NodeProto()
        node.CopyFrom(model.graph.node[i])
        node.name = _PROBE.format(i)
        ordered.append(node)
    del copy.graph.node[:]
    copy.graph.node.extend(ordered)
    return copy


def _checkable(onnx: Any, model: Any, types: _Types) -> Any:
    """A copy of ``model`` for onnx's checker: external initializers become graph inputs of their type and
    shape (the checker looks for external files from the working folder, and :func:`_check_external` has
    checked them already), and graph outputs without a shape get the one shape inference gave them (the
    checker requires one; exporters often leave it out)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    for value in graph.output:
        if value.type.WhichOneof("value") in (None, "tensor_type") and not value.type.tensor_type.HasField("shape"):
            try:
                elem, dims = types.dtype_shape(value.name, "")
            except InputFormatError:
                continue
            value.type.CopyFrom(onnx.helper.make_tensor_type_proto(elem, dims))
    external = [t for t in graph.initializer if t.data_location == _EXTERNAL]
    if external:
        declared = {v.name for v in graph.input}
        kept = [t for t in graph.initializer if t.data_location != _EXTERNAL]
        del graph.initializer[:]
        graph.initializer.extend(kept)
        graph.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                           for t in external if t.name not in declared)
    return copy


def _type_check(onnx: Any, error: BaseException | None, probe: Any, nodes: list[Any], names: list[str],
                types: _Types, source: str) -> None:
    """Refuse a model that strict shape inference (with type checks) or onnx's checker refuses, in one line
    naming the node, the tensors it reads and writes (with the shapes inference gave them) and onnx's reason.

    ``error`` is what strict inference raised (None if nothing); the checker reads ``probe``, the
    :func:`_probe` copy of the model.
    """
    if error is None:
        try:
            onnx.checker.check_model(_checkable(onnx, probe, types))
        except Exception as failure:
            error = failure
    if error is None:
        return
    position, reason = _reason(error, names)
    if position is None:
        raise InputFormatError(f"{source} does not pass onnx's model check: {reason}")
    node = nodes[position]

    def shown(tensors: list[str]) -> str:
        parts = []
        for tensor in (t for t in tensors if t):
            try:
                parts.append(f"{tensor!r} {types.shape(tensor, '')}")
            except InputFormatError:
                parts.append(f"{tensor!r} (shape unknown)")
        return ", ".join(parts) or "nothing"

    raise InputFormatError(f"{source}: ONNX node {names[position]!r} ({node.op_type}) does not type-check: "
                           f"{reason.rstrip('.')} (it reads {shown(list(node.input))}; writes "
                           f"{shown(list(node.output))}).")


def _operand_mismatch(op_type: str, tensors: list[str], shapes: list[list[int] | None],
                      attributes: Mapping[str, Any]) -> str:
    """Why the operand shapes of a ``Conv`` or ``ConvTranspose`` do not fit each other (onnx's shape
    inference does not compare channels), or "" when they do or the operator is another."""
    if op_type not in ("Conv", "ConvTranspose") or len(shapes) < 2 or shapes[0] is None or shapes[1] is None:
        return ""
    x, w = shapes[0], shapes[1]
    if len(x) < 2 or len(w) < 2 or len(x) != len(w):
        return f"input {tensors[0]!r} {x} and weight {tensors[1]!r} {w} must have the same rank, at least 3"
    group = attributes.get("group", 1)
    if not isinstance(group, int) or group < 1:
        return f"group is {group!r}, not a positive integer"
    if op_type == "Conv":
        if x[1] != w[1] * group:
            return (f"input {tensors[0]!r} {x} has {x[1]} channels, weight {tensors[1]!r} {w} reads "
                    f"{w[1]} x {group} (group)")
        outputs = w[0]
        if w[0] % group:
            return f"weight {tensors[1]!r} {w} has {w[0]} output channels, not a multiple of group {group}"
    else:
        if x[1] != w[0]:
            return f"input {tensors[0]!r} {x} has {x[1]} channels, weight {tensors[1]!r} {w} reads {w[0]}"
        outputs = w[1] * group
    if len(shapes) > 2 and shapes[2] is not None and shapes[2] != [outputs]:
        return f"bias {tensors[2]!r} has shape {shapes[2]}, the operator writes {outputs} channels"
    return ""


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
        except Exception as error:  # OSError, or onnx's ValidationError for a file outside the model's folder
            raise InputFormatError(f"{source}: its external weights cannot be read: {_first_line(error)}") \
                from None
    weights = {t.name for t in copy.graph.initializer}
    rng = np.random.default_rng(0)
    feeds = {}
    total = 0
    for value in copy.graph.input:
        if value.name in weights:
            continue
        elem, shape = types.dtype_shape(value.name, "ONNX graph input")
        total += types.nbytes(value.name, "ONNX graph input")
        if total > _FEED_LIMIT:
            raise InputFormatError(f"ONNX graph input {value.name!r} has shape {shape}: profile=True would allocate "
                                   f"{total} bytes of inputs, more than {_FEED_LIMIT}; use smaller input shapes "
                                   "(dims=...) or the FLOP model (profile=False).")
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
